//! Throughput of the work queue's add → get → done cycle.
//!
//! * `single_thread/*`: one thread adds a batch of distinct keys, then takes
//!   and finishes them (`try_get`, async `get`, with and without metrics).
//! * `two_workers/*`: one producer adds the batch while two workers (threads
//!   with `get_blocking`, or tasks on a 2-worker runtime with `get`) process
//!   it; the run ends when `shut_down_with_drain_all` returns.
//!
//! Throughput is reported in keys per second (one key = one add + get + done).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use informer::workqueue::{WorkQueue, WorkQueueMetrics};
use prometheus_client::registry::Registry;

const KEYS: u64 = 100_000;

fn cycle_try_get(q: &WorkQueue<u64>) {
    for key in 0..KEYS {
        q.add(key);
    }
    while let Some(key) = q.try_get() {
        q.done(black_box(&key));
    }
}

fn single_thread(c: &mut Criterion) {
    let mut group = c.benchmark_group("single_thread");
    group.throughput(Throughput::Elements(KEYS));

    let q: WorkQueue<u64> = WorkQueue::new();
    group.bench_function("add_try_get_done", |b| b.iter(|| cycle_try_get(&q)));

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    group.bench_function("add_async_get_done", |b| {
        b.iter(|| {
            rt.block_on(async {
                for key in 0..KEYS {
                    q.add(key);
                }
                for _ in 0..KEYS {
                    let key = q.get().await.unwrap();
                    q.done(black_box(&key));
                }
            })
        })
    });

    group.bench_function("add_try_get_done_with_metrics", |b| {
        let _guard = rt.enter();
        let mut registry = Registry::default();
        let metrics = WorkQueueMetrics::new(&mut registry);
        let q: WorkQueue<u64> = WorkQueue::builder().name("bench").metrics(&metrics).build();
        b.iter(|| cycle_try_get(&q))
    });

    group.bench_function("add_dedup_hit", |b| {
        let q: WorkQueue<u64> = WorkQueue::new();
        q.add(1);
        b.iter(|| {
            for _ in 0..KEYS {
                q.add(black_box(1));
            }
        })
    });
    group.finish();
}

fn two_workers(c: &mut Criterion) {
    let mut group = c.benchmark_group("two_workers");
    group.throughput(Throughput::Elements(KEYS));
    group.sample_size(20);

    group.bench_function("threads_get_blocking", |b| {
        b.iter(|| {
            let q: WorkQueue<u64> = WorkQueue::new();
            let workers: Vec<_> = (0..2)
                .map(|_| {
                    let q = q.clone();
                    std::thread::spawn(move || {
                        while let Some(key) = q.get_blocking() {
                            q.done(black_box(&key));
                        }
                    })
                })
                .collect();
            for key in 0..KEYS {
                q.add(key);
            }
            q.shut_down_with_drain_all_blocking();
            for w in workers {
                w.join().unwrap();
            }
        })
    });

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    group.bench_function("tasks_async_get", |b| {
        b.iter(|| {
            rt.block_on(async {
                let q: WorkQueue<u64> = WorkQueue::new();
                let workers: Vec<_> = (0..2)
                    .map(|_| {
                        let q = q.clone();
                        tokio::spawn(async move {
                            while let Some(key) = q.get().await {
                                q.done(black_box(&key));
                            }
                        })
                    })
                    .collect();
                for key in 0..KEYS {
                    q.add(key);
                }
                q.shut_down_with_drain_all().await;
                for w in workers {
                    w.await.unwrap();
                }
            })
        })
    });
    group.finish();
}

criterion_group!(benches, single_thread, two_workers);
criterion_main!(benches);
