//! client-go's `synctrack.AsyncTracker`: "synced" for a consumer whose workers process the
//! initial list's keys after the handler has seen them. The handler calls [`AsyncTracker::start`]
//! for each key of the initial list it queues, a worker calls [`AsyncTracker::finished`] once it
//! has processed one; the tracker has synced once its upstream (the informer, or the handler's
//! registration) has and no started key is unfinished.
//!
//! Invariants: a key started several times is finished by one `finished`; `finished` of a key
//! never started does nothing (workers may call it for every key); the upstream is read before
//! the tracker's lock is taken, so an upstream that takes locks of its own cannot deadlock with
//! it. Waiting is by signal and notification, never by polling.

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
}

impl<T: Hash + Eq> AsyncTracker<T> {
    /// A tracker that cannot have synced before `upstream` is set.
    pub fn new(upstream: Signal) -> Self {
        AsyncTracker { upstream, waiting: Arc::default(), emptied: Arc::default() }
    }

    /// A key of the initial list is about to be processed.
    pub fn start(&self, key: T) {
        self.waiting.lock().insert(key);
    }

    /// A key has been processed (whether or not it was started).
    pub fn finished(&self, key: &T) {
        let mut waiting = self.waiting.lock();
        if waiting.remove(key) && waiting.is_empty() {
            self.emptied.notify_waiters();
        }
    }

    /// Whether the upstream has synced and every started key has been processed.
    pub fn has_synced(&self) -> bool {
        self.upstream.is_set() && self.waiting.lock().is_empty()
    }

    /// Waits until [`Self::has_synced`].
    pub async fn wait_synced(&self) {
        self.upstream.wait().await;
        loop {
            let emptied = self.emptied.notified();
            tokio::pin!(emptied);
            // Registered before the check, so a `finished` in between is not missed.
            emptied.as_mut().enable();
            if self.waiting.lock().is_empty() {
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
    }

    #[test]
    fn not_synced_before_upstream() {
        let tracker = AsyncTracker::<u32>::new(Signal::new("never"));
        assert!(!tracker.has_synced(), "nothing started, but the upstream has not synced");
    }
}
