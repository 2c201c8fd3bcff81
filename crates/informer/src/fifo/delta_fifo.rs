//! `DeltaFifo`: a producer/consumer queue of per-key delta lists (client-go's `DeltaFIFO`, the
//! queue of its classic informer pipeline).
//!
//! Each key has a list of [`Delta`]s, oldest first; keys are popped in FIFO order and a key that
//! is already queued keeps its place when more deltas arrive for it (no line-jumping). Popping a
//! key hands its whole delta list to the consumer. Compared with [`RealFifo`](super::RealFifo),
//! changes of one object are grouped and objects are reordered across keys.
//!
//! Semantics (client-go 1.36):
//! - `delete` is ignored for a key that is neither queued nor (when `known_objects` is set) in
//!   the store.
//! - Two trailing `Deleted` deltas are merged into one, keeping the older unless the older is a
//!   tombstone.
//! - `replace` queues `Sync` (or `Replaced` with `emit_replaced`) for every listed object, then a
//!   tombstone (`Deleted` of a [`Tombstone`]) for every queued key missing from the list (carrying
//!   its newest queued object), then for every stored key missing from the list with nothing
//!   queued (carrying the stored object). The first `replace` (before any other write) sets the
//!   initial population to the listed keys plus those tombstones.
//! - `resync` queues `Sync` of the stored object for every stored key with nothing queued (a
//!   pending delta is newer than the store; resyncing it would go back in time); a no-op without
//!   `known_objects`.
//! - The transform runs once per incoming object (never on tombstones, `Sync`, or an ignored
//!   delete); a streaming list's objects have had it applied once more by the reflector.
//! - The consumer processes under the queue's lock, so a resync can never read a store that is
//!   behind a popped-but-unapplied delta. `process` must not call back into the queue.
//! - Difference from client-go: the initial-population count drops *after* the popped key was
//!   processed, so `has_synced` implies the whole initial list is in the store.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use foldhash::fast::RandomState;

use super::wait::Waitable;
use super::{FifoClosed, FifoError, KnownObjects, Queue, SyncState, Transform, apply_transform};
use crate::delta::Delta;
use crate::key::ObjectKey;
use crate::object::{DeletedObject, Object, Tombstone};
use crate::signal::Signal;

/// Options of a [`DeltaFifo`].
pub struct DeltaFifoOptions<K> {
    /// Name used in logs and the sync signal.
    pub name: String,
    /// The store, used by `delete`, `replace` and `resync`.
    pub known_objects: Option<Arc<dyn KnownObjects<K>>>,
    /// Queue `Replaced` instead of `Sync` for relisted objects.
    pub emit_replaced: bool,
    /// Applied once to every incoming object.
    pub transform: Option<Transform<K>>,
}

impl<K> Default for DeltaFifoOptions<K> {
    fn default() -> Self {
        DeltaFifoOptions { name: "DeltaFifo".to_string(), known_objects: None, emit_replaced: false, transform: None }
    }
}

struct State<K> {
    items: HashMap<ObjectKey, Vec<Delta<K>>, RandomState>,
    queue: VecDeque<ObjectKey>,
    closed: bool,
    sync: SyncState,
}

/// A queue of per-key delta lists. See the module documentation.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use informer::{DeltaFifo, DeltaType, Object};
/// use informer::fifo::Queue;
/// use k8s_openapi::api::core::v1::Pod;
/// let q: DeltaFifo<Pod> = DeltaFifo::new(Default::default());
/// let p = |rv: &str| Object::<Pod>::from_json(format!(r#"{{"metadata":{{"name":"a","resourceVersion":"{rv}"}}}}"#)).unwrap();
/// q.add(p("1")).await.unwrap();
/// q.update(p("2")).await.unwrap();
/// let types = q.pop(1, |deltas, _| deltas.iter().map(|d| d.delta_type()).collect::<Vec<_>>()).await.unwrap();
/// assert_eq!(types, [DeltaType::Added, DeltaType::Updated]);
/// # });
/// ```
pub struct DeltaFifo<K> {
    w: Waitable<State<K>>,
    known: Option<Arc<dyn KnownObjects<K>>>,
    emit_replaced: bool,
    transform: Option<Transform<K>>,
    signal: Signal,
}

impl<K: Send + Sync + 'static> DeltaFifo<K> {
    /// A new, empty queue.
    pub fn new(opts: DeltaFifoOptions<K>) -> Self {
        let sync = SyncState::new(&format!("{} synced", opts.name));
        let signal = sync.signal.clone();
        DeltaFifo {
            w: Waitable::new(State { items: HashMap::default(), queue: VecDeque::new(), closed: false, sync }),
            known: opts.known_objects,
            emit_replaced: opts.emit_replaced,
            transform: opts.transform,
            signal,
        }
    }

    /// Appends a delta to its key's list (deduplicating trailing deletes) and queues the key if
    /// it is new. The object is already transformed.
    fn queue_locked(st: &mut State<K>, delta: Delta<K>) {
        let key = delta.key().expect("single-key delta").clone();
        let list = match st.items.get_mut(&key) {
            Some(l) => l,
            None => {
                st.queue.push_back(key.clone());
                st.items.entry(key).or_default()
            }
        };
        list.push(delta);
        dedup_trailing_deletes(list);
    }

    fn write_sync(&self, delta: Delta<K>) -> Result<(), FifoError> {
        let mut st = self.w.lock();
        if st.closed {
            return Err(FifoClosed.into());
        }
        st.sync.mark_populated();
        if matches!(delta, Delta::Deleted(_)) && self.ignores_delete(&st, delta.key().expect("single-key delta")) {
            st.sync.check();
            return Ok(());
        }
        Self::queue_locked(&mut st, delta);
        st.sync.check();
        drop(st);
        self.w.wake();
        Ok(())
    }

    /// client-go's Delete rule: a delete is dropped when its key is neither queued nor (with known
    /// objects) stored.
    fn ignores_delete(&self, st: &State<K>, key: &ObjectKey) -> bool {
        !st.items.contains_key(key) && self.known.as_ref().is_none_or(|k| k.get_by_key(key.as_str()).is_none())
    }

    /// Synchronous `add` (a DeltaFifo never blocks producers).
    pub fn add_now(&self, obj: Object<K>) -> Result<(), FifoError> {
        let o = apply_transform(&self.transform, obj)?;
        self.write_sync(Delta::Added(o))
    }

    /// Synchronous `update`.
    pub fn update_now(&self, obj: Object<K>) -> Result<(), FifoError> {
        let o = apply_transform(&self.transform, obj)?;
        self.write_sync(Delta::Updated(o))
    }

    /// Synchronous `delete`.
    pub fn delete_now(&self, obj: Object<K>) -> Result<(), FifoError> {
        {
            // An ignored delete is dropped before the transform runs (as in client-go).
            let mut st = self.w.lock();
            if !st.closed && self.ignores_delete(&st, obj.key()) {
                st.sync.mark_populated();
                st.sync.check();
                return Ok(());
            }
        }
        let o = apply_transform(&self.transform, obj)?;
        self.write_sync(Delta::Deleted(DeletedObject::Object(o)))
    }

    /// Synchronous `replace`.
    pub fn replace_now(&self, objects: Vec<Object<K>>, _resource_version: &str) -> Result<(), FifoError> {
        let objects =
            objects.into_iter().map(|o| apply_transform(&self.transform, o)).collect::<Result<Vec<_>, _>>()?;
        let mut st = self.w.lock();
        if st.closed {
            return Err(FifoClosed.into());
        }
        let mut listed: HashSet<ObjectKey, RandomState> = HashSet::default();
        for o in objects {
            listed.insert(o.key().clone());
            let d = if self.emit_replaced { Delta::Replaced(o) } else { Delta::Sync(o) };
            Self::queue_locked(&mut st, d);
        }
        let mut deletions = 0;
        // Vanished keys that are queued: tombstone with the newest queued state.
        let queued: Vec<ObjectKey> = st.queue.iter().filter(|k| !listed.contains(*k)).cloned().collect();
        for k in queued {
            let last_known = st.items.get(&k).and_then(|l| l.last()).and_then(|d| d.object().cloned());
            deletions += 1;
            Self::queue_locked(
                &mut st,
                Delta::Deleted(DeletedObject::FinalStateUnknown(Tombstone { key: k, last_known })),
            );
        }
        // Vanished keys only the store knows.
        if let Some(known) = &self.known {
            let mut keys = known.list_keys();
            keys.sort_unstable();
            for k in keys {
                if listed.contains(&k) || st.items.get(&k).is_some_and(|l| !l.is_empty()) {
                    continue;
                }
                let last_known = known.get_by_key(k.as_str());
                if last_known.is_none() {
                    tracing::debug!(key = %k, "key vanished from the store during replace; tombstone without object");
                }
                deletions += 1;
                Self::queue_locked(
                    &mut st,
                    Delta::Deleted(DeletedObject::FinalStateUnknown(Tombstone { key: k, last_known })),
                );
            }
        }
        let count = listed.len() + deletions;
        st.sync.first_replace(count);
        st.sync.check();
        drop(st);
        self.w.wake();
        Ok(())
    }

    /// Synchronous `resync`.
    pub fn resync_now(&self) -> Result<(), FifoError> {
        let Some(known) = &self.known else {
            return Ok(());
        };
        let mut st = self.w.lock();
        if st.closed {
            return Err(FifoClosed.into());
        }
        let mut keys = known.list_keys();
        keys.sort_unstable();
        let mut any = false;
        for k in keys {
            if st.items.get(&k).is_some_and(|l| !l.is_empty()) {
                continue; // a pending delta is newer than the store
            }
            if let Some(obj) = known.get_by_key(k.as_str()) {
                Self::queue_locked(&mut st, Delta::Sync(obj));
                any = true;
            }
        }
        drop(st);
        if any {
            self.w.wake();
        }
        Ok(())
    }

    fn pop_locked<R>(
        &self,
        st: &mut State<K>,
        process: impl FnOnce(Vec<Delta<K>>, bool) -> R,
    ) -> Result<R, FifoClosed> {
        let Some(key) = st.queue.pop_front() else {
            return Err(FifoClosed);
        };
        let initial = !st.sync.has_synced();
        let deltas = st.items.remove(&key).unwrap_or_default();
        // Processed under the lock: see the module documentation.
        let r = process(deltas, initial);
        if initial {
            st.sync.processed(1);
        }
        Ok(r)
    }

    /// Blocking `pop` for consumer threads.
    pub fn pop_blocking<R>(&self, process: impl FnOnce(Vec<Delta<K>>, bool) -> R) -> Result<R, FifoClosed> {
        let mut st = self.w.wait_until_blocking(|st| !st.queue.is_empty() || st.closed);
        self.pop_locked(&mut st, process)
    }

    /// The queued keys with their delta lists, in queue order (for tests and debugging).
    pub fn snapshot(&self) -> Vec<(ObjectKey, Vec<Delta<K>>)> {
        let st = self.w.lock();
        st.queue.iter().map(|k| (k.clone(), st.items.get(k).cloned().unwrap_or_default())).collect()
    }
}

/// client-go's `dedupDeltas`: merge two trailing deletes.
fn dedup_trailing_deletes<K>(list: &mut Vec<Delta<K>>) {
    let n = list.len();
    if n < 2 {
        return;
    }
    let (Delta::Deleted(older), Delta::Deleted(_)) = (&list[n - 2], &list[n - 1]) else {
        return;
    };
    if older.is_final_state_unknown() {
        list.remove(n - 2); // keep the newer, real delete
    } else {
        list.pop(); // keep the older
    }
}

impl<K: Send + Sync + 'static> Queue<K> for DeltaFifo<K> {
    fn transform(&self) -> Option<Transform<K>> {
        self.transform.clone()
    }
    async fn add(&self, obj: Object<K>) -> Result<(), FifoError> {
        self.add_now(obj)
    }
    async fn update(&self, obj: Object<K>) -> Result<(), FifoError> {
        self.update_now(obj)
    }
    async fn delete(&self, obj: Object<K>) -> Result<(), FifoError> {
        self.delete_now(obj)
    }
    async fn replace(&self, objects: Vec<Object<K>>, resource_version: &str) -> Result<(), FifoError> {
        self.replace_now(objects, resource_version)
    }
    async fn resync(&self) -> Result<(), FifoError> {
        self.resync_now()
    }
    async fn bookmark(&self, _resource_version: &str) -> Result<(), FifoError> {
        Ok(()) // DeltaFifo does not carry bookmarks (client-go)
    }
    async fn pop<R, F>(&self, _max: usize, process: F) -> Result<R, FifoClosed>
    where
        F: FnOnce(Vec<Delta<K>>, bool) -> R + Send,
        R: Send,
    {
        let mut st = self.w.wait_until(|st| !st.queue.is_empty() || st.closed).await;
        self.pop_locked(&mut st, process)
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
        self.w.lock().queue.len()
    }
}
