//! Rate limiter sequences (ported scenarios of client-go's
//! `util/workqueue/default_rate_limiters_test.go`, plus the token bucket).

use std::time::Duration;

use informer::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter,
    WithMaxWaitRateLimiter, default_controller_rate_limiter, default_item_based_rate_limiter,
};
use tokio::time::advance;

const MS: Duration = Duration::from_millis(1);

fn whens<L: RateLimiter<&'static str>>(l: &L, item: &'static str, n: usize) -> Vec<Duration> {
    (0..n).map(|_| l.when(&item)).collect()
}

#[test]
fn exponential_sequence_requeues_and_forget() {
    let l = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
    assert_eq!(whens(&l, "one", 5), [MS, 2 * MS, 4 * MS, 8 * MS, 16 * MS]);
    assert_eq!(l.num_requeues(&"one"), 5);
    assert_eq!(whens(&l, "two", 2), [MS, 2 * MS]);
    assert_eq!(l.num_requeues(&"two"), 2);

    l.forget(&"one");
    assert_eq!(l.num_requeues(&"one"), 0);
    assert_eq!(l.num_requeues(&"two"), 2, "forget is per key");
    assert_eq!(l.when(&"one"), MS);
}

#[test]
fn exponential_caps_at_max() {
    let l = ItemExponentialFailureRateLimiter::new(MS, 10 * MS);
    assert_eq!(whens(&l, "k", 6), [MS, 2 * MS, 4 * MS, 8 * MS, 10 * MS, 10 * MS]);
}

#[test]
fn exponential_overflow_returns_max() {
    let l = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1000));
    whens(&l, "one", 5);
    assert_eq!(l.when(&"one"), 32 * MS);
    whens(&l, "overflow1", 1000);
    assert_eq!(l.when(&"overflow1"), Duration::from_secs(1000));

    let minute = Duration::from_secs(60);
    let l = ItemExponentialFailureRateLimiter::new(minute, Duration::from_secs(1000 * 3600));
    whens(&l, "two", 2);
    assert_eq!(l.when(&"two"), 4 * minute);
    whens(&l, "overflow2", 1000);
    assert_eq!(l.when(&"overflow2"), Duration::from_secs(1000 * 3600));

    // A base beyond i64 nanoseconds is "max" from the first call, like client-go.
    let l = ItemExponentialFailureRateLimiter::new(Duration::MAX, Duration::from_secs(5));
    assert_eq!(l.when(&"huge"), Duration::from_secs(5));

    // A zero base never becomes NaN/max.
    let l = ItemExponentialFailureRateLimiter::new(Duration::ZERO, Duration::from_secs(5));
    whens(&l, "zero", 2000);
    assert_eq!(l.when(&"zero"), Duration::ZERO);
}

#[test]
fn default_item_based_is_1ms_to_1000s() {
    let l = default_item_based_rate_limiter::<&str>();
    assert_eq!(l.when(&"k"), MS);
    assert_eq!(l.when(&"k"), 2 * MS);
    whens(&l, "k", 40);
    assert_eq!(l.when(&"k"), Duration::from_secs(1000));
}

#[test]
fn fast_slow_sequence() {
    let slow = Duration::from_secs(10);
    let l = ItemFastSlowRateLimiter::new(5 * MS, slow, 3);
    assert_eq!(whens(&l, "one", 5), [5 * MS, 5 * MS, 5 * MS, slow, slow]);
    assert_eq!(l.num_requeues(&"one"), 5);
    assert_eq!(whens(&l, "two", 2), [5 * MS, 5 * MS]);
    assert_eq!(l.num_requeues(&"two"), 2);
    l.forget(&"one");
    assert_eq!(l.num_requeues(&"one"), 0);
    assert_eq!(l.when(&"one"), 5 * MS);
}

#[test]
fn max_of_calls_every_limiter_and_returns_the_max() {
    let l = MaxOfRateLimiter::new()
        .with(ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(3), 3))
        .with(ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1)));
    let three = Duration::from_secs(3);
    assert_eq!(whens(&l, "one", 5), [5 * MS, 5 * MS, 5 * MS, three, three]);
    assert_eq!(l.num_requeues(&"one"), 5);
    assert_eq!(whens(&l, "two", 2), [5 * MS, 5 * MS]);
    assert_eq!(l.num_requeues(&"two"), 2);
    l.forget(&"one");
    assert_eq!(l.num_requeues(&"one"), 0);
    assert_eq!(l.when(&"one"), 5 * MS);

    // Every limiter is called even when it loses: the exponential one keeps
    // doubling behind the constant 5 ms and takes over at the 4th call.
    let l = MaxOfRateLimiter::from_limiters(vec![
        Box::new(ItemFastSlowRateLimiter::new(5 * MS, 5 * MS, 0)),
        Box::new(ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1))),
    ]);
    assert_eq!(
        whens(&l, "k", 5),
        [5 * MS, 5 * MS, 5 * MS, 8 * MS, 16 * MS],
        "the exponential limiter counted the calls where it lost"
    );
    assert_eq!(MaxOfRateLimiter::<&str>::new().when(&"k"), Duration::ZERO);
}

#[test]
fn with_max_wait_caps_the_delay() {
    let l = WithMaxWaitRateLimiter::new(
        ItemExponentialFailureRateLimiter::new(Duration::from_secs(1), Duration::from_secs(1000)),
        Duration::from_secs(3),
    );
    let s = Duration::from_secs;
    assert_eq!(whens(&l, "k", 4), [s(1), s(2), s(3), s(3)]);
    assert_eq!(l.num_requeues(&"k"), 4);
    l.forget(&"k");
    assert_eq!(l.when(&"k"), s(1));

    let l = WithMaxWaitRateLimiter::new(default_controller_rate_limiter::<&str>(), s(500));
    for _ in 0..100 {
        assert!(l.when(&"one") <= s(500));
    }
}

#[tokio::test(start_paused = true)]
async fn bucket_burst_then_spacing_then_refill() {
    let b = BucketRateLimiter::default(); // 10 qps, burst 100
    for _ in 0..100 {
        assert_eq!(RateLimiter::<u8>::when(&b, &0), Duration::ZERO);
    }
    assert_eq!(RateLimiter::<u8>::when(&b, &0), 100 * MS);
    assert_eq!(RateLimiter::<u8>::when(&b, &0), 200 * MS);
    // Tokens are -2; one second later +10 ⇒ 8 free tokens.
    advance(Duration::from_secs(1)).await;
    for _ in 0..8 {
        assert_eq!(RateLimiter::<u8>::when(&b, &0), Duration::ZERO);
    }
    assert_eq!(RateLimiter::<u8>::when(&b, &0), 100 * MS);
    assert_eq!(RateLimiter::<u8>::num_requeues(&b, &0), 0);
    RateLimiter::<u8>::forget(&b, &0); // no effect on the bucket
    assert_eq!(RateLimiter::<u8>::when(&b, &0), 200 * MS);
}

#[tokio::test(start_paused = true)]
async fn bucket_never_holds_more_than_burst() {
    let b = BucketRateLimiter::new(10.0, 3);
    advance(Duration::from_secs(3600)).await;
    for _ in 0..3 {
        assert_eq!(RateLimiter::<u8>::when(&b, &0), Duration::ZERO);
    }
    assert_eq!(RateLimiter::<u8>::when(&b, &0), 100 * MS);
}

#[tokio::test(start_paused = true)]
async fn bucket_edge_rates() {
    let unlimited = BucketRateLimiter::new(f64::INFINITY, 0);
    for _ in 0..1000 {
        assert_eq!(RateLimiter::<u8>::when(&unlimited, &0), Duration::ZERO);
    }
    let no_burst = BucketRateLimiter::new(10.0, 0);
    assert_eq!(RateLimiter::<u8>::when(&no_burst, &0), Duration::MAX);
    let no_refill = BucketRateLimiter::new(0.0, 2);
    assert_eq!(RateLimiter::<u8>::when(&no_refill, &0), Duration::ZERO);
    assert_eq!(RateLimiter::<u8>::when(&no_refill, &0), Duration::ZERO);
    advance(Duration::from_secs(3600)).await;
    assert_eq!(RateLimiter::<u8>::when(&no_refill, &0), Duration::MAX);
}

/// A negative, negative infinite or NaN rate is a rate of zero: the burst,
/// then never again (no panic).
#[tokio::test(start_paused = true)]
async fn bucket_with_a_rate_below_zero_or_nan_grants_the_burst_then_nothing() {
    for qps in [-1.0, -0.000_1, f64::NEG_INFINITY, f64::NAN] {
        let b = BucketRateLimiter::new(qps, 2);
        assert_eq!(RateLimiter::<u8>::when(&b, &0), Duration::ZERO, "qps {qps}");
        assert_eq!(RateLimiter::<u8>::when(&b, &0), Duration::ZERO, "qps {qps}");
        advance(Duration::from_secs(3600)).await;
        assert_eq!(RateLimiter::<u8>::when(&b, &0), Duration::MAX, "qps {qps}");
        let none = BucketRateLimiter::new(qps, 0);
        assert_eq!(RateLimiter::<u8>::when(&none, &0), Duration::MAX, "qps {qps}");
    }
}

#[tokio::test(start_paused = true)]
async fn default_controller_rate_limiter_is_max_of_exponential_and_bucket() {
    let l = default_controller_rate_limiter::<u32>();
    assert_eq!(l.when(&1), 5 * MS);
    assert_eq!(l.when(&1), 10 * MS);
    assert_eq!(l.num_requeues(&1), 2);
    // Exhaust the shared bucket with other keys (98 tokens left).
    for key in 2..100 {
        assert_eq!(l.when(&key), 5 * MS);
    }
    // Bucket empty: a fresh key now waits for the bucket, not 5 ms.
    assert_eq!(l.when(&1000), 100 * MS);
    // Per-key backoff reaches its 1000 s cap after enough failures.
    for _ in 0..30 {
        l.when(&7);
    }
    assert_eq!(l.when(&7), Duration::from_secs(1000));
    l.forget(&7);
    assert_eq!(l.num_requeues(&7), 0);
}

#[test]
fn limiters_compose_through_box_and_arc() {
    let boxed: Box<dyn RateLimiter<u8>> = Box::new(ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1)));
    let arc = std::sync::Arc::new(boxed);
    assert_eq!(arc.when(&1), MS);
    assert_eq!(arc.when(&1), 2 * MS);
    assert_eq!(arc.num_requeues(&1), 2);
    arc.forget(&1);
    assert_eq!(arc.num_requeues(&1), 0);
}
