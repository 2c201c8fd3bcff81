//! The thread-safe indexed store (client-go's `ThreadSafeStore` + `Indexer`).
//!
//! Holds the latest state of every object by key, plus named secondary indexes. Readers take a
//! shared lock for the few nanoseconds of a map lookup and never block each other; every reader
//! gets `Object` handles (an `Arc` clone), never copies.
//!
//! Invariants:
//! - For every index name and every stored key, the key is in exactly the value sets produced by
//!   that index function for the stored object; value sets are never empty (an emptied value is
//!   removed, so high-churn values cannot leak, kubernetes#84959).
//! - A writer never holds the lock while user code (index functions) runs: index values are
//!   computed before the lock is taken and kept per entry, so updates and deletes diff against the
//!   stored values instead of calling the index function on the old object. If the set of index
//!   functions changed in between (`add_indexers`), the write is recomputed. The one exception is
//!   `add_indexers`: after an off-lock pass it indexes the objects written meanwhile under an
//!   upgradable read lock (writers wait), so that it cannot be starved.
//! - An operation whose index function fails changes nothing and returns the error, but for the
//!   lenient ones an informer applies ([`Indexer::upsert_lenient`], [`Indexer::replace_lenient`]):
//!   they store the object and leave it out of the failing index only, so the cache still holds
//!   what the server holds.
//! - The store's resourceVersion follows the last written object, delete-with-object, replace and
//!   bookmark (client-go's `LastStoreSyncResourceVersion` in atomic mode).
//! - A key enters the store (and its indexes) as a copy in an allocation of its own
//!   ([`ObjectKey::detached`]) and stays while the key is stored, through every new version of
//!   the object. A key shared with the object it came from would stay next to that version's
//!   allocation after the version is replaced, so the freed slots of replaced versions could not
//!   merge into room for larger ones: with 10,000 pods whose first versions came from a streaming
//!   list, a million updates left 1,600 object-sized holes and peaked at 1.13× the RSS after
//!   sync, against 1.06× with keys of their own.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use foldhash::fast::RandomState;
use parking_lot::{RwLock, RwLockUpgradableReadGuard};
use smallvec::SmallVec;

use crate::key::ObjectKey;
use crate::object::Object;
use crate::store::index::{IndexFunc, IndexFuncError, Indexers};

type Map<K, V> = HashMap<K, V, RandomState>;
type Set<K> = HashSet<K, RandomState>;
/// The values one index function produced for one object (almost always exactly one).
type Vals = SmallVec<[Arc<str>; 1]>;
/// Freshly computed index values, one list per index function (inline for up to two indexes:
/// no allocation for the outer list on the update path).
type Computed = SmallVec<[Vec<String>; 2]>;

/// An error from an indexer operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// No index with this name exists.
    #[error("index with name {0} does not exist")]
    NoSuchIndex(String),
    /// `add_indexers` was given a name that already exists.
    #[error("indexer conflict: {0}")]
    Conflict(String),
    /// An index function failed for an object; the operation changed nothing.
    #[error("index function {index:?} failed for {key}: {error}")]
    Func {
        /// The index name.
        index: String,
        /// The object's key.
        key: ObjectKey,
        /// The function's error.
        error: IndexFuncError,
    },
}

/// One operation of a [`Indexer::transaction`].
#[derive(Debug)]
pub enum Txn<K> {
    /// Add or replace the object.
    Add(Object<K>),
    /// Add or replace the object (same as `Add`; kept for client-go parity).
    Update(Object<K>),
    /// Remove the object's key; the object's resourceVersion becomes the store's.
    Delete(Object<K>),
}

impl<K> Txn<K> {
    fn object(&self) -> &Object<K> {
        match self {
            Txn::Add(o) | Txn::Update(o) | Txn::Delete(o) => o,
        }
    }
}

/// Some operations of a transaction failed; the others were applied.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{} of {total} store operations failed: {}", errors.len(), errors.first().map(|e| e.to_string()).unwrap_or_default())]
pub struct TransactionError {
    /// Indices (into the transaction) of the operations that were applied.
    pub successful: Vec<usize>,
    /// Number of operations in the transaction.
    pub total: usize,
    /// The errors of the failed operations.
    pub errors: Vec<IndexError>,
}

struct Entry<K> {
    obj: Object<K>,
    /// Index values per index function, parallel to `State::funcs`.
    vals: Box<[Vals]>,
}

type Funcs<K> = Arc<Vec<(Arc<str>, IndexFunc<K>)>>;

struct State<K> {
    items: Map<ObjectKey, Entry<K>>,
    funcs: Funcs<K>,
    /// Per index function: value → keys.
    indices: Vec<Map<Arc<str>, Set<ObjectKey>>>,
    /// The last resourceVersion stored (reused buffer: no allocation per update).
    rv: Option<String>,
}

/// A thread-safe, indexed object store.
///
/// ```
/// use informer::{Indexer, Indexers, Object, NAMESPACE_INDEX};
/// use k8s_openapi::api::core::v1::Pod;
/// let store: Indexer<Pod> = Indexer::new(Indexers::new().with_namespace_index());
/// let pod = |ns: &str, n: &str| Object::<Pod>::from_json(format!(
///     r#"{{"metadata":{{"name":"{n}","namespace":"{ns}","resourceVersion":"1"}}}}"#)).unwrap();
/// store.add(pod("a", "x")).unwrap();
/// store.add(pod("b", "y")).unwrap();
/// assert_eq!(store.len(), 2);
/// assert_eq!(store.by_index(NAMESPACE_INDEX, "a").unwrap()[0].name(), "x");
/// assert!(store.get_by_key("b/y").is_some());
/// ```
pub struct Indexer<K> {
    state: RwLock<State<K>>,
}

impl<K> Default for Indexer<K> {
    fn default() -> Self {
        Indexer {
            state: RwLock::new(State {
                items: Map::default(),
                funcs: Arc::new(Vec::new()),
                indices: Vec::new(),
                rv: None,
            }),
        }
    }
}

/// Computes the index values of `obj` for every function (user code: call without locks held).
fn compute<K>(funcs: &[(Arc<str>, IndexFunc<K>)], obj: &Object<K>) -> Result<Computed, IndexError> {
    funcs
        .iter()
        .map(|(name, f)| {
            f(obj).map_err(|error| IndexError::Func { index: name.to_string(), key: obj.key().clone(), error })
        })
        .collect()
}

/// Computes the index values of `obj`, leaving it out of (no values in) an index whose function
/// fails; the failures go to `errors`.
fn compute_lenient<K>(funcs: &[(Arc<str>, IndexFunc<K>)], obj: &Object<K>, errors: &mut Vec<IndexError>) -> Computed {
    funcs
        .iter()
        .map(|(name, f)| {
            f(obj).unwrap_or_else(|error| {
                errors.push(IndexError::Func { index: name.to_string(), key: obj.key().clone(), error });
                Vec::new()
            })
        })
        .collect()
}

/// Whether an entry's stored values for one index equal freshly computed ones.
fn same_values(old: &Vals, new: &[String]) -> bool {
    old.len() == new.len() && old.iter().zip(new).all(|(a, b)| **a == **b)
}

impl<K> State<K> {
    /// Inserts `key` under the new values for index `i`, reusing the stored old values when
    /// nothing changed. Returns the values to keep in the entry.
    fn reindex(&mut self, i: usize, key: &ObjectKey, old: Option<&Vals>, new: Vec<String>) -> Vals {
        if let Some(old) = old {
            if same_values(old, &new) {
                return old.clone(); // fast path: unchanged values, no index mutation
            }
            for v in old.iter() {
                self.remove_key(i, v, key);
            }
        }
        let index = &mut self.indices[i];
        let mut out = Vals::with_capacity(new.len());
        for v in new {
            let shared = match index.get_key_value(v.as_str()) {
                Some((k, _)) => k.clone(),
                None => Arc::from(v),
            };
            index.entry(shared.clone()).or_default().insert(key.clone());
            out.push(shared);
        }
        out
    }

    fn remove_key(&mut self, i: usize, value: &str, key: &ObjectKey) {
        let index = &mut self.indices[i];
        if let Some(set) = index.get_mut(value) {
            set.remove(key);
            if set.is_empty() {
                index.remove(value);
            }
        }
    }

    /// Stores `obj`, returning the object it replaced.
    fn put(&mut self, obj: Object<K>, vals: Computed) -> Option<Object<K>> {
        if let Some(rv) = obj.resource_version() {
            self.set_rv(rv);
        }
        // The common update keeps every index value: the object is swapped in place (one lookup;
        // the entry's key and index values stay as they are, no allocation).
        if let Some(e) = self.items.get_mut(obj.key().as_str())
            && e.vals.len() == vals.len()
            && e.vals.iter().zip(&vals).all(|(o, n)| same_values(o, n))
        {
            return Some(std::mem::replace(&mut e.obj, obj));
        }
        let (key, old) = match self.items.remove_entry(obj.key().as_str()) {
            Some((key, e)) => (key, Some(e)),
            None => (obj.key().detached(), None),
        };
        let mut kept = Vec::with_capacity(vals.len());
        for (i, new) in vals.into_iter().enumerate() {
            kept.push(self.reindex(i, &key, old.as_ref().map(|e| &e.vals[i]), new));
        }
        self.items.insert(key, Entry { obj, vals: kept.into_boxed_slice() });
        old.map(|e| e.obj)
    }

    fn remove(&mut self, key: &str) -> Option<Entry<K>> {
        let (key, entry) = self.items.remove_entry(key)?;
        for (i, vals) in entry.vals.iter().enumerate() {
            for v in vals.iter() {
                self.remove_key(i, v, &key);
            }
        }
        Some(entry)
    }

    fn set_rv(&mut self, rv: &str) {
        if self.rv.as_deref() != Some(rv) {
            let buf = self.rv.get_or_insert_with(String::new);
            buf.clear();
            buf.push_str(rv);
        }
    }

    fn index_pos(&self, name: &str) -> Result<usize, IndexError> {
        self.funcs.iter().position(|(n, _)| &**n == name).ok_or_else(|| IndexError::NoSuchIndex(name.to_string()))
    }
}

impl<K> Indexer<K> {
    /// An empty store with the given index functions.
    pub fn new(indexers: Indexers<K>) -> Self {
        let s = Self::default();
        {
            let mut st = s.state.write();
            st.indices = indexers.funcs.iter().map(|_| Map::default()).collect();
            st.funcs = Arc::new(indexers.funcs);
        }
        s
    }

    /// Runs `f` with the current index functions, then `apply` under the write lock; retries if
    /// the index functions changed in between.
    fn write<T, R>(
        &self,
        compute_vals: impl Fn(&[(Arc<str>, IndexFunc<K>)]) -> T,
        apply: impl FnOnce(&mut State<K>, T) -> R,
    ) -> R {
        let mut apply = Some(apply);
        loop {
            let funcs = self.state.read().funcs.clone();
            let vals = compute_vals(&funcs);
            let mut st = self.state.write();
            if Arc::ptr_eq(&st.funcs, &funcs) {
                return (apply.take().expect("apply runs once"))(&mut st, vals);
            }
        }
    }

    /// Adds or replaces an object (client-go `Add`).
    pub fn add(&self, obj: Object<K>) -> Result<(), IndexError> {
        self.upsert(obj).map(|_| ())
    }

    /// Adds or replaces an object and returns the one it replaced (one lock, one lookup).
    pub fn upsert(&self, obj: Object<K>) -> Result<Option<Object<K>>, IndexError> {
        self.write(|f| compute(f, &obj), |st, vals| vals.map(|v| st.put(obj.clone(), v)))
    }

    /// Adds or replaces an object even if an index function fails for it: the object is then
    /// left out of that index, and the failures are returned with the object it replaced. What
    /// an informer applies, so that its cache holds what the server holds.
    pub fn upsert_lenient(&self, obj: Object<K>) -> (Option<Object<K>>, Vec<IndexError>) {
        self.write(
            |f| {
                let mut errors = Vec::new();
                (compute_lenient(f, &obj, &mut errors), errors)
            },
            |st, (vals, errors)| (st.put(obj.clone(), vals), errors),
        )
    }

    /// Adds or replaces an object (client-go `Update`; identical to [`Indexer::add`]).
    pub fn update(&self, obj: Object<K>) -> Result<(), IndexError> {
        self.add(obj)
    }

    /// Removes the object's key; the store's resourceVersion becomes the object's (client-go
    /// `DeleteWithObject`). Returns the removed object, if it was present.
    pub fn delete(&self, obj: &Object<K>) -> Option<Object<K>> {
        let mut st = self.state.write();
        if let Some(rv) = obj.resource_version() {
            st.set_rv(rv);
        }
        st.remove(obj.key().as_str()).map(|e| e.obj)
    }

    /// Removes a key without touching the store's resourceVersion.
    pub fn delete_key(&self, key: &str) -> Option<Object<K>> {
        self.state.write().remove(key).map(|e| e.obj)
    }

    /// Replaces the whole content with `objects` at `resource_version`, atomically: readers see
    /// either the old or the new content. Indexes are rebuilt off-lock. Takes a `Vec` or a slice
    /// (the handles are cloned into the store either way).
    pub fn replace(&self, objects: impl AsRef<[Object<K>]>, resource_version: &str) -> Result<(), IndexError> {
        self.replace_with(objects.as_ref(), resource_version, None)
    }

    /// [`Indexer::replace`] even if index functions fail: an object is then left out of the
    /// index whose function failed for it, and the failures are returned. What an informer
    /// applies on a relist.
    pub fn replace_lenient(&self, objects: impl AsRef<[Object<K>]>, resource_version: &str) -> Vec<IndexError> {
        let errors = parking_lot::Mutex::new(Vec::new());
        let _ = self.replace_with(objects.as_ref(), resource_version, Some(&errors));
        errors.into_inner()
    }

    /// Replaces the content; with `lenient`, failing index functions leave their object out of
    /// their index and are collected there instead of failing the replace.
    fn replace_with(
        &self,
        objects: &[Object<K>],
        resource_version: &str,
        lenient: Option<&parking_lot::Mutex<Vec<IndexError>>>,
    ) -> Result<(), IndexError> {
        self.write(
            |funcs| -> Result<State<K>, IndexError> {
                let mut fresh = State {
                    items: Map::with_capacity_and_hasher(objects.len(), RandomState::default()),
                    funcs: Arc::new(Vec::new()), // placeholder, swapped below
                    indices: funcs.iter().map(|_| Map::default()).collect(),
                    rv: None,
                };
                let mut errors = Vec::new();
                for obj in objects {
                    let vals = match lenient {
                        Some(_) => compute_lenient(funcs, obj, &mut errors),
                        None => compute(funcs, obj)?,
                    };
                    let key = obj.key().detached();
                    if let Some(old) = fresh.items.remove(&key) {
                        // duplicate key in the list: the later object wins
                        for (i, vs) in old.vals.iter().enumerate() {
                            for v in vs.iter() {
                                fresh.remove_key(i, v, &key);
                            }
                        }
                    }
                    let mut kept = Vec::with_capacity(vals.len());
                    for (i, new) in vals.into_iter().enumerate() {
                        kept.push(fresh.reindex(i, &key, None, new));
                    }
                    fresh.items.insert(key, Entry { obj: obj.clone(), vals: kept.into_boxed_slice() });
                }
                if let Some(out) = lenient {
                    // Only the last computation counts: the functions may have changed meanwhile.
                    *out.lock() = errors;
                }
                Ok(fresh)
            },
            |st, fresh| {
                let fresh = fresh?;
                st.items = fresh.items;
                st.indices = fresh.indices;
                st.set_rv(resource_version);
                Ok(())
            },
        )
    }

    /// Records a bookmark's resourceVersion.
    pub fn bookmark(&self, resource_version: &str) {
        self.state.write().set_rv(resource_version);
    }

    /// The resourceVersion the store has caught up to, if any.
    pub fn last_resource_version(&self) -> Option<String> {
        self.state.read().rv.as_deref().map(str::to_string)
    }

    /// Applies several operations under one lock (client-go `Transaction`). Operations whose
    /// index function fails are skipped and reported; the others are applied in order. The store's
    /// resourceVersion becomes that of the last applied operation's object.
    pub fn transaction(&self, txns: Vec<Txn<K>>) -> Result<(), TransactionError> {
        let total = txns.len();
        self.write(
            |funcs| {
                txns.iter()
                    .map(|t| match t {
                        Txn::Delete(_) => Ok(Computed::new()),
                        Txn::Add(o) | Txn::Update(o) => compute(funcs, o),
                    })
                    .collect::<Vec<_>>()
            },
            |st, vals| {
                let mut successful = Vec::with_capacity(total);
                let mut errors = Vec::new();
                for (i, (t, v)) in txns.iter().zip(vals).enumerate() {
                    match (t, v) {
                        (Txn::Delete(o), _) => {
                            if let Some(rv) = o.resource_version() {
                                st.set_rv(rv);
                            }
                            st.remove(o.key().as_str());
                            successful.push(i);
                        }
                        (_, Ok(v)) => {
                            st.put(t.object().clone(), v);
                            successful.push(i);
                        }
                        (_, Err(e)) => errors.push(e),
                    }
                }
                if errors.is_empty() { Ok(()) } else { Err(TransactionError { successful, total, errors }) }
            },
        )
    }

    /// Adds index functions; existing objects are indexed by them. Fails without changing
    /// anything if a name already exists (or repeats in `new`), or a function fails.
    ///
    /// The bulk of the work runs off-lock; only the objects written meanwhile are then indexed
    /// under an upgradable read lock, which excludes writers (and, the lock being fair, readers
    /// that arrive behind a waiting writer), so this always completes, however busy the writers
    /// are. As in client-go, index functions must not call back into this indexer.
    pub fn add_indexers(&self, new: Indexers<K>) -> Result<(), IndexError> {
        let conflict = |funcs: &[(Arc<str>, IndexFunc<K>)]| -> Result<(), IndexError> {
            let mut seen: Vec<&str> = funcs.iter().map(|(n, _)| &**n).collect();
            for (n, _) in &new.funcs {
                if seen.contains(&&**n) {
                    return Err(IndexError::Conflict(n.to_string()));
                }
                seen.push(n);
            }
            Ok(())
        };
        let snapshot: Vec<Object<K>> = {
            let st = self.state.read();
            conflict(&st.funcs)?;
            if new.funcs.is_empty() {
                return Ok(());
            }
            st.items.values().map(|e| e.obj.clone()).collect()
        };
        // Pass 1, off-lock: every object of the snapshot.
        let mut computed: Map<ObjectKey, (Object<K>, Computed)> =
            Map::with_capacity_and_hasher(snapshot.len(), RandomState::default());
        for obj in snapshot {
            let vals = compute(&new.funcs, &obj)?;
            computed.insert(obj.key().clone(), (obj, vals));
        }
        // Pass 2, writers excluded: only the objects written since the snapshot.
        let st = self.state.upgradable_read();
        conflict(&st.funcs)?;
        let mut all_vals: Vec<(ObjectKey, Computed)> = Vec::with_capacity(st.items.len());
        for (key, e) in st.items.iter() {
            let vals = match computed.remove(key) {
                Some((o, vals)) if o.ptr_eq(&e.obj) => vals,
                _ => compute(&new.funcs, &e.obj)?,
            };
            all_vals.push((key.clone(), vals));
        }
        let mut st = RwLockUpgradableReadGuard::upgrade(st);
        let base = st.funcs.len();
        let mut funcs: Vec<_> = st.funcs.iter().cloned().collect();
        funcs.extend(new.funcs.iter().cloned());
        st.funcs = Arc::new(funcs);
        for _ in &new.funcs {
            st.indices.push(Map::default());
        }
        for (key, vals) in all_vals {
            let mut kept: Vec<Vals> = Vec::with_capacity(vals.len());
            for (j, v) in vals.into_iter().enumerate() {
                kept.push(st.reindex(base + j, &key, None, v));
            }
            let entry = st.items.get_mut(&key).expect("writers were excluded");
            let mut vs = std::mem::take(&mut entry.vals).into_vec();
            vs.extend(kept);
            entry.vals = vs.into_boxed_slice();
        }
        Ok(())
    }

    /// The names of the index functions.
    pub fn index_names(&self) -> Vec<String> {
        self.state.read().funcs.iter().map(|(n, _)| n.to_string()).collect()
    }

    /// The object stored under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Object<K>> {
        self.state.read().items.get(key).map(|e| e.obj.clone())
    }

    /// Looks each of `keys` up under one read lock, calling `f` with its object if stored.
    /// `f` must not write to this store.
    pub(crate) fn get_each<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k str>,
        mut f: impl FnMut(&'k str, Option<&Object<K>>),
    ) {
        let st = self.state.read();
        for k in keys {
            f(k, st.items.get(k).map(|e| &e.obj));
        }
    }

    /// The stored object with the same key as `obj`.
    pub fn get(&self, obj: &Object<K>) -> Option<Object<K>> {
        self.get_by_key(obj.key().as_str())
    }

    /// Whether a key is stored.
    pub fn contains_key(&self, key: &str) -> bool {
        self.state.read().items.contains_key(key)
    }

    /// Every stored object (unordered).
    pub fn list(&self) -> Vec<Object<K>> {
        self.state.read().items.values().map(|e| e.obj.clone()).collect()
    }

    /// Every stored key (unordered).
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.state.read().items.keys().cloned().collect()
    }

    /// Number of stored objects.
    pub fn len(&self) -> usize {
        self.state.read().items.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` for each stored object under the read lock (no allocation). `f` must not write
    /// to this store.
    pub fn for_each(&self, mut f: impl FnMut(&Object<K>)) {
        for e in self.state.read().items.values() {
            f(&e.obj);
        }
    }

    /// Objects indexed under `value` by the index `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Object<K>>, IndexError> {
        let st = self.state.read();
        let i = st.index_pos(name)?;
        Ok(st.indices[i]
            .get(value)
            .map(|keys| keys.iter().filter_map(|k| st.items.get(k).map(|e| e.obj.clone())).collect())
            .unwrap_or_default())
    }

    /// Keys indexed under `value` by the index `name`, sorted.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        let st = self.state.read();
        let i = st.index_pos(name)?;
        let mut keys: Vec<ObjectKey> =
            st.indices[i].get(value).map(|s| s.iter().cloned().collect()).unwrap_or_default();
        keys.sort_unstable();
        Ok(keys)
    }

    /// Every value the index `name` currently holds (unordered); empty for an unknown index.
    pub fn list_index_func_values(&self, name: &str) -> Vec<String> {
        let st = self.state.read();
        match st.index_pos(name) {
            Ok(i) => st.indices[i].keys().map(|v| v.to_string()).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The values index `name`'s function gives `obj` (client-go's `GetIndexers()[name](obj)`),
    /// computed outside any lock; `obj` need not be stored.
    pub fn index_values(&self, name: &str, obj: &Object<K>) -> Result<Vec<String>, IndexError> {
        let f = {
            let st = self.state.read();
            let i = st.index_pos(name)?;
            st.funcs[i].1.clone()
        };
        f(obj).map_err(|error| IndexError::Func { index: name.to_string(), key: obj.key().clone(), error })
    }

    /// Objects that share at least one value of index `name` with `obj` (client-go `Index`).
    /// Calls the index function on `obj` outside any lock.
    pub fn index(&self, name: &str, obj: &Object<K>) -> Result<Vec<Object<K>>, IndexError> {
        let values = self.index_values(name, obj)?;
        let st = self.state.read();
        let i = st.index_pos(name)?;
        let mut keys: Set<&ObjectKey> = Set::default();
        for v in &values {
            if let Some(s) = st.indices[i].get(v.as_str()) {
                keys.extend(s.iter());
            }
        }
        Ok(keys.into_iter().filter_map(|k| st.items.get(k).map(|e| e.obj.clone())).collect())
    }

    /// Number of distinct values held by index `name` (for tests and metrics).
    pub fn index_value_count(&self, name: &str) -> Result<usize, IndexError> {
        let st = self.state.read();
        let i = st.index_pos(name)?;
        Ok(st.indices[i].len())
    }
}
