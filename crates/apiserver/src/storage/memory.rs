//! The in-memory backend: no files, gone with the process (the default of `ApiServer::builder()`
//! and the demo).
//!
//! State: the current value of every key, and the log of changes since the compacted revision
//! (each change with the value before it), behind one mutex. Watchers read the log from their own
//! cursor, so a slow watcher never delays a writer; a watcher whose cursor has been compacted away
//! gets [`StorageError::Compacted`].
//!
//! Invariants: the log holds every change with a revision in `(compacted, revision]`, in order;
//! `current` equals the state after the last change. The log is bounded: past `log_capacity`
//! changes the oldest are compacted (values are shared `Bytes`, so the log mostly holds versions
//! that the watch cache keeps anyway).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt;
use futures_util::future::ready;
use parking_lot::Mutex;
use tokio::sync::watch;

use super::{
    Change, KeyValue, RangeRequest, RangeResult, Revision, Storage, StorageError, StorageFuture, WatchBatch,
    WatchStream,
};

/// Changes a watch takes from the log at once.
const WATCH_BATCH: usize = 1024;

struct Inner {
    revision: Revision,
    compacted: Revision,
    current: BTreeMap<String, KeyValue>,
    log: VecDeque<Change>,
}

/// The in-memory storage (see the module documentation).
pub struct MemoryStorage {
    inner: Arc<Mutex<Inner>>,
    notify: watch::Sender<Revision>,
    log_capacity: usize,
}

impl Default for MemoryStorage {
    fn default() -> Self {
        MemoryStorage::new(100_000)
    }
}

impl MemoryStorage {
    /// An empty storage keeping at most `log_capacity` changes of history.
    pub fn new(log_capacity: usize) -> Self {
        MemoryStorage {
            inner: Arc::new(Mutex::new(Inner {
                revision: 0,
                compacted: 0,
                current: BTreeMap::new(),
                log: VecDeque::new(),
            })),
            notify: watch::channel(0).0,
            log_capacity: log_capacity.max(1),
        }
    }

    fn commit(&self, inner: &mut Inner, change: Change) -> Revision {
        let rev = change.revision();
        inner.revision = rev;
        inner.log.push_back(change);
        while inner.log.len() > self.log_capacity {
            if let Some(c) = inner.log.pop_front() {
                inner.compacted = c.revision();
            }
        }
        self.notify.send_replace(rev);
        rev
    }

    fn range_now(inner: &Inner, req: &RangeRequest) -> Result<RangeResult, StorageError> {
        let at = match req.revision {
            None => inner.revision,
            Some(r) if r > inner.revision => {
                return Err(StorageError::FutureRevision { requested: r, current: inner.revision });
            }
            Some(r) if r < inner.compacted => {
                return Err(StorageError::Compacted { requested: r, compacted: inner.compacted });
            }
            Some(r) => r,
        };
        let from = match &req.start {
            Some(s) if s.as_str() > req.prefix.as_str() => s.clone(),
            _ => req.prefix.clone(),
        };
        let in_prefix = |k: &str| k.starts_with(req.prefix.as_str());
        let mut out = RangeResult { kvs: Vec::new(), revision: at, more: false };
        let limit = if req.limit == 0 { usize::MAX } else { req.limit };
        if at == inner.revision {
            let mut it = inner.current.range(from..).take_while(|(k, _)| in_prefix(k)).map(|(_, v)| v);
            for kv in it.by_ref().take(limit) {
                out.kvs.push(kv.clone());
            }
            out.more = it.next().is_some();
            return Ok(out);
        }
        // Roll the changes after `at` back, newest first.
        let mut state: BTreeMap<&str, Option<&KeyValue>> = BTreeMap::new();
        for c in inner.log.iter().rev().take_while(|c| c.revision() > at) {
            let prev = match c {
                Change::Put { prev, .. } | Change::Delete { prev, .. } => prev.as_ref(),
            };
            state.insert(c.key(), prev);
        }
        let mut merged: BTreeMap<&str, &KeyValue> = inner
            .current
            .range(from.clone()..)
            .take_while(|(k, _)| in_prefix(k))
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        for (k, v) in state {
            if k < from.as_str() || !in_prefix(k) {
                continue;
            }
            match v {
                Some(kv) => merged.insert(k, kv),
                None => merged.remove(k),
            };
        }
        let mut it = merged.into_values();
        for kv in it.by_ref().take(limit) {
            out.kvs.push(kv.clone());
        }
        out.more = it.next().is_some();
        Ok(out)
    }
}

fn read_log(inner: &Inner, prefix: &str, cursor: Revision, out: &mut Vec<Change>) -> Result<Revision, StorageError> {
    if cursor <= inner.compacted {
        return Err(StorageError::Compacted { requested: cursor, compacted: inner.compacted });
    }
    let first = inner.log.partition_point(|c| c.revision() < cursor);
    let mut last = inner.revision;
    for (taken, c) in inner.log.range(first..).enumerate() {
        if taken >= WATCH_BATCH {
            last = c.revision() - 1;
            break;
        }
        if c.key().starts_with(prefix) {
            out.push(c.clone());
        }
    }
    Ok(last)
}

/// The current version of `key` if its mod revision is `expected`: NotFound, or Conflict with
/// the current version.
fn check_revision<'a>(inner: &'a Inner, key: &str, expected: Revision) -> Result<&'a KeyValue, StorageError> {
    match inner.current.get(key) {
        None => Err(StorageError::NotFound),
        Some(cur) if cur.mod_revision != expected => {
            Err(StorageError::Conflict { current: Some(Box::new(cur.clone())) })
        }
        Some(cur) => Ok(cur),
    }
}

impl Storage for MemoryStorage {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn current_revision(&self) -> StorageFuture<'_, Revision> {
        let r = self.inner.lock().revision;
        async move { Ok(r) }.boxed()
    }

    fn compacted_revision(&self) -> StorageFuture<'_, Revision> {
        let r = self.inner.lock().compacted;
        async move { Ok(r) }.boxed()
    }

    fn get<'a>(&'a self, key: &'a str) -> StorageFuture<'a, Option<KeyValue>> {
        let v = self.inner.lock().current.get(key).cloned();
        ready(Ok(v)).boxed()
    }

    fn range(&self, req: RangeRequest) -> StorageFuture<'_, RangeResult> {
        let r = MemoryStorage::range_now(&self.inner.lock(), &req);
        ready(r).boxed()
    }

    fn create(&self, key: String, value: Bytes) -> StorageFuture<'_, Revision> {
        let r = {
            let mut inner = self.inner.lock();
            if inner.current.contains_key(&key) {
                Err(StorageError::AlreadyExists)
            } else {
                let rev = inner.revision + 1;
                let kv = KeyValue { key: key.clone(), value, create_revision: rev, mod_revision: rev };
                inner.current.insert(key, kv.clone());
                Ok(self.commit(&mut inner, Change::Put { kv, prev: None }))
            }
        };
        ready(r).boxed()
    }

    fn update(&self, key: String, value: Bytes, expected: Revision) -> StorageFuture<'_, Revision> {
        let mut inner = self.inner.lock();
        let create_revision = match check_revision(&inner, &key, expected) {
            Ok(cur) => cur.create_revision,
            Err(e) => return ready(Err(e)).boxed(),
        };
        let kv = KeyValue { key: key.clone(), value, create_revision, mod_revision: inner.revision + 1 };
        let prev = inner.current.insert(key, kv.clone());
        ready(Ok(self.commit(&mut inner, Change::Put { kv, prev }))).boxed()
    }

    fn delete(&self, key: String, expected: Revision) -> StorageFuture<'_, Revision> {
        let mut inner = self.inner.lock();
        if let Err(e) = check_revision(&inner, &key, expected) {
            return ready(Err(e)).boxed();
        }
        let revision = inner.revision + 1;
        let prev = inner.current.remove(&key);
        ready(Ok(self.commit(&mut inner, Change::Delete { key, revision, prev }))).boxed()
    }

    fn watch(&self, prefix: String, from: Revision) -> WatchStream {
        let inner = self.inner.clone();
        let notify = self.notify.subscribe();
        let state = Some((from.max(1), notify));
        Box::pin(futures_util::stream::unfold(state, move |state| {
            let inner = inner.clone();
            let prefix = prefix.clone();
            async move {
                let (mut cursor, mut notify) = state?;
                loop {
                    notify.borrow_and_update();
                    let mut changes = Vec::new();
                    let read = read_log(&inner.lock(), &prefix, cursor, &mut changes);
                    match read {
                        Err(e) => return Some((Err(e), None)),
                        Ok(progress) if progress >= cursor => {
                            cursor = progress + 1;
                            return Some((Ok(WatchBatch { changes, progress }), Some((cursor, notify))));
                        }
                        Ok(_) => {
                            if notify.changed().await.is_err() {
                                return None;
                            }
                        }
                    }
                }
            }
        }))
    }

    fn compact(&self, revision: Revision) -> StorageFuture<'_, ()> {
        let r = {
            let mut inner = self.inner.lock();
            if revision > inner.revision {
                Err(StorageError::FutureRevision { requested: revision, current: inner.revision })
            } else if revision <= inner.compacted {
                Err(StorageError::Compacted { requested: revision, compacted: inner.compacted })
            } else {
                while inner.log.front().is_some_and(|c| c.revision() <= revision) {
                    inner.log.pop_front();
                }
                inner.compacted = revision;
                Ok(())
            }
        };
        ready(r).boxed()
    }
}
