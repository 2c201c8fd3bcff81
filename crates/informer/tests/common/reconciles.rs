//! Which replica reconciles which key, for tests of runners under leader election: every
//! reconcile of every replica registers while it runs, and the tracker records an overlap when a
//! replica begins a reconcile while any other replica has one in flight (only the leader may
//! reconcile), and the outcome of every reconcile (finished, or cancelled by being dropped).

use std::collections::HashMap;
use std::sync::Arc;

use informer::ObjectKey;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// What happened to one reconcile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Done {
    Finished,
    Cancelled,
}

/// The end of one reconcile: replica, key, how it ended, and when.
pub type Outcome = (String, String, Done, Instant);

/// Every reconcile of every replica: who holds which key now, overlaps, and outcomes.
pub struct Tracker {
    /// key → the replica reconciling it.
    pub in_flight: Mutex<HashMap<String, String>>,
    pub overlaps: Mutex<Vec<String>>,
    outcomes: mpsc::UnboundedSender<Outcome>,
}

/// Ends a reconcile in the tracker when dropped: finished if `finished` was set, else cancelled.
pub struct InFlight {
    tracker: Arc<Tracker>,
    replica: String,
    key: String,
    pub finished: bool,
}

impl Tracker {
    /// A tracker sending every outcome to `outcomes`.
    pub fn new(outcomes: mpsc::UnboundedSender<Outcome>) -> Arc<Self> {
        Arc::new(Tracker { in_flight: Mutex::default(), overlaps: Mutex::default(), outcomes })
    }

    /// Registers a reconcile of `key` by `replica`; records an overlap if any other replica has a
    /// reconcile in flight.
    pub fn begin(self: &Arc<Self>, replica: &str, key: &ObjectKey) -> InFlight {
        let mut in_flight = self.in_flight.lock();
        let others: Vec<String> =
            in_flight.iter().filter(|(_, r)| *r != replica).map(|(k, r)| format!("{k} by {r}")).collect();
        if !others.is_empty() {
            self.overlaps.lock().push(format!("{key} reconciled by {replica} while {others:?} in flight"));
        }
        if let Some(other) = in_flight.insert(key.to_string(), replica.to_string()) {
            self.overlaps.lock().push(format!("{key} reconciled by {other} and {replica} at once"));
        }
        InFlight { tracker: self.clone(), replica: replica.into(), key: key.to_string(), finished: false }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.tracker.in_flight.lock().remove(&self.key);
        let done = if self.finished { Done::Finished } else { Done::Cancelled };
        let _ = self.tracker.outcomes.send((self.replica.clone(), self.key.clone(), done, Instant::now()));
    }
}
