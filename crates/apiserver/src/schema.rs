//! The OpenAPI schemas of Kubernetes v1.35's built-in types, and walking them field by field.
//!
//! The definitions are Kubernetes' own (see the crate's build step): every type with its
//! properties, `$ref`s between definitions, and the `x-kubernetes-*` extensions that tell how a
//! field merges (`x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` for strategic
//! merge patches).
//!
//! Invariants: the definitions are parsed once, on first use, and never change; a type is
//! found by its group, version and kind (`x-kubernetes-group-version-kind`); a [`Node`] whose
//! schema is unknown (a field the schema does not name) answers every question with "no
//! metadata", so callers fall back to plain JSON semantics below it.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

/// The definitions text written by the build step: definition name → schema (OpenAPI v3 form).
const DEFINITIONS: &str = include_str!(concat!(env!("OUT_DIR"), "/kube-definitions.json"));

/// The parsed definitions and an index by group, version and kind.
pub(crate) struct Schemas {
    defs: Map<String, Value>,
    by_gvk: HashMap<(String, String, String), String>,
}

/// The built-in types' schemas, parsed on first use.
pub(crate) fn builtin() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| Schemas::parse(DEFINITIONS))
}

impl Schemas {
    fn parse(text: &str) -> Schemas {
        let defs: Map<String, Value> = serde_json::from_str(text).expect("the build step writes a JSON object");
        let mut by_gvk = HashMap::new();
        for (name, schema) in &defs {
            let Some(gvks) = schema.get("x-kubernetes-group-version-kind").and_then(Value::as_array) else {
                continue;
            };
            // A definition naming several kinds (DeleteOptions, WatchEvent…) is shared, not a
            // resource's own type.
            if gvks.len() != 1 {
                continue;
            }
            let s = |k: &str| gvks[0].get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            by_gvk.insert((s("group"), s("version"), s("kind")), name.clone());
        }
        Schemas { defs, by_gvk }
    }

    /// Every definition, by name.
    pub(crate) fn definitions(&self) -> &Map<String, Value> {
        &self.defs
    }

    /// The definition name of a type (`io.k8s.api.apps.v1.Deployment`).
    pub(crate) fn name_of(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.by_gvk.get(&(group.to_string(), version.to_string(), kind.to_string())).map(String::as_str)
    }

    /// The root node of a type's schema, if the type is a built-in one.
    pub(crate) fn root(&self, group: &str, version: &str, kind: &str) -> Option<Node<'_>> {
        let name = self.name_of(group, version, kind)?;
        Some(Node { schemas: self, schema: self.defs.get(name) })
    }

    /// Follows `$ref` (directly or as the single element of `allOf`) to the schema it names.
    fn resolve<'a>(&'a self, mut v: &'a Value) -> &'a Value {
        for _ in 0..16 {
            let r = v.get("$ref").or_else(|| v.get("allOf")?.as_array()?.first()?.get("$ref"));
            match r.and_then(Value::as_str).and_then(|r| r.strip_prefix("#/components/schemas/")) {
                Some(name) => match self.defs.get(name) {
                    Some(d) => v = d,
                    None => return v,
                },
                None => return v,
            }
        }
        v
    }
}

/// A place in a type's schema; `schema` is None where the schema says nothing.
#[derive(Clone, Copy)]
pub(crate) struct Node<'a> {
    schemas: &'a Schemas,
    schema: Option<&'a Value>,
}

/// How one field of an object merges, and the schema of its value (of its items, for a list).
#[derive(Clone, Copy)]
pub(crate) struct Field<'a> {
    /// The value's schema: the items' schema when the field is a list.
    pub(crate) node: Node<'a>,
    /// `x-kubernetes-patch-strategy`: "merge", "retainKeys", "merge,retainKeys", "replace".
    pub(crate) patch_strategy: Option<&'a str>,
    /// `x-kubernetes-patch-merge-key`.
    pub(crate) merge_key: Option<&'a str>,
}

impl<'a> Node<'a> {
    /// A node that knows nothing (plain JSON semantics everywhere below it).
    pub(crate) fn unknown(schemas: &'a Schemas) -> Self {
        Node { schemas, schema: None }
    }

    /// The resolved schema at this node, if known.
    pub(crate) fn schema(&self) -> Option<&'a Value> {
        self.schema.map(|s| self.schemas.resolve(s))
    }

    /// The `type` of the schema here ("object", "array", "string"…), if known.
    #[cfg(test)]
    fn type_name(&self) -> Option<&'a str> {
        self.schema()?.get("type")?.as_str()
    }

    /// Whether the object this node describes has a field `name`: None when the schema is
    /// unknown or takes any field (no `properties`, or `x-kubernetes-preserve-unknown-fields`).
    pub(crate) fn knows(&self, name: &str) -> Option<bool> {
        let s = self.schema()?;
        if s.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        if s.get("additionalProperties").is_some_and(Value::is_object) {
            return Some(true);
        }
        let props = s.get("properties")?.as_object()?;
        Some(props.contains_key(name))
    }

    /// Field `name` of the object this node describes: a named property, or the value schema
    /// of a map (`additionalProperties`).
    pub(crate) fn field(&self, name: &str) -> Field<'a> {
        let field_schema = self.schema().and_then(|s| {
            s.get("properties")
                .and_then(|p| p.get(name))
                .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
        });
        self.describe(field_schema)
    }

    fn describe(&self, field_schema: Option<&'a Value>) -> Field<'a> {
        let unknown = Field { node: Node::unknown(self.schemas), patch_strategy: None, merge_key: None };
        let Some(fs) = field_schema else { return unknown };
        let s = |k: &str| fs.get(k).and_then(Value::as_str);
        let resolved = self.schemas.resolve(fs);
        let is_list = resolved.get("type").and_then(Value::as_str) == Some("array");
        let value = if is_list { resolved.get("items") } else { Some(fs) };
        Field {
            node: Node { schemas: self.schemas, schema: value },
            patch_strategy: s("x-kubernetes-patch-strategy"),
            merge_key: s("x-kubernetes-patch-merge-key"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_built_in_types_and_their_merge_keys() {
        let s = builtin();
        assert_eq!(s.name_of("apps", "v1", "Deployment"), Some("io.k8s.api.apps.v1.Deployment"));
        assert_eq!(s.name_of("", "v1", "Pod"), Some("io.k8s.api.core.v1.Pod"));
        let pod_spec =
            s.root("apps", "v1", "Deployment").unwrap().field("spec").node.field("template").node.field("spec");
        let containers = pod_spec.node.field("containers");
        assert_eq!(containers.patch_strategy, Some("merge"));
        assert_eq!(containers.merge_key, Some("name"));
        let ports = containers.node.field("ports");
        assert_eq!(ports.merge_key, Some("containerPort"));
        let tolerations = pod_spec.node.field("tolerations");
        assert_eq!(tolerations.patch_strategy, None);
        let finalizers = s.root("", "v1", "ConfigMap").unwrap().field("metadata").node.field("finalizers");
        assert_eq!(finalizers.patch_strategy, Some("merge"));
        let data = s.root("", "v1", "ConfigMap").unwrap().field("data");
        assert_eq!(data.node.type_name(), Some("object"));
        assert_eq!(data.node.field("any-key").node.type_name(), Some("string"));
        assert!(s.root("example.com", "v1", "Widget").is_none());
        assert!(containers.node.field("noSuchField").node.schema().is_none());
    }
}
