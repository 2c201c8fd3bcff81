//! Prometheus metrics for work queues, with client-go's metric names and semantics.
//!
//! A [`WorkQueueMetrics`] is registered **once** in a
//! [`prometheus_client::registry::Registry`]; it holds one metric family per
//! metric, labelled by the queue `name`. Every queue built with
//! [`metrics`](super::WorkQueueBuilder::metrics) *and* a non-empty
//! [`name`](super::WorkQueueBuilder::name) gets its own label set in those
//! families. Queues built without both record nothing and pay nothing (no
//! clock reads, no atomics, no background task).
//!
//! | metric | type | updated |
//! |---|---|---|
//! | `workqueue_depth` | gauge | +1 on every non-deduplicated add (also when the item is being processed), −1 on get |
//! | `workqueue_adds_total` | counter | every non-deduplicated add |
//! | `workqueue_queue_duration_seconds` | histogram | on get: time since the item was first added (since its last get) |
//! | `workqueue_work_duration_seconds` | histogram | on done: time since the matching get |
//! | `workqueue_unfinished_work_seconds` | gauge | every 500 ms: sum of the ages of all in-flight items |
//! | `workqueue_longest_running_processor_seconds` | gauge | every 500 ms: age of the oldest in-flight item |
//! | `workqueue_retries_total` | counter | every `add_after`/`add_rate_limited` accepted while not shutting down |
//!
//! Histograms use client-go's buckets: exponential from 10 ns, factor 10, 12
//! buckets (1e-8 s … 1e3 s).
//!
//! Other metrics libraries plug in through [`MetricsProvider`] (client-go's
//! `workqueue.MetricsProvider`): a queue asks it for its seven metrics by name
//! once, when it is built; [`WorkQueueMetrics`] is the provider for
//! `prometheus-client`.
//!
//! Invariants: the two "unfinished" gauges are only written by the queue's
//! periodic tick, which runs only while metrics are enabled and stops when the
//! queue shuts down (their last value then stays, as in client-go).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

/// Label set of every work-queue metric: the queue's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    /// The queue name given to [`WorkQueueBuilder::name`](super::WorkQueueBuilder::name).
    pub name: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;
type HistogramFamily = Family<QueueLabels, Histogram, fn() -> Histogram>;

fn new_duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 12))
}

/// The work-queue metric families, registered once in a registry and shared by
/// every queue that should report to it.
///
/// Cloning is cheap (the families are reference counted), and clones report to
/// the same registry.
///
/// # Examples
///
/// ```
/// use informer::workqueue::{WorkQueue, WorkQueueMetrics};
/// use prometheus_client::registry::Registry;
///
/// let mut registry = Registry::default();
/// let metrics = WorkQueueMetrics::new(&mut registry);
///
/// let queue: WorkQueue<String> = WorkQueue::builder()
///     .name("pods")
///     .metrics(&metrics)
///     .build();
/// queue.add("default/nginx".to_string());
/// assert_eq!(metrics.depth("pods"), Some(1));
/// assert_eq!(metrics.adds("pods"), Some(1));
///
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
/// assert!(text.contains(r#"workqueue_depth{name="pods"} 1"#));
/// ```
///
/// A queue with metrics refreshes the two "unfinished work" gauges every
/// 500 ms from a background ticker: a Tokio task when the queue is built inside
/// a runtime (so it follows a paused test clock), otherwise a small named std
/// thread. The ticker holds only a weak reference and stops when the queue
/// shuts down or is dropped.
#[derive(Clone, Debug)]
pub struct WorkQueueMetrics {
    depth: Family<QueueLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    queue_duration: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished_work: Family<QueueLabels, FloatGauge>,
    longest_running: Family<QueueLabels, FloatGauge>,
    retries: Family<QueueLabels, Counter>,
}

impl WorkQueueMetrics {
    /// Creates the seven work-queue metric families and registers them in
    /// `registry` under client-go's names (`workqueue_depth`, …).
    ///
    /// Call this once per registry: registering twice would emit every metric
    /// twice. Share the returned handle (it is `Clone`) between queues.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = Self {
            depth: Family::default(),
            adds: Family::default(),
            queue_duration: Family::new_with_constructor(new_duration_histogram),
            work_duration: Family::new_with_constructor(new_duration_histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
            retries: Family::default(),
        };
        registry.register("workqueue_depth", "Current depth of workqueue", metrics.depth.clone());
        registry.register("workqueue_adds", "Total number of adds handled by workqueue", metrics.adds.clone());
        registry.register_with_unit(
            "workqueue_queue_duration",
            "How long in seconds an item stays in workqueue before being requested",
            Unit::Seconds,
            metrics.queue_duration.clone(),
        );
        registry.register_with_unit(
            "workqueue_work_duration",
            "How long in seconds processing an item from workqueue takes",
            Unit::Seconds,
            metrics.work_duration.clone(),
        );
        registry.register_with_unit(
            "workqueue_unfinished_work",
            "How many seconds of work has been done that is in progress and hasn't been \
             observed by work_duration. Large values indicate stuck threads.",
            Unit::Seconds,
            metrics.unfinished_work.clone(),
        );
        registry.register_with_unit(
            "workqueue_longest_running_processor",
            "How many seconds has the longest running processor for workqueue been running",
            Unit::Seconds,
            metrics.longest_running.clone(),
        );
        registry.register("workqueue_retries", "Total number of retries handled by workqueue", metrics.retries.clone());
        metrics
    }

    fn labels(name: &str) -> QueueLabels {
        QueueLabels { name: name.to_owned() }
    }

    /// Current `workqueue_depth` of queue `name`, or `None` if no queue with
    /// that name ever reported here.
    pub fn depth(&self, name: &str) -> Option<i64> {
        self.depth.get(&Self::labels(name)).map(|g| g.get())
    }

    /// Current `workqueue_adds_total` of queue `name`.
    pub fn adds(&self, name: &str) -> Option<u64> {
        self.adds.get(&Self::labels(name)).map(|c| c.get())
    }

    /// Current `workqueue_retries_total` of queue `name`.
    pub fn retries(&self, name: &str) -> Option<u64> {
        self.retries.get(&Self::labels(name)).map(|c| c.get())
    }

    /// Current `workqueue_unfinished_work_seconds` of queue `name`.
    pub fn unfinished_work_seconds(&self, name: &str) -> Option<f64> {
        self.unfinished_work.get(&Self::labels(name)).map(|g| g.get())
    }

    /// Current `workqueue_longest_running_processor_seconds` of queue `name`.
    pub fn longest_running_processor_seconds(&self, name: &str) -> Option<f64> {
        self.longest_running.get(&Self::labels(name)).map(|g| g.get())
    }
}

/// A gauge a queue moves up and down (`workqueue_depth`).
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Takes one away.
    fn dec(&self);
}

/// A gauge a queue sets (the two "unfinished work" gauges, in seconds).
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the value.
    fn set(&self, value: f64);
}

/// A counter (`workqueue_adds_total`, `workqueue_retries_total`).
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A histogram of durations in seconds.
pub trait HistogramMetric: Send + Sync {
    /// Records one value.
    fn observe(&self, value: f64);
}

/// Gives a queue its metrics, by the queue's name (client-go's
/// `workqueue.MetricsProvider`): implement it to report to another metrics
/// library, and give it to one queue
/// ([`WorkQueueBuilder::metrics_provider`](super::WorkQueueBuilder::metrics_provider),
/// client-go's `MetricsProvider` of a queue's config) or to every named queue
/// built afterwards ([`set_provider`], client-go's `SetProvider`). Each method
/// is called once per queue, when the queue is built (`new_retries_metric` only
/// for delaying and rate-limiting queues).
///
/// The metrics are updated under the queue's lock, as client-go's are: they
/// must not block, panic or call the queue.
pub trait MetricsProvider: Send + Sync {
    /// `workqueue_depth`.
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric>;
    /// `workqueue_adds_total`.
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric>;
    /// `workqueue_queue_duration_seconds`.
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// `workqueue_work_duration_seconds`.
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// `workqueue_unfinished_work_seconds`.
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric>;
    /// `workqueue_longest_running_processor_seconds`.
    fn new_longest_running_processor_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric>;
    /// `workqueue_retries_total`.
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric>;
}

impl GaugeMetric for Gauge {
    fn inc(&self) {
        Gauge::inc(self);
    }
    fn dec(&self) {
        Gauge::dec(self);
    }
}

impl SettableGaugeMetric for FloatGauge {
    fn set(&self, value: f64) {
        FloatGauge::set(self, value);
    }
}

impl CounterMetric for Counter {
    fn inc(&self) {
        Counter::inc(self);
    }
}

impl HistogramMetric for Histogram {
    fn observe(&self, value: f64) {
        Histogram::observe(self, value);
    }
}

impl MetricsProvider for WorkQueueMetrics {
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        Box::new(self.depth.get_or_create_owned(&Self::labels(name)))
    }
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(self.adds.get_or_create_owned(&Self::labels(name)))
    }
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(self.queue_duration.get_or_create_owned(&Self::labels(name)))
    }
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(self.work_duration.get_or_create_owned(&Self::labels(name)))
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(self.unfinished_work.get_or_create_owned(&Self::labels(name)))
    }
    fn new_longest_running_processor_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(self.longest_running.get_or_create_owned(&Self::labels(name)))
    }
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(self.retries.get_or_create_owned(&Self::labels(name)))
    }
}

/// The provider every named queue built without one of its own reports to.
static GLOBAL: std::sync::OnceLock<std::sync::Arc<dyn MetricsProvider>> = std::sync::OnceLock::new();

/// Sets the provider of every named queue built from now on without one of its
/// own (client-go's `SetProvider`): only the first call counts; whether it did.
pub fn set_provider(provider: std::sync::Arc<dyn MetricsProvider>) -> bool {
    GLOBAL.set(provider).is_ok()
}

/// The provider set with [`set_provider`], if any.
pub(crate) fn global_provider() -> Option<std::sync::Arc<dyn MetricsProvider>> {
    GLOBAL.get().cloned()
}

/// The metrics of one queue, resolved once at build time so the hot path never
/// looks anything up.
pub(crate) struct QueueMetrics {
    pub(crate) depth: Box<dyn GaugeMetric>,
    pub(crate) adds: Box<dyn CounterMetric>,
    pub(crate) queue_duration: Box<dyn HistogramMetric>,
    pub(crate) work_duration: Box<dyn HistogramMetric>,
    pub(crate) unfinished_work: Box<dyn SettableGaugeMetric>,
    pub(crate) longest_running: Box<dyn SettableGaugeMetric>,
    /// Delaying and rate-limiting queues only.
    pub(crate) retries: Option<Box<dyn CounterMetric>>,
}

impl QueueMetrics {
    /// The metrics `provider` gives the queue `name` (a delaying one when `delaying`).
    pub(crate) fn new(provider: &dyn MetricsProvider, name: &str, delaying: bool) -> Self {
        QueueMetrics {
            depth: provider.new_depth_metric(name),
            adds: provider.new_adds_metric(name),
            queue_duration: provider.new_latency_metric(name),
            work_duration: provider.new_work_duration_metric(name),
            unfinished_work: provider.new_unfinished_work_seconds_metric(name),
            longest_running: provider.new_longest_running_processor_seconds_metric(name),
            retries: delaying.then(|| provider.new_retries_metric(name)),
        }
    }
}
