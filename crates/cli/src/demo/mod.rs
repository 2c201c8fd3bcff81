//! `informer demo`: a sample pod controller — a [`SharedIndexInformer`] feeding a
//! [`ControllerRunner`] — under load, with a live terminal view (or periodic lines when stdout is
//! not a terminal) and a final check that the cache equals the server's state.
//!
//! Against the embedded API server (default) the demo preloads `--objects` pods and a load
//! generator changes them at `--rate`; with `--kubeconfig` it watches a real cluster and
//! generates load only with `--generate-load`. The sample reconcile reads the pod from the cache
//! and counts pods by phase; `--fail-rate` of the reconciles fail on purpose to exercise retries,
//! each reported as a Warning event on its pod (an [`EventRecorder`], repeats folded into series).
//! With `--leader-elect` the controller is one replica of several on a Lease (`election.rs`):
//! only the leader reconciles, and every transition is printed and recorded as an event on the
//! Lease.
//!
//! Invariants: the exit status is 0 only if the final check passed (1 otherwise, 2 on errors);
//! everything the demo starts (informer, runner, load generator, terminal mode) is stopped
//! before it returns.

mod chaos;
mod check;
mod connect;
mod election;
mod load;
pub mod logs;
mod stats;
mod view;

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Args;
use informer::events::{EventBroadcaster, EventRecorder, EventType};
use informer::runner::{Action, ControllerRunner, RunnerMetrics};
use informer::{
    HandlerFns, HandlerOptions, HandlerRegistration, InformerMetrics, InformerOptions, KubeListerWatcher, Object,
    SharedIndexInformer,
};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::Resource;
use kube::api::Api;
use rand::Rng;
use tokio_util::sync::CancellationToken;

use check::Truth;
use stats::{DemoStats, Sampler, Snapshot};

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
    /// Changes per second made by the load generator (at most 50 against a real cluster).
    #[arg(long, default_value_t = 500)]
    rate: u32,
    /// Generate load against a real cluster too (off by default with --kubeconfig): creates,
    /// updates and deletes pause pods labelled informer-demo=generated, deleted at the end.
    #[arg(long)]
    generate_load: bool,
    /// Stop after this many seconds and print a summary (default: run until q or Ctrl-C).
    #[arg(long)]
    duration: Option<u64>,
    /// Reconcile workers.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Fraction of reconciles that fail on purpose (retried with backoff).
    #[arg(long, default_value_t = 0.01)]
    fail_rate: f64,
    /// Run the controller under leader election on a Lease in the namespace: only the leader
    /// reconciles; prints `leader: ID` and `leading: true|false` on every transition.
    #[arg(long)]
    leader_elect: bool,
    /// This replica's identity in the election (default: hostname_random).
    #[arg(long, requires = "leader_elect")]
    identity: Option<String>,
    /// The Lease's name.
    #[arg(long, requires = "leader_elect", default_value = election::DEFAULT_LEASE)]
    lease_name: String,
    /// Inject the faults of a real kube-apiserver into the embedded server on a schedule
    /// (restarts, outages, graceful shutdowns, compaction, cut connections, 429s…) while the load
    /// runs; after each, check that the cache converges to the server.
    #[arg(long, conflicts_with = "kubeconfig")]
    chaos: bool,
    /// Seconds between two faults.
    #[arg(long, default_value_t = 4, requires = "chaos")]
    chaos_interval: u64,
    /// The fault schedule's seed (random by default; printed).
    #[arg(long, requires = "chaos")]
    chaos_seed: Option<u64>,
}

/// Whether the demo will show the live view (decided before logging is set up).
pub fn uses_terminal_view() -> bool {
    std::io::stdout().is_terminal()
}

/// What the views read each frame.
pub struct Probe {
    informer: SharedIndexInformer<Pod>,
    runner: ControllerRunner<Pod>,
    counter: HandlerRegistration<Pod>,
    stats: Arc<DemoStats>,
    truth: Truth,
    sampler: Sampler,
    journal: Option<Arc<chaos::Journal>>,
}

impl Probe {
    fn snapshot(&mut self) -> Snapshot {
        let runner = self.runner.stats();
        let mut s = Snapshot {
            cached: self.informer.indexer().len(),
            runner,
            retries: runner.error + runner.panic,
            counter_backlog: self.counter.backlog().len,
            client_rv: self.informer.last_sync_resource_version(),
            server_rv: self.truth.server_rv(),
            leader: self.runner.leader_elector().map(|e| (e.leader(), e.is_leader())),
            chaos: self.journal.as_ref().map(|j| j.view()),
            ..Default::default()
        };
        self.sampler.sample(&self.stats, &mut s);
        s
    }
}

fn counting_handler(stats: &Arc<DemoStats>) -> HandlerFns<Pod> {
    let (a, u, d) = (stats.clone(), stats.clone(), stats.clone());
    HandlerFns::new()
        .on_add(move |_, _| {
            a.adds.fetch_add(1, Ordering::Relaxed);
        })
        .on_update(move |_, _| {
            u.updates.fetch_add(1, Ordering::Relaxed);
        })
        .on_delete(move |_| {
            d.deletes.fetch_add(1, Ordering::Relaxed);
        })
}

/// Runs the demo; Ok(false) when the final check fails.
pub async fn run(args: DemoArgs) -> Result<bool> {
    if !(0.0..1.0).contains(&args.fail_rate) {
        bail!("--fail-rate must be in [0, 1), got {}", args.fail_rate);
    }
    let tui = uses_terminal_view();
    let ns = args.namespace.clone();
    let target = connect::connect(args.kubeconfig.as_deref(), &ns, args.objects).await?;
    if target.server.is_some() {
        println!("{} with {} pods in namespace {ns}", target.description, args.objects);
    } else {
        println!("watching pods in namespace {ns} of {}", target.description);
    }

    let mut registry = prometheus_client::registry::Registry::default();
    let informer_metrics = InformerMetrics::new(&mut registry);
    let runner_metrics = RunnerMetrics::new(&mut registry);
    let informer = SharedIndexInformer::<Pod>::with_options(
        KubeListerWatcher::new(target.client.clone(), Some(&ns)),
        InformerOptions::default().name("demo-pods").metrics(informer_metrics),
    );
    let stats = Arc::new(DemoStats::default());
    let counter = informer
        .add_event_handler_with_options(counting_handler(&stats), HandlerOptions::new().name("event-counter"))?;
    let broadcaster = EventBroadcaster::new(target.client.clone());
    let recorder = broadcaster.new_recorder("informer-demo");
    // Each term is recorded as an event on the Lease, as client-go's lock records it.
    let election =
        args.leader_elect.then(|| election::config(&target.client, &ns, &args).event_recorder(recorder.clone()));
    let runner = {
        let stats = stats.clone();
        let fail_rate = args.fail_rate;
        let mut builder =
            ControllerRunner::builder("demo-pods").informer(&informer).workers(args.workers).metrics(&runner_metrics);
        if let Some(config) = election {
            builder = builder.leader_election(config);
        }
        builder.build(move |key, pod| {
            let stats = stats.clone();
            let fail = fail_rate > 0.0 && rand::rng().random::<f64>() < fail_rate;
            let recorder = recorder.clone();
            async move {
                let start = Instant::now();
                if fail {
                    stats.injected_failures.fetch_add(1, Ordering::Relaxed);
                    let note = format!("injected failure for {key}");
                    report_failure(&recorder, &key, pod.as_ref(), &note);
                    return Err(note);
                }
                let phase = match &pod {
                    None => None,
                    Some(p) => {
                        let pod = p.get().map_err(|e| format!("decoding {key}: {e}"))?;
                        Some(pod.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_else(|| "Unknown".into()))
                    }
                };
                stats.set_phase(&key, phase);
                stats.record_latency(start.elapsed());
                Ok(Action::Done)
            }
        })?
    };

    // Transitions go to the live view's log while it owns the terminal.
    let to_view = Arc::new(AtomicBool::new(tui));
    let printer = runner.leader_elector().map(|e| election::Printer::start(e, to_view.clone()));
    let cancel = CancellationToken::new();
    let informer_task = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let runner_task = tokio::spawn({
        let (r, c) = (runner.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    let stop = |cancel: CancellationToken| async move {
        cancel.cancel();
        let _ = runner_task.await;
        let _ = informer_task.await;
        if let Some(p) = printer {
            p.finish().await;
        }
    };

    let started = Instant::now();
    let synced = informer.synced();
    // Progress for long waits (large lists, slow servers): one line per second on stderr.
    let mut progress = tokio::time::interval(Duration::from_secs(1));
    progress.tick().await;
    loop {
        tokio::select! {
            _ = synced.wait() => break,
            _ = progress.tick() => {
                let waited = started.elapsed();
                if waited >= Duration::from_secs(60) {
                    stop(cancel).await;
                    bail!("cache did not sync within 60 s (is the server reachable and are pods listable?)");
                }
                eprintln!(
                    "waiting for the cache to sync: {:.0} s, {} objects cached, resourceVersion {:?}",
                    waited.as_secs_f64(),
                    informer.indexer().len(),
                    informer.last_sync_resource_version()
                );
            }
            _ = tokio::signal::ctrl_c() => { stop(cancel).await; return Ok(true); }
        }
    }
    println!("cache synced: {} pods in {:.1} ms", informer.indexer().len(), started.elapsed().as_secs_f64() * 1e3);

    let load_cancel = CancellationToken::new();
    let (load_paused, load_paused_rx) = tokio::sync::watch::channel(false);
    let load = match (&target.server, args.kubeconfig.is_none() || args.generate_load) {
        (Some(s), true) => Some(tokio::spawn(load::embedded(
            s.clone(),
            ns.clone(),
            args.rate,
            args.objects as u64,
            load_paused_rx,
            load_cancel.clone(),
        ))),
        (None, true) => {
            Some(tokio::spawn(load::cluster(target.client.clone(), ns.clone(), args.rate, load_cancel.clone())))
        }
        _ => None,
    };

    let truth = match &target.server {
        Some(s) => Truth::Embedded(s.clone()),
        None => Truth::cluster(Api::namespaced(target.client.clone(), &ns)),
    };
    let rv_tracker = truth.track_server_rv(load_cancel.clone());
    let chaos_cancel = CancellationToken::new();
    let (journal, chaos_task) = match (&target.server, args.chaos) {
        (Some(server), true) => {
            let journal = Arc::new(chaos::Journal::default());
            let schedule = chaos::Schedule {
                interval: Duration::from_secs(args.chaos_interval.max(1)),
                seed: args.chaos_seed.unwrap_or_else(rand::random),
                print: !tui,
            };
            let task = tokio::spawn(chaos::run(
                server.clone(),
                informer.clone(),
                ns.clone(),
                load_paused,
                schedule,
                journal.clone(),
                chaos_cancel.clone(),
            ));
            (Some(journal), Some(task))
        }
        _ => (None, None),
    };
    let mut probe = Probe {
        informer: informer.clone(),
        runner: runner.clone(),
        counter,
        stats: stats.clone(),
        truth,
        sampler: Sampler::new(started, &stats),
        journal,
    };
    let deadline = args.duration.map(|d| Instant::now() + Duration::from_secs(d));
    let viewed = if tui {
        let r = tokio::select! {
            r = view::run(&mut probe, &target.description, deadline) => r.map(drop),
            _ = tokio::signal::ctrl_c() => Ok(()),
        };
        to_view.store(false, Ordering::SeqCst);
        r
    } else {
        plain(&mut probe, deadline).await;
        Ok(())
    };

    // A fault in progress completes first: the server serves again for the final check.
    chaos_cancel.cancel();
    if let Some(t) = chaos_task {
        let _ = t.await;
    }
    load_cancel.cancel();
    for task in [load, rv_tracker].into_iter().flatten() {
        let _ = task.await;
    }
    let ok = match viewed {
        Ok(()) => check::verify(&probe.truth, &ns, &informer).await,
        Err(e) => Err(e.context("the terminal view failed")),
    };
    stop(cancel).await;
    // The failures' event counts not yet written are written, within a bound (a server gone
    // would hold them to the client's own timeouts).
    let _ = tokio::time::timeout(Duration::from_secs(5), broadcaster.shutdown()).await;
    let s = probe.snapshot();
    println!("summary: adds={} updates={} deletes={} cached={}", s.totals[0], s.totals[1], s.totals[2], s.cached);
    let (p50, p99) = s.latency.map(|(a, b)| (stats::human(a), stats::human(b))).unwrap_or(("-".into(), "-".into()));
    println!(
        "reconcile: ok={} errors={} (injected {}) retries={} dropped={} p50={p50} p99={p99}",
        s.runner.success,
        s.runner.error + s.runner.panic,
        s.injected_failures,
        s.retries,
        s.runner.dropped
    );
    if let Some(j) = &probe.journal {
        println!("{}", j.summary());
        let v = j.view();
        return ok.map(|ok| ok && v.checks.1 == 0);
    }
    ok
}

/// Reports a failed reconcile as a Warning event on its pod (with the pod's uid, by which
/// `kubectl describe pod` finds its events, when the cache has the pod).
fn report_failure(recorder: &EventRecorder, key: &informer::ObjectKey, pod: Option<&Object<Pod>>, note: &str) {
    let reference = pod.and_then(|p| p.get().ok()).map(|p| p.object_ref(&())).unwrap_or_else(|| ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(key.name().to_string()),
        namespace: key.namespace().map(str::to_string),
        ..Default::default()
    });
    recorder.eventf(&reference, None, EventType::Warning, "ReconcileFailed", "Reconcile", note);
}

/// One line per second until the deadline or Ctrl-C (the format predates the live view).
async fn plain(probe: &mut Probe, deadline: Option<Instant>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = tokio::signal::ctrl_c() => break,
        }
        let s = probe.snapshot();
        println!(
            "t={:>4.0}s cached={:<6} events/s add={:<5} update={:<5} delete={:<5} queue={:<4} client_rv={} server_rv={}",
            s.elapsed.as_secs_f64(),
            s.cached,
            s.rates[0],
            s.rates[1],
            s.rates[2],
            s.runner.queued,
            s.client_rv,
            s.server_rv
        );
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
}
