//! [`EventBroadcaster`]: writes the core/v1 events its recorders queue through an
//! [`EventSink`], one at a time in the order recorded, as client-go's `record` broadcaster's
//! `StartRecordingToSink` does.
//!
//! Each event first goes through the [`EventCorrelator`] (aggregation, counting, spam filter).
//! An event counted before (count over 1) is a strategic merge patch of its count, last
//! timestamp and message, and a create when the server no longer has it; others are creates.
//! A write that got no answer is tried again up to `max_tries` (12) times, `sleep_duration`
//! (10 s) apart, the first pause a random part of it; a refusal is not retried (the client has
//! retried what it retries: `kube::Client` a 429, 503 or 504). While a write waits to be retried, the events after it wait in the queue (1,000 by
//! default; events past that are dropped), as in client-go.
//!
//! Invariants: recording never blocks; events are written in the order they were recorded; a
//! successful write's answer is what the correlator counts from next.
//! [`shutdown`](EventBroadcaster::shutdown) ignores later events, ends the write under way after
//! its current attempt, then writes the events still queued (one attempt each), where client-go
//! drops them. Recorders keep recording while they live, whether the broadcaster is kept or not.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::correlator::{Correlated, CorrelatorOptions, EventCorrelator};
use super::recorder::EventRecorder;
use super::sink::EventSink;

/// The broadcaster's limits and timing (client-go's by default).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EventBroadcasterConfig {
    /// The pause between two attempts at a write (the first a random part of it). client-go:
    /// 10 s.
    pub sleep_duration: Duration,
    /// The most attempts at one write (0 is taken as 1). client-go: 12.
    pub max_tries: u32,
    /// Events queued before more are dropped (0 is taken as 1). client-go: 1,000.
    pub queue: usize,
    /// The correlator's limits.
    pub correlator: CorrelatorOptions,
}

impl Default for EventBroadcasterConfig {
    fn default() -> Self {
        EventBroadcasterConfig {
            sleep_duration: Duration::from_secs(10),
            max_tries: 12,
            queue: 1000,
            correlator: CorrelatorOptions::default(),
        }
    }
}

/// Writes the core/v1 events recorded by its [`EventRecorder`]s to a sink (client-go's
/// `record.EventBroadcaster` started with `StartRecordingToSink`). Make it on a Tokio runtime
/// and [`shutdown`](Self::shutdown) it when the program stops.
///
/// ```no_run
/// use informer::events::EventType;
/// use informer::record::EventBroadcaster;
/// use k8s_openapi::api::core::v1::{EventSource, Pod};
/// use kube::Resource;
///
/// # async fn example(client: kube::Client, pod: Pod) {
/// let broadcaster = EventBroadcaster::new(client);
/// let source = EventSource { component: Some("my-controller".into()), host: None };
/// let recorder = broadcaster.new_recorder(source);
/// recorder.event(&pod.object_ref(&()), EventType::Warning, "FailedMount", "volume not found");
/// broadcaster.shutdown().await;
/// # }
/// ```
pub struct EventBroadcaster {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for EventBroadcaster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBroadcaster").finish_non_exhaustive()
    }
}

/// What a broadcaster and its recorders share: the queue's sending end.
pub(crate) struct Shared {
    queue: mpsc::Sender<Event>,
    stopped: AtomicBool,
    cancel: CancellationToken,
    tasks: TaskTracker,
}

impl EventBroadcaster {
    /// A broadcaster writing to `sink` with client-go's limits. Panics outside a Tokio runtime.
    pub fn new(sink: impl EventSink) -> Self {
        Self::with_config(sink, EventBroadcasterConfig::default())
    }

    /// A broadcaster writing to `sink` with `cfg`. Panics outside a Tokio runtime.
    pub fn with_config(sink: impl EventSink, cfg: EventBroadcasterConfig) -> Self {
        let cfg = EventBroadcasterConfig { max_tries: cfg.max_tries.max(1), queue: cfg.queue.max(1), ..cfg };
        let (tx, rx) = mpsc::channel(cfg.queue);
        let shared = Arc::new(Shared {
            queue: tx,
            stopped: AtomicBool::new(false),
            cancel: CancellationToken::new(),
            tasks: TaskTracker::new(),
        });
        let writer = Writer { sink: Box::new(sink), cfg, correlator: EventCorrelator::new(cfg.correlator) };
        shared.tasks.spawn(writer.run(rx, shared.cancel.clone()));
        shared.tasks.close();
        EventBroadcaster { shared }
    }

    /// A recorder reporting as `source` (its component, e.g. `my-controller`, and host).
    pub fn new_recorder(&self, source: EventSource) -> EventRecorder {
        EventRecorder::new(self.shared.clone(), source)
    }

    /// Stops recording: later events are ignored; the write under way ends after its current
    /// attempt; then the events still queued are written, one attempt each, in order. Returns
    /// when that is done, which takes as long as the sink takes to answer.
    pub async fn shutdown(&self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.cancel.cancel();
        self.shared.tasks.wait().await;
    }
}

impl Shared {
    /// Queues `event`, or drops it when the queue is full.
    pub(crate) fn record(&self, event: Event) {
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        if self.queue.try_send(event).is_err() {
            tracing::error!("Unable to record event: too many queued events, dropped event");
        }
    }
}

/// The task that writes the queue's events.
struct Writer {
    sink: Box<dyn EventSink>,
    cfg: EventBroadcasterConfig,
    correlator: EventCorrelator,
}

impl Writer {
    async fn run(mut self, mut queue: mpsc::Receiver<Event>, cancel: CancellationToken) {
        loop {
            let event = tokio::select! {
                biased;
                _ = cancel.cancelled() => break,
                event = queue.recv() => match event {
                    Some(event) => event,
                    // Every recorder and the broadcaster are gone.
                    None => return,
                },
            };
            self.record_to_sink(event, &cancel).await;
        }
        queue.close();
        while let Ok(event) = queue.try_recv() {
            if let Some((event, patch)) = self.correlate(&event) {
                self.write(&event, patch.as_ref()).await;
            }
        }
    }

    fn correlate(&mut self, event: &Event) -> Option<(Event, Option<Value>)> {
        match self.correlator.correlate(event, Timestamp::now()) {
            Correlated::Write { event, patch } => Some((*event, patch)),
            Correlated::Skip => None,
        }
    }

    /// Writes one event, retrying as client-go does, until done or cancelled.
    async fn record_to_sink(&mut self, event: Event, cancel: &CancellationToken) {
        let Some((event, patch)) = self.correlate(&event) else { return };
        for tries in 1..=self.cfg.max_tries {
            if self.write(&event, patch.as_ref()).await {
                return;
            }
            if tries == self.cfg.max_tries {
                tracing::error!(event = %describe(&event), "Unable to write event (retry limit exceeded!)");
                return;
            }
            let delay = match tries {
                1 => self.cfg.sleep_duration.mul_f64(rand::random::<f64>()),
                _ => self.cfg.sleep_duration,
            };
            tokio::select! {
                _ = cancel.cancelled() => {
                    tracing::error!(event = %describe(&event), "Unable to write event (broadcaster is shut down)");
                    return;
                }
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// One attempt: a patch when the event was counted before (a create when the server has
    /// none), else a create. Whether it is done (written, or refused for good).
    async fn write(&mut self, event: &Event, patch: Option<&Value>) -> bool {
        let mut answer = None;
        if event.count.unwrap_or(0) > 1 {
            let empty = Value::Object(Default::default());
            match self.sink.patch(event, patch.unwrap_or(&empty)).await {
                Err(e) if e.is_not_found() => {}
                other => answer = Some(other),
            }
        }
        let answer = match answer {
            Some(answer) => answer,
            None => {
                let mut fresh = event.clone();
                fresh.metadata.resource_version = None;
                self.sink.create(&fresh).await
            }
        };
        match answer {
            Ok(stored) => {
                self.correlator.update_state(&stored);
                true
            }
            Err(e) if e.is_already_exists() => {
                tracing::debug!(event = %describe(event), error = %e, "Server rejected event (will not retry!)");
                true
            }
            Err(e) if !e.is_retryable() => {
                tracing::error!(event = %describe(event), error = %e, "Server rejected event (will not retry!)");
                true
            }
            Err(e) => {
                tracing::error!(event = %describe(event), error = %e, "Unable to write event (may retry after sleeping)");
                false
            }
        }
    }
}

fn describe(e: &Event) -> String {
    crate::events::broadcaster::describe_event(&e.metadata, e.type_.as_deref(), e.reason.as_deref())
}

#[cfg(test)]
mod tests {
    use futures_util::future::BoxFuture;
    use k8s_openapi::api::core::v1::ObjectReference;
    use tokio::time::Instant;

    use super::*;
    use crate::events::fake_sink::{status, unreachable};
    use crate::events::{EventType, SinkError};

    type FakeSink = crate::events::fake_sink::FakeSink<Event>;

    /// A sink whose calls record an event's count, and that stores each event with a new
    /// resourceVersion.
    fn fake(script: Vec<Option<SinkError>>) -> FakeSink {
        let describe = |e: &Event| (e.metadata.name.clone().unwrap_or_default(), e.count);
        let store = |e: &Event, n: usize| {
            let mut stored = e.clone();
            stored.metadata.resource_version = Some(n.to_string());
            stored
        };
        FakeSink::new(script, describe, store)
    }

    impl EventSink for FakeSink {
        fn create<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, Result<Event, SinkError>> {
            Box::pin(async move { self.answer("create", event, None) })
        }

        fn patch<'a>(&'a self, event: &'a Event, patch: &'a Value) -> BoxFuture<'a, Result<Event, SinkError>> {
            Box::pin(async move { self.answer("patch", event, Some(patch)) })
        }
    }

    fn pod() -> ObjectReference {
        ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some("default".into()),
            name: Some("web".into()),
            uid: Some("u1".into()),
            api_version: Some("v1".into()),
            ..Default::default()
        }
    }

    fn source() -> EventSource {
        EventSource { component: Some("ctl".into()), host: Some("node-1".into()) }
    }

    #[tokio::test(start_paused = true)]
    async fn repeats_patch_the_count_and_a_missing_event_is_created_again() {
        // The second write's patch finds no event (404): it is created, count and all.
        let sink = fake(vec![None, status(404, "NotFound")]);
        let b = EventBroadcaster::new(sink.clone());
        let r = b.new_recorder(source());
        r.event(&pod(), EventType::Warning, "BackOff", "restarting");
        let first = sink.calls(1).await;
        assert_eq!((first[0].verb, first[0].count), ("create", Some(1)));
        r.event(&pod(), EventType::Warning, "BackOff", "restarting");
        r.event(&pod(), EventType::Warning, "BackOff", "restarting");
        let calls = sink.calls(4).await;
        let verbs: Vec<(&str, Option<i32>)> = calls.iter().map(|c| (c.verb, c.count)).collect();
        assert_eq!(verbs, [("create", Some(1)), ("patch", Some(2)), ("create", Some(2)), ("patch", Some(3))]);
        assert!(calls.iter().all(|c| c.name == first[0].name), "{calls:?}");
        assert_eq!(calls[3].patch.as_ref().unwrap()["count"], 3);
        assert_eq!(calls[3].patch.as_ref().unwrap()["message"], "restarting");
        b.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn unanswered_writes_are_retried_in_order_and_refusals_are_not() {
        let sleep = Duration::from_secs(10);
        let sink = fake(vec![unreachable(), unreachable(), None, status(503, "ServiceUnavailable")]);
        let b = EventBroadcaster::new(sink.clone());
        let r = b.new_recorder(source());
        let start = Instant::now();
        r.event(&pod(), EventType::Normal, "Started", "one");
        r.event(&pod(), EventType::Normal, "Refused", "two");
        r.event(&pod(), EventType::Normal, "Pulled", "three");
        let calls = sink.calls(5).await;
        let seen: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        // one, one again, one written; two refused for good (the client retried it); three.
        assert_eq!(seen[0], seen[1]);
        assert_eq!(seen[1], seen[2]);
        assert!(seen[3] != seen[2] && seen[4] != seen[3]);
        // The first pause is a random part of the sleep, the second all of it; the events after
        // waited.
        assert!(calls[1].at - start <= sleep, "{:?}", calls[1].at - start);
        assert_eq!(calls[2].at - calls[1].at, sleep);
        assert_eq!(calls[3].at, calls[2].at);
        assert_eq!(calls[4].at, calls[3].at);
        b.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_is_given_up_after_max_tries() {
        let sink = fake((0..20).map(|_| unreachable()).collect());
        let cfg = EventBroadcasterConfig { max_tries: 3, ..EventBroadcasterConfig::default() };
        let b = EventBroadcaster::with_config(sink.clone(), cfg);
        let r = b.new_recorder(source());
        r.event(&pod(), EventType::Normal, "A", "a");
        r.event(&pod(), EventType::Normal, "B", "b");
        let calls = sink.calls(4).await;
        assert_eq!(calls.iter().filter(|c| c.name == calls[0].name).count(), 3);
        assert_ne!(calls[3].name, calls[0].name);
        b.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_ends_the_retries_and_writes_what_is_queued() {
        let sink = fake(vec![unreachable()]);
        let b = EventBroadcaster::new(sink.clone());
        let r = b.new_recorder(source());
        r.event(&pod(), EventType::Normal, "A", "a");
        sink.calls(1).await;
        r.event(&pod(), EventType::Normal, "B", "b");
        b.shutdown().await;
        let calls = sink.calls(2).await;
        assert_eq!(calls.len(), 2, "A not retried, B written once: {calls:?}");
        assert!(calls[1].name != calls[0].name);
        // After shutdown nothing is recorded.
        r.event(&pod(), EventType::Normal, "C", "c");
        tokio::task::yield_now().await;
        assert_eq!(sink.count(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn recorders_outlive_their_broadcaster() {
        let sink = fake(vec![]);
        let r = EventBroadcaster::new(sink.clone()).new_recorder(source());
        r.event(&pod(), EventType::Normal, "A", "a");
        let calls = sink.calls(1).await;
        assert_eq!(calls[0].verb, "create");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_queue_drops_events() {
        // The first write waits 10 s to be retried while eleven more come; a queue of 10 keeps ten.
        let sink = fake(vec![unreachable()]);
        let cfg = EventBroadcasterConfig { queue: 10, ..EventBroadcasterConfig::default() };
        let b = EventBroadcaster::with_config(sink.clone(), cfg);
        let r = b.new_recorder(source());
        r.event(&pod(), EventType::Normal, "R0", "m");
        sink.calls(1).await;
        for i in 1..=11 {
            r.event(&pod(), EventType::Normal, &format!("R{i}"), "m");
        }
        let calls = sink.calls(12).await;
        assert_eq!(calls.len(), 12, "R0 twice, R1…R10: {calls:?}");
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(sink.count(), 12, "R11 was dropped");
        b.shutdown().await;
    }
}
