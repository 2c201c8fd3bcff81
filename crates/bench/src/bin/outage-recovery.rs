//! `outage-recovery`: how soon informers catch up with an API server that comes back after an
//! outage, informer's reflector and kube-runtime's watcher side by side in one run.
//!
//! Each run: an embedded server holds `--objects` configmaps; informer's `SharedIndexInformer`
//! (LIST + WATCH, and streaming list) and kube-runtime's `reflector(watcher(..)).default_backoff()`
//! sync with it; the server goes away (connections refused) for `--outage` seconds and comes back
//! with the same storage; one object is written at once. The recovery of a client is the time from
//! the server serving again to that object being in the client's cache. Prints one line per run
//! and the medians.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use clap::Parser;
use futures_util::StreamExt;
use informer::{InformerOptions, KubeListerWatcher, ReflectorOptions, SharedIndexInformer};
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const NS: &str = "outage";

#[derive(Parser)]
#[command(about = "Recovery after an API server outage: informer and kube-runtime side by side")]
struct Args {
    /// Seconds the server is away in each run.
    #[arg(long, default_value_t = 60)]
    outage: u64,
    /// Runs.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Objects in the server.
    #[arg(long, default_value_t = 1000)]
    objects: usize,
}

fn cm(name: &str) -> serde_json::Value {
    json!({"metadata": {"name": name, "namespace": NS}, "data": {"v": "1"}})
}

async fn client(server: &ApiServer) -> anyhow::Result<kube::Client> {
    let kc = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml())?;
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    Ok(kube::Client::try_from(cfg)?)
}

/// A client's cache, asked whether it holds an object.
type Probe = Box<dyn Fn(&str) -> bool + Send + Sync>;

/// Waits until every probe sees `name`; the time each took from `from`.
async fn arrivals(probes: &[(&'static str, Probe)], name: &str, from: Instant) -> Vec<Duration> {
    let mut took = vec![None; probes.len()];
    while took.iter().any(Option::is_none) {
        for (i, (_, p)) in probes.iter().enumerate() {
            if took[i].is_none() && p(name) {
                took[i] = Some(from.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    took.into_iter().map(|t| t.expect("arrived")).collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let server = ApiServer::builder().start().await?;
    server.create("namespaces", json!({"metadata": {"name": NS}})).await?;
    let objs: Vec<_> = (0..args.objects).map(|i| cm(&format!("cm-{i:05}"))).collect();
    server.create_many("configmaps", objs).await?;
    let cancel = CancellationToken::new();

    let mut probes: Vec<(&'static str, Probe)> = Vec::new();
    for (name, streaming) in [("informer (LIST+WATCH)", false), ("informer (streaming list)", true)] {
        let lw = KubeListerWatcher::<ConfigMap>::new(client(&server).await?, Some(NS));
        let opts = InformerOptions::default().name(name).reflector(ReflectorOptions {
            name: name.into(),
            streaming_list: streaming,
            ..Default::default()
        });
        let informer = SharedIndexInformer::with_options(lw, opts);
        let (i, c) = (informer.clone(), cancel.clone());
        tokio::spawn(async move { i.run(c).await });
        informer.synced().wait().await;
        let indexer = informer.indexer().clone();
        probes.push((name, Box::new(move |n: &str| indexer.get_by_key(&format!("{NS}/{n}")).is_some())));
    }
    {
        let api: kube::Api<ConfigMap> = kube::Api::namespaced(client(&server).await?, NS);
        let (store, writer) = reflector::store::<ConfigMap>();
        let stream = reflector(writer, watcher(api, watcher::Config::default())).default_backoff();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while stream.next().await.is_some() {}
        });
        store.wait_until_ready().await?;
        let s = store.clone();
        probes.push((
            "kube-runtime (default_backoff)",
            Box::new(move |n: &str| s.get(&reflector::ObjectRef::new(n).within(NS)).is_some()),
        ));
    }
    // Every client has a watch open before the first outage.
    let clients = probes.len();
    server.wait_for_watches(clients, Duration::from_secs(30)).await;

    let mut results: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for run in 0..args.runs {
        server.stop().await;
        tokio::time::sleep(Duration::from_secs(args.outage)).await;
        server.restart().await?;
        server.wait_ready(Duration::from_secs(30)).await;
        let back = Instant::now();
        let marker = format!("marker-{run}");
        server.create("configmaps", cm(&marker)).await?;
        let took = arrivals(&probes, &marker, back).await;
        let line: Vec<String> =
            probes.iter().zip(&took).map(|((n, _), t)| format!("{n} {:.2} s", t.as_secs_f64())).collect();
        println!("run {run}: outage {} s; caught up after: {}", args.outage, line.join(", "));
        for ((n, _), t) in probes.iter().zip(&took) {
            results.entry(n).or_default().push(t.as_secs_f64());
        }
        // Every client watches again before the next outage.
        server.wait_for_watches(clients, Duration::from_secs(60)).await;
    }
    for (n, mut v) in results {
        let (lo, hi) = (v.iter().copied().fold(f64::MAX, f64::min), v.iter().copied().fold(0.0, f64::max));
        println!("{n}: median {:.2} s (min {lo:.2}, max {hi:.2}) over {} runs", median(&mut v), args.runs);
    }
    cancel.cancel();
    Ok(())
}
