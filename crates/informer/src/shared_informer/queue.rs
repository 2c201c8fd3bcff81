//! Type erasure for the informer's pipeline: any [`ListerWatcher`] behind one type
//! ([`DynListerWatcher`]), and the two queues behind one enum ([`InformerQueue`]), so that a
//! `SharedIndexInformer<K>` is generic over the object type only.
//!
//! Invariant: both wrappers delegate every call unchanged; the cost is one boxed future per
//! LIST/WATCH request (never per event).

use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::delta::Delta;
use crate::fifo::{DeltaFifo, FifoClosed, FifoError, Queue, RealFifo};
use crate::listwatch::{Error, ListOptions, ListerWatcher, ObjectList, WatchStream};
use crate::object::Object;
use crate::signal::Signal;

trait ErasedLw<K>: Send + Sync {
    fn list<'a>(&'a self, o: &'a ListOptions) -> BoxFuture<'a, Result<ObjectList<K>, Error>>;
    fn watch<'a>(&'a self, o: &'a ListOptions) -> BoxFuture<'a, Result<WatchStream<K>, Error>>;
    fn supports_streaming_list(&self) -> bool;
    fn describe(&self) -> String;
}

impl<K: 'static, L: ListerWatcher<K>> ErasedLw<K> for L {
    fn list<'a>(&'a self, o: &'a ListOptions) -> BoxFuture<'a, Result<ObjectList<K>, Error>> {
        Box::pin(ListerWatcher::list(self, o))
    }
    fn watch<'a>(&'a self, o: &'a ListOptions) -> BoxFuture<'a, Result<WatchStream<K>, Error>> {
        Box::pin(ListerWatcher::watch(self, o))
    }
    fn supports_streaming_list(&self) -> bool {
        ListerWatcher::supports_streaming_list(self)
    }
    fn describe(&self) -> String {
        ListerWatcher::describe(self)
    }
}

/// Any lister-watcher, type-erased (cheap to clone).
pub struct DynListerWatcher<K> {
    inner: Arc<dyn ErasedLw<K>>,
}

impl<K> Clone for DynListerWatcher<K> {
    fn clone(&self) -> Self {
        DynListerWatcher { inner: self.inner.clone() }
    }
}

impl<K: 'static> DynListerWatcher<K> {
    /// Wraps a lister-watcher.
    pub fn new<L: ListerWatcher<K>>(lw: L) -> Self {
        DynListerWatcher { inner: Arc::new(lw) }
    }
}

impl<K: Send + Sync + 'static> ListerWatcher<K> for DynListerWatcher<K> {
    async fn list(&self, opts: &ListOptions) -> Result<ObjectList<K>, Error> {
        self.inner.list(opts).await
    }
    async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<K>, Error> {
        self.inner.watch(opts).await
    }
    fn supports_streaming_list(&self) -> bool {
        self.inner.supports_streaming_list()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// The informer's queue: [`RealFifo`] (default) or [`DeltaFifo`].
pub(crate) enum InformerQueue<K> {
    Real(RealFifo<K>),
    Delta(DeltaFifo<K>),
}

macro_rules! delegate {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            InformerQueue::Real($q) => $e,
            InformerQueue::Delta($q) => $e,
        }
    };
}

impl<K: Send + Sync + 'static> Queue<K> for InformerQueue<K> {
    async fn add(&self, obj: Object<K>) -> Result<(), FifoError> {
        delegate!(self, q => q.add(obj).await)
    }
    async fn update(&self, obj: Object<K>) -> Result<(), FifoError> {
        delegate!(self, q => q.update(obj).await)
    }
    async fn delete(&self, obj: Object<K>) -> Result<(), FifoError> {
        delegate!(self, q => q.delete(obj).await)
    }
    async fn replace(&self, objects: Vec<Object<K>>, resource_version: &str) -> Result<(), FifoError> {
        delegate!(self, q => q.replace(objects, resource_version).await)
    }
    async fn resync(&self) -> Result<(), FifoError> {
        delegate!(self, q => q.resync().await)
    }
    async fn bookmark(&self, resource_version: &str) -> Result<(), FifoError> {
        delegate!(self, q => q.bookmark(resource_version).await)
    }
    async fn pop<R, F>(&self, max: usize, process: F) -> Result<R, FifoClosed>
    where
        F: FnOnce(Vec<Delta<K>>, bool) -> R + Send,
        R: Send,
    {
        delegate!(self, q => q.pop(max, process).await)
    }
    fn has_synced(&self) -> bool {
        delegate!(self, q => q.has_synced())
    }
    fn synced_signal(&self) -> Signal {
        delegate!(self, q => q.synced_signal())
    }
    fn close(&self) {
        delegate!(self, q => q.close())
    }
    fn len(&self) -> usize {
        delegate!(self, q => q.len())
    }
    fn transform(&self) -> Option<crate::fifo::Transform<K>> {
        delegate!(self, q => q.transform())
    }
}
