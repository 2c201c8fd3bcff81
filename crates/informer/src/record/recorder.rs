//! [`EventRecorder`]: makes the core/v1 Event a component reports about an object, as
//! client-go's `record.EventRecorder` makes it, and queues it for its broadcaster.
//!
//! An event is named `<object's name>.<nanoseconds since the epoch, in hex>` (a random UUID when
//! that is no DNS subdomain), in the object's namespace (`default` for a cluster-scoped object),
//! with count 1, first and last timestamps now, the recorder's source (component and host), the
//! same as reporting component and instance, and the type, reason, message and annotations
//! given.
//!
//! Invariants: recording returns at once and never fails; when the broadcaster's queue is full
//! (1,000 events by default) the event is dropped and logged, as client-go drops it.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use super::broadcaster::Shared;
use crate::events::EventType;
use crate::events::recorder::{event_name, event_namespace};

/// Records core/v1 events about objects for one source (client-go's `record.EventRecorder`);
/// made by [`EventBroadcaster::new_recorder`](super::EventBroadcaster::new_recorder). Cheap to
/// clone.
#[derive(Clone)]
pub struct EventRecorder {
    shared: Arc<Shared>,
    source: EventSource,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder").field("source", &self.source).finish_non_exhaustive()
    }
}

impl EventRecorder {
    pub(crate) fn new(shared: Arc<Shared>, source: EventSource) -> Self {
        EventRecorder { shared, source }
    }

    /// The source the events name.
    pub fn source(&self) -> &EventSource {
        &self.source
    }

    /// Records that `reason` happened to `object`, with a human-readable `message` (client-go's
    /// `Event`, and `Eventf` with `format!`). A reference to an object is
    /// `kube::Resource::object_ref`.
    pub fn event(&self, object: &ObjectReference, type_: EventType, reason: &str, message: impl Into<String>) {
        self.annotated_event(object, BTreeMap::new(), type_, reason, message);
    }

    /// [`event`](Self::event) with annotations on the Event (client-go's `AnnotatedEventf`).
    pub fn annotated_event(
        &self,
        object: &ObjectReference,
        annotations: BTreeMap<String, String>,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        let now = k8s_openapi::jiff::Timestamp::now();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(event_name(object, now)),
                namespace: Some(event_namespace(object)),
                annotations: (!annotations.is_empty()).then_some(annotations),
                ..Default::default()
            },
            involved_object: object.clone(),
            reason: Some(reason.to_string()),
            message: Some(message.into()),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            type_: Some(type_.as_str().to_string()),
            source: Some(self.source.clone()),
            reporting_component: Some(self.source.component.clone().unwrap_or_default()),
            reporting_instance: Some(self.source.host.clone().unwrap_or_default()),
            ..Default::default()
        };
        self.shared.record(event);
    }
}
