//! `storage-bench`: the API server's storage backends measured side by side in one run.
//!
//! For each backend (memory, SQLite in a temporary directory, a real etcd started for the run):
//! - durable writes/s over HTTP: creations, then updates, of W1-shaped pods (4.5 KB of JSON),
//!   with 1 and with 16 concurrent writers (each a client connection writing one at a time);
//! - reads served by the watch cache: a LIST of every pod (unpaged, and in pages of 500), a WATCH
//!   replaying every event, and the server's memory per stored pod (RSS growth while loading);
//! - restart: the time from starting a server on a storage that holds `--restart-objects` pods to
//!   its cache serving them (durable backends).
//!
//! Prints one line per measurement and a JSON line per backend. The server and the clients share
//! the process (and the machine's cores), as they would with kube-apiserver on the same machine.

use std::time::{Duration, Instant};

use clap::Parser;
use http::Request;
use informer_apiserver::ApiServer;
use informer_bench::backend::Backend;
use informer_bench::measure::proc_status_kb;
use kube::client::Body;
use serde_json::{Value, json};

const TEMPLATE: &str = include_str!("../../data/w1-pod.json");

#[derive(Parser)]
#[command(about = "The API server's storage backends side by side")]
struct Args {
    /// Backends to measure (memory, sqlite, etcd).
    #[arg(long, value_delimiter = ',', default_value = "memory,sqlite,etcd")]
    backends: Vec<String>,
    /// Pods written (and then read) per writer setting.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    /// Concurrent writers settings.
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    writers: Vec<usize>,
    /// Pods in the storage for the restart measurement (0: skip it).
    #[arg(long, default_value_t = 100_000)]
    restart_objects: usize,
    /// Measure this one backend in this process (each backend runs in a process of its own, so
    /// that its memory is measured alone).
    #[arg(long, hide = true)]
    one: Option<String>,
}

/// A W1 pod named `name` in `ns`, as a client creates it (no server-owned fields).
fn pod(template: &Value, ns: &str, name: &str) -> Vec<u8> {
    let mut p = template.clone();
    let m = p["metadata"].as_object_mut().expect("metadata");
    for f in ["uid", "resourceVersion", "creationTimestamp", "generateName", "selfLink"] {
        m.remove(f);
    }
    m.insert("name".into(), json!(name));
    m.insert("namespace".into(), json!(ns));
    serde_json::to_vec(&p).expect("json")
}

/// A server on `backend`, keeping every event (the watch replay reads them all).
async fn start_server(backend: &Backend) -> anyhow::Result<ApiServer> {
    Ok(ApiServer::builder()
        .storage(backend.storage.clone())
        .history_capacity(400_000)
        .history_max_age(None)
        .compaction_interval(Duration::ZERO)
        .ready_timeout(Duration::from_secs(600))
        .start()
        .await?)
}

async fn client(server: &ApiServer) -> anyhow::Result<kube::Client> {
    let cfg = kube::Config::new(server.url().parse()?);
    Ok(kube::Client::try_from(cfg)?)
}

async fn send(c: &kube::Client, method: &str, path: &str, body: Vec<u8>) -> anyhow::Result<Vec<u8>> {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(Body::from(body))?;
    let resp = c.send(req).await?;
    let status = resp.status();
    let bytes = http_body_util::BodyExt::collect(resp.into_body()).await?.to_bytes().to_vec();
    anyhow::ensure!(status.is_success(), "{method} {path}: {status}: {}", String::from_utf8_lossy(&bytes));
    Ok(bytes)
}

/// Runs `writers` concurrent writers over `objects` pods: creations (which keep none of the
/// status sent), then updates of each pod's status. Returns (creates/s, updates/s, RSS growth in
/// KiB over the creations).
async fn writes(
    server: &ApiServer,
    template: &Value,
    ns: &str,
    objects: usize,
    writers: usize,
) -> anyhow::Result<(f64, f64, u64)> {
    let mut clients = Vec::new();
    for _ in 0..writers {
        clients.push(client(server).await?);
    }
    // Request bodies are made before the clock starts: the clients' own work stays out of the
    // server's figures (they share the machine's cores).
    let bodies = || -> Vec<Vec<(String, Vec<u8>)>> {
        (0..writers)
            .map(|w| {
                (w..objects)
                    .step_by(writers)
                    .map(|i| {
                        let name = format!("bench-{i:07}");
                        let body = pod(template, ns, &name);
                        (name, body)
                    })
                    .collect()
            })
            .collect()
    };
    let run = |update: bool, bodies: Vec<Vec<(String, Vec<u8>)>>| {
        let clients = clients.clone();
        let ns = ns.to_string();
        async move {
            let started = Instant::now();
            let mut tasks = Vec::new();
            for (c, mine) in clients.into_iter().zip(bodies) {
                let ns = ns.clone();
                tasks.push(tokio::spawn(async move {
                    for (name, body) in mine {
                        if update {
                            // As a kubelet reports a pod: its status, which the create left out.
                            send(&c, "PUT", &format!("/api/v1/namespaces/{ns}/pods/{name}/status"), body).await?;
                        } else {
                            send(&c, "POST", &format!("/api/v1/namespaces/{ns}/pods"), body).await?;
                        }
                    }
                    anyhow::Ok(())
                }));
            }
            for t in tasks {
                t.await??;
            }
            anyhow::Ok(objects as f64 / started.elapsed().as_secs_f64())
        }
    };
    let (create_bodies, update_bodies) = (bodies(), bodies());
    let before = proc_status_kb("VmRSS:");
    let creates = run(false, create_bodies).await?;
    let grown = proc_status_kb("VmRSS:").saturating_sub(before);
    let updates = run(true, update_bodies).await?;
    Ok((creates, updates, grown))
}

/// Reads served by the cache: (unpaged LIST ms, paged LIST ms, watch replay events/s).
async fn reads(server: &ApiServer, ns: &str, from_rv: u64, events: usize) -> anyhow::Result<(f64, f64, f64)> {
    let c = client(server).await?;
    let t = Instant::now();
    let body = send(&c, "GET", &format!("/api/v1/namespaces/{ns}/pods"), Vec::new()).await?;
    let unpaged = t.elapsed().as_secs_f64() * 1e3;
    anyhow::ensure!(body.len() > 1000, "empty list");
    let t = Instant::now();
    let mut cont = String::new();
    loop {
        let q = if cont.is_empty() { "?limit=500".to_string() } else { format!("?limit=500&continue={cont}") };
        let body = send(&c, "GET", &format!("/api/v1/namespaces/{ns}/pods{q}"), Vec::new()).await?;
        // Only the list's metadata is read (the items are skipped, not decoded).
        #[derive(serde::Deserialize)]
        struct Page {
            metadata: PageMeta,
        }
        #[derive(serde::Deserialize)]
        struct PageMeta {
            #[serde(rename = "continue", default)]
            cont: String,
        }
        let page: Page = serde_json::from_slice(&body)?;
        if page.metadata.cont.is_empty() {
            break;
        }
        cont = page.metadata.cont;
    }
    let paged = t.elapsed().as_secs_f64() * 1e3;
    // Watch replay: count event lines until `events` arrived.
    let req = Request::builder()
        .uri(format!("/api/v1/namespaces/{ns}/pods?watch=1&resourceVersion={from_rv}"))
        .body(Body::empty())?;
    let t = Instant::now();
    let resp = c.send(req).await?;
    let mut body = resp.into_body();
    let mut seen = 0usize;
    while seen < events {
        let frame = http_body_util::BodyExt::frame(&mut body).await.ok_or_else(|| anyhow::anyhow!("watch ended"))??;
        if let Ok(d) = frame.into_data() {
            seen += d.iter().filter(|b| **b == b'\n').count();
        }
    }
    let replay = events as f64 / t.elapsed().as_secs_f64();
    Ok((unpaged, paged, replay))
}

/// Loads `n` pods in-process, then times a new server's start on the same storage: with the
/// whole history of the load to replay, then after a compaction (a server that ran for longer than
/// a compaction interval). Returns (seconds with history, seconds compacted).
async fn restart(backend: &Backend, template: &Value, n: usize) -> anyhow::Result<(f64, f64)> {
    {
        let server = start_server(backend).await?;
        server.create("namespaces", json!({"metadata": {"name": "restart"}})).await?;
        let template = &informer_bench::seed::owned_by_a_replica_set(&server, "restart", template).await?;
        let mut done = 0;
        while done < n {
            let batch: Vec<Value> = (done..(done + 1000).min(n))
                .map(|i| serde_json::from_slice(&pod(template, "restart", &format!("r-{i:07}"))).expect("json"))
                .collect();
            done += batch.len();
            informer_bench::seed::create_with_status(&server, "pods", batch).await?;
        }
        server.stop().await;
    }
    let mut times = Vec::new();
    for compact in [false, true] {
        let t = Instant::now();
        let server = start_server(backend).await?;
        times.push(t.elapsed().as_secs_f64());
        let listed = server.list_raw("pods", Some("restart")).await?.len();
        anyhow::ensure!(listed == n, "restarted with {listed} of {n} pods");
        if compact {
            break;
        }
        server.compact().await?;
        server.stop().await;
    }
    Ok((times[0], times[1]))
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(one) = &args.one {
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        return rt.block_on(measure(&args, one));
    }
    let template: Value = serde_json::from_str(TEMPLATE)?;
    println!(
        "storage-bench: {} W1 pods ({} bytes each), writers {:?}, restart with {} pods",
        args.objects,
        pod(&template, "w", "bench-0000000").len(),
        args.writers,
        args.restart_objects
    );
    let me = std::env::current_exe()?;
    for name in &args.backends {
        let status =
            std::process::Command::new(&me).args(std::env::args_os().skip(1)).args(["--one", name]).status()?;
        anyhow::ensure!(status.success(), "measuring {name}: {status}");
    }
    Ok(())
}

async fn measure(args: &Args, name: &str) -> anyhow::Result<()> {
    let template: Value = serde_json::from_str(TEMPLATE)?;
    {
        let backend = Backend::new(name, "storage-bench-main")?;
        let server = start_server(&backend).await?;
        let mut out = serde_json::Map::new();
        out.insert("backend".into(), json!(name));
        // Memory is read over the first creations, in a process that has done nothing else.
        let mut per_pod_kb: Option<u64> = None;
        for &w in &args.writers {
            let ns = format!("w{w}");
            server.create("namespaces", json!({"metadata": {"name": ns}})).await?;
            let owned = informer_bench::seed::owned_by_a_replica_set(&server, &ns, &template).await?;
            let rv0 = server.resource_version();
            let (creates, updates, grown) = writes(&server, &owned, &ns, args.objects, w).await?;
            per_pod_kb.get_or_insert(grown);
            println!("{name:>7}  writers={w:<3} creates/s {creates:>8.0}  updates/s {updates:>8.0}");
            out.insert(format!("creates_per_s_{w}"), json!(creates.round()));
            out.insert(format!("updates_per_s_{w}"), json!(updates.round()));
            if w == *args.writers.iter().max().unwrap_or(&w) {
                let per_object = (per_pod_kb.unwrap_or(0) * 1024) as f64 / args.objects as f64;
                let (unpaged, paged, replay) = reads(&server, &ns, rv0, args.objects * 2).await?;
                println!(
                    "{name:>7}  LIST {} pods {unpaged:.0} ms, in pages of 500 {paged:.0} ms; watch replay {replay:.0} events/s; ~{per_object:.0} bytes of RSS per stored pod",
                    args.objects
                );
                out.insert("list_ms".into(), json!(unpaged.round()));
                out.insert("list_paged_ms".into(), json!(paged.round()));
                out.insert("watch_replay_events_per_s".into(), json!(replay.round()));
                out.insert("rss_bytes_per_pod".into(), json!(per_object.round()));
            }
        }
        drop(server);
        if args.restart_objects > 0 && name != "memory" {
            let backend = Backend::new(name, "storage-bench-restart")?;
            let (history, compacted) = restart(&backend, &template, args.restart_objects).await?;
            println!(
                "{name:>7}  restart with {} pods: ready in {compacted:.2} s ({history:.2} s replaying the history of their creation)",
                args.restart_objects
            );
            out.insert("restart_s".into(), json!((compacted * 100.0).round() / 100.0));
            out.insert("restart_with_history_s".into(), json!((history * 100.0).round() / 100.0));
        }
        println!("{}", Value::Object(out));
    }
    Ok(())
}
