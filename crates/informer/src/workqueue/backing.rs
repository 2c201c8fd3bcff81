//! The order in which a work queue hands out its ready keys: client-go's
//! `workqueue.Queue[T]`, the backing queue a `TypedQueueConfig` may replace.
//!
//! A [`WorkQueue`](super::WorkQueue) keeps the bookkeeping (deduplication,
//! processing, shutdown) itself and only asks its backing queue to hold the
//! keys that are ready: [`push`](BackingQueue::push) a key that became ready,
//! [`pop`](BackingQueue::pop) the next one for a worker, and
//! [`touch`](BackingQueue::touch) a ready key that was added again (a queue
//! that orders by priority or by age may move it; the FIFO leaves it).
//!
//! Invariants the work queue keeps for its backing queue: a key is pushed
//! only when it is not in the backing queue, touched only while it is, and
//! popped at most once per push; every call is made under the work queue's
//! lock, so an implementation needs no synchronisation of its own and must
//! not call back into the work queue (that would deadlock). In turn a
//! backing queue must return from `pop` only keys it was given, each once
//! per push, and `None` exactly when it holds none; a key it hands out that
//! is not ready is passed over.

use std::collections::VecDeque;
use std::fmt;

/// Where a work queue keeps its ready keys (client-go's `workqueue.Queue[T]`).
///
/// # Examples
///
/// A queue that hands out the smallest key first:
///
/// ```
/// use std::collections::BTreeSet;
/// use informer::workqueue::{BackingQueue, WorkQueue};
///
/// #[derive(Default)]
/// struct Smallest(BTreeSet<u32>);
///
/// impl BackingQueue<u32> for Smallest {
///     fn push(&mut self, item: u32) {
///         self.0.insert(item);
///     }
///     fn pop(&mut self) -> Option<u32> {
///         self.0.pop_first()
///     }
///     fn len(&self) -> usize {
///         self.0.len()
///     }
/// }
///
/// let queue = WorkQueue::builder().queue(Smallest::default()).build();
/// for key in [3, 1, 2] {
///     queue.add(key);
/// }
/// assert_eq!(queue.try_get(), Some(1));
/// ```
pub trait BackingQueue<T>: Send {
    /// Takes `item`, which just became ready.
    fn push(&mut self, item: T);

    /// `item`, which is ready, was added again before a worker took it
    /// (client-go's `Touch`, where a priority queue can reset its priority).
    /// Nothing by default.
    fn touch(&mut self, item: &T) {
        let _ = item;
    }

    /// Hands out the next ready key; `None` when there is none.
    fn pop(&mut self) -> Option<T>;

    /// How many keys are ready.
    fn len(&self) -> usize;

    /// Whether no key is ready.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The ready keys of a work queue: the FIFO client-go uses by default, held
/// inline, or a backing queue given to the builder.
pub(crate) enum Ready<T> {
    /// Keys in the order they became ready.
    Fifo(VecDeque<T>),
    /// A replacement.
    Custom(Box<dyn BackingQueue<T> + 'static>),
}

impl<T> Ready<T> {
    pub(crate) fn push(&mut self, item: T) {
        match self {
            Ready::Fifo(q) => q.push_back(item),
            Ready::Custom(q) => q.push(item),
        }
    }

    pub(crate) fn touch(&mut self, item: &T) {
        if let Ready::Custom(q) = self {
            q.touch(item);
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Ready::Fifo(q) => q.len(),
            Ready::Custom(q) => q.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> fmt::Debug for Ready<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ready::Fifo(q) => write!(f, "Fifo({})", q.len()),
            Ready::Custom(q) => write!(f, "Custom({})", q.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;
    use std::time::Duration;

    use parking_lot::Mutex;

    use super::*;
    use crate::workqueue::WorkQueue;

    /// Hands out the smallest key first and records the calls it gets.
    #[derive(Default)]
    struct Smallest {
        keys: BTreeSet<u32>,
        calls: Arc<Mutex<Vec<String>>>,
    }

    impl BackingQueue<u32> for Smallest {
        fn push(&mut self, item: u32) {
            assert!(self.keys.insert(item), "{item} pushed while queued");
            self.calls.lock().push(format!("push {item}"));
        }
        fn touch(&mut self, item: &u32) {
            assert!(self.keys.contains(item), "{item} touched while not queued");
            self.calls.lock().push(format!("touch {item}"));
        }
        fn pop(&mut self) -> Option<u32> {
            self.keys.pop_first()
        }
        fn len(&self) -> usize {
            self.keys.len()
        }
    }

    fn queue() -> (WorkQueue<u32>, Arc<Mutex<Vec<String>>>) {
        let backing = Smallest::default();
        let calls = backing.calls.clone();
        (WorkQueue::builder().queue(backing).build(), calls)
    }

    #[tokio::test]
    async fn the_backing_queue_orders_the_ready_keys_and_the_work_queue_keeps_the_rest() {
        let (q, calls) = queue();
        for key in [5, 3, 9, 3] {
            q.add(key);
        }
        // Deduplicated by the work queue; the key added again while waiting touched.
        assert_eq!(q.len(), 3);
        assert_eq!(*calls.lock(), ["push 5", "push 3", "push 9", "touch 3"]);
        assert_eq!(q.get().await, Some(3));
        // Added while processing: neither pushed nor touched until done.
        q.add(3);
        q.add(1);
        assert_eq!(calls.lock().last().unwrap(), "push 1");
        q.done(&3);
        assert_eq!(calls.lock().last().unwrap(), "push 3");
        let mut order = Vec::new();
        while let Some(key) = q.try_get() {
            order.push(key);
            q.done(&key);
        }
        assert_eq!(order, [1, 3, 5, 9]);
        // Shutdown: what is queued is still handed out, then nothing.
        q.add(7);
        q.shut_down();
        assert_eq!(q.get().await, Some(7));
        q.done(&7);
        assert_eq!(q.get().await, None);
    }

    /// Hands out a key it was never given before its own.
    struct Stray(Vec<u32>);

    impl BackingQueue<u32> for Stray {
        fn push(&mut self, item: u32) {
            self.0.push(item);
            self.0.push(99);
        }
        fn pop(&mut self) -> Option<u32> {
            self.0.pop()
        }
        fn len(&self) -> usize {
            self.0.len()
        }
    }

    #[tokio::test]
    async fn a_key_the_backing_queue_was_not_given_is_passed_over() {
        let q = WorkQueue::builder().queue(Stray(Vec::new())).build();
        q.add(1);
        assert_eq!(q.get().await, Some(1));
        assert_eq!(q.in_flight(), 1);
        q.done(&1);
        assert_eq!((q.try_get(), q.in_flight()), (None, 0));
        // The builder stays shareable between threads, whatever the backing queue.
        fn shareable<B: Send + Sync>(_: &B) {}
        struct Unshared(std::cell::Cell<u32>, Vec<u32>);
        impl BackingQueue<u32> for Unshared {
            fn push(&mut self, item: u32) {
                self.0.set(self.0.get() + 1);
                self.1.push(item);
            }
            fn pop(&mut self) -> Option<u32> {
                self.1.pop()
            }
            fn len(&self) -> usize {
                self.1.len()
            }
        }
        shareable(&WorkQueue::<u32>::builder().queue(Unshared(Default::default(), Vec::new())));
        // One that keeps handing out a key it was not given does not hold a getter.
        struct Stuck;
        impl BackingQueue<u32> for Stuck {
            fn push(&mut self, _: u32) {}
            fn pop(&mut self) -> Option<u32> {
                Some(7)
            }
            fn len(&self) -> usize {
                1
            }
        }
        let stuck = WorkQueue::builder().queue(Stuck).build();
        stuck.add(1);
        assert_eq!(stuck.try_get(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_and_rate_limited_keys_reach_the_backing_queue() {
        let backing = Smallest::default();
        let q = WorkQueue::builder().queue(backing).build_rate_limiting(
            crate::workqueue::ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1)),
        );
        q.add_after(2, Duration::from_millis(10));
        q.add_rate_limited(9);
        q.add(6);
        assert_eq!(q.get().await, Some(6));
        // Both fired (9 first): the backing queue hands out the smaller.
        tokio::time::advance(Duration::from_millis(20)).await;
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await, Some(2));
        assert_eq!(q.get().await, Some(9));
    }
}
