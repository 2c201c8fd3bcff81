//! The reflector over real HTTP against the embedded API server, through `KubeListerWatcher` and a
//! `kube::Client`, under the server's fault controls: dropped watches, forced compaction (410),
//! 429 storms, 500s, restarts, slow streams. After each scenario the cache must equal a fresh LIST
//! of the server (same keys, same resourceVersions), and no key may ever see its resourceVersion go
//! backwards (no event lost or applied out of order).
//!
//! Waiting is signal-driven: the handler notifies on every event and the test re-checks its
//! condition, failing after a generous deadline.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use informer::backoff::BackoffConfig;
use informer::{
    Controller, HandlerFns, Indexer, Indexers, KubeListerWatcher, Object, RealFifo, ReflectorHooks, ReflectorOptions,
};
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::config::{KubeConfigOptions, Kubeconfig};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

type Cm = ConfigMap;

struct Harness {
    server: Arc<ApiServer>,
    store: Arc<Indexer<Cm>>,
    changed: Arc<Notify>,
    lists: Arc<AtomicUsize>,
    /// Watches established, and a signal at each.
    watches: Arc<(AtomicUsize, Notify)>,
    errors: Arc<Mutex<Vec<String>>>,
    order_violations: Arc<Mutex<Vec<String>>>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    next: u64,
}

fn rv_num(o: &Object<Cm>) -> u64 {
    o.resource_version().and_then(|r| r.parse().ok()).unwrap_or(0)
}

fn cm(i: u64, v: u64) -> serde_json::Value {
    json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":format!("cm-{i:04}"),"namespace":"default"},"data":{"v":v.to_string()}})
}

async fn client_for(server: &ApiServer) -> kube::Client {
    let kc = Kubeconfig::from_yaml(&server.kubeconfig_yaml()).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.unwrap();
    kube::Client::try_from(cfg).unwrap()
}

impl Harness {
    async fn start(streaming: bool, initial: u64) -> Harness {
        let server = Arc::new(informer_apiserver::testing::builder().start().await.unwrap());
        for i in 0..initial {
            server.create("configmaps", cm(i, 0)).await.unwrap();
        }
        Harness::attach(server, streaming, initial).await
    }

    /// Starts an informer on `server`, whose configmaps are `cm-0000`… `cm-{next-1}`, and waits
    /// for its initial sync.
    async fn attach(server: Arc<ApiServer>, streaming: bool, initial: u64) -> Harness {
        let client = client_for(&server).await;
        let store = Arc::new(Indexer::<Cm>::new(Indexers::new().with_namespace_index()));
        let changed = Arc::new(Notify::new());
        let last_rv: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
        let order_violations: Arc<Mutex<Vec<String>>> = Arc::default();
        let check = {
            let (last_rv, viol, changed) = (last_rv.clone(), order_violations.clone(), changed.clone());
            move |ev: &str, o: &Object<Cm>| {
                let rv = rv_num(o);
                let mut m = last_rv.lock();
                if let Some(prev) = m.get(o.key().as_str())
                    && rv < *prev
                {
                    viol.lock().push(format!("{ev} {} rv {rv} after {prev}", o.key()));
                }
                m.insert(o.key().to_string(), rv);
                changed.notify_waiters();
            }
        };
        let (c1, c2, c3) = (check.clone(), check.clone(), check);
        let changed2 = changed.clone();
        let handler = HandlerFns::<Cm>::new()
            .on_add(move |o, _| c1("add", o))
            .on_update(move |_, o| c2("update", o))
            .on_delete(move |d| {
                if let Some(o) = d.object() {
                    c3("delete", o)
                }
                changed2.notify_waiters();
            });
        let lists = Arc::new(AtomicUsize::new(0));
        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        let watches: Arc<(AtomicUsize, Notify)> = Arc::default();
        let hooks = ReflectorHooks {
            watch_started: Some(Arc::new({
                let watches = watches.clone();
                move |_rv: &str| {
                    watches.0.fetch_add(1, Ordering::SeqCst);
                    watches.1.notify_waiters();
                }
            })),
            before_list: Some(Arc::new({
                let lists = lists.clone();
                move |_rv: &str| {
                    lists.fetch_add(1, Ordering::SeqCst);
                }
            })),
            watch_error: Some(Arc::new({
                let errors = errors.clone();
                move |e: &informer::Error| errors.lock().push(e.to_string())
            })),
            ..Default::default()
        };
        let opts = ReflectorOptions {
            name: "http-test".into(),
            streaming_list: streaming,
            backoff: BackoffConfig {
                initial: Duration::from_millis(5),
                cap: Duration::from_millis(50),
                ..Default::default()
            },
            ..Default::default()
        };
        let lw = Arc::new(KubeListerWatcher::<Cm>::new(client, Some("default")));
        let queue = Arc::new(RealFifo::<Cm>::new(Default::default()));
        let ctrl = Arc::new(Controller::new(lw, queue, store.clone(), Arc::new(handler), opts, hooks).with_batch(64));
        let cancel = CancellationToken::new();
        let synced = ctrl.synced();
        let task = tokio::spawn({
            let (c, k) = (ctrl.clone(), cancel.clone());
            async move { c.run(k).await }
        });
        if tokio::time::timeout(Duration::from_secs(20), synced.wait()).await.is_err() {
            panic!("no initial sync within 20 s; lists {}, errors {:?}", lists.load(Ordering::SeqCst), errors.lock());
        }
        Harness { server, store, changed, lists, watches, errors, order_violations, cancel, task, next: initial }
    }

    async fn server_state(&self) -> BTreeMap<String, String> {
        self.server
            .list("configmaps", Some("default"))
            .await
            .unwrap()
            .into_iter()
            .map(|o| {
                let m = &o["metadata"];
                (format!("default/{}", m["name"].as_str().unwrap()), m["resourceVersion"].as_str().unwrap().to_string())
            })
            .collect()
    }

    fn cache_state(&self) -> BTreeMap<String, String> {
        self.store
            .list()
            .into_iter()
            .map(|o| (o.key().to_string(), o.resource_version().unwrap().to_string()))
            .collect()
    }

    /// Waits (signal-driven) until the cache equals the server, failing after 20 s.
    async fn converge(&self, what: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let (want, got) = (self.server_state().await, self.cache_state());
            if want == got {
                let v = self.order_violations.lock();
                assert!(v.is_empty(), "{what}: out-of-order events: {v:?}");
                return;
            }
            // Relists can complete without any handler event (nothing changed): wake periodically too.
            if tokio::time::timeout_at(deadline.min(tokio::time::Instant::now() + Duration::from_millis(200)), notified)
                .await
                .is_err()
                && tokio::time::Instant::now() >= deadline
            {
                let missing: Vec<_> = want.iter().filter(|(k, v)| got.get(*k) != Some(v)).take(5).collect();
                let extra: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).take(5).collect();
                panic!(
                    "{what}: cache did not converge: {} vs {} objects; differing {missing:?}; extra {extra:?}; errors {:?}",
                    got.len(),
                    want.len(),
                    self.errors.lock()
                );
            }
        }
    }

    /// Ends every open watch and waits (signal-driven) until a watch is established after that,
    /// failing after 20 s.
    async fn drop_watches(&self) {
        let before = self.watches.0.load(Ordering::SeqCst);
        self.server.drop_watches();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let notified = self.watches.1.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.watches.0.load(Ordering::SeqCst) > before {
                return;
            }
            tokio::time::timeout_at(deadline, notified).await.expect("a new watch within 20 s");
        }
    }

    /// Makes `n` changes: updates, creations and deletions.
    async fn churn(&mut self, n: u64) {
        for k in 0..n {
            match k % 5 {
                0 => {
                    self.server.create("configmaps", cm(self.next, 0)).await.unwrap();
                    self.next += 1;
                }
                1 if self.next > 10 => {
                    let victim = (k * 7) % self.next;
                    let _ = self.server.delete("configmaps", "default", &format!("cm-{victim:04}")).await;
                }
                _ => {
                    let i = (k * 13) % self.next;
                    let _ = self.server.update("configmaps", cm(i, k + 1)).await;
                }
            }
        }
    }

    async fn stop(self) {
        self.cancel.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.task).await.expect("stops promptly").unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_syncs_and_follows_changes() {
    let mut h = Harness::start(true, 50).await;
    assert_eq!(h.store.len(), 50);
    assert_eq!(h.lists.load(Ordering::SeqCst), 1, "one streaming list");
    h.churn(200).await;
    h.converge("after churn").await;
    assert!(h.errors.lock().is_empty(), "{:?}", h.errors.lock());
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_watch_syncs_and_follows_changes() {
    let mut h = Harness::start(false, 50).await;
    // The list (resourceVersion 0, from the watch cache) may trail the writes; the watch brings
    // the rest.
    h.converge("after the initial list").await;
    assert_eq!(h.store.len(), 50);
    h.churn(200).await;
    h.converge("after churn").await;
    assert_eq!(h.lists.load(Ordering::SeqCst), 1);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_watches_rewatch_without_relisting() {
    let mut h = Harness::start(false, 20).await;
    for _ in 0..5 {
        // Events first, through the watch about to be dropped: a watch that ends within a second
        // *without* events is an error (and relists), as in client-go; one that delivered events
        // restarts at once. (The server's dropped watches serve nothing written after the drop,
        // so the next round's changes go through the next watch.)
        h.churn(20).await;
        h.converge("before drop").await;
        h.drop_watches().await;
    }
    h.churn(20).await;
    h.converge("after the last drop").await;
    // A closed watch restarts from the last RV without a relist: the initial list only.
    let lists = h.lists.load(Ordering::SeqCst);
    assert_eq!(lists, 1, "dropped watches must not relist: {lists} lists for 5 drops");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_while_disconnected_relists_and_converges() {
    let mut h = Harness::start(false, 20).await;
    // Make the watch fail with 410: take the server down, change and compact, bring it back.
    h.server.stop().await;
    h.churn(30).await;
    h.server.compact().await.unwrap();
    h.server.restart().await.unwrap();
    h.converge("after compaction").await;
    assert!(h.lists.load(Ordering::SeqCst) >= 2, "410 leads to a relist");
    h.churn(20).await;
    h.converge("after more churn").await;
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_storm_and_500s_converge() {
    let mut h = Harness::start(false, 20).await;
    h.server.fail_next_with_429(5, 0);
    h.server.drop_watches();
    h.churn(20).await;
    h.converge("after 429s").await;
    h.server.fail_next_with_500(3);
    h.server.drop_watches();
    h.churn(20).await;
    h.converge("after 500s").await;
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_after_restart_and_slow_stream_converges() {
    let mut h = Harness::start(true, 30).await;
    h.server.set_stream_delay(Duration::from_millis(1));
    h.churn(30).await;
    h.converge("slow stream").await;
    h.server.set_stream_delay(Duration::ZERO);
    h.server.restart().await.unwrap();
    h.churn(30).await;
    h.converge("after restart").await;
    h.stop().await;
}

/// kube-apiserver closes a watcher that does not keep up while it sends a streaming list's initial
/// events, before the end bookmark. Under steady writes every retry of the streaming list is closed
/// the same way; the reflector must fall back to LIST (answered whole, whatever the write rate)
/// and converge instead of retrying the streaming list forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_closed_as_unresponsive_under_writes_falls_back_to_list() {
    let server = Arc::new(informer_apiserver::testing::builder().start().await.unwrap());
    let initial = 400;
    for i in 0..initial {
        server.create("configmaps", cm(i, 0)).await.unwrap();
    }
    // A slow link (the initial events take ~0.8 s) and kube-apiserver's rule: 10 buffered events,
    // closed after 50 ms over.
    server.set_stream_delay(Duration::from_millis(2));
    server.set_unresponsive_close(Some(informer_apiserver::UnresponsiveClose {
        buffer: 10,
        grace: Duration::from_millis(50),
    }));
    // Steady writes: ~200 updates/s until the informer has synced.
    let stop_writes = CancellationToken::new();
    let writer = tokio::spawn({
        let (server, stop) = (server.clone(), stop_writes.clone());
        async move {
            let mut tick = tokio::time::interval(Duration::from_millis(5));
            let mut k = 0u64;
            while !stop.is_cancelled() {
                tick.tick().await;
                k += 1;
                server.update("configmaps", cm(k % initial, k)).await.unwrap();
            }
        }
    });
    let h = Harness::attach(server.clone(), true, initial).await;
    stop_writes.cancel();
    writer.await.unwrap();
    assert!(server.controls().unresponsive_closes() >= 1, "the streaming list was closed as unresponsive");
    assert!(server.controls().request_counts().list >= 1, "the reflector fell back to LIST");
    server.set_stream_delay(Duration::ZERO);
    h.converge("after the writes").await;
    h.stop().await;
}

/// Metadata-only informers (`PartialObjectMeta`, requested with the `as=PartialObjectMetadata`
/// Accept header) sync and follow changes, with streaming lists and with LIST+WATCH.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_informer_syncs_and_follows_changes() {
    use informer::SharedIndexInformer;
    use kube::core::PartialObjectMeta;
    type Meta = PartialObjectMeta<ConfigMap>;
    for streaming in [true, false] {
        let server = informer_apiserver::testing::builder().start().await.unwrap();
        for i in 0..20 {
            server.create("configmaps", cm(i, 0)).await.unwrap();
        }
        let lw = KubeListerWatcher::<Meta>::new(client_for(&server).await, Some("default")).metadata_only();
        let opts = informer::InformerOptions::default().reflector(ReflectorOptions {
            streaming_list: streaming,
            initial_events_idle_timeout: Duration::from_secs(30),
            ..Default::default()
        });
        let inf = SharedIndexInformer::<Meta>::with_options(lw, opts);
        let changed = Arc::new(Notify::new());
        let added = Arc::new(Notify::new());
        let (c, a) = (changed.clone(), added.clone());
        inf.add_event_handler(
            HandlerFns::<Meta>::new().on_update(move |_, _| c.notify_waiters()).on_add(move |_, _| a.notify_waiters()),
        )
        .unwrap();
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (i, k) = (inf.clone(), cancel.clone());
            async move { i.run(k).await }
        });
        tokio::time::timeout(Duration::from_secs(10), inf.synced().wait())
            .await
            .expect("synced quickly (no fallback wait)");
        // A list at resourceVersion 0 is served from the watch cache, which may trail the writes
        // just made (on etcd it follows the etcd watch); the watch from the list's version then
        // brings the rest.
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let more = added.notified();
                tokio::pin!(more);
                more.as_mut().enable();
                if inf.indexer().len() == 20 {
                    break;
                }
                more.await;
            }
        })
        .await
        .expect("every object cached");
        let o = inf.indexer().get_by_key("default/cm-0003").unwrap();
        assert_eq!(o.get().unwrap().metadata.name.as_deref(), Some("cm-0003"), "decodes as PartialObjectMeta");
        assert!(!o.raw_json().windows(6).any(|w| w == b"\"data\""), "metadata only: no data field");
        let wait = changed.notified();
        tokio::pin!(wait);
        wait.as_mut().enable();
        let updated = server.update("configmaps", cm(3, 9)).await.unwrap();
        tokio::time::timeout(Duration::from_secs(10), wait).await.expect("update seen");
        let rv = updated["metadata"]["resourceVersion"].as_str().unwrap().to_string();
        assert_eq!(inf.indexer().get_by_key("default/cm-0003").unwrap().resource_version(), Some(rv.as_str()));
        cancel.cancel();
        task.await.unwrap();
    }
}
