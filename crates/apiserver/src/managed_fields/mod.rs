//! `metadata.managedFields` and server-side apply, as kube-apiserver's field manager keeps and
//! uses them.
//!
//! Every write records who set which field: a create, update or patch as an `Update` by its
//! manager (the `fieldManager` parameter, else the client's User-Agent up to its first `/`,
//! else `unknown`), an apply (`application/apply-patch+yaml`) as an `Apply`; writes through
//! `/status` and `/scale` say so in `subresource`. Field sets are stored in kube's `FieldsV1`
//! form ([`set`], [`path`], [`fields_v1`]). The structured merge walks ([`compare`], [`merge`], [`to_set`],
//! [`remove`]) follow the schema of the type ([`crate::schema::TypeRef`]): list types and
//! keys, map types, with kube's deduced schema for types without one.
//!
//! Invariants: managedFields never hold the server-owned fields (name, namespace, uid,
//! resourceVersion, generation, creationTimestamp, managedFields itself, apiVersion, kind);
//! a request's own `managedFields` replace the live ones only on a write to the resource itself
//! and only when they decode (`[]` resets them), otherwise the live ones are kept; an apply
//! either succeeds completely or changes nothing.

mod compare;
mod fields_v1;
mod items;
pub mod managers;
mod merge;
pub mod path;
pub(crate) mod presence;
mod remove;
pub mod set;
mod to_set;
mod updater;
mod validate;

use serde_json::{Map, Value, json};

pub use compare::Comparison;
pub use fields_v1::Without;
pub use managers::{Entry, ManagerKey, Managers, Operation};
pub use path::{Path, PathElement};
pub use set::FieldSet;
pub(crate) use updater::{
    ApplyError, Conflicts, Context, LAST_APPLIED, apply, changes, conflicts_beyond_last_applied, last_applied_of,
    record, scale,
};
pub(crate) use validate::{Errors, validate};

use crate::registry::ResourceInfo;
use crate::schema::{self, Atom, TypeRef};
use crate::status::ApiError;
use crate::strategy::Target;

/// The most bytes a field manager's name may have (`FieldManagerMaxLength`).
pub const MAX_MANAGER_LENGTH: usize = 128;

/// The manager of a write: `fieldManager` when given, else the User-Agent up to its first `/`
/// (printable characters only, at most 128 bytes), as kube-apiserver names it; empty when
/// neither says anything (recorded as `unknown`).
pub fn manager_name(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    let prefix = user_agent.unwrap_or("").split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > MAX_MANAGER_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// The name recorded for a manager (`unknown` for none).
pub fn recorded_name(manager: &str) -> &str {
    if manager.is_empty() { "unknown" } else { manager }
}

/// The structured-merge type of a resource's objects: the built-in schema, a custom resource's
/// CRD schema, or deduced.
pub(crate) fn type_of(info: &ResourceInfo) -> TypeRef<'_> {
    if let Some(t) = info.custom.as_deref().and_then(crate::registry::CustomVersion::merge_type) {
        return t;
    }
    let b = schema::builtin();
    b.type_of(&info.group, &info.version, &info.kind).unwrap_or_else(|| TypeRef::unknown_object(b))
}

/// What a request body says about `managedFields`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Requested {
    /// Nothing (absent or null): keep the live ones.
    Absent,
    /// `[]`, or one empty entry: start over.
    Reset,
    /// These entries.
    Given(Value),
}

/// Takes `metadata.managedFields` out of a request object.
pub(crate) fn take_requested(obj: &mut Map<String, Value>) -> Requested {
    let Some(Value::Object(meta)) = obj.get_mut("metadata") else { return Requested::Absent };
    match meta.remove("managedFields") {
        None | Some(Value::Null) => Requested::Absent,
        Some(Value::Array(a)) if a.is_empty() => Requested::Reset,
        Some(Value::Array(a)) if a.len() == 1 && a[0].as_object().is_some_and(|e| e.values().all(is_zero)) => {
            Requested::Reset
        }
        Some(v) => Requested::Given(v),
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// The managers an update starts from (kube-apiserver's `decodeLiveOrNew`): the live ones for a
/// subresource or when the request gives none (or gives unreadable ones), none after a reset,
/// else the request's. Their sets are read `without` the fields the update changed, which it
/// takes from every manager (see [`record`]).
pub(crate) fn base_managers(
    live: Option<&Value>,
    requested: Requested,
    subresource: bool,
    without: Without<'_>,
) -> Managers {
    let live_managers = || Managers::decode_without(live, without).unwrap_or_default();
    if subresource {
        return live_managers();
    }
    match requested {
        Requested::Absent => live_managers(),
        Requested::Reset => Managers::default(),
        Requested::Given(v) => match Managers::decode_without(Some(&v), without) {
            Ok(m) if !m.0.is_empty() => m,
            _ => live_managers(),
        },
    }
}

/// The fields a write through `target` cannot own (its strategy resets them): the `status` of
/// a resource with a status subresource (or of a namespace being finalized); everything but
/// `status` and the metadata the resource's status strategy takes through `/status`; everything
/// of a pod but `spec.ephemeralContainers` through
/// `ephemeralcontainers`, and but its containers' `resources` and `resizePolicy` through
/// `resize`.
pub(crate) fn ignored_fields(info: &ResourceInfo, target: Target, objects: &[&Value]) -> FieldSet {
    let mut s = FieldSet::new();
    match target {
        Target::Main if info.status_subresource => s.insert(&Path::fields(&["status"]).0),
        Target::Main | Target::Binding => {}
        Target::EphemeralContainers => s = pod_fields_but(objects, &["ephemeralContainers"], &[]),
        Target::Resize => {
            s = pod_fields_but(objects, &["containers", "initContainers"], &["resources", "resizePolicy"])
        }
        Target::Finalize => s.insert(&Path::fields(&["status"]).0),
        Target::Status | Target::Approval => {
            // Through `/status` the request's metadata is taken but for some members (or none of
            // it), as the resource's status strategy resets them.
            let metadata = match target {
                Target::Status => crate::strategy::status_metadata(info),
                _ => crate::strategy::StatusMetadata::Stored,
            };
            for o in objects {
                for k in o.as_object().into_iter().flat_map(|m| m.keys()) {
                    match (k.as_str(), metadata) {
                        ("status", _) => {}
                        // (A CustomResourceDefinition's status strategy takes the metadata, yet
                        // resets it for the field manager: its writer owns none of it.)
                        ("metadata", crate::strategy::StatusMetadata::Request { kept })
                            if !crate::crd::is_crds(info) =>
                        {
                            let mut meta = FieldSet::new();
                            for f in kept {
                                meta.insert_member(PathElement::field(f));
                            }
                            s.insert_child(PathElement::field("metadata"), meta);
                        }
                        _ => s.insert_member(PathElement::field(k)),
                    }
                }
            }
        }
    }
    s
}

/// The fields of `objects` (pods) outside the spec members `lists` and, within each item of
/// those lists, outside its members `kept`; with no `kept`, the lists are kept whole.
fn pod_fields_but(objects: &[&Value], lists: &[&str], kept: &[&str]) -> FieldSet {
    let mut s = FieldSet::new();
    let mut spec = FieldSet::new();
    for o in objects {
        for (k, v) in o.as_object().into_iter().flatten() {
            if k != "spec" {
                s.insert_member(PathElement::field(k));
                continue;
            }
            for (member, items) in v.as_object().into_iter().flatten() {
                if !lists.contains(&member.as_str()) {
                    spec.insert_member(PathElement::field(member));
                    continue;
                }
                if kept.is_empty() {
                    continue;
                }
                let mut list = FieldSet::new();
                for item in items.as_array().into_iter().flatten() {
                    let Some(name) = item.get("name").and_then(Value::as_str) else { continue };
                    let mut fields = FieldSet::new();
                    for f in item.as_object().into_iter().flat_map(|m| m.keys()) {
                        if !kept.contains(&f.as_str()) {
                            fields.insert_member(PathElement::field(f));
                        }
                    }
                    list.insert_child(PathElement::key(vec![("name".into(), Value::String(name.into()))]), fields);
                }
                spec.insert_child(PathElement::field(member), list);
            }
        }
    }
    s.insert_child(PathElement::field("spec"), spec);
    s
}

/// The subresource a write through `target` records.
pub(crate) fn subresource_of(target: Target) -> &'static str {
    match target {
        Target::Main => "",
        Target::Status => "status",
        Target::Finalize => "finalize",
        Target::Binding => "binding",
        Target::Approval => "approval",
        Target::EphemeralContainers => crate::pod_ephemeral_containers::SUBRESOURCE,
        Target::Resize => crate::pod_resize::SUBRESOURCE,
    }
}

/// Writes the managers into the object's metadata (or removes `managedFields` without any).
pub(crate) fn store_into(obj: &mut Map<String, Value>, managers: &Managers) {
    if !matches!(obj.get("metadata"), Some(Value::Object(_))) {
        obj.insert("metadata".into(), Value::Object(Map::new()));
    }
    let Some(Value::Object(meta)) = obj.get_mut("metadata") else { return };
    match managers.encode() {
        Some(v) => meta.insert("managedFields".into(), v),
        None => meta.remove("managedFields"),
    };
}

/// kube-apiserver's 409 for an apply's conflicts.
pub(crate) fn conflict_error(c: &Conflicts) -> ApiError {
    let identifier = ManagerKey::identifier;
    let mut sorted: Vec<&(ManagerKey, Path)> = c.0.iter().collect();
    sorted.sort_by_key(|a| identifier(&a.0));
    let message = match sorted.as_slice() {
        [(k, p)] => format!("Apply failed with 1 conflict: conflict with {}: {p}", k.describe()),
        _ => {
            let mut lines = Vec::new();
            let mut last: Option<&ManagerKey> = None;
            for (k, p) in &sorted {
                if last != Some(k) {
                    lines.push(format!("conflicts with {}:", k.describe()));
                    last = Some(k);
                }
                lines.push(format!("- {p}"));
            }
            format!("Apply failed with {} conflicts: {}", sorted.len(), lines.join("\n"))
        }
    };
    let causes: Vec<Value> = sorted
        .iter()
        .map(|(k, p)| {
            json!({"reason": "FieldManagerConflict", "message": format!("conflict with {}", k.describe()), "field": p.to_string()})
        })
        .collect();
    let mut e = ApiError::new(409, "Conflict", message);
    e.details = Some(Box::new(json!({"causes": causes})));
    e
}

/// Removes the nulls a Go struct would not keep and turns those it would into its zero value:
/// the object as kube-apiserver's types hold it after an apply (removal leaves emptied maps
/// and lists as nulls). Values of types without a schema keep their nulls.
pub(crate) fn normalize_nulls(v: &mut Value, ty: TypeRef<'_>) {
    use crate::schema::NullField;
    match (ty.atom(Some(v)), v) {
        (Atom::Map(map), Value::Object(m)) => {
            let keys: Vec<String> = m.iter().filter(|(_, v)| v.is_null()).map(|(k, _)| k.clone()).collect();
            for k in keys {
                match map.null_field(&k) {
                    NullField::Drop => {
                        m.remove(&k);
                    }
                    NullField::Zero(z) => {
                        m.insert(k, z.clone());
                    }
                    NullField::Keep => {}
                }
            }
            for (k, child) in m.iter_mut() {
                normalize_nulls(child, map.field_or_deduced(k));
            }
        }
        (Atom::List(list), Value::Array(items)) => {
            for item in items {
                normalize_nulls(item, list.items);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_list_go_leaves_out_is_no_change() {
        let reg = crate::registry::Registry::with_defaults();
        let ignored = FieldSet::new();
        let ctx = Context { ty: type_of(reg.lookup("podtemplates").unwrap()), api_version: "v1", ignored: &ignored };
        let old = json!({"metadata": {"name": "t"}, "template": {"spec": {"containers": [{"name": "c"}]}}});
        let mut new = old.clone();
        new["template"]["spec"]["tolerations"] = json!([]);
        assert!(changes(&old, &new, ctx).is_same());
        assert!(changes(&new, &new, ctx).is_same());
        new["template"]["spec"]["tolerations"] = json!([{"key": "k"}]);
        assert!(!changes(&old, &new, ctx).is_same());
    }

    #[test]
    fn managers_are_named_as_kube_names_them() {
        assert_eq!(manager_name(Some("alpha"), Some("kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07")), "alpha");
        assert_eq!(manager_name(None, Some("kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07")), "kubectl");
        assert_eq!(manager_name(Some(""), Some("kube-rs/5.0")), "kube-rs");
        assert_eq!(manager_name(None, None), "");
        assert_eq!(recorded_name(""), "unknown");
        assert_eq!(manager_name(None, Some(&"x".repeat(300))).len(), 128);
    }

    #[test]
    fn request_managed_fields_reset_replace_or_keep() {
        let mut o = json!({"metadata": {"managedFields": []}}).as_object().unwrap().clone();
        assert_eq!(take_requested(&mut o), Requested::Reset);
        assert!(o["metadata"].get("managedFields").is_none());
        let mut o = json!({"metadata": {"managedFields": [{}]}}).as_object().unwrap().clone();
        assert_eq!(take_requested(&mut o), Requested::Reset);
        let live = json!([{"manager": "a", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]);
        let given = json!([{"manager": "b", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]);
        let names = |m: &Managers| m.0.keys().map(|k| k.manager.clone()).collect::<Vec<_>>();
        assert_eq!(names(&base_managers(Some(&live), Requested::Given(given.clone()), false, Without::none())), ["b"]);
        assert_eq!(names(&base_managers(Some(&live), Requested::Given(given), true, Without::none())), ["a"]);
        assert_eq!(
            names(&base_managers(Some(&live), Requested::Given(json!([{"operation": "X"}])), false, Without::none())),
            ["a"]
        );
        assert!(base_managers(Some(&live), Requested::Reset, false, Without::none()).0.is_empty());
    }
}
