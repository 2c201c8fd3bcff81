//! The process-wide work-queue metrics provider (client-go's `workqueue.SetProvider`), in a test
//! binary of its own since it is global: the first provider set is given to every named queue
//! built afterwards without one of its own; unnamed queues report nothing; plain queues are not
//! given a retries metric.

use std::collections::BTreeMap;
use std::sync::Arc;

use informer::workqueue::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric, WorkQueue, set_provider,
};
use parking_lot::Mutex;

/// The metrics asked for ("<metric>:<queue>") and their counts.
#[derive(Default)]
struct Provider(Mutex<Vec<String>>, Arc<Mutex<BTreeMap<String, i64>>>);

struct Metric(Arc<Mutex<BTreeMap<String, i64>>>, String);

impl GaugeMetric for Metric {
    fn inc(&self) {
        *self.0.lock().entry(self.1.clone()).or_default() += 1;
    }
    fn dec(&self) {
        *self.0.lock().entry(self.1.clone()).or_default() -= 1;
    }
}
impl CounterMetric for Metric {
    fn inc(&self) {
        *self.0.lock().entry(self.1.clone()).or_default() += 1;
    }
}
impl HistogramMetric for Metric {
    fn observe(&self, _: f64) {}
}
impl SettableGaugeMetric for Metric {
    fn set(&self, _: f64) {}
}

impl Provider {
    fn metric(&self, what: &str, name: &str) -> Box<Metric> {
        let id = format!("{what}:{name}");
        self.0.lock().push(id.clone());
        Box::new(Metric(self.1.clone(), id))
    }
}

impl MetricsProvider for Provider {
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

#[tokio::test(start_paused = true)]
async fn the_first_provider_set_serves_every_named_queue() {
    let first = Arc::new(Provider::default());
    assert!(set_provider(first.clone()));
    assert!(!set_provider(Arc::new(Provider::default())), "only the first call counts");
    let plain: WorkQueue<u8> = WorkQueue::builder().name("plain").build();
    let _delayed = WorkQueue::<u8>::builder().name("delayed").build_delaying();
    let _unnamed: WorkQueue<u8> = WorkQueue::builder().build();
    plain.add(1);
    let asked = first.0.lock().clone();
    let of = |queue: &str| asked.iter().filter(|m| m.ends_with(&format!(":{queue}"))).count();
    assert_eq!((of("plain"), of("delayed"), of("")), (6, 7, 0), "{asked:?}");
    assert!(!asked.contains(&"retries:plain".to_string()));
    assert_eq!(first.1.lock().get("adds:plain"), Some(&1));
}
