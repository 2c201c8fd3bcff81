//! client-go's `synctrack.AsyncTracker`: "synced" for a consumer whose workers process the
//! initial list's keys after the handler has seen them. The handler calls [`AsyncTracker::start`]
//! for each key of the initial list it queues, a worker calls [`AsyncTracker::finished`] once it
//! has processed one; the tracker has synced once its upstream has and no started key is
//! unfinished. The upstream must be set only after the handler has started every key of the
//! initial list: the handler's registration's [`synced`](crate::HandlerRegistration::synced)
//! signal is (an informer's own is set when the list is handed to its handlers, before they have
//! seen it).
//!
//! Invariants: once synced, the tracker stays synced (later starts are ordinary work, as in
//! client-go); a key started several times is finished by one `finished`; `finished` of a key
//! never started does nothing (workers may call it for every key). Waiting is by signal and
//! notification, never by polling.

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::signal::Signal;

/// Tracks the keys of an initial list until they are processed (see the module documentation).
/// Cheap to clone: clones share the keys.
#[derive(Clone)]
pub struct AsyncTracker<T> {
    upstream: Signal,
    waiting: Arc<Mutex<HashSet<T>>>,
    emptied: Arc<Notify>,
    synced: Signal,
}

impl<T: Hash + Eq> AsyncTracker<T> {
    /// A tracker that cannot have synced before `upstream` is set.
    pub fn new(upstream: Signal) -> Self {
        let synced = Signal::new(format!("{} and its keys processed", upstream.name()));
        AsyncTracker { upstream, waiting: Arc::default(), emptied: Arc::default(), synced }
    }

    /// A key of the initial list is about to be processed (nothing once synced).
    pub fn start(&self, key: T) {
        let mut waiting = self.waiting.lock();
        if !self.latch(&waiting) {
            waiting.insert(key);
        }
    }

    /// A key has been processed (whether or not it was started).
    pub fn finished(&self, key: &T) {
        let mut waiting = self.waiting.lock();
        if waiting.remove(key) && waiting.is_empty() {
            self.latch(&waiting);
            self.emptied.notify_waiters();
        }
    }

    /// Whether the upstream has synced and every started key has been processed (latched).
    pub fn has_synced(&self) -> bool {
        self.synced.is_set() || self.latch(&self.waiting.lock())
    }

    /// Latches the tracker synced if it has (`waiting` is the locked set); whether it is.
    fn latch(&self, waiting: &HashSet<T>) -> bool {
        if self.synced.is_set() {
            return true;
        }
        if self.upstream.is_set() && waiting.is_empty() {
            self.synced.set();
            return true;
        }
        false
    }

    /// Waits until [`Self::has_synced`].
    pub async fn wait_synced(&self) {
        self.upstream.wait().await;
        loop {
            let emptied = self.emptied.notified();
            tokio::pin!(emptied);
            // Registered before the check, so a `finished` in between is not missed.
            emptied.as_mut().enable();
            if self.has_synced() {
                return;
            }
            emptied.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn synced_once_upstream_is_and_every_started_key_is_finished() {
        let upstream = Signal::new("informer synced");
        let tracker = AsyncTracker::new(upstream.clone());
        tracker.start("a");
        tracker.start("b");
        tracker.start("b");
        tracker.finished(&"never-started");
        upstream.set();
        assert!(!tracker.has_synced());
        let waiter = tokio::spawn({
            let t = tracker.clone();
            async move { t.wait_synced().await }
        });
        tokio::task::yield_now().await;
        tracker.finished(&"a");
        tokio::task::yield_now().await;
        assert!(!tracker.has_synced());
        assert!(!waiter.is_finished(), "still waiting for b");
        tracker.finished(&"b");
        assert!(tracker.has_synced());
        waiter.await.unwrap();
        tracker.start("later");
        assert!(tracker.has_synced(), "latched: later keys are ordinary work");
    }

    #[test]
    fn latched_as_soon_as_it_has_synced() {
        let upstream = Signal::new("registration synced");
        let tracker = AsyncTracker::new(upstream.clone());
        tracker.start(1);
        upstream.set();
        tracker.finished(&1);
        // Nobody asked yet: a new key is ordinary work all the same.
        tracker.start(2);
        assert!(tracker.has_synced());
    }

    #[test]
    fn not_synced_before_upstream() {
        let tracker = AsyncTracker::<u32>::new(Signal::new("never"));
        assert!(!tracker.has_synced(), "nothing started, but the upstream has not synced");
    }
}
