//! A finalizer for a reconcile: the way an operator makes sure it cleans up after an object
//! before the server lets the object go (controller-runtime's `AddFinalizer` /
//! `RemoveFinalizer` in a reconcile, kube-runtime's `finalizer`).
//!
//! [`finalizer`] takes the object a reconcile was given and decides, from its
//! `metadata.finalizers` and `metadata.deletionTimestamp`:
//!
//! | the object | [`finalizer`] |
//! |---|---|
//! | live, without the finalizer | adds it, then calls the reconcile with [`Event::Apply`] on the object as written |
//! | live, with the finalizer | calls the reconcile with [`Event::Apply`] |
//! | being deleted, with the finalizer | calls the reconcile with [`Event::Cleanup`]; when it succeeds, removes the finalizer, and the server deletes the object once no finalizer is left |
//! | being deleted, without the finalizer | nothing: [`Action::Done`] |
//!
//! Invariants: the finalizer is added by a merge patch carrying the resourceVersion the object
//! was read at, so a finalizer list changed meanwhile (by anyone) fails it with 409 and the key
//! is retried on the newer object rather than overwriting the list; it is removed by a JSON
//! patch that first tests it is still where it was read, so other writes made meanwhile (the
//! cleanup's own included) do not undo the cleanup, while a list reordered meanwhile fails it
//! (422) and the key is retried; only this finalizer is added or removed, once; an apply never
//! runs on an object without the finalizer, so once an apply has started, the object does not
//! go before a cleanup succeeds — a cleanup may run without any apply before it, and more than
//! once (when the finalizer's removal fails), so it must tolerate both.
//!
//! ```no_run
//! use informer::runner::Action;
//! use informer::runner::finalizer::{self, Event, finalizer};
//! use informer::Object;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! async fn reconcile(client: kube::Client, obj: Option<Object<ConfigMap>>)
//!     -> Result<Action, finalizer::Error<String>> {
//!     let Some(obj) = obj else { return Ok(Action::Done) };
//!     finalizer(&client, "example.com/cleanup", obj, |event| async move {
//!         match event {
//!             Event::Apply(cm) => { /* make what `cm` asks for */ }
//!             Event::Cleanup(cm) => { /* undo it */ }
//!         }
//!         Ok::<_, String>(Action::Done)
//!     })
//!     .await
//! }
//! ```

use std::fmt;
use std::future::Future;

use kube::Resource;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::Action;
use crate::object::{DecodeError, Object};

/// What the reconcile is asked to do with the object.
#[derive(Debug)]
pub enum Event<K> {
    /// The object is live and carries the finalizer: bring the world in line with it.
    Apply(Object<K>),
    /// The object is being deleted and carries the finalizer: undo what the applies made. The
    /// finalizer is removed when this succeeds.
    Cleanup(Object<K>),
}

/// Why [`finalizer`] failed; the runner retries the key with its backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error<E: fmt::Debug + fmt::Display> {
    /// The reconcile failed to apply the object.
    #[error("apply failed: {0}")]
    ApplyFailed(E),
    /// The reconcile failed to clean up after the object; the finalizer stays.
    #[error("cleanup failed: {0}")]
    CleanupFailed(E),
    /// The finalizer could not be added (409: the object changed since it was read).
    #[error("adding finalizer {0:?} failed: {1}")]
    AddFinalizer(String, #[source] kube::Error),
    /// The finalizer could not be removed (422: the list changed since it was read).
    #[error("removing finalizer {0:?} failed: {1}")]
    RemoveFinalizer(String, #[source] kube::Error),
    /// The object (cached, or as the server wrote it) could not be decoded into its type.
    #[error("the object cannot be decoded: {0}")]
    Decode(#[source] DecodeError),
    /// The object carries no resourceVersion to write it on.
    #[error("the object has no resourceVersion")]
    NoResourceVersion,
}

/// Runs `reconcile` under the finalizer `name` (see the module documentation) on `obj`, writing
/// the finalizer through `client`.
pub async fn finalizer<K, F, Fut, E>(
    client: &kube::Client,
    name: &str,
    obj: Object<K>,
    reconcile: F,
) -> Result<Action, Error<E>>
where
    K: Resource + DeserializeOwned,
    K::DynamicType: Default,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: fmt::Debug + fmt::Display,
{
    let meta = obj.get().map_err(Error::Decode)?.meta();
    let held: Vec<String> = meta.finalizers.clone().unwrap_or_default();
    let deleting = meta.deletion_timestamp.is_some();
    match (deleting, held.iter().position(|f| f == name)) {
        (false, None) => {
            let rv = obj.resource_version().ok_or(Error::NoResourceVersion)?;
            let mut wanted = held;
            wanted.push(name.to_string());
            let patch = json!({"metadata": {"resourceVersion": rv, "finalizers": wanted}});
            let written = patch_object(client, &obj, MERGE_PATCH, &patch)
                .await
                .map_err(|e| Error::AddFinalizer(name.to_string(), e))?;
            // Applied at once: the write need not bring the key back (an update filter may
            // pass over a metadata write).
            let written = Object::<K>::from_json(written).map_err(Error::Decode)?;
            reconcile(Event::Apply(written)).await.map_err(Error::ApplyFailed)
        }
        (false, Some(_)) => reconcile(Event::Apply(obj)).await.map_err(Error::ApplyFailed),
        (true, Some(at)) => {
            let action = reconcile(Event::Cleanup(obj.clone())).await.map_err(Error::CleanupFailed)?;
            let path = format!("/metadata/finalizers/{at}");
            let patch = json!([{"op": "test", "path": path, "value": name}, {"op": "remove", "path": path}]);
            patch_object(client, &obj, JSON_PATCH, &patch)
                .await
                .map_err(|e| Error::RemoveFinalizer(name.to_string(), e))?;
            Ok(action)
        }
        (true, None) => Ok(Action::Done),
    }
}

/// The media types of the two patches.
const MERGE_PATCH: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";

/// Patches the object with `patch` of media type `kind`; the object as the server wrote it.
async fn patch_object<K>(client: &kube::Client, obj: &Object<K>, kind: &str, patch: &Value) -> kube::Result<Vec<u8>>
where
    K: Resource,
    K::DynamicType: Default,
{
    // The object's own path, whatever its kind's scope.
    let path = format!("{}/{}", K::url_path(&K::DynamicType::default(), obj.namespace()), obj.name());
    let body = serde_json::to_vec(patch).map_err(kube::Error::SerdeError)?;
    let request = http::Request::patch(path)
        .header(http::header::CONTENT_TYPE, kind)
        .body(body)
        .map_err(|e| kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e)))?;
    client.request_text(request).await.map(String::into_bytes)
}
