//! Event expiry: kube-apiserver keeps an Event for `--event-ttl` (1 h by default) after its last
//! write — an etcd lease on every Event key, renewed by each create and update — and then the
//! Event is gone: watchers of either Event API see it DELETED, and a recorder patching it gets
//! 404 and creates it anew.
//!
//! The expiry follows the watch cache: each Event's deadline is set when the cache shows a write
//! of it (at start, when the cache is filled, for the Events already stored). When a deadline
//! passes, the Event's key is deleted from the storage on the condition that it is still at the
//! version that set the deadline, as a lease expires in etcd: without admission, finalizers or
//! the garbage collector.
//!
//! Invariants: an Event is never deleted sooner than the TTL after the last write the cache
//! showed; a write after its deadline was set moves the deadline (the conditional delete fails
//! and the write's own deadline stands); a delete the storage could not make is tried again;
//! several servers of one storage may expire the same Event, only one delete takes effect;
//! after a restart the deadlines start over.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::storage::StorageError;
use crate::store::Store;
use crate::watch_cache::EventType;

/// Events read from the cache's history at a time.
const BATCH: usize = 1024;

/// How long after a failed delete an Event's expiry is tried again.
const RETRY: Duration = Duration::from_secs(5);

/// kube-apiserver's default `--event-ttl`.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);

/// The expiry of core/v1 Events (which events.k8s.io/v1 Events are a view of).
pub(crate) struct Expiry {
    store: Arc<Store>,
    info: Arc<ResourceInfo>,
    ttl: Duration,
}

/// The deadlines of the Events the cache shows, by storage key.
#[derive(Default)]
struct Deadlines {
    /// Key → (the version whose write set the deadline, the deadline).
    by_key: HashMap<String, (u64, Instant)>,
    /// (deadline, key), earliest first.
    queue: BTreeSet<(Instant, String)>,
}

impl Deadlines {
    fn set(&mut self, key: String, rv: u64, at: Instant) {
        if let Some((_, old)) = self.by_key.insert(key.clone(), (rv, at)) {
            self.queue.remove(&(old, key.clone()));
        }
        self.queue.insert((at, key));
    }

    fn remove(&mut self, key: &str) {
        if let Some((_, at)) = self.by_key.remove(key) {
            self.queue.remove(&(at, key.to_string()));
        }
    }

    fn clear(&mut self) {
        self.by_key.clear();
        self.queue.clear();
    }

    fn next(&self) -> Option<Instant> {
        self.queue.first().map(|(at, _)| *at)
    }

    /// The keys (and versions) whose deadline is at or before `now`, taken out.
    fn due(&mut self, now: Instant) -> Vec<(String, u64)> {
        let mut due = Vec::new();
        while let Some((at, _)) = self.queue.first() {
            if *at > now {
                break;
            }
            let Some((_, key)) = self.queue.pop_first() else { break };
            if let Some((rv, _)) = self.by_key.remove(&key) {
                due.push((key, rv));
            }
        }
        due
    }
}

impl Expiry {
    /// The expiry of the store's Events after `ttl`; None when Events are not served or `ttl`
    /// is zero (they are kept).
    pub(crate) fn new(store: Arc<Store>, ttl: Duration) -> Option<Self> {
        if ttl.is_zero() {
            return None;
        }
        let info = store.cache().registry().find("", "v1", "events")?.clone();
        Some(Expiry { store, info, ttl })
    }

    fn key(&self, o: &crate::object::StoredObject) -> String {
        self.store.cache().layout().object_key(&self.info, &o.namespace, &o.name)
    }

    /// Expires Events until `stop` turns true.
    pub(crate) async fn run(self, mut stop: watch::Receiver<bool>) {
        let cache = self.store.cache().clone();
        let mut deadlines = Deadlines::default();
        let mut events = Vec::new();
        'resync: loop {
            if cache.check_ready().is_err() {
                tokio::select! {
                    _ = cache.until_ready() => continue 'resync,
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
            let mut reset = cache.reset_epoch();
            reset.borrow_and_update();
            let Ok(mut notify) = cache.subscribe(&self.info) else { return };
            notify.borrow_and_update();
            let Ok((mut cursor, objs)) = cache.snapshot(&self.info, None, &Selectors::default()) else {
                continue 'resync;
            };
            deadlines.clear();
            let Some(at) = Instant::now().checked_add(self.ttl) else {
                // A TTL past the clock's range: Events are kept.
                return;
            };
            for o in &objs {
                deadlines.set(self.key(o), o.rv, at);
            }
            drop(objs);
            loop {
                // What the cache shows since the last look.
                loop {
                    events.clear();
                    let cur = match cache.read_events(&self.info, cursor, BATCH, &mut events) {
                        Ok(Ok(cur)) => cur,
                        // Behind the history, or the resource's view started over: look again.
                        _ => continue 'resync,
                    };
                    let at = Instant::now().checked_add(self.ttl).unwrap_or(at);
                    for ev in &events {
                        let key = self.key(&ev.obj);
                        match ev.kind {
                            EventType::Deleted => deadlines.remove(&key),
                            _ => deadlines.set(key, ev.obj.rv, at),
                        }
                        cursor = ev.rv;
                    }
                    if events.len() < BATCH {
                        cursor = cursor.max(cur);
                        break;
                    }
                }
                events.clear();
                for (key, rv) in deadlines.due(Instant::now()) {
                    // Deleted only at the version that set the deadline: a later write keeps it.
                    match self.store.storage().delete(key.clone(), rv).await {
                        Ok(_) | Err(StorageError::NotFound | StorageError::Conflict { .. }) => {}
                        Err(e) => {
                            // The storage could not say: tried again a little later.
                            tracing::warn!(%key, error = %e, "event expiry: not deleted yet");
                            deadlines.set(key, rv, Instant::now() + RETRY);
                        }
                    }
                }
                let next = deadlines.next();
                tokio::select! {
                    // A resource view started over drops its sender: look again.
                    r = notify.changed() => if r.is_err() { continue 'resync },
                    _ = reset.changed() => continue 'resync,
                    _ = async {
                        match next {
                            Some(at) => tokio::time::sleep_until(at).await,
                            None => std::future::pending().await,
                        }
                    } => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_come_due_in_order_and_move_with_writes() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut d = Deadlines::default();
        d.set("a".into(), 1, t0 + s);
        d.set("b".into(), 2, t0 + 2 * s);
        d.set("a".into(), 3, t0 + 3 * s);
        assert_eq!(d.next(), Some(t0 + 2 * s));
        assert!(d.due(t0 + s).is_empty());
        assert_eq!(d.due(t0 + 2 * s), [("b".to_string(), 2)]);
        d.remove("a");
        assert_eq!(d.next(), None);
        assert!(d.due(t0 + 9 * s).is_empty());
    }
}
