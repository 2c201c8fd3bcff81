//! Three leader electors over HTTP against the embedded API server, each on a runtime and OS
//! thread of its own with its own `kube::Client`, under faults: the leader's requests failing,
//! the leader's whole thread stalled (timers and I/O frozen), and a clean release. An oracle
//! thread samples every elector's belief (`is_leader`) throughout and fails the test if two
//! believe they lead at the same moment. And one leader whose Lease is deleted, then emptied of
//! its holder, under it: it writes the Lease back and keeps its term.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::StreamExt;
use informer::InformerThread;
use informer::leader_election::{LeaderElectionConfig, LeaderElector, LeaderEvent, LeaseLock};
use informer_apiserver::ApiServer;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, WatchEvent, WatchParams};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(30);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A client middleware that fails every request while its switch is on (a leader cut off from
/// the API server).
#[derive(Clone)]
struct FailLayer(Arc<AtomicBool>);

struct Fail<S> {
    inner: S,
    on: Arc<AtomicBool>,
}

impl<S> tower::Layer<S> for FailLayer {
    type Service = Fail<S>;
    fn layer(&self, inner: S) -> Fail<S> {
        Fail { inner, on: self.0.clone() }
    }
}

impl<S, R> tower::Service<R> for Fail<S>
where
    S: tower::Service<R>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: R) -> Self::Future {
        if self.on.load(Ordering::SeqCst) {
            return Box::pin(async { Err("injected fault: connection refused".into()) });
        }
        let f = self.inner.call(req);
        Box::pin(async move { f.await.map_err(Into::into) })
    }
}

/// One replica: an elector running on its own thread.
struct Replica {
    id: String,
    elector: LeaderElector,
    fail: Arc<AtomicBool>,
    cancel: CancellationToken,
    thread: InformerThread,
    run: tokio::task::JoinHandle<()>,
}

impl Replica {
    async fn start(server: &ApiServer, id: &str, events: mpsc::UnboundedSender<(String, LeaderEvent)>) -> Replica {
        let thread = InformerThread::start(id).unwrap();
        let fail = Arc::new(AtomicBool::new(false));
        let (yaml, f, who) = (server.kubeconfig_yaml(), fail.clone(), id.to_string());
        // The client is made on the replica's thread, so its connections run there.
        let elector = thread
            .spawn(async move {
                let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
                let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
                let client = kube::client::ClientBuilder::try_from(cfg).unwrap().with_layer(&FailLayer(f)).build();
                let config = LeaderElectionConfig::new(LeaseLock::new(client, "default", "ha"), who)
                    .lease_duration(Duration::from_secs(2))
                    .renew_deadline(Duration::from_secs(1))
                    .retry_period(Duration::from_millis(200))
                    .release_on_cancel(true);
                LeaderElector::new(config).unwrap()
            })
            .await
            .unwrap();
        let mut sub = elector.subscribe();
        let who = id.to_string();
        tokio::spawn(async move {
            while let Some(e) = sub.recv().await {
                let _ = events.send((who.clone(), e));
            }
        });
        let cancel = CancellationToken::new();
        let run = thread.spawn({
            let (e, c) = (elector.clone(), cancel.clone());
            async move { e.run(c).await.unwrap() }
        });
        Replica { id: id.to_string(), elector, fail, cancel, thread, run }
    }

    /// Blocks the replica's thread (its runtime, timers and connections) until the returned
    /// sender is dropped.
    fn stall(&self) -> std::sync::mpsc::Sender<()> {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
        drop(self.thread.spawn(async move {
            let _ = started_tx.send(());
            let _ = rx.recv();
        }));
        started_rx.recv().unwrap();
        tx
    }
}

/// Samples every elector's belief until stopped, publishing the number of samples taken;
/// returns that number and the moments at which more than one believed it led.
fn oracle(
    electors: Vec<LeaderElector>,
    stop: Arc<AtomicBool>,
    taken: tokio::sync::watch::Sender<u64>,
) -> std::thread::JoinHandle<(u64, Vec<String>)> {
    std::thread::spawn(move || {
        let (mut samples, mut violations) = (0u64, Vec::new());
        while !stop.load(Ordering::SeqCst) {
            let leading: Vec<&str> = electors.iter().filter(|e| e.is_leader()).map(|e| e.identity()).collect();
            if leading.len() > 1 {
                violations.push(format!("sample {samples}: {leading:?} lead at once"));
            }
            samples += 1;
            taken.send_replace(samples);
            std::thread::sleep(Duration::from_millis(1));
        }
        (samples, violations)
    })
}

/// Waits until the oracle has taken `n` more samples.
async fn samples(taken: &mut tokio::sync::watch::Receiver<u64>, n: u64) {
    let target = *taken.borrow() + n;
    tokio::time::timeout(LIMIT, taken.wait_for(|s| *s >= target)).await.unwrap().unwrap();
}

struct Events {
    rx: mpsc::UnboundedReceiver<(String, LeaderEvent)>,
    /// Every event seen, in order, as text.
    log: Vec<String>,
}

impl Events {
    /// Waits for an event matching `f`, failing the test after `LIMIT`.
    async fn until(&mut self, what: &str, f: impl Fn(&str, &LeaderEvent) -> bool) -> String {
        loop {
            let (who, e) = tokio::time::timeout(LIMIT, self.rx.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}; events: {:#?}", self.log))
                .unwrap();
            self.log.push(format!("{who}: {e:?}"));
            if f(&who, &e) {
                return who;
            }
        }
    }

    async fn started(&mut self, what: &str, f: impl Fn(&str) -> bool) -> String {
        self.until(what, |w, e| matches!(e, LeaderEvent::StartedLeading(_)) && f(w)).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_electors_never_lead_at_once_under_faults() {
    let server = ApiServer::builder().start().await.unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    let mut events = Events { rx, log: Vec::new() };
    let mut replicas = Vec::new();
    for id in ["e1", "e2", "e3"] {
        replicas.push(Replica::start(&server, id, tx.clone()).await);
    }
    let by_id = |id: &str| replicas.iter().find(|r| r.id == id).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (taken_tx, mut taken) = tokio::sync::watch::channel(0);
    let oracle = oracle(replicas.iter().map(|r| r.elector.clone()).collect(), stop.clone(), taken_tx);

    // Someone leads; the others see it (in whatever order they do).
    let first = events.started("a first leader", |_| true).await;
    let mut waiting: Vec<String> = replicas.iter().map(|r| r.id.clone()).filter(|id| *id != first).collect();
    while !waiting.is_empty() {
        let leader = first.clone();
        let seen = events
            .until("the others to see the leader", |w, e| {
                waiting.iter().any(|id| id == w) && matches!(e, LeaderEvent::NewLeader(Some(l)) if *l == leader)
            })
            .await;
        waiting.retain(|id| *id != seen);
    }

    // 1. The leader's requests fail: it steps down and another takes over.
    by_id(&first).fail.store(true, Ordering::SeqCst);
    events
        .until("the cut-off leader to step down", |w, e| w == first && matches!(e, LeaderEvent::StoppedLeading))
        .await;
    let second = events.started("a second leader", |w| w != first).await;
    by_id(&first).fail.store(false, Ordering::SeqCst);
    let s = second.clone();
    events
        .until("the first to see the second", |w, e| {
            w == first && matches!(e, LeaderEvent::NewLeader(Some(l)) if *l == s)
        })
        .await;

    // 2. The leader's whole thread stalls: another takes over while it is frozen; when it wakes
    //    it finds its term over and the new leader in the lease.
    let stalled = by_id(&second).stall();
    let third = events.started("a leader while the second is stalled", |w| w != second).await;
    // The frozen elector's belief expired by the clock, though its task has not run since.
    samples(&mut taken, 200).await;
    assert!(!by_id(&second).elector.is_leader(), "a stalled leader past its renew deadline still believes");
    assert!(by_id(&third).elector.is_leader());
    drop(stalled);
    events
        .until("the stalled leader to end its term", |w, e| w == second && matches!(e, LeaderEvent::StoppedLeading))
        .await;
    let t = third.clone();
    events
        .until("the stalled leader to see the third", |w, e| {
            w == second && matches!(e, LeaderEvent::NewLeader(Some(l)) if *l == t)
        })
        .await;

    // 3. A clean release: a successor starts within a few retry periods, not a lease duration.
    let released_at = tokio::time::Instant::now();
    by_id(&third).cancel.cancel();
    let fourth = events.started("a leader after the release", |w| w != third).await;
    let takeover = released_at.elapsed();
    assert!(takeover < Duration::from_secs(2), "takeover after a release took {takeover:?}");

    stop.store(true, Ordering::SeqCst);
    let (samples, violations) = oracle.join().unwrap();
    assert!(violations.is_empty(), "two leaders at once: {violations:#?}\nevents: {:#?}", events.log);
    assert!(samples > 100, "the oracle sampled only {samples} times");

    // Every change of holder counted once in the lease.
    let lease = server.get("leases", "default", "ha").await.unwrap();
    assert_eq!(lease["spec"]["holderIdentity"], fourth.as_str());
    let mut holders = vec![first.clone()];
    for l in &events.log {
        if let Some((who, _)) = l.split_once(": StartedLeading")
            && holders.last().map(String::as_str) != Some(who)
        {
            holders.push(who.to_string());
        }
    }
    assert_eq!(lease["spec"]["leaseTransitions"], (holders.len() - 1) as u64, "holders {holders:?}");

    let mut states = BTreeMap::new();
    for r in replicas {
        r.cancel.cancel();
        r.run.await.unwrap();
        states.insert(r.id.clone(), r.elector.is_leader());
        r.thread.shutdown();
    }
    assert!(states.values().all(|l| !l), "{states:?}");
}

/// The first write of the Lease `default/ha` after resourceVersion `rv`, as a watch reports it.
async fn next_write(api: &Api<Lease>, rv: &str) -> Lease {
    let params = WatchParams::default().fields("metadata.name=ha");
    let mut stream = api.watch(&params, rv).await.unwrap().boxed();
    loop {
        let event = tokio::time::timeout(LIMIT, stream.next()).await.expect("no write of the lease").unwrap();
        match event.unwrap() {
            WatchEvent::Added(l) | WatchEvent::Modified(l) => return l,
            _ => {}
        }
    }
}

fn rv_of(v: &serde_json::Value) -> String {
    v["metadata"]["resourceVersion"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_writes_back_a_lease_deleted_or_emptied_under_it() {
    let server = ApiServer::builder().start().await.unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let replica = Replica::start(&server, "e1", tx).await;
    let term = loop {
        match tokio::time::timeout(LIMIT, rx.recv()).await.expect("no term").unwrap() {
            (_, LeaderEvent::StartedLeading(t)) => break t,
            _ => continue,
        }
    };
    let kc = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml()).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
    let api: Api<Lease> = Api::namespaced(kube::Client::try_from(cfg).unwrap(), "default");
    let spec = |l: &Lease| l.spec.clone().unwrap_or_default();

    // Deleted: the leader's next renewal finds it gone and creates it.
    let gone = server.delete("leases", "default", "ha").await.unwrap();
    let created = next_write(&api, &rv_of(&gone)).await;
    assert_eq!(spec(&created).holder_identity.as_deref(), Some("e1"));
    assert_eq!(spec(&created).lease_transitions, Some(0));

    // Emptied: the leader writes itself back in, counting one transition.
    let patch = serde_json::json!({"spec": {"holderIdentity": ""}});
    let emptied = server.patch("leases", "default", "ha", &patch).await.unwrap();
    let mut lease = next_write(&api, &rv_of(&emptied)).await;
    assert_eq!(spec(&lease).holder_identity.as_deref(), Some("e1"));
    assert_eq!(spec(&lease).lease_transitions, Some(1));

    // It goes on renewing in the same term, with no StoppedLeading.
    for _ in 0..3 {
        let rv = lease.metadata.resource_version.clone().unwrap();
        lease = next_write(&api, &rv).await;
        assert_eq!(spec(&lease).holder_identity.as_deref(), Some("e1"));
    }
    assert!(!term.is_cancelled() && replica.elector.is_leader());
    while let Ok((who, e)) = rx.try_recv() {
        assert!(!matches!(e, LeaderEvent::StoppedLeading | LeaderEvent::StartedLeading(_)), "{who}: {e:?}");
    }
    replica.cancel.cancel();
    replica.run.await.unwrap();
    replica.thread.shutdown();
}
