//! Events about the objects a controller works on, recorded as client-go's `tools/events`
//! records them: events.k8s.io/v1 Events, repeats folded into series, written in the
//! background with retries.
//!
//! An [`EventBroadcaster`] writes through an [`EventSink`] (`kube::Client` is one); each
//! [`EventRecorder`] it makes reports as one controller. [`EventRecorder::eventf`] returns at once:
//! the first event of a kind is created, a repeat turns it into a series written at once, later
//! repeats are counted and written with the series' refresh or finish (see
//! [`EventBroadcaster`] for the rules and timing). `kubectl get events` and `kubectl describe`
//! show them.
//!
//! # Example
//!
//! ```no_run
//! use informer::events::{EventBroadcaster, EventType};
//! use k8s_openapi::api::apps::v1::Deployment;
//! use kube::Resource;
//!
//! # async fn example(client: kube::Client, deployment: Deployment) {
//! let broadcaster = EventBroadcaster::new(client);
//! let recorder = broadcaster.new_recorder("example.com/scaler");
//! let reference = deployment.object_ref(&());
//! recorder.eventf(&reference, None, EventType::Normal, "Scaled", "Scale", format!("scaled to {}", 3));
//! // Before the program ends: the counts of the series not yet written are written.
//! broadcaster.shutdown().await;
//! # }
//! ```

pub(crate) mod broadcaster;
#[cfg(test)]
pub(crate) mod fake_sink;
pub(crate) mod recorder;
pub(crate) mod sink;

pub use broadcaster::{EventBroadcaster, EventBroadcasterConfig};
pub use recorder::{EventRecorder, EventType};
pub use sink::{EventSink, SinkError};
