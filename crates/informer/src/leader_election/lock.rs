//! The lock an elector campaigns on (client-go's `resourcelock.Interface`): read, create and
//! replace one [`LeaderElectionRecord`] with optimistic concurrency.
//!
//! Invariants a lock keeps: `update` writes over the version last read or written through the
//! same lock and fails with [`LockError::Conflict`] if the stored record changed since (a lost
//! race, never a silent overwrite); `create` fails with `Conflict` if the record exists. Its
//! futures may be dropped at any await point (the elector bounds every call by a deadline); a
//! dropped write may or may not have reached the store, and the lock's next `update` must still
//! be a compare-and-swap against what it last saw.

use std::error::Error as StdError;

use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::ObjectReference;

use super::record::LeaderElectionRecord;

/// Why a lock operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The record does not exist (`get`).
    #[error("the lock {0} does not exist")]
    NotFound(String),
    /// The record changed since this lock last read it (`update`), or already exists (`create`):
    /// another candidate wrote first.
    #[error("conflict on the lock {0}: {1}")]
    Conflict(String, String),
    /// Anything else: the server failed or could not be reached, or `update` was called before
    /// any `get` or `create`.
    #[error("lock {0}: {1}")]
    Other(String, #[source] Box<dyn StdError + Send + Sync>),
}

/// A store for one election's record. [`LeaseLock`](super::LeaseLock) keeps it in a
/// `coordination.k8s.io/v1` Lease; implement it to elect on something else or to test an
/// elector without a server.
pub trait ResourceLock: Send + Sync + 'static {
    /// Reads the record (and remembers its version for the next `update`).
    fn get(&self) -> BoxFuture<'_, Result<LeaderElectionRecord, LockError>>;
    /// Creates the record (and remembers its version).
    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>>;
    /// Replaces the record if it is still the version last read or written through this lock.
    fn update(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>>;
    /// A short description for logs, e.g. `namespace/name`.
    fn describe(&self) -> String;
    /// The object holding the record as last read or written, for the events about the
    /// election (none by default).
    fn object_reference(&self) -> Option<ObjectReference> {
        None
    }
}
