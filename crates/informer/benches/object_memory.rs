//! Memory and decode cost per object: the cache's representation (`Object<Pod>`: JSON bytes plus
//! parsed identity) against a decoded k8s-openapi `Pod` and a `serde_json::Value`, for 10,000
//! pods shaped like the W1 workload (4.4 KB of JSON each, with managedFields).
//!
//! Run: `cargo bench -p informer --bench object_memory` (prints one line per representation).

mod common;

use std::time::Instant;

use informer::{Indexer, Indexers, Object};
use k8s_openapi::api::core::v1::Pod;

const N: usize = 10_000;

fn pods() -> Vec<Vec<u8>> {
    let tpl: serde_json::Value = serde_json::from_str(include_str!("../../bench/data/w1-pod.json")).unwrap();
    (0..N)
        .map(|i| {
            let mut p = tpl.clone();
            p["metadata"]["name"] = format!("bench-{i:07}").into();
            p["metadata"]["uid"] = format!("00000000-0000-0000-0000-{i:012}").into();
            p["metadata"]["resourceVersion"] = (1000 - (N - i) / 100).to_string().into();
            p["metadata"]["labels"]["app"] = format!("app-{}", i % 50).into();
            serde_json::to_vec(&p).unwrap()
        })
        .collect()
}

fn measure<T>(name: &str, jsons: &[Vec<u8>], f: impl Fn(&[u8]) -> T) -> Vec<T> {
    let before = common::live_bytes();
    let t = Instant::now();
    let out: Vec<T> = jsons.iter().map(|j| f(j)).collect();
    let secs = t.elapsed().as_secs_f64();
    let bytes = common::live_bytes() - before - (out.capacity() * std::mem::size_of::<T>()) as isize;
    println!(
        "{name:<44} {:>8.0} bytes/object  {:>9.0} objects/s",
        (bytes as f64 / N as f64) + std::mem::size_of::<T>() as f64,
        N as f64 / secs
    );
    out
}

fn main() {
    let jsons = pods();
    let avg = jsons.iter().map(|j| j.len()).sum::<usize>() / N;
    println!("W1-shaped pods: {N}, {avg} bytes of JSON each");
    let objs = measure("Object<Pod> (bytes + identity, this crate)", &jsons, |j| Object::<Pod>::from_json(j).unwrap());
    let before = common::live_bytes();
    let store: Indexer<Pod> = Indexer::new(
        Indexers::new()
            .with_namespace_index()
            .with("app", |o: &Object<Pod>| Ok(o.label("app").map(|a| vec![a.to_string()]).unwrap_or_default())),
    );
    for o in &objs {
        store.add(o.clone()).unwrap();
    }
    let store_bytes = common::live_bytes() - before;
    println!(
        "{:<44} {:>8.0} bytes/object  (map entry, key, 2 indexes)",
        "  + Indexer overhead",
        store_bytes as f64 / N as f64
    );
    drop(store);
    drop(objs);
    let typed = measure("k8s-openapi Pod (serde_json decode)", &jsons, |j| serde_json::from_slice::<Pod>(j).unwrap());
    drop(typed);
    let values = measure("serde_json::Value", &jsons, |j| serde_json::from_slice::<serde_json::Value>(j).unwrap());
    drop(values);
}
