//! Log capture for the live view: while the terminal shows the dashboard, tracing output must not
//! be written over it, so log lines go to a small in-memory ring that the view displays.
//!
//! Invariant: the ring holds at most [`CAPACITY`] lines (oldest dropped first); writing never
//! blocks on the terminal and never fails.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// How many log lines are kept.
pub const CAPACITY: usize = 50;

fn ring() -> &'static Mutex<VecDeque<String>> {
    static RING: OnceLock<Mutex<VecDeque<String>>> = OnceLock::new();
    RING.get_or_init(|| Mutex::new(VecDeque::with_capacity(CAPACITY)))
}

/// A `tracing_subscriber` writer appending complete lines to the ring.
#[derive(Default)]
pub struct RingWriter {
    buf: Vec<u8>,
}

impl Write for RingWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RingWriter {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.buf);
        let Ok(mut ring) = ring().lock() else { return };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            push_locked(&mut ring, line.to_string());
        }
    }
}

fn push_locked(ring: &mut VecDeque<String>, line: String) {
    if ring.len() == CAPACITY {
        ring.pop_front();
    }
    ring.push_back(line);
}

/// Adds one line of the demo's own (not a log record) to the ring.
pub fn push(line: String) {
    if let Ok(mut ring) = ring().lock() {
        push_locked(&mut ring, line);
    }
}

/// The last `n` captured lines, oldest first.
pub fn last(n: usize) -> Vec<String> {
    match ring().lock() {
        Ok(ring) => ring.iter().skip(ring.len().saturating_sub(n)).cloned().collect(),
        Err(_) => Vec::new(),
    }
}
