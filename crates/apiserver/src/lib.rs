//! `informer-apiserver`: an embeddable server speaking the Kubernetes
//! list/watch HTTP API the way kube-apiserver does (JSON only).
//!
//! Start one with [`ApiServer::builder`]`().start().await`; point clients at
//! [`ApiServer::url`] or [`ApiServer::kubeconfig_yaml`]. Objects live in an
//! in-memory [`store::Store`] with one cluster-wide resourceVersion and a
//! bounded watch cache; test controls (faults, latency, compaction, dropped
//! watches, restart) are methods of [`ApiServer`].

pub mod body;
pub mod cache;
pub mod controls;
pub mod discovery;
pub mod etcd_process;
pub mod handlers;
pub mod list;
pub mod object;
pub mod registry;
pub mod selector;
pub mod serve;
pub mod server;
pub mod status;
pub mod storage;
pub mod store;
pub mod table;
pub mod testing;
pub mod tls;
pub mod w1;
pub mod watch;
pub mod watch_cache;

pub use controls::{Controls, Fault, RequestCounts, UnresponsiveClose};
pub use registry::{Registry, ResourceInfo};
pub use serve::{ServeError, ServeOptions, serve};
pub use server::{ApiServer, ApiServerBuilder, GracefulShutdown, StorageConfig, kubeconfig_yaml};
pub use status::ApiError;
