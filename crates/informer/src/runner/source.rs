//! Wiring informers to the runner's queue: a handler that turns notifications into keys.
//!
//! Invariants: a delete of a primary object enqueues [`DeletedObject::key`] (tombstones
//! included), so a deletion observed only by a relist is still reconciled; resyncs (`on_update(o, o)`) enqueue like any
//! update (client-go's level-triggered behaviour) unless the source filters updates; a key
//! mapping that fails simply enqueues nothing. A source registers its handler once, at `build`, and removes it when the runner stops.

use std::sync::Arc;

use crate::handler::ResourceEventHandler;
use crate::key::ObjectKey;
use crate::object::{DeletedObject, Object};
use crate::shared_informer::{Backlog, HandlerOptions, HandlerRegistration, InformerError, SharedIndexInformer};
use crate::signal::Signal;
use crate::workqueue::RateLimitingQueue;

/// Maps an object of a watched type to the primary keys to reconcile.
pub(crate) type KeyMap<O> = Arc<dyn Fn(&Object<O>) -> Vec<ObjectKey> + Send + Sync>;

/// Judges an update (old, new): whether it queues keys.
pub(crate) type UpdateFilter<O> = Arc<dyn Fn(&Object<O>, &Object<O>) -> bool + Send + Sync>;

/// What an informer is to the runner.
pub(crate) enum Role<O> {
    /// The primary informer: each object queues its own key; its updates pass the filter, if
    /// any.
    Primary(Option<UpdateFilter<O>>),
    /// An informer whose objects map to primary keys: an update queues the keys of the object
    /// before and after it (controller-runtime's handlers), a deletion known only by its key
    /// queues nothing (its key is not a primary key).
    Secondary(KeyMap<O>),
}

/// The handler registered on an informer: every notification becomes queued keys.
struct Enqueue<O> {
    queue: RateLimitingQueue<ObjectKey>,
    role: Role<O>,
}

impl<O> Enqueue<O> {
    fn push(&self, obj: &Object<O>) {
        match &self.role {
            Role::Primary(_) => self.queue.add(obj.key().clone()),
            Role::Secondary(map) => {
                for key in map(obj) {
                    self.queue.add(key);
                }
            }
        }
    }
}

impl<O: Send + Sync + 'static> ResourceEventHandler<O> for Enqueue<O> {
    fn on_add(&self, obj: &Object<O>, _initial: bool) {
        self.push(obj);
    }
    fn on_update(&self, old: &Object<O>, new: &Object<O>) {
        match &self.role {
            Role::Primary(Some(filter)) if !filter(old, new) => {}
            Role::Primary(_) => self.push(new),
            Role::Secondary(_) => {
                // (A resync hands the same object twice.)
                if !old.ptr_eq(new) {
                    self.push(old);
                }
                self.push(new);
            }
        }
    }
    fn on_delete(&self, obj: &DeletedObject<O>) {
        match (obj.object(), &self.role) {
            (Some(o), _) => self.push(o),
            // A tombstone without a last known state: only the key is known, a primary key
            // only on the primary informer.
            (None, Role::Primary(_)) => self.queue.add(obj.key().clone()),
            (None, Role::Secondary(_)) => {}
        }
    }
}

/// An informer whose handler feeds the runner, type-erased.
pub(crate) struct Registered {
    /// The informer's and the registration's synced signals.
    pub synced: [Signal; 2],
    pub backlog: Box<dyn Fn() -> Backlog + Send + Sync>,
    pub remove: Box<dyn Fn() + Send + Sync>,
}

/// Deferred registration: called by `build` once the queue exists.
pub(crate) type Source =
    Box<dyn FnOnce(&RateLimitingQueue<ObjectKey>, &str) -> Result<Registered, InformerError> + Send>;

pub(crate) fn source<O: Send + Sync + 'static>(informer: SharedIndexInformer<O>, role: Role<O>) -> Source {
    Box::new(move |queue, name| {
        let handler = Enqueue { queue: queue.clone(), role };
        let reg: HandlerRegistration<O> =
            informer.add_event_handler_with_options(handler, HandlerOptions::new().name(name))?;
        let r2 = reg.clone();
        let inf = informer.clone();
        Ok(Registered {
            synced: [informer.synced(), reg.synced()],
            backlog: Box::new(move || r2.backlog()),
            remove: Box::new(move || {
                if let Err(e) = inf.remove_event_handler(&reg) {
                    tracing::debug!(error = %e, "removing the runner's handler");
                }
            }),
        })
    })
}
