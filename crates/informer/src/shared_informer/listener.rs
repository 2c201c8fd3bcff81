//! One handler's delivery lane (client-go's `processorListener`): its buffer of pending
//! notifications, its sync tracking and resync schedule (the [`Listener`], shared by the
//! processor, which pushes, and the consumer), and the consumer that turns the buffer into the
//! calls its handler sees ([`Consumer`], a state machine driven by [`Consumer::step`]).
//!
//! The consumer's states:
//! - `Next`: take the buffer's first entry. A single notification is delivered; a shared batch
//!   moves to `Batch`; a resync left by a `Bounded` overflow is taken under the informer's delta
//!   barrier (step again holding it: [`Step::Barrier`]) and moves to `Resync`; an empty buffer
//!   waits for a push ([`Step::Idle`]).
//! - `Batch`: deliver a batch the process loop shared with every listener, in place (a handler
//!   gets each notification by reference; a stream clones it out), then `Next`.
//! - `Resync`: the cache's keys and versions, listed when the resync was taken; each object is
//!   read only when the handler gets near it, a chunk at a time, so a slow handler working
//!   through a resync holds no versions the cache has since replaced. An object whose version
//!   changed since the listing is skipped: the change was pushed after the listing, so it reaches
//!   the handler through its own notification or the next resync, and no state is delivered after
//!   a newer one. (A version is the resourceVersion, or for an object without one a hash of its
//!   JSON.) Tombstones come first for the keys the handler has seen that are no longer cached;
//!   then `Next`.
//! - `Closed`: the listener was closed; the consumer ends.
//!
//! Invariants:
//! - `push` never blocks and never waits for the consumer: a slow handler only grows its own
//!   backlog (or, with [`BacklogPolicy::Bounded`], has it replaced by a resync from the cache).
//! - `push` is only called under the informer's delta barrier, so the cache a consumer lists
//!   under that barrier, when it reaches the resync an overflow left, is exactly the state after
//!   the last pushed notification.
//! - Notifications reach the handler in the order they were pushed, one call at a time; for
//!   `Bounded` listeners every item is checked against what the handler has seen, so its view
//!   stays consistent (no add of a key it has, no update or delete of a key it lacks).
//! - The registration is synced once the informer synced (upstream) and every initial add pushed
//!   to this listener has been delivered or dropped (client-go's `synctrack.SingleFileTracker`);
//!   each initial add's credit is released at most once, and not when the handler's call for
//!   it panicked (the registration then never syncs, as client-go's tracker).
//! - A panicking handler call is caught, logged and counted; delivery goes on.
//! - After `close` nothing more is delivered; the pending backlog is dropped (client-go).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasher;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use foldhash::fast::RandomState;
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::metrics::HandlerSeries;
use super::notification::Notification;
use crate::handler::ResourceEventHandler;
use crate::key::ObjectKey;
use crate::object::{DeletedObject, Object, Tombstone};
use crate::signal::Signal;
use crate::store::Indexer;

/// Backlog above which slow handler calls are logged (client-go's 1024).
const SLOW_HANDLER_BACKLOG: usize = 1024;
/// A handler call slower than this, with a backlog, is logged (client-go's 100 ms).
const SLOW_HANDLER_CALL: Duration = Duration::from_millis(100);
/// A backlog buffer that grew beyond this many entries is shrunk once it is empty again.
const SHRINK_ABOVE: usize = 1024;
/// Objects of a resync read from the cache at a time.
const RESYNC_CHUNK: usize = 64;

/// What happens when a handler falls behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BacklogPolicy {
    /// Keep every pending notification (client-go's behaviour; memory grows with the backlog).
    #[default]
    Unbounded,
    /// Past `n` pending notifications, drop the backlog and resync the handler from the cache:
    /// it then receives, for every cached object, its current state (`on_add` if the handler
    /// has not seen the key, `on_update(last_seen, current)` otherwise) and `on_delete` (a
    /// tombstone) for every key it has seen that is no longer cached. Intermediate states are
    /// lost, the final state is not. The cache is read when the handler reaches that resync (its
    /// keys when it starts, each object when the handler gets near it), so changes made until
    /// then are part of it and are not queued (the backlog stays one entry): a handler that stays
    /// behind costs the informer almost nothing per change and holds no replaced versions of
    /// cached objects for it. The handler's last seen
    /// objects are remembered (one `Arc` per key).
    Bounded(usize),
    /// Past `n` pending notifications, the informer stops taking deltas from its queue until this
    /// handler is back under `n` (the queue then fills and the reflector stops reading the watch
    /// stream): memory stays bounded and every intermediate state is delivered, but this handler
    /// now paces the whole informer and every other handler of it (kube-runtime's model). For
    /// informers whose handler is heavier than the event stream. The bound is checked between
    /// batches, so a backlog may exceed `n` by one batch. A held informer resumes once the
    /// backlog is down to `n / 2`, so the two sides hand over in bursts instead of waking each
    /// other for every notification.
    Block(usize),
}

/// Where an informer held by a [`BacklogPolicy::Block`] listener resumes.
fn resume_at(max: usize) -> usize {
    max / 2
}

/// A snapshot of a handler's backlog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    /// Pending notifications (a pending cache resync counts as one).
    pub len: usize,
    /// How long the oldest pending notification has waited.
    pub oldest_age: Option<Duration>,
}

enum Entry<K> {
    One(Notification<K>),
    /// One batch of the process loop, shared by every non-`Bounded` listener (one `Arc` per
    /// listener per batch instead of a clone and a queue slot per notification).
    Batch(Arc<Vec<Notification<K>>>),
    /// Backlog dropped: resync from the cache as it is when the consumer gets there (the
    /// consumer's `Resync` state). While pending it is the only entry: later notifications are
    /// dropped (the cache will have them).
    /// `credit` = initial adds dropped.
    Resync {
        credit: usize,
    },
}

/// The informer's cache as a listener sees it, for resyncs after an overflow.
pub(crate) struct CacheView<K> {
    pub indexer: Arc<Indexer<K>>,
    /// Held while deltas are applied to the cache and distributed (and by late joins): a
    /// snapshot taken under it matches what every listener has been pushed.
    pub barrier: Arc<Mutex<()>>,
}

struct Pending<K> {
    at: Instant,
    entry: Entry<K>,
}

impl<K> Entry<K> {
    /// Notifications this entry stands for (a pending resync counts as one).
    fn len(&self) -> usize {
        match self {
            Entry::Batch(b) => b.len(),
            Entry::One(_) | Entry::Resync { .. } => 1,
        }
    }

    /// Initial adds this entry carries (released when they are delivered or dropped).
    fn initial_adds(&self) -> usize {
        match self {
            Entry::One(n) => usize::from(n.is_initial_add()),
            Entry::Batch(b) => b.iter().filter(|n| n.is_initial_add()).count(),
            Entry::Resync { credit } => *credit,
        }
    }
}

struct Buffer<K> {
    items: VecDeque<Pending<K>>,
    /// Notifications pending: the sum of the entries' lengths.
    count: usize,
    /// When the shared batch the consumer holds was queued (meaningful while `in_hand > 0`).
    in_hand_at: Option<Instant>,
    closed: bool,
}

struct Tracker {
    pending_initial: usize,
    upstream: bool,
}

struct ResyncState {
    requested: Duration,
    effective: Duration,
    next: Instant,
}

/// A delivery lane. Shared between the processor (producer) and the consumer.
pub(crate) struct Listener<K> {
    pub id: u64,
    pub informer_id: u64,
    pub name: Arc<str>,
    pub policy: BacklogPolicy,
    buf: Mutex<Buffer<K>>,
    /// Notifications of the shared batch the consumer holds that are still to be delivered
    /// (written by the consumer only; part of the backlog).
    in_hand: AtomicUsize,
    wake: Notify,
    /// Notified by the consumer when a `Block` listener's backlog is back under its limit.
    drained: Notify,
    resync: Mutex<ResyncState>,
    pub syncing: AtomicBool,
    tracker: Mutex<Tracker>,
    pub synced: Signal,
    pub finished: Signal,
    removed: AtomicBool,
    panics: AtomicU64,
    overflows: AtomicU64,
    delivered: AtomicU64,
    cache: CacheView<K>,
    metrics: Option<HandlerSeries>,
    on_panic: super::PanicPolicy,
}

/// One notification a [`Consumer`] hands out, with what its delivery records.
pub(crate) struct Item<K> {
    pub n: Notification<K>,
    /// Initial adds completed once this item is delivered.
    pub credit: usize,
    pub enqueued: Option<Instant>,
    /// Notifications still pending behind this one when it was taken.
    pub backlog: usize,
}

impl<K> Listener<K> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: u64,
        informer_id: u64,
        name: Arc<str>,
        policy: BacklogPolicy,
        requested: Duration,
        effective: Duration,
        cache: CacheView<K>,
        metrics: Option<HandlerSeries>,
    ) -> Self {
        Listener {
            id,
            informer_id,
            synced: Signal::new(format!("handler {name} synced")),
            finished: Signal::new(format!("handler {name} finished")),
            name,
            policy,
            buf: Mutex::new(Buffer { items: VecDeque::new(), count: 0, in_hand_at: None, closed: false }),
            in_hand: AtomicUsize::new(0),
            wake: Notify::new(),
            drained: Notify::new(),
            resync: Mutex::new(ResyncState { requested, effective, next: Instant::now() + effective }),
            syncing: AtomicBool::new(true),
            tracker: Mutex::new(Tracker { pending_initial: 0, upstream: false }),
            removed: AtomicBool::new(false),
            panics: AtomicU64::new(0),
            overflows: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            cache,
            metrics,
            on_panic: super::PanicPolicy::Skip,
        }
    }

    /// Sets what a panic in the handler does.
    pub fn on_panic(mut self, policy: super::PanicPolicy) -> Self {
        self.on_panic = policy;
        self
    }

    /// Queues a notification (never blocks) and wakes the consumer. Must be called under the
    /// informer's barrier.
    pub fn push(&self, n: Notification<K>, now: Instant) {
        if self.push_quiet(n, now) {
            self.wake.notify_one();
        }
    }

    /// Wakes the consumer if anything is pending (after a batch of [`Listener::push_quiet`]).
    pub fn wake_if_pending(&self) {
        if !self.buf.lock().items.is_empty() {
            self.wake.notify_one();
        }
    }

    /// Queues a notification without waking the consumer; returns whether the buffer was empty
    /// before (i.e. whether the consumer may be waiting).
    pub fn push_quiet(&self, n: Notification<K>, now: Instant) -> bool {
        let initial = n.is_initial_add();
        self.enqueue(usize::from(initial), |b| {
            if let Some(Pending { entry: Entry::Resync { credit }, .. }) = b.items.back_mut() {
                debug_assert!(matches!(self.policy, BacklogPolicy::Bounded(_)));
                // The pending resync reads the cache, which already has this change.
                *credit += usize::from(initial);
                return;
            }
            self.queue_one(b, n, initial, now);
        })
    }

    /// Queues one notification, or replaces the backlog by a resync if a `Bounded` bound is
    /// reached (`initial`: whether `n` is an initial add).
    fn queue_one(&self, b: &mut Buffer<K>, n: Notification<K>, initial: bool, now: Instant) {
        match self.policy {
            BacklogPolicy::Bounded(max) if b.count >= max.max(1) => {
                let credit = usize::from(initial) + b.items.drain(..).map(|p| p.entry.initial_adds()).sum::<usize>();
                b.items.push_back(Pending { at: now, entry: Entry::Resync { credit } });
                b.count = 1;
                let before = self.overflows.fetch_add(1, Ordering::Relaxed);
                if let Some(m) = &self.metrics {
                    m.overflows.inc();
                }
                // Warn once per handler; later overflows are counted (metrics) and logged at debug.
                if before == 0 {
                    tracing::warn!(handler = %self.name, max, "handler backlog overflowed; dropping it and resyncing the handler from the cache (further overflows are logged at debug level)");
                } else {
                    tracing::debug!(handler = %self.name, max, overflows = before + 1, "handler backlog overflowed again");
                }
            }
            _ => {
                b.items.push_back(Pending { at: now, entry: Entry::One(n) });
                b.count += 1;
            }
        }
    }

    /// Runs `queue` on the buffer unless the listener is closed, counting `initial` pending
    /// initial adds and updating the backlog gauge; returns whether the buffer was empty before
    /// (i.e. whether the consumer may be waiting).
    fn enqueue(&self, initial: usize, queue: impl FnOnce(&mut Buffer<K>)) -> bool {
        let mut b = self.buf.lock();
        if b.closed {
            return false;
        }
        if initial > 0 {
            self.tracker.lock().pending_initial += initial;
        }
        let was_empty = b.items.is_empty();
        queue(&mut b);
        if let Some(m) = &self.metrics {
            m.backlog.set(self.pending(&b) as i64);
        }
        was_empty
    }

    /// Notifications pending: queued plus the rest of the batch in the consumer's hand (none once
    /// closed, whatever a consumer that has not yet seen the close last wrote).
    fn pending(&self, b: &Buffer<K>) -> usize {
        if b.closed { 0 } else { b.count + self.in_hand.load(Ordering::Relaxed) }
    }

    /// Queues a batch shared with other listeners without waking the consumer (not for
    /// `Bounded` listeners, whose overflow accounting is per notification); `initial` = the
    /// batch's initial adds. Returns whether the buffer was empty before.
    pub fn push_batch_quiet(&self, batch: &Arc<Vec<Notification<K>>>, initial: usize, now: Instant) -> bool {
        debug_assert!(!matches!(self.policy, BacklogPolicy::Bounded(_)));
        self.enqueue(initial, |b| {
            b.items.push_back(Pending { at: now, entry: Entry::Batch(batch.clone()) });
            b.count += batch.len();
        })
    }

    /// With [`BacklogPolicy::Block`]: returns at once while the backlog is at most the limit;
    /// past it, waits until the backlog is down to half the limit (or the listener is closed).
    /// Returns at once for the other policies.
    pub async fn wait_below_limit(&self) {
        let BacklogPolicy::Block(max) = self.policy else { return };
        let mut limit = max;
        loop {
            let notified = self.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let b = self.buf.lock();
                if b.closed || self.pending(&b) <= limit {
                    return;
                }
            }
            limit = resume_at(max);
            notified.await;
        }
    }

    /// Called by the consumer after taking an item: releases a blocked informer once the
    /// backlog is down to the resume point.
    fn taken(&self, backlog: usize) {
        if let BacklogPolicy::Block(max) = self.policy
            && backlog <= resume_at(max)
        {
            self.drained.notify_waiters();
        }
    }

    /// Stops delivery: drops the backlog and wakes the consumer so it ends.
    pub fn close(&self) {
        self.removed.store(true, Ordering::Release);
        let mut b = self.buf.lock();
        b.closed = true;
        b.items.clear();
        b.count = 0;
        if let Some(m) = &self.metrics {
            m.backlog.set(0);
        }
        drop(b);
        self.wake.notify_one();
        self.drained.notify_waiters();
    }

    pub fn backlog(&self) -> Backlog {
        let b = self.buf.lock();
        let in_hand = if self.in_hand.load(Ordering::Relaxed) > 0 { b.in_hand_at } else { None };
        let oldest = in_hand.or_else(|| b.items.front().map(|p| p.at));
        Backlog { len: self.pending(&b), oldest_age: if b.closed { None } else { oldest.map(|at| at.elapsed()) } }
    }

    /// Whether the listener was closed (removed, or the informer stopped).
    pub fn is_removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }

    pub fn panics(&self) -> u64 {
        self.panics.load(Ordering::Relaxed)
    }

    pub fn overflows(&self) -> u64 {
        self.overflows.load(Ordering::Relaxed)
    }

    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// The informer synced: from now on the registration syncs when its initial adds are done.
    pub fn upstream_synced(&self) {
        let mut t = self.tracker.lock();
        t.upstream = true;
        if t.pending_initial == 0 {
            self.synced.set();
        }
    }

    fn finish_initial(&self, n: usize) {
        if n == 0 {
            return;
        }
        let mut t = self.tracker.lock();
        t.pending_initial = t.pending_initial.saturating_sub(n);
        if t.upstream && t.pending_initial == 0 {
            self.synced.set();
        }
    }

    // --- resync periods (client-go's shouldResync / determineResyncPeriod) ---

    pub fn requested_resync(&self) -> Duration {
        self.resync.lock().requested
    }

    pub fn effective_resync(&self) -> Duration {
        self.resync.lock().effective
    }

    pub fn set_effective_resync(&self, effective: Duration) {
        let mut r = self.resync.lock();
        r.effective = effective;
        r.next = Instant::now() + effective;
    }

    /// Whether a resync is due at `now`; records the answer as this listener's "syncing" flag.
    pub fn should_resync(&self, now: Instant) -> bool {
        let mut r = self.resync.lock();
        let due = !r.effective.is_zero() && now >= r.next;
        if due {
            r.next = now + r.effective;
        }
        self.syncing.store(due, Ordering::Release);
        due
    }
}

impl<K> Listener<K> {
    /// The kinds of the queued entries: `B<n>` a shared batch, `1` a single one, `resync`.
    #[cfg(test)]
    pub(super) fn entry_kinds(&self) -> Vec<String> {
        let b = self.buf.lock();
        b.items
            .iter()
            .map(|p| match &p.entry {
                Entry::Batch(v) => format!("B{}", v.len()),
                Entry::One(_) => "1".into(),
                Entry::Resync { .. } => "resync".into(),
            })
            .collect()
    }
}

impl<K: 'static> Listener<K> {
    // --- delivery ---

    /// Delivers one item to a handler, catching panics.
    pub fn deliver(&self, handler: &dyn ResourceEventHandler<K>, item: Item<K>) {
        self.deliver_ref(handler, &item.n, item.credit, item.enqueued, item.backlog);
    }

    /// Delivers one notification to a handler, catching panics; `credit` = initial adds it
    /// completes (not when the call panicked), `backlog` = notifications pending behind it.
    pub fn deliver_ref(
        &self,
        handler: &dyn ResourceEventHandler<K>,
        n: &Notification<K>,
        credit: usize,
        enqueued: Option<Instant>,
        backlog: usize,
    ) {
        if let (Some(m), Some(at)) = (&self.metrics, enqueued) {
            m.delivery.observe(at.elapsed().as_secs_f64());
        }
        // client-go's "processorListener handler" trace: a slow call while far behind.
        let timed = (backlog > SLOW_HANDLER_BACKLOG).then(std::time::Instant::now);
        let r = catch_unwind(AssertUnwindSafe(|| n.deliver_to(handler)));
        if let Some(t) = timed
            && t.elapsed() > SLOW_HANDLER_CALL
        {
            tracing::warn!(handler = %self.name, backlog, took = ?t.elapsed(), "slow event handler is falling behind");
        }
        let panicked = r.is_err();
        if let Err(p) = r {
            self.panics.fetch_add(1, Ordering::Relaxed);
            if let Some(m) = &self.metrics {
                m.panics.inc();
            }
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".into());
            if self.on_panic == super::PanicPolicy::Abort {
                tracing::error!(handler = %self.name, key = %n.key(), kind = n.kind(), panic = %msg, "event handler panicked; aborting");
                eprintln!("event handler {} panicked on {}: {msg}; aborting", self.name, n.key());
                std::process::abort();
            }
            tracing::error!(handler = %self.name, key = %n.key(), kind = n.kind(), panic = %msg, "event handler panicked; notification skipped");
        }
        self.delivered.fetch_add(1, Ordering::Relaxed);
        // As client-go's sync tracker: an initial add the handler did not get through does not
        // count, so the handler never reports synced.
        if !panicked {
            self.finish_initial(credit);
        }
    }

    /// Marks an item delivered without a handler call (streams).
    pub fn delivered_without_call(&self, item: &Item<K>) {
        if let (Some(m), Some(at)) = (&self.metrics, item.enqueued) {
            m.delivery.observe(at.elapsed().as_secs_f64());
        }
        self.delivered.fetch_add(1, Ordering::Relaxed);
        self.finish_initial(item.credit);
    }
}

/// The consuming side of a listener: a state machine turning the buffer into the sequence of
/// notifications its handler sees (see the module docs). One per listener.
pub(crate) struct Consumer<K> {
    state: State<K>,
    /// For `Bounded` listeners: the object the handler last saw, per key.
    seen: Option<HashMap<ObjectKey, Object<K>, RandomState>>,
}

/// Where a consumer is.
enum State<K> {
    /// Taking the next entry of the buffer.
    Next,
    /// Delivering a shared batch.
    Batch {
        batch: Arc<Vec<Notification<K>>>,
        /// The next notification to deliver.
        pos: usize,
        /// When the batch was queued.
        at: Instant,
        /// Notifications pending behind the batch when it was taken.
        behind: usize,
    },
    /// Delivering a resync from the cache.
    Resync {
        /// Keys whose objects are still to be read, each with the version it had when the
        /// resync was taken.
        keys: VecDeque<(ObjectKey, u64)>,
        /// Notifications read (or tombstones made) and not yet delivered.
        ready: VecDeque<Notification<K>>,
        /// Whether adds are delivered as initial ones.
        initial: bool,
        /// Initial adds completed once the resync is delivered.
        credit: usize,
    },
    /// The listener was closed: nothing more is delivered.
    Closed,
}

/// What one [`Consumer::step`] produced.
pub(crate) enum Step<K> {
    /// A notification to deliver.
    Item(Item<K>),
    /// A shared batch is in hand: deliver it with [`Consumer::deliver_batch`] (by reference) or
    /// take it one item at a time with [`Consumer::next`] (cloned).
    Batch,
    /// Nothing is pending: wait for the listener's wake-up, then step again.
    Idle,
    /// A resync is first in the buffer: step again holding the informer's delta barrier.
    Barrier,
    /// The listener is closed: the consumer ends.
    Closed,
}

impl<K: Send + Sync + 'static> Consumer<K> {
    /// The consumer of `l`.
    pub fn for_listener(l: &Listener<K>) -> Self {
        Consumer { state: State::Next, seen: matches!(l.policy, BacklogPolicy::Bounded(_)).then(HashMap::default) }
    }

    /// One transition. `barrier` is the informer's delta barrier, when the caller holds it (only
    /// needed to take a resync, after a [`Step::Barrier`]).
    pub fn step(&mut self, l: &Listener<K>, barrier: Option<&MutexGuard<'_, ()>>) -> Step<K> {
        loop {
            match &mut self.state {
                State::Closed => return Step::Closed,
                State::Batch { .. } => return Step::Batch,
                State::Resync { keys, ready, initial, credit } => {
                    if l.is_removed() {
                        self.state = State::Closed;
                        return Step::Closed;
                    }
                    let Some(n) = ready.pop_front() else {
                        if keys.is_empty() {
                            l.finish_initial(*credit);
                            self.state = State::Next;
                        } else {
                            read_resync_chunk(l, keys, ready, *initial, self.seen.get_or_insert_with(HashMap::default));
                        }
                        continue;
                    };
                    let backlog = ready.len() + keys.len();
                    let credit = if backlog == 0 { std::mem::take(credit) } else { 0 };
                    if backlog == 0 {
                        self.state = State::Next;
                    }
                    match self.seen(Item { n, credit, enqueued: None, backlog }) {
                        Some(item) => return Step::Item(item),
                        None => l.finish_initial(credit),
                    }
                }
                State::Next => {
                    let (popped, backlog) = match pop_front(l, barrier.is_some()) {
                        Pop::Closed => {
                            self.state = State::Closed;
                            return Step::Closed;
                        }
                        Pop::NeedBarrier => return Step::Barrier,
                        Pop::Got(None, _) => return Step::Idle,
                        Pop::Got(Some(p), backlog) => (p, backlog),
                    };
                    if !matches!(popped.entry, Entry::Batch(_)) {
                        // (A batch's notifications are counted as they are delivered.)
                        l.taken(backlog);
                    }
                    match popped.entry {
                        Entry::One(n) => {
                            let credit = usize::from(n.is_initial_add());
                            match self.seen(Item { n, credit, enqueued: Some(popped.at), backlog }) {
                                Some(item) => return Step::Item(item),
                                None => l.finish_initial(credit),
                            }
                        }
                        Entry::Batch(batch) => {
                            debug_assert!(self.seen.is_none(), "Bounded listeners get no shared batches");
                            self.state = State::Batch { batch, pos: 0, at: popped.at, behind: backlog };
                            return Step::Batch;
                        }
                        Entry::Resync { credit } => {
                            // Taken under the barrier (`pop_front` hands a resync out only then),
                            // which the caller still holds: the listing is the state after the
                            // last notification pushed.
                            let mut keys = VecDeque::with_capacity(l.cache.indexer.len());
                            l.cache.indexer.for_each(|o| keys.push_back((o.key().clone(), version(o))));
                            let ready = self.tombstones_for_vanished(&keys);
                            self.state = State::Resync { keys, ready, initial: credit > 0, credit };
                        }
                    }
                }
            }
        }
    }

    /// Steps until there is something to deliver, waiting for pushes and taking the barrier as
    /// needed: [`Step::Item`], [`Step::Batch`] or [`Step::Closed`].
    pub async fn advance(&mut self, l: &Listener<K>) -> Step<K> {
        loop {
            let step = match self.step(l, None) {
                Step::Barrier => {
                    let barrier = lock_barrier(&l.cache.barrier).await;
                    self.step(l, Some(&barrier))
                }
                step => step,
            };
            match step {
                // (`Barrier` cannot come back with the barrier held.)
                Step::Idle | Step::Barrier => l.wake.notified().await,
                step => return step,
            }
        }
    }

    /// The next notification, cloned out of a shared batch, or `None` once the listener is
    /// closed (what a stream yields).
    pub async fn next(&mut self, l: &Listener<K>) -> Option<Item<K>> {
        loop {
            if let State::Batch { batch, pos, at, behind } = &mut self.state {
                match advance_in_batch(l, batch, pos, *behind) {
                    Some((n, credit, backlog)) => {
                        return Some(Item { n: n.clone(), credit, enqueued: Some(*at), backlog });
                    }
                    None => self.state = State::Next,
                }
            }
            match self.advance(l).await {
                Step::Item(item) => return Some(item),
                Step::Batch => {}
                _ => return None,
            }
        }
    }

    /// Delivers the shared batch in hand, if any, by reference.
    pub fn deliver_batch(&mut self, l: &Listener<K>, handler: &dyn ResourceEventHandler<K>) {
        let State::Batch { batch, mut pos, at, behind } = std::mem::replace(&mut self.state, State::Next) else {
            return;
        };
        while let Some((n, credit, backlog)) = advance_in_batch(l, &batch, &mut pos, behind) {
            l.deliver_ref(handler, n, credit, Some(at), backlog);
        }
    }

    /// Tombstones (with the last state the handler saw) for the seen keys not among `keys`.
    fn tombstones_for_vanished(&mut self, keys: &VecDeque<(ObjectKey, u64)>) -> VecDeque<Notification<K>> {
        let seen = self.seen.get_or_insert_with(HashMap::default);
        let present: HashSet<&ObjectKey, RandomState> = keys.iter().map(|(k, _)| k).collect();
        seen.iter()
            .filter(|(k, _)| !present.contains(k))
            .map(|(k, old)| {
                Notification::Delete(DeletedObject::FinalStateUnknown(Tombstone {
                    key: k.clone(),
                    last_known: Some(old.clone()),
                }))
            })
            .collect()
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

/// The next notification of a shared batch by reference (its initial-add credit and the backlog
/// behind it), recording the progress on the listener (the rest of the batch still counts as
/// pending); `None`, with nothing left in hand, at the end of the batch or once the listener is
/// closed.
fn advance_in_batch<'b, K>(
    l: &Listener<K>,
    batch: &'b [Notification<K>],
    pos: &mut usize,
    behind: usize,
) -> Option<(&'b Notification<K>, usize, usize)> {
    let next = if l.is_removed() { None } else { batch.get(*pos) };
    let Some(n) = next else {
        l.in_hand.store(0, Ordering::Relaxed);
        return None;
    };
    *pos += 1;
    let left = batch.len() - *pos;
    l.in_hand.store(left, Ordering::Relaxed);
    l.taken(left + behind);
    if let Some(m) = &l.metrics {
        m.backlog.set((left + behind) as i64);
    }
    Some((n, usize::from(n.is_initial_add()), left + behind))
}

/// Reads the objects of a resync's next keys from the cache (under one read lock) into `ready`.
/// While the backlog behind the resync is still queued, an object still at the version the
/// resync listed is delivered (the state the resync was taken at) and one that changed or went
/// is skipped: its change was queued after the listing, or left to the next resync. Once the
/// backlog has overflowed again (only a pending resync is queued), every later change is left to
/// that resync and nothing queued follows: the current state of every key is delivered. Either
/// way nothing older than a state still to come is delivered, and every key is.
fn read_resync_chunk<K>(
    l: &Listener<K>,
    keys: &mut VecDeque<(ObjectKey, u64)>,
    ready: &mut VecDeque<Notification<K>>,
    initial: bool,
    seen: &HashMap<ObjectKey, Object<K>, RandomState>,
) {
    let n = keys.len().min(RESYNC_CHUNK);
    let chunk: Vec<(ObjectKey, u64)> = keys.drain(..n).collect();
    let absorbing = {
        let b = l.buf.lock();
        b.items.len() == 1 && matches!(b.items.front(), Some(Pending { entry: Entry::Resync { .. }, .. }))
    };
    let mut listed = chunk.iter().map(|(_, v)| *v);
    l.cache.indexer.get_each(chunk.iter().map(|(k, _)| k.as_str()), |k, o| {
        let listed = listed.next();
        let Some(o) = o.filter(|o| absorbing || Some(version(o)) == listed) else { return };
        ready.push_back(match seen.get(k) {
            Some(old) => Notification::Update { old: old.clone(), new: o.clone() },
            None => Notification::Add { obj: o.clone(), is_in_initial_list: initial },
        });
    });
}

/// What [`pop_front`] found.
enum Pop<K> {
    /// A resync is first and the caller does not hold the barrier.
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
async fn lock_barrier(m: &Mutex<()>) -> MutexGuard<'_, ()> {
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

/// Runs a handler's consumer until the listener is closed: each item delivered in turn, shared
/// batches by reference.
pub(crate) async fn run_handler<K: Send + Sync + 'static>(
    l: Arc<Listener<K>>,
    handler: Arc<dyn ResourceEventHandler<K>>,
) {
    let mut c = Consumer::for_listener(&l);
    loop {
        match c.advance(&l).await {
            Step::Item(item) => l.deliver(&*handler, item),
            Step::Batch => c.deliver_batch(&l, &*handler),
            _ => break,
        }
    }
    l.finished.set();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Indexers;

    type Obj = Object<serde_json::Value>;

    fn obj(name: &str, rv: &str) -> Obj {
        Object::from_json(format!(r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}}}}"#))
            .unwrap()
    }

    fn listener(policy: BacklogPolicy, idx: &Arc<Indexer<serde_json::Value>>) -> Listener<serde_json::Value> {
        let cache = CacheView { indexer: idx.clone(), barrier: Arc::default() };
        Listener::new(1, 1, "t".into(), policy, Duration::ZERO, Duration::ZERO, cache, None)
    }

    /// A cache, a listener with `policy` over it, and its consumer.
    fn setup(
        policy: BacklogPolicy,
    ) -> (Arc<Indexer<serde_json::Value>>, Listener<serde_json::Value>, Consumer<serde_json::Value>) {
        let idx = Arc::new(Indexer::new(Indexers::new()));
        let l = listener(policy, &idx);
        let c = Consumer::for_listener(&l);
        (idx, l, c)
    }

    fn describe(n: &Notification<serde_json::Value>) -> String {
        match n {
            Notification::Add { obj, is_in_initial_list } => {
                format!("add {}@{} {is_in_initial_list}", obj.name(), obj.resource_version().unwrap())
            }
            Notification::Update { old, new } => format!(
                "update {} {}->{}",
                new.name(),
                old.resource_version().unwrap(),
                new.resource_version().unwrap()
            ),
            Notification::Delete(d) => {
                format!("delete {} {}", d.key().name(), d.is_final_state_unknown())
            }
        }
    }

    /// An add of `o{i}`.
    fn add(i: usize, is_in_initial_list: bool) -> Notification<serde_json::Value> {
        Notification::Add { obj: obj(&format!("o{i}"), "1"), is_in_initial_list }
    }

    /// Queues adds of `o{i}` for every `i` in `range`.
    fn push_adds(l: &Listener<serde_json::Value>, range: std::ops::Range<usize>, now: Instant) {
        for i in range {
            l.push(add(i, false), now);
        }
    }

    /// A shared batch of adds of `o0`..`o{n-1}`, the first `initial` of them initial adds.
    fn batch_of_adds(n: usize, initial: usize) -> Arc<Vec<Notification<serde_json::Value>>> {
        Arc::new((0..n).map(|i| add(i, i < initial)).collect())
    }

    /// Takes every notification the consumer has ready, marking each delivered. Everything
    /// pending is ready: a consumer that would wait means the backlog is drained. (Tests run on
    /// paused time, so the timeout fires only once no task can make progress.)
    async fn drain_items(
        c: &mut Consumer<serde_json::Value>,
        l: &Listener<serde_json::Value>,
    ) -> Vec<Notification<serde_json::Value>> {
        let mut out = Vec::new();
        while let Ok(Some(item)) = tokio::time::timeout(Duration::from_millis(50), c.next(l)).await {
            l.delivered_without_call(&item);
            out.push(item.n);
        }
        out
    }

    async fn drain(c: &mut Consumer<serde_json::Value>, l: &Listener<serde_json::Value>) -> Vec<String> {
        drain_items(c, l).await.iter().map(describe).collect()
    }

    /// The state machine's steps: an empty buffer is `Idle`, a single notification an `Item`, a
    /// resync asks for the barrier and is taken only with it, a closed listener is `Closed`.
    #[test]
    fn the_consumer_takes_a_resync_only_under_the_barrier() {
        let (idx, l, mut c) = setup(BacklogPolicy::Bounded(1));
        let now = Instant::now();
        assert!(matches!(c.step(&l, None), Step::Idle));
        let (a, b) = (obj("a", "1"), obj("b", "1"));
        idx.add(a.clone()).unwrap();
        l.push(Notification::Add { obj: a, is_in_initial_list: false }, now);
        assert!(matches!(c.step(&l, None), Step::Item(i) if describe(&i.n) == "add a@1 false"));
        idx.add(b.clone()).unwrap();
        l.push(Notification::Add { obj: b.clone(), is_in_initial_list: false }, now);
        l.push(Notification::Update { old: b.clone(), new: b }, now);
        assert_eq!(l.entry_kinds(), ["resync"]);
        assert!(matches!(c.step(&l, None), Step::Barrier), "not without the barrier");
        assert_eq!(l.entry_kinds(), ["resync"], "still queued");
        let barrier = l.cache.barrier.lock();
        let mut got = Vec::new();
        while let Step::Item(i) = c.step(&l, Some(&barrier)) {
            got.push(describe(&i.n));
        }
        got.sort();
        assert_eq!(got, ["add b@1 false", "update a 1->1"], "the cache against what the handler saw");
        drop(barrier);
        assert!(matches!(c.step(&l, None), Step::Idle));
        l.close();
        assert!(matches!(c.step(&l, None), Step::Closed));
    }

    #[tokio::test(start_paused = true)]
    async fn bounded_overflow_resyncs_against_what_the_handler_saw() {
        let (idx, l, mut c) = setup(BacklogPolicy::Bounded(2));
        let now = Instant::now();
        let (a1, b1) = (obj("a", "1"), obj("b", "1"));
        for o in [&a1, &b1] {
            idx.add(o.clone()).unwrap();
            l.push(Notification::Add { obj: o.clone(), is_in_initial_list: true }, now);
        }
        l.upstream_synced();
        assert_eq!(drain(&mut c, &l).await, ["add a@1 true", "add b@1 true"]);
        assert!(l.synced.is_set());
        // Three changes while nobody consumes: the third overflows.
        let a2 = obj("a", "2");
        idx.add(a2.clone()).unwrap();
        l.push(Notification::Update { old: a1.clone(), new: a2.clone() }, now);
        idx.delete(&b1);
        l.push(Notification::Delete(DeletedObject::Object(b1.clone())), now);
        let c3 = obj("c", "3");
        idx.add(c3.clone()).unwrap();
        l.push(Notification::Add { obj: c3.clone(), is_in_initial_list: false }, now);
        assert_eq!(l.backlog().len, 1);
        assert_eq!(l.overflows(), 1);
        // A change after the overflow is left to the pending resync.
        l.push(Notification::Add { obj: c3.clone(), is_in_initial_list: false }, now);
        assert_eq!(l.backlog().len, 1);
        let mut got = drain(&mut c, &l).await;
        got[..3].sort();
        assert_eq!(got, ["add c@3 false", "delete b true", "update a 1->2"]);
    }

    #[tokio::test(start_paused = true)]
    async fn changes_after_an_overflow_reach_the_handler_through_the_pending_resync() {
        let (idx, l, mut c) = setup(BacklogPolicy::Bounded(2));
        let now = Instant::now();
        let (a1, b1, c1) = (obj("a", "1"), obj("b", "1"), obj("c", "1"));
        // Three initial adds overflow a bound of 2 before anything is consumed.
        for o in [&a1, &b1, &c1] {
            idx.add(o.clone()).unwrap();
            l.push(Notification::Add { obj: o.clone(), is_in_initial_list: true }, now);
        }
        assert_eq!((l.backlog().len, l.overflows()), (1, 1));
        // Later changes (an update, a delete, another initial add, a resync of an unchanged
        // object) are not queued: the pending resync will read them from the cache.
        let (a2, d1) = (obj("a", "2"), obj("d", "1"));
        idx.add(a2.clone()).unwrap();
        l.push(Notification::Update { old: a1.clone(), new: a2.clone() }, now);
        idx.delete(&b1);
        l.push(Notification::Delete(DeletedObject::Object(b1.clone())), now);
        idx.add(d1.clone()).unwrap();
        l.push(Notification::Add { obj: d1.clone(), is_in_initial_list: true }, now);
        l.push(Notification::Update { old: a2.clone(), new: a2.clone() }, now);
        for _ in 0..5 {
            l.push(Notification::Update { old: c1.clone(), new: c1.clone() }, now);
        }
        assert_eq!((l.backlog().len, l.overflows()), (1, 1));
        // The resync delivers the cache as it is now, and carries every initial add's credit.
        l.upstream_synced();
        assert!(!l.synced.is_set());
        let mut got = drain(&mut c, &l).await;
        got.sort();
        assert_eq!(got, ["add a@2 true", "add c@1 true", "add d@1 true"]);
        assert!(l.synced.is_set());
        // Once the handler has taken the resync, changes queue one by one again.
        let c2 = obj("c", "2");
        idx.add(c2.clone()).unwrap();
        l.push(Notification::Update { old: c1.clone(), new: c2.clone() }, now);
        l.push(Notification::Update { old: c2.clone(), new: c2.clone() }, now);
        assert_eq!(l.backlog().len, 2);
        assert_eq!(drain(&mut c, &l).await, ["update c 1->2", "update c 2->2"]);
    }

    /// `n` objects from `make(i, "1")` in the cache, pushed as adds to a `Bounded(bound)` listener
    /// with same-object updates of the first one after them until it overflows; the handler then
    /// takes the resync's first item (one chunk is read); then, for each of `rounds`, every object
    /// `i` is replaced by `make(i, round)` (or by an equal copy when `unchanged(i)`) and the update
    /// pushed. Returns, per object name, the states the handler got ("add v", "update v->w", by
    /// `make`'s label).
    async fn resync_while_everything_changes(
        n: usize,
        bound: usize,
        rounds: &[&str],
        make: impl Fn(usize, &str) -> Obj,
        unchanged: impl Fn(usize) -> bool,
    ) -> std::collections::BTreeMap<String, Vec<String>> {
        let (idx, l, mut c) = setup(BacklogPolicy::Bounded(bound));
        let now = Instant::now();
        let v1: Vec<Obj> = (0..n).map(|i| make(i, "1")).collect();
        for o in &v1 {
            idx.add(o.clone()).unwrap();
            l.push(Notification::Add { obj: o.clone(), is_in_initial_list: false }, now);
        }
        while l.overflows() == 0 {
            l.push(Notification::Update { old: v1[0].clone(), new: v1[0].clone() }, now);
        }
        let first = c.next(&l).await.unwrap();
        assert_eq!(first.backlog, n - 1, "the rest of the resync is pending");
        let mut got = vec![first.n.clone()];
        l.delivered_without_call(&first);
        let mut current = v1;
        for round in rounds {
            for (i, old) in current.iter_mut().enumerate() {
                let new = make(i, if unchanged(i) { "1" } else { round });
                idx.add(new.clone()).unwrap();
                l.push(Notification::Update { old: old.clone(), new: new.clone() }, now);
                *old = new;
            }
        }
        got.extend(drain_items(&mut c, &l).await);
        let label = |o: &Obj| o.label("v").unwrap().to_string();
        let mut states: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for n in &got {
            let (name, state) = match n {
                Notification::Add { obj, .. } => (obj.name(), format!("add {}", label(obj))),
                Notification::Update { old, new } => (new.name(), format!("update {}->{}", label(old), label(new))),
                Notification::Delete(_) => panic!("nothing was deleted"),
            };
            states.entry(name.to_string()).or_default().push(state);
        }
        assert_eq!(states.len(), n, "every key reaches the handler");
        states
    }

    fn labelled(i: usize, v: &str, rv: bool) -> Obj {
        let rv = if rv { format!(r#","resourceVersion":"{v}""#) } else { String::new() };
        Obj::from_json(format!(r#"{{"metadata":{{"name":"o{i}","namespace":"ns"{rv},"labels":{{"v":"{v}"}}}}}}"#))
            .unwrap()
    }

    /// While the changes behind a resync are queued, it reads objects a chunk at a time as the
    /// handler gets to them: a key changed after the resync began is not read at its old state
    /// (the resync holds no replaced versions) and reaches the handler once, at its new state,
    /// through its queued updates (never a newer state before an older one).
    #[tokio::test(start_paused = true)]
    async fn a_resync_skips_keys_whose_changes_are_queued_behind_it() {
        let n = 3 * RESYNC_CHUNK;
        let states =
            resync_while_everything_changes(n, 2 * n + 8, &["2", "3"], |i, v| labelled(i, v, true), |_| false).await;
        let (mut read_first, mut skipped) = (0, 0);
        for (name, s) in &states {
            match s.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                ["add 1", "update 1->2", "update 2->3"] => read_first += 1,
                ["add 2", "update 2->3"] => skipped += 1,
                _ => panic!("{name}: {s:?}"),
            }
        }
        assert_eq!((read_first, skipped), (RESYNC_CHUNK, n - RESYNC_CHUNK), "only the chunk read first at 1");
    }

    /// The same for objects without a resourceVersion: their version is their JSON.
    #[tokio::test(start_paused = true)]
    async fn a_resync_tells_changed_objects_without_resource_versions_by_their_json() {
        let n = 2 * RESYNC_CHUNK;
        // Odd objects are replaced by equal copies (a new object, the same state).
        let states =
            resync_while_everything_changes(n, 2 * n + 8, &["2", "3"], |i, v| labelled(i, v, false), |i| i % 2 == 1)
                .await;
        let (mut read_first, mut skipped) = (0, 0);
        for (name, s) in &states {
            let changed = name[1..].parse::<usize>().unwrap() % 2 == 0;
            match s.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                ["add 1", "update 1->2", "update 2->3"] if changed => read_first += 1,
                ["add 2", "update 2->3"] if changed => skipped += 1,
                ref unchanged if !changed && unchanged.iter().all(|s| *s == "add 1" || *s == "update 1->1") => {}
                _ => panic!("{name}: {s:?}"),
            }
        }
        assert!(read_first > 0 && skipped > 0, "{read_first} read at 1, {skipped} skipped");
        assert_eq!(read_first + skipped, n / 2);
    }

    /// Once the backlog behind a resync overflows again, every change is left to the next
    /// resync: this one then delivers the current state of each key it has yet to read (nothing
    /// older can follow), so a handler that never catches up still gets every key, each state
    /// no older than the one before.
    #[tokio::test(start_paused = true)]
    async fn a_resync_overtaken_by_another_overflow_delivers_current_states() {
        let n = 3 * RESYNC_CHUNK;
        let states = resync_while_everything_changes(n, 2, &["2"], |i, v| labelled(i, v, true), |_| false).await;
        let (mut read_first, mut read_current) = (0, 0);
        for (name, s) in &states {
            match s.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                // Then redelivered by the next resync.
                ["add 1", "update 1->2"] => read_first += 1,
                ["add 2", "update 2->2"] => read_current += 1,
                _ => panic!("{name}: {s:?}"),
            }
        }
        assert_eq!((read_first, read_current), (RESYNC_CHUNK, n - RESYNC_CHUNK));
    }

    #[tokio::test(start_paused = true)]
    async fn block_holds_the_informer_past_the_limit_until_half_drained() {
        use futures_util::FutureExt;
        let (_, l, mut c) = setup(BacklogPolicy::Block(10));
        let now = Instant::now();
        push_adds(&l, 0..10, now);
        assert!(l.wait_below_limit().now_or_never().is_some(), "at the limit: not held");
        push_adds(&l, 10..14, now);
        let mut wait = std::pin::pin!(l.wait_below_limit());
        assert!(wait.as_mut().now_or_never().is_none(), "14 over a limit of 10: held");
        // Under the limit but above half of it: still held.
        for left in (6..14).rev() {
            let item = c.next(&l).await.unwrap();
            l.delivered_without_call(&item);
            assert_eq!(l.backlog().len, left);
            assert!(wait.as_mut().now_or_never().is_none(), "backlog {left}: still held");
        }
        let item = c.next(&l).await.unwrap();
        l.delivered_without_call(&item);
        assert_eq!(l.backlog().len, 5);
        assert!(wait.as_mut().now_or_never().is_some(), "backlog 5 = half the limit: released");
        // Closing releases a held informer at once.
        push_adds(&l, 14..30, now);
        let mut wait = std::pin::pin!(l.wait_below_limit());
        assert!(wait.as_mut().now_or_never().is_none());
        l.close();
        assert!(wait.as_mut().now_or_never().is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_shared_batch_counts_as_its_notifications_until_delivered() {
        let (_, l, mut c) = setup(BacklogPolicy::Unbounded);
        let now = Instant::now();
        let batch = batch_of_adds(5, 3);
        assert!(l.push_batch_quiet(&batch, 3, now), "the buffer was empty");
        l.push(Notification::Add { obj: obj("after", "1"), is_in_initial_list: false }, now);
        assert_eq!(l.backlog().len, 6);
        l.upstream_synced();
        assert!(!l.synced.is_set(), "three initial adds are pending");
        let first = c.next(&l).await.unwrap();
        assert_eq!((describe(&first.n).as_str(), first.backlog), ("add o0@1 true", 5));
        assert_eq!(l.backlog().len, 5, "the rest of the batch in hand is still pending");
        assert!(l.backlog().oldest_age.is_some());
        l.delivered_without_call(&first);
        let rest = drain(&mut c, &l).await;
        assert_eq!(rest, ["add o1@1 true", "add o2@1 true", "add o3@1 false", "add o4@1 false", "add after@1 false"]);
        assert_eq!(l.backlog().len, 0);
        assert!(l.synced.is_set());
        assert_eq!(Arc::strong_count(&batch), 1, "the consumer let go of the batch");
        // Closed with a batch in hand (a stream dropped mid-batch): nothing is pending any more.
        l.push_batch_quiet(&batch, 0, now);
        assert!(c.next(&l).await.is_some());
        assert_eq!(l.backlog().len, 4);
        l.close();
        assert_eq!(l.backlog(), Backlog { len: 0, oldest_age: None });
    }

    #[tokio::test(start_paused = true)]
    async fn a_handler_consumer_delivers_a_shared_batch_in_order_and_stops_at_close_mid_batch() {
        let idx = Arc::new(Indexer::<serde_json::Value>::new(Indexers::new()));
        let l = Arc::new(listener(BacklogPolicy::Unbounded, &idx));
        let got = Arc::new(Mutex::new(Vec::new()));
        let handler = crate::HandlerFns::<serde_json::Value>::new().on_add({
            let (got, l) = (got.clone(), l.clone());
            move |o, _| {
                got.lock().push(o.name().to_string());
                if o.name() == "o2" {
                    l.close();
                }
            }
        });
        l.push_batch_quiet(&batch_of_adds(5, 0), 0, Instant::now());
        run_handler(l.clone(), Arc::new(handler)).await;
        assert_eq!(*got.lock(), ["o0", "o1", "o2"]);
        assert!(l.finished.is_set());
        assert_eq!((l.delivered(), l.backlog().len), (3, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn unbounded_keeps_everything_in_order_and_close_drops_the_backlog() {
        let (_, l, mut c) = setup(BacklogPolicy::Unbounded);
        let now = Instant::now();
        push_adds(&l, 0..100, now);
        assert_eq!(l.backlog().len, 100);
        assert!(c.next(&l).await.is_some());
        l.close();
        assert!(c.next(&l).await.is_none());
        l.push(Notification::Add { obj: obj("late", "1"), is_in_initial_list: false }, now);
        assert_eq!(l.backlog().len, 0, "nothing is queued after close");
    }

    #[tokio::test(start_paused = true)]
    async fn a_drained_burst_gives_its_buffer_back() {
        let (_, l, mut c) = setup(BacklogPolicy::Unbounded);
        let now = Instant::now();
        let o = obj("o", "1");
        for _ in 0..5000 {
            l.push(Notification::Add { obj: o.clone(), is_in_initial_list: false }, now);
        }
        assert!(l.buf.lock().items.capacity() >= 5000);
        for _ in 0..4999 {
            assert!(c.next(&l).await.is_some());
        }
        assert!(l.buf.lock().items.capacity() >= 5000, "kept while the burst is being drained");
        assert!(c.next(&l).await.is_some());
        assert!(l.buf.lock().items.capacity() <= 1024, "shrunk once empty");
        l.push(Notification::Add { obj: o, is_in_initial_list: false }, now);
        assert!(c.next(&l).await.is_some(), "the listener keeps working after the shrink");
    }

    #[tokio::test(start_paused = true)]
    async fn registration_syncs_only_after_upstream_and_initial_adds() {
        let (_, l, mut c) = setup(BacklogPolicy::Unbounded);
        l.push(Notification::Add { obj: obj("a", "1"), is_in_initial_list: true }, Instant::now());
        l.upstream_synced();
        assert!(!l.synced.is_set());
        let item = c.next(&l).await.unwrap();
        assert!(!l.synced.is_set(), "not before the handler returns");
        l.deliver(&crate::HandlerFns::new(), item);
        assert!(l.synced.is_set());
    }

    #[test]
    fn resync_due_flags_follow_the_period() {
        let idx = Arc::new(Indexer::<serde_json::Value>::new(Indexers::new()));
        let l = Listener::new(
            1,
            1,
            "t".into(),
            BacklogPolicy::Unbounded,
            Duration::from_secs(2),
            Duration::from_secs(2),
            CacheView { indexer: idx, barrier: Arc::default() },
            None,
        );
        let t0 = Instant::now();
        assert!(!l.should_resync(t0 + Duration::from_secs(1)));
        assert!(!l.syncing.load(Ordering::Acquire));
        assert!(l.should_resync(t0 + Duration::from_secs(2)));
        assert!(l.syncing.load(Ordering::Acquire));
        assert!(!l.should_resync(t0 + Duration::from_secs(3)));
        assert!(l.should_resync(t0 + Duration::from_secs(4)));
    }
}
