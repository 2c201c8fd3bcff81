//! The process-wide work-queue metrics provider (client-go's `workqueue.SetProvider`), in a test
//! binary of its own since it is global: the first provider set is given to every named queue
//! built afterwards without one of its own; unnamed queues report nothing; plain queues are not
//! given a retries metric.

mod common;

use std::sync::Arc;

use common::metrics_provider::RecordingProvider;
use informer::workqueue::{WorkQueue, set_provider};

#[tokio::test(start_paused = true)]
async fn the_first_provider_set_serves_every_named_queue() {
    let first = Arc::new(RecordingProvider::default());
    assert!(set_provider(first.clone()));
    assert!(!set_provider(Arc::new(RecordingProvider::default())), "only the first call counts");
    let plain: WorkQueue<u8> = WorkQueue::builder().name("plain").build();
    let _delayed = WorkQueue::<u8>::builder().name("delayed").build_delaying();
    let _unnamed: WorkQueue<u8> = WorkQueue::builder().build();
    plain.add(1);
    let asked = first.asked.lock().clone();
    let of = |queue: &str| asked.iter().filter(|m| m.ends_with(&format!(":{queue}"))).count();
    assert_eq!((of("plain"), of("delayed"), of("")), (6, 7, 0), "{asked:?}");
    assert!(!asked.contains(&"retries:plain".to_string()));
    assert_eq!(first.value("adds:plain"), Some(1.0));
}
