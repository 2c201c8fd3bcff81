//! networking.k8s.io/v1 ServiceCIDRs and IPAddresses as kube-apiserver v1.35 judges them: the
//! address blocks Services' cluster IPs come from, and the objects that record which Service
//! holds each address.
//!
//! - an IPAddress is named by its address in canonical form (kube's strict `IsValidIP`: no
//!   leading zeros, no IPv4-mapped IPv6, Go's `String()` of the address) and points at its
//!   parent (`spec.parentRef`: a resource and a name, a group that is a DNS subdomain, path
//!   segments), which never changes;
//! - a ServiceCIDR holds one or two blocks (kube's strict `IsValidCIDR`), one per family; its
//!   blocks never change but for a single-stack block gaining a second one of the other family;
//!   a `status` write judges only the metadata.
//!
//! Invariants: causes come in kube's order with its paths and messages; only the object and,
//! on update, the stored one are read.

use std::net::IpAddr;

use serde_json::{Map, Value};

use crate::policy_validation::{invalid, required};
use crate::registry::ResourceInfo;
use crate::structural::{Cause, go_json};
use crate::workload_validation::invalid_value;

/// The API group of both kinds.
pub(crate) const GROUP: &str = "networking.k8s.io";
/// The resource of ServiceCIDRs.
pub(crate) const SERVICE_CIDRS: &str = "servicecidrs";
/// The resource of IPAddresses.
pub(crate) const IP_ADDRESSES: &str = "ipaddresses";

const IMMUTABLE: &str = "field is immutable";

/// Whether `info` serves one of the two kinds.
pub(crate) fn judges(info: &ResourceInfo) -> bool {
    info.group == GROUP && info.custom.is_none() && matches!(info.plural.as_str(), SERVICE_CIDRS | IP_ADDRESSES)
}

/// Whether `info` serves ServiceCIDRs.
pub(crate) fn is_service_cidrs(info: &ResourceInfo) -> bool {
    judges(info) && info.plural == SERVICE_CIDRS
}

/// `s` as Go's `net.IP.String()` writes the address: IPv4-mapped IPv6 addresses as IPv4.
pub(crate) fn go_ip_string(ip: IpAddr) -> String {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or_else(|| v6.to_string(), |v4| v4.to_string()),
        IpAddr::V4(v4) => v4.to_string(),
    }
}

/// What kube's strict `IsValidIP` finds wrong with `s`.
pub(crate) fn ip_faults(s: &str) -> Vec<String> {
    let Some(sloppy) = crate::pod_dns::parse_ip(s) else {
        return vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into()];
    };
    let mut faults = Vec::new();
    // Rust's parser, as Go's `netip.ParseAddr`, refuses leading zeros.
    match s.parse::<IpAddr>() {
        Err(_) => faults.push("must not have leading 0s".to_string()),
        Ok(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_some() => {
            faults.push("must not be an IPv4-mapped IPv6 address".into())
        }
        Ok(_) => {}
    }
    if faults.is_empty() {
        let canonical = go_ip_string(sloppy);
        if canonical != s {
            faults.push(format!("must be in canonical form ({})", crate::structural::go_quote(&canonical)));
        }
    }
    faults
}

/// A CIDR as Go's sloppy `ParseCIDR` reads it: its address (the text's) and prefix length.
fn sloppy_cidr(s: &str) -> Option<(IpAddr, u32)> {
    let (ip, bits) = s.split_once('/')?;
    let addr = crate::pod_dns::parse_ip(ip)?;
    let max = if ip.contains(':') { 128 } else { 32 };
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bits: u64 = bits.parse().ok().filter(|b| *b <= max)?;
    Some((addr, bits as u32))
}

/// The network of `addr` under a prefix of `bits` (IPv4-mapped addresses count as IPv4, their
/// prefix less 96), as Go's `IPNet` holds it.
fn network(addr: IpAddr, bits: u32) -> (IpAddr, u32) {
    match addr {
        IpAddr::V4(v4) => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            (IpAddr::V4((u32::from(v4) & mask).into()), bits)
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) if bits >= 96 => network(IpAddr::V4(v4), bits - 96),
            _ => {
                let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
                (IpAddr::V6((u128::from(v6) & mask).into()), bits)
            }
        },
    }
}

/// The addresses the IPv4 block `block` gives out (its network and broadcast addresses left
/// out, so a /31 or /32 gives none, as kube's allocators count them); None when `block` is no
/// IPv4 CIDR.
pub(crate) fn ipv4_hosts(block: &str) -> Option<std::ops::RangeInclusive<u32>> {
    let (addr, bits) = sloppy_cidr(block)?;
    let (IpAddr::V4(net), bits) = network(addr, bits) else { return None };
    let net = u32::from(net);
    let broadcast = net | u32::MAX.checked_shr(bits).unwrap_or(0);
    Some(net.saturating_add(1)..=broadcast.saturating_sub(1))
}

/// What kube's `IsValidCIDR` finds wrong with `s`.
pub(crate) fn cidr_faults(s: &str) -> Vec<String> {
    let Some((addr, bits)) = sloppy_cidr(s) else {
        return vec!["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)".into()];
    };
    let (ip, prefix) = s.split_once('/').unwrap_or_default();
    let strict = ip.parse::<IpAddr>().ok().filter(|_| prefix == "0" || !prefix.starts_with('0'));
    let (net, net_bits) = network(addr, bits);
    let fault = match strict {
        None => Some("must not have leading 0s in IP or prefix length"),
        Some(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_some() => Some("must not have an IPv4-mapped IPv6 address"),
        Some(strict) if network(strict, bits).0 != strict => Some("must not have bits set beyond the prefix length"),
        Some(_) => None,
    };
    if let Some(fault) = fault {
        return vec![fault.into()];
    }
    let canonical = format!("{}/{net_bits}", go_ip_string(net));
    match canonical == s {
        true => Vec::new(),
        false => vec![format!("must be in canonical form ({})", crate::structural::go_quote(&canonical))],
    }
}

/// The family of a CIDR kube's sloppy parser reads (IPv4-mapped ones as IPv4); None for others.
fn family(cidr: &str) -> Option<bool> {
    sloppy_cidr(cidr).map(|(addr, bits)| network(addr, bits).0.is_ipv4())
}

/// The causes of an object of either kind ([`judges`]) after its metadata's: a create's, an
/// update's over `old`, or a `status` write's (`status`, which kube judges by its metadata
/// alone).
pub(crate) fn validate(
    info: &ResourceInfo,
    obj: &Map<String, Value>,
    old: Option<&Map<String, Value>>,
    status: bool,
) -> Vec<Cause> {
    let empty = Value::Object(Map::new());
    let spec = obj.get("spec").unwrap_or(&empty);
    let old_spec = old.map(|o| o.get("spec").unwrap_or(&empty));
    match (info.plural.as_str(), old_spec) {
        _ if status => Vec::new(),
        (IP_ADDRESSES, old_spec) => ip_address(spec, old_spec),
        (_, None) => cidr_spec(spec),
        (_, Some(old_spec)) => cidr_update(spec, old_spec),
    }
}

fn cidrs(spec: &Value) -> Vec<String> {
    crate::object::strings(spec.get("cidrs"))
}

/// kube's `validateServiceCIDRSpec` of `spec`.
fn cidr_spec(spec: &Value) -> Vec<Cause> {
    let cidrs = cidrs(spec);
    const AT: &str = "spec.cidrs";
    if cidrs.is_empty() {
        return vec![required(AT.into(), "at least one CIDR required")];
    }
    if cidrs.len() > 2 {
        // The bad value is kube's internal spec, which has no JSON names.
        let shown = format!("{{\"CIDRs\":{}}}", go_json(&Value::from(cidrs.clone())));
        return vec![invalid_value(AT, &shown, "may only hold up to 2 values")];
    }
    let mut causes = Vec::new();
    for (i, cidr) in cidrs.iter().enumerate() {
        for fault in cidr_faults(cidr) {
            causes.push(invalid(format!("{AT}[{i}]"), cidr, &fault));
        }
    }
    if let [a, b] = cidrs.as_slice()
        && let (Some(a), Some(b)) = (family(a), family(b))
        && a == b
    {
        let shown = go_json(&Value::from(cidrs.clone()));
        let detail = "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64";
        causes.push(invalid_value(AT, &shown, detail));
    }
    causes
}

/// kube's `ValidateServiceCIDRUpdate` of `spec` over `old`: the blocks stay, but a single block
/// may gain a second.
fn cidr_update(spec: &Value, old: &Value) -> Vec<Cause> {
    let (now, was) = (cidrs(spec), cidrs(old));
    match (was.len(), now.len()) {
        (w, n) if w == n => (now.iter().zip(&was).enumerate())
            .filter(|(_, (n, w))| n != w)
            .map(|(i, (n, _))| invalid(format!("spec.cidrs[{i}]"), n, IMMUTABLE))
            .collect(),
        (1, 2) => {
            let mut causes = Vec::new();
            if now[0] != was[0] {
                causes.push(invalid("spec.cidrs[0]".into(), &now[0], IMMUTABLE));
            }
            causes.extend(cidr_spec(spec));
            causes
        }
        _ => vec![invalid_value("spec.cidrs", &go_json(&Value::from(now)), IMMUTABLE)],
    }
}

/// kube's `ValidateIPAddress` of `spec` (and `ValidateIPAddressUpdate` over `old`).
fn ip_address(spec: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let parent = spec.get("parentRef").filter(|p| p.is_object());
    match parent {
        None => causes.push(required("spec.parentRef".into(), "")),
        Some(parent) => parent_fields(parent, &mut causes),
    }
    if let Some(old) = old {
        let (now, was) = (parent.map(members), old.get("parentRef").filter(|p| p.is_object()).map(members));
        if now != was {
            let shown = now.map_or_else(|| "null".to_string(), |m| go_parent(&m));
            causes.push(invalid_value("spec.parentRef", &shown, IMMUTABLE));
        }
    }
    causes
}

/// The causes of a parent reference's fields.
fn parent_fields(parent: &Value, causes: &mut Vec<Cause>) {
    let text = |k: &str| parent.get(k).and_then(Value::as_str).unwrap_or("");
    let segment = |k: &str, causes: &mut Vec<Cause>| {
        let v = text(k);
        for fault in crate::object_meta::name_faults(crate::object_meta::NameRule::PathSegment, v, false) {
            causes.push(invalid(format!("spec.parentRef.{k}"), v, &fault));
        }
    };
    // The core group is empty: the group is optional.
    if !text("group").is_empty() {
        for fault in crate::cel_format::dns1123_subdomain(text("group")) {
            causes.push(invalid("spec.parentRef.group".into(), text("group"), &fault));
        }
    }
    for k in ["resource", "name"] {
        match text(k).is_empty() {
            true => causes.push(required(format!("spec.parentRef.{k}"), "")),
            false => segment(k, causes),
        }
    }
    if !text("namespace").is_empty() {
        segment("namespace", causes);
    }
}

/// A parent reference's four members, in kube's order (absent ones empty, as Go holds them).
fn members(parent: &Value) -> [String; 4] {
    ["group", "resource", "namespace", "name"].map(|k| parent.get(k).and_then(Value::as_str).unwrap_or("").to_string())
}

/// A parent reference as Go's `json.Marshal` writes kube's internal struct (no JSON names).
fn go_parent(members: &[String; 4]) -> String {
    let shown: Vec<String> = ["Group", "Resource", "Namespace", "Name"]
        .iter()
        .zip(members)
        .map(|(k, v)| format!("\"{k}\":{}", go_json(&Value::from(v.as_str()))))
        .collect();
    format!("{{{}}}", shown.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_judged_strictly() {
        assert!(ip_faults("10.96.0.10").is_empty());
        assert!(ip_faults("2001:db8::a").is_empty());
        assert_eq!(ip_faults("10.96.0"), ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]);
        assert_eq!(ip_faults("010.96.0.1"), ["must not have leading 0s"]);
        assert_eq!(ip_faults("::ffff:1.2.3.4"), ["must not be an IPv4-mapped IPv6 address"]);
        assert_eq!(ip_faults("2001:db8:0::1"), ["must be in canonical form (\"2001:db8::1\")"]);
        assert_eq!(ip_faults("2001:DB8::1"), ["must be in canonical form (\"2001:db8::1\")"]);
    }

    #[test]
    fn blocks_are_judged_strictly() {
        assert!(cidr_faults("10.96.0.0/12").is_empty());
        assert!(cidr_faults("2001:db8::/64").is_empty());
        assert!(cidr_faults("0.0.0.0/0").is_empty());
        assert_eq!(cidr_faults("10.96.0.0"), ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]);
        assert_eq!(cidr_faults("10.96.0.0/33"), ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]);
        assert_eq!(cidr_faults("010.96.0.0/12"), ["must not have leading 0s in IP or prefix length"]);
        assert_eq!(cidr_faults("10.96.0.0/012"), ["must not have leading 0s in IP or prefix length"]);
        assert_eq!(cidr_faults("::ffff:10.0.0.0/104"), ["must not have an IPv4-mapped IPv6 address"]);
        assert_eq!(cidr_faults("10.96.0.1/12"), ["must not have bits set beyond the prefix length"]);
        assert_eq!(cidr_faults("2001:DB8::/64"), ["must be in canonical form (\"2001:db8::/64\")"]);
    }

    #[test]
    fn a_block_list_holds_one_per_family() {
        let spec = |c: Value| serde_json::json!({ "cidrs": c });
        let messages = |c: Vec<Cause>| c.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect::<Vec<_>>();
        assert_eq!(
            messages(cidr_spec(&spec(serde_json::json!([])))),
            ["spec.cidrs: Required value: at least one CIDR required"]
        );
        assert_eq!(
            messages(cidr_spec(&spec(serde_json::json!(["10.0.0.0/24", "10.1.0.0/24", "fd00::/64"])))),
            [
                "spec.cidrs: Invalid value: {\"CIDRs\":[\"10.0.0.0/24\",\"10.1.0.0/24\",\"fd00::/64\"]}: may only hold up to 2 values"
            ]
        );
        assert_eq!(
            messages(cidr_spec(&spec(serde_json::json!(["10.0.0.0/24", "10.1.0.0/24"])))),
            [
                "spec.cidrs: Invalid value: [\"10.0.0.0/24\",\"10.1.0.0/24\"]: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"
            ]
        );
        assert!(cidr_spec(&spec(serde_json::json!(["10.0.0.0/24", "fd00::/64"]))).is_empty());
        // A single block may gain one of the other family, and nothing else.
        let old = spec(serde_json::json!(["10.0.0.0/24"]));
        assert!(cidr_update(&spec(serde_json::json!(["10.0.0.0/24", "fd00::/64"])), &old).is_empty());
        assert_eq!(
            messages(cidr_update(&spec(serde_json::json!(["10.0.1.0/24"])), &old)),
            ["spec.cidrs[0]: Invalid value: \"10.0.1.0/24\": field is immutable"]
        );
        let dual = spec(serde_json::json!(["10.0.0.0/24", "fd00::/64"]));
        assert_eq!(
            messages(cidr_update(&old, &dual)),
            ["spec.cidrs: Invalid value: [\"10.0.0.0/24\"]: field is immutable"]
        );
    }
}
