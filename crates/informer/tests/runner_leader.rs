//! ControllerRunner under leader election, on paused time, with two replicas sharing an
//! in-memory lock and a fake source: only the leader reconciles; a leader that loses its lease
//! cancels its in-flight reconcile (the key is reconciled again by the next leader) and goes back
//! to standby with its cache warm; a clean stop finishes the in-flight reconcile before the lease
//! is released; no key is ever reconciled by two replicas at once.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::memory_lock::{Faults, MemoryStore};
use common::reconciles::{Done, Outcome, Tracker};
use common::{MAX_RETRY_WAIT, RETRY, until_event};
use informer::SharedIndexInformer;
use informer::fake::FakeSource;
use informer::leader_election::{LeaderElectionConfig, LeaderEvent, LeaderEvents};
use informer::runner::{Action, ControllerRunner, RunnerError};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(3600);

fn cm(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}})
}

struct Replica {
    runner: ControllerRunner<ConfigMap>,
    faults: Faults,
    events: LeaderEvents,
    cancel: CancellationToken,
    informer: JoinHandle<()>,
    run: JoinHandle<Result<(), RunnerError>>,
}

/// A replica whose reconcile of `ns/slow` waits for `slow` to be notified.
fn replica(
    name: &str,
    src: &FakeSource,
    store: &Arc<MemoryStore>,
    tracker: &Arc<Tracker>,
    slow: Arc<Notify>,
) -> Replica {
    let informer = SharedIndexInformer::<ConfigMap>::new(src.clone(), Duration::ZERO);
    let (lock, faults) = store.lock(name);
    let (tracker, who) = (tracker.clone(), name.to_string());
    let runner = ControllerRunner::builder("configmaps")
        .informer(&informer)
        .workers(2)
        .leader_election(LeaderElectionConfig::new(lock, name).release_on_cancel(true))
        .build(move |key, _obj| {
            let (tracker, who, slow) = (tracker.clone(), who.clone(), slow.clone());
            async move {
                let mut flight = tracker.begin(&who, &key);
                if key.name() == "slow" {
                    slow.notified().await;
                }
                flight.finished = true;
                Ok::<_, std::convert::Infallible>(Action::Done)
            }
        })
        .unwrap();
    let events = runner.leader_elector().unwrap().subscribe();
    let cancel = CancellationToken::new();
    let inf = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let run = tokio::spawn({
        let (r, c) = (runner.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    Replica { runner, faults, events, cancel, informer: inf, run }
}

impl Replica {
    async fn until(&mut self, f: impl Fn(&LeaderEvent) -> bool) {
        until_event(&mut self.events, LIMIT, f).await;
    }
}

async fn outcome(rx: &mut mpsc::UnboundedReceiver<Outcome>) -> Outcome {
    tokio::time::timeout(LIMIT, rx.recv()).await.unwrap().unwrap()
}

/// Collects outcomes until every key of `keys` was finished by `replica`.
async fn all_finished_by(rx: &mut mpsc::UnboundedReceiver<Outcome>, replica: &str, keys: &[&str]) -> Vec<Outcome> {
    let mut want: Vec<String> = keys.iter().map(|k| format!("ns/{k}")).collect();
    let mut seen = Vec::new();
    while !want.is_empty() {
        let o = outcome(rx).await;
        if o.0 == replica && o.2 == Done::Finished {
            want.retain(|k| *k != o.1);
        }
        seen.push(o);
    }
    seen
}

#[tokio::test(start_paused = true)]
async fn only_the_leader_reconciles_and_a_lost_lease_cancels_in_flight_work() {
    let src = FakeSource::new();
    for n in ["a", "b", "slow"] {
        src.add(cm(n));
    }
    let store = MemoryStore::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let tracker = Tracker::new(tx);
    let slow_a = Arc::new(Notify::new());
    let slow_b = Arc::new(Notify::new());

    let mut a = replica("a", &src, &store, &tracker, slow_a.clone());
    a.until(|e| matches!(e, LeaderEvent::StartedLeading(_))).await;
    let mut b = replica("b", &src, &store, &tracker, slow_b.clone());
    b.until(|e| matches!(e, LeaderEvent::NewLeader(Some(l)) if l == "a")).await;
    all_finished_by(&mut rx, "a", &["a", "b"]).await;
    assert_eq!(tracker.in_flight.lock().get("ns/slow").map(String::as_str), Some("a"), "A is in the slow reconcile");

    // B is a warm standby: synced, keys queued, nothing reconciled.
    src.add(cm("c"));
    let (replica, key, done, _) = outcome(&mut rx).await;
    assert_eq!((replica.as_str(), key.as_str(), done), ("a", "ns/c", Done::Finished));
    assert!(b.runner.has_synced());
    assert_eq!(b.runner.stats().success, 0);
    assert!(b.runner.stats().queued >= 4, "{:?}", b.runner.stats());

    // A's lease can no longer be renewed: at the renew deadline its in-flight reconcile is
    // cancelled; B takes over only when the lease has expired for it, and reconciles everything.
    a.faults.fail(true);
    let lost_at = {
        let (replica, key, done, at) = outcome(&mut rx).await;
        assert_eq!((replica.as_str(), key.as_str(), done), ("a", "ns/slow", Done::Cancelled));
        at
    };
    assert!(!a.runner.leader_elector().unwrap().is_leader());
    b.until(|e| matches!(e, LeaderEvent::StartedLeading(_))).await;
    let took_over = Instant::now();
    assert!(took_over - lost_at >= Duration::from_secs(5), "B led {:?} after A stopped", took_over - lost_at);
    slow_b.notify_one();
    let seen = all_finished_by(&mut rx, "b", &["a", "b", "c", "slow"]).await;
    assert!(seen.iter().all(|o| o.0 == "b"), "only B reconciles now: {seen:?}");
    assert_eq!(a.runner.stats().in_flight, 0);

    // A recovers and stands by; B stops cleanly: its slow reconcile finishes first, then the
    // lease is released and A takes over at once, reconciling every key again.
    a.faults.fail(false);
    a.until(|e| matches!(e, LeaderEvent::NewLeader(Some(l)) if l == "b")).await;
    src.modify(cm("slow"));
    let stopping = async {
        while tracker.in_flight.lock().get("ns/slow").map(String::as_str) != Some("b") {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(LIMIT, stopping).await.unwrap();
    let cancelled = Instant::now();
    b.cancel.cancel();
    tokio::time::sleep(RETRY * 3).await;
    assert!(!b.run.is_finished(), "B waits for its in-flight reconcile");
    assert_eq!(store.record().unwrap().holder_identity, "b", "the lease is kept until the reconcile finishes");
    let renewals = store.writes().iter().filter(|w| w.by == "b" && w.at > cancelled).count();
    assert!(renewals >= 2, "B renews its lease while its reconcile finishes: {renewals} renewals");
    assert!(b.runner.leader_elector().unwrap().is_leader());
    slow_b.notify_one();
    let (replica, key, done, finished_at) = outcome(&mut rx).await;
    assert_eq!((replica.as_str(), key.as_str(), done), ("b", "ns/slow", Done::Finished));
    b.run.await.unwrap().unwrap();
    b.informer.await.unwrap();
    let released = store.record().unwrap();
    assert_eq!(released.holder_identity, "", "B released the lease");
    a.until(|e| matches!(e, LeaderEvent::StartedLeading(_))).await;
    assert!(Instant::now() - finished_at <= MAX_RETRY_WAIT, "A took over within one retry");
    slow_a.notify_one();
    let seen = all_finished_by(&mut rx, "a", &["a", "b", "c", "slow"]).await;
    assert!(seen.iter().all(|o| o.0 == "a"), "{seen:?}");

    a.cancel.cancel();
    a.run.await.unwrap().unwrap();
    a.informer.await.unwrap();
    let overlaps = tracker.overlaps.lock().clone();
    assert!(overlaps.is_empty(), "{overlaps:?}");
}

#[tokio::test(start_paused = true)]
async fn a_bad_leader_election_configuration_is_refused_at_build() {
    let src = FakeSource::new();
    let informer = SharedIndexInformer::<ConfigMap>::new(src, Duration::ZERO);
    let (lock, _) = MemoryStore::new().lock("a");
    let r = ControllerRunner::builder("x")
        .informer(&informer)
        .leader_election(LeaderElectionConfig::new(lock, "a").renew_deadline(Duration::from_secs(20)))
        .build(|_, _| async { Ok::<_, String>(Action::Done) });
    assert!(matches!(r, Err(RunnerError::LeaderElectionConfig(..))), "{r:?}");
}
