//! What the runner reads of an object's metadata to route its notifications: its controller,
//! as [`ControllerRunnerBuilder::owns`](super::ControllerRunnerBuilder::owns) finds it (the
//! owner reference marked `controller: true` whose kind and API group are the primary kind's,
//! controller-runtime's `EnqueueRequestForOwner` with `OnlyControllerOwner`), and its
//! generation, which [`generation_changed`] compares.
//!
//! Invariants: each reader keeps only the field it needs from the object's JSON
//! (`metadata.ownerReferences`, `metadata.generation`; the rest is skipped, never decoded into
//! the object's type, and read in place with the managed field sets left out, nothing copied),
//! so a malformed field hides nothing else; a resync's update (the same object twice) reads
//! nothing; at most one key is returned (an
//! object has at most one controller); the key is in the object's namespace unless the primary
//! kind is cluster-scoped.

use std::borrow::Cow;

use serde::Deserialize;

use crate::key::ObjectKey;
use crate::object::Object;

/// The primary kind owned objects are mapped to.
pub(crate) struct Owner {
    kind: String,
    group: String,
    cluster_scoped: bool,
}

#[derive(Deserialize)]
struct Owned<'a> {
    #[serde(default, borrow)]
    metadata: OwnedMeta<'a>,
}

#[derive(Deserialize, Default)]
struct OwnedMeta<'a> {
    #[serde(default, borrow, rename = "ownerReferences")]
    owner_references: Vec<Reference<'a>>,
}

#[derive(Deserialize)]
struct Reference<'a> {
    #[serde(default, borrow, rename = "apiVersion")]
    api_version: Cow<'a, str>,
    #[serde(default, borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    controller: Option<bool>,
}

#[derive(Deserialize)]
struct Generated {
    #[serde(default)]
    metadata: GeneratedMeta,
}

#[derive(Deserialize, Default)]
struct GeneratedMeta {
    #[serde(default)]
    generation: Option<i64>,
}

/// The object's `metadata.generation` (None when it has none or cannot be read).
fn generation<O>(o: &Object<O>) -> Option<i64> {
    o.with_json_without_field_sets(|json| serde_json::from_slice::<Generated>(json).ok()?.metadata.generation)
}

/// An update filter (see
/// [`informer_filtered`](super::ControllerRunnerBuilder::informer_filtered)) that lets through
/// updates whose `metadata.generation` moved: spec changes, and deletions of objects that wait
/// for finalizers (the server moves the generation when it marks them), not status writes,
/// metadata writes or resyncs (controller-runtime's `GenerationChangedPredicate`). As that
/// predicate, it lets no update of a kind without generations through.
pub fn generation_changed<O>(old: &Object<O>, new: &Object<O>) -> bool {
    // A resync hands the same object twice: nothing to read.
    !old.ptr_eq(new) && generation(old) != generation(new)
}

impl Owner {
    /// The primary kind `kind` of API group `group`, cluster-scoped or not.
    pub(crate) fn new(kind: String, group: String, cluster_scoped: bool) -> Self {
        Owner { kind, group, cluster_scoped }
    }

    /// The key of the object's controller of the primary kind, if it has one.
    pub(crate) fn key_of<O>(&self, o: &Object<O>) -> Vec<ObjectKey> {
        let namespace = if self.cluster_scoped { None } else { o.namespace() };
        o.with_json_without_field_sets(|json| {
            let owned = serde_json::from_slice::<Owned<'_>>(json).ok()?;
            let controller = owned.metadata.owner_references.into_iter().find(|r| {
                let group = r.api_version.rsplit_once('/').map_or("", |(g, _)| g);
                r.controller == Some(true) && r.kind == self.kind && group == self.group
            })?;
            ObjectKey::new(namespace, &controller.name).ok()
        })
        .into_iter()
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(refs: serde_json::Value) -> Object<()> {
        let json = serde_json::json!({"metadata": {"name": "child", "namespace": "ns", "ownerReferences": refs}});
        Object::from_json(serde_json::to_vec(&json).unwrap()).unwrap()
    }

    #[test]
    fn a_generation_moved_is_a_change() {
        let at = |g: Option<i64>| {
            let json = serde_json::json!({"metadata": {"name": "x", "generation": g, "ownerReferences": "malformed"}});
            Object::<()>::from_json(serde_json::to_vec(&json).unwrap()).unwrap()
        };
        assert!(generation_changed(&at(Some(1)), &at(Some(2))));
        assert!(!generation_changed(&at(Some(2)), &at(Some(2))));
        assert!(!generation_changed(&at(None), &at(None)));
    }

    #[test]
    fn the_controller_of_the_primary_kind_is_found() {
        let rs = Owner::new("ReplicaSet".into(), "apps".into(), false);
        let refs = serde_json::json!([
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "not-controller", "uid": "1"},
            {"apiVersion": "v1", "kind": "ReplicaSet", "name": "other-group", "uid": "2", "controller": true},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "3", "controller": true},
        ]);
        let keys: Vec<String> = rs.key_of(&object(refs)).iter().map(|k| k.to_string()).collect();
        assert_eq!(keys, ["ns/web"]);
        assert!(rs.key_of(&object(serde_json::json!([]))).is_empty());
    }
}
