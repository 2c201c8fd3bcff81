//! Reflector behaviour against the in-memory fake source and scripted lister-watchers
//! (client-go reflector_test scenarios), under tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use informer::fake::FakeSource;
use informer::fifo::Queue;
use informer::listwatch::{Status, WatchStream};
use informer::{
    Delta, Error, ListOptions, ListerWatcher, ObjectList, RealFifo, Reflector, ReflectorHooks, ReflectorOptions,
    WatchEvent,
};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;
use tokio_util::sync::CancellationToken;

type Cm = ConfigMap;

/// A complete list of `items` at `rv`.
fn listed(items: Vec<informer::Object<Cm>>, rv: &str) -> ObjectList<Cm> {
    ObjectList { items, resource_version: rv.into(), continue_token: None, remaining_item_count: None }
}

fn cm(name: &str, v: &str) -> serde_json::Value {
    json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":name,"namespace":"ns"},"data":{"v":v}})
}

fn opts() -> ReflectorOptions {
    ReflectorOptions { name: "test".into(), ..Default::default() }
}

/// Runs a reflector over `lw` feeding a fresh queue, in a task, until the token is cancelled.
fn run_reflector<L: ListerWatcher<Cm> + 'static>(
    lw: Arc<L>,
    o: ReflectorOptions,
    hooks: ReflectorHooks,
) -> (Arc<RealFifo<Cm>>, CancellationToken, tokio::task::JoinHandle<()>) {
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let r = Reflector::new(lw, q.clone(), o, hooks);
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let c = cancel.clone();
        async move { r.run(c).await }
    });
    (q, cancel, task)
}

/// Pops one delta and describes it as (type, key or count, rv).
async fn pop(q: &RealFifo<Cm>) -> String {
    q.pop(1, |mut b, _| {
        let d = b.remove(0);
        match d {
            Delta::ReplacedAll { objects, resource_version } => {
                let mut names: Vec<_> = objects.iter().map(|o| o.name().to_string()).collect();
                names.sort();
                format!("ReplacedAll[{}]@{resource_version}", names.join(","))
            }
            Delta::Bookmark { resource_version } => format!("Bookmark@{resource_version}"),
            Delta::SyncAll => "SyncAll".into(),
            other => {
                let o = other.object().unwrap();
                format!("{:?}:{}@{}", other.delta_type(), o.name(), o.resource_version().unwrap_or(""))
            }
        }
    })
    .await
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn lists_at_rv0_with_page_size_then_watches_from_the_list_rv() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    src.add(cm("b", "1"));
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let r = Arc::new(Reflector::new(Arc::new(src.clone()), q.clone(), opts(), ReflectorHooks::default()));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    assert_eq!(pop(&q).await, "ReplacedAll[a,b]@2");
    src.modify(cm("a", "2"));
    src.delete(cm("b", "1"));
    assert_eq!(pop(&q).await, "Updated:a@3");
    assert_eq!(pop(&q).await, "Deleted:b@4");
    assert_eq!(r.last_sync_resource_version(), "4");
    let lists = src.list_calls();
    assert_eq!(lists.len(), 1);
    assert_eq!(lists[0].resource_version.as_deref(), Some("0"));
    assert_eq!(lists[0].limit, Some(500));
    let w = &src.watch_calls()[0];
    assert_eq!(w.resource_version.as_deref(), Some("2"));
    assert!(w.allow_watch_bookmarks);
    let t = w.timeout_seconds.unwrap();
    assert!((300..=600).contains(&t), "timeout {t}");
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn reset_watch_relists_at_last_rv_and_recovers_dropped_events() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let (q, cancel, task) = run_reflector(Arc::new(src.clone()), opts(), ReflectorHooks::default());
    assert_eq!(pop(&q).await, "ReplacedAll[a]@1");
    src.modify_drop_watch(cm("a", "2"));
    src.add_drop_watch(cm("c", "1"));
    src.reset_watch();
    // The re-watch at RV 1 gets 410; after the backoff the reflector relists at its last RV.
    assert_eq!(pop(&q).await, "ReplacedAll[a,c]@3");
    let lists = src.list_calls();
    assert_eq!(lists.len(), 2);
    assert_eq!(lists[1].resource_version.as_deref(), Some("1"), "relist at the last synced RV, not \"\"");
    assert_eq!(lists[1].limit, None, "no paging for a list at a specific RV");
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn list_errors_reach_the_hook_and_are_retried_after_backoff() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    src.set_list_error(Some(Error::api(Status {
        code: 500,
        reason: "InternalError".into(),
        message: "boom".into(),
        ..Default::default()
    })));
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let errors = Arc::new(AtomicUsize::new(0));
    let hooks = ReflectorHooks {
        watch_error: Some(Arc::new({
            let errors = errors.clone();
            let src = src.clone();
            move |e: &Error| {
                assert_eq!(e.code(), Some(500));
                if errors.fetch_add(1, Ordering::SeqCst) == 1 {
                    src.set_list_error(None);
                }
            }
        })),
        ..Default::default()
    };
    let r = Arc::new(Reflector::new(Arc::new(src.clone()), q.clone(), opts(), hooks));
    let cancel = CancellationToken::new();
    let started = tokio::time::Instant::now();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    assert_eq!(pop(&q).await, "ReplacedAll[a]@1");
    assert_eq!(errors.load(Ordering::SeqCst), 2);
    // Two backoff waits: [0.8, 1.6) + [1.6, 3.2).
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(2400) && waited < Duration::from_millis(4800), "{waited:?}");
    cancel.cancel();
    task.await.unwrap();
}

/// A scripted source: list returns one object at RV 10; watch results are taken from a script.
struct Scripted {
    lists: AtomicUsize,
    watches: AtomicUsize,
    script: parking_lot::Mutex<Vec<Result<Vec<WatchEvent<Cm>>, Error>>>,
}

impl ListerWatcher<Cm> for Scripted {
    async fn list(&self, _o: &ListOptions) -> Result<ObjectList<Cm>, Error> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let o = informer::Object::from_json(serde_json::to_vec(&cm("a", "1")).unwrap()).unwrap();
        Ok(listed(vec![o], "10"))
    }
    async fn watch(&self, _o: &ListOptions) -> Result<WatchStream<Cm>, Error> {
        self.watches.fetch_add(1, Ordering::SeqCst);
        let next = {
            let mut s = self.script.lock();
            if s.is_empty() { None } else { Some(s.remove(0)) }
        };
        match next {
            // Script exhausted: a watch that stays open.
            None => Ok(Box::pin(futures_util::stream::pending())),
            Some(Err(e)) => Err(e),
            Some(Ok(events)) => Ok(Box::pin(futures_util::stream::iter(events.into_iter().map(Ok)))),
        }
    }
    fn supports_streaming_list(&self) -> bool {
        false
    }
}

fn too_many() -> Error {
    Error::api(Status {
        code: 429,
        reason: "TooManyRequests".into(),
        message: "slow down".into(),
        ..Default::default()
    })
}

#[tokio::test(start_paused = true)]
async fn too_many_requests_backs_off_and_rewatches_without_relisting() {
    let lw = Arc::new(Scripted {
        lists: AtomicUsize::new(0),
        watches: AtomicUsize::new(0),
        script: parking_lot::Mutex::new(vec![
            Err(too_many()),
            Err(too_many()),
            Err(too_many()),
            Ok(vec![WatchEvent::Error(Status { code: 429, reason: "TooManyRequests".into(), ..Default::default() })]),
        ]),
    });
    let (q, cancel, task) = run_reflector(lw.clone(), opts(), ReflectorHooks::default());
    assert_eq!(pop(&q).await, "ReplacedAll[a]@10");
    // Four 429s (three at establishment, one as an ERROR event), then the open watch.
    while lw.watches.load(Ordering::SeqCst) < 5 {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert_eq!(lw.lists.load(Ordering::SeqCst), 1, "429 never relists");
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn very_short_watch_is_an_error_that_relists() {
    let lw = Arc::new(Scripted {
        lists: AtomicUsize::new(0),
        watches: AtomicUsize::new(0),
        script: parking_lot::Mutex::new(vec![Ok(vec![])]),
    });
    let (q, cancel, task) = run_reflector(lw.clone(), opts(), ReflectorHooks::default());
    assert_eq!(pop(&q).await, "ReplacedAll[a]@10");
    assert_eq!(pop(&q).await, "ReplacedAll[a]@10", "an empty sub-second watch leads to a relist");
    assert_eq!(lw.lists.load(Ordering::SeqCst), 2);
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn clean_close_rewatches_immediately_and_bookmarks_reach_the_queue() {
    let lw = Arc::new(Scripted {
        lists: AtomicUsize::new(0),
        watches: AtomicUsize::new(0),
        script: parking_lot::Mutex::new(vec![Ok(vec![WatchEvent::Bookmark {
            resource_version: "15".into(),
            initial_events_end: false,
        }])]),
    });
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let r = Arc::new(Reflector::new(lw.clone(), q.clone(), opts(), ReflectorHooks::default()));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    assert_eq!(pop(&q).await, "ReplacedAll[a]@10");
    assert_eq!(pop(&q).await, "Bookmark@15");
    while lw.watches.load(Ordering::SeqCst) < 2 {
        tokio::task::yield_now().await;
    }
    assert_eq!(r.last_sync_resource_version(), "15");
    assert_eq!(lw.lists.load(Ordering::SeqCst), 1, "a clean close does not relist");
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn resync_timer_queues_sync_all_when_due() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let due = Arc::new(AtomicUsize::new(0));
    let hooks = ReflectorHooks {
        should_resync: Some(Arc::new({
            let due = due.clone();
            move || due.fetch_add(1, Ordering::SeqCst).is_multiple_of(2)
        })),
        ..Default::default()
    };
    let o = ReflectorOptions { resync_period: Duration::from_secs(30), ..opts() };
    let r = Arc::new(Reflector::new(Arc::new(src.clone()), q.clone(), o, hooks));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    assert_eq!(pop(&q).await, "ReplacedAll[a]@1");
    assert_eq!(pop(&q).await, "SyncAll");
    assert_eq!(pop(&q).await, "SyncAll");
    // should_resync answered yes, no, yes: two SyncAlls from three timer firings.
    assert_eq!(due.load(Ordering::SeqCst), 3);
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn cancelled_before_start_calls_nothing() {
    let src = FakeSource::new();
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let r = Reflector::new(Arc::new(src.clone()), q, opts(), ReflectorHooks::default());
    let cancel = CancellationToken::new();
    cancel.cancel();
    r.run(cancel).await;
    assert!(src.list_calls().is_empty());
    assert!(src.watch_calls().is_empty());
}

/// A source whose watches are fed by the test through channels; lists return "b" at RV 50.
struct Streaming {
    watch_opts: parking_lot::Mutex<Vec<ListOptions>>,
    lists: AtomicUsize,
    feeds: parking_lot::Mutex<Vec<Result<tokio::sync::mpsc::UnboundedReceiver<WatchEvent<Cm>>, Error>>>,
}

impl ListerWatcher<Cm> for Streaming {
    async fn list(&self, _o: &ListOptions) -> Result<ObjectList<Cm>, Error> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        Ok(listed(vec![obj("b", 40)], "50"))
    }
    async fn watch(&self, o: &ListOptions) -> Result<WatchStream<Cm>, Error> {
        self.watch_opts.lock().push(o.clone());
        let feed = {
            let mut f = self.feeds.lock();
            if f.is_empty() { None } else { Some(f.remove(0)) }
        };
        match feed {
            None => Ok(Box::pin(futures_util::stream::pending())),
            Some(Err(e)) => Err(e),
            Some(Ok(rx)) => {
                Ok(Box::pin(futures_util::stream::unfold(
                    rx,
                    |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
                )))
            }
        }
    }
}

fn obj(name: &str, rv: u64) -> informer::Object<Cm> {
    let mut v = cm(name, "1");
    v["metadata"]["resourceVersion"] = rv.to_string().into();
    informer::Object::from_json(serde_json::to_vec(&v).unwrap()).unwrap()
}

fn streaming(feeds: Vec<Result<tokio::sync::mpsc::UnboundedReceiver<WatchEvent<Cm>>, Error>>) -> Arc<Streaming> {
    Arc::new(Streaming {
        watch_opts: Default::default(),
        lists: AtomicUsize::new(0),
        feeds: parking_lot::Mutex::new(feeds),
    })
}

#[tokio::test(start_paused = true)]
async fn plain_bookmark_before_the_end_marker_falls_back_to_list() {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let lw = streaming(vec![Ok(rx)]);
    let (q, cancel, task) = run_reflector(lw.clone(), opts(), ReflectorHooks::default());
    // A server that supports streaming lists sends no plain bookmark before the end marker; one
    // that does not (it ignored sendInitialEvents) may. The reflector then falls back to LIST.
    tx.send(WatchEvent::Added(obj("z", 30))).unwrap();
    tx.send(WatchEvent::Bookmark { resource_version: "33".into(), initial_events_end: false }).unwrap();
    assert_eq!(pop(&q).await, "ReplacedAll[b]@50");
    let o = lw.watch_opts.lock()[0].clone();
    assert_eq!(o.send_initial_events, Some(true));
    assert_eq!(o.resource_version_match, Some(informer::ResourceVersionMatch::NotOlderThan));
    assert!(o.allow_watch_bookmarks);
    assert_eq!(o.resource_version, None, "first streaming list asks for a consistent snapshot");
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn streaming_list_success_takes_rv_from_the_end_bookmark() {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let lw = streaming(vec![Ok(rx)]);
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let r = Arc::new(Reflector::new(lw.clone(), q.clone(), opts(), ReflectorHooks::default()));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    tx.send(WatchEvent::Added(obj("z", 30))).unwrap();
    tx.send(WatchEvent::Added(obj("a", 20))).unwrap();
    tx.send(WatchEvent::Added(obj("gone", 25))).unwrap();
    tx.send(WatchEvent::Added(obj("b", 26))).unwrap();
    tx.send(WatchEvent::Modified(obj("a", 31))).unwrap();
    tx.send(WatchEvent::Deleted(obj("gone", 32))).unwrap();
    tx.send(WatchEvent::Modified(obj("b", 33))).unwrap();
    tx.send(WatchEvent::Bookmark { resource_version: "35".into(), initial_events_end: true }).unwrap();
    tx.send(WatchEvent::Modified(obj("z", 36))).unwrap();
    assert_eq!(pop(&q).await, "ReplacedAll[a,b,z]@35", "one object per key, the latest, none deleted");
    assert_eq!(pop(&q).await, "Updated:z@36", "the watch continues on the same stream");
    assert_eq!(r.last_sync_resource_version(), "36");
    assert_eq!(lw.lists.load(Ordering::SeqCst), 0, "no LIST");
    assert_eq!(lw.watch_opts.lock().len(), 1);
    cancel.cancel();
    task.await.unwrap();
}

/// The objects of a streaming list are held transformed while the list completes (client-go's
/// `TransformingStore`): the queue's transform sees each as it arrives, not only at the end.
#[tokio::test(start_paused = true)]
async fn streaming_list_holds_its_objects_transformed() {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let lw = streaming(vec![Ok(rx)]);
    let seen = Arc::new(tokio::sync::Notify::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let transform: informer::fifo::Transform<Cm> = Arc::new({
        let (seen, calls) = (seen.clone(), calls.clone());
        move |o| {
            calls.fetch_add(1, Ordering::SeqCst);
            seen.notify_one();
            Ok(o)
        }
    });
    let q = Arc::new(RealFifo::<Cm>::new(informer::fifo::RealFifoOptions {
        transform: Some(transform),
        ..Default::default()
    }));
    let r = Reflector::new(lw, q.clone(), opts(), ReflectorHooks::default());
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let c = cancel.clone();
        async move { r.run(c).await }
    });
    tx.send(WatchEvent::Added(obj("a", 20))).unwrap();
    // Transformed before the end bookmark is even sent.
    tokio::time::timeout(Duration::from_secs(60), seen.notified()).await.expect("the transform ran on arrival");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    tx.send(WatchEvent::Bookmark { resource_version: "21".into(), initial_events_end: true }).unwrap();
    assert_eq!(pop(&q).await, "ReplacedAll[a]@21");
    assert_eq!(calls.load(Ordering::SeqCst), 2, "and again by the queue's replace (transforms are idempotent)");
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn streaming_list_rejected_by_the_server_falls_back_to_list() {
    let invalid = Error::api(Status {
        code: 422,
        reason: "Invalid".into(),
        message: "sendInitialEvents is forbidden".into(),
        ..Default::default()
    });
    let lw = streaming(vec![Err(invalid)]);
    let (q, cancel, task) = run_reflector(lw.clone(), opts(), ReflectorHooks::default());
    assert_eq!(pop(&q).await, "ReplacedAll[b]@50");
    assert_eq!(lw.lists.load(Ordering::SeqCst), 1);
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn streaming_list_without_end_bookmark_never_hangs() {
    // An old server: sends the current objects and then nothing (no end marker).
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let lw = streaming(vec![Ok(rx)]);
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let r = Arc::new(Reflector::new(lw.clone(), q.clone(), opts(), ReflectorHooks::default()));
    let cancel = CancellationToken::new();
    let started = tokio::time::Instant::now();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    tx.send(WatchEvent::Added(obj("a", 1))).unwrap();
    assert_eq!(pop(&q).await, "ReplacedAll[b]@50");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(10) && waited < Duration::from_secs(12),
        "fell back after the idle timeout: {waited:?}"
    );
    cancel.cancel();
    task.await.unwrap();
    drop(tx);
}

#[tokio::test(start_paused = true)]
async fn list_pages_are_followed_and_expired_continue_means_one_full_list() {
    struct Paged {
        calls: parking_lot::Mutex<Vec<ListOptions>>,
    }
    impl ListerWatcher<Cm> for Paged {
        async fn list(&self, o: &ListOptions) -> Result<ObjectList<Cm>, Error> {
            let n = {
                let mut c = self.calls.lock();
                c.push(o.clone());
                c.len()
            };
            let page = |names: &[&str], cont: Option<&str>| ObjectList {
                items: names.iter().map(|n| obj(n, 5)).collect(),
                resource_version: "10".into(),
                continue_token: cont.map(str::to_string),
                remaining_item_count: None,
            };
            match n {
                1 => Ok(page(&["a", "b"], Some("c1"))),
                2 => Ok(page(&["c", "d"], Some("c2"))),
                3 => Err(Error::api(Status { code: 410, reason: "Expired".into(), ..Default::default() })),
                _ => Ok(page(&["a", "b", "c", "d", "e"], None)),
            }
        }
        async fn watch(&self, _o: &ListOptions) -> Result<WatchStream<Cm>, Error> {
            Ok(Box::pin(futures_util::stream::pending()))
        }
        fn supports_streaming_list(&self) -> bool {
            false
        }
    }
    let lw = Arc::new(Paged { calls: Default::default() });
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let o = ReflectorOptions { page_size: Some(2), ..opts() };
    let r = Arc::new(Reflector::new(lw.clone(), q.clone(), o, ReflectorHooks::default()));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    assert_eq!(pop(&q).await, "ReplacedAll[a,b,c,d,e]@10");
    let calls = lw.calls.lock().clone();
    assert_eq!(calls.len(), 4);
    assert_eq!(
        (calls[0].resource_version.as_deref(), calls[0].limit, calls[0].continue_token.as_deref()),
        (Some("0"), Some(2), None)
    );
    assert_eq!(
        (calls[1].resource_version.as_deref(), calls[1].limit, calls[1].continue_token.as_deref()),
        (None, Some(2), Some("c1"))
    );
    assert_eq!(calls[2].continue_token.as_deref(), Some("c2"));
    assert_eq!(
        (calls[3].resource_version.as_deref(), calls[3].limit, calls[3].continue_token.as_deref()),
        (Some("0"), None, None),
        "full list at the original RV"
    );
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn expired_list_rv_retries_at_once_with_empty_rv() {
    struct Expiring {
        calls: parking_lot::Mutex<Vec<Option<String>>>,
    }
    impl ListerWatcher<Cm> for Expiring {
        async fn list(&self, o: &ListOptions) -> Result<ObjectList<Cm>, Error> {
            self.calls.lock().push(o.resource_version.clone());
            if o.resource_version.as_deref() == Some("0") {
                return Err(Error::api(Status { code: 410, reason: "Expired".into(), ..Default::default() }));
            }
            Ok(listed(vec![obj("a", 3)], "7"))
        }
        async fn watch(&self, _o: &ListOptions) -> Result<WatchStream<Cm>, Error> {
            Ok(Box::pin(futures_util::stream::pending()))
        }
        fn supports_streaming_list(&self) -> bool {
            false
        }
    }
    let lw = Arc::new(Expiring { calls: Default::default() });
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let r = Arc::new(Reflector::new(lw.clone(), q.clone(), opts(), ReflectorHooks::default()));
    let cancel = CancellationToken::new();
    let started = tokio::time::Instant::now();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    assert_eq!(pop(&q).await, "ReplacedAll[a]@7");
    assert_eq!(started.elapsed(), Duration::ZERO, "retried at once, without backoff");
    assert_eq!(*lw.calls.lock(), vec![Some("0".to_string()), None]);
    cancel.cancel();
    task.await.unwrap();
}

/// A server that is down (connections refused) until `back_at`, then lists one object at RV 10
/// and keeps the watch open.
struct Outage {
    back_at: tokio::time::Instant,
    listed_at: parking_lot::Mutex<Option<tokio::time::Instant>>,
    attempts: AtomicUsize,
}

impl ListerWatcher<Cm> for Outage {
    async fn list(&self, _o: &ListOptions) -> Result<ObjectList<Cm>, Error> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if tokio::time::Instant::now() < self.back_at {
            return Err(Error::Transport {
                message: "connection refused".into(),
                failure: informer::TransportFailure::ConnectionRefused,
            });
        }
        self.listed_at.lock().get_or_insert(tokio::time::Instant::now());
        let o = informer::Object::from_json(serde_json::to_vec(&cm("a", "1")).unwrap()).unwrap();
        Ok(listed(vec![o], "10"))
    }
    async fn watch(&self, _o: &ListOptions) -> Result<WatchStream<Cm>, Error> {
        Ok(Box::pin(futures_util::stream::pending()))
    }
    fn supports_streaming_list(&self) -> bool {
        false
    }
}

/// However long the server was away, the reflector lists again within two `unreachable` pauses
/// (1–2 s by default) of its return; client-go's backoff would have reached its 30 s cap, and
/// could sleep up to 60 s past the return.
#[tokio::test(start_paused = true)]
async fn an_outage_of_any_length_ends_within_two_seconds_of_the_server_returning() {
    for outage_secs in [5u64, 60, 600] {
        let start = tokio::time::Instant::now();
        let lw = Arc::new(Outage {
            back_at: start + Duration::from_secs(outage_secs),
            listed_at: parking_lot::Mutex::new(None),
            attempts: AtomicUsize::new(0),
        });
        let (q, cancel, task) = run_reflector(lw.clone(), opts(), ReflectorHooks::default());
        assert_eq!(pop(&q).await, "ReplacedAll[a]@10");
        let late = lw.listed_at.lock().unwrap() - lw.back_at;
        // (A pause is slept to tokio's millisecond: 1.9996 s is 2 s.)
        assert!(late <= Duration::from_secs(2), "outage of {outage_secs} s: listed {late:?} after the server returned");
        // Retries during the outage are paced (no busy loop): at most one per second.
        let attempts = lw.attempts.load(Ordering::SeqCst) as u64;
        assert!(attempts <= outage_secs + 2, "{attempts} attempts in a {outage_secs} s outage");
        cancel.cancel();
        task.await.unwrap();
    }
}

/// A server that answers 429 with `Retry-After` is retried exactly that much later, not after the
/// (longer) backoff.
#[tokio::test(start_paused = true)]
async fn retry_after_is_obeyed_exactly() {
    let busy = || Error::Api {
        status: Box::new(Status { code: 429, reason: "TooManyRequests".into(), ..Default::default() }),
        retry_after: Some(Duration::from_secs(1)),
    };
    let lw = Arc::new(Scripted {
        lists: AtomicUsize::new(0),
        watches: AtomicUsize::new(0),
        script: parking_lot::Mutex::new((0..8).map(|_| Err(busy())).collect()),
    });
    let (q, cancel, task) = run_reflector(lw.clone(), opts(), ReflectorHooks::default());
    assert_eq!(pop(&q).await, "ReplacedAll[a]@10");
    let started = tokio::time::Instant::now();
    while lw.watches.load(Ordering::SeqCst) < 9 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Eight 429s, one second each (the backoff would have taken 0.8 + 1.6 + … ≥ 100 s).
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(8) && waited < Duration::from_millis(8200), "{waited:?}");
    assert_eq!(lw.lists.load(Ordering::SeqCst), 1);
    cancel.cancel();
    task.await.unwrap();
}

/// The client's clock jumps (a suspended laptop, a VM paused and resumed): tokio's clock leaps an
/// hour at a time while changes go on. Timers that come due at once (resync, watch and backoff
/// deadlines) must not lose or reorder anything: the cache and the handler's view end
/// equal to the source, and no key's resourceVersion ever goes back.
#[tokio::test(start_paused = true)]
async fn client_clock_jumps_lose_and_reorder_nothing() {
    use informer::{HandlerFns, InformerOptions, SharedIndexInformer};
    use std::collections::{BTreeMap, HashMap};
    let src = FakeSource::new();
    for i in 0..20 {
        src.add(cm(&format!("c{i:02}"), "0"));
    }
    let opts = InformerOptions::default().name("clock").resync_period(Duration::from_secs(30));
    let informer = SharedIndexInformer::with_options(src.clone(), opts);
    let view: Arc<parking_lot::Mutex<BTreeMap<String, String>>> = Arc::default();
    let last: Arc<parking_lot::Mutex<HashMap<String, u64>>> = Arc::default();
    let backwards: Arc<AtomicUsize> = Arc::default();
    let seen = {
        let (view, last, backwards) = (view.clone(), last.clone(), backwards.clone());
        move |o: &informer::Object<Cm>| {
            let rv: u64 = o.resource_version().unwrap().parse().unwrap();
            let key = o.key().to_string();
            if last.lock().insert(key.clone(), rv).is_some_and(|prev| rv < prev) {
                backwards.fetch_add(1, Ordering::SeqCst);
            }
            view.lock().insert(key, rv.to_string());
        }
    };
    let (s1, s2, v) = (seen.clone(), seen, view.clone());
    informer
        .add_event_handler(HandlerFns::new().on_add(move |o, _| s1(o)).on_update(move |_, o| s2(o)).on_delete(
            move |d| {
                v.lock().remove(d.key().as_str());
            },
        ))
        .unwrap();
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    informer.synced().wait().await;
    for round in 0..6u32 {
        for i in 0..20 {
            match (i + round) % 4 {
                0 => {
                    src.delete(cm(&format!("c{i:02}"), "x"));
                    src.add(cm(&format!("c{i:02}"), &round.to_string()));
                }
                _ => {
                    src.modify(cm(&format!("c{i:02}"), &format!("{round}-{i}")));
                }
            }
        }
        // The clock leaps an hour: every timer is due at once.
        tokio::time::advance(Duration::from_secs(3600)).await;
    }
    let want: BTreeMap<String, String> = src
        .items()
        .into_iter()
        .map(|(k, v)| (k, v["metadata"]["resourceVersion"].as_str().unwrap().to_string()))
        .collect();
    let converged = async {
        loop {
            let cache: BTreeMap<String, String> = informer
                .indexer()
                .list()
                .iter()
                .map(|o| (o.key().to_string(), o.resource_version().unwrap().to_string()))
                .collect();
            if cache == want && *view.lock() == want {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    // Paused time: a cache that never converges fails here instead of hanging.
    tokio::time::timeout(Duration::from_secs(600), converged).await.expect("the cache and the view converge");
    assert_eq!(backwards.load(Ordering::SeqCst), 0, "a resourceVersion went back");
    assert_eq!(src.list_calls().len(), 1, "no relist");
    cancel.cancel();
    task.await.unwrap();
}

/// Every list succeeds (a streaming list ending with its end bookmark, or a LIST) with "a" at
/// RV 10; the watch that follows fails at once with a 500 ERROR event, before any other event.
struct ListsThenFails {
    streaming: bool,
    lists: parking_lot::Mutex<Vec<tokio::time::Instant>>,
}

impl ListerWatcher<Cm> for ListsThenFails {
    async fn list(&self, _o: &ListOptions) -> Result<ObjectList<Cm>, Error> {
        self.lists.lock().push(tokio::time::Instant::now());
        Ok(listed(vec![obj("a", 5)], "10"))
    }
    async fn watch(&self, o: &ListOptions) -> Result<WatchStream<Cm>, Error> {
        let internal = WatchEvent::Error(Status { code: 500, reason: "InternalError".into(), ..Default::default() });
        let events = if o.send_initial_events == Some(true) {
            self.lists.lock().push(tokio::time::Instant::now());
            vec![
                WatchEvent::Added(obj("a", 5)),
                WatchEvent::Bookmark { resource_version: "10".into(), initial_events_end: true },
                internal,
            ]
        } else {
            vec![internal]
        };
        Ok(Box::pin(futures_util::stream::iter(events.into_iter().map(Ok))))
    }
    fn supports_streaming_list(&self) -> bool {
        self.streaming
    }
}

/// A list that succeeds is not progress: when every watch after it fails, the relists follow the
/// exponential backoff (0.8 s doubling, jittered up to +100%), with a streaming list as with LIST.
#[tokio::test(start_paused = true)]
async fn a_successful_list_alone_does_not_restart_the_backoff() {
    for streaming in [true, false] {
        let lw = Arc::new(ListsThenFails { streaming, lists: Default::default() });
        let (q, cancel, task) = run_reflector(lw.clone(), opts(), ReflectorHooks::default());
        for _ in 0..6 {
            assert_eq!(pop(&q).await, "ReplacedAll[a]@10");
        }
        cancel.cancel();
        task.await.unwrap();
        let lists = lw.lists.lock().clone();
        let mut base = 0.8;
        // Tokio's timer rounds a sleep up to its next millisecond: a delay jittered to just under
        // twice the base may fire at twice the base.
        let tick = 0.001;
        for (i, pair) in lists.windows(2).take(5).enumerate() {
            let gap = (pair[1] - pair[0]).as_secs_f64();
            assert!(
                gap >= base && gap <= 2.0 * base + tick,
                "streaming {streaming}: relist {} came {gap:.4} s after the previous one, not in [{base}, {}]",
                i + 1,
                2.0 * base + tick
            );
            base *= 2.0;
        }
    }
}

/// One scripted answer to a watch: an error at opening, or events (the stream then stays open).
type WatchScript = Result<Vec<WatchEvent<Cm>>, Error>;

/// A source whose watches answer from a script (then stay open without events) and record their
/// options, instants and the number of LISTs before them; LIST returns "b" at RV 50.
struct ScriptedWatches {
    script: parking_lot::Mutex<Vec<WatchScript>>,
    watches: parking_lot::Mutex<Vec<(ListOptions, tokio::time::Instant, usize)>>,
    /// Notified at each watch request.
    watched: tokio::sync::Notify,
    lists: AtomicUsize,
    streaming: bool,
}

impl ScriptedWatches {
    fn new(streaming: bool, script: Vec<WatchScript>) -> Arc<Self> {
        Arc::new(ScriptedWatches {
            script: parking_lot::Mutex::new(script),
            watches: Default::default(),
            watched: tokio::sync::Notify::new(),
            lists: AtomicUsize::new(0),
            streaming,
        })
    }

    fn watch_rvs(&self) -> Vec<Option<String>> {
        self.watches.lock().iter().map(|(o, _, _)| o.resource_version.clone()).collect()
    }

    fn watch_instants(&self) -> Vec<tokio::time::Instant> {
        self.watches.lock().iter().map(|(_, t, _)| *t).collect()
    }

    /// Waits (signal-driven) until `n` watches were requested; fails after a minute of paused
    /// time.
    async fn wait_for_watches(&self, n: usize) {
        let enough = async {
            loop {
                let next = self.watched.notified();
                tokio::pin!(next);
                next.as_mut().enable();
                if self.watches.lock().len() >= n {
                    return;
                }
                next.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), enough).await.expect("the watches within a minute");
    }

    /// The number of LISTs made before each watch.
    fn lists_before_watches(&self) -> Vec<usize> {
        self.watches.lock().iter().map(|(_, _, l)| *l).collect()
    }
}

impl ListerWatcher<Cm> for ScriptedWatches {
    async fn list(&self, _o: &ListOptions) -> Result<ObjectList<Cm>, Error> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        Ok(listed(vec![obj("b", 40)], "50"))
    }
    async fn watch(&self, o: &ListOptions) -> Result<WatchStream<Cm>, Error> {
        self.watches.lock().push((o.clone(), tokio::time::Instant::now(), self.lists.load(Ordering::SeqCst)));
        self.watched.notify_waiters();
        let next = {
            let mut s = self.script.lock();
            if s.is_empty() { Ok(vec![]) } else { s.remove(0) }
        };
        let events = next?;
        use futures_util::StreamExt;
        Ok(Box::pin(futures_util::stream::iter(events.into_iter().map(Ok)).chain(futures_util::stream::pending())))
    }
    fn supports_streaming_list(&self) -> bool {
        self.streaming
    }
}

fn expired() -> Error {
    Error::api(expired_status())
}

fn expired_status() -> Status {
    Status { code: 410, reason: "Expired".into(), message: "too old resource version".into(), ..Default::default() }
}

fn too_large_status() -> Status {
    Status {
        code: 504,
        reason: "Timeout".into(),
        message: "Too large resource version".into(),
        details: Some(informer::listwatch::StatusDetails {
            causes: vec![informer::listwatch::StatusCause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
            }],
            retry_after_seconds: Some(1),
        }),
        ..Default::default()
    }
}

fn end(rv: &str) -> WatchEvent<Cm> {
    WatchEvent::Bookmark { resource_version: rv.into(), initial_events_end: true }
}

/// A streaming list at a resourceVersion the server no longer has (410) or does not have yet
/// ("too large resource version", at opening or as an ERROR event) is retried at once at `""`,
/// without a backoff step, as client-go's watchList does.
#[tokio::test(start_paused = true)]
async fn unavailable_streaming_list_rv_retries_at_once_at_the_latest() {
    let at_opening: WatchScript = Err(expired());
    let as_event: WatchScript = Ok(vec![WatchEvent::Error(too_large_status())]);
    for (what, unavailable) in [("410 at opening", at_opening), ("too large RV as an event", as_event)] {
        let lw = ScriptedWatches::new(
            true,
            vec![
                // The first streaming list succeeds; its watch then expires, so the next cycle
                // streams again from RV 35.
                Ok(vec![WatchEvent::Added(obj("a", 5)), end("35"), WatchEvent::Error(expired_status())]),
                unavailable,
                Ok(vec![WatchEvent::Added(obj("a", 40)), WatchEvent::Added(obj("c", 41)), end("45")]),
            ],
        );
        let (q, cancel, task) = run_reflector(lw.clone(), opts(), ReflectorHooks::default());
        assert_eq!(pop(&q).await, "ReplacedAll[a]@35", "{what}");
        assert_eq!(pop(&q).await, "ReplacedAll[a,c]@45", "{what}");
        assert_eq!(lw.watch_rvs()[..3], [None, Some("35".to_string()), None], "{what}");
        let t = lw.watch_instants();
        assert_eq!(t[2] - t[1], Duration::ZERO, "{what}: retried at once");
        assert_eq!(lw.lists.load(Ordering::SeqCst), 0, "{what}: no fallback to LIST");
        cancel.cancel();
        task.await.unwrap();
    }
}

/// A server that answers 410 to a streaming list at `""` (the latest data cannot be expired) gets
/// a backoff step before the retry, not a busy loop.
#[tokio::test(start_paused = true)]
async fn expired_answer_to_the_latest_rv_waits_a_backoff_step() {
    let lw = ScriptedWatches::new(true, vec![Err(expired()), Err(expired()), Ok(vec![end("7")])]);
    let (q, cancel, task) = run_reflector(lw.clone(), opts(), ReflectorHooks::default());
    assert_eq!(pop(&q).await, "ReplacedAll[]@7");
    assert_eq!(lw.watch_rvs(), [None, None, None]);
    let t = lw.watch_instants();
    let gaps = [(t[1] - t[0]).as_secs_f64(), (t[2] - t[1]).as_secs_f64()];
    // Jittered up to +100%, plus the millisecond tokio's timer may round a sleep up by.
    assert!((0.8..=1.601).contains(&gaps[0]) && (1.6..=3.201).contains(&gaps[1]), "{gaps:?}");
    cancel.cancel();
    task.await.unwrap();
}

/// Lists "a" at RV 10; every watch request stays pending, never answered.
struct UnansweredWatches {
    watches: AtomicUsize,
}

impl ListerWatcher<Cm> for UnansweredWatches {
    async fn list(&self, _o: &ListOptions) -> Result<ObjectList<Cm>, Error> {
        Ok(listed(vec![obj("a", 5)], "10"))
    }
    async fn watch(&self, _o: &ListOptions) -> Result<WatchStream<Cm>, Error> {
        self.watches.fetch_add(1, Ordering::SeqCst);
        std::future::pending().await
    }
    fn supports_streaming_list(&self) -> bool {
        false
    }
}

/// Pops the next delta within `limit` of paused time (a missing delta fails instead of hanging);
/// returns it with the time it took.
async fn pop_within(q: &RealFifo<Cm>, limit: Duration) -> (String, Duration) {
    let start = tokio::time::Instant::now();
    let d = tokio::time::timeout(limit, pop(q)).await.expect("a delta in time");
    (d, start.elapsed())
}

/// The resync timer keeps running while the reflector waits to retry a watch (429 with a 30 s
/// Retry-After) and while a watch request is waiting for its answer: a 10 s resync period gives
/// a resync every 10 s, no watch being open.
#[tokio::test(start_paused = true)]
async fn resyncs_fire_during_retry_waits_and_while_a_watch_opens() {
    let resync = ReflectorOptions { resync_period: Duration::from_secs(10), ..opts() };
    let busy = || Error::Api {
        status: Box::new(Status { code: 429, reason: "TooManyRequests".into(), ..Default::default() }),
        retry_after: Some(Duration::from_secs(30)),
    };
    // Retry waits.
    let lw = ScriptedWatches::new(false, vec![Err(busy()), Err(busy()), Err(busy())]);
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let r = Arc::new(Reflector::new(lw.clone(), q.clone(), resync.clone(), ReflectorHooks::default()));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    assert_eq!(pop(&q).await.as_str(), "ReplacedAll[b]@50");
    for _ in 0..4 {
        assert_eq!(pop_within(&q, Duration::from_secs(11)).await, ("SyncAll".to_string(), Duration::from_secs(10)));
    }
    assert_eq!(lw.watches.lock().len(), 2, "40 s: the second 429 wait; no watch open");
    cancel.cancel();
    task.await.unwrap();
    // A watch request without an answer.
    let lw = Arc::new(UnansweredWatches { watches: AtomicUsize::new(0) });
    let (q, cancel, task) = run_reflector(lw.clone(), resync, ReflectorHooks::default());
    assert_eq!(pop(&q).await.as_str(), "ReplacedAll[a]@10");
    for _ in 0..3 {
        assert_eq!(pop_within(&q, Duration::from_secs(11)).await, ("SyncAll".to_string(), Duration::from_secs(10)));
    }
    assert_eq!(lw.watches.load(Ordering::SeqCst), 1, "one watch request, still unanswered");
    cancel.cancel();
    task.await.unwrap();
}

fn lost() -> Error {
    Error::Transport { message: "connection reset by peer".into(), failure: informer::TransportFailure::ConnectionLost }
}

fn unavailable_retry_after(secs: u64) -> Error {
    Error::Api {
        status: Box::new(Status { code: 503, reason: "ServiceUnavailable".into(), ..Default::default() }),
        retry_after: Some(Duration::from_secs(secs)),
    }
}

/// A watch whose opening fails with a lost connection (reset, EOF, timed out) or a 5xx with
/// Retry-After is opened again at the same resourceVersion — after the short pause (1–2 s) or
/// exactly the Retry-After — without a relist: the handlers see no Replace, only the next event.
#[tokio::test(start_paused = true)]
async fn watch_opening_blips_rewatch_at_the_same_rv_without_relisting() {
    let lw = ScriptedWatches::new(
        false,
        vec![
            Err(lost()),
            Err(lost()),
            Err(lost()),
            Err(unavailable_retry_after(2)),
            Ok(vec![WatchEvent::Modified(obj("b", 60))]),
        ],
    );
    let (q, cancel, task) = run_reflector(lw.clone(), opts(), ReflectorHooks::default());
    assert_eq!(pop(&q).await, "ReplacedAll[b]@50");
    assert_eq!(pop(&q).await, "Updated:b@60", "the next delta is the event, not a Replace");
    assert_eq!(lw.lists.load(Ordering::SeqCst), 1, "no relist");
    assert_eq!(lw.watch_rvs(), vec![Some("50".to_string()); 5], "every watch at the list's RV");
    let t = lw.watch_instants();
    for (i, pair) in t.windows(2).take(3).enumerate() {
        let gap = pair[1] - pair[0];
        // (A pause is slept to tokio's millisecond: 1.9996 s is 2 s.)
        assert!(gap >= Duration::from_secs(1) && gap <= Duration::from_secs(2), "pause {i} after a reset: {gap:?}");
    }
    assert_eq!(t[4] - t[3], Duration::from_secs(2), "the Retry-After");
    cancel.cancel();
    task.await.unwrap();
}

/// After MAX_WATCH_OPEN_RETRIES retries in a row that fail the same way, the reflector gives up,
/// reports the error and relists; the watch after the relist starts again from the list.
#[tokio::test(start_paused = true)]
async fn watch_opening_failing_past_the_retries_relists() {
    let failures = 1 + informer::reflector::MAX_WATCH_OPEN_RETRIES as usize;
    let lw = ScriptedWatches::new(false, (0..failures).map(|_| Err(lost())).collect());
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let errors: Arc<parking_lot::Mutex<Vec<String>>> = Arc::default();
    let hooks = ReflectorHooks {
        watch_error: Some(Arc::new({
            let errors = errors.clone();
            move |e: &Error| errors.lock().push(e.to_string())
        })),
        ..Default::default()
    };
    let r = Arc::new(Reflector::new(lw.clone(), q.clone(), opts(), hooks));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    assert_eq!(pop(&q).await, "ReplacedAll[b]@50");
    assert_eq!(pop(&q).await, "ReplacedAll[b]@50", "the relist");
    lw.wait_for_watches(failures + 1).await;
    let mut expected = vec![1; failures];
    expected.push(2);
    assert_eq!(lw.lists_before_watches(), expected, "11 openings (10 retries), then the relist, then a watch");
    assert_eq!(*errors.lock(), ["transport error: connection reset by peer"], "reported once, when given up");
    cancel.cancel();
    task.await.unwrap();
}

/// A source made of two closures (client-go's `ListWatch`) feeds a reflector as any other; one
/// that cannot stream lists is listed, then watched.
#[tokio::test(start_paused = true)]
async fn a_list_watch_of_closures_is_listed_and_watched() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let lw = informer::ListWatch::new(
        {
            let src = src.clone();
            move |o: ListOptions| {
                let src = src.clone();
                async move { src.list(&o).await }
            }
        },
        {
            let src = src.clone();
            move |o: ListOptions| {
                let src = src.clone();
                async move { src.watch(&o).await }
            }
        },
    );
    let (q, cancel, task) = run_reflector(Arc::new(lw), opts(), ReflectorHooks::default());
    let first = pop(&q).await;
    assert!(first.starts_with("ReplacedAll[a]@"), "{first}");
    src.add(cm("b", "1"));
    let next = pop(&q).await;
    assert!(next.starts_with("Added:b@"), "{next}");
    assert_eq!(src.list_calls().len(), 1, "listed once, as streaming lists are off");
    cancel.cancel();
    task.await.unwrap();
}

/// A source whose every watch ends with an internal error after a second.
struct Failing {
    lists: AtomicUsize,
    watches: AtomicUsize,
    /// Watches opened before the first relist.
    watches_before_relist: AtomicUsize,
    relisted: tokio::sync::Notify,
}

impl ListerWatcher<Cm> for Failing {
    async fn list(&self, _o: &ListOptions) -> Result<ObjectList<Cm>, Error> {
        if self.lists.fetch_add(1, Ordering::SeqCst) == 1 {
            self.watches_before_relist.store(self.watches.load(Ordering::SeqCst), Ordering::SeqCst);
            self.relisted.notify_one();
        }
        Ok(listed(vec![], "10"))
    }
    async fn watch(&self, _o: &ListOptions) -> Result<WatchStream<Cm>, Error> {
        self.watches.fetch_add(1, Ordering::SeqCst);
        let status =
            Status { code: 500, reason: "InternalError".into(), message: "etcd hiccup".into(), ..Default::default() };
        Ok(Box::pin(futures_util::stream::once(async move {
            // (Simulated time: the watch lasts a second.)
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok(WatchEvent::Error(status))
        })))
    }
    fn supports_streaming_list(&self) -> bool {
        false
    }
}

/// client-go's TestRetryInternalError: a watch ending with an internal error relists at once by
/// default; with `max_internal_error_retry_duration` it is opened again from the last
/// resourceVersion while the first such error is within the window.
#[tokio::test(start_paused = true)]
async fn internal_errors_rewatch_within_the_configured_window() {
    for (window, watches) in [(Duration::ZERO, 1), (Duration::from_secs(30), 32)] {
        let lw = Arc::new(Failing {
            lists: AtomicUsize::new(0),
            watches: AtomicUsize::new(0),
            watches_before_relist: AtomicUsize::new(0),
            relisted: Default::default(),
        });
        let o = ReflectorOptions { max_internal_error_retry_duration: window, ..opts() };
        let (_q, cancel, task) = run_reflector(lw.clone(), o, ReflectorHooks::default());
        tokio::time::timeout(Duration::from_secs(600), lw.relisted.notified()).await.expect("a relist");
        assert_eq!(lw.watches_before_relist.load(Ordering::SeqCst), watches, "window {window:?}");
        cancel.cancel();
        task.await.unwrap();
    }
}

/// An object of a streaming list that the transform refuses is left out of it (client-go's
/// temporary store logs and drops it); the others are listed.
#[tokio::test(start_paused = true)]
async fn a_streaming_list_leaves_out_what_the_transform_refuses() {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let lw = streaming(vec![Ok(rx)]);
    let transform: informer::fifo::Transform<Cm> =
        Arc::new(|o| if o.name() == "bad" { Err("refused".to_string()) } else { Ok(o) });
    let q = Arc::new(RealFifo::<Cm>::new(informer::fifo::RealFifoOptions {
        transform: Some(transform),
        ..Default::default()
    }));
    let r = Reflector::new(lw.clone(), q.clone(), opts(), ReflectorHooks::default());
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let c = cancel.clone();
        async move { r.run(c).await }
    });
    tx.send(WatchEvent::Added(obj("a", 20))).unwrap();
    tx.send(WatchEvent::Added(obj("bad", 21))).unwrap();
    tx.send(WatchEvent::Bookmark { resource_version: "22".into(), initial_events_end: true }).unwrap();
    assert_eq!(pop(&q).await, "ReplacedAll[a]@22");
    assert_eq!(lw.lists.load(Ordering::SeqCst), 0, "no fallback to LIST");
    cancel.cancel();
    task.await.unwrap();
}
