//! Criterion micro-benchmarks of the cache's hot path: store upserts with two indexes, index
//! queries, RealFifo push/pop, and delta dispatch to a handler (decoding is measured by
//! `informer-object`'s `decode` benchmark).
//!
//! Run: `cargo bench -p informer --bench cache`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use informer::fifo::RealFifoOptions;
use informer::{Delta, HandlerFns, Indexer, Indexers, Object, RealFifo, process_deltas};
use k8s_openapi::api::core::v1::Pod;

fn pod_json(i: usize) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_str(include_str!("../../bench/data/w1-pod.json")).unwrap();
    v["metadata"]["name"] = format!("bench-{i:07}").into();
    v["metadata"]["labels"]["app"] = format!("app-{}", i % 50).into();
    v["metadata"]["resourceVersion"] = (1000 + i).to_string().into();
    serde_json::to_vec(&v).unwrap()
}

fn indexers() -> Indexers<Pod> {
    Indexers::new()
        .with_namespace_index()
        .with("app", |o: &Object<Pod>| Ok(o.label("app").map(|a| vec![a.to_string()]).unwrap_or_default()))
}

fn store(c: &mut Criterion) {
    let objs: Vec<Object<Pod>> = (0..10_000).map(|i| Object::from_json(pod_json(i)).unwrap()).collect();
    let store = Indexer::new(indexers());
    for o in &objs {
        store.add(o.clone()).unwrap();
    }
    let mut g = c.benchmark_group("store");
    g.throughput(Throughput::Elements(1));
    let mut i = 0;
    g.bench_function("upsert_2_indexes", |b| {
        b.iter(|| {
            i = (i + 1) % objs.len();
            black_box(store.upsert(objs[i].clone()).unwrap())
        })
    });
    g.bench_function("by_index_200_of_10k", |b| b.iter(|| black_box(store.by_index("app", "app-7").unwrap().len())));
    g.bench_function("get_by_key", |b| b.iter(|| black_box(store.get_by_key("default/bench-0004242"))));
    g.finish();
}

fn fifo_and_dispatch(c: &mut Criterion) {
    let objs: Vec<Object<Pod>> = (0..1000).map(|i| Object::from_json(pod_json(i)).unwrap()).collect();
    let mut g = c.benchmark_group("fifo");
    g.throughput(Throughput::Elements(objs.len() as u64));
    g.bench_function("realfifo_push_pop_1000", |b| {
        // Unbounded: the iteration queues all 1,000 before it pops (a bounded queue would wait
        // for a consumer).
        let q = RealFifo::<Pod>::new(RealFifoOptions { capacity: 0, ..Default::default() });
        q.replace_blocking(vec![], "1").unwrap();
        b.iter(|| {
            for o in &objs {
                q.update_blocking(o.clone()).unwrap();
            }
            let mut n = 0;
            while n < objs.len() {
                n += q.pop_blocking(512, |batch, _| batch.len()).unwrap();
            }
        })
    });
    g.bench_function("dispatch_1000_updates", |b| {
        let store = Indexer::new(indexers());
        let handler = HandlerFns::<Pod>::new().on_update(|_, n| {
            black_box(n.key());
        });
        b.iter(|| {
            let deltas: Vec<Delta<Pod>> = objs.iter().map(|o| Delta::Updated(o.clone())).collect();
            process_deltas(&handler, &store, deltas, false);
        })
    });
    g.finish();
}

criterion_group!(benches, store, fifo_and_dispatch);
criterion_main!(benches);
