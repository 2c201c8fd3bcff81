//! The etcd backend: etcd's v3 API through `etcd-client`, with kube-apiserver's layout and
//! protocol, so several servers (or kube-apiserver itself) can share one etcd.
//!
//! - Writes are single transactions: create compares `create_revision == 0`, update and delete
//!   compare `mod_revision` with the expected revision; the else branch reads the key, so a failed
//!   comparison reports the current value without another round trip.
//! - Watches cover the **whole keyspace** and filter keys by prefix here: every revision of etcd
//!   is then seen as an event, so the revision a watcher has reached is exact without progress
//!   notifications (which etcd before 3.4.31 may send ahead of pending events). A consistent read
//!   is a quorum read of the current revision followed by waiting for the watch to reach it.
//! - A watch cache starting on etcd starts at the current revision, as kube-apiserver's does: the
//!   history of a shared etcd holds other programs' writes too, so replaying it is unbounded.
//! - Compaction follows kube-apiserver's compactor: replicas compare-and-swap the version of the
//!   key `compact_rev_key`; the one that wins records the current revision there and compacts at
//!   the revision recorded one interval before, so at least one interval of history stays and one
//!   replica compacts at a time.
//! - Every request has a deadline: an unreachable etcd makes operations fail with
//!   [`StorageError::Unavailable`] within [`EtcdOptions::request_timeout`], never hang.

use std::time::Duration;

use bytes::Bytes;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions, Txn, TxnOp, TxnOpResponse, WatchOptions,
};
use futures_util::{FutureExt, StreamExt};

use super::{
    Change, CompactorState, KeyValue, RangeRequest, RangeResult, Revision, Storage, StorageError, StorageFuture,
    WatchBatch, WatchStream,
};

/// The key kube-apiserver's compactor coordinates through.
pub const COMPACT_REV_KEY: &str = "compact_rev_key";

/// Connection settings.
#[derive(Debug, Clone)]
pub struct EtcdOptions {
    /// Client URLs (`http://127.0.0.1:2379`…).
    pub endpoints: Vec<String>,
    /// Deadline of every request.
    pub request_timeout: Duration,
}

impl EtcdOptions {
    /// Options for `endpoints` with a 5 s request deadline.
    pub fn new(endpoints: Vec<String>) -> Self {
        EtcdOptions { endpoints, request_timeout: Duration::from_secs(5) }
    }
}

/// The etcd storage (see the module documentation).
pub struct EtcdStorage {
    client: Client,
    timeout: Duration,
}

fn unavailable(e: impl std::fmt::Display) -> StorageError {
    StorageError::Unavailable(e.to_string())
}

fn convert(kv: &etcd_client::KeyValue) -> Result<KeyValue, StorageError> {
    Ok(KeyValue {
        key: String::from_utf8(kv.key().to_vec()).map_err(|_| StorageError::Internal("a key is not UTF-8".into()))?,
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: kv.create_revision() as u64,
        mod_revision: kv.mod_revision() as u64,
    })
}

fn map_error(e: etcd_client::Error) -> StorageError {
    let msg = e.to_string();
    if msg.contains("required revision has been compacted") {
        // The caller knows which revision it asked for; the compacted one is unknown here.
        return StorageError::Compacted { requested: 0, compacted: 0 };
    }
    if msg.contains("future revision") {
        return StorageError::FutureRevision { requested: 0, current: 0 };
    }
    unavailable(e)
}

impl EtcdStorage {
    /// Connects to etcd. The connection is made lazily: an etcd that is down makes the first
    /// requests fail, not this call.
    pub async fn connect(opts: EtcdOptions) -> Result<EtcdStorage, StorageError> {
        let connect = ConnectOptions::new()
            .with_connect_timeout(opts.request_timeout)
            .with_timeout(opts.request_timeout)
            .with_keep_alive(Duration::from_secs(10), opts.request_timeout);
        let client = tokio::time::timeout(opts.request_timeout, Client::connect(&opts.endpoints, Some(connect)))
            .await
            .map_err(|_| {
                unavailable(format!("etcd {:?} did not answer within {:?}", opts.endpoints, opts.request_timeout))
            })?
            .map_err(map_error)?;
        Ok(EtcdStorage { client, timeout: opts.request_timeout })
    }

    /// A KV client without gRPC's 4 MiB answer limit (a LIST of a large resource is larger; kube's
    /// etcd client lifts it too).
    fn kv(&self) -> etcd_client::KvClient {
        self.client.kv_client().max_decoding_message_size(usize::MAX)
    }

    fn watcher(&self) -> etcd_client::WatchClient {
        self.client.watch_client().max_decoding_message_size(usize::MAX)
    }

    async fn deadline<T>(&self, f: impl Future<Output = Result<T, etcd_client::Error>>) -> Result<T, StorageError> {
        match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => r.map_err(map_error),
            Err(_) => Err(unavailable(format!("etcd did not answer within {:?}", self.timeout))),
        }
    }

    /// A conditional write: `op` if `cmp` holds, else a read of `key`.
    async fn cas(&self, key: &str, cmp: Compare, op: TxnOp, create: bool) -> Result<Revision, StorageError> {
        let txn = Txn::new().when([cmp]).and_then([op]).or_else([TxnOp::get(key, None)]);
        let resp = self.deadline(self.kv().txn(txn)).await?;
        if resp.succeeded() {
            return resp
                .header()
                .map(|h| h.revision() as u64)
                .ok_or_else(|| StorageError::Internal("etcd answered without a header".into()));
        }
        let current = match resp.op_responses().into_iter().next() {
            Some(TxnOpResponse::Get(g)) => g.kvs().first().map(convert).transpose()?,
            _ => None,
        };
        Err(match (current, create) {
            (Some(_), true) => StorageError::AlreadyExists,
            (None, _) => StorageError::NotFound,
            (Some(kv), false) => StorageError::Conflict { current: Some(Box::new(kv)) },
        })
    }

    /// The compacted revision, learnt from a watch of every key at revision 1: etcd cancels a
    /// watch that starts before its compacted revision and names that revision; otherwise the
    /// watch's first events arrive (an etcd at revision 1 has no history at all).
    async fn probe_compacted(&self) -> Result<Revision, StorageError> {
        if self.current_revision().await? <= 1 {
            return Ok(0);
        }
        let opts = WatchOptions::new().with_all_keys().with_start_revision(1);
        let mut stream = self.deadline(self.watcher().watch("\0", Some(opts))).await?;
        loop {
            match self.deadline(stream.message()).await? {
                None => return Err(unavailable("etcd closed the watch")),
                Some(r) if r.canceled() => return Ok(r.compact_revision().max(0) as u64),
                Some(r) if !r.events().is_empty() => {
                    let _ = stream.cancel(r.watch_id()).await;
                    return Ok(0);
                }
                Some(_) => {}
            }
        }
    }
}

impl EtcdStorage {
    /// One tick of kube-apiserver's compactor; returns the revision compacted, if this replica
    /// compacted.
    async fn cas_compact_tick(&self, state: &mut CompactorState) -> Result<Option<Revision>, StorageError> {
        let txn = Txn::new()
            .when([Compare::version(COMPACT_REV_KEY, CompareOp::Equal, state.time)])
            .and_then([TxnOp::put(COMPACT_REV_KEY, state.revision.to_string(), None)])
            .or_else([TxnOp::get(COMPACT_REV_KEY, None)]);
        let resp = self.deadline(self.kv().txn(txn)).await?;
        let current = resp.header().map(|h| h.revision() as u64).unwrap_or(0);
        if !resp.succeeded() {
            // Another replica compacted: take its time, retry next tick.
            state.time = match resp.op_responses().into_iter().next() {
                Some(TxnOpResponse::Get(g)) => g.kvs().first().map(|kv| kv.version()).unwrap_or(0),
                _ => state.time,
            };
            return Ok(None);
        }
        state.time += 1;
        let target = std::mem::replace(&mut state.revision, current);
        if target == 0 {
            return Ok(None);
        }
        match self.deadline(self.kv().compact(target as i64, None)).await {
            Ok(_) => Ok(Some(target)),
            Err(StorageError::Compacted { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl Storage for EtcdStorage {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn current_revision(&self) -> StorageFuture<'_, Revision> {
        async move {
            let opts = GetOptions::new().with_count_only();
            let resp = self.deadline(self.kv().get(COMPACT_REV_KEY, Some(opts))).await?;
            resp.header()
                .map(|h| h.revision() as u64)
                .ok_or_else(|| StorageError::Internal("etcd answered without a header".into()))
        }
        .boxed()
    }

    fn compacted_revision(&self) -> StorageFuture<'_, Revision> {
        self.probe_compacted().boxed()
    }

    fn get<'a>(&'a self, key: &'a str) -> StorageFuture<'a, Option<KeyValue>> {
        async move {
            let resp = self.deadline(self.kv().get(key, None)).await?;
            resp.kvs().first().map(convert).transpose()
        }
        .boxed()
    }

    fn range(&self, req: RangeRequest) -> StorageFuture<'_, RangeResult> {
        async move {
            let start = match &req.start {
                Some(s) if s.as_str() > req.prefix.as_str() => s.clone(),
                _ => req.prefix.clone(),
            };
            let mut opts = GetOptions::new().with_range(prefix_end(&req.prefix));
            if let Some(r) = req.revision {
                opts = opts.with_revision(r as i64);
            }
            if req.limit > 0 {
                opts = opts.with_limit(req.limit as i64);
            }
            let resp = match self.deadline(self.kv().get(start, Some(opts))).await {
                Err(StorageError::Compacted { .. }) => {
                    let compacted = self.probe_compacted().await.unwrap_or(0);
                    return Err(StorageError::Compacted { requested: req.revision.unwrap_or(0), compacted });
                }
                Err(StorageError::FutureRevision { .. }) => {
                    let current = self.current_revision().await.unwrap_or(0);
                    return Err(StorageError::FutureRevision { requested: req.revision.unwrap_or(0), current });
                }
                r => r?,
            };
            let revision = match req.revision {
                Some(r) => r,
                None => resp.header().map(|h| h.revision() as u64).unwrap_or(0),
            };
            let kvs = resp.kvs().iter().map(convert).collect::<Result<Vec<_>, _>>()?;
            Ok(RangeResult { more: resp.more(), kvs, revision })
        }
        .boxed()
    }

    fn create(&self, key: String, value: Bytes) -> StorageFuture<'_, Revision> {
        async move {
            let cmp = Compare::create_revision(key.as_str(), CompareOp::Equal, 0);
            self.cas(&key, cmp, TxnOp::put(key.as_str(), value.to_vec(), None), true).await
        }
        .boxed()
    }

    fn update(&self, key: String, value: Bytes, expected: Revision) -> StorageFuture<'_, Revision> {
        async move {
            let cmp = Compare::mod_revision(key.as_str(), CompareOp::Equal, expected as i64);
            self.cas(&key, cmp, TxnOp::put(key.as_str(), value.to_vec(), None), false).await
        }
        .boxed()
    }

    fn delete(&self, key: String, expected: Revision) -> StorageFuture<'_, Revision> {
        async move {
            let cmp = Compare::mod_revision(key.as_str(), CompareOp::Equal, expected as i64);
            self.cas(&key, cmp, TxnOp::delete(key.as_str(), None), false).await
        }
        .boxed()
    }

    fn watch(&self, prefix: String, from: Revision) -> WatchStream {
        let client = self.client.clone();
        let timeout = self.timeout;
        let opened = async move {
            let opts = WatchOptions::new().with_all_keys().with_prev_key().with_start_revision(from.max(1) as i64);
            let mut watcher = client.watch_client().max_decoding_message_size(usize::MAX);
            match tokio::time::timeout(timeout, watcher.watch("\0", Some(opts))).await {
                Ok(Ok(s)) => Ok(s),
                Ok(Err(e)) => Err(map_error(e)),
                Err(_) => Err(unavailable(format!("etcd did not answer within {timeout:?}"))),
            }
        };
        let stream = futures_util::stream::once(opened).flat_map(move |opened| {
            let prefix = prefix.clone();
            match opened {
                Err(e) => futures_util::stream::once(async move { Err(e) }).boxed(),
                Ok(stream) => stream
                    .map(move |msg| match msg {
                        Err(e) => Some(Err(map_error(e))),
                        Ok(resp) if resp.canceled() => {
                            if resp.compact_revision() > 0 {
                                Some(Err(StorageError::Compacted {
                                    requested: from,
                                    compacted: resp.compact_revision() as u64,
                                }))
                            } else {
                                Some(Err(unavailable(format!("etcd cancelled the watch: {}", resp.cancel_reason()))))
                            }
                        }
                        Ok(resp) => batch(&resp, &prefix).transpose(),
                    })
                    .filter_map(std::future::ready)
                    .scan(false, |failed, item| {
                        // Nothing after an error.
                        if *failed {
                            return std::future::ready(None);
                        }
                        *failed = item.is_err();
                        std::future::ready(Some(item))
                    })
                    .boxed(),
            }
        });
        stream.boxed()
    }

    fn compact_tick<'a>(&'a self, state: &'a mut CompactorState) -> StorageFuture<'a, Option<Revision>> {
        self.cas_compact_tick(state).boxed()
    }

    fn replays_history(&self) -> bool {
        false
    }

    fn compact(&self, revision: Revision) -> StorageFuture<'_, ()> {
        async move {
            match self.deadline(self.kv().compact(revision as i64, None)).await {
                Ok(_) => Ok(()),
                Err(StorageError::Compacted { .. }) => {
                    let compacted = self.probe_compacted().await.unwrap_or(revision);
                    Err(StorageError::Compacted { requested: revision, compacted })
                }
                Err(StorageError::FutureRevision { .. }) => {
                    let current = self.current_revision().await.unwrap_or(0);
                    Err(StorageError::FutureRevision { requested: revision, current })
                }
                Err(e) => Err(e),
            }
        }
        .boxed()
    }
}

/// The changes of one watch response under `prefix`; None for responses without events (created,
/// progress notifications: their revision is not trusted, see the module documentation).
fn batch(resp: &etcd_client::WatchResponse, prefix: &str) -> Result<Option<WatchBatch>, StorageError> {
    let events = resp.events();
    let Some(last) = events.last().and_then(|e| e.kv()) else {
        return Ok(None);
    };
    let progress = last.mod_revision() as u64;
    let mut changes = Vec::new();
    for ev in events {
        let Some(kv) = ev.kv() else { continue };
        if !kv.key().starts_with(prefix.as_bytes()) {
            continue;
        }
        let prev = ev.prev_kv().map(convert).transpose()?;
        changes.push(match ev.event_type() {
            EventType::Put => Change::Put { kv: convert(kv)?, prev },
            EventType::Delete => Change::Delete {
                key: String::from_utf8(kv.key().to_vec())
                    .map_err(|_| StorageError::Internal("a key is not UTF-8".into()))?,
                revision: kv.mod_revision() as u64,
                prev,
            },
        });
    }
    Ok(Some(WatchBatch { changes, progress }))
}

/// The smallest key greater than every key starting with `prefix`.
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut b = prefix.as_bytes().to_vec();
    while let Some(last) = b.pop() {
        if last < 0xff {
            b.push(last + 1);
            return b;
        }
    }
    vec![0]
}
