//! The consuming side of a listener: turns its buffer into the sequence of notifications a
//! handler sees, expanding `Bounded` overflow resyncs against what the handler has seen.
//!
//! A batch shared with other listeners is delivered from in place: a handler consumer passes its
//! notifications by reference, only a stream clones them out.
//!
//! A resync lists the cache's keys and versions when it is taken (under the informer's delta
//! barrier) and reads each object only when the handler gets near it, a chunk at a time: a slow
//! handler working through a resync holds no versions the cache has since replaced. An object
//! whose version changed since the resync was taken is skipped: the change was pushed after the
//! listing, so it reaches the handler through its own notification or the next resync, and no
//! state is delivered after a newer one. (A version is the resourceVersion, or for an object
//! without one a hash of its JSON.)
//!
//! Invariants: one consumer per listener; items come out in buffer order; an expanded resync
//! yields deletes (tombstones) for seen keys that vanished, then the current objects of its keys
//! not changed since as updates of seen keys or adds of new ones; for `Bounded` listeners every item is checked
//! against the seen set so the handler's view stays consistent (no add of a key it has, no
//! update or delete of a key it lacks); initial-add credits are released exactly once, whether
//! the item is delivered or dropped.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use foldhash::fast::RandomState;
use tokio::time::Instant;

use super::listener::{BacklogPolicy, Entry, Item, Listener, Pending};
use super::notification::Notification;
use crate::handler::ResourceEventHandler;
use crate::key::ObjectKey;
use crate::object::{DeletedObject, Object, Tombstone};

/// A backlog buffer that grew beyond this many entries is shrunk once it is empty again.
const SHRINK_ABOVE: usize = 1024;

/// Objects of a resync read from the cache at a time.
pub(super) const RESYNC_CHUNK: usize = 64;

/// Consumer-side state: a shared batch or a resync being delivered and, for `Bounded`, what the
/// handler has seen.
pub(crate) struct Consumer<K> {
    batch: Option<InHand<K>>,
    expanded: VecDeque<Notification<K>>,
    /// Keys of the resync in progress whose objects are still to be read from the cache, with
    /// the version each had when the resync was taken.
    resync_keys: VecDeque<(ObjectKey, u64)>,
    /// Whether the resync in progress delivers adds as initial ones.
    resync_initial: bool,
    expanded_credit: usize,
    seen: Option<HashMap<ObjectKey, Object<K>, RandomState>>,
}

/// A shared batch being delivered.
struct InHand<K> {
    batch: Arc<Vec<Notification<K>>>,
    /// The next notification to deliver.
    pos: usize,
    /// When the batch was queued.
    at: Instant,
    /// Notifications pending behind the batch when it was taken.
    behind: usize,
}

impl<K> InHand<K> {
    /// The batch's next notification as an item by reference (its initial-add credit, when the
    /// batch was queued, the backlog behind it), recording the progress on the listener (the rest
    /// of the batch still counts as pending); `None`, with nothing left in hand, at the end of the
    /// batch or once the listener is closed.
    fn advance(&mut self, l: &Listener<K>) -> Option<(&Notification<K>, usize, Instant, usize)> {
        let next = if l.removed.load(Ordering::Acquire) { None } else { self.batch.get(self.pos) };
        let Some(n) = next else {
            l.in_hand.store(0, Ordering::Relaxed);
            return None;
        };
        self.pos += 1;
        let left = self.batch.len() - self.pos;
        l.in_hand.store(left, Ordering::Relaxed);
        l.taken(left + self.behind);
        if let Some(m) = &l.metrics {
            m.backlog.set((left + self.behind) as i64);
        }
        Some((n, usize::from(n.is_initial_add()), self.at, left + self.behind))
    }
}

/// What one step of a consumer produced.
enum Step<K> {
    Item(Item<K>),
    /// A shared batch is now in hand.
    Batch,
    Closed,
}

impl<K: Send + Sync + 'static> Consumer<K> {
    pub fn new(policy: BacklogPolicy) -> Self {
        Consumer {
            batch: None,
            expanded: VecDeque::new(),
            resync_keys: VecDeque::new(),
            resync_initial: false,
            expanded_credit: 0,
            seen: matches!(policy, BacklogPolicy::Bounded(_)).then(HashMap::default),
        }
    }

    pub fn for_listener(l: &Listener<K>) -> Self {
        Self::new(l.policy)
    }

    /// The next item (cloned out of a shared batch), or `None` once the listener is closed.
    pub async fn next(&mut self, l: &Listener<K>) -> Option<Item<K>> {
        loop {
            if let Some(h) = &mut self.batch {
                if let Some((n, credit, at, backlog)) = h.advance(l) {
                    return Some(Item { n: n.clone(), credit, enqueued: Some(at), backlog });
                }
                self.batch = None;
            }
            match self.step(l).await {
                Step::Item(item) => return Some(item),
                Step::Batch => {}
                Step::Closed => return None,
            }
        }
    }

    /// Delivers the shared batch in hand, if any, by reference.
    fn deliver_batch(&mut self, l: &Listener<K>, handler: &dyn ResourceEventHandler<K>) {
        let Some(mut h) = self.batch.take() else { return };
        while let Some((n, credit, at, backlog)) = h.advance(l) {
            l.deliver_ref(handler, n, credit, Some(at), backlog);
        }
    }

    /// Takes the next item or batch from the buffer (waiting for one), or expands a resync.
    async fn step(&mut self, l: &Listener<K>) -> Step<K> {
        loop {
            if self.expanded.is_empty() && !self.resync_keys.is_empty() {
                if l.removed.load(Ordering::Acquire) {
                    return Step::Closed;
                }
                self.read_resync_chunk(l);
                if self.expansion_done() {
                    l.finish_initial(std::mem::take(&mut self.expanded_credit));
                }
                continue;
            }
            if let Some(n) = self.expanded.pop_front() {
                if l.removed.load(Ordering::Acquire) {
                    return Step::Closed;
                }
                let credit = if self.expansion_done() { std::mem::take(&mut self.expanded_credit) } else { 0 };
                let backlog = self.expanded.len() + self.resync_keys.len();
                match self.seen(Item { n, credit, enqueued: None, backlog }) {
                    Some(item) => return Step::Item(item),
                    None => {
                        l.finish_initial(credit);
                        continue;
                    }
                }
            }
            // A pending resync reads the cache under the informer's delta barrier (see
            // `Entry::Resync`), taken before the buffer lock as the producers do. Only this consumer
            // pops, so the resync is still first once the barrier is held (unless the listener was
            // closed meanwhile).
            let (popped, backlog, keys) = match pop_front(l, false) {
                Pop::Closed => return Step::Closed,
                Pop::Got(p, backlog) => (p, backlog, Vec::new()),
                Pop::NeedBarrier => {
                    let _barrier = lock_barrier(&l.cache.barrier).await;
                    match pop_front(l, true) {
                        Pop::Got(p, backlog) => {
                            // Listed with the buffer unlocked (backlog queries and `close` do not
                            // wait for it).
                            let resync = matches!(p, Some(Pending { entry: Entry::Resync { .. }, .. }));
                            let mut keys = Vec::new();
                            if resync {
                                keys.reserve(l.cache.indexer.len());
                                l.cache.indexer.for_each(|o| keys.push((o.key().clone(), version(o))));
                            }
                            (p, backlog, keys)
                        }
                        // (`NeedBarrier` cannot come back with the barrier held.)
                        Pop::Closed | Pop::NeedBarrier => return Step::Closed,
                    }
                }
            };
            if let Some(p) = &popped
                && !matches!(p.entry, Entry::Batch(_))
            {
                // (A batch's notifications are counted as they are delivered.)
                l.taken(backlog);
            }
            let Some(p) = popped else {
                l.wake.notified().await;
                continue;
            };
            match p.entry {
                Entry::One(n) => {
                    let credit = usize::from(n.is_initial_add());
                    match self.seen(Item { n, credit, enqueued: Some(p.at), backlog }) {
                        Some(item) => return Step::Item(item),
                        None => l.finish_initial(credit),
                    }
                }
                Entry::Batch(batch) => {
                    debug_assert!(self.seen.is_none(), "Bounded listeners get no shared batches");
                    self.batch = Some(InHand { batch, pos: 0, at: p.at, behind: backlog });
                    return Step::Batch;
                }
                Entry::Resync { credit } => {
                    self.expand(keys, credit);
                    if self.expansion_done() {
                        l.finish_initial(std::mem::take(&mut self.expanded_credit));
                    }
                }
            }
        }
    }

    /// Whether no item of a resync is left to read or deliver.
    fn expansion_done(&self) -> bool {
        self.expanded.is_empty() && self.resync_keys.is_empty()
    }

    /// Starts a resync over the cache's `keys` and versions (listed under the barrier):
    /// tombstones for the seen keys not among them now, the objects as the handler gets to them.
    fn expand(&mut self, keys: Vec<(ObjectKey, u64)>, credit: usize) {
        let seen = self.seen.get_or_insert_with(HashMap::default);
        let present: HashSet<&ObjectKey, RandomState> = keys.iter().map(|(k, _)| k).collect();
        for (k, old) in seen.iter() {
            if !present.contains(k) {
                self.expanded.push_back(Notification::Delete(DeletedObject::FinalStateUnknown(Tombstone {
                    key: k.clone(),
                    last_known: Some(old.clone()),
                })));
            }
        }
        drop(present);
        self.resync_keys = keys.into();
        self.resync_initial = credit > 0;
        self.expanded_credit += credit;
    }

    /// Reads the objects of the resync's next keys from the cache (under one read lock). While
    /// the backlog behind the resync is still queued, an object still at the version the resync
    /// listed is delivered (the state the resync was taken at) and one that changed or went is
    /// skipped: its change was queued after the listing, or left to the next resync. Once the
    /// backlog has overflowed again (only a pending resync is queued), every later change is left
    /// to that resync and nothing queued follows: the current state of every key is delivered.
    /// Either way nothing older than a state still to come is delivered, and every key is.
    fn read_resync_chunk(&mut self, l: &Listener<K>) {
        let n = self.resync_keys.len().min(RESYNC_CHUNK);
        let chunk: Vec<(ObjectKey, u64)> = self.resync_keys.drain(..n).collect();
        let absorbing = {
            let b = l.buf.lock();
            b.items.len() == 1 && matches!(b.items.front(), Some(Pending { entry: Entry::Resync { .. }, .. }))
        };
        let seen = self.seen.get_or_insert_with(HashMap::default);
        let (expanded, initial) = (&mut self.expanded, self.resync_initial);
        let mut listed = chunk.iter().map(|(_, v)| *v);
        l.cache.indexer.get_each(chunk.iter().map(|(k, _)| k.as_str()), |k, o| {
            let listed = listed.next();
            let Some(o) = o.filter(|o| absorbing || Some(version(o)) == listed) else { return };
            expanded.push_back(match seen.get(k) {
                Some(old) => Notification::Update { old: old.clone(), new: o.clone() },
                None => Notification::Add { obj: o.clone(), is_in_initial_list: initial },
            });
        });
    }

    /// For `Bounded` listeners: keeps the handler's view consistent across cache resyncs and
    /// records what it has seen. Notifications already covered by a resync (an add of a key the
    /// handler has, with the very object it has; a delete of a key it does not have) are dropped;
    /// an add of a seen key becomes an update and an update of an unseen key an add.
    fn seen(&mut self, mut item: Item<K>) -> Option<Item<K>> {
        let Some(seen) = &mut self.seen else {
            return Some(item);
        };
        match item.n {
            Notification::Add { obj, is_in_initial_list } => match seen.insert(obj.key().clone(), obj.clone()) {
                Some(old) if old.ptr_eq(&obj) => return None,
                Some(old) => item.n = Notification::Update { old, new: obj },
                None => item.n = Notification::Add { obj, is_in_initial_list },
            },
            Notification::Update { old, new } => match seen.insert(new.key().clone(), new.clone()) {
                Some(prev) if prev.ptr_eq(&new) && !prev.ptr_eq(&old) => return None,
                Some(prev) => item.n = Notification::Update { old: prev, new },
                None => item.n = Notification::Add { obj: new, is_in_initial_list: false },
            },
            Notification::Delete(d) => {
                seen.remove(d.key())?;
                item.n = Notification::Delete(d);
            }
        }
        Some(item)
    }
}

/// What [`pop_front`] found.
enum Pop<K> {
    /// A resync is first and the caller does not hold the barrier yet.
    NeedBarrier,
    Closed,
    /// The first entry (if any) and the notifications still queued behind it.
    Got(Option<Pending<K>>, usize),
}

/// Takes the first entry of the listener's buffer, under one lock. A resync is only taken by a
/// caller holding the delta barrier (see `Entry::Resync`); only the consumer pops, so once the
/// barrier is held the resync is still first (unless the listener was closed meanwhile).
fn pop_front<K>(l: &Listener<K>, have_barrier: bool) -> Pop<K> {
    let mut b = l.buf.lock();
    if !have_barrier && matches!(b.items.front(), Some(Pending { entry: Entry::Resync { .. }, .. })) {
        return Pop::NeedBarrier;
    }
    let p = b.items.pop_front();
    if let Some(p) = &p {
        b.count -= p.entry.len();
        if let Entry::Batch(batch) = &p.entry {
            // Counted as pending until delivered, one by one.
            l.in_hand.store(batch.len(), Ordering::Relaxed);
            b.in_hand_at = Some(p.at);
        }
    }
    if b.items.is_empty() && b.items.capacity() > SHRINK_ABOVE {
        // A burst (the initial list, a relist) is over: give its buffer back.
        b.items.shrink_to(SHRINK_ABOVE / 4);
    }
    if let Some(m) = &l.metrics {
        m.backlog.set(l.pending(&b) as i64);
    }
    if p.is_none() && b.closed {
        return Pop::Closed;
    }
    Pop::Got(p, b.count)
}

/// Takes the informer's delta barrier without blocking the runtime: the process loop holds it
/// for one batch at most (on a current-thread runtime it is never held while a task runs).
async fn lock_barrier(m: &parking_lot::Mutex<()>) -> parking_lot::MutexGuard<'_, ()> {
    loop {
        if let Some(g) = m.try_lock() {
            return g;
        }
        tokio::task::yield_now().await;
    }
}

/// An object's version for resyncs: its resourceVersion, or for an object without one its JSON
/// (hashed; equal JSON is the same state).
fn version<K>(o: &Object<K>) -> u64 {
    let hasher = foldhash::fast::FixedState::default();
    match o.resource_version() {
        Some(rv) => hasher.hash_one(rv),
        None => hasher.hash_one(&*o.raw_json()),
    }
}

/// Runs a handler's consumer loop until the listener is closed.
pub(crate) async fn run_handler<K: Send + Sync + 'static>(
    l: Arc<Listener<K>>,
    handler: Arc<dyn ResourceEventHandler<K>>,
) {
    let mut c = Consumer::for_listener(&l);
    loop {
        match c.step(&l).await {
            Step::Item(item) => l.deliver(&*handler, item),
            Step::Batch => c.deliver_batch(&l, &*handler),
            Step::Closed => break,
        }
    }
    l.finished.set();
}
