//! [`LeaderElector`]: client-go's leader election state machine (`tools/leaderelection`) on a
//! [`ResourceLock`].
//!
//! A candidate tries to acquire (immediately, then every retry period plus jitter); it may write
//! the record only if nobody holds it, it holds it itself, or the record has not changed for the
//! record's `leaseDurationSeconds` *as measured by the local monotonic clock since this candidate
//! last saw it change* (the timestamps in the record are never compared with the local clock, so
//! clock skew between candidates does not matter). Every write is a compare-and-swap on the
//! resourceVersion: of two candidates racing for an expired lease one gets a conflict and retries.
//! A leader renews every retry period (first optimistically over its own last write, then by
//! reading the record) and bounds every call by half the renew deadline.
//!
//! Invariants:
//! - a term lasts at most `renew_deadline` past the *start* of its last successful write: then
//!   [`is_leader`](LeaderElector::is_leader) is false, judged by the clock at each call, so even
//!   while the elector's task is not running (a stalled process). The term's token is cancelled
//!   by that task, at the deadline when it runs, or as soon as it runs again after a stall;
//!   [`check`](LeaderElector::check) reports a term that its task has not ended long after the
//!   lease must have expired. Another candidate can take over only `leaseDurationSeconds` after
//!   it saw that write, which was made after the write started; since the renew deadline is
//!   shorter than the lease duration, two beliefs of leading never overlap on clocks that
//!   advance at the same rate;
//! - a leader that reads a record naming another holder ends its term at once; one that finds
//!   the record gone creates it again, and one that finds it with no holder writes itself in
//!   (`leaseTransitions` of the record read + 1), and it keeps its term (same token, no event).
//!   Both writes are client-go's `tryAcquireOrRenew` after a failed optimistic renewal: they
//!   carry the `acquireTime` of the leader's own last write, and a re-created record also its
//!   `leaseTransitions`;
//! - a term ends (token cancelled, `StoppedLeading`, gauge 0) exactly once, also when `run`'s
//!   future is dropped; a candidate that lost goes back to campaigning with a fresh term token;
//! - every exit of `run` (cancelled, or its future dropped) delivers `StoppedLeading`, as
//!   client-go calls `OnStoppedLeading` whenever `Run` returns: the one ending the term it was
//!   in, or one of its own when it was not leading; a refused second `run` sends nothing;
//! - with `release_on_cancel`, a leader that is cancelled ends its term, then writes client-go's
//!   release (empty holder, `leaseDurationSeconds` 1, transitions unchanged) if the record still
//!   names it, retrying conflicts within the renew deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::{ConfigError, JITTER_FACTOR, LeaderElectionConfig, LeaderEventRecorder};
use super::events::{LeaderEvent, LeaderEvents, Subscribers};
use super::lock::LockError;
use super::metrics::ElectionSeries;
use super::record::LeaderElectionRecord;

/// Errors of [`LeaderElector::run`].
#[derive(Debug, thiserror::Error)]
pub enum ElectionError {
    /// `run` was called a second time.
    #[error("the leader elector {0} has already been started")]
    AlreadyStarted(String),
}

/// [`LeaderElector::check`]'s answer for a leader whose lease must have expired: its term has not
/// ended, but its last successful renewal is older than the lease duration plus the tolerance.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed election to renew leadership on lease {name}: last renewed {since_renewal:?} ago")]
pub struct LeaseExpired {
    /// The election's name (its metrics label).
    pub name: String,
    /// The time since the last successful write.
    pub since_renewal: Duration,
}

/// A candidate in a leader election. Cheap to clone (clones are the same candidate). See the
/// [module docs](super).
#[derive(Clone)]
pub struct LeaderElector {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.inner.config)
            .field("is_leader", &self.is_leader())
            .finish_non_exhaustive()
    }
}

struct Inner {
    config: LeaderElectionConfig,
    /// The lock's description, for logs.
    lock_name: String,
    series: Option<ElectionSeries>,
    state: Mutex<State>,
    subscribers: Subscribers,
    started: AtomicBool,
}

#[derive(Default)]
struct State {
    /// The holder last reported (`NewLeader`).
    leader: Option<String>,
    term: Option<Term>,
}

struct Term {
    token: CancellationToken,
    valid_until: Instant,
    /// When the last successful write (acquire or renewal) was answered.
    renewed_at: Instant,
}

impl Inner {
    fn begin_term(&self, valid_until: Instant) {
        let token = CancellationToken::new();
        let term = Term { token: token.clone(), valid_until, renewed_at: Instant::now() };
        self.state.lock().term = Some(term);
        if let Some(s) = &self.series {
            s.status.set(1);
        }
        tracing::info!(lock = %self.lock_name, identity = %self.config.identity, "started leading");
        self.record_event("became leader");
        self.subscribers.send(LeaderEvent::StartedLeading(token));
    }

    /// The event client-go's lock records about a term (`<identity> became leader`): a core/v1
    /// Event, or an events.k8s.io Event whose action is the transition's (`BecameLeader`,
    /// `StoppedLeading`: a term's two events are not one series).
    fn record_event(&self, what: &str) {
        let Some(recorder) = &self.config.recorder else { return };
        let Some(lease) = self.config.lock.object_reference() else { return };
        let note = format!("{} {what}", self.config.identity);
        let normal = crate::events::EventType::Normal;
        match recorder {
            LeaderEventRecorder::Record(r) => r.event(&lease, normal, "LeaderElection", note),
            LeaderEventRecorder::Events(r) => {
                let action = if what == "became leader" { "BecameLeader" } else { "StoppedLeading" };
                r.eventf(&lease, None, normal, "LeaderElection", action, note);
            }
        }
    }

    fn extend_term(&self, valid_until: Instant) {
        if let Some(t) = &mut self.state.lock().term {
            t.valid_until = valid_until;
            t.renewed_at = Instant::now();
        }
    }

    /// Ends the current term, if any (idempotent). Returns whether there was one.
    fn end_term(&self, why: &str) -> bool {
        let Some(term) = self.state.lock().term.take() else { return false };
        term.token.cancel();
        if let Some(s) = &self.series {
            s.status.set(0);
        }
        tracing::info!(lock = %self.lock_name, identity = %self.config.identity, reason = why, "stopped leading");
        self.record_event("stopped leading");
        self.subscribers.send(LeaderEvent::StoppedLeading);
        true
    }
}

/// On every exit of `run` (its return, or its future dropped): ends the term if one is running,
/// and otherwise sends the exit's `StoppedLeading` unless the term that just ended on cancel
/// already did.
struct ExitGuard<'a> {
    inner: &'a Inner,
    /// The `StoppedLeading` of the term ended by the cancel is this exit's event.
    reported: bool,
}

impl Drop for ExitGuard<'_> {
    fn drop(&mut self) {
        if !self.inner.end_term("the elector stopped") && !self.reported {
            self.inner.subscribers.send(LeaderEvent::StoppedLeading);
        }
    }
}

/// The outcome of one successful call to the lock.
enum Attempt {
    /// This candidate holds the lease now.
    Acquired,
    /// Another candidate (the observed record's holder) holds a lease that has not expired.
    HeldBy,
    /// A leader found the record naming someone else.
    NotOurs,
}

/// Why a term ended.
#[derive(Debug, PartialEq, Eq)]
enum TermEnd {
    Cancelled,
    Deadline,
    Lost,
}

/// The campaign's private bookkeeping (client-go's observedRecord and observedTime; its
/// reportedLeader is the state's `leader`).
struct Campaign<'a> {
    inner: &'a Inner,
    observed: Option<LeaderElectionRecord>,
    observed_at: Instant,
}

impl LeaderElector {
    /// Checks `config` ([`LeaderElectionConfig::validate`]) and makes a candidate that does
    /// nothing until [`run`](Self::run). Sets its `leader_election_master_status` to 0.
    pub fn new(config: LeaderElectionConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let series = config.metrics.as_ref().map(|m| m.series(&config.name));
        if let Some(s) = &series {
            s.status.set(0);
        }
        Ok(LeaderElector {
            inner: Arc::new(Inner {
                lock_name: config.lock.describe(),
                config,
                series,
                state: Mutex::new(State::default()),
                subscribers: Subscribers::default(),
                started: AtomicBool::new(false),
            }),
        })
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.inner.config.identity
    }

    /// Whether this candidate leads now: it is in a term whose renew deadline has not passed.
    /// Judged by the clock at the call, so it turns false on time even while the elector's task
    /// is not running.
    pub fn is_leader(&self) -> bool {
        let st = self.inner.state.lock();
        st.term.as_ref().is_some_and(|t| !t.token.is_cancelled() && Instant::now() < t.valid_until)
    }

    /// The holder last observed (`None` before the first observation and while nobody holds the
    /// lease). Informational: it may lag, and names this candidate a little past its term.
    pub fn leader(&self) -> Option<String> {
        self.inner.state.lock().leader.clone()
    }

    /// The events from now on (see [`LeaderEvent`]). Subscribe before `run` to see them all.
    pub fn subscribe(&self) -> LeaderEvents {
        self.inner.subscribers.subscribe()
    }

    /// A health check, client-go's `Check` (which its `HealthzAdaptor` serves): an error when
    /// this candidate is in a term that its task has not ended although the last successful write
    /// of the lease was more than the lease duration plus `max_tolerable_expired` ago — a leader
    /// whose elector is stuck (its process stalled, its runtime blocked) while others may have
    /// taken over. `Ok` otherwise, also while standing by.
    pub fn check(&self, max_tolerable_expired: Duration) -> Result<(), LeaseExpired> {
        let renewed_at = match &self.inner.state.lock().term {
            Some(t) => t.renewed_at,
            None => return Ok(()),
        };
        let since_renewal = Instant::now().saturating_duration_since(renewed_at);
        let tolerated = self.inner.config.lease_duration.saturating_add(max_tolerable_expired);
        if since_renewal > tolerated {
            return Err(LeaseExpired { name: self.inner.config.name.clone(), since_renewal });
        }
        Ok(())
    }

    /// Campaigns until `cancel` fires: acquires, leads until the term ends, and campaigns again.
    /// (client-go's `Run` returns after one term; a program that wants that stops at the first
    /// `StoppedLeading`.) On cancel it ends the term and, with `release_on_cancel`, releases the
    /// lease before it returns.
    ///
    /// Every exit (cancelled, or this future dropped) delivers a `StoppedLeading`, as client-go
    /// calls `OnStoppedLeading` whenever its `Run` returns, even if it never led: the event
    /// ending the term, or, when the candidate was not leading, one sent as it exits.
    ///
    /// Returns [`ElectionError::AlreadyStarted`] on a second call, without any event.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), ElectionError> {
        let inner = &*self.inner;
        let cfg = &inner.config;
        if inner.started.swap(true, Ordering::SeqCst) {
            return Err(ElectionError::AlreadyStarted(inner.lock_name.clone()));
        }
        let mut exit = ExitGuard { inner, reported: false };
        let mut c = Campaign { inner, observed: None, observed_at: Instant::now() };
        loop {
            tracing::info!(lock = %inner.lock_name, identity = %cfg.identity, "attempting to acquire leader lease");
            let Some(valid_until) = c.acquire(&cancel).await else { break };
            inner.begin_term(valid_until);
            let end = c.renew(valid_until, &cancel).await;
            inner.end_term(match end {
                TermEnd::Cancelled => "cancelled",
                TermEnd::Deadline => "the lease could not be renewed within the renew deadline",
                TermEnd::Lost => "the lease is no longer held by this candidate",
            });
            c.report();
            if end == TermEnd::Cancelled {
                exit.reported = true;
                if cfg.release_on_cancel {
                    c.release().await;
                    c.report();
                }
                break;
            }
        }
        Ok(())
    }
}

impl Campaign<'_> {
    fn cfg(&self) -> &LeaderElectionConfig {
        &self.inner.config
    }

    fn lock_name(&self) -> &str {
        &self.inner.lock_name
    }

    /// The bound on one try (client-go advises a client timeout of half the renew deadline).
    fn attempt_timeout(&self) -> Duration {
        self.cfg().renew_deadline / 2
    }

    /// Records what was read; the observation time moves only when the record changed.
    fn observe(&mut self, record: LeaderElectionRecord) {
        if self.observed.as_ref() != Some(&record) {
            self.observed = Some(record);
            self.observed_at = Instant::now();
        }
    }

    /// Records what this candidate wrote.
    fn wrote(&mut self, record: LeaderElectionRecord) {
        self.observed = Some(record);
        self.observed_at = Instant::now();
    }

    /// Whether the observed record's lease has not expired, by the local clock.
    fn lease_valid(&self) -> bool {
        let Some(r) = &self.observed else { return false };
        let lease = Duration::from_secs(r.lease_duration_seconds.max(0) as u64);
        Instant::now() < self.observed_at + lease
    }

    /// Reports a change of the observed holder (client-go's `maybeReportTransition`).
    fn report(&self) {
        let holder = self.observed.as_ref().map(|r| &r.holder_identity).filter(|h| !h.is_empty());
        {
            let mut st = self.inner.state.lock();
            if st.leader.as_ref() == holder {
                return;
            }
            st.leader = holder.cloned();
        }
        tracing::info!(lock = %self.lock_name(), leader = ?holder, "new leader observed");
        self.inner.subscribers.send(LeaderEvent::NewLeader(holder.cloned()));
    }

    /// client-go's `tryAcquireOrRenew`, with one difference: a leader (`leading`) that finds the
    /// record naming someone else does not wait for that lease to expire but reports
    /// [`Attempt::NotOurs`]. Like client-go, a leader that finds the record gone creates it, and
    /// one that finds it without a holder takes it (`leaseTransitions` + 1, since the holder read
    /// is not itself); as in client-go, the record prepared for the optimistic renewal (its own
    /// last `acquireTime` and `leaseTransitions`) is the base of those writes.
    async fn try_acquire_or_renew(&mut self, leading: bool) -> Result<Attempt, LockError> {
        let inner = self.inner;
        let cfg = &inner.config;
        let now = cfg.now();
        let mut record = LeaderElectionRecord {
            holder_identity: cfg.identity.clone(),
            lease_duration_seconds: cfg.lease_duration_seconds(),
            acquire_time: Some(now),
            renew_time: Some(now),
            ..Default::default()
        };
        // 1. A leader first writes over its own last write.
        if leading && let Some(own) = self.observed.as_ref().filter(|r| r.holder_identity == cfg.identity) {
            record.acquire_time = own.acquire_time;
            record.lease_transitions = own.lease_transitions;
            match cfg.lock.update(record.clone()).await {
                Ok(()) => {
                    self.wrote(record);
                    return Ok(Attempt::Acquired);
                }
                Err(e) => {
                    tracing::debug!(lock = %inner.lock_name, error = %e, "optimistic renewal failed; reading the lease")
                }
            }
        }
        // 2. Read the record, or create it.
        let old = match cfg.lock.get().await {
            Ok(r) => r,
            Err(LockError::NotFound(_)) => {
                cfg.lock.create(record.clone()).await?;
                self.wrote(record);
                return Ok(Attempt::Acquired);
            }
            Err(e) => return Err(e),
        };
        // 3. Check the holder and the time since the record last changed.
        let ours = old.holder_identity == cfg.identity;
        let held = old.is_held();
        let (acquire_time, transitions) = (old.acquire_time, old.lease_transitions);
        self.observe(old);
        if leading && held && !ours {
            return Ok(Attempt::NotOurs);
        }
        if held && !ours && self.lease_valid() {
            return Ok(Attempt::HeldBy);
        }
        // 4. Write: a renewal keeps the acquire time and the transitions, a takeover counts one.
        if ours {
            record.acquire_time = acquire_time;
            record.lease_transitions = transitions;
            if leading && let Some(s) = &inner.series {
                s.slowpath.inc();
            }
        } else {
            record.lease_transitions = transitions.saturating_add(1);
        }
        cfg.lock.update(record.clone()).await?;
        self.wrote(record);
        Ok(Attempt::Acquired)
    }

    fn log_failure(&self, what: &str, r: Result<Result<Attempt, LockError>, tokio::time::error::Elapsed>) {
        let lock = self.lock_name();
        match r {
            Ok(Ok(Attempt::HeldBy)) => {
                let holder = self.observed.as_ref().map_or("", |o| &o.holder_identity);
                tracing::debug!(%lock, %holder, "the lease is held and has not yet expired")
            }
            Ok(Ok(_)) => {}
            Ok(Err(e @ LockError::Conflict(..))) => tracing::debug!(%lock, error = %e, "{what}: lost a race"),
            Ok(Err(e)) => tracing::info!(%lock, error = %e, "{what} failed"),
            Err(_) => tracing::info!(%lock, timeout = ?self.attempt_timeout(), "{what} timed out"),
        }
    }

    /// Tries until it acquires (`Some(end of the first renew deadline)`) or `cancel` fires.
    async fn acquire(&mut self, cancel: &CancellationToken) -> Option<Instant> {
        loop {
            let start = Instant::now();
            let timeout = self.attempt_timeout();
            let r = tokio::select! {
                biased;
                _ = cancel.cancelled() => return None,
                r = tokio::time::timeout(timeout, self.try_acquire_or_renew(false)) => r,
            };
            self.report();
            if let Ok(Ok(Attempt::Acquired)) = r {
                tracing::info!(lock = %self.lock_name(), identity = %self.cfg().identity, "successfully acquired lease");
                return Some(start + self.cfg().renew_deadline);
            }
            self.log_failure("acquiring the lease", r);
            let retry = self.cfg().retry_period;
            let wait = retry + retry.mul_f64(rand::random::<f64>() * JITTER_FACTOR);
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return None,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Renews every retry period until the term ends.
    async fn renew(&mut self, mut valid_until: Instant, cancel: &CancellationToken) -> TermEnd {
        loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return TermEnd::Cancelled,
                _ = tokio::time::sleep_until(valid_until) => return TermEnd::Deadline,
                _ = tokio::time::sleep(self.cfg().retry_period) => {}
            }
            let start = Instant::now();
            let timeout = self.attempt_timeout();
            let r = tokio::select! {
                biased;
                _ = cancel.cancelled() => return TermEnd::Cancelled,
                _ = tokio::time::sleep_until(valid_until) => return TermEnd::Deadline,
                r = tokio::time::timeout(timeout, self.try_acquire_or_renew(true)) => r,
            };
            match r {
                Ok(Ok(Attempt::Acquired)) => {
                    valid_until = start + self.cfg().renew_deadline;
                    self.inner.extend_term(valid_until);
                }
                Ok(Ok(Attempt::HeldBy | Attempt::NotOurs)) => return TermEnd::Lost,
                r => self.log_failure("renewing the lease", r),
            }
        }
    }

    /// client-go's release: if the record still names this candidate, clear the holder.
    async fn release(&mut self) {
        let deadline = self.cfg().renew_deadline;
        let r = tokio::time::timeout(deadline, self.try_release()).await;
        let lock = self.lock_name();
        match r {
            Ok(Ok(true)) => tracing::info!(%lock, "released the lease"),
            Ok(Ok(false)) => tracing::debug!(%lock, "the lease was not held by this candidate; nothing to release"),
            Ok(Err(e)) => tracing::warn!(%lock, error = %e, "releasing the lease failed"),
            Err(_) => tracing::warn!(%lock, ?deadline, "releasing the lease timed out"),
        }
    }

    async fn try_release(&mut self) -> Result<bool, LockError> {
        let inner = self.inner;
        let cfg = &inner.config;
        loop {
            let old = match cfg.lock.get().await {
                Ok(r) => r,
                Err(LockError::NotFound(_)) => return Ok(false),
                Err(e) => return Err(e),
            };
            let (ours, transitions) = (old.holder_identity == cfg.identity, old.lease_transitions);
            self.observe(old);
            if !ours {
                return Ok(false);
            }
            let now = cfg.now();
            let record = LeaderElectionRecord {
                holder_identity: String::new(),
                lease_duration_seconds: 1,
                acquire_time: Some(now),
                renew_time: Some(now),
                lease_transitions: transitions,
                ..Default::default()
            };
            match cfg.lock.update(record.clone()).await {
                Ok(()) => {
                    self.wrote(record);
                    return Ok(true);
                }
                Err(LockError::Conflict(..)) => continue,
                Err(e) => return Err(e),
            }
        }
    }
}
