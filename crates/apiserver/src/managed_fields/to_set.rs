//! The set of fields a value sets (structured-merge-diff's `ToFieldSet`): what an applied
//! configuration claims, and what an object holds when apply prunes fields.
//!
//! Invariants: every scalar, atomic list, atomic map, list element, map key, empty map and
//! explicit null is a member; a struct's named fields holding non-empty maps or lists are not
//! members themselves (only what is inside them); a list element whose key appears twice is
//! a member once and not descended into.

use serde_json::Value;

use super::items::element_of;
use super::path::PathElement;
use super::set::FieldSet;
use crate::schema::{Atom, ListKind, TypeRef};

/// The fields `v`, a value of type `ty`, sets.
pub(crate) fn field_set(v: &Value, ty: TypeRef<'_>) -> FieldSet {
    walk(v, ty).0
}

/// The set below a value, and whether the value itself is a member.
fn walk(v: &Value, ty: TypeRef<'_>) -> (FieldSet, bool) {
    match ty.atom(Some(v)) {
        Atom::Scalar(_) => (FieldSet::new(), true),
        Atom::List(list) => {
            if list.kind == ListKind::Atomic {
                return (FieldSet::new(), true);
            }
            let Value::Array(items) = v else { return (FieldSet::new(), false) };
            let elements: Vec<Option<PathElement>> = items.iter().map(|i| element_of(&list, i).ok()).collect();
            let mut set = FieldSet::new();
            let duplicated = |pe: &PathElement| elements.iter().flatten().filter(|e| *e == pe).nth(1).is_some();
            for (item, pe) in items.iter().zip(&elements) {
                let Some(pe) = pe else { continue };
                if duplicated(pe) {
                    set.insert_member(pe.clone());
                    continue;
                }
                let (below, _) = walk(item, list.items);
                set.insert_member(pe.clone());
                set.insert_child(pe.clone(), below);
            }
            (set, false)
        }
        Atom::Map(map) => {
            if map.atomic {
                return (FieldSet::new(), true);
            }
            let Value::Object(m) = v else { return (FieldSet::new(), false) };
            let mut set = FieldSet::new();
            for (k, child) in m {
                let (below, member) = walk(child, map.field_or_deduced(k));
                let empty = child.is_null() || child.as_object().is_some_and(|o| o.is_empty());
                let pe = PathElement::field(k);
                if member || empty || !map.is_named_field(k) {
                    set.insert_member(pe.clone());
                }
                set.insert_child(pe, below);
            }
            (set, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::builtin;

    #[test]
    fn an_applied_deployment_claims_its_fields_as_kube_records_them() {
        let ty = builtin().type_of("apps", "v1", "Deployment").unwrap();
        let config = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "api", "labels": {"app": "api"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "api"}},
                "template": {"metadata": {"labels": {"app": "api"}},
                    "spec": {"containers": [{"name": "app", "image": "x", "ports": [{"containerPort": 80}], "resources": {}}]}}}
        });
        let set = field_set(&config, ty);
        assert_eq!(
            set.to_fields_v1(),
            json!({
                "f:apiVersion": {}, "f:kind": {},
                "f:metadata": {"f:labels": {"f:app": {}}, "f:name": {}},
                "f:spec": {"f:replicas": {}, "f:selector": {},
                    "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                            ".": {}, "f:image": {}, "f:name": {}, "f:resources": {},
                            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                        }}}}}
            })
        );
    }
}
