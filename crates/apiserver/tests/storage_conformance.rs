//! The storage interface's conformance suite, run against every backend: memory, SQLite (a
//! temporary directory) and etcd (a real etcd process started for the test).
//!
//! Each check names the part of the contract (`storage/mod.rs`) it asserts.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use informer_apiserver::etcd_process::EtcdProcess;
use informer_apiserver::storage::etcd::{EtcdOptions, EtcdStorage};
use informer_apiserver::storage::memory::MemoryStorage;
use informer_apiserver::storage::sqlite::SqliteStorage;
use informer_apiserver::storage::{Change, RangeRequest, Storage, StorageError, WatchStream};

fn v(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn range(prefix: &str) -> RangeRequest {
    RangeRequest { prefix: prefix.to_string(), ..Default::default() }
}

/// Reads batches until every change up to `until` has been delivered; returns the changes.
async fn collect(w: &mut WatchStream, until: u64) -> Vec<Change> {
    let mut out = Vec::new();
    loop {
        let b = tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .expect("watch batch within 10 s")
            .expect("watch open")
            .expect("watch batch");
        let mut last = 0;
        for c in &b.changes {
            assert!(c.revision() > last, "changes in revision order");
            last = c.revision();
        }
        assert!(b.progress >= last, "progress covers the batch");
        out.extend(b.changes);
        if b.progress >= until {
            return out;
        }
    }
}

async fn writes_are_compare_and_swap(s: &dyn Storage, p: &str) {
    let k = format!("{p}/cas/a");
    let r1 = s.create(k.clone(), v("1")).await.unwrap();
    assert!(r1 > 0);
    assert_eq!(s.create(k.clone(), v("x")).await, Err(StorageError::AlreadyExists));
    let got = s.get(&k).await.unwrap().unwrap();
    assert_eq!((got.value.as_ref(), got.create_revision, got.mod_revision), (&b"1"[..], r1, r1));
    let r2 = s.update(k.clone(), v("2"), r1).await.unwrap();
    assert!(r2 > r1, "revisions only grow");
    match s.update(k.clone(), v("3"), r1).await {
        Err(StorageError::Conflict { current: Some(cur) }) => {
            assert_eq!((cur.value.as_ref(), cur.mod_revision, cur.create_revision), (&b"2"[..], r2, r1));
        }
        other => panic!("stale update: {other:?}"),
    }
    assert_eq!(s.get(&k).await.unwrap().unwrap().value, v("2"), "a failed comparison changes nothing");
    assert!(matches!(s.delete(k.clone(), r1).await, Err(StorageError::Conflict { .. })));
    let r3 = s.delete(k.clone(), r2).await.unwrap();
    assert!(r3 > r2);
    assert_eq!(s.get(&k).await.unwrap(), None);
    assert_eq!(s.update(k.clone(), v("4"), r3).await, Err(StorageError::NotFound));
    assert_eq!(s.delete(k.clone(), r3).await, Err(StorageError::NotFound));
    let r4 = s.create(k.clone(), v("5")).await.unwrap();
    let again = s.get(&k).await.unwrap().unwrap();
    assert_eq!((again.create_revision, again.mod_revision), (r4, r4), "a re-created key starts over");
    assert!(s.current_revision().await.unwrap() >= r4);
}

async fn ranges_read_the_latest_or_an_older_state(s: &dyn Storage, p: &str) {
    let pre = format!("{p}/range/");
    let mut revs = BTreeMap::new();
    for name in ["c", "a", "b", "d"] {
        revs.insert(name, s.create(format!("{pre}{name}"), v(name)).await.unwrap());
    }
    // Neighbours that share the prefix string but not the directory; `range0` is the prefix's
    // range end itself (`/` + 1 = `0`).
    s.create(format!("{p}/rangex/a"), v("no")).await.unwrap();
    s.create(format!("{p}/range0"), v("no")).await.unwrap();
    let before_update = s.current_revision().await.unwrap();
    let ru = s.update(format!("{pre}b"), v("b2"), revs["b"]).await.unwrap();
    s.delete(format!("{pre}c"), revs["c"]).await.unwrap();
    let all = s.range(range(&pre)).await.unwrap();
    let keys: Vec<_> = all.kvs.iter().map(|kv| kv.key.trim_start_matches(&pre).to_string()).collect();
    assert_eq!(keys, ["a", "b", "d"], "keys in order, under the prefix only");
    assert_eq!(all.kvs[1].mod_revision, ru);
    assert!(!all.more);
    assert!(all.revision >= ru);
    let page = s.range(RangeRequest { limit: 2, ..range(&pre) }).await.unwrap();
    let page_keys: Vec<_> = page.kvs.iter().map(|kv| kv.key.trim_start_matches(&pre).to_string()).collect();
    assert_eq!(page_keys, ["a", "b"], "a page is the first keys in order");
    assert!(page.more, "a limit says more keys follow");
    let rest = s
        .range(RangeRequest {
            start: Some(format!("{}\0", page.kvs[1].key)),
            revision: Some(page.revision),
            ..range(&pre)
        })
        .await
        .unwrap();
    assert_eq!(rest.kvs.iter().map(|kv| kv.key.as_str()).collect::<Vec<_>>(), [format!("{pre}d")]);
    // The state before the update and the deletion.
    let old = s.range(RangeRequest { revision: Some(before_update), ..range(&pre) }).await.unwrap();
    let old: Vec<_> =
        old.kvs.iter().map(|kv| (kv.key.trim_start_matches(&pre).to_string(), kv.value.clone())).collect();
    assert_eq!(old, [("a".into(), v("a")), ("b".into(), v("b")), ("c".into(), v("c")), ("d".into(), v("d"))]);
    let future = s.current_revision().await.unwrap() + 1000;
    assert!(matches!(
        s.range(RangeRequest { revision: Some(future), ..range(&pre) }).await,
        Err(StorageError::FutureRevision { .. })
    ));
}

async fn watches_replay_then_follow_with_previous_values(s: &dyn Storage, p: &str) {
    let pre = format!("{p}/watch/");
    let r1 = s.create(format!("{pre}a"), v("a1")).await.unwrap();
    let r2 = s.update(format!("{pre}a"), v("a2"), r1).await.unwrap();
    s.create(format!("{p}/other/x"), v("outside")).await.unwrap();
    let mut w = s.watch(pre.clone(), r1);
    let now = s.current_revision().await.unwrap();
    let replay = collect(&mut w, now).await;
    assert_eq!(replay.len(), 2, "{replay:?}");
    match &replay[0] {
        Change::Put { kv, prev: None } => assert_eq!((kv.mod_revision, kv.value.clone()), (r1, v("a1"))),
        c => panic!("{c:?}"),
    }
    match &replay[1] {
        Change::Put { kv, prev: Some(prev) } => {
            assert_eq!(
                (kv.mod_revision, kv.value.clone(), prev.value.clone(), prev.mod_revision),
                (r2, v("a2"), v("a1"), r1)
            );
        }
        c => panic!("{c:?}"),
    }
    // Live changes, the deletion with the last value; a change outside the prefix moves the
    // progress without an event.
    let r3 = s.delete(format!("{pre}a"), r2).await.unwrap();
    let r4 = s.create(format!("{p}/other/y"), v("outside")).await.unwrap();
    let live = collect(&mut w, r4).await;
    match live.as_slice() {
        [Change::Delete { key, revision, prev: Some(prev) }] => {
            assert_eq!((key.as_str(), *revision, prev.value.clone()), (format!("{pre}a").as_str(), r3, v("a2")));
        }
        other => panic!("{other:?}"),
    }
}

async fn concurrent_writers_get_distinct_revisions(s: Arc<dyn Storage>, p: &str) {
    let key = format!("{p}/conc/shared");
    let base = s.create(key.clone(), v("0")).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (s, p, key) = (s.clone(), p.to_string(), key.clone());
        tasks.push(tokio::spawn(async move {
            let mine = s.create(format!("{p}/conc/k{i:02}"), v("x")).await.unwrap();
            // Everyone tries to replace the same revision: exactly one wins.
            let won = s.update(key, v(&i.to_string()), base).await.ok();
            (mine, won)
        }));
    }
    let mut revs = Vec::new();
    let mut winners = 0;
    for t in tasks {
        let (r, won) = t.await.unwrap();
        revs.push(r);
        if let Some(w) = won {
            revs.push(w);
            winners += 1;
        }
    }
    revs.sort_unstable();
    revs.dedup();
    assert_eq!(revs.len(), 17, "one revision per write");
    assert_eq!(winners, 1, "compare-and-swap admits one writer per revision");
    let listed = s.range(range(&format!("{p}/conc/k"))).await.unwrap();
    assert_eq!(listed.kvs.len(), 16);
}

async fn compaction_discards_history_but_not_values(s: &dyn Storage, p: &str) {
    let pre = format!("{p}/compact/");
    let r1 = s.create(format!("{pre}a"), v("1")).await.unwrap();
    let r2 = s.update(format!("{pre}a"), v("2"), r1).await.unwrap();
    let rb = s.create(format!("{pre}b"), v("b")).await.unwrap();
    let r3 = s.delete(format!("{pre}b"), rb).await.unwrap();
    s.compact(r3).await.unwrap();
    assert!(s.compacted_revision().await.unwrap() >= r3);
    let now = s.range(range(&pre)).await.unwrap();
    assert_eq!(now.kvs.len(), 1);
    assert_eq!((now.kvs[0].value.clone(), now.kvs[0].mod_revision), (v("2"), r2));
    let at = s.range(RangeRequest { revision: Some(r3), ..range(&pre) }).await.unwrap();
    assert_eq!(at.kvs.len(), 1, "the state at the compacted revision stays readable");
    assert_eq!((at.kvs[0].key.clone(), at.kvs[0].value.clone()), (format!("{pre}a"), v("2")));
    assert!(matches!(
        s.range(RangeRequest { revision: Some(r1), ..range(&pre) }).await,
        Err(StorageError::Compacted { .. })
    ));
    let mut w = s.watch(pre.clone(), r1);
    match tokio::time::timeout(Duration::from_secs(10), w.next()).await.expect("answer") {
        Some(Err(StorageError::Compacted { compacted, .. })) => assert!(compacted >= r3),
        other => panic!("a watch from a compacted revision: {other:?}"),
    }
    // Watching from just after the compaction works.
    let r4 = s.update(format!("{pre}a"), v("3"), r2).await.unwrap();
    let mut w = s.watch(pre.clone(), r3 + 1);
    let changes = collect(&mut w, r4).await;
    assert_eq!(changes.len(), 1);
    assert!(matches!(s.compact(r1).await, Err(StorageError::Compacted { .. })), "compacting backwards");
}

async fn suite(s: Arc<dyn Storage>, p: &str) {
    writes_are_compare_and_swap(&*s, p).await;
    ranges_read_the_latest_or_an_older_state(&*s, p).await;
    watches_replay_then_follow_with_previous_values(&*s, p).await;
    concurrent_writers_get_distinct_revisions(s.clone(), p).await;
    compaction_discards_history_but_not_values(&*s, p).await;
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("informer-conformance-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[tokio::test]
async fn memory_backend_conforms() {
    suite(Arc::new(MemoryStorage::default()), "/registry").await;
}

#[tokio::test]
async fn sqlite_backend_conforms() {
    let dir = temp_dir("sqlite");
    suite(Arc::new(SqliteStorage::open(&dir).unwrap()), "/registry").await;
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn etcd_backend_conforms() {
    let etcd = EtcdProcess::start().unwrap();
    let s = EtcdStorage::connect(EtcdOptions::new(vec![etcd.url()])).await.unwrap();
    suite(Arc::new(s), "/registry").await;
}

/// A durable backend reopened on its directory has every acknowledged write, the revision counter
/// and the history since the compacted revision.
#[tokio::test]
async fn sqlite_reopens_with_values_revision_and_history() {
    let dir = temp_dir("sqlite-reopen");
    let (r1, r2, r3) = {
        let s = SqliteStorage::open(&dir).unwrap();
        let r1 = s.create("/registry/x/a".into(), v("1")).await.unwrap();
        let r2 = s.update("/registry/x/a".into(), v("2"), r1).await.unwrap();
        let rb = s.create("/registry/x/b".into(), v("b")).await.unwrap();
        let r3 = s.delete("/registry/x/b".into(), rb).await.unwrap();
        (r1, r2, r3)
    };
    let s = SqliteStorage::open(&dir).unwrap();
    assert_eq!(s.current_revision().await.unwrap(), r3);
    assert_eq!(s.get("/registry/x/a").await.unwrap().unwrap().mod_revision, r2);
    let mut w = s.watch("/registry/".into(), r1);
    let changes = collect(&mut w, r3).await;
    assert_eq!(changes.iter().map(Change::revision).collect::<Vec<_>>(), vec![r1, r2, r2 + 1, r3]);
    let r4 = s.create("/registry/x/c".into(), v("c")).await.unwrap();
    assert_eq!(r4, r3 + 1, "the counter goes on");
    // Deleting the newest key and compacting past it never moves the revision back.
    s.delete("/registry/x/c".into(), r4).await.unwrap();
    s.compact(r4 + 1).await.unwrap();
    drop(s);
    let s = SqliteStorage::open(&dir).unwrap();
    assert_eq!(s.current_revision().await.unwrap(), r4 + 1);
    assert_eq!(s.compacted_revision().await.unwrap(), r4 + 1);
    std::fs::remove_dir_all(&dir).ok();
}

/// One storage at a time on a data directory: another is refused while the first holds it, waits
/// for it to be let go, and continues its revision sequence, with the writes queued when the
/// first was dropped committed.
#[tokio::test]
async fn sqlite_holds_its_directory_until_dropped() {
    let dir = temp_dir("sqlite-lock");
    let first = SqliteStorage::open(&dir).unwrap();
    let r1 = first.create("/registry/x/a".into(), v("1")).await.unwrap();
    let refused = SqliteStorage::open(&dir).err().expect("a second storage is refused");
    assert_eq!(refused.kind(), std::io::ErrorKind::WouldBlock);
    assert!(refused.to_string().contains("is in use by another server"), "{refused}");
    let timed_out = SqliteStorage::open_when_free(&dir, Duration::from_millis(50)).await.err().expect("still held");
    assert_eq!(timed_out.kind(), std::io::ErrorKind::WouldBlock);
    // A write sent but not waited for is queued when the storage goes.
    drop(first.create("/registry/x/queued".into(), v("q")));
    let mut waiting = std::pin::pin!(SqliteStorage::open_when_free(&dir, Duration::from_secs(30)));
    assert!(futures_util::poll!(waiting.as_mut()).is_pending(), "waits while the directory is held");
    drop(first);
    let second = waiting.await.unwrap();
    let queued = second.get("/registry/x/queued").await.unwrap().expect("the queued write was committed");
    assert_eq!(queued.mod_revision, r1 + 1);
    assert_eq!(second.create("/registry/x/b".into(), v("b")).await.unwrap(), r1 + 2);
    drop(second);
    std::fs::remove_dir_all(&dir).ok();
}
