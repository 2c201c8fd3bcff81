//! A pod's status written through `/status`, as kube-apiserver v1.35 takes it: what its disabled
//! feature gates drop from the write, and the rules of its `ValidatePodStatusUpdate`.
//!
//! Invariants, as kube-apiserver v1.35 judges them:
//! - the fields of alpha features are not stored: containers' `allocatedResourcesStatus`, and
//!   the pod-level `resources`, `allocatedResources` and `extendedResourceClaimStatus` unless the
//!   stored status has them;
//! - a condition of a type other than `PodScheduled`, `Ready` and `Initialized` has a qualified
//!   name for a type (kube reports it under `metadata.conditions[i].Type`);
//! - a nominated node name that changes to a non-empty one is a DNS subdomain;
//! - the QoS class does not change;
//! - a terminated container does not leave that state unless the pod restarts it: never under
//!   `restartPolicy: Always`, a failed one under `OnFailure`, and a sidecar (an init container
//!   with `restartPolicy: Always`) always; ephemeral containers are never restarted;
//! - every resource claim status names one of `spec.resourceClaims`, once, and its claim's name
//!   is a DNS subdomain;
//! - a container's reported Linux user and groups are IDs in 0..=2147483647, and a Windows pod
//!   reports none;
//! - every address of `podIPs` and `hostIPs` is an IP address as Go's sloppy parser reads one
//!   (kube's default), unless the stored status already has it;
//! - more than one address is a dual-stack pair: one IPv4 and one IPv6 address (`may specify no
//!   more than one IP for each IP family`, the list shown as Go's `json.Marshal` writes kube's
//!   internal type);
//! - causes come in kube's order, with its paths and messages.

use serde_json::{Map, Value};

use crate::pod_dns::NOT_AN_IP;
use crate::pod_validation::{forbidden, number};
use crate::policy_validation::{duplicate, invalid};
use crate::structural::Cause;
use crate::workload_validation::invalid_value;

/// The lists of container statuses.
const CONTAINER_STATUSES: [&str; 3] = ["containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"];

/// The pod-level fields of alpha features, stored only while the stored status has one of them:
/// each group is kept or dropped together.
const POD_LEVEL_ALPHA: [&[&str]; 2] = [&["resources", "allocatedResources"], &["extendedResourceClaimStatus"]];

/// Drops from a status write what kube-apiserver v1.35's disabled feature gates drop; the stored
/// status is read (through `old_status`) only when the write has a field it decides on.
pub(crate) fn drop_disabled(status: &mut Map<String, Value>, old_status: impl FnOnce() -> Option<Value>) {
    for list in CONTAINER_STATUSES {
        for c in status.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(c) = c.as_object_mut() {
                c.remove("allocatedResourcesStatus");
            }
        }
    }
    let set = |v: Option<&Value>| v.is_some_and(|v| !v.is_null());
    if !POD_LEVEL_ALPHA.iter().any(|group| group.iter().any(|f| set(status.get(*f)))) {
        return;
    }
    let old = old_status().unwrap_or(Value::Null);
    for group in POD_LEVEL_ALPHA {
        if !group.iter().any(|f| set(old.get(*f))) {
            for f in group {
                status.remove(*f);
            }
        }
    }
}

/// The causes of a pod's status write of `obj` over the stored `old`.
pub(crate) fn validate(obj: &Map<String, Value>, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Object(Map::new());
    let status = obj.get("status").unwrap_or(&empty);
    let old_status = old.get("status").unwrap_or(&empty);
    let spec = obj.get("spec").unwrap_or(&empty);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    conditions(status, &mut causes);
    let nominated = text(status, "nominatedNodeName");
    if nominated != text(old_status, "nominatedNodeName") && !nominated.is_empty() {
        for fault in crate::cel_format::dns1123_subdomain(&nominated) {
            causes.push(invalid("status.nominatedNodeName".into(), &nominated, &fault));
        }
    }
    let qos = text(status, "qosClass");
    if qos != text(old_status, "qosClass") {
        causes.push(invalid("status.qosClass".into(), &qos, "field is immutable"));
    }
    let restart = spec.get("restartPolicy").and_then(Value::as_str).unwrap_or("Always");
    let sidecars: Vec<&str> = entries(spec, "initContainers")
        .iter()
        .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"))
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    for (list, restart, sidecars) in [
        ("containerStatuses", restart, &[][..]),
        ("initContainerStatuses", restart, &sidecars[..]),
        ("ephemeralContainerStatuses", "Never", &[][..]),
    ] {
        state_transitions(status, old_status, list, restart, sidecars, &mut causes);
    }
    claim_statuses(status, spec, &mut causes);
    addresses(status, old_status, "podIPs", &mut causes);
    addresses(status, old_status, "hostIPs", &mut causes);
    let windows = spec.pointer("/os/name").and_then(Value::as_str) == Some("windows");
    for list in CONTAINER_STATUSES {
        users(status, list, windows, &mut causes);
    }
    causes
}

/// The status's entries of `key` (empty when absent or not a list).
fn entries<'a>(status: &'a Value, key: &str) -> &'a [Value] {
    status.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// Custom condition types are qualified names (kube's path starts at `metadata`).
fn conditions(status: &Value, causes: &mut Vec<Cause>) {
    for (i, c) in entries(status, "conditions").iter().enumerate() {
        let kind = c.get("type").and_then(Value::as_str).unwrap_or_default();
        if matches!(kind, "PodScheduled" | "Ready" | "Initialized") {
            continue;
        }
        for fault in crate::cel_format::qualified_name(kind) {
            causes.push(invalid(format!("metadata.conditions[{i}].Type"), kind, &fault));
        }
    }
}

/// A stored terminated container of `list` whose write is not terminated, where the pod does not
/// restart it: the cause is at the stored entry's index, once per written entry of its name.
fn state_transitions(
    status: &Value,
    old_status: &Value,
    list: &str,
    restart: &str,
    sidecars: &[&str],
    causes: &mut Vec<Cause>,
) {
    if restart == "Always" {
        return;
    }
    let name = |c: &Value| c.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    let terminated = |c: &Value| c.pointer("/state/terminated").is_some_and(|t| !t.is_null());
    for (i, old) in entries(old_status, list).iter().enumerate() {
        if !terminated(old) {
            continue;
        }
        let exit_code = old.pointer("/state/terminated/exitCode").and_then(Value::as_i64).unwrap_or(0);
        if (exit_code != 0 && restart == "OnFailure") || sidecars.contains(&name(old).as_str()) {
            continue;
        }
        for new in entries(status, list) {
            if name(new) == name(old) && !terminated(new) {
                causes.push(forbidden(
                    format!("status.{list}[{i}].state"),
                    "may not be transitioned to non-terminated state",
                ));
            }
        }
    }
}

/// Every resource claim status names one of the pod's claims, once.
fn claim_statuses(status: &Value, spec: &Value, causes: &mut Vec<Cause>) {
    let claims = entries(spec, "resourceClaims");
    let mut seen = std::collections::HashSet::new();
    for (i, s) in entries(status, "resourceClaimStatuses").iter().enumerate() {
        let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
        let at = format!("status.resourceClaimStatuses[{i}].name");
        if !claims.iter().any(|c| c.get("name").and_then(Value::as_str).unwrap_or_default() == name) {
            causes.push(invalid(at.clone(), name, "must match the name of an entry in `spec.resourceClaims`"));
        }
        if !seen.insert(name) {
            causes.push(duplicate(at.clone(), name));
        }
        if let Some(claim) = s.get("resourceClaimName").and_then(Value::as_str) {
            for fault in crate::cel_format::dns1123_subdomain(claim) {
                causes.push(invalid(at.clone(), claim, &fault));
            }
        }
    }
}

/// A container's reported user: Linux IDs in range; none for a Windows pod (kube's path leaves
/// out `user`).
fn users(status: &Value, list: &str, windows: bool, causes: &mut Vec<Cause>) {
    const RANGE: &str = "must be between 0 and 2147483647, inclusive";
    for (i, c) in entries(status, list).iter().enumerate() {
        let Some(linux) = c.pointer("/user/linux").filter(|l| !l.is_null()) else { continue };
        let at = format!("status.{list}[{i}].linux");
        if windows {
            causes.push(forbidden(at, "cannot be set for a windows pod"));
            continue;
        }
        let id = |v: Option<&Value>| v.and_then(Value::as_i64).unwrap_or(0);
        let out_of_range = |n: i64| !(0..=i64::from(i32::MAX)).contains(&n);
        for key in ["uid", "gid"] {
            let n = id(linux.get(key));
            if out_of_range(n) {
                causes.push(number(format!("{at}.{key}"), n, RANGE));
            }
        }
        for (g, gid) in entries(linux, "supplementalGroups").iter().enumerate() {
            let n = id(Some(gid));
            if out_of_range(n) {
                causes.push(number(format!("{at}.supplementalGroups[{g}]"), n, RANGE));
            }
        }
    }
}

/// The causes of the address list `field` of `status`.
fn addresses(status: &Value, old_status: &Value, field: &str, causes: &mut Vec<Cause>) {
    let ips = |s: &Value| -> Vec<String> {
        let list = s.get(field).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        list.iter().map(|e| e.get("ip").and_then(Value::as_str).unwrap_or_default().to_string()).collect()
    };
    let (new, stored) = (ips(status), ips(old_status));
    for (i, ip) in new.iter().enumerate() {
        if !stored.contains(ip) && !crate::pod_dns::is_ip(ip) {
            causes.push(invalid(format!("status.{field}[{i}]"), ip, NOT_AN_IP));
        }
    }
    if new.len() < 2 {
        return;
    }
    let parsed: Option<Vec<std::net::IpAddr>> = new.iter().map(|ip| crate::pod_dns::parse_ip(ip)).collect();
    // (An address that cannot be read is refused above; kube also reports its dual-stack check
    // failing on it.)
    let Some(parsed) = parsed else { return };
    let v4 = |ip: &std::net::IpAddr| match ip {
        std::net::IpAddr::V4(_) => true,
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some(),
    };
    let fours = parsed.iter().filter(|ip| v4(ip)).count();
    let dual = fours > 0 && fours < parsed.len();
    if !dual || parsed.len() > 2 {
        // kube's internal type, as Go's `json.Marshal` writes it (its field named `IP`).
        let shown: Vec<String> =
            new.iter().map(|ip| format!("{{\"IP\":{}}}", crate::structural::go_json(&ip.as_str().into()))).collect();
        let shown = format!("[{}]", shown.join(","));
        causes.push(invalid_value(
            &format!("status.{field}"),
            &shown,
            "may specify no more than one IP for each IP family",
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(status: Value, old: Value) -> Vec<String> {
        judged(json!({}), status, old)
    }

    fn judged(spec: Value, status: Value, old: Value) -> Vec<String> {
        let obj = json!({"spec": spec, "status": status});
        validate(obj.as_object().unwrap(), &json!({"spec": spec, "status": old}))
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn dropped(status: Value, old: Value) -> Value {
        let Value::Object(mut status) = status else { unreachable!() };
        drop_disabled(&mut status, || Some(old));
        Value::Object(status)
    }

    #[test]
    fn alpha_fields_are_dropped_unless_stored() {
        let written = json!({
            "containerStatuses": [{"name": "a", "allocatedResourcesStatus": [{"name": "cpu"}], "ready": true}],
            "resources": {"requests": {"cpu": "1"}},
            "extendedResourceClaimStatus": {"resourceClaimName": "c"},
        });
        assert_eq!(dropped(written.clone(), json!({})), json!({"containerStatuses": [{"name": "a", "ready": true}]}));
        let kept = dropped(written, json!({"allocatedResources": {"cpu": "1"}, "extendedResourceClaimStatus": {}}));
        assert_eq!(kept["resources"], json!({"requests": {"cpu": "1"}}));
        assert_eq!(kept["extendedResourceClaimStatus"], json!({"resourceClaimName": "c"}));
        assert!(kept["containerStatuses"][0].get("allocatedResourcesStatus").is_none());
        // The stored status is not read when the write has none of the pod-level fields.
        let mut plain = Map::new();
        drop_disabled(&mut plain, || unreachable!());
    }

    #[test]
    fn custom_condition_types_are_qualified_names() {
        let conditions = json!({"conditions": [
            {"type": "Ready"}, {"type": "example.com/Gate"}, {"type": "bad type"}, {"type": "a/b/c"}
        ]});
        let m = messages(conditions, json!({}));
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(
            m[0].starts_with("metadata.conditions[2].Type: Invalid value: \"bad type\": name part must consist of")
        );
        assert!(m[1].starts_with("metadata.conditions[3].Type: Invalid value: \"a/b/c\": a valid label key"));
    }

    #[test]
    fn the_qos_class_stays() {
        assert!(messages(json!({"qosClass": "Burstable"}), json!({"qosClass": "Burstable"})).is_empty());
        assert_eq!(
            messages(json!({"qosClass": "Guaranteed"}), json!({"qosClass": "Burstable"})),
            ["status.qosClass: Invalid value: \"Guaranteed\": field is immutable"]
        );
    }

    #[test]
    fn terminated_containers_stay_terminated_unless_restarted() {
        let done = |code: i64| json!({"terminated": {"exitCode": code}});
        let statuses = |list: &str, state: Value| json!({list: [{"name": "a", "state": state}]});
        let running = json!({"running": {}});
        let leaves = |spec: Value, list: &str, code: i64| {
            judged(spec, statuses(list, running.clone()), statuses(list, done(code)))
        };
        const LEFT: &str = "Forbidden: may not be transitioned to non-terminated state";
        assert!(leaves(json!({"restartPolicy": "Always"}), "containerStatuses", 0).is_empty());
        assert!(leaves(json!({}), "containerStatuses", 0).is_empty());
        assert_eq!(
            leaves(json!({"restartPolicy": "Never"}), "containerStatuses", 1),
            [format!("status.containerStatuses[0].state: {LEFT}")]
        );
        assert_eq!(leaves(json!({"restartPolicy": "OnFailure"}), "containerStatuses", 0).len(), 1);
        assert!(leaves(json!({"restartPolicy": "OnFailure"}), "containerStatuses", 2).is_empty());
        assert_eq!(leaves(json!({"restartPolicy": "Never"}), "initContainerStatuses", 0).len(), 1);
        let sidecar = json!({"restartPolicy": "Never", "initContainers": [{"name": "a", "restartPolicy": "Always"}]});
        assert!(leaves(sidecar, "initContainerStatuses", 0).is_empty());
        assert_eq!(
            leaves(json!({"restartPolicy": "Always"}), "ephemeralContainerStatuses", 0),
            [format!("status.ephemeralContainerStatuses[0].state: {LEFT}")]
        );
        // Staying terminated, or leaving the list, is allowed.
        let never = json!({"restartPolicy": "Never"});
        assert!(
            judged(never.clone(), statuses("containerStatuses", done(0)), statuses("containerStatuses", done(0)))
                .is_empty()
        );
        assert!(judged(never, json!({}), statuses("containerStatuses", done(0))).is_empty());
    }

    #[test]
    fn claim_statuses_name_the_pods_claims_once() {
        let spec = json!({"resourceClaims": [{"name": "gpu"}]});
        let status = json!({"resourceClaimStatuses": [
            {"name": "gpu", "resourceClaimName": "pod-gpu-x"},
            {"name": "gpu"},
            {"name": "tpu", "resourceClaimName": "Bad_Name"},
        ]});
        let m = judged(spec, status, json!({}));
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m[0], "status.resourceClaimStatuses[1].name: Duplicate value: \"gpu\"");
        assert_eq!(
            m[1],
            "status.resourceClaimStatuses[2].name: Invalid value: \"tpu\": must match the name of an entry in `spec.resourceClaims`"
        );
        assert!(
            m[2].starts_with("status.resourceClaimStatuses[2].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123")
        );
    }

    #[test]
    fn reported_users_are_ids_and_not_on_windows() {
        let user = json!({"containerStatuses": [
            {"name": "a", "user": {"linux": {"uid": -1, "gid": 0, "supplementalGroups": [1, 2147483648i64]}}}
        ]});
        assert_eq!(
            judged(json!({}), user.clone(), json!({})),
            [
                "status.containerStatuses[0].linux.uid: Invalid value: -1: must be between 0 and 2147483647, inclusive",
                "status.containerStatuses[0].linux.supplementalGroups[1]: Invalid value: 2147483648: must be between 0 and 2147483647, inclusive",
            ]
        );
        assert_eq!(
            judged(json!({"os": {"name": "windows"}}), user, json!({})),
            ["status.containerStatuses[0].linux: Forbidden: cannot be set for a windows pod"]
        );
    }

    #[test]
    fn addresses_are_ips_one_per_family() {
        assert!(messages(json!({"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}), json!({})).is_empty());
        assert!(messages(json!({"podIPs": [{"ip": "010.0.0.1"}]}), json!({})).is_empty());
        assert_eq!(
            messages(json!({"podIPs": [{"ip": "nope"}]}), json!({})),
            [
                "status.podIPs[0]: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
            ]
        );
        assert!(messages(json!({"podIPs": [{"ip": "nope"}]}), json!({"podIPs": [{"ip": "nope"}]})).is_empty());
        assert_eq!(
            messages(json!({"hostIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]}), json!({})),
            [
                "status.hostIPs: Invalid value: [{\"IP\":\"10.0.0.1\"},{\"IP\":\"10.0.0.2\"}]: may specify no more than one IP for each IP family"
            ]
        );
        let three = json!({"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}, {"ip": "fd00::2"}]});
        assert_eq!(messages(three, json!({})).len(), 1);
    }

    #[test]
    fn a_new_nominated_node_is_a_dns_subdomain() {
        assert!(messages(json!({"nominatedNodeName": "node-1"}), json!({})).is_empty());
        let m = messages(json!({"nominatedNodeName": "Node_1"}), json!({}));
        assert!(
            m[0].starts_with("status.nominatedNodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain"),
            "{m:?}"
        );
        assert!(messages(json!({"nominatedNodeName": "Node_1"}), json!({"nominatedNodeName": "Node_1"})).is_empty());
    }
}
