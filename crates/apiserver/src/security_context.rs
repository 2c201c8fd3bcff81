//! Security contexts judged as kube-apiserver's validation judges them: a pod's
//! (`validatePodSpecSecurityContext`) and each container's (`ValidateSecurityContext`).
//!
//! - A pod's: user and group IDs in 0..=2147483647 (fsGroup, runAsUser, runAsGroup, each
//!   supplemental group), `shareProcessNamespace` not with `hostPID`, sysctls (names in kube's
//!   grammar, each once, no network sysctl on the host network nor IPC sysctl on the host IPC
//!   namespace), fsGroup change and supplemental group policies kube knows, the seccomp and
//!   AppArmor profiles, the Windows options ([`crate::windows_options`]) and an SELinux change
//!   policy of `Recursive` (the only one kube-apiserver v1.35 allows a new pod by default).
//! - A container's: user and group IDs, a proc mount kube knows (`Unmasked` only in a user
//!   namespace, `hostUsers: false`), the seccomp profile, no `allowPrivilegeEscalation: false`
//!   with `privileged` or with `CAP_SYS_ADMIN`, the Windows options and the AppArmor profile.
//!   Privileged containers are allowed, as by a kube-apiserver started with
//!   `--allow-privileged=true` (envtest, kind, kubeadm).
//!
//! Invariants: only the spec is read; causes come in kube's order with its paths, values and
//! messages; fields kube does not judge (capability names, SELinux options, `runAsNonRoot`,
//! sysctl values) are not judged.

use serde_json::Value;

use crate::pod_validation::number;
use crate::policy_validation::{duplicate, invalid, required, unsupported};
use crate::structural::{Cause, go_json};

/// apimachinery's message for a user or group ID out of range.
const ID_RANGE: &str = "must be between 0 and 2147483647, inclusive";

/// The causes for the pod security context of `spec` (at `at`, `spec` or `spec.template.spec`).
pub(crate) fn pod(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    // The host namespace fields make a pod security context of kube's internal type even when
    // the pod has none.
    let empty = Value::Object(serde_json::Map::new());
    let sc = spec.get("securityContext").filter(|s| s.is_object()).unwrap_or(&empty);
    let sc_at = format!("{at}.securityContext");
    for key in ["fsGroup", "runAsUser", "runAsGroup"] {
        id(sc, key, &sc_at, causes);
    }
    for (g, group) in sc.get("supplementalGroups").and_then(Value::as_array).into_iter().flatten().enumerate() {
        if let Some(n) = group.as_i64().filter(|n| !(0..=i64::from(i32::MAX)).contains(n)) {
            causes.push(number(format!("{sc_at}.supplementalGroups[{g}]"), n, ID_RANGE));
        }
    }
    let flag = |key: &str| spec.get(key) == Some(&Value::Bool(true));
    if flag("shareProcessNamespace") && flag("hostPID") {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: "Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled".into(),
            field: format!("{sc_at}.shareProcessNamespace"),
        });
    }
    sysctls(sc, flag("hostNetwork"), flag("hostIPC"), &sc_at, causes);
    one_of(sc, "fsGroupChangePolicy", &sc_at, &["Always", "OnRootMismatch"], causes);
    seccomp(sc.get("seccompProfile"), &format!("{sc_at}.seccompProfile"), causes);
    crate::windows_options::validate(sc.get("windowsOptions"), &format!("{sc_at}.windowsOptions"), causes);
    app_armor(sc.get("appArmorProfile"), &format!("{sc_at}.appArmorProfile"), causes);
    one_of(sc, "supplementalGroupsPolicy", &sc_at, &["Merge", "Strict"], causes);
    one_of(sc, "seLinuxChangePolicy", &sc_at, &["Recursive"], causes);
}

/// Whether the pod of `spec` runs in the host's user namespace: unless `hostUsers` is `false`.
pub(crate) fn host_users(spec: &Value) -> bool {
    spec.get("hostUsers") != Some(&Value::Bool(false))
}

/// The causes for the security context of the container `c` at `path`; `host_users` is
/// [`host_users`] of its pod.
pub(crate) fn container(c: &Value, host_users: bool, path: &str, causes: &mut Vec<Cause>) {
    let Some(sc) = c.get("securityContext").filter(|s| s.is_object()) else { return };
    let at = format!("{path}.securityContext");
    for key in ["runAsUser", "runAsGroup"] {
        id(sc, key, &at, causes);
    }
    match sc.get("procMount").and_then(Value::as_str) {
        None | Some("Default") => {}
        Some("Unmasked") if host_users => {
            causes.push(invalid(format!("{at}.procMount"), "Unmasked", "`hostUsers` must be false to use `Unmasked`"))
        }
        Some("Unmasked") => {}
        Some(other) => causes.push(unsupported(format!("{at}.procMount"), other, &["Default", "Unmasked"])),
    }
    seccomp(sc.get("seccompProfile"), &format!("{at}.seccompProfile"), causes);
    if sc.get("allowPrivilegeEscalation") == Some(&Value::Bool(false)) {
        let shown = go_security_context(sc);
        let whole = |detail: &str| Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {shown}: {detail}"),
            field: at.clone(),
        };
        if sc.get("privileged") == Some(&Value::Bool(true)) {
            causes.push(whole("cannot set `allowPrivilegeEscalation` to false and `privileged` to true"));
        }
        let added = sc.pointer("/capabilities/add").and_then(Value::as_array).into_iter().flatten();
        for _ in added.filter(|c| c.as_str() == Some("CAP_SYS_ADMIN")) {
            causes.push(whole("cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"));
        }
    }
    crate::windows_options::validate(sc.get("windowsOptions"), &format!("{at}.windowsOptions"), causes);
    app_armor(sc.get("appArmorProfile"), &format!("{at}.appArmorProfile"), causes);
}

/// A user or group ID member `key` of `sc`, when set.
fn id(sc: &Value, key: &str, at: &str, causes: &mut Vec<Cause>) {
    if let Some(n) = sc.get(key).and_then(Value::as_i64).filter(|n| !(0..=i64::from(i32::MAX)).contains(n)) {
        causes.push(number(format!("{at}.{key}"), n, ID_RANGE));
    }
}

/// A member `key` of `m` that, when set, is one of `supported` (in the order kube lists them).
fn one_of(m: &Value, key: &str, at: &str, supported: &[&str], causes: &mut Vec<Cause>) {
    if let Some(v) = m.get(key).and_then(Value::as_str)
        && !supported.contains(&v)
    {
        causes.push(unsupported(format!("{at}.{key}"), v, supported));
    }
}

/// kube's sysctl name grammar: segments of `[a-z0-9]([-_a-z0-9]*[a-z0-9])?` joined by `.` or `/`.
const SYSCTL_PATTERN: &str = "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";

/// The pod's sysctls: each named as kube's grammar allows, once, and not in a namespace the pod
/// shares with its host.
fn sysctls(sc: &Value, host_network: bool, host_ipc: bool, at: &str, causes: &mut Vec<Cause>) {
    let mut seen: Vec<&str> = Vec::new();
    for (i, s) in sc.get("sysctls").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let field = format!("{at}.sysctls[{i}].name");
        let name = s.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(required(field.clone(), ""));
        } else if !sysctl_name_ok(name) {
            let detail = format!("must have at most 253 characters and match regex {SYSCTL_PATTERN}");
            causes.push(invalid(field.clone(), name, &detail));
        } else if seen.contains(&name) {
            causes.push(duplicate(field.clone(), name));
        }
        match sysctl_namespace(name) {
            Some(Namespace::Net) if host_network => {
                causes.push(invalid(field, name, "may not be specified when 'hostNetwork' is true"))
            }
            Some(Namespace::Ipc) if host_ipc => {
                causes.push(invalid(field, name, "may not be specified when 'hostIPC' is true"))
            }
            _ => {}
        }
        seen.push(name);
    }
}

/// Whether `name` is at most 253 bytes and matches [`SYSCTL_PATTERN`].
fn sysctl_name_ok(name: &str) -> bool {
    let segment_ok = |s: &str| {
        let b = s.as_bytes();
        let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c == b'_';
        let end = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        !b.is_empty() && end(&b[0]) && end(&b[b.len() - 1]) && b.iter().all(inner)
    };
    name.len() <= 253 && name.split(['.', '/']).all(segment_ok)
}

/// The kernel namespaces a sysctl can belong to that a pod may share with its host.
#[derive(PartialEq, Eq)]
enum Namespace {
    Net,
    Ipc,
}

/// The namespace of the sysctl `name` (written with dots or, from its first separator on,
/// slashes), up to any `*`; none for sysctls of neither.
fn sysctl_namespace(name: &str) -> Option<Namespace> {
    let normalized: String = if name.find(['.', '/']).is_some_and(|i| name.as_bytes()[i] == b'/') {
        name.chars()
            .map(|c| {
                if c == '/' {
                    '.'
                } else if c == '.' {
                    '/'
                } else {
                    c
                }
            })
            .collect()
    } else {
        name.to_string()
    };
    let name = normalized.split('*').next().unwrap_or("");
    const IPC: &[&str] = &[
        "kernel.sem",
        "kernel.shmall",
        "kernel.shmmax",
        "kernel.shmmni",
        "kernel.shm_rmid_forced",
        "kernel.shm",
        "kernel.msgmax",
        "kernel.msgmnb",
        "kernel.msgmni",
        "kernel.msg",
    ];
    if IPC.contains(&name) || name.starts_with("fs.mqueue.") {
        Some(Namespace::Ipc)
    } else if name.starts_with("net.") {
        Some(Namespace::Net)
    } else {
        None
    }
}

/// The profile types seccomp and AppArmor profiles share, in the order kube lists them.
const PROFILE_TYPES: &[&str] = &["Localhost", "RuntimeDefault", "Unconfined"];

/// A seccomp profile at `at`, when set: a type kube knows; a local profile only with `Localhost`
/// (and then required), a relative path without `..`.
fn seccomp(profile: Option<&Value>, at: &str, causes: &mut Vec<Cause>) {
    let Some(profile) = profile.filter(|p| p.is_object()) else { return };
    let kind = profile.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "" => causes.push(required(format!("{at}.type"), "type is required when seccompProfile is set")),
        k if PROFILE_TYPES.contains(&k) => {}
        other => causes.push(unsupported(format!("{at}.type"), other, PROFILE_TYPES)),
    }
    let local = profile.get("localhostProfile").and_then(Value::as_str);
    let field = format!("{at}.localhostProfile");
    match (kind, local) {
        ("Localhost", None) => causes.push(required(field, "must be set when seccomp type is Localhost")),
        ("Localhost", Some(path)) => {
            if path.starts_with('/') {
                causes.push(invalid(field.clone(), path, "must be a relative path"));
            }
            if path.split('/').any(|part| part == "..") {
                causes.push(invalid(field, path, "must not contain '..'"));
            }
        }
        (_, Some(path)) => {
            let shown =
                format!("{{\"Type\":{},\"LocalhostProfile\":{}}}", go_json(&kind.into()), go_json(&path.into()));
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: format!("Invalid value: {shown}: can only be set when seccomp type is Localhost"),
                field,
            });
        }
        (_, None) => {}
    }
}

/// An AppArmor profile at `at`, when set: a type kube knows; a local profile only with
/// `Localhost` (and then required, unpadded and at most 4095 bytes).
fn app_armor(profile: Option<&Value>, at: &str, causes: &mut Vec<Cause>) {
    let Some(profile) = profile.filter(|p| p.is_object()) else { return };
    let local = profile.get("localhostProfile").and_then(Value::as_str);
    let field = format!("{at}.localhostProfile");
    match profile.get("type").and_then(Value::as_str).unwrap_or("") {
        "Localhost" => match local {
            None => causes.push(required(field, "must be set when AppArmor type is Localhost")),
            Some(path) => {
                if path.trim() != path {
                    causes.push(invalid(field.clone(), path, "must not be padded with whitespace"));
                } else if path.is_empty() {
                    causes.push(required(field.clone(), "must be set when AppArmor type is Localhost"));
                }
                if path.len() > 4095 {
                    causes.push(Cause {
                        reason: "FieldValueTooLong",
                        message: "Too long: may not be more than 4095 bytes".into(),
                        field,
                    });
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(path) = local {
                causes.push(invalid(field, path, "can only be set when AppArmor type is Localhost"));
            }
        }
        "" => causes.push(required(format!("{at}.type"), "type is required when appArmorProfile is set")),
        other => causes.push(unsupported(format!("{at}.type"), other, PROFILE_TYPES)),
    }
}

/// The shape of a field of kube's internal security context types, for rendering one as Go's
/// `json.Marshal` writes it (Go's field names, every field, nil pointers as `null`).
enum Go {
    /// A pointer to a scalar, or a slice.
    Pointer,
    /// A string that is not a pointer (empty when unset).
    Text,
    /// A pointer to a struct with these fields: Go's name, the JSON name, the shape.
    Struct(&'static [(&'static str, &'static str, Go)]),
}

const PROFILE: Go = Go::Struct(&[("Type", "type", Go::Text), ("LocalhostProfile", "localhostProfile", Go::Pointer)]);

/// kube's internal `core.SecurityContext`, field by field.
const SECURITY_CONTEXT: Go = Go::Struct(&[
    ("Capabilities", "capabilities", Go::Struct(&[("Add", "add", Go::Pointer), ("Drop", "drop", Go::Pointer)])),
    ("Privileged", "privileged", Go::Pointer),
    (
        "SELinuxOptions",
        "seLinuxOptions",
        Go::Struct(&[
            ("User", "user", Go::Text),
            ("Role", "role", Go::Text),
            ("Type", "type", Go::Text),
            ("Level", "level", Go::Text),
        ]),
    ),
    (
        "WindowsOptions",
        "windowsOptions",
        Go::Struct(&[
            ("GMSACredentialSpecName", "gmsaCredentialSpecName", Go::Pointer),
            ("GMSACredentialSpec", "gmsaCredentialSpec", Go::Pointer),
            ("RunAsUserName", "runAsUserName", Go::Pointer),
            ("HostProcess", "hostProcess", Go::Pointer),
        ]),
    ),
    ("RunAsUser", "runAsUser", Go::Pointer),
    ("RunAsGroup", "runAsGroup", Go::Pointer),
    ("RunAsNonRoot", "runAsNonRoot", Go::Pointer),
    ("ReadOnlyRootFilesystem", "readOnlyRootFilesystem", Go::Pointer),
    ("AllowPrivilegeEscalation", "allowPrivilegeEscalation", Go::Pointer),
    ("ProcMount", "procMount", Go::Pointer),
    ("SeccompProfile", "seccompProfile", PROFILE),
    ("AppArmorProfile", "appArmorProfile", PROFILE),
]);

/// A container's security context as kube's field errors show it: Go's JSON of the internal type.
fn go_security_context(sc: &Value) -> String {
    rendered(Some(sc), &SECURITY_CONTEXT)
}

fn rendered(v: Option<&Value>, shape: &Go) -> String {
    let v = v.filter(|v| !v.is_null());
    match (shape, v) {
        (Go::Text, None) => "\"\"".into(),
        (Go::Pointer | Go::Struct(_), None) => "null".into(),
        (Go::Pointer | Go::Text, Some(v)) => go_json(v),
        (Go::Struct(fields), Some(v)) => {
            let members: Vec<String> =
                fields.iter().map(|(go, json, shape)| format!("\"{go}\":{}", rendered(v.get(*json), shape))).collect();
            format!("{{{}}}", members.join(","))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged_pod(spec: Value) -> Vec<String> {
        let mut causes = Vec::new();
        pod(&spec, "spec", &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn judged_container(sc: Value, host_users: bool) -> Vec<String> {
        let mut causes = Vec::new();
        container(&json!({"name": "app", "securityContext": sc}), host_users, "spec.containers[0]", &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn sound_contexts_pass() {
        let spec = json!({"securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000,
            "supplementalGroups": [4000], "runAsNonRoot": true, "fsGroupChangePolicy": "OnRootMismatch",
            "seccompProfile": {"type": "RuntimeDefault"}, "appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-apparmor"},
            "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}, {"name": "kernel/shm_rmid_forced", "value": "1"}],
            "supplementalGroupsPolicy": "Strict", "seLinuxChangePolicy": "Recursive",
            "seLinuxOptions": {"level": "s0:c123,c456"}}});
        assert_eq!(judged_pod(spec), Vec::<String>::new());
        let sc = json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
            "readOnlyRootFilesystem": true, "runAsUser": 0, "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/audit.json"},
            "procMount": "Default", "privileged": false});
        assert_eq!(judged_container(sc, true), Vec::<String>::new());
        assert_eq!(judged_container(json!({"privileged": true, "procMount": "Unmasked"}), false), Vec::<String>::new());
    }

    #[test]
    fn pod_faults_are_kube_s() {
        let spec = json!({"hostPID": true, "shareProcessNamespace": true, "hostNetwork": true, "hostIPC": true,
            "securityContext": {"fsGroup": -1, "runAsUser": 2147483648_i64, "supplementalGroups": [1, -5],
            "sysctls": [{"name": ""}, {"name": "Kernel.X"}, {"name": "net.ipv4.ip_forward"}, {"name": "net.ipv4.ip_forward"},
                {"name": "kernel.msgmax"}, {"name": "fs/mqueue/msg_max"}],
            "fsGroupChangePolicy": "Sometimes", "seccompProfile": {"type": "Localhost", "localhostProfile": "/abs/../x.json"},
            "appArmorProfile": {"type": "Localhost", "localhostProfile": " p"},
            "supplementalGroupsPolicy": "Loose", "seLinuxChangePolicy": "MountOption"}});
        let regex = "must have at most 253 characters and match regex \
                     ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";
        assert_eq!(
            judged_pod(spec),
            [
                "spec.securityContext.fsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive".to_string(),
                "spec.securityContext.runAsUser: Invalid value: 2147483648: must be between 0 and 2147483647, inclusive".into(),
                "spec.securityContext.supplementalGroups[1]: Invalid value: -5: must be between 0 and 2147483647, inclusive".into(),
                "spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled".into(),
                "spec.securityContext.sysctls[0].name: Required value".into(),
                format!("spec.securityContext.sysctls[1].name: Invalid value: \"Kernel.X\": {regex}"),
                "spec.securityContext.sysctls[2].name: Invalid value: \"net.ipv4.ip_forward\": may not be specified when 'hostNetwork' is true".into(),
                "spec.securityContext.sysctls[3].name: Duplicate value: \"net.ipv4.ip_forward\"".into(),
                "spec.securityContext.sysctls[3].name: Invalid value: \"net.ipv4.ip_forward\": may not be specified when 'hostNetwork' is true".into(),
                "spec.securityContext.sysctls[4].name: Invalid value: \"kernel.msgmax\": may not be specified when 'hostIPC' is true".into(),
                "spec.securityContext.sysctls[5].name: Invalid value: \"fs/mqueue/msg_max\": may not be specified when 'hostIPC' is true".into(),
                "spec.securityContext.fsGroupChangePolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnRootMismatch\"".into(),
                "spec.securityContext.seccompProfile.localhostProfile: Invalid value: \"/abs/../x.json\": must be a relative path".into(),
                "spec.securityContext.seccompProfile.localhostProfile: Invalid value: \"/abs/../x.json\": must not contain '..'".into(),
                "spec.securityContext.appArmorProfile.localhostProfile: Invalid value: \" p\": must not be padded with whitespace".into(),
                "spec.securityContext.supplementalGroupsPolicy: Unsupported value: \"Loose\": supported values: \"Merge\", \"Strict\"".into(),
                "spec.securityContext.seLinuxChangePolicy: Unsupported value: \"MountOption\": supported values: \"Recursive\"".into(),
            ]
        );
    }

    #[test]
    fn profiles_need_their_type() {
        let spec = json!({"securityContext": {"seccompProfile": {"localhostProfile": "x.json"},
            "appArmorProfile": {"type": "RuntimeDefault", "localhostProfile": "x"}}});
        assert_eq!(
            judged_pod(spec),
            [
                "spec.securityContext.seccompProfile.type: Required value: type is required when seccompProfile is set",
                "spec.securityContext.seccompProfile.localhostProfile: Invalid value: {\"Type\":\"\",\"LocalhostProfile\":\"x.json\"}: can only be set when seccomp type is Localhost",
                "spec.securityContext.appArmorProfile.localhostProfile: Invalid value: \"x\": can only be set when AppArmor type is Localhost",
            ]
        );
        let spec = json!({"securityContext": {"seccompProfile": {"type": "Localhost"},
            "appArmorProfile": {"type": "Foo", "localhostProfile": "x"}}});
        assert_eq!(
            judged_pod(spec),
            [
                "spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
                "spec.securityContext.appArmorProfile.type: Unsupported value: \"Foo\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
            ]
        );
    }

    #[test]
    fn container_faults_are_kube_s() {
        let sc = json!({"runAsUser": -1, "runAsGroup": -2, "procMount": "Unmasked",
            "seccompProfile": {"type": "Bogus"}, "allowPrivilegeEscalation": false, "privileged": true,
            "capabilities": {"add": ["CAP_SYS_ADMIN", "SYS_ADMIN"]}, "appArmorProfile": {"type": ""}});
        let shown = "{\"Capabilities\":{\"Add\":[\"CAP_SYS_ADMIN\",\"SYS_ADMIN\"],\"Drop\":null},\"Privileged\":true,\
                     \"SELinuxOptions\":null,\"WindowsOptions\":null,\"RunAsUser\":-1,\"RunAsGroup\":-2,\"RunAsNonRoot\":null,\
                     \"ReadOnlyRootFilesystem\":null,\"AllowPrivilegeEscalation\":false,\"ProcMount\":\"Unmasked\",\
                     \"SeccompProfile\":{\"Type\":\"Bogus\",\"LocalhostProfile\":null},\"AppArmorProfile\":{\"Type\":\"\",\"LocalhostProfile\":null}}";
        assert_eq!(
            judged_container(sc, true),
            [
                "spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive".to_string(),
                "spec.containers[0].securityContext.runAsGroup: Invalid value: -2: must be between 0 and 2147483647, inclusive".into(),
                "spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`".into(),
                "spec.containers[0].securityContext.seccompProfile.type: Unsupported value: \"Bogus\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"".into(),
                format!("spec.containers[0].securityContext: Invalid value: {shown}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"),
                format!("spec.containers[0].securityContext: Invalid value: {shown}: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"),
                "spec.containers[0].securityContext.appArmorProfile.type: Required value: type is required when appArmorProfile is set".into(),
            ]
        );
        assert_eq!(
            judged_container(json!({"procMount": "Masked"}), false),
            [
                "spec.containers[0].securityContext.procMount: Unsupported value: \"Masked\": supported values: \"Default\", \"Unmasked\""
            ]
        );
    }
}
