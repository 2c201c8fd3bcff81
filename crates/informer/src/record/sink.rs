//! Where core/v1 events are written (client-go's `record.EventSink`): the [`EventSink`] trait
//! and its implementation on `kube::Client`, which creates core/v1 Events with `POST` and counts
//! repeats with a strategic merge `PATCH`, in the event's namespace.
//!
//! Invariants: a refusal the server answered is [`SinkError::Status`], anything else
//! [`SinkError::Unreachable`], as for events.k8s.io's sink.

use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::Event;

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
        Box::pin(crate::events::sink::create(self, event))
    }

    fn patch<'a>(&'a self, event: &'a Event, patch: &'a serde_json::Value) -> BoxFuture<'a, Result<Event, SinkError>> {
        Box::pin(crate::events::sink::strategic_patch(self, event, patch))
    }
}
