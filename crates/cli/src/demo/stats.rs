//! The demo's figures: event counters fed by an informer handler, a ring of recent reconcile
//! latencies, pods by phase as seen by the reconciles, and the [`Snapshot`] both views render.
//!
//! Invariants: counters only grow; the latency ring keeps the last [`LATENCY_SAMPLES`]
//! durations; `phases` counts every key the controller currently knows exactly once.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use informer::ObjectKey;
use informer::runner::RunnerStats;

/// How many recent reconcile durations the percentiles are computed from.
pub const LATENCY_SAMPLES: usize = 4096;

/// Shared, updated by handlers and reconciles.
#[derive(Default)]
pub struct DemoStats {
    pub adds: AtomicU64,
    pub updates: AtomicU64,
    pub deletes: AtomicU64,
    pub injected_failures: AtomicU64,
    latencies: Mutex<VecDeque<Duration>>,
    phases: Mutex<Phases>,
}

#[derive(Default)]
struct Phases {
    by_key: HashMap<ObjectKey, String>,
    counts: BTreeMap<String, i64>,
}

impl DemoStats {
    /// Records one reconcile's duration.
    pub fn record_latency(&self, d: Duration) {
        if let Ok(mut l) = self.latencies.lock() {
            if l.len() == LATENCY_SAMPLES {
                l.pop_front();
            }
            l.push_back(d);
        }
    }

    /// The (p50, p99) of recent reconcile durations.
    pub fn latency_percentiles(&self) -> Option<(Duration, Duration)> {
        let mut v: Vec<Duration> = self.latencies.lock().ok()?.iter().copied().collect();
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        Some((at(0.50), at(0.99)))
    }

    /// The controller saw `key` in `phase` (`None`: the pod is gone).
    pub fn set_phase(&self, key: &ObjectKey, phase: Option<String>) {
        let Ok(mut p) = self.phases.lock() else { return };
        let p = &mut *p;
        let old = match phase {
            Some(phase) => {
                *p.counts.entry(phase.clone()).or_default() += 1;
                p.by_key.insert(key.clone(), phase)
            }
            None => p.by_key.remove(key),
        };
        if let Some(old) = old
            && let Some(c) = p.counts.get_mut(&old)
        {
            *c -= 1;
            if *c == 0 {
                p.counts.remove(&old);
            }
        }
    }

    /// Pods by phase, as reconciled.
    pub fn phases(&self) -> Vec<(String, i64)> {
        self.phases.lock().map(|p| p.counts.iter().map(|(k, v)| (k.clone(), *v)).collect()).unwrap_or_default()
    }

    /// How many pods the controller knows.
    pub fn reconciled_pods(&self) -> usize {
        self.phases.lock().map(|p| p.by_key.len()).unwrap_or(0)
    }

    fn events(&self) -> [u64; 3] {
        [&self.adds, &self.updates, &self.deletes].map(|c| c.load(Ordering::Relaxed))
    }
}

/// Everything a view shows at one instant.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub elapsed: Duration,
    pub cached: usize,
    /// Events per second over the last sampling period: add, update, delete.
    pub rates: [u64; 3],
    pub totals: [u64; 3],
    pub runner: RunnerStats,
    /// Rate-limited retries so far (failed and panicked reconciles).
    pub retries: u64,
    pub injected_failures: u64,
    /// Notifications waiting in the event-counting handler.
    pub counter_backlog: usize,
    pub latency: Option<(Duration, Duration)>,
    pub client_rv: String,
    pub server_rv: String,
    pub phases: Vec<(String, i64)>,
    pub reconciled_pods: usize,
    /// With `--leader-elect`: the leader last observed, and whether it is this process.
    pub leader: Option<(Option<String>, bool)>,
    /// With `--chaos`: the faults and checks so far.
    pub chaos: Option<super::chaos::JournalView>,
}

/// Turns counters into per-second rates, sampled at most once per second.
pub struct Sampler {
    started: Instant,
    last_at: Instant,
    last: [u64; 3],
    rates: [u64; 3],
}

impl Sampler {
    /// Rates count from now on (the initial list's adds are not a rate).
    pub fn new(started: Instant, stats: &DemoStats) -> Self {
        Sampler { started, last_at: Instant::now(), last: stats.events(), rates: [0; 3] }
    }

    /// Fills the time and event fields of `snap` from `stats`.
    pub fn sample(&mut self, stats: &DemoStats, snap: &mut Snapshot) {
        let now = Instant::now();
        let totals = stats.events();
        let dt = now.duration_since(self.last_at);
        if dt >= Duration::from_millis(950) {
            for ((rate, now), last) in self.rates.iter_mut().zip(totals).zip(self.last) {
                *rate = ((now - last) as f64 / dt.as_secs_f64()).round() as u64;
            }
            self.last = totals;
            self.last_at = now;
        }
        snap.elapsed = now.duration_since(self.started);
        snap.totals = totals;
        snap.rates = self.rates;
        snap.injected_failures = stats.injected_failures.load(Ordering::Relaxed);
        snap.latency = stats.latency_percentiles();
        snap.phases = stats.phases();
        snap.reconciled_pods = stats.reconciled_pods();
    }
}

/// A duration in a human unit (µs, ms or s).
pub fn human(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0}µs")
    } else if us < 1e6 {
        format!("{:.1}ms", us / 1e3)
    } else {
        format!("{:.2}s", us / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_phase_counts() {
        let s = DemoStats::default();
        assert_eq!(s.latency_percentiles(), None);
        for ms in 1..=100 {
            s.record_latency(Duration::from_millis(ms));
        }
        assert_eq!(s.latency_percentiles(), Some((Duration::from_millis(51), Duration::from_millis(99))));

        let (a, b) = (ObjectKey::parse("ns/a").unwrap(), ObjectKey::parse("ns/b").unwrap());
        s.set_phase(&a, Some("Running".into()));
        s.set_phase(&b, Some("Running".into()));
        s.set_phase(&a, Some("Failed".into()));
        assert_eq!(s.phases(), [("Failed".to_string(), 1), ("Running".to_string(), 1)]);
        s.set_phase(&b, None);
        s.set_phase(&b, None);
        assert_eq!(s.phases(), [("Failed".to_string(), 1)]);
        assert_eq!(s.reconciled_pods(), 1);
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_micros(42)), "42µs");
        assert_eq!(human(Duration::from_micros(1500)), "1.5ms");
        assert_eq!(human(Duration::from_millis(2500)), "2.50s");
    }
}
