//! A pod's names and name resolution as kube-apiserver judges them: its DNS config
//! (`validatePodDNSConfig`), host aliases (`ValidateHostAliases`) and host name override
//! (`validatePodHostName`).
//!
//! - DNS config: with `dnsPolicy: None` a config with at least one name server is required; at
//!   most 3 name servers, each an IP address; at most 32 search domains of at most 2048
//!   characters in all, each a DNS subdomain that may have underscores and a trailing dot (or
//!   just `.`); options with names.
//! - Host aliases: an IP address each, host names that are DNS subdomains.
//! - Host name override: not with `setHostnameAsFQDN` nor on the host network, at most 64 bytes,
//!   a DNS subdomain.
//!
//! Invariants: only the spec is read; IP addresses are read as kube-apiserver v1.35 reads them by
//! default (IPv4 octets with leading zeros and IPv4-mapped IPv6 addresses accepted); causes come
//! in kube's order with its paths and messages.

use serde_json::Value;

use crate::admission_policy::strings;
use crate::pod_spec_validation::list;
use crate::pod_validation::forbidden;
use crate::policy_validation::{invalid, required};
use crate::structural::Cause;
use crate::workload_validation::invalid_value;

/// kube's message for a value that is not an IP address.
pub(crate) const NOT_AN_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

/// The causes for the DNS config of the pod spec `spec` at `at`.
pub(crate) fn dns_config(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    let config = spec.get("dnsConfig").filter(|c| c.is_object());
    let nameservers = config.map(|c| strings(c, "nameservers")).unwrap_or_default();
    if spec.get("dnsPolicy").and_then(Value::as_str) == Some("None") {
        if config.is_none() {
            causes.push(required(format!("{at}.dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None"));
            return;
        }
        if nameservers.is_empty() {
            causes.push(required(
                format!("{at}.dnsConfig.nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            ));
            return;
        }
    }
    let Some(config) = config else { return };
    let at = format!("{at}.dnsConfig");
    if nameservers.len() > 3 {
        let shown = crate::webhook_configuration::go_strings(&nameservers);
        causes.push(invalid_value(&format!("{at}.nameservers"), &shown, "must not have more than 3 nameservers"));
    }
    for (i, ns) in nameservers.iter().enumerate() {
        if !is_ip(ns) {
            causes.push(invalid(format!("{at}.nameservers[{i}]"), ns, NOT_AN_IP));
        }
    }
    let searches = strings(config, "searches");
    let shown = || crate::webhook_configuration::go_strings(&searches);
    if searches.len() > 32 {
        causes.push(invalid_value(&format!("{at}.searches"), &shown(), "must not have more than 32 search paths"));
    }
    if searches.join(" ").len() > 2048 {
        causes.push(invalid_value(
            &format!("{at}.searches"),
            &shown(),
            "must not have more than 2048 characters (including spaces) in the search list",
        ));
    }
    for (i, search) in searches.iter().enumerate() {
        if *search == "." {
            continue;
        }
        let search = search.strip_suffix('.').unwrap_or(search);
        for fault in search_faults(search) {
            causes.push(invalid(format!("{at}.searches[{i}]"), search, fault));
        }
    }
    for (i, option) in list(config, "options").iter().enumerate() {
        if option.get("name").and_then(Value::as_str).unwrap_or("").is_empty() {
            causes.push(required(format!("{at}.options[{i}]"), "must not be empty"));
        }
    }
}

/// apimachinery's `IsDNS1123SubdomainWithUnderscore`.
fn search_faults(s: &str) -> Vec<&'static str> {
    let mut faults = Vec::new();
    if s.len() > 253 {
        faults.push("must be no more than 253 characters");
    }
    let label_ok = |label: &str| {
        let b = label.strip_prefix('_').unwrap_or(label).as_bytes();
        let end = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        !b.is_empty() && end(&b[0]) && end(&b[b.len() - 1]) && b.iter().all(|c| end(c) || *c == b'-' || *c == b'_')
    };
    if !s.split('.').all(label_ok) {
        faults.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and \
             must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is \
             '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')",
        );
    }
    faults
}

/// Whether `s` is an IP address as Go's sloppy parser reads one (kube's default for these
/// fields): see [`parse_ip`].
pub(crate) fn is_ip(s: &str) -> bool {
    parse_ip(s).is_some()
}

/// `s` read as Go's sloppy parser reads an IP address: the octets of an IPv4 address, alone or
/// ending an IPv6 one, may have leading zeros.
pub(crate) fn parse_ip(s: &str) -> Option<std::net::IpAddr> {
    if let Ok(ip) = s.parse::<std::net::IpAddr>() {
        return Some(ip);
    }
    // The dotted quad starts the text or follows its last colon.
    let (head, quad) = s.rsplit_once(':').map_or(("", s), |(h, q)| (&s[..h.len() + 1], q));
    let octets: Vec<&str> = quad.split('.').collect();
    let octet = |o: &&str| !o.is_empty() && o.bytes().all(|b| b.is_ascii_digit());
    if octets.len() != 4 || !octets.iter().all(octet) {
        return None;
    }
    let trimmed: Vec<&str> =
        octets.iter().map(|o| o.trim_start_matches('0')).map(|o| if o.is_empty() { "0" } else { o }).collect();
    format!("{head}{}", trimmed.join(".")).parse::<std::net::IpAddr>().ok()
}

/// The causes for the host aliases of the pod spec `spec` at `at`.
pub(crate) fn host_aliases(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    for (i, alias) in list(spec, "hostAliases").iter().enumerate() {
        let at = format!("{at}.hostAliases[{i}]");
        let ip = alias.get("ip").and_then(Value::as_str).unwrap_or("");
        if !is_ip(ip) {
            causes.push(invalid(format!("{at}.ip"), ip, NOT_AN_IP));
        }
        for (j, name) in strings(alias, "hostnames").iter().enumerate() {
            for fault in crate::cel_format::dns1123_subdomain(name) {
                causes.push(invalid(format!("{at}.hostnames[{j}]"), name, &fault));
            }
        }
    }
}

/// The causes for the host name override of the pod spec `spec` at `at`, when it has one.
pub(crate) fn hostname_override(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    let Some(name) = spec.get("hostnameOverride").and_then(Value::as_str) else { return };
    let field = format!("{at}.hostnameOverride");
    if spec.get("setHostnameAsFQDN") == Some(&Value::Bool(true)) {
        causes.push(forbidden(field.clone(), "may not be specified when setHostnameAsFQDN is true"));
    }
    if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
        causes.push(forbidden(field.clone(), "may not be specified when hostNetwork is true"));
    }
    if name.len() > 64 {
        causes.push(Cause {
            reason: "FieldValueTooLong",
            message: "Too long: may not be more than 64 bytes".into(),
            field: field.clone(),
        });
    }
    for fault in crate::cel_format::dns1123_subdomain(name) {
        causes.push(invalid(field.clone(), name, &fault));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged(spec: Value) -> Vec<String> {
        let mut causes = Vec::new();
        dns_config(&spec, "spec", &mut causes);
        host_aliases(&spec, "spec", &mut causes);
        hostname_override(&spec, "spec", &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn sound_names_pass() {
        let spec = json!({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.96.0.10", "2001:db8::1", "010.001.002.003"],
            "searches": ["ns1.svc.cluster.local", "_srv.example.com", "example.org.", "."],
            "options": [{"name": "ndots", "value": "2"}]},
            "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["foo.local", "bar.local"]}, {"ip": "::ffff:1.2.3.4"}],
            "hostnameOverride": "web-0.example"});
        assert_eq!(judged(spec), Vec::<String>::new());
    }

    #[test]
    fn faults_are_kube_s() {
        assert_eq!(
            judged(json!({"dnsPolicy": "None"})),
            ["spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"]
        );
        assert_eq!(
            judged(json!({"dnsPolicy": "None", "dnsConfig": {"searches": ["Bad"]}})),
            [
                "spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"
            ]
        );
        let underscore = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')";
        let spec = json!({"dnsPolicy": "ClusterFirst", "dnsConfig": {
            "nameservers": ["1.1.1.1", "dns.example", "3.3.3.3", "256.1.1.1"],
            "searches": ["Example.com", "..", ""], "options": [{"value": "1"}]},
            "hostAliases": [{"hostnames": ["Foo"]}], "hostNetwork": true, "setHostnameAsFQDN": true,
            "hostnameOverride": "x".repeat(65)});
        let subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        assert_eq!(
            judged(spec),
            [
                "spec.dnsConfig.nameservers: Invalid value: [\"1.1.1.1\",\"dns.example\",\"3.3.3.3\",\"256.1.1.1\"]: must not have more than 3 nameservers".to_string(),
                format!("spec.dnsConfig.nameservers[1]: Invalid value: \"dns.example\": {NOT_AN_IP}"),
                format!("spec.dnsConfig.nameservers[3]: Invalid value: \"256.1.1.1\": {NOT_AN_IP}"),
                format!("spec.dnsConfig.searches[0]: Invalid value: \"Example.com\": {underscore}"),
                format!("spec.dnsConfig.searches[1]: Invalid value: \".\": {underscore}"),
                format!("spec.dnsConfig.searches[2]: Invalid value: \"\": {underscore}"),
                "spec.dnsConfig.options[0]: Required value: must not be empty".into(),
                format!("spec.hostAliases[0].ip: Invalid value: \"\": {NOT_AN_IP}"),
                format!("spec.hostAliases[0].hostnames[0]: Invalid value: \"Foo\": {subdomain}"),
                "spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true".into(),
                "spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true".into(),
                "spec.hostnameOverride: Too long: may not be more than 64 bytes".into(),
            ]
        );
    }

    #[test]
    fn ip_addresses_are_read_as_go_reads_them_sloppily() {
        for ip in ["10.0.0.1", "010.000.000.001", "::1", "::ffff:10.0.0.1", "2001:db8::ffff", "::ffff:010.001.002.003"]
        {
            assert!(is_ip(ip), "{ip}");
        }
        for ip in [
            "",
            "10.0.0",
            "10.0.0.256",
            "10.0.0.1/8",
            "fe80::1%eth0",
            "1.2.3.4.5",
            "0x1.2.3.4",
            "::ffff:1.2.3.0256",
            "1::2::010.0.0.1",
        ] {
            assert!(!is_ip(ip), "{ip}");
        }
    }
}
