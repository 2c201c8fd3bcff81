//! Criterion micro-benchmarks of the hot path: decoding (head scan of an object, a watch event
//! line, the typed decode against serde_json's, a LIST page fed in chunks), store upserts with
//! two indexes, index queries, RealFifo push/pop, and delta dispatch to a handler.
//!
//! Run: `cargo bench -p informer --bench cache`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use informer::decode::{EventDecoder, ListDecoder};
use informer::{Delta, HandlerFns, Indexer, Indexers, Object, RealFifo, process_deltas};
use k8s_openapi::api::core::v1::Pod;

fn pod_json(i: usize) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_str(include_str!("../../apiserver/data/w1-pod.json")).unwrap();
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

fn decode(c: &mut Criterion) {
    let json = pod_json(1);
    let line = [&br#"{"type":"MODIFIED","object":"#[..], &json, b"}\n"].concat();
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes(json.len() as u64));
    g.bench_function("object_head_scan", |b| b.iter(|| Object::<Pod>::from_json(black_box(&json[..])).unwrap()));
    g.bench_function("watch_event_line", |b| {
        let mut d = EventDecoder::<Pod>::new(1 << 24, None);
        b.iter(|| {
            d.push(black_box(&line));
            black_box(d.next_event().unwrap().unwrap())
        })
    });
    g.bench_function("serde_json_typed_pod", |b| b.iter(|| serde_json::from_slice::<Pod>(black_box(&json)).unwrap()));
    // serde_json from text already checked as UTF-8 (no check per string).
    let text = std::str::from_utf8(&json).unwrap();
    g.bench_function("serde_json_typed_pod_from_str", |b| {
        b.iter(|| serde_json::from_str::<Pod>(black_box(text)).unwrap())
    });
    // The informer's typed decode (one UTF-8 check, then the typed decoder over the scanner's
    // structurals, serde_json where it falls back).
    let obj = Object::<Pod>::from_json(&json[..]).unwrap();
    g.bench_function("object_typed_pod", |b| b.iter(|| black_box(&obj).decode().unwrap()));
    // The same with its managedFields field sets held by other objects too (as every pod of a
    // ReplicaSet holds its controller's set): they are copied decoded instead of parsed.
    let others: Vec<Object<Pod>> = (2..20).map(|i| Object::from_json(pod_json(i)).unwrap()).collect();
    g.bench_function("object_typed_pod_field_sets_shared", |b| b.iter(|| black_box(&obj).decode().unwrap()));
    drop(others);
    // A 500-pod LIST page fed in 16 KiB chunks, as it comes off the connection.
    let page = list_page(500);
    g.throughput(Throughput::Bytes(page.len() as u64));
    g.bench_function("list_page_500_chunked", |b| {
        b.iter(|| {
            let mut d = ListDecoder::<Pod>::new(1 << 24);
            for c in black_box(&page).chunks(16 << 10) {
                d.feed(c).unwrap();
            }
            d.finish().unwrap()
        })
    });
    g.finish();
}

fn list_page(n: usize) -> Vec<u8> {
    let mut page =
        br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1000","continue":"x"},"items":["#
            .to_vec();
    for i in 0..n {
        if i > 0 {
            page.push(b',');
        }
        page.extend_from_slice(&pod_json(i));
    }
    page.extend_from_slice(b"]}");
    page
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
        let q = RealFifo::<Pod>::new(Default::default());
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

criterion_group!(benches, decode, store, fifo_and_dispatch);
criterion_main!(benches);
