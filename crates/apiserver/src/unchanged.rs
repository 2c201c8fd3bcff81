//! The parts of a stored object an update left as they were, found by comparing bytes, so that
//! only the rest of the old version is parsed for the field manager's comparison.
//!
//! A top-level field, or a `metadata` field, whose new value serializes to exactly the stored
//! bytes is equal on both sides: it is set aside from the new object and not parsed from the old
//! one. Fields of a struct are compared one by one, so leaving equal fields out of both sides
//! changes no comparison. Bytes that differ (also equal values stored in another form) are
//! parsed and compared as values.
//!
//! Invariants: the old value [`Split::old`] is the stored object as [`StoredObject::value`]
//! gives it (resourceVersion included) less `metadata.managedFields` and less the fields set
//! aside; [`Aside::restore`] gives the new object back exactly as it was.

use std::collections::BTreeMap;
use std::io;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::object::StoredObject;

/// The old version of an object without what an update left unchanged, and what was set aside
/// from the new one.
pub(crate) struct Split {
    /// The old object, less `managedFields` and the equal fields.
    pub(crate) old: Value,
    /// The old `metadata.managedFields`, if any.
    pub(crate) managed: Option<Value>,
    /// The fields set aside from the new object.
    pub(crate) aside: Aside,
}

/// The equal fields taken out of the new object.
pub(crate) struct Aside {
    top: Vec<(String, Value)>,
    meta: Vec<(String, Value)>,
}

impl Split {
    /// Splits `old` against `new` (whose `managedFields` are taken out); None when the stored
    /// bytes cannot be read field by field (then parse the whole object).
    pub(crate) fn of(old: &StoredObject, new: &mut Map<String, Value>) -> Option<Split> {
        let raw: BTreeMap<&str, &RawValue> = serde_json::from_slice(old.storage_value()).ok()?;
        let mut out = Map::new();
        let mut top = Vec::new();
        let mut meta = Vec::new();
        let mut managed = None;
        for (k, v) in raw {
            if k == "metadata" {
                let raw_meta: BTreeMap<&str, &RawValue> = serde_json::from_str(v.get()).ok()?;
                let mut old_meta = Map::new();
                let mut new_meta = new.get_mut("metadata").and_then(Value::as_object_mut);
                for (mk, mv) in raw_meta {
                    if mk == "managedFields" {
                        managed = Some(serde_json::from_str(mv.get()).ok()?);
                        continue;
                    }
                    match new_meta.as_deref_mut() {
                        Some(nm) if nm.get(mk).is_some_and(|n| same_bytes(n, mv)) => {
                            meta.push(nm.remove_entry(mk)?);
                        }
                        _ => {
                            old_meta.insert(mk.to_string(), serde_json::from_str(mv.get()).ok()?);
                        }
                    }
                }
                if old.has_rv() {
                    old_meta.insert("resourceVersion".into(), old.rv.to_string().into());
                }
                out.insert(k.to_string(), Value::Object(old_meta));
                continue;
            }
            if new.get(k).is_some_and(|n| same_bytes(n, v)) {
                top.push(new.remove_entry(k)?);
            } else {
                out.insert(k.to_string(), serde_json::from_str(v.get()).ok()?);
            }
        }
        Some(Split { old: Value::Object(out), managed, aside: Aside { top, meta } })
    }
}

impl Aside {
    /// Puts the fields set aside back into `new`.
    pub(crate) fn restore(self, new: &mut Map<String, Value>) {
        new.extend(self.top);
        if !self.meta.is_empty()
            && let Some(Value::Object(m)) = new.get_mut("metadata")
        {
            m.extend(self.meta);
        }
    }
}

/// Whether `v` serializes to exactly the bytes of `raw`, without allocating.
fn same_bytes(v: &Value, raw: &RawValue) -> bool {
    let mut w = Expect(raw.get().as_bytes());
    serde_json::to_writer(&mut w, v).is_ok() && w.0.is_empty()
}

/// A writer that accepts only the bytes it expects, in order.
struct Expect<'a>(&'a [u8]);

impl io::Write for Expect<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.0.strip_prefix(buf) {
            Some(rest) => {
                self.0 = rest;
                Ok(buf.len())
            }
            None => Err(io::ErrorKind::InvalidData.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::managed_fields;
    use crate::registry::Registry;
    use crate::strategy::Target;

    fn pod(labels: Value, image: &str, extra: Option<&str>, phase: &str) -> Map<String, Value> {
        let mut p = json!({
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": "p", "namespace": "n", "uid": "u", "labels": labels,
                "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}}}]},
            "spec": {"containers": [{"name": "c", "image": image}]},
            "status": {"phase": phase}
        });
        if let Some(e) = extra {
            p["spec"]["hostname"] = json!(e);
        }
        p.as_object().unwrap().clone()
    }

    proptest! {
        #[test]
        fn comparing_the_rest_is_comparing_all(
            a in proptest::collection::btree_map("[a-c]", "[xy<]", 0..3),
            b in proptest::collection::btree_map("[a-c]", "[xy<]", 0..3),
            image_a in "[ab]", image_b in "[ab]",
            extra_a in proptest::option::of("[hk]"), extra_b in proptest::option::of("[hk]"),
            phase_a in "[PR]", phase_b in "[PR]",
            through_status in any::<bool>(),
        ) {
            let info = Registry::with_defaults().lookup("pods").cloned().unwrap();
            let target = if through_status { Target::Status } else { Target::Main };
            let old = crate::object::build(&info, &pod(json!(a), &image_a, extra_a.as_deref(), &phase_a), 7);
            let mut new = pod(json!(b), &image_b, extra_b.as_deref(), &phase_b);
            new["metadata"].as_object_mut().unwrap().remove("managedFields");
            let before = new.clone();
            let mut full = old.value();
            let managed = full["metadata"].as_object_mut().unwrap().remove("managedFields");
            let new_value = Value::Object(new.clone());
            // The fields the write's target resets, from the objects compared (as the store
            // computes them).
            let ignored = managed_fields::ignored_fields(&info, target, &[&full, &new_value]);
            let ctx = managed_fields::Context {
                ty: managed_fields::type_of(&info), api_version: "v1", ignored: &ignored,
            };
            let expected = managed_fields::changes(&full, &new_value, ctx);
            let split = Split::of(&old, &mut new).unwrap();
            prop_assert_eq!(&split.managed, &managed);
            let new_value = Value::Object(new.clone());
            let ignored = managed_fields::ignored_fields(&info, target, &[&split.old, &new_value]);
            let ctx = managed_fields::Context { ignored: &ignored, ..ctx };
            let got = managed_fields::changes(&split.old, &new_value, ctx);
            prop_assert_eq!(got, expected);
            split.aside.restore(&mut new);
            prop_assert_eq!(new, before);
        }
    }

    #[test]
    fn bytes_compare_as_serialized() {
        let raw = |s: &str| RawValue::from_string(s.to_string()).unwrap();
        assert!(same_bytes(&json!({"a": [1, "x"]}), &raw(r#"{"a":[1,"x"]}"#)));
        assert!(!same_bytes(&json!({"a": [1, "x"]}), &raw(r#"{"a":[1,"x"],"b":1}"#)));
        assert!(!same_bytes(&json!({"a": [1, "x", 2]}), &raw(r#"{"a":[1,"x"]}"#)));
        assert!(!same_bytes(&json!(1.0), &raw("1")));
    }
}
