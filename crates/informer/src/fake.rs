//! An in-memory list/watch source for tests (client-go's `FakeControllerSource`).
//!
//! Every change gets the next resourceVersion (written into the object), is recorded, and is
//! broadcast to open watches; the `*_drop_watch` variants change state without a watch event (a
//! missed event), `reset_watch` closes every watch and forgets the history (so the next watch
//! gets 410 and the reflector relists), and `set_list_error` makes LIST fail.
//!
//! Semantics follow the Go fake: LIST ignores its options and returns everything at the latest
//! resourceVersion; WATCH needs a numeric resourceVersion (so streaming lists are unsupported and
//! an RV "" watch fails), replays recorded changes after it, answers 410 for one older than the
//! recorded history, and refuses one from the future.

use std::sync::Arc;

use futures_util::StreamExt;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::listwatch::{Error, ListOptions, ListerWatcher, ObjectList, Status, WatchEvent, WatchStream};
use crate::object::Object;

enum Kind {
    Added,
    Modified,
    Deleted,
}

struct Change {
    rv: u64,
    kind: Kind,
    json: Arc<[u8]>,
}

/// One broadcast change: (resourceVersion, 0 added / 1 modified / 2 deleted, JSON).
type Broadcast = (u64, u8, Arc<[u8]>);

struct State {
    items: std::collections::BTreeMap<String, Arc<[u8]>>,
    changes: Vec<Change>,
    /// Changes older than this RV were forgotten by `reset_watch`.
    history_start: u64,
    last_rv: u64,
    watchers: Vec<mpsc::UnboundedSender<Option<Broadcast>>>,
    list_error: Option<Error>,
    lists: Vec<ListOptions>,
    watches: Vec<ListOptions>,
}

/// The fake source. Cheap to clone (shared state).
#[derive(Clone)]
pub struct FakeSource {
    st: Arc<Mutex<State>>,
}

impl Default for FakeSource {
    fn default() -> Self {
        FakeSource {
            st: Arc::new(Mutex::new(State {
                items: Default::default(),
                changes: Vec::new(),
                history_start: 0,
                last_rv: 0,
                watchers: Vec::new(),
                list_error: None,
                lists: Vec::new(),
                watches: Vec::new(),
            })),
        }
    }
}

fn key_of(v: &Value) -> String {
    let m = &v["metadata"];
    let name = m["name"].as_str().unwrap_or_default();
    match m["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

impl FakeSource {
    /// An empty source.
    pub fn new() -> Self {
        Self::default()
    }

    fn change(&self, kind: Kind, mut obj: Value, broadcast: bool) -> u64 {
        let mut st = self.st.lock();
        st.last_rv += 1;
        let rv = st.last_rv;
        obj["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        let key = key_of(&obj);
        let json: Arc<[u8]> = serde_json::to_vec(&obj).expect("serialisable").into();
        match kind {
            Kind::Deleted => {
                st.items.remove(&key);
            }
            _ => {
                st.items.insert(key, json.clone());
            }
        }
        let code = match kind {
            Kind::Added => 0,
            Kind::Modified => 1,
            Kind::Deleted => 2,
        };
        st.changes.push(Change { rv, kind, json: json.clone() });
        if broadcast {
            st.watchers.retain(|w| w.send(Some((rv, code, json.clone()))).is_ok());
        }
        rv
    }

    /// Adds an object (JSON with at least `metadata.name`); returns its resourceVersion.
    pub fn add(&self, obj: Value) -> u64 {
        self.change(Kind::Added, obj, true)
    }
    /// Modifies an object.
    pub fn modify(&self, obj: Value) -> u64 {
        self.change(Kind::Modified, obj, true)
    }
    /// Deletes an object.
    pub fn delete(&self, obj: Value) -> u64 {
        self.change(Kind::Deleted, obj, true)
    }
    /// Adds an object without telling open watches.
    pub fn add_drop_watch(&self, obj: Value) -> u64 {
        self.change(Kind::Added, obj, false)
    }
    /// Modifies an object without telling open watches.
    pub fn modify_drop_watch(&self, obj: Value) -> u64 {
        self.change(Kind::Modified, obj, false)
    }
    /// Deletes an object without telling open watches.
    pub fn delete_drop_watch(&self, obj: Value) -> u64 {
        self.change(Kind::Deleted, obj, false)
    }

    /// Closes every open watch and forgets the change history (the next watch gets 410).
    pub fn reset_watch(&self) {
        let mut st = self.st.lock();
        for w in st.watchers.drain(..) {
            let _ = w.send(None);
        }
        st.changes.clear();
        st.history_start = st.last_rv + 1;
    }

    /// Makes LIST fail with `err` (or succeed again with `None`).
    pub fn set_list_error(&self, err: Option<Error>) {
        self.st.lock().list_error = err;
    }

    /// The latest resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.st.lock().last_rv
    }

    /// The options of every LIST call so far.
    pub fn list_calls(&self) -> Vec<ListOptions> {
        self.st.lock().lists.clone()
    }

    /// The options of every WATCH call so far.
    pub fn watch_calls(&self) -> Vec<ListOptions> {
        self.st.lock().watches.clone()
    }

    /// Current objects as (key, JSON).
    pub fn items(&self) -> Vec<(String, Value)> {
        self.st.lock().items.iter().map(|(k, j)| (k.clone(), serde_json::from_slice(j).expect("stored JSON"))).collect()
    }
}

fn to_object<K>(json: &[u8]) -> Result<Object<K>, Error> {
    Ok(Object::from_json(bytes::Bytes::copy_from_slice(json))?)
}

impl<K: Send + Sync + 'static> ListerWatcher<K> for FakeSource {
    async fn list(&self, opts: &ListOptions) -> Result<ObjectList<K>, Error> {
        let st = {
            let mut st = self.st.lock();
            st.lists.push(opts.clone());
            if let Some(e) = &st.list_error {
                return Err(e.clone());
            }
            (st.items.values().cloned().collect::<Vec<_>>(), st.last_rv)
        };
        let items = st.0.iter().map(|j| to_object::<K>(j)).collect::<Result<Vec<_>, _>>()?;
        Ok(ObjectList { items, resource_version: st.1.to_string(), continue_token: None, remaining_item_count: None })
    }

    async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<K>, Error> {
        let mut st = self.st.lock();
        st.watches.push(opts.clone());
        let rv_str = opts.resource_version.clone().unwrap_or_default();
        let rv: u64 = rv_str
            .parse()
            .map_err(|_| Error::Decode(format!("fake source: resourceVersion {rv_str:?} is not a number")))?;
        if rv > st.last_rv {
            return Err(Error::Decode("resource version in the future not supported".into()));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        if rv + 1 < st.history_start || (rv < st.last_rv && st.changes.first().is_none_or(|c| c.rv > rv + 1)) {
            let message = format!("too old resource version: {rv} ({})", st.history_start.max(1) - 1);
            let status = Status::failure(410, "Expired", message);
            let s = futures_util::stream::iter(vec![Ok(WatchEvent::Error(status))]);
            return Ok(s.boxed());
        }
        for c in st.changes.iter().filter(|c| c.rv > rv) {
            let code = match c.kind {
                Kind::Added => 0,
                Kind::Modified => 1,
                Kind::Deleted => 2,
            };
            let _ = tx.send(Some((c.rv, code, c.json.clone())));
        }
        st.watchers.push(tx);
        drop(st);
        let s = futures_util::stream::unfold(rx, |mut rx| async move {
            let (_, code, json) = rx.recv().await.flatten()?;
            let ev = to_object::<K>(&json).map(|o| match code {
                0 => WatchEvent::Added(o),
                1 => WatchEvent::Modified(o),
                _ => WatchEvent::Deleted(o),
            });
            Some((ev, rx))
        });
        Ok(s.boxed())
    }

    fn supports_streaming_list(&self) -> bool {
        false
    }
}
