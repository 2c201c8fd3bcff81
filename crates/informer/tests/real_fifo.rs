//! RealFifo behaviour, ported from client-go's the_real_fifo_test.go
//! (reference: client-go-semantics.md §2.1, §2.4, §2.5, §8.5).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use futures_util::FutureExt;

use informer::fifo::{FifoError, KnownObjects, Queue, RealFifoOptions, Transform};
use informer::{DeletedObject, Delta, FifoClosed, Indexer, Indexers, Object, RealFifo};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

type Obj = Object<ConfigMap>;

/// A cluster-scoped object `name` at resourceVersion `rv`.
fn obj(name: &str, rv: u64) -> Obj {
    Object::from_json(
        serde_json::to_vec(&json!({"metadata": {"name": name, "resourceVersion": rv.to_string()}})).unwrap(),
    )
    .unwrap()
}

/// `Added:a@1`, `Unknown:a@2` (tombstone), `ReplacedAll@10[a@1,b@2]`, `SyncAll`, `Bookmark@5`.
fn desc(d: &Delta<ConfigMap>) -> String {
    let ov = |o: &Obj| format!("{}@{}", o.key(), o.resource_version().unwrap_or("-"));
    match d {
        Delta::Deleted(DeletedObject::FinalStateUnknown(t)) => {
            format!("Unknown:{}@{}", t.key, t.last_known.as_ref().and_then(|o| o.resource_version()).unwrap_or("-"))
        }
        Delta::ReplacedAll { objects, resource_version } => {
            format!("ReplacedAll@{resource_version}[{}]", objects.iter().map(ov).collect::<Vec<_>>().join(","))
        }
        Delta::SyncAll => "SyncAll".to_string(),
        Delta::Bookmark { resource_version } => format!("Bookmark@{resource_version}"),
        other => format!("{:?}:{}", other.delta_type(), ov(other.object().unwrap())),
    }
}

fn descs(ds: &[Delta<ConfigMap>]) -> Vec<String> {
    ds.iter().map(desc).collect()
}

fn snap(q: &RealFifo<ConfigMap>) -> Vec<String> {
    descs(&q.snapshot())
}

/// Pops one batch of at most `max`: (descriptions, is_in_initial_list).
fn pop(q: &RealFifo<ConfigMap>, max: usize) -> (Vec<String>, bool) {
    q.pop_blocking(max, |ds, initial| (descs(&ds), initial)).unwrap()
}

fn store(objs: &[Obj]) -> Arc<Indexer<ConfigMap>> {
    let s = Arc::new(Indexer::new(Indexers::new()));
    for o in objs {
        s.add(o.clone()).unwrap();
    }
    s
}

fn atomic() -> RealFifo<ConfigMap> {
    RealFifo::new(RealFifoOptions::default())
}

fn non_atomic(known: Arc<Indexer<ConfigMap>>) -> RealFifo<ConfigMap> {
    RealFifo::new(RealFifoOptions {
        atomic: false,
        known_objects: Some(known as Arc<dyn KnownObjects<ConfigMap>>),
        ..Default::default()
    })
}

fn with_capacity(capacity: usize) -> RealFifo<ConfigMap> {
    RealFifo::new(RealFifoOptions { capacity, ..Default::default() })
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Every notification is delivered, one per pop, in stream order (no per-key merging).
#[test]
fn delivers_every_delta_in_order() {
    let q = atomic();
    q.add_blocking(obj("a", 1)).unwrap();
    q.add_blocking(obj("b", 2)).unwrap();
    q.update_blocking(obj("a", 3)).unwrap();
    q.delete_blocking(obj("b", 4)).unwrap();
    q.update_blocking(obj("a", 5)).unwrap();
    assert_eq!(q.len(), 5);
    let got: Vec<String> = (0..5).flat_map(|_| pop(&q, 1).0).collect();
    assert_eq!(got, ["Added:a@1", "Added:b@2", "Updated:a@3", "Deleted:b@4", "Updated:a@5"]);
    assert!(q.is_empty());
}

/// Deletes are never suppressed, even for keys never seen, and repeated deletes all arrive.
#[test]
fn deletes_are_never_suppressed() {
    let q = atomic();
    q.delete_blocking(obj("never-seen", 1)).unwrap();
    q.delete_blocking(obj("never-seen", 2)).unwrap();
    assert_eq!(snap(&q), ["Deleted:never-seen@1", "Deleted:never-seen@2"]);

    let q = non_atomic(store(&[]));
    q.delete_blocking(obj("never-seen", 1)).unwrap();
    assert_eq!(snap(&q), ["Deleted:never-seen@1"]);
}

/// TestRealFIFO_ReplaceAtomic: one ReplacedAll carrying the list and its resourceVersion; earlier
/// entries (Add, Bookmark) are kept before it; several replaces queue in order.
#[tokio::test]
async fn atomic_replace_is_one_replaced_all() {
    let q = atomic();
    q.replace(vec![obj("a", 1), obj("b", 2)], "10").await.unwrap();
    assert_eq!(snap(&q), ["ReplacedAll@10[a@1,b@2]"]);

    let q = atomic();
    q.add(obj("x", 1)).await.unwrap();
    q.replace(vec![obj("b", 3), obj("a", 2)], "11").await.unwrap();
    assert_eq!(snap(&q), ["Added:x@1", "ReplacedAll@11[b@3,a@2]"], "preceding Add retained, list order kept");

    let q = atomic();
    q.replace(vec![obj("a", 1)], "10").await.unwrap();
    q.replace(vec![obj("b", 2)], "20").await.unwrap();
    q.replace(vec![], "30").await.unwrap();
    assert_eq!(snap(&q), ["ReplacedAll@10[a@1]", "ReplacedAll@20[b@2]", "ReplacedAll@30[]"]);

    let q = atomic();
    q.bookmark("5").await.unwrap();
    q.replace(vec![obj("a", 6)], "6").await.unwrap();
    assert_eq!(snap(&q), ["Bookmark@5", "ReplacedAll@6[a@6]"], "preceding Bookmark retained");
}

/// TestRealFIFO_ReplaceAtomicPop.
#[tokio::test]
async fn atomic_replace_pop() {
    let q = atomic();
    q.replace(vec![obj("a", 1), obj("b", 2)], "10").await.unwrap();
    q.update(obj("a", 11)).await.unwrap();
    assert!(!q.has_synced());
    let (ds, initial) = q.pop(100, |ds, initial| (descs(&ds), initial)).await.unwrap();
    assert_eq!((ds, initial), (strs(&["ReplacedAll@10[a@1,b@2]"]), true), "ReplacedAll is popped alone");
    assert!(q.has_synced());
    let (ds, initial) = q.pop(100, |ds, initial| (descs(&ds), initial)).await.unwrap();
    assert_eq!((ds, initial), (strs(&["Updated:a@11"]), false));
}

/// TestRealFIFO_ResyncAtomic: a single SyncAll, after a preceding Add.
#[tokio::test]
async fn atomic_resync_is_one_sync_all() {
    let q = atomic();
    q.add(obj("a", 1)).await.unwrap();
    q.resync().await.unwrap();
    assert_eq!(snap(&q), ["Added:a@1", "SyncAll"]);
    let q = atomic();
    q.resync().await.unwrap();
    assert_eq!(snap(&q), ["SyncAll"]);
    assert!(!q.has_synced(), "a resync does not populate the queue");
}

/// Bookmarks are queued in atomic mode (and do not populate the queue); not in non-atomic mode
/// ("Bookmark object should not be added without atomic").
#[tokio::test]
async fn bookmark_entries_only_in_atomic_mode() {
    let q = atomic();
    q.add(obj("a", 1)).await.unwrap();
    q.bookmark("7").await.unwrap();
    assert_eq!(snap(&q), ["Added:a@1", "Bookmark@7"]);

    let q = atomic();
    q.bookmark("7").await.unwrap();
    assert_eq!(snap(&q), ["Bookmark@7"]);
    assert!(!q.has_synced(), "a bookmark does not populate the queue");

    let q = non_atomic(store(&[obj("a", 1)]));
    q.bookmark("7").await.unwrap();
    assert!(q.is_empty());
}

/// Non-atomic relist (reconcileReplacement): tombstones first — for queued keys absent from the
/// list whose last queued delta is not a delete (carrying that last queued object), then for
/// stored keys absent from the list and not queued (carrying the stored object) — then one
/// Replaced per listed object.
#[tokio::test]
async fn non_atomic_replace() {
    let known = store(&[obj("k1", 1), obj("k2", 1), obj("k3", 1), obj("k4", 1)]);
    let q = non_atomic(known);
    q.add(obj("q1", 2)).await.unwrap();
    q.update(obj("k1", 3)).await.unwrap(); // queued and known: tombstone carries the queued state
    q.add(obj("q2", 4)).await.unwrap();
    q.delete(obj("q2", 5)).await.unwrap(); // last queued delta is a delete: no tombstone
    q.delete(obj("k3", 6)).await.unwrap(); // same, for a known key
    q.update(obj("q1", 7)).await.unwrap(); // the *last* queued state of q1 is used
    q.replace(vec![obj("n1", 8), obj("k2", 8)], "8").await.unwrap();
    assert_eq!(
        snap(&q),
        [
            "Added:q1@2",
            "Updated:k1@3",
            "Added:q2@4",
            "Deleted:q2@5",
            "Deleted:k3@6",
            "Updated:q1@7",
            "Unknown:q1@7",
            "Unknown:k1@3",
            "Unknown:k4@1",
            "Replaced:n1@8",
            "Replaced:k2@8",
        ]
    );
}

/// A non-atomic first replace sets the initial population to the whole queue, tombstones
/// included; has_synced only after all of them are processed.
#[test]
fn non_atomic_initial_population_includes_tombstones() {
    let q = non_atomic(store(&[obj("gone", 1)]));
    q.replace_blocking(vec![obj("a", 2), obj("b", 2)], "2").unwrap();
    q.add_blocking(obj("c", 3)).unwrap();
    assert_eq!(snap(&q), ["Unknown:gone@1", "Replaced:a@2", "Replaced:b@2", "Added:c@3"]);
    assert_eq!(pop(&q, 1), (strs(&["Unknown:gone@1"]), true));
    assert!(!q.has_synced());
    assert_eq!(pop(&q, 1), (strs(&["Replaced:a@2"]), true));
    assert!(!q.has_synced());
    assert_eq!(pop(&q, 1), (strs(&["Replaced:b@2"]), true));
    assert!(q.has_synced());
    assert_eq!(pop(&q, 1), (strs(&["Added:c@3"]), false));
}

/// Non-atomic resync: Sync of the stored object for every stored key with nothing queued.
#[tokio::test]
async fn non_atomic_resync() {
    let q = non_atomic(store(&[obj("a", 1), obj("b", 1), obj("c", 1)]));
    q.update(obj("b", 2)).await.unwrap();
    q.resync().await.unwrap();
    assert_eq!(snap(&q), ["Updated:b@2", "Sync:a@1", "Sync:c@1"]);
}

#[test]
#[should_panic(expected = "known_objects")]
fn non_atomic_requires_known_objects() {
    let _q: RealFifo<ConfigMap> = RealFifo::new(RealFifoOptions { atomic: false, ..Default::default() });
}

/// TestRealFIFO_PopMultipleDeltaInBatch: unique keys are popped together.
#[test]
fn batch_pop_takes_unique_keys() {
    let q = atomic();
    for (i, k) in ["a", "b", "c", "d"].into_iter().enumerate() {
        q.add_blocking(obj(k, i as u64)).unwrap();
    }
    assert_eq!(pop(&q, 100).0, ["Added:a@0", "Added:b@1", "Added:c@2", "Added:d@3"]);
    assert!(q.is_empty());
}

#[test]
fn batch_pop_splits_at_duplicate_key() {
    let q = atomic();
    q.add_blocking(obj("a", 1)).unwrap();
    q.add_blocking(obj("b", 2)).unwrap();
    q.update_blocking(obj("a", 3)).unwrap();
    q.delete_blocking(obj("c", 4)).unwrap();
    q.delete_blocking(obj("c", 5)).unwrap();
    assert_eq!(pop(&q, 100).0, ["Added:a@1", "Added:b@2"]);
    assert_eq!(pop(&q, 100).0, ["Updated:a@3", "Deleted:c@4"]);
    assert_eq!(pop(&q, 100).0, ["Deleted:c@5"]);
}

#[tokio::test]
async fn batch_pop_splits_at_non_batchable_entries() {
    let q = atomic();
    q.add(obj("a", 1)).await.unwrap();
    q.add(obj("b", 2)).await.unwrap();
    q.bookmark("3").await.unwrap();
    q.add(obj("c", 4)).await.unwrap();
    q.resync().await.unwrap();
    q.replace(vec![obj("a", 5)], "5").await.unwrap();
    q.add(obj("d", 6)).await.unwrap();
    let mut batches = Vec::new();
    while !q.is_empty() {
        batches.push(q.pop(100, |ds, _| descs(&ds)).await.unwrap());
    }
    assert_eq!(
        batches,
        [
            strs(&["Added:a@1", "Added:b@2"]),
            strs(&["Bookmark@3"]),
            strs(&["Added:c@4"]),
            strs(&["SyncAll"]),
            strs(&["ReplacedAll@5[a@5]"]),
            strs(&["Added:d@6"]),
        ]
    );
}

#[test]
fn batch_pop_splits_at_initial_list_boundary() {
    let q = non_atomic(store(&[]));
    q.replace_blocking(vec![obj("a", 1), obj("b", 1), obj("c", 1)], "1").unwrap();
    q.add_blocking(obj("d", 2)).unwrap();
    q.add_blocking(obj("e", 2)).unwrap();
    let first = q.pop_blocking(100, |ds, initial| (descs(&ds), initial)).unwrap();
    assert_eq!(first, (strs(&["Replaced:a@1", "Replaced:b@1", "Replaced:c@1"]), true));
    assert!(q.has_synced());
    assert_eq!(pop(&q, 100), (strs(&["Added:d@2", "Added:e@2"]), false));

    // a batch limit smaller than the initial list: still never crosses the boundary
    let q = non_atomic(store(&[]));
    q.replace_blocking(vec![obj("a", 1), obj("b", 1), obj("c", 1)], "1").unwrap();
    q.add_blocking(obj("d", 2)).unwrap();
    assert_eq!(pop(&q, 2), (strs(&["Replaced:a@1", "Replaced:b@1"]), true));
    assert!(!q.has_synced());
    assert_eq!(pop(&q, 2), (strs(&["Replaced:c@1"]), true));
    assert!(q.has_synced());
    assert_eq!(pop(&q, 2), (strs(&["Added:d@2"]), false));
}

#[test]
fn batch_pop_respects_max() {
    let q = atomic();
    for i in 0..5 {
        q.add_blocking(obj(&format!("k{i}"), i)).unwrap();
    }
    let sizes: Vec<usize> = (0..3).map(|_| q.pop_blocking(2, |ds, _| ds.len()).unwrap()).collect();
    assert_eq!(sizes, [2, 2, 1]);
    q.add_blocking(obj("x", 9)).unwrap();
    q.add_blocking(obj("y", 9)).unwrap();
    assert_eq!(q.pop_blocking(1, |ds, _| ds.len()).unwrap(), 1, "max 1 is a plain pop");
}

/// has_synced flips only after the last initial entry was *processed*.
#[tokio::test]
async fn has_synced_only_after_processing() {
    let q = Arc::new(atomic());
    q.replace(vec![obj("a", 1)], "1").await.unwrap();
    q.add(obj("b", 2)).await.unwrap();
    let qq = q.clone();
    let (initial, synced_during) = q.pop(1, move |_, initial| (initial, qq.has_synced())).await.unwrap();
    assert!(initial);
    assert!(!synced_during, "not synced while the initial list is being processed");
    assert!(q.has_synced(), "synced right after");
    assert!(q.synced_signal().is_set());
    let qq = q.clone();
    let (initial, synced_during) = q.pop(1, move |_, initial| (initial, qq.has_synced())).await.unwrap();
    assert!(!initial);
    assert!(synced_during);
}

/// TestRealFIFO_HasSynced matrix.
#[tokio::test]
async fn has_synced_matrix() {
    // empty
    assert!(!atomic().has_synced());
    // atomic empty replace: the (empty) ReplacedAll must still be processed
    let q = atomic();
    q.replace(vec![], "1").await.unwrap();
    assert!(!q.has_synced());
    q.pop(1, |_, initial| assert!(initial)).await.unwrap();
    assert!(q.has_synced());
    // non-atomic empty replace with an empty store: nothing to process
    let q = non_atomic(store(&[]));
    q.replace(vec![], "1").await.unwrap();
    assert!(q.has_synced());
    // add
    let q = atomic();
    q.add(obj("a", 1)).await.unwrap();
    assert!(q.has_synced());
    // add, then replace: the replace is not an initial list
    let q = atomic();
    q.add(obj("a", 1)).await.unwrap();
    q.replace(vec![obj("b", 1)], "1").await.unwrap();
    assert!(q.has_synced());
    // bookmark before the first replace: counted in the initial population (client-go: len(items))
    let q = atomic();
    q.bookmark("1").await.unwrap();
    q.replace(vec![obj("a", 2)], "2").await.unwrap();
    q.pop(1, |_, initial| assert!(initial)).await.unwrap();
    assert!(!q.has_synced());
    q.pop(1, |_, initial| assert!(initial)).await.unwrap();
    assert!(q.has_synced());
    // duplicate keys in a non-atomic list: every Replaced entry counts
    let q = non_atomic(store(&[]));
    q.replace(vec![obj("a", 1), obj("a", 2)], "2").await.unwrap();
    q.pop(100, |ds, _| assert_eq!(ds.len(), 1, "split at the duplicate key")).await.unwrap();
    assert!(!q.has_synced());
    q.pop(100, |_, _| ()).await.unwrap();
    assert!(q.has_synced());
}

/// Polls the task a bounded number of scheduler turns; true if it finished.
async fn finishes<T>(h: &tokio::task::JoinHandle<T>) -> bool {
    for _ in 0..50 {
        if h.is_finished() {
            return true;
        }
        tokio::task::yield_now().await;
    }
    h.is_finished()
}

/// Back-pressure: with capacity 2 a third write waits until a pop makes room.
#[tokio::test]
async fn producers_wait_while_full() {
    let q = Arc::new(with_capacity(2));
    q.add(obj("a", 1)).await.unwrap();
    q.add(obj("b", 2)).await.unwrap();
    let third = {
        let q = q.clone();
        tokio::spawn(async move { q.add(obj("c", 3)).await })
    };
    assert!(!finishes(&third).await, "third add must wait while 2 entries are queued");
    assert_eq!(q.len(), 2);
    // resync and bookmark wait as well
    let resync = {
        let q = q.clone();
        tokio::spawn(async move { q.resync().await })
    };
    assert!(!finishes(&resync).await);

    assert_eq!(q.pop(1, |ds, _| descs(&ds)).await.unwrap(), ["Added:a@1"]);
    // one slot: exactly one of the waiting writers gets in
    let mut done = 0;
    for _ in 0..50 {
        done = usize::from(third.is_finished()) + usize::from(resync.is_finished());
        if done > 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(done, 1, "one freed slot admits one writer");
    assert_eq!(q.len(), 2);
    q.pop(1, |_, _| ()).await.unwrap();
    assert!(finishes(&third).await);
    assert!(finishes(&resync).await);
    third.await.unwrap().unwrap();
    resync.await.unwrap().unwrap();
    let mut rest = Vec::new();
    while !q.is_empty() {
        rest.extend(q.pop(1, |ds, _| descs(&ds)).await.unwrap());
    }
    rest.sort();
    assert_eq!(rest, ["Added:c@3", "SyncAll"]);
}

/// A writer waiting on a full queue is released by close, with an error.
#[tokio::test]
async fn close_releases_waiting_producers() {
    let q = Arc::new(with_capacity(1));
    q.add(obj("a", 1)).await.unwrap();
    let blocked = {
        let q = q.clone();
        tokio::spawn(async move { q.add(obj("b", 2)).await })
    };
    assert!(!finishes(&blocked).await);
    q.close();
    assert_eq!(blocked.await.unwrap(), Err(FifoError::Closed(FifoClosed)));
    assert_eq!(q.pop(1, |ds, _| descs(&ds)).await.unwrap(), ["Added:a@1"], "closed queue still drains");
    assert_eq!(q.pop(1, |_, _| ()).await, Err(FifoClosed));
}

/// Capacity 0 is unbounded: every write completes on its first poll.
#[test]
fn capacity_zero_is_unbounded() {
    let q = with_capacity(0);
    for i in 0..5000 {
        q.add(obj(&format!("k{i}"), i)).now_or_never().expect("add completed without waiting").unwrap();
    }
    assert_eq!(q.len(), 5000);
}

fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    f.poll_unpin(&mut Context::from_waker(Waker::noop()))
}

/// Back-pressure, observed by polling the futures directly: with capacity 2 the third `add` stays
/// pending (and queues nothing) until a pop makes room, then completes on the next poll.
#[test]
fn third_add_is_pending_until_a_pop() {
    let q = with_capacity(2);
    assert!(matches!(q.add(obj("a", 1)).now_or_never(), Some(Ok(()))));
    assert!(matches!(q.add(obj("b", 2)).now_or_never(), Some(Ok(()))));
    let mut third = Box::pin(q.add(obj("c", 3)));
    for _ in 0..3 {
        assert!(poll_once(&mut third).is_pending(), "third add completed while the queue was full");
    }
    assert_eq!(snap(&q), ["Added:a@1", "Added:b@2"]);
    // bookmarks, resyncs and relists wait as well
    assert!(q.bookmark("9").now_or_never().is_none());
    assert!(q.resync().now_or_never().is_none());
    assert!(q.replace(vec![], "9").now_or_never().is_none());
    assert_eq!(q.len(), 2, "abandoned writes queued nothing");

    assert_eq!(pop(&q, 1).0, ["Added:a@1"]);
    assert!(matches!(poll_once(&mut third), Poll::Ready(Ok(()))));
    assert_eq!(snap(&q), ["Added:b@2", "Added:c@3"]);
}

/// Blocking variants from threads: a producer thread against a consumer thread with capacity 2;
/// the queue never holds more than 2 entries and everything arrives in order.
#[test]
fn blocking_producer_and_consumer_threads() {
    const N: u64 = 500;
    let q = Arc::new(with_capacity(2));
    let producer = {
        let q = q.clone();
        std::thread::spawn(move || {
            for i in 0..N {
                q.add_blocking(obj(&format!("k{}", i % 7), i)).unwrap();
            }
            q.replace_blocking(vec![obj("final", N)], "final").unwrap();
        })
    };
    let consumer = {
        let q = q.clone();
        std::thread::spawn(move || {
            let mut got = Vec::new();
            loop {
                let qq = q.clone();
                let r = q.pop_blocking(3, |ds, _| {
                    assert!(qq.len() <= 2, "capacity exceeded: {}", qq.len());
                    descs(&ds)
                });
                let Ok(batch) = r else { break };
                let end = batch.iter().any(|d| d.starts_with("ReplacedAll"));
                got.extend(batch);
                if end {
                    break;
                }
            }
            got
        })
    };
    producer.join().unwrap();
    let got = consumer.join().unwrap();
    let mut want: Vec<String> = (0..N).map(|i| format!("Added:k{}@{i}", i % 7)).collect();
    want.push(format!("ReplacedAll@final[final@{N}]"));
    assert_eq!(got, want);
}

/// Unlock while processing: the producer is not blocked while the consumer processes, so a
/// write from inside `process` (standing in for the reflector) completes.
#[test]
fn producers_proceed_while_consumer_processes() {
    let q = Arc::new(atomic());
    q.add_blocking(obj("a", 1)).unwrap();
    let qq = q.clone();
    q.pop_blocking(1, move |_, _| {
        let t = std::thread::spawn(move || qq.add_blocking(obj("b", 2)));
        t.join().unwrap().unwrap();
    })
    .unwrap();
    assert_eq!(snap(&q), ["Added:b@2"]);
}

#[test]
fn pop_unblocks_on_close_thread() {
    let q = Arc::new(atomic());
    let waiter = {
        let q = q.clone();
        std::thread::spawn(move || q.pop_blocking(1, |_, _| ()))
    };
    q.close();
    assert_eq!(waiter.join().unwrap(), Err(FifoClosed));
}

#[tokio::test]
async fn pop_waits_then_close_drains_then_fails() {
    let q = Arc::new(atomic());
    let popper = {
        let q = q.clone();
        tokio::spawn(async move { q.pop(10, |ds, _| descs(&ds)).await })
    };
    assert!(!finishes(&popper).await, "pop waits while empty");
    q.add(obj("a", 1)).await.unwrap();
    assert_eq!(popper.await.unwrap().unwrap(), ["Added:a@1"]);

    q.add(obj("b", 2)).await.unwrap();
    q.bookmark("3").await.unwrap();
    q.close();
    assert_eq!(q.add(obj("c", 4)).await, Err(FifoError::Closed(FifoClosed)));
    assert_eq!(q.update(obj("c", 4)).await, Err(FifoError::Closed(FifoClosed)));
    assert_eq!(q.delete(obj("c", 4)).await, Err(FifoError::Closed(FifoClosed)));
    assert_eq!(q.replace(vec![], "4").await, Err(FifoError::Closed(FifoClosed)));
    assert_eq!(q.resync().await, Err(FifoError::Closed(FifoClosed)));
    assert_eq!(q.bookmark("4").await, Err(FifoError::Closed(FifoClosed)));
    assert_eq!(q.pop(10, |ds, _| descs(&ds)).await.unwrap(), ["Added:b@2"]);
    assert_eq!(q.pop(10, |ds, _| descs(&ds)).await.unwrap(), ["Bookmark@3"]);
    assert_eq!(q.pop(10, |_, _| ()).await, Err(FifoClosed));

    let popper = {
        let q = q.clone();
        tokio::spawn(async move { q.pop(1, |_, _| ()).await })
    };
    assert_eq!(popper.await.unwrap(), Err(FifoClosed));
}

/// A transform that stamps `xfrm=<n+1>` and counts its calls.
fn stamping_transform(calls: Arc<AtomicUsize>) -> Transform<ConfigMap> {
    Arc::new(move |o: Obj| {
        calls.fetch_add(1, Ordering::SeqCst);
        let mut v: serde_json::Value = serde_json::from_slice(&o.raw_json()).unwrap();
        let n: u32 = o.label("xfrm").map(|x| x.parse().unwrap()).unwrap_or(0);
        v["metadata"]["labels"] = json!({ "xfrm": (n + 1).to_string() });
        Object::from_json(serde_json::to_vec(&v).unwrap()).map_err(|e| e.to_string())
    })
}

fn all_objects(ds: &[Delta<ConfigMap>]) -> Vec<Obj> {
    ds.iter()
        .flat_map(|d| match d {
            Delta::ReplacedAll { objects, .. } => objects.clone(),
            other => other.object().cloned().into_iter().collect(),
        })
        .collect()
}

/// The transform runs once per incoming object (also inside ReplacedAll), never on tombstones nor
/// on Sync entries built from the store.
#[tokio::test]
async fn transform_applied_exactly_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let q: RealFifo<ConfigMap> =
        RealFifo::new(RealFifoOptions { transform: Some(stamping_transform(calls.clone())), ..Default::default() });
    q.add(obj("a", 1)).await.unwrap();
    q.update(obj("a", 2)).await.unwrap();
    q.delete(obj("a", 3)).await.unwrap();
    q.replace(vec![obj("b", 4), obj("c", 4)], "4").await.unwrap();
    q.resync().await.unwrap();
    q.bookmark("5").await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    let objs = all_objects(&q.snapshot());
    assert_eq!(objs.len(), 5);
    assert!(objs.iter().all(|o| o.label("xfrm") == Some("1")));

    // non-atomic: tombstones carry the (already transformed) queued object; Sync from the store
    // is not transformed
    let calls = Arc::new(AtomicUsize::new(0));
    let t = stamping_transform(calls.clone());
    let known = store(&[t(obj("s", 1)).unwrap(), t(obj("gone", 1)).unwrap()]);
    calls.store(0, Ordering::SeqCst);
    let q: RealFifo<ConfigMap> = RealFifo::new(RealFifoOptions {
        transform: Some(t),
        atomic: false,
        known_objects: Some(known as Arc<dyn KnownObjects<ConfigMap>>),
        ..Default::default()
    });
    q.add(obj("a", 2)).await.unwrap();
    q.resync().await.unwrap();
    q.replace(vec![obj("s", 3)], "3").await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the add and the listed object");
    assert_eq!(snap(&q), ["Added:a@2", "Sync:gone@1", "Sync:s@1", "Unknown:a@2", "Unknown:gone@1", "Replaced:s@3"]);
    let queued = q.snapshot();
    assert!(all_objects(&queued).iter().all(|o| o.label("xfrm") == Some("1")), "nothing transformed twice");

    // a failing transform rejects the write and queues nothing
    let q: RealFifo<ConfigMap> = RealFifo::new(RealFifoOptions {
        transform: Some(Arc::new(|_o: Obj| Err("nope".to_string()))),
        ..Default::default()
    });
    assert!(matches!(q.add(obj("a", 1)).await, Err(FifoError::Transform(ref e)) if e.key.as_str() == "a"));
    assert!(matches!(q.replace(vec![obj("a", 1)], "1").await, Err(FifoError::Transform(_))));
    assert!(q.is_empty());
    assert!(!q.has_synced());
}

/// Entries popped before the queue was populated (a bookmark, a resync) are not part of the
/// initial list, even when the first replace arrives while they are being processed: has_synced
/// must stay false until the ReplacedAll itself was processed.
#[test]
fn entries_popped_before_the_first_replace_do_not_count() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    for pre in ["bookmark", "resync"] {
        let q = Arc::new(atomic());
        match pre {
            "bookmark" => rt.block_on(q.bookmark("1")).unwrap(),
            _ => rt.block_on(q.resync()).unwrap(),
        }
        let qq = q.clone();
        let initial = q
            .pop_blocking(1, move |_, initial| {
                // the reflector lists while the consumer is busy (atomic mode: lock released)
                qq.replace_blocking(vec![obj("a", 2)], "2").unwrap();
                initial
            })
            .unwrap();
        assert!(initial, "{pre}: not synced yet when it was popped");
        assert!(!q.has_synced(), "{pre}: synced although the initial ReplacedAll is still queued");
        assert_eq!(pop(&q, 1), (strs(&["ReplacedAll@2[a@2]"]), true));
        assert!(q.has_synced());
    }
}

/// Pops one entry, applies it to `store`, and while it is being processed runs `during` on
/// another thread; returns whether `during` completed while the entry was being processed. The
/// bounded wait only gives a wrong implementation the chance to show the race; the outcome
/// asserted by the callers does not depend on timing.
fn pop_apply_racing(
    q: &Arc<RealFifo<ConfigMap>>,
    store: &Arc<Indexer<ConfigMap>>,
    during: impl FnOnce() + Send + 'static,
) -> (bool, std::thread::JoinHandle<()>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let store = store.clone();
    q.pop_blocking(1, move |ds, _| {
        let t = std::thread::spawn(move || {
            during();
            let _ = tx.send(());
        });
        let raced = rx.recv_timeout(std::time::Duration::from_millis(200)).is_ok();
        for d in &ds {
            match d {
                Delta::Deleted(DeletedObject::Object(o)) => {
                    store.delete(o);
                }
                Delta::Deleted(DeletedObject::FinalStateUnknown(t)) => {
                    store.delete_key(t.key.as_str());
                }
                other => store.add(other.object().unwrap().clone()).unwrap(),
            }
        }
        (raced, t)
    })
    .unwrap()
}

fn drain_into(q: &RealFifo<ConfigMap>, store: &Indexer<ConfigMap>) {
    while !q.is_empty() {
        q.pop_blocking(10, |ds, _| {
            for d in &ds {
                match d {
                    Delta::Deleted(DeletedObject::Object(o)) => {
                        store.delete(o);
                    }
                    Delta::Deleted(DeletedObject::FinalStateUnknown(t)) => {
                        store.delete_key(t.key.as_str());
                    }
                    other => store.add(other.object().unwrap().clone()).unwrap(),
                }
            }
        })
        .unwrap();
    }
}

/// Non-atomic mode reads the store during a relist, so it must not run while a popped entry is
/// still being applied (client-go allows UnlockWhileProcessing only in atomic mode): otherwise an
/// object added by the popped entry and deleted while the watch was down is never tombstoned.
#[test]
fn non_atomic_relist_waits_for_processing() {
    let store = store(&[]);
    let q = Arc::new(non_atomic(store.clone()));
    q.add_blocking(obj("a", 1)).unwrap();
    let qq = q.clone();
    let (raced, producer) = pop_apply_racing(&q, &store, move || qq.replace_blocking(vec![], "2").unwrap());
    producer.join().unwrap();
    assert!(!raced, "the relist ran while the popped Added was being processed");
    drain_into(&q, &store);
    assert!(store.is_empty(), "stale object left in the store: {:?}", store.list());
}

/// Same for a non-atomic resync: a Sync read from a store that lags behind the popped entry would
/// roll the object back.
#[test]
fn non_atomic_resync_waits_for_processing() {
    let store = store(&[obj("a", 1)]);
    let q = Arc::new(non_atomic(store.clone()));
    q.update_blocking(obj("a", 2)).unwrap();
    let qq = q.clone();
    let (raced, producer) = pop_apply_racing(&q, &store, move || {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(qq.resync()).unwrap()
    });
    producer.join().unwrap();
    assert!(!raced, "the resync ran while the popped Updated was being processed");
    drain_into(&q, &store);
    assert_eq!(store.get_by_key("a").unwrap().resource_version(), Some("2"), "resync rolled the object back");
}

/// The synced signal wakes thread and task waiters once the initial list was processed.
#[test]
fn synced_signal_wakes_thread_and_task_waiters() {
    let q = Arc::new(atomic());
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(q.replace(vec![obj("a", 1)], "1")).unwrap();
    let sig = q.synced_signal();
    assert!(!sig.is_set());
    let thread_waiter = {
        let sig = sig.clone();
        std::thread::spawn(move || sig.wait_blocking(None))
    };
    let task_waiter = rt.spawn({
        let sig = sig.clone();
        async move { sig.wait().await }
    });
    let consumer = {
        let q = q.clone();
        std::thread::spawn(move || q.pop_blocking(1, |_, initial| initial).unwrap())
    };
    assert!(consumer.join().unwrap());
    assert!(thread_waiter.join().unwrap());
    rt.block_on(task_waiter).unwrap();
    assert!(q.has_synced());
}
