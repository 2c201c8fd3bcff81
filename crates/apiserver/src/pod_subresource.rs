//! The request side of a pod's subresources that carry an object of their own (`eviction`'s
//! Eviction, `binding`'s Binding), as kube-apiserver's create handler takes them (and the
//! admission of any such create, a service account's `token` included): the object's
//! type and namespace checked, NamespaceLifecycle, mutating admission, the name in the URL
//! checked, the subresource's own validation, validating admission — in that order, each
//! refusing with kube's Status. What the subresource then does is its module's (`eviction`,
//! `binding`). The admission of a connection's options (`CONNECT`, `pod_connection`) goes
//! through the same [`Creation`].
//!
//! Invariants: nothing is read or written before every check and admission has passed; the
//! object admission sees is the one the subresource then acts on (mutations included).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::store::Store;

/// A subresource carrying its own object.
pub(crate) struct Carried {
    /// The subresource's name (`eviction`).
    pub subresource: &'static str,
    /// The kind of its object (`Eviction`).
    pub kind: &'static str,
    /// The apiVersions its object is read in, the first the default.
    pub api_versions: &'static [&'static str],
}

/// A request through a subresource carrying its own object, as admission judges it (a CREATE
/// of `<resource>/<subresource>` with that object; a CONNECT of a pod's `exec`, `attach` or
/// `portforward` with its options). Also used by service accounts' `token`.
pub(crate) struct Creation<'a> {
    /// `CREATE`, or `CONNECT` for a connection's options (`exec`'s PodExecOptions).
    pub operation: &'static str,
    /// The resource whose subresource it is (pods, serviceaccounts).
    pub info: &'a ResourceInfo,
    pub subresource: &'a str,
    pub ns: &'a str,
    pub name: &'a str,
    pub dry_run: bool,
}

impl Creation<'_> {
    fn attributes<'o>(&'o self, object: Option<&'o Map<String, Value>>) -> crate::admission_policy::Attributes<'o> {
        crate::admission_policy::Attributes {
            info: self.info,
            operation: self.operation,
            subresource: self.subresource,
            namespace: self.ns,
            name: self.name,
            object,
            old: None,
            dry_run: self.dry_run,
        }
    }

    /// Offers the object to the mutating webhooks, which may change it.
    pub(crate) async fn mutate(&self, store: &Store, object: &mut Map<String, Value>) -> Result<(), ApiError> {
        let nothing = |_: &mut Map<String, Value>| {};
        let mutation = crate::admission_webhook::Mutation {
            obj: Some(object),
            default: &nothing,
            server_set: &[],
            readmit: &crate::admission_webhook::Mutation::no_readmit,
        };
        crate::admission_webhook::mutate(store.cache(), &self.attributes(None), mutation).await.map(drop)
    }

    /// Judges the object by the admission policies and validating webhooks.
    pub(crate) async fn validate(&self, store: &Store, object: &Map<String, Value>) -> Result<(), ApiError> {
        crate::admission_policy::admit(store.cache(), &self.attributes(Some(object))).await?;
        crate::admission_webhook::validate(store.cache(), &self.attributes(Some(object))).await
    }
}

/// The `Success` Status a subresource's create answers (with 201).
pub(crate) fn success() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

/// Checks and admits the object `body` posted to `carried` of pod `name` in namespace `ns`;
/// `validate` is the subresource's own validation. Returns the pods' resource and the object
/// as admitted.
pub(crate) async fn admit(
    store: &Store,
    carried: &Carried,
    (ns, name): (&str, &str),
    body: Value,
    dry_run: bool,
    validate: impl Fn(&Map<String, Value>) -> Result<(), ApiError>,
) -> Result<(Arc<ResourceInfo>, Map<String, Value>), ApiError> {
    let registry = store.registry();
    let pods = registry.find("", "v1", "pods").cloned().ok_or_else(ApiError::no_route)?;
    let mut object = checked_body(carried, body, ns)?;
    store.admit_create(&pods, ns, name).await?;
    let creation = Creation { operation: "CREATE", info: &pods, subresource: carried.subresource, ns, name, dry_run };
    creation.mutate(store, &mut object).await?;
    if object.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str) != Some(name) {
        return Err(ApiError::bad_request(format!("name in URL does not match name in {} object", carried.kind)));
    }
    validate(&object)?;
    creation.validate(store, &object).await?;
    Ok((pods, object))
}

/// The object as sent: of the subresource's kind, in the request's namespace (filled in when
/// it names none).
fn checked_body(carried: &Carried, body: Value, ns: &str) -> Result<Map<String, Value>, ApiError> {
    let unrecognized = |detail: String| {
        ApiError::bad_request(format!("the object provided is unrecognized (must be of type {}){detail}", carried.kind))
    };
    let Value::Object(mut object) = body else { return Err(unrecognized(String::new())) };
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or(carried.api_versions[0]);
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or(carried.kind);
    if !carried.api_versions.contains(&api_version) || kind != carried.kind {
        return Err(unrecognized(format!(": {api_version}, Kind={kind}")));
    }
    let meta = object.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else { return Err(unrecognized(String::new())) };
    match meta.get("namespace").and_then(Value::as_str) {
        None | Some("") => {
            meta.insert("namespace".into(), ns.into());
        }
        Some(n) if n == ns => {}
        Some(_) => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    }
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVICTION: Carried =
        Carried { subresource: "eviction", kind: "Eviction", api_versions: &["policy/v1", "policy/v1beta1"] };

    #[test]
    fn the_body_must_be_of_the_kind_in_the_namespace() {
        let e = |v: Value| checked_body(&EVICTION, v, "ns").unwrap_err().message;
        assert_eq!(
            e(json!({"metadata": {"name": "p", "namespace": "other"}})),
            "the namespace of the provided object does not match the namespace sent on the request"
        );
        assert_eq!(
            e(json!({"apiVersion": "v1", "kind": "Pod"})),
            "the object provided is unrecognized (must be of type Eviction): v1, Kind=Pod"
        );
        let ok = checked_body(
            &EVICTION,
            json!({"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": "p"}}),
            "ns",
        );
        assert_eq!(ok.unwrap()["metadata"]["namespace"], "ns");
    }
}
