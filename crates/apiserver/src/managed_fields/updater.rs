//! How a write changes who owns what (structured-merge-diff's `Updater`, with kube-apiserver's
//! field manager around it): an update takes the fields it changed, an apply claims the fields
//! of its configuration, merges it into the live object and prunes what it stopped applying.
//!
//! Invariants:
//! - an update never fails: its manager takes every field it added or modified from whoever
//!   owned it, fields it removed leave every manager, and the manager's entry (merged with its
//!   earlier one, its time the write's) appears only if it took something;
//! - an apply without `force` fails with every conflict — a field of its configuration another
//!   manager owns and the apply would change — and changes nothing; with `force` it takes them;
//! - an apply removes a field only if the applier applied it last time, does not apply it now
//!   and no other manager owns it (then it is gone together with what is below it);
//! - the fields a strategy resets (`ignored`: a resource's `status` through the resource, all
//!   but `status` through `/status`) are never owned through that write; `apiVersion`, `kind`
//!   and the server-owned metadata (name, namespace, uid, resourceVersion, generation,
//!   creationTimestamp, managedFields) are never owned;
//! - at most ten `Update` managers are kept: older ones merge into `ancient-changes`.

use serde_json::Value;

use super::compare::{Comparison, compare};
use super::managers::{Entry, ManagerKey, Managers, Operation, seconds};
use super::merge::merge;
use super::path::{Path, PathElement};
use super::remove::remove_items;
use super::set::FieldSet;
use super::to_set::field_set;
use super::validate::Errors;
use crate::schema::{Atom, TypeRef};

/// The most `Update` entries an object keeps (kube-apiserver's `DefaultMaxUpdateManagers`).
const MAX_UPDATE_MANAGERS: usize = 10;

/// The fields no manager owns (kube-apiserver's strip set).
fn stripped() -> &'static FieldSet {
    static SET: std::sync::LazyLock<FieldSet> = std::sync::LazyLock::new(|| {
        let mut s = FieldSet::new();
        for p in [
            &["apiVersion"][..],
            &["kind"],
            &["metadata"],
            &["metadata", "name"],
            &["metadata", "namespace"],
            &["metadata", "creationTimestamp"],
            &["metadata", "selfLink"],
            &["metadata", "uid"],
            &["metadata", "clusterName"],
            &["metadata", "generation"],
            &["metadata", "managedFields"],
            &["metadata", "resourceVersion"],
        ] {
            s.insert(&Path::fields(p).0);
        }
        s
    });
    &SET
}

/// A write's context: the object's type and API version, and what the write may not own.
#[derive(Clone, Copy)]
pub(crate) struct Context<'a> {
    /// The object's type.
    pub(crate) ty: TypeRef<'a>,
    /// The resource's API version (`apps/v1`).
    pub(crate) api_version: &'a str,
    /// The fields the strategy resets for this write.
    pub(crate) ignored: &'a FieldSet,
}

/// The conflicts of an apply: who owns which field it would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflicts(pub Vec<(ManagerKey, Path)>);

/// Why an apply failed.
#[derive(Debug)]
pub(crate) enum ApplyError {
    /// Other managers own fields the apply changes (and it was not forced).
    Conflicts(Conflicts),
    /// The configuration could not be merged.
    Merge(Errors),
}

/// What an update by `manager` (create, update or patch) that turned `live` into `new` changed,
/// as the field manager sees it (without the fields the write cannot own).
pub(crate) fn changes(live: &Value, new: &Value, ctx: Context<'_>) -> Comparison {
    compare(live, new, ctx.ty).excluding(ctx.ignored)
}

/// Records the changes `cmp` of an update by `manager`, at `now`.
pub(crate) fn record(managers: &mut Managers, cmp: Comparison, ctx: Context<'_>, manager: &ManagerKey, now: &str) {
    if !cmp.is_same() {
        let Comparison { added, modified, removed } = cmp;
        let mut taken = added;
        taken.merge(modified);
        for e in managers.0.values_mut() {
            e.set.subtract(&taken);
            e.set.subtract(&removed);
        }
        let mut own = taken;
        own.subtract(stripped());
        // The entry's time is the write's when the write added or modified a field it may own;
        // a write that only removes fields (or re-sends what is stored) leaves it.
        if !own.is_empty() {
            let e = managers.0.entry(manager.clone()).or_insert_with(|| Entry {
                set: FieldSet::new(),
                api_version: ctx.api_version.to_string(),
                time: None,
            });
            e.set.merge(own);
            e.api_version = ctx.api_version.to_string();
            e.time = Some(now.to_string());
        }
    }
    managers.drop_empty();
    cap_update_managers(managers);
}

/// What an apply gives: the object to store, as the type holds it (without the nulls Go would
/// not keep).
pub(crate) struct Applied {
    /// The merged, pruned object.
    pub(crate) object: Value,
}

/// Applies `config` as `manager` to `live`, at `now`.
pub(crate) fn apply(
    managers: &mut Managers,
    live: &Value,
    config: &Value,
    ctx: Context<'_>,
    manager: &ManagerKey,
    force: bool,
    now: &str,
) -> Result<Applied, ApplyError> {
    let merged = merge(live, config, ctx.ty).map_err(ApplyError::Merge)?;
    let claimed = field_set(config, ctx.ty).recursive_difference(ctx.ignored);
    let last = managers.0.get(manager).map(|e| e.set.clone());
    let previous_time = managers.0.get(manager).and_then(|e| e.time.clone());
    let mut next = managers.clone();
    next.0
        .insert(manager.clone(), Entry { set: claimed.clone(), api_version: ctx.api_version.to_string(), time: None });
    let mut object = match &last {
        Some(last) if !last.is_empty() => prune(merged, &next, last, ctx.ty),
        _ => merged,
    };
    // As Go's types hold it: the nulls removal leaves become absent fields or zero values.
    super::normalize_nulls(&mut object, ctx.ty);
    let mut cmp = compare(live, &object, ctx.ty).excluding(ctx.ignored);
    // A field the configuration sets to null is gone from the object as Go holds it, but
    // structured-merge-diff compares the merged value, null included: the field is modified
    // (another manager's value of it conflicts), not merely removed.
    let nulled = cmp.removed.intersection(&claimed);
    if !nulled.is_empty() {
        cmp.removed = cmp.removed.difference(&nulled);
        cmp.modified.union_with(&nulled);
    }
    take_from_others(&mut next, manager, &cmp, force)?;
    let changed = !super::path::values_equal(live, &object);
    let own = claimed.difference(stripped());
    match next.0.get_mut(manager) {
        Some(e) if !own.is_empty() => {
            e.set = own;
            e.time = if changed { Some(now.to_string()) } else { previous_time };
        }
        _ => {
            next.0.remove(manager);
        }
    }
    next.drop_empty();
    *managers = next;
    Ok(Applied { object })
}

/// The annotation kubectl's client-side apply keeps its last configuration in.
pub(crate) const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The conflicts of a `kubectl` apply that remain once those its client-side
/// `last-applied-configuration` explains are allowed (kube-apiserver's upgrade from client-side
/// to server-side apply): a field of the last-applied configuration whose live value is the one
/// it sets was kubectl's to begin with. None when every conflict is allowed; the conflicts as
/// they are when the object has no usable last-applied configuration.
pub(crate) fn conflicts_beyond_last_applied(live: &Value, ctx: Context<'_>, conflicts: Conflicts) -> Option<Conflicts> {
    let annotation = live
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty());
    let last: Option<Value> = annotation.and_then(|a| serde_json::from_str(a).ok());
    let Some(last) = last.filter(|l| l.get("apiVersion").and_then(Value::as_str) == Some(ctx.api_version)) else {
        return Some(conflicts);
    };
    if super::validate(&last, ctx.ty).is_err() {
        return Some(conflicts);
    }
    let cmp = compare(&last, live, ctx.ty);
    let allowed = field_set(&last, ctx.ty).difference(&cmp.modified).difference(&cmp.added).difference(&cmp.removed);
    let rest: Vec<(ManagerKey, Path)> = conflicts.0.into_iter().filter(|(_, p)| !allowed.has(&p.0)).collect();
    (!rest.is_empty()).then_some(Conflicts(rest))
}

/// The `last-applied-configuration` kubectl's server-side apply keeps up to date on objects that
/// have one: the applied configuration without that annotation, as Go encodes it.
pub(crate) fn last_applied_of(config: &Value) -> String {
    let mut c = config.clone();
    if let Some(a) = c.get_mut("metadata").and_then(|m| m.get_mut("annotations")).and_then(Value::as_object_mut) {
        a.remove(LAST_APPLIED);
    }
    let mut out = String::new();
    super::path::write_go_json(&mut out, &c);
    out.push('\n');
    out
}

/// Takes from the managers other than `manager` the fields `cmp` changed or removed; fails
/// with the conflicts unless `force`.
fn take_from_others(
    managers: &mut Managers,
    manager: &ManagerKey,
    cmp: &Comparison,
    force: bool,
) -> Result<(), ApplyError> {
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts = Vec::new();
    for (k, e) in &managers.0 {
        if k == manager {
            continue;
        }
        let c = e.set.intersection(&changed);
        conflicts.extend(c.paths().into_iter().map(|p| (k.clone(), p)));
    }
    if !force && !conflicts.is_empty() {
        return Err(ApplyError::Conflicts(Conflicts(conflicts)));
    }
    for (k, e) in managers.0.iter_mut() {
        if k != manager {
            e.set = e.set.difference(&changed).difference(&cmp.removed);
        }
    }
    managers.drop_empty();
    Ok(())
}

/// Removes from `merged` what the applier applied last time (`last`), does not apply any more,
/// and nobody else owns.
fn prune(merged: Value, managers: &Managers, last: &FieldSet, ty: TypeRef<'_>) -> Value {
    let last = ensure_named_fields_are_members(last, ty);
    let pruned = remove_items(&merged, &last, ty);
    // Put back what anyone owns.
    let merged_set = ensure_named_fields_are_members(&field_set(&merged, ty), ty);
    let pruned_set = ensure_named_fields_are_members(&field_set(&pruned, ty), ty);
    let mut owned = FieldSet::new();
    for e in managers.0.values() {
        owned.union_with(&e.set);
    }
    let owned = ensure_named_fields_are_members(&owned, ty);
    let pruned = remove_items(&merged, &merged_set.difference(&pruned_set.union(&owned)), ty);
    // Remove only what the applier had applied.
    let pruned_set = ensure_named_fields_are_members(&field_set(&pruned, ty), ty);
    remove_items(&merged, &merged_set.difference(&pruned_set).intersection(&last), ty)
}

/// `set` with the struct fields that have members below them as members too (not map keys).
pub(crate) fn ensure_named_fields_are_members(set: &FieldSet, ty: TypeRef<'_>) -> FieldSet {
    let atom = ty.atom(None);
    let mut out = FieldSet::new();
    for m in set.members() {
        out.insert_member(m.clone());
    }
    for (pe, child) in set.children() {
        let child_ty = match (&atom, pe) {
            (Atom::Map(map), PathElement::Field(name)) => {
                if map.is_named_field(name) {
                    out.insert_member(pe.clone());
                }
                Some(map.field_or_deduced(name))
            }
            (Atom::List(list), PathElement::Key(_) | PathElement::Value(_) | PathElement::Index(_)) => Some(list.items),
            _ => None,
        };
        let below = match child_ty {
            Some(t) => ensure_named_fields_are_members(child, t),
            None => child.clone(),
        };
        out.insert_child(pe.clone(), below);
    }
    out
}

/// Merges the oldest `Update` entries into `ancient-changes` buckets (one per API version) until
/// at most [`MAX_UPDATE_MANAGERS`] are left, as kube-apiserver does.
fn cap_update_managers(managers: &mut Managers) {
    let mut updaters: Vec<ManagerKey> =
        managers.0.keys().filter(|k| k.operation == Operation::Update).cloned().collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    let identifier = ManagerKey::identifier;
    updaters.sort_by(|a, b| {
        let (ta, tb) = (seconds(managers.0[a].time.as_deref()), seconds(managers.0[b].time.as_deref()));
        ta.cmp(&tb).then_with(|| identifier(a).cmp(&identifier(b)))
    });
    let mut first_of_version: std::collections::HashMap<String, ManagerKey> = std::collections::HashMap::new();
    let mut count = updaters.len();
    for key in updaters {
        if count <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managers.0.get(&key).cloned() else { continue };
        let version = entry.api_version.clone();
        let bucket = ManagerKey::new("ancient-changes", Operation::Update, &version, "");
        match first_of_version.get(&version) {
            Some(first) => {
                if !managers.0.contains_key(&bucket)
                    && let Some(f) = managers.0.remove(first)
                {
                    managers.0.insert(bucket.clone(), f);
                }
                let b = managers.0.entry(bucket).or_insert_with(|| Entry {
                    set: FieldSet::new(),
                    api_version: version.clone(),
                    time: None,
                });
                b.set = entry.set.union(&b.set);
                b.api_version = version;
                b.time = entry.time;
                managers.0.remove(&key);
                count -= 1;
            }
            None => {
                first_of_version.insert(version, key);
            }
        }
    }
}

/// Records a write through the `scale` subresource by `manager` that changed the replica count
/// (kube-apiserver's scale handler): the replicas path (`replicas`) leaves every other
/// manager and becomes the manager's, in an entry for subresource `scale` without a time.
pub(crate) fn scale(managers: &mut Managers, replicas: &Path, manager: &str, api_version: &str) {
    let mut path = FieldSet::new();
    path.insert(&replicas.0);
    for e in managers.0.values_mut() {
        e.set = e.set.difference(&path);
    }
    managers.drop_empty();
    let key = ManagerKey::new(manager, Operation::Update, api_version, "scale");
    managers.0.insert(key, Entry { set: path, api_version: api_version.to_string(), time: None });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::builtin;

    fn deployment() -> TypeRef<'static> {
        builtin().type_of("apps", "v1", "Deployment").unwrap()
    }

    fn ctx(ignored: &FieldSet) -> Context<'_> {
        Context { ty: deployment(), api_version: "apps/v1", ignored }
    }

    #[test]
    fn only_added_or_modified_fields_move_the_entry_s_time() {
        let none = FieldSet::new();
        let mut m = Managers::default();
        let key = ManagerKey::new("unknown", Operation::Update, "apps/v1", "");
        let sent = json!({"metadata": {"name": "d", "labels": {}, "finalizers": []}, "spec": {"replicas": 1}});
        record(&mut m, changes(&json!({}), &sent, ctx(&none)), ctx(&none), &key, "2026-01-01T00:00:00Z");
        // Empty labels and finalizers are not fields of the Go object: nobody owns them.
        let owned = m.0[&key].set.to_fields_v1();
        assert_eq!(owned, json!({"f:spec": {"f:replicas": {}}}));
        // The same body a second later, without what the server set: nothing taken.
        let stored = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 1},
            "spec": {"replicas": 1}});
        record(&mut m, changes(&stored, &sent, ctx(&none)), ctx(&none), &key, "2026-01-01T00:00:01Z");
        assert_eq!(m.0[&key].time.as_deref(), Some("2026-01-01T00:00:00Z"));
        // A value changed moves it.
        let scaled = json!({"metadata": {"name": "d"}, "spec": {"replicas": 2, "paused": true}});
        record(&mut m, changes(&stored, &scaled, ctx(&none)), ctx(&none), &key, "2026-01-01T00:00:02Z");
        assert_eq!(m.0[&key].time.as_deref(), Some("2026-01-01T00:00:02Z"));
        // Only removing a field leaves it, and the field leaves the entry.
        let unpaused = json!({"metadata": {"name": "d"}, "spec": {"replicas": 2}});
        record(&mut m, changes(&scaled, &unpaused, ctx(&none)), ctx(&none), &key, "2026-01-01T00:00:03Z");
        assert_eq!(m.0[&key].time.as_deref(), Some("2026-01-01T00:00:02Z"));
        let owned = m.0[&key].set.to_fields_v1();
        assert_eq!(owned, json!({"f:spec": {"f:replicas": {}}}));
    }

    #[test]
    fn a_create_owns_what_it_set_with_kube_markers() {
        let none = FieldSet::new();
        let mut m = Managers::default();
        let new = json!({"metadata": {"name": "d", "labels": {"app": "x"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "x"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
                "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i", "resources": {}}]}}}});
        let key = ManagerKey::new("unknown", Operation::Update, "apps/v1", "");
        record(&mut m, changes(&json!({}), &new, ctx(&none)), ctx(&none), &key, "2026-01-01T00:00:00Z");
        assert_eq!(
            m.0[&key].set.to_fields_v1(),
            json!({
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {"f:replicas": {}, "f:selector": {},
                    "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}}, "f:type": {}},
                    "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}}}}}
            })
        );
    }

    #[test]
    fn apply_conflicts_then_forces_then_prunes_only_its_own_fields() {
        let none = FieldSet::new();
        let mut m = Managers::default();
        let alpha = ManagerKey::new("alpha", Operation::Apply, "apps/v1", "");
        let beta = ManagerKey::new("beta", Operation::Apply, "apps/v1", "");
        let a1 = json!({"metadata": {"name": "d", "labels": {"app": "x", "owner": "alpha"}}, "spec": {"replicas": 2}});
        let out = apply(&mut m, &json!({}), &a1, ctx(&none), &alpha, false, "t1").unwrap();
        let live = out.object;
        let b = json!({"metadata": {"name": "d"}, "spec": {"replicas": 3}});
        match apply(&mut m.clone(), &live, &b, ctx(&none), &beta, false, "t2") {
            Err(ApplyError::Conflicts(c)) => {
                assert_eq!(c.0, vec![(alpha.clone(), Path::fields(&["spec", "replicas"]))]);
            }
            _ => panic!("a conflict"),
        }
        let live = apply(&mut m, &live, &b, ctx(&none), &beta, true, "t2").unwrap().object;
        assert!(!m.0[&alpha].set.has(&Path::fields(&["spec", "replicas"]).0));
        // alpha stops applying replicas (beta owns it: kept) and its owner label (removed).
        let a2 = json!({"metadata": {"name": "d", "labels": {"app": "x"}}});
        let out = apply(&mut m, &live, &a2, ctx(&none), &alpha, false, "t3").unwrap();
        assert_eq!(out.object["spec"]["replicas"], 3);
        assert_eq!(out.object["metadata"]["labels"], json!({"app": "x"}));
        // Applying the same configuration again changes nothing.
        let before = m.clone();
        let again = apply(&mut m, &out.object, &a2, ctx(&none), &alpha, false, "t4").unwrap();
        assert_eq!(again.object, out.object);
        assert_eq!(m, before);
    }

    /// Whether `path` names something in `v` (a port without protocol has the default, TCP).
    fn present(v: &Value, path: &[PathElement]) -> bool {
        let Some((pe, rest)) = path.split_first() else { return true };
        let tcp = json!("TCP");
        let child = match (pe, v) {
            (PathElement::Field(f), Value::Object(m)) => m.get(&**f),
            (PathElement::Key(keys), Value::Array(items)) => items.iter().find(|i| {
                keys.iter().all(|(k, kv)| {
                    let x = i.get(&**k).or((k.as_ref() == "protocol").then_some(&tcp));
                    x.is_some_and(|x| crate::managed_fields::path::values_equal(x, kv))
                })
            }),
            (PathElement::Value(x), Value::Array(items)) => items.iter().find(|i| *i == &**x),
            _ => None,
        };
        child.is_some_and(|c| present(c, rest))
    }

    fn arb_config() -> impl Strategy<Value = Value> {
        let labels = proptest::collection::btree_map("[abc]", "[12]", 0..3);
        let finalizers = proptest::collection::btree_set("f[12]", 0..3);
        let container = ("[xyz]", "i[12]", proptest::option::of(proptest::collection::btree_set(80u16..82, 1..3)));
        let containers = proptest::collection::vec(container, 0..3);
        (labels, finalizers, proptest::option::of(1u8..4), containers).prop_map(
            |(labels, finalizers, replicas, containers)| {
                let mut spec = serde_json::Map::new();
                if let Some(r) = replicas {
                    spec.insert("replicas".into(), json!(r));
                }
                let mut seen = std::collections::BTreeSet::new();
                let cs: Vec<Value> = containers
                    .into_iter()
                    .filter(|(n, _, _)| seen.insert(n.clone()))
                    .map(|(n, image, ports)| {
                        let mut c = json!({"name": n, "image": image});
                        if let Some(ports) = ports {
                            c["ports"] = ports.into_iter().map(|p| json!({"containerPort": p})).collect();
                        }
                        c
                    })
                    .collect();
                if !cs.is_empty() {
                    spec.insert("template".into(), json!({"spec": {"containers": cs}}));
                }
                let mut meta = json!({"name": "d"});
                if !labels.is_empty() {
                    meta["labels"] = json!(labels);
                }
                if !finalizers.is_empty() {
                    meta["finalizers"] = json!(finalizers);
                }
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec})
            },
        )
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn applies_are_idempotent_and_never_remove_what_others_own(
            steps in proptest::collection::vec((0usize..3, arb_config(), any::<bool>()), 1..8)
        ) {
            let none = FieldSet::new();
            let names = ["a", "b", "c"];
            let mut managers = Managers::default();
            let mut live = json!({});
            for (who, config, force) in steps {
                let key = ManagerKey::new(names[who], Operation::Apply, "apps/v1", "");
                let before = managers.clone();
                let mut next = managers.clone();
                let Ok(out) = apply(&mut next, &live, &config, ctx(&none), &key, force, "t") else {
                    // A refused apply (a conflict) changes nothing.
                    prop_assert!(!force);
                    continue;
                };
                // Nothing another manager owned is gone.
                for (k, e) in &before.0 {
                    if *k == key {
                        continue;
                    }
                    for p in e.set.paths() {
                        if present(&live, &p.0) {
                            prop_assert!(present(&out.object, &p.0), "{} of {} removed by {}", p, k.manager, key.manager);
                        }
                    }
                }
                // The applier owns what it applied.
                let claimed = field_set(&config, deployment()).difference(stripped());
                let owned = next.0.get(&key).map(|e| e.set.clone()).unwrap_or_default();
                prop_assert_eq!(&owned, &claimed);
                // Applying it again is a no-op.
                let mut again = next.clone();
                let repeat = apply(&mut again, &out.object, &config, ctx(&none), &key, false, "u");
                prop_assert!(repeat.is_ok(), "re-applying conflicted: {:?}", repeat.err().map(|e| format!("{e:?}")));
                let repeat = repeat.unwrap();
                prop_assert_eq!(&repeat.object, &out.object);
                prop_assert_eq!(&again, &next);
                managers = next;
                live = out.object;
            }
        }
    }
}
