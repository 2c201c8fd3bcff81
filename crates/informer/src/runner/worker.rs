//! One worker: take a key, read the object from the cache, reconcile, settle the key.
//!
//! Invariants: every key taken from the queue gets exactly one `done`, whatever the reconcile
//! does (returns, fails, panics); a failed key is retried with the queue's rate limiter until
//! `max_retries` is reached, then forgotten; a worker takes no new key once the runner is cancelled, but
//! finishes the reconcile it is in; a panic inside a reconcile is caught, logged and treated as
//! an error (rate-limited retry), and the worker keeps running. The queue guarantees that no
//! two workers hold the same key. When `abort` fires (leadership lost) the reconcile in progress
//! is dropped at its next await point, its key queued again and `done`, and the worker stops.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::FutureExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::action::Action;
use super::metrics::RunnerSeries;
use crate::key::ObjectKey;
use crate::object::Object;
use crate::store::Indexer;
use crate::workqueue::RateLimitingQueue;

/// A type-erased reconcile: errors are already rendered for the log.
pub(crate) type ReconcileFn<K> = Arc<
    dyn Fn(ObjectKey, Option<Object<K>>) -> Pin<Box<dyn Future<Output = Result<Action, String>> + Send>> + Send + Sync,
>;

/// Counters behind [`RunnerStats`](super::RunnerStats).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub success: AtomicU64,
    pub requeue: AtomicU64,
    pub error: AtomicU64,
    pub panic: AtomicU64,
    pub dropped: AtomicU64,
}

/// What one reconcile amounted to.
enum Outcome {
    Ok(Action),
    Err(String),
    Panic(String),
}

pub(crate) struct Worker<K> {
    pub name: Arc<str>,
    pub queue: RateLimitingQueue<ObjectKey>,
    pub cache: Arc<Indexer<K>>,
    pub reconcile: ReconcileFn<K>,
    pub counters: Arc<Counters>,
    pub max_retries: Option<u32>,
    pub metrics: Option<RunnerSeries>,
    /// Cancels in-flight reconciles (never fired without leader election).
    pub abort: CancellationToken,
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_string())
}

impl<K: Send + Sync + 'static> Worker<K> {
    /// Processes keys until the queue shuts down or `cancel` fires.
    pub async fn run(self, id: usize, cancel: CancellationToken) {
        loop {
            let key = tokio::select! {
                biased;
                _ = cancel.cancelled() => break,
                key = self.queue.get() => match key {
                    Some(k) => k,
                    None => break,
                },
            };
            self.process(id, key).await;
        }
        tracing::debug!(controller = %self.name, worker = id, "worker stopped");
    }

    async fn process(&self, id: usize, key: ObjectKey) {
        let obj = self.cache.get_by_key(key.as_str());
        let start = Instant::now();
        let reconcile = async {
            match std::panic::catch_unwind(AssertUnwindSafe(|| (self.reconcile)(key.clone(), obj))) {
                Err(p) => Outcome::Panic(panic_message(&*p)),
                Ok(fut) => match AssertUnwindSafe(fut).catch_unwind().await {
                    Ok(Ok(action)) => Outcome::Ok(action),
                    Ok(Err(e)) => Outcome::Err(e),
                    Err(p) => Outcome::Panic(panic_message(&*p)),
                },
            }
        };
        let outcome = tokio::select! {
            biased;
            _ = self.abort.cancelled() => None,
            o = reconcile => Some(o),
        };
        let Some(outcome) = outcome else {
            tracing::info!(controller = %self.name, worker = id, %key, "reconcile cancelled: leadership lost; the key is queued again");
            self.queue.add(key.clone());
            self.queue.done(&key);
            return;
        };
        let elapsed = start.elapsed();
        let c = &self.counters;
        match outcome {
            Outcome::Ok(Action::Done) => {
                self.queue.forget(&key);
                c.success.fetch_add(1, Ordering::Relaxed);
                self.count(|m| &m.success);
            }
            Outcome::Ok(Action::RequeueAfter(d)) => {
                self.queue.forget(&key);
                self.queue.add_after(key.clone(), d);
                c.requeue.fetch_add(1, Ordering::Relaxed);
                self.count(|m| &m.requeue);
            }
            Outcome::Err(e) => {
                let retries = self.queue.num_requeues(&key);
                tracing::info!(controller = %self.name, worker = id, %key, retries, error = %e, "reconcile failed; retrying");
                self.retry(&key, retries);
                c.error.fetch_add(1, Ordering::Relaxed);
                self.count(|m| &m.error);
                self.count(|m| &m.errors);
            }
            Outcome::Panic(msg) => {
                tracing::error!(controller = %self.name, worker = id, %key, panic = %msg, "reconcile panicked");
                self.retry(&key, self.queue.num_requeues(&key));
                c.panic.fetch_add(1, Ordering::Relaxed);
                self.count(|m| &m.panic);
                self.count(|m| &m.errors);
            }
        }
        if let Some(m) = &self.metrics {
            m.duration.observe(elapsed.as_secs_f64());
        }
        self.queue.done(&key);
    }

    /// Retries a failed key with backoff, or drops it past `max_retries`.
    fn retry(&self, key: &ObjectKey, retries: u32) {
        if self.max_retries.is_some_and(|max| retries >= max) {
            tracing::error!(controller = %self.name, %key, retries, "dropping the key out of the queue after too many failures");
            self.queue.forget(key);
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        } else {
            self.queue.add_rate_limited(key.clone());
        }
    }

    fn count(&self, f: impl Fn(&RunnerSeries) -> &prometheus_client::metrics::counter::Counter) {
        if let Some(m) = &self.metrics {
            f(m).inc();
        }
    }
}
