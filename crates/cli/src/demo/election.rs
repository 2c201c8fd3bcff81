//! `informer demo --leader-elect`: the demo's controller as one replica of several, on a Lease in
//! the demo's namespace, and one line per transition: `leader: <identity>` when a new leader is
//! observed, `leading: true|false` when this process gains or loses leadership (on stdout, or in
//! the live view's log while it owns the terminal).
//!
//! Invariants: the lease is released when the demo stops (so another replica takes over within a
//! retry period); every transition up to the release is printed before the demo exits.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use informer::leader_election::{LeaderElectionConfig, LeaderElector, LeaderEvent, LeaseLock};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{DemoArgs, logs};

/// The lease name when `--lease-name` is not given.
pub const DEFAULT_LEASE: &str = "informer-demo";

/// client-go's convention for an identity: `hostname_` plus something unique to the process.
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "informer-demo".to_string());
    format!("{host}_{:08x}", rand::random::<u32>())
}

/// The election of the demo's controller: client-go's default timing, released on stop.
pub fn config(client: &kube::Client, namespace: &str, args: &DemoArgs) -> LeaderElectionConfig {
    let identity = args.identity.clone().unwrap_or_else(default_identity);
    println!("leader election on lease {namespace}/{} as {identity}", args.lease_name);
    LeaderElectionConfig::new(LeaseLock::new(client.clone(), namespace, &args.lease_name), identity)
        .release_on_cancel(true)
}

/// The line printed for an event.
fn line(event: &LeaderEvent) -> Option<String> {
    match event {
        LeaderEvent::NewLeader(Some(who)) => Some(format!("leader: {who}")),
        LeaderEvent::NewLeader(None) => None,
        LeaderEvent::StartedLeading(_) => Some("leading: true".to_string()),
        LeaderEvent::StoppedLeading => Some("leading: false".to_string()),
    }
}

/// Prints transitions until [`Printer::finish`].
pub struct Printer {
    stop: CancellationToken,
    /// Whether lines go to the live view's log (while it owns the terminal).
    to_view: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl Printer {
    /// Starts printing `elector`'s transitions: to the live view's log while `to_view` is set,
    /// else to stdout.
    pub fn start(elector: &LeaderElector, to_view: Arc<AtomicBool>) -> Printer {
        let mut events = elector.subscribe();
        let stop = CancellationToken::new();
        let task = tokio::spawn({
            let (stop, to_view) = (stop.clone(), to_view.clone());
            async move {
                loop {
                    tokio::select! {
                        biased;
                        e = events.recv() => match e {
                            Some(e) => emit(&e, &to_view),
                            None => return,
                        },
                        _ = stop.cancelled() => break,
                    }
                }
                while let Some(e) = events.try_recv() {
                    emit(&e, &to_view);
                }
            }
        });
        Printer { stop, to_view, task }
    }

    /// Prints what is still pending (on stdout) and stops.
    pub async fn finish(self) {
        self.to_view.store(false, Ordering::SeqCst);
        self.stop.cancel();
        let _ = self.task.await;
    }
}

fn emit(e: &LeaderEvent, to_view: &AtomicBool) {
    if let Some(l) = line(e) {
        if to_view.load(Ordering::SeqCst) {
            logs::push(l);
        } else {
            println!("{l}");
        }
    }
}
