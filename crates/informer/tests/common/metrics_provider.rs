//! A work-queue `MetricsProvider` that records what it is asked for and every report: the
//! metrics asked (`<metric>:<queue>`, in order) and, per metric, the sum of its increments (a
//! histogram's observations counted), or a settable gauge's last value.

use std::collections::BTreeMap;
use std::sync::Arc;

use informer::workqueue::{CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric};
use parking_lot::Mutex;

/// The recording provider (see the module documentation).
#[derive(Default)]
pub struct RecordingProvider {
    /// The metrics asked for, as `<metric>:<queue>`.
    pub asked: Mutex<Vec<String>>,
    /// Each metric's value.
    pub values: Arc<Mutex<BTreeMap<String, f64>>>,
}

struct Metric(Arc<Mutex<BTreeMap<String, f64>>>, String);

impl Metric {
    fn add(&self, v: f64) {
        *self.0.lock().entry(self.1.clone()).or_default() += v;
    }
}

impl GaugeMetric for Metric {
    fn inc(&self) {
        self.add(1.0)
    }
    fn dec(&self) {
        self.add(-1.0)
    }
}
impl CounterMetric for Metric {
    fn inc(&self) {
        self.add(1.0)
    }
}
impl HistogramMetric for Metric {
    fn observe(&self, _: f64) {
        self.add(1.0)
    }
}
impl SettableGaugeMetric for Metric {
    fn set(&self, v: f64) {
        self.0.lock().insert(self.1.clone(), v);
    }
}

impl RecordingProvider {
    fn metric(&self, what: &str, name: &str) -> Box<Metric> {
        let id = format!("{what}:{name}");
        self.asked.lock().push(id.clone());
        Box::new(Metric(self.values.clone(), id))
    }

    /// The value of `<metric>:<queue>`, if it was ever reported.
    pub fn value(&self, id: &str) -> Option<f64> {
        self.values.lock().get(id).copied()
    }
}

impl MetricsProvider for RecordingProvider {
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        self.metric("depth", name)
    }
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        self.metric("adds", name)
    }
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        self.metric("latency", name)
    }
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        self.metric("work", name)
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        self.metric("unfinished", name)
    }
    fn new_longest_running_processor_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        self.metric("longest", name)
    }
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        self.metric("retries", name)
    }
}
