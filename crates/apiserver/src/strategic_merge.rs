//! Strategic merge patch (`application/strategic-merge-patch+json`), driven by the schema, as
//! kube-apiserver applies one to a built-in object.
//!
//! A strategic merge patch is a JSON merge patch that knows the type's lists: a list whose
//! field has `x-kubernetes-patch-strategy: merge` is merged element by element — maps by their
//! `x-kubernetes-patch-merge-key` (containers by `name`, ports by `containerPort`, conditions
//! by `type`), primitives as a union without repeats — instead of being replaced. The patch may
//! carry directives:
//! - `$patch: replace` in a map replaces the map; `$patch: delete` empties it; as a list element,
//!   `{"$patch": "replace"}` replaces the list with the patch's other elements and
//!   `{"$patch": "delete", <key>: v}` removes the elements whose merge key is `v`;
//! - `$retainKeys: [..]` keeps only the named keys of the map (the patch may set no others);
//! - `$deleteFromPrimitiveList/<field>: [..]` removes those values from a list of primitives;
//! - `$setElementOrder/<field>: [..]` gives the order of the merged list.
//!
//! Where the live object lacks a field, the patch's value is taken as kube-apiserver takes it: a
//! map carrying `$patch` is dropped (the field stays unset), other directive keys stay in the
//! value (and are then unknown fields of the type, as kube's decoding reports them). Elements a
//! merged list gains, and maps and lists replaced whole, are the patch's as written.
//!
//! Order of a merged list, as kube-apiserver orders it: the patch's elements in the patch's (or
//! `$setElementOrder`'s) order, the elements only the server had in their old order, the two
//! interleaved by the old order where both are known (so a new element lands first). With
//! `$setElementOrder`, the old order is the live list as kube's merge leaves it in place: its
//! deletions shift the later elements forward and the first added elements take the freed
//! places at its end.
//!
//! Errors are kube-apiserver's: a malformed directive is 400; a list of lists 422 (a message of
//! its own); anything else is Go's error text as a 500 without a reason — an element (new or
//! stored) without its merge key, an unknown `$patch`, a `$setElementOrder` list that does not
//! match the patch's, values of the wrong type. Messages print values as Go's `%v` prints them
//! ([`crate::go_fmt`]).
//!
//! Invariants: a `null` member is never stored (it deletes the key; kube's typed decoding drops
//! one inside a value); a list element the patch does not address is kept, unchanged and in its
//! relative place; a field the schema does not know merges as in a JSON merge patch (maps merge,
//! lists are replaced); a live list is taken to have no spare capacity (as kube-apiserver holds
//! it when it reads the object from its watch cache).

use serde_json::{Map, Value};

use crate::go_fmt;
use crate::schema::{Field, Node};

/// Why a strategic merge patch could not be applied; each maps to kube-apiserver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SmpError {
    /// 400 BadRequest: a malformed directive (kube's `mergepatch` format errors).
    BadRequest(String),
    /// 422 Invalid, with kube's generic message: a list of lists.
    ListOfLists,
    /// 500 without a reason, the message Go's error text: every other failure.
    Failed(String),
    /// 500: where kube's merge panics (two maps or two lists compared as values, maps or lists
    /// hashed as set members, a list whose first element is `null`).
    Panic,
}

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER: &str = "$setElementOrder";
const DELETE_FROM: &str = "$deleteFromPrimitiveList";

/// Go's type names of a decoded map and list, as kube's type errors print them.
const MAP: &str = "map[string]interface {}";
const SLICE: &str = "[]interface {}";

/// Applies `patch` (a JSON object) to `original` (a JSON object) under the schema `node`.
pub(crate) fn apply(
    original: Map<String, Value>,
    patch: Map<String, Value>,
    node: Node<'_>,
) -> Result<Map<String, Value>, SmpError> {
    let mut merged = merge_map(original, patch, node)?;
    drop_null_members(&mut merged);
    Ok(merged)
}

/// The patch as kube's merge leaves it once applied to `original`, printed as kube-apiserver
/// prints the invalid value of a strategic merge patch whose result it cannot decode (`%+v` of
/// its patch map, which the merge edits in place): without its `$setElementOrder` directives
/// and the lists they order, its `$retainKeys`, the `$patch: replace` markers of maps merged
/// and, under a field the live object lacks (or holds with another type), its null members and
/// the maps carrying `$patch`.
pub(crate) fn patch_after_merge(original: &Map<String, Value>, patch: &Map<String, Value>, node: Node<'_>) -> String {
    let mut left = patch.clone();
    leave_map(original, &mut left, node);
    go_fmt::map(&left)
}

/// What kube's `mergeMap` leaves of `patch` (see [`patch_after_merge`]).
fn leave_map(original: &Map<String, Value>, patch: &mut Map<String, Value>, node: Node<'_>) {
    if let Some(d) = patch.get(PATCH) {
        if d.as_str() == Some("replace") {
            patch.remove(PATCH);
        }
        return;
    }
    patch.remove(RETAIN_KEYS);
    let orders: Vec<String> = patch.keys().filter(|k| k.starts_with(SET_ORDER)).cloned().collect();
    for directive in orders {
        patch.remove(&directive);
        if let Ok(name) = extract_key(&directive, SET_ORDER) {
            patch.remove(&name);
        }
    }
    for (k, pv) in patch.iter_mut() {
        if k.starts_with(DELETE_FROM) || pv.is_null() {
            continue;
        }
        let ov = match original.get(k) {
            Some(ov) if go_fmt::type_name(ov) == go_fmt::type_name(pv) => ov,
            _ => {
                drop_nulls_in(pv);
                strip_directives(pv);
                continue;
            }
        };
        let field = node.field(k);
        match (ov, pv) {
            (Value::Object(o), Value::Object(p)) if strategy(&field) != "replace" => leave_map(o, p, field.node),
            (Value::Array(o), Value::Array(p)) if strategy(&field) == "merge" => leave_slice(o, p, &field),
            _ => {}
        }
    }
}

/// What kube's `mergeSlice` leaves of a merged list's patch: the plain elements that merge into
/// a live element are merged maps (special elements and additions stay as written).
fn leave_slice(original: &[Value], patch: &mut [Value], field: &Field<'_>) {
    let Some(key) = field.merge_key else { return };
    if !patch.iter().chain(original).all(Value::is_object) {
        return;
    }
    let mut live: Vec<&Value> = original.iter().collect();
    let mut replace = false;
    for m in patch.iter().filter_map(Value::as_object) {
        match m.get(PATCH).and_then(Value::as_str) {
            Some("delete") => live.retain(|o| o.get(key).is_none() || o.get(key) != m.get(key)),
            Some("replace") => replace = true,
            _ => {}
        }
    }
    if replace {
        return;
    }
    for p in patch.iter_mut().filter_map(Value::as_object_mut).filter(|m| !m.contains_key(PATCH)) {
        let found = p.get(key).and_then(|kv| live.iter().find(|o| o.get(key) == Some(kv)));
        if let Some(Value::Object(o)) = found {
            leave_map(o, p, field.node);
        }
    }
}

/// kube's `removeDirectives` on a value it edits in place: under a map without `$patch`, the
/// members that are maps with `$patch` go and lists lose such elements; the elements of a list
/// are edited, the list itself kept.
fn strip_directives(v: &mut Value) {
    match v {
        Value::Object(m) if !m.contains_key(PATCH) => *v = remove_directives(std::mem::take(v)).unwrap_or_default(),
        Value::Array(l) => l.iter_mut().for_each(strip_directives),
        _ => {}
    }
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    node: Node<'_>,
) -> Result<Map<String, Value>, SmpError> {
    if let Some(d) = patch.get(PATCH) {
        return match d.as_str() {
            Some("replace") => {
                patch.remove(PATCH);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(bad_patch_type(d, &patch)),
        };
    }
    retain_keys(&mut original, &mut patch)?;
    set_element_orders(&mut original, &mut patch, node)?;
    for (k, pv) in patch {
        let (k, delete_list) =
            if k.starts_with(DELETE_FROM) { (extract_key(&k, DELETE_FROM)?, true) } else { (k, false) };
        if pv.is_null() {
            original.remove(&k);
            continue;
        }
        let Some(ov) = original.get_mut(&k) else {
            if !delete_list && let Some(v) = remove_directives(discard_nulls(pv)) {
                original.insert(k, v);
            }
            continue;
        };
        if go_fmt::type_name(ov) != go_fmt::type_name(&pv) {
            // A delete list for a field of another type is passed over.
            if !delete_list {
                match remove_directives(discard_nulls(pv)) {
                    Some(v) => *ov = v,
                    None => {
                        original.remove(&k);
                    }
                }
            }
            continue;
        }
        let field = node.field(&k);
        *ov = match (ov.take(), pv) {
            (Value::Object(o), Value::Object(p)) => match strategy(&field) {
                "replace" => Value::Object(p),
                _ => Value::Object(merge_map(o, p, field.node)?),
            },
            (Value::Array(o), Value::Array(p)) if strategy(&field) == "merge" || delete_list => {
                Value::Array(merge_slice(o, p, &field, delete_list)?.0)
            }
            // Other lists are replaced; scalars of the same type are the patch's.
            (_, p) => p,
        };
    }
    Ok(original)
}

/// The field's patch strategy besides `retainKeys` (which only tells clients to send the
/// directive): "merge", "replace" or "".
fn strategy<'a>(field: &Field<'a>) -> &'a str {
    let Some(s) = field.patch_strategy else { return "" };
    s.split(',').find(|s| *s != "retainKeys").unwrap_or("")
}

/// `$retainKeys`: the keys of `original` to keep; the patch may set no others.
fn retain_keys(original: &mut Map<String, Value>, patch: &mut Map<String, Value>) -> Result<(), SmpError> {
    let Some(keys) = patch.remove(RETAIN_KEYS) else { return Ok(()) };
    let bad = || SmpError::BadRequest("invalid patch format of retainKeys".into());
    let Value::Array(keys) = keys else { return Err(bad()) };
    if keys.iter().any(|k| k.is_object() || k.is_array()) {
        return Err(SmpError::Panic);
    }
    let kept = |k: &str| keys.iter().any(|v| v.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if !v.is_null() && !k.starts_with(DELETE_FROM) && !k.starts_with(SET_ORDER) && !kept(k) {
            return Err(bad());
        }
    }
    original.retain(|k, _| kept(k));
    Ok(())
}

/// The field a `$deleteFromPrimitiveList/<field>` or `$setElementOrder/<field>` key names.
fn extract_key(key: &str, prefix: &str) -> Result<String, SmpError> {
    match key.split_once('/') {
        Some((p, field)) if p == prefix => Ok(field.to_string()),
        _ if prefix == DELETE_FROM => Err(SmpError::BadRequest("invalid patch format of primitive list".into())),
        _ => Err(SmpError::BadRequest("invalid patch format of setElementOrder list".into())),
    }
}

/// Each `$setElementOrder/<field>`: merges the field's list (taking it out of the patch) and
/// orders the result as the directive says.
fn set_element_orders(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    node: Node<'_>,
) -> Result<(), SmpError> {
    let directives: Vec<String> = patch.keys().filter(|k| k.starts_with(SET_ORDER)).cloned().collect();
    for directive in directives {
        let Some(order) = patch.remove(&directive) else { continue };
        let Value::Array(order) = order else { return Err(bad_arg_type(SLICE, &order)) };
        let name = extract_key(&directive, SET_ORDER)?;
        let live = match original.get(&name) {
            None => None,
            Some(Value::Array(l)) => Some(l.clone()),
            Some(other) => return Err(bad_arg_type(SLICE, other)),
        };
        let patch_list = match patch.get(&name) {
            None => None,
            Some(Value::Array(l)) => Some(l.clone()),
            Some(other) => return Err(bad_arg_type(SLICE, other)),
        };
        let field = node.field(&name);
        let key = field.merge_key.unwrap_or("");
        check_order(patch_list.as_deref().unwrap_or_default(), &order, key)?;
        // The merged list, and the live list as the merge leaves it (the old order).
        let (merged, old) = match (live, &patch_list) {
            (Some(o), None) => (o.clone(), o),
            (None, Some(p)) => (remove_directives_list(p.clone()), Vec::new()),
            (Some(o), Some(p)) if strategy(&field) == "merge" => merge_slice(o, p.clone(), &field, false)?,
            (Some(o), Some(p)) => (p.clone(), o),
            (None, None) => continue,
        };
        let (in_order, server_only) = partition(merged, &order, key)?;
        let kind = element_kind(&[&old, patch_list.as_deref().unwrap_or_default()])?;
        let both = normalize_element_order(in_order, server_only, &order, &old, key, kind)?;
        original.insert(name.clone(), Value::Array(both));
        patch.remove(&name);
    }
    Ok(())
}

/// Checks that the patch's list (but its `$patch` elements) follows the order list: each
/// element found in it, in its order. An empty list on either side passes.
fn check_order(patch: &[Value], order: &[Value], key: &str) -> Result<(), SmpError> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let mut kept = Vec::with_capacity(patch.len());
    for v in patch {
        if !key.is_empty() {
            let Some(m) = v.as_object() else { return Err(bad_arg_type(MAP, v)) };
            if m.get(PATCH).and_then(Value::as_str) == Some("delete") {
                continue;
            }
        }
        kept.push(v);
    }
    let (mut p, mut o) = (0, 0);
    while p < kept.len() && o < order.len() {
        if kept[p].as_object().is_some_and(|m| m.contains_key(PATCH)) {
            p += 1;
            continue;
        }
        if merge_key_equal(kept[p], &order[o], key)? {
            p += 1;
        }
        o += 1;
    }
    if p < kept.len() && o >= order.len() {
        return Err(SmpError::Failed(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ORDER} list:\n{}\n",
            go_fmt::list(patch),
            go_fmt::list(order)
        )));
    }
    Ok(())
}

/// Whether two elements have the same merge key (the same value without one).
fn merge_key_equal(left: &Value, right: &Value, key: &str) -> Result<bool, SmpError> {
    if key.is_empty() {
        return go_eq(left, right);
    }
    let Some(l) = left.as_object() else { return Err(bad_arg_type(MAP, left)) };
    let Some(r) = right.as_object() else { return Err(bad_arg_type(MAP, right)) };
    let Some(lv) = l.get(key) else { return Err(no_merge_key(l, key)) };
    let Some(rv) = r.get(key) else { return Err(no_merge_key(r, key)) };
    go_eq(lv, rv)
}

/// What a list's elements are, as far as merging goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Map,
    Scalar,
}

/// The one type of the elements of `lists`: 422 for lists of lists, Go's errors for mixed types
/// or no element at all.
fn element_kind(lists: &[&[Value]]) -> Result<Kind, SmpError> {
    let mut first: Option<&'static str> = None;
    for v in lists.iter().flat_map(|l| l.iter()) {
        let t = go_fmt::type_name(v);
        match first {
            None => {
                // Go asks a nil type for its kind.
                let t = t.ok_or(SmpError::Panic)?;
                if t == SLICE {
                    return Err(SmpError::ListOfLists);
                }
                first = Some(t);
            }
            Some(f) if Some(f) != t => {
                return Err(SmpError::Failed(format!(
                    "list element types are not identical: {}",
                    go_fmt::slices(lists)
                )));
            }
            Some(_) => {}
        }
    }
    match first {
        None => Err(SmpError::Failed("no elements in any of the given slices".into())),
        Some(MAP) => Ok(Kind::Map),
        Some(_) => Ok(Kind::Scalar),
    }
}

/// Merges two lists of a field whose strategy is `merge` (or a `$deleteFromPrimitiveList`):
/// the merged list, and the live list as the merge leaves it in place — kube merges in the live
/// list's own array, so the caller's view of it sees deletions shift the later elements
/// forward and the first additions fill the places freed at its end.
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    field: &Field<'_>,
    delete_list: bool,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    if original.is_empty() && patch.is_empty() {
        return Ok((original, Vec::new()));
    }
    let key = field.merge_key.unwrap_or("");
    let kind = element_kind(&[&original, &patch])?;
    if kind == Kind::Scalar {
        if delete_list {
            let kept = original.iter().filter(|v| !patch.contains(v)).cloned().collect();
            return Ok((kept, original));
        }
        // The union, without repeats. An empty patch adds nothing: the live list's own array
        // is deduplicated, in place.
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        let len = deduplicate(&mut both);
        let old = if patch.is_empty() { both.clone() } else { original };
        both.truncate(len);
        let (in_patch, server_only) = partition(both, &patch, key)?;
        let list = normalize_element_order(in_patch, server_only, &patch, &old, key, kind)?;
        return Ok((list, old));
    }
    if key.is_empty() {
        return Err(SmpError::Failed(format!("cannot merge lists without merge key for {}", go_kind(field.node))));
    }
    let live_len = original.len();
    // The live list's places, as positions in its elements as they were (or in the patch's
    // plain elements, for one an addition fills): moving positions, not values, keeps each
    // deletion's shift cheap.
    let live = original.clone();
    let mut view: Vec<Place> = (0..live_len).map(Place::Live).collect();
    let mut items_at: Vec<usize> = (0..live_len).collect();
    let mut items = original;
    // Special elements: `$patch: delete` removes, `$patch: replace` replaces the list.
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for v in patch {
        let Some(m) = v.as_object() else { return Err(bad_arg_type(MAP, &v)) };
        let Some(d) = m.get(PATCH) else {
            plain.push(v);
            continue;
        };
        match d.as_str() {
            Some("delete") => {
                let Some(kv) = m.get(key) else { return Err(no_merge_key(m, key)) };
                while let Some(i) = find_by_key(&items, key, kv)? {
                    items.remove(i);
                    items_at.remove(i);
                    // Go shifts the tail forward; the last place keeps its old element.
                    for (place, at) in view[i..items.len()].iter_mut().zip(&items_at[i..]) {
                        *place = Place::Live(*at);
                    }
                }
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(SmpError::Failed("merging lists cannot yet be specified in the patch".into()));
            }
            _ => return Err(bad_patch_type(d, m)),
        }
    }
    // After a replace, the list is a new one: nothing shows through to the live list.
    let (mut items, plain, in_live_array) = if replace { (plain, Vec::new(), false) } else { (items, plain, true) };
    let server_order = items.clone();
    for (j, v) in plain.iter().enumerate() {
        let Some(m) = v.as_object() else { return Err(bad_arg_type(MAP, v)) };
        let Some(kv) = m.get(key) else { return Err(no_merge_key(m, key)) };
        match find_by_key(&items, key, kv)? {
            Some(i) => {
                let Value::Object(o) = items[i].take() else { unreachable!("found maps only") };
                items[i] = Value::Object(merge_map(o, m.clone(), field.node)?);
            }
            None => {
                if in_live_array && items.len() < live_len {
                    view[items.len()] = Place::Added(j);
                }
                items.push(v.clone());
            }
        }
    }
    let view = view
        .into_iter()
        .map(|p| match p {
            Place::Live(k) => live[k].clone(),
            Place::Added(j) => plain[j].clone(),
        })
        .collect();
    let (in_patch, server_only) = partition(items, &plain, key)?;
    let list = normalize_element_order(in_patch, server_only, &plain, &server_order, key, kind)?;
    Ok((list, view))
}

/// What a place of the live list holds as kube's merge leaves it: one of its elements as it
/// was, or one of the patch's plain elements an addition put there.
enum Place {
    Live(usize),
    Added(usize),
}

/// The first map of `list` whose `key` is `value`.
fn find_by_key(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>, SmpError> {
    for (i, v) in list.iter().enumerate() {
        let Some(m) = v.as_object() else { return Err(SmpError::Failed(format!("value for key {i} is not a map"))) };
        if let Some(x) = m.get(key)
            && go_eq(x, value)?
        {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Go's in-place removal of repeated scalars: a repeat is overwritten by the last element and
/// the list shortened. Returns the new length; `s` beyond it keeps what the array holds there.
fn deduplicate(s: &mut [Value]) -> usize {
    let mut last = s.len() as isize - 1;
    let mut i = 0;
    while i < last {
        let mut j = i + 1;
        while j <= last {
            if s[i as usize] == s[j as usize] {
                s[j as usize] = s[last as usize].clone();
                last -= 1;
                j -= 1;
            }
            j += 1;
        }
        i += 1;
    }
    (last + 1) as usize
}

/// Splits `merged` into the elements `by` holds (by merge key for maps, by value otherwise) and
/// the others, each in its order.
fn partition(merged: Vec<Value>, by: &[Value], key: &str) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let (mut inside, mut outside) = (Vec::with_capacity(merged.len()), Vec::with_capacity(merged.len()));
    if key.is_empty() {
        // Go keeps the values as keys of a map: maps and lists cannot be.
        if by.iter().chain(&merged).any(|v| v.is_object() || v.is_array()) {
            return Err(SmpError::Panic);
        }
        for v in merged {
            if by.contains(&v) { inside.push(v) } else { outside.push(v) }
        }
        return Ok((inside, outside));
    }
    for v in merged {
        let Some(m) = v.as_object() else { return Err(bad_arg_type(MAP, &v)) };
        let Some(kv) = m.get(key) else { return Err(no_merge_key(m, key)) };
        if find_by_key(by, key, kv)?.is_some() { inside.push(v) } else { outside.push(v) }
    }
    Ok((inside, outside))
}

/// kube-apiserver's order of a merged list: `from_patch` sorted by `patch_order`, `server_only`
/// sorted by `server_order`, then the server-only elements inserted among the patch's where
/// the old order says they came first.
fn normalize_element_order(
    from_patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: &str,
    kind: Kind,
) -> Result<Vec<Value>, SmpError> {
    let right = sort_by_order(from_patch, patch_order, key, kind)?;
    let left = sort_by_order(server_only, server_order, key, kind)?;
    let position = |v: &Value| index(server_order, v, key, kind);
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => match (position(l)?, position(r)?) {
                (Some(li), Some(ri)) => li < ri,
                _ => false,
            },
        };
        out.extend(if take_left { left.next() } else { right.next() });
    }
    Ok(out)
}

/// `list` stably sorted by the positions of its elements in `order`, as Go's `sort.SliceStable`
/// sorts it with kube's comparison (an element missing from `order` compares as smaller than
/// anything); for maps, every element of both must carry the merge key, and `$patch: delete`
/// elements go last.
fn sort_by_order(list: Vec<Value>, order: &[Value], key: &str, kind: Kind) -> Result<Vec<Value>, SmpError> {
    let (mut list, mut deletes) = (list, Vec::new());
    if kind == Kind::Map {
        for v in list.iter().chain(order) {
            let Some(m) = v.as_object() else { return Err(bad_arg_type(MAP, v)) };
            if !m.contains_key(key) {
                return Err(no_merge_key(m, key));
            }
        }
        (deletes, list) = list.into_iter().partition(|v| v.get(PATCH).and_then(Value::as_str) == Some("delete"));
    }
    if list.len() > 1 {
        let mut keyed = Vec::with_capacity(list.len());
        for v in list {
            keyed.push((index(order, &v, key, kind)?, v));
        }
        go_stable_sort(&mut keyed, |a, b| match (a.0, b.0) {
            (Some(i), Some(j)) => i < j,
            _ => true,
        });
        list = keyed.into_iter().map(|(_, v)| v).collect();
    }
    list.extend(deletes);
    Ok(list)
}

/// The position of `v` in `list`: by merge key for maps (an element without one, or not a map,
/// has a nil key), by value otherwise.
fn index(list: &[Value], v: &Value, key: &str, kind: Kind) -> Result<Option<usize>, SmpError> {
    let of = |x: &'_ Value| -> Option<Value> {
        let x = match kind {
            Kind::Map => x.as_object()?.get(key)?,
            Kind::Scalar => x,
        };
        (!x.is_null()).then(|| x.clone())
    };
    let wanted = of(v);
    for (i, x) in list.iter().enumerate() {
        let same = match (&wanted, of(x)) {
            (None, None) => true,
            (Some(a), Some(b)) => go_eq(a, &b)?,
            _ => false,
        };
        if same {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Go's `sort.SliceStable`: insertion sorts of blocks of 20, then in-place symmetric merges —
/// the same result as Go's for a comparison that is not a strict order.
fn go_stable_sort<T>(data: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = data.len();
    let mut block = 20;
    let (mut a, mut b) = (0, block);
    while b <= n {
        insertion_sort(data, a, b, &less);
        a = b;
        b += block;
    }
    insertion_sort(data, a, n, &less);
    while block < n {
        let (mut a, mut b) = (0, 2 * block);
        while b <= n {
            sym_merge(data, a, a + block, b, &less);
            a = b;
            b += 2 * block;
        }
        if a + block < n {
            sym_merge(data, a, a + block, n, &less);
        }
        block *= 2;
    }
}

fn insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1]) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sym_merge<T>(data: &mut [T], a: usize, m: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(&data[h], &data[a]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        for k in a..i - 1 {
            data.swap(k, k + 1);
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(&data[m], &data[h]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&data[p - c], &data[c]) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less);
    }
}

/// Swaps `data[a..m]` and `data[m..b]` by block swaps, as Go's `rotate` does.
fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    let (mut i, mut j) = (m - a, b - m);
    while i != j {
        if i > j {
            swap_range(data, m - i, m, j);
            i -= j;
        } else {
            swap_range(data, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(data, m - i, m, i);
}

fn swap_range<T>(data: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        data.swap(a + i, b + i);
    }
}

/// Go's `==` of two decoded values held as `interface{}`: false between different types (an
/// `int64` is not a `float64`); comparing two maps or two lists panics.
fn go_eq(a: &Value, b: &Value) -> Result<bool, SmpError> {
    match (a, b) {
        (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_)) => Err(SmpError::Panic),
        _ => Ok(a == b),
    }
}

/// A value the live object lacks, taken from the patch: maps carrying `$patch` dropped, at any
/// depth (None: the value itself is one).
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) if m.contains_key(PATCH) => None,
        Value::Object(m) => {
            Some(Value::Object(m.into_iter().filter_map(|(k, v)| Some((k, remove_directives(v)?))).collect()))
        }
        Value::Array(l) => Some(Value::Array(remove_directives_list(l))),
        other => Some(other),
    }
}

fn remove_directives_list(l: Vec<Value>) -> Vec<Value> {
    l.into_iter().filter_map(remove_directives).collect()
}

/// The `null` members of the maps in `v`, at any depth, removed.
fn discard_nulls(mut v: Value) -> Value {
    drop_nulls_in(&mut v);
    v
}

fn drop_nulls_in(v: &mut Value) {
    match v {
        Value::Object(m) => drop_null_members(m),
        Value::Array(l) => l.iter_mut().for_each(drop_nulls_in),
        _ => {}
    }
}

fn drop_null_members(m: &mut Map<String, Value>) {
    m.retain(|_, v| !v.is_null());
    m.values_mut().for_each(drop_nulls_in);
}

/// Go's kind name of a list's elements, as the error for a list of maps without a merge key
/// names them.
fn go_kind(items: Node<'_>) -> &'static str {
    let Some(s) = items.schema() else { return "interface" };
    match s.get("type").and_then(Value::as_str) {
        Some("object") if s.get("properties").is_some() => "struct",
        Some("object") => "map",
        Some("string") => "string",
        Some("boolean") => "bool",
        Some("integer") if s.get("format").and_then(Value::as_str) == Some("int32") => "int32",
        Some("integer") => "int64",
        Some("number") => "float64",
        _ => "interface",
    }
}

/// `expected a <expected>, but received a <Go type of actual>`.
fn bad_arg_type(expected: &str, actual: &Value) -> SmpError {
    let actual = go_fmt::type_name(actual).unwrap_or("%!s(<nil>)");
    SmpError::Failed(format!("expected a {expected}, but received a {actual}"))
}

fn no_merge_key(m: &Map<String, Value>, key: &str) -> SmpError {
    SmpError::Failed(format!("map: {} does not contain declared merge key: {key}", go_fmt::map(m)))
}

fn bad_patch_type(directive: &Value, m: &Map<String, Value>) -> SmpError {
    SmpError::Failed(format!("unknown patch type: {} in map: {}", go_fmt::s(directive), go_fmt::map(m)))
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
    fn the_patch_is_left_as_kube_s_merge_edits_it() {
        let node = builtin().root("apps", "v1", "Deployment").unwrap();
        let Value::Object(original) = containers(&["c"]) else { panic!("object") };
        let patch = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "$setElementOrder/env": [{"name": "a"}], "env": [{"name": "a", "value": "1"}]},
            {"name": "d", "x": null, "env": [{"$patch": "delete", "name": "z"}]}
        ]}}}, "metadata": {"$patch": "replace", "labels": {"a": "b"}},
            "status": {"conditions": [{"type": "A", "m": {"$patch": "delete"}, "n": null}]}});
        let Value::Object(patch) = patch else { panic!("object") };
        assert_eq!(
            patch_after_merge(&original, &patch, node),
            "map[metadata:map[$patch:replace labels:map[a:b]] spec:map[template:map[spec:map[containers:\
             [map[name:c] map[env:[map[$patch:delete name:z]] name:d x:<nil>]]]]] \
             status:map[conditions:[map[type:A]]]]"
        );
        // A map merged into a live one loses its `$patch: replace`.
        let mut original = original;
        original.insert("metadata".into(), json!({"labels": {"z": "y"}}));
        let patch = json!({"metadata": {"$patch": "replace", "labels": {"a": "b"}}});
        let Value::Object(patch) = patch else { panic!("object") };
        assert_eq!(patch_after_merge(&original, &patch, node), "map[metadata:map[labels:map[a:b]]]");
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
        assert_eq!(
            deploy_patch(o, json!({"spec": {"strategy": {"$patch": "bogus"}}})),
            Err(SmpError::Failed("unknown patch type: bogus in map: map[$patch:bogus]".into()))
        );
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
        assert_eq!(err, Err(SmpError::Failed("map: map[image:x] does not contain declared merge key: name".into())));
    }
}

#[cfg(test)]
mod kube_answers {
    use super::*;
    use crate::schema::builtin;
    use serde_json::json;

    fn pod_patch(original: Value, patch: Value) -> Result<Value, SmpError> {
        let node = builtin().root("", "v1", "Pod").unwrap();
        let (Value::Object(o), Value::Object(p)) = (original, patch) else { panic!("objects") };
        apply(o, p, node).map(Value::Object)
    }

    fn with_containers(names: &[&str]) -> Value {
        json!({"spec": {"containers": names.iter().map(|n| json!({"name": n, "image": n})).collect::<Vec<_>>()}})
    }

    fn container_names(v: &Value) -> Vec<&str> {
        v["spec"]["containers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect()
    }

    fn failed(m: &str) -> Result<Value, SmpError> {
        Err(SmpError::Failed(m.into()))
    }

    #[test]
    fn go_errors_carry_gos_text() {
        let live = with_containers(&["app"]);
        let cases = [
            (
                json!({"spec": {"containers": [{"image": "nginx:2"}]}}),
                "map: map[image:nginx:2] does not contain declared merge key: name",
            ),
            (
                json!({"spec": {"containers": [{"$patch": "delete"}]}}),
                "map: map[$patch:delete] does not contain declared merge key: name",
            ),
            (json!({"spec": {"$patch": "bogus"}}), "unknown patch type: bogus in map: map[$patch:bogus]"),
            (
                json!({"spec": {"containers": [{"$patch": "bogus", "name": "app"}]}}),
                "unknown patch type: bogus in map: map[$patch:bogus name:app]",
            ),
            (
                json!({"spec": {"$patch": 1, "a": [80, 1.5]}}),
                "unknown patch type: %!s(int64=1) in map: map[$patch:1 a:[80 1.5]]",
            ),
            (
                json!({"spec": {"containers": [{"$patch": "merge"}]}}),
                "merging lists cannot yet be specified in the patch",
            ),
        ];
        for (patch, message) in cases {
            assert_eq!(pod_patch(live.clone(), patch.clone()), failed(message), "{patch}");
        }
    }

    #[test]
    fn every_merged_element_needs_its_merge_key_stored_ones_too() {
        let live = json!({"spec": {"imagePullSecrets": [{}]}});
        let patch = json!({"spec": {"imagePullSecrets": [{"name": "reg"}]}});
        assert_eq!(pod_patch(live, patch), failed("map: map[] does not contain declared merge key: name"));
        // The elements of a replacing list as well.
        let patch = json!({"spec": {"containers": [{"$patch": "replace"}, {"image": "x"}]}});
        assert_eq!(
            pod_patch(with_containers(&["app"]), patch),
            failed("map: map[image:x] does not contain declared merge key: name")
        );
        // An element a patch deletes is gone before the check.
        let live = json!({"spec": {"containers": [{"name": "a", "image": "a"}, {"image": "nameless"}]}});
        let patch = json!({"spec": {"containers": [{"name": "b", "image": "b"}]}});
        assert_eq!(
            pod_patch(live, patch),
            failed("map: map[image:nameless] does not contain declared merge key: name")
        );
    }

    #[test]
    fn the_old_order_is_the_live_list_as_the_merge_leaves_it() {
        let order = |names: &[&str]| names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>();
        let merged = |live: &[&str], set_order: &[&str], list: Value| {
            let patch = json!({"spec": {"$setElementOrder/containers": order(set_order), "containers": list}});
            let out = pod_patch(with_containers(live), patch).unwrap();
            container_names(&out).into_iter().map(String::from).collect::<Vec<_>>()
        };
        let new_deleting = |old: &str| json!([{"name": "new", "image": "n"}, {"$patch": "delete", "name": old}]);
        // One deletion, one addition: the addition takes the freed place at the end.
        assert_eq!(
            merged(&["app", "old", "istio-proxy"], &["app", "new"], new_deleting("old")),
            ["app", "istio-proxy", "new"]
        );
        assert_eq!(merged(&["a", "old", "x", "y"], &["a", "new"], new_deleting("old")), ["a", "x", "y", "new"]);
        // Two deletions: the last places keep stale elements the addition does not reach.
        let list = json!([{"name": "n", "image": "n"}, {"$patch": "delete", "name": "o1"}, {"$patch": "delete", "name": "o2"}]);
        assert_eq!(merged(&["a", "o1", "o2", "x"], &["a", "n"], list), ["a", "x", "n"]);
        // More additions than deletions: only the first fits the live list.
        let list =
            json!([{"name": "n1", "image": "n"}, {"name": "n2", "image": "n"}, {"$patch": "delete", "name": "o"}]);
        assert_eq!(merged(&["a", "o", "x"], &["a", "n1", "n2"], list), ["a", "x", "n1", "n2"]);
        // Without additions nothing moves.
        assert_eq!(merged(&["a", "c", "b"], &["b", "a"], json!([{"$patch": "delete", "name": "c"}])), ["b", "a"]);
    }

    #[test]
    fn set_element_order_lists_are_checked_as_kube_checks_them() {
        let live = with_containers(&["app", "b"]);
        let mismatch =
            json!({"spec": {"$setElementOrder/containers": [{"name": "zz"}], "containers": [{"name": "app"}]}});
        assert_eq!(
            pod_patch(live.clone(), mismatch),
            failed(
                "The order in patch list:\n[map[name:app]]\n doesn't match $setElementOrder list:\n[map[name:zz]]\n"
            )
        );
        // A merge key twice in the patch, once in the order.
        let twice = json!({"spec": {"$setElementOrder/containers": [{"name": "app"}, {"name": "b"}],
            "containers": [{"name": "app", "image": "1"}, {"name": "app", "image": "2"}]}});
        assert_eq!(
            pod_patch(live.clone(), twice),
            failed(
                "The order in patch list:\n[map[image:1 name:app] map[image:2 name:app]]\n doesn't match $setElementOrder list:\n[map[name:app] map[name:b]]\n"
            )
        );
        // An empty order list takes any patch list: the new element sorts after the live ones.
        let empty = json!({"spec": {"$setElementOrder/containers": [], "containers": [{"name": "new", "image": "n"}]}});
        assert_eq!(container_names(&pod_patch(live.clone(), empty).unwrap()), ["app", "b", "new"]);
        let cases = [
            (json!({"$setElementOrder/containers": "app"}), "expected a []interface {}, but received a string"),
            (json!({"$setElementOrder/containers": null}), "expected a []interface {}, but received a %!s(<nil>)"),
            (
                json!({"$setElementOrder/containers": [], "containers": {"name": "x"}}),
                "expected a []interface {}, but received a map[string]interface {}",
            ),
            (
                json!({"$setElementOrder/containers": ["app"], "containers": [{"name": "app"}]}),
                "expected a map[string]interface {}, but received a string",
            ),
            (
                json!({"$setElementOrder/containers": [{}], "containers": [{"name": "app"}]}),
                "map: map[] does not contain declared merge key: name",
            ),
            (
                json!({"$setElementOrder/initContainers": [], "initContainers": []}),
                "no elements in any of the given slices",
            ),
        ];
        for (spec, message) in cases {
            let patch = json!({"spec": spec});
            assert_eq!(pod_patch(live.clone(), patch.clone()), failed(message), "{patch}");
        }
        // An order for a list neither side has: nothing to do.
        let none = json!({"spec": {"$setElementOrder/initContainers": [{"name": "x"}]}});
        assert_eq!(pod_patch(live.clone(), none).unwrap(), live);
    }

    #[test]
    fn maps_with_directives_the_live_object_lacks_are_dropped() {
        let live = with_containers(&["app"]);
        let replace = json!({"spec": {"affinity": {"$patch": "replace", "nodeAffinity": {}}}});
        assert!(pod_patch(live.clone(), replace).unwrap()["spec"].get("affinity").is_none());
        let delete = json!({"spec": {"affinity": {"$patch": "delete"}}});
        assert!(pod_patch(live.clone(), delete).unwrap()["spec"].get("affinity").is_none());
        // At any depth, list elements included; other directives stay, for decoding to report.
        let nested = json!({"spec": {"securityContext": {"$retainKeys": ["runAsUser"], "runAsUser": 1,
            "seLinuxOptions": {"$patch": "delete"}, "sysctls": [{"$patch": "delete", "name": "a"}, {"name": "b", "value": null}]}}});
        assert_eq!(
            pod_patch(live.clone(), nested).unwrap()["spec"]["securityContext"],
            json!({"$retainKeys": ["runAsUser"], "runAsUser": 1, "sysctls": [{"name": "b"}]})
        );
        // With a live map, `$patch` replaces or empties it.
        let live = json!({"spec": {"affinity": {"podAffinity": {}}}});
        let replace = json!({"spec": {"affinity": {"$patch": "replace", "nodeAffinity": {}}}});
        assert_eq!(pod_patch(live.clone(), replace).unwrap()["spec"]["affinity"], json!({"nodeAffinity": {}}));
        let delete = json!({"spec": {"affinity": {"$patch": "delete"}}});
        assert_eq!(pod_patch(live, delete).unwrap()["spec"]["affinity"], json!({}));
        // A gained element is the patch's as written.
        let added = json!({"spec": {"containers": [{"name": "new", "$retainKeys": ["name"], "image": null}]}});
        let out = pod_patch(with_containers(&["app"]), added).unwrap();
        assert_eq!(out["spec"]["containers"][0], json!({"name": "new", "$retainKeys": ["name"]}));
    }

    #[test]
    fn lists_of_lists_and_mixed_element_types() {
        let live = json!({"metadata": {"finalizers": []}});
        assert_eq!(pod_patch(live, json!({"metadata": {"finalizers": [["a"]]}})), Err(SmpError::ListOfLists));
        let live = json!({"metadata": {"finalizers": ["a"]}});
        assert_eq!(
            pod_patch(live.clone(), json!({"metadata": {"finalizers": ["b", 1]}})),
            failed("list element types are not identical: [[a] [b 1]]")
        );
        assert_eq!(
            pod_patch(live.clone(), json!({"metadata": {"finalizers": [["b"]]}})),
            failed("list element types are not identical: [[a] [[b]]]")
        );
        assert_eq!(
            pod_patch(live, json!({"metadata": {"finalizers": [null]}})),
            failed("list element types are not identical: [[a] [<nil>]]")
        );
    }

    #[test]
    fn directive_keys_are_read_as_kube_reads_them() {
        let live = json!({"metadata": {"finalizers": ["a", "b"]}});
        // A delete list that is not a list is passed over, like one for a field the object lacks.
        for patch in [
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}),
            json!({"metadata": {"$deleteFromPrimitiveList/labels": ["a"]}}),
        ] {
            assert_eq!(pod_patch(live.clone(), patch).unwrap(), live);
        }
        let out = pod_patch(live.clone(), json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        let bad_list = SmpError::BadRequest("invalid patch format of primitive list".into());
        let bad_order = SmpError::BadRequest("invalid patch format of setElementOrder list".into());
        assert_eq!(pod_patch(live.clone(), json!({"metadata": {"$deleteFromPrimitiveListX": ["a"]}})), Err(bad_list));
        assert_eq!(pod_patch(live.clone(), json!({"metadata": {"$setElementOrderX": []}})), Err(bad_order));
        assert_eq!(
            pod_patch(live, json!({"metadata": {"$setElementOrderX": "a"}})),
            failed("expected a []interface {}, but received a string")
        );
    }

    #[test]
    fn primitive_lists_merge_without_repeats_server_values_included() {
        let finalizers = |live: Value, patch: Value| {
            let out = pod_patch(json!({"metadata": {"finalizers": live}}), json!({"metadata": {"finalizers": patch}}));
            out.unwrap()["metadata"]["finalizers"].clone()
        };
        assert_eq!(finalizers(json!(["a", "a"]), json!(["b"])), json!(["b", "a"]));
        assert_eq!(finalizers(json!(["a", "b", "a"]), json!(["c", "c"])), json!(["c", "a", "b"]));
        assert_eq!(finalizers(json!(["a", "b", "a"]), json!(["b", "c"])), json!(["a", "b", "c"]));
        // An empty patch list deduplicates the live list in place: Go moves the last value into
        // the place of a repeat, and the live order then reads from the moved values.
        assert_eq!(finalizers(json!(["a", "a", "b", "c"]), json!([])), json!(["a", "c", "b"]));
    }

    #[test]
    fn gos_stable_sort_with_kubes_comparison() {
        // Elements missing from the order compare as smaller than anything: they move forward.
        let mut v: Vec<(Option<usize>, char)> = vec![(Some(0), 'a'), (None, 'n'), (Some(1), 'b')];
        go_stable_sort(&mut v, |a, b| match (a.0, b.0) {
            (Some(i), Some(j)) => i < j,
            _ => true,
        });
        assert_eq!(v.iter().map(|x| x.1).collect::<String>(), "nab");
        // A strict order sorts stably, past the blocks of 20 merged by Go's symmetric merge.
        let mut w: Vec<(u32, usize)> = (0..97).map(|i| ((i * 37 % 11) as u32, i)).collect();
        let mut want = w.clone();
        want.sort_by_key(|x| x.0);
        go_stable_sort(&mut w, |a, b| a.0 < b.0);
        assert_eq!(w, want);
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
