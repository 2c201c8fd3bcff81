//! Built-in defaults: the values kube-apiserver v1.35 fills into objects of its built-in types
//! when it decodes a create or an update, so a minimal body is stored (and answered) as the real
//! server stores it.
//!
//! What it covers, per type (written from kube-apiserver's observable behaviour, see
//! `tests/fixtures/kube-apiserver/01-*`, `02-*`, `54-*`, `72-*`):
//! - the API types' defaulting (`SetDefaults_*`): pod specs (also in workload templates),
//!   containers, probes, volumes; Deployment, ReplicaSet and StatefulSet specs; Service specs;
//!   Secret `type`; the Namespace name label; Node allocatable; CSIDriver specs; an APIService's
//!   service port;
//! - what the create strategies set: a Namespace's `kubernetes` finalizer, a Pod's phase
//!   `Pending` and QoS class;
//! - a status as kube decodes it ([`status`]): the members kube always writes, phases, load
//!   balancers;
//! - what the admission plugins of a default kube-apiserver add to pods: the not-ready and
//!   unreachable tolerations (DefaultTolerationSeconds) and the priority (Priority);
//! - Service IP families and, with [`ClusterIps`], cluster IPs from 10.96.0.0/12.
//!
//! Invariants: defaulting fills only what is absent (JSON `null` and, for strings, `""` count as
//! absent, as they decode to Go's zero values); a value the client sent is kept, except where
//! kube overrides it (its name label, an empty Namespace
//! finalizer list that kube leaves out). It is idempotent: defaulting a defaulted object changes
//! nothing, so writing back a stored object stores the same bytes. Resources other than the
//! built-in types (custom resources) are never touched. Only a pod whose PriorityClass does not
//! exist (or whose priority contradicts it) is refused, with kube's 403.

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;

use serde_json::{Map, Value, json};

use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::status::ApiError;

/// The write an object is defaulted for.
#[derive(Debug, Clone, Copy)]
pub enum Write<'a> {
    /// A create.
    Create,
    /// A write to the object itself (PUT, PATCH, `/scale`) over its stored version.
    Update(&'a StoredObject),
}

/// The built-in types that have defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Builtin {
    Pod,
    Deployment,
    ReplicaSet,
    StatefulSet,
    Service,
    Secret,
    Namespace,
    Node,
    DaemonSet,
    Job,
    CronJob,
    Binding,
    PersistentVolumeClaim,
    PersistentVolume,
    NetworkPolicy,
    StorageClass,
    HorizontalPodAutoscaler,
    HorizontalPodAutoscalerV1,
    ReplicationController,
    PodTemplate,
    Endpoints,
    EndpointSlice,
    IngressClass,
    PriorityClass,
    CsiDriver,
}

fn builtin(info: &ResourceInfo) -> Option<Builtin> {
    if (info.group.as_str(), info.version.as_str(), info.plural.as_str())
        == ("autoscaling", "v2", "horizontalpodautoscalers")
    {
        return Some(Builtin::HorizontalPodAutoscaler);
    }
    if crate::autoscaling_v1::is_v1(info) {
        return Some(Builtin::HorizontalPodAutoscalerV1);
    }
    if info.version != "v1" {
        return None;
    }
    Some(match (info.group.as_str(), info.plural.as_str()) {
        ("apps", "daemonsets") => Builtin::DaemonSet,
        ("batch", "jobs") => Builtin::Job,
        ("batch", "cronjobs") => Builtin::CronJob,
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => Builtin::Binding,
        ("", "persistentvolumeclaims") => Builtin::PersistentVolumeClaim,
        ("", "persistentvolumes") => Builtin::PersistentVolume,
        ("networking.k8s.io", "networkpolicies") => Builtin::NetworkPolicy,
        ("storage.k8s.io", "storageclasses") => Builtin::StorageClass,
        ("", "replicationcontrollers") => Builtin::ReplicationController,
        ("", "podtemplates") => Builtin::PodTemplate,
        ("", "endpoints") => Builtin::Endpoints,
        ("discovery.k8s.io", "endpointslices") => Builtin::EndpointSlice,
        ("networking.k8s.io", "ingressclasses") => Builtin::IngressClass,
        ("scheduling.k8s.io", "priorityclasses") => Builtin::PriorityClass,
        ("storage.k8s.io", "csidrivers") => Builtin::CsiDriver,
        ("", "pods") => Builtin::Pod,
        ("", "services") => Builtin::Service,
        ("", "secrets") => Builtin::Secret,
        ("", "namespaces") => Builtin::Namespace,
        ("", "nodes") => Builtin::Node,
        ("apps", "deployments") => Builtin::Deployment,
        ("apps", "replicasets") => Builtin::ReplicaSet,
        ("apps", "statefulsets") => Builtin::StatefulSet,
        _ => return None,
    })
}

/// Whether `info` is the built-in scheduling.k8s.io/v1 PriorityClass.
pub fn is_priority_class(info: &ResourceInfo) -> bool {
    builtin(info) == Some(Builtin::PriorityClass)
}

/// Whether `info` is the built-in core/v1 Service (whose cluster IPs [`ClusterIps`] allocates).
pub fn is_service(info: &ResourceInfo) -> bool {
    builtin(info) == Some(Builtin::Service)
}

/// The status counts kube always writes (Go fields without `omitempty`): a status that leaves
/// one out is stored with a zero, as kube decodes it.
fn status_counts(info: &ResourceInfo) -> &'static [&'static str] {
    match (info.group.as_str(), info.version.as_str(), info.plural.as_str()) {
        ("", "v1", "replicationcontrollers") | ("apps", "v1", "replicasets") => &["replicas"],
        ("apps", "v1", "statefulsets") => &["replicas", "availableReplicas"],
        ("apps", "v1", "daemonsets") => {
            &["currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"]
        }
        ("policy", "v1", "poddisruptionbudgets") => {
            &["disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"]
        }
        ("autoscaling", "v2", "horizontalpodautoscalers") => &["desiredReplicas"],
        _ => &[],
    }
}

/// The defaults of a status as kube decodes it: all a write through `/status` gets, and what a
/// created object's fresh status is read back with ([`crate::strategy::prepare_create`]). A built-in
/// status that is missing or `null` is the empty one; its counts ([`status_counts`]) are
/// written as zeros, an HPA's empty `currentMetrics` as `null`, a Service's or Ingress's
/// `loadBalancer` as `{}` (a Service's load balancer addresses with mode `VIP`); phases start
/// `Pending` (volumes, claims) or `Active` (namespaces); a Node's `allocatable` is its capacity
/// unless given.
pub fn status(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    if info.custom.is_some() || !info.status_subresource || crate::crd::is_crds(info) {
        return;
    }
    if matches!(obj.get("status"), None | Some(Value::Null)) {
        obj.insert("status".into(), json!({}));
    }
    crate::dra_strategy::decode_status(info, obj);
    let load_balancer = is_service(info) && service_type(obj) == "LoadBalancer";
    let Some(status) = member(obj, "status") else { return };
    for count in status_counts(info) {
        default_val(status, count, json!(0));
    }
    match (info.group.as_str(), info.plural.as_str()) {
        ("autoscaling", "horizontalpodautoscalers") if info.version == "v2" => {
            let empty = status.get("currentMetrics").and_then(Value::as_array).is_some_and(Vec::is_empty);
            if empty || !status.contains_key("currentMetrics") {
                status.insert("currentMetrics".into(), Value::Null);
            }
        }
        ("", "services") | ("networking.k8s.io", "ingresses") => {
            default_val(status, "loadBalancer", json!({}));
            if load_balancer && let Some(lb) = member(status, "loadBalancer") {
                for ingress in items(lb, "ingress") {
                    if str_of(ingress, "ip").is_some() {
                        default_str(ingress, "ipMode", "VIP");
                    }
                }
            }
        }
        ("", "persistentvolumes" | "persistentvolumeclaims") => default_str(status, "phase", "Pending"),
        ("storage.k8s.io", "volumeattachments") => default_val(status, "attached", json!(false)),
        ("", "namespaces") => default_str(status, "phase", "Active"),
        ("", "pods") => pod_addresses(status),
        ("", "nodes") => {
            if let Some(capacity) = status.get("capacity").filter(|c| c.is_object()).cloned() {
                default_val(status, "allocatable", capacity);
            }
        }
        _ => {}
    }
}

/// A Service's `spec.type` (`ClusterIP` when unset).
fn service_type(obj: &Map<String, Value>) -> &str {
    obj.get("spec").and_then(Value::as_object).and_then(|s| str_of(s, "type")).unwrap_or("ClusterIP")
}

/// Fills the defaults of `obj` (the body of a write to `info`, its name already resolved):
/// [`decode`], [`admission_plugins`], then [`admit`]. Fails only with the 403 of kube's Priority
/// admission for a pod naming an unknown PriorityClass.
pub fn apply(info: &ResourceInfo, obj: &mut Map<String, Value>, write: Write<'_>) -> Result<(), ApiError> {
    decode(info, obj);
    admission_plugins(info, obj, write, &[])?;
    admit(info, obj, write)
}

/// A pod status's addresses, each kept in its two fields ([`singular_and_plural`]).
fn pod_addresses(status: &mut Map<String, Value>) {
    singular_and_plural(status, "podIP", "podIPs", |ip| json!({"ip": ip}));
    singular_and_plural(status, "hostIP", "hostIPs", |ip| json!({"ip": ip}));
}

/// A field kube keeps twice, singular for older clients and as a list (a pod's `podIP` and
/// `podIPs`, `hostIP` and `hostIPs`, a node's `podCIDR` and `podCIDRs`), as kube's conversion
/// through its internal form leaves it: the singular value, when set, is the list's first (the
/// whole list when they differ); the list's first is then the singular value.
fn singular_and_plural(obj: &mut Map<String, Value>, one: &str, many: &str, element: fn(&str) -> Value) {
    let first = |obj: &Map<String, Value>| {
        let first = obj.get(many).and_then(Value::as_array).and_then(|l| l.first());
        first.and_then(|f| f.get("ip").or(Some(f))).and_then(Value::as_str).map(str::to_string)
    };
    if let Some(single) = obj.get(one).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string) {
        let listed = obj.get(many).and_then(Value::as_array).is_some_and(|l| !l.is_empty());
        if !listed || first(obj).as_deref() != Some(single.as_str()) {
            obj.insert(many.into(), json!([element(&single)]));
        }
    }
    if let Some(f) = first(obj)
        && obj.get(one).and_then(Value::as_str) != Some(f.as_str())
    {
        obj.insert(one.into(), f.into());
    }
}

/// A built-in object as kube-apiserver stores it: in the form its Go type writes it
/// ([`crate::go_form`]: without the empty lists and maps and the value-held zeros its Go type
/// leaves out, with the fields it always writes). Defaults and validation see the request's
/// form, as they see Go's empty, non-nil values (an HPA's `policies: []` is refused, a Node's
/// `allocatable: {}` is not defaulted); admission sees Go's form of it, as kube encodes it for
/// webhooks and policies (`admission_policy::go_written`), and so does the stored object.
/// A custom resource is pruned with its schema (kube's storage codec prunes every object it
/// encodes: an apply's fields its structural schema does not keep are gone only here) and its
/// metadata loses what an ObjectMeta leaves out (kube writes it back from one, see
/// [`crate::object_meta::round_trip`]).
pub fn go_stored(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    if info.custom.is_some() {
        let mut v = Value::Object(std::mem::take(obj));
        crate::custom_resource::prune(info, &mut v);
        if let Value::Object(m) = v {
            *obj = m;
        }
        if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
            crate::object_meta::round_trip(meta);
        }
        return;
    }
    if let Some(definition) = crate::schema::builtin().name_of(&info.group, &info.version, &info.kind) {
        crate::go_form::normalize(obj, definition);
    }
}

/// The defaults of the API types (`SetDefaults_*`), which kube-apiserver fills when it decodes a
/// request: the fields a write's manager owns in `managedFields` along with what it sent. A
/// custom resource's come from its CRD's schema; a CRD's own from apiextensions' defaults.
pub fn decode(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    if info.custom.is_some() {
        crate::custom_resource::default(info, obj);
        return;
    }
    if crate::crd::is_crds(info) {
        crate::crd::default_spec(obj);
        return;
    }
    if crate::limit_ranger::is_limit_ranges(info) {
        crate::limit_ranger::default_items(obj);
        return;
    }
    if crate::dra_validation::judges(info) {
        crate::dra_strategy::decode(info, obj);
        return;
    }
    if crate::api_service::is_api_services(info) {
        crate::api_service::default(obj);
        return;
    }
    if crate::flowcontrol::judges(info) {
        crate::flowcontrol::default(info, obj);
        return;
    }
    if info.group == crate::admission_policy::GROUP && info.plural.ends_with("webhookconfigurations") {
        crate::webhook_configuration::default(obj, info.plural == crate::admission_webhook::MUTATING);
        return;
    }
    let Some(kind) = builtin(info) else { return };
    match kind {
        Builtin::Pod => {
            if let Some(spec) = ensure_obj(obj, "spec") {
                pod_spec_defaults(spec);
            }
            if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
                pod_addresses(status);
            }
        }
        Builtin::Deployment => {
            if let Some(spec) = ensure_obj(obj, "spec") {
                deployment_spec(spec);
            }
        }
        Builtin::ReplicaSet => {
            if let Some(spec) = ensure_obj(obj, "spec") {
                default_val(spec, "replicas", json!(1));
                template(spec);
            }
        }
        Builtin::StatefulSet => {
            if let Some(spec) = ensure_obj(obj, "spec") {
                statefulset_spec(spec);
            }
        }
        Builtin::Service => service_spec(obj),
        Builtin::Secret => {
            string_data(obj);
            default_str(obj, "type", "Opaque");
        }
        Builtin::Namespace => namespace_label(obj),
        Builtin::Node => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                singular_and_plural(spec, "podCIDR", "podCIDRs", |cidr| json!(cidr));
            }
        }
        Builtin::PriorityClass => default_val(obj, "preemptionPolicy", json!("PreemptLowerPriority")),
        Builtin::DaemonSet => {
            if let Some(spec) = ensure_obj(obj, "spec") {
                if let Some(strategy) = ensure_obj(spec, "updateStrategy") {
                    default_str(strategy, "type", "RollingUpdate");
                    if str_of(strategy, "type") == Some("RollingUpdate")
                        && let Some(rolling) = ensure_obj(strategy, "rollingUpdate")
                    {
                        default_val(rolling, "maxUnavailable", json!(1));
                        default_val(rolling, "maxSurge", json!(0));
                    }
                }
                default_val(spec, "revisionHistoryLimit", json!(10));
                template(spec);
            }
        }
        Builtin::Job => {
            labels_from_template(obj);
            if let Some(spec) = ensure_obj(obj, "spec") {
                job_spec(spec);
            }
        }
        Builtin::CronJob => {
            if let Some(spec) = ensure_obj(obj, "spec") {
                default_str(spec, "concurrencyPolicy", "Allow");
                default_val(spec, "suspend", json!(false));
                default_val(spec, "successfulJobsHistoryLimit", json!(3));
                default_val(spec, "failedJobsHistoryLimit", json!(1));
                // kube defaults a CronJob's job template's pods, not the Job fields.
                if let Some(job) = member(spec, "jobTemplate")
                    && let Some(job_spec_map) = member(job, "spec")
                {
                    template(job_spec_map);
                }
            }
        }
        Builtin::Binding => {
            for subject in items(obj, "subjects") {
                if matches!(str_of(subject, "kind"), Some("User" | "Group")) {
                    default_str(subject, "apiGroup", "rbac.authorization.k8s.io");
                }
            }
            if let Some(role_ref) = member(obj, "roleRef") {
                default_str(role_ref, "apiGroup", "rbac.authorization.k8s.io");
            }
        }
        Builtin::PersistentVolumeClaim => {
            if let Some(spec) = ensure_obj(obj, "spec") {
                default_str(spec, "volumeMode", "Filesystem");
            }
            if let Some(status) = ensure_obj(obj, "status") {
                default_str(status, "phase", "Pending");
            }
        }
        Builtin::PersistentVolume => {
            if let Some(spec) = ensure_obj(obj, "spec") {
                default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
                default_str(spec, "volumeMode", "Filesystem");
            }
            if let Some(status) = ensure_obj(obj, "status") {
                default_str(status, "phase", "Pending");
            }
        }
        Builtin::NetworkPolicy => {
            if let Some(spec) = ensure_obj(obj, "spec") {
                network_policy_spec(spec);
            }
        }
        Builtin::StorageClass => {
            default_str(obj, "reclaimPolicy", "Delete");
            default_str(obj, "volumeBindingMode", "Immediate");
        }
        Builtin::HorizontalPodAutoscalerV1 => {
            if let Some(spec) = ensure_obj(obj, "spec") {
                default_val(spec, "minReplicas", json!(1));
            }
        }
        Builtin::HorizontalPodAutoscaler => {
            // What v1 keeps in annotations is never part of a v2 object.
            crate::autoscaling_v1::drop_annotations(obj);
            if let Some(spec) = ensure_obj(obj, "spec") {
                default_val(spec, "minReplicas", json!(1));
                // Without metrics, kube scales on 80% of the pods' CPU requests.
                if spec.get("metrics").and_then(Value::as_array).is_none_or(Vec::is_empty) {
                    spec.insert(
                        "metrics".into(),
                        json!([{"type": "Resource", "resource": {"name": "cpu",
                                "target": {"type": "Utilization", "averageUtilization": 80}}}]),
                    );
                }
                // A behavior given is completed with kube's scaling rules.
                if let Some(behavior) = member(spec, "behavior") {
                    if let Some(up) = ensure_obj(behavior, "scaleUp") {
                        default_val(up, "stabilizationWindowSeconds", json!(0));
                        default_str(up, "selectPolicy", "Max");
                        default_val(
                            up,
                            "policies",
                            json!([{"type": "Pods", "value": 4, "periodSeconds": 15},
                                   {"type": "Percent", "value": 100, "periodSeconds": 15}]),
                        );
                    }
                    if let Some(down) = ensure_obj(behavior, "scaleDown") {
                        default_str(down, "selectPolicy", "Max");
                        default_val(down, "policies", json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]));
                    }
                }
            }
        }
        Builtin::ReplicationController => {
            let template_labels = obj.get("spec").and_then(|s| s.pointer("/template/metadata/labels")).cloned();
            let template_labels = template_labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty()));
            if let Some(spec) = ensure_obj(obj, "spec") {
                default_val(spec, "replicas", json!(1));
                if let Some(labels) = &template_labels
                    && spec.get("selector").and_then(Value::as_object).is_none_or(Map::is_empty)
                {
                    spec.insert("selector".into(), labels.clone());
                }
                template(spec);
            }
            labels_from_template(obj);
        }
        Builtin::PodTemplate => template(obj),
        Builtin::Endpoints => {
            for subset in items(obj, "subsets") {
                for port in items(subset, "ports") {
                    default_str(port, "protocol", "TCP");
                }
            }
        }
        Builtin::EndpointSlice => {
            // (Pointers in Go: only a missing or null one is defaulted.)
            for port in items(obj, "ports") {
                default_val(port, "name", json!(""));
                default_val(port, "protocol", json!("TCP"));
            }
        }
        Builtin::CsiDriver => {
            if let Some(spec) = ensure_obj(obj, "spec") {
                default_val(spec, "attachRequired", json!(true));
                for flag in ["podInfoOnMount", "storageCapacity", "requiresRepublish", "seLinuxMount"] {
                    default_val(spec, flag, json!(false));
                }
                default_val(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
                if spec.get("volumeLifecycleModes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
                    spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
                }
            }
        }
        Builtin::IngressClass => {
            if let Some(spec) = member(obj, "spec")
                && let Some(parameters) = member(spec, "parameters")
            {
                default_str(parameters, "scope", "Cluster");
            }
        }
    }
}

/// kube's reading of a Secret's `stringData`: each value, encoded, replaces the `data` entry of
/// its key; `stringData` itself is never stored nor answered.
pub(crate) fn string_data(obj: &mut Map<String, Value>) {
    use base64::Engine;
    let Some(Value::Object(strings)) = obj.remove("stringData") else { return };
    if strings.is_empty() {
        return;
    }
    if let Some(data) = ensure_obj(obj, "data") {
        for (k, v) in strings {
            let text = v.as_str().unwrap_or_default();
            data.insert(k, base64::engine::general_purpose::STANDARD.encode(text).into());
        }
    }
}

/// A Job's spec defaults (also a CronJob's job template's).
fn job_spec(spec: &mut Map<String, Value>) {
    if !spec.contains_key("completions") && !spec.contains_key("parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    default_val(spec, "parallelism", json!(1));
    let per_index = spec.get("backoffLimitPerIndex").is_some_and(|v| !v.is_null());
    default_val(spec, "backoffLimit", json!(if per_index { i64::from(i32::MAX) } else { 6 }));
    default_str(spec, "completionMode", "NonIndexed");
    default_val(spec, "suspend", json!(false));
    let failure_policy = spec.get("podFailurePolicy").is_some_and(|v| !v.is_null());
    default_str(spec, "podReplacementPolicy", if failure_policy { "Failed" } else { "TerminatingOrFailed" });
    if let Some(policy) = member(spec, "podFailurePolicy") {
        for rule in items(policy, "rules") {
            for condition in items(rule, "onPodConditions") {
                default_str(condition, "status", "True");
            }
        }
    }
    template(spec);
}

/// A NetworkPolicy's `policyTypes` (Ingress, and Egress when it has egress rules) and its ports'
/// protocol.
fn network_policy_spec(spec: &mut Map<String, Value>) {
    for direction in ["ingress", "egress"] {
        for rule in items(spec, direction) {
            for port in items(rule, "ports") {
                default_str(port, "protocol", "TCP");
            }
        }
    }
    if spec.get("policyTypes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        let mut types = vec![json!("Ingress")];
        if spec.get("egress").and_then(Value::as_array).is_some_and(|e| !e.is_empty()) {
            types.push(json!("Egress"));
        }
        spec.insert("policyTypes".into(), Value::Array(types));
    }
}

/// What kube-apiserver's mutating admission plugins add before the admission webhooks are
/// called: a pod's default tolerations (DefaultTolerationSeconds) and its priority (Priority).
///
/// `classes` are the PriorityClasses that exist (read only for pods, see
/// [`needs_priority_classes`]).
pub fn admission_plugins(
    info: &ResourceInfo,
    obj: &mut Map<String, Value>,
    write: Write<'_>,
    classes: &[Value],
) -> Result<(), ApiError> {
    if builtin(info) != Some(Builtin::Pod) {
        return Ok(());
    }
    let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("").to_string();
    let Some(spec) = ensure_obj(obj, "spec") else { return Ok(()) };
    default_tolerations(spec);
    priority(spec, write, &name, classes)
}

/// Whether writes of `info` read the PriorityClasses (pods, for their priority; PriorityClasses,
/// for the global default).
pub fn needs_priority_classes(info: &ResourceInfo) -> bool {
    matches!(builtin(info), Some(Builtin::Pod | Builtin::PriorityClass))
}

/// What the Priority plugin reads of a stored PriorityClass: its name, `value`, `globalDefault`
/// and `preemptionPolicy` (the rest of its JSON is skipped, not parsed: a pod's create reads
/// every class).
pub fn priority_class_fields(o: &crate::object::StoredObject) -> Value {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Read {
        value: Option<Value>,
        global_default: Option<Value>,
        preemption_policy: Option<Value>,
    }
    let mut out = Map::new();
    out.insert("metadata".into(), json!({"name": o.name}));
    if let Ok(read) = serde_json::from_slice::<Read>(o.storage_value()) {
        for (k, v) in [
            ("value", read.value),
            ("globalDefault", read.global_default),
            ("preemptionPolicy", read.preemption_policy),
        ] {
            if let Some(v) = v {
                out.insert(k.into(), v);
            }
        }
    }
    Value::Object(out)
}

/// kube's validating admission plugins that read other objects: Priority's rule that a
/// PriorityClass marked `globalDefault` is refused (403) while another is the default (the one
/// of lowest value when there are several; on a create, whatever its name). Runs after the
/// object is validated and before policies and validating webhooks.
pub fn validate_admission(
    info: &ResourceInfo,
    obj: &Map<String, Value>,
    write: Write<'_>,
    classes: &[Value],
) -> Result<(), ApiError> {
    if builtin(info) != Some(Builtin::PriorityClass) || obj.get("globalDefault") != Some(&Value::Bool(true)) {
        return Ok(());
    }
    let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
    let default = classes
        .iter()
        .filter(|c| c.get("globalDefault") == Some(&Value::Bool(true)))
        .min_by_key(|c| c.get("value").and_then(Value::as_i64).unwrap_or(0));
    let default_name = default.and_then(|c| c.pointer("/metadata/name")).and_then(Value::as_str);
    match default_name {
        Some(d) if matches!(write, Write::Create) || d != name => Err(ApiError::forbidden(
            "scheduling.k8s.io",
            "priorityclasses",
            name,
            &format!("PriorityClass {d} is already marked as default. Only one default can exist"),
        )),
        _ => Ok(()),
    }
}

/// The PriorityClasses kube-apiserver creates at start: (name, value, description).
pub const SYSTEM_PRIORITY_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// What kube-apiserver adds after the admission webhooks — the create strategies (a pod's phase
/// and QoS class, a namespace's finalizer) and the allocation of Service addresses — which no
/// manager owns.
pub fn admit(info: &ResourceInfo, obj: &mut Map<String, Value>, write: Write<'_>) -> Result<(), ApiError> {
    let Some(kind) = builtin(info) else { return Ok(()) };
    let create = matches!(write, Write::Create);
    match kind {
        Builtin::Pod => pod(obj, write)?,
        Builtin::Service => service_allocation(obj, write),
        Builtin::Job if create => job_selector(obj),
        Builtin::DaemonSet => daemonset_template_generation(obj, write),
        Builtin::Namespace => namespace(obj, create),
        Builtin::Deployment
        | Builtin::ReplicaSet
        | Builtin::StatefulSet
        | Builtin::Job
        | Builtin::CronJob
        | Builtin::Node
        | Builtin::ReplicationController
        | Builtin::PodTemplate
        | Builtin::Endpoints
        | Builtin::EndpointSlice
        | Builtin::IngressClass
        | Builtin::PriorityClass
        | Builtin::CsiDriver
        | Builtin::Binding
        | Builtin::PersistentVolumeClaim
        | Builtin::PersistentVolume
        | Builtin::NetworkPolicy
        | Builtin::StorageClass
        | Builtin::HorizontalPodAutoscaler
        | Builtin::HorizontalPodAutoscalerV1
        | Builtin::Secret => {}
    }
    Ok(())
}

/// kube's DaemonSet strategy: the template's generation, kept in the
/// `deprecated.daemonset.template.generation` annotation, starts at 1 and moves with each
/// change of the template.
fn daemonset_template_generation(obj: &mut Map<String, Value>, write: Write<'_>) {
    const KEY: &str = "deprecated.daemonset.template.generation";
    let generation = match write {
        Write::Create => 1,
        Write::Update(old) => {
            let old = old.value();
            let before = old
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(KEY))
                .and_then(Value::as_str)
                .and_then(|g| g.parse::<i64>().ok())
                .unwrap_or(1);
            let changed = old.pointer("/spec/template") != obj.get("spec").and_then(|s| s.get("template"));
            if changed { before + 1 } else { before }
        }
    };
    if let Some(meta) = ensure_obj(obj, "metadata")
        && let Some(annotations) = ensure_obj(meta, "annotations")
    {
        annotations.insert(KEY.into(), generation.to_string().into());
    }
}

/// kube's Job create strategy: unless the Job asks for a manual selector, its pods are labelled
/// with its name and uid and selected by the uid.
fn job_selector(obj: &mut Map<String, Value>) {
    let meta = obj.get("metadata");
    let text = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str).unwrap_or("").to_string();
    let (name, uid) = (text("name"), text("uid"));
    let Some(spec) = ensure_obj(obj, "spec") else { return };
    if spec.get("manualSelector") == Some(&Value::Bool(true)) {
        return;
    }
    if let Some(template) = ensure_obj(spec, "template")
        && let Some(meta) = ensure_obj(template, "metadata")
        && let Some(labels) = ensure_obj(meta, "labels")
    {
        for (k, v) in [
            ("job-name", &name),
            ("batch.kubernetes.io/job-name", &name),
            ("controller-uid", &uid),
            ("batch.kubernetes.io/controller-uid", &uid),
        ] {
            default_val(labels, k, json!(v));
        }
    }
    if let Some(selector) = ensure_obj(spec, "selector")
        && let Some(match_labels) = ensure_obj(selector, "matchLabels")
    {
        default_val(match_labels, "batch.kubernetes.io/controller-uid", json!(uid));
    }
}

// ---- helpers ----

/// Whether a member is unset as Go decodes it: absent or `null`.
fn unset(m: &Map<String, Value>, key: &str) -> bool {
    matches!(m.get(key), None | Some(Value::Null))
}

/// Sets `key` unless it is set.
fn default_val(m: &mut Map<String, Value>, key: &str, v: Value) {
    if unset(m, key) {
        m.insert(key.into(), v);
    }
}

/// Sets the string `key` unless it is a non-empty string (or some other value).
fn default_str(m: &mut Map<String, Value>, key: &str, v: &str) {
    if unset(m, key) || m.get(key).and_then(Value::as_str) == Some("") {
        m.insert(key.into(), v.into());
    }
}

/// The object member `key`, created (`{}`) when unset; None when it holds something else (a
/// body of the wrong shape gets no defaults there).
/// The object member `key`, made an empty object when it is unset (missing or `null`).
pub(crate) fn ensure_obj<'a>(m: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    if unset(m, key) {
        m.insert(key.into(), Value::Object(Map::new()));
    }
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// The object member `key`, if it is one.
fn member<'a>(m: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// The objects of the array member `key`.
fn items<'a>(m: &'a mut Map<String, Value>, key: &str) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut)
}

fn str_of<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

// ---- pods ----

/// A pod's admission defaults (tolerations, priority) and, on create, the status its strategy
/// sets.
fn pod(obj: &mut Map<String, Value>, write: Write<'_>) -> Result<(), ApiError> {
    let Some(spec) = ensure_obj(obj, "spec") else { return Ok(()) };
    if matches!(write, Write::Create) {
        let qos = qos_class(spec);
        if let Some(status) = ensure_obj(obj, "status") {
            default_str(status, "phase", "Pending");
            default_str(status, "qosClass", qos);
        }
    }
    Ok(())
}

/// A pod's spec with the defaults kube gives it on decoding (also for comparing a stored spec,
/// which kube reads back with the defaults of the day).
pub(crate) fn pod_spec_defaults(spec: &mut Map<String, Value>) {
    pod_spec(spec, true);
    default_val(spec, "enableServiceLinks", json!(true));
}

/// A pod spec's defaults; `pod` for a Pod's own spec (not a template's), which also gets the
/// container requests defaulted from their limits and host ports on the host network.
fn pod_spec(spec: &mut Map<String, Value>, pod: bool) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default_val(spec, "terminationGracePeriodSeconds", json!(30));
    default_val(spec, "securityContext", json!({}));
    default_str(spec, "schedulerName", "default-scheduler");
    let host_network = pod && spec.get("hostNetwork") == Some(&Value::Bool(true));
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        let requests_from_limits = pod && key != "ephemeralContainers";
        for c in items(spec, key) {
            container(c, requests_from_limits, host_network);
        }
    }
    for v in items(spec, "volumes") {
        volume(v);
    }
}

fn container(c: &mut Map<String, Value>, requests_from_limits: bool, host_network: bool) {
    if str_of(c, "imagePullPolicy").is_none() {
        let policy = pull_policy(c.get("image").and_then(Value::as_str).unwrap_or(""));
        c.insert("imagePullPolicy".into(), policy.into());
    }
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    if let Some(resources) = ensure_obj(c, "resources")
        && requests_from_limits
        && let Some(Value::Object(limits)) = resources.get("limits").cloned()
        && let Some(requests) = ensure_obj(resources, "requests")
    {
        for (k, v) in limits {
            requests.entry(k).or_insert(v);
        }
    }
    for p in items(c, "ports") {
        default_str(p, "protocol", "TCP");
        if host_network && let Some(port) = p.get("containerPort").cloned() {
            default_val(p, "hostPort", port);
        }
    }
    for e in items(c, "env") {
        if let Some(from) = member(e, "valueFrom") {
            field_ref(from);
        }
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = member(c, key) {
            probe(p);
        }
    }
    if let Some(l) = member(c, "lifecycle") {
        for key in ["postStart", "preStop"] {
            if let Some(h) = member(l, key) {
                handler(h);
            }
        }
    }
}

/// The pull policy kube gives a container without one: `Always` for `:latest` or an image
/// without tag or digest, `IfNotPresent` otherwise.
fn pull_policy(image: &str) -> &'static str {
    if image.is_empty() {
        return "IfNotPresent";
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, _)) => (n, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.rsplit_once(':').map(|(_, tag)| tag) {
        Some("latest") => "Always",
        Some(_) => "IfNotPresent",
        None if digest => "IfNotPresent",
        None => "Always",
    }
}

fn field_ref(m: &mut Map<String, Value>) {
    if let Some(f) = member(m, "fieldRef") {
        default_str(f, "apiVersion", "v1");
    }
}

fn probe(p: &mut Map<String, Value>) {
    // Go's defaults fill zero values too.
    for (key, v) in [("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3)] {
        if unset(p, key) || p.get(key).and_then(Value::as_i64) == Some(0) {
            p.insert(key.into(), v.into());
        }
    }
    handler(p);
}

fn handler(h: &mut Map<String, Value>) {
    if let Some(get) = member(h, "httpGet") {
        default_str(get, "path", "/");
        default_str(get, "scheme", "HTTP");
    }
    if let Some(grpc) = member(h, "grpc") {
        default_val(grpc, "service", json!(""));
    }
}

fn volume(v: &mut Map<String, Value>) {
    if v.iter().all(|(k, val)| k == "name" || val.is_null()) {
        v.insert("emptyDir".into(), json!({}));
    }
    for key in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(src) = member(v, key) {
            default_val(src, "defaultMode", json!(420));
        }
    }
    if let Some(d) = member(v, "downwardAPI") {
        for item in items(d, "items") {
            field_ref(item);
        }
    }
    if let Some(p) = member(v, "projected") {
        for source in items(p, "sources") {
            if let Some(d) = member(source, "downwardAPI") {
                for item in items(d, "items") {
                    field_ref(item);
                }
            }
            if let Some(t) = member(source, "serviceAccountToken") {
                default_val(t, "expirationSeconds", json!(3600));
            }
        }
    }
    if let Some(h) = member(v, "hostPath") {
        default_val(h, "type", json!(""));
    }
    if let Some(spec) =
        member(v, "ephemeral").and_then(|e| member(e, "volumeClaimTemplate")).and_then(|t| member(t, "spec"))
    {
        default_str(spec, "volumeMode", "Filesystem");
    }
}

/// kube's DefaultTolerationSeconds admission: tolerate the not-ready and unreachable taints for
/// 300 s unless the pod already tolerates them.
fn default_tolerations(spec: &mut Map<String, Value>) {
    const TAINTS: [&str; 2] = ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"];
    let tolerated = |taint: &str| {
        spec.get("tolerations").and_then(Value::as_array).into_iter().flatten().any(|t| {
            let key = t.get("key").and_then(Value::as_str).unwrap_or("");
            let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
            (key.is_empty() || key == taint) && (effect.is_empty() || effect == "NoExecute")
        })
    };
    let missing: Vec<&str> = TAINTS.into_iter().filter(|t| !tolerated(t)).collect();
    if missing.is_empty() {
        return;
    }
    if !matches!(spec.get("tolerations"), Some(Value::Array(_))) {
        spec.insert("tolerations".into(), json!([]));
    }
    if let Some(Value::Array(list)) = spec.get_mut("tolerations") {
        for taint in missing {
            list.push(json!({"key": taint, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
}

/// kube's Priority admission: a new pod's priority and preemption policy come from its
/// PriorityClass (only the two built-in system classes exist here; none named: priority 0); an
/// update keeps the stored ones.
fn priority(spec: &mut Map<String, Value>, write: Write<'_>, name: &str, classes: &[Value]) -> Result<(), ApiError> {
    match write {
        Write::Create => {
            // The class a pod names, else the global default class if one exists (as kube's
            // Priority admission plugin); the system classes are always there.
            let class_of = |c: &Value| {
                let value = c.get("value").and_then(Value::as_i64).unwrap_or(0);
                let policy = c.get("preemptionPolicy").and_then(Value::as_str).unwrap_or("PreemptLowerPriority");
                (value, policy.to_string())
            };
            let named =
                |n: &str| classes.iter().find(|c| c.pointer("/metadata/name").and_then(Value::as_str) == Some(n));
            let (priority, policy) = match str_of(spec, "priorityClassName").map(str::to_string) {
                None => match classes.iter().find(|c| c.get("globalDefault") == Some(&Value::Bool(true))) {
                    Some(c) => {
                        let class = c.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
                        spec.insert("priorityClassName".into(), class.into());
                        class_of(c)
                    }
                    None => (0, "PreemptLowerPriority".to_string()),
                },
                Some(n) => match (named(&n), SYSTEM_PRIORITY_CLASSES.iter().find(|(s, ..)| *s == n)) {
                    (Some(c), _) => class_of(c),
                    (None, Some((_, value, _))) => (*value, "PreemptLowerPriority".to_string()),
                    (None, None) => {
                        return Err(ApiError::forbidden(
                            "",
                            "pods",
                            name,
                            &format!("no PriorityClass with name {n} was found"),
                        ));
                    }
                },
            };
            if let Some(given) = spec.get("priority").and_then(Value::as_i64)
                && given != priority
            {
                return Err(ApiError::forbidden(
                    "",
                    "pods",
                    name,
                    &format!(
                        "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
                    ),
                ));
            }
            default_val(spec, "priority", json!(priority));
            default_str(spec, "preemptionPolicy", &policy);
        }
        Write::Update(old) => {
            if unset(spec, "priority") || unset(spec, "preemptionPolicy") {
                let old = old.value();
                for key in ["priority", "preemptionPolicy"] {
                    if let Some(v) = old.get("spec").and_then(|s| s.get(key)) {
                        default_val(spec, key, v.clone());
                    }
                }
            }
        }
    }
    Ok(())
}

/// A pod's QoS class from its containers' CPU and memory requests and limits (requests already
/// defaulted from limits): BestEffort without any, Guaranteed when every container limits both
/// and the requests equal the limits, Burstable otherwise.
pub(crate) fn qos_class(spec: &Map<String, Value>) -> &'static str {
    let mut requests: HashMap<&str, i128> = HashMap::new();
    let mut limits: HashMap<&str, i128> = HashMap::new();
    let mut guaranteed = true;
    let containers = ["containers", "initContainers"]
        .into_iter()
        .flat_map(|k| spec.get(k).and_then(Value::as_array).into_iter().flatten());
    for c in containers {
        let resources = c.get("resources");
        let positive = |kind: &str| -> Vec<(&str, i128)> {
            resources
                .and_then(|r| r.get(kind))
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| {
                    let name = match k.as_str() {
                        "cpu" => "cpu",
                        "memory" => "memory",
                        _ => return None,
                    };
                    let q = match v {
                        Value::String(s) => parse_quantity(s)?,
                        Value::Number(n) => parse_quantity(&n.to_string())?,
                        _ => return None,
                    };
                    (q > 0).then_some((name, q))
                })
                .collect()
        };
        for (name, q) in positive("requests") {
            *requests.entry(name).or_default() += q;
        }
        let found = positive("limits");
        for (name, q) in &found {
            *limits.entry(name).or_default() += q;
        }
        if !(found.iter().any(|(n, _)| *n == "cpu") && found.iter().any(|(n, _)| *n == "memory")) {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed && requests.len() == limits.len() && requests.iter().all(|(k, v)| limits.get(k) == Some(v)) {
        return "Guaranteed";
    }
    "Burstable"
}

/// A resource quantity (`100m`, `1.5Gi`, `2e3`) in billionths, None when it does not parse.
fn parse_quantity(s: &str) -> Option<i128> {
    crate::quantity::parse(s.trim())
}

// ---- workloads ----

/// The pod template of a workload spec.
fn template(spec: &mut Map<String, Value>) {
    if let Some(t) = member(spec, "template")
        && let Some(spec) = ensure_obj(t, "spec")
    {
        pod_spec(spec, false);
    }
}

fn deployment_spec(spec: &mut Map<String, Value>) {
    default_val(spec, "replicas", json!(1));
    if let Some(strategy) = ensure_obj(spec, "strategy") {
        default_str(strategy, "type", "RollingUpdate");
        if str_of(strategy, "type") == Some("RollingUpdate")
            && let Some(rolling) = ensure_obj(strategy, "rollingUpdate")
        {
            default_val(rolling, "maxUnavailable", json!("25%"));
            default_val(rolling, "maxSurge", json!("25%"));
        }
    }
    default_val(spec, "revisionHistoryLimit", json!(10));
    default_val(spec, "progressDeadlineSeconds", json!(600));
    template(spec);
}

fn statefulset_spec(spec: &mut Map<String, Value>) {
    default_str(spec, "podManagementPolicy", "OrderedReady");
    if let Some(strategy) = ensure_obj(spec, "updateStrategy") {
        if str_of(strategy, "type").is_none() {
            strategy.insert("type".into(), "RollingUpdate".into());
            default_val(strategy, "rollingUpdate", json!({}));
        }
        if str_of(strategy, "type") == Some("RollingUpdate")
            && let Some(rolling) = member(strategy, "rollingUpdate")
        {
            default_val(rolling, "partition", json!(0));
        }
    }
    if let Some(retention) = ensure_obj(spec, "persistentVolumeClaimRetentionPolicy") {
        default_str(retention, "whenDeleted", "Retain");
        default_str(retention, "whenScaled", "Retain");
    }
    default_val(spec, "replicas", json!(1));
    default_val(spec, "revisionHistoryLimit", json!(10));
    template(spec);
    for claim in items(spec, "volumeClaimTemplates") {
        if let Some(spec) = ensure_obj(claim, "spec") {
            default_str(spec, "volumeMode", "Filesystem");
        }
        if let Some(status) = ensure_obj(claim, "status") {
            default_str(status, "phase", "Pending");
        }
    }
}

// ---- services ----

/// A Service spec's API defaults.
fn service_spec(obj: &mut Map<String, Value>) {
    let Some(spec) = ensure_obj(obj, "spec") else { return };
    default_str(spec, "sessionAffinity", "None");
    match str_of(spec, "sessionAffinity") {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let has_timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.get("clientIP"))
                .and_then(|c| c.get("timeoutSeconds"))
                .is_some_and(|t| !t.is_null());
            if !has_timeout {
                spec.insert("sessionAffinityConfig".into(), json!({"clientIP": {"timeoutSeconds": 10800}}));
            }
        }
        _ => {}
    }
    default_str(spec, "type", "ClusterIP");
    let kind = str_of(spec, "type").unwrap_or("ClusterIP").to_string();
    for p in items(spec, "ports") {
        default_str(p, "protocol", "TCP");
        let unset_target = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            _ => false,
        };
        if unset_target && let Some(port) = p.get("port").cloned() {
            p.insert("targetPort".into(), port);
        }
    }
    let external = kind == "NodePort" || kind == "LoadBalancer";
    let external_ips = spec.get("externalIPs").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    if external || kind == "ClusterIP" && external_ips {
        default_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if external || kind == "ClusterIP" {
        default_str(spec, "internalTrafficPolicy", "Cluster");
    }
    if kind == "LoadBalancer" {
        default_val(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

/// What kube-apiserver's Service storage allocates: IP families and addresses (kept from the
/// stored Service on update).
fn service_allocation(obj: &mut Map<String, Value>, write: Write<'_>) {
    let Some(spec) = ensure_obj(obj, "spec") else { return };
    let old = match write {
        Write::Update(old) => Some(old.value()),
        Write::Create => None,
    };
    let old_spec = old.as_ref().and_then(|o| o.get("spec")).and_then(Value::as_object);
    if let Some(old_spec) = old_spec {
        drop_type_dependent_fields(spec, old_spec);
        crate::node_ports::keep(spec, old_spec);
    }
    let kind = str_of(spec, "type").unwrap_or("ClusterIP").to_string();
    if old_spec.is_some() && kind != "LoadBalancer" {
        // Only a load balancer has a load balancer's status.
        if let Some(status) = member(obj, "status")
            && status.get("loadBalancer").is_some_and(|l| l.as_object().is_none_or(|m| !m.is_empty()))
        {
            status.insert("loadBalancer".into(), json!({}));
        }
    }
    let Some(spec) = ensure_obj(obj, "spec") else { return };
    if kind != "ExternalName" {
        // An update that leaves out (or empties) an allocated value keeps it.
        let left_out = |spec: &Map<String, Value>, k: &str| {
            unset(spec, k) || spec.get(k).is_some_and(|v| v == "" || v.as_array().is_some_and(Vec::is_empty))
        };
        if let Some(old_spec) = old_spec {
            // (As kube's `patchAllocatedValues`; families left out are inferred again below.)
            for key in ["clusterIP", "clusterIPs", "ipFamilyPolicy"] {
                if left_out(spec, key)
                    && let Some(v) = old_spec.get(key)
                {
                    spec.insert(key.into(), v.clone());
                }
            }
            // kube's `normalizeClusterIPs`: a changed `clusterIP` with the stored `clusterIPs`
            // is the new list's first (and only) address.
            if spec.get("clusterIP") != old_spec.get("clusterIP")
                && spec.get("clusterIPs") == old_spec.get("clusterIPs")
                && let Some(ip) = str_of(spec, "clusterIP").map(str::to_string)
            {
                spec.insert("clusterIPs".into(), json!([ip]));
            }
            // A Service made single-stack gives up the second address and family it had.
            if str_of(spec, "ipFamilyPolicy") == Some("SingleStack") {
                for key in ["clusterIPs", "ipFamilies"] {
                    if spec.get(key) == old_spec.get(key)
                        && let Some(Value::Array(items)) = spec.get_mut(key)
                        && items.len() > 1
                    {
                        items.truncate(1);
                    }
                }
            }
        }
        // An empty list is Go's nil one: defaulted as a missing one.
        for key in ["clusterIPs", "ipFamilies"] {
            if spec.get(key).and_then(Value::as_array).is_some_and(Vec::is_empty) {
                spec.remove(key);
            }
        }
        let first = str_of(spec, "clusterIP").map(str::to_string);
        let selectorless = spec.get("selector").and_then(Value::as_object).is_none_or(Map::is_empty);
        if first.as_deref() == Some("None") && selectorless {
            // kube's allocator gives a headless Service without a selector both families.
            default_str(spec, "ipFamilyPolicy", "RequireDualStack");
            default_val(spec, "ipFamilies", json!(["IPv4"]));
            if str_of(spec, "ipFamilyPolicy") != Some("SingleStack")
                && let Some(Value::Array(families)) = spec.get_mut("ipFamilies")
                && families.len() == 1
            {
                let other = if families[0] == "IPv6" { "IPv4" } else { "IPv6" };
                families.push(other.into());
            }
        } else {
            default_str(spec, "ipFamilyPolicy", "SingleStack");
            // A family is given only to what its address shows is IPv4; the Service store
            // refuses IPv6 ones on this single-stack cluster.
            let ipv6 = first.as_deref().and_then(crate::pod_dns::parse_ip).is_some_and(|ip| match ip {
                std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().is_none(),
                std::net::IpAddr::V4(_) => false,
            });
            if !ipv6 {
                default_val(spec, "ipFamilies", json!(["IPv4"]));
            }
        }
        if let Some(ip) = first {
            default_val(spec, "clusterIPs", json!([ip]));
        }
    }
}

/// kube's `dropTypeDependentFields`: a Service whose type no longer needs a field the server
/// (or an earlier type) gave it loses that field, unless the update changed it.
fn drop_type_dependent_fields(spec: &mut Map<String, Value>, old: &Map<String, Value>) {
    let kind = |m: &Map<String, Value>| str_of(m, "type").unwrap_or("ClusterIP").to_string();
    let (was, now) = (kind(old), kind(spec));
    // Left out, emptied or as it was: the update did not change it.
    let same = |spec: &Map<String, Value>, key: &str| {
        unset(spec, key)
            || spec.get(key) == old.get(key)
            || spec.get(key).is_some_and(|v| v == "" || v.as_array().is_some_and(Vec::is_empty))
    };
    let external = |m: &Map<String, Value>, t: &str| {
        matches!(t, "NodePort" | "LoadBalancer")
            || t == "ClusterIP" && m.get("externalIPs").and_then(Value::as_array).is_some_and(|a| !a.is_empty())
    };
    let drop_if_same = |spec: &mut Map<String, Value>, keys: &[&str]| {
        if keys.iter().all(|k| same(spec, k)) {
            for k in keys {
                spec.remove(*k);
            }
        }
    };
    if was != "ExternalName" && now == "ExternalName" {
        drop_if_same(spec, &["clusterIP", "clusterIPs"]);
        drop_if_same(spec, &["ipFamilies"]);
        drop_if_same(spec, &["ipFamilyPolicy"]);
    }
    let node_ports = |t: &str| matches!(t, "NodePort" | "LoadBalancer");
    // (A ClusterIP Service stored with the node ports of its former type loses them too.)
    if !node_ports(&now) && (node_ports(&was) || was == "ClusterIP") {
        let old_ports: Vec<&Value> = old
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("nodePort"))
            .collect();
        let kept = items(spec, "ports")
            .all(|p| p.get("nodePort").is_none_or(|n| n.is_null() || n == 0 || old_ports.contains(&n)));
        if kept {
            for p in items(spec, "ports") {
                p.remove("nodePort");
            }
        }
    }
    let local_balancer =
        |m: &Map<String, Value>, t: &str| t == "LoadBalancer" && str_of(m, "externalTrafficPolicy") == Some("Local");
    if local_balancer(old, &was) && !local_balancer(spec, &now) {
        drop_if_same(spec, &["healthCheckNodePort"]);
    }
    if was == "LoadBalancer" && now != "LoadBalancer" {
        drop_if_same(spec, &["allocateLoadBalancerNodePorts"]);
        drop_if_same(spec, &["loadBalancerClass"]);
    }
    if external(old, &was) && !external(spec, &now) {
        drop_if_same(spec, &["externalTrafficPolicy"]);
    }
}

/// Whether an update turns the ExternalName Service `old` into a Service that needs an address.
pub fn leaves_external_name(info: &ResourceInfo, old: &crate::object::StoredObject, new: &Map<String, Value>) -> bool {
    let kind = |spec: Option<&Value>| {
        spec.and_then(|s| s.get("type")).and_then(Value::as_str).unwrap_or("ClusterIP").to_string()
    };
    is_service(info) && kind(old.value().get("spec")) == "ExternalName" && kind(new.get("spec")) != "ExternalName"
}

/// The first cluster IP a Service being created still needs: true unless it is an
/// ExternalName Service or already has one (`None` for a headless Service counts).
pub fn needs_cluster_ip(obj: &Map<String, Value>) -> bool {
    let spec = obj.get("spec").and_then(Value::as_object);
    let kind = spec.and_then(|s| str_of(s, "type")).unwrap_or("ClusterIP");
    kind != "ExternalName" && spec.and_then(|s| str_of(s, "clusterIP")).is_none()
}

/// The cluster IP a Service being created asked for, if any (not `None`), read as Go's sloppy
/// parser reads it (leading zeros allowed; IPv4-mapped IPv6 as IPv4).
pub fn requested_cluster_ip(obj: &Map<String, Value>) -> Option<Ipv4Addr> {
    let spec = obj.get("spec").and_then(Value::as_object)?;
    str_of(spec, "clusterIP").and_then(ipv4_of)
}

/// The IPv4 address `s` names as Go's sloppy parser reads it (IPv4-mapped IPv6 included).
pub fn ipv4_of(s: &str) -> Option<Ipv4Addr> {
    match crate::pod_dns::parse_ip(s)? {
        std::net::IpAddr::V4(v4) => Some(v4),
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    }
}

/// Gives a Service being created its cluster IP (`spec.clusterIP` and `spec.clusterIPs`).
pub fn set_cluster_ip(obj: &mut Map<String, Value>, ip: Ipv4Addr) {
    let Some(spec) = ensure_obj(obj, "spec") else { return };
    spec.insert("clusterIP".into(), ip.to_string().into());
    spec.insert("clusterIPs".into(), json!([ip.to_string()]));
}

/// Allocates Service cluster IPs from kube's default service range, 10.96.0.0/12, at random
/// from its upper band (kube's KEP-3070 split: the 256 addresses after the network address,
/// 10.96.0.1 for the `kubernetes` Service and 10.96.0.10 for cluster DNS among them, are left to
/// Services that ask for them), with [`Reservations`](crate::reservations::Reservations) (see
/// its invariant).
#[derive(Debug)]
pub struct ClusterIps(crate::reservations::Reservations);

/// The service range (kube's default `--service-cluster-ip-range`), which the default
/// ServiceCIDR holds too.
pub const SERVICE_RANGE: &str = "10.96.0.0/12";

/// The addresses of [`SERVICE_RANGE`] (its network and broadcast addresses left out), read once.
fn service_hosts() -> std::ops::RangeInclusive<u32> {
    static HOSTS: std::sync::LazyLock<std::ops::RangeInclusive<u32>> =
        std::sync::LazyLock::new(|| crate::service_cidr::ipv4_hosts(SERVICE_RANGE).expect("an IPv4 block"));
    HOSTS.clone()
}

/// The `default/kubernetes` Service's cluster IP: the first address of [`SERVICE_RANGE`], as
/// kube-apiserver gives it.
pub(crate) fn kubernetes_service_ip() -> Ipv4Addr {
    Ipv4Addr::from(*service_hosts().start())
}

/// The addresses kube's allocator gives only to Services that ask for them: `min(max(16,
/// size / 16), 256)` of a range of `size` addresses.
const STATIC_BAND: u32 = 256;

impl Default for ClusterIps {
    fn default() -> Self {
        // From the 257th address after the network address to the last before the broadcast one.
        let hosts = service_hosts();
        let first = hosts.start() + STATIC_BAND;
        ClusterIps(crate::reservations::Reservations::new(first, hosts.end() - first + 1))
    }
}

impl ClusterIps {
    /// A free address, given the addresses Services have at the cache's revision `cache_rv`;
    /// None when the range is full.
    pub fn allocate(&self, used: &HashSet<u32>, cache_rv: u64) -> Option<Ipv4Addr> {
        self.0.allocate(used, cache_rv).map(Ipv4Addr::from)
    }

    /// The service range's network address (what kube's dry-run allocator shows).
    pub fn network() -> Ipv4Addr {
        Ipv4Addr::from(service_hosts().start() - 1)
    }

    /// Whether `ip` is an address of the service range (not its network or broadcast one).
    pub fn in_range(ip: Ipv4Addr) -> bool {
        service_hosts().contains(&u32::from(ip))
    }

    /// Claims an address a Service asked for: false when another Service has it.
    pub fn claim(&self, ip: Ipv4Addr, used: &HashSet<u32>, cache_rv: u64) -> bool {
        self.0.claim(u32::from(ip), used, cache_rv)
    }

    /// The reservations behind the addresses.
    pub fn reservations(&self) -> &crate::reservations::Reservations {
        &self.0
    }

    /// The Service given `ip` was stored at revision `rev`.
    pub fn written(&self, ip: Ipv4Addr, rev: u64) {
        self.0.written(u32::from(ip), rev)
    }

    /// The create given `ip` failed: the address is free again.
    pub fn release(&self, ip: Ipv4Addr) {
        self.0.release(u32::from(ip))
    }
}

// ---- namespaces ----

/// The label kube gives every namespace: its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The metadata defaults kube's decoder gives the body of a `/status` write of a built-in
/// object, whose metadata the write stores ([`crate::strategy::status_metadata`]): a
/// namespace's name label, a Job's or ReplicationController's labels from its template when it
/// has none, and no v1 round-trip annotations on an autoscaling/v2 object.
pub fn status_write_metadata(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    match builtin(info) {
        Some(Builtin::Namespace) => namespace_label(obj),
        Some(Builtin::Job | Builtin::ReplicationController) => labels_from_template(obj),
        Some(Builtin::HorizontalPodAutoscaler) => crate::autoscaling_v1::drop_annotations(obj),
        _ => {}
    }
}

/// An object without labels takes its pod template's (kube's Job and ReplicationController
/// defaulting).
fn labels_from_template(obj: &mut Map<String, Value>) {
    let template_labels = obj.get("spec").and_then(|s| s.pointer("/template/metadata/labels")).cloned();
    if let Some(labels) = template_labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        && let Some(meta) = ensure_obj(obj, "metadata")
        && meta.get("labels").and_then(Value::as_object).is_none_or(Map::is_empty)
    {
        meta.insert("labels".into(), labels);
    }
}

/// A namespace's name label (kube's namespace defaulting).
fn namespace_label(obj: &mut Map<String, Value>) {
    let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).map(str::to_string);
    if let Some(name) = name
        && let Some(labels) = ensure_obj(obj, "metadata").and_then(|m| ensure_obj(m, "labels"))
    {
        labels.insert(NAMESPACE_NAME_LABEL.into(), name.into());
    }
}

/// A namespace's create strategy: phase `Active`, the `kubernetes` finalizer.
fn namespace(obj: &mut Map<String, Value>, create: bool) {
    let Some(spec) = ensure_obj(obj, "spec") else { return };
    if create {
        let finalizer = Value::from(crate::namespaces::FINALIZER);
        match spec.get_mut("finalizers") {
            Some(Value::Array(f)) if f.contains(&finalizer) => {}
            Some(Value::Array(f)) => f.push(finalizer),
            _ => {
                spec.insert("finalizers".into(), Value::Array(vec![finalizer]));
            }
        }
    }
    // An empty finalizer list is left out, as kube serializes it.
    if unset(spec, "finalizers") || spec.get("finalizers").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        spec.remove("finalizers");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn defaulted(plural: &str, v: Value) -> Value {
        let info = Registry::with_defaults().lookup(plural).cloned().unwrap();
        let Value::Object(mut m) = v else { unreachable!() };
        apply(&info, &mut m, Write::Create).unwrap();
        Value::Object(m)
    }

    #[test]
    fn pull_policy_follows_the_tag() {
        assert_eq!(pull_policy("nginx"), "Always");
        assert_eq!(pull_policy("nginx:latest"), "Always");
        assert_eq!(pull_policy("nginx:1.27"), "IfNotPresent");
        assert_eq!(pull_policy("registry.example:5000/app"), "Always");
        assert_eq!(pull_policy("registry.example:5000/app:1"), "IfNotPresent");
        assert_eq!(pull_policy("app@sha256:abc"), "IfNotPresent");
        assert_eq!(pull_policy("app:latest@sha256:abc"), "Always");
    }

    #[test]
    fn quantities_parse_exactly() {
        assert_eq!(parse_quantity("1"), parse_quantity("1000m"));
        assert_eq!(parse_quantity("1Ki"), Some(1024 * 1_000_000_000));
        assert_eq!(parse_quantity("1.5Gi"), Some(3 * (1i128 << 29) * 1_000_000_000));
        assert_eq!(parse_quantity("2e3"), parse_quantity("2k"));
        assert_eq!(parse_quantity("0.1"), parse_quantity("100m"));
        assert_eq!(parse_quantity("abc"), None);
    }

    #[test]
    fn qos_classes() {
        let pod =
            |resources: Value| json!({"spec": {"containers": [{"name": "a", "image": "x", "resources": resources}]}});
        let qos = |v: Value| defaulted("pods", v)["status"]["qosClass"].as_str().unwrap().to_string();
        assert_eq!(qos(pod(json!({}))), "BestEffort");
        assert_eq!(qos(pod(json!({"requests": {"cpu": "100m"}}))), "Burstable");
        assert_eq!(qos(pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}}))), "Guaranteed");
        assert_eq!(
            qos(pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m"}}))),
            "Guaranteed"
        );
        assert_eq!(
            qos(pod(json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}))),
            "Burstable"
        );
        assert_eq!(qos(pod(json!({"limits": {"cpu": "1"}}))), "Burstable");
    }

    #[test]
    fn defaults_are_idempotent_and_keep_given_values() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"restartPolicy": "Never", "containers": [
            {"name": "a", "image": "x:latest", "ports": [{"containerPort": 80}],
             "livenessProbe": {"httpGet": {"port": 80}}}],
            "volumes": [{"name": "v"}, {"name": "s", "secret": {"secretName": "s"}}]}});
        let once = defaulted("pods", pod);
        assert_eq!(once["spec"]["restartPolicy"], "Never");
        assert_eq!(once["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(once["spec"]["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(
            once["spec"]["containers"][0]["livenessProbe"]["httpGet"],
            json!({"port": 80, "path": "/", "scheme": "HTTP"})
        );
        assert_eq!(once["spec"]["containers"][0]["livenessProbe"]["periodSeconds"], 10);
        assert_eq!(once["spec"]["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(once["spec"]["volumes"][1]["secret"]["defaultMode"], 420);
        assert_eq!(once["spec"]["tolerations"].as_array().unwrap().len(), 2);
        assert_eq!(defaulted("pods", once.clone()), once);
        let svc = defaulted("services", json!({"spec": {"ports": [{"port": 80}]}}));
        assert_eq!(defaulted("services", svc.clone()), svc);
        let sts = defaulted("statefulsets", json!({"spec": {"template": {"spec": {"containers": []}}}}));
        assert_eq!(defaulted("statefulsets", sts.clone()), sts);
    }

    #[test]
    fn tolerations_are_not_doubled() {
        let p = defaulted(
            "pods",
            json!({"spec": {"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]}}),
        );
        let keys: Vec<&str> =
            p["spec"]["tolerations"].as_array().unwrap().iter().map(|t| t["key"].as_str().unwrap()).collect();
        assert_eq!(keys, ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]);
        let all = defaulted("pods", json!({"spec": {"tolerations": [{"operator": "Exists"}]}}));
        assert_eq!(all["spec"]["tolerations"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn unknown_priority_classes_are_refused() {
        let info = Registry::with_defaults().lookup("pods").cloned().unwrap();
        let mut m =
            json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "gold"}}).as_object().unwrap().clone();
        let e = apply(&info, &mut m, Write::Create).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (403, "pods \"p\" is forbidden: no PriorityClass with name gold was found")
        );
        let p = defaulted("pods", json!({"spec": {"priorityClassName": "system-node-critical"}}));
        assert_eq!(p["spec"]["priority"], 2_000_001_000);
    }

    #[test]
    fn cluster_ips_are_distinct_and_in_range() {
        let ips = ClusterIps::default();
        let none = HashSet::new();
        let mut seen = HashSet::new();
        for _ in 0..1000 {
            let ip = ips.allocate(&none, 0).unwrap();
            let n = u32::from(ip);
            let band = u32::from_be_bytes([10, 96, 1, 1])..u32::from_be_bytes([10, 111, 255, 255]);
            assert!(band.contains(&n), "{ip}");
            assert!(seen.insert(n), "{ip} given twice");
        }
        let taken: Ipv4Addr = "10.96.0.10".parse().unwrap();
        assert!(!ips.claim(taken, &[u32::from(taken)].into_iter().collect(), 0));
        assert!(ips.claim(taken, &none, 0));
        assert!(!ips.claim(taken, &none, 0), "claimed twice");
        ips.written(taken, 7);
        assert!(!ips.claim(taken, &none, 6), "the cache has not seen it yet");
        assert!(ips.claim(taken, &none, 7), "the cache decides once it has seen the write");
        ips.release(taken);
        assert!(ips.claim(taken, &none, 7));
    }
}
