//! A container's volume mounts, judged as kube-apiserver's `validateVolumeMounts` judges them
//! wherever a pod spec is written: each names one of the pod's volumes and has a mount path,
//! and no two share a path.
//!
//! Invariants: only the container and the pod's volume names are read; causes come in mount
//! order, each mount's in kube's order (name, then path).

use serde_json::Value;

use crate::policy_validation::{invalid, required};
use crate::structural::{Cause, go_quote};

/// The causes of the mounts of the container `c` at `at` (`spec.containers[0]`), among the
/// pod's `volumes`.
pub(crate) fn validate(c: &Value, volumes: &[&str], at: &str, causes: &mut Vec<Cause>) {
    let mut paths: Vec<&str> = Vec::new();
    for (j, m) in c.get("volumeMounts").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("{at}.volumeMounts[{j}]");
        let name = m.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(required(format!("{at}.name"), ""));
        }
        if !volumes.contains(&name) {
            causes.push(Cause {
                reason: "FieldValueNotFound",
                message: format!("Not found: {}", go_quote(name)),
                field: format!("{at}.name"),
            });
        }
        let path = m.get("mountPath").and_then(Value::as_str).unwrap_or("");
        if path.is_empty() {
            causes.push(required(format!("{at}.mountPath"), ""));
        }
        if paths.contains(&path) {
            causes.push(invalid(format!("{at}.mountPath"), path, "must be unique"));
        }
        paths.push(path);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn mounts_name_the_pods_volumes_at_paths_of_their_own() {
        let spec = json!({"volumes": [{"name": "data", "emptyDir": {}}, {"name": "cache", "emptyDir": {}}]});
        let c = json!({"volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "dta", "mountPath": "/data"},
            {"name": "", "mountPath": ""}, {"name": "cache", "mountPath": "/cache"}]});
        let mut causes = Vec::new();
        validate(&c, &crate::pod_spec_validation::valid_volumes(&spec), "spec.containers[0]", &mut causes);
        let m: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            m,
            [
                "spec.containers[0].volumeMounts[1].name: Not found: \"dta\"",
                "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/data\": must be unique",
                "spec.containers[0].volumeMounts[2].name: Required value",
                "spec.containers[0].volumeMounts[2].name: Not found: \"\"",
                "spec.containers[0].volumeMounts[2].mountPath: Required value",
            ]
        );
    }
}
