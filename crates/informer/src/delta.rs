//! Deltas: the change records that flow from the reflector through a queue to the store.
//!
//! A [`Delta`] is one change to one object (or, for the atomic variants, to the whole set):
//! `Added`, `Updated`, `Deleted`, `Replaced` (the object was in a relist), `Sync` (a periodic
//! resync of a cached object), and the RealFifo-only atomic forms `ReplacedAll` (a whole relist
//! as one step), `SyncAll` (a whole resync as one step) and `Bookmark` (a resourceVersion with no
//! object change). These mirror client-go's `DeltaType`s one to one.

use std::fmt;

use crate::key::ObjectKey;
use crate::object::{DeletedObject, Object};

/// The kind of a [`Delta`] (client-go's `DeltaType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// The object was created (watch ADDED).
    Added,
    /// The object changed (watch MODIFIED).
    Updated,
    /// The object was deleted, or vanished from a relist.
    Deleted,
    /// The object was part of a relist.
    Replaced,
    /// A periodic resync of a cached object.
    Sync,
    /// A whole relist, applied atomically.
    ReplacedAll,
    /// A whole-cache resync, applied atomically.
    SyncAll,
    /// A watch bookmark: the resourceVersion advanced with no object change.
    Bookmark,
}

/// One change record.
pub enum Delta<K> {
    /// The object was created.
    Added(Object<K>),
    /// The object changed.
    Updated(Object<K>),
    /// The object was deleted (or, as a tombstone, vanished during a relist).
    Deleted(DeletedObject<K>),
    /// The object was part of a relist (non-atomic mode).
    Replaced(Object<K>),
    /// A resync of a cached object (non-atomic mode).
    Sync(Object<K>),
    /// A whole relist with its resourceVersion, to be applied as one step.
    ReplacedAll {
        /// Every object of the list, in list order.
        objects: Vec<Object<K>>,
        /// The list's resourceVersion.
        resource_version: String,
    },
    /// A whole-cache resync, to be applied as one step.
    SyncAll,
    /// A bookmark carrying the stream's resourceVersion.
    Bookmark {
        /// The bookmark's resourceVersion.
        resource_version: String,
    },
}

impl<K> Delta<K> {
    /// The delta's type.
    pub fn delta_type(&self) -> DeltaType {
        match self {
            Delta::Added(_) => DeltaType::Added,
            Delta::Updated(_) => DeltaType::Updated,
            Delta::Deleted(_) => DeltaType::Deleted,
            Delta::Replaced(_) => DeltaType::Replaced,
            Delta::Sync(_) => DeltaType::Sync,
            Delta::ReplacedAll { .. } => DeltaType::ReplacedAll,
            Delta::SyncAll => DeltaType::SyncAll,
            Delta::Bookmark { .. } => DeltaType::Bookmark,
        }
    }

    /// The key of the object this delta is about; `None` for the whole-set variants.
    pub fn key(&self) -> Option<&ObjectKey> {
        match self {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => Some(o.key()),
            Delta::Deleted(d) => Some(d.key()),
            Delta::ReplacedAll { .. } | Delta::SyncAll | Delta::Bookmark { .. } => None,
        }
    }

    /// The object carried, if any (for a tombstone: its last known state).
    pub fn object(&self) -> Option<&Object<K>> {
        match self {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => Some(o),
            Delta::Deleted(d) => d.object(),
            _ => None,
        }
    }

    /// Whether this delta changes a single key (and so may be batched with others).
    pub fn is_batchable(&self) -> bool {
        self.key().is_some()
    }
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        match self {
            Delta::Added(o) => Delta::Added(o.clone()),
            Delta::Updated(o) => Delta::Updated(o.clone()),
            Delta::Deleted(d) => Delta::Deleted(d.clone()),
            Delta::Replaced(o) => Delta::Replaced(o.clone()),
            Delta::Sync(o) => Delta::Sync(o.clone()),
            Delta::ReplacedAll { objects, resource_version } => {
                Delta::ReplacedAll { objects: objects.clone(), resource_version: resource_version.clone() }
            }
            Delta::SyncAll => Delta::SyncAll,
            Delta::Bookmark { resource_version } => Delta::Bookmark { resource_version: resource_version.clone() },
        }
    }
}

impl<K> fmt::Debug for Delta<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Delta::ReplacedAll { objects, resource_version } => f
                .debug_struct("ReplacedAll")
                .field("objects", &objects.len())
                .field("resource_version", resource_version)
                .finish(),
            Delta::SyncAll => f.write_str("SyncAll"),
            Delta::Bookmark { resource_version } => {
                f.debug_struct("Bookmark").field("resource_version", resource_version).finish()
            }
            Delta::Deleted(d) => f.debug_tuple("Deleted").field(d).finish(),
            other => f
                .debug_tuple(&format!("{:?}", other.delta_type()))
                .field(other.object().expect("single-object delta"))
                .finish(),
        }
    }
}
