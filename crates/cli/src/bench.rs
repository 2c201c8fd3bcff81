//! `informer bench`: one informer on a pod workload (a real cluster, or W1 in-process), printing
//! exactly one JSON line of figures: sync time, update throughput, RSS.
//!
//! Handlers: `keys` does what client-go's work queue example does (compute the key, enqueue it on a
//! workqueue drained by a worker); `full` reads a field of the typed object (forcing a full
//! decode). `sync_ms` is start → cache synced (every initial object stored and delivered);
//! `updates_per_s` is update notifications delivered after sync divided by the time from sync to
//! the Nth. RSS figures come from /proc/self/status.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use informer::workqueue::WorkQueue;
use informer::{
    BacklogPolicy, HandlerFns, HandlerOptions, InformerOptions, KubeListerWatcher, ObjectKey, ReflectorOptions,
    SharedIndexInformer,
};
use informer_bench::measure::{micros_now, peak_rss_kb, percentile, print_mallinfo, proc_status_kb, trace_rss};
use informer_bench::w1::{W1Config, W1Server};
use k8s_openapi::api::core::v1::Pod;
use kube::core::PartialObjectMeta;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// What the handler does per notification.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum HandlerKind {
    /// Compute the key and enqueue it on a workqueue.
    Keys,
    /// Decode the typed object and read a field.
    Full,
}

/// Options of `informer bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Kubeconfig of the cluster to measure (not needed with --w1).
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Namespace of the pods.
    #[arg(long, short = 'n', default_value = "default")]
    namespace: String,
    /// Number of update notifications to wait for after sync.
    #[arg(long, default_value_t = 100_000)]
    updates: u64,
    /// Initial LIST then WATCH.
    #[arg(long, conflicts_with = "streaming")]
    list: bool,
    /// Streaming list (the default).
    #[arg(long)]
    streaming: bool,
    /// Handler work per notification.
    #[arg(long, value_enum, default_value = "keys")]
    handler: HandlerKind,
    /// Start the W1 workload in-process and run against it.
    #[arg(long)]
    w1: bool,
    /// Pods in the W1 workload.
    #[arg(long, default_value_t = 10_000)]
    pods: u64,
    /// Inform on the pods' metadata only (`PartialObjectMetadata`, as a metadata informer asks
    /// for it) instead of whole pods.
    #[arg(long)]
    metadata: bool,
    /// Number of handlers (fan-out); figures are those of the first.
    #[arg(long, default_value_t = 1)]
    handlers: usize,
    /// Make the last handler sleep 1 ms per notification, adds, updates and deletes alike (on its
    /// own thread; see `--slow-backlog`).
    #[arg(long)]
    slow_handler: bool,
    /// Backlog bound of the slow handler (resynced from the cache past it); 0 = unbounded.
    #[arg(long, default_value_t = 1000)]
    slow_backlog: usize,
    /// W1 paces updates at this many events/s and the report adds event-to-handler latency
    /// percentiles (the `generation` label carries each event's send time).
    #[arg(long)]
    latency_rate: Option<u64>,
    /// Run the client on a single-threaded tokio runtime (the W1 server has its own thread).
    #[arg(long)]
    current_thread: bool,
    /// Call the measured handler from its own OS thread (`HandlerOptions::dedicated_thread`):
    /// what a controller with a decode-heavy handler configures, so decoding runs beside the
    /// watch stream instead of after it.
    #[arg(long)]
    handler_thread: bool,
    /// Back-pressure bound of the measured handler (`BacklogPolicy::Block`): the informer stops
    /// taking events past this many pending notifications.
    #[arg(long, default_value_t = 128)]
    block: usize,
    /// Run the informer (its client, reflector, queue, process loop and inline handlers) on a
    /// thread of its own with a current-thread runtime, the rest on the main runtime: how an
    /// application on a multi-threaded runtime keeps the informer's hot path on one thread.
    #[arg(long)]
    informer_thread: bool,
}

impl BenchArgs {
    /// Whether the client runs on a current-thread runtime.
    pub fn current_thread(&self) -> bool {
        self.current_thread
    }
}

/// Runs the benchmark and prints its JSON line.
pub async fn run(args: BenchArgs) -> Result<bool> {
    if args.slow_handler && args.handlers < 2 {
        anyhow::bail!("--slow-handler needs --handlers 2 or more");
    }
    let w1 = if args.w1 {
        let cfg = W1Config { pods: args.pods, updates: args.updates, list_rv: 1000, rate: args.latency_rate };
        Some(W1Server::spawn(cfg, &args.namespace).context("cannot start W1")?)
    } else {
        None
    };
    let on_thread = if args.informer_thread { Some(informer::InformerThread::start("informer")?) } else { None };
    let client = {
        let (yaml, path) = (w1.as_ref().map(|s| s.kubeconfig_yaml()), args.kubeconfig.clone());
        let make = async move {
            match (yaml, path) {
                (Some(y), _) => crate::client::from_yaml(&y).await,
                (None, Some(k)) => crate::client::from_file(&k).await,
                (None, None) => anyhow::bail!("give --kubeconfig F or --w1"),
            }
        };
        // The client's connections then run where the informer does.
        match &on_thread {
            Some(t) => t.spawn(make).await.context("the informer thread stopped")??,
            None => make.await?,
        }
    };

    let line = if args.metadata {
        let lw = KubeListerWatcher::<PartialObjectMeta<Pod>>::new(client, Some(&args.namespace)).metadata_only();
        measure(&args, lw, on_thread.as_ref()).await?
    } else {
        measure(&args, KubeListerWatcher::<Pod>::new(client, Some(&args.namespace)), on_thread.as_ref()).await?
    };
    println!("{line}");
    drop(w1);
    Ok(true)
}

/// What the `full` handler reads of a decoded object.
trait Measured: serde::de::DeserializeOwned + Send + Sync + 'static {
    /// A count read from the decoded object (so the decode is not optimised away).
    fn fields(&self) -> usize;
}

impl Measured for Pod {
    fn fields(&self) -> usize {
        self.spec.as_ref().map(|s| s.containers.len()).unwrap_or(0)
    }
}

impl Measured for PartialObjectMeta<Pod> {
    fn fields(&self) -> usize {
        self.metadata.labels.as_ref().map(|l| l.len()).unwrap_or(0)
    }
}

/// Runs one informer over `lw` to sync and through `--updates` updates; returns the figures.
async fn measure<K: Measured>(
    args: &BenchArgs,
    lw: KubeListerWatcher<K>,
    on_thread: Option<&informer::InformerThread>,
) -> Result<serde_json::Value> {
    let streaming = !args.list;
    let initial = Arc::new(AtomicU64::new(0));
    let updates = Arc::new(AtomicU64::new(0));
    let done = Arc::new(Notify::new());
    let target = args.updates;
    let queue: WorkQueue<ObjectKey> = WorkQueue::new();
    let fields = Arc::new(AtomicU64::new(0));
    let decode_errors = Arc::new(AtomicU64::new(0));
    let work = {
        let (queue, fields, decode_errors) = (queue.clone(), fields.clone(), decode_errors.clone());
        let kind = args.handler;
        move |o: &informer::Object<K>| match kind {
            HandlerKind::Keys => queue.add(o.key().clone()),
            HandlerKind::Full => {
                // An uncached decode: the cache keeps compact objects. A failed decode is counted
                // (the run then fails: it would have skipped the work it measures).
                match o.decode() {
                    Ok(p) => {
                        fields.fetch_add(p.fields() as u64, Ordering::Relaxed);
                    }
                    Err(_) => {
                        decode_errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    };
    let (w1h, w2) = (work.clone(), work);
    let latencies = Arc::new(parking_lot::Mutex::new(Vec::<u64>::with_capacity(target as usize)));
    let measure_latency = args.latency_rate.is_some();
    let lat = latencies.clone();
    let sync_at = Arc::new(AtomicU64::new(0));
    let sync_at2 = sync_at.clone();
    // The peak RSS a tenth of the way through the updates: slow growth shows against it.
    let peak_at_tenth = Arc::new(AtomicU64::new(0));
    let handler = {
        let (initial, updates, done) = (initial.clone(), updates.clone(), done.clone());
        let peak_at_tenth = peak_at_tenth.clone();
        HandlerFns::<K>::new()
            .on_add(move |o, is_initial| {
                if is_initial {
                    initial.fetch_add(1, Ordering::Relaxed);
                }
                w1h(o)
            })
            .on_update(move |_, o| {
                w2(o);
                // Steady state only: events sent before the cache synced waited behind the
                // initial list.
                if measure_latency
                    && let Some(sent) = o.label("generation").and_then(|g| g.parse::<u64>().ok())
                    && {
                        let s = sync_at.load(Ordering::Relaxed);
                        s != 0 && sent >= s
                    }
                {
                    lat.lock().push(micros_now().saturating_sub(sent));
                }
                let n = updates.fetch_add(1, Ordering::Relaxed) + 1;
                if n == target / 10 {
                    peak_at_tenth.store(peak_rss_kb(&[]), Ordering::Relaxed);
                }
                if n == target {
                    done.notify_one();
                }
            })
    };
    let worker = tokio::spawn({
        let q = queue.clone();
        async move {
            while let Some(k) = q.get().await {
                q.done(&k);
            }
        }
    });

    let opts = InformerOptions::default().name("bench").reflector(ReflectorOptions {
        name: "bench".into(),
        streaming_list: streaming,
        ..Default::default()
    });
    let informer = SharedIndexInformer::with_options(lw, opts);
    // The measured handler applies back-pressure past `--block` (128) pending notifications (like
    // kube-runtime's pull-based stream), so a decode-bound `full` handler keeps memory bounded
    // instead of buffering the whole update stream. Each pending update holds the object's old
    // version, which the cache no longer does: when the handler falls behind for a moment (a
    // `keys` handler too, when its thread is not scheduled), the bound is a bound on that memory.
    let mut measured = HandlerOptions::new().name("measured").backlog(BacklogPolicy::Block(args.block));
    if args.handler_thread {
        measured = measured.dedicated_thread();
    }
    let reg = informer.add_event_handler_with_options(handler, measured)?;
    for i in 1..args.handlers {
        let slow = args.slow_handler && i + 1 == args.handlers;
        // Every event, the initial adds included (as kube-runtime-bench's slow subscriber, which
        // gets every object at the initial list's end), costs the slow handler 1 ms.
        let touch = move |key: &informer::ObjectKey| {
            std::hint::black_box(key);
            if slow {
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        let h = HandlerFns::<K>::new()
            .on_add(move |o, _| touch(o.key()))
            .on_update(move |_, o| touch(o.key()))
            .on_delete(move |d| touch(d.key()));
        let ho = if slow {
            let policy = if args.slow_backlog == 0 {
                BacklogPolicy::Unbounded
            } else {
                BacklogPolicy::Bounded(args.slow_backlog)
            };
            HandlerOptions::new().name("slow").dedicated_thread().backlog(policy)
        } else {
            HandlerOptions::new()
        };
        informer.add_event_handler_with_options(h, ho)?;
    }
    let store = informer.indexer().clone();
    let cancel = CancellationToken::new();
    let synced = reg.synced();
    let _trace = trace_rss({
        let updates = updates.clone();
        move || updates.load(Ordering::Relaxed)
    });
    let t0 = Instant::now();
    let run = {
        let (inf, k) = (informer.clone(), cancel.clone());
        async move { inf.run(k).await }
    };
    let task = match on_thread {
        Some(t) => t.spawn(run),
        None => tokio::spawn(run),
    };
    tokio::time::timeout(Duration::from_secs(300), synced.wait()).await.context("cache did not sync within 300 s")?;
    let t_sync = Instant::now();
    sync_at2.store(micros_now(), Ordering::Relaxed);
    let sync_ms = (t_sync - t0).as_secs_f64() * 1e3;
    let rss_after_sync = proc_status_kb("VmRSS:");
    print_mallinfo("after sync");
    if target > 0 {
        let wait = done.notified();
        tokio::pin!(wait);
        wait.as_mut().enable();
        if updates.load(Ordering::Relaxed) < target {
            tokio::time::timeout(Duration::from_secs(600), wait).await.with_context(|| {
                format!("only {} of {target} updates within 600 s", updates.load(Ordering::Relaxed))
            })?;
        }
    }
    let update_s = t_sync.elapsed().as_secs_f64();
    print_mallinfo("at the end");
    let rss_end = proc_status_kb("VmRSS:");
    let peak = peak_rss_kb(&[rss_after_sync, rss_end]);
    let (p50, p99, p999, max) = {
        let mut l = latencies.lock();
        l.sort_unstable();
        (percentile(&l, 0.50), percentile(&l, 0.99), percentile(&l, 0.999), percentile(&l, 1.0))
    };
    let mut line = serde_json::json!({
        "client": "informer",
        "streaming": streaming,
        "handler": format!("{:?}", args.handler).to_lowercase(),
        "handlers": args.handlers,
        "slow_handler": args.slow_handler,
        "handler_thread": args.handler_thread,
        "block": args.block,
        "informer_thread": args.informer_thread,
        "metadata": args.metadata,
        "cached": store.len(),
        "initial": initial.load(Ordering::Relaxed),
        "sync_ms": (sync_ms * 10.0).round() / 10.0,
        "updates": updates.load(Ordering::Relaxed),
        "update_s": (update_s * 1000.0).round() / 1000.0,
        "updates_per_s": if update_s > 0.0 { (target as f64 / update_s).round() } else { 0.0 },
        "rss_after_sync_kb": rss_after_sync,
        "rss_end_kb": rss_end,
        "peak_rss_kb": peak,
        "peak_rss_at_tenth_kb": peak_at_tenth.load(Ordering::Relaxed),
    });
    if let Some(rate) = args.latency_rate {
        line["latency_rate"] = rate.into();
        line["latency_p50_us"] = p50.into();
        line["latency_p99_us"] = p99.into();
        line["latency_p999_us"] = p999.into();
        line["latency_max_us"] = max.into();
    }
    let failed = decode_errors.load(Ordering::Relaxed);
    if failed > 0 {
        anyhow::bail!("{failed} typed decodes failed");
    }
    cancel.cancel();
    let _ = task.await;
    queue.shut_down();
    let _ = worker.await;
    Ok(line)
}
