//! The low-level controller (client-go's `controller` + `processDeltas`): a reflector feeding a
//! queue, and the process loop that pops deltas, applies them to the [`Indexer`] and calls a
//! handler. The loop is the engine under every informer: a [`Controller`] runs it with one
//! handler called inline, a [`SharedIndexInformer`](crate::SharedIndexInformer) with its
//! processor as the handler (which fans each change out to every registered handler) and its
//! batch hooks (the delta barrier, batching, metrics, back-pressure).
//!
//! Delta semantics (client-go 1.36 `processDeltas`, oldest to newest):
//! - `Added`, `Updated`, `Replaced`, `Sync`: if the key is cached, update the store and call
//!   `on_update(old, new)`, else add and call `on_add(new, is_in_initial_list)`.
//! - `Deleted`: remove from the store, call `on_delete` with the object or tombstone.
//! - `ReplacedAll`: keys cached but absent from the list become tombstones; the store is replaced
//!   in one step (readers see old or new, never a mix); then `on_delete` for each tombstone, then
//!   `on_update`/`on_add` in list order.
//! - `SyncAll`: `on_update(obj, obj)` for every cached object. `Bookmark`: the store records the
//!   resourceVersion; no handler call.
//!
//! Invariant: the store is updated before the handler hears of a change, so a handler reading the
//! store sees at least that state. Every change is applied and heard of: an object whose index
//! function fails is stored outside that index, and the failure logged (client-go panics).

use std::future::Future;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::delta::Delta;
use crate::fifo::Queue;
use crate::handler::ResourceEventHandler;
use crate::listwatch::ListerWatcher;
use crate::object::{DeletedObject, Object, Tombstone};
use crate::reflector::{Reflector, ReflectorHooks, ReflectorOptions, ReflectorStatus};
use crate::store::Indexer;

/// What a process loop does around each batch besides applying it. The default does nothing
/// (a [`Controller`]); the shared informer takes its delta barrier, batches its distribution,
/// records metrics and holds the loop while a handler is over its `Block` limit.
pub(crate) trait BatchHooks: Send + Sync {
    /// Runs `apply` (the batch's store updates and handler calls).
    fn apply(&self, apply: impl FnOnce()) {
        apply()
    }

    /// After each pop; `queued` counts the deltas still queued (call it only if needed: it locks
    /// the queue).
    fn popped(&self, _queued: impl FnOnce() -> usize) {}

    /// Between batches: the queue is not read until this returns (or the loop is cancelled).
    fn between_batches(&self) -> impl Future<Output = ()> + Send {
        std::future::ready(())
    }
}

/// No hooks.
impl BatchHooks for () {}

/// The process loop: pops up to `batch` deltas at a time, applies them to `store` and calls
/// `handler` ([`process_deltas`]), until the queue is closed or `cancel` fires (what is still
/// queued then is not applied).
pub(crate) async fn process_loop<K, Q, H, B>(
    queue: &Q,
    store: &Indexer<K>,
    handler: &H,
    batch: usize,
    hooks: &B,
    cancel: &CancellationToken,
) where
    K: Send + Sync + 'static,
    Q: Queue<K>,
    H: ResourceEventHandler<K> + ?Sized,
    B: BatchHooks,
{
    loop {
        let r =
            queue.pop(batch, |deltas, initial| hooks.apply(|| process_deltas(handler, store, deltas, initial))).await;
        hooks.popped(|| queue.len());
        // As client-go's processLoop: once cancelled, nothing more queued is applied.
        if r.is_err() || cancel.is_cancelled() {
            return;
        }
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = hooks.between_batches() => {}
        }
    }
}

/// Applies a batch of deltas to the store and notifies the handler (see the module docs).
pub fn process_deltas<K, H>(handler: &H, store: &Indexer<K>, deltas: Vec<Delta<K>>, is_in_initial_list: bool)
where
    H: ResourceEventHandler<K> + ?Sized,
{
    for d in deltas {
        match d {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => {
                upsert(handler, store, o, is_in_initial_list);
            }
            Delta::Deleted(del) => {
                match &del {
                    DeletedObject::Object(o) => {
                        store.delete(o);
                    }
                    DeletedObject::FinalStateUnknown(t) => {
                        store.delete_key(t.key.as_str());
                    }
                }
                handler.on_delete(&del);
            }
            Delta::ReplacedAll { objects, resource_version } => {
                let listed: std::collections::HashSet<&str, foldhash::fast::RandomState> =
                    objects.iter().map(|o| o.key().as_str()).collect();
                let mut deletions = Vec::new();
                store.for_each(|o| {
                    if !listed.contains(o.key().as_str()) {
                        deletions.push(Tombstone { key: o.key().clone(), last_known: Some(o.clone()) });
                    }
                });
                let olds: Vec<Option<Object<K>>> = objects.iter().map(|o| store.get(o)).collect();
                for e in store.replace_lenient(&objects, &resource_version) {
                    tracing::error!(error = %e, "index function failed; the object is left out of that index");
                }
                for t in deletions {
                    handler.on_delete(&DeletedObject::FinalStateUnknown(t));
                }
                for (old, new) in olds.into_iter().zip(&objects) {
                    match old {
                        Some(old) => handler.on_update(&old, new),
                        None => handler.on_add(new, is_in_initial_list),
                    }
                }
            }
            Delta::SyncAll => {
                for o in store.list() {
                    handler.on_update(&o, &o);
                }
            }
            Delta::Bookmark { resource_version } => store.bookmark(&resource_version),
        }
    }
}

fn upsert<K, H>(handler: &H, store: &Indexer<K>, o: Object<K>, initial: bool)
where
    H: ResourceEventHandler<K> + ?Sized,
{
    let (old, errors) = store.upsert_lenient(o.clone());
    for e in errors {
        tracing::error!(error = %e, "index function failed; the object is left out of that index");
    }
    match old {
        Some(old) => handler.on_update(&old, &o),
        None => handler.on_add(&o, initial),
    }
}

/// A reflector, a queue and a process loop applying deltas to an indexer and one handler
/// (client-go's `NewInformerWithOptions`).
pub struct Controller<K, L, Q, H> {
    reflector: Reflector<K, L, Q>,
    queue: Arc<Q>,
    store: Arc<Indexer<K>>,
    handler: Arc<H>,
    batch: usize,
}

impl<K, L, Q, H> Controller<K, L, Q, H>
where
    K: Send + Sync + 'static,
    L: ListerWatcher<K>,
    Q: Queue<K>,
    H: ResourceEventHandler<K>,
{
    /// Builds a controller.
    pub fn new(
        lw: Arc<L>,
        queue: Arc<Q>,
        store: Arc<Indexer<K>>,
        handler: Arc<H>,
        opts: ReflectorOptions,
        hooks: ReflectorHooks,
    ) -> Self {
        Controller { reflector: Reflector::new(lw, queue.clone(), opts, hooks), queue, store, handler, batch: 1 }
    }

    /// Pops up to `n` distinct keys per step (RealFifo batch mode).
    pub fn with_batch(mut self, n: usize) -> Self {
        self.batch = n.max(1);
        self
    }

    /// The cache.
    pub fn store(&self) -> &Arc<Indexer<K>> {
        &self.store
    }

    /// The reflector's status (last synced resourceVersion).
    pub fn reflector_status(&self) -> ReflectorStatus {
        self.reflector.status()
    }

    /// Whether the initial list has been applied to the store and handled.
    pub fn has_synced(&self) -> bool {
        self.queue.has_synced()
    }

    /// The signal set once synced.
    pub fn synced(&self) -> crate::Signal {
        self.queue.synced_signal()
    }

    /// Runs the reflector and the process loop until `cancel` fires; then closes the queue.
    pub async fn run(&self, cancel: CancellationToken) {
        let process = process_loop(&*self.queue, &self.store, &*self.handler, self.batch, &(), &cancel);
        let reflect = async {
            self.reflector.run(cancel.clone()).await;
            self.queue.close();
        };
        tokio::join!(reflect, process);
    }
}
