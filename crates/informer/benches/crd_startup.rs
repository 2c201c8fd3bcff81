//! Custom resources on the embedded API server: how long from `ApiServer::builder()…start()` to a
//! served CustomResourceDefinition (what envtest takes seconds for), and to a synced informer on
//! its kind; and the heap each stored custom object costs the server, beside a ConfigMap of the
//! same size.
//!
//! Run: `cargo bench -p informer --bench crd_startup` (prints the figures).

mod common;

use std::time::{Duration, Instant};

use informer::prelude::*;
use kube::CustomResource;
use kube::CustomResourceExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A gadget of the benchmark.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "bench.example.org", version = "v1", kind = "Gadget", namespaced, status = "GadgetStatus")]
pub struct GadgetSpec {
    /// Replicas wanted.
    replicas: i32,
    /// Free-form settings.
    settings: std::collections::BTreeMap<String, String>,
}

/// Status.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct GadgetStatus {
    /// Replicas ready.
    ready: i32,
}

const RUNS: usize = 20;
const OBJECTS: usize = 10_000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Ten settings of about 90 bytes: a custom object of about 1.1 KB of JSON.
fn settings(i: usize) -> serde_json::Value {
    (0..10).map(|k| (format!("setting-{k:02}"), json!(format!("value-{i:07}-{k:02}-{}", "x".repeat(60))))).collect()
}

async fn startup() -> (Duration, Duration) {
    let crd = serde_json::to_string(&Gadget::crd()).unwrap();
    let t = Instant::now();
    let server = informer_apiserver::ApiServer::builder().crd(&crd).start().await.unwrap();
    let served = t.elapsed();
    let kc = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml()).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
    let client = kube::Client::try_from(cfg).unwrap();
    let factory = SharedInformerFactory::new(client);
    let _gadgets = factory.informer::<Gadget>();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.wait_for_cache_sync(Some(Duration::from_secs(10))).await.into_result().unwrap();
    let synced = t.elapsed();
    cancel.cancel();
    (served, synced)
}

async fn heap_per_object(resource: &str, make: impl Fn(usize) -> serde_json::Value) -> (f64, usize) {
    let crd = serde_json::to_string(&Gadget::crd()).unwrap();
    let server = informer_apiserver::ApiServer::builder().crd(&crd).start().await.unwrap();
    let size = serde_json::to_vec(&make(0)).unwrap().len();
    // Counted from before the input is built: create_many consumes it, so what remains is the
    // server's.
    let before = common::live_bytes();
    let objs: Vec<serde_json::Value> = (0..OBJECTS).map(&make).collect();
    let rv = server.create_many(resource, objs).await.unwrap();
    // The cache holds every object once it has reached the last write's revision.
    assert!(server.store().cache().wait_for_rv(rv, Duration::from_secs(30)).await);
    let after = common::live_bytes();
    ((after - before) as f64 / OBJECTS as f64, size)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let _ = startup().await; // warm up (first-use parsing of the built-in schemas)
    let mut served = Vec::new();
    let mut synced = Vec::new();
    for _ in 0..RUNS {
        let (a, b) = startup().await;
        served.push(a);
        synced.push(b);
    }
    served.sort();
    synced.sort();
    println!(
        "start() to a served CustomResourceDefinition ({RUNS} runs): median {:.1} ms, p90 {:.1} ms",
        percentile(&served, 0.5).as_secs_f64() * 1e3,
        percentile(&served, 0.9).as_secs_f64() * 1e3
    );
    println!(
        "start() to an informer synced on its kind: median {:.1} ms, p90 {:.1} ms",
        percentile(&synced, 0.5).as_secs_f64() * 1e3,
        percentile(&synced, 0.9).as_secs_f64() * 1e3
    );
    let (gadget, size) = heap_per_object("gadgets.bench.example.org", |i| {
        json!({"apiVersion": "bench.example.org/v1", "kind": "Gadget",
               "metadata": {"name": format!("gadget-{i:07}"), "namespace": "default", "labels": {"app": format!("app-{}", i % 50)}},
               "spec": {"replicas": 3, "settings": settings(i)}})
    })
    .await;
    let (configmap, cm_size) = heap_per_object("configmaps", |i| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": format!("cm-{i:07}"), "namespace": "default", "labels": {"app": format!("app-{}", i % 50)}},
               "data": settings(i)})
    })
    .await;
    println!(
        "server heap per stored object ({OBJECTS} objects, store + watch-cache event): custom resource {gadget:.0} bytes ({size}-byte JSON), ConfigMap {configmap:.0} bytes ({cm_size}-byte JSON)"
    );
}
