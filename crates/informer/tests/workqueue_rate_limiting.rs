//! Behaviour of `RateLimitingQueue` (ported scenarios of client-go's
//! `util/workqueue/rate_limiting_queue_test.go`), driven by tokio's paused
//! clock.

use std::time::Duration;

use informer::workqueue::{ItemExponentialFailureRateLimiter, RateLimitingQueue, WorkQueue};
use tokio::task::yield_now;
use tokio::time::{Instant, advance};

const MS: Duration = Duration::from_millis(1);

async fn step(d: Duration) {
    advance(d).await;
    for _ in 0..50 {
        yield_now().await;
    }
}

/// Takes `key` out of the queue (it must be ready) and marks it done.
fn take(q: &RateLimitingQueue<&'static str>, key: &'static str) {
    assert_eq!(q.try_get(), Some(key));
    q.done(&key);
}

fn exponential_1ms_1s() -> ItemExponentialFailureRateLimiter<&'static str> {
    ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1))
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_waits_as_the_limiter_says() {
    let q = RateLimitingQueue::new(exponential_1ms_1s());

    q.add_rate_limited("one"); // 1 ms
    assert_eq!(q.len(), 0);
    step(MS).await;
    take(&q, "one");

    q.add_rate_limited("one"); // 2 ms
    assert_eq!(q.num_requeues(&"one"), 2);
    step(MS).await;
    assert_eq!(q.len(), 0, "second failure waits 2 ms");
    step(MS).await;
    take(&q, "one");

    q.add_rate_limited("two"); // 1 ms: per-key history
    assert_eq!(q.num_requeues(&"two"), 1);
    step(MS).await;
    take(&q, "two");

    q.forget(&"one");
    assert_eq!(q.num_requeues(&"one"), 0);
    q.add_rate_limited("one"); // back to 1 ms
    step(MS).await;
    take(&q, "one");
}

#[tokio::test(start_paused = true)]
async fn rate_limited_duplicates_keep_the_earliest_time() {
    let q = RateLimitingQueue::new(exponential_1ms_1s());
    let start = Instant::now();
    q.add_rate_limited("one"); // 1 ms
    q.add_rate_limited("one"); // 2 ms: merged into the pending 1 ms entry
    assert_eq!(q.pending_len(), 1);
    assert_eq!(q.num_requeues(&"one"), 2, "the limiter still counted both");
    assert_eq!(q.get().await, Some("one"));
    assert_eq!(start.elapsed(), MS);
}

#[tokio::test(start_paused = true)]
async fn forget_does_not_replace_done() {
    let q = RateLimitingQueue::new(exponential_1ms_1s());
    q.add("k");
    let key = q.get().await.unwrap();
    q.forget(&key);
    q.add(key);
    assert_eq!(q.len(), 0, "still processing: forget is not done");
    q.done(&key);
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn retry_loop_backs_off_exponentially() {
    let q: RateLimitingQueue<&str> = WorkQueue::builder()
        .name("retry")
        .build_rate_limiting(ItemExponentialFailureRateLimiter::new(10 * MS, Duration::from_secs(1)));
    q.add("flaky");
    let start = Instant::now();
    let mut seen_at = Vec::new();
    for _ in 0..4 {
        let key = q.get().await.unwrap();
        seen_at.push(start.elapsed());
        q.add_rate_limited(key);
        q.done(&key);
    }
    assert_eq!(seen_at, [Duration::ZERO, 10 * MS, 30 * MS, 70 * MS], "delays 10, 20, 40 ms");
    assert_eq!(q.limiter().num_requeues(&"flaky"), 4);
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_after_shut_down_is_ignored() {
    let q = RateLimitingQueue::new(exponential_1ms_1s());
    q.shut_down();
    q.add_rate_limited("late");
    step(Duration::from_secs(1)).await;
    assert_eq!(q.pending_len(), 0);
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn default_limiter_queue_works_end_to_end() {
    let q: RateLimitingQueue<u32> = RateLimitingQueue::with_default_limiter();
    let start = Instant::now();
    q.add_rate_limited(1);
    assert_eq!(q.get().await, Some(1));
    assert_eq!(start.elapsed(), 5 * MS);
    q.done(&1);
    q.forget(&1);
    assert_eq!(q.num_requeues(&1), 0);
}
