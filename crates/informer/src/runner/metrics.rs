//! Prometheus metrics of controller runners.
//!
//! A [`RunnerMetrics`] is registered **once** per registry and shared by every runner reporting
//! to it; each runner's series carry its name in the `controller` label.
//!
//! | metric | type | labels | updated |
//! |---|---|---|---|
//! | `reconcile_total` | counter | `controller`, `result` (`success`, `requeue`, `error`, `panic`) | after every reconcile |
//! | `reconcile_errors_total` | counter | `controller` | after every failed or panicking reconcile |
//! | `reconcile_duration_seconds` | histogram | `controller` | after every reconcile |
//!
//! It also registers the work-queue families ([`WorkQueueMetrics`], label `name` = the runner's
//! name), which the runner's queue reports to.
//!
//! Invariant: `reconcile_errors_total` equals the sum of the `error` and `panic` results.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::workqueue::WorkQueueMetrics;

/// Labels of `reconcile_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    /// The runner's name.
    pub controller: String,
    /// `success`, `requeue`, `error` or `panic`.
    pub result: String,
}

/// Labels of the per-controller series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The runner's name.
    pub controller: String,
}

type HistogramFamily = Family<ControllerLabels, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    // 1 ms … ~65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The runner metric families (see the module docs). Cheap to clone; clones share the series.
///
/// ```
/// use informer::runner::RunnerMetrics;
/// use prometheus_client::registry::Registry;
/// let mut registry = Registry::default();
/// let metrics = RunnerMetrics::new(&mut registry);
/// assert_eq!(metrics.reconciles("pods", "success"), 0);
/// ```
#[derive(Clone, Debug)]
pub struct RunnerMetrics {
    reconciles: Family<ReconcileLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    duration: HistogramFamily,
    workqueue: WorkQueueMetrics,
}

impl RunnerMetrics {
    /// Creates the families and registers them (and the work-queue families) in `registry`.
    /// Call it once per registry.
    pub fn new(registry: &mut Registry) -> Self {
        let m = RunnerMetrics {
            reconciles: Family::default(),
            errors: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            workqueue: WorkQueueMetrics::new(registry),
        };
        registry.register("reconcile", "Reconciles by result", m.reconciles.clone());
        registry.register("reconcile_errors", "Failed or panicking reconciles", m.errors.clone());
        registry.register_with_unit(
            "reconcile_duration",
            "How long a reconcile took",
            Unit::Seconds,
            m.duration.clone(),
        );
        m
    }

    /// The work-queue families registered with these metrics.
    pub fn workqueue(&self) -> &WorkQueueMetrics {
        &self.workqueue
    }

    /// `reconcile_total{controller, result}` (0 when absent).
    pub fn reconciles(&self, controller: &str, result: &str) -> u64 {
        let labels = ReconcileLabels { controller: controller.to_string(), result: result.to_string() };
        self.reconciles.get(&labels).map(|c| c.get()).unwrap_or(0)
    }

    /// `reconcile_errors_total{controller}` (0 when absent).
    pub fn errors(&self, controller: &str) -> u64 {
        self.errors.get(&ControllerLabels { controller: controller.to_string() }).map(|c| c.get()).unwrap_or(0)
    }

    pub(crate) fn series(&self, controller: &str) -> RunnerSeries {
        let c = || ControllerLabels { controller: controller.to_string() };
        let r = |result: &str| {
            self.reconciles
                .get_or_create(&ReconcileLabels { controller: controller.to_string(), result: result.into() })
                .clone()
        };
        RunnerSeries {
            success: r("success"),
            requeue: r("requeue"),
            error: r("error"),
            panic: r("panic"),
            errors: self.errors.get_or_create(&c()).clone(),
            duration: self.duration.get_or_create(&c()).clone(),
        }
    }
}

/// One runner's series, resolved once.
#[derive(Clone, Debug)]
pub(crate) struct RunnerSeries {
    pub success: Counter,
    pub requeue: Counter,
    pub error: Counter,
    pub panic: Counter,
    pub errors: Counter,
    pub duration: Histogram,
}
