//! A Service's cluster IPs and IP families as kube-apiserver's Service store judges them before
//! it allocates (`initIPFamilyFields` with `ValidateServiceClusterIPsRelatedFields`), on a
//! single-stack IPv4 cluster (the server's service range is 10.96.0.0/12):
//! - `clusterIPs` starts with `clusterIP` and is empty without it; `None` alone; addresses that
//!   are IP addresses (as Go's sloppy parser reads them), at most two, one per family, each of
//!   the family `ipFamilies` gives it; families and policies kube knows, each family once;
//! - a single-stack Service has one address and one family; a dual-stack one does not give up
//!   its second address or family unless it becomes single-stack;
//! - only IPv4 is configured: an IPv6 address or family, or `RequireDualStack`, is refused, but
//!   for a headless Service without a selector (kube gives it both families).
//!
//! When these find faults kube answers with them alone, before validating the rest
//! ([`check`]); the same address rules run again among the Service's validation
//! ([`related_fields`]).
//!
//! Invariants: only the spec (and the stored one on update, whose addresses are not parsed
//! again) is read; ExternalName Services have none of these; causes come in kube's order with
//! its paths and messages.

use serde_json::Value;

use crate::pod_dns::parse_ip;
use crate::policy_validation::{duplicate, invalid, required, unsupported};
use crate::structural::{Cause, go_json};
use crate::workload_validation::invalid_value;

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    crate::service_fields::strings(Some(v), key)
}

/// Whether `ip` reads as an IPv4 address (IPv4-mapped IPv6 ones count).
fn is_v4(ip: &str) -> bool {
    match parse_ip(ip) {
        Some(std::net::IpAddr::V4(_)) => true,
        Some(std::net::IpAddr::V6(v6)) => v6.to_ipv4_mapped().is_some(),
        None => false,
    }
}

/// Whether `ip` reads as an IPv6 address that is not IPv4-mapped.
fn is_v6(ip: &str) -> bool {
    parse_ip(ip).is_some() && !is_v4(ip)
}

/// A headless Service without a selector: kube gives it both families.
fn headless_without_selector(spec: &Value) -> bool {
    text(spec, "clusterIP") == "None" && spec.get("selector").and_then(Value::as_object).is_none_or(|s| s.is_empty())
}

/// The causes kube answers alone, before allocating, for the Service spec `spec` (over
/// `old_spec` on an update), defaulted.
pub(crate) fn check(spec: &Value, old_spec: Option<&Value>) -> Vec<Cause> {
    if text(spec, "type") == "ExternalName" {
        return Vec::new();
    }
    let causes = related_fields(spec, old_spec);
    if !causes.is_empty() {
        return causes;
    }
    let mut causes = Vec::new();
    let policy = text(spec, "ipFamilyPolicy");
    let (ips, families) = (strings(spec, "clusterIPs"), strings(spec, "ipFamilies"));
    let shown_policy = go_json(&Value::String(policy.into()));
    if let Some(old_spec) = old_spec
        && policy != "SingleStack"
    {
        let reduced = |now: &[String], before: Vec<String>| !now.is_empty() && now.len() < before.len();
        if reduced(&ips, strings(old_spec, "clusterIPs")) {
            let detail = "must be 'SingleStack' to release the secondary cluster IP";
            causes.push(invalid_value("spec.ipFamilyPolicy", &shown_policy, detail));
        }
        if reduced(&families, strings(old_spec, "ipFamilies")) {
            let detail = "must be 'SingleStack' to release the secondary IP family";
            causes.push(invalid_value("spec.ipFamilyPolicy", &shown_policy, detail));
        }
    }
    if policy == "SingleStack" {
        if ips.len() == 2 {
            let detail = "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified";
            causes.push(invalid_value("spec.ipFamilyPolicy", &shown_policy, detail));
        }
        if families.len() == 2 {
            let detail = "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified";
            causes.push(invalid_value("spec.ipFamilyPolicy", &shown_policy, detail));
        }
    }
    let shown_ips = go_json(&Value::from(ips.clone()));
    for (i, ip) in ips.iter().enumerate().take_while(|(_, ip)| *ip != "None") {
        // An address without a family gives it its own; only IPv4 is configured.
        if i >= families.len() && !is_v4(ip) {
            let at = format!("spec.clusterIPs[{i}]");
            causes.push(invalid_value(&at, &shown_ips, "IPv6 is not configured on this cluster"));
        }
    }
    if !causes.is_empty() || headless_without_selector(spec) {
        return causes;
    }
    if policy == "RequireDualStack" {
        let detail = "this cluster is not configured for dual-stack services";
        causes.push(invalid_value("spec.ipFamilyPolicy", &shown_policy, detail));
    }
    for (i, family) in families.iter().enumerate().filter(|(_, f)| *f != "IPv4") {
        causes.push(invalid(format!("spec.ipFamilies[{i}]"), family, "not configured on this cluster"));
    }
    causes
}

/// kube's `ValidateServiceClusterIPsRelatedFields` of the Service spec `spec` (over `old_spec`).
pub(crate) fn related_fields(spec: &Value, old_spec: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if text(spec, "type") == "ExternalName" {
        return causes;
    }
    let ips = strings(spec, "clusterIPs");
    let shown = go_json(&Value::from(ips.clone()));
    let first = text(spec, "clusterIP");
    if !first.is_empty() {
        if ips.is_empty() {
            causes.push(required("spec.clusterIPs".into(), ""));
        } else if ips[0] != first {
            causes.push(invalid_value("spec.clusterIPs", &shown, "first value must match `clusterIP`"));
        }
    } else if !ips.is_empty() {
        causes.push(invalid_value("spec.clusterIPs", &shown, "must be empty when `clusterIP` is not specified"));
    }
    let families = strings(spec, "ipFamilies");
    for (i, family) in families.iter().enumerate() {
        let at = format!("spec.ipFamilies[{i}]");
        if !matches!(family.as_str(), "IPv4" | "IPv6") {
            causes.push(unsupported(at.clone(), family, &["IPv4", "IPv6"]));
        }
        if families[..i].contains(family) {
            causes.push(duplicate(at, family));
        }
    }
    if let Some(policy) = spec.get("ipFamilyPolicy").and_then(Value::as_str)
        && !matches!(policy, "SingleStack" | "PreferDualStack" | "RequireDualStack")
    {
        let supported = ["PreferDualStack", "RequireDualStack", "SingleStack"];
        causes.push(unsupported("spec.ipFamilyPolicy".into(), policy, &supported));
    }
    let before = old_spec.map(|s| strings(s, "clusterIPs")).unwrap_or_default();
    let mut bad_ips = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == "None" {
            if ips.len() > 1 {
                bad_ips = true;
                causes.push(invalid_value("spec.clusterIPs", &shown, "'None' must be the first and only value"));
            }
            continue;
        }
        if !before.contains(ip) && parse_ip(ip).is_none() {
            bad_ips = true;
            causes.push(invalid(
                format!("spec.clusterIPs[{i}]"),
                ip,
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    if ips.len() > 2 {
        causes.push(invalid_value("spec.clusterIPs", &shown, "may only hold up to 2 values"));
    }
    if bad_ips {
        return causes;
    }
    if ips.len() > 1 && !(ips.iter().any(|ip| is_v4(ip)) && ips.iter().any(|ip| is_v6(ip))) {
        causes.push(invalid_value("spec.clusterIPs", &shown, "may specify no more than one IP for each IP family"));
    }
    if ips != ["None"] {
        for (i, (family, ip)) in families.iter().zip(&ips).enumerate() {
            let wrong = match family.as_str() {
                "IPv4" => is_v6(ip),
                "IPv6" => !is_v6(ip),
                _ => false,
            };
            if wrong {
                let detail = format!("expected an {family} value as indicated by `ipFamilies[{i}]`");
                causes.push(invalid(format!("spec.clusterIPs[{i}]"), ip, &detail));
            }
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn checked(spec: Value) -> Vec<String> {
        check(&spec, None).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn sound_addresses_pass() {
        for spec in [
            json!({"type": "ClusterIP", "clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.20"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}),
            json!({"type": "ClusterIP", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "PreferDualStack"}),
            json!({"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "RequireDualStack"}),
            json!({"type": "ExternalName", "externalName": "db.example.com"}),
        ] {
            assert_eq!(checked(spec.clone()), Vec::<String>::new(), "{spec}");
        }
    }

    #[test]
    fn faults_are_kube_s() {
        let cases = [
            (
                json!({"clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.21"]}),
                "spec.clusterIPs: Invalid value: [\"10.96.0.21\"]: first value must match `clusterIP`",
            ),
            (
                json!({"clusterIPs": ["10.96.0.20"]}),
                "spec.clusterIPs: Invalid value: [\"10.96.0.20\"]: must be empty when `clusterIP` is not specified",
            ),
            (
                json!({"clusterIP": "None", "clusterIPs": ["None", "10.96.0.5"]}),
                "spec.clusterIPs: Invalid value: [\"None\",\"10.96.0.5\"]: 'None' must be the first and only value",
            ),
            (
                json!({"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"], "ipFamilies": ["IPv6"], "ipFamilyPolicy": "SingleStack"}),
                "spec.clusterIPs[0]: Invalid value: \"10.96.0.5\": expected an IPv6 value as indicated by `ipFamilies[0]`",
            ),
            (
                json!({"ipFamilies": ["IPv6"], "ipFamilyPolicy": "SingleStack"}),
                "spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster",
            ),
            (
                json!({"ipFamilies": ["IPv4"], "ipFamilyPolicy": "RequireDualStack", "selector": {"app": "a"}}),
                "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services",
            ),
            (
                json!({"ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "SingleStack"}),
                "spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ),
            (
                json!({"clusterIP": "fd00::10", "clusterIPs": ["fd00::10"], "ipFamilyPolicy": "SingleStack"}),
                "spec.clusterIPs[0]: Invalid value: [\"fd00::10\"]: IPv6 is not configured on this cluster",
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(checked(spec.clone()), [want], "{spec}");
        }
        let spec = json!({"clusterIP": "1.2.3", "clusterIPs": ["1.2.3"], "ipFamilies": ["IPv5"], "ipFamilyPolicy": "SingleStack"});
        assert_eq!(
            checked(spec),
            [
                "spec.ipFamilies[0]: Unsupported value: \"IPv5\": supported values: \"IPv4\", \"IPv6\"",
                "spec.clusterIPs[0]: Invalid value: \"1.2.3\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ]
        );
        let old = json!({"clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "RequireDualStack"});
        let now = json!({"clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "RequireDualStack"});
        let causes: Vec<String> =
            check(&now, Some(&old)).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            causes,
            [
                "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": must be 'SingleStack' to release the secondary IP family"
            ]
        );
    }
}
