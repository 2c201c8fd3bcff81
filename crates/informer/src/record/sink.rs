//! Where core/v1 events are written (client-go's `record.EventSink`): the [`EventSink`] trait
//! and its implementation on `kube::Client`, which creates core/v1 Events with `POST` and counts
//! repeats with a strategic merge `PATCH`, in the event's namespace.
//!
//! Invariants: a refusal the server answered is [`SinkError::Status`], anything else
//! [`SinkError::Unreachable`], as for events.k8s.io's sink.

use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, Patch, PatchParams, PostParams};

use crate::events::SinkError;

/// Writes core/v1 events for a [`record::EventBroadcaster`](super::EventBroadcaster).
/// `kube::Client` is one; implement it to record somewhere else or to test without a server.
pub trait EventSink: Send + Sync + 'static {
    /// Creates `event` in its namespace.
    fn create<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, Result<Event, SinkError>>;
    /// Applies the strategic merge patch `patch` to the stored `event` (found by its namespace
    /// and name).
    fn patch<'a>(&'a self, event: &'a Event, patch: &'a serde_json::Value) -> BoxFuture<'a, Result<Event, SinkError>>;
}

impl EventSink for kube::Client {
    fn create<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, Result<Event, SinkError>> {
        Box::pin(async move {
            let api: Api<Event> = Api::namespaced(self.clone(), namespace(event));
            api.create(&PostParams::default(), event).await.map_err(SinkError::from_kube)
        })
    }

    fn patch<'a>(&'a self, event: &'a Event, patch: &'a serde_json::Value) -> BoxFuture<'a, Result<Event, SinkError>> {
        Box::pin(async move {
            let api: Api<Event> = Api::namespaced(self.clone(), namespace(event));
            let name = event.metadata.name.as_deref().unwrap_or_default();
            api.patch(name, &PatchParams::default(), &Patch::Strategic(patch)).await.map_err(SinkError::from_kube)
        })
    }
}

fn namespace(event: &Event) -> &str {
    event.metadata.namespace.as_deref().unwrap_or("default")
}
