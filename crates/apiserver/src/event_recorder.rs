//! The Events the server's controllers record about the objects they judge, written as
//! client-go's event recorder writes them (core/v1 Events through its correlator), so that
//! `kubectl describe` shows what kube-controller-manager would have said.
//!
//! Invariants, as client-go's recorder and correlator:
//! - an Event is named `<object>.<nanoseconds in hex>`, in the object's namespace (`default` for
//!   a cluster-scoped one), its involved object the object's kind, apiVersion, namespace, name,
//!   uid and resourceVersion, its source and reporting controller the recorder's component, its
//!   first and last timestamps the time it happened, count 1;
//! - a repeat (same source, object, type, reason and message) is not a new Event: the first
//!   one's count grows and its last timestamp moves (one patch); an Event deleted meanwhile is
//!   created again with the count;
//! - the tenth different message of one object's reason within ten minutes (each message
//!   renewing the window) is recorded as `(combined from similar events): <message>`, an Event
//!   that repeats in turn;
//! - each source, object and type may record 25 Events at once, then one per five minutes:
//!   repeats beyond that only count up in memory;
//! - each table remembers its 4096 most recently used keys;
//! - [`EventRecorder::record`] never waits: Events are queued (1000 at most; more are dropped)
//!   and written one at a time by the recorder's own task, as client-go's broadcaster does; a
//!   write that fails is logged and dropped (a controller never fails for its Events).
//!   [`EventRecorder::record_now`] writes at once, for a caller that must know the Event is
//!   stored.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::store::{PatchType, Store, WriteOpts};

/// How many keys each of the correlator's tables remembers.
const KEPT: usize = 4096;
/// How many Events may wait to be written.
const QUEUED: usize = 1000;
/// How many different messages of one reason make an aggregate.
const SIMILAR_MAX: usize = 10;
/// How long similar messages count towards an aggregate, from the last one.
const SIMILAR_WINDOW: Duration = Duration::from_secs(600);
/// The spam filter's bucket: its size, and the time it takes to gain one Event.
const BURST: f64 = 25.0;
const REFILL: Duration = Duration::from_secs(300);

/// The prefix of an aggregate Event's message.
const COMBINED: &str = "(combined from similar events): ";

/// An Event's name: `<object>.<nanoseconds in hex>`, or a UUID when that is not a DNS subdomain
/// (kube's `GenerateEventName`; an aggregate keeps the first form).
fn event_name(object: &str, nanos: u128, combined: bool) -> String {
    let name = format!("{object}.{nanos:x}");
    if combined || crate::cel_format::dns1123_subdomain(&name).is_empty() { name } else { crate::object::new_uid() }
}

/// The Event's type.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// The object an Event is about (its `involvedObject`).
#[derive(Clone, Debug)]
pub(crate) struct Involved {
    pub kind: String,
    pub api_version: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

impl Involved {
    /// The stored object `obj` of the resource `info`.
    pub(crate) fn of(info: &ResourceInfo, obj: &StoredObject) -> Involved {
        Involved {
            kind: info.kind.clone(),
            api_version: info.api_version(),
            namespace: obj.namespace.clone(),
            name: obj.name.clone(),
            uid: obj.uid.clone(),
            resource_version: obj.rv.to_string(),
        }
    }

    fn json(&self) -> Value {
        let mut v = json!({"kind": self.kind, "name": self.name, "uid": self.uid, "apiVersion": self.api_version});
        if !self.namespace.is_empty() {
            v["namespace"] = self.namespace.clone().into();
        }
        if !self.resource_version.is_empty() {
            v["resourceVersion"] = self.resource_version.clone().into();
        }
        v
    }

    /// The fields client-go's keys share (object, uid, apiVersion).
    fn key(&self) -> String {
        [self.kind.as_str(), &self.namespace, &self.name, &self.uid, &self.api_version].concat()
    }
}

/// An Event recorded before, to count its repeats.
#[derive(Clone)]
struct Seen {
    namespace: String,
    name: String,
    count: i64,
    first: String,
}

/// Messages of one object's reason seen lately.
struct Similar {
    messages: HashSet<String>,
    last: Instant,
}

/// A spam filter bucket.
struct Bucket {
    tokens: f64,
    at: Instant,
}

#[derive(Default)]
struct Correlator {
    seen: Lru<Seen>,
    similar: Lru<Similar>,
    buckets: Lru<Bucket>,
}

/// A table that keeps its [`KEPT`] most recently used keys.
struct Lru<V> {
    map: HashMap<String, (V, u64)>,
    tick: u64,
}

impl<V> Default for Lru<V> {
    fn default() -> Self {
        Lru { map: HashMap::new(), tick: 0 }
    }
}

impl<V> Lru<V> {
    /// The value of `key`, made the most recently used; inserted by `make` if absent (the
    /// least recently used key going when the table is full).
    fn entry(&mut self, key: &str, make: impl FnOnce() -> V) -> &mut V {
        self.tick += 1;
        let tick = self.tick;
        if !self.map.contains_key(key) {
            if self.map.len() >= KEPT
                && let Some(oldest) = self.map.iter().min_by_key(|(_, (_, t))| *t).map(|(k, _)| k.clone())
            {
                self.map.remove(&oldest);
            }
            self.map.insert(key.to_string(), (make(), tick));
        }
        let slot = self.map.get_mut(key).expect("present");
        slot.1 = tick;
        &mut slot.0
    }

    /// Sets `key` to `value`, made the most recently used.
    fn set(&mut self, key: &str, value: V) {
        let mut value = Some(value);
        let slot = self.entry(key, || value.take().expect("once"));
        if let Some(v) = value {
            *slot = v;
        }
    }

    fn get(&mut self, key: &str) -> Option<&V> {
        self.tick += 1;
        let tick = self.tick;
        self.map.get_mut(key).map(|slot| {
            slot.1 = tick;
            &slot.0
        })
    }
}

/// What to write for one Event.
enum Write {
    Create(Value),
    /// A repeat: the count, last time and message of the Event named so.
    Repeat {
        namespace: String,
        name: String,
        body: Value,
        create: Value,
    },
}

/// One Event to write.
struct Pending {
    involved: Involved,
    ty: EventType,
    reason: String,
    message: String,
    at: Instant,
}

/// A recorder of one component's Events (see the module documentation).
pub(crate) struct EventRecorder {
    writer: Arc<Writer>,
    queue: tokio::sync::mpsc::Sender<Pending>,
}

/// What writes a recorder's Events.
struct Writer {
    store: Arc<Store>,
    /// The source and reporting controller of its Events.
    component: &'static str,
    /// The field manager of its writes.
    manager: &'static str,
    correlator: parking_lot::Mutex<Correlator>,
}

impl EventRecorder {
    /// A recorder of `component`'s Events, written with the field manager `manager` by a task
    /// that ends with the recorder.
    pub(crate) fn new(store: Arc<Store>, component: &'static str, manager: &'static str) -> EventRecorder {
        let writer = Arc::new(Writer { store, component, manager, correlator: Default::default() });
        let (queue, mut pending) = tokio::sync::mpsc::channel::<Pending>(QUEUED);
        let w = writer.clone();
        tokio::spawn(async move {
            while let Some(p) = pending.recv().await {
                w.write(p).await;
            }
        });
        EventRecorder { writer, queue }
    }

    /// Records that `reason` happened to `involved`, saying `message`, without waiting for the
    /// write (dropped when [`QUEUED`] Events are waiting).
    pub(crate) fn record(&self, involved: &Involved, ty: EventType, reason: &str, message: &str) {
        if self.queue.try_send(Pending::new(involved, ty, reason, message)).is_err() {
            tracing::debug!(reason, component = self.writer.component, "event dropped: too many waiting");
        }
    }

    /// Records an Event as [`Self::record`] does, but writes it at once; the resourceVersion the
    /// write made, if it made one.
    pub(crate) async fn record_now(
        &self,
        involved: &Involved,
        ty: EventType,
        reason: &str,
        message: &str,
    ) -> Option<u64> {
        self.writer.write(Pending::new(involved, ty, reason, message)).await
    }
}

impl Pending {
    fn new(involved: &Involved, ty: EventType, reason: &str, message: &str) -> Pending {
        Pending { involved: involved.clone(), ty, reason: reason.into(), message: message.into(), at: Instant::now() }
    }
}

impl Writer {
    /// Correlates and writes one Event; the resourceVersion written.
    async fn write(&self, p: Pending) -> Option<u64> {
        let Pending { involved, ty, reason, message, at } = p;
        let write = self.correlator.lock().correlate(self.component, &involved, ty, &reason, &message, at)?;
        let registry = self.store.registry();
        let events = registry.find("", "v1", "events")?.clone();
        let written = match write {
            Write::Create(event) => self.create(&events, event).await,
            Write::Repeat { namespace, name, body, create } => {
                let patch = serde_json::to_vec(&body).unwrap_or_default();
                let opts = WriteOpts::main(false).by(self.manager);
                match self.store.patch(&events, &namespace, &name, PatchType::Strategic, &patch, opts).await {
                    Err(e) if e.code == 404 => self.create(&events, create).await,
                    r => r,
                }
            }
        };
        // (The correlator already counted this Event under the name it was written with.)
        match written {
            Ok(event) => Some(event.rv),
            Err(e) => {
                let reason = reason.as_str();
                tracing::debug!(reason, error = %e.reason, component = self.component, "could not record an event");
                None
            }
        }
    }

    async fn create(&self, events: &ResourceInfo, event: Value) -> Result<Arc<StoredObject>, crate::status::ApiError> {
        let ns = event.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").to_string();
        let mut made = self.store.create_many(events, Some(&ns), vec![event], false, self.manager).await?;
        made.pop().ok_or_else(|| crate::status::ApiError::internal("no event created"))
    }
}

impl Correlator {
    /// The correlator's decision for one Event at `now`: what to write, None when the spam
    /// filter holds it back.
    fn correlate(
        &mut self,
        component: &str,
        involved: &Involved,
        ty: EventType,
        reason: &str,
        message: &str,
        now: Instant,
    ) -> Option<Write> {
        let object = involved.key();
        // The aggregator: the tenth different message within the window is combined.
        let aggregate_key = [component, &object, ty.as_str(), reason, component].concat();
        let similar = self.similar.entry(&aggregate_key, || Similar { messages: HashSet::new(), last: now });
        if now.duration_since(similar.last) > SIMILAR_WINDOW {
            similar.messages.clear();
        }
        similar.messages.insert(message.to_string());
        similar.last = now;
        let combined = similar.messages.len() >= SIMILAR_MAX;
        let (message, key) = if combined {
            let any = similar.messages.iter().next().cloned().unwrap_or_default();
            similar.messages.remove(&any);
            (format!("{COMBINED}{message}"), aggregate_key)
        } else {
            (message.to_string(), [component, &object, ty.as_str(), reason, message].concat())
        };
        // The repeat counter.
        let time = crate::object::now_rfc3339();
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let seen = self.seen.get(&key).cloned();
        let entry = match &seen {
            Some(s) => Seen { count: s.count + 1, ..s.clone() },
            None => Seen {
                namespace: if involved.namespace.is_empty() { "default".into() } else { involved.namespace.clone() },
                name: event_name(&involved.name, nanos, combined),
                count: 1,
                first: time.clone(),
            },
        };
        self.seen.set(&key, entry.clone());
        // The spam filter, per source, object and type.
        let spam_key = [component, &object, ty.as_str()].concat();
        let bucket = self.buckets.entry(&spam_key, || Bucket { tokens: BURST, at: now });
        let gained = now.duration_since(bucket.at).as_secs_f64() / REFILL.as_secs_f64();
        bucket.tokens = (bucket.tokens + gained).min(BURST);
        bucket.at = now;
        if bucket.tokens < 1.0 {
            return None;
        }
        bucket.tokens -= 1.0;
        let event = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": entry.name, "namespace": entry.namespace},
            "involvedObject": involved.json(),
            "reason": reason, "message": message,
            "source": {"component": component},
            "firstTimestamp": entry.first, "lastTimestamp": time, "count": entry.count,
            "type": ty.as_str(), "eventTime": null,
            // (kube's combined Event does not carry the reporting controller.)
            "reportingComponent": if combined { "" } else { component }, "reportingInstance": "",
        });
        Some(match seen {
            None => Write::Create(event),
            Some(_) => Write::Repeat {
                namespace: entry.namespace,
                name: entry.name,
                body: json!({"count": entry.count, "lastTimestamp": time, "message": message}),
                create: event,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Recorder(Correlator);

    impl Recorder {
        fn correlate(
            &mut self,
            o: &Involved,
            ty: EventType,
            reason: &str,
            message: &str,
            now: Instant,
        ) -> Option<Write> {
            self.0.correlate("controllermanager", o, ty, reason, message, now)
        }
    }

    fn involved() -> Involved {
        Involved {
            kind: "PodDisruptionBudget".into(),
            api_version: "policy/v1".into(),
            namespace: "default".into(),
            name: "web".into(),
            uid: "u".into(),
            resource_version: "7".into(),
        }
    }

    fn count(w: &Write) -> i64 {
        match w {
            Write::Create(e) => e["count"].as_i64().unwrap(),
            Write::Repeat { body, .. } => body["count"].as_i64().unwrap(),
        }
    }

    #[test]
    fn repeats_count_similar_messages_combine_and_spam_is_held_back() {
        let mut r = Recorder(Correlator::default());
        let t0 = Instant::now();
        let o = involved();
        let first = r.correlate(&o, EventType::Normal, "NoPods", "No matching pods found", t0).unwrap();
        let Write::Create(event) = &first else { panic!("a new event") };
        assert_eq!(event["involvedObject"]["resourceVersion"], "7");
        assert_eq!(event["source"], json!({"component": "controllermanager"}));
        assert!(event["metadata"]["name"].as_str().unwrap().starts_with("web."));
        let again = r.correlate(&o, EventType::Normal, "NoPods", "No matching pods found", t0).unwrap();
        let Write::Repeat { name, body, .. } = &again else { panic!("a repeat") };
        assert_eq!(name, event["metadata"]["name"].as_str().unwrap());
        assert_eq!(body["count"], 2);
        // Nine different messages pass; the tenth is combined, and combined ones repeat.
        for i in 0..8 {
            let w = r.correlate(&o, EventType::Warning, "Failed", &format!("m{i}"), t0).unwrap();
            assert_eq!(count(&w), 1);
        }
        let w = r.correlate(&o, EventType::Warning, "Failed", "m8", t0).unwrap();
        let Write::Create(e) = &w else { panic!("a new event") };
        assert_eq!(e["message"], "m8");
        let w = r.correlate(&o, EventType::Warning, "Failed", "m9", t0).unwrap();
        let Write::Create(e) = &w else { panic!("the combined event") };
        assert_eq!(e["message"], "(combined from similar events): m9");
        let w = r.correlate(&o, EventType::Warning, "Failed", "m10", t0).unwrap();
        assert_eq!(count(&w), 2);
        // 25 Events per object and type at once (two Normal ones so far), then one per five
        // minutes.
        for i in 0..23 {
            assert!(r.correlate(&o, EventType::Normal, "R", &format!("n{i}"), t0).is_some(), "{i}");
        }
        assert!(r.correlate(&o, EventType::Normal, "R", "held", t0).is_none());
        assert!(r.correlate(&o, EventType::Normal, "R", "later", t0 + REFILL).is_some());
    }

    #[test]
    fn tables_keep_their_most_recent_keys_and_names_fall_back_to_uuids() {
        let mut t: Lru<usize> = Lru::default();
        for i in 0..KEPT {
            t.set(&i.to_string(), i);
        }
        // Used again, the first key stays; the second, least recent now, goes.
        assert_eq!(t.get("0"), Some(&0));
        t.set("new", 1);
        assert_eq!(t.get("0"), Some(&0));
        assert_eq!(t.get("1"), None);
        assert_eq!(t.map.len(), KEPT);
        assert_eq!(event_name("web", 0xff, false), "web.ff");
        let long = "a".repeat(251);
        assert_eq!(event_name(&long, 0xff, false).len(), 36);
        assert_eq!(event_name("system:admin", 1, false).len(), 36);
        assert_eq!(event_name("system:admin", 1, true), "system:admin.1");
    }
}
