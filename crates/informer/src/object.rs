//! Objects as the informer holds them, and deletions.
//!
//! [`Object`] (the cached object: the JSON received plus its parsed identity, typed value decoded
//! on demand) and [`ObjectKey`] come from the `informer-object` crate; this module adds what a
//! delete notification carries: the deleted object, or a [`Tombstone`] when the object vanished
//! while the watch was down (client-go's `DeletedFinalStateUnknown`).
//!
//! Invariant: a [`DeletedObject`] always names the deleted key; a tombstone's last known state,
//! when present, has that key.

use std::fmt;

pub use informer_object::{DecodeError, Object};

use crate::key::ObjectKey;

/// A deletion whose final state is unknown: the object was deleted while the watch was down and
/// the relist no longer contains it (client-go's `DeletedFinalStateUnknown`).
///
/// `last_known` is the last state the cache or queue held, if any.
pub struct Tombstone<K> {
    /// The key of the deleted object.
    pub key: ObjectKey,
    /// The last known state; may be stale.
    pub last_known: Option<Object<K>>,
}

impl<K> Clone for Tombstone<K> {
    fn clone(&self) -> Self {
        Tombstone { key: self.key.clone(), last_known: self.last_known.clone() }
    }
}

impl<K> fmt::Debug for Tombstone<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tombstone").field("key", &self.key).field("last_known", &self.last_known).finish()
    }
}

/// What a delete notification carries: the deleted object, or a [`Tombstone`] when the final
/// state is unknown. Handlers must match on it; a tombstone cannot be mistaken for an object.
pub enum DeletedObject<K> {
    /// The object's last state as the server reported it.
    Object(Object<K>),
    /// The object vanished during a relist; its final state is unknown.
    FinalStateUnknown(Tombstone<K>),
}

impl<K> DeletedObject<K> {
    /// The key of the deleted object.
    pub fn key(&self) -> &ObjectKey {
        match self {
            DeletedObject::Object(o) => o.key(),
            DeletedObject::FinalStateUnknown(t) => &t.key,
        }
    }

    /// The object, or the tombstone's last known state.
    pub fn object(&self) -> Option<&Object<K>> {
        match self {
            DeletedObject::Object(o) => Some(o),
            DeletedObject::FinalStateUnknown(t) => t.last_known.as_ref(),
        }
    }

    /// Whether this is a tombstone.
    pub fn is_final_state_unknown(&self) -> bool {
        matches!(self, DeletedObject::FinalStateUnknown(_))
    }
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            DeletedObject::Object(o) => DeletedObject::Object(o.clone()),
            DeletedObject::FinalStateUnknown(t) => DeletedObject::FinalStateUnknown(t.clone()),
        }
    }
}

impl<K> fmt::Debug for DeletedObject<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeletedObject::Object(o) => f.debug_tuple("Object").field(o).finish(),
            DeletedObject::FinalStateUnknown(t) => f.debug_tuple("FinalStateUnknown").field(t).finish(),
        }
    }
}
