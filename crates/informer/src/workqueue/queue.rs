//! The basic work queue: a deduplicating FIFO of keys with "processing"
//! tracking, the Rust counterpart of client-go's `workqueue.Typed[T]`.
//!
//! A work queue is *not* an event log: it holds **keys that need work**.
//! Adding a key that is already waiting does nothing (the key is "dirty"
//! until a worker takes it), so a burst of changes to one object collapses
//! into one unit of work. A key handed to a worker by [`WorkQueue::get`] is
//! "processing" until the worker calls [`WorkQueue::done`]; while it is
//! processing it is never handed to another worker, and adding it again only
//! marks it dirty, so it is queued again (once) when `done` is called.
//!
//! # Invariants
//!
//! For every key `k`, its slot in the state map says whether it is *dirty*
//! (needs work) and/or *processing* (a worker holds it):
//!
//! * `k` is in the ready FIFO **iff** it is dirty and not processing, and it is
//!   there exactly once;
//! * `k` has a slot **iff** it is dirty or processing;
//! * the `processing` counter equals the number of processing slots;
//! * with metrics, the add times hold exactly the dirty keys and the start
//!   times exactly the processing ones, so refreshing the "unfinished work"
//!   gauges visits only the keys in flight, however long the backlog;
//! * after shutdown nothing new is admitted, but keys already queued are
//!   still handed out, and a key re-added while processing is still requeued
//!   by `done`. `get` returns `None` only once shut down **and** empty;
//! * every `shut_down*` call marks the queue shutting down before it returns
//!   (the draining forms return a future that only waits).
//!
//! Everything lives behind one `parking_lot::Mutex`; a hot-path operation
//! does one hash lookup and clones the key at most once (on a new add). Async
//! getters sleep on a `tokio::sync::Notify`, blocking getters on a
//! `parking_lot::Condvar`; both are woken one per queued key.

use std::collections::VecDeque;
use std::collections::hash_map::Entry;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::pin::pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::backing::{BackingQueue, Ready};
use super::metrics::{MetricsProvider, QueueMetrics, WorkQueueMetrics};

/// The bounds every queue item must satisfy; implemented for every type that
/// meets them.
///
/// Items are stored in a hash map and the ready FIFO, so they are cloned once
/// per new add: prefer cheap-to-clone keys such as `Arc<str>` or small
/// `Copy` structs over large owned values.
pub trait QueueItem: Clone + Eq + Hash + Send + Sync + 'static {}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueItem for T {}

pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// How often the "unfinished work" gauges are refreshed (client-go's
/// `unfinishedWorkUpdatePeriod`).
pub(crate) const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// Per-key bookkeeping (two bytes: a queue holding every key of a large cache stays small).
#[derive(Debug)]
struct Slot {
    dirty: bool,
    processing: bool,
}

struct State<T> {
    ready: Ready<T>,
    slots: FastMap<T, Slot>,
    /// With metrics, when each dirty key became dirty; empty otherwise.
    added_at: FastMap<T, Instant>,
    /// With metrics, when a worker took each processing key; empty otherwise.
    started_at: FastMap<T, Instant>,
    processing: usize,
    shutting_down: bool,
    /// A `shut_down_with_drain*` call is waiting; cleared by `shut_down`.
    drain: bool,
}

/// Result of one non-blocking attempt to take a key.
enum Next<T> {
    Item(T),
    Empty,
    Closed,
}

pub(crate) struct Shared<T> {
    state: Mutex<State<T>>,
    /// Wakes async getters (one permit per queued key, all on shutdown).
    readable: Notify,
    /// Wakes blocking getters.
    readable_cv: Condvar,
    /// Wakes async drainers.
    drained: Notify,
    /// Wakes blocking drainers.
    drained_cv: Condvar,
    metrics: Option<QueueMetrics>,
    name: String,
    /// Cancelled on shutdown (and on drop); stops background tasks.
    shutdown: CancellationToken,
    /// Called by every `shut_down*` after the state is marked and the token cancelled.
    shutdown_hooks: Mutex<Vec<ShutdownHook>>,
}

type ShutdownHook = Box<dyn Fn() + Send + Sync>;

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A deduplicating, concurrency-aware FIFO of keys (client-go's
/// `workqueue.Typed[T]`).
///
/// `WorkQueue` is a cheap handle: it wraps an `Arc`, and clones share the same
/// queue. Hand a clone to every producer and worker.
///
/// * [`add`](Self::add) queues a key unless it is already waiting;
/// * [`get`](Self::get) / [`get_blocking`](Self::get_blocking) hand the oldest
///   key (or the one its [`BackingQueue`] picks) to a worker and mark it
///   processing;
/// * [`done`](Self::done) must be called by the worker afterwards; if the key
///   was added again meanwhile it is queued again then;
/// * [`shut_down`](Self::shut_down) stops admitting keys and wakes all
///   getters; the `shut_down_with_drain*` variants also wait for work to
///   finish.
///
/// # Examples
///
/// ```
/// use informer::workqueue::WorkQueue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue: WorkQueue<&'static str> = WorkQueue::new();
/// queue.add("default/a");
/// queue.add("default/b");
/// queue.add("default/a"); // deduplicated: "a" is already waiting
/// assert_eq!(queue.len(), 2);
///
/// let worker = {
///     let queue = queue.clone();
///     tokio::spawn(async move {
///         let mut seen = Vec::new();
///         while let Some(key) = queue.get().await {
///             seen.push(key);
///             queue.done(&key);
///         }
///         seen
///     })
/// };
/// queue.shut_down_with_drain_all().await; // waits until both keys are done
/// assert_eq!(worker.await.unwrap(), ["default/a", "default/b"]);
/// # }
/// ```
pub struct WorkQueue<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        Self { shared: Arc::clone(&self.shared) }
    }
}

impl<T> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.shared.state.lock();
        f.debug_struct("WorkQueue")
            .field("name", &self.shared.name)
            .field("len", &st.ready.len())
            .field("processing", &st.processing)
            .field("shutting_down", &st.shutting_down)
            .finish()
    }
}

impl<T: QueueItem> Default for WorkQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: QueueItem> WorkQueue<T> {
    /// Creates an unnamed queue without metrics. Needs no Tokio runtime.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Starts configuring a queue (name, metrics, runtime); finish with
    /// [`WorkQueueBuilder::build`], [`build_delaying`](WorkQueueBuilder::build_delaying)
    /// or [`build_rate_limiting`](WorkQueueBuilder::build_rate_limiting).
    pub fn builder() -> WorkQueueBuilder<T> {
        WorkQueueBuilder {
            name: String::new(),
            metrics: None,
            runtime: None,
            delaying: false,
            queue: None,
            _item: PhantomData,
        }
    }

    /// Marks `item` as needing work.
    ///
    /// * ignored once the queue is shutting down;
    /// * if `item` is already waiting, it is not queued again (deduplication;
    ///   a [`BackingQueue`] other than the FIFO is told, to reorder it);
    /// * if `item` is being processed, it is queued again when its worker
    ///   calls [`done`](Self::done) (at most once, however many adds);
    /// * otherwise it is appended to the FIFO and one waiting getter is woken.
    pub fn add(&self, item: T) {
        let shared = &*self.shared;
        let mut guard = shared.state.lock();
        let st = &mut *guard;
        if st.shutting_down {
            return;
        }
        let now = shared.metrics.as_ref().map(|_| Instant::now());
        match st.slots.entry(item) {
            Entry::Occupied(mut occupied) => {
                let slot = occupied.get_mut();
                if slot.dirty {
                    // Waiting already: its backing queue may move it (client-go's `Touch`).
                    if !slot.processing {
                        st.ready.touch(occupied.key());
                    }
                    return;
                }
                // Processing and not yet dirty: `done` will requeue it.
                slot.dirty = true;
                if let (Some(m), Some(now)) = (&shared.metrics, now) {
                    m.adds.inc();
                    m.depth.inc();
                    st.added_at.insert(occupied.key().clone(), now);
                }
            }
            Entry::Vacant(vacant) => {
                // (Queued before its slot is kept: a backing queue that panics leaves no slot
                // behind, so the next add queues the key again.)
                let key = vacant.key().clone();
                if let (Some(m), Some(now)) = (&shared.metrics, now) {
                    m.adds.inc();
                    m.depth.inc();
                    st.added_at.insert(key.clone(), now);
                }
                st.ready.push(key);
                vacant.insert(Slot { dirty: true, processing: false });
                drop(guard);
                shared.wake_one_getter();
            }
        }
    }

    /// Waits for a key and hands it to the caller, who must call
    /// [`done`](Self::done) with it when finished.
    ///
    /// Returns `None` once the queue is shutting down **and** has no ready
    /// keys; keys queued before shutdown are still returned.
    ///
    /// Cancel safe: dropping the future never loses a key or a wake-up.
    pub async fn get(&self) -> Option<T> {
        match self.shared.try_next() {
            Next::Item(item) => return Some(item),
            Next::Closed => return None,
            Next::Empty => {}
        }
        loop {
            // Register interest before re-checking, so an `add` between the
            // check and the await cannot be missed.
            let mut notified = pin!(self.shared.readable.notified());
            notified.as_mut().enable();
            match self.shared.try_next() {
                Next::Item(item) => return Some(item),
                Next::Closed => return None,
                Next::Empty => notified.await,
            }
        }
    }

    /// Blocking version of [`get`](Self::get) for plain threads. Do not call it
    /// from async code (it parks the thread).
    pub fn get_blocking(&self) -> Option<T> {
        let shared = &*self.shared;
        let mut guard = shared.state.lock();
        loop {
            match shared.next_locked(&mut guard) {
                Next::Item(item) => return Some(item),
                Next::Closed => return None,
                Next::Empty => shared.readable_cv.wait(&mut guard),
            }
        }
    }

    /// Takes a ready key without waiting, or returns `None` if there is none
    /// right now (whether or not the queue is shutting down). Like
    /// [`get`](Self::get), the caller must call [`done`](Self::done).
    pub fn try_get(&self) -> Option<T> {
        match self.shared.try_next() {
            Next::Item(item) => Some(item),
            Next::Empty | Next::Closed => None,
        }
    }

    /// Marks `item` as no longer being processed. If it was added again while
    /// processing, it is queued again now (even after shutdown, so drains see
    /// it). Calling `done` for a key that is not being processed does nothing.
    pub fn done(&self, item: &T) {
        let shared = &*self.shared;
        let mut guard = shared.state.lock();
        let st = &mut *guard;
        let Some((key, mut slot)) = st.slots.remove_entry(item) else {
            return;
        };
        if !slot.processing {
            st.slots.insert(key, slot);
            return;
        }
        slot.processing = false;
        st.processing -= 1;
        let requeued = slot.dirty;
        if let Some(m) = &shared.metrics
            && let Some(started) = st.started_at.remove(&key)
        {
            m.work_duration.observe(secs_since(started, Instant::now()));
        }
        if requeued {
            // (Queued before its slot is kept back, as in `add`.)
            st.ready.push(key.clone());
            st.slots.insert(key, slot);
        }
        let drained = st.drain && st.processing == 0;
        drop(guard);
        if requeued {
            shared.wake_one_getter();
        }
        if drained {
            shared.wake_drainers();
        }
    }

    /// Number of keys ready to be handed out (not counting keys being
    /// processed, nor keys waiting in a delaying queue's timer heap).
    pub fn len(&self) -> usize {
        self.shared.state.lock().ready.len()
    }

    /// `true` when no key is ready to be handed out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of keys currently held by workers (between `get` and `done`).
    pub fn in_flight(&self) -> usize {
        self.shared.state.lock().processing
    }

    /// `true` once any of the `shut_down*` methods has been called.
    pub fn shutting_down(&self) -> bool {
        self.shared.state.lock().shutting_down
    }

    /// The name given to the builder (empty if none).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Stops admitting keys and wakes every getter. Returns immediately.
    ///
    /// Keys already queued are still handed out by `get`; once the queue is
    /// empty `get` returns `None`. Aborts any drain in progress (the waiting
    /// `shut_down_with_drain*` calls return). A delaying queue drops its
    /// pending delayed keys.
    pub fn shut_down(&self) {
        self.shared.begin_shutdown(false);
    }

    /// Shuts down like [`shut_down`](Self::shut_down) at once, and returns a
    /// future that waits until no key is being processed — client-go's
    /// `ShutDownWithDrain`.
    ///
    /// The queue is shutting down when this call returns, whether or not the
    /// future is ever polled (so it may sit in a `tokio::select!` branch that
    /// loses). Like client-go it waits **only for in-flight keys**: if nothing
    /// is being processed at that moment the future is ready at once, even if
    /// ready keys remain (workers still receive them from `get`). Use
    /// [`shut_down_with_drain_all`](Self::shut_down_with_drain_all) to also
    /// wait for those. A concurrent [`shut_down`](Self::shut_down) aborts the
    /// wait. Workers must call `done`, or the future never completes.
    pub fn shut_down_with_drain(&self) -> impl Future<Output = ()> + Send + 'static {
        self.shared.begin_shutdown(true);
        let shared = Arc::clone(&self.shared);
        async move { shared.wait_drained(false).await }
    }

    /// Shuts down at once, and returns a future that waits until every key is
    /// done: the keys in flight **and** the keys still queued (including keys
    /// requeued by `done` because they were re-added while processing). This
    /// goes beyond client-go. Needs running workers to make progress; a
    /// concurrent [`shut_down`](Self::shut_down) aborts the wait. Like
    /// [`shut_down_with_drain`](Self::shut_down_with_drain), the queue is
    /// shutting down when this call returns.
    pub fn shut_down_with_drain_all(&self) -> impl Future<Output = ()> + Send + 'static {
        self.shared.begin_shutdown(true);
        let shared = Arc::clone(&self.shared);
        async move { shared.wait_drained(true).await }
    }

    /// Blocking version of [`shut_down_with_drain`](Self::shut_down_with_drain)
    /// for plain threads.
    pub fn shut_down_with_drain_blocking(&self) {
        self.shared.begin_shutdown(true);
        self.shared.wait_drained_blocking(false);
    }

    /// Blocking version of
    /// [`shut_down_with_drain_all`](Self::shut_down_with_drain_all) for plain
    /// threads.
    pub fn shut_down_with_drain_all_blocking(&self) {
        self.shared.begin_shutdown(true);
        self.shared.wait_drained_blocking(true);
    }

    pub(crate) fn metrics(&self) -> Option<&QueueMetrics> {
        self.shared.metrics.as_ref()
    }

    /// A token cancelled when the queue shuts down or is dropped.
    pub(crate) fn shutdown_token(&self) -> &CancellationToken {
        &self.shared.shutdown
    }

    /// Registers `hook`, called by every `shut_down*` call once the queue is
    /// marked shutting down (not on drop).
    pub(crate) fn on_shutdown(&self, hook: ShutdownHook) {
        self.shared.shutdown_hooks.lock().push(hook);
        if self.shutting_down()
            && let Some(hook) = self.shared.shutdown_hooks.lock().last()
        {
            hook();
        }
    }
}

impl<T: QueueItem> Shared<T> {
    fn try_next(&self) -> Next<T> {
        let mut guard = self.state.lock();
        self.next_locked(&mut guard)
    }

    fn next_locked(&self, st: &mut State<T>) -> Next<T> {
        let (item, slot) = match &mut st.ready {
            Ready::Fifo(ready) => {
                let Some(item) = ready.pop_front() else {
                    return if st.shutting_down { Next::Closed } else { Next::Empty };
                };
                let slot = st.slots.get_mut(&item).expect("workqueue invariant: every ready key has a slot");
                (item, slot)
            }
            Ready::Custom(ready) => {
                // A backing queue that hands out a key it was not given (or one twice) has it
                // passed over, as many times as it held keys at most; drainers then look again.
                let (limit, mut strays) = (ready.len() + 1, 0);
                loop {
                    let popped = if strays < limit { ready.pop() } else { None };
                    let Some(item) = popped else {
                        if strays > 0 && st.drain {
                            self.wake_drainers();
                        }
                        return if st.shutting_down { Next::Closed } else { Next::Empty };
                    };
                    match st.slots.get_mut(&item) {
                        Some(slot) if slot.dirty && !slot.processing => break (item, slot),
                        _ => strays += 1,
                    }
                }
            }
        };
        slot.dirty = false;
        slot.processing = true;
        st.processing += 1;
        if let Some(m) = &self.metrics {
            let now = Instant::now();
            m.depth.dec();
            let key = match st.added_at.remove_entry(&item) {
                Some((key, added)) => {
                    m.queue_duration.observe(secs_since(added, now));
                    key
                }
                None => item.clone(),
            };
            st.started_at.insert(key, now);
        }
        Next::Item(item)
    }

    fn wake_one_getter(&self) {
        self.readable.notify_one();
        self.readable_cv.notify_one();
    }

    fn wake_drainers(&self) {
        self.drained.notify_waiters();
        self.drained_cv.notify_all();
    }

    fn begin_shutdown(&self, drain: bool) {
        {
            let mut st = self.state.lock();
            st.drain = drain;
            st.shutting_down = true;
        }
        self.shutdown.cancel();
        for hook in self.shutdown_hooks.lock().iter() {
            hook();
        }
        self.readable.notify_waiters();
        self.readable_cv.notify_all();
        if !drain {
            self.wake_drainers();
        }
    }

    /// Whether a drainer may stop waiting.
    fn drain_finished(st: &State<T>, all: bool) -> bool {
        !st.drain || (st.processing == 0 && (!all || st.ready.is_empty()))
    }

    async fn wait_drained(&self, all: bool) {
        loop {
            let notified = pin!(self.drained.notified());
            if Self::drain_finished(&self.state.lock(), all) {
                return;
            }
            notified.await;
        }
    }

    fn wait_drained_blocking(&self, all: bool) {
        let mut guard = self.state.lock();
        while !Self::drain_finished(&guard, all) {
            self.drained_cv.wait(&mut guard);
        }
    }

    /// Recomputes the two "unfinished work" gauges from the keys in flight.
    fn update_unfinished_work(&self) {
        let Some(m) = &self.metrics else { return };
        let st = self.state.lock();
        let now = Instant::now();
        let (mut total, mut longest) = (0.0_f64, 0.0_f64);
        for &started in st.started_at.values() {
            let age = secs_since(started, now);
            total += age;
            longest = longest.max(age);
        }
        drop(st);
        m.unfinished_work.set(total);
        m.longest_running.set(longest);
    }
}

fn secs_since(earlier: Instant, now: Instant) -> f64 {
    now.saturating_duration_since(earlier).as_secs_f64()
}

/// Configuration of a work queue. Obtain one from [`WorkQueue::builder`].
///
/// # Examples
///
/// ```
/// use informer::workqueue::{WorkQueue, WorkQueueMetrics};
/// use prometheus_client::registry::Registry;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut registry = Registry::default();
/// let metrics = WorkQueueMetrics::new(&mut registry);
/// let queue: WorkQueue<u64> = WorkQueue::builder()
///     .name("nodes")
///     .metrics(&metrics)
///     .build();
/// queue.add(7);
/// assert_eq!(queue.name(), "nodes");
/// assert_eq!(metrics.adds("nodes"), Some(1));
/// # }
/// ```
pub struct WorkQueueBuilder<T> {
    pub(crate) name: String,
    pub(crate) metrics: Option<Arc<dyn MetricsProvider>>,
    pub(crate) runtime: Option<Handle>,
    /// Built as a delaying (or rate-limiting) queue.
    pub(crate) delaying: bool,
    /// The backing queue of the ready keys, when not the FIFO.
    /// (Behind a lock only so that the builder is `Sync` whatever the backing queue.)
    queue: Option<Mutex<Box<dyn BackingQueue<T>>>>,
    _item: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for WorkQueueBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkQueueBuilder")
            .field("name", &self.name)
            .field("metrics", &self.metrics.is_some())
            .field("runtime", &self.runtime.is_some())
            .field("queue", &if self.queue.is_some() { "custom" } else { "fifo" })
            .finish()
    }
}

impl<T: QueueItem> WorkQueueBuilder<T> {
    /// Names the queue; the name is the `name` label of its metrics.
    /// Metrics are only recorded for named queues (as in client-go).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Records client-go's work-queue metrics into `metrics` (see
    /// [`WorkQueueMetrics`]); ignored unless the queue also has a
    /// [`name`](Self::name).
    pub fn metrics(mut self, metrics: &WorkQueueMetrics) -> Self {
        self.metrics = Some(Arc::new(metrics.clone()));
        self
    }

    /// Records client-go's work-queue metrics through another metrics library
    /// (client-go's `MetricsProvider` of a queue's config, see
    /// [`MetricsProvider`]); ignored unless the queue also has a
    /// [`name`](Self::name). Without it, a named queue reports to the provider
    /// set with [`set_provider`](super::set_provider), if any.
    pub fn metrics_provider(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics = Some(provider);
        self
    }

    /// Keeps the ready keys in `queue` rather than in a FIFO (client-go's
    /// `TypedQueueConfig.Queue`): it decides which ready key a worker gets next,
    /// and may reorder a waiting key added again ([`BackingQueue::touch`]).
    /// Deduplication, processing and shutdown stay the work queue's.
    pub fn queue(mut self, queue: impl BackingQueue<T> + 'static) -> Self {
        self.queue = Some(Mutex::new(Box::new(queue)));
        self
    }

    /// Runtime on which background tasks (a delaying queue's timer, the
    /// metrics ticker) are spawned. Defaults to the runtime current at build
    /// time.
    pub fn runtime(mut self, handle: Handle) -> Self {
        self.runtime = Some(handle);
        self
    }

    /// The runtime to spawn background tasks on, if any.
    pub(crate) fn resolve_runtime(&self) -> Option<Handle> {
        self.runtime.clone().or_else(|| Handle::try_current().ok())
    }

    /// Builds a basic [`WorkQueue`].
    ///
    /// Without metrics nothing is spawned and no runtime is needed. With
    /// metrics, a ticker refreshing the "unfinished work" gauges every 500 ms
    /// is spawned on the runtime (see [`runtime`](Self::runtime)), or on a
    /// small std thread when there is none.
    pub fn build(mut self) -> WorkQueue<T> {
        let runtime = self.resolve_runtime();
        // A named queue reports to its own provider, else to the global one.
        let provider = self.metrics.clone().or_else(super::metrics::global_provider).filter(|_| !self.name.is_empty());
        let metrics = provider.map(|m| QueueMetrics::new(m.as_ref(), &self.name, self.delaying));
        let with_metrics = metrics.is_some();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                ready: match self.queue.take() {
                    Some(queue) => Ready::Custom(queue.into_inner()),
                    None => Ready::Fifo(VecDeque::new()),
                },
                slots: FastMap::default(),
                added_at: FastMap::default(),
                started_at: FastMap::default(),
                processing: 0,
                shutting_down: false,
                drain: false,
            }),
            readable: Notify::new(),
            readable_cv: Condvar::new(),
            drained: Notify::new(),
            drained_cv: Condvar::new(),
            metrics,
            name: self.name,
            shutdown: CancellationToken::new(),
            shutdown_hooks: Mutex::new(Vec::new()),
        });
        if with_metrics {
            spawn_metrics_ticker(&shared, runtime);
        }
        WorkQueue { shared }
    }
}

/// Starts the periodic refresh of the "unfinished work" gauges. It holds a
/// weak reference only and stops on shutdown or when the queue is dropped.
fn spawn_metrics_ticker<T: QueueItem>(shared: &Arc<Shared<T>>, runtime: Option<Handle>) {
    let weak: Weak<Shared<T>> = Arc::downgrade(shared);
    let stop = shared.shutdown.clone();
    match runtime {
        Some(handle) => {
            // Ticks are counted from build time, not from the task's first poll.
            let start = Instant::now() + UNFINISHED_WORK_UPDATE_PERIOD;
            handle.spawn(async move {
                let mut ticker = tokio::time::interval_at(start, UNFINISHED_WORK_UPDATE_PERIOD);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        biased;
                        () = stop.cancelled() => return,
                        _ = ticker.tick() => {}
                    }
                    match weak.upgrade() {
                        Some(shared) => shared.update_unfinished_work(),
                        None => return,
                    }
                }
            });
        }
        None => {
            let spawned = std::thread::Builder::new().name("workqueue-metrics".into()).spawn(move || {
                loop {
                    std::thread::sleep(UNFINISHED_WORK_UPDATE_PERIOD);
                    if stop.is_cancelled() {
                        return;
                    }
                    match weak.upgrade() {
                        Some(shared) => shared.update_unfinished_work(),
                        None => return,
                    }
                }
            });
            if let Err(err) = spawned {
                tracing::warn!(%err, "workqueue: cannot start the unfinished-work metrics thread");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashSet, VecDeque};

    use proptest::prelude::*;

    use super::*;

    impl<T: QueueItem> WorkQueue<T> {
        /// Checks the module invariants against the raw state.
        fn assert_invariants(&self) {
            self.assert_invariants_with(None);
        }

        /// [`Self::assert_invariants`], the ready keys read from `backing` when the queue
        /// has a backing queue.
        fn assert_invariants_with(&self, backing: Option<Vec<T>>) {
            let st = self.shared.state.lock();
            let mut seen = HashSet::new();
            let ready: Vec<T> = match (&st.ready, backing) {
                (Ready::Fifo(ready), _) => ready.iter().cloned().collect(),
                (Ready::Custom(_), Some(keys)) => keys,
                (Ready::Custom(_), None) => return,
            };
            for key in &ready {
                assert!(seen.insert(key.clone()), "key queued twice");
                let slot = st.slots.get(key).expect("ready key without slot");
                assert!(slot.dirty && !slot.processing, "{slot:?}");
            }
            let mut processing = 0;
            for (key, slot) in &st.slots {
                assert!(slot.dirty || slot.processing, "idle slot kept: {slot:?}");
                if slot.processing {
                    processing += 1;
                    assert!(!seen.contains(key), "processing key is queued");
                } else {
                    assert!(seen.contains(key), "dirty idle key not queued");
                }
            }
            assert_eq!(processing, st.processing);
            if self.shared.metrics.is_some() {
                let dirty: HashSet<&T> = st.slots.iter().filter(|(_, s)| s.dirty).map(|(k, _)| k).collect();
                let busy: HashSet<&T> = st.slots.iter().filter(|(_, s)| s.processing).map(|(k, _)| k).collect();
                assert!(st.added_at.keys().collect::<HashSet<_>>() == dirty, "one add time per dirty key");
                assert!(st.started_at.keys().collect::<HashSet<_>>() == busy, "one start time per key in flight");
            } else {
                assert!(st.added_at.is_empty() && st.started_at.is_empty(), "timestamps kept without metrics");
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Add(u8),
        Get,
        Done(u8),
        ShutDown,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..6).prop_map(Op::Add),
            3 => Just(Op::Get),
            3 => (0u8..6).prop_map(Op::Done),
            1 => Just(Op::ShutDown),
        ]
    }

    /// How the ready keys are ordered: the inline FIFO, or a backing queue handing out the
    /// oldest, the newest or the smallest key.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Order {
        Inline,
        Fifo,
        Lifo,
        Smallest,
    }

    impl Order {
        /// Takes the next key out of `keys` in this order.
        fn take(self, keys: &mut VecDeque<u8>) -> Option<u8> {
            match self {
                Order::Inline | Order::Fifo => keys.pop_front(),
                Order::Lifo => keys.pop_back(),
                Order::Smallest => {
                    let i = keys.iter().enumerate().min_by_key(|(_, k)| **k).map(|(i, _)| i)?;
                    keys.remove(i)
                }
            }
        }
    }

    /// A backing queue whose keys the test can read.
    struct Recorded {
        order: Order,
        keys: Arc<parking_lot::Mutex<VecDeque<u8>>>,
    }

    impl BackingQueue<u8> for Recorded {
        fn push(&mut self, item: u8) {
            self.keys.lock().push_back(item);
        }
        fn pop(&mut self) -> Option<u8> {
            self.order.take(&mut self.keys.lock())
        }
        fn len(&self) -> usize {
            self.keys.lock().len()
        }
    }

    /// The reference semantics, written as plainly as possible.
    #[derive(Default)]
    struct Model {
        queue: VecDeque<u8>,
        dirty: HashSet<u8>,
        processing: HashSet<u8>,
        shutting_down: bool,
        order: Option<Order>,
    }

    impl Model {
        fn add(&mut self, k: u8) {
            if self.shutting_down || !self.dirty.insert(k) {
                return;
            }
            if !self.processing.contains(&k) {
                self.queue.push_back(k);
            }
        }
        fn get(&mut self) -> Option<u8> {
            let k = self.order.unwrap_or(Order::Inline).take(&mut self.queue)?;
            self.dirty.remove(&k);
            self.processing.insert(k);
            Some(k)
        }
        fn done(&mut self, k: u8) {
            if self.processing.remove(&k) && self.dirty.contains(&k) {
                self.queue.push_back(k);
            }
        }
    }

    proptest! {
        #[test]
        fn matches_the_reference_model(
            ops in proptest::collection::vec(op(), 0..200),
            metrics in any::<bool>(),
            order in prop_oneof![Just(Order::Inline), Just(Order::Fifo), Just(Order::Lifo), Just(Order::Smallest)],
        ) {
            let mut builder = WorkQueue::builder();
            if metrics {
                let m = super::super::metrics::WorkQueueMetrics::new(&mut prometheus_client::registry::Registry::default());
                builder = builder.name("model").metrics(&m);
            }
            let keys = Arc::new(parking_lot::Mutex::new(VecDeque::new()));
            if order != Order::Inline {
                builder = builder.queue(Recorded { order, keys: keys.clone() });
            }
            let q: WorkQueue<u8> = builder.build();
            let mut model = Model { order: Some(order), ..Model::default() };
            for op in ops {
                match op {
                    Op::Add(k) => { q.add(k); model.add(k); }
                    Op::Get => prop_assert_eq!(q.try_get(), model.get()),
                    Op::Done(k) => { q.done(&k); model.done(k); }
                    Op::ShutDown => { q.shut_down(); model.shutting_down = true; }
                }
                q.assert_invariants_with(Some(keys.lock().iter().copied().collect()));
                prop_assert_eq!(q.len(), model.queue.len());
                prop_assert_eq!(q.in_flight(), model.processing.len());
                prop_assert_eq!(q.shutting_down(), model.shutting_down);
            }
        }
    }

    /// The gauges are computed from the keys in flight only: a backlog of
    /// dirty keys is neither visited nor counted.
    #[tokio::test(start_paused = true)]
    async fn unfinished_work_is_computed_from_keys_in_flight_only() {
        let mut registry = prometheus_client::registry::Registry::default();
        let m = super::super::metrics::WorkQueueMetrics::new(&mut registry);
        let q: WorkQueue<u32> = WorkQueue::builder().name("backlog").metrics(&m).build();
        for k in 0..10_000 {
            q.add(k);
        }
        let a = q.try_get().unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        let b = q.try_get().unwrap();
        q.add(a); // dirty again while in flight
        tokio::time::advance(Duration::from_secs(2)).await;
        {
            let st = q.shared.state.lock();
            assert_eq!(st.started_at.len(), 2, "only the keys in flight have a start time");
            assert_eq!(st.added_at.len(), 9_999);
        }
        q.assert_invariants();
        q.shared.update_unfinished_work();
        assert_eq!(m.unfinished_work_seconds("backlog"), Some(5.0));
        assert_eq!(m.longest_running_processor_seconds("backlog"), Some(3.0));
        q.done(&a);
        q.done(&b);
        q.assert_invariants();
        q.shared.update_unfinished_work();
        assert_eq!(m.unfinished_work_seconds("backlog"), Some(0.0));
        assert_eq!(m.longest_running_processor_seconds("backlog"), Some(0.0));
    }

    /// A drain marks the queue shutting down at the call, even when its
    /// future is dropped unpolled (the losing branch of a `select!`).
    #[tokio::test(start_paused = true)]
    async fn drain_shuts_down_at_the_call_without_being_polled() {
        let q: WorkQueue<u8> = WorkQueue::new();
        q.add(1);
        let taken = q.try_get().unwrap();
        let drain = q.shut_down_with_drain();
        assert!(q.shutting_down());
        drop(drain);
        q.add(2);
        assert_eq!(q.len(), 0, "nothing is admitted after the call");

        let other: WorkQueue<u8> = WorkQueue::new();
        other.add(1);
        let _in_flight = other.try_get().unwrap();
        tokio::select! {
            biased;
            () = std::future::ready(()) => {}
            () = other.shut_down_with_drain_all() => unreachable!("a key is still in flight"),
        }
        assert!(other.shutting_down());
        q.done(&taken);
    }

    #[test]
    fn get_blocking_wakes_on_add_from_another_thread() {
        let q: WorkQueue<u8> = WorkQueue::new();
        let getter = {
            let q = q.clone();
            std::thread::spawn(move || q.get_blocking())
        };
        q.add(9);
        assert_eq!(getter.join().unwrap(), Some(9));
        q.assert_invariants();
    }
}
