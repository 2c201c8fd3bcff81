//! Queues between the reflector and the store: [`RealFifo`] (in-order, the default, client-go
//! 1.36's `RealFIFO`) and [`DeltaFifo`] (per-key delta lists, client-go's classic pipeline).
//!
//! Both implement [`Queue`]: the reflector is the single producer (`add`, `update`, `delete`,
//! `replace`, `resync`, `bookmark`), the informer's process loop the single consumer (`pop`).
//! Both track client-go's sync state: the queue is *populated* after the first write or
//! `replace`; the first `replace` before any other write records the initial population; the
//! queue *has synced* once populated and every initial item has been popped **and processed**;
//! the `is_in_initial_list` flag passed to the consumer is "not yet synced" at pop time.
//! A closed queue still hands out what it holds; `pop` fails with [`FifoClosed`] only when closed
//! and empty. Both are usable from async tasks and, through the `*_blocking` methods, threads.

mod delta_fifo;
mod real;
mod wait;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

pub use delta_fifo::{DeltaFifo, DeltaFifoOptions};
pub use real::{RealFifo, RealFifoOptions};

use crate::delta::Delta;
use crate::key::ObjectKey;
use crate::object::Object;
use crate::signal::Signal;

/// The queue was closed and is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("fifo: manipulating a closed queue")]
pub struct FifoClosed;

/// A user transform failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("transform failed for {key}: {message}")]
pub struct TransformError {
    /// The key of the object being transformed.
    pub key: ObjectKey,
    /// The transform's message.
    pub message: String,
}

/// Errors of queue writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FifoError {
    /// The queue is closed.
    #[error(transparent)]
    Closed(#[from] FifoClosed),
    /// The transform failed; the object was not queued.
    #[error(transparent)]
    Transform(#[from] TransformError),
}

/// A transform applied once to every object entering a queue (not to tombstones nor resyncs),
/// client-go's `TransformFunc`. Typical use: drop `managedFields` to save memory. Must be
/// idempotent: a relist may feed an already transformed object again.
pub type Transform<K> = Arc<dyn Fn(Object<K>) -> Result<Object<K>, String> + Send + Sync>;

pub(crate) fn apply_transform<K>(t: &Option<Transform<K>>, obj: Object<K>) -> Result<Object<K>, TransformError> {
    match t {
        None => Ok(obj),
        Some(f) => {
            let key = obj.key().clone();
            f(obj).map_err(|message| TransformError { key, message })
        }
    }
}

/// What a queue needs to know of the store in non-atomic modes: its keys and objects
/// (client-go's `KeyListerGetter`, implemented by [`Indexer`](crate::Indexer)).
pub trait KnownObjects<K>: Send + Sync {
    /// Every key in the store.
    fn list_keys(&self) -> Vec<ObjectKey>;
    /// The object stored under `key`.
    fn get_by_key(&self, key: &str) -> Option<Object<K>>;
}

impl<K: Send + Sync> KnownObjects<K> for crate::store::Indexer<K> {
    fn list_keys(&self) -> Vec<ObjectKey> {
        crate::store::Indexer::list_keys(self)
    }
    fn get_by_key(&self, key: &str) -> Option<Object<K>> {
        crate::store::Indexer::get_by_key(self, key)
    }
}

/// The interface between reflector, queue and consumer.
///
/// Producer methods are async because a bounded queue applies back-pressure; consumer `pop`
/// waits for an item. `pop` calls `process` with a batch of deltas (one delta for RealFifo's
/// `pop`, several distinct keys for its batch mode, one key's delta list for DeltaFifo) and the
/// `is_in_initial_list` flag.
pub trait Queue<K>: Send + Sync + 'static {
    /// Queues an ADDED object.
    fn add(&self, obj: Object<K>) -> impl Future<Output = Result<(), FifoError>> + Send;
    /// Queues a MODIFIED object.
    fn update(&self, obj: Object<K>) -> impl Future<Output = Result<(), FifoError>> + Send;
    /// Queues a DELETED object (its last state).
    fn delete(&self, obj: Object<K>) -> impl Future<Output = Result<(), FifoError>> + Send;
    /// Queues a relist: the complete set of objects at `resource_version`.
    fn replace(
        &self,
        objects: Vec<Object<K>>,
        resource_version: &str,
    ) -> impl Future<Output = Result<(), FifoError>> + Send;
    /// Queues a resync of the cached objects.
    fn resync(&self) -> impl Future<Output = Result<(), FifoError>> + Send;
    /// Records a watch bookmark's resourceVersion.
    fn bookmark(&self, resource_version: &str) -> impl Future<Output = Result<(), FifoError>> + Send;
    /// Pops the next batch (at most `max` deltas where batching applies) and processes it.
    fn pop<R, F>(&self, max: usize, process: F) -> impl Future<Output = Result<R, FifoClosed>> + Send
    where
        F: FnOnce(Vec<Delta<K>>, bool) -> R + Send,
        R: Send;
    /// Whether the initial population has been popped and processed.
    fn has_synced(&self) -> bool;
    /// The signal set when [`Queue::has_synced`] becomes true.
    fn synced_signal(&self) -> Signal;
    /// Closes the queue: writes fail, pops drain what remains queued, then fail.
    fn close(&self);
    /// Number of queued entries.
    fn len(&self) -> usize;
    /// The transform the queue applies to incoming objects (client-go's `TransformingStore`):
    /// a reflector applies it to the objects it holds while a streaming list completes, so they
    /// are held in their transformed size.
    fn transform(&self) -> Option<Transform<K>> {
        None
    }
    /// Whether nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Sync bookkeeping shared by both queues (client-go's populated / initialPopulationCount).
pub(crate) struct SyncState {
    pub populated: bool,
    pub initial_remaining: usize,
    pub signal: Signal,
}

impl SyncState {
    pub fn new(name: &str) -> Self {
        SyncState { populated: false, initial_remaining: 0, signal: Signal::new(name) }
    }
    pub fn has_synced(&self) -> bool {
        self.populated && self.initial_remaining == 0
    }
    pub fn check(&self) {
        if self.has_synced() {
            self.signal.set();
        }
    }
    pub fn mark_populated(&mut self) {
        self.populated = true;
    }
    /// First replace: record the initial population unless something was written before.
    pub fn first_replace(&mut self, count: usize) {
        if !self.populated {
            self.populated = true;
            self.initial_remaining = count;
        }
    }
    pub fn processed(&mut self, n: usize) {
        self.initial_remaining = self.initial_remaining.saturating_sub(n);
        self.check();
    }
}

impl fmt::Debug for SyncState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncState")
            .field("populated", &self.populated)
            .field("initial_remaining", &self.initial_remaining)
            .finish()
    }
}
