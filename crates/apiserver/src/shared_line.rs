//! An event's watch line (`{"type":…,"object":…}\n`), encoded once and shared by every watcher
//! that sends it, as kube-apiserver's watch cache serializes an event once for all its watchers
//! (its `cachingObject`).
//!
//! A thousand watchers of a resource would otherwise each copy the object into a buffer of their
//! own for every change; with the shared line they send the same bytes (`Bytes` clones: a
//! reference count), and HTTP/1.1 and HTTP/2 write them to each socket without another copy.
//!
//! Invariants: a line, once encoded, is the exact encoding of its event and never changes; a
//! retired line is dropped and never encoded again (watchers that reach its event encode it into
//! their own chunk), so the lines held at once are bounded by the watch cache's window of recent
//! events ([`crate::watch_cache::History`] retires the events that leave it), not by its history.

use bytes::Bytes;
use parking_lot::Mutex;

/// The shared encoding of one event's watch line.
#[derive(Debug, Default)]
pub struct SharedLine {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
enum State {
    /// Not encoded yet.
    #[default]
    Empty,
    /// Encoded, shared by every watcher that sends it.
    Encoded(Bytes),
    /// Out of the window of recent events: not kept.
    Retired,
}

impl SharedLine {
    /// The line, encoded by `encode` on first use; `None` once retired.
    pub fn get_or_encode(&self, encode: impl FnOnce(&mut Vec<u8>)) -> Option<Bytes> {
        let mut state = self.state.lock();
        match &*state {
            State::Encoded(line) => Some(line.clone()),
            State::Retired => None,
            State::Empty => {
                let mut out = Vec::new();
                encode(&mut out);
                let line = Bytes::from(out);
                *state = State::Encoded(line.clone());
                Some(line)
            }
        }
    }

    /// Drops the line, if encoded, and keeps it from being encoded again.
    pub fn retire(&self) {
        *self.state.lock() = State::Retired;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_encoded_once_and_shared() {
        let line = SharedLine::default();
        let mut calls = 0;
        let first = line
            .get_or_encode(|out| {
                calls += 1;
                out.extend_from_slice(b"{\"type\":\"ADDED\"}\n");
            })
            .unwrap();
        let second = line.get_or_encode(|_| calls += 1).unwrap();
        assert_eq!(calls, 1);
        assert_eq!(first, &b"{\"type\":\"ADDED\"}\n"[..]);
        assert_eq!(first.as_ptr(), second.as_ptr(), "watchers share one allocation");
    }

    #[test]
    fn a_retired_line_is_dropped_and_never_encoded_again() {
        let line = SharedLine::default();
        let held = line.get_or_encode(|out| out.push(b'x')).unwrap();
        line.retire();
        assert!(line.get_or_encode(|_| panic!("encoded after retirement")).is_none());
        assert_eq!(held, &b"x"[..], "watchers holding the line keep their bytes");
        let never = SharedLine::default();
        never.retire();
        assert!(never.get_or_encode(|_| panic!("encoded after retirement")).is_none());
    }
}
