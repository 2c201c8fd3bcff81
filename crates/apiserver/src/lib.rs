//! `informer-apiserver`: an embeddable server speaking the Kubernetes API
//! the way kube-apiserver does: reads, watches and writes of built-in and
//! custom resources, in JSON, YAML and protobuf.
//!
//! Start one with [`ApiServer::builder`]`().start().await`; point clients at
//! [`ApiServer::url`] or [`ApiServer::kubeconfig_yaml`]. Objects live in a
//! revisioned [`storage::Storage`] (in memory, SQLite on disk, or etcd) whose
//! revision is the resourceVersion; GET, LIST and WATCH are served from the
//! watch cache fed by the storage's watch. Test controls (faults, latency,
//! compaction, dropped watches, restarts, graceful shutdown) are methods of
//! [`ApiServer`]; [`chaos`] injects them at random.

#![deny(missing_docs)]

pub(crate) mod access_review;
pub(crate) mod admission_options;
pub(crate) mod admission_policy;
pub(crate) mod admission_webhook;
pub mod apply;
pub mod authorizer;
pub(crate) mod autoscaling_v1;
pub(crate) mod binding;
pub mod body;
pub mod cache;
pub(crate) mod cel_authz;
pub(crate) mod cel_check;
pub(crate) mod cel_comprehension;
pub(crate) mod cel_cost;
pub(crate) mod cel_format;
pub(crate) mod cel_library;
pub(crate) mod cel_network;
pub(crate) mod cel_quantity;
pub(crate) mod cel_semver;
pub(crate) mod cel_url;
pub(crate) mod certificate_signing;
pub mod chaos;
pub(crate) mod clusterrole_aggregation;
pub(crate) mod combined_writes;
pub(crate) mod config_validation;
pub(crate) mod container_probes;
pub(crate) mod container_resources;
pub(crate) mod controller_loop;
pub mod controls;
pub(crate) mod conversion;
pub mod crd;
pub mod crd_controller;
pub(crate) mod crd_validation;
pub(crate) mod cron_schedule;
pub mod custom_resource;
pub(crate) mod default_check;
pub mod defaults;
pub mod delete_options;
pub mod discovery;
pub(crate) mod disruption_controller;
pub(crate) mod embedded_resource;
pub mod etcd_process;
pub(crate) mod event_recorder;
pub(crate) mod events_api;
pub(crate) mod eviction;
pub(crate) mod field_labels;
pub mod field_validation;
pub mod garbage_collector;
pub(crate) mod go_fmt;
pub(crate) mod go_json_syntax;
pub(crate) mod go_types;
pub(crate) mod graceful_deletion;
pub mod handlers;
pub(crate) mod hpa_validation;
pub(crate) mod job_status;
pub(crate) mod job_validation;
pub mod jsonpath;
pub(crate) mod limit_ranger;
pub mod list;
pub(crate) mod list_type;
pub mod managed_fields;
pub(crate) mod media;
pub mod namespaces;
pub(crate) mod node_ports;
pub mod object;
pub(crate) mod object_meta;
pub(crate) mod oidc_discovery;
pub(crate) mod openapi;
mod owner_reference_dedup;
pub(crate) mod pod_affinity;
pub(crate) mod pod_annotations;
pub(crate) mod pod_dns;
pub(crate) mod pod_ephemeral_containers;
pub(crate) mod pod_os;
pub(crate) mod pod_resize;
pub(crate) mod pod_security;
pub(crate) mod pod_security_checks;
pub(crate) mod pod_spec_fields;
pub(crate) mod pod_spec_validation;
pub(crate) mod pod_status;
pub(crate) mod pod_subresource;
pub(crate) mod pod_validation;
pub(crate) mod policy_validation;
pub(crate) mod printers;
pub(crate) mod protobuf;
pub(crate) mod pvc_validation;
pub(crate) mod quantity;
pub(crate) mod quota_controller;
pub(crate) mod quota_evaluators;
pub(crate) mod rbac;
pub(crate) mod rbac_bootstrap;
pub(crate) mod rbac_escalation;
pub(crate) mod rbac_validation;
pub mod registry;
pub(crate) mod request_info;
pub(crate) mod requester;
pub mod reservations;
pub(crate) mod resource_quota;
pub mod scale;
pub(crate) mod schema;
pub(crate) mod security_context;
pub(crate) mod selectable_fields;
pub mod selector;
pub(crate) mod semantic;
pub mod serve;
pub mod server;
pub mod service_account_token;
pub(crate) mod service_fields;
pub(crate) mod service_ips;
pub(crate) mod service_validation;
pub mod shared_line;
pub mod status;
pub mod storage;
pub(crate) mod storage_admission;
pub mod store;
pub mod strategic_merge;
pub mod strategy;
pub mod structural;
pub mod table;
pub mod testing;
pub mod tls;
pub(crate) mod token_request;
pub(crate) mod unchanged;
pub(crate) mod unified_diff;
pub(crate) mod validation;
pub(crate) mod validation_rules;
pub(crate) mod volume_mounts;
pub(crate) mod volume_protection;
pub(crate) mod warning;
pub mod watch;
pub mod watch_cache;
pub mod webhook_certificate;
pub(crate) mod webhook_client;
pub(crate) mod webhook_configuration;
pub(crate) mod windows_options;
pub(crate) mod workload_validation;
pub mod write_options;
pub(crate) mod yaml;

pub use authorizer::AuthorizationMode;
pub use controls::{Controls, Fault, RequestCounts, ShutdownAnswer, UnresponsiveClose};
pub use registry::{CustomVersion, PrinterColumn, Registry, ResourceInfo, ScaleSubresource};
pub use serve::{ServeError, ServeOptions, serve};
pub use server::{ApiServer, ApiServerBuilder, GracefulShutdown, StorageConfig, kubeconfig_yaml};
pub use status::ApiError;
