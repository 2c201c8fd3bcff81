//! A security context's Windows options and a pod's HostProcess containers, judged as
//! kube-apiserver judges them (`validateWindowsSecurityContextOptions`,
//! `validateWindowsHostProcessPod`), whatever the pod's OS:
//! - a GMSA credential spec name that is a DNS subdomain, a credential spec that is not empty and
//!   under 64 KiB, a `runAsUserName` of the form `[domain\]user` with a NetBIOS or DNS domain and
//!   a user name Windows accepts;
//! - a pod with a HostProcess container has only HostProcess containers (a container's setting
//!   agrees with the pod's when both are given) and runs on the host network.
//!
//! Invariants: only the spec is read; causes come in kube's order with its paths and messages,
//! pointer values shown as Go's JSON of them.

use serde_json::Value;

use crate::pod_spec_validation::list;
use crate::structural::{Cause, go_json};
use crate::workload_validation::invalid_value;

/// The causes for the Windows options `options` at `at` (a pod's or a container's).
pub(crate) fn validate(options: Option<&Value>, at: &str, causes: &mut Vec<Cause>) {
    let Some(options) = options.filter(|o| o.is_object()) else { return };
    let text = |key: &str| options.get(key).and_then(Value::as_str);
    if let Some(name) = text("gmsaCredentialSpecName") {
        for fault in crate::cel_format::dns1123_subdomain(name) {
            causes.push(invalid_value(&format!("{at}.gmsaCredentialSpecName"), &go_json(&name.into()), &fault));
        }
    }
    if let Some(spec) = text("gmsaCredentialSpec") {
        let field = format!("{at}.gmsaCredentialSpec");
        if spec.is_empty() {
            causes.push(invalid_value(&field, "\"\"", "gmsaCredentialSpec cannot be an empty string"));
        } else if spec.len() > 64 * 1024 {
            causes.push(invalid_value(&field, &go_json(&spec.into()), "gmsaCredentialSpec size must be under 64 KiB"));
        }
    }
    if let Some(name) = text("runAsUserName") {
        let field = format!("{at}.runAsUserName");
        let shown = go_json(&name.into());
        for fault in user_name_faults(name) {
            causes.push(invalid_value(&field, &shown, fault));
        }
    }
}

/// What kube finds wrong with a Windows `runAsUserName`, in its order.
fn user_name_faults(name: &str) -> Vec<&'static str> {
    if name.is_empty() {
        return vec!["runAsUserName cannot be an empty string"];
    }
    if name.chars().any(|c| c.is_ascii_control()) {
        return vec!["runAsUserName cannot contain control characters"];
    }
    let parts: Vec<&str> = name.split('\\').collect();
    let (domain, user) = match parts.as_slice() {
        [user] => (None, *user),
        [domain, user] => (Some(*domain), *user),
        _ => return vec!["runAsUserName cannot contain more than one backslash"],
    };
    let mut faults = Vec::new();
    if domain.is_some_and(|d| d.len() >= 256) {
        faults.push("runAsUserName's Domain length must be under 256 characters");
    }
    if let Some(domain) = domain
        && !netbios_domain(domain)
        && !dns_domain(domain)
    {
        faults.push("runAsUserName's Domain doesn't match the NetBios nor the DNS format");
    }
    if user.is_empty() {
        faults.push("runAsUserName's User cannot be empty");
    } else if user.len() > 104 {
        faults.push("runAsUserName's User length must not be longer than 104 characters");
    }
    if !user.is_empty() && user.chars().all(|c| c == '.' || c == ' ') {
        faults.push("runAsUserName's User cannot contain only periods or spaces");
    }
    if user.chars().any(|c| "\"/\\:;|=,+*?<>@[]".contains(c)) {
        faults.push("runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]");
    }
    faults
}

/// A NetBIOS domain name: 1 to 15 characters, none of `\/:*?"<>|`, not starting with a dot.
fn netbios_domain(domain: &str) -> bool {
    let forbidden = |c: char| "\\/:*?\"<>|".contains(c);
    let mut chars = domain.chars();
    chars.next().is_some_and(|first| first != '.' && !forbidden(first))
        && domain.chars().count() <= 15
        && !domain.chars().any(forbidden)
}

/// A DNS domain name: dot-separated labels of letters, digits and inner hyphens, 1 to 63 each.
fn dns_domain(domain: &str) -> bool {
    domain.split('.').all(|label| {
        let b = label.as_bytes();
        (1..=63).contains(&b.len())
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
    })
}

/// The HostProcess rules of the pod spec `spec` at `at`: containers visited init, regular,
/// ephemeral.
pub(crate) fn host_process(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    let flag = |options: Option<&Value>| options.and_then(|o| o.get("hostProcess")).and_then(Value::as_bool);
    let pod = flag(spec.pointer("/securityContext/windowsOptions"));
    let (mut host_process, mut all) = (false, true);
    for key in crate::pod_os::CONTAINER_LISTS {
        for (i, c) in list(spec, key).iter().enumerate() {
            let own = flag(c.pointer("/securityContext/windowsOptions"));
            if let (Some(pod), Some(own)) = (pod, own)
                && pod != own
            {
                causes.push(Cause {
                    reason: "FieldValueInvalid",
                    message: format!(
                        "Invalid value: {own}: pod hostProcess value must be identical if both are specified, was {pod}"
                    ),
                    field: format!("{at}.{key}[{i}].securityContext.windowsOptions.hostProcess"),
                });
            }
            let is = own.or(pod).unwrap_or(false);
            host_process |= is;
            all &= is;
        }
    }
    if !host_process {
        return;
    }
    if !all {
        causes.push(invalid_value(
            at,
            "\"\"",
            "If pod contains any hostProcess containers then all containers must be HostProcess containers",
        ));
    }
    if spec.get("hostNetwork") != Some(&Value::Bool(true)) {
        causes.push(invalid_value(
            &format!("{at}.hostNetwork"),
            "false",
            "hostNetwork must be true if pod contains any hostProcess containers",
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged(options: Value) -> Vec<String> {
        let mut causes = Vec::new();
        validate(Some(&options), "spec.securityContext.windowsOptions", &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn sound_options_pass() {
        for name in ["ContainerUser", "NT AUTHORITY\\NETWORK SERVICE", "corp.example.com\\svc-app", "user.name"] {
            assert_eq!(
                judged(json!({"runAsUserName": name, "gmsaCredentialSpecName": "webapp1"})),
                Vec::<String>::new()
            );
        }
    }

    #[test]
    fn user_names_are_judged_as_kube_judges_them() {
        let at = "spec.securityContext.windowsOptions.runAsUserName";
        let cases = [
            ("", "runAsUserName cannot be an empty string"),
            ("a\u{7}b", "runAsUserName cannot contain control characters"),
            ("a\\b\\c", "runAsUserName cannot contain more than one backslash"),
            ("\\user", "runAsUserName's Domain doesn't match the NetBios nor the DNS format"),
            ("dom\\", "runAsUserName's User cannot be empty"),
            (". .", "runAsUserName's User cannot contain only periods or spaces"),
            ("us@er", "runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]"),
        ];
        for (name, fault) in cases {
            let shown = go_json(&name.into());
            assert_eq!(judged(json!({"runAsUserName": name})), [format!("{at}: Invalid value: {shown}: {fault}")]);
        }
        let long = format!("{}\\{}", "d".repeat(256), "u".repeat(105));
        let faults = judged(json!({"runAsUserName": long}));
        let details: Vec<&str> = faults.iter().map(|f| f.rsplit(": ").next().unwrap_or("")).collect();
        assert_eq!(
            details,
            [
                "runAsUserName's Domain length must be under 256 characters",
                "runAsUserName's Domain doesn't match the NetBios nor the DNS format",
                "runAsUserName's User length must not be longer than 104 characters",
            ]
        );
    }

    #[test]
    fn credential_specs_are_judged() {
        assert_eq!(
            judged(json!({"gmsaCredentialSpecName": "Web", "gmsaCredentialSpec": ""})),
            [
                "spec.securityContext.windowsOptions.gmsaCredentialSpecName: Invalid value: \"Web\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.securityContext.windowsOptions.gmsaCredentialSpec: Invalid value: \"\": gmsaCredentialSpec cannot be an empty string",
            ]
        );
    }

    #[test]
    fn host_process_pods_are_all_host_process_on_the_host_network() {
        let judged = |spec: Value| {
            let mut causes = Vec::new();
            host_process(&spec, "spec", &mut causes);
            causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect::<Vec<_>>()
        };
        let hp = |v: bool| json!({"windowsOptions": {"hostProcess": v}});
        let spec = json!({"securityContext": hp(true), "hostNetwork": true,
            "containers": [{"name": "a"}, {"name": "b", "securityContext": hp(true)}]});
        assert_eq!(judged(spec), Vec::<String>::new());
        let spec = json!({"securityContext": hp(true),
            "initContainers": [{"name": "i", "securityContext": hp(false)}], "containers": [{"name": "a"}]});
        assert_eq!(
            judged(spec),
            [
                "spec.initContainers[0].securityContext.windowsOptions.hostProcess: Invalid value: false: pod hostProcess value must be identical if both are specified, was true",
                "spec: Invalid value: \"\": If pod contains any hostProcess containers then all containers must be HostProcess containers",
                "spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers",
            ]
        );
        assert_eq!(judged(json!({"containers": [{"name": "a", "securityContext": hp(false)}]})), Vec::<String>::new());
    }
}
