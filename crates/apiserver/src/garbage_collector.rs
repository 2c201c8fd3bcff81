//! The garbage collector of kube-controller-manager, run in the server: an object whose owners
//! (`metadata.ownerReferences`) are all gone is deleted; an owner deleted with
//! `propagationPolicy: Orphan` (finalizer `orphan`) first has its dependents' references to it
//! removed; one deleted with `Foreground` (finalizer `foregroundDeletion`) has its dependents
//! deleted and stays until none that blocks it (`blockOwnerDeletion: true`) is left.
//!
//! How it works: the collector reads the changes of every collectable resource from the watch
//! cache's event histories, each from where its last read ended, and keeps a graph from owner
//! UIDs to their dependents that only those changes alter: the cost of a change is that of the
//! change, never a pass over the objects stored. A change that may let an object go — a
//! dependent whose references changed, the deletion of an owner, an owner that starts a deletion
//! with one of the collector's finalizers — queues that object, and queued objects are judged on
//! what the cache shows, up to 16 at a time while changes go on being read; an owner the cache
//! does not show as present is looked up in the storage before anything is deleted for it. Once
//! nothing is queued or being judged and every change up to a resourceVersion (its own writes
//! included) has been read, the collector publishes that resourceVersion
//! ([`Store::garbage_collector_progress`]).
//!
//! Invariants: a dependent is deleted only when each of its owners is absent (no object of the
//! reference's kind, namespace and name with the reference's UID, confirmed in the storage) or
//! is being deleted in the foreground, and then with preconditions on the UID and
//! resourceVersion judged, so a dependent changed meanwhile is judged again; a dependent with an
//! owner still present only loses its references to the others. A dependent with a reference to
//! a kind the server does not serve is left untouched until the served kinds change; one that is
//! cluster-scoped and names a namespaced kind is left untouched, as kube's collector leaves
//! them. An owner's `orphan` finalizer is removed only after every dependent the graph knows has
//! lost its reference to it; its `foregroundDeletion` finalizer only after each of its
//! dependents has been judged while it waited, and once none blocks it. The graph is rebuilt
//! from the cache's contents when the cache is rebuilt, and a resource's part of it when that
//! resource's history no longer reaches back to the last read (then what the missed changes may
//! concern is judged again). Events (core/v1 and events.k8s.io) are neither tracked nor
//! collected, as kube's collector ignores them. A judgement that fails is tried again after a
//! delay that doubles with each failure of that object, up to a limit. A namespaced dependent
//! whose owner exists in another namespace gets kube's `OwnerRefInvalidNamespace` warning Event
//! (source `garbage-collector-controller`) when it is judged, and is collected as any other.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::watch;

use crate::cache::ListAt;
use crate::delete_options::{DeleteOpts, FOREGROUND, ORPHAN, Propagation};
use crate::event_recorder::{EventRecorder, Involved};
use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::{Store, WriteOpts};
use crate::watch_cache::EventType as Change;

/// The field manager of the collector's writes (kube-controller-manager's).
const CONTROLLER: &str = "kube-controller-manager";

/// The delay before failed work is retried, at first and at most.
const RETRY: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// How many objects are judged at once.
const PARALLEL: usize = 16;

/// How many events of one resource are read at a time.
const READ_BATCH: usize = 4096;

/// A resource, by group and plural (its objects are shared by all its versions).
type ResKey = Arc<(String, String)>;

/// An object the collector knows.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct Node {
    res: ResKey,
    ns: Arc<str>,
    name: Arc<str>,
    uid: Arc<str>,
}

/// One entry of `metadata.ownerReferences`, as the collector reads it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
struct OwnerRef {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    uid: String,
    #[serde(default)]
    block_owner_deletion: Option<bool>,
}

impl OwnerRef {
    fn blocks(&self) -> bool {
        self.block_owner_deletion == Some(true)
    }
}

/// The metadata the collector reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    owner_references: Option<Vec<OwnerRef>>,
    #[serde(default)]
    finalizers: Option<Vec<String>>,
    /// Whether `deletionTimestamp` is set (the stored object keeps it apart).
    #[serde(skip)]
    deleting: bool,
}

/// The top-level `metadata` of an object's JSON, read without reading what follows it (a pod's
/// spec and status are most of its bytes).
fn top_level_metadata(json: &[u8]) -> Option<Meta> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Top<'a>(&'a mut Option<Meta>);
    impl<'de> Visitor<'de> for Top<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if key == "metadata" {
                    *self.0 = Some(map.next_value()?);
                    // Found: the rest is not read (the decoder reports the object unfinished).
                    return Err(serde::de::Error::custom("metadata read"));
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let mut found = None;
    let _ = serde_json::Deserializer::from_slice(json).deserialize_map(Top(&mut found));
    found
}

impl Meta {
    /// An object's metadata; its JSON is parsed only when it may hold references or finalizers.
    fn of(o: &StoredObject) -> Meta {
        let b = o.storage_value();
        let has = |needle: &[u8]| memchr::memmem::find(b, needle).is_some();
        let mut meta = if has(b"\"ownerReferences\"") || has(b"\"finalizers\"") {
            top_level_metadata(b).unwrap_or_default()
        } else {
            Meta::default()
        };
        meta.deleting = o.kept.iter().any(|(k, _)| *k == "deletionTimestamp");
        meta
    }

    fn refs(&self) -> &[OwnerRef] {
        self.owner_references.as_deref().unwrap_or_default()
    }

    fn has_finalizer(&self, f: &str) -> bool {
        self.finalizers.iter().flatten().any(|x| x == f)
    }

    fn deleting(&self) -> bool {
        self.deleting
    }

    /// Whether the object is being deleted with one of the collector's finalizers.
    fn collecting(&self) -> bool {
        self.deleting() && (self.has_finalizer(ORPHAN) || self.has_finalizer(FOREGROUND))
    }

    /// Whether the object is being deleted in the foreground (its dependents first).
    fn in_foreground(&self) -> bool {
        self.deleting() && self.has_finalizer(FOREGROUND)
    }
}

/// One owner reference as the graph keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Ref {
    /// The owner's UID (the graph's key for that owner, shared).
    uid: Arc<str>,
    /// The owner's `group/Kind` (shared by the references to that kind).
    kind: Arc<str>,
    /// `blockOwnerDeletion`.
    blocks: bool,
}

/// An object's references as the graph keeps them: a fingerprint of them all (to tell a change
/// of any field) and what the graph uses of each.
struct Refs {
    fingerprint: u64,
    list: Box<[Ref]>,
}

fn fingerprint(refs: &[OwnerRef]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    refs.hash(&mut h);
    h.finish()
}

/// Owners and their dependents, as the events read so far show them.
#[derive(Default)]
struct Graph {
    /// The owner references of every object that has some, by the object's UID.
    refs: HashMap<Arc<str>, (Node, Refs)>,
    /// Owner UID → the objects that reference it.
    dependents: HashMap<Arc<str>, HashSet<Node>>,
    /// Objects being deleted with one of the collector's finalizers, by UID; true when in the
    /// foreground.
    collecting: HashMap<Arc<str>, (Node, bool)>,
    /// Namespaces and owner kinds, each kept once.
    names: HashSet<Arc<str>>,
    /// How many names there were after the last pruning.
    names_kept: usize,
}

impl Graph {
    /// A shared copy of a namespace or kind. Names nothing holds any more are dropped once the
    /// set has doubled since the last pruning.
    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.names.get(s) {
            return a.clone();
        }
        if self.names.len() >= 2 * self.names_kept.max(64) {
            self.names.retain(|a| Arc::strong_count(a) > 1);
            self.names_kept = self.names.len();
        }
        let a: Arc<str> = s.into();
        self.names.insert(a.clone());
        a
    }

    /// The node of an object of resource `res`.
    fn node(&mut self, res: &ResKey, o: &StoredObject) -> Node {
        Node {
            res: res.clone(),
            ns: self.intern(&o.namespace),
            name: o.name.as_str().into(),
            uid: o.uid.as_str().into(),
        }
    }

    /// Records an object's references; the UIDs of the previous ones when they changed.
    fn set_refs(&mut self, node: &Node, refs: &[OwnerRef]) -> Option<Vec<Arc<str>>> {
        let print = fingerprint(refs);
        match self.refs.get(&node.uid) {
            Some((_, old)) if old.fingerprint == print => return None,
            None if refs.is_empty() => return None,
            _ => {}
        }
        let old = self.remove(&node.uid);
        if !refs.is_empty() {
            let mut list = Vec::with_capacity(refs.len());
            for r in refs {
                let group = r.api_version.split_once('/').map_or("", |(g, _)| g);
                let kind = self.intern(&format!("{group}/{}", r.kind));
                let uid = match self.dependents.get_key_value(r.uid.as_str()) {
                    Some((k, _)) => k.clone(),
                    None => r.uid.as_str().into(),
                };
                self.dependents.entry(uid.clone()).or_default().insert(node.clone());
                list.push(Ref { uid, kind, blocks: r.blocks() });
            }
            self.refs.insert(node.uid.clone(), (node.clone(), Refs { fingerprint: print, list: list.into() }));
        }
        Some(old)
    }

    /// Forgets the references of the object with this UID; returns their owners' UIDs.
    fn remove(&mut self, uid: &str) -> Vec<Arc<str>> {
        let Some((node, old)) = self.refs.remove(uid) else { return Vec::new() };
        for r in old.list.iter() {
            if let Some(set) = self.dependents.get_mut(&r.uid) {
                set.remove(&node);
                if set.is_empty() {
                    self.dependents.remove(&r.uid);
                }
            }
        }
        old.list.iter().map(|r| r.uid.clone()).collect()
    }

    /// Forgets every object of a resource.
    fn clear(&mut self, res: &ResKey) {
        let uids: Vec<Arc<str>> =
            self.refs.iter().filter(|(_, (n, _))| n.res == *res).map(|(u, _)| u.clone()).collect();
        for uid in &uids {
            self.remove(uid);
        }
        self.collecting.retain(|_, (n, _)| n.res != *res);
    }

    /// The dependents of an owner, each with whether it blocks the owner's deletion.
    fn dependents_of(&self, uid: &str) -> Vec<(Node, bool)> {
        let Some(deps) = self.dependents.get(uid) else { return Vec::new() };
        deps.iter()
            .map(|d| {
                let blocks =
                    self.refs.get(&d.uid).is_some_and(|(_, refs)| refs.list.iter().any(|r| &*r.uid == uid && r.blocks));
                (d.clone(), blocks)
            })
            .collect()
    }
}

/// Objects waiting to be judged.
#[derive(Default)]
struct Queue {
    /// Dependents whose owners may be gone.
    dependents: HashSet<Node>,
    /// Owners being deleted with one of the collector's finalizers.
    owners: HashSet<Node>,
}

impl Queue {
    fn is_empty(&self) -> bool {
        self.dependents.is_empty() && self.owners.is_empty()
    }
}

/// When a failed judgement is tried again.
struct Backoff {
    failures: u32,
    at: Instant,
}

/// The collector's state between passes.
#[derive(Default)]
struct State {
    /// Every collectable resource, with the resourceVersion its events were read up to.
    cursors: HashMap<ResKey, (Arc<ResourceInfo>, u64)>,
    graph: Graph,
    queue: Queue,
    /// Owners being deleted in the foreground whose dependents have all been judged once since.
    primed: HashSet<Arc<str>>,
    /// Foreground owners waiting for their dependents' first judgement: how many are left.
    priming: HashMap<Arc<str>, (Node, usize)>,
    /// Dependents being judged for foreground owners (by the owners' UIDs).
    priming_for: HashMap<Node, Vec<Arc<str>>>,
    /// Dependents being judged.
    busy_dependents: HashSet<Node>,
    /// Owners being judged.
    busy_owners: HashSet<Node>,
    /// Dependents with a reference to a kind the server does not serve: judged again when the
    /// served kinds change.
    unresolved: HashSet<Node>,
    /// Failed judgements (dependent: false, owner: true), tried again later.
    failed: HashMap<(Node, bool), Backoff>,
}

impl State {
    /// Queues every owner being deleted with one of the collector's finalizers, and every
    /// dependent with a reference to resource `res`'s kind (some of its objects may have gone
    /// unseen); forgets priming of owners no longer being collected.
    fn requeue_after_gap(&mut self, info: &ResourceInfo) {
        self.queue.owners.extend(self.graph.collecting.values().map(|(n, _)| n.clone()));
        let kind = format!("{}/{}", info.group, info.kind);
        let refs = &self.graph.refs;
        let names_kind = |rs: &Refs| rs.list.iter().any(|r| *r.kind == *kind);
        self.queue.dependents.extend(refs.values().filter(|(_, rs)| names_kind(rs)).map(|(n, _)| n.clone()));
        // Owners that went unseen are no longer waited on.
        let collecting = &self.graph.collecting;
        self.primed.retain(|uid| collecting.contains_key(uid));
    }
}

/// What an owner reference finds.
enum Owner {
    /// An object with the reference's UID exists and is not being deleted in the foreground.
    Present,
    /// It is being deleted in the foreground: waiting for its dependents.
    Waiting,
    /// No object with the reference's UID exists.
    Absent,
    /// The reference names a kind this server does not serve: the dependent is left as it is
    /// until the served kinds change.
    Unresolvable,
    /// A cluster-scoped dependent names a namespaced kind: the dependent is left as it is.
    Invalid,
}

/// What judging a queued object gave.
enum Outcome {
    /// Done.
    Done,
    /// Done; these dependents are to be judged next.
    Next(Vec<Node>),
    /// A foreground owner's dependents are to be judged, then the owner again.
    Prime(Vec<Node>),
    /// A dependent names a kind the server does not serve.
    Unresolved,
}

/// The source of the Events the collector records, as kube-controller-manager's.
const EVENT_SOURCE: &str = "garbage-collector-controller";

/// The garbage collector (see the module documentation).
pub struct GarbageCollector {
    store: Arc<Store>,
    /// The highest resourceVersion the collector's own writes made.
    written: AtomicU64,
    /// The (dependent, owner) UIDs already reported in another namespace: each is reported
    /// once (forgotten in bulk past a bound).
    reported: parking_lot::Mutex<HashSet<(String, String)>>,
    events: EventRecorder,
}

/// How many reported references are remembered before they are forgotten.
const REPORTED_KEPT: usize = 10_000;

/// Whether the collector tracks a resource's objects.
fn collectable(info: &ResourceInfo) -> bool {
    !info.review && !crate::delete_options::is_event(info) && !crate::component_status::is_component_statuses(info)
}

fn key_of(info: &ResourceInfo) -> ResKey {
    Arc::new((info.group.clone(), info.plural.clone()))
}

/// How many times in a row a write that meets newer versions is tried.
const CONFLICT_ATTEMPTS: usize = 5;

impl GarbageCollector {
    /// A collector for `store`.
    pub fn new(store: Arc<Store>) -> GarbageCollector {
        let events = EventRecorder::new(store.clone(), EVENT_SOURCE, "kube-controller-manager");
        GarbageCollector { store, written: AtomicU64::new(0), reported: Default::default(), events }
    }

    /// Runs until `stop` turns true.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let cache = self.store.cache().clone();
        let mut epoch = cache.reset_epoch();
        'rebuild: loop {
            epoch.borrow_and_update();
            tokio::select! {
                _ = cache.until_ready() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            if epoch.has_changed().unwrap_or(false) {
                continue 'rebuild;
            }
            let mut registry = cache.registry_changes();
            registry.borrow_and_update();
            let mut st = State::default();
            let mut jobs: FuturesUnordered<JobFuture<'_>> = FuturesUnordered::new();
            self.track_resources(&mut st);
            loop {
                let mut changes = cache.rv_changes();
                changes.borrow_and_update();
                let read = cache.resource_version();
                self.read_events(&mut st);
                let now = Instant::now();
                for ((n, owner), _) in st.failed.iter().filter(|(_, b)| b.at <= now) {
                    if *owner {
                        st.queue.owners.insert(n.clone());
                    } else {
                        st.queue.dependents.insert(n.clone());
                    }
                }
                if cache.readiness() == crate::cache::Readiness::Ready {
                    self.start_jobs(&mut st, &mut jobs);
                    if jobs.is_empty() && st.queue.is_empty() && read >= self.written.load(Ordering::Acquire) {
                        self.store.garbage_collector_progress().send_if_modified(|p| {
                            let newer = read > *p;
                            *p = (*p).max(read);
                            newer
                        });
                    }
                }
                let retry = st.failed.values().filter(|b| b.at > now).map(|b| b.at).min();
                tokio::select! {
                    Some((n, owner, r)) = jobs.next(), if !jobs.is_empty() => finish(&mut st, n, owner, r),
                    _ = changes.changed() => {}
                    _ = registry.changed() => {
                        self.track_resources(&mut st);
                        let unresolved = std::mem::take(&mut st.unresolved);
                        st.queue.dependents.extend(unresolved);
                    }
                    _ = epoch.changed() => continue 'rebuild,
                    _ = tokio::time::sleep_until(retry.unwrap_or(now).into()), if retry.is_some() => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        }
    }

    /// Starts tracking the collectable resources not tracked yet (from the cache's contents) and
    /// forgets those no longer served (after reading what the cache still has of them).
    fn track_resources(&self, st: &mut State) {
        let registry = self.store.registry();
        let served: Vec<Arc<ResourceInfo>> = registry.each_resource().filter(|i| collectable(i)).cloned().collect();
        let gone: Vec<ResKey> =
            st.cursors.keys().filter(|k| !served.iter().any(|i| i.group == k.0 && i.plural == k.1)).cloned().collect();
        if !gone.is_empty() {
            self.read_events(st);
        }
        for k in gone {
            if let Some((info, _)) = st.cursors.remove(&k) {
                st.graph.clear(&k);
                st.requeue_after_gap(&info);
            }
        }
        for info in served {
            let key = key_of(&info);
            match st.cursors.get_mut(&key) {
                // Served in another version now (a definition's versions changed): the same
                // objects, read through the version served.
                Some((tracked, _)) => *tracked = info,
                None => self.load(st, key, info),
            }
        }
    }

    /// (Re)loads a resource's part of the graph from the cache's contents.
    fn load(&self, st: &mut State, key: ResKey, info: Arc<ResourceInfo>) {
        st.graph.clear(&key);
        match self.store.cache().snapshot(&info, None, &Selectors::default()) {
            Ok((rv, objs)) => {
                for o in &objs {
                    observe(st, &key, Change::Added, o);
                }
                st.cursors.insert(key, (info, rv));
            }
            Err(e) => tracing::debug!(resource = %info.plural, error = %e, "garbage collector: not tracked"),
        }
    }

    /// Applies the events every tracked resource had since its last read.
    fn read_events(&self, st: &mut State) {
        let cache = self.store.cache();
        let keys: Vec<ResKey> = st.cursors.keys().cloned().collect();
        let mut events = Vec::new();
        for key in keys {
            loop {
                let Some((info, after)) = st.cursors.get(&key).cloned() else { break };
                events.clear();
                match cache.read_events(&info, after, READ_BATCH, &mut events) {
                    Ok(Ok(_)) => {}
                    Ok(Err(_too_old)) => {
                        // Events were missed: reload the resource, and judge again what its
                        // objects' going unseen may concern.
                        self.load(st, key.clone(), info.clone());
                        st.requeue_after_gap(&info);
                        break;
                    }
                    Err(_) => break,
                }
                let Some(last) = events.last().map(|e| e.rv) else { break };
                for e in &events {
                    observe(st, &key, e.kind, &e.obj);
                }
                if let Some(c) = st.cursors.get_mut(&key) {
                    c.1 = last;
                }
                if events.len() < READ_BATCH {
                    break;
                }
            }
        }
    }

    /// Starts judging queued objects, up to [`PARALLEL`] at a time; an object being judged
    /// already stays queued until that judgement ends.
    fn start_jobs<'a>(&'a self, st: &mut State, jobs: &mut FuturesUnordered<JobFuture<'a>>) {
        while jobs.len() < PARALLEL {
            let free = |set: &HashSet<Node>, busy: &HashSet<Node>| set.iter().find(|n| !busy.contains(*n)).cloned();
            let (n, owner) =
                match (free(&st.queue.owners, &st.busy_owners), free(&st.queue.dependents, &st.busy_dependents)) {
                    (Some(n), _) => (n, true),
                    (None, Some(n)) => (n, false),
                    (None, None) => break,
                };
            if owner {
                st.queue.owners.remove(&n);
                if st.priming.contains_key(&n.uid) {
                    // Judged again once its dependents have been.
                    continue;
                }
            } else {
                st.queue.dependents.remove(&n);
            }
            if owner { &mut st.busy_owners } else { &mut st.busy_dependents }.insert(n.clone());
            let info = st.cursors.get(&n.res).map(|(i, _)| i.clone());
            let job: JobFuture<'a> = match info {
                // The resource is no longer served.
                None => Box::pin(async move { (n, owner, Ok(Outcome::Done)) }),
                Some(info) if owner => {
                    let deps = st.graph.dependents_of(&n.uid);
                    let primed = st.primed.contains(&n.uid);
                    Box::pin(async move {
                        let r = self.judge_owner(&info, &n, deps, primed).await;
                        (n, true, r)
                    })
                }
                Some(info) => {
                    let deps = st.graph.dependents.get(&n.uid);
                    let has_dependents = deps.is_some_and(|d| !d.is_empty());
                    let cycle = deps.is_some_and(|d| {
                        d.iter().any(|x| st.graph.collecting.get(&x.uid).is_some_and(|(_, foreground)| *foreground))
                    });
                    Box::pin(async move {
                        let r = self.judge_dependent(&info, &n, has_dependents, cycle).await;
                        (n, false, r)
                    })
                }
            };
            jobs.push(job);
        }
    }

    /// The object a node names, as the cache shows it (None when it is gone or replaced).
    fn cached(&self, info: &ResourceInfo, n: &Node) -> Result<Option<Arc<StoredObject>>, ApiError> {
        Ok(self.store.cache().get(info, &n.ns, &n.name)?.filter(|o| *o.uid == *n.uid))
    }

    /// Judges a dependent: deletes it when none of its owners is left, or drops its references
    /// to the owners that are gone when one is left.
    async fn judge_dependent(
        &self,
        info: &ResourceInfo,
        n: &Node,
        has_dependents: bool,
        cycle: bool,
    ) -> Result<Outcome, ApiError> {
        let Some(obj) = self.cached(info, n)? else { return Ok(Outcome::Done) };
        let meta = Meta::of(&obj);
        // Being deleted already: it goes (an owner deleted in the foreground is judged as one).
        if meta.deleting() || meta.refs().is_empty() {
            return Ok(Outcome::Done);
        }
        let (mut solid, mut gone, mut waiting) = (0, Vec::new(), Vec::new());
        let mut reported = false;
        for r in meta.refs() {
            let owner = self.owner(r, &obj.namespace).await?;
            // Only the first reference to an owner in another namespace is reported, as kube.
            if !reported && matches!(owner, Owner::Absent | Owner::Invalid) {
                reported = self.report_misplaced_owner(info, &obj, r).await;
            }
            match owner {
                Owner::Present => solid += 1,
                Owner::Absent => gone.push(r.uid.clone()),
                Owner::Waiting => waiting.push(r.uid.clone()),
                Owner::Unresolvable => return Ok(Outcome::Unresolved),
                Owner::Invalid => return Ok(Outcome::Done),
            }
        }
        if solid > 0 {
            if gone.is_empty() && waiting.is_empty() {
                return Ok(Outcome::Done);
            }
            let drop: HashSet<String> = gone.into_iter().chain(waiting).collect();
            self.edit_refs(info, n, obj.rv, |refs| {
                refs.retain(|r| !drop.contains(r.get("uid").and_then(Value::as_str).unwrap_or_default()))
            })
            .await?;
            return Ok(Outcome::Done);
        }
        let mut rv = obj.rv;
        let policy = if !waiting.is_empty() && has_dependents {
            if cycle {
                // A dependent of this object waits for its own dependents too: this object's
                // references stop blocking, so the owners' deletions cannot wait on each other.
                let unblocked = self
                    .edit_refs(info, n, obj.rv, |refs| {
                        for r in refs.iter_mut() {
                            if r.get("blockOwnerDeletion") == Some(&Value::Bool(true)) {
                                r.insert("blockOwnerDeletion".into(), false.into());
                            }
                        }
                    })
                    .await?;
                rv = unblocked.unwrap_or(rv);
            }
            Propagation::Foreground
        } else if meta.has_finalizer(ORPHAN) {
            Propagation::Orphan
        } else if meta.has_finalizer(FOREGROUND) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        let opts = DeleteOpts {
            precondition_uid: Some(n.uid.to_string()),
            precondition_rv: Some(rv.to_string()),
            ..Default::default()
        }
        .propagation(policy);
        match self.delete(info, n, &opts).await {
            Ok(_) => Ok(Outcome::Done),
            Err(e) if e.code == 404 => Ok(Outcome::Done),
            Err(e) if e.code == 409 => {
                // Changed meanwhile: when its references are the ones judged (a status update,
                // say), it goes all the same; otherwise it is judged again.
                let stored = match self.store.stored(info, &n.ns, &n.name).await {
                    Ok(o) => o,
                    Err(e) if e.code == 404 => return Ok(Outcome::Done),
                    Err(e) => return Err(e),
                };
                let same = *stored.uid == *n.uid && fingerprint(Meta::of(&stored).refs()) == fingerprint(meta.refs());
                if !same {
                    return Err(e);
                }
                let opts = DeleteOpts { precondition_rv: None, ..opts };
                match self.delete(info, n, &opts).await {
                    Ok(_) => Ok(Outcome::Done),
                    Err(e) if e.code == 404 => Ok(Outcome::Done),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Deletes a dependent; admission sees the options as kube's collector sends them.
    async fn delete(&self, info: &ResourceInfo, n: &Node, opts: &DeleteOpts) -> Result<(), ApiError> {
        let mut sent = serde_json::Map::new();
        let mut pre = serde_json::Map::new();
        if let Some(uid) = &opts.precondition_uid {
            pre.insert("uid".into(), uid.as_str().into());
        }
        if let Some(rv) = &opts.precondition_rv {
            pre.insert("resourceVersion".into(), rv.as_str().into());
        }
        sent.insert("preconditions".into(), Value::Object(pre));
        if let Some(p) = opts.propagation {
            sent.insert("propagationPolicy".into(), p.as_str().into());
        }
        crate::admission_options::scope(async {
            crate::admission_options::from_delete_body(&Value::Object(sent));
            let (o, _) = self.store.delete(info, &n.ns, &n.name, opts).await?;
            self.written.fetch_max(o.rv, Ordering::AcqRel);
            Ok(())
        })
        .await
    }

    /// Judges an owner being deleted with one of the collector's finalizers. In the foreground,
    /// its dependents are all judged once (while it still waits for them) before it is judged
    /// again; it then waits for those that block it.
    async fn judge_owner(
        &self,
        info: &ResourceInfo,
        n: &Node,
        deps: Vec<(Node, bool)>,
        primed: bool,
    ) -> Result<Outcome, ApiError> {
        let Some(obj) = self.cached(info, n)? else { return Ok(Outcome::Done) };
        let meta = Meta::of(&obj);
        if !meta.collecting() {
            return Ok(Outcome::Done);
        }
        if meta.has_finalizer(ORPHAN) {
            let registry = self.store.registry();
            let uid = &n.uid;
            let mut edits = futures_util::stream::iter(deps)
                .map(|(d, _)| {
                    let dinfo = registry.resource_of(&d.res.0, &d.res.1).cloned();
                    async move {
                        let Some(dinfo) = dinfo else { return Ok(None) };
                        self.edit_refs(&dinfo, &d, 0, |refs| {
                            refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(&**uid))
                        })
                        .await
                    }
                })
                .buffer_unordered(PARALLEL);
            while let Some(r) = edits.next().await {
                r?;
            }
            drop(edits);
            self.remove_finalizer(info, n, obj.rv, ORPHAN).await?;
            return Ok(Outcome::Done);
        }
        if !primed && !deps.is_empty() {
            return Ok(Outcome::Prime(deps.into_iter().map(|(d, _)| d).collect()));
        }
        let blocking: Vec<Node> = deps.into_iter().filter(|(_, blocks)| *blocks).map(|(d, _)| d).collect();
        if !blocking.is_empty() {
            // They go first; their deletions bring it back here.
            return Ok(Outcome::Next(blocking));
        }
        self.remove_finalizer(info, n, obj.rv, FOREGROUND).await?;
        Ok(Outcome::Done)
    }

    /// Records kube's `OwnerRefInvalidNamespace` warning on a dependent whose owner (of a
    /// namespaced kind) exists, but in another namespace: the reference names an owner in the
    /// dependent's own namespace (none, for a cluster-scoped dependent), where there is none.
    /// Once per reference; best effort, as kube's event recorder (a warning that cannot be
    /// recorded never holds a collection back). Whether the reference was misplaced.
    async fn report_misplaced_owner(&self, info: &ResourceInfo, dep: &StoredObject, r: &OwnerRef) -> bool {
        if crate::delete_options::is_event(info) {
            return false;
        }
        let registry = self.store.registry();
        let Some((group, version)) = parse_group_version(&r.api_version) else { return false };
        let Some(owner_info) =
            registry.all().iter().find(|i| i.group == group && i.version == version && i.kind == r.kind)
        else {
            return false;
        };
        if !owner_info.namespaced {
            return false;
        }
        let sel = Selectors { fields: crate::selector::FieldSelector::name_is(&r.name), ..Default::default() };
        let Ok(found) = self.store.cache().list(owner_info, None, ListAt::Latest, None, 0, &sel) else { return false };
        if !found.items.iter().any(|o| o.uid == r.uid && o.namespace != dep.namespace) {
            return false;
        }
        {
            let mut reported = self.reported.lock();
            if reported.len() >= REPORTED_KEPT {
                reported.clear();
            }
            if !reported.insert((dep.uid.clone(), r.uid.clone())) {
                return true;
            }
        }
        let message = format!(
            "ownerRef [{}/{}, namespace: {}, name: {}, uid: {}] does not exist in namespace {}",
            r.api_version,
            r.kind,
            dep.namespace,
            r.name,
            r.uid,
            crate::structural::go_quote(&dep.namespace)
        );
        // kube's collector names the dependent by its identity (no resourceVersion).
        let involved = Involved {
            kind: info.kind.clone(),
            api_version: info.api_version(),
            namespace: dep.namespace.clone(),
            name: dep.name.clone(),
            uid: dep.uid.clone(),
            resource_version: String::new(),
        };
        let recorded = self
            .events
            .record_now(&involved, crate::event_recorder::EventType::Warning, "OwnerRefInvalidNamespace", &message)
            .await;
        if let Some(rv) = recorded {
            self.written.fetch_max(rv, Ordering::AcqRel);
        }
        true
    }

    /// What an owner reference of a dependent in namespace `ns` finds.
    async fn owner(&self, r: &OwnerRef, ns: &str) -> Result<Owner, ApiError> {
        let Some((group, version)) = parse_group_version(&r.api_version) else { return Ok(Owner::Unresolvable) };
        let registry = self.store.registry();
        let Some(served) = registry.all().iter().find(|i| i.group == group && i.version == version && i.kind == r.kind)
        else {
            return Ok(Owner::Unresolvable);
        };
        let Some(info) = registry.resource_of(&served.group, &served.plural).cloned() else {
            return Ok(Owner::Unresolvable);
        };
        // Probed, never stored: nothing to find (kube's live read of one is no owner either).
        if crate::component_status::is_component_statuses(&info) {
            return Ok(Owner::Unresolvable);
        }
        let ns = match (info.namespaced, ns.is_empty()) {
            (false, _) => "",
            (true, false) => ns,
            (true, true) => return Ok(Owner::Invalid),
        };
        let judge = |o: &StoredObject| if Meta::of(o).in_foreground() { Owner::Waiting } else { Owner::Present };
        if let Some(o) = self.store.cache().get(&info, ns, &r.name)?
            && o.uid == r.uid
            && matches!(judge(&o), Owner::Present)
        {
            return Ok(Owner::Present);
        }
        // The cache may be behind (the owner created, deleted, or no longer waiting): the
        // storage decides.
        match self.store.stored(&info, ns, &r.name).await {
            Ok(o) if o.uid == r.uid => Ok(judge(&o)),
            Ok(_) => Ok(Owner::Absent),
            Err(e) if e.code == 404 => Ok(Owner::Absent),
            Err(e) => Err(e),
        }
    }

    /// Rewrites an object's owner references (see [`Self::rewrite`]).
    async fn edit_refs(
        &self,
        info: &ResourceInfo,
        n: &Node,
        judged_rv: u64,
        edit: impl Fn(&mut Vec<serde_json::Map<String, Value>>),
    ) -> Result<Option<u64>, ApiError> {
        self.rewrite(info, n, judged_rv, |meta| {
            let refs = meta.get("ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default();
            let mut maps: Vec<serde_json::Map<String, Value>> =
                refs.iter().filter_map(|r| r.as_object().cloned()).collect();
            edit(&mut maps);
            let new: Vec<Value> = maps.into_iter().map(Value::Object).collect();
            if new == refs {
                return false;
            }
            if new.is_empty() {
                meta.remove("ownerReferences");
            } else {
                meta.insert("ownerReferences".into(), Value::Array(new));
            }
            true
        })
        .await
    }

    /// Removes one finalizer from an object (see [`Self::rewrite`]).
    async fn remove_finalizer(
        &self,
        info: &ResourceInfo,
        n: &Node,
        judged_rv: u64,
        finalizer: &str,
    ) -> Result<(), ApiError> {
        self.rewrite(info, n, judged_rv, |meta| {
            let Some(Value::Array(list)) = meta.get_mut("finalizers") else { return false };
            let before = list.len();
            list.retain(|f| f.as_str() != Some(finalizer));
            list.len() != before
        })
        .await
        .map(drop)
    }

    /// Updates an object's metadata with `edit` (true when it changed something) as a
    /// compare-and-swap on the version edited. With `judged_rv` (not 0), a version other than
    /// the one judged is not edited: an error, so that it is judged again. Otherwise a write
    /// that meets a newer version is tried again on it, a few times. Nothing is written when the
    /// object is gone or replaced, or `edit` changes nothing. Returns the written version.
    async fn rewrite(
        &self,
        info: &ResourceInfo,
        n: &Node,
        judged_rv: u64,
        edit: impl Fn(&mut serde_json::Map<String, Value>) -> bool,
    ) -> Result<Option<u64>, ApiError> {
        let conflict = || ApiError::conflict(&info.group, &info.plural, &n.name);
        let (mut cur, _) = match self.store.current(info, &n.ns, &n.name).await {
            Ok(c) => c,
            Err(e) if e.code == 404 => return Ok(None),
            Err(e) => return Err(e),
        };
        for _ in 0..CONFLICT_ATTEMPTS {
            if *cur.uid != *n.uid {
                return Ok(None);
            }
            if judged_rv != 0 && cur.rv != judged_rv {
                return Err(conflict());
            }
            let mut obj = cur.value();
            let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
                return Err(ApiError::internal("object without metadata"));
            };
            if !edit(meta) {
                return Ok(None);
            }
            let url_ns = info.namespaced.then_some(&*n.ns);
            match self.store.update(info, url_ns, Some(&n.name), obj, WriteOpts::default().by(CONTROLLER)).await {
                Ok(o) => {
                    self.written.fetch_max(o.rv, Ordering::AcqRel);
                    return Ok(Some(o.rv));
                }
                Err(e) if e.code == 404 => return Ok(None),
                Err(e) if e.code == 409 => match self.store.stored(info, &n.ns, &n.name).await {
                    Ok(newer) => cur = newer,
                    Err(e) if e.code == 404 => return Ok(None),
                    Err(e) => return Err(e),
                },
                Err(e) => return Err(e),
            }
        }
        Err(conflict())
    }
}

/// An apiVersion's group and version, as kube's `ParseGroupVersion` reads them (None when it
/// has more than one `/`).
pub(crate) fn parse_group_version(api_version: &str) -> Option<(&str, &str)> {
    if api_version.is_empty() || api_version == "/" {
        return Some(("", ""));
    }
    match api_version.matches('/').count() {
        0 => Some(("", api_version)),
        1 => api_version.split_once('/'),
        _ => None,
    }
}

/// A judgement under way: the object, whether it is judged as an owner, and what it gave.
type JobFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = (Node, bool, Result<Outcome, ApiError>)> + Send + 'a>>;

/// Takes in what a judgement gave: what it queues next, or when it is tried again (after a
/// delay that doubles with each failure of that object).
fn finish(st: &mut State, n: Node, owner: bool, r: Result<Outcome, ApiError>) {
    let key = (n, owner);
    if owner { &mut st.busy_owners } else { &mut st.busy_dependents }.remove(&key.0);
    let (n, _) = &key;
    if !owner {
        // A foreground owner waiting for this dependent's judgement is judged once it has
        // none left to wait for.
        for uid in st.priming_for.remove(n).unwrap_or_default() {
            if let Some((_, left)) = st.priming.get_mut(&uid) {
                *left = left.saturating_sub(1);
                if *left == 0
                    && let Some((o, _)) = st.priming.remove(&uid)
                    && st.graph.collecting.contains_key(&uid)
                {
                    st.primed.insert(uid);
                    st.queue.owners.insert(o);
                }
            }
        }
    }
    match r {
        Ok(outcome) => {
            st.failed.remove(&key);
            let (n, _) = key;
            match outcome {
                Outcome::Done => {}
                Outcome::Next(deps) => st.queue.dependents.extend(deps),
                Outcome::Prime(deps) => {
                    st.priming.insert(n.uid.clone(), (n.clone(), deps.len()));
                    for d in deps {
                        st.priming_for.entry(d.clone()).or_default().push(n.uid.clone());
                        st.queue.dependents.insert(d);
                    }
                }
                Outcome::Unresolved => {
                    st.unresolved.insert(n);
                }
            }
        }
        Err(e) => {
            tracing::debug!(name = %key.0.name, error = %e, "garbage collector: retrying");
            let b = st.failed.entry(key).or_insert(Backoff { failures: 0, at: Instant::now() });
            b.failures += 1;
            let delay = RETRY.0.saturating_mul(1 << b.failures.min(16).saturating_sub(1)).min(RETRY.1);
            b.at = Instant::now() + delay;
        }
    }
}

/// Applies one change of an object of resource `res` to the graph, and queues what it may let go.
fn observe(st: &mut State, res: &ResKey, kind: Change, o: &StoredObject) {
    let uid = o.uid.as_str();
    // An owner being collected whose dependents changed is judged again.
    fn owners_changed<'a>(graph: &Graph, uids: impl IntoIterator<Item = &'a str>, queue: &mut Queue) {
        for uid in uids {
            if let Some((owner, _)) = graph.collecting.get(uid) {
                queue.owners.insert(owner.clone());
            }
        }
    }
    if kind == Change::Deleted {
        let old = st.graph.remove(uid);
        st.graph.collecting.remove(uid);
        st.primed.remove(uid);
        if !st.unresolved.is_empty() || !st.failed.is_empty() {
            let node = st.graph.node(res, o);
            st.unresolved.remove(&node);
            st.failed.remove(&(node.clone(), false));
            st.failed.remove(&(node, true));
        }
        if let Some(deps) = st.graph.dependents.get(uid) {
            st.queue.dependents.extend(deps.iter().cloned());
        }
        owners_changed(&st.graph, old.iter().map(|u| &**u), &mut st.queue);
        return;
    }
    let meta = Meta::of(o);
    let collecting = meta.collecting();
    // Most changes concern objects that own nothing and are owned by nothing: nothing to record.
    if meta.refs().is_empty()
        && !collecting
        && !st.graph.refs.contains_key(uid)
        && !st.graph.collecting.contains_key(uid)
    {
        return;
    }
    let node = st.graph.node(res, o);
    let graph = &mut st.graph;
    let queue = &mut st.queue;
    if let Some(old) = graph.set_refs(&node, meta.refs()) {
        if !meta.refs().is_empty() {
            queue.dependents.insert(node.clone());
        }
        owners_changed(graph, old.iter().map(|u| &**u), queue);
        owners_changed(graph, meta.refs().iter().map(|r| r.uid.as_str()), queue);
    }
    if collecting {
        graph.collecting.insert(node.uid.clone(), (node.clone(), meta.has_finalizer(FOREGROUND)));
        queue.owners.insert(node);
    } else {
        graph.collecting.remove(uid);
        st.primed.remove(uid);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::Registry;

    fn object(name: &str, uid: &str, meta: Value) -> StoredObject {
        let info = Registry::with_defaults().lookup("configmaps").cloned().unwrap();
        let mut m = json!({"name": name, "namespace": "default", "uid": uid});
        if let (Some(m), Value::Object(extra)) = (m.as_object_mut(), meta) {
            m.extend(extra);
        }
        crate::object::build(&info, json!({"metadata": m}).as_object().unwrap(), 7)
    }

    fn owner(uid: &str, block: bool) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": uid, "blockOwnerDeletion": block})
    }

    #[test]
    fn metadata_is_read_only_where_it_may_matter() {
        let plain = object("a", "u1", json!({"labels": {"x": "y"}}));
        let m = Meta::of(&plain);
        assert!(m.refs().is_empty() && !m.collecting());
        let marked = object(
            "b",
            "u2",
            json!({"ownerReferences": [owner("o1", true)], "finalizers": ["foregroundDeletion"],
                "deletionTimestamp": "2026-01-01T00:00:00Z"}),
        );
        let m = Meta::of(&marked);
        assert_eq!(m.refs().len(), 1);
        assert!(m.refs()[0].blocks());
        assert!(m.collecting() && m.in_foreground());
        // A finalizer alone, without a deletion under way, is not the collector's business.
        let held = object("c", "u3", json!({"finalizers": ["orphan"]}));
        assert!(!Meta::of(&held).collecting());
    }

    #[test]
    fn only_the_top_level_metadata_counts() {
        let json = br#"{"kind":"Gadget","apiVersion":"x/v1","aaa":{"metadata":{"ownerReferences":[{"uid":"wrong"}]}},"metadata":{"name":"g","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"right"}]},"spec":{"x":[1,2,3]}}"#;
        let m = top_level_metadata(json).unwrap();
        assert_eq!(m.refs().len(), 1);
        assert_eq!(m.refs()[0].uid, "right");
        assert!(top_level_metadata(br#"{"kind":"X","spec":{}}"#).is_none());
    }

    #[test]
    fn the_graph_follows_reference_changes() {
        let res: ResKey = Arc::new((String::new(), "configmaps".into()));
        let dep = object("d", "u-d", json!({}));
        let mut g = Graph::default();
        let node = g.node(&res, &dep);
        let first: Vec<OwnerRef> = serde_json::from_value(json!([owner("o1", true), owner("o2", false)])).unwrap();
        assert_eq!(g.set_refs(&node, &first), Some(Vec::new()));
        assert_eq!(g.set_refs(&node, &first), None, "unchanged references change nothing");
        assert_eq!(g.dependents_of("o1"), vec![(node.clone(), true)]);
        assert_eq!(g.dependents_of("o2"), vec![(node.clone(), false)]);
        // A change of any field of a reference is a change.
        let mut renamed = first.clone();
        renamed[1].name = "other".into();
        assert!(g.set_refs(&node, &renamed).is_some());
        assert!(g.set_refs(&node, &first).is_some());
        let second: Vec<OwnerRef> = serde_json::from_value(json!([owner("o2", true)])).unwrap();
        assert_eq!(g.set_refs(&node, &second).map(|u| u.len()), Some(2));
        assert!(g.dependents_of("o1").is_empty());
        assert_eq!(g.dependents_of("o2"), vec![(node.clone(), true)]);
        assert_eq!(g.remove(&node.uid), vec![Arc::<str>::from("o2")]);
        assert!(g.dependents.is_empty() && g.refs.is_empty());
        g.set_refs(&node, &second);
        g.clear(&res);
        assert!(g.dependents.is_empty() && g.refs.is_empty());
    }
}
