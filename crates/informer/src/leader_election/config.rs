//! [`LeaderElectionConfig`]: the lock, the candidate's identity and client-go's timing
//! (lease duration 15 s, renew deadline 10 s, retry period 2 s, jitter factor 1.2).
//!
//! Invariants checked by [`validate`](LeaderElectionConfig::validate), client-go's rules plus one:
//! the identity is not empty; every duration is positive; the renew deadline is longer than
//! `1.2 × retry period` (a retry period too large for that product is refused, never a panic)
//! and shorter than the lease duration *as written to the record*, which
//! carries whole seconds (client-go truncates too): a leader gives up before anyone may take over.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::lock::ResourceLock;
use super::metrics::LeaderElectionMetrics;

/// client-go's `JitterFactor`: a candidate waits between `retry_period` and
/// `(1 + JITTER_FACTOR) × retry_period` between attempts to acquire.
pub const JITTER_FACTOR: f64 = 1.2;

/// The wall clock that stamps `acquireTime` and `renewTime`.
type WallClock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// A configuration that [`validate`](LeaderElectionConfig::validate) refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid leader election configuration: {0}")]
pub struct ConfigError(pub String);

/// How a [`LeaderElector`](super::LeaderElector) campaigns. See the [module docs](super).
#[derive(Clone)]
pub struct LeaderElectionConfig {
    pub(crate) lock: Arc<dyn ResourceLock>,
    pub(crate) identity: String,
    pub(crate) name: String,
    pub(crate) lease_duration: Duration,
    pub(crate) renew_deadline: Duration,
    pub(crate) retry_period: Duration,
    pub(crate) release_on_cancel: bool,
    pub(crate) metrics: Option<LeaderElectionMetrics>,
    pub(crate) wall_clock: WallClock,
    pub(crate) recorder: Option<LeaderEventRecorder>,
}

/// Where a leader elector records its terms: as events.k8s.io Events or, as client-go's lock
/// does, as core/v1 Events.
#[derive(Debug, Clone)]
pub enum LeaderEventRecorder {
    /// An events.k8s.io/v1 recorder ([`crate::events`]).
    Events(crate::events::EventRecorder),
    /// A core/v1 recorder ([`crate::record`]), as client-go's resource locks use.
    Record(crate::record::EventRecorder),
}

impl From<crate::events::EventRecorder> for LeaderEventRecorder {
    fn from(r: crate::events::EventRecorder) -> Self {
        LeaderEventRecorder::Events(r)
    }
}

impl From<crate::record::EventRecorder> for LeaderEventRecorder {
    fn from(r: crate::record::EventRecorder) -> Self {
        LeaderEventRecorder::Record(r)
    }
}

impl fmt::Debug for LeaderElectionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElectionConfig")
            .field("lock", &self.lock.describe())
            .field("identity", &self.identity)
            .field("name", &self.name)
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("release_on_cancel", &self.release_on_cancel)
            .finish_non_exhaustive()
    }
}

impl LeaderElectionConfig {
    /// Campaigns on `lock` as `identity` (unique among the candidates: client-go uses
    /// `hostname_uuid`) with client-go's default timing and no release on cancel. The metrics
    /// name defaults to the lock's description.
    pub fn new(lock: impl ResourceLock, identity: impl Into<String>) -> Self {
        let name = lock.describe();
        LeaderElectionConfig {
            lock: Arc::new(lock),
            identity: identity.into(),
            name,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: false,
            metrics: None,
            wall_clock: Arc::new(Timestamp::now),
            recorder: None,
        }
    }

    /// How long candidates wait without seeing the record change before they take over
    /// (default 15 s; written to the record in whole seconds).
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    /// How long a leader keeps leading without a successful renewal, counted from the start of
    /// its last successful one (default 10 s). Past it, the leader steps down.
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    /// Time between attempts: a leader renews this long after its last renewal, a candidate
    /// retries after this long plus up to 120% jitter (default 2 s).
    pub fn retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
        self
    }

    /// Whether a leader that is cancelled clears `holderIdentity` so that a successor takes over
    /// at once instead of after the lease duration (default false, as in client-go). Cancel only
    /// once the work the lease guards has finished.
    pub fn release_on_cancel(mut self, yes: bool) -> Self {
        self.release_on_cancel = yes;
        self
    }

    /// The `name` label of the metrics (default: the lock's description, e.g. `ns/name`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Reports `leader_election_master_status` and `leader_election_slowpath_total`.
    pub fn metrics(mut self, metrics: &LeaderElectionMetrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// Records each term as the event client-go's lock records: a Normal event with reason
    /// `LeaderElection` about the Lease, `<identity> became leader` when a term begins and
    /// `<identity> stopped leading` when it ends. A [`crate::record::EventRecorder`] writes them
    /// as client-go does, core/v1 Events; an [`crate::events::EventRecorder`] as events.k8s.io
    /// Events, whose action is required: `BecameLeader` or `StoppedLeading` (`kubectl get events`
    /// shows the same reason and message).
    pub fn event_recorder(mut self, recorder: impl Into<LeaderEventRecorder>) -> Self {
        self.recorder = Some(recorder.into());
        self
    }

    /// The clock that stamps `acquireTime` and `renewTime` (default: the system clock), read
    /// truncated to the microseconds a `MicroTime` keeps. These stamps are informational: expiry
    /// is judged only by the local monotonic clock.
    pub fn wall_clock(mut self, clock: impl Fn() -> Timestamp + Send + Sync + 'static) -> Self {
        self.wall_clock = Arc::new(clock);
        self
    }

    /// The wall clock's time for a stamp, truncated to the microseconds a `MicroTime` keeps (so
    /// what is written reads back unchanged).
    pub(crate) fn now(&self) -> Timestamp {
        let now = (self.wall_clock)();
        Timestamp::from_microsecond(now.as_microsecond()).unwrap_or(now)
    }

    /// The lease duration written to the record: whole seconds, as client-go writes it.
    pub fn lease_duration_seconds(&self) -> i32 {
        self.lease_duration.as_secs().min(i32::MAX as u64) as i32
    }

    /// Checks client-go's rules, plus one: the identity is not empty; every duration is
    /// positive; the renew deadline is longer than `1.2 × retry period` and shorter than the
    /// lease duration as written to the record (whole seconds).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |m: &str| Err(ConfigError(m.to_string()));
        if self.identity.is_empty() {
            return err("the identity must not be empty");
        }
        if self.lease_duration.is_zero() || self.renew_deadline.is_zero() || self.retry_period.is_zero() {
            return err("lease duration, renew deadline and retry period must be greater than zero");
        }
        if self.lease_duration <= self.renew_deadline {
            return err("leaseDuration must be greater than renewDeadline");
        }
        // `Duration::mul_f64` panics on overflow; a retry period that large is refused instead.
        let Ok(jittered) = Duration::try_from_secs_f64(self.retry_period.as_secs_f64() * JITTER_FACTOR) else {
            return err("retryPeriod*JitterFactor is too large");
        };
        if self.renew_deadline <= jittered {
            return err("renewDeadline must be greater than retryPeriod*JitterFactor");
        }
        if Duration::from_secs(self.lease_duration_seconds() as u64) <= self.renew_deadline {
            return err("leaseDuration in whole seconds (as written to the lease) must be greater than renewDeadline");
        }
        Ok(())
    }
}
