//! What the Go types of the built-in resources always carry: the fields kube-apiserver's
//! objects have even when a request leaves them out, and the defaults of list keys.
//!
//! kube-apiserver computes `managedFields` on its Go structs, where a struct held by value
//! (`spec`, `status`, `metadata`, a pod template, a Deployment's `strategy`, a container's
//! `resources`…) and every field serialized without `omitempty` are always present, as `{}`,
//! `null` or a zero scalar. A field present on both sides of a comparison is never *added*:
//! the `"."` of its node in `FieldsV1` depends on this. The OpenAPI definitions name the
//! fields without `omitempty` (`required`) but not which structs are held by value: those are
//! the rules and the list below.
//!
//! Invariants: only built-in definitions have zero values (custom resources are unstructured
//! in kube-apiserver too); a value-held struct's zero is `{}`, a required field's is Go's zero
//! of its type as JSON (`""`, `0`, `false`, `null` for lists, maps and pointers).
//! The zero values of the built-in definitions' fields are worked out once, on first use.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Value, json};

use crate::schema;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Struct-typed fields held by value (besides `metadata`, `spec` and `status`, see
/// [`zero_value`]): definition, field.
const VALUE_STRUCTS: &[(&str, &str)] = &[
    ("io.k8s.api.apps.v1.DeploymentSpec", "strategy"),
    ("io.k8s.api.apps.v1.DeploymentSpec", "template"),
    ("io.k8s.api.apps.v1.ReplicaSetSpec", "template"),
    ("io.k8s.api.apps.v1.StatefulSetSpec", "template"),
    ("io.k8s.api.apps.v1.StatefulSetSpec", "updateStrategy"),
    ("io.k8s.api.apps.v1.DaemonSetSpec", "template"),
    ("io.k8s.api.apps.v1.DaemonSetSpec", "updateStrategy"),
    ("io.k8s.api.batch.v1.JobSpec", "template"),
    ("io.k8s.api.batch.v1.CronJobSpec", "jobTemplate"),
    ("io.k8s.api.core.v1.Container", "resources"),
    ("io.k8s.api.core.v1.EphemeralContainer", "resources"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "resources"),
    ("io.k8s.api.core.v1.ServiceStatus", "loadBalancer"),
    ("io.k8s.api.core.v1.NodeStatus", "daemonEndpoints"),
    ("io.k8s.api.core.v1.NodeStatus", "nodeInfo"),
    ("io.k8s.api.core.v1.NodeDaemonEndpoints", "kubeletEndpoint"),
    ("io.k8s.api.core.v1.ContainerStatus", "state"),
    ("io.k8s.api.core.v1.ContainerStatus", "lastState"),
    ("io.k8s.api.core.v1.Event", "involvedObject"),
    ("io.k8s.api.core.v1.Event", "source"),
    ("io.k8s.api.core.v1.WeightedPodAffinityTerm", "podAffinityTerm"),
    ("io.k8s.api.core.v1.PreferredSchedulingTerm", "preference"),
];

/// Defaults of list-map key fields: definition of the elements, key field, value.
const KEY_DEFAULTS: &[(&str, &str, &str)] = &[
    ("io.k8s.api.core.v1.ContainerPort", "protocol", "TCP"),
    ("io.k8s.api.core.v1.ServicePort", "protocol", "TCP"),
    ("io.k8s.api.core.v1.LocalObjectReference", "name", ""),
];

static EMPTY_OBJECT: LazyLock<Value> = LazyLock::new(|| json!({}));
static NULL: Value = Value::Null;
static EMPTY_STRING: LazyLock<Value> = LazyLock::new(|| json!(""));
static ZERO: LazyLock<Value> = LazyLock::new(|| json!(0));
static FALSE: Value = Value::Bool(false);
static ZERO_QUANTITY: LazyLock<Value> = LazyLock::new(|| json!("0"));

fn ref_name(prop: &Value) -> Option<&str> {
    let r = prop.get("$ref").or_else(|| prop.get("allOf")?.as_array()?.first()?.get("$ref"))?;
    r.as_str()?.strip_prefix("#/components/schemas/")
}

/// The value the Go struct `definition` holds in `field` when it is not set, if Go always
/// serializes that field; `required` says whether the definition lists the field as required
/// (it has no `omitempty`).
pub(crate) fn zero_value(definition: &str, field: &str, required: bool) -> Option<&'static Value> {
    let b = schema::builtin();
    let props = b.definition(definition)?.1.get("properties")?.as_object()?;
    let prop = props.get(field)?;
    let target = ref_name(prop);
    let by_value = match field {
        "metadata" => target == Some(OBJECT_META),
        // The spec and status of an object or of an object template.
        "spec" | "status" => target.is_some() && props.get("metadata").and_then(ref_name) == Some(OBJECT_META),
        _ => VALUE_STRUCTS.contains(&(definition, field)),
    };
    if by_value {
        return Some(&EMPTY_OBJECT);
    }
    if !required {
        return None;
    }
    let resolved = match target {
        Some(t) => b.definition(t)?.1,
        None => prop,
    };
    Some(match (target, resolved.get("type").and_then(Value::as_str)) {
        (Some("io.k8s.apimachinery.pkg.util.intstr.IntOrString"), _) => &ZERO,
        (Some("io.k8s.apimachinery.pkg.api.resource.Quantity"), _) => &ZERO_QUANTITY,
        (None, Some("string")) => &EMPTY_STRING,
        (None, Some("integer" | "number")) => &ZERO,
        (None, Some("boolean")) => &FALSE,
        _ => &NULL,
    })
}

/// [`zero_value`] of field `field` of a built-in definition, `definition` being its name as
/// the built-in schemas hold it (looked up by address in a table of every field of every
/// definition; computed for any other name); `required` tells whether the definition lists
/// the field as required.
pub(crate) fn builtin_zero_value(
    definition: &str,
    field: &str,
    required: impl FnOnce() -> bool,
) -> Option<&'static Value> {
    type Zeros = HashMap<(usize, usize, &'static str), Option<&'static Value>, foldhash::fast::RandomState>;
    static ZEROS: LazyLock<Zeros> = LazyLock::new(|| {
        let mut zeros = Zeros::default();
        for (name, def) in schema::builtin().definitions() {
            let Some(props) = def.get("properties").and_then(Value::as_object) else { continue };
            let required = def.get("required").and_then(Value::as_array);
            for field in props.keys() {
                let r = required.is_some_and(|r| r.iter().any(|x| x.as_str() == Some(field)));
                zeros.insert((name.as_ptr() as usize, name.len(), field.as_str()), zero_value(name, field, r));
            }
        }
        zeros
    });
    let zeros: &HashMap<(usize, usize, &str), _, _> = &ZEROS;
    match zeros.get(&(definition.as_ptr() as usize, definition.len(), field)) {
        Some(z) => *z,
        None => zero_value(definition, field, required()),
    }
}

/// The default of key field `key` of list elements of type `definition`, if it has one.
pub(crate) fn key_default(definition: &str, key: &str) -> Option<&'static Value> {
    static VALUES: LazyLock<Vec<Value>> = LazyLock::new(|| KEY_DEFAULTS.iter().map(|(_, _, v)| json!(v)).collect());
    let i = KEY_DEFAULTS.iter().position(|(d, k, _)| *d == definition && *k == key)?;
    Some(&VALUES[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_structs_held_by_value_and_fields_without_omitempty() {
        let z = |d: &str, f: &str, r: bool| zero_value(d, f, r).cloned();
        assert_eq!(z("io.k8s.api.apps.v1.Deployment", "spec", false), Some(json!({})));
        assert_eq!(z("io.k8s.api.apps.v1.Deployment", "metadata", false), Some(json!({})));
        assert_eq!(z("io.k8s.api.core.v1.PodTemplateSpec", "spec", false), Some(json!({})));
        assert_eq!(z("io.k8s.api.apps.v1.DeploymentSpec", "strategy", false), Some(json!({})));
        assert_eq!(z("io.k8s.api.apps.v1.DeploymentSpec", "selector", true), Some(Value::Null));
        assert_eq!(z("io.k8s.api.core.v1.PodSpec", "containers", true), Some(Value::Null));
        assert_eq!(z("io.k8s.api.core.v1.Container", "name", true), Some(json!("")));
        assert_eq!(z("io.k8s.api.core.v1.PodSpec", "securityContext", false), None);
        assert_eq!(z("io.k8s.api.core.v1.ConfigMap", "data", false), None);
        // The table of the built-in definitions agrees, found by the definitions' own names.
        for (name, def) in schema::builtin().definitions() {
            let required = def.get("required").and_then(Value::as_array);
            for field in def.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.keys()) {
                let r = required.is_some_and(|r| r.iter().any(|x| x.as_str() == Some(field)));
                assert_eq!(builtin_zero_value(name, field, || r), zero_value(name, field, r), "{name}.{field}");
            }
        }
        assert_eq!(key_default("io.k8s.api.core.v1.ContainerPort", "protocol"), Some(&json!("TCP")));
        assert_eq!(key_default("io.k8s.api.core.v1.ContainerPort", "containerPort"), None);
    }
}
