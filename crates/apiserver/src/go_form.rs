//! Built-in objects in the form kube-apiserver's Go types write them.
//!
//! kube-apiserver decodes every write of a built-in type into its Go struct and stores what that
//! struct serializes, so what a request leaves out or sends as a zero comes back as Go writes
//! it, whichever client wrote it and in whichever encoding:
//! - the fields Go always writes appear: structs held by value as `{}`, times held by value as
//!   `null`, fields without `omitempty` as their type's zero (see
//!   [`crate::managed_fields::presence`]): an Event's `source: {}` and `reportingComponent: ""`,
//!   a pod condition's `lastProbeTime: null`, an aggregated ClusterRole's `rules: null`;
//! - the empty lists and maps of `omitempty` fields go (`tolerations: []`, `labels: {}`), and
//!   those of fields Go always writes are `null` (kube stores protobuf, where an empty list is
//!   none: an EndpointSlice's `endpoints: []` reads back `null`);
//! - a `0` or `false` in a number or boolean Go holds by value with `omitempty` goes
//!   (`paused: false`, a template's `generation: 0` as protobuf writers send them), and so does
//!   a `""` in a string Go holds by value with `omitempty` (`nodeName: ""`, a condition's
//!   `message: ""`); a pointer's zero is a value and stays (`replicas: 0`, a claim's
//!   `storageClassName: ""`, which asks for no class).
//!
//! Invariants: only the built-in definitions are walked (custom resources are unstructured in
//! kube-apiserver too); values no built-in schema describes (a RawExtension, a CRD schema's
//! `default`, unknown fields) are kept as written; a value already in this form is unchanged,
//! so writing back a stored object stores the same bytes. The walk of each definition is worked
//! out once, on first use.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Map, Value};

use crate::managed_fields::presence;
use crate::schema::{self, is_zero_scalar};

type Index<V> = HashMap<&'static str, V, foldhash::fast::RandomState>;

/// What one field of a definition holds and how Go writes it.
#[derive(Debug, Clone, Copy)]
struct Field {
    child: Child,
    /// An `omitempty` list or map: left out when empty.
    omit_empty: bool,
    /// A list or map Go always writes: `null` when empty (kube stores objects as protobuf, where
    /// an empty list is no list).
    null_if_empty: bool,
    /// A number or boolean held by value with `omitempty`: left out when zero.
    value_scalar: bool,
    /// A string held by value with `omitempty`: left out when empty.
    value_string: bool,
}

/// The definitions below a field (indexes into [`Plans::plans`]).
#[derive(Debug, Clone, Copy)]
enum Child {
    Leaf,
    Struct(usize),
    List(usize),
    Map(usize),
}

/// One struct definition: its fields, and the zero values of those Go always writes.
#[derive(Debug, Default)]
struct Plan {
    fields: Index<Field>,
    zeros: Vec<(&'static str, &'static Value)>,
}

struct Plans {
    by_name: Index<usize>,
    plans: Vec<Plan>,
}

static PLANS: LazyLock<Plans> = LazyLock::new(|| {
    let b = schema::builtin();
    let structs: Vec<(&'static str, &'static Value)> = b
        .definitions()
        .iter()
        .filter(|(_, d)| d.get("properties").is_some_and(Value::is_object))
        .map(|(n, d)| (n.as_str(), d))
        .collect();
    let by_name: Index<usize> = structs.iter().enumerate().map(|(i, (n, _))| (*n, i)).collect();
    let target = |v: &'static Value| b.resolve_named(v).1.and_then(|n| by_name.get(schema_or(n)).copied());
    let plans = structs
        .iter()
        .map(|(name, def)| {
            let required = def.get("required").and_then(Value::as_array);
            let is_required = |f: &str| required.is_some_and(|r| r.iter().any(|x| x.as_str() == Some(f)));
            let mut plan = Plan::default();
            for (field, prop) in def["properties"].as_object().into_iter().flatten() {
                let (resolved, _) = b.resolve_named(prop);
                let is_list = resolved.get("type").and_then(Value::as_str) == Some("array");
                let map_values = resolved.get("additionalProperties").filter(|a| a.is_object());
                let child = if let Some(i) = target(prop) {
                    Child::Struct(i)
                } else if is_list {
                    resolved.get("items").and_then(target).map_or(Child::Leaf, Child::List)
                } else if let Some(values) = map_values {
                    target(values).map_or(Child::Leaf, Child::Map)
                } else {
                    Child::Leaf
                };
                let required = is_required(field);
                let zero = presence::builtin_zero_value(name, field, || required);
                let collection = is_list || map_values.is_some();
                plan.fields.insert(
                    field.as_str(),
                    Field {
                        child,
                        omit_empty: collection && !required && zero.is_none(),
                        null_if_empty: collection && zero.is_some_and(Value::is_null),
                        value_scalar: presence::is_value_scalar(name, field),
                        value_string: presence::is_value_string(name, field, required),
                    },
                );
                if let Some(zero) = zero {
                    plan.zeros.push((field.as_str(), zero));
                }
            }
            plan
        })
        .collect();
    Plans { by_name, plans }
});

const JSON_SCHEMA_PROPS: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";

/// The definition a CRD schema's "schema or array/bool/strings" value holds as a schema (Go
/// types it as JSONSchemaProps when it is an object).
fn schema_or(name: &str) -> &str {
    match name.strip_prefix(JSON_SCHEMA_PROPS) {
        Some("OrArray" | "OrBool" | "OrStringArray") => JSON_SCHEMA_PROPS,
        _ => name,
    }
}

/// Brings `obj`, an object of the built-in definition `definition`, to the form Go writes it in
/// (see the module documentation). Nothing happens for a name that is not a built-in struct.
pub(crate) fn normalize(obj: &mut Map<String, Value>, definition: &str) {
    let plans = &*PLANS;
    if let Some(&i) = plans.by_name.get(definition) {
        walk(obj, i, plans, true);
    }
}

/// Brings `obj` to the form Go's JSON encoder writes the object decoded from it, before it is
/// stored: as [`normalize`], but an empty list or map of a field Go always writes stays empty
/// (a decoded `[]` is an empty, non-nil slice; only the stored protobuf has none).
pub(crate) fn normalize_decoded(obj: &mut Map<String, Value>, definition: &str) {
    let plans = &*PLANS;
    if let Some(&i) = plans.by_name.get(definition) {
        walk(obj, i, plans, false);
    }
}

fn walk(obj: &mut Map<String, Value>, plan: usize, plans: &Plans, stored: bool) {
    let plan = &plans.plans[plan];
    for (field, zero) in &plan.zeros {
        match obj.get_mut(*field) {
            Some(v) if !v.is_null() => {}
            Some(v) => *v = (*zero).clone(),
            None => {
                obj.insert((*field).to_string(), (*zero).clone());
            }
        }
    }
    obj.retain(|k, v| {
        let Some(f) = plan.fields.get(k.as_str()) else { return true };
        if (f.omit_empty && is_empty_collection(v))
            || (f.value_scalar && is_zero_scalar(v))
            || (f.value_string && v.as_str() == Some(""))
        {
            return false;
        }
        if stored && f.null_if_empty && is_empty_collection(v) {
            *v = Value::Null;
            return true;
        }
        match (f.child, v) {
            (Child::Struct(i), Value::Object(m)) => walk(m, i, plans, stored),
            // (A CRD schema's `items` may be a list of schemas.)
            (Child::List(i) | Child::Struct(i), Value::Array(items)) => {
                for item in items.iter_mut().filter_map(Value::as_object_mut) {
                    walk(item, i, plans, stored);
                }
            }
            (Child::Map(i), Value::Object(m)) => {
                for item in m.values_mut().filter_map(Value::as_object_mut) {
                    walk(item, i, plans, stored);
                }
            }
            _ => {}
        }
        true
    });
}

fn is_empty_collection(v: &Value) -> bool {
    v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(Map::is_empty)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn normalized(definition: &str, mut v: Value) -> Value {
        normalize(v.as_object_mut().unwrap(), definition);
        v
    }

    #[test]
    fn empty_lists_and_maps_go_where_go_leaves_them_out() {
        let fields = json!({"f:spec": {"f:nodeSelector": {}, ".": {}}});
        let pod = json!({"metadata": {"name": "p", "labels": {}, "annotations": {"a": ""},
                "managedFields": [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": fields}]},
            "spec": {"securityContext": {}, "nodeSelector": {}, "containers": [
                {"name": "a", "image": "i", "env": [], "resources": {}},
                {"name": "b", "image": "i", "args": [], "ports": [{"containerPort": 80}]}]}});
        assert_eq!(
            normalized("io.k8s.api.core.v1.Pod", pod),
            json!({"metadata": {"name": "p", "annotations": {"a": ""},
                    "managedFields": [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": fields}]},
                "spec": {"securityContext": {}, "containers": [
                {"name": "a", "image": "i", "resources": {}},
                {"name": "b", "image": "i", "resources": {}, "ports": [{"containerPort": 80}]}]},
                "status": {}})
        );
        // A list Go always writes is null when empty, as kube reads it back from protobuf.
        let slice = json!({"metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": [], "ports": []});
        assert_eq!(
            normalized("io.k8s.api.discovery.v1.EndpointSlice", slice),
            json!({"metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": null, "ports": null})
        );
        // JSON values Go holds by pointer keep theirs: a CRD schema's `default`, a RawExtension.
        let crd = json!({"metadata": {"name": "ws.example.com"}, "spec": {"group": "example.com",
            "names": {"plural": "ws", "kind": "W"}, "scope": "Namespaced", "versions": [{"name": "v1",
            "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "required": [],
            "properties": {"tags": {"type": "array", "items": {"type": "string"}, "default": []}}}}}]}});
        let crd = normalized("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition", crd);
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        assert_eq!(schema["properties"]["tags"]["default"], json!([]));
        assert!(schema.get("required").is_none(), "{schema}");
        // Schemas nested in `items` and `additionalProperties` are Go's JSONSchemaProps too.
        let nested = json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object",
            "properties": {"a": {"type": "array", "items": {"type": "string", "nullable": false, "enum": []}},
                "m": {"type": "object", "additionalProperties": {"type": "integer", "uniqueItems": false}}}}}}]}});
        let nested =
            normalized("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition", nested);
        let props = &nested["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
        assert_eq!(props["a"]["items"], json!({"type": "string"}));
        assert_eq!(props["m"]["additionalProperties"], json!({"type": "integer"}));
        assert_eq!(
            crd["status"],
            json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null})
        );
        // An empty string goes where Go holds it by value, and stays where Go holds it by pointer
        // or always writes it.
        let strings = json!({"metadata": {"name": "p", "generateName": ""}, "spec": {"nodeName": "", "hostname": "",
            "containers": [{"name": "c", "image": "", "workingDir": ""}]}, "status": {"message": "", "phase": ""}});
        assert_eq!(
            normalized("io.k8s.api.core.v1.Pod", strings),
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {}}]}, "status": {}})
        );
        let claim = json!({"metadata": {"name": "c"}, "spec": {"storageClassName": "", "volumeName": ""}});
        assert_eq!(
            normalized("io.k8s.api.core.v1.PersistentVolumeClaim", claim),
            json!({"metadata": {"name": "c"}, "spec": {"storageClassName": "", "resources": {}}, "status": {}})
        );
        let event = json!({"metadata": {"name": "e"}, "reportingComponent": "", "message": ""});
        assert_eq!(normalized("io.k8s.api.core.v1.Event", event)["reportingComponent"], "");
        let revision = json!({"metadata": {"name": "r"}, "revision": 1, "data": []});
        assert_eq!(normalized("io.k8s.api.apps.v1.ControllerRevision", revision.clone()), revision);
    }

    #[test]
    fn fields_go_always_writes_appear() {
        let event = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": "R", "count": 0});
        assert_eq!(
            normalized("io.k8s.api.core.v1.Event", event),
            json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R",
                "source": {}, "firstTimestamp": null, "lastTimestamp": null, "eventTime": null,
                "reportingComponent": "", "reportingInstance": ""})
        );
        let role = normalized("io.k8s.api.rbac.v1.ClusterRole", json!({"metadata": {"name": "r"}}));
        assert_eq!(role, json!({"metadata": {"name": "r"}, "rules": null}));
        let status = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        let pod =
            normalized("io.k8s.api.core.v1.Pod", json!({"metadata": {"name": "p"}, "spec": {}, "status": status}));
        assert_eq!(
            pod["status"]["conditions"][0],
            json!({"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": null})
        );
    }

    #[test]
    fn zero_values_go_held_by_value_go_and_pointers_keep_theirs() {
        let d = json!({"metadata": {"name": "d", "generation": 0}, "spec": {"replicas": 0, "paused": false,
            "minReadySeconds": 0, "revisionHistoryLimit": 0, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"generation": 0, "labels": {"a": "b"}}, "spec": {"hostNetwork": false,
                "terminationGracePeriodSeconds": 0, "containers": [{"name": "c", "image": "i", "stdin": false,
                "tty": true, "ports": [{"containerPort": 80, "hostPort": 0}]}]}}}});
        assert_eq!(
            normalized("io.k8s.api.apps.v1.Deployment", d),
            json!({"metadata": {"name": "d"}, "spec": {"replicas": 0, "revisionHistoryLimit": 0,
                "selector": {"matchLabels": {"a": "b"}}, "strategy": {},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "c", "image": "i", "tty": true, "resources": {},
                        "ports": [{"containerPort": 80}]}]}}},
                "status": {}})
        );
    }

    #[test]
    fn the_form_is_kept_when_written_again() {
        let event = json!({"metadata": {"name": "e"}, "involvedObject": {}, "series": {"count": 2}});
        let once = normalized("io.k8s.api.core.v1.Event", event);
        assert_eq!(normalized("io.k8s.api.core.v1.Event", once.clone()), once);
        let custom = json!({"spec": {"paused": false, "x": []}});
        assert_eq!(normalized("com.example.v1.Widget", custom.clone()), custom);
    }
}
