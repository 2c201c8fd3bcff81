//! The controller runner: client-go's worker pattern (informer → handler → rate-limited work
//! queue → N workers → reconcile) as a small API.
//!
//! A [`ControllerRunner`] registers a handler on each informer it is given; the handler puts
//! object keys into a [`RateLimitingQueue`] (deletes included, tombstones too, via
//! [`DeletedObject::key`](crate::DeletedObject::key)). [`run`](ControllerRunner::run) waits until
//! every informer *and* every handler registration has synced, then starts the workers. A worker
//! takes a key, reads the primary object from the primary informer's cache (`None` if it no
//! longer exists) and calls the reconcile function:
//!
//! | reconcile returns | the runner |
//! |---|---|
//! | `Ok(Action::Done)` | `forget`s the key (its backoff restarts) |
//! | `Ok(Action::RequeueAfter(d))` | `forget`s the key and `add_after(key, d)` |
//! | `Err(e)`, panics, or outlasts [`reconcile_timeout`](ControllerRunnerBuilder::reconcile_timeout) | logs, `add_rate_limited(key)` (exponential backoff per key); past [`max_retries`](ControllerRunnerBuilder::max_retries), logs and `forget`s instead (dropped until the next change) |
//!
//! and then always calls `done`.
//!
//! Invariants:
//! - a key is never reconciled by two workers at once (the work queue hands a key to one
//!   worker and holds further adds until `done`); changes arriving meanwhile cause exactly one
//!   more reconcile afterwards;
//! - a reconcile always sees the cache at least as new as the notification that queued its key;
//! - on cancellation the runner stops taking keys, waits for in-flight reconciles to finish
//!   (`shut_down_with_drain`), stops its workers and removes its handlers; `run` returns only
//!   then. Keys still queued are dropped (a new runner's initial sync queues every object
//!   again). Stop a runner with its token: dropping the `run` future instead aborts the
//!   workers mid-reconcile;
//! - a panicking reconcile is an error for its key; workers survive it.
//!
//! The runner does not start informers: run them (or their factory) yourself. Dropping the last
//! handle of a runner that never ran removes its handlers too.
//!
//! # Several replicas: leader election
//!
//! With [`leader_election`](ControllerRunnerBuilder::leader_election), every replica runs its
//! informers and queues keys (warm caches, as controller-runtime's warm-up), and once its caches
//! have synced campaigns on the lease; only the leader runs workers:
//!
//! - on **becoming leader** the runner queues every key of the primary cache (what a fresh
//!   process's initial list does: the previous leader's pending retries and requeues are not
//!   known here) and starts its workers;
//! - on **losing leadership** (the renew deadline passed, or another holder was seen) the workers
//!   stop at once: in-flight reconciles are **cancelled** (their futures dropped at their next
//!   await point) and their keys queued again, because the lease may already be another
//!   replica's soon; the replica goes back to standby, keeps its caches and queue warm, and
//!   campaigns again;
//! - on **cancellation** while leading, the workers stop taking keys and in-flight reconciles
//!   **finish** while the lease is still renewed (cancelled only if leadership is lost
//!   meanwhile); then the elector stops, releasing the lease if the configuration says
//!   `release_on_cancel`, so a successor starts without waiting for the lease to expire.
//!
//! No key is reconciled by two replicas at once as long as terms do not overlap, which the
//! elector guarantees on clocks that run at the same rate (see [`crate::leader_election`]).
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use informer::fake::FakeSource;
//! use informer::runner::{Action, ControllerRunner};
//! use informer::SharedIndexInformer;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let source = FakeSource::new();
//! source.add(serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}}));
//! let informer = SharedIndexInformer::<ConfigMap>::new(source.clone(), Duration::ZERO);
//!
//! let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
//! let runner = ControllerRunner::builder("configmaps")
//!     .informer(&informer)
//!     .workers(2)
//!     .build(move |key, obj| {
//!         let seen_tx = seen_tx.clone();
//!         async move {
//!             // `obj` is None when the object no longer exists.
//!             let _ = seen_tx.send((key.to_string(), obj.is_some()));
//!             Ok::<_, std::convert::Infallible>(Action::Done)
//!         }
//!     })
//!     .unwrap();
//!
//! let cancel = CancellationToken::new();
//! let inf = tokio::spawn({ let (i, c) = (informer.clone(), cancel.clone()); async move { i.run(c).await } });
//! let run = tokio::spawn({ let (r, c) = (runner.clone(), cancel.clone()); async move { r.run(c).await } });
//!
//! assert_eq!(seen.recv().await.unwrap(), ("ns/a".to_string(), true));
//! source.delete(serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}}));
//! assert_eq!(seen.recv().await.unwrap(), ("ns/a".to_string(), false));
//!
//! cancel.cancel();
//! run.await.unwrap().unwrap();
//! inf.await.unwrap();
//! assert_eq!(runner.stats().success, 2);
//! # }
//! ```

mod action;
pub mod finalizer;
mod metadata;
mod metrics;
mod source;
mod worker;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::leader_election::{ConfigError, ElectionError, LeaderElectionConfig, LeaderElector, LeaderEvent};

pub use action::Action;
pub use metadata::generation_changed;
pub use metrics::{ControllerLabels, ReconcileLabels, RunnerMetrics};

use metrics::RunnerSeries;
use source::{KeyMap, Registered, Source, UpdateFilter};
use worker::{Counters, ReconcileFn, Worker};

use crate::key::ObjectKey;
use crate::object::Object;
use crate::shared_informer::{InformerError, SharedIndexInformer};
use crate::store::Indexer;
use crate::wait::{NotSynced, wait_for_cache_sync};
use crate::workqueue::{RateLimiter, RateLimitingQueue, WorkQueue, default_controller_rate_limiter};

/// Errors of building or running a [`ControllerRunner`].
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// `build` was called without a primary informer.
    #[error("controller {0}: no primary informer (call .informer(..))")]
    NoInformer(String),
    /// A handler could not be registered (the informer has stopped).
    #[error("controller {0}: {1}")]
    Informer(String, #[source] InformerError),
    /// The caches did not sync within the sync timeout.
    #[error("controller {0}: {1}")]
    NotSynced(String, #[source] NotSynced),
    /// `run` was called a second time.
    #[error("controller {0} has already been started")]
    AlreadyStarted(String),
    /// The leader election configuration was refused.
    #[error("controller {0}: {1}")]
    LeaderElectionConfig(String, #[source] ConfigError),
    /// The runner's elector could not run (it was started elsewhere).
    #[error("controller {0}: {1}")]
    Election(String, #[source] ElectionError),
}

/// Counters and gauges of one runner, for dashboards and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunnerStats {
    /// Reconciles that returned `Action::Done`.
    pub success: u64,
    /// Reconciles that returned `Action::RequeueAfter`.
    pub requeue: u64,
    /// Reconciles that returned an error.
    pub error: u64,
    /// Reconciles that panicked.
    pub panic: u64,
    /// Keys dropped after `max_retries` failures.
    pub dropped: u64,
    /// Keys ready to be handed to a worker.
    pub queued: usize,
    /// Keys waiting for their retry or requeue delay.
    pub delayed: usize,
    /// Keys being reconciled.
    pub in_flight: usize,
    /// Notifications waiting in the runner's handlers (summed over informers).
    pub handler_backlog: usize,
}

/// Builds a [`ControllerRunner`]; see the [module docs](self).
pub struct ControllerRunnerBuilder<K> {
    name: String,
    primary: Option<SharedIndexInformer<K>>,
    sources: Vec<Source>,
    workers: usize,
    limiter: Option<Box<dyn RateLimiter<ObjectKey>>>,
    metrics: Option<RunnerMetrics>,
    sync_timeout: Option<Duration>,
    max_retries: Option<u32>,
    reconcile_timeout: Option<Duration>,
    leader_election: Option<LeaderElectionConfig>,
}

impl<K> fmt::Debug for ControllerRunnerBuilder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerRunnerBuilder")
            .field("name", &self.name)
            .field("workers", &self.workers)
            .field("sources", &self.sources.len())
            .finish_non_exhaustive()
    }
}

impl<K: Send + Sync + 'static> ControllerRunnerBuilder<K> {
    /// The primary informer: its objects' keys are queued and reconciles read its cache.
    /// Calling it again replaces the cache read but keeps the earlier informer's handler.
    pub fn informer(self, informer: &SharedIndexInformer<K>) -> Self {
        self.primary_source(informer, None)
    }

    /// The primary informer, as [`informer`](Self::informer), whose updates queue the key only
    /// when `filter(old, new)` holds (controller-runtime's update predicates); adds and deletes
    /// always do. [`generation_changed`] lets through only updates that move
    /// `metadata.generation`, so that a controller's own status writes (and resyncs) do not
    /// bring its keys back.
    pub fn informer_filtered(
        self,
        informer: &SharedIndexInformer<K>,
        filter: impl Fn(&Object<K>, &Object<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.primary_source(informer, Some(Arc::new(filter)))
    }

    fn primary_source(mut self, informer: &SharedIndexInformer<K>, filter: Option<UpdateFilter<K>>) -> Self {
        self.primary = Some(informer.clone());
        self.sources.push(source::source(informer.clone(), source::Role::Primary(filter)));
        self
    }

    /// A secondary informer: each of its notifications queues the primary keys `map` returns
    /// (for example the owner of a changed child) — for an update, those of the object before
    /// and after it, so that an owner the object left is told too. The runner also waits for it
    /// to sync.
    pub fn watches<O: Send + Sync + 'static>(
        mut self,
        informer: &SharedIndexInformer<O>,
        map: impl Fn(&Object<O>) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        self.sources.push(source::source(informer.clone(), source::Role::Secondary(Arc::new(map))));
        self
    }

    /// A secondary informer of objects the primary kind controls (controller-runtime's
    /// `Owns`): each of its notifications queues the key of the object's controller — the
    /// owner reference with `controller: true` whose kind and API group are the primary's —
    /// in the object's namespace (none for a cluster-scoped primary kind). Objects without
    /// such a reference queue nothing. The runner also waits for it to sync.
    pub fn owns<O: Send + Sync + 'static>(mut self, informer: &SharedIndexInformer<O>) -> Self
    where
        K: kube::Resource,
        K::DynamicType: Default,
        K::Scope: 'static,
    {
        let dt = K::DynamicType::default();
        let cluster_scoped =
            std::any::TypeId::of::<K::Scope>() == std::any::TypeId::of::<kube::core::ClusterResourceScope>();
        let owner = metadata::Owner::new(K::kind(&dt).into_owned(), K::group(&dt).into_owned(), cluster_scoped);
        let map: KeyMap<O> = Arc::new(move |o: &Object<O>| owner.key_of(o));
        self.sources.push(source::source(informer.clone(), source::Role::Secondary(map)));
        self
    }

    /// Number of concurrent workers (default 1; 0 is taken as 1).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// The retry limiter (default: [`default_controller_rate_limiter`]).
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<ObjectKey> + 'static) -> Self {
        self.limiter = Some(Box::new(limiter));
        self
    }

    /// Reports reconcile and work-queue metrics (the queue is named after the runner).
    pub fn metrics(mut self, metrics: &RunnerMetrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// Gives up (with [`RunnerError::NotSynced`]) if the caches have not synced after `timeout`
    /// (default: wait until cancelled).
    pub fn sync_timeout(mut self, timeout: Duration) -> Self {
        self.sync_timeout = Some(timeout);
        self
    }

    /// Drops a key after it failed this many retries in a row (client-go's example controller
    /// gives up after 5): it is logged and forgotten, and reconciled again on its next change.
    /// Default: retry forever.
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = Some(n);
        self
    }

    /// Gives each reconcile at most `limit` (controller-runtime's `ReconciliationTimeout`): past
    /// it the reconcile is dropped at its next await point and counts as a failure, retried with
    /// the key's backoff. Default: no limit.
    pub fn reconcile_timeout(mut self, limit: Duration) -> Self {
        self.reconcile_timeout = Some(limit);
        self
    }

    /// Runs the workers only while this replica leads the election of `config` (see [Several
    /// replicas](self#several-replicas-leader-election)). `build` checks the configuration
    /// ([`RunnerError::LeaderElectionConfig`]); the runner runs the elector itself (read its
    /// state through [`ControllerRunner::leader_elector`]).
    pub fn leader_election(mut self, config: LeaderElectionConfig) -> Self {
        self.leader_election = Some(config);
        self
    }

    /// Builds the runner and registers its handlers. `reconcile(key, object)` gets the object
    /// from the primary cache, or `None` if it no longer exists.
    ///
    /// Call it inside the Tokio runtime that runs the controller: the queue's delay timer is a
    /// task there (built outside a runtime, it is a thread of its own).
    pub fn build<F, Fut, E>(self, reconcile: F) -> Result<ControllerRunner<K>, RunnerError>
    where
        F: Fn(ObjectKey, Option<Object<K>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let name = self.name;
        let primary = self.primary.ok_or_else(|| RunnerError::NoInformer(name.clone()))?;
        let elector = match self.leader_election {
            None => None,
            Some(c) => Some(LeaderElector::new(c).map_err(|e| RunnerError::LeaderElectionConfig(name.clone(), e))?),
        };
        let limiter: Box<dyn RateLimiter<ObjectKey>> =
            self.limiter.unwrap_or_else(|| Box::new(default_controller_rate_limiter()));
        let mut qb = WorkQueue::<ObjectKey>::builder().name(name.clone());
        if let Some(m) = &self.metrics {
            qb = qb.metrics(m.workqueue());
        }
        let queue = qb.build_rate_limiting(limiter);
        let mut registered = Vec::with_capacity(self.sources.len());
        for src in self.sources {
            match src(&queue, &name) {
                Ok(r) => registered.push(r),
                Err(e) => {
                    for r in &registered {
                        (r.remove)();
                    }
                    queue.shut_down();
                    return Err(RunnerError::Informer(name, e));
                }
            }
        }
        let reconcile = Arc::new(reconcile);
        let timeout = self.reconcile_timeout;
        let reconcile: ReconcileFn<K> = Arc::new(move |key, obj| {
            let fut = reconcile(key, obj);
            Box::pin(async move {
                match timeout {
                    None => fut.await.map_err(|e| e.to_string()),
                    Some(limit) => match tokio::time::timeout(limit, fut).await {
                        Ok(done) => done.map_err(|e| e.to_string()),
                        Err(_) => Err(format!("reconcile timed out after {limit:?}")),
                    },
                }
            })
        });
        Ok(ControllerRunner {
            inner: Arc::new(Inner {
                series: self.metrics.as_ref().map(|m| m.series(&name)),
                name: name.into(),
                cache: primary.indexer().clone(),
                queue,
                reconcile,
                workers: self.workers,
                counters: Arc::default(),
                max_retries: self.max_retries,
                registered,
                sync_timeout: self.sync_timeout,
                started: AtomicBool::new(false),
                elector,
            }),
        })
    }
}

struct Inner<K> {
    name: Arc<str>,
    cache: Arc<Indexer<K>>,
    queue: RateLimitingQueue<ObjectKey>,
    reconcile: ReconcileFn<K>,
    workers: usize,
    counters: Arc<Counters>,
    max_retries: Option<u32>,
    series: Option<RunnerSeries>,
    registered: Vec<Registered>,
    sync_timeout: Option<Duration>,
    started: AtomicBool,
    elector: Option<LeaderElector>,
}

impl<K> Drop for Inner<K> {
    /// A runner dropped without running (or after) leaves nothing registered on the informers.
    fn drop(&mut self) {
        self.queue.shut_down();
        for r in &self.registered {
            (r.remove)();
        }
    }
}

/// A controller: informers' handlers feeding a rate-limited queue drained by workers calling a
/// reconcile function. Cheap to clone (clones are the same runner). See the [module docs](self).
pub struct ControllerRunner<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for ControllerRunner<K> {
    fn clone(&self) -> Self {
        ControllerRunner { inner: self.inner.clone() }
    }
}

impl<K> fmt::Debug for ControllerRunner<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerRunner")
            .field("name", &self.inner.name)
            .field("workers", &self.inner.workers)
            .finish_non_exhaustive()
    }
}

impl ControllerRunner<()> {
    /// Starts building a runner named `name` (used in logs, metrics and the queue's name).
    pub fn builder<K: Send + Sync + 'static>(name: impl Into<String>) -> ControllerRunnerBuilder<K> {
        ControllerRunnerBuilder {
            name: name.into(),
            primary: None,
            sources: Vec::new(),
            workers: 1,
            limiter: None,
            metrics: None,
            sync_timeout: None,
            max_retries: None,
            reconcile_timeout: None,
            leader_election: None,
        }
    }
}

impl<K: Send + Sync + 'static> ControllerRunner<K> {
    /// The runner's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The runner's elector, with leader election (for `is_leader`, `leader` and `subscribe`;
    /// the runner runs it).
    pub fn leader_elector(&self) -> Option<&LeaderElector> {
        self.inner.elector.as_ref()
    }

    /// The work queue (to add keys by hand, or inspect retries with `num_requeues`).
    pub fn queue(&self) -> &RateLimitingQueue<ObjectKey> {
        &self.inner.queue
    }

    /// Whether every informer and handler registration of the runner has synced.
    pub fn has_synced(&self) -> bool {
        self.inner.registered.iter().all(|r| r.synced.iter().all(|s| s.is_set()))
    }

    /// A snapshot of the runner's counters and queue.
    pub fn stats(&self) -> RunnerStats {
        let i = &self.inner;
        let c = &i.counters;
        RunnerStats {
            success: c.success.load(Ordering::Relaxed),
            requeue: c.requeue.load(Ordering::Relaxed),
            error: c.error.load(Ordering::Relaxed),
            panic: c.panic.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            queued: i.queue.len(),
            delayed: i.queue.pending_len(),
            in_flight: i.queue.in_flight(),
            handler_backlog: i.registered.iter().map(|r| (r.backlog)().len).sum(),
        }
    }

    /// Waits for the caches, runs the workers until `cancel` fires (or the queue is shut down),
    /// then drains in-flight reconciles, stops the workers and removes the handlers. With leader
    /// election, runs the workers only while leading (see the [module docs](self)).
    ///
    /// Returns [`RunnerError::NotSynced`] if a sync timeout was set and passed,
    /// [`RunnerError::AlreadyStarted`] on a second call, and [`RunnerError::Election`] if the
    /// elector had been started elsewhere.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), RunnerError> {
        let i = &self.inner;
        if i.started.swap(true, Ordering::SeqCst) {
            return Err(RunnerError::AlreadyStarted(i.name.to_string()));
        }
        tracing::info!(controller = %i.name, workers = i.workers, "starting controller");
        let signals: Vec<_> = i.registered.iter().flat_map(|r| r.synced.iter().cloned()).collect();
        let synced = tokio::select! {
            _ = cancel.cancelled() => None,
            r = wait_for_cache_sync(&signals, i.sync_timeout) => Some(r),
        };
        let result = match synced {
            None => Ok(()),
            Some(r) => match r.into_result() {
                Err(e) => Err(RunnerError::NotSynced(i.name.to_string(), e)),
                Ok(()) => match &i.elector {
                    None => {
                        // Without an election the workers' term never ends.
                        self.work(&CancellationToken::new(), &cancel).await;
                        Ok(())
                    }
                    Some(elector) => self.work_when_leading(elector, cancel).await,
                },
            },
        };
        i.queue.shut_down();
        for r in &i.registered {
            (r.remove)();
        }
        tracing::info!(controller = %i.name, "controller stopped");
        result
    }

    fn spawn_workers(&self, stop: &CancellationToken, abort: &CancellationToken) -> JoinSet<()> {
        let i = &self.inner;
        let mut workers = JoinSet::new();
        for id in 0..i.workers {
            let w = Worker {
                name: i.name.clone(),
                queue: i.queue.clone(),
                cache: i.cache.clone(),
                reconcile: i.reconcile.clone(),
                counters: i.counters.clone(),
                max_retries: i.max_retries,
                metrics: i.series.clone(),
                abort: abort.clone(),
            };
            workers.spawn(w.run(id, stop.clone()));
        }
        workers
    }

    async fn join(&self, mut workers: JoinSet<()>) {
        while let Some(r) = workers.join_next().await {
            if let Err(e) = r {
                tracing::error!(controller = %self.inner.name, error = %e, "worker task failed");
            }
        }
    }

    /// Campaigns, and works during each term, until `cancel` fires or the queue shuts down;
    /// then stops the elector (which releases the lease if so configured).
    async fn work_when_leading(&self, elector: &LeaderElector, cancel: CancellationToken) -> Result<(), RunnerError> {
        let i = &self.inner;
        let mut events = elector.subscribe();
        let election = CancellationToken::new();
        // Aborted if the `run` future is dropped.
        let mut campaign = AbortOnDropHandle::new(tokio::spawn({
            let (e, c) = (elector.clone(), election.clone());
            async move { e.run(c).await }
        }));
        let mut result = Ok(());
        tracing::info!(controller = %i.name, identity = elector.identity(), "standing by: campaigning for leadership");
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = i.queue.shutdown_token().cancelled() => break,
                r = &mut campaign => {
                    if let Ok(Err(e)) = r {
                        result = Err(RunnerError::Election(i.name.to_string(), e));
                    }
                    break;
                }
                ev = events.recv() => match ev {
                    Some(LeaderEvent::StartedLeading(term)) => {
                        if self.lead(&term, &cancel).await {
                            break;
                        }
                        tracing::info!(controller = %i.name, "leadership lost: standing by");
                    }
                    Some(_) => {}
                    None => break,
                },
            }
        }
        election.cancel();
        if !campaign.is_finished() {
            let _ = (&mut campaign).await;
        }
        result
    }

    /// Works during one term. Returns whether the runner stops (cancelled or queue shut down),
    /// after in-flight reconciles finished; false when the term ended first, after they were
    /// cancelled.
    async fn lead(&self, term: &CancellationToken, cancel: &CancellationToken) -> bool {
        let i = &self.inner;
        if term.is_cancelled() {
            // A term that ended before this runner got to it.
            return false;
        }
        let keys = i.cache.list_keys();
        tracing::info!(controller = %i.name, keys = keys.len(), workers = i.workers, "leading: starting workers");
        for key in keys {
            i.queue.add(key);
        }
        self.work(term, cancel).await
    }

    /// Runs the workers until `term` ends, `cancel` fires or the queue shuts down. On a stop
    /// (cancel or queue shutdown) the workers take no more keys and in-flight reconciles finish,
    /// or are cancelled if `term` ends meanwhile; when `term` ends first they are cancelled at
    /// once. Returns whether the runner stops, once every worker has ended.
    async fn work(&self, term: &CancellationToken, cancel: &CancellationToken) -> bool {
        let i = &self.inner;
        let (stop, abort) = (CancellationToken::new(), CancellationToken::new());
        let workers = self.spawn_workers(&stop, &abort);
        // Workers end by themselves only if someone shut the queue down.
        let stopping = tokio::select! {
            _ = term.cancelled() => false,
            _ = cancel.cancelled() => true,
            _ = i.queue.shutdown_token().cancelled() => true,
        };
        stop.cancel();
        if stopping {
            tracing::info!(controller = %i.name, in_flight = i.queue.in_flight(), "shutting down: draining in-flight reconciles");
            tokio::select! {
                _ = i.queue.shut_down_with_drain() => {}
                _ = term.cancelled() => abort.cancel(),
            }
        } else {
            tracing::info!(controller = %i.name, in_flight = i.queue.in_flight(), "leadership lost: cancelling in-flight reconciles");
            abort.cancel();
        }
        self.join(workers).await;
        stopping
    }
}
