//! The object store: current objects of every resource plus their watch-cache
//! history, behind one lock, with a single cluster-wide resourceVersion.
//!
//! Invariants: every successful write increments the global RV by exactly
//! one, replaces the object in the map and appends one event to the
//! resource's history under the same lock, so readers always see a map and a
//! history that agree. Failed writes change nothing. Objects are immutable
//! `Arc<StoredObject>` snapshots.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::object::{self, StoredObject, Template, make_key};
use crate::registry::{Registry, ResourceInfo};
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::watch_cache::{Event, EventType, History};

/// How history is bounded.
#[derive(Debug, Clone)]
pub struct HistoryConfig {
    /// Maximum events kept per resource.
    pub capacity: usize,
    /// Maximum age of kept events (None: unbounded).
    pub max_age: Option<Duration>,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig { capacity: 50_000, max_age: Some(Duration::from_secs(300)) }
    }
}

/// Options of updates and patches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOpts {
    /// Apply only `status` (the `status` subresource).
    pub status_only: bool,
    /// Validate and compute the result without storing it (`dryRun=All`).
    pub dry_run: bool,
}

/// Outcome of one optimistic replace attempt.
enum Replaced {
    Done(Arc<StoredObject>),
    Retry(Map<String, Value>),
}

/// The kind of patch in a PATCH request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 7386 merge patch (also used for strategic merge patch).
    Merge,
    /// RFC 6902 JSON patch.
    Json,
}

struct ResState {
    objects: BTreeMap<String, Arc<StoredObject>>,
    history: History,
    notify: watch::Sender<u64>,
}

struct Inner {
    rv: u64,
    res: Vec<ResState>,
}

/// A page of a list.
#[derive(Debug)]
pub struct ListPage {
    /// RV the list was served at.
    pub rv: u64,
    /// Items in key order.
    pub items: Vec<Arc<StoredObject>>,
    /// Key of the last returned item when more keys follow.
    pub next_after: Option<String>,
    /// Number of keys after this page (meaningful only without selectors).
    pub remaining: u64,
}

/// Where to read a list from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListAt {
    /// Current state.
    Latest,
    /// Exactly this RV (from history).
    Exact(u64),
}

/// Error for a reader that asked for history that is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooOld {
    /// The history start (oldest RV still answerable).
    pub start_rv: u64,
}

/// The store. Cheap to share via `Arc`.
pub struct Store {
    registry: Arc<Registry>,
    inner: Mutex<Inner>,
    rv_tx: watch::Sender<u64>,
    history_cfg: HistoryConfig,
}

fn cannot_handle(info: &ResourceInfo, detail: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{k} in version \"{v}\" cannot be handled as a {k}: {detail}",
        k = info.kind,
        v = info.version
    ))
}

/// Checks the decoded body is an object of the right kind/apiVersion with a
/// well-typed metadata; returns it as a map.
fn check_body(info: &ResourceInfo, body: Value) -> Result<Map<String, Value>, ApiError> {
    let Value::Object(mut obj) = body else {
        return Err(ApiError::bad_request("couldn't get version/kind; json parse error: expected an object"));
    };
    let api_version = info.api_version();
    match obj.get("apiVersion") {
        None => {}
        Some(Value::String(s)) if s.is_empty() || *s == api_version => {}
        Some(Value::String(s)) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({s}) does not match the expected API version ({api_version})"
            )));
        }
        Some(_) => return Err(cannot_handle(info, "apiVersion must be a string")),
    }
    match obj.get("kind") {
        None => {}
        Some(Value::String(s)) if s.is_empty() || *s == info.kind => {}
        Some(Value::String(s)) => {
            return Err(ApiError::bad_request(format!(
                "{s} in version \"{}\" cannot be handled as a {}: the object provided is unrecognized (wrong kind)",
                info.version, info.kind
            )));
        }
        Some(_) => return Err(cannot_handle(info, "kind must be a string")),
    }
    match obj.get("metadata") {
        None | Some(Value::Null) => {
            obj.insert("metadata".into(), Value::Object(Map::new()));
        }
        Some(Value::Object(m)) => {
            for f in ["name", "namespace", "generateName", "resourceVersion", "uid"] {
                if let Some(v) = m.get(f)
                    && !v.is_string()
                    && !v.is_null()
                {
                    return Err(cannot_handle(
                        info,
                        &format!(
                            "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{f} of type string",
                            json_type(v)
                        ),
                    ));
                }
            }
            for f in ["labels", "annotations"] {
                match m.get(f) {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(kv)) => {
                        if let Some((_, bad)) = kv.iter().find(|(_, v)| !v.is_string()) {
                            return Err(cannot_handle(
                                info,
                                &format!(
                                    "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{f} of type string",
                                    json_type(bad)
                                ),
                            ));
                        }
                    }
                    Some(v) => {
                        return Err(cannot_handle(
                            info,
                            &format!(
                                "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{f} of type map[string]string",
                                json_type(v)
                            ),
                        ));
                    }
                }
            }
        }
        Some(v) => {
            return Err(cannot_handle(
                info,
                &format!(
                    "json: cannot unmarshal {} into Go struct field {}.metadata of type v1.ObjectMeta",
                    json_type(v),
                    info.kind
                ),
            ));
        }
    }
    Ok(obj)
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn meta_mut(obj: &mut Map<String, Value>) -> &mut Map<String, Value> {
    if !matches!(obj.get("metadata"), Some(Value::Object(_))) {
        obj.insert("metadata".into(), Value::Object(Map::new()));
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        _ => unreachable!("metadata was just set to an object"),
    }
}

fn meta_str(obj: &Map<String, Value>, f: &str) -> Option<String> {
    obj.get("metadata").and_then(|m| m.get(f)).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}

/// Resolves the namespace of a body against the URL namespace.
fn resolve_namespace(
    info: &ResourceInfo,
    obj: &mut Map<String, Value>,
    url_ns: Option<&str>,
) -> Result<String, ApiError> {
    if !info.namespaced {
        meta_mut(obj).remove("namespace");
        return Ok(String::new());
    }
    let body_ns = meta_str(obj, "namespace");
    let ns = match (url_ns, body_ns) {
        (Some(u), Some(b)) if u != b => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        (Some(u), _) => u.to_string(),
        (None, Some(b)) => b,
        (None, None) => "default".to_string(),
    };
    meta_mut(obj).insert("namespace".into(), ns.clone().into());
    Ok(ns)
}

fn parse_rv_field(s: &str) -> Result<u64, ApiError> {
    s.parse::<u64>().map_err(|_| ApiError::bad_request(format!("invalid resource version: {s}")))
}

impl Store {
    /// A new empty store serving `registry`.
    pub fn new(registry: Arc<Registry>, history_cfg: HistoryConfig) -> Self {
        let res = registry
            .all()
            .iter()
            .map(|_| ResState { objects: BTreeMap::new(), history: History::new(0), notify: watch::channel(0).0 })
            .collect();
        Store { registry, inner: Mutex::new(Inner { rv: 0, res }), rv_tx: watch::channel(0).0, history_cfg }
    }

    /// The served resources.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    fn idx(&self, info: &ResourceInfo) -> Result<usize, ApiError> {
        self.registry
            .all()
            .iter()
            .position(|r| r.group == info.group && r.plural == info.plural)
            .ok_or_else(ApiError::no_route)
    }

    /// The current cluster-wide resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.inner.lock().rv
    }

    /// Appends an event, bumps notifications. Caller holds the lock and has
    /// already incremented `inner.rv` to `ev.rv`.
    fn commit(&self, inner: &mut Inner, i: usize, ev: Event) {
        let rv = ev.rv;
        let st = &mut inner.res[i];
        match ev.kind {
            EventType::Deleted => {
                st.objects.remove(&ev.obj.key);
            }
            _ => {
                st.objects.insert(ev.obj.key.clone(), ev.obj.clone());
            }
        }
        st.history.push(Arc::new(ev), self.history_cfg.capacity, self.history_cfg.max_age);
        st.notify.send_replace(rv);
        self.rv_tx.send_replace(rv);
    }

    /// Creates an object. `url_ns` is the namespace from the URL, if any.
    pub fn create(
        &self,
        info: &ResourceInfo,
        url_ns: Option<&str>,
        body: Value,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let mut objs = self.create_many(info, url_ns, vec![body], false)?;
        objs.pop().ok_or_else(|| ApiError::internal("no object created"))
    }

    fn prepare_create(
        &self,
        info: &ResourceInfo,
        url_ns: Option<&str>,
        body: Value,
    ) -> Result<(Template, String), ApiError> {
        let mut obj = check_body(info, body)?;
        resolve_namespace(info, &mut obj, url_ns)?;
        let name = match meta_str(&obj, "name") {
            Some(n) => n,
            None => match meta_str(&obj, "generateName") {
                Some(g) => format!("{g}{}", object::name_suffix()),
                None => {
                    return Err(ApiError::invalid_object(
                        &info.group,
                        &info.kind,
                        "",
                        "metadata.name",
                        "FieldValueRequired",
                        "Required value: name or generateName is required",
                    ));
                }
            },
        };
        if !object::valid_name(&name) {
            let msg = format!(
                "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            );
            return Err(ApiError::invalid_object(
                &info.group,
                &info.kind,
                &name,
                "metadata.name",
                "FieldValueInvalid",
                &msg,
            ));
        }
        let now = object::now_rfc3339();
        let meta = meta_mut(&mut obj);
        meta.insert("name".into(), name.clone().into());
        meta.insert("uid".into(), object::new_uid().into());
        meta.insert("generation".into(), 1.into());
        meta.insert("creationTimestamp".into(), now.into());
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        let default_phase = match (info.group.as_str(), info.plural.as_str()) {
            ("", "pods") => Some("Pending"),
            ("", "namespaces") => Some("Active"),
            _ => None,
        };
        if let Some(phase) = default_phase {
            let status = obj.entry("status").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(s) = status {
                s.entry("phase").or_insert_with(|| phase.into());
            }
        }
        Ok((Template::new(info, &mut obj), name))
    }

    /// Creates many objects at once (one RV each, one lock acquisition).
    /// Either all are created or none.
    pub fn create_many(
        &self,
        info: &ResourceInfo,
        url_ns: Option<&str>,
        bodies: Vec<Value>,
        dry_run: bool,
    ) -> Result<Vec<Arc<StoredObject>>, ApiError> {
        let i = self.idx(info)?;
        let mut prepared = Vec::with_capacity(bodies.len());
        for b in bodies {
            prepared.push(self.prepare_create(info, url_ns, b)?);
        }
        let mut inner = self.inner.lock();
        let mut seen = std::collections::HashSet::new();
        for (t, name) in &prepared {
            if inner.res[i].objects.contains_key(t.key()) || !seen.insert(t.key()) {
                return Err(ApiError::already_exists(&info.group, &info.plural, name));
            }
        }
        drop(seen);
        if dry_run {
            // Like kube: the would-be object, without a resourceVersion.
            return Ok(prepared.into_iter().map(|(t, _)| Arc::new(t.finish_without_rv(info))).collect());
        }
        let mut out = Vec::with_capacity(prepared.len());
        for (t, _) in prepared {
            let rv = inner.rv + 1;
            inner.rv = rv;
            let stored = Arc::new(t.finish(rv));
            out.push(stored.clone());
            self.commit(
                &mut inner,
                i,
                Event { rv, kind: EventType::Added, obj: stored, prev: None, at: Instant::now() },
            );
        }
        Ok(out)
    }

    /// Gets an object.
    pub fn get(&self, info: &ResourceInfo, ns: &str, name: &str) -> Result<Arc<StoredObject>, ApiError> {
        let i = self.idx(info)?;
        let ns = if info.namespaced { ns } else { "" };
        let inner = self.inner.lock();
        inner.res[i]
            .objects
            .get(&make_key(ns, name))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, name))
    }

    fn current(&self, i: usize, info: &ResourceInfo, key: &str, name: &str) -> Result<Arc<StoredObject>, ApiError> {
        self.inner.lock().res[i]
            .objects
            .get(key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, name))
    }

    /// Replaces an object (PUT). A non-empty `metadata.resourceVersion` in the
    /// body is a precondition (409 on mismatch). With `status_only`, only the
    /// `status` of the body is applied.
    pub fn update(
        &self,
        info: &ResourceInfo,
        url_ns: Option<&str>,
        url_name: Option<&str>,
        body: Value,
        opts: WriteOpts,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let i = self.idx(info)?;
        let mut obj = check_body(info, body)?;
        let ns = resolve_namespace(info, &mut obj, url_ns)?;
        let name = match (meta_str(&obj, "name"), url_name) {
            (Some(b), Some(u)) if b != u => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({b}) does not match the name on the URL ({u})"
                )));
            }
            (Some(b), _) => b,
            (None, Some(u)) => u.to_string(),
            (None, None) => {
                return Err(ApiError::invalid_object(
                    &info.group,
                    &info.kind,
                    "",
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                ));
            }
        };
        let precondition = match meta_str(&obj, "resourceVersion") {
            Some(s) => Some(parse_rv_field(&s)?),
            None => None,
        };
        let key = make_key(&ns, &name);
        loop {
            let old = self.current(i, info, &key, &name)?;
            if precondition.is_some_and(|p| p != old.rv) {
                return Err(ApiError::conflict(&info.group, &info.plural, &name));
            }
            match self.replace(i, info, &old, obj, opts)? {
                Replaced::Done(r) => return Ok(r),
                Replaced::Retry(o) => obj = o,
            }
        }
    }

    /// Applies a patch to an object.
    pub fn patch(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        kind: PatchType,
        patch: &[u8],
        opts: WriteOpts,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let i = self.idx(info)?;
        let ns = if info.namespaced { ns } else { "" };
        let patch_val: Value =
            serde_json::from_slice(patch).map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
        let json_patch = match kind {
            PatchType::Json => Some(
                serde_json::from_value::<json_patch::Patch>(patch_val.clone())
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
            ),
            PatchType::Merge => {
                if !patch_val.is_object() {
                    return Err(ApiError::bad_request("error decoding patch: a merge patch must be a JSON object"));
                }
                None
            }
        };
        let key = make_key(ns, name);
        loop {
            let old = self.current(i, info, &key, name)?;
            let mut doc = old.value();
            match &json_patch {
                Some(p) => json_patch::patch(&mut doc, p).map_err(|e| {
                    ApiError::new(
                        422,
                        "Invalid",
                        format!("the server rejected our request due to an error in our request: {e}"),
                    )
                })?,
                None => json_patch::merge(&mut doc, &patch_val),
            }
            let obj = check_body(info, doc)?;
            if meta_str(&obj, "name").as_deref() != Some(name) {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({}) does not match the name on the URL ({name})",
                    meta_str(&obj, "name").unwrap_or_default()
                )));
            }
            if let Some(s) = meta_str(&obj, "resourceVersion")
                && parse_rv_field(&s)? != old.rv
            {
                return Err(ApiError::conflict(&info.group, &info.plural, name));
            }
            if let Replaced::Done(r) = self.replace(i, info, &old, obj, opts)? {
                return Ok(r);
            }
        }
    }

    /// Computes the successor of `old` outside the lock, then commits it if
    /// `old` is still current. `Retry` gives the body back after losing a race.
    fn replace(
        &self,
        i: usize,
        info: &ResourceInfo,
        old: &Arc<StoredObject>,
        new: Map<String, Value>,
        opts: WriteOpts,
    ) -> Result<Replaced, ApiError> {
        let WriteOpts { status_only, dry_run } = opts;
        let mut obj = if status_only {
            let Value::Object(mut o) = old.value() else {
                return Err(ApiError::internal("stored object is not an object"));
            };
            match new.get("status") {
                Some(s) => o.insert("status".into(), s.clone()),
                None => o.remove("status"),
            };
            o
        } else {
            new
        };
        let new_spec = obj.get("spec").map(|s| serde_json::to_vec(s).unwrap_or_default());
        let spec_changed = new_spec.as_deref() != old.spec_bytes();
        {
            let meta = meta_mut(&mut obj);
            meta.insert("name".into(), old.name.clone().into());
            if info.namespaced {
                meta.insert("namespace".into(), old.namespace.clone().into());
            } else {
                meta.remove("namespace");
            }
            if old.uid.is_empty() {
                meta.remove("uid");
            } else {
                meta.insert("uid".into(), old.uid.clone().into());
            }
            for f in object::KEPT_META {
                match old.kept.iter().find(|(k, _)| k == f) {
                    Some((_, v)) => meta.insert((*f).into(), v.clone()),
                    None => meta.remove(*f),
                };
            }
            let g = old.generation.max(1);
            meta.insert("generation".into(), (if spec_changed { g + 1 } else { g }).into());
        }
        obj.remove("kind");
        obj.remove("apiVersion");
        // Removing the last finalizer of an object being deleted deletes it.
        let finalized = obj
            .get("metadata")
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key("deletionTimestamp") && !has_finalizers(m));
        let template = Template::new(info, &mut obj);
        // A no-op update writes nothing and returns the current object.
        if !finalized && template.same_as(old) {
            return Ok(Replaced::Done(old.clone()));
        }
        if dry_run {
            return Ok(Replaced::Done(Arc::new(template.finish(old.rv))));
        }
        let mut inner = self.inner.lock();
        if !inner.res[i].objects.get(&old.key).is_some_and(|cur| Arc::ptr_eq(cur, old)) {
            return Ok(Replaced::Retry(obj));
        }
        let rv = inner.rv + 1;
        inner.rv = rv;
        let stored = Arc::new(template.finish(rv));
        let kind = if finalized { EventType::Deleted } else { EventType::Modified };
        self.commit(
            &mut inner,
            i,
            Event { rv, kind, obj: stored.clone(), prev: Some(old.clone()), at: Instant::now() },
        );
        Ok(Replaced::Done(stored))
    }

    /// Deletes an object; returns its last state carrying the deletion RV.
    /// An object with finalizers is only marked (`deletionTimestamp`) and
    /// goes away when its last finalizer is removed.
    /// `precondition_rv`/`precondition_uid` are DeleteOptions preconditions.
    pub fn delete(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        precondition_rv: Option<u64>,
        precondition_uid: Option<&str>,
        dry_run: bool,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let i = self.idx(info)?;
        let ns = if info.namespaced { ns } else { "" };
        let key = make_key(ns, name);
        loop {
            let old = self.current(i, info, &key, name)?;
            if precondition_rv.is_some_and(|p| p != old.rv) {
                return Err(ApiError::conflict(&info.group, &info.plural, name));
            }
            if let Some(u) = precondition_uid
                && u != old.uid
            {
                let mut e = ApiError::conflict(&info.group, &info.plural, name);
                e.message = format!(
                    "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: UID in precondition: {u}, UID in object meta: {}",
                    info.plural, old.uid
                );
                return Err(e);
            }
            if dry_run {
                return Ok(old);
            }
            let Value::Object(mut map) = old.value() else {
                return Err(ApiError::internal("stored object is not an object"));
            };
            let meta = meta_mut(&mut map);
            let graceful = has_finalizers(meta);
            if graceful {
                if meta.contains_key("deletionTimestamp") {
                    return Ok(old);
                }
                meta.insert("deletionTimestamp".into(), object::now_rfc3339().into());
                meta.insert("deletionGracePeriodSeconds".into(), 0.into());
                let g = meta.get("generation").and_then(Value::as_i64).unwrap_or(1);
                meta.insert("generation".into(), (g + 1).into());
            }
            let template = if graceful { Template::new(info, &mut map) } else { Template::from_stored(&old) };
            let mut inner = self.inner.lock();
            if !inner.res[i].objects.get(&key).is_some_and(|c| Arc::ptr_eq(c, &old)) {
                continue;
            }
            let rv = inner.rv + 1;
            inner.rv = rv;
            let last = Arc::new(template.finish(rv));
            let kind = if graceful { EventType::Modified } else { EventType::Deleted };
            self.commit(&mut inner, i, Event { rv, kind, obj: last.clone(), prev: Some(old), at: Instant::now() });
            return Ok(last);
        }
    }

    /// Lists one page. `start` is the first key to consider (inclusive);
    /// `limit` 0 means unlimited. Exact reads come from history.
    pub fn list(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        at: ListAt,
        start: Option<&str>,
        limit: usize,
        sel: &Selectors,
    ) -> Result<ListPage, ApiError> {
        let i = self.idx(info)?;
        let inner = self.inner.lock();
        let st = &inner.res[i];
        let prefix = match ns {
            Some(n) if info.namespaced => format!("{n}/"),
            _ => String::new(),
        };
        let from = match start {
            Some(s) if s > prefix.as_str() => s.to_string(),
            _ => prefix.clone(),
        };
        let at_rv = match at {
            ListAt::Latest => inner.rv,
            ListAt::Exact(n) if n == inner.rv => inner.rv,
            ListAt::Exact(n) if n > inner.rv => return Err(ApiError::too_large_rv(n, inner.rv)),
            ListAt::Exact(n) if n < st.history.start_rv => {
                return Err(ApiError::expired("The resourceVersion for the provided list is too old."));
            }
            ListAt::Exact(n) => n,
        };
        let mut page = ListPage { rv: at_rv, items: Vec::new(), next_after: None, remaining: 0 };
        let in_range = |k: &str| k.starts_with(prefix.as_str());
        if at_rv == inner.rv {
            let iter = st
                .objects
                .range::<str, _>((std::ops::Bound::Included(from.as_str()), std::ops::Bound::Unbounded))
                .take_while(|(k, _)| in_range(k))
                .map(|(_, v)| v);
            fill_page(&mut page, iter, limit, sel);
        } else {
            let mut overlay: HashMap<&str, Option<&Arc<StoredObject>>> = HashMap::new();
            for ev in st.history.newer_than_rev(at_rv) {
                overlay.insert(ev.obj.key.as_str(), ev.prev.as_ref());
            }
            let mut snap: BTreeMap<&str, &Arc<StoredObject>> = st
                .objects
                .range::<str, _>((std::ops::Bound::Included(from.as_str()), std::ops::Bound::Unbounded))
                .take_while(|(k, _)| in_range(k))
                .map(|(k, v)| (k.as_str(), v))
                .collect();
            for (k, v) in overlay {
                if k < from.as_str() || !in_range(k) {
                    continue;
                }
                match v {
                    Some(o) => snap.insert(k, o),
                    None => snap.remove(k),
                };
            }
            fill_page(&mut page, snap.into_values(), limit, sel);
        }
        Ok(page)
    }

    /// Current objects matching `sel` in key order, with the RV they are at.
    pub fn snapshot(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        sel: &Selectors,
    ) -> Result<(u64, Vec<Arc<StoredObject>>), ApiError> {
        let p = self.list(info, ns, ListAt::Latest, None, 0, sel)?;
        Ok((p.rv, p.items))
    }

    /// Subscribes to change notifications of a resource (value: last RV).
    pub fn subscribe(&self, info: &ResourceInfo) -> Result<watch::Receiver<u64>, ApiError> {
        let i = self.idx(info)?;
        Ok(self.inner.lock().res[i].notify.subscribe())
    }

    /// Reads up to `max` events of a resource after `after`.
    pub fn read_events(
        &self,
        info: &ResourceInfo,
        after: u64,
        max: usize,
        out: &mut Vec<Arc<Event>>,
    ) -> Result<Result<u64, TooOld>, ApiError> {
        let i = self.idx(info)?;
        let inner = self.inner.lock();
        let h = &inner.res[i].history;
        Ok(match h.read_after(after, max, out) {
            Some(()) => Ok(inner.rv),
            None => Err(TooOld { start_rv: h.start_rv }),
        })
    }

    /// Number of events of a resource with `rv > after` (a watcher's backlog).
    pub fn backlog(&self, info: &ResourceInfo, after: u64) -> usize {
        self.idx(info).map(|i| self.inner.lock().res[i].history.count_after(after)).unwrap_or(0)
    }

    /// Oldest RV a watch of this resource can start from, and the current RV.
    pub fn history_bounds(&self, info: &ResourceInfo) -> Result<(u64, u64), ApiError> {
        let i = self.idx(info)?;
        let inner = self.inner.lock();
        Ok((inner.res[i].history.start_rv, inner.rv))
    }

    /// Waits (up to `timeout`) until the global RV reaches `rv`.
    pub async fn wait_for_rv(&self, rv: u64, timeout: Duration) -> bool {
        let mut rx = self.rv_tx.subscribe();
        let fut = rx.wait_for(|cur| *cur >= rv);
        matches!(tokio::time::timeout(timeout, fut).await, Ok(Ok(_)))
    }

    /// Trims all histories up to `rv` (default: current RV).
    pub fn compact(&self, rv: Option<u64>) -> u64 {
        let mut inner = self.inner.lock();
        let target = rv.unwrap_or(inner.rv).min(inner.rv);
        for st in &mut inner.res {
            st.history.compact(target);
        }
        target
    }

    /// Drops all history (as after an apiserver restart).
    pub fn reset_history(&self) {
        let mut inner = self.inner.lock();
        let rv = inner.rv;
        for st in &mut inner.res {
            st.history.reset(rv);
        }
    }

    /// Number of events retained per resource (diagnostics).
    pub fn history_len(&self, info: &ResourceInfo) -> usize {
        self.idx(info).map(|i| self.inner.lock().res[i].history.len()).unwrap_or(0)
    }
}

fn has_finalizers(meta: &Map<String, Value>) -> bool {
    meta.get("finalizers").and_then(Value::as_array).is_some_and(|a| !a.is_empty())
}

fn fill_page<'a>(
    page: &mut ListPage,
    iter: impl Iterator<Item = &'a Arc<StoredObject>>,
    limit: usize,
    sel: &Selectors,
) {
    let mut iter = iter.peekable();
    while let Some(o) = iter.next() {
        if sel.matches(&o.labels, &o.fields) {
            page.items.push(o.clone());
            if limit > 0 && page.items.len() >= limit {
                if iter.peek().is_some() {
                    page.next_after = Some(o.key.clone());
                    page.remaining = iter.count() as u64;
                }
                return;
            }
        }
    }
}

/// An object together with its resource type.
pub type ResourceObject = (Arc<ResourceInfo>, Arc<StoredObject>);

impl Store {
    /// All current objects of every resource with the current RV.
    pub fn dump(&self) -> (u64, Vec<ResourceObject>) {
        let inner = self.inner.lock();
        let mut out = Vec::new();
        for (info, st) in self.registry.all().iter().zip(&inner.res) {
            out.extend(st.objects.values().map(|o| (info.clone(), o.clone())));
        }
        (inner.rv, out)
    }

    /// Replaces the whole state (objects keep their own RVs); history then
    /// starts empty at `rv`.
    pub fn restore(&self, rv: u64, objects: Vec<(Arc<ResourceInfo>, Map<String, Value>)>) {
        let built: Vec<(usize, StoredObject)> = objects
            .into_iter()
            .filter_map(|(info, o)| {
                let i = self.idx(&info).ok()?;
                let orv = o
                    .get("metadata")
                    .and_then(|m| m.get("resourceVersion"))
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(rv);
                Some((i, object::build(&info, &o, orv)))
            })
            .collect();
        let mut inner = self.inner.lock();
        for st in &mut inner.res {
            st.objects.clear();
        }
        for (i, o) in built {
            inner.res[i].objects.insert(o.key.clone(), Arc::new(o));
        }
        let rv = rv.max(inner.rv);
        inner.rv = rv;
        for st in &mut inner.res {
            st.history.reset(rv);
            st.notify.send_replace(rv);
        }
        self.rv_tx.send_replace(rv);
    }
}
