//! [`EventBroadcaster`]: writes the events its recorders make through an [`EventSink`], folding
//! repeats into series as client-go's `tools/events` broadcaster does.
//!
//! Events are isomorphic when they share type, action, reason, reporting controller and
//! instance, regarding and related objects (the note is not compared). The first of a kind is
//! created; the second turns it into a series (`series.count` 2, `lastObservedTime` now) written
//! at once with a strategic merge patch of `series`; later ones only count, in memory. A series
//! is written again every `refresh_every` (30 min), and once its last occurrence is older than
//! `finish_after` (6 min) its final count is written and it is forgotten, so the next occurrence
//! starts a new event; a lone event is forgotten after `finish_after` too.
//!
//! Writes retry as client-go's do: up to `max_tries` (12) attempts, `retry_delay` (10 s, plus
//! up to 25% jitter) apart, when the server could not be reached or its answer not read; a
//! refusal is not retried (the client has retried what it retries: `kube::Client` a 429, 503
//! or 504), except an AlreadyExists answering a series (the first event's create and the
//! series' patch raced). A series patch that finds no event creates it, series and all.
//!
//! Invariants: recording never blocks and never waits for the server (each write is a task of
//! its own, on the runtime the broadcaster was made on); an occurrence is counted in the series
//! it belongs to, and a count is never lost while the broadcaster lives:
//! [`shutdown`](EventBroadcaster::shutdown) writes the counts not yet written before it returns,
//! where client-go drops them. After shutdown recorders' events are ignored; recorders keep
//! recording while they live, whether the broadcaster is kept or not.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::recorder::EventRecorder;
use super::sink::{EventSink, SinkError};

/// The broadcaster's timing (client-go's constants by default). Durations under a millisecond
/// are taken as one, and `max_tries` of 0 as 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventBroadcasterConfig {
    /// How long after its last occurrence a series is finished (its count written, the event
    /// forgotten), and a lone event forgotten. client-go: 6 minutes.
    pub finish_after: Duration,
    /// How often every series is written again. client-go: 30 minutes.
    pub refresh_every: Duration,
    /// The pause between two attempts at a write, plus up to 25% jitter. client-go: 10 s.
    pub retry_delay: Duration,
    /// The most attempts at one write. client-go: 12.
    pub max_tries: u32,
}

impl Default for EventBroadcasterConfig {
    fn default() -> Self {
        EventBroadcasterConfig {
            finish_after: Duration::from_secs(6 * 60),
            refresh_every: Duration::from_secs(30 * 60),
            retry_delay: Duration::from_secs(10),
            max_tries: 12,
        }
    }
}

/// Writes recorded events to a sink (client-go's `events.EventBroadcaster`). Make it on a Tokio
/// runtime, make [`EventRecorder`]s from it, and [`shutdown`](Self::shutdown) it when the program
/// stops.
///
/// ```no_run
/// use informer::events::{EventBroadcaster, EventType};
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::Resource;
///
/// # async fn example(client: kube::Client, pod: Pod) {
/// let broadcaster = EventBroadcaster::new(client);
/// let recorder = broadcaster.new_recorder("my-controller");
/// recorder.eventf(&pod.object_ref(&()), None, EventType::Warning, "FailedMount", "Mount", "volume not found");
/// broadcaster.shutdown().await;
/// # }
/// ```
pub struct EventBroadcaster {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for EventBroadcaster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBroadcaster").field("config", &self.shared.cfg).finish_non_exhaustive()
    }
}

/// What a broadcaster and its recorders share.
pub(crate) struct Shared {
    sink: Box<dyn EventSink>,
    cfg: EventBroadcasterConfig,
    /// The events of the last `finish_after`, by their isomorphism key.
    cache: Mutex<HashMap<String, Entry>>,
    runtime: tokio::runtime::Handle,
    tasks: TaskTracker,
    cancel: CancellationToken,
    stopped: AtomicBool,
}

struct Entry {
    /// The event as last sent (its series counting every occurrence since).
    event: Event,
    /// When it last occurred.
    observed: Instant,
    /// The series count the server has (0: none yet).
    written: i32,
}

/// What one attempt at a write came to.
enum Written {
    Done,
    GiveUp,
    Retry,
}

impl EventBroadcaster {
    /// A broadcaster writing to `sink` with client-go's timing. Panics outside a Tokio runtime.
    pub fn new(sink: impl EventSink) -> Self {
        Self::with_config(sink, EventBroadcasterConfig::default())
    }

    /// A broadcaster writing to `sink` with the timing `cfg`. Panics outside a Tokio runtime.
    pub fn with_config(sink: impl EventSink, cfg: EventBroadcasterConfig) -> Self {
        let least = Duration::from_millis(1);
        let cfg = EventBroadcasterConfig {
            finish_after: cfg.finish_after.max(least),
            refresh_every: cfg.refresh_every.max(least),
            retry_delay: cfg.retry_delay,
            max_tries: cfg.max_tries.max(1),
        };
        let shared = Arc::new(Shared {
            sink: Box::new(sink),
            cfg,
            cache: Mutex::new(HashMap::new()),
            runtime: tokio::runtime::Handle::current(),
            tasks: TaskTracker::new(),
            cancel: CancellationToken::new(),
            stopped: AtomicBool::new(false),
        });
        for (every, refresh) in [(cfg.finish_after, false), (cfg.refresh_every, true)] {
            let s = Arc::downgrade(&shared);
            let cancel = shared.cancel.clone();
            shared.tasks.spawn(async move {
                loop {
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = tokio::time::sleep(every) => {}
                    }
                    let Some(s) = s.upgrade() else { return };
                    match refresh {
                        true => s.refresh().await,
                        false => s.finish().await,
                    }
                }
            });
        }
        EventBroadcaster { shared }
    }

    /// A recorder reporting as `reporting_controller` (e.g. `example.com/my-operator`), from the
    /// instance `<reporting_controller>-<hostname>`.
    pub fn new_recorder(&self, reporting_controller: &str) -> EventRecorder {
        EventRecorder::new(self.shared.clone(), reporting_controller)
    }

    /// Stops recording: later events are ignored; the writes under way end (their current
    /// attempt, without further retries); then the series counts not yet written are written,
    /// one attempt each, all at once. Returns when every write has ended, which takes as long as
    /// the sink takes to answer (`kube::Client`'s own timeouts bound it; wrap the call in
    /// `tokio::time::timeout` for a shorter bound).
    pub async fn shutdown(&self) {
        let s = &self.shared;
        s.stopped.store(true, Ordering::SeqCst);
        s.cancel.cancel();
        // The writes under way first, so that none lands after the final counts.
        s.tasks.close();
        s.tasks.wait().await;
        let pending: Vec<Event> = s
            .cache
            .lock()
            .drain()
            .filter(|(_, e)| e.event.series.as_ref().is_some_and(|series| series.count > e.written))
            .map(|(_, e)| e.event)
            .collect();
        futures_util::future::join_all(pending.iter().map(|event| s.write(event))).await;
    }
}

impl Shared {
    /// Records one occurrence of `event` (see the module documentation).
    pub(crate) fn record(self: &Arc<Self>, event: Event) {
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        let key = key(&event);
        let now = Instant::now();
        let send = {
            let mut cache = self.cache.lock();
            match cache.get_mut(&key) {
                Some(entry) => {
                    entry.observed = now;
                    let at = MicroTime(k8s_openapi::jiff::Timestamp::now());
                    match &mut entry.event.series {
                        Some(series) => {
                            series.count = series.count.saturating_add(1);
                            series.last_observed_time = at;
                            None
                        }
                        None => {
                            entry.event.series = Some(EventSeries { count: 2, last_observed_time: at });
                            Some(entry.event.clone())
                        }
                    }
                }
                None => {
                    cache.insert(key, Entry { event: event.clone(), observed: now, written: 0 });
                    Some(event)
                }
            }
        };
        if let Some(event) = send {
            let s = self.clone();
            self.tasks.spawn_on(async move { s.attempt(event).await }, &self.runtime);
        }
    }

    /// Writes `event`, retrying as client-go does.
    async fn attempt(&self, event: Event) {
        for tries in 1..=self.cfg.max_tries {
            match self.write(&event).await {
                Written::Done | Written::GiveUp => return,
                Written::Retry if tries == self.cfg.max_tries => {
                    tracing::warn!(event = %describe(&event), "Unable to write event (retry limit exceeded!)");
                    return;
                }
                Written::Retry => {}
            }
            let jitter = self.cfg.retry_delay.mul_f64(0.25 * rand::random::<f64>());
            tokio::select! {
                _ = self.cancel.cancelled() => return,
                _ = tokio::time::sleep(self.cfg.retry_delay + jitter) => {}
            }
        }
    }

    /// One attempt at writing `event`: a series patch (a create if the event is gone), or a
    /// create; a written series count is remembered.
    async fn write(&self, event: &Event) -> Written {
        let mut answer = None;
        if let Some(series) = &event.series {
            let patch = serde_json::json!({ "series": series });
            match self.sink.patch(event, &patch).await {
                Err(e) if e.is_not_found() => {}
                other => answer = Some(other),
            }
        }
        let answer = match answer {
            Some(a) => a,
            None => {
                let mut fresh = event.clone();
                fresh.metadata.resource_version = None;
                self.sink.create(&fresh).await
            }
        };
        match answer {
            Ok(_) => {
                if let Some(series) = &event.series {
                    let mut cache = self.cache.lock();
                    if let Some(entry) = cache.get_mut(&key(event)) {
                        entry.written = entry.written.max(series.count);
                    }
                }
                Written::Done
            }
            Err(e) if e.is_already_exists() && event.series.is_some() => Written::Retry,
            Err(e @ SinkError::Status { .. }) if !e.is_retryable() => {
                tracing::warn!(event = %describe(event), error = %e, "Server rejected event (will not retry!)");
                Written::GiveUp
            }
            Err(e) => {
                tracing::warn!(event = %describe(event), error = %e, "Unable to write event (may retry after sleeping)");
                Written::Retry
            }
        }
    }

    /// Finishes the series whose last occurrence is older than `finish_after` (writing their
    /// counts) and forgets the lone events as old.
    async fn finish(&self) {
        let now = Instant::now();
        let due: Vec<(String, Event, Instant, bool)> = self
            .cache
            .lock()
            .iter()
            .filter(|(_, e)| now.duration_since(e.observed) > self.cfg.finish_after)
            .map(|(k, e)| {
                let unwritten = e.event.series.as_ref().is_some_and(|s| s.count > e.written);
                (k.clone(), e.event.clone(), e.observed, unwritten)
            })
            .collect();
        for (key, event, observed, unwritten) in due {
            if self.cancel.is_cancelled() {
                return;
            }
            if unwritten && matches!(self.write(&event).await, Written::Retry) {
                continue;
            }
            let mut cache = self.cache.lock();
            // Unless it occurred again meanwhile.
            if cache.get(&key).is_some_and(|e| e.observed == observed) {
                cache.remove(&key);
            }
        }
    }

    /// Writes every series again.
    async fn refresh(&self) {
        let series: Vec<Event> =
            self.cache.lock().values().filter(|e| e.event.series.is_some()).map(|e| e.event.clone()).collect();
        for event in series {
            if self.cancel.is_cancelled() {
                return;
            }
            self.write(&event).await;
        }
    }
}

/// The isomorphism key: type, action, reason, reporting controller and instance, regarding and
/// related objects.
fn key(e: &Event) -> String {
    serde_json::to_string(&(
        &e.type_,
        &e.action,
        &e.reason,
        &e.reporting_controller,
        &e.reporting_instance,
        &e.regarding,
        &e.related,
    ))
    .unwrap_or_default()
}

fn describe(e: &Event) -> String {
    describe_event(&e.metadata, e.type_.as_deref(), e.reason.as_deref())
}

/// An event as the broadcasters log it: `<namespace>/<name> (<type> <reason>)`.
pub(crate) fn describe_event(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    type_: Option<&str>,
    reason: Option<&str>,
) -> String {
    format!(
        "{}/{} ({} {})",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
        type_.unwrap_or_default(),
        reason.unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use futures_util::future::BoxFuture;
    use k8s_openapi::api::core::v1::ObjectReference;
    use serde_json::Value;

    use super::*;
    use crate::events::EventType;
    use crate::events::fake_sink::{status, unreachable};

    type FakeSink = crate::events::fake_sink::FakeSink<Event>;

    /// A sink whose calls record an event's series count, and that stores events as sent.
    fn fake(script: Vec<Option<SinkError>>) -> FakeSink {
        let describe = |e: &Event| (e.metadata.name.clone().unwrap_or_default(), e.series.as_ref().map(|s| s.count));
        FakeSink::new(script, describe, |e: &Event, _| e.clone())
    }

    impl EventSink for FakeSink {
        fn create<'a>(&'a self, event: &'a Event) -> BoxFuture<'a, Result<Event, SinkError>> {
            Box::pin(async move { self.answer("create", event, None) })
        }
        fn patch<'a>(&'a self, event: &'a Event, patch: &'a Value) -> BoxFuture<'a, Result<Event, SinkError>> {
            Box::pin(async move { self.answer("patch", event, Some(patch)) })
        }
    }

    fn pod(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some("u-1".into()),
            ..Default::default()
        }
    }

    /// Lets the spawned writes run (time is paused: nothing else moves).
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn repeats_become_a_series_written_at_once_then_when_it_finishes() {
        let sink = fake(vec![]);
        let b = EventBroadcaster::new(sink.clone());
        let r = b.new_recorder("ctl");
        let fail = |note: &str| r.eventf(&pod("web"), None, EventType::Warning, "Failed", "Sync", note);
        fail("first");
        let calls = sink.calls(1).await;
        assert_eq!((calls[0].verb, calls[0].count), ("create", None));
        assert!(calls[0].name.starts_with("web."), "{}", calls[0].name);
        // The second (whatever its note) is the series, patched at once; the next ones count.
        fail("second");
        let calls = sink.calls(2).await;
        assert_eq!((calls[1].verb, calls[1].name.as_str(), calls[1].count), ("patch", calls[0].name.as_str(), Some(2)));
        let patch = calls[1].patch.clone().unwrap();
        assert_eq!(patch.as_object().unwrap().keys().collect::<Vec<_>>(), ["series"]);
        assert_eq!(patch["series"]["count"], 2);
        let micro = patch["series"]["lastObservedTime"].as_str().unwrap();
        assert!(micro.len() == 27 && micro.ends_with('Z'), "microseconds: {micro}");
        // Another reason is another event.
        r.eventf(&pod("web"), None, EventType::Warning, "Other", "Sync", "x");
        sink.calls(3).await;
        fail("third");
        fail("fourth");
        let last = Instant::now();
        tokio::time::advance(Duration::from_secs(5 * 60)).await;
        settle().await;
        assert_eq!(sink.count(), 3, "counted, not written");
        // Six minutes after its last occurrence the series' count is written and it is over.
        let calls = sink.calls(4).await;
        assert_eq!((calls[3].verb, calls[3].count), ("patch", Some(4)));
        assert!(calls[3].at - last > Duration::from_secs(6 * 60));
        fail("again");
        let calls = sink.calls(5).await;
        assert_eq!((calls[4].verb, calls[4].count), ("create", None));
        assert_ne!(calls[4].name, calls[0].name);
        b.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn unreachable_servers_are_retried_and_refusals_are_not() {
        let sink = fake(vec![unreachable(), unreachable()]);
        let b = EventBroadcaster::new(sink.clone());
        let r = b.new_recorder("ctl");
        r.eventf(&pod("a"), None, EventType::Normal, "Started", "Start", "");
        let calls = sink.calls(3).await;
        for pair in calls.windows(2) {
            let gap = pair[1].at - pair[0].at;
            assert!(gap >= Duration::from_secs(10) && gap <= Duration::from_millis(12_500), "{gap:?}");
        }
        b.shutdown().await;

        for refusal in [
            status(409, "AlreadyExists"),
            status(422, "Invalid"),
            status(500, "InternalError"),
            status(429, "TooManyRequests"),
            status(503, "ServiceUnavailable"),
        ] {
            let sink = fake(vec![refusal]);
            let b = EventBroadcaster::new(sink.clone());
            b.new_recorder("ctl").eventf(&pod("a"), None, EventType::Normal, "Started", "Start", "");
            sink.calls(1).await;
            tokio::time::advance(Duration::from_secs(60)).await;
            settle().await;
            assert_eq!(sink.count(), 1);
            b.shutdown().await;
        }

        // At most twelve attempts.
        let sink = fake((0..20).map(|_| unreachable()).collect());
        let b = EventBroadcaster::new(sink.clone());
        b.new_recorder("ctl").eventf(&pod("a"), None, EventType::Normal, "Started", "Start", "");
        sink.calls(12).await;
        tokio::time::advance(Duration::from_secs(120)).await;
        settle().await;
        assert_eq!(sink.count(), 12);
        b.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_series_whose_event_is_gone_is_created_and_a_racing_create_is_retried() {
        // create ok; the series' patch finds no event: created, series and all.
        let sink = fake(vec![None, status(404, "NotFound")]);
        let b = EventBroadcaster::new(sink.clone());
        let r = b.new_recorder("ctl");
        r.eventf(&pod("a"), None, EventType::Normal, "Pulled", "Pull", "");
        r.eventf(&pod("a"), None, EventType::Normal, "Pulled", "Pull", "");
        let calls = sink.calls(3).await;
        let seen: Vec<_> = calls.iter().map(|c| (c.verb, c.count)).collect();
        assert_eq!(seen, [("create", None), ("patch", Some(2)), ("create", Some(2))]);
        b.shutdown().await;

        // The series' patch found no event and its create found one (the first create landed
        // meanwhile): tried again, as a patch.
        let sink = fake(vec![None, status(404, "NotFound"), status(409, "AlreadyExists")]);
        let b = EventBroadcaster::new(sink.clone());
        let r = b.new_recorder("ctl");
        r.eventf(&pod("a"), None, EventType::Normal, "Pulled", "Pull", "");
        r.eventf(&pod("a"), None, EventType::Normal, "Pulled", "Pull", "");
        let calls = sink.calls(4).await;
        assert_eq!((calls[3].verb, calls[3].count), ("patch", Some(2)));
        b.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn recorders_go_on_recording_when_the_broadcaster_is_dropped() {
        let sink = fake(vec![]);
        let r = EventBroadcaster::new(sink.clone()).new_recorder("ctl");
        r.eventf(&pod("a"), None, EventType::Normal, "Pulled", "Pull", "");
        r.eventf(&pod("a"), None, EventType::Normal, "Pulled", "Pull", "");
        let calls = sink.calls(2).await;
        assert_eq!((calls[1].verb, calls[1].count), ("patch", Some(2)));
    }

    #[tokio::test(start_paused = true)]
    async fn series_are_refreshed_and_shutdown_writes_what_was_counted() {
        let cfg = EventBroadcasterConfig { finish_after: Duration::from_secs(7200), ..Default::default() };
        let sink = fake(vec![]);
        let b = EventBroadcaster::with_config(sink.clone(), cfg);
        let r = b.new_recorder("ctl");
        for _ in 0..3 {
            r.eventf(&pod("a"), None, EventType::Normal, "Pulled", "Pull", "");
        }
        let start = Instant::now();
        sink.calls(2).await;
        // The count of 3 is written by the refresh, thirty minutes on.
        let calls = sink.calls(3).await;
        assert_eq!((calls[2].verb, calls[2].count), ("patch", Some(3)));
        assert!(calls[2].at - start >= Duration::from_secs(30 * 60));
        r.eventf(&pod("a"), None, EventType::Normal, "Pulled", "Pull", "");
        settle().await;
        assert_eq!(sink.count(), 3);
        b.shutdown().await;
        let calls = sink.calls(4).await;
        assert_eq!((calls[3].verb, calls[3].count), ("patch", Some(4)));
        // Nothing is recorded after the shutdown.
        r.eventf(&pod("b"), None, EventType::Normal, "Pulled", "Pull", "");
        settle().await;
        assert_eq!(sink.count(), 4);
    }
}
