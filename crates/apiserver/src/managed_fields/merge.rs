//! Merging an applied configuration into a live object (structured-merge-diff's `Merge` with
//! the "keep the right-hand side" rule): what server-side apply stores before pruning.
//!
//! Invariants: every field of either side is in the result; where both have a leaf (a scalar,
//! an atomic list or map) the configuration's wins; granular maps merge key by key;
//! associative lists merge element by element, matched by key, in structured-merge-diff's
//! order: elements both have are placed as the configuration orders them, elements only the
//! live object has stay where they were, new elements come where the configuration puts them.
//! The configuration must not repeat a key (it is validated first); the live object may.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::items::element_of;
use super::path::PathElement;
use super::validate::{Errors, ValidationError};
use crate::schema::{Atom, ListKind, ListType, MapType, TypeRef};

/// `config` merged into `live`, both values of type `ty`.
pub(crate) fn merge(live: &Value, config: &Value, ty: TypeRef<'_>) -> Result<Value, Errors> {
    Ok(merge_value(Some(live), Some(config), ty, "")?.unwrap_or(Value::Null))
}

fn same_kind(a: &Atom<'_>, b: &Atom<'_>) -> bool {
    matches!((a, b), (Atom::Scalar(_), Atom::Scalar(_)) | (Atom::List(_), Atom::List(_)) | (Atom::Map(_), Atom::Map(_)))
}

fn merge_value(lhs: Option<&Value>, rhs: Option<&Value>, ty: TypeRef<'_>, path: &str) -> Result<Option<Value>, Errors> {
    let atom = match (lhs, rhs) {
        (_, None) => ty.atom(lhs),
        (None, Some(_)) => ty.atom(rhs),
        (Some(_), Some(_)) => {
            let (a, b) = (ty.atom(lhs), ty.atom(rhs));
            if same_kind(&a, &b) { b } else { return Ok(rhs.cloned()) }
        }
    };
    let leaf = || Ok(rhs.or(lhs).cloned());
    match atom {
        Atom::Scalar(_) => leaf(),
        Atom::List(list) => {
            let l = lhs.and_then(Value::as_array);
            let r = rhs.and_then(Value::as_array);
            let empty = l.is_none_or(Vec::is_empty) && r.is_none_or(Vec::is_empty);
            if list.kind == ListKind::Atomic || empty {
                return leaf();
            }
            if l.is_none() && r.is_none() {
                return Ok(None);
            }
            let out = merge_items(
                &list,
                l.map(Vec::as_slice).unwrap_or_default(),
                r.map(Vec::as_slice).unwrap_or_default(),
                path,
            )?;
            Ok((!out.is_empty()).then_some(Value::Array(out)))
        }
        Atom::Map(map) => {
            let l = lhs.and_then(Value::as_object);
            let r = rhs.and_then(Value::as_object);
            let empty = l.is_none_or(Map::is_empty) && r.is_none_or(Map::is_empty);
            if map.atomic || empty {
                return leaf();
            }
            if l.is_none() && r.is_none() {
                return Ok(None);
            }
            let out = merge_entries(&map, l, r, path)?;
            Ok((!out.is_empty()).then_some(Value::Object(out)))
        }
    }
}

fn merge_entries(
    map: &MapType<'_>,
    l: Option<&Map<String, Value>>,
    r: Option<&Map<String, Value>>,
    path: &str,
) -> Result<Map<String, Value>, Errors> {
    let mut out = Map::new();
    let mut errors = Errors::default();
    let keys: std::collections::BTreeSet<&String> = l.into_iter().chain(r).flat_map(|m| m.keys()).collect();
    for k in keys {
        let child_path = format!("{path}.{k}");
        match merge_value(l.and_then(|m| m.get(k)), r.and_then(|m| m.get(k)), map.field_or_deduced(k), &child_path) {
            Ok(Some(v)) => {
                out.insert(k.clone(), v);
            }
            Ok(None) => {}
            Err(e) => errors.0.extend(e.0),
        }
    }
    errors.into_result(out)
}

/// The elements of a list with their path elements; errors for elements without one (and
/// for repeated keys when `unique`).
fn index<'v>(
    list: &ListType<'_>,
    items: &'v [Value],
    unique: bool,
    path: &str,
) -> Result<Vec<(PathElement, &'v Value)>, Errors> {
    let mut out = Vec::with_capacity(items.len());
    let mut errors = Errors::default();
    let mut seen = std::collections::BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        match element_of(list, item) {
            Ok(pe) => {
                if !seen.insert(pe.clone()) && unique {
                    errors.0.push(ValidationError::new(path, format!("duplicate entries for key {pe}")));
                    continue;
                }
                out.push((pe, item));
            }
            Err(e) => errors.0.push(ValidationError::new(path, format!("element {i}: {e}"))),
        }
    }
    errors.into_result(out)
}

fn merge_items(list: &ListType<'_>, l: &[Value], r: &[Value], path: &str) -> Result<Vec<Value>, Errors> {
    let rhs = index(list, r, true, path)?;
    let lhs = index(list, l, false, path)?;
    // A repeated key of the live object merges as null (structured-merge-diff's behaviour).
    let mut observed_l: BTreeMap<&PathElement, Option<&Value>> = BTreeMap::new();
    for (pe, v) in &lhs {
        observed_l.entry(pe).and_modify(|e| *e = None).or_insert(Some(*v));
    }
    let observed_r: BTreeMap<&PathElement, &Value> = rhs.iter().map(|(pe, v)| (pe, *v)).collect();
    let null = Value::Null;
    let lchild = |pe: &PathElement| -> Option<&Value> { observed_l.get(pe).map(|v| v.unwrap_or(&null)) };
    let mut shared = rhs.iter().map(|(pe, _)| pe).filter(|pe| observed_l.contains_key(pe));
    let mut next_shared = shared.next();
    let mut merged_r = std::collections::BTreeSet::new();
    let mut out = Vec::with_capacity(l.len().max(r.len()));
    let mut errors = Errors::default();
    let mut push = |pe: &PathElement, lv: Option<&Value>, rv: Option<&Value>, out: &mut Vec<Value>| match merge_value(
        lv,
        rv,
        list.items,
        &format!("{path}{pe}"),
    ) {
        Ok(Some(v)) => out.push(v),
        Ok(None) => {}
        Err(e) => errors.0.extend(e.0),
    };
    let (mut li, mut ri) = (0, 0);
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            let pe = &lhs[li].0;
            if *pe == rhs[ri].0 {
                merged_r.insert(pe.clone());
                push(pe, lchild(pe), observed_r.get(pe).copied(), &mut out);
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if observed_r.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            let pe = &lhs[li].0;
            if !observed_r.contains_key(pe) {
                push(pe, Some(lhs[li].1), None, &mut out);
                li += 1;
                continue;
            } else if merged_r.contains(pe) {
                li += 1;
            }
        }
        if ri < rhs.len() {
            let pe = &rhs[ri].0;
            merged_r.insert(pe.clone());
            push(pe, lchild(pe), observed_r.get(pe).copied(), &mut out);
            ri += 1;
            if next_shared.is_some_and(|n| n == pe) {
                next_shared = shared.next();
            }
        }
    }
    errors.into_result(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::builtin;

    #[test]
    fn lists_merge_by_key_in_structured_merge_diff_order() {
        let ty = builtin().type_of("", "v1", "Pod").unwrap();
        let live = json!({"spec": {"containers": [
            {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}, {"name": "c", "image": "c:1"}
        ], "restartPolicy": "Always"}});
        let config = json!({"spec": {"containers": [{"name": "c", "image": "c:2"}, {"name": "d", "image": "d:1"}, {"name": "a"}]}});
        let out = merge(&live, &config, ty).unwrap();
        let names: Vec<&str> =
            out["spec"]["containers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["b", "c", "d", "a"]);
        assert_eq!(out["spec"]["containers"][1]["image"], "c:2");
        assert_eq!(out["spec"]["containers"][3]["image"], "a:1");
        assert_eq!(out["spec"]["restartPolicy"], "Always");
        // Atomic values are replaced whole.
        let d = builtin().type_of("apps", "v1", "Deployment").unwrap();
        let live = json!({"spec": {"selector": {"matchLabels": {"a": "1", "b": "2"}}}});
        let config = json!({"spec": {"selector": {"matchLabels": {"c": "3"}}}});
        assert_eq!(merge(&live, &config, d).unwrap()["spec"]["selector"], json!({"matchLabels": {"c": "3"}}));
    }
}
