//! [`EventCorrelator`]: what client-go's `tools/record` does with an event before it writes it —
//! aggregate, count, and filter spam — so that a controller reporting the same thing again and
//! again makes one Event whose count grows, not thousands.
//!
//! In order, for each event:
//! 1. **Aggregation.** Events alike but for their message (same source, involved object, type,
//!    reason, reporting controller and instance) are grouped; once a group has seen
//!    `max_events` (10) different messages within `max_interval` (600 s) of each other, each
//!    new message is reported instead as one aggregate event, `(combined from similar events):
//!    <message>`, named afresh, counted under the group.
//! 2. **Counting.** An event seen before (same source, object, type, reason and message; or the
//!    same group's aggregate) takes the first one's name, resourceVersion and first timestamp
//!    and the count after its last, and is written as a strategic merge patch of `count`,
//!    `lastTimestamp` and `message`; the first is created.
//! 3. **Spam filter.** Per source and involved object (and type), a token bucket of `burst` (25)
//!    refilled at `qps` (one per 5 minutes) lets events through; the rest are skipped — after
//!    they were counted, as client-go counts them.
//!
//! Each of the three keeps at most `lru_cache_size` (4,096) keys, forgetting the least recently
//! used. Time is given by the caller (the broadcaster passes the wall clock), so the rules can
//! be followed through any span of time.
//!
//! Invariants: pure bookkeeping, no I/O; a written event's state (its name, resourceVersion,
//! count) is what [`EventCorrelator::update_state`] last recorded from the server, else what was
//! last sent.

use std::collections::HashSet;
use std::num::NonZeroUsize;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use lru::LruCache;
use serde_json::{Map, Value};

/// The correlator's limits (client-go's `CorrelatorOptions`; zeros are client-go's defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CorrelatorOptions {
    /// Keys each cache keeps. client-go: 4,096.
    pub lru_cache_size: usize,
    /// Events a source may send about one object at once. client-go: 25.
    pub burst: u32,
    /// Events per second a source's allowance for one object grows by. client-go: 1/300.
    pub qps: f64,
    /// Different messages in a group before they are aggregated. client-go: 10.
    pub max_events: usize,
    /// Seconds after which a group starts over. client-go: 600.
    pub max_interval_seconds: u64,
}

impl Default for CorrelatorOptions {
    fn default() -> Self {
        CorrelatorOptions {
            lru_cache_size: 4096,
            burst: 25,
            qps: 1.0 / 300.0,
            max_events: 10,
            max_interval_seconds: 600,
        }
    }
}

impl CorrelatorOptions {
    fn with_defaults(self) -> Self {
        let d = CorrelatorOptions::default();
        CorrelatorOptions {
            lru_cache_size: if self.lru_cache_size == 0 { d.lru_cache_size } else { self.lru_cache_size },
            burst: if self.burst == 0 { d.burst } else { self.burst },
            qps: if self.qps > 0.0 { self.qps } else { d.qps },
            max_events: if self.max_events == 0 { d.max_events } else { self.max_events },
            max_interval_seconds: if self.max_interval_seconds == 0 {
                d.max_interval_seconds
            } else {
                self.max_interval_seconds
            },
        }
    }
}

/// What to do with an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Correlated {
    /// Write it: create it, or when `patch` is given (its count is over 1) patch the stored one
    /// with it, creating it should the server have none.
    Write {
        /// The event to write.
        event: Box<Event>,
        /// The strategic merge patch of its count, last timestamp and message.
        patch: Option<Value>,
    },
    /// The spam filter holds it back.
    Skip,
}

/// Aggregates, counts and filters events (client-go's `record.EventCorrelator`).
#[derive(Debug)]
pub struct EventCorrelator {
    opts: CorrelatorOptions,
    groups: LruCache<String, Group>,
    seen: LruCache<String, Seen>,
    buckets: LruCache<String, Bucket>,
}

#[derive(Debug)]
struct Group {
    messages: HashSet<String>,
    last: Option<Timestamp>,
}

#[derive(Debug, Clone)]
struct Seen {
    count: i32,
    first: Option<Time>,
    name: Option<String>,
    resource_version: Option<String>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Timestamp,
}

impl EventCorrelator {
    /// A correlator with `opts` (zeros are client-go's defaults).
    pub fn new(opts: CorrelatorOptions) -> Self {
        let opts = opts.with_defaults();
        let size = NonZeroUsize::new(opts.lru_cache_size).unwrap_or(NonZeroUsize::MIN);
        EventCorrelator { opts, groups: LruCache::new(size), seen: LruCache::new(size), buckets: LruCache::new(size) }
    }

    /// What to do with `event`, observed at `now`.
    pub fn correlate(&mut self, event: &Event, now: Timestamp) -> Correlated {
        let (event, key) = self.aggregate(event, now);
        let (event, patch) = self.observe(event, key);
        if self.is_spam(&event, now) {
            return Correlated::Skip;
        }
        Correlated::Write { event: Box::new(event), patch }
    }

    /// Records the event as the server stored it, so the next occurrence patches it.
    pub fn update_state(&mut self, stored: &Event) {
        self.seen.put(event_key(stored), Seen::of(stored));
    }

    fn aggregate(&mut self, event: &Event, now: Timestamp) -> (Event, String) {
        let (group_key, message) = group_key(event);
        let max_interval = SignedDuration::from_secs(self.opts.max_interval_seconds as i64);
        let group = self.groups.get_or_insert_mut(group_key.clone(), || Group { messages: HashSet::new(), last: None });
        if group.last.is_none_or(|last| now.duration_since(last) > max_interval) {
            group.messages.clear();
        }
        group.messages.insert(message);
        group.last = Some(now);
        if group.messages.len() < self.opts.max_events {
            return (event.clone(), event_key(event));
        }
        // One message leaves the set, so that every new one is aggregated again.
        if let Some(any) = group.messages.iter().next().cloned() {
            group.messages.remove(&any);
        }
        let name = event.involved_object.name.as_deref().unwrap_or_default();
        let at = Time(now);
        let aggregate = Event {
            metadata: ObjectMeta {
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                namespace: event.metadata.namespace.clone(),
                ..Default::default()
            },
            count: Some(1),
            first_timestamp: Some(at.clone()),
            involved_object: event.involved_object.clone(),
            last_timestamp: Some(at),
            message: Some(format!("(combined from similar events): {}", event.message.as_deref().unwrap_or_default())),
            type_: event.type_.clone(),
            reason: event.reason.clone(),
            source: event.source.clone(),
            ..Default::default()
        };
        (aggregate, group_key)
    }

    fn observe(&mut self, event: Event, key: String) -> (Event, Option<Value>) {
        let mut event = event;
        let mut patch = None;
        if let Some(last) = self.seen.get(&key).filter(|s| s.count > 0).cloned() {
            event.metadata.name = last.name;
            event.metadata.resource_version = last.resource_version;
            event.first_timestamp = last.first;
            event.count = Some(last.count.saturating_add(1));
            patch = Some(count_patch(&event));
        }
        self.seen.put(key, Seen::of(&event));
        (event, patch)
    }

    fn is_spam(&mut self, event: &Event, now: Timestamp) -> bool {
        let (burst, qps) = (f64::from(self.opts.burst), self.opts.qps);
        let bucket = self.buckets.get_or_insert_mut(spam_key(event), || Bucket { tokens: burst, at: now });
        let elapsed = now.duration_since(bucket.at).as_secs_f64().max(0.0);
        bucket.tokens = (bucket.tokens + elapsed * qps).min(burst);
        bucket.at = bucket.at.max(now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            false
        } else {
            true
        }
    }
}

impl Seen {
    fn of(e: &Event) -> Seen {
        Seen {
            count: e.count.unwrap_or(0),
            first: e.first_timestamp.clone(),
            name: e.metadata.name.clone(),
            resource_version: e.metadata.resource_version.clone(),
        }
    }
}

/// The patch client-go's two-way strategic merge patch makes between the event and the same
/// event with no count, an epoch last timestamp and no message: those three fields.
fn count_patch(event: &Event) -> Value {
    let mut p = Map::new();
    p.insert("count".into(), Value::from(event.count.unwrap_or(0)));
    if let Some(t) = &event.last_timestamp {
        p.insert("lastTimestamp".into(), serde_json::to_value(t).unwrap_or(Value::Null));
    }
    if let Some(m) = event.message.as_deref().filter(|m| !m.is_empty()) {
        p.insert("message".into(), Value::from(m));
    }
    Value::Object(p)
}

/// What client-go's keys are made of, in their order: the source (component, host), the
/// involved object (kind, namespace, name, then — for an event's own key only — field path,
/// then uid and apiVersion), and the event's type.
fn object_parts(e: &Event, field_path: bool) -> Vec<&str> {
    fn text(v: Option<&String>) -> &str {
        v.map_or("", String::as_str)
    }
    let o = &e.involved_object;
    let s = e.source.as_ref();
    let mut parts = vec![
        text(s.and_then(|s| s.component.as_ref())),
        text(s.and_then(|s| s.host.as_ref())),
        text(o.kind.as_ref()),
        text(o.namespace.as_ref()),
        text(o.name.as_ref()),
    ];
    if field_path {
        parts.push(text(o.field_path.as_ref()));
    }
    parts.extend([text(o.uid.as_ref()), text(o.api_version.as_ref()), text(e.type_.as_ref())]);
    parts
}

/// The key of an event and its repeats (client-go's `getEventKey`).
fn event_key(e: &Event) -> String {
    let mut parts = object_parts(e, true);
    parts.extend([e.reason.as_deref().unwrap_or_default(), e.message.as_deref().unwrap_or_default()]);
    parts.concat()
}

/// The spam filter's key: source and involved object, and type (client-go's `getSpamKey`).
fn spam_key(e: &Event) -> String {
    object_parts(e, false).concat()
}

/// The aggregation group and the event's message within it (client-go's
/// `EventAggregatorByReasonFunc`).
fn group_key(e: &Event) -> (String, String) {
    let mut parts = object_parts(e, false);
    parts.extend([&e.reason, &e.reporting_component, &e.reporting_instance].map(|v| v.as_deref().unwrap_or_default()));
    (parts.concat(), e.message.clone().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{EventSource, ObjectReference};

    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    fn event(object: &str, reason: &str, message: &str, seconds: i64) -> Event {
        Event {
            metadata: ObjectMeta {
                name: Some(format!("{object}.{seconds:x}")),
                namespace: Some("default".into()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                kind: Some("Pod".into()),
                namespace: Some("default".into()),
                name: Some(object.into()),
                uid: Some(format!("uid-{object}")),
                api_version: Some("v1".into()),
                ..Default::default()
            },
            reason: Some(reason.into()),
            message: Some(message.into()),
            first_timestamp: Some(Time(at(seconds))),
            last_timestamp: Some(Time(at(seconds))),
            count: Some(1),
            type_: Some("Normal".into()),
            source: Some(EventSource { component: Some("ctl".into()), host: Some("node".into()) }),
            reporting_component: Some("ctl".into()),
            reporting_instance: Some("node".into()),
            ..Default::default()
        }
    }

    fn written(c: Correlated) -> (Event, Option<Value>) {
        match c {
            Correlated::Write { event, patch } => (*event, patch),
            Correlated::Skip => panic!("skipped"),
        }
    }

    #[test]
    fn a_repeat_patches_the_first_with_its_count() {
        let mut c = EventCorrelator::new(CorrelatorOptions::default());
        let (first, patch) = written(c.correlate(&event("web", "Pulled", "pulled", 0), at(0)));
        assert_eq!((first.count, patch), (Some(1), None));
        let mut stored = first.clone();
        stored.metadata.resource_version = Some("7".into());
        c.update_state(&stored);
        let (second, patch) = written(c.correlate(&event("web", "Pulled", "pulled", 30), at(30)));
        assert_eq!(second.metadata.name, first.metadata.name);
        assert_eq!(second.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(second.first_timestamp, first.first_timestamp);
        assert_eq!(second.count, Some(2));
        let t = serde_json::to_value(Time(at(30))).unwrap();
        assert_eq!(patch, Some(serde_json::json!({"count": 2, "lastTimestamp": t, "message": "pulled"})));
        // Another message is another event.
        let (other, patch) = written(c.correlate(&event("web", "Pulled", "pulled again", 40), at(40)));
        assert_eq!((other.count, patch), (Some(1), None));
    }

    #[test]
    fn the_tenth_message_of_a_group_is_aggregated() {
        let mut c = EventCorrelator::new(CorrelatorOptions { burst: 1000, ..CorrelatorOptions::default() });
        for i in 0..9 {
            let (e, patch) = written(c.correlate(&event("web", "Failed", &format!("try {i}"), i), at(i)));
            assert_eq!((e.message.unwrap(), patch), (format!("try {i}"), None));
        }
        let (agg, patch) = written(c.correlate(&event("web", "Failed", "try 9", 9), at(9)));
        assert_eq!(agg.message.as_deref(), Some("(combined from similar events): try 9"));
        assert_eq!((agg.count, patch.is_none()), (Some(1), true));
        assert_eq!(agg.metadata.name, Some(format!("web.{:x}", at(9).as_nanosecond())));
        // The next new message counts on the aggregate.
        let (again, patch) = written(c.correlate(&event("web", "Failed", "try 10", 10), at(10)));
        assert_eq!((again.metadata.name, again.count), (agg.metadata.name, Some(2)));
        assert_eq!(patch.unwrap()["message"], "(combined from similar events): try 10");
        // Past the interval the group starts over.
        let (fresh, _) = written(c.correlate(&event("web", "Failed", "try 11", 700), at(700)));
        assert_eq!(fresh.message.as_deref(), Some("try 11"));
    }

    #[test]
    fn a_source_gets_25_events_about_an_object_then_one_each_5_minutes() {
        let mut c = EventCorrelator::new(CorrelatorOptions::default());
        let mut let_through = 0;
        for i in 0..40 {
            // Distinct reasons: neither aggregated nor the same event.
            if let Correlated::Write { .. } = c.correlate(&event("web", &format!("R{i}"), "m", 0), at(0)) {
                let_through += 1;
            }
        }
        assert_eq!(let_through, 25);
        assert_eq!(c.correlate(&event("web", "X", "m", 299), at(299)), Correlated::Skip);
        assert!(matches!(c.correlate(&event("web", "Y", "m", 301), at(301)), Correlated::Write { .. }));
        // Another object has its own allowance.
        assert!(matches!(c.correlate(&event("db", "R0", "m", 301), at(301)), Correlated::Write { .. }));
    }

    #[test]
    fn zero_options_are_client_go_s_defaults() {
        let zero = CorrelatorOptions { lru_cache_size: 0, burst: 0, qps: 0.0, max_events: 0, max_interval_seconds: 0 };
        assert_eq!(zero.with_defaults(), CorrelatorOptions::default());
    }
}
