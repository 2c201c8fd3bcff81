//! The watch cache: the server's first-level cache in front of the storage, the one path that
//! serves GET, LIST and WATCH.
//!
//! It holds, per served resource, the current objects (in key order) and a bounded history of
//! change events ([`History`]), and the revision up to which it has applied the storage's changes.
//! It is fed **only** by the storage's watch ([`Dispatcher`]): at start it reads the state at the
//! storage's compacted revision and replays every change since (so a restarted server still serves
//! watches from revisions taken before the restart; on etcd, whose history other programs share,
//! it starts at the current revision as kube-apiserver's cache does), then follows live changes. A write made
//! through this server may leave the object it built as a *hint* for its revision, which the
//! dispatcher then uses instead of parsing the stored bytes (the same bytes either way).
//!
//! Invariants: objects and histories change only in the dispatcher, one storage change at a time,
//! in revision order, under one lock, so readers always see a map and a history that agree at the
//! cache's revision; a reader waiting for a revision ([`WatchCache::wait_for_rv`]) is woken when
//! the cache reaches it. When the storage's watch can no longer continue (its history was
//! compacted past the cache), the cache is rebuilt from the storage and every open watch is ended
//! ([`WatchCache::reset_epoch`]): their clients re-watch, and get 410 if they are too far behind.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;

use crate::object::{self, StoredObject};
use crate::registry::{Registry, ResourceInfo};
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::storage::keys::KeyLayout;
use crate::storage::{Change, KeyValue, RangeRequest, Revision, Storage, StorageError};
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

/// Whether the cache can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Reading the storage: requests get 429 (kube-apiserver's "storage is (re)initializing").
    Initializing,
    /// Serving.
    Ready,
}

struct ResState {
    info: Arc<ResourceInfo>,
    objects: BTreeMap<String, Arc<StoredObject>>,
    history: History,
    notify: watch::Sender<u64>,
    /// Events were added since the watchers were last woken.
    dirty: bool,
}

impl ResState {
    fn new(info: Arc<ResourceInfo>, start: u64) -> Self {
        let notify = watch::channel(start).0;
        ResState { info, objects: BTreeMap::new(), history: History::new(start), notify, dirty: true }
    }

    fn push(&mut self, event: Event, cfg: &HistoryConfig) {
        self.history.push(Arc::new(event), cfg.capacity, cfg.max_age);
        self.dirty = true;
    }
}

/// Whether two views of a custom resource differ in nothing its definition's spec or accepted
/// names say (a definition being deleted is the same definition, as kube keeps its storage).
fn same_definition(a: &ResourceInfo, b: &ResourceInfo) -> bool {
    let mut a = a.clone();
    if let (Some(ca), Some(cb)) = (a.custom.as_mut(), b.custom.as_ref()) {
        Arc::make_mut(ca).terminating = cb.terminating;
    }
    a == *b
}

/// A resource in the cache: group, plural and version (a custom resource served in several
/// versions has one view per version, each holding its objects converted to that version).
type ResId = (String, String, String);

fn res_id(info: &ResourceInfo) -> ResId {
    (info.group.clone(), info.plural.clone(), info.version.clone())
}

struct State {
    rv: u64,
    res: HashMap<ResId, ResState>,
    /// Storage path → its resources (the views of one resource), longest paths first (so
    /// `services/specs` wins over `services`).
    paths: Vec<(String, Vec<ResId>)>,
    /// Objects built by this server's writes, by revision, for the dispatcher.
    hints: HashMap<u64, Arc<StoredObject>>,
    /// Views of custom resources no longer served whose watchers have yet to end: they read the
    /// last events (their objects' deletions) first. Let go at the first change published once
    /// no watcher holds one.
    retiring: HashMap<ResId, ResState>,
}

/// The watch cache (see the module documentation).
pub struct WatchCache {
    registry: RwLock<Arc<Registry>>,
    layout: KeyLayout,
    history_cfg: HistoryConfig,
    state: Mutex<State>,
    rv_tx: watch::Sender<u64>,
    ready: watch::Sender<Readiness>,
    reset_epoch: watch::Sender<u64>,
    lag_us: std::sync::atomic::AtomicU64,
    /// Counts the registry's changes (CustomResourceDefinitions served or withdrawn).
    registry_changes: watch::Sender<u64>,
    /// Objects conversion webhooks converted for reads, reused while unchanged.
    conversions: crate::conversion::Conversions,
    /// Whether requests are authorized by RBAC (else every one is allowed).
    rbac: std::sync::atomic::AtomicBool,
}

impl WatchCache {
    /// What conversion webhooks converted for reads of this server's objects.
    pub(crate) fn conversions(&self) -> &crate::conversion::Conversions {
        &self.conversions
    }

    /// Authorizes the requests its readers judge in `mode`.
    pub fn set_authorization(&self, mode: crate::AuthorizationMode) {
        let rbac = mode == crate::AuthorizationMode::Rbac;
        self.rbac.store(rbac, std::sync::atomic::Ordering::Relaxed);
    }

    /// How requests are authorized: by the roles this cache holds, or not at all.
    pub fn authorization(&self) -> crate::AuthorizationMode {
        if self.rbac.load(std::sync::atomic::Ordering::Relaxed) {
            crate::AuthorizationMode::Rbac
        } else {
            crate::AuthorizationMode::AlwaysAllow
        }
    }

    /// An empty cache for the resources of `registry` (not ready until a [`Dispatcher`] fills it).
    pub fn new(registry: Arc<Registry>, layout: KeyLayout, history_cfg: HistoryConfig) -> Self {
        let cache = WatchCache {
            registry: RwLock::new(registry.clone()),
            layout,
            history_cfg,
            state: Mutex::new(State {
                rv: 0,
                res: HashMap::new(),
                paths: Vec::new(),
                hints: HashMap::new(),
                retiring: HashMap::new(),
            }),
            rv_tx: watch::channel(0).0,
            ready: watch::channel(Readiness::Initializing).0,
            reset_epoch: watch::channel(0).0,
            lag_us: std::sync::atomic::AtomicU64::new(0),
            registry_changes: watch::channel(0).0,
            conversions: Default::default(),
            rbac: std::sync::atomic::AtomicBool::new(false),
        };
        cache.reset_resources(&mut cache.state.lock(), 0);
        cache
    }

    fn reset_resources(&self, st: &mut State, start: u64) {
        let reg = self.registry.read().clone();
        st.res = reg.all().iter().map(|i| (res_id(i), ResState::new(i.clone(), start))).collect();
        st.retiring.clear();
        Self::rebuild_paths(st);
        st.rv = start;
    }

    fn rebuild_paths(st: &mut State) {
        let mut paths: Vec<(String, Vec<ResId>)> = Vec::new();
        let mut ids: Vec<(&ResId, &ResState)> = st.res.iter().collect();
        // The storage version's view first: it takes the hints of writes.
        ids.sort_by_key(|(id, r)| (r.info.custom.as_ref().is_some_and(|c| c.storage_version != id.2), (*id).clone()));
        for (id, r) in ids {
            match paths.iter_mut().find(|(p, _)| *p == r.info.storage_path) {
                Some((_, v)) => v.push(id.clone()),
                None => paths.push((r.info.storage_path.clone(), vec![id.clone()])),
            }
        }
        paths.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
        st.paths = paths;
    }

    /// The served resources. It changes when CustomResourceDefinitions are served or withdrawn
    /// (see [`Self::registry_changes`]).
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.read().clone()
    }

    /// A receiver that changes whenever the registry does.
    pub fn registry_changes(&self) -> watch::Receiver<u64> {
        self.registry_changes.subscribe()
    }

    /// Waits until `pred` holds for the registry; false on timeout.
    pub async fn wait_for_registry(&self, timeout: Duration, pred: impl Fn(&Registry) -> bool) -> bool {
        let mut rx = self.registry_changes();
        let wait = async {
            loop {
                rx.borrow_and_update();
                if pred(&self.registry()) {
                    return true;
                }
                if rx.changed().await.is_err() {
                    return false;
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.unwrap_or(false)
    }

    /// Swaps in a new registry and tells its subscribers.
    fn set_registry(&self, reg: Registry) {
        *self.registry.write() = Arc::new(reg);
        self.registry_changes.send_modify(|n| *n += 1);
    }

    /// Serves what a CustomResourceDefinition now says (`crd`: its current version, None once it
    /// is deleted): views of versions no longer served are withdrawn (their watchers read the
    /// events they have yet to send, then end), new ones start with the objects of the
    /// resource's other views, converted.
    fn crd_changed(&self, st: &mut State, crd_name: &str, crd: Option<&StoredObject>) {
        let wanted: Vec<ResourceInfo> = crd.map(|o| crate::crd::served_versions(&o.value())).unwrap_or_default();
        let reg = self.registry();
        let before = reg.custom(crd_name);
        if before.len() == wanted.len() && before.iter().zip(&wanted).all(|(a, b)| **a == *b) {
            return;
        }
        let mut next = (*reg).clone();
        if wanted.is_empty() {
            next.remove_custom(crd_name);
        } else {
            next.install_custom(crd_name, wanted.clone());
        }
        // The objects the resource holds, from the view kept longest.
        let existing: Vec<Arc<StoredObject>> = before
            .iter()
            .filter_map(|i| st.res.get(&res_id(i)))
            .max_by_key(|r| r.objects.len())
            .map(|r| r.objects.values().cloned().collect())
            .unwrap_or_default();
        for old in &before {
            let id = res_id(old);
            if !wanted.iter().any(|w| res_id(w) == id)
                && let Some(r) = st.res.remove(&id)
                && r.notify.receiver_count() > 0
            {
                // Woken, its watchers find it withdrawn ([`Self::read_watched_events`]).
                r.notify.send_modify(|_| {});
                st.retiring.insert(id, r);
            }
        }
        // Whatever else had this group and plural (a resource registered at start) goes too.
        st.res.retain(|id, r| {
            wanted.first().is_none_or(|w| !(id.0 == w.group && id.1 == w.plural && r.info.custom.is_none()))
        });
        let rv = st.rv;
        for info in next.all().iter().filter(|i| i.custom.as_ref().is_some_and(|c| c.crd_name == crd_name)) {
            let id = res_id(info);
            let reparse = |objs: &mut dyn Iterator<Item = &Arc<StoredObject>>| -> BTreeMap<String, Arc<StoredObject>> {
                objs.filter_map(|o| {
                    object::from_storage(info, &o.namespace, &o.name, o.storage_value().clone(), o.rv)
                        .ok()
                        .map(|n| (n.key.clone(), Arc::new(n)))
                })
                .collect()
            };
            match st.res.get_mut(&id) {
                Some(r) if *r.info == **info => {}
                Some(r) if same_definition(&r.info, info) => r.info = info.clone(),
                Some(r) => {
                    // A changed definition starts the resource's view over, as kube's apiextensions
                    // server replaces its storage and cacher: open watches end and a watch from
                    // before the change is too old, so clients list again and see the objects as
                    // the new schema serves them (its defaults).
                    let changed_at = crd.map_or(rv, |o| o.rv).max(rv);
                    let mut fresh = ResState::new(info.clone(), changed_at);
                    fresh.objects = reparse(&mut r.objects.values());
                    *r = fresh;
                }
                None => {
                    // Watchers of a view withdrawn earlier end: the view is served anew.
                    st.retiring.remove(&id);
                    let mut r = ResState::new(info.clone(), rv);
                    r.objects = reparse(&mut existing.iter());
                    st.res.insert(id, r);
                }
            }
        }
        Self::rebuild_paths(st);
        self.set_registry(next);
    }

    /// The key layout.
    pub fn layout(&self) -> &KeyLayout {
        &self.layout
    }

    /// The revision up to which the cache has applied the storage's changes.
    pub fn resource_version(&self) -> u64 {
        self.state.lock().rv
    }

    /// Whether the cache serves.
    pub fn readiness(&self) -> Readiness {
        *self.ready.borrow()
    }

    /// Waits until the cache serves; false on timeout.
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        let mut rx = self.ready.subscribe();
        matches!(tokio::time::timeout(timeout, rx.wait_for(|r| *r == Readiness::Ready)).await, Ok(Ok(_)))
    }

    /// Waits until the cache serves.
    pub async fn until_ready(&self) {
        let mut rx = self.ready.subscribe();
        let _ = rx.wait_for(|r| *r == Readiness::Ready).await;
    }

    /// A receiver that changes whenever the cache is rebuilt (open watches must end).
    pub fn reset_epoch(&self) -> watch::Receiver<u64> {
        self.reset_epoch.subscribe()
    }

    /// Makes the cache apply each storage change `lag` late (a fault: a cache behind its storage).
    pub fn set_lag(&self, lag: Duration) {
        self.lag_us.store(lag.as_micros() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    fn lag(&self) -> Duration {
        Duration::from_micros(self.lag_us.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Marks the cache as being rebuilt: requests get 429 and every open watch ends.
    pub fn begin_reinit(&self) {
        self.ready.send_replace(Readiness::Initializing);
        self.reset_epoch.send_modify(|e| *e += 1);
    }

    /// 429 while initializing, as kube-apiserver answers requests its cache cannot serve yet.
    pub fn check_ready(&self) -> Result<(), ApiError> {
        match self.readiness() {
            Readiness::Ready => Ok(()),
            Readiness::Initializing => Err(ApiError::storage_initializing()),
        }
    }

    /// Leaves the object a write built for its revision, for the dispatcher (ignored when the
    /// dispatcher is already past it).
    pub fn hint(&self, obj: Arc<StoredObject>) {
        let mut st = self.state.lock();
        if obj.rv > st.rv {
            st.hints.insert(obj.rv, obj);
        }
    }

    fn with_res<T>(&self, info: &ResourceInfo, f: impl FnOnce(&State, &ResState) -> T) -> Result<T, ApiError> {
        let st = self.state.lock();
        let id = res_id(info);
        let r = st.res.get(&id).or_else(|| st.retiring.get(&id)).ok_or_else(ApiError::no_route)?;
        Ok(f(&st, r))
    }

    /// The number of objects of each resource that stores objects: group, plural, count
    /// (events.k8s.io Events are counted as the core Events they are stored as).
    pub fn object_counts(&self) -> Vec<(String, String, usize)> {
        let st = self.state.lock();
        st.res
            .values()
            .filter(|r| {
                !r.info.review
                    && !crate::events_api::is_events_api(&r.info)
                    && !crate::component_status::is_component_statuses(&r.info)
            })
            .map(|r| (r.info.group.clone(), r.info.plural.clone(), r.objects.len()))
            .collect()
    }

    /// The current version of an object.
    pub fn get(&self, info: &ResourceInfo, ns: &str, name: &str) -> Result<Option<Arc<StoredObject>>, ApiError> {
        let ns = if info.namespaced { ns } else { "" };
        self.with_res(info, |_, r| r.objects.get(&object::make_key(ns, name)).cloned())
    }

    /// Lists one page. `start` is the first key to consider (inclusive); `limit` 0 means
    /// unlimited. Exact reads come from history.
    pub fn list(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        at: ListAt,
        start: Option<&str>,
        limit: usize,
        sel: &Selectors,
    ) -> Result<ListPage, ApiError> {
        self.with_res(info, |st, r| {
            let prefix = match ns {
                Some(n) if info.namespaced => format!("{n}/"),
                _ => String::new(),
            };
            let from = match start {
                Some(s) if s > prefix.as_str() => s.to_string(),
                _ => prefix.clone(),
            };
            let at_rv = match at {
                ListAt::Latest => st.rv,
                ListAt::Exact(n) if n == st.rv => st.rv,
                ListAt::Exact(n) if n > st.rv => return Err(ApiError::too_large_rv(n, st.rv)),
                ListAt::Exact(n) if n < r.history.list_floor() => {
                    return Err(ApiError::expired("The resourceVersion for the provided list is too old."));
                }
                ListAt::Exact(n) => n,
            };
            let mut page = ListPage { rv: at_rv, items: Vec::new(), next_after: None, remaining: 0 };
            let in_range = |k: &str| k.starts_with(prefix.as_str());
            let range = r
                .objects
                .range::<str, _>((std::ops::Bound::Included(from.as_str()), std::ops::Bound::Unbounded))
                .take_while(|(k, _)| in_range(k));
            if at_rv == st.rv {
                fill_page(&mut page, range.map(|(_, v)| v), limit, sel);
            } else {
                let mut overlay: HashMap<&str, Option<&Arc<StoredObject>>> = HashMap::new();
                for ev in r.history.newer_than_rev(at_rv) {
                    overlay.insert(ev.obj.key.as_str(), ev.prev.as_ref());
                }
                let mut snap: BTreeMap<&str, &Arc<StoredObject>> = range.map(|(k, v)| (k.as_str(), v)).collect();
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
        })?
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
        self.with_res(info, |_, r| r.notify.subscribe())
    }

    /// Reads up to `max` events of a resource after `after`; the cache's RV on success.
    pub fn read_events(
        &self,
        info: &ResourceInfo,
        after: u64,
        max: usize,
        out: &mut Vec<Arc<Event>>,
    ) -> Result<Result<u64, TooOld>, ApiError> {
        Ok(self.read_watched_events(info, after, max, out)?.map(|(rv, _)| rv))
    }

    /// [`Self::read_events`], and whether the resource's view was withdrawn (its definition
    /// deleted, or its version no longer served) when they were read: then no event follows, and
    /// a watcher that has read them all ends.
    pub fn read_watched_events(
        &self,
        info: &ResourceInfo,
        after: u64,
        max: usize,
        out: &mut Vec<Arc<Event>>,
    ) -> Result<Result<(u64, bool), TooOld>, ApiError> {
        let st = self.state.lock();
        let id = res_id(info);
        let (r, withdrawn) = match st.res.get(&id) {
            Some(r) => (r, false),
            None => (st.retiring.get(&id).ok_or_else(ApiError::no_route)?, true),
        };
        Ok(match r.history.read_after(after, max, out) {
            Some(()) => Ok((st.rv, withdrawn)),
            None => Err(TooOld { start_rv: r.history.start_rv }),
        })
    }

    /// Number of events of a resource with `rv > after` (a watcher's backlog).
    pub fn backlog(&self, info: &ResourceInfo, after: u64) -> usize {
        self.with_res(info, |_, r| r.history.count_after(after)).unwrap_or(0)
    }

    /// Oldest RV a watch of this resource can start from, and the current RV.
    pub fn history_bounds(&self, info: &ResourceInfo) -> Result<(u64, u64), ApiError> {
        self.with_res(info, |st, r| (r.history.start_rv, st.rv))
    }

    /// A receiver that changes whenever the cache's resourceVersion moves (any resource).
    pub fn rv_changes(&self) -> watch::Receiver<u64> {
        self.rv_tx.subscribe()
    }

    /// Waits (up to `timeout`) until the cache has reached `rv`.
    pub async fn wait_for_rv(&self, rv: u64, timeout: Duration) -> bool {
        let mut rx = self.rv_tx.subscribe();
        let fut = rx.wait_for(|cur| *cur >= rv);
        matches!(tokio::time::timeout(timeout, fut).await, Ok(Ok(_)))
    }

    /// Records the storage's compaction at `rv` in every history: lists of older states are
    /// refused, watches still replay the events.
    pub fn compact(&self, rv: u64) {
        let mut st = self.state.lock();
        let target = rv.min(st.rv);
        for r in st.res.values_mut() {
            r.history.compact(target);
        }
    }

    /// Rebuilds the registry's custom resources from the CustomResourceDefinitions among `kvs`
    /// (the whole storage, read at start).
    fn serve_stored_crds(&self, kvs: &[KeyValue]) {
        let reg = self.registry();
        let Some(crds) = reg.all().iter().find(|i| crate::crd::is_crds(i)).cloned() else { return };
        let mut next = (*reg).clone();
        let names: Vec<String> =
            reg.all().iter().filter_map(|i| i.custom.as_ref().map(|c| c.crd_name.clone())).collect();
        for n in names {
            next.remove_custom(&n);
        }
        for kv in kvs {
            let Some((ns, name)) = self.layout.parse(&crds, &kv.key) else { continue };
            let Ok(o) = object::from_storage(&crds, ns, name, kv.value.clone(), kv.mod_revision) else { continue };
            let served = crate::crd::served_versions(&o.value());
            if !served.is_empty() {
                next.install_custom(name, served);
            }
        }
        if next.all().len() != reg.all().len() || next.all().iter().zip(reg.all()).any(|(a, b)| a != b) {
            self.set_registry(next);
        }
    }

    /// Wakes the watchers of the resources that have new events (an idle watcher's cursor
    /// catches up with the cache's revision at its next bookmark), and whoever waits for a
    /// revision.
    fn publish(&self, st: &mut State) {
        if !st.retiring.is_empty() {
            st.retiring.retain(|_, r| r.notify.receiver_count() > 0);
        }
        let rv = st.rv;
        for r in st.res.values_mut().filter(|r| r.dirty) {
            r.notify.send_replace(rv);
            r.dirty = false;
        }
        self.rv_tx.send_replace(rv);
    }

    /// Maps a storage key to its resource's views and (namespace, name).
    fn locate<'k>(&self, st: &State, key: &'k str) -> Option<(Vec<ResId>, &'k str, &'k str)> {
        let rest = key.strip_prefix(self.layout.prefix())?.strip_prefix('/')?;
        for (path, ids) in &st.paths {
            if rest.strip_prefix(path.as_str()).is_some_and(|r| r.starts_with('/')) {
                let info = &st.res.get(ids.first()?)?.info;
                let (ns, name) = self.layout.parse(info, key)?;
                return Some((ids.clone(), ns, name));
            }
        }
        None
    }

    fn object_of(
        &self,
        st: &mut State,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        kv: &KeyValue,
    ) -> Option<Arc<StoredObject>> {
        // The hint is the write's own object: taken by the view of its version only.
        let fits = st
            .hints
            .get(&kv.mod_revision)
            .is_some_and(|h| h.storage_value() == &kv.value && h.name == name && h.namespace == ns && h.is_of(info));
        if fits {
            return st.hints.remove(&kv.mod_revision);
        }
        match object::from_storage(info, ns, name, kv.value.clone(), kv.mod_revision) {
            Ok(o) => Some(Arc::new(o)),
            Err(e) => {
                tracing::warn!(key = %kv.key, revision = kv.mod_revision, error = %e, "skipping a stored value that is not a valid object");
                None
            }
        }
    }

    /// Applies one storage change (revision order) to every view of its resource; a change of a
    /// CustomResourceDefinition then changes what is served.
    fn apply(&self, st: &mut State, change: &Change) {
        let rev = change.revision();
        let Some((ids, ns, name)) = self.locate(st, change.key()) else {
            return;
        };
        let key = object::make_key(ns, name);
        let mut crd: Option<Option<Arc<StoredObject>>> = None;
        for id in ids {
            let Some(info) = st.res.get(&id).map(|r| r.info.clone()) else { continue };
            // A value that is not an object of this resource deletes any version the cache holds,
            // so the cache never serves a value the storage no longer has.
            let obj = match change {
                Change::Put { kv, .. } => self.object_of(st, &info, ns, name, kv),
                Change::Delete { .. } => None,
            };
            if crate::crd::is_crds(&info) {
                crd = Some(obj.clone());
            }
            let Some(r) = st.res.get_mut(&id) else { continue };
            let event = match obj {
                Some(obj) => {
                    let prev = r.objects.insert(key.clone(), obj.clone());
                    let kind = if prev.is_some() { EventType::Modified } else { EventType::Added };
                    Event::new(rev, kind, obj, prev)
                }
                None => {
                    let Some(prev) = r.objects.remove(&key) else { continue };
                    let gone = Arc::new(prev.with_rv(rev));
                    Event::new(rev, EventType::Deleted, gone, Some(prev))
                }
            };
            r.push(event, &self.history_cfg);
        }
        if let Some(obj) = crd {
            self.crd_changed(st, name, obj.as_deref());
        }
    }
}

/// Fills `page` with the objects of `iter` that match `sel`, up to `limit` (0: all), noting
/// where the next page starts and how many objects follow.
pub(crate) fn fill_page<'a>(
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

/// Where a stored value goes: one view of its resource and (namespace, name).
type Target = (ResId, Arc<ResourceInfo>, String, String);

/// Keeps a [`WatchCache`] in step with a [`Storage`] (see the module documentation).
pub struct Dispatcher {
    cache: Arc<WatchCache>,
    storage: Arc<dyn Storage>,
}

/// Range page size when the cache reads the storage.
const INIT_PAGE: usize = 10_000;

impl Dispatcher {
    /// A dispatcher feeding `cache` from `storage`.
    pub fn new(cache: Arc<WatchCache>, storage: Arc<dyn Storage>) -> Self {
        Dispatcher { cache, storage }
    }

    /// Reads the storage into the cache, then follows it until `stop` changes. Storage failures
    /// are retried (the cache keeps serving what it has); a compacted watch rebuilds the cache.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let mut retry = Duration::from_millis(100);
        loop {
            let started = tokio::select! {
                r = self.init() => r,
                _ = stop.wait_for(|s| *s) => return,
            };
            let mut from = match started {
                Ok(rv) => rv + 1,
                Err(e) => {
                    tracing::warn!(storage = self.storage.name(), error = %e, "watch cache: cannot read the storage; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(retry) => {}
                        _ = stop.wait_for(|s| *s) => return,
                    }
                    retry = (retry * 2).min(Duration::from_secs(2));
                    continue;
                }
            };
            retry = Duration::from_millis(100);
            // Follow; re-watch after failures, rebuild after compaction.
            loop {
                let ended = tokio::select! {
                    e = self.follow(from) => e,
                    _ = stop.wait_for(|s| *s) => return,
                };
                match ended {
                    StorageError::Compacted { .. } => {
                        tracing::warn!(
                            storage = self.storage.name(),
                            from,
                            "watch cache: storage history compacted past the cache; rebuilding"
                        );
                        break;
                    }
                    e => {
                        tracing::warn!(storage = self.storage.name(), from, error = %e, "watch cache: storage watch failed; re-watching");
                        tokio::select! {
                            _ = tokio::time::sleep(retry) => {}
                            _ = stop.wait_for(|s| *s) => return,
                        }
                        retry = (retry * 2).min(Duration::from_secs(2));
                        from = self.cache.resource_version() + 1;
                    }
                }
            }
            // Rebuild: every open watch ends, readers wait for the new state.
            self.cache.begin_reinit();
        }
    }

    /// Fills the cache: the state at the compacted revision, then every change since, up to the
    /// storage's current revision. Returns the revision reached.
    async fn init(&self) -> Result<u64, StorageError> {
        let started = Instant::now();
        let compacted = self.storage.compacted_revision().await?;
        let current = self.storage.current_revision().await?;
        let root = self.cache.layout.root();
        // The state at the compacted revision, then its history; or the current state alone.
        let base = if self.storage.replays_history() { compacted.min(current) } else { current };
        let mut objects: Vec<KeyValue> = Vec::new();
        let mut start: Option<String> = None;
        loop {
            let page = self
                .storage
                .range(RangeRequest {
                    prefix: root.clone(),
                    start: start.take(),
                    revision: Some(base),
                    limit: INIT_PAGE,
                })
                .await?;
            let more = page.more;
            if let Some(last) = page.kvs.last() {
                start = Some(format!("{}\0", last.key));
            }
            objects.extend(page.kvs);
            if !more {
                break;
            }
        }
        let read = started.elapsed();
        self.cache.serve_stored_crds(&objects);
        let parsed = self.parse_all(&objects);
        let count = objects.len();
        drop(objects);
        {
            let mut st = self.cache.state.lock();
            self.cache.reset_resources(&mut st, base);
            st.hints.clear();
            for (id, o) in parsed {
                if let Some(r) = st.res.get_mut(&id) {
                    r.objects.insert(o.key.clone(), o);
                }
            }
        }
        let loaded = started.elapsed();
        // Replay the history up to the current revision.
        if current > base {
            let mut stream = self.storage.watch(root.clone(), base + 1);
            loop {
                let batch = match stream.next().await {
                    Some(Ok(b)) => b,
                    Some(Err(e)) => return Err(e),
                    None => return Err(StorageError::Unavailable("the storage watch ended".into())),
                };
                let mut st = self.cache.state.lock();
                for c in &batch.changes {
                    self.cache.apply(&mut st, c);
                }
                st.rv = st.rv.max(batch.progress);
                if st.rv >= current {
                    break;
                }
            }
        }
        let rv = {
            let mut st = self.cache.state.lock();
            self.cache.publish(&mut st);
            st.rv
        };
        self.cache.ready.send_replace(Readiness::Ready);
        tracing::info!(
            storage = self.storage.name(),
            revision = rv,
            objects = count,
            read_ms = read.as_millis() as u64,
            loaded_ms = loaded.as_millis() as u64,
            ready_ms = started.elapsed().as_millis() as u64,
            "watch cache ready"
        );
        Ok(rv)
    }

    /// Turns stored values into objects, on every core (a restart reads the whole storage).
    fn parse_all(&self, kvs: &[KeyValue]) -> Vec<(ResId, Arc<StoredObject>)> {
        let st = self.cache.state.lock();
        let mut work: Vec<(&KeyValue, Target)> = Vec::with_capacity(kvs.len());
        for kv in kvs {
            let Some((ids, ns, name)) = self.cache.locate(&st, &kv.key) else { continue };
            for id in ids {
                if let Some(r) = st.res.get(&id) {
                    work.push((kv, (id, r.info.clone(), ns.to_string(), name.to_string())));
                }
            }
        }
        drop(st);
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(8);
        let chunk = work.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = work
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        let mut out = Vec::with_capacity(part.len());
                        for (kv, (id, info, ns, name)) in part {
                            match object::from_storage(info, ns, name, kv.value.clone(), kv.mod_revision) {
                                Ok(o) => out.push((id.clone(), Arc::new(o))),
                                Err(e) => tracing::warn!(key = %kv.key, revision = kv.mod_revision, error = %e, "skipping a stored value that is not a valid object"),
                            }
                        }
                        out
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
        })
    }

    /// Applies the storage's changes from `from` on; returns why it stopped.
    async fn follow(&self, from: Revision) -> StorageError {
        let mut stream = self.storage.watch(String::new(), from);
        let root = self.cache.layout.root();
        loop {
            let batch = match stream.next().await {
                Some(Ok(b)) => b,
                Some(Err(e)) => return e,
                None => return StorageError::Unavailable("the storage watch ended".into()),
            };
            let lag = self.cache.lag();
            if !lag.is_zero() {
                tokio::time::sleep(lag).await;
            }
            let mut st = self.cache.state.lock();
            for c in &batch.changes {
                if c.key() == crate::storage::etcd::COMPACT_REV_KEY {
                    // Another replica compacted at the revision this key held before.
                    if let Change::Put { prev: Some(prev), .. } = c
                        && let Some(rev) = std::str::from_utf8(&prev.value).ok().and_then(|s| s.parse::<u64>().ok())
                    {
                        let target = rev.min(st.rv);
                        for r in st.res.values_mut() {
                            r.history.compact(target);
                        }
                    }
                    continue;
                }
                if !c.key().starts_with(root.as_str()) {
                    continue;
                }
                self.cache.apply(&mut st, c);
            }
            if batch.progress > st.rv {
                st.rv = batch.progress;
                st.hints.retain(|rev, _| *rev > batch.progress);
                self.cache.publish(&mut st);
            }
        }
    }
}
