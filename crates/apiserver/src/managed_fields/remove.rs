//! Removing a set of fields from a value (structured-merge-diff's `RemoveItems`): how apply
//! drops what a manager stopped applying.
//!
//! Invariants: a member of the set is removed with everything below it (a map entry, a list
//! element); a subtree of the set is removed from inside the value; atomic values are never
//! entered. A map or list left empty by the removal becomes `null`, as in structured-merge-diff
//! (the caller normalizes nulls as Go's types would).

use serde_json::{Map, Value};

use super::items::element_of;
use super::path::PathElement;
use super::set::FieldSet;
use crate::schema::{Atom, ListKind, TypeRef};

/// `v` without the fields of `set`.
pub(crate) fn remove_items(v: &Value, set: &FieldSet, ty: TypeRef<'_>) -> Value {
    if set.is_empty() {
        return v.clone();
    }
    remove(v, set, ty).unwrap_or(Value::Null)
}

fn remove(v: &Value, set: &FieldSet, ty: TypeRef<'_>) -> Option<Value> {
    match ty.atom(Some(v)) {
        Atom::Scalar(_) => Some(v.clone()),
        Atom::List(list) => {
            let Value::Array(items) = v else { return None };
            if items.is_empty() || list.kind == ListKind::Atomic {
                return None;
            }
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let Ok(pe) = element_of(&list, item) else {
                    out.push(item.clone());
                    continue;
                };
                if set.has_member(&pe) {
                    continue;
                }
                match set.child(&pe) {
                    Some(below) => out.push(remove(item, below, list.items).unwrap_or(Value::Null)),
                    None => out.push(item.clone()),
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        Atom::Map(map) => {
            let Value::Object(m) = v else { return None };
            if m.is_empty() || map.atomic {
                return None;
            }
            let mut out = Map::new();
            for (k, child) in m {
                let pe = PathElement::field(k);
                if set.has_member(&pe) {
                    continue;
                }
                let kept = match set.child(&pe) {
                    Some(below) => remove(child, below, map.field_or_deduced(k)).unwrap_or(Value::Null),
                    None => child.clone(),
                };
                out.insert(k.clone(), kept);
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::managed_fields::path::Path;
    use crate::schema::builtin;

    #[test]
    fn members_go_with_what_is_below_them() {
        let ty = builtin().type_of("apps", "v1", "Deployment").unwrap();
        let v = json!({"metadata": {"labels": {"app": "a", "owner": "x"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "app", "image": "i"}, {"name": "proxy", "image": "p"}]}}}});
        let mut set = FieldSet::new();
        set.insert(&Path::fields(&["metadata", "labels", "owner"]).0);
        set.insert(&Path::fields(&["spec", "replicas"]).0);
        let mut proxy = Path::fields(&["spec", "template", "spec", "containers"]).0;
        proxy.push(PathElement::key(vec![("name".into(), json!("proxy"))]));
        set.insert(&proxy);
        let out = remove_items(&v, &set, ty);
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"app": "a"}},
                "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "i"}]}}}})
        );
        // Emptied maps become null, as structured-merge-diff leaves them.
        let mut all = FieldSet::new();
        all.insert(&Path::fields(&["metadata", "labels", "app"]).0);
        all.insert(&Path::fields(&["metadata", "labels", "owner"]).0);
        assert_eq!(remove_items(&v, &all, ty)["metadata"]["labels"], Value::Null);
    }
}
