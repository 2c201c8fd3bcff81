//! kube-runtime's watcher + reflector on the same workload as `informer bench`, printing the same
//! JSON line (with `"client":"kube-runtime"`). The `keys` handler enqueues the same key type on the
//! same workqueue as `informer bench`, so only the list-watch-cache machinery differs.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use futures_util::TryStreamExt;
use informer::ObjectKey;
use informer::workqueue::WorkQueue;
use informer_apiserver::w1::{W1Config, W1Server};
use informer_bench::proc_status_kb;
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
}

fn main() -> Result<()> {
    informer_bench::single_malloc_arena();
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(run())
}

async fn run() -> Result<()> {
    let args = Args::parse();
    let streaming = !args.list;
    let w1 = if args.w1 {
        Some(
            W1Server::start(
                W1Config { pods: args.pods, updates: args.updates, list_rv: 1000, rate: None },
                &args.namespace,
            )
            .await?,
        )
    } else {
        None
    };
    let kc = match (&w1, &args.kubeconfig) {
        (Some(s), _) => kube::config::Kubeconfig::from_yaml(&s.kubeconfig_yaml())?,
        (None, Some(p)) => kube::config::Kubeconfig::read_from(p)?,
        (None, None) => anyhow::bail!("give --kubeconfig F or --w1"),
    };
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    let client = kube::Client::try_from(cfg)?;
    let api: kube::Api<Pod> = kube::Api::namespaced(client, &args.namespace);
    let mut wc = watcher::Config::default().any_semantic();
    if streaming {
        wc = wc.streaming_lists();
    }
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
                rss_after_sync = proc_status_kb("VmRSS:");
                if args.updates == 0 {
                    break;
                }
            }
            watcher::Event::Apply(p) if t_sync.is_some() => {
                handle(&p);
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
    let line = serde_json::json!({
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
        "rss_end_kb": proc_status_kb("VmRSS:"),
        "peak_rss_kb": proc_status_kb("VmHWM:"),
    });
    println!("{line}");
    let _ = fields;
    queue.shut_down();
    let _ = worker.await;
    drop(w1);
    Ok(())
}
