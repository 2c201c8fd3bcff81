//! The load generator: creates, updates (labels and phase) and deletes pods at a given rate,
//! against the embedded server (in-process) or a real cluster (through kube's `Api`, only with
//! `--generate-load`).
//!
//! Invariants: it stops when its token is cancelled and returns only then; the generated pods
//! of a real cluster carry the label `informer-demo=generated` and are deleted on stop;
//! failures of single changes are counted and logged at debug level, never fatal.

use std::sync::Arc;
use std::time::Duration;

use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use rand::Rng;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const PHASES: [&str; 4] = ["Pending", "Running", "Succeeded", "Failed"];

/// The demo pod number `i`.
pub fn pod(ns: &str, i: u64) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("demo-{i:07}"), "namespace": ns,
                     "labels": {"app": format!("app-{}", i % 50), "generation": "0"}},
        "spec": {"containers": [{"name": "main", "image": "registry.example/app:1.0",
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}], "nodeName": format!("node-{}", i % 20)},
        "status": {"phase": "Running"}
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

/// Makes `rate` changes per second on the embedded server until cancelled.
pub async fn embedded(server: Arc<ApiServer>, ns: String, rate: u32, first_free: u64, cancel: CancellationToken) {
    let mut picker = Picker { next: first_free, live: (0..first_free).collect() };
    let (mut tick, per_tick) = ticker(rate);
    let mut generation: u64 = 0;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        for _ in 0..per_tick {
            generation += 1;
            let r = match picker.pick() {
                Change::Create => server.create("pods", pod(&ns, picker.next - 1)).await.map(drop),
                Change::Delete(i) => server.delete("pods", &ns, &format!("demo-{i:07}")).await.map(drop),
                Change::Update(i) => {
                    let mut p = pod(&ns, i);
                    p["metadata"]["labels"]["generation"] = json!(generation.to_string());
                    p["status"]["phase"] = json!(PHASES[(generation % 4) as usize]);
                    // Unconditional update (no resourceVersion precondition).
                    server.update("pods", p).await.map(drop)
                }
            };
            if let Err(e) = r {
                tracing::debug!(error = %e, "load generator change failed");
            }
        }
    }
}

const GENERATED: &str = "informer-demo=generated";

fn cluster_pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"informer-demo": "generated", "generation": "0"}},
        "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}],
                 "terminationGracePeriodSeconds": 0}
    }))
    .expect("a valid pod")
}

/// Makes up to `rate` (at most 50) changes per second on a real cluster until cancelled, then
/// deletes the pods it created.
pub async fn cluster(client: kube::Client, ns: String, rate: u32, cancel: CancellationToken) {
    let api: Api<Pod> = Api::namespaced(client, &ns);
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
                    api.create(&PostParams::default(), &cluster_pod(&name(picker.next - 1))).await.map(drop)
                }
                Change::Delete(i) => api.delete(&name(i), &DeleteParams::default().grace_period(0)).await.map(drop),
                Change::Update(i) => {
                    let patch = json!({"metadata": {"labels": {"generation": generation.to_string()}}});
                    api.patch(&name(i), &PatchParams::default(), &Patch::Merge(&patch)).await.map(drop)
                }
            };
            if let Err(e) = r {
                tracing::debug!(error = %e, "load generator change failed");
            }
        }
    }
    let lp = ListParams::default().labels(GENERATED);
    if let Err(e) = api.delete_collection(&DeleteParams::default().grace_period(0), &lp).await {
        tracing::warn!(error = %e, "could not delete the generated pods (label {GENERATED})");
    }
}
