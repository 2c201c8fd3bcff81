//! SharedIndexInformer behaviour against the in-memory fake source (client-go
//! shared_informer_test and controller_test scenarios).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Ev, Gate, Rec, Recorder, cache_view, spawn, wait_signal};
use futures_util::StreamExt;
use informer::fake::FakeSource;
use informer::{
    BacklogPolicy, Error, HandlerFns, HandlerOptions, Indexers, InformerError, InformerOptions, LabelSelector,
    Notification, QueueKind, SharedIndexInformer, Status,
};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

type Cm = ConfigMap;
const LIMIT: Duration = Duration::from_secs(20);

fn cm(name: &str, v: &str) -> serde_json::Value {
    json!({"apiVersion":"v1","kind":"ConfigMap",
           "metadata":{"name":name,"namespace":"ns","labels":{"app": format!("app-{}", name.len() % 2), "v": v}},
           "data":{"v":v}})
}

fn source_view(src: &FakeSource) -> BTreeMap<String, String> {
    src.items().into_iter().map(|(k, v)| (k, v["metadata"]["resourceVersion"].as_str().unwrap().to_string())).collect()
}

fn informer(src: &FakeSource, resync: Duration) -> SharedIndexInformer<Cm> {
    SharedIndexInformer::with_options(src.clone(), InformerOptions::default().name("cms").resync_period(resync))
}

#[tokio::test(start_paused = true)]
async fn indexers_before_and_after_start() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    src.add(cm("bb", "1"));
    let inf = informer(&src, Duration::ZERO);
    inf.add_indexers(Indexers::new().with("by-app", |o: &informer::Object<Cm>| {
        Ok(o.label("app").map(|s| vec![s.to_string()]).unwrap_or_default())
    }))
    .unwrap();
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    assert_eq!(inf.indexer().by_index("by-app", "app-1").unwrap().len(), 1);
    // After start: indexes existing objects.
    inf.add_indexers(
        Indexers::new()
            .with("by-v", |o: &informer::Object<Cm>| Ok(o.label("v").map(|s| vec![s.to_string()]).unwrap_or_default())),
    )
    .unwrap();
    assert_eq!(inf.indexer().by_index("by-v", "1").unwrap().len(), 2);
    let mut values = inf.indexer().list_index_func_values("by-app");
    values.sort();
    assert_eq!(values, ["app-0", "app-1"]);
    // A conflicting name is refused.
    assert!(matches!(
        inf.add_indexers(Indexers::new().with("by-v", |_: &informer::Object<Cm>| Ok(vec![]))),
        Err(InformerError::Index(_))
    ));
    cancel.cancel();
    run.await.unwrap();
    assert!(matches!(
        inf.add_indexers(Indexers::new().with("late", |_: &informer::Object<Cm>| Ok(vec![]))),
        Err(InformerError::Stopped(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn an_object_whose_index_function_fails_is_cached_and_heard_of() {
    for queue in [QueueKind::RealFifo, QueueKind::DeltaFifo] {
        let src = FakeSource::new();
        src.add(cm("a", "1"));
        src.add(cm("bad", "1"));
        let inf = SharedIndexInformer::with_options(src.clone(), InformerOptions::<Cm>::default().queue(queue));
        inf.add_indexers(Indexers::new().with("by-v", |o: &informer::Object<Cm>| match o.name() {
            "bad" => Err(informer::IndexFuncError("no version".into())),
            _ => Ok(o.label("v").map(|s| vec![s.to_string()]).unwrap_or_default()),
        }))
        .unwrap();
        let r = Recorder::new();
        inf.add_event_handler(Rec(r.clone())).unwrap();
        let (cancel, run) = spawn(&inf);
        wait_signal(&inf.synced(), LIMIT).await;
        r.wait_for("the initial list", LIMIT, |r| r.view() == source_view(&src)).await;
        assert_eq!(cache_view(&inf), source_view(&src), "{queue:?}: the failing object is cached");
        assert_eq!(inf.indexer().by_index("by-v", "1").unwrap().len(), 1, "{queue:?}: outside the failing index");
        // A relist with the failing object still applies everything else, tombstones included.
        src.delete_drop_watch(cm("a", "1"));
        src.add_drop_watch(cm("c", "1"));
        src.modify_drop_watch(cm("bad", "2"));
        src.reset_watch();
        let want = source_view(&src);
        r.wait_for("the relist", LIMIT, |r| r.view() == want).await;
        assert_eq!(cache_view(&inf), want, "{queue:?}");
        let mut indexed: Vec<String> =
            inf.indexer().by_index("by-v", "1").unwrap().iter().map(|o| o.name().to_string()).collect();
        indexed.sort();
        assert_eq!(indexed, ["c"], "{queue:?}");
        cancel.cancel();
        run.await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn an_informer_whose_run_is_dropped_is_stopped() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src, Duration::ZERO);
    let r = Recorder::new();
    let reg = inf.add_event_handler(Rec(r.clone())).unwrap();
    let (_cancel, run) = spawn(&inf);
    wait_signal(&reg.synced(), LIMIT).await;
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());
    assert!(inf.is_stopped());
    assert!(inf.stopped().is_set());
    assert!(matches!(inf.add_event_handler(Rec(Recorder::new())), Err(InformerError::Stopped(_))));
    assert_eq!(r.len(), 1);
}

fn resyncs(r: &Recorder) -> usize {
    r.count(|e| matches!(e, Ev::Update { old, new, .. } if old == new))
}

#[tokio::test(start_paused = true)]
async fn per_listener_resync_periods() {
    for queue in [QueueKind::RealFifo, QueueKind::DeltaFifo] {
        per_listener_resync_periods_with(queue).await;
    }
}

async fn per_listener_resync_periods_with(queue: QueueKind) {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = SharedIndexInformer::with_options(
        src.clone(),
        InformerOptions::<Cm>::default().queue(queue).resync_period(Duration::from_secs(1)),
    );
    let (r0, r2, r3) = (Recorder::new(), Recorder::new(), Recorder::new());
    let h0 = inf.add_event_handler_with_resync(Rec(r0.clone()), Duration::ZERO).unwrap();
    let h2 = inf.add_event_handler_with_resync(Rec(r2.clone()), Duration::from_secs(2)).unwrap();
    let h3 = inf.add_event_handler_with_resync(Rec(r3.clone()), Duration::from_secs(3)).unwrap();
    assert_eq!(
        (h0.resync_period(), h2.resync_period(), h3.resync_period()),
        (Duration::ZERO, Duration::from_secs(2), Duration::from_secs(3))
    );
    let (cancel, run) = spawn(&inf);
    for h in [&h0, &h2, &h3] {
        wait_signal(&h.synced(), Duration::from_millis(500)).await;
    }
    // The reflector checks every second; each listener is due at its own period.
    let mut expected = (0, 0, 0);
    for t in 1..=6u64 {
        tokio::time::advance(Duration::from_secs(1)).await;
        if t % 2 == 0 {
            expected.1 += 1;
        }
        if t % 3 == 0 {
            expected.2 += 1;
        }
        r2.wait_for("2s resyncs", Duration::from_millis(100), |r| resyncs(r) == expected.1).await;
        r3.wait_for("3s resyncs", Duration::from_millis(100), |r| resyncs(r) == expected.2).await;
        assert_eq!(resyncs(&r0), 0, "a 0 period listener never resyncs");
    }
    assert_eq!(expected, (0, 3, 2));
    for r in [&r0, &r2, &r3] {
        r.assert_no_errors();
    }
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn resync_check_period_lowered_before_start_and_kept_after() {
    let src = FakeSource::new();
    let inf = informer(&src, Duration::from_secs(10));
    let a = inf.add_event_handler(HandlerFns::new()).unwrap();
    assert_eq!(a.resync_period(), Duration::from_secs(10));
    let b = inf.add_event_handler_with_resync(HandlerFns::new(), Duration::from_secs(3)).unwrap();
    assert_eq!(inf.resync_check_period(), Duration::from_secs(3));
    assert_eq!(b.resync_period(), Duration::from_secs(3));
    assert_eq!(a.resync_period(), Duration::from_secs(10));
    let c = inf.add_event_handler_with_resync(HandlerFns::new(), Duration::from_millis(100)).unwrap();
    assert_eq!(c.resync_period(), Duration::from_secs(1), "raised to the 1s minimum");
    assert_eq!(inf.resync_check_period(), Duration::from_secs(1));
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    let informer_without_resync = informer(&src, Duration::ZERO);
    let z = informer_without_resync.add_event_handler_with_resync(HandlerFns::new(), Duration::from_secs(5)).unwrap();
    assert_eq!(z.resync_period(), Duration::ZERO, "an informer created without resync never resyncs");
    // After start the check period cannot change: a smaller period is raised to it.
    let d = inf.add_event_handler_with_resync(HandlerFns::new(), Duration::from_secs(1)).unwrap();
    assert_eq!(d.resync_period(), Duration::from_secs(1));
    assert_eq!(inf.resync_check_period(), Duration::from_secs(1));
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(
        informer::shared_informer::determine_resync_period(Duration::from_secs(5), Duration::ZERO),
        Duration::ZERO
    );
    assert_eq!(
        informer::shared_informer::determine_resync_period(Duration::from_secs(1), Duration::from_secs(3)),
        Duration::from_secs(3)
    );
}

#[tokio::test(start_paused = true)]
async fn watch_disruption_is_recovered_by_relist() {
    for queue in [QueueKind::RealFifo, QueueKind::DeltaFifo] {
        let src = FakeSource::new();
        src.add(cm("a", "1"));
        src.add(cm("b", "1"));
        let inf = SharedIndexInformer::with_options(src.clone(), InformerOptions::<Cm>::default().queue(queue));
        let (r1, r2) = (Recorder::new(), Recorder::new());
        inf.add_event_handler(Rec(r1.clone())).unwrap();
        let (cancel, run) = spawn(&inf);
        wait_signal(&inf.synced(), LIMIT).await;
        inf.add_event_handler(Rec(r2.clone())).unwrap();
        // Missed events: a change and an addition without watch events, then the watch breaks
        // and its history is gone (410) ⇒ relist.
        src.modify_drop_watch(cm("a", "2"));
        src.add_drop_watch(cm("c", "1"));
        src.delete_drop_watch(cm("b", "1"));
        src.reset_watch();
        let want = source_view(&src);
        for r in [&r1, &r2] {
            r.wait_for("relist", LIMIT, |r| r.view() == want).await;
            r.assert_no_errors();
            assert_eq!(
                r.count(|e| matches!(e, Ev::Delete { key, tombstone: true } if key == "ns/b")),
                1,
                "{queue:?}: the vanished object is a tombstone"
            );
        }
        assert_eq!(cache_view(&inf), want);
        cancel.cancel();
        run.await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn list_errors_reach_the_watch_error_handler() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    src.set_list_error(Some(Error::api(Status {
        code: 500,
        reason: "InternalError".into(),
        message: "boom".into(),
        ..Default::default()
    })));
    let inf = informer(&src, Duration::ZERO);
    let errors = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(tokio::sync::Notify::new());
    inf.set_watch_error_handler({
        let (errors, seen, src) = (errors.clone(), seen.clone(), src.clone());
        move |e: &Error| {
            assert_eq!(e.code(), Some(500));
            if errors.fetch_add(1, Ordering::SeqCst) == 1 {
                src.set_list_error(None);
            }
            seen.notify_one();
        }
    })
    .unwrap();
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    assert_eq!(errors.load(Ordering::SeqCst), 2);
    assert_eq!(inf.indexer().len(), 1);
    assert!(matches!(inf.set_watch_error_handler(|_| {}), Err(InformerError::AlreadyStarted(_))));
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn transform_is_applied_and_only_settable_before_start() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src, Duration::ZERO);
    inf.set_transform(|o: informer::Object<Cm>| {
        let mut v: serde_json::Value = serde_json::from_slice(&o.raw_json()).unwrap();
        v["data"]["v"] = json!("transformed");
        informer::Object::from_json(serde_json::to_vec(&v).unwrap()).map_err(|e| e.to_string())
    })
    .unwrap();
    let r = Recorder::new();
    inf.add_event_handler(Rec(r.clone())).unwrap();
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    src.add(cm("b", "1"));
    r.wait_for("b", LIMIT, |r| r.view().len() == 2).await;
    for o in inf.indexer().list() {
        let data = o.get().unwrap().data.clone().unwrap();
        assert_eq!(data["v"], "transformed");
    }
    assert!(matches!(inf.set_transform(Ok), Err(InformerError::AlreadyStarted(_))));
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn registrations_sync_only_after_their_initial_adds_and_states_are_tracked() {
    let src = FakeSource::new();
    for i in 0..20 {
        src.add(cm(&format!("o{i}"), "1"));
    }
    let inf = informer(&src, Duration::ZERO);
    assert!(!inf.is_started() && !inf.is_stopped());
    let early = Recorder::new();
    let reg = inf.add_event_handler(Rec(early.clone())).unwrap();
    assert!(!reg.has_synced());
    let (cancel, run) = spawn(&inf);
    wait_signal(&reg.synced(), LIMIT).await;
    assert!(inf.has_synced() && inf.is_started());
    assert_eq!(early.count(|e| matches!(e, Ev::Add { initial: true, .. })), 20);
    // Handlers get the cache's own handles: distribution never copies an object.
    let mut stream = inf.subscribe().unwrap();
    let Some(Notification::Add { obj, .. }) = stream.next().await else { panic!("expected a synthetic add") };
    assert!(obj.ptr_eq(&inf.indexer().get(&obj).unwrap()));
    drop(stream);
    assert_eq!(inf.last_sync_resource_version(), "20");
    // A second run is refused (returns at once).
    inf.run(tokio_util::sync::CancellationToken::new()).await;
    cancel.cancel();
    run.await.unwrap();
    assert!(inf.is_stopped());
    assert!(matches!(inf.add_event_handler(HandlerFns::new()), Err(InformerError::Stopped(_))));
    // Remove after stop is fine and idempotent.
    inf.remove_event_handler(&reg).unwrap();
    inf.remove_event_handler(&reg).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_handler_is_not_synced_before_its_synthetic_adds_are_delivered() {
    let src = FakeSource::new();
    for i in 0..10 {
        src.add(cm(&format!("o{i}"), "1"));
    }
    let inf = informer(&src, Duration::ZERO);
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    // The late handler blocks in its first call until released.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = parking_lot::Mutex::new(rx);
    let entered = Arc::new(tokio::sync::Notify::new());
    let r = Recorder::new();
    let reg = inf
        .add_event_handler_with_options(
            HandlerFns::new().on_add({
                let (r, entered) = (r.clone(), entered.clone());
                move |o, initial| {
                    entered.notify_one();
                    rx.lock().recv().unwrap();
                    r.add(o, initial);
                }
            }),
            HandlerOptions::new().name("late").dedicated_thread(),
        )
        .unwrap();
    tokio::time::timeout(LIMIT, entered.notified()).await.unwrap();
    assert!(!reg.has_synced(), "synced before its initial adds were delivered");
    assert_eq!(reg.backlog().len, 9);
    for _ in 0..10 {
        tx.send(()).unwrap();
    }
    wait_signal(&reg.synced(), LIMIT).await;
    assert_eq!(r.count(|e| matches!(e, Ev::Add { initial: true, .. })), 10);
    r.assert_no_errors();
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_added_and_removed_while_events_flow_miss_nothing_and_see_nothing_twice() {
    let src = FakeSource::new();
    let inf = informer(&src, Duration::ZERO);
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    let writer = tokio::spawn({
        let src = src.clone();
        async move {
            for i in 0..400u32 {
                let name = format!("o{}", i % 37);
                match i % 5 {
                    0 | 1 => {
                        src.add(cm(&name, &i.to_string()));
                    }
                    2 | 3 => {
                        src.modify(cm(&name, &i.to_string()));
                    }
                    _ => {
                        src.delete(cm(&name, ""));
                    }
                }
                if i % 20 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }
    });
    let mut joined = Vec::new();
    for i in 0..8 {
        let r = Arc::new(Recorder {
            strict_deletes: false, // the fake may delete keys never added
            ..Default::default()
        });
        let reg = inf.add_event_handler(Rec(r.clone())).unwrap();
        joined.push((r, reg));
        if i % 2 == 1 {
            let (_, reg) = &joined[i - 1];
            inf.remove_event_handler(reg).unwrap();
            inf.remove_event_handler(reg).unwrap(); // idempotent
        }
        tokio::task::yield_now().await;
    }
    writer.await.unwrap();
    let marker = src.add(cm("zz-marker", "x"));
    let want = source_view(&src);
    wait_for_cache(&inf, &want).await;
    for (i, (r, reg)) in joined.iter().enumerate() {
        if i % 2 == 0 {
            assert!(reg.is_removed());
            continue;
        }
        r.wait_for("handler converges", LIMIT, |r| r.view() == want).await;
        r.assert_no_errors();
        assert!(reg.has_synced());
    }
    assert!(marker > 0);
    cancel.cancel();
    run.await.unwrap();
    for (_, reg) in &joined {
        assert!(reg.finished().is_set(), "every consumer ended");
    }
}

async fn wait_for_cache(inf: &SharedIndexInformer<Cm>, want: &BTreeMap<String, String>) {
    let r = Recorder::new();
    let reg = inf.add_event_handler(Rec(r.clone())).unwrap();
    let inf2 = inf.clone();
    r.wait_for("cache converges", LIMIT, |_| &cache_view(&inf2) == want).await;
    inf.remove_event_handler(&reg).unwrap();
}

#[tokio::test]
async fn removing_a_foreign_registration_is_an_error() {
    let src = FakeSource::new();
    let a = informer(&src, Duration::ZERO);
    let b = informer(&src, Duration::ZERO);
    let reg = a.add_event_handler(HandlerFns::new()).unwrap();
    assert!(matches!(b.remove_event_handler(&reg), Err(InformerError::ForeignRegistration(_))));
    a.remove_event_handler(&reg).unwrap();
    assert!(reg.is_removed());
    // One handler shared by two informers (`Arc<H>` is a handler).
    let shared = Arc::new(HandlerFns::<Cm>::new());
    a.add_event_handler(shared.clone()).unwrap();
    b.add_event_handler(shared.clone()).unwrap();
    assert_eq!(Arc::strong_count(&shared), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hammer_against_the_fake_source_converges() {
    for queue in [QueueKind::RealFifo, QueueKind::DeltaFifo] {
        let src = FakeSource::new();
        let inf = SharedIndexInformer::with_options(
            src.clone(),
            InformerOptions::<Cm>::default().queue(queue).resync_period(Duration::from_millis(50)),
        );
        let recs: Vec<_> = (0..3).map(|_| Arc::new(Recorder { strict_deletes: false, ..Default::default() })).collect();
        inf.add_event_handler(Rec(recs[0].clone())).unwrap();
        inf.add_event_handler_with_resync(Rec(recs[1].clone()), Duration::from_secs(1)).unwrap();
        inf.add_event_handler_with_options(
            Rec(recs[2].clone()),
            HandlerOptions::new().backlog(BacklogPolicy::Bounded(8)),
        )
        .unwrap();
        let (cancel, run) = spawn(&inf);
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let src = src.clone();
                tokio::spawn(async move {
                    use rand::Rng;
                    for i in 0..300u32 {
                        let (k, op) = {
                            let mut rng = rand::rng();
                            (rng.random_range(0..25u32), rng.random_range(0..10u32))
                        };
                        let name = format!("k{k}");
                        let exists = src.items().iter().any(|(key, _)| key == &format!("ns/{name}"));
                        let v = format!("{w}-{i}");
                        match (exists, op) {
                            (false, _) => {
                                src.add(cm(&name, &v));
                            }
                            (true, 0..=6) => {
                                src.modify(cm(&name, &v));
                            }
                            (true, _) => {
                                src.delete(cm(&name, &v));
                            }
                        }
                        if i % 50 == 0 {
                            src.reset_watch(); // forces relists mid-stream
                        }
                        if i % 10 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        for w in writers {
            w.await.unwrap();
        }
        src.add(cm("final-marker", "x"));
        let want = source_view(&src);
        for r in &recs {
            r.wait_for("handler converges", LIMIT, |r| r.view() == want).await;
            r.assert_no_errors();
        }
        assert_eq!(cache_view(&inf), want, "{queue:?}");
        cancel.cancel();
        run.await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn panicking_handlers_are_caught_and_do_not_stop_delivery() {
    let src = FakeSource::new();
    src.add(cm("boom", "1"));
    src.add(cm("ok", "1"));
    let inf = informer(&src, Duration::ZERO);
    let good = Recorder::new();
    let survived = Recorder::new();
    let panicky = inf
        .add_event_handler_with_options(
            HandlerFns::new().on_add({
                let survived = survived.clone();
                move |o: &informer::Object<Cm>, initial| {
                    if o.name() == "boom" {
                        panic!("handler bug");
                    }
                    survived.add(o, initial);
                }
            }),
            HandlerOptions::new().name("panicky"),
        )
        .unwrap();
    let good_reg = inf.add_event_handler(Rec(good.clone())).unwrap();
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    src.add(cm("boom2", "1")); // does not panic (different name)
    src.add(cm("late", "1"));
    survived.wait_for("events after the panic", LIMIT, |r| r.view().len() == 3).await;
    good.wait_for("all events", LIMIT, |r| r.view().len() == 4).await;
    assert_eq!(panicky.panics(), 1);
    assert_eq!(panicky.delivered(), 4);
    assert!(!inf.is_stopped());
    // The initial add it panicked on was not handled: the handler never syncs (client-go's
    // tracker), while the others do.
    assert!(!panicky.has_synced());
    assert!(good_reg.has_synced());
    cancel.cancel();
    run.await.unwrap();
}

/// A handler registered with `PanicPolicy::Abort` takes the process down on a panic, as
/// client-go's `HandleCrash` does: this test runs itself again as a child process, where the
/// handler panics, and sees the child abort.
#[cfg(unix)]
#[test]
fn a_handler_that_must_not_panic_aborts_the_process() {
    const CHILD: &str = "INFORMER_TEST_ABORTING_HANDLER";
    if std::env::var_os(CHILD).is_some() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let src = FakeSource::new();
            src.add(cm("boom", "1"));
            let inf = informer(&src, Duration::ZERO);
            let opts = HandlerOptions::new().name("strict").on_panic(informer::PanicPolicy::Abort);
            let handler = HandlerFns::new().on_add(|_: &informer::Object<Cm>, _| panic!("handler bug"));
            inf.add_event_handler_with_options(handler, opts).unwrap();
            let (_cancel, _run) = spawn(&inf);
            wait_signal(&inf.synced(), LIMIT).await;
            // Not aborted: the child ends, and the parent's check fails.
            tokio::time::sleep(LIMIT).await;
        });
        return;
    }
    let me = std::env::current_exe().unwrap();
    let out = std::process::Command::new(me)
        .args(["--exact", "a_handler_that_must_not_panic_aborts_the_process", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    const SIGABRT: i32 = 6;
    assert_eq!(out.status.signal(), Some(SIGABRT), "{:?}", out.status);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("event handler strict panicked on ns/boom: handler bug; aborting"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_handler_does_not_delay_the_others() {
    let src = FakeSource::new();
    let inf = informer(&src, Duration::ZERO);
    let gate = Gate::new();
    gate.close(); // the slow handler blocks on its first call
    let slow = Recorder::new();
    let slow_reg = inf
        .add_event_handler_with_options(
            Rec2 { gate: gate.clone(), rec: slow.clone() },
            HandlerOptions::new().name("slow").dedicated_thread(),
        )
        .unwrap();
    let fast = Recorder::new();
    inf.add_event_handler(Rec(fast.clone())).unwrap();
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    for i in 0..200 {
        src.add(cm(&format!("o{i}"), "1"));
    }
    fast.wait_for("fast handler gets everything", LIMIT, |r| r.len() == 200).await;
    assert_eq!(slow.len(), 0);
    let backlog = slow_reg.backlog();
    assert!(backlog.len >= 199, "{backlog:?}");
    assert!(backlog.oldest_age.is_some());
    gate.open();
    slow.wait_for("slow handler catches up", LIMIT, |r| r.len() == 200).await;
    assert_eq!(slow_reg.backlog().len, 0);
    slow.assert_no_errors();
    cancel.cancel();
    run.await.unwrap();
}

/// A handler that passes a gate before every call.
struct Rec2 {
    gate: Arc<Gate>,
    rec: Arc<Recorder>,
}

impl informer::ResourceEventHandler<Cm> for Rec2 {
    fn on_add(&self, obj: &informer::Object<Cm>, initial: bool) {
        self.gate.pass();
        self.rec.add(obj, initial)
    }
    fn on_update(&self, old: &informer::Object<Cm>, new: &informer::Object<Cm>) {
        self.gate.pass();
        self.rec.update(old, new)
    }
    fn on_delete(&self, d: &informer::DeletedObject<Cm>) {
        self.gate.pass();
        self.rec.delete(d)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounded_backlog_overflows_and_converges_to_the_final_state() {
    let src = FakeSource::new();
    for i in 0..10 {
        src.add(cm(&format!("o{i}"), "0"));
    }
    let inf = informer(&src, Duration::ZERO);
    let gate = Gate::new();
    let rec = Recorder::new();
    let reg = inf
        .add_event_handler_with_options(
            Rec2 { gate: gate.clone(), rec: rec.clone() },
            HandlerOptions::new().name("bounded").backlog(BacklogPolicy::Bounded(5)).dedicated_thread(),
        )
        .unwrap();
    let (cancel, run) = spawn(&inf);
    wait_signal(&reg.synced(), LIMIT).await;
    gate.close();
    // 60 changes while the handler is blocked: updates, deletes of seen keys, new keys.
    for round in 1..=4 {
        for i in 0..10 {
            src.modify(cm(&format!("o{i}"), &round.to_string()));
        }
    }
    for i in 0..5 {
        src.delete(cm(&format!("o{i}"), ""));
    }
    for i in 10..25 {
        src.add(cm(&format!("o{i}"), "new"));
    }
    let want = source_view(&src);
    let inf2 = inf.clone();
    // Wait until the cache has applied everything (the handler is still blocked).
    let probe = Recorder::new();
    let probe_reg = inf.add_event_handler(Rec(probe.clone())).unwrap();
    probe.wait_for("cache", LIMIT, |_| cache_view(&inf2) == want).await;
    inf.remove_event_handler(&probe_reg).unwrap();
    assert!(reg.backlog().len <= 5, "{:?}", reg.backlog());
    assert!(reg.overflows() >= 1);
    gate.open();
    rec.wait_for("bounded handler converges", LIMIT, |r| r.view() == want).await;
    rec.assert_no_errors();
    assert!(rec.len() < 10 + 60, "intermediate states were dropped ({} events)", rec.len());
    assert!(rec.count(|e| matches!(e, Ev::Delete { tombstone: true, .. })) >= 1);
    cancel.cancel();
    run.await.unwrap();
}

// Real time: a dedicated handler thread is invisible to tokio's paused clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_leaves_no_task_running() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src, Duration::from_secs(1));
    let owned = Arc::new(());
    let regs: Vec<_> = (0..3)
        .map(|i| {
            let owned = owned.clone();
            let opts = if i == 2 { HandlerOptions::new().dedicated_thread() } else { HandlerOptions::new() };
            inf.add_event_handler_with_options(
                HandlerFns::new().on_add(move |_, _| {
                    let _ = &owned;
                }),
                opts,
            )
            .unwrap()
        })
        .collect();
    let mut stream = inf.subscribe().unwrap();
    let (cancel, run) = spawn(&inf);
    for r in &regs {
        wait_signal(&r.synced(), LIMIT).await;
    }
    assert!(matches!(stream.next().await, Some(Notification::Add { is_in_initial_list: true, .. })));
    cancel.cancel();
    run.await.unwrap();
    for r in &regs {
        assert!(r.finished().is_set());
        assert!(r.is_removed());
    }
    assert!(stream.next().await.is_none(), "the stream ends with the informer");
    drop(regs);
    drop(inf);
    assert_eq!(Arc::strong_count(&owned), 1, "every handler (and the task holding it) was dropped");
}

#[tokio::test(start_paused = true)]
async fn notification_stream_receives_changes_and_dropping_it_unsubscribes() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src, Duration::ZERO);
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    let mut stream = inf.subscribe().unwrap();
    match stream.next().await.unwrap() {
        Notification::Add { obj, is_in_initial_list } => assert!(is_in_initial_list && obj.name() == "a"),
        other => panic!("{other:?}"),
    }
    wait_signal(&stream.registration().synced(), LIMIT).await;
    src.modify(cm("a", "2"));
    src.delete(cm("a", ""));
    assert!(matches!(stream.next().await, Some(Notification::Update { .. })));
    assert!(matches!(stream.next().await, Some(Notification::Delete(_))));
    assert_eq!(inf.registrations().len(), 1);
    drop(stream);
    assert_eq!(inf.registrations().len(), 0);
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn listers_with_selectors() {
    let src = FakeSource::new();
    for (ns, name, app) in [("a", "x", "web"), ("a", "y", "db"), ("b", "x", "web")] {
        src.add(json!({"metadata":{"name":name,"namespace":ns,"labels":{"app":app}}}));
    }
    let inf = informer(&src, Duration::ZERO);
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    let l = inf.lister();
    let web: LabelSelector = "app=web".parse().unwrap();
    let names = |v: Vec<informer::Object<Cm>>| {
        let mut k: Vec<String> = v.iter().map(|o| o.key().to_string()).collect();
        k.sort();
        k
    };
    assert_eq!(names(l.list(&web)), ["a/x", "b/x"]);
    assert_eq!(names(l.list(&LabelSelector::everything())).len(), 3);
    assert_eq!(names(l.by_namespace("a").list(&web)), ["a/x"]);
    assert_eq!(names(l.by_namespace("a").list(&"app notin (web)".parse().unwrap())), ["a/y"]);
    assert_eq!(names(l.by_namespace("").list(&web)).len(), 2);
    assert!(l.by_namespace("b").get("x").is_some());
    assert!(l.by_namespace("b").get("y").is_none());
    assert!(l.get("a/y").is_some());
    assert!("app in (".parse::<LabelSelector>().is_err());
    cancel.cancel();
    run.await.unwrap();
}

#[test]
fn filtering_handler_transitions() {
    use informer::{FilteringHandler, Object};
    let r = Recorder::new();
    let h = FilteringHandler::new(|o: &Object<Cm>| o.label("pass") == Some("y"), Rec(r.clone()));
    let obj = |rv: &str, pass: &str| {
        Object::<Cm>::from_json(format!(
            r#"{{"metadata":{{"name":"a","namespace":"ns","resourceVersion":"{rv}","labels":{{"pass":"{pass}"}}}}}}"#
        ))
        .unwrap()
    };
    use informer::ResourceEventHandler;
    h.on_add(&obj("1", "n"), true); // filtered
    h.on_update(&obj("1", "n"), &obj("2", "y")); // only new ⇒ add(new, false)
    h.on_update(&obj("2", "y"), &obj("3", "y")); // both ⇒ update
    h.on_update(&obj("3", "y"), &obj("4", "n")); // only old ⇒ delete(old)
    h.on_update(&obj("4", "n"), &obj("5", "n")); // neither ⇒ nothing
    h.on_delete(&informer::DeletedObject::Object(obj("5", "n"))); // filtered
    assert_eq!(
        *r.events.lock(),
        [
            Ev::Add { key: "ns/a".into(), rv: "2".into(), initial: false },
            Ev::Update { key: "ns/a".into(), old: "2".into(), new: "3".into() },
            Ev::Delete { key: "ns/a".into(), tombstone: false },
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn metrics_are_recorded() {
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = informer::InformerMetrics::new(&mut registry);
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = SharedIndexInformer::with_options(
        src.clone(),
        InformerOptions::<Cm>::default().name("cms").metrics(metrics.clone()),
    );
    let reg = inf
        .add_event_handler_with_options(
            HandlerFns::new().on_update(|_, _| panic!("counted")),
            HandlerOptions::new().name("h"),
        )
        .unwrap();
    let (cancel, run) = spawn(&inf);
    wait_signal(&reg.synced(), LIMIT).await;
    src.modify(cm("a", "2"));
    let r = Recorder::new();
    let probe = inf.add_event_handler(Rec(r.clone())).unwrap();
    wait_signal(&probe.synced(), LIMIT).await;
    src.modify(cm("a", "3"));
    r.wait_for("update", LIMIT, |r| r.count(|e| matches!(e, Ev::Update { new, .. } if new == "3")) == 1).await;
    assert_eq!(metrics.lists("cms", "initial"), 1);
    assert_eq!(metrics.events("cms", "add"), 1);
    assert_eq!(metrics.events("cms", "update"), 2);
    assert_eq!(metrics.store_objects("cms"), 1);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains("informer_reflector_watches_total"), "{text}");
    assert!(text.contains(r#"informer_handler_backlog{informer="cms",handler="h"}"#), "{text}");
    // A broken watch whose history is gone relists (reason "relist").
    src.modify_drop_watch(cm("a", "4"));
    src.reset_watch();
    r.wait_for("relist", LIMIT, |r| r.count(|e| matches!(e, Ev::Update { new, .. } if new == "4")) == 1).await;
    assert_eq!(metrics.lists("cms", "relist"), 1);
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(metrics.handler_panics("cms", "h"), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_can_be_added_from_a_plain_thread_after_start() {
    let src = FakeSource::new();
    src.add(cm("a", "1"));
    let inf = informer(&src, Duration::ZERO);
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    let r = Recorder::new();
    let reg = std::thread::spawn({
        let (inf, r) = (inf.clone(), r.clone());
        move || inf.add_event_handler(Rec(r)).unwrap()
    })
    .join()
    .unwrap();
    wait_signal(&reg.synced(), LIMIT).await;
    assert_eq!(r.count(|e| matches!(e, Ev::Add { initial: true, .. })), 1);
    inf.shutdown_event_handler(&reg).await.unwrap();
    assert!(reg.finished().is_set());
    src.add(cm("b", "1"));
    let probe = Recorder::new();
    let p = inf.add_event_handler(Rec(probe.clone())).unwrap();
    wait_signal(&p.synced(), LIMIT).await;
    probe.wait_for("b", LIMIT, |r| r.view().len() == 2).await;
    assert_eq!(r.len(), 1, "a removed handler receives nothing more");
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_bounded_stream_converges_when_read_late() {
    let src = FakeSource::new();
    for i in 0..5 {
        src.add(cm(&format!("o{i}"), "0"));
    }
    let inf = informer(&src, Duration::ZERO);
    let mut stream = inf.subscribe_with_options(HandlerOptions::new().backlog(BacklogPolicy::Bounded(4))).unwrap();
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    assert!(!stream.registration().has_synced(), "nothing read yet");
    for i in 0..5 {
        src.modify(cm(&format!("o{i}"), "1"));
    }
    src.delete(cm("o0", ""));
    src.add(cm("o9", "new"));
    let want = source_view(&src);
    let probe = Recorder::new();
    let p = inf.add_event_handler(Rec(probe.clone())).unwrap();
    wait_signal(&p.synced(), LIMIT).await;
    probe.wait_for("cache", LIMIT, |r| r.view() == want).await;
    assert!(stream.registration().overflows() >= 1);
    assert!(stream.registration().backlog().len <= 4, "bounded");
    // Read everything the stream has: it converges to the final state.
    let r = Recorder::new();
    while !stream.registration().has_synced() || stream.registration().backlog().len > 0 {
        match stream.next().await.unwrap() {
            Notification::Add { obj, is_in_initial_list } => r.add(&obj, is_in_initial_list),
            Notification::Update { old, new } => r.update(&old, &new),
            Notification::Delete(d) => r.delete(&d),
        }
    }
    r.assert_no_errors();
    assert_eq!(r.view(), want);
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_add_and_remove_abuse() {
    let src = FakeSource::new();
    let inf = informer(&src, Duration::from_millis(10));
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    let writer = tokio::spawn({
        let src = src.clone();
        async move {
            for i in 0..300u32 {
                src.add(cm(&format!("o{i}"), "1"));
                if i % 10 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }
    });
    let abusers: Vec<_> = (0..4)
        .map(|_| {
            let inf = inf.clone();
            tokio::spawn(async move {
                for i in 0..50u32 {
                    let reg = inf.add_event_handler_with_resync(HandlerFns::new(), Duration::from_secs(1)).unwrap();
                    if i % 3 == 0 {
                        tokio::task::yield_now().await;
                    }
                    inf.remove_event_handler(&reg).unwrap();
                    inf.remove_event_handler(&reg).unwrap();
                }
            })
        })
        .collect();
    for a in abusers {
        a.await.unwrap();
    }
    writer.await.unwrap();
    assert!(inf.registrations().is_empty());
    let r = Recorder::new();
    let reg = inf.add_event_handler(Rec(r.clone())).unwrap();
    wait_signal(&reg.synced(), LIMIT).await;
    r.wait_for("all objects", LIMIT, |r| r.view().len() == 300).await;
    cancel.cancel();
    run.await.unwrap();
    assert!(inf.stopped().is_set());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_added_while_the_informer_starts() {
    let src = FakeSource::new();
    for i in 0..50 {
        src.add(cm(&format!("o{i}"), "1"));
    }
    let inf = informer(&src, Duration::ZERO);
    let adders = tokio::spawn({
        let inf = inf.clone();
        async move {
            let mut out = Vec::new();
            for _ in 0..20 {
                let r = Recorder::new();
                let reg = inf.add_event_handler(Rec(r.clone())).unwrap();
                out.push((r, reg));
                tokio::task::yield_now().await;
            }
            out
        }
    });
    let (cancel, run) = spawn(&inf);
    for (r, reg) in adders.await.unwrap() {
        wait_signal(&reg.synced(), LIMIT).await;
        assert_eq!(r.view().len(), 50, "synced implies every initial add was delivered");
        assert_eq!(r.count(|e| matches!(e, Ev::Add { initial: true, .. })), 50);
        r.assert_no_errors();
    }
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn an_informer_cancelled_while_its_queue_is_full_stops() {
    let src = FakeSource::new();
    // An index function that holds the process loop on the object `gate` until released.
    let held = Arc::new(tokio::sync::Notify::new());
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = std::sync::Mutex::new(released);
    let on_gate = held.clone();
    let indexers = Indexers::new().with("gate", move |o: &informer::Object<Cm>| {
        if o.name() == "gate" {
            on_gate.notify_one();
            let _ = released.lock().unwrap().recv();
        }
        Ok(Vec::new())
    });
    // Counts the objects the reflector takes from the watch (the transform runs as it queues one).
    let taken = Arc::new(AtomicUsize::new(0));
    let reached = Arc::new(tokio::sync::Notify::new());
    let (count, signal) = (taken.clone(), reached.clone());
    let mut opts = InformerOptions::default().name("cms").indexers(indexers).transform(move |o| {
        if count.fetch_add(1, Ordering::SeqCst) + 1 == 130 {
            signal.notify_one();
        }
        Ok(o)
    });
    opts.batch = 1;
    let inf = SharedIndexInformer::with_options(src.clone(), opts);
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    src.add(cm("gate", "1"));
    tokio::time::timeout(LIMIT, held.notified()).await.expect("the process loop holds the gate");
    for i in 0..200 {
        src.add(cm(&format!("c{i}"), "1"));
    }
    // The gate was popped alone and 128 objects fill the queue: the 130th cannot be queued.
    tokio::time::timeout(LIMIT, reached.notified()).await.expect("the reflector takes the 130th object");
    cancel.cancel();
    release.send(()).unwrap();
    tokio::time::timeout(LIMIT, run).await.expect("the informer stops though its reflector waited for room").unwrap();
    assert!(inf.is_stopped());
}
