//! The local cache: a thread-safe keyed store with named secondary indexes.

pub mod expiration_cache;
pub mod index;
pub mod indexer;
pub mod mutation_cache;

pub use expiration_cache::{ExpirationCache, ExpirationPolicy, TimestampedEntry, TtlPolicy};
pub use index::{IndexFunc, IndexFuncError, Indexers, NAMESPACE_INDEX, namespace_index_func};
pub use indexer::{IndexError, Indexer, TransactionError, Txn};
pub use mutation_cache::MutationCache;
