//! What a handler is told: one [`Notification`] per change, shared by every handler of an
//! informer (cloning it clones `Arc` handles, never an object).
//!
//! Invariant: a notification describes a state the informer's cache has already reached (the
//! store is updated before notifications are distributed).

use crate::handler::ResourceEventHandler;
use crate::object::{DeletedObject, Object};

/// One change delivered to a handler or a notification stream.
pub enum Notification<K> {
    /// An object appeared; `is_in_initial_list` for the initial list (and the synthetic adds a
    /// late-joining handler receives for the cache's content).
    Add {
        /// The object.
        obj: Object<K>,
        /// Whether the object belongs to the initial list.
        is_in_initial_list: bool,
    },
    /// An object changed, or was resynced (`old` and `new` then have the same resourceVersion).
    Update {
        /// The previous state.
        old: Object<K>,
        /// The new state.
        new: Object<K>,
    },
    /// An object was deleted or vanished during a relist (tombstone).
    Delete(DeletedObject<K>),
}

impl<K> Notification<K> {
    /// The key of the object concerned.
    pub fn key(&self) -> &crate::ObjectKey {
        match self {
            Notification::Add { obj, .. } => obj.key(),
            Notification::Update { new, .. } => new.key(),
            Notification::Delete(d) => d.key(),
        }
    }

    /// Whether this is a resync (an update whose old and new resourceVersions are equal, both
    /// missing included, as client-go compares them).
    pub fn is_resync(&self) -> bool {
        match self {
            Notification::Update { old, new } => old.resource_version() == new.resource_version(),
            _ => false,
        }
    }

    /// Calls the matching method of `handler`.
    pub fn deliver_to<H: ResourceEventHandler<K> + ?Sized>(&self, handler: &H) {
        match self {
            Notification::Add { obj, is_in_initial_list } => handler.on_add(obj, *is_in_initial_list),
            Notification::Update { old, new } => handler.on_update(old, new),
            Notification::Delete(d) => handler.on_delete(d),
        }
    }

    pub(crate) fn is_initial_add(&self) -> bool {
        matches!(self, Notification::Add { is_in_initial_list: true, .. })
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Notification::Add { .. } => "add",
            Notification::Update { .. } if self.is_resync() => "sync",
            Notification::Update { .. } => "update",
            Notification::Delete(_) => "delete",
        }
    }
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Notification::Add { obj, is_in_initial_list } => {
                Notification::Add { obj: obj.clone(), is_in_initial_list: *is_in_initial_list }
            }
            Notification::Update { old, new } => Notification::Update { old: old.clone(), new: new.clone() },
            Notification::Delete(d) => Notification::Delete(d.clone()),
        }
    }
}

impl<K> std::fmt::Debug for Notification<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notification::Add { obj, is_in_initial_list } => {
                f.debug_struct("Add").field("obj", obj).field("is_in_initial_list", is_in_initial_list).finish()
            }
            Notification::Update { old, new } => f.debug_struct("Update").field("old", old).field("new", new).finish(),
            Notification::Delete(d) => f.debug_tuple("Delete").field(d).finish(),
        }
    }
}
