//! Two replicas of a ControllerRunner under leader election over HTTP against the embedded API
//! server, each with its own `kube::Client`, informer and runner: only the leader reconciles; the
//! standby keeps a warm cache; when the leader is cancelled its workers stop, it releases the
//! Lease, and the standby's workers start at once and reconcile every key from the cache it
//! already has (no new LIST); no key is ever reconciled by both replicas at once.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::reconciles::{Done, Outcome, Tracker};
use common::{client, until_event};
use informer::leader_election::{LeaderElectionConfig, LeaderEvent, LeaderEvents, LeaseLock};
use informer::runner::{Action, ControllerRunner, RunnerError};
use informer::{KubeListerWatcher, SharedIndexInformer};
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(30);

fn cm(name: &str, v: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {"v": v}})
}

struct Replica {
    informer: SharedIndexInformer<ConfigMap>,
    runner: ControllerRunner<ConfigMap>,
    events: LeaderEvents,
    informer_cancel: CancellationToken,
    runner_cancel: CancellationToken,
    informer_task: JoinHandle<()>,
    run: JoinHandle<Result<(), RunnerError>>,
}

async fn replica(server: &ApiServer, name: &str, tracker: &Arc<Tracker>) -> Replica {
    let c = client(server).await;
    let informer =
        SharedIndexInformer::<ConfigMap>::new(KubeListerWatcher::new(c.clone(), Some("default")), Duration::ZERO);
    let election = LeaderElectionConfig::new(LeaseLock::new(c, "default", "configmap-controller"), name)
        .lease_duration(Duration::from_secs(2))
        .renew_deadline(Duration::from_secs(1))
        .retry_period(Duration::from_millis(200))
        .release_on_cancel(true);
    let (tracker, who) = (tracker.clone(), name.to_string());
    let runner = ControllerRunner::builder("configmaps")
        .informer(&informer)
        .workers(4)
        .leader_election(election)
        .build(move |key, _cm| {
            let (tracker, who) = (tracker.clone(), who.clone());
            async move {
                let mut flight = tracker.begin(&who, &key);
                // Some work with an await in it, so that reconciles of both replicas could meet.
                tokio::task::yield_now().await;
                flight.finished = true;
                Ok::<_, std::convert::Infallible>(Action::Done)
            }
        })
        .unwrap();
    let events = runner.leader_elector().unwrap().subscribe();
    let (informer_cancel, informer_task) = common::spawn(&informer);
    let runner_cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (r, c) = (runner.clone(), runner_cancel.clone());
        async move { r.run(c).await }
    });
    Replica { informer, runner, events, informer_cancel, runner_cancel, informer_task, run }
}

impl Replica {
    async fn until(&mut self, f: impl Fn(&LeaderEvent) -> bool) {
        until_event(&mut self.events, LIMIT, f).await;
    }

    async fn started_leading(&mut self) {
        self.until(|e| matches!(e, LeaderEvent::StartedLeading(_))).await
    }
}

/// Waits until `who` has reconciled every key of `keys`; fails on a reconcile by anyone else, or
/// one that did not finish.
async fn reconciled_by(rx: &mut mpsc::UnboundedReceiver<Outcome>, who: &str, keys: &[String]) {
    let mut want: BTreeSet<&String> = keys.iter().collect();
    while !want.is_empty() {
        let (by, key, done, _) = tokio::time::timeout(LIMIT, rx.recv()).await.expect("timed out").unwrap();
        assert_eq!(by, who, "{key} reconciled by {by}; still expecting {want:?} from {who}");
        assert_eq!(done, Done::Finished, "{key} reconciled by {by}");
        want.remove(&key);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standby_takes_over_with_a_warm_cache_when_the_leader_is_cancelled() {
    let server = ApiServer::builder().start().await.unwrap();
    let names: Vec<String> = (0..20).map(|i| format!("cm-{i}")).collect();
    server.create_many("configmaps", names.iter().map(|n| cm(n, "1")).collect()).await.unwrap();
    let keys: Vec<String> = names.iter().map(|n| format!("default/{n}")).collect();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let tracker = Tracker::new(tx);

    let mut a = replica(&server, "replica-a", &tracker).await;
    a.started_leading().await;
    reconciled_by(&mut rx, "replica-a", &keys).await;

    let mut b = replica(&server, "replica-b", &tracker).await;
    b.until(|e| matches!(e, LeaderEvent::NewLeader(Some(l)) if l == "replica-a")).await;
    assert!(b.informer.has_synced(), "a replica campaigns once its caches have synced");
    let lists = server.request_counts().list;
    server.update("configmaps", cm("cm-3", "2")).await.unwrap();
    reconciled_by(&mut rx, "replica-a", &keys[3..4]).await;
    assert_eq!(b.runner.stats().success, 0, "the standby reconciles nothing");
    assert_eq!(b.runner.leader_elector().unwrap().leader().as_deref(), Some("replica-a"));

    // The leader is cancelled: its workers drain and stop, it releases the lease, and the
    // standby starts within a few retry periods (not a lease duration).
    let cancelled = tokio::time::Instant::now();
    a.runner_cancel.cancel();
    a.run.await.unwrap().unwrap();
    let a_done = a.runner.stats().success;
    b.started_leading().await;
    assert!(cancelled.elapsed() < Duration::from_secs(2), "took over after {:?}", cancelled.elapsed());
    reconciled_by(&mut rx, "replica-b", &keys).await;
    assert_eq!(server.request_counts().list, lists, "the standby's cache was warm: no new LIST");
    server.update("configmaps", cm("cm-7", "2")).await.unwrap();
    reconciled_by(&mut rx, "replica-b", &keys[7..8]).await;
    assert_eq!(a.runner.stats().success, a_done, "the old leader's workers stopped");

    b.runner_cancel.cancel();
    b.run.await.unwrap().unwrap();
    a.informer_cancel.cancel();
    b.informer_cancel.cancel();
    a.informer_task.await.unwrap();
    b.informer_task.await.unwrap();
    let overlaps = tracker.overlaps.lock().clone();
    assert!(overlaps.is_empty(), "keys reconciled by both replicas at once: {overlaps:?}");
    let lease = server.get("leases", "default", "configmap-controller").await.unwrap();
    assert_eq!(lease["spec"]["holderIdentity"], "", "released on the last stop");
    assert_eq!(lease["spec"]["leaseTransitions"], 1);
}
