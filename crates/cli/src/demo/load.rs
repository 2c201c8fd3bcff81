//! The load generator: creates, updates (labels or phase) and deletes pods at a given rate,
//! against the embedded server (in-process) or a real cluster (through kube's `Api`, only with
//! `--generate-load`).
//!
//! Invariants: it stops when its token is cancelled and returns only then; the generated pods
//! of a real cluster carry the label `informer-demo=generated` and are deleted on stop;
//! failures of single changes are counted and logged at debug level, never fatal.

use std::sync::Arc;
use std::time::Duration;

use informer_apiserver::ApiServer;
use informer_apiserver::delete_options::DeleteOpts;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use rand::Rng;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const PHASES: [&str; 4] = ["Pending", "Running", "Succeeded", "Failed"];

/// The demo pod number `i`, as a client creates it: its status (`Pending` at first) is the
/// server's, then the load's `status` writes.
pub fn pod(ns: &str, i: u64) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("demo-{i:07}"), "namespace": ns,
                     "labels": {"app": format!("app-{}", i % 50), "generation": "0"}},
        "spec": {"containers": [{"name": "main", "image": "registry.example/app:1.0",
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}], "nodeName": format!("node-{}", i % 20)}
    })
}

enum Change {
    Create,
    Delete(u64),
    Update(u64),
}

/// Picks the next change: 70% updates, 15% creates, 15% deletes.
struct Picker {
    next: u64,
    live: Vec<u64>,
}

impl Picker {
    fn pick(&mut self) -> Change {
        let r: f64 = rand::rng().random();
        if r < 0.15 || self.live.is_empty() {
            self.live.push(self.next);
            self.next += 1;
            Change::Create
        } else if r < 0.30 {
            let idx = rand::rng().random_range(0..self.live.len());
            Change::Delete(self.live.swap_remove(idx))
        } else {
            Change::Update(self.live[rand::rng().random_range(0..self.live.len())])
        }
    }
}

fn ticker(rate: u32) -> (tokio::time::Interval, u32) {
    let rate = rate.max(1);
    let per_tick = (rate / 100).max(1);
    let tick = tokio::time::interval(Duration::from_millis(10).max(Duration::from_secs(1) / rate.min(100)));
    (tick, per_tick)
}

/// Makes `rate` changes per second on the embedded server until cancelled, pausing while
/// `paused` says so.
pub async fn embedded(
    server: Arc<ApiServer>,
    ns: String,
    rate: u32,
    first_free: u64,
    mut paused: tokio::sync::watch::Receiver<bool>,
    cancel: CancellationToken,
) {
    let mut picker = Picker { next: first_free, live: (0..first_free).collect() };
    let (mut tick, per_tick) = ticker(rate);
    let mut generation: u64 = 0;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        if *paused.borrow_and_update() {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = paused.wait_for(|p| !*p) => continue,
            }
        }
        for _ in 0..per_tick {
            generation += 1;
            let r = match picker.pick() {
                Change::Create => server.create("pods", pod(&ns, picker.next - 1)).await.map(drop),
                // With no kubelet to stop them, bound pods are deleted as their kubelet would
                // finish them: with a grace period of 0.
                Change::Delete(i) => {
                    let now = DeleteOpts::default().grace_period(0);
                    server.delete_with("pods", &ns, &format!("demo-{i:07}"), &now).await.map(drop)
                }
                // Unconditional updates (no resourceVersion precondition): every other one changes
                // a label (a merge patch: the pod's spec is as admission made it), the others the
                // phase, through the status subresource.
                Change::Update(i) if generation.is_multiple_of(2) => {
                    let labels = json!({"metadata": {"labels": {"generation": generation.to_string()}}});
                    server.patch("pods", &ns, &format!("demo-{i:07}"), &labels).await.map(drop)
                }
                Change::Update(i) => {
                    let phase = PHASES[((generation / 2) % 4) as usize];
                    let status = json!({"status": {"phase": phase}});
                    server.patch_status("pods", &ns, &format!("demo-{i:07}"), &status).await.map(drop)
                }
            };
            if let Err(e) = r {
                tracing::debug!(error = %e, "load generator change failed");
            }
        }
    }
}

const GENERATED: &str = "informer-demo=generated";

/// Why a change failed.
enum Failed {
    /// The server answered with an error about the change.
    Answered(String),
    /// No answer (connection refused or reset, timeout, 5xx, 429).
    NoAnswer(String),
}

/// One change with [`REQUEST_TIMEOUT`].
async fn timed<T>(f: impl Future<Output = Result<T, kube::Error>>) -> Result<(), Failed> {
    match tokio::time::timeout(REQUEST_TIMEOUT, f).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(kube::Error::Api(s))) if s.code < 500 && s.code != 429 => Err(Failed::Answered(s.message)),
        Ok(Err(e)) => Err(Failed::NoAnswer(e.to_string())),
        Err(_) => Err(Failed::NoAnswer(format!("no answer within {} s", REQUEST_TIMEOUT.as_secs()))),
    }
}

fn cluster_pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"informer-demo": "generated", "generation": "0"}},
        "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}],
                 "terminationGracePeriodSeconds": 0}
    }))
    .expect("a valid pod")
}

/// How long one change may take before it counts as failed (a server that is away can hold a
/// request for minutes).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Waits, probing every second, until the server answers again; logs a countdown to each probe.
async fn wait_until_back(api: &Api<Pod>, cancel: &CancellationToken, error: &str) {
    let since = std::time::Instant::now();
    tracing::warn!(error, "load: the API server is away; pausing the load until it is back");
    loop {
        for left in (1..=3u32).rev() {
            tracing::warn!("load: the API server is away for {} s; next probe in {left} s", since.elapsed().as_secs());
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
        let probe = tokio::time::timeout(REQUEST_TIMEOUT, api.list_metadata(&ListParams::default().limit(1))).await;
        if matches!(probe, Ok(Ok(_))) {
            tracing::warn!("load: the API server is back after {} s; resuming", since.elapsed().as_secs());
            return;
        }
    }
}

/// Makes up to `rate` (at most 50) changes per second on a real cluster until cancelled, then
/// deletes the pods it created. When the server is away (three changes in a row failed for other
/// reasons than the change itself) the load pauses, probes until the server is back, and resumes.
pub async fn cluster(client: kube::Client, ns: String, rate: u32, cancel: CancellationToken) {
    let api: Api<Pod> = Api::namespaced(client, &ns);
    let mut failures = 0u32;
    let mut picker = Picker { next: 0, live: Vec::new() };
    let (mut tick, per_tick) = ticker(rate.min(50));
    let run = format!("{:06x}", rand::rng().random_range(0..0xffffffu32));
    let name = |i: u64| format!("informer-demo-{run}-{i}");
    let mut generation: u64 = 0;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tick.tick() => {}
        }
        for _ in 0..per_tick {
            generation += 1;
            let r = match picker.pick() {
                Change::Create => {
                    let pod = cluster_pod(&name(picker.next - 1));
                    timed(api.create(&PostParams::default(), &pod)).await
                }
                Change::Delete(i) => {
                    let (n, dp) = (name(i), DeleteParams::default().grace_period(0));
                    timed(api.delete(&n, &dp)).await
                }
                Change::Update(i) => {
                    let patch = json!({"metadata": {"labels": {"generation": generation.to_string()}}});
                    timed(api.patch(&name(i), &PatchParams::default(), &Patch::Merge(&patch))).await
                }
            };
            match r {
                Ok(()) => failures = 0,
                // The change itself was refused (a name taken, an object gone): the server is there.
                Err(Failed::Answered(e)) => {
                    failures = 0;
                    tracing::debug!(error = %e, "load generator change failed");
                }
                Err(Failed::NoAnswer(e)) => {
                    failures += 1;
                    tracing::debug!(error = %e, "load generator change failed");
                    if failures >= 3 {
                        wait_until_back(&api, &cancel, &e).await;
                        failures = 0;
                    }
                }
            }
        }
    }
    let lp = ListParams::default().labels(GENERATED);
    let dp = DeleteParams::default().grace_period(0);
    for attempt in 0..2 {
        match timed(api.delete_collection(&dp, &lp)).await {
            Ok(()) => break,
            // The clean-up waits a minute for a server that is away, not forever.
            Err(Failed::NoAnswer(e)) if attempt == 0 => {
                let never = CancellationToken::new();
                let _ = tokio::time::timeout(Duration::from_secs(60), wait_until_back(&api, &never, &e)).await;
            }
            Err(Failed::NoAnswer(e) | Failed::Answered(e)) => {
                tracing::warn!(error = %e, "could not delete the generated pods (label {GENERATED})");
            }
        }
    }
}
