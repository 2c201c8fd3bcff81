//! The rate-limiting queue: a [`DelayingQueue`] whose retries are spaced by a
//! [`RateLimiter`] (client-go's `TypedRateLimitingInterface`).
//!
//! [`add_rate_limited`](RateLimitingQueue::add_rate_limited) asks the
//! limiter how long the key should wait (recording one more failure) and
//! hands it to [`add_after`](DelayingQueue::add_after).
//! [`forget`](RateLimitingQueue::forget) clears the key's limiter history once
//! it has been processed successfully.
//!
//! Invariants: the queue never calls the limiter on its own; `forget` only
//! touches the limiter — the worker must still call
//! [`done`](super::WorkQueue::done) for every key it got.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use super::delaying::DelayingQueue;
use super::limiters::{RateLimiter, default_controller_rate_limiter};
use super::queue::{QueueItem, WorkQueue, WorkQueueBuilder};

/// A [`DelayingQueue`] with a [`RateLimiter`] for retries.
///
/// Dereferences to [`DelayingQueue`] (and through it to [`WorkQueue`]).
/// Cloning is cheap and clones share the queue and the limiter.
///
/// # Examples
///
/// The usual controller worker loop:
///
/// ```
/// use informer::workqueue::RateLimitingQueue;
///
/// fn reconcile(key: &str) -> Result<(), String> {
///     if key == "default/broken" { Err("not yet".into()) } else { Ok(()) }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let queue: RateLimitingQueue<String> = RateLimitingQueue::with_default_limiter();
/// queue.add("default/web".to_string());
/// queue.add("default/broken".to_string());
///
/// for _ in 0..4 {
///     let Some(key) = queue.get().await else { break };
///     match reconcile(&key) {
///         Ok(()) => queue.forget(&key),
///         Err(_) => queue.add_rate_limited(key.clone()),
///     }
///     queue.done(&key);
/// }
/// assert_eq!(queue.num_requeues(&"default/broken".to_string()), 3);
/// # }
/// ```
pub struct RateLimitingQueue<T> {
    queue: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self { queue: self.queue.clone(), limiter: Arc::clone(&self.limiter) }
    }
}

impl<T> Deref for RateLimitingQueue<T> {
    type Target = DelayingQueue<T>;

    fn deref(&self) -> &DelayingQueue<T> {
        &self.queue
    }
}

impl<T> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue").field("queue", &self.queue).finish_non_exhaustive()
    }
}

impl<T: QueueItem> RateLimitingQueue<T> {
    /// An unnamed queue without metrics using `limiter`. Its delay timer
    /// runs as [`DelayingQueue::new`]'s does.
    pub fn new(limiter: impl RateLimiter<T> + 'static) -> Self {
        WorkQueue::builder().build_rate_limiting(limiter)
    }

    /// An unnamed queue without metrics using
    /// [`default_controller_rate_limiter`]. Its delay timer runs as
    /// [`DelayingQueue::new`]'s does.
    pub fn with_default_limiter() -> Self {
        Self::new(default_controller_rate_limiter())
    }

    /// Adds `item` after the delay the limiter chooses for it now
    /// (`add_after(item, limiter.when(&item))`).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.limiter.when(&item);
        self.queue.add_after(item, delay);
    }

    /// Clears the limiter's history of `item` (call it when `item` was
    /// processed successfully). Does not replace [`done`](WorkQueue::done).
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    /// How many times `item` was rate limited since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }

    /// The queue's rate limiter.
    pub fn limiter(&self) -> &dyn RateLimiter<T> {
        &*self.limiter
    }
}

impl<T: QueueItem> WorkQueueBuilder<T> {
    /// Builds a [`RateLimitingQueue`] using `limiter` (for example
    /// [`default_controller_rate_limiter`]). The delay timer is started as
    /// by [`build_delaying`](Self::build_delaying).
    pub fn build_rate_limiting(self, limiter: impl RateLimiter<T> + 'static) -> RateLimitingQueue<T> {
        RateLimitingQueue { queue: self.build_delaying(), limiter: Arc::new(limiter) }
    }
}
