//! The `managedFields` a write stores: how the write's kind (update, apply, scale) changes the
//! managers of the object it replaces.
//!
//! Invariants: entries are kept byte for byte when the write changes no field and the client
//! sent none (or sent back those it read); otherwise an update starts from the managers of the
//! stored version it compares against, or from those the client sent in their place (as
//! kube-apiserver's `decodeLiveOrNew`), and the write's manager takes the fields it changed. A
//! computed object that differs from the stored one only in the times of its entries (same
//! entries, same order) is recognised as no change ([`only_timestamps_moved`]).

use serde_json::{Map, Value};

use super::WriteOpts;
use super::body_checks::meta_mut;
use crate::managed_fields::{self, ManagerKey, Managers, Operation};
use crate::object::{self, StoredObject};
use crate::registry::ResourceInfo;
use crate::strategy::Target;

/// How a write records its managers in `managedFields`.
#[derive(Clone)]
pub(crate) enum Tracking {
    /// A create, update or patch by the write's field manager.
    Update,
    /// A server-side apply, whose managers are already computed.
    Applied(Managers),
    /// A write through `/scale` by the write's field manager.
    Scale,
}

/// The object a create starts from, as kube-apiserver's field manager sees it: an empty object
/// of the type.
pub(super) static ZERO_OBJECT: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| Value::Object(Map::new()));

/// The `managedFields` a write stores: the live ones as they are, or new ones.
pub(crate) enum Tracked {
    /// The stored entries, unchanged (None: there are none).
    Kept(Option<Value>),
    /// New entries.
    Changed(Managers),
}

impl Tracked {
    /// Writes them into the object's metadata.
    pub(super) fn store_into(self, obj: &mut Map<String, Value>) {
        match self {
            Tracked::Changed(m) => managed_fields::store_into(obj, &m),
            Tracked::Kept(v) => {
                let meta = meta_mut(obj);
                match v {
                    Some(v) => meta.insert("managedFields".into(), v),
                    None => meta.remove("managedFields"),
                };
            }
        }
    }
}

/// The managers of `obj`, the successor of `old` a write computed (its `managedFields` taken out
/// of it), as `tracking` says they change.
pub(super) fn track(
    info: &ResourceInfo,
    old: &StoredObject,
    obj: &mut Map<String, Value>,
    opts: &WriteOpts,
    tracking: Tracking,
    requested: managed_fields::Requested,
) -> Tracked {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        meta.remove("managedFields");
    }
    // An update of a built-in resource, of its status or of a pod's subresource, compares only
    // what it did not leave byte for byte as is (a status write leaves all but the status).
    let split = match tracking {
        Tracking::Update
            if matches!(opts.target, Target::Main | Target::Status | Target::EphemeralContainers | Target::Resize)
                && info.custom.is_none() =>
        {
            crate::unchanged::Split::of(old, obj)
        }
        _ => None,
    };
    let (old_value, old_managed, set_aside) = match split {
        Some(crate::unchanged::Split { old, managed, aside }) => (old, managed, Some(aside)),
        None => {
            let mut v = old.value();
            let m = v.get_mut("metadata").and_then(Value::as_object_mut).and_then(|m| m.remove("managedFields"));
            (v, m, None)
        }
    };
    let api_version = info.api_version();
    let manager = managed_fields::recorded_name(&opts.field_manager);
    match tracking {
        Tracking::Applied(m) => Tracked::Changed(m),
        Tracking::Scale => {
            let Some(sub) = &info.scale_subresource else { return Tracked::Kept(old_managed) };
            let path: Vec<&str> = sub.spec_replicas_path.split('.').filter(|s| !s.is_empty()).collect();
            let old_replicas = path.iter().try_fold(&old_value, |v, seg| v.get(seg));
            let new_replicas = match path.split_first() {
                Some((first, rest)) => obj.get(*first).and_then(|v| rest.iter().try_fold(v, |v, seg| v.get(seg))),
                None => None,
            };
            // (An object whose managers are none records none, as for an update below.)
            if old_replicas == new_replicas || !has_entries(old_managed.as_ref()) {
                return Tracked::Kept(old_managed);
            }
            let mut m = Managers::decode(old_managed.as_ref()).unwrap_or_default();
            managed_fields::scale(&mut m, &managed_fields::Path::fields(&path), manager, &api_version);
            Tracked::Changed(m)
        }
        Tracking::Update => {
            let subresource = managed_fields::subresource_of(opts.target);
            let new = Value::Object(std::mem::take(obj));
            let ignored = managed_fields::ignored_fields(info, opts.target, &[&old_value, &new]);
            let ctx = managed_fields::Context {
                ty: managed_fields::type_of(info),
                api_version: &api_version,
                ignored: &ignored,
            };
            let cmp = managed_fields::changes(&old_value, &new, ctx);
            if let Value::Object(o) = new {
                *obj = o;
            }
            if let Some(aside) = set_aside {
                aside.restore(obj);
            }
            // A client sending back the entries it read (an update of a fetched object) keeps
            // them, as one that sends none.
            let requested = match requested {
                managed_fields::Requested::Given(v) if Some(&v) == old_managed.as_ref() => {
                    managed_fields::Requested::Absent
                }
                r => r,
            };
            let keeps = opts.target != Target::Main || requested == managed_fields::Requested::Absent;
            if keeps && cmp.is_same() {
                return Tracked::Kept(old_managed);
            }
            let through_subresource = opts.target != Target::Main;
            // kube's skipNonAppliedManager: an update of an object whose managers are none
            // (reset, or never recorded) records none; its first apply starts them.
            // (The stored entries were checked when written; a request's are read, as kube reads
            // them, and count only when they can be.)
            let starts_from_none = match &requested {
                _ if through_subresource => !has_entries(old_managed.as_ref()),
                managed_fields::Requested::Reset => true,
                managed_fields::Requested::Given(v) if Managers::decode(Some(v)).is_ok_and(|m| !m.0.is_empty()) => {
                    false
                }
                _ => !has_entries(old_managed.as_ref()),
            };
            if starts_from_none {
                return Tracked::Kept(None);
            }
            let mut m =
                managed_fields::base_managers(old_managed.as_ref(), requested, through_subresource, cmp.touched());
            let key = ManagerKey::new(manager, Operation::Update, &api_version, subresource);
            managed_fields::record(&mut m, cmp, ctx, &key, &object::now_rfc3339());
            Tracked::Changed(m)
        }
    }
}

/// Whether stored `managedFields` hold any entry (without decoding them: an update reads them
/// once, in [`managed_fields::base_managers`]).
fn has_entries(managed: Option<&Value>) -> bool {
    managed.and_then(Value::as_array).is_some_and(|a| !a.is_empty())
}

/// Whether `obj`, the successor of `old` a write computed, differs from it only in the times of
/// its `managedFields` entries (kube-apiserver's `IgnoreManagedFieldsTimestampsTransformer`):
/// both have the same entries in the same order, equal but for `time`, at least one time moved,
/// and the rest of the objects is equal (`obj` without `kind`, `apiVersion` and
/// `resourceVersion`). Such a write is no change: kube puts the old times back and stores
/// nothing.
pub(super) fn only_timestamps_moved(obj: &Map<String, Value>, old: &StoredObject) -> bool {
    let Some(new_entries) = entries(obj) else { return false };
    let old_value = old.value();
    let Some(old_obj) = old_value.as_object() else { return false };
    let Some(old_entries) = entries(old_obj) else { return false };
    if new_entries.len() != old_entries.len() {
        return false;
    }
    let pairs = || new_entries.iter().zip(old_entries);
    let same_but_time = |n: &Value, o: &Value| match (n, o) {
        (Value::Object(n), Value::Object(o)) => equal_except(n, o, &["time"]),
        _ => false,
    };
    if !pairs().any(|(n, o)| n.get("time") != o.get("time")) || !pairs().all(|(n, o)| same_but_time(n, o)) {
        return false;
    }
    let no_meta = Map::new();
    equal_except(
        meta(obj).unwrap_or(&no_meta),
        meta(old_obj).unwrap_or(&no_meta),
        &["managedFields", "resourceVersion"],
    ) && equal_except(obj, old_obj, &["kind", "apiVersion", "metadata"])
}

/// The metadata of `o`, if it is an object.
fn meta(o: &Map<String, Value>) -> Option<&Map<String, Value>> {
    o.get("metadata")?.as_object()
}

/// The managedFields entries of `o`, if it has some.
fn entries(o: &Map<String, Value>) -> Option<&Vec<Value>> {
    meta(o)?.get("managedFields")?.as_array().filter(|a| !a.is_empty())
}

/// Whether `a` and `b` have the same members, those named in `skip` aside.
fn equal_except(a: &Map<String, Value>, b: &Map<String, Value>, skip: &[&str]) -> bool {
    let kept = |m: &Map<String, Value>| m.keys().filter(|k| !skip.contains(&k.as_str())).count();
    kept(a) == kept(b) && a.iter().filter(|(k, _)| !skip.contains(&k.as_str())).all(|(k, v)| b.get(k) == Some(v))
}
