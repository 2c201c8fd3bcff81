//! The storage interface: what the API server needs of etcd, and nothing more.
//!
//! A [`Storage`] is a revisioned key-value store: every successful write (create, update or
//! delete of one key) is one new **revision**, a number that only grows and is shared by all keys
//! (etcd's revision). The API server's `resourceVersion` *is* the storage revision: an object's
//! resourceVersion is the revision that last modified its key (its `mod_revision`).
//!
//! Contract (every backend passes the same conformance suite, `tests/storage_conformance.rs`):
//! - **Writes are compare-and-swap on one key**: [`Storage::create`] succeeds only if the key does
//!   not exist, [`Storage::update`] and [`Storage::delete`] only if the key's `mod_revision` is the
//!   expected one; a failed comparison changes nothing and returns [`StorageError::AlreadyExists`],
//!   [`StorageError::NotFound`] or [`StorageError::Conflict`] with the key's current value. A
//!   successful write returns its revision, which is greater than every revision returned before
//!   by this storage, and is durable (for the durable backends) when it returns.
//! - **Reads**: [`Storage::get`] and [`Storage::range`] read the latest state, or the state at an
//!   older revision not yet compacted ([`StorageError::Compacted`] otherwise, and
//!   [`StorageError::FutureRevision`] for revisions not reached). A range returns keys in byte
//!   order and the revision it was read at; with a limit it says whether more keys follow.
//! - **Watch**: [`Storage::watch`] delivers, in revision order and each exactly once, every change
//!   under a prefix with a revision `>= from`, each with the key's previous value, then goes on with
//!   live changes. Batches also carry the storage's revision at the time they were sent, so a
//!   watcher knows every change up to that revision has been delivered (a progress notification);
//!   a backend sends one whenever the revision moves, even when the change is outside the prefix.
//!   A watch from a compacted revision fails with [`StorageError::Compacted`]. The stream ends with
//!   an error when the backend fails; the watcher re-watches from the revision after the last one
//!   it saw.
//! - **Compaction**: [`Storage::compact`] discards the history up to a revision: the state at
//!   older revisions can no longer be read or watched. Current values are never discarded.
//!   [`Storage::current_revision`] is a consistent read (etcd: a quorum read): every write
//!   acknowledged before the call is at or below the revision it returns.
//!
//! Keys are strings (`<prefix>/<resource>/<namespace>/<name>`, see [`keys`]); values are opaque
//! bytes (the object's JSON with `kind` and `apiVersion` and without `resourceVersion`, as
//! kube-apiserver stores JSON).
//!
//! Backends: [`memory`] (no files), [`sqlite`] (durable on local disk) and [`etcd`].

pub mod etcd;
pub mod keys;
pub mod memory;
pub mod sqlite;

use std::fmt;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;

/// A storage revision (the API's resourceVersion).
pub type Revision = u64;

/// One key's value at some revision.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyValue {
    /// The key.
    pub key: String,
    /// The value.
    pub value: Bytes,
    /// The revision that created the key (since its last deletion).
    pub create_revision: Revision,
    /// The revision that last modified the key.
    pub mod_revision: Revision,
}

impl fmt::Debug for KeyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Values may be Secrets: never printed.
        f.debug_struct("KeyValue")
            .field("key", &self.key)
            .field("bytes", &self.value.len())
            .field("create_revision", &self.create_revision)
            .field("mod_revision", &self.mod_revision)
            .finish()
    }
}

/// One change seen by a watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A key was created or updated: its new value (`mod_revision` is the change's revision),
    /// and its value before (None for a creation).
    Put {
        /// The new value.
        kv: KeyValue,
        /// The value before the change.
        prev: Option<KeyValue>,
    },
    /// A key was deleted at `revision`; `prev` is its last value.
    Delete {
        /// The key.
        key: String,
        /// The deletion's revision.
        revision: Revision,
        /// The last value (present unless the backend lost it).
        prev: Option<KeyValue>,
    },
}

impl Change {
    /// The change's revision.
    pub fn revision(&self) -> Revision {
        match self {
            Change::Put { kv, .. } => kv.mod_revision,
            Change::Delete { revision, .. } => *revision,
        }
    }

    /// The key changed.
    pub fn key(&self) -> &str {
        match self {
            Change::Put { kv, .. } => &kv.key,
            Change::Delete { key, .. } => key,
        }
    }
}

/// What a watch delivers at once: changes in revision order, and the revision up to which every
/// change under the prefix has now been delivered (at least the last change's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchBatch {
    /// Changes, in revision order.
    pub changes: Vec<Change>,
    /// Every change with a revision up to this one has been delivered.
    pub progress: Revision,
}

/// The result of a range read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeResult {
    /// Key-values in key order.
    pub kvs: Vec<KeyValue>,
    /// The revision the range was read at.
    pub revision: Revision,
    /// Whether more keys follow the last one returned (only with a limit).
    pub more: bool,
}

/// A range read: keys starting with `prefix`, from `start` (inclusive) when given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeRequest {
    /// Keys must start with this.
    pub prefix: String,
    /// The first key to consider (inclusive); must start with `prefix`.
    pub start: Option<String>,
    /// Read at this revision (None: the latest).
    pub revision: Option<Revision>,
    /// At most this many keys (0: no limit).
    pub limit: usize,
}

/// Why a storage operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// The key does not exist.
    #[error("key not found")]
    NotFound,
    /// The key exists (create).
    #[error("key already exists")]
    AlreadyExists,
    /// The key's revision is not the expected one; `current` is its value now (None: deleted).
    #[error("the key was modified (current revision {})", current.as_ref().map(|c| c.mod_revision).unwrap_or(0))]
    Conflict {
        /// The key's current value, if any.
        current: Option<Box<KeyValue>>,
    },
    /// The requested revision has been compacted.
    #[error("required revision {requested} has been compacted (compacted revision {compacted})")]
    Compacted {
        /// The revision asked for.
        requested: Revision,
        /// The storage's compacted revision.
        compacted: Revision,
    },
    /// The requested revision is in the future.
    #[error("required revision {requested} is a future revision (current revision {current})")]
    FutureRevision {
        /// The revision asked for.
        requested: Revision,
        /// The storage's current revision.
        current: Revision,
    },
    /// The backend cannot be reached or did not answer in time.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Anything else (I/O, corruption).
    #[error("storage error: {0}")]
    Internal(String),
}

/// A boxed future of a storage result.
pub type StorageFuture<'a, T> = BoxFuture<'a, Result<T, StorageError>>;

/// The stream a watch delivers.
pub type WatchStream = BoxStream<'static, Result<WatchBatch, StorageError>>;

/// A revisioned key-value store (see the module documentation for the contract).
pub trait Storage: Send + Sync + 'static {
    /// A short name for logs and metrics ("memory", "sqlite", "etcd").
    fn name(&self) -> &'static str;

    /// The current revision (a consistent read).
    fn current_revision(&self) -> StorageFuture<'_, Revision>;

    /// The oldest revision whose state can still be read (everything older is compacted).
    fn compacted_revision(&self) -> StorageFuture<'_, Revision>;

    /// The latest value of `key`.
    fn get<'a>(&'a self, key: &'a str) -> StorageFuture<'a, Option<KeyValue>>;

    /// Keys under a prefix, at a revision, up to a limit.
    fn range(&self, req: RangeRequest) -> StorageFuture<'_, RangeResult>;

    /// Creates `key` if it does not exist; returns the write's revision.
    fn create(&self, key: String, value: Bytes) -> StorageFuture<'_, Revision>;

    /// Replaces `key` if its `mod_revision` is `expected`; returns the write's revision.
    fn update(&self, key: String, value: Bytes, expected: Revision) -> StorageFuture<'_, Revision>;

    /// Deletes `key` if its `mod_revision` is `expected`; returns the write's revision.
    fn delete(&self, key: String, expected: Revision) -> StorageFuture<'_, Revision>;

    /// Watches changes under `prefix` with revisions `>= from` (see the module documentation).
    fn watch(&self, prefix: String, from: Revision) -> WatchStream;

    /// Discards the history up to `revision` (the state at `revision` stays readable).
    fn compact(&self, revision: Revision) -> StorageFuture<'_, ()>;

    /// Whether a watch cache starting on this storage replays the history since the compacted
    /// revision (so watches from before a restart resume), or starts at the current revision as
    /// kube-apiserver's does. Backends shared by other programs, whose history holds their writes
    /// too, start at the current revision.
    fn replays_history(&self) -> bool {
        true
    }

    /// One tick of the periodic compactor: compacts at the revision recorded at the previous
    /// tick, so at least one interval of history stays, and records the current one. Returns the
    /// revision compacted, if any. Backends shared by several servers make sure one compacts at a
    /// time (etcd: kube-apiserver's compare-and-swap on `compact_rev_key`).
    fn compact_tick<'a>(&'a self, state: &'a mut CompactorState) -> StorageFuture<'a, Option<Revision>> {
        Box::pin(async move {
            let current = self.current_revision().await?;
            let target = std::mem::replace(&mut state.revision, current);
            if target == 0 || target <= self.compacted_revision().await? {
                return Ok(None);
            }
            match self.compact(target).await {
                Ok(()) => Ok(Some(target)),
                Err(StorageError::Compacted { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        })
    }
}

/// What the periodic compactor remembers between ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactorState {
    /// The version of `compact_rev_key` last seen (kube's "compact time"; etcd only).
    pub time: i64,
    /// The revision recorded at the last tick (compacted at the next one).
    pub revision: Revision,
}
