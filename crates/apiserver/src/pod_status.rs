//! The rules kube-apiserver's `ValidatePodStatusUpdate` applies to a pod's status written through
//! `/status`, for what a kubelet or a test writes there: the nominated node's name and the pod's
//! and host's addresses.
//!
//! Invariants, as kube-apiserver v1.35 judges them:
//! - a nominated node name that changes to a non-empty one is a DNS subdomain;
//! - every address of `podIPs` and `hostIPs` is an IP address as Go's sloppy parser reads one
//!   (kube's default), unless the stored status already has it;
//! - more than one address is a dual-stack pair: one IPv4 and one IPv6 address (`may specify no
//!   more than one IP for each IP family`, the list shown as Go prints kube's internal type);
//! - causes come in kube's order, with its paths and messages.

use serde_json::{Map, Value};

use crate::pod_dns::NOT_AN_IP;
use crate::policy_validation::invalid;
use crate::structural::Cause;
use crate::workload_validation::invalid_value;

/// The causes of a pod's status write of `obj` over the stored `old`.
pub(crate) fn validate(obj: &Map<String, Value>, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Object(Map::new());
    let status = obj.get("status").unwrap_or(&empty);
    let old_status = old.get("status").unwrap_or(&empty);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let nominated = text(status, "nominatedNodeName");
    if nominated != text(old_status, "nominatedNodeName") && !nominated.is_empty() {
        for fault in crate::cel_format::dns1123_subdomain(&nominated) {
            causes.push(invalid("status.nominatedNodeName".into(), &nominated, &fault));
        }
    }
    addresses(status, old_status, "podIPs", "PodIP", &mut causes);
    addresses(status, old_status, "hostIPs", "HostIP", &mut causes);
    causes
}

/// The causes of the address list `field` of `status` (kube's internal type `go_type`).
fn addresses(status: &Value, old_status: &Value, field: &str, go_type: &str, causes: &mut Vec<Cause>) {
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
        let shown: Vec<String> =
            new.iter().map(|ip| format!("core.{go_type}{{IP:{}}}", crate::pod_security_checks::go_quote(ip))).collect();
        let shown = format!("[]core.{go_type}{{{}}}", shown.join(", "));
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
        let obj = json!({"status": status});
        validate(obj.as_object().unwrap(), &json!({"status": old}))
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
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
                "status.hostIPs: Invalid value: []core.HostIP{core.HostIP{IP:\"10.0.0.1\"}, core.HostIP{IP:\"10.0.0.2\"}}: may specify no more than one IP for each IP family"
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
