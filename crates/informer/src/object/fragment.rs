//! Content-shared JSON fragments: large parts of objects that many objects repeat byte for byte,
//! stored once per process.
//!
//! What is shared: the `fieldsV1` value of each `metadata.managedFields` entry. Server-side apply
//! records there, for every manager, the set of fields it owns; every pod of a ReplicaSet carries
//! the same set for the controller, and every update of an object usually repeats the set of the
//! version it replaces. In the W1 pod that is 1,242 of 4,509 bytes. The cached object keeps its
//! JSON with those spans cut out plus a [`Fragment`] handle per span (see [`crate::Object`]);
//! reading the JSON splices them back, so the bytes are exactly those received.
//!
//! How: a process-wide table of fragments, sharded by hash, each shard behind its own short lock.
//! [`intern`] hashes the bytes (foldhash with a per-process random seed), and returns the stored
//! fragment with the same bytes or stores a new one. Memory: a fragment lives while an object holds
//! it; the table's own handle does not count, and entries nothing else holds are dropped at the
//! shard's next sweep, which runs when the shard has grown to twice what it held after its last
//! sweep (plus a small floor). So the table holds at most about twice the live fragments, and the
//! sweeps cost amortized O(1) per insertion.
//!
//! Invariants: a fragment's bytes never change; while two live fragments have equal bytes they
//! were returned by the same table entry (so equal content is stored once); lookups compare the
//! whole bytes, never the hash alone.

use std::hash::BuildHasher;
use std::sync::LazyLock;

use hashbrown::HashTable;
use parking_lot::Mutex;
use triomphe::ThinArc;

/// Spans shorter than this are copied into the object instead (a shared fragment costs a handle
/// of 16 bytes in the object and an entry in the table).
pub(crate) const MIN_SHARED: usize = 64;

/// Shards of the table (a power of two). Informers decode on their own tasks; sharding keeps
/// several decoding at once from waiting on one lock.
const SHARDS: usize = 16;

/// A shard is swept when it holds more than twice its last live count plus this many.
const SWEEP_FLOOR: usize = 64;

/// A shared, immutable run of JSON bytes (one allocation: the hash, then the bytes).
#[derive(Clone)]
pub(crate) struct Fragment(ThinArc<u64, u8>);

impl Fragment {
    /// The fragment's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0.slice
    }

    /// Whether both handles share one allocation.
    #[cfg(test)]
    pub(crate) fn ptr_eq(&self, other: &Fragment) -> bool {
        std::ptr::eq(self.0.slice.as_ptr(), other.0.slice.as_ptr())
    }
}

#[derive(Default)]
struct Shard {
    table: HashTable<ThinArc<u64, u8>>,
    /// Entries left after the last sweep.
    live: usize,
}

struct Table {
    hasher: foldhash::quality::RandomState,
    shards: [Mutex<Shard>; SHARDS],
}

static TABLE: LazyLock<Table> = LazyLock::new(|| Table {
    hasher: foldhash::quality::RandomState::default(),
    shards: std::array::from_fn(|_| Mutex::new(Shard::default())),
});

/// The shared fragment holding exactly `bytes` (stored now if no live one does).
pub(crate) fn intern(bytes: &[u8]) -> Fragment {
    let t = &*TABLE;
    let hash = t.hasher.hash_one(bytes);
    // The top bits pick the shard; hashbrown uses the low bits and the top seven.
    let mut shard = t.shards[(hash >> 40) as usize % SHARDS].lock();
    if let Some(found) = shard.table.find(hash, |f| f.slice == *bytes) {
        return Fragment(found.clone());
    }
    if shard.table.len() >= 2 * shard.live + SWEEP_FLOOR {
        // Only the table holds these: no object refers to them any more.
        shard.table.retain(|f| ThinArc::strong_count(f) > 1);
        shard.live = shard.table.len();
    }
    let f = ThinArc::from_header_and_slice(hash, bytes);
    shard.table.insert_unique(hash, f.clone(), |f| f.header.header);
    Fragment(f)
}

/// Entries in the table (live or awaiting a sweep), for tests.
#[cfg(test)]
pub(crate) fn table_len() -> usize {
    TABLE.shards.iter().map(|s| s.lock().table.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_bytes_share_one_fragment_and_different_bytes_do_not() {
        let a = intern(br#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"unit-test":"equal"}"#);
        let b = intern(br#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"unit-test":"equal"}"#);
        let c = intern(br#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"unit-test":"other"}"#);
        assert!(a.ptr_eq(&b));
        assert!(!a.ptr_eq(&c));
        assert_eq!(c.bytes(), br#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"unit-test":"other"}"#);
    }

    #[test]
    fn fragments_nothing_holds_are_swept_and_held_ones_stay() {
        let held: Vec<Fragment> =
            (0..100).map(|i| intern(format!("{{\"held-{i:04}\":{}}}", "x".repeat(80)).as_bytes())).collect();
        // Far more dropped fragments than any shard's sweep threshold: the table must not keep
        // them all (other tests run in parallel and add a few of their own).
        for i in 0..20_000 {
            drop(intern(format!("{{\"dropped-{i:05}\":{}}}", "y".repeat(80)).as_bytes()));
        }
        assert!(table_len() < 10_000, "dropped fragments were swept: {} entries", table_len());
        for (i, f) in held.iter().enumerate() {
            let again = intern(format!("{{\"held-{i:04}\":{}}}", "x".repeat(80)).as_bytes());
            assert!(again.ptr_eq(f), "a held fragment survives every sweep");
        }
    }
}
