//! [`FilteringHandler`]: passes to an inner handler only the objects a predicate accepts, turning
//! updates that cross the filter into adds and deletes (client-go's
//! `FilteringResourceEventHandler`).
//!
//! Transitions of an update: both old and new pass ⇒ `on_update`; only new ⇒ `on_add(new,
//! false)`; only old ⇒ `on_delete(old)`; neither ⇒ nothing. A delete is forwarded when the
//! deleted object (or a tombstone's last known state) passes; a tombstone without a last known
//! state is forwarded (it cannot be judged, and dropping it could leak state downstream).

use crate::handler::ResourceEventHandler;
use crate::object::{DeletedObject, Object};

/// A filtered handler.
///
/// ```
/// use informer::{FilteringHandler, HandlerFns};
/// use k8s_openapi::api::core::v1::Pod;
/// let h = FilteringHandler::new(
///     |o: &informer::Object<Pod>| o.label("app") == Some("web"),
///     HandlerFns::new().on_add(|o, _| println!("web pod {}", o.key())),
/// );
/// # let _ = h;
/// ```
pub struct FilteringHandler<K, F, H> {
    filter: F,
    handler: H,
    _k: std::marker::PhantomData<fn(K)>,
}

impl<K, F, H> FilteringHandler<K, F, H>
where
    F: Fn(&Object<K>) -> bool + Send + Sync + 'static,
    H: ResourceEventHandler<K>,
{
    /// Wraps `handler` behind `filter`.
    pub fn new(filter: F, handler: H) -> Self {
        FilteringHandler {
            filter,
            handler,
            _k: std::marker::PhantomData,
        }
    }
}

impl<K, F, H> ResourceEventHandler<K> for FilteringHandler<K, F, H>
where
    K: 'static,
    F: Fn(&Object<K>) -> bool + Send + Sync + 'static,
    H: ResourceEventHandler<K>,
{
    fn on_add(&self, obj: &Object<K>, is_in_initial_list: bool) {
        if (self.filter)(obj) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Object<K>, new: &Object<K>) {
        match ((self.filter)(old), (self.filter)(new)) {
            (true, true) => self.handler.on_update(old, new),
            (false, true) => self.handler.on_add(new, false),
            (true, false) => self.handler.on_delete(&DeletedObject::Object(old.clone())),
            (false, false) => {}
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        let pass = match obj {
            DeletedObject::Object(o) => (self.filter)(o),
            DeletedObject::FinalStateUnknown(t) => t.last_known.as_ref().is_none_or(&self.filter),
        };
        if pass {
            self.handler.on_delete(obj);
        }
    }
}
