//! Values handed out from a range — Services' cluster IPs and node ports — and the
//! reservations that keep two writes from being given the same value.
//!
//! Invariant: a value is never handed out while an object has it (the caller passes the values
//! in use as a watch cache that has caught up with the storage shows them) or while an earlier
//! allocation may not be visible there yet: a reservation is kept until the cache has reached the
//! revision that stored its write, dropped when the write failed, and forgotten a minute after a
//! write that never reported back.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a value given to a write that never reported back stays reserved.
const PENDING: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
enum Reservation {
    /// Given to a write not answered yet.
    Pending(Instant),
    /// Stored at this revision.
    Written(u64),
}

/// The values `first..first + count`, handed out at random.
#[derive(Debug)]
pub struct Reservations {
    first: u32,
    count: u32,
    reserved: Mutex<HashMap<u32, Reservation>>,
}

impl Reservations {
    /// Reservations of the `count` values from `first`.
    pub fn new(first: u32, count: u32) -> Self {
        Reservations { first, count, reserved: Mutex::new(HashMap::new()) }
    }

    /// Whether `v` is in the range.
    pub fn contains(&self, v: u32) -> bool {
        (self.first..self.first + self.count).contains(&v)
    }

    fn prune(reserved: &mut HashMap<u32, Reservation>, cache_rv: u64) {
        reserved.retain(|_, r| match r {
            Reservation::Pending(at) => at.elapsed() < PENDING,
            Reservation::Written(rev) => *rev > cache_rv,
        });
    }

    /// A free value, given the values in use at the cache's revision `cache_rv`; None when the
    /// range is full.
    pub fn allocate(&self, used: &HashSet<u32>, cache_rv: u64) -> Option<u32> {
        let mut reserved = self.reserved.lock();
        Self::prune(&mut reserved, cache_rv);
        let start = rand::random_range(0..self.count);
        let v = (0..self.count)
            .map(|i| self.first + (start + i) % self.count)
            .find(|v| !used.contains(v) && !reserved.contains_key(v))?;
        reserved.insert(v, Reservation::Pending(Instant::now()));
        Some(v)
    }

    /// Claims a value a write asked for: false when it is in use or reserved.
    pub fn claim(&self, v: u32, used: &HashSet<u32>, cache_rv: u64) -> bool {
        let mut reserved = self.reserved.lock();
        Self::prune(&mut reserved, cache_rv);
        if used.contains(&v) || reserved.contains_key(&v) {
            return false;
        }
        reserved.insert(v, Reservation::Pending(Instant::now()));
        true
    }

    /// The write given `v` was stored at revision `rev`.
    pub fn written(&self, v: u32, rev: u64) {
        self.reserved.lock().insert(v, Reservation::Written(rev));
    }

    /// The write given `v` failed: the value is free again.
    pub fn release(&self, v: u32) {
        self.reserved.lock().remove(&v);
    }
}

/// Values one write reserved: given back when it is dropped, unless the write stored them.
pub struct Claimed<'a> {
    reservations: &'a Reservations,
    values: Vec<u32>,
}

impl<'a> Claimed<'a> {
    /// The `values` a write reserved in `reservations`.
    pub fn new(reservations: &'a Reservations, values: Vec<u32>) -> Self {
        Claimed { reservations, values }
    }

    /// The write stored its values at revision `rev`.
    pub fn stored(mut self, rev: u64) {
        for v in self.values.drain(..) {
            self.reservations.written(v, rev);
        }
    }
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        for v in self.values.drain(..) {
            self.reservations.release(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_distinct_in_range_and_reserved_until_the_cache_sees_them() {
        let r = Reservations::new(30000, 100);
        let none = HashSet::new();
        let mut seen = HashSet::new();
        for _ in 0..100 {
            let v = r.allocate(&none, 0).unwrap();
            assert!(r.contains(v), "{v}");
            assert!(seen.insert(v), "{v} given twice");
        }
        assert_eq!(r.allocate(&none, 0), None, "the range is full");
        let r = Reservations::new(30000, 100);
        assert!(!r.claim(30010, &[30010].into_iter().collect(), 0));
        assert!(r.claim(30010, &none, 0));
        assert!(!r.claim(30010, &none, 0), "claimed twice");
        r.written(30010, 7);
        assert!(!r.claim(30010, &none, 6), "the cache has not seen it yet");
        assert!(r.claim(30010, &none, 7), "the cache decides once it has seen the write");
        r.release(30010);
        assert!(r.claim(30010, &none, 7));
        // A write that fails gives back what it claimed; one that is stored keeps it.
        let r = Reservations::new(30000, 100);
        assert!(r.claim(30001, &none, 0) && r.claim(30002, &none, 0));
        drop(Claimed::new(&r, vec![30001]));
        assert!(r.claim(30001, &none, 0), "given back");
        Claimed::new(&r, vec![30002]).stored(9);
        assert!(!r.claim(30002, &none, 8), "kept until the cache has seen revision 9");
    }
}
