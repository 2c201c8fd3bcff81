//! Strategic merge patch (`application/strategic-merge-patch+json`), driven by the schema.
//!
//! A strategic merge patch is a JSON merge patch that knows the type's lists: a list whose
//! field has `x-kubernetes-patch-strategy: merge` is merged element by element — maps by their
//! `x-kubernetes-patch-merge-key` (containers by `name`, ports by `containerPort`, conditions
//! by `type`), primitives as a union — instead of being replaced. The patch may carry
//! directives, as kube-apiserver accepts them:
//! - `$patch: replace` in a map replaces the map; `$patch: delete` deletes it; as a list element,
//!   `{"$patch": "replace"}` replaces the list with the patch's other elements and
//!   `{"$patch": "delete", <key>: v}` removes the element whose merge key is `v`;
//! - `$retainKeys: [..]` keeps only the named keys of the map (the patch may set no others);
//! - `$deleteFromPrimitiveList/<field>: [..]` removes those values from a list of primitives;
//! - `$setElementOrder/<field>: [..]` gives the order of the merged list.
//!
//! Order of a merged list, as kube-apiserver orders it: the patch's elements in the patch's (or
//! `$setElementOrder`'s) order, the elements only the server had in their old order, the two
//! interleaved by the old order where both are known (so a new element lands first).
//!
//! Invariants: `null` deletes a key and is never stored; no directive is ever stored; a list
//! element the patch does not address is kept, unchanged and in its relative place; a field the
//! schema does not know merges as in a JSON merge patch (maps merge, lists are replaced).

use serde_json::{Map, Value};

use crate::schema::{Field, Node};

/// Why a strategic merge patch could not be applied; each maps to kube-apiserver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SmpError {
    /// 400 BadRequest (malformed directives).
    BadRequest(String),
    /// 422 Invalid (lists of lists).
    Invalid(String),
    /// 500 InternalError (what kube-apiserver reports as an internal error: an unknown `$patch`
    /// value, an element without its merge key).
    Internal(String),
}

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER: &str = "$setElementOrder/";
const DELETE_FROM: &str = "$deleteFromPrimitiveList/";

/// Applies `patch` (a JSON object) to `original` (a JSON object) under the schema `node`.
pub(crate) fn apply(
    original: Map<String, Value>,
    patch: Map<String, Value>,
    node: Node<'_>,
) -> Result<Map<String, Value>, SmpError> {
    merge_map(original, patch, node)
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    node: Node<'_>,
) -> Result<Map<String, Value>, SmpError> {
    if let Some(d) = patch.remove(PATCH) {
        return match d.as_str() {
            Some("replace") => Ok(clean_map(patch)),
            Some("delete") => Ok(Map::new()),
            _ => Err(SmpError::Internal(format!("unknown patch type: {} in map", display(&d)))),
        };
    }
    if let Some(keys) = patch.remove(RETAIN_KEYS) {
        let Some(keys) = keys.as_array() else {
            return Err(SmpError::BadRequest("invalid patch format of retainKeys".into()));
        };
        let kept = |k: &str| keys.iter().any(|v| v.as_str() == Some(k));
        for (k, v) in &patch {
            if !v.is_null() && !k.starts_with(DELETE_FROM) && !k.starts_with(SET_ORDER) && !kept(k) {
                return Err(SmpError::BadRequest("invalid patch format of retainKeys".into()));
            }
        }
        original.retain(|k, _| kept(k));
    }
    let orders: Vec<String> = patch.keys().filter(|k| k.starts_with(SET_ORDER)).cloned().collect();
    for directive in orders {
        let order = patch.remove(&directive).unwrap_or_default();
        let field_name = &directive[SET_ORDER.len()..];
        set_element_order(&mut original, &mut patch, field_name, order, node)?;
    }
    for (k, pv) in patch {
        if let Some(field_name) = k.strip_prefix(DELETE_FROM) {
            let Value::Array(remove) = pv else {
                return Err(SmpError::BadRequest("invalid patch format of primitive list".into()));
            };
            if let Some(Value::Array(list)) = original.get_mut(field_name) {
                list.retain(|v| !remove.contains(v));
            }
            continue;
        }
        if pv.is_null() {
            original.remove(&k);
            continue;
        }
        let Some(ov) = original.get_mut(&k) else {
            original.insert(k, clean(pv));
            continue;
        };
        let field = node.field(&k);
        *ov = match (ov.take(), pv) {
            (Value::Object(o), Value::Object(p)) => {
                if strategy(&field) == Some("replace") {
                    Value::Object(clean_map(p))
                } else {
                    Value::Object(merge_map(o, p, field.node)?)
                }
            }
            (Value::Array(o), Value::Array(p)) => {
                if strategy(&field) == Some("merge") {
                    Value::Array(merge_list(o, p, &field, &k)?)
                } else {
                    clean(Value::Array(p))
                }
            }
            (_, p) => clean(p),
        };
    }
    Ok(original)
}

/// The field's patch strategy without `retainKeys` (which only tells clients to send the
/// directive): "merge", "replace" or none.
fn strategy<'a>(field: &Field<'a>) -> Option<&'a str> {
    let s = field.patch_strategy?;
    s.split(',').map(str::trim).find(|s| *s == "merge" || *s == "replace")
}

/// `$setElementOrder/<field>`: merges the field's list and orders it as the directive says.
fn set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    name: &str,
    order: Value,
    node: Node<'_>,
) -> Result<(), SmpError> {
    let bad = || SmpError::BadRequest("invalid patch format of setElementOrder list".into());
    let Value::Array(order) = order else { return Err(bad()) };
    let field = node.field(name);
    let key = field.merge_key;
    let old = match original.remove(name) {
        None => None,
        Some(Value::Array(l)) => Some(l),
        Some(other) => {
            original.insert(name.to_string(), other);
            return Err(bad());
        }
    };
    let new = match patch.remove(name) {
        None => None,
        Some(Value::Array(l)) => Some(l),
        Some(_) => return Err(bad()),
    };
    if let Some(p) = &new {
        check_order_covers_patch(p, &order, key).ok_or_else(bad)?;
    }
    let old_order = old.clone().unwrap_or_default();
    let merged = match (old, new) {
        (None, None) => return Ok(()),
        (Some(o), None) => o,
        (None, Some(p)) => clean_list(p),
        (Some(o), Some(p)) => {
            if strategy(&field) == Some("merge") {
                merge_list(o, p, &field, name)?
            } else {
                clean_list(p)
            }
        }
    };
    let (in_order, server_only): (Vec<Value>, Vec<Value>) =
        merged.into_iter().partition(|v| position(&order, v, key).is_some());
    original.insert(name.to_string(), Value::Array(normalize(in_order, server_only, &order, &old_order, key)));
    Ok(())
}

/// Whether every element of the patch's list (but `$patch` elements) is in the order list, in
/// the same relative order.
fn check_order_covers_patch(patch: &[Value], order: &[Value], key: Option<&str>) -> Option<()> {
    let mut last = 0;
    for v in patch {
        if v.get(PATCH).is_some() {
            continue;
        }
        let i = position(order, v, key)?;
        if i < last {
            return None;
        }
        last = i;
    }
    Some(())
}

/// Merges two lists of a field whose strategy is `merge`.
fn merge_list(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    field: &Field<'_>,
    name: &str,
) -> Result<Vec<Value>, SmpError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let first = original.iter().chain(&patch).find(|v| !v.is_null());
    if first.is_some_and(Value::is_array) {
        return Err(SmpError::Invalid("lists of lists are not supported".into()));
    }
    if !first.is_some_and(Value::is_object) {
        // Primitives: the union, the patch's order first.
        let old_order = original.clone();
        let mut merged = original;
        for v in &patch {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        let (in_patch, server_only): (Vec<Value>, Vec<Value>) = merged.into_iter().partition(|v| patch.contains(v));
        return Ok(normalize(in_patch, server_only, &patch, &old_order, None));
    }
    let Some(key) = field.merge_key else {
        return Err(SmpError::Internal(format!("cannot merge lists without merge key for {name}")));
    };
    // Special elements: `$patch: delete` removes, `$patch: replace` replaces the list.
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for v in patch {
        match v.get(PATCH) {
            None => plain.push(v),
            Some(d) => match d.as_str() {
                Some("delete") => {
                    let Some(kv) = v.get(key) else {
                        return Err(SmpError::Internal(format!(
                            "map: {} does not contain declared merge key: {key}",
                            display(&v)
                        )));
                    };
                    original.retain(|o| o.get(key) != Some(kv));
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(SmpError::Internal("merging lists cannot yet be specified in the patch".into()));
                }
                _ => return Err(SmpError::Internal(format!("unknown patch type: {} in map", display(d)))),
            },
        }
    }
    if replace {
        return Ok(clean_list(plain));
    }
    let old_order = original.clone();
    let mut merged = original;
    for v in &plain {
        let Some(kv) = v.get(key) else {
            return Err(SmpError::Internal(format!("map: {} does not contain declared merge key: {key}", display(v))));
        };
        match merged.iter_mut().find(|o| o.get(key) == Some(kv)) {
            Some(o) => {
                let Value::Object(p) = v.clone() else { continue };
                let old = std::mem::take(o);
                *o = match old {
                    Value::Object(m) => Value::Object(merge_map(m, p, field.node)?),
                    _ => Value::Object(clean_map(p)),
                };
            }
            None => merged.push(clean(v.clone())),
        }
    }
    let (in_patch, server_only): (Vec<Value>, Vec<Value>) =
        merged.into_iter().partition(|v| position(&plain, v, Some(key)).is_some());
    Ok(normalize(in_patch, server_only, &plain, &old_order, Some(key)))
}

/// The position of `v` in `list`: by merge key for maps, by value for primitives.
fn position(list: &[Value], v: &Value, key: Option<&str>) -> Option<usize> {
    match key {
        Some(k) => {
            let kv = v.get(k)?;
            list.iter().position(|o| o.get(k) == Some(kv))
        }
        None => list.iter().position(|o| o == v),
    }
}

/// kube-apiserver's order of a merged list: `from_patch` sorted by `patch_order`, `server_only`
/// sorted by `server_order`, then the server-only elements inserted among the patch's where
/// the old order says they came first.
fn normalize(
    mut from_patch: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    from_patch.sort_by_key(|v| position(patch_order, v, key).unwrap_or(usize::MAX));
    server_only.sort_by_key(|v| position(server_order, v, key).unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(from_patch.len() + server_only.len());
    let (mut left, mut right) = (server_only.into_iter().peekable(), from_patch.into_iter().peekable());
    loop {
        match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => out.extend(left.by_ref()),
            (None, Some(_)) => out.extend(right.by_ref()),
            (Some(l), Some(r)) => {
                let earlier = match (position(server_order, l, key), position(server_order, r, key)) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                };
                out.extend(if earlier { left.next() } else { right.next() });
            }
        }
    }
    out
}

/// A value taken from the patch as is: without nulls and directives.
fn clean(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(clean_map(m)),
        Value::Array(l) => Value::Array(clean_list(l)),
        other => other,
    }
}

fn clean_map(m: Map<String, Value>) -> Map<String, Value> {
    m.into_iter().filter(|(k, v)| !v.is_null() && !is_directive(k)).map(|(k, v)| (k, clean(v))).collect()
}

fn clean_list(l: Vec<Value>) -> Vec<Value> {
    l.into_iter().filter(|v| v.get(PATCH).is_none()).map(clean).collect()
}

fn is_directive(k: &str) -> bool {
    k == PATCH || k == RETAIN_KEYS || k.starts_with(SET_ORDER) || k.starts_with(DELETE_FROM)
}

/// A patch value for an error message, shortened.
fn display(v: &Value) -> String {
    let mut s = v.to_string();
    if s.len() > 200 {
        let mut end = 200;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::builtin;
    use serde_json::json;

    fn deploy_patch(original: Value, patch: Value) -> Result<Value, SmpError> {
        let node = builtin().root("apps", "v1", "Deployment").unwrap();
        let (Value::Object(o), Value::Object(p)) = (original, patch) else { panic!("objects") };
        apply(o, p, node).map(Value::Object)
    }

    fn containers(names: &[&str]) -> Value {
        json!({"spec": {"template": {"spec": {"containers":
            names.iter().map(|n| json!({"name": n, "image": format!("{n}:1")})).collect::<Vec<_>>()}}}})
    }

    fn names(v: &Value) -> Vec<String> {
        v["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn containers_merge_by_name_and_new_ones_land_first() {
        let out = deploy_patch(
            containers(&["app"]),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "p:1"}]}}}}),
        )
        .unwrap();
        assert_eq!(names(&out), ["proxy", "app"]);
        let out = deploy_patch(
            containers(&["app", "proxy"]),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "app:2"}]}}}}),
        )
        .unwrap();
        assert_eq!(names(&out), ["app", "proxy"]);
        assert_eq!(out["spec"]["template"]["spec"]["containers"][0]["image"], "app:2");
        assert_eq!(out["spec"]["template"]["spec"]["containers"][1]["image"], "proxy:1");
    }

    #[test]
    fn directives_delete_replace_and_order() {
        let del = json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "app"}], "containers": [{"$patch": "delete", "name": "proxy"}]}}}});
        assert_eq!(names(&deploy_patch(containers(&["app", "proxy"]), del).unwrap()), ["app"]);
        let rep = json!({"spec": {"template": {"spec": {"containers": [{"$patch": "replace"}, {"name": "x", "image": "x"}]}}}});
        assert_eq!(names(&deploy_patch(containers(&["app", "proxy"]), rep).unwrap()), ["x"]);
        let order = json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}], "containers": [{"name": "b", "image": "b:2"}]}}}});
        assert_eq!(names(&deploy_patch(containers(&["a", "b"]), order).unwrap()), ["b", "a"]);
    }

    #[test]
    fn primitive_lists_union_and_delete() {
        let o = json!({"metadata": {"finalizers": ["a", "c"]}});
        let out = deploy_patch(o.clone(), json!({"metadata": {"finalizers": ["d"]}})).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["d", "a", "c"]));
        let out = deploy_patch(o, json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["c"]));
    }

    #[test]
    fn retain_keys_and_map_directives() {
        let o = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        let out = deploy_patch(o.clone(), json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}))
            .unwrap();
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(
            deploy_patch(o.clone(), json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}})),
            Err(SmpError::BadRequest("invalid patch format of retainKeys".into()))
        );
        let out =
            deploy_patch(o.clone(), json!({"spec": {"strategy": {"$patch": "replace", "type": "Recreate"}}})).unwrap();
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
        let out = deploy_patch(o.clone(), json!({"spec": {"strategy": {"$patch": "delete"}}})).unwrap();
        assert_eq!(out["spec"]["strategy"], json!({}));
        assert!(matches!(
            deploy_patch(o, json!({"spec": {"strategy": {"$patch": "bogus"}}})),
            Err(SmpError::Internal(_))
        ));
    }

    #[test]
    fn atomic_lists_are_replaced_and_nulls_delete() {
        let o = json!({"spec": {"template": {"spec": {"tolerations": [{"key": "a"}, {"key": "b"}]}}, "paused": true}});
        let out =
            deploy_patch(o, json!({"spec": {"template": {"spec": {"tolerations": [{"key": "c"}]}}, "paused": null}}))
                .unwrap();
        assert_eq!(out["spec"]["template"]["spec"]["tolerations"], json!([{"key": "c"}]));
        assert!(out["spec"].get("paused").is_none());
    }

    #[test]
    fn elements_without_their_merge_key_fail() {
        let err = deploy_patch(
            containers(&["app"]),
            json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
        );
        assert!(matches!(err, Err(SmpError::Internal(m)) if m.contains("does not contain declared merge key: name")));
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::schema::builtin;
    use proptest::prelude::*;
    use serde_json::json;

    /// A container list: distinct names from a small alphabet, so patches often address them.
    fn containers() -> impl Strategy<Value = Vec<(String, u8)>> {
        proptest::collection::btree_map("[a-f]", any::<u8>(), 0..6).prop_map(|m| m.into_iter().collect())
    }

    /// One element of a patch's container list.
    #[derive(Debug, Clone)]
    enum Edit {
        Set(String, u8),
        Delete(String),
    }

    fn edits() -> impl Strategy<Value = Vec<Edit>> {
        let edit =
            prop_oneof![("[a-h]", any::<u8>()).prop_map(|(n, i)| Edit::Set(n, i)), "[a-h]".prop_map(Edit::Delete),];
        proptest::collection::vec(edit, 0..5)
    }

    fn pod(list: &[(String, u8)], finalizers: &[String]) -> Value {
        json!({
            "metadata": {"finalizers": finalizers},
            "spec": {"containers": list.iter().map(|(n, i)| json!({"name": n, "image": format!("img:{i}")})).collect::<Vec<_>>()},
        })
    }

    proptest! {
        #[test]
        fn elements_the_patch_does_not_address_are_kept(
            original in containers(),
            edits in edits(),
            finalizers in proptest::collection::btree_set("[a-d]", 0..4),
            added in proptest::collection::vec("[a-f]", 0..3),
        ) {
            let finalizers: Vec<String> = finalizers.into_iter().collect();
            let patch_list: Vec<Value> = edits.iter().map(|e| match e {
                Edit::Set(n, i) => json!({"name": n, "image": format!("new:{i}")}),
                Edit::Delete(n) => json!({"$patch": "delete", "name": n}),
            }).collect();
            let patch = json!({"metadata": {"finalizers": added}, "spec": {"containers": patch_list}});
            let node = builtin().root("", "v1", "Pod").unwrap();
            let (Value::Object(o), Value::Object(p)) = (pod(&original, &finalizers), patch) else { unreachable!() };
            let out = apply(o, p, node);
            prop_assert!(out.is_ok(), "{:?}", out);
            let out = out.unwrap();
            let result = out["spec"]["containers"].as_array().cloned().unwrap_or_default();
            let addressed = |n: &str| edits.iter().any(|e| matches!(e, Edit::Set(m, _) | Edit::Delete(m) if m == n));
            for (name, i) in &original {
                let kept = result.iter().find(|c| c["name"] == name.as_str());
                if !addressed(name) {
                    prop_assert_eq!(kept.map(|c| c["image"].clone()), Some(json!(format!("img:{i}"))), "{} lost", name);
                }
            }
            for e in &edits {
                if let Edit::Delete(n) = e && !edits.iter().any(|x| matches!(x, Edit::Set(m, _) if m == n)) {
                    prop_assert!(result.iter().all(|c| c["name"] != n.as_str()), "{} not deleted", n);
                }
            }
            // The relative order of the untouched elements is kept.
            let untouched: Vec<&str> = original.iter().map(|(n, _)| n.as_str()).filter(|n| !addressed(n)).collect();
            let in_result: Vec<&str> = result.iter().filter_map(|c| c["name"].as_str()).filter(|n| untouched.contains(n)).collect();
            prop_assert_eq!(in_result, untouched);
            // Primitive lists: the union, nothing lost.
            let merged: Vec<String> = serde_json::from_value(out["metadata"]["finalizers"].clone()).unwrap_or_default();
            for f in &finalizers {
                prop_assert!(merged.contains(f), "finalizer {} lost", f);
            }
        }
    }
}
