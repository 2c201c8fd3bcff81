//! Work-queue metrics (ported scenarios of client-go's
//! `util/workqueue/metrics_test.go`), read back by encoding the registry to
//! text; time is tokio's paused clock.

use std::collections::BTreeMap;
use std::time::Duration;

mod common;

use informer::workqueue::{DelayingQueue, WorkQueue, WorkQueueMetrics};
use prometheus_client::registry::Registry;
use tokio::task::yield_now;
use tokio::time::advance;

const US: Duration = Duration::from_micros(1);

async fn step(d: Duration) {
    advance(d).await;
    for _ in 0..50 {
        yield_now().await;
    }
}

fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text
}

/// Sample lines of the text exposition as `series → value`.
fn samples(registry: &Registry) -> BTreeMap<String, f64> {
    encode(registry)
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap();
            (series.to_string(), value.parse().unwrap())
        })
        .collect()
}

fn sample(registry: &Registry, series: &str) -> f64 {
    *samples(registry).get(series).unwrap_or_else(|| panic!("no sample {series} in\n{}", encode(registry)))
}

fn assert_close(actual: f64, expected: f64) {
    assert!((actual - expected).abs() <= 1e-12 + expected.abs() * 1e-9, "expected {expected}, got {actual}");
}

fn test_queue(registry: &mut Registry) -> (WorkQueue<&'static str>, WorkQueueMetrics) {
    let metrics = WorkQueueMetrics::new(registry);
    let q = WorkQueue::builder().name("test").metrics(&metrics).build();
    (q, metrics)
}

#[tokio::test(start_paused = true)]
async fn metrics_follow_client_go_semantics() {
    let mut registry = Registry::default();
    let (q, metrics) = test_queue(&mut registry);

    q.add("foo");
    assert_eq!(sample(&registry, r#"workqueue_adds_total{name="test"}"#), 1.0);
    assert_eq!(sample(&registry, r#"workqueue_depth{name="test"}"#), 1.0);

    step(50 * US).await;
    let key = q.get().await.unwrap();
    assert_eq!(metrics.depth("test"), Some(0));
    assert_eq!(sample(&registry, r#"workqueue_queue_duration_seconds_count{name="test"}"#), 1.0);
    assert_close(sample(&registry, r#"workqueue_queue_duration_seconds_sum{name="test"}"#), 50e-6);

    // Re-adds while processing count once and show up in depth (not len).
    q.add(key);
    q.add(key);
    assert_eq!(metrics.adds("test"), Some(2));
    assert_eq!(metrics.depth("test"), Some(1));
    assert_eq!(q.len(), 0);

    step(25 * US).await;
    q.done(&key);
    assert_eq!(sample(&registry, r#"workqueue_work_duration_seconds_count{name="test"}"#), 1.0);
    assert_close(sample(&registry, r#"workqueue_work_duration_seconds_sum{name="test"}"#), 25e-6);

    // The requeued key's queue latency counts from its re-add.
    step(10 * US).await;
    let key = q.get().await.unwrap();
    assert_eq!(metrics.depth("test"), Some(0));
    assert_close(sample(&registry, r#"workqueue_queue_duration_seconds_sum{name="test"}"#), 50e-6 + 35e-6);
    q.done(&key);
    assert_eq!(sample(&registry, r#"workqueue_work_duration_seconds_count{name="test"}"#), 2.0);

    // Deduplicated adds of a queued key are not counted.
    q.add("bar");
    q.add("bar");
    assert_eq!(metrics.adds("test"), Some(3));
    assert_eq!(metrics.depth("test"), Some(1));
}

#[tokio::test(start_paused = true)]
async fn unfinished_and_longest_running_tick_every_500ms() {
    let mut registry = Registry::default();
    let (q, metrics) = test_queue(&mut registry);
    q.add("a");
    q.add("b");
    let a = q.get().await.unwrap();
    step(Duration::from_millis(100)).await;
    let b = q.get().await.unwrap();

    // The first tick is 500 ms after build.
    step(Duration::from_millis(399)).await;
    assert_eq!(metrics.unfinished_work_seconds("test"), Some(0.0));
    step(Duration::from_millis(1)).await;
    assert_close(metrics.unfinished_work_seconds("test").unwrap(), 0.5 + 0.4);
    assert_close(metrics.longest_running_processor_seconds("test").unwrap(), 0.5);

    q.done(&a);
    step(Duration::from_millis(500)).await;
    assert_close(metrics.unfinished_work_seconds("test").unwrap(), 0.9);
    assert_close(metrics.longest_running_processor_seconds("test").unwrap(), 0.9);
    assert_close(sample(&registry, r#"workqueue_unfinished_work_seconds{name="test"}"#), 0.9);

    q.done(&b);
    step(Duration::from_millis(500)).await;
    assert_eq!(metrics.unfinished_work_seconds("test"), Some(0.0));
    assert_eq!(metrics.longest_running_processor_seconds("test"), Some(0.0));
}

#[tokio::test(start_paused = true)]
async fn ticker_stops_at_shut_down() {
    let mut registry = Registry::default();
    let (q, metrics) = test_queue(&mut registry);
    q.add("a");
    q.get().await.unwrap();
    step(Duration::from_millis(500)).await;
    assert_close(metrics.unfinished_work_seconds("test").unwrap(), 0.5);
    q.shut_down();
    step(Duration::from_secs(2)).await;
    assert_close(metrics.unfinished_work_seconds("test").unwrap(), 0.5);

    // And its task is gone.
    let rt = tokio::runtime::Handle::current().metrics();
    assert_eq!(rt.num_alive_tasks(), 0);
}

#[tokio::test(start_paused = true)]
async fn retries_count_every_add_after() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::new(&mut registry);
    let q: DelayingQueue<&str> = WorkQueue::builder().name("delayed").metrics(&metrics).build_delaying();
    q.add_after("a", Duration::from_millis(10));
    q.add_after("a", Duration::from_millis(20)); // merged, still a retry
    q.add_after("b", Duration::ZERO);
    assert_eq!(sample(&registry, r#"workqueue_retries_total{name="delayed"}"#), 3.0);
    assert_eq!(metrics.adds("delayed"), Some(1), "only b was added so far");
    step(Duration::from_millis(10)).await;
    assert_eq!(metrics.adds("delayed"), Some(2));
    assert_eq!(metrics.depth("delayed"), Some(2));
    q.shut_down();
    q.add_after("c", Duration::from_millis(1));
    assert_eq!(metrics.retries("delayed"), Some(3), "ignored after shutdown");
}

#[tokio::test(start_paused = true)]
async fn names_buckets_and_labels() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::new(&mut registry);
    let one: WorkQueue<u8> = WorkQueue::builder().name("one").metrics(&metrics).build();
    let two: WorkQueue<u8> = WorkQueue::builder().name("two").metrics(&metrics).build();
    // (Only delaying queues have a retries series, as in client-go.)
    let _three: DelayingQueue<u8> = WorkQueue::builder().name("three").metrics(&metrics).build_delaying();
    one.add(1);
    two.add(1);
    two.add(2);
    let text = encode(&registry);
    for family in [
        "workqueue_depth",
        "workqueue_adds",
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "workqueue_retries",
    ] {
        assert!(text.contains(&format!("# TYPE {family} ")), "{family}:\n{text}");
    }
    assert_eq!(sample(&registry, r#"workqueue_depth{name="one"}"#), 1.0);
    assert_eq!(sample(&registry, r#"workqueue_depth{name="two"}"#), 2.0);

    // 12 exponential buckets 1e-8 … 1e3, plus +Inf.
    let bounds: Vec<f64> = samples(&registry)
        .keys()
        .filter(|s| s.starts_with("workqueue_queue_duration_seconds_bucket{") && s.contains("name=\"one\""))
        .filter_map(|s| {
            let le = s.split("le=\"").nth(1)?.split('"').next()?;
            Some(if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap() })
        })
        .collect();
    let mut bounds = bounds;
    bounds.sort_by(f64::total_cmp);
    assert_eq!(bounds.len(), 13, "{bounds:?}");
    for (i, b) in bounds[..12].iter().enumerate() {
        assert_close(*b, 1e-8 * 10f64.powi(i as i32));
    }
}

#[tokio::test(start_paused = true)]
async fn no_metrics_without_name_or_handle() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::new(&mut registry);
    let unnamed: WorkQueue<u8> = WorkQueue::builder().metrics(&metrics).build();
    unnamed.add(1);
    let plain: WorkQueue<u8> = WorkQueue::builder().name("plain").build();
    plain.add(1);
    assert!(samples(&registry).is_empty(), "{}", encode(&registry));
    assert_eq!(metrics.depth(""), None);
    assert_eq!(metrics.depth("plain"), None);
    // Neither queue spawned a ticker.
    assert_eq!(tokio::runtime::Handle::current().metrics().num_alive_tasks(), 0);
}

#[test]
fn metrics_queue_builds_outside_a_runtime() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::new(&mut registry);
    let q: WorkQueue<u8> = WorkQueue::builder().name("threads").metrics(&metrics).build();
    q.add(1);
    let key = q.get_blocking().unwrap();
    q.done(&key);
    assert_eq!(metrics.adds("threads"), Some(1));
    assert_eq!(metrics.depth("threads"), Some(0));
    q.shut_down();
}

/// Another metrics library plugs in through `MetricsProvider` (client-go's): the queue asks it
/// for its metrics by name once and reports to them as to the Prometheus families.
#[tokio::test(start_paused = true)]
async fn a_metrics_provider_gets_every_report() {
    use common::metrics_provider::RecordingProvider;

    let provider = std::sync::Arc::new(RecordingProvider::default());
    let q: DelayingQueue<String> =
        WorkQueue::builder().name("jobs").metrics_provider(provider.clone()).build_delaying();
    assert_eq!(provider.asked.lock().len(), 7, "asked once for each metric");
    q.add("a".to_string());
    q.add("a".to_string());
    q.add_after("b".to_string(), Duration::from_secs(1));
    let item = q.get().await.unwrap();
    step(Duration::from_secs(2)).await;
    q.done(&item);
    let got = provider.values.lock().clone();
    assert_eq!(got["adds:jobs"], 2.0, "{got:?}");
    assert_eq!(got["depth:jobs"], 1.0, "b is queued");
    assert_eq!((got["latency:jobs"], got["work:jobs"], got["retries:jobs"]), (1.0, 1.0, 1.0));
    assert!(got.contains_key("unfinished:jobs") && got.contains_key("longest:jobs"), "{got:?}");
}
