//! `BacklogPolicy::Block`: a handler over its limit holds the informer (bounded memory, every
//! notification delivered in order), where the default unbounded policy lets its backlog grow.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use informer::fake::FakeSource;
use informer::{BacklogPolicy, HandlerFns, HandlerOptions, HandlerRegistration, InformerOptions, SharedIndexInformer};
use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn cm(i: usize) -> serde_json::Value {
    json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":format!("cm-{i:05}"),"namespace":"ns"}})
}

/// Runs an informer whose only handler takes 100 µs per call, feeds it `n` adds after sync, and
/// returns (largest backlog the handler saw, names in delivery order).
async fn run(policy: BacklogPolicy, n: usize) -> (usize, Vec<String>) {
    let src = FakeSource::new();
    let informer = SharedIndexInformer::<ConfigMap>::with_options(src.clone(), InformerOptions::default().name("bp"));
    let reg: Arc<OnceLock<HandlerRegistration<ConfigMap>>> = Arc::default();
    let seen: Arc<Mutex<(usize, Vec<String>)>> = Arc::default();
    let done = Arc::new(tokio::sync::Notify::new());
    let handler = {
        let (reg, seen, done) = (reg.clone(), seen.clone(), done.clone());
        HandlerFns::<ConfigMap>::new().on_add(move |o, _| {
            std::thread::sleep(Duration::from_micros(100)); // a handler slower than the stream
            let backlog = reg.get().map(|r| r.backlog().len).unwrap_or(0);
            let mut s = seen.lock();
            s.0 = s.0.max(backlog);
            s.1.push(o.name().to_string());
            if s.1.len() == n {
                done.notify_one();
            }
        })
    };
    let r = informer
        .add_event_handler_with_options(handler, HandlerOptions::new().dedicated_thread().backlog(policy))
        .unwrap();
    let synced = r.synced();
    let _ = reg.set(r);
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    tokio::time::timeout(Duration::from_secs(10), synced.wait()).await.expect("synced");
    let wait = done.notified();
    for i in 0..n {
        src.add(cm(i));
    }
    tokio::time::timeout(Duration::from_secs(60), wait).await.expect("every notification delivered");
    cancel.cancel();
    task.await.unwrap();
    let s = seen.lock();
    (s.0, s.1.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_bounds_the_backlog_and_delivers_everything_in_order() {
    let n = 3000;
    let (max_backlog, names) = run(BacklogPolicy::Block(20), n).await;
    let want: Vec<String> = (0..n).map(|i| format!("cm-{i:05}")).collect();
    assert_eq!(names, want, "every add delivered, in order");
    // The bound is checked between batches (64 deltas by default).
    assert!(max_backlog <= 20 + 64, "backlog reached {max_backlog}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbounded_lets_a_slow_handler_fall_behind() {
    let n = 3000;
    let (max_backlog, names) = run(BacklogPolicy::Unbounded, n).await;
    assert_eq!(names.len(), n);
    assert!(max_backlog > 20 + 64, "a 100 µs handler falls behind the stream: backlog {max_backlog}");
}
