//! The watch cache: a bounded, per-resource ring of change events.
//!
//! Invariants: events are appended in strictly increasing `rv` order; the ring
//! holds *every* event of its resource with `rv > start_rv` (so a watch from
//! RV N can be replayed iff `N >= start_rv`, and the state at RV N can be
//! reconstructed by rolling back the events after N). Trimming (by size, or by age
//! beyond the last [`MIN_EVENTS`]) only ever raises `start_rv`. The storage's
//! compaction trims no event: it only raises the floor of the states a list may
//! read ([`History::list_floor`]). Event records are `Arc`s shared
//! by all watchers; nothing is copied per watcher: an event's watch line is
//! encoded once ([`SharedLine`]) while the event is among the last
//! [`RECENT_LINES`] of its resource, and retired after.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use crate::object::StoredObject;
use crate::shared_line::SharedLine;

/// How many of a resource's latest events keep their encoded watch line: watchers at the head
/// share it, a watcher further behind encodes into its own chunk (a replay batches events anyway).
pub const RECENT_LINES: usize = 256;

/// How many of a resource's latest events age never trims (kube's watch cache keeps at least
/// 100 however old they are): a watch resumed from a quiet resource's recent past is replayed.
pub const MIN_EVENTS: usize = 100;

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
    /// The event's watch line, shared by the watchers that send it as it is.
    pub line: SharedLine,
}

impl Event {
    /// A change recorded now.
    pub fn new(rv: u64, kind: EventType, obj: Arc<StoredObject>, prev: Option<Arc<StoredObject>>) -> Self {
        Event { rv, kind, obj, prev, at: Instant::now(), line: SharedLine::default() }
    }
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
    /// The storage's compaction revision: lists of older states are refused.
    compacted_rv: u64,
}

impl History {
    /// An empty history covering everything after `start_rv`.
    pub fn new(start_rv: u64) -> Self {
        History { events: VecDeque::new(), start_rv, dropped_rv: start_rv, compacted_rv: 0 }
    }

    /// Appends an event and trims to `capacity` events, and the events older than `max_age`
    /// beyond the last [`MIN_EVENTS`].
    pub fn push(&mut self, ev: Arc<Event>, capacity: usize, max_age: Option<std::time::Duration>) {
        self.events.push_back(ev);
        if let Some(old) = self.events.len().checked_sub(RECENT_LINES + 1).and_then(|i| self.events.get(i)) {
            old.line.retire();
        }
        while self.events.len() > capacity.max(1) {
            self.pop_front();
        }
        if let Some(age) = max_age {
            let now = Instant::now();
            while self.events.len() > MIN_EVENTS && self.events.front().is_some_and(|e| now.duration_since(e.at) > age)
            {
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

    /// Records that the storage was compacted at `rv`: the states before it are no longer
    /// listed ([`Self::list_floor`]), while its events stay for the watches to replay, as kube's
    /// watch cache keeps its events through etcd's compactions.
    pub fn compact(&mut self, rv: u64) {
        self.compacted_rv = self.compacted_rv.max(rv);
    }

    /// The oldest resourceVersion whose state a list may read: the history's start, or the
    /// storage's compaction if later.
    pub fn list_floor(&self) -> u64 {
        self.start_rv.max(self.compacted_rv)
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::object;
    use crate::registry::Registry;

    fn event(rv: u64) -> Arc<Event> {
        let info = Registry::with_defaults().lookup("configmaps").cloned().unwrap();
        let v = json!({"metadata": {"name": format!("c{rv}"), "namespace": "default"}});
        let obj = Arc::new(object::build(&info, v.as_object().unwrap(), rv));
        Arc::new(Event::new(rv, EventType::Added, obj, None))
    }

    fn encode(out: &mut Vec<u8>) {
        out.extend_from_slice(b"line\n");
    }

    #[test]
    fn only_the_recent_events_keep_their_encoded_lines() {
        let mut history = History::new(0);
        let events: Vec<Arc<Event>> = (1..=RECENT_LINES as u64 + 10).map(event).collect();
        for (i, ev) in events.iter().enumerate() {
            history.push(ev.clone(), 100_000, None);
            assert!(ev.line.get_or_encode(encode).is_some(), "the newest event {i} shares its line");
        }
        assert_eq!(history.len(), events.len(), "retiring a line drops no event");
        for (i, ev) in events.iter().enumerate() {
            let kept = ev.line.get_or_encode(encode).is_some();
            assert_eq!(kept, i >= 10, "event {i} of {}", events.len());
        }
    }

    #[test]
    fn age_trims_only_beyond_the_last_hundred_events() {
        let max_age = Some(std::time::Duration::from_secs(300));
        let old = |rv: u64| {
            let fresh = event(rv);
            let at = Instant::now().checked_sub(std::time::Duration::from_secs(600)).unwrap();
            Arc::new(Event {
                rv,
                kind: fresh.kind,
                obj: fresh.obj.clone(),
                prev: None,
                at,
                line: SharedLine::default(),
            })
        };
        let mut history = History::new(0);
        for rv in 1..=150 {
            history.push(old(rv), 100_000, max_age);
        }
        assert_eq!(history.len(), MIN_EVENTS, "a quiet resource keeps its last events however old");
        assert_eq!(history.start_rv, 50);
        let mut out = Vec::new();
        assert!(history.read_after(50, 1000, &mut out).is_some());
        assert_eq!(out.len(), 100);
        history.push(event(151), 100_000, max_age);
        assert_eq!(history.len(), MIN_EVENTS, "a fresh event lets the oldest one go");
        assert_eq!(history.start_rv, 51);
    }
}
