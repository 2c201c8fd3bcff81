//! Behaviour of `DelayingQueue` (ported scenarios of client-go's
//! `util/workqueue/delaying_queue_test.go`), driven by tokio's paused clock.

use std::time::Duration;

use informer::workqueue::{DelayingQueue, WorkQueue};
use proptest::prelude::*;
use tokio::task::yield_now;
use tokio::time::{Instant, advance};

const MS: Duration = Duration::from_millis(1);

/// Lets the timer task run without moving the paused clock.
async fn settle() {
    for _ in 0..50 {
        yield_now().await;
    }
}

/// Moves the paused clock forward and lets the timer task react.
async fn step(d: Duration) {
    advance(d).await;
    settle().await;
}

/// `get_blocking` on a thread of its own, failing the test if nothing comes within 10 s.
fn get_within(q: &DelayingQueue<u8>) -> Option<u8> {
    let (tx, rx) = std::sync::mpsc::channel();
    let q = q.clone();
    std::thread::spawn(move || {
        let _ = tx.send(q.get_blocking());
    });
    rx.recv_timeout(Duration::from_secs(10)).expect("no key within 10 s: the delay timer is gone")
}

async fn drain_ready<T: informer::workqueue::QueueItem>(q: &DelayingQueue<T>) -> Vec<T> {
    let mut out = Vec::new();
    while let Some(item) = q.try_get() {
        q.done(&item);
        out.push(item);
    }
    out
}

#[tokio::test(start_paused = true)]
async fn simple_queue() {
    let q: DelayingQueue<&str> = DelayingQueue::new();
    q.add_after("foo", 50 * MS);
    settle().await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.pending_len(), 1);

    step(49 * MS).await;
    assert_eq!(q.len(), 0, "not ready before its delay");
    step(MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.pending_len(), 0);
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");

    step(10 * 50 * MS).await;
    assert_eq!(q.len(), 0, "fires only once");
}

#[tokio::test(start_paused = true)]
async fn get_wakes_exactly_at_ready_time() {
    let q: DelayingQueue<u32> = DelayingQueue::new();
    let start = Instant::now();
    q.add_after(1, Duration::from_millis(1500));
    assert_eq!(q.get().await, Some(1));
    assert_eq!(start.elapsed(), Duration::from_millis(1500));
}

#[tokio::test(start_paused = true)]
async fn zero_delay_adds_immediately() {
    let q: DelayingQueue<&str> = DelayingQueue::new();
    q.add_after("now", Duration::ZERO);
    assert_eq!(q.len(), 1, "no timer round trip");
    assert_eq!(q.pending_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn deduping_keeps_the_earliest_ready_time() {
    let q: DelayingQueue<&str> = DelayingQueue::new();
    // A later add_after never postpones a pending key.
    q.add_after("foo", 50 * MS);
    q.add_after("foo", 70 * MS);
    assert_eq!(q.pending_len(), 1);
    step(60 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");
    step(20 * MS).await;
    assert_eq!(q.len(), 0, "the 70 ms request was merged, not kept");

    // An earlier add_after advances a pending key.
    q.add_after("foo", 70 * MS);
    q.add_after("foo", 50 * MS);
    assert_eq!(q.pending_len(), 1);
    step(60 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");
    step(20 * MS).await;
    assert_eq!(q.len(), 0, "the superseded 70 ms entry does not fire");
    assert_eq!(q.pending_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn add_two_fire_early() {
    let q: DelayingQueue<&str> = DelayingQueue::new();
    q.add_after("foo", Duration::from_secs(1));
    q.add_after("bar", 50 * MS);
    step(60 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("bar"));
    q.done(&"bar");

    q.add_after("foo", 50 * MS); // earlier than its pending 1 s
    step(60 * MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");

    step(Duration::from_secs(1)).await;
    assert_eq!(q.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn keys_fire_in_ready_time_order() {
    let q: DelayingQueue<&str> = DelayingQueue::new();
    q.add_after("first", Duration::from_secs(1));
    q.add_after("second", 500 * MS);
    q.add_after("third", 250 * MS);
    settle().await;
    assert_eq!(q.len(), 0);
    step(Duration::from_secs(2)).await;
    assert_eq!(q.len(), 3);
    assert_eq!(drain_ready(&q).await, ["third", "second", "first"]);
}

#[tokio::test(start_paused = true)]
async fn equal_ready_times_keep_insertion_order() {
    let q: DelayingQueue<u32> = DelayingQueue::new();
    for key in [5, 3, 9, 1] {
        q.add_after(key, 10 * MS);
    }
    step(10 * MS).await;
    assert_eq!(drain_ready(&q).await, [5, 3, 9, 1]);
}

#[tokio::test(start_paused = true)]
async fn firing_goes_through_add_deduplication() {
    let q: DelayingQueue<&str> = DelayingQueue::new();
    q.add("foo");
    q.add_after("foo", 10 * MS);
    step(10 * MS).await;
    assert_eq!(q.len(), 1, "already queued: the fired key collapses");

    let key = q.get().await.unwrap();
    q.add_after(key, 10 * MS);
    step(10 * MS).await;
    assert_eq!(q.len(), 0, "fired while processing: waits for done");
    q.done(&key);
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn shut_down_drops_pending_keys() {
    let q: DelayingQueue<&str> = DelayingQueue::new();
    q.add_after("foo", Duration::from_secs(1));
    q.add("now");
    q.shut_down();
    q.add_after("bar", MS);
    q.add_after("baz", Duration::ZERO);
    step(Duration::from_secs(2)).await;
    assert_eq!(q.pending_len(), 0);
    assert_eq!(q.get().await, Some("now"));
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn drain_stops_the_timer_too() {
    let q: DelayingQueue<&str> = DelayingQueue::new();
    q.add_after("later", Duration::from_secs(1));
    q.shut_down_with_drain().await;
    step(Duration::from_secs(2)).await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.pending_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn huge_delay_does_not_overflow() {
    let q: DelayingQueue<&str> = DelayingQueue::new();
    q.add_after("never", Duration::MAX);
    q.add_after("soon", MS);
    step(MS).await;
    assert_eq!(drain_ready(&q).await, ["soon"]);
    step(Duration::from_secs(3600 * 24 * 365)).await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.pending_len(), 1);
}

/// The timer task holds no strong reference: dropping every handle ends it.
#[tokio::test(start_paused = true)]
async fn dropping_the_queue_stops_the_timer_task() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let q: DelayingQueue<&str> = DelayingQueue::new();
    q.add_after("foo", Duration::from_secs(10));
    settle().await;
    assert_eq!(metrics.num_alive_tasks(), before + 1);
    drop(q);
    settle().await;
    assert_eq!(metrics.num_alive_tasks(), before);
}

#[test]
fn builder_with_explicit_runtime_outside_of_it() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let q: DelayingQueue<u8> = WorkQueue::builder().runtime(rt.handle().clone()).build_delaying();
    q.add_after(7, 5 * MS);
    let got = rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), q.get()).await.unwrap() });
    assert_eq!(got, Some(7));
}

/// Outside a runtime the timer is a std thread on the real clock: keys fire
/// in ready-time order, not before their time, and shutdown drops what is
/// pending at the call.
#[test]
fn without_a_runtime_the_timer_is_a_thread() {
    let q: DelayingQueue<u8> = DelayingQueue::new();
    let start = std::time::Instant::now();
    q.add_after(2, 30 * MS);
    q.add_after(1, 10 * MS);
    q.add_after(3, Duration::from_secs(3600));
    assert_eq!(get_within(&q), Some(1));
    assert!(start.elapsed() >= 10 * MS);
    assert_eq!(get_within(&q), Some(2));
    assert!(start.elapsed() >= 30 * MS);
    assert_eq!(q.pending_len(), 1);
    q.shut_down();
    assert_eq!(q.pending_len(), 0, "pending keys are dropped at the call");
    q.add_after(4, MS);
    assert_eq!(q.pending_len(), 0);
    q.done(&1);
    q.done(&2);
    assert_eq!(get_within(&q), None);
}

/// When the runtime running the timer task shuts down, the timer goes on on
/// a thread: keys pending then, and keys added afterwards, still fire.
#[test]
fn keys_still_fire_after_the_timer_runtime_shuts_down() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let q: DelayingQueue<u8> = WorkQueue::builder().runtime(rt.handle().clone()).build_delaying();
    q.add_after(1, 20 * MS);
    // Let the timer task start and go to sleep.
    rt.block_on(tokio::task::yield_now());
    drop(rt);
    q.add_after(2, 10 * MS);
    assert_eq!(q.pending_len(), 2);
    assert_eq!(get_within(&q), Some(2));
    assert_eq!(get_within(&q), Some(1));
    assert_eq!(q.pending_len(), 0);
}

/// A runtime that is already gone when the queue is built does the same.
#[test]
fn a_runtime_shut_down_before_the_build_hands_the_timer_to_a_thread() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let handle = rt.handle().clone();
    drop(rt);
    let q: DelayingQueue<u8> = WorkQueue::builder().runtime(handle).build_delaying();
    q.add_after(5, 5 * MS);
    assert_eq!(get_within(&q), Some(5));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the interleaving of `add_after` calls, keys fire in order of
    /// their earliest requested ready time (ties: first request of that time).
    #[test]
    fn fires_in_earliest_ready_time_order(
        requests in proptest::collection::vec((0u8..12, 1u64..200), 1..60)
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let (got, expected) = rt.block_on(async {
            let q: DelayingQueue<u8> = DelayingQueue::new();
            let mut earliest: std::collections::BTreeMap<u8, (u64, usize)> = Default::default();
            for (seq, &(key, ms)) in requests.iter().enumerate() {
                q.add_after(key, Duration::from_millis(ms));
                let e = earliest.entry(key).or_insert((ms, seq));
                if ms < e.0 {
                    *e = (ms, seq);
                }
            }
            let mut expected: Vec<(u64, usize, u8)> =
                earliest.into_iter().map(|(k, (ms, seq))| (ms, seq, k)).collect();
            expected.sort();
            let expected: Vec<u8> = expected.into_iter().map(|(_, _, k)| k).collect();
            step(Duration::from_millis(200)).await;
            (drain_ready(&q).await, expected)
        });
        prop_assert_eq!(got, expected);
    }
}

/// Concurrent `add_after` from several tasks while workers consume, on a
/// multi-threaded runtime with the real clock (delays of at most 2 ms):
/// every key arrives exactly once, never before its ready time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_add_after_and_workers() {
    const PRODUCERS: u64 = 4;
    const PER_PRODUCER: u64 = 250;
    let q: DelayingQueue<(u64, Instant)> = DelayingQueue::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (q, tx) = (q.clone(), tx.clone());
            tokio::spawn(async move {
                while let Some(item) = q.get().await {
                    assert!(Instant::now() >= item.1, "handed out before ready");
                    tx.send(item.0).unwrap();
                    q.done(&item);
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let q = q.clone();
            tokio::spawn(async move {
                for i in 0..PER_PRODUCER {
                    let delay = Duration::from_micros((i * 37 + p * 11) % 2000);
                    let key = p * PER_PRODUCER + i;
                    q.add_after((key, Instant::now() + delay), delay);
                    if i % 16 == 0 {
                        yield_now().await;
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    let mut seen = std::collections::HashSet::new();
    for _ in 0..PRODUCERS * PER_PRODUCER {
        let key = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a delayed key never arrived")
            .unwrap();
        assert!(seen.insert(key), "key {key} delivered twice");
    }
    q.shut_down_with_drain_all().await;
    for w in workers {
        w.await.unwrap();
    }
    assert_eq!(q.pending_len(), 0);
}
