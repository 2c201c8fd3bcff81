//! `informer demo --chaos`: the faults of a real kube-apiserver ([`informer_apiserver::chaos`])
//! injected into the embedded server on a schedule while the load runs. After each fault the load
//! pauses and the informer's cache is compared with the server until they are equal: the time that
//! takes is the recovery; a cache still different after the limit is a failed check, its
//! differences counted as lost events.
//!
//! Invariants: a fault that has started always completes (the server serves normally again)
//! before the task returns, also when it is cancelled; the load is never left paused; every fault
//! and every check is recorded in the [`Journal`] the views read.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use informer::SharedIndexInformer;
use informer_apiserver::ApiServer;
use informer_apiserver::chaos::{self, Fault};
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long the cache may take to equal the server after a fault before the check fails.
const RECOVERY_LIMIT: Duration = Duration::from_secs(60);
/// Lines of the journal the views show.
const RECENT: usize = 8;

/// What the chaos schedule did so far.
#[derive(Default)]
pub struct Journal {
    inner: Mutex<JournalInner>,
}

#[derive(Default)]
struct JournalInner {
    recent: VecDeque<String>,
    current: Option<Fault>,
    survived: BTreeMap<&'static str, u32>,
    checks_passed: u32,
    checks_failed: u32,
    lost_events: u64,
    slowest: Duration,
}

/// A view's copy of the journal.
#[derive(Debug, Clone, Default)]
pub struct JournalView {
    /// The most recent lines, oldest first.
    pub recent: Vec<String>,
    /// The fault in progress.
    pub current: Option<&'static str>,
    /// Faults after which the cache converged, by name.
    pub survived: Vec<(&'static str, u32)>,
    /// Checks that passed and failed.
    pub checks: (u32, u32),
    /// Differences left after failed checks.
    pub lost_events: u64,
    /// The longest recovery.
    pub slowest: Duration,
}

impl Journal {
    fn line(&self, print: bool, text: String) {
        if print {
            println!("{text}");
        }
        let mut j = self.inner.lock();
        if j.recent.len() == RECENT {
            j.recent.pop_front();
        }
        j.recent.push_back(text);
    }

    /// A copy for a view.
    pub fn view(&self) -> JournalView {
        let j = self.inner.lock();
        JournalView {
            recent: j.recent.iter().cloned().collect(),
            current: j.current.map(Fault::name),
            survived: j.survived.iter().map(|(k, v)| (*k, *v)).collect(),
            checks: (j.checks_passed, j.checks_failed),
            lost_events: j.lost_events,
            slowest: j.slowest,
        }
    }

    /// The summary line printed at the end.
    pub fn summary(&self) -> String {
        let v = self.view();
        let survived: Vec<String> = v.survived.iter().map(|(k, n)| format!("{k}={n}")).collect();
        let total: u32 = v.survived.iter().map(|(_, n)| n).sum();
        format!(
            "chaos: faults survived {total} ({}); checks passed={} failed={}; slowest recovery {} ms; lost_events={}",
            if survived.is_empty() { "none".to_string() } else { survived.join(" ") },
            v.checks.0,
            v.checks.1,
            v.slowest.as_millis(),
            v.lost_events
        )
    }
}

/// Differences between the cache and the server's pods in `ns` (missing + extra + stale).
async fn differences(server: &ApiServer, informer: &SharedIndexInformer<Pod>, ns: &str) -> Option<u64> {
    let truth: BTreeMap<String, u64> =
        server.list_raw("pods", Some(ns)).await.ok()?.iter().map(|o| (o.key.clone(), o.rv)).collect();
    let cache: BTreeMap<String, u64> = informer
        .indexer()
        .list()
        .iter()
        .map(|o| (o.key().to_string(), o.resource_version().and_then(|r| r.parse().ok()).unwrap_or(0)))
        .collect();
    let missing = truth.iter().filter(|(k, v)| cache.get(*k) != Some(v)).count();
    let extra = cache.keys().filter(|k| !truth.contains_key(*k)).count();
    Some((missing + extra) as u64)
}

/// Settings of the schedule.
pub struct Schedule {
    /// Time between faults.
    pub interval: Duration,
    /// The schedule's seed.
    pub seed: u64,
    /// Print each line (plain mode) as well as recording it.
    pub print: bool,
}

/// Runs the schedule until `cancel` fires.
pub async fn run(
    server: Arc<ApiServer>,
    informer: SharedIndexInformer<Pod>,
    ns: String,
    load_paused: watch::Sender<bool>,
    schedule: Schedule,
    journal: Arc<Journal>,
    cancel: CancellationToken,
) {
    let mut rng = StdRng::seed_from_u64(schedule.seed);
    journal.line(
        schedule.print,
        format!("chaos: seed {} (--chaos-seed {} replays the schedule)", schedule.seed, schedule.seed),
    );
    let started = Instant::now();
    loop {
        for fault in chaos::schedule(&mut rng, chaos::FAULTS.len()) {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(schedule.interval) => {}
            }
            let t = started.elapsed().as_secs();
            journal.inner.lock().current = Some(fault);
            journal.line(schedule.print, format!("chaos: t={t}s fault {}: {}", fault.name(), fault.describe()));
            let window = Duration::from_millis(rng.random_range(500..2500));
            // A fault in progress completes even when the demo ends: the window is cut short.
            let c = cancel.clone();
            chaos::inject(&server, fault, &mut rng, async move {
                tokio::select! {
                    _ = c.cancelled() => {}
                    _ = tokio::time::sleep(window) => {}
                }
            })
            .await;
            journal.inner.lock().current = None;
            // The load pauses while the cache catches up with the server.
            load_paused.send_replace(true);
            let healed = Instant::now();
            let mut left = None;
            while healed.elapsed() < RECOVERY_LIMIT && !cancel.is_cancelled() {
                left = differences(&server, &informer, &ns).await;
                if left == Some(0) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            load_paused.send_replace(false);
            let took = healed.elapsed();
            let mut j = journal.inner.lock();
            match left {
                Some(0) => {
                    j.checks_passed += 1;
                    *j.survived.entry(fault.name()).or_default() += 1;
                    j.slowest = j.slowest.max(took);
                    drop(j);
                    journal.line(
                        schedule.print,
                        format!("chaos: recovered from {} in {} ms: cache == server", fault.name(), took.as_millis()),
                    );
                }
                _ if cancel.is_cancelled() => return,
                other => {
                    j.checks_failed += 1;
                    j.lost_events += other.unwrap_or(0);
                    drop(j);
                    journal.line(
                        schedule.print,
                        format!(
                            "chaos: FAILED after {}: {} differences after {} ms",
                            fault.name(),
                            other.unwrap_or(0),
                            took.as_millis()
                        ),
                    );
                }
            }
        }
    }
}
