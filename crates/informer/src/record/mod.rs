//! Events about objects recorded as client-go's `tools/record` records them: core/v1 Events,
//! repeats counted on one Event (`count`, `lastTimestamp`), floods of similar messages
//! aggregated, spam filtered, written in order in the background with retries. This is the
//! recorder most Go controllers use (`record.EventRecorder`); [`crate::events`] is the newer
//! events.k8s.io/v1 one (`tools/events`). `kubectl get events` and `kubectl describe` show both.
//!
//! An [`EventBroadcaster`] writes through an [`EventSink`] (`kube::Client` is one); each
//! [`EventRecorder`] it makes reports as one source. [`EventRecorder::event`] returns at once;
//! see [`EventCorrelator`] for what becomes of repeats and floods, and [`EventBroadcaster`] for
//! how and when events are written.
//!
//! # Example
//!
//! ```no_run
//! use informer::events::EventType;
//! use informer::record::EventBroadcaster;
//! use k8s_openapi::api::apps::v1::Deployment;
//! use k8s_openapi::api::core::v1::EventSource;
//! use kube::Resource;
//!
//! # async fn example(client: kube::Client, deployment: Deployment) {
//! let broadcaster = EventBroadcaster::new(client);
//! let recorder = broadcaster.new_recorder(EventSource { component: Some("scaler".into()), host: None });
//! let reference = deployment.object_ref(&());
//! recorder.event(&reference, EventType::Normal, "ScalingReplicaSet", format!("Scaled up to {}", 3));
//! // Before the program ends: the events still queued are written.
//! broadcaster.shutdown().await;
//! # }
//! ```

mod broadcaster;
mod correlator;
mod recorder;
mod sink;

pub use broadcaster::{EventBroadcaster, EventBroadcasterConfig};
pub use correlator::{Correlated, CorrelatorOptions, EventCorrelator};
pub use recorder::EventRecorder;
pub use sink::EventSink;
