//! Where recorded events are written (client-go's `events.EventSink`): the [`EventSink`] trait
//! and its implementation on `kube::Client`, which creates events.k8s.io/v1 Events with `POST`
//! and updates a series with a strategic merge `PATCH`, in the event's namespace.
//!
//! Invariants: a sink reports a refusal the server answered as [`SinkError::Status`], with the
//! Status' code and reason, and anything else (no answer, an answer that does not read) as
//! [`SinkError::Unreachable`]: the broadcaster retries the latter and not the former.

use std::fmt::Debug;

use futures_util::future::BoxFuture;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::events::v1::Event;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a sink could not write an event.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The server refused the write with a Status.
    #[error("{message} ({code} {reason})")]
    Status {
        /// The HTTP code (404, 409, 422…).
        code: u16,
        /// The Status' reason (`AlreadyExists`, `Invalid`…).
        reason: String,
        /// The Status' message.
        message: String,
    },
    /// The write got no answer that could be read.
    #[error("{0}")]
    Unreachable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl SinkError {
    /// The event exists already (a create of a name taken).
    pub fn is_already_exists(&self) -> bool {
        matches!(self, SinkError::Status { code: 409, reason, .. } if reason == "AlreadyExists")
    }

    /// The event does not exist (a patch of an event gone).
    pub fn is_not_found(&self) -> bool {
        matches!(self, SinkError::Status { code: 404, .. })
    }

    /// A `kube::Client` error as a sink reports it.
    pub(crate) fn from_kube(e: kube::Error) -> SinkError {
        match e {
            kube::Error::Api(s) => {
                SinkError::Status { code: s.code, reason: s.reason.clone(), message: s.message.clone() }
            }
            e => SinkError::Unreachable(Box::new(e)),
        }
    }

    /// The write may succeed later: the server was not reached. A Status is the server's last
    /// word, as client-go's broadcasters take it: the client retries what it retries (client-go's
    /// REST client a 429 or 5xx with `Retry-After`, `kube::Client` a 429, 503 or 504) before
    /// the sink sees the answer.
    pub fn is_retryable(&self) -> bool {
        matches!(self, SinkError::Unreachable(_))
    }
}

/// Writes events for an [`EventBroadcaster`](super::EventBroadcaster). `kube::Client` is one;
/// implement it to record somewhere else or to test a recorder without a server.
pub trait EventSink: Send + Sync + 'static {
    /// Creates `event` in its namespace.
    fn create<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, Result<Event, SinkError>>;
    /// Applies the strategic merge patch `patch` to the stored `event` (found by its namespace and
    /// name).
    fn patch<'a>(&'a self, event: &'a Event, patch: &'a serde_json::Value) -> BoxFuture<'a, Result<Event, SinkError>>;
}

impl EventSink for kube::Client {
    fn create<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, Result<Event, SinkError>> {
        Box::pin(create(self, event))
    }

    fn patch<'a>(&'a self, event: &'a Event, patch: &'a serde_json::Value) -> BoxFuture<'a, Result<Event, SinkError>> {
        Box::pin(strategic_patch(self, event, patch))
    }
}

/// Creates `event` (an events.k8s.io or a core/v1 Event) in its namespace (`default` when it
/// names none).
pub(crate) async fn create<K>(client: &kube::Client, event: &K) -> Result<K, SinkError>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), event.meta().namespace.as_deref().unwrap_or("default"));
    api.create(&PostParams::default(), event).await.map_err(SinkError::from_kube)
}

/// Applies the strategic merge patch `patch` to the stored `event`, found by its namespace and
/// name.
pub(crate) async fn strategic_patch<K>(
    client: &kube::Client,
    event: &K,
    patch: &serde_json::Value,
) -> Result<K, SinkError>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), event.meta().namespace.as_deref().unwrap_or("default"));
    let name = event.meta().name.as_deref().unwrap_or_default();
    api.patch(name, &PatchParams::default(), &Patch::Strategic(patch)).await.map_err(SinkError::from_kube)
}
