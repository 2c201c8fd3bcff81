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
//! next sweep of their shard. A shard is swept when it has grown to twice what it held after its
//! last sweep, and every shard is swept after as many interns as the table holds entries (so
//! fragments of deleted objects go within that many later interns, whichever shards those hit),
//! each time plus a small floor. A sweep scans a shard once and shrinks it, so sweeps cost
//! amortized O(1) per intern. A table nobody interns into keeps its dropped fragments until
//! interning resumes.
//!
//! Decoded values: a fragment that many objects hold keeps, once a typed decode asked for it, its
//! bytes decoded as a `serde_json::Value`, which typed decodes copy instead of parsing the bytes
//! again (see [`super::substitute`]). A decoded field set takes about ten times its JSON, so only
//! fragments held by at least [`DECODED_MIN_HOLDERS`] objects keep one (at most a tenth of the
//! JSON's size again per holder of the fragment; the W1 pods' two sets are held by all 10,000),
//! and only when it nests no deeper than a field set may inside a whole document.
//!
//! Invariants: a fragment's bytes never change; a decoded value, once set, is those bytes decoded; while two live fragments have equal bytes they
//! were returned by the same table entry (so equal content is stored once); lookups compare the
//! whole bytes, never the hash alone.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, OnceLock};

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

/// Holders (objects) a fragment needs before it keeps its decoded value.
pub(crate) const DECODED_MIN_HOLDERS: usize = 16;

/// A shared, immutable run of JSON bytes (one allocation: the header, then the bytes).
#[derive(Clone)]
pub(crate) struct Fragment(ThinArc<Meta, u8>);

/// The fixed part of a fragment's allocation.
struct Meta {
    hash: u64,
    /// The bytes decoded (`None`: they are not JSON), once asked for.
    decoded: OnceLock<Option<Box<serde_json::Value>>>,
}

impl Fragment {
    /// The fragment's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0.slice
    }

    /// The bytes decoded as JSON, when this fragment is held widely enough to keep them so
    /// (decoded on the first call; see the module docs).
    pub(crate) fn decoded(&self) -> Option<&serde_json::Value> {
        let decoded = &self.0.header.header.decoded;
        if let Some(v) = decoded.get() {
            return v.as_deref();
        }
        // The table holds one reference, every holder one, `self` is one of them.
        if ThinArc::strong_count(&self.0) <= DECODED_MIN_HOLDERS {
            return None;
        }
        decoded
            .get_or_init(|| {
                let v: serde_json::Value = serde_json::from_slice(self.bytes()).ok()?;
                // Deeper sets would decode here but not inside a whole document (serde_json's
                // nesting limit counts the four levels above a field set): never substituted.
                (nesting(&v) <= super::substitute::MAX_NESTING).then(|| Box::new(v))
            })
            .as_deref()
    }

    /// Whether both handles share one allocation.
    #[cfg(test)]
    pub(crate) fn ptr_eq(&self, other: &Fragment) -> bool {
        std::ptr::eq(self.0.slice.as_ptr(), other.0.slice.as_ptr())
    }
}

/// How many arrays and objects deep `v` is (a scalar is 0).
fn nesting(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Array(a) => 1 + a.iter().map(nesting).max().unwrap_or(0),
        serde_json::Value::Object(m) => 1 + m.values().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

#[derive(Default)]
struct Shard {
    table: HashTable<ThinArc<Meta, u8>>,
    /// Entries left after the last sweep.
    live: usize,
}

struct Table {
    hasher: foldhash::quality::RandomState,
    shards: [Mutex<Shard>; SHARDS],
    /// Entries in all shards (changed under the shard's lock).
    entries: AtomicUsize,
    /// Interns since every shard was last swept.
    interns: AtomicUsize,
}

static TABLE: LazyLock<Table> = LazyLock::new(|| Table {
    hasher: foldhash::quality::RandomState::default(),
    shards: std::array::from_fn(|_| Mutex::new(Shard::default())),
    entries: AtomicUsize::new(0),
    interns: AtomicUsize::new(0),
});

/// The shared fragment holding exactly `bytes` (stored now if no live one does).
pub(crate) fn intern(bytes: &[u8]) -> Fragment {
    let t = &*TABLE;
    let n = t.interns.fetch_add(1, Ordering::Relaxed) + 1;
    // Of the callers that see the count past the limit, the first to reset it sweeps.
    if n > t.entries.load(Ordering::Relaxed) + SWEEP_FLOOR * SHARDS && t.interns.swap(0, Ordering::Relaxed) >= n {
        for shard in &t.shards {
            sweep(t, &mut shard.lock());
        }
    }
    let hash = t.hasher.hash_one(bytes);
    // Bits 40 to 43 pick the shard; hashbrown uses the low bits and the top seven.
    let mut shard = t.shards[(hash >> 40) as usize % SHARDS].lock();
    if let Some(found) = shard.table.find(hash, |f| f.slice == *bytes) {
        return Fragment(found.clone());
    }
    if shard.table.len() >= 2 * shard.live + SWEEP_FLOOR {
        sweep(t, &mut shard);
    }
    let f = ThinArc::from_header_and_slice(Meta { hash, decoded: OnceLock::new() }, bytes);
    shard.table.insert_unique(hash, f.clone(), |f| f.header.header.hash);
    t.entries.fetch_add(1, Ordering::Relaxed);
    Fragment(f)
}

/// Drops the entries only the table holds (no object refers to them any more) and gives back
/// the room they took.
fn sweep(t: &Table, shard: &mut Shard) {
    let before = shard.table.len();
    shard.table.retain(|f| ThinArc::strong_count(f) > 1);
    shard.table.shrink_to(2 * shard.table.len() + SWEEP_FLOOR, |f| f.header.header.hash);
    shard.live = shard.table.len();
    t.entries.fetch_sub(before - shard.live, Ordering::Relaxed);
}

/// Whether the table has an entry (live or awaiting a sweep) with exactly these bytes, for tests.
#[cfg(test)]
fn has_entry(bytes: &[u8]) -> bool {
    let t = &*TABLE;
    let hash = t.hasher.hash_one(bytes);
    t.shards[(hash >> 40) as usize % SHARDS].lock().table.find(hash, |f| f.slice == *bytes).is_some()
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
    fn fragments_of_dropped_objects_go_after_later_interns_even_without_growth() {
        // Other tests share the table (and run in parallel): only this test's contents are checked.
        let mass = |i: usize| format!("{{\"mass-{i:05}\":{}}}", "z".repeat(80)).into_bytes();
        let many: Vec<Fragment> = (0..20_000).map(|i| intern(&mass(i))).collect();
        drop(many);
        assert!(has_entry(&mass(7)), "not swept before any later intern");
        // Interning one content again and again adds nothing to the table (one shard), yet the
        // dropped fragments, in every shard, must go.
        let kept = intern(format!("{{\"steady\":{}}}", "s".repeat(80)).as_bytes());
        let mut rounds = 0;
        while (0..20_000).any(|i| has_entry(&mass(i))) {
            for _ in 0..1000 {
                assert!(intern(kept.bytes()).ptr_eq(&kept));
            }
            rounds += 1;
            assert!(rounds <= 100, "dropped fragments still in the table after {rounds}k interns");
        }
        assert!(has_entry(kept.bytes()), "a held fragment stays");
    }

    #[test]
    fn only_widely_held_fragments_keep_their_decoded_value() {
        let bytes = br#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"unit-test":"decoded-when-widely-held"}"#;
        let mut holders = vec![intern(bytes)];
        while holders.len() < DECODED_MIN_HOLDERS {
            assert!(holders[0].decoded().is_none(), "{} holders", holders.len());
            holders.push(intern(bytes));
        }
        let want: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(holders[0].decoded(), Some(&want));
        holders.truncate(1);
        assert_eq!(holders[0].decoded(), Some(&want), "kept once decoded");
        // Bytes that are not JSON (a skipped string is not UTF-8 checked) have no decoded value.
        let bad = b"{\"unit-test\":\"not-utf8-\xff-padding-padding-padding-padding-padding-padding\"}";
        let held: Vec<Fragment> = (0..=DECODED_MIN_HOLDERS).map(|_| intern(bad)).collect();
        assert!(held[0].decoded().is_none());
    }

    #[test]
    fn fragments_nothing_holds_are_swept_and_held_ones_stay() {
        let held_bytes = |i: usize| format!("{{\"held-{i:04}\":{}}}", "x".repeat(80)).into_bytes();
        let dropped = |i: usize| format!("{{\"dropped-{i:05}\":{}}}", "y".repeat(80)).into_bytes();
        let held: Vec<Fragment> = (0..100).map(|i| intern(&held_bytes(i))).collect();
        // Far more dropped fragments than any shard's growth threshold: most are swept by the
        // time the last ones are interned.
        for i in 0..20_000 {
            drop(intern(&dropped(i)));
        }
        let left = (0..20_000).filter(|&i| has_entry(&dropped(i))).count();
        assert!(left < 10_000, "dropped fragments were not swept: {left} of 20,000 left");
        for (i, f) in held.iter().enumerate() {
            assert!(intern(&held_bytes(i)).ptr_eq(f), "a held fragment survives every sweep");
        }
    }
}
