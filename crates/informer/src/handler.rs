//! Event handlers: what an informer calls for each change (client-go's `ResourceEventHandler`).
//!
//! `on_add(obj, is_in_initial_list)`, `on_update(old, new)` and `on_delete(deleted)`, where a
//! delete carries a [`DeletedObject`] — either the object or a tombstone — so a handler cannot
//! mistake one for the other. A resync arrives as `on_update` with `old` and `new` the same
//! object (same resourceVersion). [`HandlerFns`] builds a handler from closures.

use crate::object::{DeletedObject, Object};

/// Receives notifications. Calls for one handler are sequential.
pub trait ResourceEventHandler<K>: Send + Sync + 'static {
    /// An object appeared (from the initial list when `is_in_initial_list`).
    fn on_add(&self, obj: &Object<K>, is_in_initial_list: bool);
    /// An object changed (or was resynced: `old` and `new` then have the same resourceVersion).
    fn on_update(&self, old: &Object<K>, new: &Object<K>);
    /// An object was deleted, or vanished during a relist (tombstone).
    fn on_delete(&self, obj: &DeletedObject<K>);
}

type AddFn<K> = Box<dyn Fn(&Object<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Object<K>, &Object<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&DeletedObject<K>) + Send + Sync>;

/// A handler made of optional closures.
///
/// ```
/// use informer::HandlerFns;
/// use k8s_openapi::api::core::v1::Pod;
/// let h = HandlerFns::<Pod>::new()
///     .on_add(|obj, initial| println!("add {} (initial: {initial})", obj.key()))
///     .on_delete(|d| println!("delete {}", d.key()));
/// # let _ = h;
/// ```
pub struct HandlerFns<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for HandlerFns<K> {
    fn default() -> Self {
        HandlerFns { add: None, update: None, delete: None }
    }
}

impl<K> HandlerFns<K> {
    /// A handler that ignores everything until closures are set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the add closure.
    pub fn on_add(mut self, f: impl Fn(&Object<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }
    /// Sets the update closure.
    pub fn on_update(mut self, f: impl Fn(&Object<K>, &Object<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }
    /// Sets the delete closure.
    pub fn on_delete(mut self, f: impl Fn(&DeletedObject<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: 'static> ResourceEventHandler<K> for HandlerFns<K> {
    fn on_add(&self, obj: &Object<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list)
        }
    }
    fn on_update(&self, old: &Object<K>, new: &Object<K>) {
        if let Some(f) = &self.update {
            f(old, new)
        }
    }
    fn on_delete(&self, obj: &DeletedObject<K>) {
        if let Some(f) = &self.delete {
            f(obj)
        }
    }
}

/// A shared handler is a handler (e.g. one handler registered with several informers).
impl<K: 'static, H: ResourceEventHandler<K> + ?Sized> ResourceEventHandler<K>
    for std::sync::Arc<H>
{
    fn on_add(&self, obj: &Object<K>, is_in_initial_list: bool) {
        (**self).on_add(obj, is_in_initial_list)
    }
    fn on_update(&self, old: &Object<K>, new: &Object<K>) {
        (**self).on_update(old, new)
    }
    fn on_delete(&self, obj: &DeletedObject<K>) {
        (**self).on_delete(obj)
    }
}
