//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics
//! (`tools/leaderelection`): of the candidates campaigning on one lock, one leads at a time.
//!
//! A [`LeaderElector`] campaigns on a [`ResourceLock`] ([`LeaseLock`] over `kube::Client`) as an
//! identity, with client-go's timing: lease duration 15 s, renew deadline 10 s, retry period 2 s
//! and a candidate's retries jittered by up to 120%. The record and its Lease form are
//! client-go's, so candidates of either library respect each other's lease. Expiry is judged
//! only by the local monotonic clock from the moment a candidate last saw the record change,
//! never by the timestamps in it. A leader that cannot renew within the renew deadline (counted
//! from the start of its last successful write) steps down before the lease can expire for
//! anyone else. See [`elector`](LeaderElector) for the exact rules.
//!
//! The transitions come as a stream of [`LeaderEvent`]s: `NewLeader`, `StartedLeading` (with a
//! token cancelled the moment leadership ends) and `StoppedLeading` (also on every exit of
//! [`run`](LeaderElector::run), as client-go's `OnStoppedLeading`). A leader that finds its Lease
//! deleted, or emptied of its holder, writes itself back and keeps its term, as client-go does.
//! With an [`EventRecorder`](crate::events::EventRecorder)
//! ([`LeaderElectionConfig::event_recorder`]) each term is also recorded as the events
//! client-go's lock records: `<identity> became leader` and `<identity> stopped leading`,
//! reason `LeaderElection`, on the Lease (as events.k8s.io Events). [`LeaderElector::check`] is client-go's `Check` for a health
//! endpoint: it fails when the elector's task has not ended a term whose lease must have
//! expired (a stuck process).
//! [`ControllerRunner`](crate::ControllerRunner) uses an elector through
//! [`leader_election`](crate::ControllerRunnerBuilder::leader_election). Metrics:
//! [`LeaderElectionMetrics`] (`leader_election_master_status`).
//!
//! Like client-go's, this election does not fence: a leader's writes to other objects are not
//! checked against its term, so leadership bounds when code *starts* acting, and the margin
//! between the renew deadline and the lease duration (5 s by default) is what absorbs a pause
//! of the leader's process or a slow request.
//!
//! # Example
//!
//! ```no_run
//! use informer::leader_election::{LeaderElectionConfig, LeaderElector, LeaderEvent, LeaseLock};
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn example(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let lock = LeaseLock::new(client, "default", "my-controller");
//! let elector = LeaderElector::new(LeaderElectionConfig::new(lock, "replica-1").release_on_cancel(true))?;
//! let mut events = elector.subscribe();
//! let cancel = CancellationToken::new();
//! tokio::spawn({
//!     let (elector, cancel) = (elector.clone(), cancel.clone());
//!     async move { elector.run(cancel).await }
//! });
//! while let Some(event) = events.recv().await {
//!     match event {
//!         LeaderEvent::NewLeader(who) => println!("leader: {who:?}"),
//!         LeaderEvent::StartedLeading(term) => {
//!             tokio::spawn(async move {
//!                 // Act while `term` is not cancelled.
//!                 term.cancelled().await;
//!             });
//!         }
//!         LeaderEvent::StoppedLeading => println!("standing by"),
//!     }
//! }
//! # Ok(())
//! # }
//! ```

mod config;
mod elector;
mod events;
mod lease_lock;
mod lock;
mod metrics;
mod record;

pub use config::{ConfigError, JITTER_FACTOR, LeaderElectionConfig, LeaderEventRecorder};
pub use elector::{ElectionError, LeaderElector, LeaseExpired};
pub use events::{LeaderEvent, LeaderEvents};
pub use lease_lock::LeaseLock;
pub use lock::{LockError, ResourceLock};
pub use metrics::{ElectionLabels, LeaderElectionMetrics};
pub use record::LeaderElectionRecord;
