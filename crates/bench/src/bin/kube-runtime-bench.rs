//! kube-runtime's watcher + reflector on the same workload as `informer bench`, printing the same
//! JSON line (with `"client":"kube-runtime"`). The `keys` handler enqueues the same key type on the
//! same workqueue as `informer bench`, so only the list-watch-cache machinery differs.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use futures_util::TryStreamExt;
use informer::ObjectKey;
use informer::workqueue::WorkQueue;
use informer_bench::measure::{configure_malloc, micros_now, peak_rss_kb, percentile, proc_status_kb};
use informer_bench::w1::{W1Config, W1Server};
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::{WatchStreamExt, reflector, watcher};

#[derive(Parser)]
struct Args {
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    #[arg(long, short = 'n', default_value = "default")]
    namespace: String,
    #[arg(long, default_value_t = 100_000)]
    updates: u64,
    #[arg(long, conflicts_with = "streaming")]
    list: bool,
    #[arg(long)]
    streaming: bool,
    #[arg(long, default_value = "keys")]
    handler: String,
    #[arg(long)]
    w1: bool,
    #[arg(long, default_value_t = 10_000)]
    pods: u64,
    /// W1 paces updates at this many events/s; the report adds event-to-handler latency
    /// percentiles (the `generation` label carries each event's send time).
    #[arg(long)]
    latency_rate: Option<u64>,
    /// Fan-out: this many subscribers of a shared reflector (kube-runtime's
    /// `unstable-runtime-subscribe`); figures are those of the first.
    #[arg(long, default_value_t = 1)]
    handlers: usize,
    /// Make the last subscriber sleep 1 ms per object (on its own thread).
    #[arg(long)]
    slow_handler: bool,
    /// Run the client on a single-threaded tokio runtime (the W1 server has its own thread).
    #[arg(long)]
    current_thread: bool,
}

fn main() -> Result<()> {
    // SAFETY: first thing in `main`: no other thread runs yet.
    #[allow(unsafe_code)]
    unsafe {
        configure_malloc()
    };
    let args = Args::parse();
    let mut builder = if args.current_thread {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    builder.enable_all().build()?.block_on(run(args))
}

/// The pods API of `namespace` and the watcher configuration both runs use (any resourceVersion,
/// streaming lists when asked).
async fn pods_watch(
    kc: kube::config::Kubeconfig,
    namespace: &str,
    streaming: bool,
) -> Result<(kube::Api<Pod>, watcher::Config)> {
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    let api = kube::Api::namespaced(kube::Client::try_from(cfg)?, namespace);
    let wc = watcher::Config::default().any_semantic();
    Ok((api, if streaming { wc.streaming_lists() } else { wc }))
}

async fn run(args: Args) -> Result<()> {
    if args.slow_handler && args.handlers < 2 {
        anyhow::bail!("--slow-handler needs --handlers 2 or more");
    }
    if args.handlers > 1 {
        if args.latency_rate.is_some() || args.handler != "keys" || !args.w1 {
            anyhow::bail!(
                "--handlers > 1 runs the keys handler on W1 only (no --latency-rate, --handler full or --kubeconfig)"
            );
        }
        return run_shared(args).await;
    }
    let streaming = !args.list;
    let w1 = if args.w1 {
        Some(W1Server::spawn(
            W1Config { pods: args.pods, updates: args.updates, list_rv: 1000, rate: args.latency_rate },
            &args.namespace,
        )?)
    } else {
        None
    };
    let kc = match (&w1, &args.kubeconfig) {
        (Some(s), _) => kube::config::Kubeconfig::from_yaml(&s.kubeconfig_yaml())?,
        (None, Some(p)) => kube::config::Kubeconfig::read_from(p)?,
        (None, None) => anyhow::bail!("give --kubeconfig F or --w1"),
    };
    let (api, wc) = pods_watch(kc, &args.namespace, streaming).await?;
    let (store, writer) = reflector::store::<Pod>();
    let queue: WorkQueue<ObjectKey> = WorkQueue::new();
    let worker = tokio::spawn({
        let q = queue.clone();
        async move {
            while let Some(k) = q.get().await {
                q.done(&k);
            }
        }
    });
    let full = args.handler == "full";
    let mut fields = 0usize;
    let mut handle = |p: &Pod| {
        if full {
            fields += p.spec.as_ref().map(|s| s.containers.len()).unwrap_or(0);
        } else if let Ok(k) = ObjectKey::new(p.metadata.namespace.as_deref(), p.metadata.name.as_deref().unwrap_or(""))
        {
            queue.add(k);
        }
    };
    let t0 = Instant::now();
    let mut stream = std::pin::pin!(reflector(writer, watcher(api, wc)).default_backoff());
    let (mut initial, mut updates, mut rss_after_sync) = (0u64, 0u64, 0u64);
    let mut latencies: Vec<u64> = Vec::new();
    let mut sync_micros = u64::MAX;
    let mut t_sync = None;
    let deadline = t0 + Duration::from_secs(900);
    while let Some(ev) = tokio::time::timeout_at(deadline.into(), stream.try_next()).await.context("timed out")?? {
        match ev {
            watcher::Event::InitApply(p) => {
                initial += 1;
                handle(&p);
            }
            watcher::Event::InitDone => {
                t_sync = Some(Instant::now());
                sync_micros = micros_now();
                rss_after_sync = proc_status_kb("VmRSS:");
                if args.updates == 0 {
                    break;
                }
            }
            watcher::Event::Apply(p) if t_sync.is_some() => {
                handle(&p);
                if args.latency_rate.is_some()
                    && let Some(sent) =
                        p.metadata.labels.as_ref().and_then(|l| l.get("generation")).and_then(|g| g.parse::<u64>().ok())
                    && sent >= sync_micros
                {
                    latencies.push(micros_now().saturating_sub(sent));
                }
                updates += 1;
                if updates == args.updates {
                    break;
                }
            }
            _ => {}
        }
    }
    let t_sync = t_sync.context("never synced")?;
    let update_s = t_sync.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let pct = |p: f64| percentile(&latencies, p);
    let rss_end = proc_status_kb("VmRSS:");
    let mut line = serde_json::json!({
        "client": "kube-runtime",
        "streaming": streaming,
        "handler": if full { "full" } else { "keys" },
        "cached": store.state().len(),
        "initial": initial,
        "sync_ms": (((t_sync - t0).as_secs_f64() * 1e3) * 10.0).round() / 10.0,
        "updates": updates,
        "update_s": (update_s * 1000.0).round() / 1000.0,
        "updates_per_s": if update_s > 0.0 { (args.updates as f64 / update_s).round() } else { 0.0 },
        "rss_after_sync_kb": rss_after_sync,
        "rss_end_kb": rss_end,
        "peak_rss_kb": peak_rss_kb(&[rss_after_sync, rss_end]),
    });
    if let Some(rate) = args.latency_rate {
        line["latency_rate"] = rate.into();
        line["latency_p50_us"] = pct(0.50).into();
        line["latency_p99_us"] = pct(0.99).into();
        line["latency_p999_us"] = pct(0.999).into();
        line["latency_max_us"] = pct(1.0).into();
    }
    println!("{line}");
    let _ = fields;
    queue.shut_down();
    let _ = worker.await;
    drop(w1);
    Ok(())
}

/// Fan-out on kube-runtime: a shared reflector (`store_shared` + `reflect_shared`) with
/// `handlers` subscribers, each a `keys` handler in its own task; the last one sleeps 1 ms per
/// object with `--slow-handler` (on its own thread). Subscribers receive every object at the
/// initial list's end (kube-runtime broadcasts the store's keys at `InitDone`) and then every
/// applied object; the figures are the first subscriber's.
async fn run_shared(args: Args) -> Result<()> {
    use futures_util::StreamExt;
    let streaming = !args.list;
    let w1 = W1Server::spawn(
        W1Config { pods: args.pods, updates: args.updates, list_rv: 1000, rate: None },
        &args.namespace,
    )?;
    let kc = kube::config::Kubeconfig::from_yaml(&w1.kubeconfig_yaml())?;
    let (api, wc) = pods_watch(kc, &args.namespace, streaming).await?;
    // kube-runtime's documented default buffer for shared streams is small; 1024 matches the
    // order of informer's bounded backlogs.
    let (store, writer) = reflector::store_shared::<Pod>(1024);
    let mut subs: Vec<_> = (0..args.handlers).map(|_| writer.subscribe().expect("a shared store")).collect();
    let synced = std::sync::Arc::new(tokio::sync::Notify::new());
    let t0 = Instant::now();
    let main = tokio::spawn({
        let synced = synced.clone();
        async move {
            let mut s = std::pin::pin!(watcher(api, wc).default_backoff().reflect_shared(writer));
            while let Some(ev) = s.next().await {
                if let Ok(watcher::Event::InitDone) = ev {
                    synced.notify_one();
                }
            }
        }
    });
    let slow = args.slow_handler.then(|| subs.pop().expect("handlers > 1"));
    let slow_thread = slow.map(|sub| {
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(sub.for_each(|_| async { std::thread::sleep(Duration::from_millis(1)) }));
        })
    });
    let measured = subs.remove(0);
    for other in subs {
        tokio::spawn(other.for_each(|p| async move {
            std::hint::black_box(p.metadata.name.as_deref());
        }));
    }
    let queue: WorkQueue<ObjectKey> = WorkQueue::new();
    let worker = tokio::spawn({
        let q = queue.clone();
        async move {
            while let Some(k) = q.get().await {
                q.done(&k);
            }
        }
    });
    // The measured subscriber runs from the start: the shared reflector blocks on full
    // subscriber buffers, so nothing may wait on it before consuming.
    let want = args.pods + args.updates;
    let pods = args.pods;
    let consumer = tokio::spawn({
        let queue = queue.clone();
        async move {
            let mut measured = std::pin::pin!(measured);
            let mut got = 0u64;
            let mut t_updates = None;
            while got < want {
                let Some(p) = measured.next().await else { break };
                if let Ok(k) = ObjectKey::new(p.metadata.namespace.as_deref(), p.metadata.name.as_deref().unwrap_or(""))
                {
                    queue.add(k);
                }
                got += 1;
                if got == pods {
                    t_updates = Some(Instant::now());
                }
            }
            (got, t_updates)
        }
    });
    tokio::time::timeout(Duration::from_secs(900), synced.notified()).await.context("never synced")?;
    let t_sync = Instant::now();
    let rss_after_sync = proc_status_kb("VmRSS:");
    let (got, t_updates) = tokio::time::timeout(Duration::from_secs(900), consumer).await.context("timed out")??;
    // Rate of the updates alone, from the end of the InitDone burst, as in the single-handler run.
    let update_s = t_updates.unwrap_or(t_sync).elapsed().as_secs_f64();
    let rss_end = proc_status_kb("VmRSS:");
    let line = serde_json::json!({
        "client": "kube-runtime",
        "streaming": streaming,
        "handler": "keys",
        "handlers": args.handlers,
        "slow_handler": args.slow_handler,
        "cached": store.state().len(),
        "initial": args.pods,
        "sync_ms": (((t_sync - t0).as_secs_f64() * 1e3) * 10.0).round() / 10.0,
        "updates": got.saturating_sub(args.pods),
        "update_s": (update_s * 1000.0).round() / 1000.0,
        "updates_per_s": if update_s > 0.0 { (got.saturating_sub(args.pods) as f64 / update_s).round() } else { 0.0 },
        "rss_after_sync_kb": rss_after_sync,
        "rss_end_kb": rss_end,
        "peak_rss_kb": peak_rss_kb(&[rss_after_sync, rss_end]),
    });
    println!("{line}");
    // The process exits here: the slow subscriber's thread and the watcher are not joined
    // (the slow thread would take seconds to drain its buffer).
    let _ = (main, slow_thread, worker);
    queue.shut_down();
    drop(w1);
    std::process::exit(0);
}
