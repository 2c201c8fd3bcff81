//! A finalizer for a reconcile: the way an operator makes sure it cleans up after an object
//! before the server lets the object go (controller-runtime's `AddFinalizer` /
//! `RemoveFinalizer` in a reconcile, kube-runtime's `finalizer`).
//!
//! [`finalizer`] takes the object a reconcile was given and decides, from its
//! `metadata.finalizers` and `metadata.deletionTimestamp`:
//!
//! | the object | [`finalizer`] |
//! |---|---|
//! | live, without the finalizer | adds it, then returns [`Action::Done`]: the change brings the key back, and the next reconcile applies |
//! | live, with the finalizer | calls the reconcile with [`Event::Apply`] |
//! | being deleted, with the finalizer | calls the reconcile with [`Event::Cleanup`]; when it succeeds, removes the finalizer, and the server deletes the object once no finalizer is left |
//! | being deleted, without the finalizer | nothing: [`Action::Done`] |
//!
//! Invariants: the finalizer is added or removed by a merge patch that carries the
//! resourceVersion the object was read at, so a write made meanwhile (by anyone) fails it with
//! 409 and the key is retried on the newer object rather than overwriting the list; only this
//! finalizer is added or removed, once, others stay as they are; an apply never runs on an
//! object without the finalizer, so a cleanup always follows an apply; a cleanup may run more
//! than once (when the finalizer's removal fails), so it must be idempotent.
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
use kube::api::{Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

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
    /// The finalizer could not be removed (409: the object changed since it was read).
    #[error("removing finalizer {0:?} failed: {1}")]
    RemoveFinalizer(String, #[source] kube::Error),
    /// The cached object could not be decoded into its type.
    #[error("the object cannot be decoded: {0}")]
    Decode(#[source] DecodeError),
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
    K: Resource + Clone + fmt::Debug + Serialize + DeserializeOwned,
    K::DynamicType: Default,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: fmt::Debug + fmt::Display,
{
    let meta = obj.get().map_err(Error::Decode)?.meta();
    let held: Vec<String> = meta.finalizers.clone().unwrap_or_default();
    let deleting = meta.deletion_timestamp.is_some();
    let has = held.iter().any(|f| f == name);
    match (deleting, has) {
        (false, false) => {
            let mut wanted = held;
            wanted.push(name.to_string());
            write_finalizers(client, &obj, Some(wanted)).await.map_err(|e| Error::AddFinalizer(name.to_string(), e))?;
            Ok(Action::Done)
        }
        (false, true) => reconcile(Event::Apply(obj)).await.map_err(Error::ApplyFailed),
        (true, true) => {
            let action = reconcile(Event::Cleanup(obj.clone())).await.map_err(Error::CleanupFailed)?;
            let left: Vec<String> = held.into_iter().filter(|f| f != name).collect();
            let left = if left.is_empty() { None } else { Some(left) };
            write_finalizers(client, &obj, left).await.map_err(|e| Error::RemoveFinalizer(name.to_string(), e))?;
            Ok(action)
        }
        (true, false) => Ok(Action::Done),
    }
}

/// Sets the object's finalizers (none: the field removed), on the resourceVersion it was read
/// at.
async fn write_finalizers<K>(
    client: &kube::Client,
    obj: &Object<K>,
    finalizers: Option<Vec<String>>,
) -> kube::Result<()>
where
    K: Resource + Clone + fmt::Debug + Serialize + DeserializeOwned,
    K::DynamicType: Default,
{
    // The object's own path, whatever its kind's scope.
    let collection = K::url_path(&K::DynamicType::default(), obj.namespace());
    let patch = json!({"metadata": {"resourceVersion": obj.resource_version(), "finalizers": finalizers}});
    let request = kube::core::Request::new(collection)
        .patch(obj.name(), &PatchParams::default(), &Patch::Merge(&patch))
        .map_err(kube::Error::BuildRequest)?;
    client.request::<K>(request).await.map(drop)
}
