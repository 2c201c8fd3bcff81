//! kube-apiserver's field label conversions and the values its built-in kinds give their
//! selectable fields: which `fieldSelector` labels a resource accepts, what it answers for one
//! it does not, and how a field reads where kube computes it rather than copying a JSON member.
//!
//! Invariants, as kube-apiserver v1.35:
//! - the kinds with their own conversion (pods, nodes, replication controllers, core Events,
//!   namespaces, secrets, services, Jobs, certificate signing requests, events.k8s.io Events)
//!   accept exactly their labels (nodes, namespaces and CSRs no `metadata.namespace`) and answer
//!   any other `field label not supported: <label>` (Jobs: `field label "<label>" not supported
//!   for batchv1.Job`); pods take `spec.host` as `spec.nodeName`, and accept `status.podIPs`,
//!   which no pod has a value for;
//! - every other built-in kind accepts `metadata.name` and `metadata.namespace` (a cluster-scoped
//!   one too: its objects have no namespace, so only the empty one matches) and answers
//!   `"<label>" is not a known field selector: only "metadata.name", "metadata.namespace"`;
//! - custom resources (and resources registered with `ResourceInfo::new`) accept their
//!   selectable fields, `metadata.name`, and `metadata.namespace` when namespaced:
//!   `field label not supported: <label>` otherwise;
//! - a field kube formats from a Go bool or integer reads `false` or `0` when absent (a pod's
//!   `spec.hostNetwork`, a node's `spec.unschedulable`, the replicas of replication controllers
//!   and ReplicaSets); a Job's `status.successful` is its `status.succeeded`; a pod's
//!   `status.podIP` is its first `status.podIPs` address; a core Event's `source` is its
//!   `source.component`, else its `reportingComponent`.

use crate::registry::{FieldLabels, ResourceInfo};

/// kube's own conversion for a built-in kind, if it has one: whether it accepts
/// `metadata.namespace`, and the labels it accepts beyond `metadata.name` and the kind's
/// selectable fields; None when the kind has none (kube's default conversion applies).
fn own_conversion(info: &ResourceInfo) -> Option<(bool, &'static [&'static str])> {
    Some(match (info.group.as_str(), info.plural.as_str()) {
        ("", "pods") => (true, &["status.podIPs"]),
        ("", "nodes" | "namespaces") | ("certificates.k8s.io", "certificatesigningrequests") => (false, &[]),
        ("", "replicationcontrollers" | "events" | "secrets" | "services") | ("batch", "jobs") => (true, &[]),
        (crate::events_api::GROUP, "events") => (true, &[]),
        (crate::dra_validation::GROUP, "resourceslices") => (false, &[]),
        _ => return None,
    })
}

/// The label a field selector's `label` stands for on `info`, or kube's message refusing it.
pub(crate) fn convert<'a>(info: &ResourceInfo, label: &'a str) -> Result<&'a str, String> {
    let unsupported = || format!("field label not supported: {label}");
    let listed = |l: &str| info.selectable_fields.iter().any(|f| f == l);
    match info.field_labels {
        FieldLabels::Selectable => {
            let meta = label == "metadata.name" || (info.namespaced && label == "metadata.namespace");
            if meta || listed(label) { Ok(label) } else { Err(unsupported()) }
        }
        FieldLabels::Kube => match own_conversion(info) {
            Some(_) if info.is_core("pods") && label == "spec.host" => Ok("spec.nodeName"),
            Some((namespace, extra))
                if label == "metadata.name"
                    || (namespace && label == "metadata.namespace")
                    || listed(label)
                    || extra.contains(&label) =>
            {
                Ok(label)
            }
            Some(_) if info.group == "batch" && info.plural == "jobs" => Err(format!(
                "field label {} not supported for batchv1.Job",
                crate::pod_security_checks::go_quote(label)
            )),
            Some(_) if info.group == crate::dra_validation::GROUP => {
                Err(format!("field label not supported for {}, Kind={}: {label}", info.api_version(), info.kind))
            }
            Some(_) => Err(unsupported()),
            None if label == "metadata.name" || label == "metadata.namespace" || listed(label) => Ok(label),
            None => Err(format!(
                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                crate::pod_security_checks::go_quote(label)
            )),
        },
    }
}

/// The value of the selectable field `label` of an object of `info`, `read` giving the scalar at
/// a dotted path (a number for an array's element) as kube prints it.
pub(crate) fn value(info: &ResourceInfo, label: &str, read: &mut dyn FnMut(&str) -> Option<String>) -> Option<String> {
    if info.field_labels != FieldLabels::Kube {
        return read(label);
    }
    let or = |v: Option<String>, default: &str| Some(v.unwrap_or_else(|| default.to_string()));
    match (info.group.as_str(), info.plural.as_str(), label) {
        ("", "pods", "spec.hostNetwork") | ("", "nodes", "spec.unschedulable") => or(read(label), "false"),
        ("", "pods", "status.podIP") => read("status.podIPs.0.ip").or_else(|| read(label)),
        ("", "replicationcontrollers", "status.replicas") | ("apps", "replicasets", "status.replicas") => {
            or(read(label), "0")
        }
        ("batch", "jobs", "status.successful") => or(read("status.succeeded"), "0"),
        (crate::dra_validation::GROUP, "resourceslices", "spec.nodeName") => or(read(label), ""),
        ("", "events", "source") => {
            read("source.component").filter(|c| !c.is_empty()).or_else(|| read("reportingComponent"))
        }
        (crate::events_api::GROUP, "events", "source") => {
            read("deprecatedSource.component").filter(|c| !c.is_empty()).or_else(|| read("reportingController"))
        }
        _ => read(label),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn info(group: &str, plural: &str) -> ResourceInfo {
        let registry = Registry::with_defaults();
        let found = registry.all().iter().find(|i| i.group == group && i.plural == plural).cloned();
        (*found.expect("served")).clone()
    }

    #[test]
    fn labels_are_accepted_and_refused_as_kube_converts_them() {
        let pods = info("", "pods");
        assert_eq!(convert(&pods, "spec.host"), Ok("spec.nodeName"));
        assert_eq!(convert(&pods, "status.podIPs"), Ok("status.podIPs"));
        assert_eq!(convert(&pods, "spec.foo"), Err("field label not supported: spec.foo".into()));
        assert_eq!(convert(&pods, "metadata.name "), Err("field label not supported: metadata.name ".into()));
        let nodes = info("", "nodes");
        assert_eq!(convert(&nodes, "metadata.namespace"), Err("field label not supported: metadata.namespace".into()));
        let jobs = info("batch", "jobs");
        assert_eq!(
            convert(&jobs, "status.succeeded"),
            Err("field label \"status.succeeded\" not supported for batchv1.Job".into())
        );
        let configmaps = info("", "configmaps");
        let default = "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"";
        assert_eq!(convert(&configmaps, "spec.foo"), Err(default.into()));
        let volumes = info("", "persistentvolumes");
        assert_eq!(convert(&volumes, "metadata.namespace"), Ok("metadata.namespace"));
        let custom =
            ResourceInfo::new("example.com", "v1", "widgets", "Widget", false).with_selectable_fields(&["spec.color"]);
        assert_eq!(convert(&custom, "spec.color"), Ok("spec.color"));
        assert_eq!(convert(&custom, "metadata.namespace"), Err("field label not supported: metadata.namespace".into()));
    }

    #[test]
    fn computed_fields_read_as_kube_formats_them() {
        let absent = |_: &str| None;
        let read =
            |info: &ResourceInfo, label: &str, f: &dyn Fn(&str) -> Option<String>| value(info, label, &mut |p| f(p));
        let pods = info("", "pods");
        assert_eq!(read(&pods, "spec.hostNetwork", &absent).as_deref(), Some("false"));
        assert_eq!(read(&pods, "spec.nodeName", &absent), None);
        let ips = |p: &str| match p {
            "status.podIPs.0.ip" => Some("10.0.0.2".to_string()),
            "status.podIP" => Some("10.0.0.1".to_string()),
            _ => None,
        };
        assert_eq!(read(&pods, "status.podIP", &ips).as_deref(), Some("10.0.0.2"));
        assert_eq!(read(&info("", "nodes"), "spec.unschedulable", &absent).as_deref(), Some("false"));
        assert_eq!(read(&info("batch", "jobs"), "status.successful", &absent).as_deref(), Some("0"));
        let succeeded = |p: &str| (p == "status.succeeded").then(|| "3".to_string());
        assert_eq!(read(&info("batch", "jobs"), "status.successful", &succeeded).as_deref(), Some("3"));
        let events = info("", "events");
        let reporting = |p: &str| match p {
            "source.component" => Some(String::new()),
            "reportingComponent" => Some("kubelet".to_string()),
            _ => None,
        };
        assert_eq!(read(&events, "source", &reporting).as_deref(), Some("kubelet"));
        let custom = ResourceInfo::new("example.com", "v1", "widgets", "Widget", true);
        assert_eq!(read(&custom, "spec.hostNetwork", &absent), None);
    }
}
