//! `informer demo`: a sample pod controller under load, with periodic figures and a final check
//! that the cache equals the server's state.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use informer::fifo::Queue;
use informer::{Controller, HandlerFns, Indexer, Indexers, KubeListerWatcher, RealFifo, ReflectorOptions};
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::Pod;
use rand::Rng;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Options of `informer demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Use a real cluster instead of the embedded API server.
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Namespace to watch (default: "default").
    #[arg(long, short = 'n', default_value = "default")]
    namespace: String,
    /// Number of pods created before the controller starts (embedded server).
    #[arg(long, default_value_t = 3000)]
    objects: usize,
    /// Changes per second made by the load generator.
    #[arg(long, default_value_t = 500)]
    rate: u32,
    /// Generate load against a real cluster too (off by default with --kubeconfig).
    #[arg(long)]
    generate_load: bool,
    /// Stop after this many seconds and print a summary (default: run until Ctrl-C).
    #[arg(long)]
    duration: Option<u64>,
}

#[derive(Default)]
struct Counters {
    adds: AtomicU64,
    updates: AtomicU64,
    deletes: AtomicU64,
}

fn pod(ns: &str, i: u64) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("demo-{i:07}"), "namespace": ns,
                     "labels": {"app": format!("app-{}", i % 50), "generation": "0"}},
        "spec": {"containers": [{"name": "main", "image": "registry.example/app:1.0",
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}], "nodeName": format!("node-{}", i % 20)},
        "status": {"phase": "Running"}
    })
}

/// Runs the demo; Ok(false) when the final check fails.
pub async fn run(args: DemoArgs) -> Result<bool> {
    let ns = args.namespace.clone();
    let server = match &args.kubeconfig {
        Some(_) => None,
        None => Some(Arc::new(ApiServer::builder().start().await.context("cannot start the embedded API server")?)),
    };
    let client = match (&args.kubeconfig, &server) {
        (Some(path), _) => crate::client::from_file(path).await?,
        (None, Some(s)) => crate::client::from_yaml(&s.kubeconfig_yaml()).await?,
        (None, None) => unreachable!("a server is started when no kubeconfig is given"),
    };
    if let Some(s) = &server {
        let pods: Vec<_> = (0..args.objects as u64).map(|i| pod(&ns, i)).collect();
        s.create_many("pods", pods).map_err(|e| anyhow::anyhow!("preloading pods: {e}"))?;
        println!("embedded API server at {} with {} pods in namespace {ns}", s.url(), args.objects);
    }

    let counters = Arc::new(Counters::default());
    let handler = {
        let c = counters.clone();
        let (c2, c3) = (counters.clone(), counters.clone());
        HandlerFns::<Pod>::new()
            .on_add(move |_, _| {
                c.adds.fetch_add(1, Ordering::Relaxed);
            })
            .on_update(move |_, _| {
                c2.updates.fetch_add(1, Ordering::Relaxed);
            })
            .on_delete(move |_| {
                c3.deletes.fetch_add(1, Ordering::Relaxed);
            })
    };
    let store = Arc::new(Indexer::<Pod>::new(Indexers::new().with_namespace_index()));
    let queue = Arc::new(RealFifo::<Pod>::new(Default::default()));
    let lw = Arc::new(KubeListerWatcher::<Pod>::new(client, Some(&ns)));
    let ctrl = Arc::new(
        Controller::new(
            lw,
            queue.clone(),
            store.clone(),
            Arc::new(handler),
            ReflectorOptions { name: "demo-pods".into(), ..Default::default() },
            Default::default(),
        )
        .with_batch(256),
    );
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (c, k) = (ctrl.clone(), cancel.clone());
        async move { c.run(k).await }
    });

    let started = Instant::now();
    let synced = ctrl.synced();
    tokio::select! {
        _ = synced.wait() => {}
        _ = tokio::time::sleep(Duration::from_secs(60)) => anyhow::bail!("cache did not sync within 60 s (is the server reachable and are pods listable?)"),
        _ = tokio::signal::ctrl_c() => { cancel.cancel(); return Ok(true); }
    }
    println!("cache synced: {} pods in {:.1} ms", store.len(), started.elapsed().as_secs_f64() * 1e3);

    // Load generator: updates, creations and deletions at the requested rate.
    let load_cancel = CancellationToken::new();
    let load = match (&server, args.kubeconfig.is_none() || args.generate_load) {
        (Some(s), true) => {
            let s = s.clone();
            let (lc, ns2, rate, n0) = (load_cancel.clone(), ns.clone(), args.rate.max(1), args.objects as u64);
            Some(tokio::spawn(async move { generate(s, &ns2, rate, n0, lc).await }))
        }
        (None, true) => {
            eprintln!("note: --generate-load against a real cluster is not supported yet; watching only");
            None
        }
        _ => None,
    };

    let deadline = args.duration.map(|d| Instant::now() + Duration::from_secs(d));
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let mut last = (0, 0, 0);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = tokio::signal::ctrl_c() => break,
        }
        let now = (
            counters.adds.load(Ordering::Relaxed),
            counters.updates.load(Ordering::Relaxed),
            counters.deletes.load(Ordering::Relaxed),
        );
        let server_rv = server.as_ref().map(|s| s.resource_version().to_string()).unwrap_or_else(|| "-".into());
        println!(
            "t={:>4.0}s cached={:<6} events/s add={:<5} update={:<5} delete={:<5} queue={:<4} client_rv={} server_rv={}",
            started.elapsed().as_secs_f64(),
            store.len(),
            now.0 - last.0,
            now.1 - last.1,
            now.2 - last.2,
            queue.len(),
            ctrl.reflector_status().last_sync_resource_version(),
            server_rv
        );
        last = now;
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
    load_cancel.cancel();
    if let Some(l) = load {
        let _ = l.await;
    }

    let ok = match &server {
        Some(s) => verify(s, &ns, &store, &ctrl).await,
        None => true,
    };
    cancel.cancel();
    let _ = run.await;
    println!(
        "summary: adds={} updates={} deletes={} cached={}",
        counters.adds.load(Ordering::Relaxed),
        counters.updates.load(Ordering::Relaxed),
        counters.deletes.load(Ordering::Relaxed),
        store.len()
    );
    Ok(ok)
}

/// Waits for the client to reach the server's resourceVersion, then compares every object.
async fn verify<L: informer::ListerWatcher<Pod>, Q: Queue<Pod>, H: informer::ResourceEventHandler<Pod>>(
    server: &ApiServer,
    ns: &str,
    store: &Indexer<Pod>,
    ctrl: &Controller<Pod, L, Q, H>,
) -> bool {
    let target = server.resource_version();
    let t0 = Instant::now();
    // The server's RV is cluster-wide; the watch sees only pods, so wait for the pod set to match.
    let server_pods = || -> BTreeMap<String, String> {
        server
            .list("pods", Some(ns))
            .unwrap_or_default()
            .into_iter()
            .map(|p| {
                let m = &p["metadata"];
                (
                    format!("{}/{}", m["namespace"].as_str().unwrap_or(""), m["name"].as_str().unwrap_or("")),
                    m["resourceVersion"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let expected = server_pods();
    let cached = || -> BTreeMap<String, String> {
        store
            .list()
            .into_iter()
            .map(|o| (o.key().to_string(), o.resource_version().unwrap_or("").to_string()))
            .collect()
    };
    let mut got = cached();
    while got != expected && t0.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        got = cached();
    }
    let missing = expected.keys().filter(|k| !got.contains_key(*k)).count();
    let extra = got.keys().filter(|k| !expected.contains_key(*k)).count();
    let stale = expected.iter().filter(|(k, v)| got.get(*k).is_some_and(|g| g != *v)).count();
    let lost = missing + extra + stale;
    println!(
        "check: server pods={} cached={} missing={missing} extra={extra} stale={stale} lost_events={lost} (server rv {target}, client rv {}, converged in {:.0} ms)",
        expected.len(),
        got.len(),
        ctrl.reflector_status().last_sync_resource_version(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    if lost == 0 {
        println!("check: cache == server");
    } else {
        println!("check: FAILED: the cache differs from the server");
    }
    lost == 0
}

/// Makes `rate` changes per second until cancelled: 70% updates, 15% creates, 15% deletes.
async fn generate(server: Arc<ApiServer>, ns: &str, rate: u32, first_free: u64, cancel: CancellationToken) {
    let mut next = first_free;
    let mut live: Vec<u64> = (0..first_free).collect();
    let per_tick = (rate / 100).max(1);
    let mut tick = tokio::time::interval(Duration::from_millis(10).max(Duration::from_secs(1) / rate.min(100)));
    let mut generation: u64 = 0;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        for _ in 0..per_tick {
            let r: f64 = rand::rng().random();
            generation += 1;
            if r < 0.15 || live.is_empty() {
                let _ = server.create("pods", pod(ns, next));
                live.push(next);
                next += 1;
            } else if r < 0.30 {
                let idx = rand::rng().random_range(0..live.len());
                let i = live.swap_remove(idx);
                let _ = server.delete("pods", ns, &format!("demo-{i:07}"));
            } else {
                let i = live[rand::rng().random_range(0..live.len())];
                let mut p = pod(ns, i);
                p["metadata"]["labels"]["generation"] = json!(generation.to_string());
                // Unconditional update (no resourceVersion precondition).
                let _ = server.update("pods", p);
            }
        }
    }
}
