//! [`EventRecorder`]: makes the events.k8s.io/v1 Event a controller reports about an object, as
//! client-go's `events.EventRecorder` makes it, and hands it to its broadcaster.
//!
//! An event is named `<regarding object's name>.<nanoseconds since the epoch, in hex>` (a random
//! UUID when that is no DNS subdomain), in the regarding object's namespace (`default` for a
//! cluster-scoped object), with the event time now (to the microsecond), the recorder's reporting
//! controller and instance (`<controller>-<hostname>`), and the type, reason, action, note and
//! related object given; it has no series and none of the deprecated fields.
//!
//! Invariants: recording returns at once and never fails; the note is sent as given (the API
//! server refuses notes over 1 KiB, and such an event is dropped, as client-go's is).

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};

use super::broadcaster::Shared;

/// An event's type: whether it reports something normal or something that may need attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
}

impl EventType {
    /// The type as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Records events about objects for one reporting controller (client-go's
/// `events.EventRecorder`); made by [`EventBroadcaster::new_recorder`](super::EventBroadcaster::new_recorder).
/// Cheap to clone.
#[derive(Clone)]
pub struct EventRecorder {
    shared: Arc<Shared>,
    reporting_controller: String,
    reporting_instance: String,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("reporting_controller", &self.reporting_controller)
            .field("reporting_instance", &self.reporting_instance)
            .finish()
    }
}

impl EventRecorder {
    pub(crate) fn new(shared: Arc<Shared>, reporting_controller: &str) -> Self {
        EventRecorder {
            shared,
            reporting_controller: reporting_controller.to_string(),
            reporting_instance: format!("{reporting_controller}-{}", hostname()),
        }
    }

    /// The reporting instance the events name: `<controller>-<hostname>`.
    pub fn reporting_instance(&self) -> &str {
        &self.reporting_instance
    }

    /// Records that `action` was taken (or failed) on `regarding` for `reason`, with a
    /// human-readable `note` and, optionally, a `related` object (client-go's `Eventf`; format
    /// the note with `format!`). A reference to an object is `kube::Resource::object_ref`.
    pub fn eventf(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        type_: EventType,
        reason: &str,
        action: &str,
        note: impl Into<String>,
    ) {
        let now = k8s_openapi::jiff::Timestamp::now();
        let name = regarding.name.as_deref().unwrap_or_default();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(event_name(regarding, now)),
                namespace: Some(event_namespace(regarding)),
                ..Default::default()
            },
            event_time: Some(MicroTime(now)),
            reporting_controller: Some(self.reporting_controller.clone()),
            reporting_instance: Some(self.reporting_instance.clone()),
            action: Some(action.to_string()),
            reason: Some(reason.to_string()),
            regarding: Some(regarding.clone()),
            related: related.cloned(),
            note: Some(note.into()),
            type_: Some(type_.as_str().to_string()),
            ..Default::default()
        };
        tracing::debug!(
            object = %format!("{}/{}", regarding.namespace.as_deref().unwrap_or_default(), name),
            kind = regarding.kind.as_deref().unwrap_or_default(),
            type_ = type_.as_str(),
            reason,
            action,
            "Event occurred"
        );
        self.shared.record(event);
    }
}

/// An event's name, as client-go's recorders make it: `<object's name>.<nanoseconds since the
/// epoch, in hex>`, or a random UUID when that is no DNS subdomain.
pub(crate) fn event_name(object: &ObjectReference, now: k8s_openapi::jiff::Timestamp) -> String {
    let generated = format!("{}.{:x}", object.name.as_deref().unwrap_or_default(), now.as_nanosecond());
    if is_dns_subdomain(&generated) { generated } else { random_uuid() }
}

/// An event's namespace: its object's, `default` for a cluster-scoped object.
pub(crate) fn event_namespace(object: &ObjectReference) -> String {
    object.namespace.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into())
}

/// The machine's name, as Go's `os.Hostname` reads it on Linux ("" when it cannot be read).
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}

/// An RFC 1123 subdomain: at most 253 characters, dot-separated labels of lowercase letters,
/// digits and `-` that begin and end with a letter or digit.
fn is_dns_subdomain(s: &str) -> bool {
    let label = |l: &str| {
        !l.is_empty()
            && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    s.len() <= 253 && s.split('.').all(label)
}

/// A random (version 4) UUID.
fn random_uuid() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dns_subdomains_or_uuids() {
        assert!(is_dns_subdomain("web-0.187a3f5c2b1e0d00"));
        assert!(!is_dns_subdomain(".187a"), "an object without a name");
        assert!(!is_dns_subdomain("Web.187a"));
        assert!(!is_dns_subdomain(&format!("{}.1", "a".repeat(253))));
        let u = random_uuid();
        assert_eq!((u.len(), &u[14..15]), (36, "4"));
        assert!(is_dns_subdomain(&u));
    }
}
