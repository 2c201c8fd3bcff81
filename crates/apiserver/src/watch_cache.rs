//! The watch cache: a bounded, per-resource ring of change events.
//!
//! Invariants: events are appended in strictly increasing `rv` order; the ring
//! holds *every* event of its resource with `rv > start_rv` (so a watch from
//! RV N can be replayed iff `N >= start_rv`, and the state at RV N can be
//! reconstructed by rolling back the events after N). Trimming (by size, age
//! or on demand) only ever raises `start_rv`. Event records are `Arc`s shared
//! by all watchers; nothing is copied per watcher.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use crate::object::StoredObject;

/// The type of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Object created.
    Added,
    /// Object changed.
    Modified,
    /// Object deleted.
    Deleted,
}

impl EventType {
    /// The wire name, e.g. "ADDED".
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change record.
#[derive(Debug)]
pub struct Event {
    /// Resource version of the change.
    pub rv: u64,
    /// Change type.
    pub kind: EventType,
    /// The new state (for DELETED: the last state carrying the deletion RV).
    pub obj: Arc<StoredObject>,
    /// The previous state (None for ADDED).
    pub prev: Option<Arc<StoredObject>>,
    /// When it was recorded (for age-based trimming).
    pub at: Instant,
}

/// Bounded event history of one resource.
#[derive(Debug)]
pub struct History {
    events: VecDeque<Arc<Event>>,
    /// Every event with `rv > start_rv` is retained.
    pub start_rv: u64,
    /// Highest RV of an event actually dropped: a reader positioned at or
    /// after it has missed nothing, even if `start_rv` moved past it.
    dropped_rv: u64,
}

impl History {
    /// An empty history covering everything after `start_rv`.
    pub fn new(start_rv: u64) -> Self {
        History { events: VecDeque::new(), start_rv, dropped_rv: start_rv }
    }

    /// Appends an event and trims to `capacity` events / `max_age`.
    pub fn push(&mut self, ev: Arc<Event>, capacity: usize, max_age: Option<std::time::Duration>) {
        self.events.push_back(ev);
        while self.events.len() > capacity.max(1) {
            self.pop_front();
        }
        if let Some(age) = max_age {
            let now = Instant::now();
            while self.events.front().is_some_and(|e| now.duration_since(e.at) > age) {
                self.pop_front();
            }
        }
    }

    fn pop_front(&mut self) {
        if let Some(e) = self.events.pop_front() {
            self.start_rv = self.start_rv.max(e.rv);
            self.dropped_rv = self.dropped_rv.max(e.rv);
        }
    }

    /// Drops every event with `rv <= rv` and raises `start_rv` to `rv`.
    pub fn compact(&mut self, rv: u64) {
        while self.events.front().is_some_and(|e| e.rv <= rv) {
            self.pop_front();
        }
        self.start_rv = self.start_rv.max(rv);
    }

    /// Number of retained events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no events are retained.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Number of retained events with `rv > after`.
    pub fn count_after(&self, after: u64) -> usize {
        self.events.len() - self.first_after(after)
    }

    fn first_after(&self, rv: u64) -> usize {
        self.events.partition_point(|e| e.rv <= rv)
    }

    /// Up to `max` events with `rv > after`, or `None` if events after
    /// `after` were already trimmed (the reader fell behind).
    pub fn read_after(&self, after: u64, max: usize, out: &mut Vec<Arc<Event>>) -> Option<()> {
        if after < self.dropped_rv {
            return None;
        }
        let i = self.first_after(after);
        out.extend(self.events.range(i..).take(max).cloned());
        Some(())
    }

    /// Iterates events with `rv > after`, newest first.
    pub fn newer_than_rev(&self, after: u64) -> impl Iterator<Item = &Arc<Event>> {
        let i = self.first_after(after);
        self.events.range(i..).rev()
    }
}
