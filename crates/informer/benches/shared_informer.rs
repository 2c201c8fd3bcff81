//! Distribution throughput of a shared informer: a list of `OBJECTS` config maps delivered as
//! initial adds to 1, 4 and 16 handlers (client-go's `BenchmarkListener` /
//! `BenchmarkAddWithSlowHandlers` in spirit), on a 2-worker runtime. One iteration = start an
//! informer, wait until every handler's registration synced, stop it.
//!
//! Throughput is reported in notifications delivered per second (objects × handlers).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use informer::fake::FakeSource;
use informer::{HandlerFns, SharedIndexInformer};
use k8s_openapi::api::core::v1::ConfigMap;
use tokio_util::sync::CancellationToken;

const OBJECTS: u64 = 10_000;

fn distribute(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let src = FakeSource::new();
    for i in 0..OBJECTS {
        src.add(
            serde_json::json!({"metadata": {"name": format!("cm-{i}"), "namespace": "ns",
            "labels": {"app": "bench"}}, "data": {"k": "v"}}),
        );
    }
    let mut group = c.benchmark_group("shared_informer");
    group.sample_size(10);
    for handlers in [1u64, 4, 16] {
        group.throughput(Throughput::Elements(OBJECTS * handlers));
        group.bench_function(format!("initial_list_to_{handlers}_handlers"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += rt.block_on(async {
                        let inf =
                            SharedIndexInformer::<ConfigMap>::new(src.clone(), Duration::ZERO);
                        let count = Arc::new(AtomicU64::new(0));
                        let regs: Vec<_> = (0..handlers)
                            .map(|_| {
                                let count = count.clone();
                                inf.add_event_handler(HandlerFns::new().on_add(move |_, _| {
                                    count.fetch_add(1, Ordering::Relaxed);
                                }))
                                .unwrap()
                            })
                            .collect();
                        let cancel = CancellationToken::new();
                        let start = Instant::now();
                        let run = tokio::spawn({
                            let (i, c) = (inf.clone(), cancel.clone());
                            async move { i.run(c).await }
                        });
                        for r in &regs {
                            r.synced().wait().await;
                        }
                        let took = start.elapsed();
                        assert_eq!(count.load(Ordering::Relaxed), OBJECTS * handlers);
                        cancel.cancel();
                        run.await.unwrap();
                        took
                    });
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, distribute);
criterion_main!(benches);
