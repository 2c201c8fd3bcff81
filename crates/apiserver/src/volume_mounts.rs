//! A container's volume mounts, raw block devices and resize policy, judged as kube-apiserver's
//! `ValidateVolumeMounts`, `ValidateVolumeDevices` and `validateResizePolicy` judge them
//! wherever a pod spec is written:
//! - a mount names one of the pod's volumes, at a mount path of its own that no device of the
//!   container has, under a name no device has; its sub-path (or sub-path expression, not both)
//!   is relative and does not climb out with `..`; a known mount propagation, `Bidirectional`
//!   only for privileged containers; a known recursive read-only mode, enabled only on read-only
//!   mounts without propagation;
//! - a device names one of the pod's claims (or ephemeral volumes), once, at a device path of its
//!   own without `..`, neither a mount's name nor path;
//! - a resize policy names `cpu` or `memory` once each with a known restart policy, which is
//!   `NotRequired` in a pod that never restarts.
//!
//! Invariants: only the container, the pod's valid volumes and its restart policy are read;
//! causes come in kube's order with its paths (including the unindexed `volumeMounts.subPath`,
//! `volumeMounts.mountPropagation`, `volumeMounts.recursiveReadOnly` and `resizePolicy` ones) and
//! messages.

use serde_json::Value;

use crate::pod_spec_validation::list;
use crate::pod_validation::forbidden;
use crate::policy_validation::{duplicate, invalid, required, unsupported};
use crate::structural::{Cause, go_quote};

/// A container member's string (empty when missing).
fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn not_found(field: String, name: &str) -> Cause {
    Cause { reason: "FieldValueNotFound", message: format!("Not found: {}", go_quote(name)), field }
}

/// The causes for the volume mounts of the container `c` at `at`; `volumes` are the names of the
/// pod's valid volumes.
pub(crate) fn validate(c: &Value, volumes: &[&str], at: &str, causes: &mut Vec<Cause>) {
    let devices = by_name(list(c, "volumeDevices"), "devicePath");
    let mut paths: Vec<&str> = Vec::new();
    let unindexed = format!("{at}.volumeMounts");
    for (j, m) in list(c, "volumeMounts").iter().enumerate() {
        let at = format!("{at}.volumeMounts[{j}]");
        let name = text(m, "name");
        if name.is_empty() {
            causes.push(required(format!("{at}.name"), ""));
        }
        if !volumes.contains(&name) {
            causes.push(not_found(format!("{at}.name"), name));
        }
        let path = text(m, "mountPath");
        if path.is_empty() {
            causes.push(required(format!("{at}.mountPath"), ""));
        }
        if paths.contains(&path) {
            causes.push(invalid(format!("{at}.mountPath"), path, "must be unique"));
        }
        paths.push(path);
        if devices.iter().any(|(n, _)| *n == name) {
            causes.push(invalid(format!("{at}.name"), name, "must not already exist in volumeDevices"));
        }
        if devices.iter().any(|(_, p)| *p == path) {
            causes.push(invalid(format!("{at}.mountPath"), path, "must not already exist as a path in volumeDevices"));
        }
        let (sub, expr) = (text(m, "subPath"), text(m, "subPathExpr"));
        if !sub.is_empty() {
            descending(sub, &format!("{unindexed}.subPath"), causes);
        }
        if !expr.is_empty() {
            if !sub.is_empty() {
                causes.push(invalid(
                    format!("{at}.subPathExpr"),
                    expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            descending(expr, &format!("{unindexed}.subPathExpr"), causes);
        }
        let propagation = m.get("mountPropagation").and_then(Value::as_str);
        if let Some(mode) = propagation {
            let field = format!("{unindexed}.mountPropagation");
            if !matches!(mode, "Bidirectional" | "HostToContainer" | "None") {
                causes.push(unsupported(field.clone(), mode, &["Bidirectional", "HostToContainer", "None"]));
            }
            let privileged = c.pointer("/securityContext/privileged") == Some(&Value::Bool(true));
            if mode == "Bidirectional" && !privileged {
                causes.push(forbidden(
                    field,
                    "Bidirectional mount propagation is available only to privileged containers",
                ));
            }
        }
        if let Some(mode) = m.get("recursiveReadOnly").and_then(Value::as_str) {
            let field = format!("{unindexed}.recursiveReadOnly");
            match mode {
                "Disabled" => {}
                "Enabled" | "IfPossible" => {
                    if m.get("readOnly") != Some(&Value::Bool(true)) {
                        causes.push(forbidden(field.clone(), "may only be specified when readOnly is true"));
                    }
                    if propagation.is_some_and(|p| p != "None") {
                        causes.push(forbidden(
                            field,
                            "may only be specified when mountPropagation is None or not specified",
                        ));
                    }
                }
                other => causes.push(unsupported(field, other, &["Disabled", "Enabled", "IfPossible"])),
            }
        }
    }
}

/// The (name, path) pairs of mounts or devices as Go's maps from name to path hold them: the last
/// of a name wins.
fn by_name<'a>(items: &'a [Value], path_key: &str) -> Vec<(&'a str, &'a str)> {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for item in items {
        let (name, path) = (text(item, "name"), text(item, path_key));
        match pairs.iter_mut().find(|(n, _)| *n == name) {
            Some(pair) => pair.1 = path,
            None => pairs.push((name, path)),
        }
    }
    pairs
}

/// kube's `validateLocalDescendingPath`: relative, and no `..` element.
fn descending(path: &str, at: &str, causes: &mut Vec<Cause>) {
    if path.starts_with('/') {
        causes.push(invalid(at.into(), path, "must be a relative path"));
    }
    if backsteps(path) {
        causes.push(invalid(at.into(), path, "must not contain '..'"));
    }
}

fn backsteps(path: &str) -> bool {
    path.split('/').any(|part| part == "..")
}

/// The causes for the raw block devices of the container `c` at `at`; `volumes` are the names of
/// the pod's valid volumes, `block` those of them a device may use (claims and ephemeral ones).
pub(crate) fn devices(c: &Value, volumes: &[&str], block: &[&str], at: &str, causes: &mut Vec<Cause>) {
    let mounts = by_name(list(c, "volumeMounts"), "mountPath");
    let (mut names, mut paths): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for (i, d) in list(c, "volumeDevices").iter().enumerate() {
        let at = format!("{at}.volumeDevices[{i}]");
        let (name, path) = (text(d, "name"), text(d, "devicePath"));
        if name.is_empty() {
            causes.push(required(format!("{at}.name"), ""));
        }
        if names.contains(&name) {
            causes.push(invalid(format!("{at}.name"), name, "must be unique"));
        }
        if volumes.contains(&name) && !block.contains(&name) {
            causes.push(invalid(
                format!("{at}.name"),
                name,
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            ));
        }
        if !volumes.contains(&name) {
            causes.push(not_found(format!("{at}.name"), name));
        }
        if path.is_empty() {
            causes.push(required(format!("{at}.devicePath"), ""));
        }
        if paths.contains(&path) {
            causes.push(invalid(format!("{at}.devicePath"), path, "must be unique"));
        }
        if !path.is_empty() && backsteps(path) {
            causes.push(invalid(format!("{at}.devicePath"), path, "can not contain backsteps ('..')"));
        } else {
            paths.push(path);
        }
        if mounts.iter().any(|(n, _)| *n == name) {
            causes.push(invalid(format!("{at}.name"), name, "must not already exist in volumeMounts"));
        }
        if mounts.iter().any(|(_, p)| *p == path) {
            causes.push(invalid(format!("{at}.devicePath"), path, "must not already exist as a path in volumeMounts"));
        }
        if !name.is_empty() {
            names.push(name);
        }
    }
}

/// The causes for the resize policy of the container `c` at `at` in a pod whose restart policy
/// is `restart`.
pub(crate) fn resize_policy(c: &Value, restart: &str, at: &str, causes: &mut Vec<Cause>) {
    let field = format!("{at}.resizePolicy");
    let mut seen: Vec<&str> = Vec::new();
    for (i, p) in list(c, "resizePolicy").iter().enumerate() {
        let resource = text(p, "resourceName");
        if seen.contains(&resource) {
            causes.push(duplicate(format!("{field}[{i}]"), resource));
        }
        seen.push(resource);
        match resource {
            "cpu" | "memory" => {}
            "" => causes.push(required(field.clone(), "")),
            other => causes.push(unsupported(field.clone(), other, &["cpu", "memory"])),
        }
        let policy = text(p, "restartPolicy");
        match policy {
            "NotRequired" | "RestartContainer" => {}
            "" => causes.push(required(field.clone(), "")),
            other => causes.push(unsupported(field.clone(), other, &["NotRequired", "RestartContainer"])),
        }
        if restart == "Never" && policy != "NotRequired" {
            causes.push(invalid(field.clone(), policy, "must be 'NotRequired' when `restartPolicy` is 'Never'"));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn mounts_name_the_pods_volumes_at_paths_of_their_own() {
        let spec = json!({"volumes": [{"name": "data", "emptyDir": {}}, {"name": "cache", "emptyDir": {}}]});
        let c = json!({"volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "dta", "mountPath": "/data"},
            {"name": "", "mountPath": ""}, {"name": "cache", "mountPath": "/cache"}]});
        let mut causes = Vec::new();
        validate(&c, &crate::pod_spec_validation::valid_volumes(&spec), "spec.containers[0]", &mut causes);
        assert_eq!(
            messages(causes),
            [
                "spec.containers[0].volumeMounts[1].name: Not found: \"dta\"",
                "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/data\": must be unique",
                "spec.containers[0].volumeMounts[2].name: Required value",
                "spec.containers[0].volumeMounts[2].name: Not found: \"\"",
                "spec.containers[0].volumeMounts[2].mountPath: Required value",
            ]
        );
    }

    #[test]
    fn sub_paths_propagation_and_read_only_modes_are_kube_s() {
        let volumes = ["data"];
        let c = json!({"volumeMounts": [
            {"name": "data", "mountPath": "/a", "subPath": "/x/../y", "subPathExpr": "$(POD)/.."},
            {"name": "data", "mountPath": "/b", "mountPropagation": "Bidirectional", "recursiveReadOnly": "Enabled"},
            {"name": "data", "mountPath": "/c", "mountPropagation": "Sideways", "recursiveReadOnly": "Always"},
            {"name": "data", "mountPath": "/d", "readOnly": true, "recursiveReadOnly": "IfPossible", "subPath": "logs"}]});
        let mut causes = Vec::new();
        validate(&c, &volumes, "spec.containers[0]", &mut causes);
        let at = "spec.containers[0].volumeMounts";
        assert_eq!(
            messages(causes),
            [
                format!("{at}.subPath: Invalid value: \"/x/../y\": must be a relative path"),
                format!("{at}.subPath: Invalid value: \"/x/../y\": must not contain '..'"),
                format!(
                    "{at}[0].subPathExpr: Invalid value: \"$(POD)/..\": subPathExpr and subPath are mutually exclusive"
                ),
                format!("{at}.subPathExpr: Invalid value: \"$(POD)/..\": must not contain '..'"),
                format!(
                    "{at}.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"
                ),
                format!("{at}.recursiveReadOnly: Forbidden: may only be specified when readOnly is true"),
                format!(
                    "{at}.recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified"
                ),
                format!(
                    "{at}.mountPropagation: Unsupported value: \"Sideways\": supported values: \"Bidirectional\", \"HostToContainer\", \"None\""
                ),
                format!(
                    "{at}.recursiveReadOnly: Unsupported value: \"Always\": supported values: \"Disabled\", \"Enabled\", \"IfPossible\""
                ),
            ]
        );
        let privileged = json!({"securityContext": {"privileged": true},
            "volumeMounts": [{"name": "data", "mountPath": "/csi", "mountPropagation": "Bidirectional"}]});
        let mut causes = Vec::new();
        validate(&privileged, &volumes, "spec.containers[0]", &mut causes);
        assert_eq!(messages(causes), Vec::<String>::new());
    }

    #[test]
    fn devices_use_claims_at_paths_of_their_own() {
        let c = json!({"volumeMounts": [{"name": "logs", "mountPath": "/dev/xvdb"}],
            "volumeDevices": [{"name": "disk", "devicePath": "/dev/xvda"}, {"name": "disk", "devicePath": "/dev/xvda"},
                {"name": "logs", "devicePath": "/dev/../xvdb"}, {"name": "gone", "devicePath": "/dev/xvdb"}]});
        let mut causes = Vec::new();
        devices(&c, &["disk", "logs"], &["disk"], "spec.containers[0]", &mut causes);
        let at = "spec.containers[0].volumeDevices";
        assert_eq!(
            messages(causes),
            [
                format!("{at}[1].name: Invalid value: \"disk\": must be unique"),
                format!("{at}[1].devicePath: Invalid value: \"/dev/xvda\": must be unique"),
                format!(
                    "{at}[2].name: Invalid value: \"logs\": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"
                ),
                format!("{at}[2].devicePath: Invalid value: \"/dev/../xvdb\": can not contain backsteps ('..')"),
                format!("{at}[2].name: Invalid value: \"logs\": must not already exist in volumeMounts"),
                format!("{at}[3].name: Not found: \"gone\""),
                format!(
                    "{at}[3].devicePath: Invalid value: \"/dev/xvdb\": must not already exist as a path in volumeMounts"
                ),
            ]
        );
    }

    #[test]
    fn resize_policies_are_kube_s() {
        let c = json!({"resizePolicy": [{"resourceName": "cpu", "restartPolicy": "RestartContainer"},
            {"resourceName": "cpu", "restartPolicy": "NotRequired"}, {"resourceName": "gpu", "restartPolicy": "Sometimes"},
            {"resourceName": "", "restartPolicy": ""}]});
        let mut causes = Vec::new();
        resize_policy(&c, "Never", "spec.containers[0]", &mut causes);
        let at = "spec.containers[0].resizePolicy";
        assert_eq!(
            messages(causes),
            [
                format!(
                    "{at}: Invalid value: \"RestartContainer\": must be 'NotRequired' when `restartPolicy` is 'Never'"
                ),
                format!("{at}[1]: Duplicate value: \"cpu\""),
                format!("{at}: Unsupported value: \"gpu\": supported values: \"cpu\", \"memory\""),
                format!(
                    "{at}: Unsupported value: \"Sometimes\": supported values: \"NotRequired\", \"RestartContainer\""
                ),
                format!("{at}: Invalid value: \"Sometimes\": must be 'NotRequired' when `restartPolicy` is 'Never'"),
                format!("{at}: Required value"),
                format!("{at}: Required value"),
                format!("{at}: Invalid value: \"\": must be 'NotRequired' when `restartPolicy` is 'Never'"),
            ]
        );
    }
}
