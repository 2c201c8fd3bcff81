//! Criterion benchmarks of the contract's hot paths on the W1 pod: building an [`Object`] (head
//! scan), framing a watch event line, the typed decode against serde_json's (with the pod's field
//! sets parsed, and shared by other objects), and a LIST page framed from 16 KiB chunks.
//!
//! Run: `cargo bench -p informer-object --bench decode`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use informer_object::Object;
use informer_object::frame::{ListFramer, WatchFramer};
use k8s_openapi::api::core::v1::Pod;

fn pod_json(i: usize) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_str(include_str!("../../bench/data/w1-pod.json")).unwrap();
    v["metadata"]["name"] = format!("bench-{i:07}").into();
    v["metadata"]["labels"]["app"] = format!("app-{}", i % 50).into();
    v["metadata"]["resourceVersion"] = (1000 + i).to_string().into();
    serde_json::to_vec(&v).unwrap()
}

fn decode(c: &mut Criterion) {
    let json = pod_json(1);
    let line = [&br#"{"type":"MODIFIED","object":"#[..], &json, b"}\n"].concat();
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes(json.len() as u64));
    g.bench_function("object_head_scan", |b| b.iter(|| Object::<Pod>::from_json(black_box(&json[..])).unwrap()));
    g.bench_function("watch_event_line", |b| {
        let mut d = WatchFramer::<Pod>::new(1 << 24, None);
        b.iter(|| {
            d.push(black_box(&line));
            black_box(d.next_frame().unwrap().unwrap())
        })
    });
    g.bench_function("serde_json_typed_pod", |b| b.iter(|| serde_json::from_slice::<Pod>(black_box(&json)).unwrap()));
    // serde_json from text already checked as UTF-8 (no check per string).
    let text = std::str::from_utf8(&json).unwrap();
    g.bench_function("serde_json_typed_pod_from_str", |b| {
        b.iter(|| serde_json::from_str::<Pod>(black_box(text)).unwrap())
    });
    // The typed decode (one UTF-8 check, then the typed decoder over the scanner's
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
            let mut d = ListFramer::<Pod>::new(1 << 24);
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

criterion_group!(benches, decode);
criterion_main!(benches);
