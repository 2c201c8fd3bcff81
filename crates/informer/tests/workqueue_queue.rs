//! Behaviour of the basic `WorkQueue` (ported scenarios of client-go's
//! `util/workqueue/queue_test.go`, plus the async/blocking/drain-all
//! extensions of this crate).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use informer::workqueue::WorkQueue;
use parking_lot::Mutex;
use tokio::task::{JoinHandle, yield_now};

/// Lets every other ready task on a current-thread runtime run for a while,
/// without moving the (paused) clock.
async fn settle() {
    for _ in 0..50 {
        yield_now().await;
    }
}

/// Awaits a task that is expected to finish now; fails instead of hanging.
async fn finish<R>(handle: JoinHandle<R>) -> R {
    tokio::time::timeout(Duration::from_secs(60), handle).await.expect("task did not finish").expect("task panicked")
}

fn spawn_drain(q: &WorkQueue<&'static str>, all: bool) -> JoinHandle<()> {
    let q = q.clone();
    tokio::spawn(async move {
        if all {
            q.shut_down_with_drain_all().await;
        } else {
            q.shut_down_with_drain().await;
        }
    })
}

/// Records which keys are being processed and fails if a key is handed to
/// two workers at once.
#[derive(Default)]
struct ExclusivityCheck {
    in_flight: Mutex<HashSet<u32>>,
    processed: Mutex<Vec<u32>>,
}

impl ExclusivityCheck {
    fn start(&self, key: u32) {
        assert!(self.in_flight.lock().insert(key), "key {key} handed to two workers at once");
    }
    fn finish(&self, key: u32) {
        assert!(self.in_flight.lock().remove(&key));
        self.processed.lock().push(key);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn basic_multi_producer_multi_consumer_async() {
    const PRODUCERS: u32 = 20;
    const KEYS: u32 = 50;
    let q: WorkQueue<u32> = WorkQueue::new();
    let check = Arc::new(ExclusivityCheck::default());

    let consumers: Vec<_> = (0..8)
        .map(|_| {
            let q = q.clone();
            let check = Arc::clone(&check);
            tokio::spawn(async move {
                while let Some(key) = q.get().await {
                    check.start(key);
                    yield_now().await;
                    check.finish(key);
                    q.done(&key);
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                for key in 0..KEYS {
                    q.add(key);
                    yield_now().await;
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    q.shut_down_with_drain_all().await;
    for c in consumers {
        c.await.unwrap();
    }

    // Every key was processed at least once after its last add.
    let processed = check.processed.lock().clone();
    let distinct: HashSet<u32> = processed.iter().copied().collect();
    assert_eq!(distinct, (0..KEYS).collect());
    assert_eq!(q.len(), 0);
    assert_eq!(q.in_flight(), 0);

    q.add(1000);
    assert_eq!(q.len(), 0, "adds after shutdown are ignored");
    assert_eq!(q.get().await, None);
}

#[test]
fn basic_multi_producer_multi_consumer_threads() {
    let q: WorkQueue<u32> = WorkQueue::new();
    let check = Arc::new(ExclusivityCheck::default());
    let consumers: Vec<_> = (0..6)
        .map(|_| {
            let q = q.clone();
            let check = Arc::clone(&check);
            std::thread::spawn(move || {
                while let Some(key) = q.get_blocking() {
                    check.start(key);
                    std::thread::yield_now();
                    check.finish(key);
                    q.done(&key);
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..8)
        .map(|_| {
            let q = q.clone();
            std::thread::spawn(move || {
                for key in 0..200 {
                    q.add(key);
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    q.shut_down_with_drain_all_blocking();
    for c in consumers {
        c.join().unwrap();
    }
    let distinct: HashSet<u32> = check.processed.lock().iter().copied().collect();
    assert_eq!(distinct, (0..200).collect());
    q.add(5);
    assert_eq!(q.len(), 0);
    assert_eq!(q.get_blocking(), None);
}

/// Async and blocking getters on the same queue: no key lost, no key doubled.
#[test]
fn mixed_async_and_blocking_consumers() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let q: WorkQueue<u32> = WorkQueue::new();
    let seen = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (q, seen) = (q.clone(), Arc::clone(&seen));
            std::thread::spawn(move || {
                while let Some(key) = q.get_blocking() {
                    seen.fetch_add(1, Ordering::Relaxed);
                    q.done(&key);
                }
            })
        })
        .collect();
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let (q, seen) = (q.clone(), Arc::clone(&seen));
            rt.spawn(async move {
                while let Some(key) = q.get().await {
                    seen.fetch_add(1, Ordering::Relaxed);
                    q.done(&key);
                }
            })
        })
        .collect();
    for key in 0..10_000 {
        q.add(key);
    }
    q.shut_down_with_drain_all_blocking();
    for t in threads {
        t.join().unwrap();
    }
    for t in tasks {
        rt.block_on(t).unwrap();
    }
    assert_eq!(seen.load(Ordering::Relaxed), 10_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn add_while_processing_is_processed_again_after_done() {
    const KEYS: u32 = 100;
    let q: WorkQueue<u32> = WorkQueue::new();
    let counts = Arc::new(Mutex::new(vec![0u32; KEYS as usize]));
    let check = Arc::new(ExclusivityCheck::default());
    let (finished_tx, mut finished_rx) = tokio::sync::mpsc::unbounded_channel();
    let consumers: Vec<_> = (0..6)
        .map(|_| {
            let (q, counts, check) = (q.clone(), Arc::clone(&counts), Arc::clone(&check));
            let finished_tx = finished_tx.clone();
            tokio::spawn(async move {
                while let Some(key) = q.get().await {
                    check.start(key);
                    let first_time = {
                        let mut counts = counts.lock();
                        counts[key as usize] += 1;
                        counts[key as usize] == 1
                    };
                    if first_time {
                        q.add(key); // re-add while processing
                    }
                    yield_now().await;
                    check.finish(key);
                    q.done(&key);
                    finished_tx.send(key).unwrap();
                }
            })
        })
        .collect();
    for key in 0..KEYS {
        q.add(key);
    }
    for _ in 0..2 * KEYS {
        finished_rx.recv().await.unwrap();
    }
    q.shut_down_with_drain_all().await;
    for c in consumers {
        c.await.unwrap();
    }
    assert!(counts.lock().iter().all(|&c| c == 2), "{:?}", counts.lock());
    assert!(finished_rx.try_recv().is_err(), "a key was processed a third time");
}

#[tokio::test]
async fn len_counts_distinct_ready_keys() {
    let q: WorkQueue<&str> = WorkQueue::new();
    assert!(q.is_empty());
    q.add("foo");
    assert_eq!(q.len(), 1);
    q.add("bar");
    assert_eq!(q.len(), 2);
    q.add("foo"); // already queued
    assert_eq!(q.len(), 2);
    let key = q.get().await.unwrap();
    assert_eq!(key, "foo");
    assert_eq!(q.len(), 1, "len excludes keys being processed");
    assert_eq!(q.in_flight(), 1);
}

#[tokio::test]
async fn reinsert_while_processing() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("foo");
    let key = q.get().await.unwrap();
    assert_eq!(key, "foo");
    q.add(key);
    assert_eq!(q.len(), 0, "not queued while processing");
    q.done(&key);
    assert_eq!(q.len(), 1, "requeued by done");
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");
    assert_eq!(q.len(), 0);
    assert_eq!(q.in_flight(), 0);
}

#[tokio::test]
async fn collapse_duplicate_adds() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("bar");
    q.add("bar");
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("bar"));
    q.done(&"bar");
    assert_eq!(q.len(), 0);
    assert_eq!(q.try_get(), None);
}

#[tokio::test]
async fn collapse_while_processing() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("bar");
    assert_eq!(q.get().await, Some("bar"));
    q.add("bar");
    q.add("bar");
    assert_eq!(q.len(), 0);
    q.done(&"bar");
    assert_eq!(q.len(), 1, "many adds while processing requeue once");
    assert_eq!(q.get().await, Some("bar"));
    q.done(&"bar");
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn fifo_order_of_first_add() {
    let q: WorkQueue<u32> = WorkQueue::new();
    for key in [3, 1, 2, 1, 3] {
        q.add(key);
    }
    let mut order = Vec::new();
    while let Some(key) = q.try_get() {
        order.push(key);
        q.done(&key);
    }
    assert_eq!(order, [3, 1, 2]);
}

#[tokio::test]
async fn done_for_key_not_processing_is_ignored() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.done(&"ghost");
    q.add("foo");
    q.done(&"foo"); // queued, not processing: must not duplicate it
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");
    assert_eq!(q.try_get(), None);
}

#[tokio::test(start_paused = true)]
async fn get_waits_for_add() {
    let q: WorkQueue<&str> = WorkQueue::new();
    let getter = {
        let q = q.clone();
        tokio::spawn(async move { q.get().await })
    };
    settle().await;
    assert!(!getter.is_finished());
    q.add("x");
    assert_eq!(finish(getter).await, Some("x"));
}

#[tokio::test(start_paused = true)]
async fn shut_down_wakes_all_waiting_getters() {
    let q: WorkQueue<&str> = WorkQueue::new();
    let getters: Vec<_> = (0..5)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    settle().await;
    assert!(getters.iter().all(|g| !g.is_finished()));
    q.shut_down();
    for g in getters {
        assert_eq!(finish(g).await, None);
    }
    assert!(q.shutting_down());
}

#[tokio::test(start_paused = true)]
async fn queued_keys_are_handed_out_after_shut_down() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("a");
    q.add("b");
    q.shut_down();
    assert!(q.shutting_down());
    q.add("c");
    assert_eq!(q.get().await, Some("a"));
    assert_eq!(q.get().await, Some("b"));
    assert_eq!(q.get().await, None);
    assert_eq!(q.get_blocking(), None);
}

/// A cancelled `get` must neither swallow a key nor its wake-up.
#[tokio::test(start_paused = true)]
async fn cancelled_get_does_not_lose_wakeups() {
    let q: WorkQueue<u32> = WorkQueue::new();
    let waiter = {
        let q = q.clone();
        tokio::spawn(async move { q.get().await })
    };
    // A getter that is cancelled while waiting.
    let cancelled = tokio::time::timeout(Duration::from_millis(10), q.get()).await;
    assert!(cancelled.is_err());
    settle().await;
    q.add(1);
    assert_eq!(finish(waiter).await, Some(1));

    // Notified and then dropped before observing the item: the permit is
    // passed on to the remaining waiter.
    let first = {
        let q = q.clone();
        tokio::spawn(async move { q.get().await })
    };
    let second = {
        let q = q.clone();
        tokio::spawn(async move { q.get().await })
    };
    settle().await;
    q.add(2);
    first.abort();
    let first = first.await;
    let got_second = if first.is_err() {
        finish(second).await
    } else {
        // `first` won the race before being aborted; feed `second` too.
        q.add(3);
        finish(second).await
    };
    assert!(got_second.is_some());
}

#[tokio::test(start_paused = true)]
async fn drain_waits_for_in_flight_keys() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("foo");
    q.add("bar");
    assert_eq!(q.get().await, Some("foo"));
    assert_eq!(q.get().await, Some("bar"));

    let drain = spawn_drain(&q, false);
    settle().await;
    assert!(q.shutting_down());
    assert!(!drain.is_finished());
    q.done(&"foo");
    settle().await;
    assert!(!drain.is_finished(), "bar is still in flight");
    q.done(&"bar");
    finish(drain).await;
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_does_not_drain() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("foo");
    q.add("bar");
    q.get().await.unwrap();
    q.get().await.unwrap();
    q.shut_down(); // returns at once although two keys are in flight
    assert!(q.shutting_down());
    assert_eq!(q.in_flight(), 2);
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_aborts_a_drain() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("foo");
    q.add("bar");
    q.get().await.unwrap();
    q.get().await.unwrap();
    let drain = spawn_drain(&q, false);
    let drain_all = spawn_drain(&q, true);
    settle().await;
    assert!(!drain.is_finished() && !drain_all.is_finished());
    q.shut_down();
    finish(drain).await;
    finish(drain_all).await;
    assert_eq!(q.in_flight(), 2);
}

#[tokio::test(start_paused = true)]
async fn drain_with_dirty_key_still_delivers_it() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("foo");
    assert_eq!(q.get().await, Some("foo"));
    q.add("foo"); // dirty while processing
    let drain = spawn_drain(&q, false);
    let drain_all = spawn_drain(&q, true);
    settle().await;
    assert!(!drain.is_finished());
    q.done(&"foo"); // requeued although the queue is shutting down
    assert_eq!(q.len(), 1);
    // client-go semantics: the in-flight drain is over ...
    finish(drain).await;
    // ... but the requeued key is still handed out, and drain-all waits for it.
    settle().await;
    assert!(!drain_all.is_finished());
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");
    finish(drain_all).await;
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn drain_returns_at_once_when_nothing_in_flight_but_drain_all_waits() {
    let q: WorkQueue<&str> = WorkQueue::new();
    q.add("a");
    q.add("b");
    q.add("c");
    assert_eq!(q.get().await, Some("a"));
    q.done(&"a");
    // Nothing in flight: client-go's drain returns although b, c are queued.
    q.shut_down_with_drain().await;
    assert_eq!(q.len(), 2);

    let drain_all = spawn_drain(&q, true);
    settle().await;
    assert!(!drain_all.is_finished());
    assert_eq!(q.get().await, Some("b"));
    q.done(&"b");
    settle().await;
    assert!(!drain_all.is_finished(), "c is still queued");
    assert_eq!(q.get().await, Some("c"));
    settle().await;
    assert!(!drain_all.is_finished(), "c is in flight");
    q.done(&"c");
    finish(drain_all).await;
}

#[test]
fn blocking_drain_waits_for_worker_thread() {
    let q: WorkQueue<u32> = WorkQueue::new();
    for key in 0..3 {
        q.add(key);
    }
    let finished = Arc::new(AtomicUsize::new(0));
    let first = q.get_blocking().unwrap();
    let worker = {
        let (q, finished) = (q.clone(), Arc::clone(&finished));
        std::thread::spawn(move || {
            // Hold the first key until the drain has started.
            while !q.shutting_down() {
                std::thread::yield_now();
            }
            finished.fetch_add(1, Ordering::SeqCst);
            q.done(&first);
            while let Some(key) = q.get_blocking() {
                finished.fetch_add(1, Ordering::SeqCst);
                q.done(&key);
            }
        })
    };
    q.shut_down_with_drain_all_blocking();
    assert_eq!(finished.load(Ordering::SeqCst), 3);
    worker.join().unwrap();

    let q2: WorkQueue<u32> = WorkQueue::new();
    q2.add(1);
    let key = q2.get_blocking().unwrap();
    let releaser = {
        let q2 = q2.clone();
        std::thread::spawn(move || {
            while !q2.shutting_down() {
                std::thread::yield_now();
            }
            q2.done(&key);
        })
    };
    q2.shut_down_with_drain_blocking();
    assert_eq!(q2.in_flight(), 0);
    releaser.join().unwrap();
}

#[tokio::test]
async fn queue_releases_keys_after_done() {
    let q: WorkQueue<Arc<String>> = WorkQueue::new();
    let key = Arc::new("key".to_string());
    q.add(Arc::clone(&key));
    q.add(Arc::clone(&key));
    assert!(Arc::strong_count(&key) > 1);
    let got = q.get().await.unwrap();
    q.done(&got);
    drop(got);
    assert_eq!(Arc::strong_count(&key), 1, "queue still holds the key");
}

#[test]
fn clones_share_the_queue_and_debug_prints() {
    let q: WorkQueue<u8> = WorkQueue::builder().name("shared").build();
    let q2 = q.clone();
    q.add(1);
    assert_eq!(q2.len(), 1);
    assert_eq!(q2.name(), "shared");
    let text = format!("{q:?}");
    assert!(text.contains("shared") && text.contains("len: 1"), "{text}");
}
