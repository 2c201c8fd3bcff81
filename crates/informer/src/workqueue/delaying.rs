//! The delaying queue: a [`WorkQueue`] plus [`add_after`](DelayingQueue::add_after),
//! which adds a key once a delay has passed (client-go's
//! `TypedDelayingInterface`).
//!
//! Pending keys wait in an ordered map `(ready time, sequence) → key` (ties in
//! insertion order) next to a map `key → (ready time, sequence)`. One timer
//! sleeps until the earliest ready time, then moves every due key into the
//! work queue in ready-time order. The timer is a Tokio task (using
//! `tokio::time`, so a paused test clock drives it) on the runtime current at
//! build time or given to the builder; without one it is a std thread.
//!
//! # Invariants
//!
//! * A key is pending at most once and has exactly one entry in the ordered
//!   map: the map `key → (ready time, sequence)` names that entry. A later
//!   `add_after` never postpones it; an earlier one replaces the entry.
//! * A zero delay adds immediately.
//! * Once the queue shuts down (any `shut_down*`), `add_after` is ignored,
//!   pending keys are dropped at the call and the timer stops. Dropping the
//!   last `DelayingQueue` handle stops the timer too.
//! * A pending key is never lost while the queue runs: if the runtime that
//!   runs the timer task shuts down first, the timer moves to a std thread;
//!   if no thread can be started, pending keys are added at once and so is
//!   every later `add_after`.
//! * Every `add_after` accepted while not shutting down counts one
//!   `workqueue_retries_total`, as in client-go.

use std::collections::BTreeMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::queue::{FastMap, QueueItem, WorkQueue, WorkQueueBuilder};

/// Used for a ready time beyond what `Instant` can represent (about a century).
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// The position of a pending key: its ready time, then the order of requests.
type Slot = (Instant, u64);

struct DelayState<T> {
    /// Every pending key, earliest first.
    waiting: BTreeMap<Slot, T>,
    /// The entry of each pending key in `waiting`.
    pending: FastMap<T, Slot>,
    next_seq: u64,
    /// The deadline the timer is sleeping until, if any.
    next_wake: Option<Instant>,
    /// No timer runs: `add_after` adds at once.
    no_timer: bool,
}

/// Wakes the timer, whichever form it has.
#[derive(Default)]
struct Signal {
    /// Set by a wake-up, cleared by the timer thread when it looks again.
    kicked: Mutex<bool>,
    /// Wakes the timer thread.
    kicked_cv: Condvar,
    /// Wakes the timer task.
    notify: Notify,
}

impl Signal {
    fn kick(&self) {
        *self.kicked.lock() = true;
        self.kicked_cv.notify_one();
        self.notify.notify_one();
    }
}

struct DelayShared<T> {
    queue: WorkQueue<T>,
    state: Mutex<DelayState<T>>,
    signal: Arc<Signal>,
    /// Child of the queue's shutdown token; also cancelled on drop.
    stop: CancellationToken,
}

impl<T> Drop for DelayShared<T> {
    fn drop(&mut self) {
        self.stop.cancel();
        self.signal.kick();
    }
}

/// A [`WorkQueue`] that can also add keys after a delay (client-go's
/// `TypedDelayingInterface`).
///
/// Dereferences to [`WorkQueue`], so `add`, `get`, `done`, `shut_down`, … are
/// available directly. Cloning is cheap and clones share the queue.
///
/// Built with [`WorkQueueBuilder::build_delaying`] or [`DelayingQueue::new`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use informer::workqueue::DelayingQueue;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let queue: DelayingQueue<&'static str> = DelayingQueue::new();
/// let start = tokio::time::Instant::now();
/// queue.add_after("later", Duration::from_secs(2));
/// queue.add_after("sooner", Duration::from_secs(1));
/// assert_eq!(queue.len(), 0);
/// assert_eq!(queue.pending_len(), 2);
///
/// assert_eq!(queue.get().await, Some("sooner"));
/// assert_eq!(start.elapsed(), Duration::from_secs(1));
/// queue.done(&"sooner");
/// assert_eq!(queue.get().await, Some("later"));
/// # }
/// ```
pub struct DelayingQueue<T> {
    shared: Arc<DelayShared<T>>,
}

impl<T> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        Self { shared: Arc::clone(&self.shared) }
    }
}

impl<T> Deref for DelayingQueue<T> {
    type Target = WorkQueue<T>;

    fn deref(&self) -> &WorkQueue<T> {
        &self.shared.queue
    }
}

impl<T> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pending = self.shared.state.lock().pending.len();
        f.debug_struct("DelayingQueue").field("queue", &self.shared.queue).field("pending", &pending).finish()
    }
}

impl<T: QueueItem> Default for DelayingQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: QueueItem> DelayingQueue<T> {
    /// Creates an unnamed delaying queue without metrics. Its timer is a task
    /// on the current Tokio runtime, or a std thread outside of one (see
    /// [`WorkQueueBuilder::build_delaying`]).
    pub fn new() -> Self {
        WorkQueue::builder().build_delaying()
    }

    /// Adds `item` once `delay` has passed.
    ///
    /// * ignored when the queue is shutting down;
    /// * a zero delay adds immediately (like [`WorkQueue::add`]);
    /// * if `item` is already pending, the earlier ready time wins;
    /// * the key is added through [`WorkQueue::add`], so the usual
    ///   deduplication applies when it fires.
    pub fn add_after(&self, item: T, delay: Duration) {
        let shared = &*self.shared;
        if shared.queue.shutting_down() {
            return;
        }
        if let Some(r) = shared.queue.metrics().and_then(|m| m.retries.as_ref()) {
            r.inc();
        }
        if delay.is_zero() {
            shared.queue.add(item);
            return;
        }
        let now = Instant::now();
        let ready_at = now.checked_add(delay).or_else(|| now.checked_add(FAR_FUTURE)).unwrap_or(now);
        let mut guard = shared.state.lock();
        if shared.stop.is_cancelled() {
            return;
        }
        if guard.no_timer {
            drop(guard);
            shared.queue.add(item);
            return;
        }
        let st = &mut *guard;
        let slot = (ready_at, st.next_seq);
        st.next_seq += 1;
        match st.pending.entry(item) {
            Entry::Occupied(mut occupied) => {
                if ready_at >= occupied.get().0 {
                    return;
                }
                let old = std::mem::replace(occupied.get_mut(), slot);
                let key = st.waiting.remove(&old).unwrap_or_else(|| occupied.key().clone());
                st.waiting.insert(slot, key);
            }
            Entry::Vacant(vacant) => {
                let key = vacant.key().clone();
                vacant.insert(slot);
                st.waiting.insert(slot, key);
            }
        }
        let wake = st.next_wake.is_none_or(|next| ready_at < next);
        if wake {
            st.next_wake = Some(ready_at);
        }
        drop(guard);
        if wake {
            shared.signal.kick();
        }
    }

    /// Number of distinct keys waiting for their delay to pass.
    pub fn pending_len(&self) -> usize {
        self.shared.state.lock().pending.len()
    }
}

impl<T: QueueItem> DelayShared<T> {
    /// Moves every key due at `now` into `due` (earliest first) and returns
    /// the next deadline.
    fn take_due(&self, now: Instant, due: &mut Vec<T>) -> Option<Instant> {
        let mut guard = self.state.lock();
        let st = &mut *guard;
        while let Some(entry) = st.waiting.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let item = entry.remove();
            st.pending.remove(&item);
            due.push(item);
        }
        st.next_wake = st.waiting.first_key_value().map(|(slot, _)| slot.0);
        st.next_wake
    }

    /// Drops every pending key (on shutdown).
    fn clear(&self) {
        let mut st = self.state.lock();
        st.waiting.clear();
        st.pending.clear();
        st.next_wake = None;
    }

    /// Adds every pending key now (earliest first) and makes `add_after` add
    /// at once from then on: keys still reach the queue when no timer can run.
    fn without_timer(&self) {
        let waiting = {
            let mut st = self.state.lock();
            st.no_timer = true;
            st.pending.clear();
            st.next_wake = None;
            std::mem::take(&mut st.waiting)
        };
        for item in waiting.into_values() {
            self.queue.add(item);
        }
    }

    /// The timer task ended without being stopped (its runtime shut down):
    /// goes on with a timer thread, or without a timer.
    fn timer_task_lost(self: &Arc<Self>) {
        if self.stop.is_cancelled() {
            return;
        }
        match spawn_timer_thread(Arc::downgrade(self), Arc::clone(&self.signal), self.stop.clone()) {
            Ok(()) => tracing::debug!(queue = %self.queue.name(), "workqueue: the delay timer moved to a thread"),
            Err(err) => {
                tracing::warn!(queue = %self.queue.name(), %err, "workqueue: no delay timer can run; delayed keys are added at once");
                self.without_timer();
            }
        }
    }
}

/// Marks an end of the timer task that was not asked for (the task dropped
/// by its runtime's shutdown, or never started).
struct TaskExit<T: QueueItem> {
    weak: Weak<DelayShared<T>>,
    finished: bool,
}

impl<T: QueueItem> Drop for TaskExit<T> {
    fn drop(&mut self) {
        if !self.finished
            && let Some(shared) = self.weak.upgrade()
        {
            shared.timer_task_lost();
        }
    }
}

/// The timer task: sleeps until the earliest ready time, adds due keys.
async fn run_timer<T: QueueItem>(mut exit: TaskExit<T>, signal: Arc<Signal>, stop: CancellationToken) {
    let mut due = Vec::new();
    loop {
        let next = {
            let Some(shared) = exit.weak.upgrade() else { break };
            let next = shared.take_due(Instant::now(), &mut due);
            for item in due.drain(..) {
                shared.queue.add(item);
            }
            next
        };
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            () = signal.notify.notified() => {}
            () = sleep_until(next) => {}
        }
    }
    exit.finished = true;
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The timer as a std thread: the same loop as [`run_timer`], waiting on the
/// signal's condition variable.
fn spawn_timer_thread<T: QueueItem>(
    weak: Weak<DelayShared<T>>,
    signal: Arc<Signal>,
    stop: CancellationToken,
) -> std::io::Result<()> {
    std::thread::Builder::new().name("workqueue-delay".into()).spawn(move || {
        let mut due = Vec::new();
        loop {
            let next = {
                let Some(shared) = weak.upgrade() else { return };
                if stop.is_cancelled() {
                    return;
                }
                let next = shared.take_due(Instant::now(), &mut due);
                for item in due.drain(..) {
                    shared.queue.add(item);
                }
                next
            };
            let mut kicked = signal.kicked.lock();
            while !*kicked && !stop.is_cancelled() {
                match next {
                    Some(deadline) => {
                        let timeout = deadline.saturating_duration_since(Instant::now());
                        if signal.kicked_cv.wait_for(&mut kicked, timeout).timed_out() {
                            break;
                        }
                    }
                    None => signal.kicked_cv.wait(&mut kicked),
                }
            }
            *kicked = false;
        }
    })?;
    Ok(())
}

impl<T: QueueItem> WorkQueueBuilder<T> {
    /// Builds a [`DelayingQueue`] and starts its timer.
    ///
    /// The timer is a task on the [`runtime`](Self::runtime) given, else on
    /// the Tokio runtime current at this call; without either it is a std
    /// thread (named `workqueue-delay`), which follows the real clock. If the
    /// runtime shuts down while the queue is in use, the timer moves to a
    /// std thread, so delayed keys still fire. Should no thread be available,
    /// delayed keys are added at once instead (and a warning is logged):
    /// a key given to `add_after` is never dropped while the queue runs.
    pub fn build_delaying(mut self) -> DelayingQueue<T> {
        self.delaying = true;
        let runtime = self.resolve_runtime();
        let queue = match &runtime {
            Some(handle) => self.runtime(handle.clone()).build(),
            None => self.build(),
        };
        let stop = queue.shutdown_token().child_token();
        let signal = Arc::new(Signal::default());
        let shared = Arc::new(DelayShared {
            queue,
            state: Mutex::new(DelayState {
                waiting: BTreeMap::new(),
                pending: FastMap::default(),
                next_seq: 0,
                next_wake: None,
                no_timer: false,
            }),
            signal: Arc::clone(&signal),
            stop: stop.clone(),
        });
        let weak = Arc::downgrade(&shared);
        shared.queue.on_shutdown(Box::new({
            let weak = weak.clone();
            move || {
                if let Some(shared) = weak.upgrade() {
                    shared.clear();
                    shared.signal.kick();
                }
            }
        }));
        match runtime {
            Some(handle) => {
                // A task dropped unpolled (its runtime already shut down) drops `TaskExit` too.
                drop(handle.spawn(run_timer(TaskExit { weak, finished: false }, signal, stop)));
            }
            None => {
                if let Err(err) = spawn_timer_thread(weak, signal, stop) {
                    tracing::warn!(queue = %shared.queue.name(), %err, "workqueue: no delay timer can run; delayed keys are added at once");
                    shared.without_timer();
                }
            }
        }
        DelayingQueue { shared }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries in the ordered map, for checks.
    fn entries<T: QueueItem>(q: &DelayingQueue<T>) -> usize {
        let st = q.shared.state.lock();
        assert_eq!(st.waiting.len(), st.pending.len(), "one entry per pending key");
        for (slot, key) in &st.waiting {
            assert_eq!(st.pending.get(key), Some(slot), "the key map names the entry");
        }
        st.waiting.len()
    }

    #[tokio::test(start_paused = true)]
    async fn moving_a_key_earlier_replaces_its_entry() {
        let q: DelayingQueue<char> = DelayingQueue::new();
        q.add_after('x', Duration::from_millis(30));
        q.add_after('x', Duration::from_millis(10)); // replaces the 30 ms entry
        q.add_after('x', Duration::from_millis(20)); // later: ignored
        assert_eq!(entries(&q), 1);
        let mut due = Vec::new();
        let next = q.shared.take_due(Instant::now() + Duration::from_millis(10), &mut due);
        assert_eq!(due, ['x']);
        assert_eq!(next, None, "nothing is left behind for 30 ms");
        assert_eq!(entries(&q), 0);
    }

    /// A key requeued an hour out, then retried sooner, leaves nothing
    /// behind once it fired, however many times this repeats (a reconcile
    /// asking to be requeued later, then failing and being rate limited).
    #[tokio::test(start_paused = true)]
    async fn requeue_later_then_sooner_leaves_no_entry_behind() {
        let q: DelayingQueue<u32> = DelayingQueue::new();
        let mut due = Vec::new();
        for _ in 0..100 {
            for key in 0..10 {
                q.add_after(key, Duration::from_secs(3600));
                q.add_after(key, Duration::from_millis(5));
            }
            assert_eq!(entries(&q), 10);
            tokio::time::advance(Duration::from_millis(5)).await;
            q.shared.take_due(Instant::now(), &mut due);
            assert_eq!(entries(&q), 0, "no entry is left for the hour");
        }
        assert_eq!(q.pending_len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_timer_pending_keys_and_later_delays_are_added_at_once() {
        let q: DelayingQueue<char> = DelayingQueue::new();
        q.add_after('b', Duration::from_secs(20));
        q.add_after('a', Duration::from_secs(10));
        q.shared.without_timer();
        assert_eq!(q.pending_len(), 0);
        assert_eq!(entries(&q), 0);
        q.add_after('c', Duration::from_secs(30));
        assert_eq!(q.pending_len(), 0);
        let got: Vec<char> = std::iter::from_fn(|| q.try_get()).collect();
        assert_eq!(got, ['a', 'b', 'c'], "in ready-time order, then the later add");
    }
}
