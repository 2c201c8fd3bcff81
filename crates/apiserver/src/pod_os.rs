//! What a pod's user namespace and operating system allow, as kube-apiserver's
//! `validateHostUsers` and `validateOS` (with `validateLinux` and `validateWindows`) decide:
//! - a pod in its own user namespace (`hostUsers: false`) shares neither the host's network,
//!   PID nor IPC namespaces and has no raw block devices;
//! - `spec.os.name` is `linux` or `windows`; a Linux pod sets no Windows options, a Windows pod
//!   none of the Linux-only security fields, at the pod or in any container.
//!
//! Invariants: only the spec is read; causes come in kube's order with its paths (including its
//! `spec.HostPID` and `spec.HostIPC` spellings) and messages.

use serde_json::Value;

use crate::pod_spec_validation::list;
use crate::pod_validation::forbidden;
use crate::policy_validation::{required, unsupported};
use crate::structural::Cause;

/// The containers of a pod spec in the order kube visits them, with their list's name.
pub(crate) const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

/// The causes for a pod of `spec` (at `at`) in its own user namespace.
pub(crate) fn host_users(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    if crate::security_context::host_users(spec) {
        return;
    }
    let detail = "when `hostUsers` is false";
    for (key, shown) in [("hostNetwork", "hostNetwork"), ("hostPID", "HostPID"), ("hostIPC", "HostIPC")] {
        if spec.get(key) == Some(&Value::Bool(true)) {
            causes.push(forbidden(format!("{at}.{shown}"), detail));
        }
    }
    for key in CONTAINER_LISTS {
        for (i, c) in list(spec, key).iter().enumerate() {
            if !list(c, "volumeDevices").is_empty() {
                causes.push(forbidden(format!("{at}.{key}[{i}].volumeDevices"), detail));
            }
        }
    }
}

/// The Linux-only fields of a pod's security context, with where kube reports each: a member of
/// `securityContext` or of the spec itself.
const POD_LINUX_ONLY: &[(&str, bool)] = &[
    ("appArmorProfile", true),
    ("seLinuxOptions", true),
    ("hostUsers", false),
    ("hostPID", false),
    ("hostIPC", false),
    ("seccompProfile", true),
    ("fsGroup", true),
    ("fsGroupChangePolicy", true),
    ("sysctls", true),
    ("shareProcessNamespace", false),
    ("runAsUser", true),
    ("runAsGroup", true),
    ("supplementalGroups", true),
    ("supplementalGroupsPolicy", true),
    ("seLinuxChangePolicy", true),
];

/// The Linux-only fields of a container's security context, in kube's order.
const CONTAINER_LINUX_ONLY: &[&str] = &[
    "appArmorProfile",
    "seLinuxOptions",
    "seccompProfile",
    "capabilities",
    "readOnlyRootFilesystem",
    "privileged",
    "allowPrivilegeEscalation",
    "procMount",
    "runAsUser",
    "runAsGroup",
];

/// The causes for the OS of the pod spec `spec` at `at`, when it names one.
pub(crate) fn os(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    let Some(os) = spec.get("os").filter(|o| o.is_object()) else { return };
    let set = |v: Option<&Value>| v.is_some_and(|v| !v.is_null());
    match os.get("name").and_then(Value::as_str).unwrap_or("") {
        "" => causes.push(required(format!("{at}.os.name"), "")),
        "linux" => {
            let detail = "windows options cannot be set for a linux pod";
            if set(spec.pointer("/securityContext/windowsOptions")) {
                causes.push(forbidden(format!("{at}.securityContext.windowsOptions"), detail));
            }
            for key in CONTAINER_LISTS {
                for (i, c) in list(spec, key).iter().enumerate() {
                    if set(c.pointer("/securityContext/windowsOptions")) {
                        causes.push(forbidden(format!("{at}.{key}[{i}].securityContext.windowsOptions"), detail));
                    }
                }
            }
        }
        "windows" => {
            let detail = "cannot be set for a windows pod";
            // The host namespace fields belong to kube's internal pod security context, which
            // their presence alone creates.
            let sc = spec.get("securityContext");
            for (key, in_context) in POD_LINUX_ONLY {
                let (value, field) = if *in_context {
                    (sc.and_then(|s| s.get(*key)), format!("{at}.securityContext.{key}"))
                } else {
                    (spec.get(*key), format!("{at}.{key}"))
                };
                let applies = match *key {
                    // Go's booleans: only a true one is there.
                    "hostPID" | "hostIPC" => value == Some(&Value::Bool(true)),
                    // Only sysctls that are there.
                    "sysctls" => value.and_then(Value::as_array).is_some_and(|a| !a.is_empty()),
                    _ => set(value),
                };
                if applies {
                    causes.push(forbidden(field, detail));
                }
            }
            for key in CONTAINER_LISTS {
                for (i, c) in list(spec, key).iter().enumerate() {
                    let Some(sc) = c.get("securityContext").filter(|s| s.is_object()) else { continue };
                    for field in CONTAINER_LINUX_ONLY.iter().filter(|f| set(sc.get(**f))) {
                        causes.push(forbidden(format!("{at}.{key}[{i}].securityContext.{field}"), detail));
                    }
                }
            }
        }
        other => causes.push(unsupported(format!("{at}.os"), other, &["linux", "windows"])),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged(spec: Value) -> Vec<String> {
        let mut causes = Vec::new();
        host_users(&spec, "spec", &mut causes);
        os(&spec, "spec", &mut causes);
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn user_namespaces_share_nothing_with_the_host() {
        let spec = json!({"hostUsers": false, "hostNetwork": true, "hostPID": true, "hostIPC": true,
            "containers": [{"name": "a", "volumeDevices": [{"name": "d", "devicePath": "/dev/xvda"}]}]});
        assert_eq!(
            judged(spec),
            [
                "spec.hostNetwork: Forbidden: when `hostUsers` is false",
                "spec.HostPID: Forbidden: when `hostUsers` is false",
                "spec.HostIPC: Forbidden: when `hostUsers` is false",
                "spec.containers[0].volumeDevices: Forbidden: when `hostUsers` is false",
            ]
        );
        assert_eq!(judged(json!({"hostUsers": true, "hostNetwork": true})), Vec::<String>::new());
    }

    #[test]
    fn each_os_keeps_to_its_own_fields() {
        assert_eq!(
            judged(json!({"os": {"name": "darwin"}})),
            ["spec.os: Unsupported value: \"darwin\": supported values: \"linux\", \"windows\""]
        );
        assert_eq!(judged(json!({"os": {}})), ["spec.os.name: Required value"]);
        let spec = json!({"os": {"name": "linux"}, "securityContext": {"windowsOptions": {"runAsUserName": "u"}},
            "containers": [{"name": "a", "securityContext": {"windowsOptions": {}}}]});
        assert_eq!(
            judged(spec),
            [
                "spec.securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
                "spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
            ]
        );
        let spec = json!({"os": {"name": "windows"}, "hostPID": false, "shareProcessNamespace": false,
            "securityContext": {"runAsUser": 1, "windowsOptions": {"runAsUserName": "u"}, "runAsNonRoot": true,
                "sysctls": []},
            "initContainers": [{"name": "i", "securityContext": {"privileged": false, "runAsNonRoot": true}}],
            "containers": [{"name": "a", "securityContext": {"capabilities": {}, "runAsGroup": 5}}]});
        assert_eq!(
            judged(spec),
            [
                "spec.shareProcessNamespace: Forbidden: cannot be set for a windows pod",
                "spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod",
                "spec.initContainers[0].securityContext.privileged: Forbidden: cannot be set for a windows pod",
                "spec.containers[0].securityContext.capabilities: Forbidden: cannot be set for a windows pod",
                "spec.containers[0].securityContext.runAsGroup: Forbidden: cannot be set for a windows pod",
            ]
        );
    }
}
