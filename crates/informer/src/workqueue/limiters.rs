//! Rate limiters deciding how long a key waits before it is retried
//! (client-go's `default_rate_limiters.go`).
//!
//! A [`RateLimiter`] answers "how long should `item` wait now?"
//! ([`when`](RateLimiter::when)); calling `when` *is* recording a failure or
//! consuming capacity, so call it exactly once per retry.
//! [`forget`](RateLimiter::forget) clears per-key history when a key
//! succeeded; [`num_requeues`](RateLimiter::num_requeues) reports it.
//!
//! | limiter | delay returned by `when` |
//! |---|---|
//! | [`ItemExponentialFailureRateLimiter`] | `base · 2^failures` (failures counted before this call), capped at `max`; overflow-safe |
//! | [`ItemFastSlowRateLimiter`] | `fast` for the first `max_fast_attempts` calls per key, then `slow` |
//! | [`BucketRateLimiter`] | token bucket shared by all keys: 0 while tokens remain, else the time until one is available (each call reserves a token) |
//! | [`MaxOfRateLimiter`] | max over its limiters (every limiter's `when` is called) |
//! | [`WithMaxWaitRateLimiter`] | `min(inner, max_wait)` |
//!
//! [`default_controller_rate_limiter`] is client-go's controller default:
//! `MaxOf(Exponential(5 ms, 1000 s), Bucket(10 qps, burst 100))`.
//!
//! All limiters are thread-safe (`Send + Sync`) and read time from
//! `tokio::time::Instant`, so a paused test clock controls the token bucket.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::queue::{FastMap, QueueItem};

/// Decides how long a key waits before being retried.
///
/// Implement it to plug a custom policy into a
/// [`RateLimitingQueue`](super::RateLimitingQueue).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use informer::workqueue::RateLimiter;
///
/// /// Always waits one second.
/// struct Fixed;
///
/// impl<T> RateLimiter<T> for Fixed {
///     fn when(&self, _item: &T) -> Duration { Duration::from_secs(1) }
///     fn forget(&self, _item: &T) {}
///     fn num_requeues(&self, _item: &T) -> u32 { 0 }
/// }
///
/// assert_eq!(Fixed.when(&"key"), Duration::from_secs(1));
/// ```
pub trait RateLimiter<T>: Send + Sync {
    /// How long `item` should wait now. Records one more failure / consumes
    /// capacity.
    fn when(&self, item: &T) -> Duration;
    /// Stops tracking `item` (it succeeded). Does not affect shared capacity.
    fn forget(&self, item: &T);
    /// How many times `item` has been rate limited since it was last forgotten.
    fn num_requeues(&self, item: &T) -> u32;
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<L> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item);
    }
    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Arc<L> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item);
    }
    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

/// Increments `item`'s failure count and returns the count **before** it.
fn bump_failures<T: QueueItem>(failures: &Mutex<FastMap<T, u32>>, item: &T) -> u32 {
    let mut failures = failures.lock();
    if let Some(count) = failures.get_mut(item) {
        let before = *count;
        *count = count.saturating_add(1);
        before
    } else {
        failures.insert(item.clone(), 1);
        0
    }
}

/// Per-key exponential backoff: the n-th call for a key (n from 0) waits
/// `base · 2^n`, capped at `max` (client-go's
/// `ItemExponentialFailureRateLimiter`).
///
/// `Default` is client-go's `DefaultItemBasedRateLimiter`: 1 ms … 1000 s.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use informer::workqueue::{ItemExponentialFailureRateLimiter, RateLimiter};
///
/// let limiter = ItemExponentialFailureRateLimiter::new(
///     Duration::from_millis(1),
///     Duration::from_secs(1),
/// );
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(1));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(2));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(4));
/// assert_eq!(limiter.num_requeues(&"a"), 3);
/// limiter.forget(&"a");
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(1));
/// ```
pub struct ItemExponentialFailureRateLimiter<T> {
    failures: Mutex<FastMap<T, u32>>,
    base: Duration,
    max: Duration,
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("tracked", &self.failures.lock().len())
            .finish()
    }
}

impl<T: QueueItem> ItemExponentialFailureRateLimiter<T> {
    /// Backoff starting at `base`, doubling per failure, never above `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self { failures: Mutex::new(FastMap::default()), base, max }
    }
}

impl<T: QueueItem> Default for ItemExponentialFailureRateLimiter<T> {
    /// 1 ms … 1000 s (client-go's `DefaultItemBasedRateLimiter`).
    fn default() -> Self {
        Self::new(Duration::from_millis(1), Duration::from_secs(1000))
    }
}

impl<T: QueueItem> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = bump_failures(&self.failures, item);
        // 2^1000 is finite in f64, so base 0 stays 0 instead of NaN.
        let backoff_nanos = self.base.as_nanos() as f64 * 2f64.powi(exp.min(1000) as i32);
        // Like client-go: anything beyond i64 nanoseconds means "max".
        if backoff_nanos.is_nan() || backoff_nanos >= i64::MAX as f64 {
            return self.max;
        }
        Duration::from_nanos(backoff_nanos as u64).min(self.max)
    }

    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// client-go's `DefaultItemBasedRateLimiter`: per-key exponential backoff
/// from 1 ms to 1000 s.
pub fn default_item_based_rate_limiter<T: QueueItem>() -> ItemExponentialFailureRateLimiter<T> {
    ItemExponentialFailureRateLimiter::default()
}

/// Per-key two-speed limiter: `fast` for the first `max_fast_attempts`
/// calls, `slow` afterwards (client-go's `ItemFastSlowRateLimiter`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use informer::workqueue::{ItemFastSlowRateLimiter, RateLimiter};
///
/// let limiter = ItemFastSlowRateLimiter::new(
///     Duration::from_millis(5),
///     Duration::from_secs(10),
///     2,
/// );
/// assert_eq!(limiter.when(&1), Duration::from_millis(5));
/// assert_eq!(limiter.when(&1), Duration::from_millis(5));
/// assert_eq!(limiter.when(&1), Duration::from_secs(10));
/// ```
pub struct ItemFastSlowRateLimiter<T> {
    failures: Mutex<FastMap<T, u32>>,
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
}

impl<T> fmt::Debug for ItemFastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .finish()
    }
}

impl<T: QueueItem> ItemFastSlowRateLimiter<T> {
    /// `fast` for the first `max_fast_attempts` calls per key, then `slow`.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self { failures: Mutex::new(FastMap::default()), fast, slow, max_fast_attempts }
    }
}

impl<T: QueueItem> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let attempts = bump_failures(&self.failures, item).saturating_add(1);
        if attempts <= self.max_fast_attempts { self.fast } else { self.slow }
    }

    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Option<Instant>,
}

/// A token bucket shared by all keys (client-go's `BucketRateLimiter` over
/// `golang.org/x/time/rate`): refills at `qps` tokens per second up to
/// `burst`; every [`when`](RateLimiter::when) reserves one token and returns
/// how long until that token exists (zero while the bucket has tokens).
///
/// The bucket starts full. `burst == 0` (or a `qps` of zero or less once the
/// burst is spent) never grants a token: `when` returns [`Duration::MAX`], which
/// [`DelayingQueue::add_after`](super::DelayingQueue::add_after) treats as
/// "about a century". An infinite `qps` never waits. `forget` is a no-op and
/// `num_requeues` is always 0.
///
/// `Default` is client-go's controller bucket: 10 qps, burst 100.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use informer::workqueue::{BucketRateLimiter, RateLimiter};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let bucket = BucketRateLimiter::new(10.0, 2);
/// assert_eq!(RateLimiter::<&str>::when(&bucket, &"a"), Duration::ZERO);
/// assert_eq!(RateLimiter::<&str>::when(&bucket, &"b"), Duration::ZERO);
/// assert_eq!(RateLimiter::<&str>::when(&bucket, &"c"), Duration::from_millis(100));
/// assert_eq!(RateLimiter::<&str>::when(&bucket, &"d"), Duration::from_millis(200));
/// # }
/// ```
#[derive(Debug)]
pub struct BucketRateLimiter {
    qps: f64,
    burst: u32,
    bucket: Mutex<Bucket>,
}

impl BucketRateLimiter {
    /// A bucket refilling at `qps` tokens per second, holding at most `burst`.
    ///
    /// A `qps` that is zero, negative or NaN refills nothing: the burst is
    /// granted, then no token ever again (`golang.org/x/time/rate` treats a
    /// limit `<= 0` the same way).
    pub fn new(qps: f64, burst: u32) -> Self {
        let qps = if qps > 0.0 { qps } else { 0.0 };
        Self { qps, burst, bucket: Mutex::new(Bucket { tokens: f64::from(burst), last: None }) }
    }

    /// Reserves one token at `now` and returns the wait until it is available.
    fn reserve(&self, now: Instant) -> Duration {
        if self.qps.is_infinite() {
            return Duration::ZERO;
        }
        let burst = f64::from(self.burst);
        let mut bucket = self.bucket.lock();
        if self.qps == 0.0 {
            // No refill: only the initial burst can be spent.
            if bucket.tokens >= 1.0 {
                bucket.tokens -= 1.0;
                return Duration::ZERO;
            }
            return Duration::MAX;
        }
        if self.burst == 0 {
            return Duration::MAX;
        }
        let elapsed = bucket.last.map_or(Duration::ZERO, |last| now.saturating_duration_since(last));
        let tokens = (bucket.tokens + elapsed.as_secs_f64() * self.qps).min(burst) - 1.0;
        bucket.tokens = tokens;
        bucket.last = Some(now);
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-tokens / self.qps).unwrap_or(Duration::MAX)
        }
    }
}

impl Default for BucketRateLimiter {
    /// 10 qps, burst 100.
    fn default() -> Self {
        Self::new(10.0, 100)
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve(Instant::now())
    }
    fn forget(&self, _item: &T) {}
    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// Combines limiters: `when` asks **every** limiter (so all of them record
/// the failure) and returns the longest delay; `num_requeues` is the maximum;
/// `forget` forgets in all (client-go's `MaxOfRateLimiter`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use informer::workqueue::{
///     ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter,
/// };
///
/// let limiter = MaxOfRateLimiter::new()
///     .with(ItemExponentialFailureRateLimiter::new(
///         Duration::from_millis(1),
///         Duration::from_secs(1),
///     ))
///     .with(ItemFastSlowRateLimiter::new(
///         Duration::from_millis(3),
///         Duration::from_secs(10),
///         2,
///     ));
/// assert_eq!(limiter.when(&"k"), Duration::from_millis(3)); // max(1 ms, 3 ms)
/// assert_eq!(limiter.when(&"k"), Duration::from_millis(3)); // max(2 ms, 3 ms)
/// assert_eq!(limiter.when(&"k"), Duration::from_secs(10)); // max(4 ms, 10 s)
/// ```
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter").field("limiters", &self.limiters.len()).finish()
    }
}

impl<T> Default for MaxOfRateLimiter<T> {
    fn default() -> Self {
        Self { limiters: Vec::new() }
    }
}

impl<T> MaxOfRateLimiter<T> {
    /// An empty combination (its `when` is zero until limiters are added).
    pub fn new() -> Self {
        Self::default()
    }

    /// Combines the given limiters.
    pub fn from_limiters(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }

    /// Adds one more limiter.
    pub fn with(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.limiters.push(Box::new(limiter));
        self
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters.iter().map(|limiter| limiter.when(item)).fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        for limiter in &self.limiters {
            limiter.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters.iter().map(|limiter| limiter.num_requeues(item)).max().unwrap_or(0)
    }
}

/// Caps another limiter's delay at `max_wait` (client-go's
/// `WithMaxWaitRateLimiter`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use informer::workqueue::{ItemExponentialFailureRateLimiter, RateLimiter, WithMaxWaitRateLimiter};
///
/// let limiter = WithMaxWaitRateLimiter::new(
///     ItemExponentialFailureRateLimiter::new(Duration::from_secs(1), Duration::from_secs(1000)),
///     Duration::from_secs(3),
/// );
/// assert_eq!(limiter.when(&"k"), Duration::from_secs(1));
/// assert_eq!(limiter.when(&"k"), Duration::from_secs(2));
/// assert_eq!(limiter.when(&"k"), Duration::from_secs(3)); // 4 s capped
/// ```
pub struct WithMaxWaitRateLimiter<T, L> {
    limiter: L,
    max_wait: Duration,
    _item: PhantomData<fn(&T)>,
}

impl<T, L: fmt::Debug> fmt::Debug for WithMaxWaitRateLimiter<T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WithMaxWaitRateLimiter")
            .field("limiter", &self.limiter)
            .field("max_wait", &self.max_wait)
            .finish()
    }
}

impl<T, L: RateLimiter<T>> WithMaxWaitRateLimiter<T, L> {
    /// Wraps `limiter`, never returning more than `max_wait`.
    pub fn new(limiter: L, max_wait: Duration) -> Self {
        Self { limiter, max_wait, _item: PhantomData }
    }
}

impl<T, L: RateLimiter<T>> RateLimiter<T> for WithMaxWaitRateLimiter<T, L> {
    fn when(&self, item: &T) -> Duration {
        self.limiter.when(item).min(self.max_wait)
    }
    fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }
}

/// client-go's `DefaultControllerRateLimiter`: the maximum of per-key
/// exponential backoff (5 ms … 1000 s) and an overall token bucket (10 qps,
/// burst 100).
pub fn default_controller_rate_limiter<T: QueueItem>() -> MaxOfRateLimiter<T> {
    MaxOfRateLimiter::new()
        .with(ItemExponentialFailureRateLimiter::<T>::new(Duration::from_millis(5), Duration::from_secs(1000)))
        .with(BucketRateLimiter::default())
}
