//! Chaos: informers converge after every fault a real API server produces.
//!
//! Four shared informers (streaming list and LIST+WATCH, each with RealFifo and with DeltaFifo)
//! watch one namespace of the embedded server while a writer changes it continuously. A seeded
//! schedule injects the faults of a real kube-apiserver ([`informer_apiserver::chaos`]: graceful
//! shutdown, restarts with a warm and a cold watch cache, outages, compaction while the informers
//! are disconnected, unresponsive watchers closed, connections cut in the middle of an event,
//! GOAWAY, 429s and 500s, slow responses, a watch cache behind its storage, dropped watches). After each fault the writer
//! pauses and an oracle checks that every informer's cache and every handler's view equal the
//! server's objects, and that no handler ever saw a key's resourceVersion go back.
//!
//! `CHAOS_SEED` replays a schedule (the seed is printed, and named in any failure);
//! `CHAOS_ROUNDS` sets its length (default: every fault three times); `CHAOS_LOG` (an env-filter,
//! e.g. `informer=debug`) logs what the informers and the server did. A soak:
//! `CHAOS_ROUNDS=2000 cargo test --release -p informer --test chaos -- --nocapture`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use informer::{
    HandlerFns, InformerOptions, KubeListerWatcher, Object, QueueKind, ReflectorOptions, SharedIndexInformer,
};
use informer_apiserver::ApiServer;
use informer_apiserver::chaos::{self, FAULTS};
use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

const NS: &str = "chaos";

/// What one handler has seen: key → resourceVersion, and any event that went back in time.
#[derive(Default)]
struct View {
    state: Mutex<BTreeMap<String, u64>>,
    last: Mutex<HashMap<String, u64>>,
    violations: Mutex<Vec<String>>,
    /// Every event per key, for the failure report.
    history: Mutex<HashMap<String, Vec<String>>>,
    changed: Notify,
}

fn rv(o: &Object<ConfigMap>) -> u64 {
    o.resource_version().and_then(|r| r.parse().ok()).unwrap_or(0)
}

impl View {
    fn seen(&self, what: &str, o: &Object<ConfigMap>) {
        let (key, rv) = (o.key().to_string(), rv(o));
        let mut last = self.last.lock();
        if let Some(prev) = last.get(&key)
            && rv < *prev
        {
            self.violations.lock().push(format!("{what} {key} at {rv} after {prev}"));
        }
        last.insert(key.clone(), rv);
        self.history.lock().entry(key.clone()).or_default().push(format!("{what}@{rv}"));
        self.state.lock().insert(key, rv);
        self.changed.notify_waiters();
    }

    fn deleted(&self, o: &informer::DeletedObject<ConfigMap>) {
        let key = o.key().to_string();
        let what = match o {
            informer::DeletedObject::Object(o) => {
                // The last state a deletion carries is never older than what the handler saw.
                let rv = rv(o);
                if let Some(prev) = self.last.lock().get(&key)
                    && rv < *prev
                {
                    self.violations.lock().push(format!("delete {key} at {rv} after {prev}"));
                }
                format!("delete@{rv}")
            }
            informer::DeletedObject::FinalStateUnknown(_) => "tombstone".to_string(),
        };
        self.history.lock().entry(key.clone()).or_default().push(what);
        self.state.lock().remove(&key);
        self.changed.notify_waiters();
    }

    fn handler(self: &Arc<Self>) -> HandlerFns<ConfigMap> {
        let (a, u, d) = (self.clone(), self.clone(), self.clone());
        HandlerFns::new()
            .on_add(move |o, _| a.seen("add", o))
            .on_update(move |_, o| u.seen("update", o))
            .on_delete(move |o| d.deleted(o))
    }
}

struct Watched {
    name: &'static str,
    informer: SharedIndexInformer<ConfigMap>,
    view: Arc<View>,
}

/// The writer: creations, updates and deletions in the namespace, while not paused.
struct Writer {
    paused: watch::Sender<bool>,
    /// True while the writer is paused with no write in flight.
    idle: watch::Receiver<bool>,
    writes: Arc<AtomicU64>,
    wrote: Arc<Notify>,
}

impl Writer {
    fn start(server: Arc<ApiServer>, seed: u64, cancel: CancellationToken) -> Writer {
        let (paused, mut rx) = watch::channel(false);
        let (idle_tx, idle) = watch::channel(false);
        let writes = Arc::new(AtomicU64::new(0));
        let wrote = Arc::new(Notify::new());
        let (w, n) = (writes.clone(), wrote.clone());
        tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
            let mut live: Vec<u64> = Vec::new();
            let mut next = 0u64;
            let mut tick = tokio::time::interval(Duration::from_millis(3));
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tick.tick() => {}
                }
                if *rx.borrow_and_update() {
                    idle_tx.send_replace(true);
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = rx.wait_for(|p| !*p) => {
                            idle_tx.send_replace(false);
                            continue;
                        }
                    }
                }
                let cm = |i: u64, v: u64| json!({"metadata": {"name": format!("cm-{i:05}"), "namespace": NS}, "data": {"v": v.to_string()}});
                let op: f64 = rng.random();
                let r = if op < 0.25 || live.len() < 20 {
                    live.push(next);
                    next += 1;
                    server.create("configmaps", cm(next - 1, 0)).await.map(drop)
                } else if op < 0.4 {
                    let i = live.swap_remove(rng.random_range(0..live.len()));
                    server.delete("configmaps", NS, &format!("cm-{i:05}")).await.map(drop)
                } else {
                    let i = live[rng.random_range(0..live.len())];
                    server.update("configmaps", cm(i, rng.random())).await.map(drop)
                };
                r.expect("in-process writes never fail");
                w.fetch_add(1, Ordering::SeqCst);
                n.notify_waiters();
            }
        });
        Writer { paused, idle, writes, wrote }
    }

    /// Waits until `n` more writes were made.
    async fn writes(&self, n: u64) {
        let target = self.writes.load(Ordering::SeqCst) + n;
        while self.writes.load(Ordering::SeqCst) < target {
            let w = self.wrote.notified();
            tokio::pin!(w);
            w.as_mut().enable();
            if self.writes.load(Ordering::SeqCst) >= target {
                return;
            }
            tokio::time::timeout(Duration::from_secs(30), w).await.expect("the writer goes on");
        }
    }

    /// Pauses the writer and waits until its last write is done.
    async fn pause(&self) {
        self.paused.send_replace(true);
        let mut idle = self.idle.clone();
        tokio::time::timeout(Duration::from_secs(30), idle.wait_for(|i| *i))
            .await
            .expect("the writer pauses")
            .expect("the writer runs");
    }

    fn resume(&self) {
        self.paused.send_replace(false);
    }
}

async fn client(server: &ApiServer) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml()).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
    kube::Client::try_from(cfg).unwrap()
}

async fn server_state(server: &ApiServer) -> BTreeMap<String, u64> {
    server.list_raw("configmaps", Some(NS)).await.unwrap().iter().map(|o| (o.key.clone(), o.rv)).collect()
}

/// Waits until every informer's cache and every handler's view equal the server's state.
async fn converge(server: &ApiServer, watched: &[Watched], what: &str) {
    let want = server_state(server).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    for w in watched {
        loop {
            let notified = w.view.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let cache: BTreeMap<String, u64> =
                w.informer.indexer().list().iter().map(|o| (o.key().to_string(), rv(o))).collect();
            let view = w.view.state.lock().clone();
            if cache == want && view == want {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                let history = w.view.history.lock();
                let diff: Vec<_> = want
                    .iter()
                    .filter(|(k, v)| cache.get(*k) != Some(v))
                    .take(5)
                    .map(|(k, v)| {
                        format!("{k}: server {v}, cache {:?}, handler saw {:?}", cache.get(k), history.get(k))
                    })
                    .collect();
                let extra: Vec<_> = cache
                    .keys()
                    .filter(|k| !want.contains_key(*k))
                    .take(5)
                    .map(|k| format!("{k}: handler saw {:?}", history.get(k)))
                    .collect();
                panic!(
                    "{what}: informer {} did not converge: cache {} / view {} / server {} objects; differing {diff:?}; extra {extra:?}; informer rv {:?}; server rv {}, open watches {}",
                    w.name,
                    cache.len(),
                    view.len(),
                    want.len(),
                    w.informer.last_sync_resource_version(),
                    server.resource_version(),
                    server.open_watches(),
                );
            }
            // Relists can complete without a handler event (nothing changed): re-check now and
            // then as well as on every event.
            let _ = tokio::time::timeout(Duration::from_millis(100), notified).await;
        }
        let v = w.view.violations.lock();
        assert!(v.is_empty(), "{what}: informer {} saw events out of order: {v:?}", w.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_converge_after_every_fault() {
    // CHAOS_LOG=informer=debug (an env-filter) shows what the informers did.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("CHAOS_LOG") {
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
    }
    let seed: u64 = std::env::var("CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    let rounds: usize = std::env::var("CHAOS_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(FAULTS.len() * 3);
    eprintln!("chaos: seed {seed} (CHAOS_SEED={seed} replays it), {rounds} rounds");
    let mut rng = StdRng::seed_from_u64(seed);
    let server = Arc::new(informer_apiserver::testing::builder().start().await.unwrap());
    informer_apiserver::testing::create_namespaces(&server, &[NS]).await.unwrap();
    let cancel = CancellationToken::new();
    let writer = Writer::start(server.clone(), seed, cancel.clone());
    writer.writes(30).await;

    let mut watched = Vec::new();
    let mut tasks = Vec::new();
    for (name, streaming, queue) in [
        ("streaming/RealFifo", true, QueueKind::RealFifo),
        ("streaming/DeltaFifo", true, QueueKind::DeltaFifo),
        ("list/RealFifo", false, QueueKind::RealFifo),
        ("list/DeltaFifo", false, QueueKind::DeltaFifo),
    ] {
        let lw = KubeListerWatcher::<ConfigMap>::new(client(&server).await, Some(NS));
        let opts = InformerOptions::default().name(name).queue(queue).reflector(ReflectorOptions {
            name: name.into(),
            streaming_list: streaming,
            ..Default::default()
        });
        let informer = SharedIndexInformer::with_options(lw, opts);
        let view = Arc::new(View::default());
        informer.add_event_handler(view.handler()).unwrap();
        let (i, c) = (informer.clone(), cancel.clone());
        tasks.push(tokio::spawn(async move { i.run(c).await }));
        watched.push(Watched { name, informer, view });
    }
    for w in &watched {
        tokio::time::timeout(Duration::from_secs(30), w.informer.synced().wait()).await.expect("initial sync");
    }

    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (round, fault) in chaos::schedule(&mut rng, rounds).into_iter().enumerate() {
        *counts.entry(fault.name()).or_default() += 1;
        // While a fault lasts, the writer goes on.
        let window = rng.random_range(10..60);
        chaos::inject(&server, fault, &mut rng, writer.writes(window)).await;
        writer.writes(rng.random_range(5..30)).await;
        writer.pause().await;
        let what = format!("seed {seed}, round {round}, after {fault:?}");
        converge(&server, &watched, &what).await;
        writer.resume();
    }
    eprintln!("chaos: faults survived: {counts:?}");
    cancel.cancel();
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(20), t).await.expect("informers stop").unwrap();
    }
}
