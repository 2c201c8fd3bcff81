//! The local cache: a thread-safe keyed store with named secondary indexes, and client-go's
//! other stores: a mutation cache, an expiring cache, a store that pushes its whole contents, a
//! keyed priority queue.

pub mod expiration_cache;
pub mod heap;
pub mod index;
pub mod indexer;
pub mod mutation_cache;
pub mod undelta_store;

pub use expiration_cache::{ExpirationCache, ExpirationPolicy, TimestampedEntry, TtlPolicy};
pub use heap::{Heap, HeapError};
pub use index::{IndexFunc, IndexFuncError, Indexers, NAMESPACE_INDEX, namespace_index_func};
pub use indexer::{IndexError, Indexer, TransactionError, Txn};
pub use mutation_cache::MutationCache;
pub use undelta_store::UndeltaStore;
