//! The Service fields kube-apiserver's `validateService` judges beside its ports and addresses,
//! each called at its place in kube's order from [`crate::service_validation`], and a Service's
//! load balancer status (`ValidateServiceStatusUpdate`, [`status`]):
//! - the topology annotations agree when both are set; a port's `appProtocol` is a qualified
//!   name;
//! - external IPs are IP addresses outside the unspecified, loopback and link-local ranges;
//! - load balancer source ranges (the field, or else its annotation), `allocateLoadBalancerNodePorts`
//!   and `loadBalancerClass` only on LoadBalancers, ranges that are CIDRs, a class that is a
//!   qualified name and does not change while the Service stays a load balancer;
//! - known internal traffic policies and traffic distributions;
//! - a status's load balancer ingress only on LoadBalancers, with IP addresses, an IP mode
//!   exactly with an IP, and host names that are DNS names, not addresses.
//!
//! Invariants: only the Service (and the stored one an update replaces) is read; IP addresses
//! and CIDRs are read as kube-apiserver v1.35 reads them by default (Go's sloppy parser); values
//! stored before are not parsed again; causes come with kube's paths (its capitalised
//! `spec.LoadBalancerSourceRanges` included) and messages.

use std::net::IpAddr;

use serde_json::{Map, Value};

use crate::pod_dns::parse_ip;
use crate::pod_validation::forbidden;
use crate::policy_validation::{invalid, required, unsupported};
use crate::structural::{Cause, go_json};
use crate::workload_validation::invalid_value;

/// kube's message for a value that is not an IP address.
const NOT_AN_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

/// The annotation that carries source ranges where the field does not.
const SOURCE_RANGES_ANNOTATION: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";

const ONLY_LOAD_BALANCERS: &str = "may only be used when `type` is 'LoadBalancer'";

fn annotation<'a>(svc: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    svc.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A list of strings member of `v` as Go decodes one (anything but a string is `""`).
pub(crate) fn strings(v: Option<&Value>, key: &str) -> Vec<String> {
    let items = v.and_then(|v| v.get(key)).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    items.iter().map(|s| s.as_str().unwrap_or("").to_string()).collect()
}

/// The topology mode and the deprecated topology hints annotations agree when both are set.
pub(crate) fn topology_annotations(svc: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let mode = annotation(svc, "service.kubernetes.io/topology-mode");
    let hints = annotation(svc, "service.kubernetes.io/topology-aware-hints");
    if let (Some(mode), Some(hints)) = (mode, hints)
        && mode != hints
    {
        causes.push(invalid(
            "metadata.annotations[service.kubernetes.io/topology-mode]".into(),
            mode,
            "must match annotations[service.kubernetes.io/topology-aware-hints] when both are specified",
        ));
    }
}

/// A port's application protocol, when set: a qualified name.
pub(crate) fn app_protocol(p: &Value, at: &str, causes: &mut Vec<Cause>) {
    if let Some(protocol) = p.get("appProtocol").and_then(Value::as_str) {
        for fault in crate::cel_format::qualified_name(protocol) {
            causes.push(invalid(format!("{at}.appProtocol"), protocol, &fault));
        }
    }
}

/// The external IPs of `spec` (over `old_spec` on an update).
pub(crate) fn external_ips(spec: &Value, old_spec: Option<&Value>, causes: &mut Vec<Cause>) {
    let before = strings(old_spec, "externalIPs");
    for (i, ip) in strings(Some(spec), "externalIPs").iter().enumerate() {
        let at = format!("spec.externalIPs[{i}]");
        match parse_ip(ip) {
            None if !before.contains(ip) => causes.push(invalid(at, ip, NOT_AN_IP)),
            // (A stored value is not parsed again, but still judged.)
            None => causes.push(invalid(at, ip, "must be a valid IP address")),
            Some(addr) => {
                if let Some(fault) = endpoint_fault(addr, ip) {
                    causes.push(invalid(at, ip, &fault));
                }
            }
        }
    }
}

/// kube's `ValidateEndpointIP`: an address a client can reach (IPv4-mapped ones as IPv4).
pub(crate) fn endpoint_fault(addr: IpAddr, written: &str) -> Option<String> {
    let addr = match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        v4 => v4,
    };
    let (unspecified, loopback, link_local, link_local_multicast) = match addr {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (v4.is_unspecified(), v4.is_loopback(), v4.is_link_local(), o[0] == 224 && o[1] == 0 && o[2] == 0)
        }
        IpAddr::V6(v6) => {
            let o = v6.octets();
            let link_local = o[0] == 0xfe && o[1] & 0xc0 == 0x80;
            (v6.is_unspecified(), v6.is_loopback(), link_local, o[0] == 0xff && o[1] & 0x0f == 0x02)
        }
    };
    if unspecified {
        Some(format!("may not be unspecified ({written})"))
    } else if loopback {
        Some("may not be in the loopback range (127.0.0.0/8, ::1/128)".into())
    } else if link_local {
        Some("may not be in the link-local range (169.254.0.0/16, fe80::/10)".into())
    } else if link_local_multicast {
        Some("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".into())
    } else {
        None
    }
}

/// Whether `s` is a CIDR as Go's sloppy parser reads one: an address, `/`, a prefix length in
/// range for its family (leading zeros allowed, host bits too).
fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else { return false };
    let Some(addr) = parse_ip(ip) else { return false };
    let max = if ip.contains(':') || addr.is_ipv6() { 128 } else { 32 };
    !bits.is_empty() && bits.bytes().all(|b| b.is_ascii_digit()) && bits.parse::<u32>().is_ok_and(|n| n <= max)
}

const NOT_A_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// Source ranges, `allocateLoadBalancerNodePorts` and the class: only on LoadBalancers, valid.
pub(crate) fn load_balancer(svc: &Map<String, Value>, old: Option<&Map<String, Value>>, causes: &mut Vec<Cause>) {
    let empty = Value::Object(Map::new());
    let spec = svc.get("spec").unwrap_or(&empty);
    let old_spec = old.and_then(|o| o.get("spec"));
    let balancer = text(spec, "type") == "LoadBalancer";
    let ranges = strings(Some(spec), "loadBalancerSourceRanges");
    if !ranges.is_empty() {
        let at = "spec.LoadBalancerSourceRanges";
        if !balancer {
            causes.push(forbidden(at.into(), ONLY_LOAD_BALANCERS));
        }
        let existing: Vec<String> =
            strings(old_spec, "loadBalancerSourceRanges").iter().map(|r| r.trim().to_string()).collect();
        for (i, range) in ranges.iter().enumerate() {
            let range = range.trim();
            if !existing.iter().any(|e| e == range) && !is_cidr(range) {
                causes.push(invalid(format!("{at}[{i}]"), range, NOT_A_CIDR));
            }
        }
    } else {
        source_range_annotation(svc, old, causes);
    }
    // (Defaulting gives every load balancer the field kube would otherwise require.)
    if spec.get("allocateLoadBalancerNodePorts").is_some_and(|v| !v.is_null()) && !balancer {
        causes.push(forbidden("spec.allocateLoadBalancerNodePorts".into(), ONLY_LOAD_BALANCERS));
    }
    class(spec, causes);
}

/// The source ranges annotation, read where the field is empty: only on LoadBalancers, CIDRs
/// (judged when it is new or changed).
fn source_range_annotation(svc: &Map<String, Value>, old: Option<&Map<String, Value>>, causes: &mut Vec<Cause>) {
    let Some(value) = annotation(svc, SOURCE_RANGES_ANNOTATION) else { return };
    let at = format!("metadata.annotations[{SOURCE_RANGES_ANNOTATION}]");
    if svc.get("spec").map(|s| text(s, "type")) != Some("LoadBalancer") {
        causes.push(forbidden(at.clone(), ONLY_LOAD_BALANCERS));
    }
    let unchanged = old.is_some_and(|o| annotation(o, SOURCE_RANGES_ANNOTATION) == Some(value));
    let value = value.trim();
    if !unchanged && !value.is_empty() {
        for piece in value.split(',').map(str::trim) {
            if !is_cidr(piece) {
                causes.push(invalid(at.clone(), piece, NOT_A_CIDR));
            }
        }
    }
}

/// The rules of a Service that read its annotations, for an update that leaves its spec as
/// stored (whose other rules it already passed).
pub(crate) fn annotations(svc: &Map<String, Value>, old: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    topology_annotations(svc, &mut causes);
    let ranges = svc.get("spec").and_then(|s| s.get("loadBalancerSourceRanges")).and_then(Value::as_array);
    if ranges.is_none_or(Vec::is_empty) {
        source_range_annotation(svc, Some(old), &mut causes);
    }
    causes
}

/// kube's `validateLoadBalancerClassField` without an old Service: only on LoadBalancers, a
/// qualified name.
fn class(spec: &Value, causes: &mut Vec<Cause>) {
    let Some(class) = spec.get("loadBalancerClass").filter(|v| !v.is_null()) else { return };
    if text(spec, "type") == "LoadBalancer" {
        let name = class.as_str().unwrap_or("");
        for fault in crate::cel_format::qualified_name(name) {
            causes.push(invalid("spec.loadBalancerClass".into(), name, &fault));
        }
    } else {
        causes.push(forbidden("spec.loadBalancerClass".into(), ONLY_LOAD_BALANCERS));
    }
}

/// kube's `validateLoadBalancerClassField` on an update: a load balancer keeps its class, then
/// the class is judged (kube judges it again in `validateService`).
pub(crate) fn class_update(spec: &Value, old_spec: &Value, causes: &mut Vec<Cause>) {
    let balancers = text(spec, "type") == "LoadBalancer" && text(old_spec, "type") == "LoadBalancer";
    let class_of = |s: &Value| s.get("loadBalancerClass").filter(|v| !v.is_null()).cloned();
    if balancers && class_of(spec) != class_of(old_spec) {
        let shown = go_json(&class_of(spec).unwrap_or(Value::Null));
        causes.push(invalid_value("spec.loadBalancerClass", &shown, "may not change once set"));
    }
    class(spec, causes);
}

/// The internal traffic policy and the traffic distribution, when set: values kube knows.
pub(crate) fn traffic(spec: &Value, causes: &mut Vec<Cause>) {
    // (Defaulting gives the types that need one an internal traffic policy.)
    if let Some(policy) = spec.get("internalTrafficPolicy").filter(|v| !v.is_null()).map(|v| v.as_str().unwrap_or(""))
        && !matches!(policy, "Cluster" | "Local")
    {
        causes.push(unsupported("spec.internalTrafficPolicy".into(), policy, &["Cluster", "Local"]));
    }
    if let Some(distribution) =
        spec.get("trafficDistribution").filter(|v| !v.is_null()).map(|v| v.as_str().unwrap_or(""))
        && !matches!(distribution, "PreferClose" | "PreferSameZone" | "PreferSameNode")
    {
        causes.push(unsupported(
            "spec.trafficDistribution".into(),
            distribution,
            &["PreferClose", "PreferSameZone", "PreferSameNode"],
        ));
    }
}

/// The causes for which kube refuses the status of the Service `svc` (its spec as stored) over
/// the stored one, `old`.
pub(crate) fn status(svc: &Map<String, Value>, old: &Map<String, Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let ingress_of = |o: &Map<String, Value>| -> Vec<Value> {
        o.get("status")
            .and_then(|s| s.pointer("/loadBalancer/ingress"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let ingress = ingress_of(svc);
    let kind = svc.get("spec").map(|s| text(s, "type")).unwrap_or("");
    let at = "status.loadBalancer.ingress";
    if kind != "LoadBalancer" {
        if !ingress.is_empty() {
            causes.push(forbidden(at.into(), "may only be used when `spec.type` is 'LoadBalancer'"));
        }
        return causes;
    }
    let existing: Vec<String> =
        ingress_of(old).iter().map(|i| text(i, "ip").to_string()).filter(|ip| !ip.is_empty()).collect();
    for (i, entry) in ingress.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let ip = text(entry, "ip");
        if !ip.is_empty() && !existing.iter().any(|e| e == ip) && parse_ip(ip).is_none() {
            causes.push(invalid(format!("{at}.ip"), ip, NOT_AN_IP));
        }
        let mode = entry.get("ipMode").filter(|v| !v.is_null()).map(|v| v.as_str().unwrap_or(""));
        match (mode, ip.is_empty()) {
            (None, false) => causes.push(required(format!("{at}.ipMode"), "must be specified when `ip` is set")),
            (Some(_), true) => {
                causes.push(forbidden(format!("{at}.ipMode"), "may not be specified when `ip` is not set"))
            }
            (Some(mode), false) if !matches!(mode, "Proxy" | "VIP") => {
                causes.push(unsupported(format!("{at}.ipMode"), mode, &["Proxy", "VIP"]))
            }
            _ => {}
        }
        let host = text(entry, "hostname");
        if !host.is_empty() {
            for fault in crate::cel_format::dns1123_subdomain(host) {
                causes.push(invalid(format!("{at}.hostname"), host, &fault));
            }
            if parse_ip(host).is_some() {
                causes.push(invalid(format!("{at}.hostname"), host, "must be a DNS name, not an IP address"));
            }
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn external_ips_are_reachable_addresses() {
        let spec = json!({"externalIPs": ["203.0.113.5", "127.0.0.1", "x", "0.0.0.0", "169.254.1.1", "224.0.0.5",
            "fe80::1", "ff02::1", "::ffff:127.0.0.1", "010.0.0.1"]});
        let mut causes = Vec::new();
        external_ips(&spec, None, &mut causes);
        assert_eq!(
            messages(causes),
            [
                "spec.externalIPs[1]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "spec.externalIPs[2]: Invalid value: \"x\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "spec.externalIPs[3]: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)",
                "spec.externalIPs[4]: Invalid value: \"169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                "spec.externalIPs[5]: Invalid value: \"224.0.0.5\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
                "spec.externalIPs[6]: Invalid value: \"fe80::1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                "spec.externalIPs[7]: Invalid value: \"ff02::1\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
                "spec.externalIPs[8]: Invalid value: \"::ffff:127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            ]
        );
    }

    #[test]
    fn load_balancer_fields_only_on_load_balancers() {
        let svc = json!({"metadata": {"name": "s"}, "spec": {"type": "ClusterIP", "allocateLoadBalancerNodePorts": true,
            "loadBalancerClass": "x", "loadBalancerSourceRanges": ["10.0.0.0/8"]}});
        let mut causes = Vec::new();
        load_balancer(svc.as_object().unwrap(), None, &mut causes);
        assert_eq!(
            messages(causes),
            [
                "spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'",
                "spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer'",
                "spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'",
            ]
        );
        let svc = json!({"metadata": {"name": "s", "annotations": {SOURCE_RANGES_ANNOTATION: "10.0.0.0/8, 1.2.3.4/33,"}},
            "spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": true, "loadBalancerClass": "a/b/c"}});
        let mut causes = Vec::new();
        load_balancer(svc.as_object().unwrap(), None, &mut causes);
        let at = format!("metadata.annotations[{SOURCE_RANGES_ANNOTATION}]");
        let m = messages(causes);
        assert_eq!(m[0], format!("{at}: Invalid value: \"1.2.3.4/33\": {NOT_A_CIDR}"));
        assert_eq!(m[1], format!("{at}: Invalid value: \"\": {NOT_A_CIDR}"));
        assert!(m[2].starts_with("spec.loadBalancerClass: Invalid value: \"a/b/c\": a valid label key"), "{m:?}");
        assert_eq!(m.len(), 3);
        for (range, ok) in [
            (" 10.0.0.1/8 ", true),
            ("010.0.0.0/08", true),
            ("fd00::/64", true),
            ("::ffff:1.2.3.4/100", true),
            ("10.0.0.0/33", false),
            ("10.0.0.0", false),
            ("10.0.0.0/", false),
        ] {
            assert_eq!(is_cidr(range.trim()), ok, "{range}");
        }
    }

    #[test]
    fn a_load_balancer_keeps_its_class() {
        let spec = |class: Value| json!({"type": "LoadBalancer", "loadBalancerClass": class});
        let mut causes = Vec::new();
        class_update(&spec(json!("b")), &spec(json!("a")), &mut causes);
        assert_eq!(messages(causes), ["spec.loadBalancerClass: Invalid value: \"b\": may not change once set"]);
        let mut causes = Vec::new();
        class_update(&spec(Value::Null), &spec(json!("a")), &mut causes);
        assert_eq!(messages(causes), ["spec.loadBalancerClass: Invalid value: null: may not change once set"]);
    }

    #[test]
    fn traffic_values_are_kube_s() {
        let mut causes = Vec::new();
        traffic(
            &json!({"type": "ClusterIP", "internalTrafficPolicy": "Node", "trafficDistribution": "Nearby"}),
            &mut causes,
        );
        assert_eq!(
            messages(causes),
            [
                "spec.internalTrafficPolicy: Unsupported value: \"Node\": supported values: \"Cluster\", \"Local\"",
                "spec.trafficDistribution: Unsupported value: \"Nearby\": supported values: \"PreferClose\", \"PreferSameZone\", \"PreferSameNode\"",
            ]
        );
    }

    #[test]
    fn load_balancer_status_is_judged_as_kube_judges_it() {
        let svc = |kind: &str, ingress: Value| {
            json!({"spec": {"type": kind}, "status": {"loadBalancer": {"ingress": ingress}}})
                .as_object()
                .unwrap()
                .clone()
        };
        let old = svc("LoadBalancer", json!([]));
        let new = svc(
            "LoadBalancer",
            json!([{"ip": "203.0.113.9", "ipMode": "VIP"}, {"ip": "nope", "ipMode": "Tunnel"},
            {"ip": "198.51.100.1"}, {"ipMode": "Proxy", "hostname": "1.2.3.4"}, {"hostname": "lb.example.com"}]),
        );
        assert_eq!(
            messages(status(&new, &old)),
            [
                "status.loadBalancer.ingress[1].ip: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "status.loadBalancer.ingress[1].ipMode: Unsupported value: \"Tunnel\": supported values: \"Proxy\", \"VIP\"",
                "status.loadBalancer.ingress[2].ipMode: Required value: must be specified when `ip` is set",
                "status.loadBalancer.ingress[3].ipMode: Forbidden: may not be specified when `ip` is not set",
                "status.loadBalancer.ingress[3].hostname: Invalid value: \"1.2.3.4\": must be a DNS name, not an IP address",
            ]
        );
        assert_eq!(
            messages(status(&svc("ClusterIP", json!([{"ip": "1.2.3.4"}])), &old)),
            ["status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'"]
        );
    }
}
