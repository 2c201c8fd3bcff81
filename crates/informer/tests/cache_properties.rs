//! Property tests: random add/update/delete/replace/resync/bookmark streams, interleaved with
//! partial drains, through each queue into an [`Indexer`] with client-go's processDeltas
//! semantics (reference: client-go-semantics.md §2, §4.2), checked against a BTreeMap model:
//!
//! - after a full drain the store equals the model;
//! - per key, delivered resourceVersions never go backwards (in-order delivery per key);
//! - `has_synced` is false until the last initial entry has been processed (also while it is
//!   being processed), true right after; `is_in_initial_list` is true exactly for initial entries;
//! - RealFifo atomic: the store's resourceVersion ends at the stream's last resourceVersion.

use std::collections::BTreeMap;
use std::sync::Arc;

use informer::fifo::{DeltaFifoOptions, KnownObjects, Queue, RealFifoOptions};
use informer::{DeletedObject, Delta, DeltaFifo, Indexer, Indexers, Object, RealFifo};
use k8s_openapi::api::core::v1::ConfigMap;
use proptest::prelude::*;
use serde_json::json;

type Obj = Object<ConfigMap>;

const KEYS: u8 = 6;

fn obj(key: u8, rv: u64) -> Obj {
    Object::from_json(
        serde_json::to_vec(
            &json!({"metadata": {"name": format!("k{key}"), "namespace": "ns", "resourceVersion": rv.to_string()}}),
        )
        .unwrap(),
    )
    .unwrap()
}

fn rv_of(o: &Obj) -> u64 {
    o.resource_version().unwrap().parse().unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    /// ADDED if absent, MODIFIED if present.
    Upsert(u8),
    /// DELETED (also for absent keys: a delete the queue may see for a key it never had).
    Delete(u8),
    /// A relist: per key 0 = absent, 1 = unchanged (or new if absent), 2 = modified.
    Replace(Vec<u8>),
    Resync,
    Bookmark,
    /// Pop up to `n` times, each a batch of at most `max`.
    Pop(u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..KEYS).prop_map(Op::Upsert),
        2 => (0..KEYS).prop_map(Op::Delete),
        1 => prop::collection::vec(0u8..3, KEYS as usize).prop_map(Op::Replace),
        1 => Just(Op::Resync),
        1 => Just(Op::Bookmark),
        3 => (1u8..5, 1u8..4).prop_map(|(n, max)| Op::Pop(n, max)),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    RealAtomic,
    RealNonAtomic,
    Delta,
}

/// The simulated API server: current objects and a resourceVersion counter.
struct Model {
    objects: BTreeMap<u8, u64>,
    rv: u64,
    /// The last resourceVersion the stream carried (object, delete, list or bookmark).
    stream_rv: u64,
}

impl Model {
    fn next(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn relist(&mut self, choice: &[u8]) -> (Vec<Obj>, String) {
        let mut list = Vec::new();
        let mut next = BTreeMap::new();
        for (k, c) in choice.iter().enumerate() {
            let k = k as u8;
            let rv = match (c, self.objects.get(&k)) {
                (0, _) => continue,
                (1, Some(rv)) => *rv,
                _ => self.next(),
            };
            next.insert(k, rv);
            list.push(obj(k, rv));
        }
        self.objects = next;
        let rv = self.next();
        self.stream_rv = rv;
        (list, rv.to_string())
    }
}

/// The consumer: processDeltas into the store, checking per-key resourceVersion order.
struct Consumer {
    store: Arc<Indexer<ConfigMap>>,
    last_seen: BTreeMap<String, u64>,
}

impl Consumer {
    fn seen(&mut self, o: &Obj) {
        let rv = rv_of(o);
        let last = self.last_seen.entry(o.key().to_string()).or_insert(0);
        assert!(rv >= *last, "{}: resourceVersion went backwards: {rv} after {last}", o.key());
        *last = rv;
    }

    fn process(&mut self, deltas: &[Delta<ConfigMap>]) {
        for d in deltas {
            match d {
                Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => {
                    self.seen(o);
                    // processDeltas: Update if present else Add (identical for the Indexer).
                    if self.store.get(o).is_some() {
                        self.store.update(o.clone()).unwrap();
                    } else {
                        self.store.add(o.clone()).unwrap();
                    }
                }
                Delta::Deleted(DeletedObject::Object(o)) => {
                    self.seen(o);
                    self.store.delete(o);
                }
                Delta::Deleted(DeletedObject::FinalStateUnknown(t)) => {
                    if let Some(o) = &t.last_known {
                        self.seen(o);
                    }
                    self.store.delete_key(t.key.as_str());
                }
                Delta::ReplacedAll { objects, resource_version } => {
                    for o in objects {
                        self.seen(o);
                    }
                    self.store.replace(objects.clone(), resource_version).unwrap();
                }
                Delta::SyncAll => {}
                Delta::Bookmark { resource_version } => self.store.bookmark(resource_version),
            }
        }
    }
}

/// Sync bookkeeping expected from the test's side.
struct SyncCheck {
    initial_count: usize,
    popped: usize,
}

async fn pop_once<Q: Queue<ConfigMap>>(
    q: &Arc<Q>,
    kind: Kind,
    max: usize,
    consumer: &mut Consumer,
    sync: &mut SyncCheck,
) {
    let qq = q.clone();
    let (entries, initial, synced_during) = q
        .pop(max, |ds, initial| {
            consumer.process(&ds);
            let entries = if kind == Kind::Delta { 1 } else { ds.len() };
            (entries, initial, qq.has_synced())
        })
        .await
        .expect("queue is open");
    let before = sync.popped;
    sync.popped += entries;
    assert_eq!(initial, before < sync.initial_count, "is_in_initial_list for entries {before}..{}", sync.popped);
    if initial {
        assert!(!synced_during, "has_synced while an initial entry is being processed");
        assert!(sync.popped <= sync.initial_count, "a batch crossed the initial-list boundary");
    }
    assert_eq!(q.has_synced(), sync.popped >= sync.initial_count, "has_synced after {} entries", sync.popped);
}

async fn run<Q: Queue<ConfigMap>>(
    q: Arc<Q>,
    store: Arc<Indexer<ConfigMap>>,
    kind: Kind,
    initial: Vec<u8>,
    ops: Vec<Op>,
) {
    let mut model = Model { objects: BTreeMap::new(), rv: 0, stream_rv: 0 };
    let mut consumer = Consumer { store, last_seen: BTreeMap::new() };

    // The initial list.
    let (list, rv) = model.relist(&initial);
    let initial_count = match kind {
        Kind::RealAtomic => 1,
        Kind::RealNonAtomic | Kind::Delta => list.len(),
    };
    q.replace(list, &rv).await.unwrap();
    let mut sync = SyncCheck { initial_count, popped: 0 };
    assert_eq!(q.has_synced(), initial_count == 0, "has_synced right after the initial replace");

    for op in ops {
        match op {
            Op::Upsert(k) => {
                let rv = model.next();
                model.stream_rv = rv;
                if model.objects.insert(k, rv).is_some() {
                    q.update(obj(k, rv)).await.unwrap();
                } else {
                    q.add(obj(k, rv)).await.unwrap();
                }
            }
            Op::Delete(k) => {
                let rv = model.next();
                model.stream_rv = rv;
                model.objects.remove(&k);
                q.delete(obj(k, rv)).await.unwrap();
            }
            Op::Replace(choice) => {
                let (list, rv) = model.relist(&choice);
                q.replace(list, &rv).await.unwrap();
            }
            Op::Resync => q.resync().await.unwrap(),
            Op::Bookmark => {
                let rv = model.next();
                if kind == Kind::RealAtomic {
                    model.stream_rv = rv;
                }
                q.bookmark(&rv.to_string()).await.unwrap();
            }
            Op::Pop(n, max) => {
                for _ in 0..n {
                    if q.is_empty() {
                        break;
                    }
                    pop_once(&q, kind, max as usize, &mut consumer, &mut sync).await;
                }
            }
        }
        if sync.popped < sync.initial_count {
            assert!(!q.has_synced(), "synced before the initial list was consumed");
        }
    }
    while !q.is_empty() {
        pop_once(&q, kind, 3, &mut consumer, &mut sync).await;
    }
    assert!(q.has_synced(), "a drained queue has synced");

    let got: BTreeMap<String, u64> = consumer.store.list().iter().map(|o| (o.key().to_string(), rv_of(o))).collect();
    let want: BTreeMap<String, u64> = model.objects.iter().map(|(k, rv)| (format!("ns/k{k}"), *rv)).collect();
    assert_eq!(got, want, "store after the drain differs from the model");
    if kind == Kind::RealAtomic {
        assert_eq!(
            consumer.store.last_resource_version(),
            Some(model.stream_rv.to_string()),
            "atomic mode: the store's resourceVersion is the stream's"
        );
    }
    q.close();
    assert!(q.pop(1, |_, _| ()).await.is_err());
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
}

fn initial_list() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(0u8..3, KEYS as usize)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn real_fifo_atomic_matches_model(initial in initial_list(), ops in prop::collection::vec(op(), 0..60)) {
        let store = Arc::new(Indexer::new(Indexers::new().with_namespace_index()));
        let q = Arc::new(RealFifo::new(RealFifoOptions { capacity: 0, ..Default::default() }));
        block_on(run(q, store, Kind::RealAtomic, initial, ops));
    }

    #[test]
    fn real_fifo_non_atomic_matches_model(initial in initial_list(), ops in prop::collection::vec(op(), 0..60)) {
        let store = Arc::new(Indexer::new(Indexers::new().with_namespace_index()));
        let q = Arc::new(RealFifo::new(RealFifoOptions {
            atomic: false,
            known_objects: Some(store.clone() as Arc<dyn KnownObjects<ConfigMap>>),
            capacity: 0,
            ..Default::default()
        }));
        block_on(run(q, store, Kind::RealNonAtomic, initial, ops));
    }

    #[test]
    fn delta_fifo_matches_model(initial in initial_list(), ops in prop::collection::vec(op(), 0..60), emit_replaced: bool) {
        let store = Arc::new(Indexer::new(Indexers::new().with_namespace_index()));
        let q = Arc::new(DeltaFifo::new(DeltaFifoOptions {
            known_objects: Some(store.clone() as Arc<dyn KnownObjects<ConfigMap>>),
            emit_replaced,
            ..Default::default()
        }));
        block_on(run(q, store, Kind::Delta, initial, ops));
    }
}

/// The producer side of a concurrent run: applies `ops` (pops excluded) to the queue from its own
/// thread and returns the final model.
async fn produce<Q: Queue<ConfigMap>>(q: Arc<Q>, kind: Kind, mut model: Model, ops: Vec<Op>) -> Model {
    for op in ops {
        match op {
            Op::Upsert(k) => {
                let rv = model.next();
                model.stream_rv = rv;
                if model.objects.insert(k, rv).is_some() {
                    q.update(obj(k, rv)).await.unwrap();
                } else {
                    q.add(obj(k, rv)).await.unwrap();
                }
            }
            Op::Delete(k) => {
                let rv = model.next();
                model.stream_rv = rv;
                model.objects.remove(&k);
                q.delete(obj(k, rv)).await.unwrap();
            }
            Op::Replace(choice) => {
                let (list, rv) = model.relist(&choice);
                q.replace(list, &rv).await.unwrap();
            }
            Op::Resync => q.resync().await.unwrap(),
            Op::Bookmark => {
                let rv = model.next();
                if kind == Kind::RealAtomic {
                    model.stream_rv = rv;
                }
                q.bookmark(&rv.to_string()).await.unwrap();
            }
            Op::Pop(..) => tokio::task::yield_now().await,
        }
    }
    model
}

struct CloseOnDrop<Q: Queue<ConfigMap>>(Arc<Q>);

impl<Q: Queue<ConfigMap>> Drop for CloseOnDrop<Q> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Producer and consumer on separate threads (the consumer pops batches and applies them with
/// processDeltas while the producer keeps writing, relisting and resyncing); same checks as the
/// sequential runs.
fn run_concurrently<Q: Queue<ConfigMap>>(
    q: Arc<Q>,
    store: Arc<Indexer<ConfigMap>>,
    kind: Kind,
    initial: Vec<u8>,
    ops: Vec<Op>,
) {
    let mut model = Model { objects: BTreeMap::new(), rv: 0, stream_rv: 0 };
    let (list, rv) = model.relist(&initial);
    let initial_count = if kind == Kind::RealAtomic { 1 } else { list.len() };
    block_on(q.replace(list, &rv)).unwrap();

    let producer = {
        let q = q.clone();
        std::thread::spawn(move || block_on(produce(q, kind, model, ops)))
    };
    let consumer = {
        let q = q.clone();
        std::thread::spawn(move || {
            // If a check fails here, close the queue so that a producer waiting on a full queue
            // fails too instead of hanging the test.
            let _close_on_panic = CloseOnDrop(q.clone());
            let mut consumer = Consumer { store, last_seen: BTreeMap::new() };
            let mut sync = SyncCheck { initial_count, popped: 0 };
            block_on(async {
                loop {
                    let qq = q.clone();
                    let r = q
                        .pop(3, |ds, initial| {
                            consumer.process(&ds);
                            (if kind == Kind::Delta { 1 } else { ds.len() }, initial, qq.has_synced())
                        })
                        .await;
                    let Ok((entries, initial, synced_during)) = r else { break };
                    let before = sync.popped;
                    sync.popped += entries;
                    assert_eq!(initial, before < sync.initial_count, "is_in_initial_list");
                    if initial {
                        assert!(!synced_during, "has_synced while an initial entry is being processed");
                        assert!(sync.popped <= sync.initial_count, "a batch crossed the initial-list boundary");
                    }
                    assert_eq!(q.has_synced(), sync.popped >= sync.initial_count);
                }
            });
            consumer.store
        })
    };
    let model = producer.join().expect("producer");
    q.close();
    let store = consumer.join().expect("consumer");
    assert!(q.has_synced());
    let got: BTreeMap<String, u64> = store.list().iter().map(|o| (o.key().to_string(), rv_of(o))).collect();
    let want: BTreeMap<String, u64> = model.objects.iter().map(|(k, rv)| (format!("ns/k{k}"), *rv)).collect();
    assert_eq!(got, want, "store after the drain differs from the model");
    if kind == Kind::RealAtomic {
        assert_eq!(store.last_resource_version(), Some(model.stream_rv.to_string()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn concurrent_real_fifo_atomic(initial in initial_list(), ops in prop::collection::vec(op(), 0..300), capacity in 1usize..6) {
        let store = Arc::new(Indexer::new(Indexers::new().with_namespace_index()));
        let q = Arc::new(RealFifo::new(RealFifoOptions { capacity, ..Default::default() }));
        run_concurrently(q, store, Kind::RealAtomic, initial, ops);
    }

    #[test]
    fn concurrent_real_fifo_non_atomic(initial in initial_list(), ops in prop::collection::vec(op(), 0..300), capacity in 1usize..6) {
        let store = Arc::new(Indexer::new(Indexers::new().with_namespace_index()));
        let q = Arc::new(RealFifo::new(RealFifoOptions {
            atomic: false,
            known_objects: Some(store.clone() as Arc<dyn KnownObjects<ConfigMap>>),
            capacity,
            ..Default::default()
        }));
        run_concurrently(q, store, Kind::RealNonAtomic, initial, ops);
    }

    #[test]
    fn concurrent_delta_fifo(initial in initial_list(), ops in prop::collection::vec(op(), 0..300)) {
        let store = Arc::new(Indexer::new(Indexers::new().with_namespace_index()));
        let q = Arc::new(DeltaFifo::new(DeltaFifoOptions {
            known_objects: Some(store.clone() as Arc<dyn KnownObjects<ConfigMap>>),
            ..Default::default()
        }));
        run_concurrently(q, store, Kind::Delta, initial, ops);
    }
}
