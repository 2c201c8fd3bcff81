//! Work queues for controllers: the Rust counterpart of client-go's
//! `util/workqueue`.
//!
//! A controller's event handlers do not do work themselves; they put the
//! *key* of the changed object (e.g. `"namespace/name"`) into a work queue,
//! and a few workers take keys out and reconcile them. The queue guarantees:
//!
//! * **deduplication** — a key that is already waiting is not queued twice,
//!   so bursts of events collapse into one reconcile;
//! * **exclusivity** — a key is never handed to two workers at once; if it
//!   is added while being processed, it is handed out again after the worker
//!   calls `done`;
//! * **fairness** — keys are handed out in the order they became dirty, unless
//!   the queue is built with another [`BackingQueue`] (client-go's
//!   `TypedQueueConfig.Queue`: a priority queue, say), which then decides the
//!   order of the ready keys.
//!
//! Three layers, each dereferencing to the previous one:
//!
//! | type | adds | client-go |
//! |---|---|---|
//! | [`WorkQueue`] | `add`, `get`/`get_blocking`/`try_get`, `done`, `len`, `shut_down*` | `workqueue.Typed[T]` |
//! | [`DelayingQueue`] | `add_after(key, delay)` | `TypedDelayingInterface` |
//! | [`RateLimitingQueue`] | `add_rate_limited`, `forget`, `num_requeues` | `TypedRateLimitingInterface` |
//!
//! [`parallelize_until`] is client-go's `ParallelizeUntil`.
//!
//! Rate limiters ([`RateLimiter`] and the implementations in this module)
//! mirror client-go's `default_rate_limiters.go`;
//! [`default_controller_rate_limiter`] is the usual choice. Optional
//! Prometheus metrics with client-go's names live in [`WorkQueueMetrics`].
//!
//! All queue types are cheap handles (an `Arc` inside): clone them into
//! every producer and worker. `get` is async and cancel safe; `get_blocking`
//! serves plain threads. The delaying and rate-limiting queues run one
//! timer: a Tokio task on the runtime current when they are built (or given
//! with [`WorkQueueBuilder::runtime`]), using `tokio::time`, so
//! `tokio::time::pause()` controls them in tests. Built outside a runtime, or
//! once their runtime has shut down, the timer is a std thread instead; a
//! delayed key is never dropped while the queue runs.
//!
//! Differences from client-go, all deliberate:
//!
//! * [`WorkQueue::shut_down_with_drain_all`] additionally waits for keys still
//!   queued, not only those in flight; drains have async and blocking forms.
//!   The async forms shut the queue down at the call and return a future
//!   that only waits.
//! * `done` for a key that is not being processed is ignored (client-go would
//!   queue a dirty key a second time).
//! * `add_after` never blocks (client-go's hand-off channel holds 1000 entries).
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use informer::workqueue::{default_controller_rate_limiter, WorkQueue, WorkQueueMetrics};
//! use prometheus_client::registry::Registry;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let mut registry = Registry::default();
//! let metrics = WorkQueueMetrics::new(&mut registry);
//! let queue = WorkQueue::<String>::builder()
//!     .name("deployments")
//!     .metrics(&metrics)
//!     .build_rate_limiting(default_controller_rate_limiter());
//!
//! queue.add("default/web".to_string());
//! queue.add_after("default/db".to_string(), Duration::from_secs(1));
//!
//! let worker = {
//!     let queue = queue.clone();
//!     tokio::spawn(async move {
//!         while let Some(key) = queue.get().await {
//!             // ... reconcile `key`; on success:
//!             queue.forget(&key);
//!             queue.done(&key);
//!         }
//!     })
//! };
//! tokio::time::sleep(Duration::from_secs(2)).await;
//! queue.shut_down_with_drain().await;
//! worker.await.unwrap();
//! assert_eq!(metrics.adds("deployments"), Some(2));
//! # }
//! ```

mod backing;
mod delaying;
mod limiters;
mod metrics;
mod parallelizer;
mod queue;
mod rate_limiting;

pub use backing::BackingQueue;
pub use delaying::DelayingQueue;
pub use limiters::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter,
    WithMaxWaitRateLimiter, default_controller_rate_limiter, default_item_based_rate_limiter,
};
pub use metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, QueueLabels, SettableGaugeMetric, WorkQueueMetrics,
    set_provider,
};
pub use parallelizer::parallelize_until;
pub use queue::{QueueItem, WorkQueue, WorkQueueBuilder};
pub use rate_limiting::RateLimitingQueue;
