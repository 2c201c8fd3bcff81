//! The delaying queue: a [`WorkQueue`] plus [`add_after`](DelayingQueue::add_after),
//! which adds a key once a delay has passed (client-go's
//! `TypedDelayingInterface`).
//!
//! Pending keys wait in a min-heap ordered by ready time (ties in insertion
//! order) next to a map `key → (ready time, sequence)`. One background Tokio
//! task sleeps until the earliest ready time (using `tokio::time`, so a
//! paused test clock drives it), then moves every due key into the work queue
//! in ready-time order.
//!
//! # Invariants
//!
//! * A key is pending at most once: the map holds its earliest requested
//!   ready time; a later `add_after` never postpones it, an earlier one
//!   advances it. Heap entries that no longer match the map are stale and are
//!   skipped when popped.
//! * A zero delay adds immediately.
//! * Once the queue shuts down (any `shut_down*`), `add_after` is ignored, the
//!   timer task stops and pending keys are dropped. Dropping the last
//!   `DelayingQueue` handle stops the task too.
//! * Every `add_after` accepted while not shutting down counts one
//!   `workqueue_retries_total`, as in client-go.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::queue::{FastMap, QueueItem, WorkQueue, WorkQueueBuilder};

/// Used for a ready time beyond what `Instant` can represent (about a century).
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// One heap entry; ordered so that `BinaryHeap` pops the earliest first.
struct Waiting<T> {
    ready_at: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Waiting<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ready_at == other.ready_at && self.seq == other.seq
    }
}

impl<T> Eq for Waiting<T> {}

impl<T> PartialOrd for Waiting<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Waiting<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: the max-heap's top is the earliest (ready_at, seq).
        (other.ready_at, other.seq).cmp(&(self.ready_at, self.seq))
    }
}

struct DelayState<T> {
    heap: BinaryHeap<Waiting<T>>,
    /// The live entry of each pending key.
    pending: FastMap<T, (Instant, u64)>,
    next_seq: u64,
    /// The deadline the timer task is sleeping until, if any.
    next_wake: Option<Instant>,
}

struct DelayShared<T> {
    queue: WorkQueue<T>,
    state: Mutex<DelayState<T>>,
    /// Wakes the timer task when a key becomes the earliest.
    wake: Arc<Notify>,
    /// Child of the queue's shutdown token; also cancelled on drop.
    stop: CancellationToken,
}

impl<T> Drop for DelayShared<T> {
    fn drop(&mut self) {
        self.stop.cancel();
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
    /// Creates an unnamed delaying queue without metrics.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (the timer task needs one); use
    /// [`WorkQueueBuilder::runtime`] to pick one explicitly.
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
        if let Some(m) = shared.queue.metrics() {
            m.retries.inc();
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
        let st = &mut *guard;
        let seq = st.next_seq;
        st.next_seq += 1;
        let key = match st.pending.entry(item) {
            Entry::Occupied(mut occupied) => {
                if ready_at >= occupied.get().0 {
                    return;
                }
                *occupied.get_mut() = (ready_at, seq);
                occupied.key().clone()
            }
            Entry::Vacant(vacant) => {
                let key = vacant.key().clone();
                vacant.insert((ready_at, seq));
                key
            }
        };
        st.heap.push(Waiting { ready_at, seq, item: key });
        let wake = st.next_wake.is_none_or(|next| ready_at < next);
        if wake {
            st.next_wake = Some(ready_at);
        }
        drop(guard);
        if wake {
            shared.wake.notify_one();
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
        while let Some(top) = st.heap.peek() {
            let live = st.pending.get(&top.item) == Some(&(top.ready_at, top.seq));
            if live && top.ready_at > now {
                break;
            }
            let Some(entry) = st.heap.pop() else { break };
            if live {
                st.pending.remove(&entry.item);
                due.push(entry.item);
            }
        }
        st.next_wake = st.heap.peek().map(|top| top.ready_at);
        st.next_wake
    }

    fn clear(&self) {
        let mut st = self.state.lock();
        st.heap.clear();
        st.pending.clear();
        st.next_wake = None;
    }
}

/// The timer task: sleeps until the earliest ready time, adds due keys.
async fn run_timer<T: QueueItem>(weak: Weak<DelayShared<T>>, wake: Arc<Notify>, stop: CancellationToken) {
    let mut due = Vec::new();
    loop {
        let next = {
            let Some(shared) = weak.upgrade() else { return };
            let next = shared.take_due(Instant::now(), &mut due);
            for item in due.drain(..) {
                shared.queue.add(item);
            }
            next
        };
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            () = wake.notified() => {}
            () = sleep_until(next) => {}
        }
    }
    if let Some(shared) = weak.upgrade() {
        shared.clear();
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

impl<T: QueueItem> WorkQueueBuilder<T> {
    /// Builds a [`DelayingQueue`] and spawns its timer task.
    ///
    /// # Panics
    ///
    /// Without a runtime: neither [`runtime`](Self::runtime) was given nor is
    /// a Tokio runtime current.
    pub fn build_delaying(self) -> DelayingQueue<T> {
        let runtime = self.resolve_runtime().expect(
            "DelayingQueue needs a Tokio runtime: build it inside one or pass \
             WorkQueueBuilder::runtime",
        );
        let queue = self.runtime(runtime.clone()).build();
        let stop = queue.shutdown_token().child_token();
        let wake = Arc::new(Notify::new());
        let shared = Arc::new(DelayShared {
            queue,
            state: Mutex::new(DelayState {
                heap: BinaryHeap::new(),
                pending: FastMap::default(),
                next_seq: 0,
                next_wake: None,
            }),
            wake: Arc::clone(&wake),
            stop: stop.clone(),
        });
        runtime.spawn(run_timer(Arc::downgrade(&shared), wake, stop));
        DelayingQueue { shared }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_pops_earliest_ready_time_then_lowest_sequence() {
        let t0 = Instant::now();
        let mut heap = BinaryHeap::new();
        for (ms, seq, item) in [(30, 0, 'a'), (10, 1, 'b'), (10, 2, 'c'), (20, 3, 'd'), (5, 4, 'e')] {
            heap.push(Waiting { ready_at: t0 + Duration::from_millis(ms), seq, item });
        }
        let order: String = std::iter::from_fn(|| heap.pop().map(|w| w.item)).collect();
        assert_eq!(order, "ebcda");
    }

    #[tokio::test(start_paused = true)]
    async fn stale_heap_entries_are_skipped() {
        let q: DelayingQueue<char> = DelayingQueue::new();
        q.add_after('x', Duration::from_millis(30));
        q.add_after('x', Duration::from_millis(10)); // supersedes the 30 ms entry
        assert_eq!(q.shared.state.lock().heap.len(), 2);
        let mut due = Vec::new();
        let next = q.shared.take_due(Instant::now() + Duration::from_millis(10), &mut due);
        assert_eq!(due, ['x']);
        assert_eq!(next, None, "the stale 30 ms entry was discarded");
        assert!(q.shared.state.lock().heap.is_empty());
    }
}
