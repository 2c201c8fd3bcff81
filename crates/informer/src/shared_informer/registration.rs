//! Handler registrations (client-go's `ResourceEventHandlerRegistration`) and the informer's
//! errors.
//!
//! A registration is a handle on one listener: its sync state, backlog and statistics. It stays
//! valid after removal (then `is_removed`); removing it twice is fine.

use std::sync::Arc;
use std::time::Duration;

use super::listener::{Backlog, Listener};
use crate::signal::Signal;
use crate::store::IndexError;

/// Errors of informer operations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InformerError {
    /// The informer has stopped; no handler can be added.
    #[error("handler was not added to shared informer {0} because it has stopped already")]
    Stopped(String),
    /// The setting can only change before `run`.
    #[error("informer {0} has already started")]
    AlreadyStarted(String),
    /// The registration belongs to another informer.
    #[error("registration does not belong to informer {0}")]
    ForeignRegistration(String),
    /// Adding indexers failed.
    #[error(transparent)]
    Index(#[from] IndexError),
}

/// A handler's registration: its sync state, backlog and statistics. Cheap to clone.
pub struct HandlerRegistration<K> {
    pub(super) listener: Arc<Listener<K>>,
}

impl<K> Clone for HandlerRegistration<K> {
    fn clone(&self) -> Self {
        HandlerRegistration { listener: self.listener.clone() }
    }
}

impl<K> std::fmt::Debug for HandlerRegistration<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerRegistration")
            .field("name", &&*self.listener.name)
            .field("synced", &self.listener.synced.is_set())
            .finish()
    }
}

impl<K: Send + Sync + 'static> HandlerRegistration<K> {
    /// The handler's name.
    pub fn name(&self) -> &str {
        &self.listener.name
    }
    /// Whether the informer synced and every initial add reached this handler.
    pub fn has_synced(&self) -> bool {
        self.listener.synced.is_set()
    }
    /// The signal behind [`has_synced`](Self::has_synced).
    pub fn synced(&self) -> Signal {
        self.listener.synced.clone()
    }
    /// Pending notifications and the age of the oldest.
    pub fn backlog(&self) -> Backlog {
        self.listener.backlog()
    }
    /// Handler calls that panicked.
    pub fn panics(&self) -> u64 {
        self.listener.panics()
    }
    /// Times a `Bounded` backlog overflowed and was replaced by a resync from the cache.
    pub fn overflows(&self) -> u64 {
        self.listener.overflows()
    }
    /// Notifications delivered (handler calls made, including those that panicked).
    pub fn delivered(&self) -> u64 {
        self.listener.delivered()
    }
    /// The effective resync period.
    pub fn resync_period(&self) -> Duration {
        self.listener.effective_resync()
    }
    /// Whether the registration was removed (or the informer stopped).
    pub fn is_removed(&self) -> bool {
        self.listener.is_removed()
    }
    /// Set once the handler's consumer has ended (after removal or informer stop).
    pub fn finished(&self) -> Signal {
        self.listener.finished.clone()
    }
}
