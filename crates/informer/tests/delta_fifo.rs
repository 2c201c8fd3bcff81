//! DeltaFifo behaviour, ported from client-go's delta_fifo_test.go
//! (reference: client-go-semantics.md §2.1, §2.2, §2.5, §8.4).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use informer::fifo::{DeltaFifoOptions, FifoError, KnownObjects, Queue, Transform};
use informer::{DeletedObject, Delta, DeltaFifo, FifoClosed, Indexer, Indexers, Object};
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

/// `Added@1`, `Deleted@3`, `Unknown@2` (tombstone with its last known state), `Unknown@-`.
fn desc(d: &Delta<ConfigMap>) -> String {
    let rv = |o: Option<&Obj>| o.and_then(|o| o.resource_version()).unwrap_or("-").to_string();
    match d {
        Delta::Deleted(DeletedObject::FinalStateUnknown(t)) => format!("Unknown@{}", rv(t.last_known.as_ref())),
        other => format!("{:?}@{}", other.delta_type(), rv(other.object())),
    }
}

fn descs(ds: &[Delta<ConfigMap>]) -> Vec<String> {
    ds.iter().map(desc).collect()
}

/// The queue as `[(key, [delta descriptions])]` in pop order.
fn snap(q: &DeltaFifo<ConfigMap>) -> Vec<(String, Vec<String>)> {
    q.snapshot().into_iter().map(|(k, ds)| (k.to_string(), descs(&ds))).collect()
}

fn entry(k: &str, ds: &[&str]) -> (String, Vec<String>) {
    (k.to_string(), ds.iter().map(|s| s.to_string()).collect())
}

/// Pops one key: (key, delta descriptions, is_in_initial_list).
fn pop(q: &DeltaFifo<ConfigMap>) -> (String, Vec<String>, bool) {
    q.pop_blocking(|ds, initial| (ds[0].key().unwrap().to_string(), descs(&ds), initial)).unwrap()
}

fn store(objs: &[Obj]) -> Arc<Indexer<ConfigMap>> {
    let s = Arc::new(Indexer::new(Indexers::new()));
    for o in objs {
        s.add(o.clone()).unwrap();
    }
    s
}

fn fifo(known: Option<Arc<Indexer<ConfigMap>>>, emit_replaced: bool) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(DeltaFifoOptions {
        known_objects: known.map(|k| k as Arc<dyn KnownObjects<ConfigMap>>),
        emit_replaced,
        ..Default::default()
    })
}

/// TestDeltaFIFO_basic: two producers, one consumer; each producer's items arrive in order.
#[test]
fn ordering_across_two_producers() {
    const N: u64 = 200;
    let q = Arc::new(fifo(None, false));
    let producers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|p| {
            let q = q.clone();
            std::thread::spawn(move || {
                for i in 0..N {
                    q.add_now(obj(&format!("{p}{i}"), i)).unwrap();
                }
            })
        })
        .collect();
    let mut last = [None::<u64>, None];
    for _ in 0..2 * N {
        let (key, ds, _) = pop(&q);
        assert_eq!(ds.len(), 1, "distinct keys: one delta each");
        let p = usize::from(key.starts_with('b'));
        let i: u64 = key[1..].parse().unwrap();
        assert!(last[p].is_none_or(|l| l + 1 == i), "producer {p}: {i} after {:?}", last[p]);
        last[p] = Some(i);
    }
    for t in producers {
        t.join().unwrap();
    }
    assert_eq!(last, [Some(N - 1), Some(N - 1)]);
    assert!(q.is_empty());
}

/// TestDeltaFIFO_addUpdate-like: add, update and delete of one key collapse into one queue entry
/// holding the three deltas in order.
#[test]
fn add_update_delete_collapse_to_one_key() {
    let q = fifo(None, false);
    q.add_now(obj("foo", 1)).unwrap();
    q.update_now(obj("foo", 2)).unwrap();
    q.delete_now(obj("foo", 3)).unwrap();
    assert_eq!(q.len(), 1);
    let (key, ds, _) = pop(&q);
    assert_eq!(key, "foo");
    assert_eq!(ds, ["Added@1", "Updated@2", "Deleted@3"]);
    assert!(q.is_empty());
}

/// TestDeltaFIFO_detectLineJumpers: a queued key keeps its position when more deltas arrive.
#[test]
fn line_jumping_is_prevented() {
    let q = fifo(None, false);
    q.add_now(obj("foo", 10)).unwrap();
    q.add_now(obj("bar", 1)).unwrap();
    q.add_now(obj("foo", 11)).unwrap();
    q.add_now(obj("foo", 13)).unwrap();
    q.add_now(obj("zab", 30)).unwrap();
    assert_eq!(pop(&q).0, "foo");
    q.add_now(obj("bar", 14)).unwrap(); // bar already queued: stays ahead of zab
    q.add_now(obj("foo", 15)).unwrap(); // foo was popped: goes to the back
    let order: Vec<(String, Vec<String>)> = (0..3).map(|_| pop(&q)).map(|(k, d, _)| (k, d)).collect();
    assert_eq!(
        order,
        [entry("bar", &["Added@1", "Added@14"]), entry("zab", &["Added@30"]), entry("foo", &["Added@15"])]
    );
}

/// TestDeltaFIFO_enqueueingNoLister / WithLister / DeleteExistingNonPropagated.
#[test]
fn delete_of_unknown_key() {
    // without known objects: ignored unless the key is queued
    let q = fifo(None, false);
    q.delete_now(obj("foo", 1)).unwrap();
    assert!(q.is_empty(), "delete of an unknown key is dropped");
    q.add_now(obj("foo", 2)).unwrap();
    q.delete_now(obj("foo", 3)).unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Added@2", "Deleted@3"])], "delete after a queued add is kept");

    // with known objects: ignored only if neither stored nor queued
    let q = fifo(Some(store(&[obj("bar", 1)])), false);
    q.delete_now(obj("foo", 4)).unwrap();
    assert!(q.is_empty());
    q.delete_now(obj("bar", 5)).unwrap();
    assert_eq!(snap(&q), [entry("bar", &["Deleted@5"])], "delete of a stored key is queued");

    // queued but not in the (empty) store: still kept (TestDeltaFIFO_DeleteExistingNonPropagated)
    let q = fifo(Some(store(&[])), false);
    q.add_now(obj("foo", 5)).unwrap();
    q.delete_now(obj("foo", 6)).unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Added@5", "Deleted@6"])]);
}

/// k8s#83810: a Replace after a queued Delete still enqueues the listed object.
#[test]
fn replace_after_delete_still_enqueues_sync() {
    let q = fifo(Some(store(&[obj("foo", 5)])), false);
    q.delete_now(obj("foo", 6)).unwrap();
    q.replace_now(vec![obj("foo", 7)], "7").unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Deleted@6", "Sync@7"])]);

    let q = fifo(None, true);
    q.add_now(obj("foo", 1)).unwrap();
    q.delete_now(obj("foo", 2)).unwrap();
    q.replace_now(vec![obj("foo", 3)], "3").unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Added@1", "Deleted@2", "Replaced@3"])]);
}

/// TestDeltaFIFO_addReplace: Add then Replace ⇒ both deltas, newest is the relisted value.
#[test]
fn add_then_replace_newest_is_the_list_value() {
    let q = fifo(None, false);
    q.add_now(obj("foo", 10)).unwrap();
    q.replace_now(vec![obj("foo", 15)], "15").unwrap();
    let (key, ds, _) = pop(&q);
    assert_eq!(key, "foo");
    assert_eq!(ds, ["Added@10", "Sync@15"]);
}

/// TestDeltaFIFO_ReplaceMakesDeletionsForObjectsOnlyInQueue: one tombstone per vanished queued
/// key, carrying the newest queued state; none when the queue already ends in a delete.
#[test]
fn replace_makes_one_tombstone_for_queue_only_objects() {
    type Step = fn(&DeltaFifo<ConfigMap>);
    let cases: Vec<(&str, Vec<Step>, Vec<&str>)> = vec![
        ("added", vec![|q| q.add_now(obj("foo", 1)).unwrap()], vec!["Added@1", "Unknown@1"]),
        (
            "updated",
            vec![|q| q.add_now(obj("foo", 1)).unwrap(), |q| q.update_now(obj("foo", 2)).unwrap()],
            vec!["Added@1", "Updated@2", "Unknown@2"],
        ),
        ("replaced", vec![|q| q.replace_now(vec![obj("foo", 1)], "1").unwrap()], vec!["Replaced@1", "Unknown@1"]),
        (
            "deleted",
            vec![|q| q.add_now(obj("foo", 1)).unwrap(), |q| q.delete_now(obj("foo", 2)).unwrap()],
            vec!["Added@1", "Deleted@2"],
        ),
        (
            "multiple replaces",
            vec![|q| q.add_now(obj("foo", 1)).unwrap(), |q| q.replace_now(vec![], "2").unwrap()],
            vec!["Added@1", "Unknown@1"],
        ),
        (
            "add-delete-add",
            vec![|q| q.add_now(obj("foo", 1)).unwrap(), |q| q.delete_now(obj("foo", 2)).unwrap(), |q| {
                q.add_now(obj("foo", 3)).unwrap()
            }],
            vec!["Added@1", "Deleted@2", "Added@3", "Unknown@3"],
        ),
    ];
    for (name, steps, want) in cases {
        // Without known objects, with an empty store, and with a store holding an older foo:
        // the tombstone carries the newest queued state, never the store's.
        for known in [None, Some(store(&[])), Some(store(&[obj("foo", 0)]))] {
            let with_store = known.is_some();
            let q = fifo(known, true);
            for s in &steps {
                s(&q);
            }
            q.replace_now(vec![obj("bar", 9)], "9").unwrap();
            assert_eq!(
                snap(&q),
                [entry("foo", &want), entry("bar", &["Replaced@9"])],
                "case {name:?}, known objects: {with_store}"
            );
        }
    }

    // Synced: a resync'd key that vanishes gets one tombstone.
    let q = fifo(Some(store(&[obj("foo", 1)])), false);
    q.resync_now().unwrap();
    q.replace_now(vec![], "2").unwrap();
    q.replace_now(vec![], "3").unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Sync@1", "Unknown@1"])]);
}

/// TestDeltaFIFO_ReplaceMakesDeletions: tombstones for stored keys with nothing queued carry the
/// stored object; queued keys carry the queue's newest object.
#[test]
fn replace_deletion_detection_and_tombstone_objects() {
    let known = store(&[obj("foo", 5), obj("bar", 6), obj("baz", 7)]);
    let q = fifo(Some(known.clone()), false);
    q.delete_now(obj("baz", 10)).unwrap();
    q.update_now(obj("bar", 11)).unwrap();
    q.replace_now(vec![obj("foo", 5)], "0").unwrap();
    assert_eq!(
        snap(&q),
        [entry("baz", &["Deleted@10"]), entry("bar", &["Updated@11", "Unknown@11"]), entry("foo", &["Sync@5"]),]
    );

    // keys only in the store: tombstone with the stored object
    let q = fifo(Some(known), false);
    q.replace_now(vec![obj("foo", 5)], "0").unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Sync@5"]), entry("bar", &["Unknown@6"]), entry("baz", &["Unknown@7"])]);

    // without known objects, only queued keys are detected
    let q = fifo(None, false);
    q.add_now(obj("baz", 10)).unwrap();
    q.replace_now(vec![obj("foo", 5)], "0").unwrap();
    assert_eq!(snap(&q), [entry("baz", &["Added@10", "Unknown@10"]), entry("foo", &["Sync@5"])]);
}

/// TestDeltaFIFO_ReplaceDeltaType / emitDeltaTypeReplaced.
#[test]
fn replace_delta_type_follows_emit_replaced() {
    let q = fifo(None, false);
    q.replace_now(vec![obj("foo", 1)], "1").unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Sync@1"])]);
    let q = fifo(None, true);
    q.replace_now(vec![obj("foo", 1)], "1").unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Replaced@1"])]);
}

/// TestDeltaFIFO_Resync.
#[test]
fn resync_emits_sync_for_stored_objects() {
    let q = fifo(Some(store(&[obj("foo", 1), obj("bar", 2)])), false);
    q.resync_now().unwrap();
    let mut got = snap(&q);
    got.sort();
    assert_eq!(got, [entry("bar", &["Sync@2"]), entry("foo", &["Sync@1"])]);
    assert!(!q.has_synced(), "a resync does not populate the queue");

    let q = fifo(None, false);
    q.resync_now().unwrap();
    assert!(q.is_empty(), "resync without known objects is a no-op");
}

/// TestDeltaFIFO_ResyncNonExisting / TestDeltaFIFO_UpdateResyncRace: a resync never queues a
/// stored (older) state behind a pending delta of the same key.
#[test]
fn resync_skips_keys_with_pending_deltas() {
    let q = fifo(Some(store(&[obj("foo", 5), obj("bar", 5)])), false);
    q.delete_now(obj("foo", 10)).unwrap();
    q.resync_now().unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Deleted@10"]), entry("bar", &["Sync@5"])]);

    let q = fifo(Some(store(&[obj("foo", 5)])), false);
    q.update_now(obj("foo", 6)).unwrap();
    q.resync_now().unwrap();
    let (_, ds, _) = pop(&q);
    assert_eq!(ds, ["Updated@6"], "update then resync ⇒ only Updated");
    assert!(q.is_empty());
}

/// dedupDeltas: two trailing deletes merge into one; the older one is kept unless it is a
/// tombstone, in which case the newer (real) one is kept.
#[test]
fn trailing_deletes_are_deduplicated() {
    // real, real ⇒ older
    let q = fifo(None, false);
    q.add_now(obj("foo", 1)).unwrap();
    q.delete_now(obj("foo", 2)).unwrap();
    q.delete_now(obj("foo", 3)).unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Added@1", "Deleted@2"])]);

    // real, tombstone ⇒ the real one (older)
    let q = fifo(None, false);
    q.add_now(obj("foo", 1)).unwrap();
    q.delete_now(obj("foo", 2)).unwrap();
    q.replace_now(vec![], "3").unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Added@1", "Deleted@2"])]);

    // tombstone, real ⇒ the real one (newer)
    let q = fifo(None, false);
    q.add_now(obj("foo", 1)).unwrap();
    q.replace_now(vec![], "2").unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Added@1", "Unknown@1"])]);
    q.delete_now(obj("foo", 3)).unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Added@1", "Deleted@3"])]);

    // tombstone, tombstone ⇒ the newer tombstone
    let q = fifo(Some(store(&[obj("foo", 1)])), false);
    q.replace_now(vec![], "2").unwrap();
    q.replace_now(vec![], "3").unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Unknown@1"])]);
    // a delete followed by a non-delete is not merged
    q.add_now(obj("foo", 4)).unwrap();
    q.delete_now(obj("foo", 5)).unwrap();
    assert_eq!(snap(&q), [entry("foo", &["Unknown@1", "Added@4", "Deleted@5"])]);
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

fn xfrm(o: Option<&Obj>) -> String {
    o.and_then(|o| o.label("xfrm")).unwrap_or("none").to_string()
}

/// TestDeltaFIFO_Transformer: every object is transformed exactly once; tombstones re-use the
/// transformed object and are not transformed again.
#[test]
fn transform_applied_exactly_once_per_object() {
    let calls = Arc::new(AtomicUsize::new(0));
    let q: DeltaFifo<ConfigMap> =
        DeltaFifo::new(DeltaFifoOptions { transform: Some(stamping_transform(calls.clone())), ..Default::default() });
    q.add_now(obj("foo", 10)).unwrap();
    q.add_now(obj("bar", 11)).unwrap();
    q.update_now(obj("foo", 12)).unwrap();
    q.delete_now(obj("foo", 15)).unwrap();
    q.replace_now(vec![], "").unwrap();
    q.add_now(obj("bar", 16)).unwrap();
    q.replace_now(vec![], "").unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    let mut keys = Vec::new();
    while !q.is_empty() {
        q.pop_blocking(|ds, _| {
            keys.push(ds[0].key().unwrap().to_string());
            for d in &ds {
                assert_eq!(xfrm(d.object()), "1", "{d:?} transformed once");
            }
            // bar: tombstones carry the transformed objects as they were queued
            if ds[0].key().unwrap().as_str() == "bar" {
                assert_eq!(descs(&ds), ["Added@11", "Unknown@11", "Added@16", "Unknown@16"]);
            } else {
                assert_eq!(descs(&ds), ["Added@10", "Updated@12", "Deleted@15"]);
            }
        })
        .unwrap();
    }
    assert_eq!(keys, ["foo", "bar"]);
}

#[test]
fn transform_runs_on_replace_not_on_resync_nor_store_tombstones() {
    let calls = Arc::new(AtomicUsize::new(0));
    let t = stamping_transform(calls.clone());
    // the store holds already transformed objects
    let known = store(&[t(obj("old", 1)).unwrap(), t(obj("kept", 2)).unwrap()]);
    calls.store(0, Ordering::SeqCst);
    let q: DeltaFifo<ConfigMap> = DeltaFifo::new(DeltaFifoOptions {
        transform: Some(t),
        known_objects: Some(known as Arc<dyn KnownObjects<ConfigMap>>),
        ..Default::default()
    });
    q.resync_now().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0, "Sync from the store is not transformed");
    q.replace_now(vec![obj("new", 3), obj("kept", 4)], "4").unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "listed objects are transformed (even when emitting Sync)");
    for (_, ds) in q.snapshot() {
        for d in &ds {
            assert_eq!(xfrm(d.object()), "1", "{d:?}");
        }
    }
    let s = snap(&q);
    assert!(s.contains(&entry("old", &["Sync@1", "Unknown@1"])), "{s:?}");

    // a failing transform rejects the write and queues nothing
    let q: DeltaFifo<ConfigMap> = DeltaFifo::new(DeltaFifoOptions {
        transform: Some(Arc::new(|_o: Obj| Err("nope".to_string()))),
        ..Default::default()
    });
    assert!(matches!(q.add_now(obj("foo", 1)), Err(FifoError::Transform(ref e)) if e.key.as_str() == "foo"));
    assert!(matches!(q.replace_now(vec![obj("foo", 1)], "1"), Err(FifoError::Transform(_))));
    assert!(q.is_empty());
    assert!(!q.has_synced());
}

/// TestDeltaFIFO_HasSynced.
#[test]
fn has_synced_matrix() {
    type Step = fn(&DeltaFifo<ConfigMap>);
    let pop1: Step = |q| {
        pop(q);
    };
    let cases: Vec<(&str, Vec<Step>, bool)> = vec![
        ("empty queue", vec![], false),
        ("empty replace", vec![|q| q.replace_now(vec![], "0").unwrap()], true),
        ("add", vec![|q| q.add_now(obj("a", 1)).unwrap(), |q| q.add_now(obj("b", 2)).unwrap()], true),
        ("update", vec![|q| q.update_now(obj("a", 1)).unwrap()], true),
        ("replace", vec![|q| q.replace_now(vec![obj("a", 1), obj("b", 2)], "0").unwrap()], false),
        ("replace and pop", vec![|q| q.replace_now(vec![obj("a", 1), obj("b", 2)], "0").unwrap(), pop1], false),
        (
            "replace and pop all",
            vec![|q| q.replace_now(vec![obj("a", 1), obj("b", 2)], "0").unwrap(), pop1, pop1],
            true,
        ),
        (
            "replace with duplicate keys and pop",
            vec![|q| q.replace_now(vec![obj("a", 1), obj("a", 2)], "0").unwrap(), pop1],
            true,
        ),
        (
            "add then replace: the replace is not the initial list",
            vec![|q| q.add_now(obj("x", 1)).unwrap(), |q| q.replace_now(vec![obj("a", 1)], "0").unwrap()],
            true,
        ),
        (
            "second replace does not reset the count",
            vec![|q| q.replace_now(vec![obj("a", 1)], "0").unwrap(), pop1, |q| {
                q.replace_now(vec![obj("a", 2), obj("b", 2)], "0").unwrap()
            }],
            true,
        ),
    ];
    for (name, steps, want) in cases {
        let q = fifo(None, false);
        for s in &steps {
            s(&q);
        }
        assert_eq!(q.has_synced(), want, "{name}");
        assert_eq!(q.synced_signal().is_set(), want, "{name}: signal");
    }
}

/// TestDeltaFIFO_HasSyncedCorrectOnDeletion: the initial population includes the tombstones of
/// the first replace; has_synced is false until every initial key was popped *and processed*,
/// and is_in_initial_list is true exactly for those pops.
#[test]
fn has_synced_counts_initial_deletions_and_waits_for_processing() {
    let q = Arc::new(fifo(Some(store(&[obj("gone", 1)])), false));
    q.replace_now(vec![obj("a", 2), obj("b", 3)], "3").unwrap();
    q.add_now(obj("c", 4)).unwrap(); // after the initial list
    q.add_now(obj("a", 5)).unwrap(); // joins a's initial entry
    assert!(!q.has_synced());
    let mut seen = Vec::new();
    for _ in 0..4 {
        let qq = q.clone();
        let (key, ds, initial, synced_during) = q
            .pop_blocking(|ds, initial| (ds[0].key().unwrap().to_string(), descs(&ds), initial, qq.has_synced()))
            .unwrap();
        seen.push((key, ds, initial, synced_during, q.has_synced()));
    }
    let want: Vec<(String, Vec<String>, bool, bool, bool)> = vec![
        ("a".into(), vec!["Sync@2".into(), "Added@5".into()], true, false, false),
        ("b".into(), vec!["Sync@3".into()], true, false, false),
        // the last initial key: has_synced stays false while it is processed, true right after
        ("gone".into(), vec!["Unknown@1".into()], true, false, true),
        ("c".into(), vec!["Added@4".into()], false, true, true),
    ];
    assert_eq!(seen, want);
}

#[tokio::test]
async fn synced_signal_wakes_async_waiters() {
    let q = Arc::new(fifo(None, false));
    q.replace(vec![obj("a", 1)], "1").await.unwrap();
    let sig = q.synced_signal();
    let waiter = tokio::spawn(async move { sig.wait().await });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    let initial = q.pop(1, |_, initial| initial).await.unwrap();
    assert!(initial);
    waiter.await.unwrap();
    assert!(q.has_synced());
}

/// TestDeltaFIFO_PopShouldUnblockWhenClosed (thread and task variants).
#[test]
fn pop_unblocks_on_close_thread() {
    let q = Arc::new(fifo(None, false));
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            std::thread::spawn(move || q.pop_blocking(|_, _| ()))
        })
        .collect();
    q.close();
    for w in waiters {
        assert_eq!(w.join().unwrap(), Err(FifoClosed));
    }
}

#[tokio::test]
async fn pop_waits_for_an_item_and_unblocks_on_close() {
    let q = Arc::new(fifo(None, false));
    let popper = {
        let q = q.clone();
        tokio::spawn(async move { q.pop(1, |ds, _| descs(&ds)).await })
    };
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!popper.is_finished(), "pop waits while the queue is empty");
    q.add(obj("foo", 1)).await.unwrap();
    assert_eq!(popper.await.unwrap().unwrap(), ["Added@1"]);

    let popper = {
        let q = q.clone();
        tokio::spawn(async move { q.pop(1, |_, _| ()).await })
    };
    tokio::task::yield_now().await;
    q.close();
    assert_eq!(popper.await.unwrap(), Err(FifoClosed));
}

/// A closed queue rejects writes, hands out what it holds, then fails with FifoClosed.
#[tokio::test]
async fn close_drains_then_fails() {
    let q = fifo(Some(store(&[obj("s", 1)])), false);
    q.add(obj("a", 1)).await.unwrap();
    q.add(obj("b", 2)).await.unwrap();
    q.close();
    assert_eq!(q.add(obj("c", 3)).await, Err(FifoError::Closed(FifoClosed)));
    assert_eq!(q.update(obj("a", 4)).await, Err(FifoError::Closed(FifoClosed)));
    assert_eq!(q.delete(obj("a", 5)).await, Err(FifoError::Closed(FifoClosed)));
    assert_eq!(q.replace(vec![], "6").await, Err(FifoError::Closed(FifoClosed)));
    assert_eq!(q.resync().await, Err(FifoError::Closed(FifoClosed)));
    assert_eq!(q.pop(1, |ds, _| descs(&ds)).await.unwrap(), ["Added@1"]);
    assert_eq!(q.pop(1, |ds, _| descs(&ds)).await.unwrap(), ["Added@2"]);
    assert_eq!(q.pop(1, |_, _| ()).await, Err(FifoClosed));
    assert_eq!(q.pop(1, |_, _| ()).await, Err(FifoClosed));
}

/// DeltaFifo ignores bookmarks (client-go's DeltaFIFO has no Bookmark delta).
#[tokio::test]
async fn bookmarks_are_ignored() {
    let q = fifo(None, false);
    q.bookmark("5").await.unwrap();
    assert!(q.is_empty());
    assert!(!q.has_synced());
}

/// A delete that is ignored (unknown key) is dropped before the transform runs, as in client-go
/// (Delete returns before queueActionLocked): the transform is not called and cannot fail it.
#[test]
fn ignored_delete_is_not_transformed() {
    let calls = Arc::new(AtomicUsize::new(0));
    let q: DeltaFifo<ConfigMap> =
        DeltaFifo::new(DeltaFifoOptions { transform: Some(stamping_transform(calls.clone())), ..Default::default() });
    q.delete_now(obj("foo", 1)).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(q.is_empty());
    q.add_now(obj("foo", 2)).unwrap();
    q.delete_now(obj("foo", 3)).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "queued key: the delete is transformed");

    let q: DeltaFifo<ConfigMap> = DeltaFifo::new(DeltaFifoOptions {
        transform: Some(Arc::new(|_o: Obj| Err("nope".to_string()))),
        known_objects: Some(store(&[obj("known", 1)]) as Arc<dyn KnownObjects<ConfigMap>>),
        ..Default::default()
    });
    assert_eq!(q.delete_now(obj("unknown", 1)), Ok(()), "ignored, not a transform error");
    assert!(matches!(q.delete_now(obj("known", 2)), Err(FifoError::Transform(_))));
}

/// TestDeltaFIFO_KeyOf: the key of an object delta, of a tombstone (with or without its last
/// state), and none for whole-set deltas.
#[test]
fn delta_key_of() {
    use informer::{DeltaType, ObjectKey, Tombstone};
    let key = |d: &Delta<ConfigMap>| d.key().map(|k| k.to_string());
    assert_eq!(key(&Delta::Added(obj("foo", 1))), Some("foo".into()));
    assert_eq!(key(&Delta::Sync(obj("foo", 1))), Some("foo".into()));
    assert_eq!(key(&Delta::Deleted(DeletedObject::Object(obj("foo", 1)))), Some("foo".into()));
    let t = |last: Option<Obj>| {
        Delta::Deleted(DeletedObject::FinalStateUnknown(Tombstone {
            key: ObjectKey::parse("ns/gone").unwrap(),
            last_known: last,
        }))
    };
    assert_eq!(key(&t(None)), Some("ns/gone".into()));
    assert_eq!(key(&t(Some(obj("gone", 3)))), Some("ns/gone".into()), "a tombstone's key wins");
    assert!(t(None).object().is_none());
    assert_eq!(t(Some(obj("gone", 3))).object().unwrap().resource_version(), Some("3"));
    let d = Delta::<ConfigMap>::ReplacedAll { objects: vec![obj("a", 1)], resource_version: "1".into() };
    assert_eq!((d.key(), d.is_batchable(), d.delta_type()), (None, false, DeltaType::ReplacedAll));
    assert!(!Delta::<ConfigMap>::SyncAll.is_batchable());
    assert!(!Delta::<ConfigMap>::Bookmark { resource_version: "1".into() }.is_batchable());
    assert!(Delta::Replaced(obj("a", 1)).is_batchable());
    assert!(t(None).is_batchable());
}
