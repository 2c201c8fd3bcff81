//! Field sets in the `FieldsV1` form kube-apiserver stores them in: a JSON object with a key per
//! element (`f:name`, `k:{…}`, `v:…`, `i:3`), an empty object for a member without members
//! below it, and a `"."` entry for a member that has some.
//!
//! Invariants: encoding writes the bytes kube-apiserver writes (keys as [`PathElement::write_key`]
//! writes them, in the text order of the keys); decoding skips keys of an element type this
//! server does not know (as kube-apiserver skips them), refuses anything else malformed, and
//! reads a node whose keys are all unknown as a member. Decoding *without* some sets gives
//! exactly the decoded set less their members (as [`FieldSet::subtract`] removes them) and
//! refuses exactly what decoding refuses; it only builds what it keeps.

use serde_json::{Map, Value};

use super::path::PathElement;
use super::set::FieldSet;

impl FieldSet {
    /// The set as a `FieldsV1` object: each member an empty object, each subtree an object of
    /// its own, `"."` marking a subtree that is also a member.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(fields_v1_map(self, false))
    }

    /// Reads a `FieldsV1` object (see the module documentation).
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        Self::from_fields_v1_without(v, Without::none())
    }

    /// Reads a `FieldsV1` object less the members of the sets of `without`: what
    /// [`FieldSet::from_fields_v1`] reads with those members subtracted, without building them.
    pub fn from_fields_v1_without(v: &Value, without: Without<'_>) -> Result<FieldSet, String> {
        let Value::Object(m) = v else { return Err(format!("expected an object, got {v}")) };
        Ok(read(m, without)?.0.unwrap_or_default())
    }
}

/// Up to three sets whose members a read leaves out (the sets a write changed: what it added,
/// modified and removed).
#[derive(Clone, Copy, Default)]
pub struct Without<'a>([Option<&'a FieldSet>; 3]);

impl<'a> Without<'a> {
    /// Nothing left out.
    pub fn none() -> Self {
        Without::default()
    }

    /// The members of these sets left out.
    pub fn of(sets: [&'a FieldSet; 3]) -> Self {
        Without(sets.map(|s| (!s.is_empty()).then_some(s)))
    }

    fn has_member(&self, key: &Key<'_>) -> bool {
        self.0.iter().flatten().any(|s| match key {
            Key::Field(name) => s.has_field_member(name),
            Key::Other(pe) => s.has_member(pe),
        })
    }

    fn below(&self, key: &Key<'_>) -> Without<'a> {
        Without(self.0.map(|s| {
            s.and_then(|s| match key {
                Key::Field(name) => s.field_child(name),
                Key::Other(pe) => s.child(pe),
            })
        }))
    }
}

/// A key of a `FieldsV1` object: a field's name as written, or any other element, parsed.
enum Key<'k> {
    Field(&'k str),
    Other(PathElement),
}

impl Key<'_> {
    fn into_element(self) -> PathElement {
        match self {
            Key::Field(name) => PathElement::field(name),
            Key::Other(pe) => pe,
        }
    }
}

fn fields_v1_map(set: &FieldSet, include_self: bool) -> Map<String, Value> {
    let key = |pe: &PathElement| {
        let mut k = String::with_capacity(pe.key_len_hint());
        pe.write_key(&mut k);
        k
    };
    // Members and children in element order, each once; the map sorts the keys as text.
    let mut entries = Vec::with_capacity(set.members().len() + set.children().len() + usize::from(include_self));
    if include_self {
        entries.push((".".to_string(), Value::Object(Map::new())));
    }
    let mut ci = set.children().iter().peekable();
    for m in set.members() {
        while let Some((pe, c)) = ci.next_if(|(pe, _)| pe < m) {
            entries.push((key(pe), Value::Object(fields_v1_map(c, false))));
        }
        let below = match ci.next_if(|(pe, _)| pe == m) {
            Some((_, c)) => fields_v1_map(c, true),
            None => Map::new(),
        };
        entries.push((key(m), Value::Object(below)));
    }
    for (pe, c) in ci {
        entries.push((key(pe), Value::Object(fields_v1_map(c, false))));
    }
    entries.into_iter().collect()
}

/// The subtree of a `FieldsV1` object less the members of `without`, and whether the node itself
/// is a member.
fn read(m: &Map<String, Value>, without: Without<'_>) -> Result<(Option<FieldSet>, bool), String> {
    let mut members = Vec::new();
    let mut children = Vec::new();
    let mut is_member = false;
    let mut any = false;
    for (k, v) in m {
        if k == "." {
            is_member = true;
            continue;
        }
        let key = match k.strip_prefix("f:") {
            Some(name) => Key::Field(name),
            None => match PathElement::parse_key(k)? {
                Some(pe) => Key::Other(pe),
                None => continue,
            },
        };
        let Value::Object(inner) = v else { return Err(format!("{k}: expected an object, got {v}")) };
        let (grandchildren, child_is_member) = read(inner, without.below(&key))?;
        any = true;
        let member = child_is_member && !without.has_member(&key);
        match (grandchildren, member) {
            (Some(g), true) => {
                let pe = key.into_element();
                members.push(pe.clone());
                children.push((pe, g));
            }
            (Some(g), false) => children.push((key.into_element(), g)),
            (None, true) => members.push(key.into_element()),
            (None, false) => {}
        }
    }
    let set = FieldSet::from_sorted(sorted_members(members), sorted_children(children));
    Ok(((!set.is_empty()).then_some(set), is_member || !any))
}

/// Members read in text order of their keys, in element order without duplicates (fields come
/// in order already; keys, values and indexes may not).
fn sorted_members(mut members: Vec<PathElement>) -> Vec<PathElement> {
    if !members.is_sorted_by(|a, b| a < b) {
        members.sort();
        members.dedup();
    }
    members
}

/// Children read in text order of their keys, in element order; children named by equal
/// elements merged.
fn sorted_children(mut children: Vec<(PathElement, FieldSet)>) -> Vec<(PathElement, FieldSet)> {
    if children.is_sorted_by(|a, b| a.0 < b.0) {
        return children;
    }
    children.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(PathElement, FieldSet)> = Vec::with_capacity(children.len());
    for (pe, c) in children {
        match out.last_mut() {
            Some((last, s)) if *last == pe => s.merge(c),
            _ => out.push((pe, c)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::managed_fields::set::tests::{arb_set, p, set};

    #[test]
    fn fields_v1_marks_members_with_children() {
        let mut s = set(&["spec.replicas", "spec.template", "spec.template.metadata.labels.app"]);
        s.insert(&[
            PathElement::field("spec"),
            PathElement::field("containers"),
            PathElement::key(vec![("name".into(), json!("app"))]),
        ]);
        let v = s.to_fields_v1();
        assert_eq!(
            v,
            json!({"f:spec": {
                "f:containers": {"k:{\"name\":\"app\"}": {}},
                "f:replicas": {},
                "f:template": {".": {}, "f:metadata": {"f:labels": {"f:app": {}}}}
            }})
        );
        assert_eq!(FieldSet::from_fields_v1(&v).unwrap(), s);
        // A node with only unknown element types counts as a member.
        let odd = json!({"f:a": {"z:what": {}}, "f:b": {".": {}, "f:c": {}}});
        assert_eq!(FieldSet::from_fields_v1(&odd).unwrap(), {
            let mut s = set(&["a", "b", "b.c"]);
            s.insert(&p("a"));
            s
        });
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({})).unwrap().is_empty());
    }

    #[test]
    fn keys_out_of_text_order_are_read_in_element_order() {
        let v = json!({"f:a": {"i:10": {}, "i:9": {}, "v:10": {}, "v:9": {}, "i:09": {".": {}, "f:x": {}}}});
        let s = FieldSet::from_fields_v1(&v).unwrap();
        let a = PathElement::field("a");
        let below = s.child(&a).unwrap();
        let text: Vec<String> = below.members().iter().map(ToString::to_string).collect();
        assert_eq!(text, ["[=9]", "[=10]", "[9]", "[10]"]);
        assert_eq!(below.children().len(), 1);
        assert_eq!(s.to_fields_v1(), json!({"f:a": {"i:10": {}, "i:9": {".": {}, "f:x": {}}, "v:10": {}, "v:9": {}}}));
    }

    proptest! {
        #[test]
        fn fields_v1_round_trips(a in arb_set()) {
            let v = a.to_fields_v1();
            prop_assert_eq!(FieldSet::from_fields_v1(&v).unwrap(), a.clone());
        }

        #[test]
        fn reading_without_sets_subtracts_them(a in arb_set(), b in arb_set(), c in arb_set()) {
            let v = a.to_fields_v1();
            let mut expected = a.clone();
            expected.subtract(&b);
            expected.subtract(&c);
            let empty = FieldSet::new();
            let read = FieldSet::from_fields_v1_without(&v, Without::of([&b, &empty, &c])).unwrap();
            prop_assert_eq!(read, expected);
        }
    }
}
