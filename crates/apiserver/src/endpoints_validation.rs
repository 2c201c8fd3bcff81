//! core/v1 Endpoints and discovery.k8s.io/v1 EndpointSlices judged as kube-apiserver v1.35
//! judges them (`ValidateEndpoints`, `ValidateEndpointSlice` and their updates), their
//! warnings, and the EndpointSlice strategy's dropping of `deprecatedTopology`.
//!
//! Invariants, as kube's rules hold them:
//! - Endpoints: every subset has an address (ready or not); an address is an IP address (Go's
//!   lenient parser: leading zeros and IPv4-mapped addresses pass, with a warning) that is
//!   neither unspecified, loopback, link-local nor link-local multicast, its `hostname` a DNS
//!   label and its `nodeName` a DNS subdomain; a port is named (a DNS label) when its subset has
//!   several, numbered 1–65535, of a protocol kube knows, its `appProtocol` a qualified name;
//! - EndpointSlices: an address type kube knows, never changed; at most 20,000 ports, each name a
//!   DNS label once, of a known protocol; at most 1,000 endpoints of 1–100 addresses each, of the
//!   slice's type (IPv6 ones in canonical form, FQDNs of two labels or more), a `nodeName` a DNS
//!   subdomain, a `hostname` a DNS label, at most 8 zone and 8 node hints, none twice;
//! - an update whose `subsets` (`endpoints`) are as stored is not judged on them again;
//! - causes come in kube's order; warnings are given only to writes that pass.

use serde_json::{Map, Value};

use crate::object::elements as items;
use crate::pod_security_checks::go_quote;
use crate::policy_validation::{duplicate, invalid, required, unsupported_shown};
use crate::registry::ResourceInfo;
use crate::structural::Cause;

const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];
const MAX_ENDPOINTS: usize = 1000;
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 20000;
const MAX_HINTS: usize = 8;
const NOT_AN_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
/// The label with which kube's controllers mark the objects whose addresses they checked.
const ENDPOINTS_MANAGED_BY: &str = "endpoints.kubernetes.io/managed-by";
const SLICE_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";

/// kube's deprecation of the kind, on every request of its routes.
pub(crate) const ENDPOINTS_DEPRECATED: &str =
    "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice";

fn is_slices(info: &ResourceInfo) -> bool {
    info.group == "discovery.k8s.io" && info.plural == "endpointslices"
}

/// Whether these rules judge objects of `info`.
pub(crate) fn judges(info: &ResourceInfo) -> bool {
    info.is_core("endpoints") || is_slices(info)
}

fn text(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

fn too_many(field: String, n: usize, max: usize) -> Cause {
    Cause { reason: "FieldValueTooMany", message: format!("Too many: {n}: must have at most {max} items"), field }
}

fn each(field: &str, value: &str, faults: Vec<String>, causes: &mut Vec<Cause>) {
    causes.extend(faults.iter().map(|f| invalid(field.to_string(), value, f)));
}

/// Whether the list `field` of `obj` is the stored one's, compared in the stored form as kube's
/// semantic equality compares them (absent, null and empty alike).
fn unchanged(info: &ResourceInfo, obj: &Map<String, Value>, old: Option<&Map<String, Value>>, field: &str) -> bool {
    let Some(old) = old else { return false };
    let new = crate::strategy::stored_form(info, field, obj);
    items(old.get(field)) == items(new.as_ref())
}

/// A value of a named Go string type, as kube prints one in a cause (JSON).
fn shown(v: &str) -> String {
    crate::structural::go_json(&Value::String(v.to_string()))
}

/// The causes of `obj`, of a kind these rules judge ([`judges`]), written over `old` (None on
/// a create).
pub(crate) fn validate(info: &ResourceInfo, obj: &Map<String, Value>, old: Option<&Map<String, Value>>) -> Vec<Cause> {
    if is_slices(info) {
        return slice(info, obj, old);
    }
    let mut causes = Vec::new();
    if !unchanged(info, obj, old, "subsets") {
        subsets(items(obj.get("subsets")), &mut causes);
    }
    causes
}

fn subsets(subsets: &[Value], causes: &mut Vec<Cause>) {
    for (i, ss) in subsets.iter().enumerate() {
        let at = format!("subsets[{i}]");
        let (ready, not_ready) = (items(ss.get("addresses")), items(ss.get("notReadyAddresses")));
        if ready.is_empty() && not_ready.is_empty() {
            causes.push(required(at.clone(), "must specify `addresses` or `notReadyAddresses`"));
        }
        for (j, a) in ready.iter().enumerate() {
            address(a, &format!("{at}.addresses[{j}]"), causes);
        }
        for (j, a) in not_ready.iter().enumerate() {
            address(a, &format!("{at}.notReadyAddresses[{j}]"), causes);
        }
        let ports = items(ss.get("ports"));
        for (k, p) in ports.iter().enumerate() {
            endpoints_port(p, ports.len() > 1, &format!("{at}.ports[{k}]"), causes);
        }
    }
}

/// kube's `validateEndpointAddress`.
fn address(a: &Value, at: &str, causes: &mut Vec<Cause>) {
    let ip = text(a.get("ip")).unwrap_or("");
    let ip_at = format!("{at}.ip");
    let parsed = crate::pod_dns::parse_ip(ip);
    if parsed.is_none() {
        causes.push(invalid(ip_at.clone(), ip, NOT_AN_IP));
    }
    if let Some(host) = text(a.get("hostname")).filter(|h| !h.is_empty()) {
        each(&format!("{at}.hostname"), host, crate::cel_format::dns1123_label(host), causes);
    }
    if let Some(node) = text(a.get("nodeName")) {
        each(&format!("{at}.nodeName"), node, crate::cel_format::dns1123_subdomain(node), causes);
    }
    match parsed {
        None => causes.push(invalid(ip_at, ip, "must be a valid IP address")),
        Some(addr) => {
            if let Some(fault) = crate::service_fields::endpoint_fault(addr, ip) {
                causes.push(invalid(ip_at, ip, &fault));
            }
        }
    }
}

/// kube's `validateEndpointPort`.
fn endpoints_port(p: &Value, named: bool, at: &str, causes: &mut Vec<Cause>) {
    let name = text(p.get("name")).unwrap_or("");
    if named && name.is_empty() {
        causes.push(required(format!("{at}.name"), ""));
    } else if !name.is_empty() {
        each(&format!("{at}.name"), name, crate::cel_format::dns1123_label(name), causes);
    }
    let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=65535).contains(&port) {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {port}: must be between 1 and 65535, inclusive"),
            field: format!("{at}.port"),
        });
    }
    // (A string in Go: an empty one is none.)
    protocol(text(p.get("protocol")).filter(|p| !p.is_empty()), at, causes);
    crate::service_fields::app_protocol(p, at, causes);
}

/// A port's protocol: given (a slice's may be `""`, which is no known protocol) and known.
fn protocol(given: Option<&str>, at: &str, causes: &mut Vec<Cause>) {
    match given {
        None => causes.push(required(format!("{at}.protocol"), "")),
        Some(proto) if !PROTOCOLS.contains(&proto) => {
            causes.push(unsupported_shown(format!("{at}.protocol"), &shown(proto), &PROTOCOLS));
        }
        Some(_) => {}
    }
}

/// kube's `ValidateEndpointSlice` (and its update's immutable address type).
fn slice(info: &ResourceInfo, obj: &Map<String, Value>, old: Option<&Map<String, Value>>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kind = text(obj.get("addressType")).unwrap_or("");
    if kind.is_empty() {
        causes.push(required("addressType".into(), ""));
    } else if !ADDRESS_TYPES.contains(&kind) {
        causes.push(unsupported_shown("addressType".into(), &shown(kind), &ADDRESS_TYPES));
    }
    slice_ports(items(obj.get("ports")), &mut causes);
    if !unchanged(info, obj, old, "endpoints") {
        endpoints(items(obj.get("endpoints")), kind, &mut causes);
    }
    if let Some(old) = old {
        let was = text(old.get("addressType")).unwrap_or("");
        if was != kind {
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: format!("Invalid value: {}: field is immutable", shown(kind)),
                field: "addressType".into(),
            });
        }
    }
    causes
}

fn slice_ports(ports: &[Value], causes: &mut Vec<Cause>) {
    if ports.len() > MAX_PORTS {
        causes.push(too_many("ports".into(), ports.len(), MAX_PORTS));
        return;
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let at = format!("ports[{i}]");
        let name = text(p.get("name")).unwrap_or("");
        if !name.is_empty() {
            each(&format!("{at}.name"), name, crate::cel_format::dns1123_label(name), causes);
        }
        if seen.contains(&name) {
            // (A pointer in Go: shown as JSON.)
            causes.push(Cause {
                reason: "FieldValueDuplicate",
                message: format!("Duplicate value: {}", shown(name)),
                field: format!("{at}.name"),
            });
        } else {
            seen.push(name);
        }
        protocol(text(p.get("protocol")), &at, causes);
        crate::service_fields::app_protocol(p, &at, causes);
    }
}

fn endpoints(endpoints: &[Value], kind: &str, causes: &mut Vec<Cause>) {
    if endpoints.len() > MAX_ENDPOINTS {
        causes.push(too_many("endpoints".into(), endpoints.len(), MAX_ENDPOINTS));
        return;
    }
    for (i, ep) in endpoints.iter().enumerate() {
        let at = format!("endpoints[{i}]");
        let addresses_at = format!("{at}.addresses");
        let addresses = items(ep.get("addresses"));
        if addresses.is_empty() {
            causes.push(required(addresses_at.clone(), "must contain at least 1 address"));
        } else if addresses.len() > MAX_ADDRESSES {
            causes.push(too_many(addresses_at.clone(), addresses.len(), MAX_ADDRESSES));
        }
        for (j, a) in addresses.iter().enumerate() {
            let a = a.as_str().unwrap_or("");
            slice_address(a, kind, &addresses_at, &format!("{addresses_at}[{j}]"), causes);
        }
        if let Some(node) = text(ep.get("nodeName")) {
            each(&format!("{at}.nodeName"), node, crate::cel_format::dns1123_subdomain(node), causes);
        }
        if let Some(host) = text(ep.get("hostname")) {
            each(&format!("{at}.hostname"), host, crate::cel_format::dns1123_label(host), causes);
        }
        if let Some(hints) = ep.get("hints").filter(|h| h.is_object()) {
            hint_causes(hints, &format!("{at}.hints"), causes);
        }
    }
}

/// One address of a slice of type `kind` (`list_at` names the list, as kube's family errors do).
fn slice_address(a: &str, kind: &str, list_at: &str, at: &str, causes: &mut Vec<Cause>) {
    match kind {
        "IPv4" => match crate::pod_dns::parse_ip(a) {
            None => causes.push(invalid(at.into(), a, NOT_AN_IP)),
            Some(addr) => {
                let v4 = match addr {
                    std::net::IpAddr::V4(_) => true,
                    std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some(),
                };
                if !v4 {
                    causes.push(invalid(list_at.into(), a, "must be an IPv4 address"));
                }
                if let Some(fault) = crate::service_fields::endpoint_fault(addr, a) {
                    causes.push(invalid(at.into(), a, &fault));
                }
            }
        },
        "IPv6" => {
            let strict = crate::service_cidr::ip_faults(a);
            if !strict.is_empty() {
                each(at, a, strict, causes);
                return;
            }
            let Ok(addr) = a.parse::<std::net::IpAddr>() else { return };
            let v6 = matches!(addr, std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none());
            if !v6 {
                causes.push(invalid(list_at.into(), a, "must be an IPv6 address"));
            }
            if let Some(fault) = crate::service_fields::endpoint_fault(addr, a) {
                causes.push(invalid(at.into(), a, &fault));
            }
        }
        "FQDN" => fqdn(a, at, causes),
        _ => {}
    }
}

/// kube's `IsFullyQualifiedDomainName`.
fn fqdn(a: &str, at: &str, causes: &mut Vec<Cause>) {
    if a.is_empty() {
        causes.push(required(at.into(), ""));
        return;
    }
    let name = a.strip_suffix('.').unwrap_or(a);
    let faults = crate::cel_format::dns1123_subdomain(name);
    if !faults.is_empty() {
        causes.push(invalid(at.into(), name, &faults.join(",")));
        return;
    }
    let labels: Vec<&str> = name.split('.').collect();
    if labels.len() < 2 {
        causes.push(invalid(at.into(), name, "should be a domain with at least two segments separated by dots"));
        return;
    }
    for label in labels {
        let faults = crate::cel_format::dns1123_label(label);
        if !faults.is_empty() {
            causes.push(invalid(at.into(), label, &faults.join(",")));
            return;
        }
    }
}

/// kube's `validateHints`: zone names are label values, node names DNS subdomains; too many
/// zones end the judging.
fn hint_causes(hints: &Value, at: &str, causes: &mut Vec<Cause>) {
    if hint_list(hints.get("forZones"), &format!("{at}.forZones"), crate::cel_format::label_value, causes) {
        hint_list(hints.get("forNodes"), &format!("{at}.forNodes"), crate::cel_format::dns1123_subdomain, causes);
    }
}

/// One list of hints at `at`, each name judged by `faults` and named once; false when there
/// are too many (then nothing else is judged).
fn hint_list(list: Option<&Value>, at: &str, faults: fn(&str) -> Vec<String>, causes: &mut Vec<Cause>) -> bool {
    let hints = items(list);
    if hints.len() > MAX_HINTS {
        causes.push(too_many(at.to_string(), hints.len(), MAX_HINTS));
        return false;
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, h) in hints.iter().enumerate() {
        let name = text(h.get("name")).unwrap_or("");
        let name_at = format!("{at}[{i}].name");
        if seen.contains(&name) {
            causes.push(duplicate(name_at.clone(), name));
        } else {
            seen.push(name);
        }
        each(&name_at, name, faults(name), causes);
    }
    true
}

/// kube's `GetWarningsForIP` of the address `a` at `at`.
fn ip_warning(at: &str, a: &str) -> Option<String> {
    let lenient = crate::pod_dns::parse_ip(a)?;
    let mapped = matches!(lenient, std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some());
    if a.parse::<std::net::IpAddr>().is_err() || mapped {
        return Some(format!(
            "{at}: non-standard IP address {} will be considered invalid in a future Kubernetes release: use {}",
            go_quote(a),
            go_quote(&crate::service_cidr::go_ip_string(lenient))
        ));
    }
    let canonical = lenient.to_string();
    (lenient.is_ipv6() && canonical != a).then(|| {
        format!("{at}: IPv6 address {} should be in RFC 5952 canonical format ({})", go_quote(a), go_quote(&canonical))
    })
}

fn label<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    obj.get("metadata").and_then(|m| m.get("labels")).and_then(|l| l.get(key)).and_then(Value::as_str)
}

/// The warnings kube gives a write of `obj` that passed (`create`: not an update).
pub(crate) fn warnings(info: &ResourceInfo, obj: &Map<String, Value>, create: bool) -> Vec<String> {
    let mut out = Vec::new();
    if is_slices(info) {
        if create && text(obj.get("addressType")) == Some("FQDN") {
            out.push("spec.addressType: FQDN endpoints are deprecated".into());
        }
        let managed = label(obj, SLICE_MANAGED_BY);
        if matches!(managed, Some("endpointslice-controller.k8s.io" | "endpointslicemirroring-controller.k8s.io")) {
            return out;
        }
        for (i, ep) in items(obj.get("endpoints")).iter().enumerate() {
            for (j, a) in items(ep.get("addresses")).iter().enumerate() {
                out.extend(a.as_str().and_then(|a| ip_warning(&format!("endpoints[{i}].addresses[{j}]"), a)));
            }
        }
        return out;
    }
    if label(obj, ENDPOINTS_MANAGED_BY) == Some("endpoint-controller") {
        return out;
    }
    for (i, ss) in items(obj.get("subsets")).iter().enumerate() {
        for list in ["addresses", "notReadyAddresses"] {
            for (j, a) in items(ss.get(list)).iter().enumerate() {
                let at = format!("subsets[{i}].{list}[{j}].ip");
                out.extend(text(a.get("ip")).and_then(|ip| ip_warning(&at, ip)));
            }
        }
    }
    out
}

/// The EndpointSlice strategy's `dropTopologyOnV1`: `deprecatedTopology` is not kept through
/// v1. On an update that changes the endpoints, an endpoint without a `nodeName` takes its
/// topology's `kubernetes.io/hostname` when the stored slice named that host.
pub(crate) fn drop_topology(info: &ResourceInfo, obj: &mut Map<String, Value>, old: Option<&Value>) {
    if !is_slices(info) {
        return;
    }
    let old_endpoints = old.map(|o| items(o.get("endpoints")));
    if old_endpoints.is_some_and(|o| o == items(obj.get("endpoints"))) {
        return;
    }
    let hosts: Vec<String> = old_endpoints
        .into_iter()
        .flatten()
        .filter_map(|e| e.pointer("/deprecatedTopology/kubernetes.io~1hostname").and_then(Value::as_str))
        .filter(|h| !h.is_empty())
        .map(str::to_string)
        .collect();
    let Some(Value::Array(endpoints)) = obj.get_mut("endpoints") else { return };
    for ep in endpoints.iter_mut().filter_map(Value::as_object_mut) {
        let Some(topology) = ep.remove("deprecatedTopology") else { continue };
        let host = topology.get("kubernetes.io/hostname").and_then(Value::as_str);
        let named = ep.get("nodeName").is_some_and(|n| !n.is_null());
        if let Some(host) = host
            && !named
            && hosts.iter().any(|h| h == host)
            && crate::cel_format::dns1123_subdomain(host).is_empty()
        {
            ep.insert("nodeName".into(), Value::String(host.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn eps() -> ResourceInfo {
        ResourceInfo::new("", "v1", "endpoints", "Endpoints", true)
    }

    fn slices() -> ResourceInfo {
        ResourceInfo::new("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true)
    }

    #[test]
    fn endpoints_are_judged_as_kube_judges_them() {
        let bad = obj(json!({"subsets": [
            {"ports": [{"port": 80, "protocol": "TCP"}]},
            {"addresses": [{"ip": "127.0.0.1"}, {"ip": "foo", "hostname": "Foo", "nodeName": "Node_1"}],
             "notReadyAddresses": [{"ip": "169.254.1.1"}, {"ip": "0.0.0.0"}, {"ip": "ff02::1"}],
             "ports": [{"name": "a", "port": 0, "protocol": "FOO", "appProtocol": "--"}, {"port": 8, "protocol": "TCP"}]},
        ]}));
        assert_eq!(
            messages(&validate(&eps(), &bad, None)),
            [
                "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`",
                "subsets[1].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "subsets[1].addresses[1].ip: Invalid value: \"foo\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "subsets[1].addresses[1].hostname: Invalid value: \"Foo\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "subsets[1].addresses[1].nodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "subsets[1].addresses[1].ip: Invalid value: \"foo\": must be a valid IP address",
                "subsets[1].notReadyAddresses[0].ip: Invalid value: \"169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                "subsets[1].notReadyAddresses[1].ip: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)",
                "subsets[1].notReadyAddresses[2].ip: Invalid value: \"ff02::1\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
                "subsets[1].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "subsets[1].ports[0].protocol: Unsupported value: \"FOO\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "subsets[1].ports[0].appProtocol: Invalid value: \"--\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "subsets[1].ports[1].name: Required value",
            ]
        );
        // Unchanged subsets are not judged again; lenient addresses pass with a warning.
        assert!(validate(&eps(), &bad, Some(&bad)).is_empty());
        let lenient = obj(json!({"subsets": [{"addresses": [{"ip": "010.0.0.1"}, {"ip": "2001:DB8::1"}]}]}));
        assert!(validate(&eps(), &lenient, None).is_empty());
        assert_eq!(
            warnings(&eps(), &lenient, true),
            [
                "subsets[0].addresses[0].ip: non-standard IP address \"010.0.0.1\" will be considered invalid in a future Kubernetes release: use \"10.0.0.1\"",
                "subsets[0].addresses[1].ip: IPv6 address \"2001:DB8::1\" should be in RFC 5952 canonical format (\"2001:db8::1\")",
            ]
        );
    }

    #[test]
    fn endpoint_slices_are_judged_as_kube_judges_them() {
        let ports: Vec<Value> = vec![
            json!({"name": "http", "protocol": "TCP"}),
            json!({"name": "http", "protocol": "foo"}),
            json!({"name": "almost_valid", "protocol": "TCP", "appProtocol": ""}),
        ];
        let zones: Vec<Value> = ["a", "b", "a"].iter().map(|z| json!({"name": z})).collect();
        let bad = obj(json!({"addressType": "IPv4", "ports": ports, "endpoints": [
            {"addresses": []},
            {"addresses": ["123.456.789.012", "2001:4860:4860::8888", "127.0.0.1"], "nodeName": "N", "hostname": "--x",
             "hints": {"forZones": zones, "forNodes": [{"name": "n"}, {"name": "n"}]}},
        ]}));
        assert_eq!(
            messages(&validate(&slices(), &bad, None)),
            [
                "ports[1].name: Duplicate value: \"http\"",
                "ports[1].protocol: Unsupported value: \"foo\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "ports[2].name: Invalid value: \"almost_valid\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "ports[2].appProtocol: Invalid value: \"\": name part must be non-empty",
                "ports[2].appProtocol: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "endpoints[0].addresses: Required value: must contain at least 1 address",
                "endpoints[1].addresses[0]: Invalid value: \"123.456.789.012\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "endpoints[1].addresses: Invalid value: \"2001:4860:4860::8888\": must be an IPv4 address",
                "endpoints[1].addresses[2]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "endpoints[1].nodeName: Invalid value: \"N\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "endpoints[1].hostname: Invalid value: \"--x\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "endpoints[1].hints.forZones[2].name: Duplicate value: \"a\"",
                "endpoints[1].hints.forNodes[1].name: Duplicate value: \"n\"",
            ]
        );
        let v6 = obj(
            json!({"addressType": "IPv6", "endpoints": [{"addresses": ["2001:DB8::1", "::ffff:1.2.3.4", "10.1.2.3"]}]}),
        );
        assert_eq!(
            messages(&validate(&slices(), &v6, None)),
            [
                "endpoints[0].addresses[0]: Invalid value: \"2001:DB8::1\": must be in canonical form (\"2001:db8::1\")",
                "endpoints[0].addresses[1]: Invalid value: \"::ffff:1.2.3.4\": must not be an IPv4-mapped IPv6 address",
                "endpoints[0].addresses: Invalid value: \"10.1.2.3\": must be an IPv6 address",
            ]
        );
        let fqdn = obj(
            json!({"addressType": "FQDN", "endpoints": [{"addresses": ["foo", "FOO.example.com", "a.example.com."]}]}),
        );
        assert_eq!(
            messages(&validate(&slices(), &fqdn, None))[..1],
            [
                "endpoints[0].addresses[0]: Invalid value: \"foo\": should be a domain with at least two segments separated by dots"
            ]
        );
        assert_eq!(validate(&slices(), &fqdn, None).len(), 2);
        assert_eq!(warnings(&slices(), &fqdn, true), ["spec.addressType: FQDN endpoints are deprecated"]);
        assert!(warnings(&slices(), &fqdn, false).is_empty());
        // The address type: required, known, immutable.
        assert_eq!(messages(&validate(&slices(), &obj(json!({})), None)), ["addressType: Required value"]);
        assert_eq!(
            messages(&validate(&slices(), &obj(json!({"addressType": "IP"})), None)),
            ["addressType: Unsupported value: \"IP\": supported values: \"FQDN\", \"IPv4\", \"IPv6\""]
        );
        let old = obj(json!({"addressType": "IPv4"}));
        assert_eq!(
            messages(&validate(&slices(), &obj(json!({"addressType": "IPv6"})), Some(&old))),
            ["addressType: Invalid value: \"IPv6\": field is immutable"]
        );
        // A slice's protocol may be "" (a pointer in Go, not defaulted): no protocol kube knows;
        // named Go types are shown as JSON.
        let odd = obj(
            json!({"addressType": "IPv4", "ports": [{"name": "<p>", "protocol": ""}, {"name": "<p>", "protocol": "<x>"}]}),
        );
        let found = messages(&validate(&slices(), &odd, None));
        assert_eq!(
            found[1],
            "ports[0].protocol: Unsupported value: \"\": supported values: \"SCTP\", \"TCP\", \"UDP\""
        );
        assert_eq!(found[3], "ports[1].name: Duplicate value: \"\\u003cp\\u003e\"");
        assert_eq!(
            found[4],
            "ports[1].protocol: Unsupported value: \"\\u003cx\\u003e\": supported values: \"SCTP\", \"TCP\", \"UDP\""
        );
        // Leading zeros are the fault of an IPv4-mapped address that has them.
        let mapped = obj(json!({"addressType": "IPv6", "endpoints": [{"addresses": ["::ffff:010.1.2.3"]}]}));
        assert_eq!(
            messages(&validate(&slices(), &mapped, None)),
            ["endpoints[0].addresses[0]: Invalid value: \"::ffff:010.1.2.3\": must not have leading 0s"]
        );
        // Endpoints as stored (in the stored form: `conditions: {}`) are not judged again.
        let stored = obj(json!({"addressType": "IPv4", "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {}}]}));
        let resent = obj(json!({"addressType": "IPv4", "endpoints": [{"addresses": ["127.0.0.1"]}]}));
        assert!(validate(&slices(), &resent, Some(&stored)).is_empty());
        // Too many: counted, nothing else judged.
        let many: Vec<Value> = (0..1001).map(|_| json!({"addresses": ["10.0.0.1"]})).collect();
        assert_eq!(
            messages(&validate(&slices(), &obj(json!({"addressType": "IPv4", "endpoints": many})), None)),
            ["endpoints: Too many: 1001: must have at most 1000 items"]
        );
    }

    #[test]
    fn topology_is_not_kept_through_v1() {
        let mut created = obj(json!({"endpoints": [{"addresses": ["10.0.0.1"],
            "deprecatedTopology": {"kubernetes.io/hostname": "node-a"}}]}));
        drop_topology(&slices(), &mut created, None);
        assert_eq!(Value::Object(created), json!({"endpoints": [{"addresses": ["10.0.0.1"]}]}));
        let stored = json!({"endpoints": [{"addresses": ["10.0.0.1"], "deprecatedTopology": {"kubernetes.io/hostname": "node-a"}}]});
        let mut updated = obj(json!({"endpoints": [{"addresses": ["10.0.0.2"],
            "deprecatedTopology": {"kubernetes.io/hostname": "node-a"}}]}));
        drop_topology(&slices(), &mut updated, Some(&stored));
        assert_eq!(Value::Object(updated), json!({"endpoints": [{"addresses": ["10.0.0.2"], "nodeName": "node-a"}]}));
    }
}
