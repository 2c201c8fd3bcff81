//! `RealFifo`: a queue in which every notification from the reflector is delivered, in stream
//! order (client-go 1.36's `RealFIFO`, the informers' default).
//!
//! Unlike [`DeltaFifo`](super::DeltaFifo) nothing is merged or reordered: several changes of one
//! object are delivered one by one, deletes are never suppressed (even for keys never seen), and a
//! relist or resync happens at its exact position in the stream.
//!
//! Modes:
//! - *Atomic* (default, client-go's `AtomicFIFO`): a relist is one `ReplacedAll` delta carrying the
//!   whole list and its resourceVersion, a resync is one `SyncAll`, and bookmarks are queued as
//!   `Bookmark` deltas so the store learns its resourceVersion. The queue never reads the store.
//! - *Non-atomic*: a relist is queued as tombstones (`Deleted` with a [`Tombstone`]) for keys that
//!   vanished — first those queued, then those only known to the store — followed by one
//!   `Replaced` per listed object; a resync queues `Sync` for every stored key with nothing queued.
//!   Needs the store as [`KnownObjects`].
//!
//! Invariants: entries leave in the order they entered; in atomic mode the lock is never held
//! while the consumer processes (client-go's `UnlockWhileProcessing`), so the reflector keeps
//! reading the stream; in non-atomic mode the consumer processes under the lock, because relists
//! and resyncs read the store, which must not lag behind a popped entry (client-go allows
//! `UnlockWhileProcessing` only with `AtomicEvents`) and `process` must not call back into the
//! queue; producers wait (back-pressure) only while `capacity` entries are queued; the
//! initial-population count is decremented after the popped entries were processed (and only for
//! entries of the initial population), so `has_synced` implies the consumer has applied the whole
//! initial list. Single consumer.

use std::collections::VecDeque;
use std::sync::Arc;

use foldhash::fast::RandomState;
use std::collections::{HashMap, HashSet};

use super::wait::Waitable;
use super::{FifoClosed, FifoError, KnownObjects, Queue, SyncState, Transform, apply_transform};
use crate::delta::Delta;
use crate::key::ObjectKey;
use crate::object::{DeletedObject, Object, Tombstone};
use crate::signal::Signal;

/// Options of a [`RealFifo`].
pub struct RealFifoOptions<K> {
    /// Name used in logs and the sync signal.
    pub name: String,
    /// Applied once to every object entering the queue.
    pub transform: Option<Transform<K>>,
    /// Atomic relists/resyncs and bookmarks (default true). When false, `known_objects` is
    /// required.
    pub atomic: bool,
    /// The store, for non-atomic relists and resyncs.
    pub known_objects: Option<Arc<dyn KnownObjects<K>>>,
    /// Producers wait while this many entries are queued (default 128; 0 = unbounded). Each queued
    /// entry may hold a version of an object the cache does not hold yet: the bound is also one on
    /// the memory in flight.
    pub capacity: usize,
}

impl<K> Default for RealFifoOptions<K> {
    fn default() -> Self {
        RealFifoOptions {
            name: "RealFifo".to_string(),
            transform: None,
            atomic: true,
            known_objects: None,
            capacity: 128,
        }
    }
}

struct State<K> {
    items: VecDeque<Delta<K>>,
    closed: bool,
    sync: SyncState,
}

/// An in-order queue of deltas. See the module documentation.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use informer::{Delta, Object, RealFifo};
/// use informer::fifo::Queue;
/// use k8s_openapi::api::core::v1::Pod;
/// let q: RealFifo<Pod> = RealFifo::new(Default::default());
/// let pod = Object::<Pod>::from_json(&br#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"3"}}"#[..]).unwrap();
/// q.replace(vec![pod.clone()], "3").await.unwrap();
/// q.update(pod).await.unwrap();
/// let initial = q.pop(1, |batch, initial| { assert!(matches!(batch[0], Delta::ReplacedAll { .. })); initial }).await.unwrap();
/// assert!(initial);
/// assert!(q.has_synced());
/// q.pop(1, |batch, initial| assert!(matches!(batch[0], Delta::Updated(_)) && !initial)).await.unwrap();
/// # });
/// ```
pub struct RealFifo<K> {
    w: Waitable<State<K>>,
    transform: Option<Transform<K>>,
    atomic: bool,
    known: Option<Arc<dyn KnownObjects<K>>>,
    capacity: usize,
    signal: Signal,
    name: String,
}

impl<K: Send + Sync + 'static> RealFifo<K> {
    /// A new queue.
    ///
    /// # Panics
    /// In non-atomic mode without `known_objects` (a programming error, as in client-go).
    pub fn new(opts: RealFifoOptions<K>) -> Self {
        assert!(opts.atomic || opts.known_objects.is_some(), "non-atomic RealFifo needs known_objects");
        let sync = SyncState::new(&format!("{} synced", opts.name));
        let signal = sync.signal.clone();
        RealFifo {
            w: Waitable::new(State { items: VecDeque::new(), closed: false, sync }),
            transform: opts.transform,
            atomic: opts.atomic,
            known: opts.known_objects,
            capacity: opts.capacity,
            signal,
            name: opts.name,
        }
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn full(&self, st: &State<K>) -> bool {
        self.capacity != 0 && st.items.len() >= self.capacity && !st.closed
    }

    fn push_locked(
        &self,
        st: &mut State<K>,
        entries: impl IntoIterator<Item = Delta<K>>,
        populate: bool,
    ) -> Result<(), FifoError> {
        if st.closed {
            return Err(FifoClosed.into());
        }
        if populate {
            st.sync.mark_populated();
        }
        st.items.extend(entries);
        Ok(())
    }

    async fn push(&self, entries: impl IntoIterator<Item = Delta<K>> + Send, populate: bool) -> Result<(), FifoError> {
        let mut st = self.w.wait_until(|st| !self.full(st)).await;
        self.push_locked(&mut st, entries, populate)?;
        st.sync.check();
        drop(st);
        self.w.wake();
        Ok(())
    }

    fn push_blocking(&self, entries: impl IntoIterator<Item = Delta<K>>, populate: bool) -> Result<(), FifoError> {
        let mut st = self.w.wait_until_blocking(|st| !self.full(st));
        self.push_locked(&mut st, entries, populate)?;
        st.sync.check();
        drop(st);
        self.w.wake();
        Ok(())
    }

    fn prepare_replace(&self, objects: Vec<Object<K>>, rv: &str) -> Result<Vec<Delta<K>>, FifoError> {
        let objects =
            objects.into_iter().map(|o| apply_transform(&self.transform, o)).collect::<Result<Vec<_>, _>>()?;
        if self.atomic {
            return Ok(vec![Delta::ReplacedAll { objects, resource_version: rv.to_string() }]);
        }
        // Non-atomic: tombstones are added under the lock (they depend on what is queued).
        Ok(objects.into_iter().map(Delta::Replaced).collect())
    }

    /// Non-atomic relist: deletions for vanished keys (queued first, then known), then Replaced.
    fn replace_non_atomic_locked(&self, st: &mut State<K>, replaced: Vec<Delta<K>>) {
        let listed: HashSet<&str, RandomState> = replaced.iter().filter_map(|d| d.key()).map(|k| k.as_str()).collect();
        let mut last_queued: HashMap<ObjectKey, usize, RandomState> = HashMap::default();
        let mut order: Vec<ObjectKey> = Vec::new();
        for (i, d) in st.items.iter().enumerate() {
            if let Some(k) = d.key()
                && last_queued.insert(k.clone(), i).is_none()
            {
                order.push(k.clone());
            }
        }
        let mut deletions = Vec::new();
        for k in &order {
            if listed.contains(k.as_str()) {
                continue;
            }
            let last = &st.items[last_queued[k]];
            if let Delta::Deleted(_) = last {
                continue;
            }
            let last_known = last.object().cloned();
            deletions.push(Delta::Deleted(DeletedObject::FinalStateUnknown(Tombstone { key: k.clone(), last_known })));
        }
        if let Some(known) = &self.known {
            let mut keys = known.list_keys();
            keys.sort_unstable();
            for k in keys {
                if listed.contains(k.as_str()) || last_queued.contains_key(&k) {
                    continue;
                }
                let last_known = known.get_by_key(k.as_str());
                deletions.push(Delta::Deleted(DeletedObject::FinalStateUnknown(Tombstone { key: k, last_known })));
            }
        }
        st.items.extend(deletions);
        st.items.extend(replaced);
    }

    fn resync_entries_locked(&self, st: &State<K>) -> Vec<Delta<K>> {
        if self.atomic {
            return vec![Delta::SyncAll];
        }
        let Some(known) = &self.known else {
            return Vec::new();
        };
        let queued: HashSet<&str, RandomState> = st.items.iter().filter_map(|d| d.key()).map(|k| k.as_str()).collect();
        let mut keys = known.list_keys();
        keys.sort_unstable();
        keys.into_iter()
            .filter(|k| !queued.contains(k.as_str()))
            .filter_map(|k| known.get_by_key(k.as_str()))
            .map(Delta::Sync)
            .collect()
    }

    /// Pops up to `max` deltas (see [`Queue::pop`]); waits for one.
    async fn pop_impl<R>(&self, max: usize, process: impl FnOnce(Vec<Delta<K>>, bool) -> R) -> Result<R, FifoClosed> {
        let mut st = self.w.wait_until(|st| !st.items.is_empty() || st.closed).await;
        self.finish_pop(&mut st, max, process)
    }

    fn finish_pop<R>(
        &self,
        st: &mut parking_lot::MutexGuard<'_, State<K>>,
        max: usize,
        process: impl FnOnce(Vec<Delta<K>>, bool) -> R,
    ) -> Result<R, FifoClosed> {
        if st.items.is_empty() {
            return Err(FifoClosed);
        }
        let initial = !st.sync.has_synced();
        let limit = if initial { st.sync.initial_remaining } else { 0 };
        let batch = take_batch(&mut st.items, max.max(1), limit);
        // Only entries of the initial population count down. Entries popped before the first
        // replace (bookmarks, resyncs) are not part of it, even if that replace arrives while
        // they are being processed.
        let counted = if st.sync.populated { batch.len().min(st.sync.initial_remaining) } else { 0 };
        self.w.wake(); // room for producers
        let r = if self.atomic {
            parking_lot::MutexGuard::unlocked(st, || process(batch, initial))
        } else {
            // Non-atomic relists and resyncs read the store, which must not lag behind a popped
            // entry: process under the lock (client-go: UnlockWhileProcessing needs AtomicEvents).
            process(batch, initial)
        };
        if initial {
            st.sync.processed(counted);
        }
        Ok(r)
    }

    /// Blocking `pop` for consumer threads.
    pub fn pop_blocking<R>(&self, max: usize, process: impl FnOnce(Vec<Delta<K>>, bool) -> R) -> Result<R, FifoClosed> {
        let mut st = self.w.wait_until_blocking(|st| !st.items.is_empty() || st.closed);
        self.finish_pop(&mut st, max, process)
    }

    /// Blocking `add` for producer threads.
    pub fn add_blocking(&self, obj: Object<K>) -> Result<(), FifoError> {
        let o = apply_transform(&self.transform, obj)?;
        self.push_blocking([Delta::Added(o)], true)
    }

    /// Blocking `update` for producer threads.
    pub fn update_blocking(&self, obj: Object<K>) -> Result<(), FifoError> {
        let o = apply_transform(&self.transform, obj)?;
        self.push_blocking([Delta::Updated(o)], true)
    }

    /// Blocking `delete` for producer threads.
    pub fn delete_blocking(&self, obj: Object<K>) -> Result<(), FifoError> {
        let o = apply_transform(&self.transform, obj)?;
        self.push_blocking([Delta::Deleted(DeletedObject::Object(o))], true)
    }

    /// Blocking `replace` for producer threads.
    pub fn replace_blocking(&self, objects: Vec<Object<K>>, rv: &str) -> Result<(), FifoError> {
        let entries = self.prepare_replace(objects, rv)?;
        let mut st = self.w.wait_until_blocking(|st| !self.full(st));
        self.replace_locked(&mut st, entries)?;
        drop(st);
        self.w.wake();
        Ok(())
    }

    fn replace_locked(&self, st: &mut State<K>, entries: Vec<Delta<K>>) -> Result<(), FifoError> {
        if st.closed {
            return Err(FifoClosed.into());
        }
        if self.atomic {
            st.items.extend(entries);
        } else {
            self.replace_non_atomic_locked(st, entries);
        }
        let n = st.items.len();
        st.sync.first_replace(n);
        st.sync.check();
        Ok(())
    }

    /// Deltas currently queued (for tests and debugging).
    pub fn snapshot(&self) -> Vec<Delta<K>> {
        self.w.lock().items.iter().cloned().collect()
    }
}

/// Takes the next batch: a non-batchable head alone; otherwise up to `max` batchable deltas with
/// distinct keys, not crossing the initial-list boundary (`limit`, 0 = none).
fn take_batch<K>(items: &mut VecDeque<Delta<K>>, max: usize, limit: usize) -> Vec<Delta<K>> {
    let first = items.pop_front().expect("non-empty");
    if max == 1 || !first.is_batchable() {
        return vec![first];
    }
    let max = if limit > 0 { max.min(limit) } else { max };
    let mut batch = vec![first];
    let mut seen: HashSet<ObjectKey, RandomState> = HashSet::default();
    seen.insert(batch[0].key().cloned().expect("batchable"));
    while batch.len() < max {
        match items.front() {
            Some(d) if d.is_batchable() => {
                let k = d.key().expect("batchable");
                if seen.contains(k) {
                    break;
                }
                seen.insert(k.clone());
                batch.push(items.pop_front().expect("front exists"));
            }
            _ => break,
        }
    }
    batch
}

impl<K: Send + Sync + 'static> Queue<K> for RealFifo<K> {
    fn transform(&self) -> Option<Transform<K>> {
        self.transform.clone()
    }
    async fn add(&self, obj: Object<K>) -> Result<(), FifoError> {
        let o = apply_transform(&self.transform, obj)?;
        self.push([Delta::Added(o)], true).await
    }

    async fn update(&self, obj: Object<K>) -> Result<(), FifoError> {
        let o = apply_transform(&self.transform, obj)?;
        self.push([Delta::Updated(o)], true).await
    }

    async fn delete(&self, obj: Object<K>) -> Result<(), FifoError> {
        let o = apply_transform(&self.transform, obj)?;
        self.push([Delta::Deleted(DeletedObject::Object(o))], true).await
    }

    async fn replace(&self, objects: Vec<Object<K>>, resource_version: &str) -> Result<(), FifoError> {
        let entries = self.prepare_replace(objects, resource_version)?;
        let mut st = self.w.wait_until(|st| !self.full(st)).await;
        self.replace_locked(&mut st, entries)?;
        drop(st);
        self.w.wake();
        Ok(())
    }

    async fn resync(&self) -> Result<(), FifoError> {
        let mut st = self.w.wait_until(|st| !self.full(st)).await;
        if st.closed {
            return Err(FifoClosed.into());
        }
        let entries = self.resync_entries_locked(&st);
        st.items.extend(entries);
        drop(st);
        self.w.wake();
        Ok(())
    }

    async fn bookmark(&self, resource_version: &str) -> Result<(), FifoError> {
        if !self.atomic {
            return Ok(()); // non-atomic stores never learn bookmarks (client-go)
        }
        self.push([Delta::Bookmark { resource_version: resource_version.to_string() }], false).await
    }

    async fn pop<R, F>(&self, max: usize, process: F) -> Result<R, FifoClosed>
    where
        F: FnOnce(Vec<Delta<K>>, bool) -> R + Send,
        R: Send,
    {
        self.pop_impl(max, process).await
    }

    fn has_synced(&self) -> bool {
        self.signal.is_set()
    }

    fn synced_signal(&self) -> Signal {
        self.signal.clone()
    }

    fn close(&self) {
        self.w.lock().closed = true;
        self.w.wake();
    }

    fn len(&self) -> usize {
        self.w.lock().items.len()
    }
}
