//! Throughput figures for the server (run with `--release`):
//! bulk-load rate, watch replay events/s to one watcher, live write→watch
//! events/s and CPU per write (updates and merge patches), and LIST time for 10k pods. The client side is a raw HTTP/1.1
//! reader counting event lines, so the figures are the server's.
//!
//! Usage: `cargo run --release -p informer-apiserver --example bench [N]`

use std::sync::Arc;
use std::time::Instant;

use informer_apiserver::ApiServer;
use informer_apiserver::ResourceInfo;
use informer_apiserver::store::{PatchType, Store};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn pod(i: usize) -> Value {
    let mf = json!([{"manager": "bench", "operation": "Update", "apiVersion": "v1", "time": "2026-11-21T19:37:57Z",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
        "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}}, "f:dnsPolicy": {},
        "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {},
        "f:terminationGracePeriodSeconds": {}}}}]);
    json!({
        "metadata": {"name": format!("bench-{i:07}"), "namespace": "bench", "labels": {"app": "bench", "shard": (i % 16).to_string()},
            "annotations": {"pad": "x".repeat(2600)}, "managedFields": mf},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst", "securityContext": {},
            "schedulerName": "default-scheduler", "nodeName": format!("node-{}", i % 100),
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority"}
    })
}

/// Opens a raw HTTP/1.1 GET and returns the stream positioned after headers,
/// plus any body bytes already read.
async fn raw_get(addr: std::net::SocketAddr, path: &str) -> (TcpStream, Vec<u8>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: bench\r\nAccept: application/json\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let mut tmp = vec![0u8; 65536];
    loop {
        let n = s.read(&mut tmp).await.unwrap();
        assert!(n > 0, "connection closed before headers");
        buf.extend_from_slice(&tmp[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).to_string();
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            return (s, buf[i + 4..].to_vec());
        }
    }
}

/// Reads a watch stream until `n` events were seen; returns bytes read.
async fn count_events(mut s: TcpStream, first: Vec<u8>, n: usize) -> usize {
    let finder = memchr::memmem::Finder::new(b"}\n");
    let mut seen = finder.find_iter(&first).count();
    let mut bytes = first.len();
    let mut tmp = vec![0u8; 1 << 20];
    let mut carry = first.last() == Some(&b'}');
    while seen < n {
        let k = s.read(&mut tmp).await.unwrap();
        assert!(k > 0, "stream ended after {seen} events");
        let chunk = &tmp[..k];
        if carry && chunk[0] == b'\n' {
            seen += 1;
        }
        seen += finder.find_iter(chunk).count();
        carry = chunk[k - 1] == b'}';
        bytes += k;
    }
    bytes
}

/// Counts live heap bytes, to report the memory each stored object costs.
struct Counting;
static LIVE: std::sync::atomic::AtomicIsize = std::sync::atomic::AtomicIsize::new(0);

// SAFETY: delegates to the system allocator and only counts sizes.
#[allow(unsafe_code)]
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc`'s contract, passed on unchanged.
        unsafe { std::alloc::System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        LIVE.fetch_sub(l.size() as isize, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc`'s contract, passed on unchanged.
        unsafe { std::alloc::System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as isize - l.size() as isize, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc`'s contract, passed on unchanged.
        unsafe { std::alloc::System.realloc(p, l, n) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `live` writes of pods `0..live` one after another while one watcher follows, and prints
/// writes/s, when the watcher had every event, and the process's CPU per write.
async fn live_writes<F, Fut>(s: &ApiServer, what: &str, live: usize, write: F)
where
    F: Fn(Arc<Store>, Arc<ResourceInfo>, usize) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let rv = s.resource_version();
    let (st, first) = raw_get(s.addr(), &format!("/api/v1/namespaces/bench/pods?watch=1&resourceVersion={rv}")).await;
    let reader = tokio::spawn(count_events(st, first, live));
    let store = s.store().clone();
    let info = store.registry().lookup("pods").unwrap().clone();
    let (t, cpu) = (Instant::now(), cpu_time());
    tokio::spawn(async move {
        for i in 0..live {
            write(store.clone(), info.clone(), i).await;
        }
    })
    .await
    .unwrap();
    let wrote = t.elapsed();
    reader.await.unwrap();
    let el = t.elapsed();
    println!(
        "live {what} {live}: writes {:.0}/s, watcher received all after {el:?} ({:.0} events/s), CPU {:.1} µs per write",
        live as f64 / wrote.as_secs_f64(),
        live as f64 / el.as_secs_f64(),
        (cpu_time() - cpu) * 1e6 / live as f64
    );
}

/// CPU time of this process so far (user and system), in seconds.
fn cpu_time() -> f64 {
    informer_bench::measure::cpu_seconds(std::process::id())
}

fn live_bytes() -> isize {
    LIVE.load(std::sync::atomic::Ordering::Relaxed)
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let s = ApiServer::builder().history_capacity(n * 2 + 10).history_max_age(None).start().await.unwrap();
    let addr = s.addr();
    s.create("namespaces", json!({"metadata": {"name": "bench"}})).await.unwrap();
    let size = serde_json::to_vec(&s.create("pods", pod(usize::MAX / 2)).await.unwrap()).unwrap().len();
    println!("object size: {size} bytes");

    // Bulk load (and the memory each stored object costs, including its watch-cache event).
    let rv0 = s.resource_version();
    let live_before = live_bytes();
    let objs: Vec<Value> = (0..n).map(pod).collect();
    let t = Instant::now();
    s.create_many("pods", objs).await.unwrap();
    let el = t.elapsed();
    println!("bulk create {n}: {el:?} ({:.0} objects/s)", n as f64 / el.as_secs_f64());
    // The input values were consumed by create_many, so what remains is the store's.
    println!(
        "memory per stored object: {:.0} bytes of heap for {size}-byte objects (store + watch-cache event)",
        (live_bytes() - live_before) as f64 / n as f64
    );

    // Replay to one watcher.
    let t = Instant::now();
    let (st, first) = raw_get(addr, &format!("/api/v1/namespaces/bench/pods?watch=1&resourceVersion={rv0}")).await;
    let bytes = count_events(st, first, n).await;
    let el = t.elapsed();
    println!(
        "watch replay {n} events: {el:?} ({:.0} events/s, {:.0} MB/s)",
        n as f64 / el.as_secs_f64(),
        bytes as f64 / el.as_secs_f64() / 1e6
    );

    // Live: writes through the in-process API while one watcher follows: updates of whole pods,
    // then merge patches of one label, as `kubectl label` and most controllers write.
    let live = n / 2;
    live_writes(&s, "updates", live, |store, info, i| async move {
        let mut p = pod(i);
        p["metadata"]["labels"]["gen"] = json!("2");
        store.update(&info, None, None, p, Default::default()).await.unwrap();
    })
    .await;
    live_writes(&s, "patches", live, |store, info, i| async move {
        let patch = format!(r#"{{"metadata":{{"labels":{{"gen":"{}"}}}}}}"#, i + 3);
        let name = format!("bench-{i:07}");
        store.patch(&info, "bench", &name, PatchType::Merge, patch.as_bytes(), Default::default()).await.unwrap();
    })
    .await;

    // LIST 10k.
    let s2 = ApiServer::builder().start().await.unwrap();
    s2.create("namespaces", json!({"metadata": {"name": "bench"}})).await.unwrap();
    s2.create_many("pods", (0..10_000).map(pod).collect()).await.unwrap();
    for q in ["", "?limit=500"] {
        let t = Instant::now();
        let mut total = 0usize;
        let mut pages = 0;
        let mut cont = String::new();
        loop {
            let path = if cont.is_empty() {
                format!("/api/v1/namespaces/bench/pods{q}")
            } else {
                format!("/api/v1/namespaces/bench/pods{q}&continue={cont}")
            };
            let (mut st, mut body) = raw_get(s2.addr(), &path).await;
            body.reserve(64 << 20);
            st.read_to_end(&mut body).await.unwrap();
            total += body.len();
            pages += 1;
            let text = String::from_utf8_lossy(&body[..body.len().min(400)]).to_string();
            match text.split("\"continue\":\"").nth(1).and_then(|r| r.split('"').next()) {
                Some(c) if !q.is_empty() => cont = c.to_string(),
                _ => break,
            }
        }
        println!("LIST 10k pods{q}: {:?} ({pages} pages, {:.1} MB)", t.elapsed(), total as f64 / 1e6);
    }
}
