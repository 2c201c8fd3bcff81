//! Reflector behaviour against the in-memory fake source and scripted lister-watchers
//! (client-go reflector_test scenarios), under tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use informer::fake::FakeSource;
use informer::fifo::Queue;
use informer::listwatch::{Status, WatchStream};
use informer::{
    Delta, Error, ListOptions, ListerWatcher, ObjectList, RealFifo, Reflector, ReflectorHooks,
    ReflectorOptions, WatchEvent,
};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;
use tokio_util::sync::CancellationToken;

type Cm = ConfigMap;

fn cm(name: &str, v: &str) -> serde_json::Value {
    json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":name,"namespace":"ns"},"data":{"v":v}})
}

fn opts() -> ReflectorOptions {
    ReflectorOptions {
        name: "test".into(),
        ..Default::default()
    }
}

/// Pops one delta and describes it as (type, key or count, rv).
async fn pop(q: &RealFifo<Cm>) -> String {
    q.pop(1, |mut b, _| {
        let d = b.remove(0);
        match d {
            Delta::ReplacedAll {
                objects,
                resource_version,
            } => {
                let mut names: Vec<_> = objects.iter().map(|o| o.name().to_string()).collect();
                names.sort();
                format!("ReplacedAll[{}]@{resource_version}", names.join(","))
            }
            Delta::Bookmark { resource_version } => format!("Bookmark@{resource_version}"),
            Delta::SyncAll => "SyncAll".into(),
            other => {
                let o = other.object().unwrap();
                format!(
                    "{:?}:{}@{}",
                    other.delta_type(),
                    o.name(),
                    o.resource_version().unwrap_or("")
                )
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
    let r = Arc::new(Reflector::new(
        Arc::new(src.clone()),
        q.clone(),
        opts(),
        ReflectorHooks::default(),
    ));
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
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let r = Arc::new(Reflector::new(
        Arc::new(src.clone()),
        q.clone(),
        opts(),
        ReflectorHooks::default(),
    ));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    assert_eq!(pop(&q).await, "ReplacedAll[a]@1");
    src.modify_drop_watch(cm("a", "2"));
    src.add_drop_watch(cm("c", "1"));
    src.reset_watch();
    // The re-watch at RV 1 gets 410; after the backoff the reflector relists at its last RV.
    assert_eq!(pop(&q).await, "ReplacedAll[a,c]@3");
    let lists = src.list_calls();
    assert_eq!(lists.len(), 2);
    assert_eq!(
        lists[1].resource_version.as_deref(),
        Some("1"),
        "relist at the last synced RV, not \"\""
    );
    assert_eq!(
        lists[1].limit, None,
        "no paging for a list at a specific RV"
    );
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
    let r = Arc::new(Reflector::new(
        Arc::new(src.clone()),
        q.clone(),
        opts(),
        hooks,
    ));
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
    assert!(
        waited >= Duration::from_millis(2400) && waited < Duration::from_millis(4800),
        "{waited:?}"
    );
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
        Ok(ObjectList {
            items: vec![o],
            resource_version: "10".into(),
            continue_token: None,
            remaining_item_count: None,
        })
    }
    async fn watch(&self, _o: &ListOptions) -> Result<WatchStream<Cm>, Error> {
        self.watches.fetch_add(1, Ordering::SeqCst);
        let next = {
            let mut s = self.script.lock();
            if s.is_empty() {
                None
            } else {
                Some(s.remove(0))
            }
        };
        match next {
            // Script exhausted: a watch that stays open.
            None => Ok(Box::pin(futures_util::stream::pending())),
            Some(Err(e)) => Err(e),
            Some(Ok(events)) => Ok(Box::pin(futures_util::stream::iter(
                events.into_iter().map(Ok),
            ))),
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
            Ok(vec![WatchEvent::Error(Status {
                code: 429,
                reason: "TooManyRequests".into(),
                ..Default::default()
            })]),
        ]),
    });
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let r = Arc::new(Reflector::new(
        lw.clone(),
        q.clone(),
        opts(),
        ReflectorHooks::default(),
    ));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
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
    let q = Arc::new(RealFifo::<Cm>::new(Default::default()));
    let r = Arc::new(Reflector::new(
        lw.clone(),
        q.clone(),
        opts(),
        ReflectorHooks::default(),
    ));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    assert_eq!(pop(&q).await, "ReplacedAll[a]@10");
    assert_eq!(
        pop(&q).await,
        "ReplacedAll[a]@10",
        "an empty sub-second watch leads to a relist"
    );
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
    let r = Arc::new(Reflector::new(
        lw.clone(),
        q.clone(),
        opts(),
        ReflectorHooks::default(),
    ));
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
    assert_eq!(
        lw.lists.load(Ordering::SeqCst),
        1,
        "a clean close does not relist"
    );
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
    let o = ReflectorOptions {
        resync_period: Duration::from_secs(30),
        ..opts()
    };
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
