//! Interoperability with client-go's leader election, over HTTP against the embedded server.
//!
//! `GoElector` below follows client-go's `tryAcquireOrRenew` and `release`
//! (`tools/leaderelection/leaderelection.go`) and `LeaseLock` (`resourcelock/leaselock.go`) on
//! raw JSON: the record's fields as client-go writes them, RFC 3339 times with exactly six
//! fractional digits (Go's `RFC3339Micro`, which its `MicroTime` parser requires), expiry judged
//! from the local time at which the raw record last changed plus the record's own
//! `leaseDurationSeconds`, `leaseTransitions` + 1 on a takeover, `acquireTime` kept on renewal,
//! and a release that writes an empty holder with a one-second lease. Our elector and it campaign
//! on one Lease: each respects the other's lease, and an oracle checks that they never both lead.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{client, until_event};
use informer::leader_election::{LeaderElectionConfig, LeaderElector, LeaderEvent, LeaseLock};
use informer_apiserver::ApiServer;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(30);
const NAME: &str = "interop";

/// Go's `metav1.MicroTime` text: `2006-01-02T15:04:05.000000Z07:00`, in UTC.
fn is_go_micro_time(v: &Value) -> bool {
    let Some(s) = v.as_str() else { return false };
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| r.into_iter().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    b.len() == 27
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[19] == b'.'
        && digits(20..26)
        && b[26] == b'Z'
}

fn go_now() -> Value {
    json!(k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%S%.6fZ", Timestamp::now()).unwrap())
}

/// client-go's elector on a LeaseLock, step by step.
struct GoElector {
    api: Api<DynamicObject>,
    ar: ApiResource,
    /// When its last successful write was answered.
    last_write: Option<Instant>,
    identity: String,
    lease_duration_seconds: i64,
    /// `observedRecord` (the spec as last read or written) and its raw form and time.
    observed: Value,
    observed_raw: Option<String>,
    observed_time: Instant,
    /// `ll.lease`: the object the next update replaces.
    lease: Option<DynamicObject>,
    /// The records this elector read, for format checks.
    read: Vec<Value>,
}

/// client-go's `LeaderElectionRecord` fields from a Lease spec (absent ones zero).
fn record(spec: &Value) -> Value {
    json!({
        "holderIdentity": spec.get("holderIdentity").cloned().unwrap_or(json!("")),
        "leaseDurationSeconds": spec.get("leaseDurationSeconds").cloned().unwrap_or(json!(0)),
        "acquireTime": spec.get("acquireTime").cloned().unwrap_or(Value::Null),
        "renewTime": spec.get("renewTime").cloned().unwrap_or(Value::Null),
        "leaderTransitions": spec.get("leaseTransitions").cloned().unwrap_or(json!(0)),
    })
}

impl GoElector {
    fn new(client: kube::Client, identity: &str, lease_duration_seconds: i64) -> Self {
        let ar = ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease"),
            "leases",
        );
        GoElector {
            api: Api::namespaced_with(client, "default", &ar),
            ar,
            last_write: None,
            identity: identity.into(),
            lease_duration_seconds,
            observed: record(&json!({})),
            observed_raw: None,
            observed_time: Instant::now(),
            lease: None,
            read: Vec::new(),
        }
    }

    fn is_leader(&self) -> bool {
        self.observed["holderIdentity"] == self.identity.as_str()
    }

    fn lease_valid(&self) -> bool {
        let secs = self.observed["leaseDurationSeconds"].as_u64().unwrap_or(0);
        Instant::now() < self.observed_time + Duration::from_secs(secs)
    }

    fn set_observed(&mut self, spec: &Value) {
        self.observed = record(spec);
        self.observed_time = Instant::now();
    }

    fn wrote(&mut self, lease: DynamicObject, spec: &Value) {
        self.lease = Some(lease);
        self.set_observed(spec);
        self.last_write = Some(Instant::now());
    }

    async fn update(&mut self, spec: Value) -> bool {
        let Some(mut lease) = self.lease.clone() else { return false };
        lease.data["spec"] = spec.clone();
        match self.api.replace(NAME, &PostParams::default(), &lease).await {
            Ok(l) => {
                self.wrote(l, &spec);
                true
            }
            Err(_) => false,
        }
    }

    /// `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&mut self) -> bool {
        let now = go_now();
        let mut spec = json!({"holderIdentity": self.identity, "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": now, "renewTime": now, "leaseTransitions": 0});
        // 1. Fast path.
        if self.is_leader() && self.lease_valid() {
            spec["acquireTime"] = self.observed["acquireTime"].clone();
            spec["leaseTransitions"] = self.observed["leaderTransitions"].clone();
            if self.update(spec.clone()).await {
                return true;
            }
        }
        // 2. Get or create.
        let old = match self.api.get(NAME).await {
            Ok(l) => l,
            Err(kube::Error::Api(s)) if s.code == 404 => {
                let lease = DynamicObject::new(NAME, &self.ar).within("default").data(json!({"spec": spec.clone()}));
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(l) => {
                        self.wrote(l, &spec);
                        true
                    }
                    Err(_) => false,
                };
            }
            Err(_) => return false,
        };
        let old_spec = old.data["spec"].clone();
        self.read.push(old_spec.clone());
        self.lease = Some(old);
        // 3. Identity and time: the raw record decides whether it changed.
        let raw = record(&old_spec).to_string();
        if self.observed_raw.as_deref() != Some(raw.as_str()) {
            self.set_observed(&old_spec);
            self.observed_raw = Some(raw);
        }
        let holder = self.observed["holderIdentity"].as_str().unwrap_or("").to_string();
        if !holder.is_empty() && self.lease_valid() && !self.is_leader() {
            return false;
        }
        // 4. Write.
        if self.is_leader() {
            spec["acquireTime"] = self.observed["acquireTime"].clone();
            spec["leaseTransitions"] = self.observed["leaderTransitions"].clone();
        } else {
            spec["leaseTransitions"] = json!(self.observed["leaderTransitions"].as_i64().unwrap() + 1);
        }
        self.update(spec).await
    }
}

/// What the Go side believes, for the oracle: it leads from a successful write until a renew
/// deadline after the write started (client-go's own bound is looser).
struct Belief {
    until: tokio::sync::watch::Sender<Option<Instant>>,
    ever: AtomicBool,
}

impl Belief {
    fn new() -> Arc<Self> {
        Arc::new(Belief { until: tokio::sync::watch::channel(None).0, ever: AtomicBool::new(false) })
    }

    fn leads(&self) -> bool {
        self.until.borrow().is_some_and(|until| Instant::now() < until)
    }

    async fn wait_leading(&self) {
        let mut rx = self.until.subscribe();
        tokio::time::timeout(LIMIT, rx.wait_for(|u| u.is_some())).await.expect("client-go never led").unwrap();
    }
}

/// Campaigns as client-go does until `stop`: one try every `retry` (its jitter left out), a
/// term given up after `renew_deadline` without a renewal.
async fn go_campaign(
    mut go: GoElector,
    retry: Duration,
    renew_deadline: Duration,
    belief: Arc<Belief>,
    stop: CancellationToken,
) -> GoElector {
    while !stop.is_cancelled() {
        let start = Instant::now();
        if go.try_acquire_or_renew().await {
            belief.ever.store(true, Ordering::SeqCst);
            belief.until.send_replace(Some(start + renew_deadline));
        } else if !belief.leads() {
            belief.until.send_replace(None);
        }
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = tokio::time::sleep(retry) => {}
        }
    }
    belief.until.send_replace(None);
    go
}

/// Samples both sides' beliefs until stopped; returns the moments at which two led at once.
fn oracle(ours: LeaderElector, go: Vec<Arc<Belief>>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            let leading = go.iter().filter(|g| g.leads()).count() + usize::from(ours.is_leader());
            if leading > 1 {
                v.push(format!("both lead at {:?}", std::time::Instant::now()));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        v
    })
}

async fn next_started(events: &mut informer::leader_election::LeaderEvents) {
    until_event(events, LIMIT, |e| matches!(e, LeaderEvent::StartedLeading(_))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_go_and_informer_electors_respect_each_others_lease() {
    let server = ApiServer::builder().start().await.unwrap();
    let c = client(&server).await;

    // client-go's side takes the lease first (a 4 s lease, renewed every 500 ms).
    let go_belief = Belief::new();
    let go_stop = CancellationToken::new();
    let go_task = tokio::spawn(go_campaign(
        GoElector::new(c.clone(), "client-go-1", 4),
        Duration::from_millis(500),
        Duration::from_secs(3),
        go_belief.clone(),
        go_stop.clone(),
    ));
    go_belief.wait_leading().await;
    let created = server.get("leases", "default", NAME).await.unwrap();
    assert_eq!(created["spec"]["holderIdentity"], "client-go-1");

    // Ours campaigns with a 3 s lease of its own: it must honour the record's 4 s.
    let ours = LeaderElector::new(
        LeaderElectionConfig::new(LeaseLock::new(c.clone(), "default", NAME), "informer-1")
            .lease_duration(Duration::from_secs(3))
            .renew_deadline(Duration::from_secs(2))
            .retry_period(Duration::from_millis(250))
            .release_on_cancel(true),
    )
    .unwrap();
    let mut events = ours.subscribe();
    let stop = Arc::new(AtomicBool::new(false));
    let go_belief2 = Belief::new();
    let oracle = oracle(ours.clone(), vec![go_belief.clone(), go_belief2.clone()], stop.clone());
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (e, c) = (ours.clone(), cancel.clone());
        async move { e.run(c).await.unwrap() }
    });
    match tokio::time::timeout(LIMIT, events.recv()).await.unwrap().unwrap() {
        LeaderEvent::NewLeader(Some(who)) => assert_eq!(who, "client-go-1"),
        e => panic!("{e:?}"),
    }
    // While client-go renews, ours stands by: no event over several of its lease durations.
    if let Ok(e) = tokio::time::timeout(Duration::from_secs(5), events.recv()).await {
        panic!("ours acted while client-go renewed: {e:?}");
    }
    assert!(!ours.is_leader());

    // client-go's process dies: ours takes over no sooner than the record's 4 s after it last saw
    // a renewal.
    go_stop.cancel();
    let go = go_task.await.unwrap();
    let last_go_write = go.last_write.unwrap();
    next_started(&mut events).await;
    let waited = last_go_write.elapsed();
    assert!(waited >= Duration::from_secs(4), "took over {waited:?} after client-go's last renewal");
    let spec = server.get("leases", "default", NAME).await.unwrap()["spec"].clone();
    let fields: Vec<&str> = spec.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(fields, ["acquireTime", "holderIdentity", "leaseDurationSeconds", "leaseTransitions", "renewTime"]);
    assert_eq!(spec["holderIdentity"], "informer-1");
    assert_eq!(spec["leaseDurationSeconds"], 3);
    assert_eq!(spec["leaseTransitions"], 1, "a takeover counts one transition");
    assert!(is_go_micro_time(&spec["acquireTime"]) && is_go_micro_time(&spec["renewTime"]), "{spec}");
    for r in &go.read {
        assert!(is_go_micro_time(&r["renewTime"]), "client-go could not parse {r}");
    }

    // A client-go candidate now stands by behind ours: it never acquires while ours renews.
    let go_stop = CancellationToken::new();
    let go_task = tokio::spawn(go_campaign(
        GoElector::new(c.clone(), "client-go-2", 4),
        Duration::from_millis(500),
        Duration::from_secs(3),
        go_belief2.clone(),
        go_stop.clone(),
    ));
    // Ours keeps leading (no event) for several of its lease durations; client-go never acquires.
    if let Ok(e) = tokio::time::timeout(Duration::from_secs(5), events.recv()).await {
        panic!("ours changed state while a client-go candidate stood by: {e:?}");
    }
    assert!(!go_belief2.ever.load(Ordering::SeqCst), "client-go took a lease ours renews");
    let acquire_time = server.get("leases", "default", NAME).await.unwrap()["spec"]["acquireTime"].clone();
    assert_eq!(acquire_time, spec["acquireTime"], "renewals keep the acquire time");

    // Ours releases on cancel as client-go does; the client-go candidate takes over at once.
    cancel.cancel();
    run.await.unwrap();
    let released = Instant::now();
    go_belief2.wait_leading().await;
    assert!(released.elapsed() < Duration::from_secs(2), "took {:?}", released.elapsed());
    let taken = server.get("leases", "default", NAME).await.unwrap()["spec"].clone();
    assert_eq!(taken["holderIdentity"], "client-go-2");
    assert_eq!(taken["leaseTransitions"], 2);
    go_stop.cancel();
    let go = go_task.await.unwrap();
    let release = go.read.iter().find(|r| r["holderIdentity"] == "").expect("client-go read the released record");
    assert_eq!(release["leaseDurationSeconds"], 1);
    assert_eq!(release["leaseTransitions"], 1);
    assert_eq!(release["acquireTime"], release["renewTime"]);
    assert!(is_go_micro_time(&release["renewTime"]));

    stop.store(true, Ordering::SeqCst);
    let violations = oracle.join().unwrap();
    assert!(violations.is_empty(), "{violations:?}");
}
