//! ControllerRunner behaviour against the in-memory fake source: how each reconcile outcome
//! settles its key, deletions (including ones that happened while the controller was down),
//! per-key exclusivity across workers, draining on shutdown, panics, metrics and secondary
//! informers. Waits use channels and the paused clock, never sleeps standing in for a condition.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

use informer::fake::FakeSource;
use informer::runner::{Action, ControllerRunner, RunnerError, RunnerMetrics};
use informer::workqueue::{ItemExponentialFailureRateLimiter, RateLimiter};
use informer::{Object, ObjectKey, SharedIndexInformer};
use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

type Cm = ConfigMap;
const LIMIT: Duration = Duration::from_secs(30);

fn cm(name: &str, v: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns", "labels": {"v": v}}})
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("ns"), name).unwrap()
}

fn informer(src: &FakeSource) -> SharedIndexInformer<Cm> {
    SharedIndexInformer::new(src.clone(), Duration::ZERO)
}

struct Running {
    cancel: CancellationToken,
    informer: JoinHandle<()>,
    runner: JoinHandle<Result<(), RunnerError>>,
}

impl Running {
    fn start<K: Send + Sync + 'static>(informers: Vec<SharedIndexInformer<K>>, runner: &ControllerRunner<Cm>) -> Self {
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        let informer = tokio::spawn(async move {
            futures_util::future::join_all(informers.iter().map(|i| i.run(c.clone()))).await;
        });
        let (r, c) = (runner.clone(), cancel.clone());
        let runner = tokio::spawn(async move { r.run(c).await });
        Running { cancel, informer, runner }
    }

    async fn stop(self) {
        self.cancel.cancel();
        self.runner.await.unwrap().unwrap();
        self.informer.await.unwrap();
    }
}

/// A reconcile that reports every key it is given and succeeds.
fn reporting(
    tx: mpsc::UnboundedSender<String>,
) -> impl Fn(ObjectKey, Option<Object<Cm>>) -> std::future::Ready<Result<Action, String>> + Send + Sync + 'static {
    move |key, _| {
        let _ = tx.send(key.to_string());
        std::future::ready(Ok(Action::Done))
    }
}

/// Waits until `seen` holds and the runner has nothing left to do: no notification waiting in
/// its handlers, no key queued, waiting for a retry or being reconciled. (Each look is a
/// millisecond of paused time apart, so the time limit runs.)
async fn until_handled(runner: &ControllerRunner<Cm>, seen: impl Fn() -> bool) {
    let handled = async {
        loop {
            let s = runner.stats();
            if seen() && s.handler_backlog == 0 && s.queued == 0 && s.in_flight == 0 && s.delayed == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(LIMIT, handled).await.expect("handled");
}

async fn recv<T>(rx: &mut mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(LIMIT, rx.recv()).await.expect("timed out waiting for a reconcile").expect("channel closed")
}

#[tokio::test(start_paused = true)]
async fn success_forgets_the_key() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src);
    let limiter = Arc::new(ItemExponentialFailureRateLimiter::<ObjectKey>::new(
        Duration::from_millis(5),
        Duration::from_secs(10),
    ));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let calls = Arc::new(AtomicU32::new(0));
    let c = calls.clone();
    let runner = ControllerRunner::builder("t")
        .informer(&inf)
        .rate_limiter(limiter.clone())
        .build(move |key, obj: Option<Object<Cm>>| {
            let n = c.fetch_add(1, Ordering::SeqCst);
            let tx = tx.clone();
            async move {
                let _ = tx.send((key.to_string(), obj.map(|o| o.label("v").unwrap().to_string())));
                if n == 0 { Err("first try fails") } else { Ok(Action::Done) }
            }
        })
        .unwrap();
    let run = Running::start(vec![inf], &runner);
    assert_eq!(recv(&mut rx).await, ("ns/a".to_string(), Some("1".to_string())));
    assert_eq!(recv(&mut rx).await.0, "ns/a");
    run.stop().await;
    assert_eq!(limiter.num_requeues(&key("a")), 0, "success forgets the retry history");
    let s = runner.stats();
    assert_eq!((s.success, s.error, s.panic, s.in_flight), (1, 1, 0, 0));
}

#[tokio::test(start_paused = true)]
async fn errors_are_retried_with_exponential_backoff() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src);
    let limiter = Arc::new(ItemExponentialFailureRateLimiter::<ObjectKey>::new(
        Duration::from_millis(100),
        Duration::from_secs(10),
    ));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let l2 = limiter.clone();
    let runner = ControllerRunner::builder("t")
        .informer(&inf)
        .rate_limiter(limiter.clone())
        .build(move |key, _obj: Option<Object<Cm>>| {
            let requeues = l2.num_requeues(&key);
            let tx = tx.clone();
            async move {
                let _ = tx.send((Instant::now(), requeues));
                if requeues < 4 { Err(format!("attempt {requeues}")) } else { Ok(Action::Done) }
            }
        })
        .unwrap();
    let run = Running::start(vec![inf], &runner);
    let mut calls = Vec::new();
    for _ in 0..5 {
        calls.push(recv(&mut rx).await);
    }
    let requeues: Vec<u32> = calls.iter().map(|c| c.1).collect();
    assert_eq!(requeues, [0, 1, 2, 3, 4]);
    let gaps: Vec<Duration> = calls.windows(2).map(|w| w[1].0 - w[0].0).collect();
    for (gap, want) in gaps.iter().zip([100u64, 200, 400, 800]) {
        let want = Duration::from_millis(want);
        assert!(*gap >= want && *gap < want + Duration::from_millis(5), "gap {gap:?}, want {want:?}");
    }
    run.stop().await;
    assert_eq!(limiter.num_requeues(&key("a")), 0);
    assert_eq!(runner.stats().error, 4);
}

#[tokio::test(start_paused = true)]
async fn requeue_after_reprocesses_after_the_delay() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = ControllerRunner::builder("t")
        .informer(&inf)
        .build(move |_key, _obj: Option<Object<Cm>>| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(Instant::now());
                Ok::<_, String>(Action::RequeueAfter(Duration::from_secs(10)))
            }
        })
        .unwrap();
    let run = Running::start(vec![inf], &runner);
    let t0 = recv(&mut rx).await;
    let t1 = recv(&mut rx).await;
    let t2 = recv(&mut rx).await;
    for gap in [t1 - t0, t2 - t1] {
        assert!(gap >= Duration::from_secs(10) && gap < Duration::from_millis(10_005), "gap {gap:?}");
    }
    run.stop().await;
    let s = runner.stats();
    assert!(s.requeue >= 3 && s.error == 0, "{s:?}");
}

#[tokio::test(start_paused = true)]
async fn deleted_objects_are_reconciled_with_none() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src);
    // Known from a previous run but deleted while the controller was down: the initial list
    // turns it into a tombstone, which must still reach the reconcile.
    inf.indexer().add(Object::from_json(serde_json::to_vec(&cm("gone", "0")).unwrap()).unwrap()).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = ControllerRunner::builder("t")
        .informer(&inf)
        .build(move |key, obj: Option<Object<Cm>>| {
            let tx = tx.clone();
            async move {
                let _ = tx.send((key.to_string(), obj.is_some()));
                Ok::<_, String>(Action::Done)
            }
        })
        .unwrap();
    let run = Running::start(vec![inf], &runner);
    let mut first: Vec<_> = vec![recv(&mut rx).await, recv(&mut rx).await];
    first.sort();
    assert_eq!(first, [("ns/a".to_string(), true), ("ns/gone".to_string(), false)]);
    src.delete(cm("a", "1"));
    assert_eq!(recv(&mut rx).await, ("ns/a".to_string(), false));
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn never_two_concurrent_reconciles_of_one_key() {
    const KEYS: usize = 6;
    const CHANGES: usize = 300;
    let src = FakeSource::new();
    for k in 0..KEYS {
        src.add(cm(&format!("k{k}"), "0"));
    }
    let inf = informer(&src);
    let busy: Arc<HashMap<String, AtomicBool>> =
        Arc::new((0..KEYS).map(|k| (format!("ns/k{k}"), AtomicBool::new(false))).collect());
    let overlaps = Arc::new(AtomicUsize::new(0));
    let running = Arc::new(AtomicUsize::new(0));
    let max_running = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = {
        let (busy, overlaps, running, max_running) =
            (busy.clone(), overlaps.clone(), running.clone(), max_running.clone());
        ControllerRunner::builder("t")
            .informer(&inf)
            .workers(4)
            .build(move |key, obj: Option<Object<Cm>>| {
                let (busy, overlaps, running, max_running, tx) =
                    (busy.clone(), overlaps.clone(), running.clone(), max_running.clone(), tx.clone());
                async move {
                    let flag = &busy[key.as_str()];
                    if flag.swap(true, Ordering::SeqCst) {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    max_running.fetch_max(now, Ordering::SeqCst);
                    for _ in 0..20 {
                        tokio::task::yield_now().await;
                    }
                    running.fetch_sub(1, Ordering::SeqCst);
                    flag.store(false, Ordering::SeqCst);
                    if obj.as_ref().and_then(|o| o.label("v")) == Some("final") {
                        let _ = tx.send(key.to_string());
                    }
                    Ok::<_, String>(Action::Done)
                }
            })
            .unwrap()
    };
    let run = Running::start(vec![inf], &runner);
    for i in 0..CHANGES {
        src.modify(cm(&format!("k{}", i % KEYS), &i.to_string()));
        if i % 10 == 0 {
            tokio::task::yield_now().await;
        }
    }
    for k in 0..KEYS {
        src.modify(cm(&format!("k{k}"), "final"));
    }
    let mut finals = std::collections::BTreeSet::new();
    while finals.len() < KEYS {
        finals.insert(recv(&mut rx).await);
    }
    run.stop().await;
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "a key was reconciled by two workers at once");
    assert!(runner.stats().success >= KEYS as u64);
    assert!(max_running.load(Ordering::SeqCst) <= 4);
}

#[tokio::test(start_paused = true)]
async fn workers_reconcile_different_keys_in_parallel() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    src.add(cm("b", "1"));
    let inf = informer(&src);
    // Each first reconcile waits for the other: only two workers running at once get past it.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = ControllerRunner::builder("t")
        .informer(&inf)
        .workers(2)
        .build(move |key, _obj: Option<Object<Cm>>| {
            let (barrier, tx) = (barrier.clone(), tx.clone());
            async move {
                tokio::time::timeout(LIMIT, barrier.wait()).await.map_err(|_| "no parallel worker")?;
                let _ = tx.send(key.to_string());
                Ok::<_, &str>(Action::Done)
            }
        })
        .unwrap();
    let run = Running::start(vec![inf], &runner);
    let mut done = vec![recv(&mut rx).await, recv(&mut rx).await];
    done.sort();
    assert_eq!(done, ["ns/a", "ns/b"]);
    run.stop().await;
    assert_eq!(runner.stats().error, 0);
}

#[tokio::test(start_paused = true)]
async fn shutdown_drains_in_flight_reconciles() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src);
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let finished = Arc::new(AtomicBool::new(false));
    let runner = {
        let (gate, finished) = (gate.clone(), finished.clone());
        ControllerRunner::builder("t")
            .informer(&inf)
            .build(move |_key, _obj: Option<Object<Cm>>| {
                let (gate, finished, started_tx) = (gate.clone(), finished.clone(), started_tx.clone());
                async move {
                    let _ = started_tx.send(());
                    let _permit = gate.acquire().await.unwrap();
                    finished.store(true, Ordering::SeqCst);
                    Ok::<_, String>(Action::Done)
                }
            })
            .unwrap()
    };
    let run = Running::start(vec![inf], &runner);
    recv(&mut started).await;
    // A change arriving now is queued behind the in-flight key and must not be started.
    src.modify(cm("a", "2"));
    run.cancel.cancel();
    // Let the paused clock run far: the runner must still be waiting for the reconcile.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!run.runner.is_finished(), "run returned while a reconcile was in flight");
    assert_eq!(runner.stats().in_flight, 1);
    gate.add_permits(1);
    run.runner.await.unwrap().unwrap();
    run.informer.await.unwrap();
    assert!(finished.load(Ordering::SeqCst));
    let s = runner.stats();
    assert_eq!((s.success, s.in_flight), (1, 0), "no new reconcile after cancellation");
    assert!(started.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn a_panicking_reconcile_does_not_kill_the_worker() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    src.add(cm("b", "1"));
    let inf = informer(&src);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let panicked = Arc::new(AtomicBool::new(false));
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = RunnerMetrics::new(&mut registry);
    let runner = {
        let panicked = panicked.clone();
        ControllerRunner::builder("panicky")
            .informer(&inf)
            .workers(1)
            .metrics(&metrics)
            .build(move |key, _obj: Option<Object<Cm>>| {
                let (tx, panicked) = (tx.clone(), panicked.clone());
                async move {
                    if key.name() == "a" && !panicked.swap(true, Ordering::SeqCst) {
                        panic!("reconcile of {key} exploded");
                    }
                    let _ = tx.send(key.to_string());
                    Ok::<_, String>(Action::Done)
                }
            })
            .unwrap()
    };
    let run = Running::start(vec![inf], &runner);
    let mut done = vec![recv(&mut rx).await, recv(&mut rx).await];
    done.sort();
    assert_eq!(done, ["ns/a", "ns/b"]);
    run.stop().await;
    let s = runner.stats();
    assert_eq!((s.panic, s.success), (1, 2));
    assert_eq!(metrics.reconciles("panicky", "panic"), 1);
    assert_eq!(metrics.reconciles("panicky", "success"), 2);
    assert_eq!(metrics.errors("panicky"), 1);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains(r#"reconcile_total{controller="panicky",result="success"} 2"#), "{text}");
    assert!(text.contains(r#"reconcile_duration_seconds_count{controller="panicky"} 3"#), "{text}");
    assert!(text.contains(r#"workqueue_adds_total{name="panicky"}"#), "{text}");
}

#[tokio::test(start_paused = true)]
async fn secondary_informers_queue_mapped_keys_and_gate_the_start() {
    let primary_src = FakeSource::new();
    primary_src.add(cm("owner", "1"));
    let child_src = FakeSource::new();
    child_src.add(json!({"metadata": {"name": "child", "namespace": "ns", "labels": {"owner": "owner"}}}));
    let primary = informer(&primary_src);
    let children = informer(&child_src);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = {
        let (seen, children_cache) = (seen.clone(), children.indexer().clone());
        ControllerRunner::builder("t")
            .informer(&primary)
            .watches(&children, |child: &Object<Cm>| {
                child.label("owner").and_then(|o| ObjectKey::new(child.namespace(), o).ok()).into_iter().collect()
            })
            .build(move |key, _obj: Option<Object<Cm>>| {
                // Both caches are synced before the first reconcile.
                seen.lock().push(children_cache.len());
                let tx = tx.clone();
                async move {
                    let _ = tx.send(key.to_string());
                    Ok::<_, String>(Action::Done)
                }
            })
            .unwrap()
    };
    let run = Running::start(vec![primary, children], &runner);
    assert_eq!(recv(&mut rx).await, "ns/owner");
    child_src.modify(json!({"metadata": {"name": "child", "namespace": "ns", "labels": {"owner": "owner", "x": "1"}}}));
    assert_eq!(recv(&mut rx).await, "ns/owner");
    run.stop().await;
    assert_eq!(seen.lock()[0], 1);
    assert!(runner.has_synced());
}

#[tokio::test(start_paused = true)]
async fn owned_objects_queue_their_controller() {
    let primary_src = FakeSource::new();
    primary_src.add(cm("owner", "1"));
    let child_src = FakeSource::new();
    let child = |v: &str, refs: serde_json::Value| json!({"metadata": {"name": "child", "namespace": "ns", "labels": {"v": v}, "ownerReferences": refs}});
    let controller = json!([
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "bystander", "uid": "1"},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "2", "controller": true},
    ]);
    child_src.add(child("1", controller.clone()));
    let (primary, children) = (informer(&primary_src), informer(&child_src));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = ControllerRunner::builder("t").informer(&primary).owns(&children).build(reporting(tx)).unwrap();
    let cache = children.indexer().clone();
    let run = Running::start(vec![primary, children], &runner);
    let child_at = |v: &'static str| {
        let cache = cache.clone();
        move || cache.get_by_key("ns/child").is_some_and(|c| c.label("v") == Some(v))
    };
    // The primary's own key and its child's controller: one key, reconciled once or twice.
    until_handled(&runner, child_at("1")).await;
    assert_eq!(recv(&mut rx).await, "ns/owner");
    while let Ok(k) = rx.try_recv() {
        assert_eq!(k, "ns/owner");
    }
    child_src.modify(child("2", controller));
    assert_eq!(recv(&mut rx).await, "ns/owner");
    // A child leaving its controller tells it; changes of the uncontrolled child then queue
    // nothing.
    let uncontrolled = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "2"}]);
    child_src.modify(child("3", uncontrolled.clone()));
    assert_eq!(recv(&mut rx).await, "ns/owner");
    until_handled(&runner, child_at("3")).await;
    while rx.try_recv().is_ok() {}
    child_src.modify(child("4", uncontrolled.clone()));
    until_handled(&runner, child_at("4")).await;
    assert!(rx.try_recv().is_err(), "the uncontrolled child's change queued nothing");
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_cluster_scoped_controller_is_queued_without_a_namespace() {
    use k8s_openapi::api::core::v1::Node;
    let nodes_src = FakeSource::new();
    nodes_src.add(json!({"metadata": {"name": "n1"}}));
    let child_src = FakeSource::new();
    child_src.add(json!({"metadata": {"name": "child", "namespace": "ns", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "1", "controller": true}]}}));
    let nodes: SharedIndexInformer<Node> = SharedIndexInformer::new(nodes_src.clone(), Duration::ZERO);
    let children = informer(&child_src);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = ControllerRunner::builder("nodes")
        .informer(&nodes)
        .owns(&children)
        .build(move |key, node: Option<Object<Node>>| {
            let _ = tx.send((key.to_string(), node.is_some()));
            std::future::ready(Ok::<_, String>(Action::Done))
        })
        .unwrap();
    let cancel = CancellationToken::new();
    let informers = tokio::spawn({
        let (n, c, cancel) = (nodes.clone(), children.clone(), cancel.clone());
        async move { tokio::join!(n.run(cancel.clone()), c.run(cancel)) }
    });
    let run = tokio::spawn({
        let (r, c) = (runner.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    assert_eq!(recv(&mut rx).await, ("n1".to_string(), true), "the node's own key, found in the cache");
    child_src
        .modify(json!({"metadata": {"name": "child", "namespace": "ns", "labels": {"x": "1"}, "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "1", "controller": true}]}}));
    assert_eq!(recv(&mut rx).await, ("n1".to_string(), true), "queued by its child, without the child's namespace");
    cancel.cancel();
    run.await.unwrap().unwrap();
    informers.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_generation_filter_passes_over_status_writes() {
    let src = FakeSource::new();
    let at = |generation: i64, ready: &str| json!({"metadata": {"name": "a", "namespace": "ns", "generation": generation}, "data": {"ready": ready}});
    src.add(at(1, "no"));
    let primary = informer(&src);
    let cache = primary.indexer().clone();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = ControllerRunner::builder("t")
        .informer_filtered(&primary, informer::runner::generation_changed)
        .build(reporting(tx))
        .unwrap();
    let run = Running::start(vec![primary], &runner);
    assert_eq!(recv(&mut rx).await, "ns/a", "an add always queues");
    // A write that leaves the generation (a status write): cached, not queued.
    src.modify(at(1, "yes"));
    until_handled(&runner, || {
        let cached = cache.get_by_key("ns/a").and_then(|o| o.get().ok().and_then(|c| c.data.clone()));
        cached.is_some_and(|d| d["ready"] == "yes")
    })
    .await;
    assert!(rx.try_recv().is_err(), "a status write queued the key");
    // A spec change moves the generation: queued.
    src.modify(at(2, "yes"));
    assert_eq!(recv(&mut rx).await, "ns/a");
    src.delete(at(2, "yes"));
    assert_eq!(recv(&mut rx).await, "ns/a", "a delete always queues");
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_reconcile_past_its_timeout_fails_and_is_retried() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src);
    let calls = Arc::new(AtomicU32::new(0));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = {
        let calls = calls.clone();
        ControllerRunner::builder("t")
            .informer(&inf)
            .reconcile_timeout(Duration::from_secs(10))
            .build(move |key, _obj: Option<Object<Cm>>| {
                let (calls, tx) = (calls.clone(), tx.clone());
                async move {
                    // The first reconcile hangs; the next one finishes at once.
                    if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                        std::future::pending::<()>().await;
                    }
                    let _ = tx.send((key.to_string(), Instant::now()));
                    Ok::<_, String>(Action::Done)
                }
            })
            .unwrap()
    };
    let started = Instant::now();
    let run = Running::start(vec![inf], &runner);
    let (key, at) = recv(&mut rx).await;
    assert_eq!(key, "ns/a");
    // Dropped at 10 s, then retried after the key's first backoff step (5 ms).
    assert!(at - started >= Duration::from_secs(10) && at - started < Duration::from_secs(11), "{:?}", at - started);
    run.stop().await;
    let s = runner.stats();
    assert_eq!((s.error, s.success, calls.load(Ordering::SeqCst)), (1, 1, 2));
}

#[tokio::test(start_paused = true)]
async fn build_and_run_errors() {
    let src = FakeSource::new();
    let inf = informer(&src);
    let err = ControllerRunner::builder::<Cm>("t").build(|_, _| async { Ok::<_, String>(Action::Done) }).unwrap_err();
    assert!(matches!(err, RunnerError::NoInformer(_)), "{err}");

    // The informer is never started: the sync timeout reports who did not sync.
    let runner = ControllerRunner::builder("t")
        .informer(&inf)
        .sync_timeout(Duration::from_secs(5))
        .build(|_, _: Option<Object<Cm>>| async { Ok::<_, String>(Action::Done) })
        .unwrap();
    let err = runner.run(CancellationToken::new()).await.unwrap_err();
    assert!(matches!(err, RunnerError::NotSynced(..)), "{err}");
    let err = runner.run(CancellationToken::new()).await.unwrap_err();
    assert!(matches!(err, RunnerError::AlreadyStarted(_)), "{err}");

    // A stopped informer accepts no handler.
    let stopped = informer(&src);
    let cancel = CancellationToken::new();
    cancel.cancel();
    stopped.run(cancel).await;
    let err = ControllerRunner::builder("t")
        .informer(&stopped)
        .build(|_, _: Option<Object<Cm>>| async { Ok::<_, String>(Action::Done) })
        .unwrap_err();
    assert!(matches!(err, RunnerError::Informer(..)), "{err}");
}

#[tokio::test(start_paused = true)]
async fn keys_are_dropped_after_max_retries() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = ControllerRunner::builder("t")
        .informer(&inf)
        .max_retries(2)
        .build(move |key, _obj: Option<Object<Cm>>| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(key.to_string());
                Err::<Action, _>("always fails")
            }
        })
        .unwrap();
    let run = Running::start(vec![inf], &runner);
    for _ in 0..3 {
        recv(&mut rx).await;
    }
    // The paused clock jumps past any backoff: no fourth attempt may come.
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(rx.try_recv().is_err(), "the key was retried past max_retries");
    let s = runner.stats();
    assert_eq!((s.error, s.dropped, s.delayed), (3, 1, 0));
    assert_eq!(runner.queue().num_requeues(&key("a")), 0);
    // A new change brings it back.
    src.modify(cm("a", "2"));
    recv(&mut rx).await;
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn handlers_are_removed_when_the_runner_stops_or_is_dropped() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src);
    let build = || {
        ControllerRunner::builder("t")
            .informer(&inf)
            .build(|_, _: Option<Object<Cm>>| async { Ok::<_, String>(Action::Done) })
            .unwrap()
    };
    let unused = build();
    assert_eq!(inf.registrations().len(), 1);
    drop(unused);
    assert_eq!(inf.registrations().len(), 0);

    let runner = build();
    let run = Running::start(vec![inf.clone()], &runner);
    runner.queue().add(key("a"));
    let cancel = run.cancel.clone();
    cancel.cancel();
    run.runner.await.unwrap().unwrap();
    assert_eq!(inf.registrations().len(), 0, "run removes its handler when it ends");
    run.informer.await.unwrap();
}
