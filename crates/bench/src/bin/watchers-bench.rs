//! `watchers-bench`: the API server under many watchers, and under a relist storm.
//!
//! The server runs in a child process (this binary's hidden `serve` subcommand), as a deployed
//! server would, so that its memory and CPU are read from /proc alone, without the clients'. It
//! holds W1 pods (`data/w1-pod.json`, names `bench-0000000…`) loaded in that process, owned
//! (as a Deployment's pods are) by a ReplicaSet it also holds: its garbage collector reads every
//! pod change and judges each pod's owner reference (`--no-garbage-collector` runs without it).
//!
//! - Fan-out: N raw watches of every pod from the load's resourceVersion, each on a TCP
//!   connection of its own (HTTP/1.1) or multiplexed on a few connections (HTTP/2 without TLS,
//!   prior knowledge). A writer PATCHes pods at a fixed rate, each patch setting the label
//!   `bench-sent-us` to the microsecond it was sent; every watcher counts the MODIFIED events it
//!   receives (none may be missing) and takes receipt time minus that stamp as the delivery
//!   latency. The server's RSS is read before the watchers connect and once each has received a
//!   first event: the difference over N is the memory per idle watcher.
//! - Relist storm: informers (`SharedIndexInformer<Pod>` over `KubeListerWatcher`) start at once
//!   and sync the pods with streaming lists, with client-go's LIST (`resourceVersion=0`, which
//!   the server answers from its cache in one page), or with LISTs in pages of 500; the time until
//!   every one is synced and the server's peak RSS against its steady RSS are reported.
//!
//! Prints one line per measurement and one JSON line per configuration.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Parser, Subcommand, ValueEnum};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use informer::{
    CancellationToken, InformerOptions, KubeListerWatcher, ListOptions, ListerWatcher, ObjectList, ReflectorOptions,
    SharedIndexInformer, WatchStream,
};
use informer_apiserver::ApiServer;
use informer_bench::backend::Backend;
use informer_bench::measure::{
    configure_malloc, cpu_seconds, micros_now, percentile, pid_status_kb, raise_fd_limit, reset_peak_rss,
};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};

const TEMPLATE: &str = include_str!("../../data/w1-pod.json");
/// The namespace of the pods.
const NS: &str = "bench";
/// The label each update sets to the microsecond it was sent.
const STAMP_LABEL: &str = "bench-sent-us";

#[derive(Parser)]
#[command(about = "The API server under many watchers, and under a relist storm")]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Watcher counts of the fan-out measurement.
    #[arg(long, value_delimiter = ',', default_value = "1,100,1000")]
    watchers: Vec<usize>,
    /// HTTP versions of the watchers.
    #[arg(long, value_delimiter = ',', default_value = "http1,http2")]
    modes: Vec<Mode>,
    /// Pods in the server.
    #[arg(long, default_value_t = 10_000)]
    pods: usize,
    /// Updates per second.
    #[arg(long, default_value_t = 1_000)]
    rate: u32,
    /// Seconds of updates per fan-out configuration.
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Concurrent writer connections sharing the update rate.
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// HTTP/2 watchers per connection.
    #[arg(long, default_value_t = 100)]
    streams_per_connection: usize,
    /// Seconds to wait, after the last update, for every watcher to receive every event.
    #[arg(long, default_value_t = 120)]
    drain_timeout: u64,
    /// Informers of each relist storm (0: no storm).
    #[arg(long, default_value_t = 100)]
    informers: usize,
    /// Relist storms to run (none: skip them).
    #[arg(long, value_delimiter = ',', default_value = "streaming,list,paged")]
    storms: Vec<Storm>,
    /// The server's storage: memory, sqlite (a temporary directory) or etcd (started for the run).
    #[arg(long, default_value = "memory")]
    storage: String,
    /// Runs the server without its garbage collector (which otherwise follows every pod's
    /// owner reference to the ReplicaSet the server holds).
    #[arg(long)]
    no_garbage_collector: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Runs a server holding `pods` pods; prints `ready <url> <resourceVersion>`, answers each
    /// `heap` line on stdin with `heap <bytes>` (its allocator's bytes in use, 0 where unknown),
    /// serves until stdin closes.
    #[command(hide = true)]
    Serve {
        #[arg(long)]
        pods: usize,
        #[arg(long)]
        storage: String,
        #[arg(long)]
        no_garbage_collector: bool,
    },
}

/// How watchers reach the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// HTTP/1.1, one connection per watcher.
    Http1,
    /// HTTP/2 over plain TCP (prior knowledge), `--streams-per-connection` watchers per connection.
    Http2,
}

/// How the storm's informers list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Storm {
    /// Streaming lists (`sendInitialEvents=true`).
    Streaming,
    /// client-go's LIST: `resourceVersion=0&limit=500`, answered from the cache in one page.
    List,
    /// LISTs in pages of 500 (`limit=500` without a resourceVersion).
    Paged,
}

fn main() -> anyhow::Result<()> {
    // SAFETY: first thing in `main`: no other thread runs yet.
    #[allow(unsafe_code)]
    unsafe {
        configure_malloc()
    };
    raise_fd_limit()?;
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    match &args.command {
        Some(Command::Serve { pods, storage, no_garbage_collector }) => {
            rt.block_on(serve(*pods, storage, !*no_garbage_collector))
        }
        None => rt.block_on(run(&args)),
    }
}

async fn run(args: &Args) -> anyhow::Result<()> {
    let template: Value = serde_json::from_str(TEMPLATE)?;
    println!(
        "watchers-bench: {} W1 pods ({} bytes each) on {} storage (garbage collector {}); {} updates/s for {} s; watchers {:?} over {:?}; storms of {} informers {:?}",
        args.pods,
        pod(&template, 0).to_string().len(),
        args.storage,
        if args.no_garbage_collector { "off" } else { "on" },
        args.rate,
        args.duration,
        args.watchers,
        args.modes,
        args.informers,
        args.storms
    );
    for &mode in &args.modes {
        for &n in &args.watchers {
            let out = fan_out(args, mode, n).await?;
            println!("{out}");
        }
    }
    for &storm in args.storms.iter().filter(|_| args.informers > 0) {
        let out = relist_storm(args, storm).await?;
        println!("{out}");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The server process
// ---------------------------------------------------------------------------------------------

/// A W1 pod numbered `i`, as a client creates it (no server-owned fields).
fn pod(template: &Value, i: usize) -> Value {
    let mut p = template.clone();
    if let Some(m) = p["metadata"].as_object_mut() {
        for f in ["uid", "resourceVersion", "creationTimestamp", "generateName", "selfLink"] {
            m.remove(f);
        }
        m.insert("name".into(), json!(format!("bench-{i:07}")));
        m.insert("namespace".into(), json!(NS));
    }
    p["metadata"]["labels"]["app"] = json!(format!("app-{}", i % 50));
    p
}

/// The `serve` subcommand: a server with `pods` pods, until the parent closes stdin (whose
/// `heap` lines it answers, see [`Command::Serve`]). The pods
/// are owned by a ReplicaSet the server holds, as a Deployment's pods are, so its garbage
/// collector (when it runs) judges them and keeps them.
async fn serve(pods: usize, storage: &str, garbage_collector: bool) -> anyhow::Result<()> {
    let backend = Backend::new(storage, "watchers-bench")?;
    let server =
        ApiServer::builder().storage(backend.storage.clone()).garbage_collector(garbage_collector).start().await?;
    server.create("namespaces", json!({"metadata": {"name": NS}})).await?;
    let template: Value = serde_json::from_str(TEMPLATE)?;
    let template = informer_bench::seed::owned_by_a_replica_set(&server, NS, &template).await?;
    let mut done = 0;
    while done < pods {
        let batch: Vec<Value> = (done..(done + 1000).min(pods)).map(|i| pod(&template, i)).collect();
        done += batch.len();
        informer_bench::seed::create_with_status(&server, "pods", batch).await?;
    }
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready {} {}", server.url(), server.resource_version())?;
        out.flush()?;
    }
    // The parent closes stdin when it is done with the server (or when it exits).
    tokio::task::spawn_blocking(|| -> std::io::Result<()> {
        use std::io::{BufRead, Write};
        for line in std::io::stdin().lock().lines() {
            if line? == "heap" {
                let mut out = std::io::stdout().lock();
                writeln!(out, "heap {}", informer_bench::measure::heap_in_use_bytes().unwrap_or(0))?;
                out.flush()?;
            }
        }
        Ok(())
    })
    .await??;
    server.stop().await;
    Ok(())
}

/// A server running in a child process.
struct ServerProcess {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    addr: SocketAddr,
    url: String,
    /// The resourceVersion after the pods were loaded.
    load_rv: u64,
}

impl ServerProcess {
    /// Starts the child and waits for its `ready` line.
    async fn start(pods: usize, storage: &str, garbage_collector: bool) -> anyhow::Result<ServerProcess> {
        let storage = storage.to_string();
        tokio::task::spawn_blocking(move || Self::start_blocking(pods, &storage, garbage_collector)).await?
    }

    fn start_blocking(pods: usize, storage: &str, garbage_collector: bool) -> anyhow::Result<ServerProcess> {
        use std::io::BufRead;
        use std::process::Stdio;
        let mut command = std::process::Command::new(std::env::current_exe()?);
        command.args(["serve", "--pods", &pods.to_string(), "--storage", storage]);
        if !garbage_collector {
            command.arg("--no-garbage-collector");
        }
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or_else(|| anyhow::anyhow!("no stdout of the server process"))?;
        let mut stdout = std::io::BufReader::new(stdout);
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let mut words = line.split_whitespace();
        let (Some("ready"), Some(url), Some(rv)) = (words.next(), words.next(), words.next()) else {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("the server process did not start: {line:?}");
        };
        let addr: SocketAddr = url.trim_start_matches("http://").parse()?;
        Ok(ServerProcess { child, stdin, stdout, addr, url: url.to_string(), load_rv: rv.parse()? })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's resident memory (KiB).
    fn rss_kb(&self) -> u64 {
        pid_status_kb(self.pid(), "VmRSS:")
    }

    /// The bytes the server's allocator holds for live allocations (0 where unknown). Blocks
    /// for the server's one-line answer.
    fn heap_bytes(&mut self) -> anyhow::Result<u64> {
        use std::io::{BufRead, Write};
        let stdin = self.stdin.as_mut().ok_or_else(|| anyhow::anyhow!("the server's stdin is closed"))?;
        stdin.write_all(b"heap\n")?;
        stdin.flush()?;
        let mut line = String::new();
        self.stdout.read_line(&mut line)?;
        let bytes = line.trim().strip_prefix("heap ").ok_or_else(|| anyhow::anyhow!("the server answered {line:?}"))?;
        Ok(bytes.parse()?)
    }
}

/// Stops the server process and waits for it to exit (on a blocking thread).
async fn stop_server(server: ServerProcess) -> anyhow::Result<()> {
    tokio::task::spawn_blocking(move || drop(server)).await?;
    Ok(())
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Closing stdin stops the server; then it is reaped.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// Fan-out
// ---------------------------------------------------------------------------------------------

/// The number of events every watcher must reach; `last` once no more updates follow.
#[derive(Clone, Copy, Debug)]
struct Target {
    events: u64,
    last: bool,
}

/// How many watchers reached the current target; `all` is notified when every one has.
struct Progress {
    watchers: usize,
    reached: AtomicUsize,
    all: Notify,
}

impl Progress {
    fn reached_one(&self) {
        if self.reached.fetch_add(1, Ordering::AcqRel) + 1 == self.watchers {
            self.all.notify_one();
        }
    }
}

/// What one watcher saw.
#[derive(Default)]
struct WatcherStats {
    /// MODIFIED events received.
    modified: u64,
    /// Other events than MODIFIED and BOOKMARK (ADDED, DELETED, ERROR).
    unexpected: u64,
    /// Events whose resourceVersion was not above the previous one's.
    disordered: u64,
    /// Delivery latencies (µs) of the timed updates.
    latencies_us: Vec<u32>,
    /// Why the stream ended before the last target, if it did.
    ended: Option<String>,
}

/// Cuts a watch stream into event lines and reads what the benchmark checks in each.
struct EventReader {
    partial: Vec<u8>,
    stamp: memchr::memmem::Finder<'static>,
    rv: memchr::memmem::Finder<'static>,
    last_rv: u64,
}

impl EventReader {
    fn new() -> Self {
        EventReader {
            partial: Vec::new(),
            stamp: memchr::memmem::Finder::new(b"\"bench-sent-us\":\""),
            rv: memchr::memmem::Finder::new(b"\"resourceVersion\":\""),
            last_rv: 0,
        }
    }

    /// Reads the complete lines of `data` (with what was left of the previous chunk).
    fn feed(&mut self, data: &[u8], now_us: u64, stats: &mut WatcherStats) {
        let mut rest = data;
        if !self.partial.is_empty() {
            let Some(nl) = memchr::memchr(b'\n', rest) else {
                self.partial.extend_from_slice(rest);
                return;
            };
            self.partial.extend_from_slice(&rest[..nl]);
            let line = std::mem::take(&mut self.partial);
            self.line(&line, now_us, stats);
            rest = &rest[nl + 1..];
        }
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            self.line(&rest[..nl], now_us, stats);
            rest = &rest[nl + 1..];
        }
        self.partial.extend_from_slice(rest);
    }

    fn line(&mut self, line: &[u8], now_us: u64, stats: &mut WatcherStats) {
        if line.starts_with(b"{\"type\":\"BOOKMARK\"") {
            return;
        }
        if !line.starts_with(b"{\"type\":\"MODIFIED\"") {
            stats.unexpected += 1;
            return;
        }
        stats.modified += 1;
        let rv = quoted_number_after(&self.rv, line).unwrap_or(0);
        if rv <= self.last_rv {
            stats.disordered += 1;
        }
        self.last_rv = rv;
        if let Some(sent) = quoted_number_after(&self.stamp, line).filter(|s| *s > 0) {
            stats.latencies_us.push(now_us.saturating_sub(sent).min(u32::MAX as u64) as u32);
        }
    }
}

/// The number in the string that follows the first match of `key` (which ends with `"`).
fn quoted_number_after(key: &memchr::memmem::Finder<'_>, line: &[u8]) -> Option<u64> {
    let start = key.find(line)? + key.needle().len();
    let digits = &line[start..];
    let end = memchr::memchr(b'"', digits)?;
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

/// A connection watchers send their requests on.
#[derive(Clone)]
enum WatchConn {
    Http1(Arc<tokio::sync::Mutex<Option<hyper::client::conn::http1::SendRequest<Empty<Bytes>>>>>),
    Http2(hyper::client::conn::http2::SendRequest<Empty<Bytes>>),
}

async fn connect(addr: SocketAddr) -> anyhow::Result<TokioIo<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    Ok(TokioIo::new(tcp))
}

impl WatchConn {
    async fn open(addr: SocketAddr, mode: Mode) -> anyhow::Result<WatchConn> {
        let io = connect(addr).await?;
        Ok(match mode {
            Mode::Http1 => {
                let (send, conn) = hyper::client::conn::http1::handshake(io).await?;
                tokio::spawn(conn);
                WatchConn::Http1(Arc::new(tokio::sync::Mutex::new(Some(send))))
            }
            Mode::Http2 => {
                let (send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await?;
                tokio::spawn(conn);
                WatchConn::Http2(send)
            }
        })
    }

    async fn send(&self, req: Request<Empty<Bytes>>) -> anyhow::Result<Response<Incoming>> {
        Ok(match self {
            WatchConn::Http1(slot) => {
                let mut send = slot.lock().await.take().ok_or_else(|| anyhow::anyhow!("HTTP/1.1 connection in use"))?;
                send.ready().await?;
                send.send_request(req).await?
            }
            WatchConn::Http2(send) => {
                let mut send = send.clone();
                send.ready().await?;
                send.send_request(req).await?
            }
        })
    }
}

/// Opens `n` watches of every pod from `rv` and waits for each answer's headers; each watch is
/// then read by a task of its own.
async fn open_watchers(
    server: &ServerProcess,
    mode: Mode,
    n: usize,
    streams_per_connection: usize,
    target: &watch::Receiver<Target>,
    progress: &Arc<Progress>,
    stop: &CancellationToken,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<WatcherStats>>> {
    let conns_needed = match mode {
        Mode::Http1 => n,
        Mode::Http2 => n.div_ceil(streams_per_connection.max(1)),
    };
    let mut conns = Vec::with_capacity(conns_needed);
    for batch in (0..conns_needed).collect::<Vec<_>>().chunks(100) {
        let opened =
            futures_util::future::try_join_all(batch.iter().map(|_| WatchConn::open(server.addr, mode))).await?;
        conns.extend(opened);
    }
    let uri = match mode {
        Mode::Http1 => String::new(),
        Mode::Http2 => server.url.clone(),
    } + &format!(
        "/api/v1/namespaces/{NS}/pods?watch=1&allowWatchBookmarks=true&resourceVersion={}",
        server.load_rv
    );
    let mut tasks = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let answers = futures_util::future::try_join_all(chunk.iter().map(|&i| {
            let conn = conns[i % conns.len()].clone();
            let req = Request::get(&uri)
                .header(http::header::HOST, server.addr.to_string())
                .header(http::header::ACCEPT, "application/json")
                .body(Empty::new());
            async move {
                let resp = conn.send(req?).await?;
                anyhow::ensure!(resp.status() == StatusCode::OK, "watch answered {}", resp.status());
                anyhow::Ok(resp)
            }
        }))
        .await?;
        for resp in answers {
            tasks.push(tokio::spawn(read_watch(resp, target.clone(), progress.clone(), stop.clone())));
        }
    }
    Ok(tasks)
}

/// Reads one watch until it reached the last target or `stop`.
async fn read_watch(
    resp: Response<Incoming>,
    mut target: watch::Receiver<Target>,
    progress: Arc<Progress>,
    stop: CancellationToken,
) -> WatcherStats {
    let mut body = resp.into_body();
    let mut stats = WatcherStats::default();
    let mut reader = EventReader::new();
    let mut reached_for: Option<u64> = None;
    loop {
        let t = *target.borrow_and_update();
        if stats.modified >= t.events && reached_for != Some(t.events) {
            reached_for = Some(t.events);
            progress.reached_one();
        }
        if t.last && reached_for == Some(t.events) {
            return stats;
        }
        tokio::select! {
            biased;
            _ = stop.cancelled() => {
                stats.ended = Some("still waiting for events at the drain timeout".into());
                return stats;
            }
            changed = target.changed() => {
                if changed.is_err() {
                    return stats;
                }
            }
            frame = body.frame() => match frame {
                None => {
                    stats.ended = Some("the server ended the watch".into());
                    return stats;
                }
                Some(Err(e)) => {
                    stats.ended = Some(format!("reading the watch: {e}"));
                    return stats;
                }
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        reader.feed(&data, micros_now(), &mut stats);
                    }
                }
            },
        }
    }
}

/// The writer's connections (HTTP/1.1, one request at a time each).
struct Writer {
    conns: Vec<hyper::client::conn::http1::SendRequest<Full<Bytes>>>,
    host: String,
}

impl Writer {
    /// `n` connections, each of which has been answered once: the server has made its side of
    /// each before anything is measured.
    async fn connect(addr: SocketAddr, n: usize) -> anyhow::Result<Writer> {
        let mut conns = Vec::with_capacity(n);
        let host = addr.to_string();
        for _ in 0..n.max(1) {
            let (mut send, conn) = hyper::client::conn::http1::handshake(connect(addr).await?).await?;
            tokio::spawn(conn);
            let req = Request::get(format!("/api/v1/namespaces/{NS}/pods/bench-0000000"))
                .header(http::header::HOST, &host)
                .header(http::header::ACCEPT, "application/json")
                .body(Full::new(Bytes::new()))?;
            let resp = send.send_request(req).await?;
            anyhow::ensure!(resp.status().is_success(), "GET of a pod: {}", resp.status());
            resp.into_body().collect().await?;
            conns.push(send);
        }
        Ok(Writer { conns, host })
    }

    /// PATCHes pod `i`'s stamp label to `sent_us` (a merge patch, as a controller's label
    /// update).
    async fn patch(
        send: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
        host: &str,
        i: usize,
        stamp: impl FnOnce() -> u64,
    ) -> anyhow::Result<()> {
        let path = format!("/api/v1/namespaces/{NS}/pods/bench-{i:07}");
        send.ready().await?;
        let body = format!("{{\"metadata\":{{\"labels\":{{\"{STAMP_LABEL}\":\"{}\"}}}}}}", stamp());
        let req = Request::patch(&path)
            .header(http::header::HOST, host)
            .header(http::header::CONTENT_TYPE, "application/merge-patch+json")
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))?;
        let resp = send.send_request(req).await?;
        let status = resp.status();
        let answer = resp.into_body().collect().await?.to_bytes();
        anyhow::ensure!(status.is_success(), "PATCH {path}: {status}: {}", String::from_utf8_lossy(&answer));
        Ok(())
    }

    /// One update without a timing stamp (value 0), for the watchers' first event.
    async fn first(&mut self) -> anyhow::Result<()> {
        Self::patch(&mut self.conns[0], &self.host, 0, || 0).await
    }

    /// `rate` updates/s for `duration`, spread over the connections, each on its own schedule;
    /// returns the number of updates made.
    async fn paced(&mut self, pods: usize, rate: u32, duration: Duration) -> anyhow::Result<u64> {
        let k = self.conns.len();
        let total = (rate as f64 * duration.as_secs_f64()).round() as usize;
        let period = Duration::from_secs_f64(k as f64 / rate.max(1) as f64);
        let start = tokio::time::Instant::now();
        let mut tasks = Vec::with_capacity(k);
        for (w, mut send) in self.conns.drain(..).enumerate() {
            let host = self.host.clone();
            let first_tick = start + period.mul_f64(w as f64 / k as f64);
            tasks.push(tokio::spawn(async move {
                let mut ticks = tokio::time::interval_at(first_tick, period);
                for seq in (w..total).step_by(k) {
                    ticks.tick().await;
                    Self::patch(&mut send, &host, seq % pods, micros_now).await?;
                }
                anyhow::Ok(send)
            }));
        }
        for t in tasks {
            self.conns.push(t.await??);
        }
        Ok(total as u64)
    }
}

/// One fan-out configuration: `n` watchers over `mode`.
async fn fan_out(args: &Args, mode: Mode, n: usize) -> anyhow::Result<Value> {
    let mut server = ServerProcess::start(args.pods, &args.storage, !args.no_garbage_collector).await?;
    let mut writer = Writer::connect(server.addr, args.writers).await?;
    let rss_before = server.rss_kb();
    let heap_before = server.heap_bytes()?;
    let progress = Arc::new(Progress { watchers: n, reached: AtomicUsize::new(0), all: Notify::new() });
    let (target_tx, target_rx) = watch::channel(Target { events: 1, last: false });
    let stop = CancellationToken::new();
    let watchers = open_watchers(&server, mode, n, args.streams_per_connection, &target_rx, &progress, &stop).await?;
    // Every watcher receives a first event: past that, each is an idle watcher in its steady state.
    writer.first().await?;
    tokio::time::timeout(Duration::from_secs(60), progress.all.notified())
        .await
        .map_err(|_| anyhow::anyhow!("not every watcher received the first event within 60 s"))?;
    let rss_idle = server.rss_kb();
    let heap_idle = server.heap_bytes()?;

    progress.reached.store(0, Ordering::Release);
    let cpu_before = cpu_seconds(server.pid());
    let started = Instant::now();
    let updates = writer.paced(args.pods, args.rate, Duration::from_secs(args.duration)).await?;
    let writing = started.elapsed();
    let expected = updates + 1;
    target_tx.send(Target { events: expected, last: true })?;
    let drained = tokio::time::timeout(Duration::from_secs(args.drain_timeout), progress.all.notified()).await.is_ok();
    let elapsed = started.elapsed();
    let server_cpu = cpu_seconds(server.pid()) - cpu_before;
    stop.cancel();

    let mut latencies = Vec::with_capacity(n * updates as usize);
    let (mut delivered, mut missed, mut unexpected, mut disordered) = (0u64, 0u64, 0u64, 0u64);
    let mut ended = Vec::new();
    for w in watchers {
        let s = w.await?;
        delivered += s.modified.saturating_sub(1);
        missed += expected.saturating_sub(s.modified);
        unexpected += s.unexpected + s.modified.saturating_sub(expected);
        disordered += s.disordered;
        latencies.extend(s.latencies_us.iter().map(|&us| us as u64));
        ended.extend(s.ended);
    }
    drop(writer);
    stop_server(server).await?;
    latencies.sort_unstable();
    let lat: Vec<u64> = [0.5, 0.99, 1.0].iter().map(|&p| percentile(&latencies, p)).collect();
    let ms = |us: u64| (us as f64 / 100.0).round() / 10.0;
    let per_watcher_kb = rss_idle.saturating_sub(rss_before) as f64 / n as f64;
    let heap_per_watcher_kb = heap_idle.saturating_sub(heap_before) as f64 / 1024.0 / n as f64;
    let events_per_s = delivered as f64 / elapsed.as_secs_f64();
    let write_rate = updates as f64 / writing.as_secs_f64();
    println!(
        "{:<5} watchers={n:<5} {updates} updates at {write_rate:.0}/s; {delivered} events delivered, {events_per_s:.0}/s; missed {missed}{}; latency p50 {} ms, p99 {} ms, max {} ms; server RSS {} -> {} MiB with idle watchers, {per_watcher_kb:.1} KiB per watcher (heap in use {heap_per_watcher_kb:.1} KiB); server CPU {server_cpu:.1} s",
        format!("{mode:?}").to_lowercase(),
        if drained { String::new() } else { format!(" (not all delivered within {} s)", args.drain_timeout) },
        ms(lat[0]),
        ms(lat[1]),
        ms(lat[2]),
        rss_before / 1024,
        rss_idle / 1024,
    );
    if let Some(why) = ended.first() {
        println!("      {} watchers ended early, e.g.: {why}", ended.len());
    }
    Ok(json!({
        "bench": "fan-out",
        "storage": args.storage,
        "mode": format!("{mode:?}").to_lowercase(),
        "watchers": n,
        "updates": updates,
        "updates_per_s": write_rate.round(),
        "delivered": delivered,
        "delivered_per_s": events_per_s.round(),
        "missed": missed,
        "unexpected": unexpected,
        "disordered": disordered,
        "all_delivered": drained,
        "latency_p50_ms": ms(lat[0]),
        "latency_p99_ms": ms(lat[1]),
        "latency_max_ms": ms(lat[2]),
        "server_rss_before_kb": rss_before,
        "server_rss_idle_watchers_kb": rss_idle,
        "server_kb_per_idle_watcher": (per_watcher_kb * 10.0).round() / 10.0,
        "server_heap_kb_per_idle_watcher": (heap_per_watcher_kb * 10.0).round() / 10.0,
        "server_cpu_s": (server_cpu * 10.0).round() / 10.0,
    }))
}

// ---------------------------------------------------------------------------------------------
// Relist storm
// ---------------------------------------------------------------------------------------------

/// A lister-watcher whose LISTs carry no resourceVersion: consistent reads, paged by `limit`
/// (client-go's `resourceVersion=0` read is answered in one page whatever the limit).
struct ConsistentPages(KubeListerWatcher<Pod>);

impl ListerWatcher<Pod> for ConsistentPages {
    async fn list(&self, opts: &ListOptions) -> Result<ObjectList<Pod>, informer::Error> {
        let mut opts = opts.clone();
        if opts.resource_version.as_deref() == Some("0") {
            opts.resource_version = None;
        }
        self.0.list(&opts).await
    }

    async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<Pod>, informer::Error> {
        self.0.watch(opts).await
    }

    fn describe(&self) -> String {
        self.0.describe()
    }
}

/// An informer of the storm, started; returns its seconds to sync.
async fn storm_informer(url: String, storm: Storm, cancel: CancellationToken) -> anyhow::Result<(f64, usize)> {
    let started = Instant::now();
    let client = kube::Client::try_from(kube::Config::new(url.parse()?))?;
    let lw = KubeListerWatcher::<Pod>::new(client, Some(NS));
    let reflector = ReflectorOptions {
        streaming_list: storm == Storm::Streaming,
        page_size: Some(500),
        ..ReflectorOptions::default()
    };
    let opts = InformerOptions::default().reflector(reflector);
    let informer = match storm {
        Storm::Paged => SharedIndexInformer::with_options(ConsistentPages(lw), opts),
        Storm::Streaming | Storm::List => SharedIndexInformer::with_options(lw, opts),
    };
    let running = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    informer.synced().wait().await;
    let synced = started.elapsed().as_secs_f64();
    let cached = informer.indexer().len();
    cancel.cancel();
    running.await?;
    Ok((synced, cached))
}

/// One relist storm: `--informers` informers start at once against a server holding the pods.
async fn relist_storm(args: &Args, storm: Storm) -> anyhow::Result<Value> {
    let server = ServerProcess::start(args.pods, &args.storage, !args.no_garbage_collector).await?;
    let pid = server.pid();
    let steady = server.rss_kb();
    let peak_reset = reset_peak_rss(pid);
    let sampling = CancellationToken::new();
    let sampler = tokio::spawn({
        let sampling = sampling.clone();
        async move {
            let mut highest = 0u64;
            let mut every = tokio::time::interval(Duration::from_millis(5));
            while !sampling.is_cancelled() {
                tokio::select! {
                    _ = every.tick() => highest = highest.max(pid_status_kb(pid, "VmRSS:")),
                    _ = sampling.cancelled() => {}
                }
            }
            highest
        }
    });
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let informers: Vec<_> = (0..args.informers)
        .map(|_| tokio::spawn(storm_informer(server.url.clone(), storm, cancel.child_token())))
        .collect();
    let mut sync_s = Vec::with_capacity(informers.len());
    for i in informers {
        let (s, cached) = i.await??;
        anyhow::ensure!(cached == args.pods, "an informer synced with {cached} of {} pods", args.pods);
        sync_s.push(s);
    }
    let all_synced = started.elapsed().as_secs_f64();
    sampling.cancel();
    let sampled = sampler.await?;
    let hwm = if peak_reset { pid_status_kb(pid, "VmHWM:") } else { 0 };
    let peak = sampled.max(hwm);
    cancel.cancel();
    stop_server(server).await?;
    sync_s.sort_by(f64::total_cmp);
    let median = sync_s.get(sync_s.len() / 2).copied().unwrap_or(0.0);
    let ratio = peak as f64 / steady.max(1) as f64;
    println!(
        "storm {:<9} {} informers synced in {all_synced:.2} s (median {median:.2} s); server RSS steady {} MiB, peak {} MiB: {ratio:.2}x",
        format!("{storm:?}").to_lowercase(),
        args.informers,
        steady / 1024,
        peak / 1024,
    );
    Ok(json!({
        "bench": "relist-storm",
        "storage": args.storage,
        "lists": format!("{storm:?}").to_lowercase(),
        "informers": args.informers,
        "pods": args.pods,
        "all_synced_s": (all_synced * 100.0).round() / 100.0,
        "median_synced_s": (median * 100.0).round() / 100.0,
        "server_rss_steady_kb": steady,
        "server_rss_peak_kb": peak,
        "peak_over_steady": (ratio * 100.0).round() / 100.0,
    }))
}
