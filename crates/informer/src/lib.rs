//! Kubernetes list-watch and informer machinery for Rust, faithful to client-go's semantics.
//!
//! The pipeline: a [`Reflector`](crate) lists and watches the API server and feeds a queue
//! ([`RealFifo`] by default, or [`DeltaFifo`]); the informer pops deltas, applies them to an
//! [`Indexer`] (the local cache) and distributes notifications to handlers. See `docs/design.md`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod delta;
pub mod fifo;
pub mod key;
pub mod object;
pub mod signal;
pub mod store;

pub use delta::{Delta, DeltaType};
pub use fifo::{DeltaFifo, FifoClosed, RealFifo};
pub use key::{KeyError, ObjectKey};
pub use object::{DecodeError, DeletedObject, Object, Tombstone};
pub use signal::Signal;
pub use store::{IndexError, IndexFunc, IndexFuncError, Indexer, Indexers, NAMESPACE_INDEX, Txn};
