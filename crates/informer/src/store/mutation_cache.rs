//! client-go's `MutationCache`: an informer's cache overlaid with the objects a controller has
//! just written, so that it reads its own writes before the watch delivers them.
//!
//! A controller calls [`MutationCache::mutation`] with the object a write returned; reads then
//! give, per key, the newer of the cache's object and the written one by resourceVersion (as an
//! integer, as kube-apiserver's etcd-backed versions are). A written object is forgotten once the
//! cache holds a version at least as new, after `ttl`, or when more than 100 are held (the least
//! recently used goes first).
//!
//! Invariants: a read never gives an object older than the cache's (a resourceVersion that is
//! not an integer counts as 0, where client-go's versioner would panic); a write older than one
//! already recorded for its key is ignored; with `include_adds` off, a key the cache does not hold
//! reads as missing (a create not yet seen cannot be told from a delete after it), with it on the
//! written object is given, and [`MutationCache::by_index`] includes written objects the index
//! would place under the value, unless the cache holds a version of theirs at least as new
//! (client-go's `ByIndex` does not check; a newer write is still given under the value the
//! cache holds it under, as client-go gives it).
//! Each read compares and forgets under one lock, so a write recorded meanwhile is never lost.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::{IndexError, Indexer};
use crate::key::ObjectKey;
use crate::object::Object;

/// How many written objects are held at most (client-go's LRU size).
const CAPACITY: usize = 100;

struct Written<K> {
    obj: Object<K>,
    expires: Instant,
    /// When it was last used, for the least-recently-used eviction.
    used: u64,
}

/// An informer's cache overlaid with recent writes (see the module documentation).
pub struct MutationCache<K> {
    backing: Arc<Indexer<K>>,
    ttl: Duration,
    include_adds: bool,
    written: Mutex<(HashMap<ObjectKey, Written<K>>, u64)>,
}

/// A resourceVersion as an integer; 0 when it is not one.
fn version<K>(obj: &Object<K>) -> u64 {
    obj.resource_version().and_then(|v| v.parse().ok()).unwrap_or(0)
}

impl<K> MutationCache<K> {
    /// client-go's `NewIntegerResourceVersionMutationCache` over the informer's indexer.
    pub fn new(backing: Arc<Indexer<K>>, ttl: Duration, include_adds: bool) -> Self {
        MutationCache { backing, ttl, include_adds, written: Mutex::new((HashMap::new(), 0)) }
    }

    /// Records an object a write returned.
    pub fn mutation(&self, obj: Object<K>) {
        let mut guard = self.written.lock();
        let (written, clock) = &mut *guard;
        let now = Instant::now();
        *clock += 1;
        if let Some(w) = written.get_mut(obj.key())
            && w.expires > now
            && version(&obj) < version(&w.obj)
        {
            // (A use, as client-go's lookup of it.)
            w.used = *clock;
            return;
        }
        let key = obj.key().clone();
        written.insert(key, Written { obj, expires: now + self.ttl, used: *clock });
        if written.len() > CAPACITY {
            written.retain(|_, w| w.expires > now);
            if written.len() > CAPACITY
                && let Some(oldest) = written.iter().min_by_key(|(_, w)| w.used).map(|(k, _)| k.clone())
            {
                written.remove(&oldest);
            }
        }
    }

    /// The written object of `key`, if held and not expired, with the written objects locked.
    fn written_locked(written: &mut (HashMap<ObjectKey, Written<K>>, u64), key: &str) -> Option<Object<K>> {
        let (written, clock) = written;
        let now = Instant::now();
        match written.get_mut(key) {
            Some(w) if w.expires > now => {
                *clock += 1;
                w.used = *clock;
                Some(w.obj.clone())
            }
            Some(_) => {
                written.remove(key);
                None
            }
            None => None,
        }
    }

    /// The newer of the cache's `backing` and the written object of its key; a written object
    /// that is not newer is forgotten (compared and forgotten under one lock).
    fn newer(&self, key: &str, backing: Object<K>) -> Object<K> {
        let mut written = self.written.lock();
        match Self::written_locked(&mut written, key) {
            Some(w) if version(&w) > version(&backing) => w,
            Some(_) => {
                written.0.remove(key);
                backing
            }
            None => backing,
        }
    }

    /// The object of `key` (client-go's `GetByKey`).
    pub fn get_by_key(&self, key: &str) -> Option<Object<K>> {
        match self.backing.get_by_key(key) {
            Some(backing) => Some(self.newer(key, backing)),
            None if self.include_adds => Self::written_locked(&mut self.written.lock(), key),
            None => None,
        }
    }

    /// Forgets the written object of `key` unless it is newer than `held`.
    fn forget_if_not_newer(&self, key: &ObjectKey, held: u64) {
        let mut written = self.written.lock();
        if written.0.get(key).is_some_and(|w| version(&w.obj) <= held) {
            written.0.remove(key);
        }
    }

    /// The objects under `value` of index `name` (client-go's `ByIndex`).
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Object<K>>, IndexError> {
        let keys = self.backing.index_keys(name, value)?;
        let mut seen: HashSet<&str> = HashSet::new();
        let mut items = Vec::new();
        for key in &keys {
            seen.insert(key.as_str());
            if let Some(backing) = self.backing.get_by_key(key.as_str()) {
                items.push(self.newer(key.as_str(), backing));
            }
        }
        if self.include_adds {
            let now = Instant::now();
            let mut added: Vec<(u64, Object<K>)> = {
                let written = self.written.lock();
                let fresh = written.0.iter().filter(|(k, w)| w.expires > now && !seen.contains(k.as_str()));
                fresh.map(|(_, w)| (w.used, w.obj.clone())).collect()
            };
            // Oldest first, as client-go walks its LRU.
            added.sort_by_key(|(used, _)| *used);
            for (_, obj) in added {
                // A write the cache has caught up with elsewhere in the index is stale here.
                if let Some(held) = self.backing.get_by_key(obj.key().as_str())
                    && version(&held) >= version(&obj)
                {
                    self.forget_if_not_newer(obj.key(), version(&held));
                    continue;
                }
                match self.backing.index_values(name, &obj) {
                    Ok(values) if values.iter().any(|v| v == value) => items.push(obj),
                    Ok(_) => {}
                    Err(e) => tracing::debug!(key = %obj.key(), error = %e, "cannot index a written object"),
                }
            }
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;
    use crate::store::{Indexers, NAMESPACE_INDEX};

    fn cm(name: &str, rv: u64) -> Object<ConfigMap> {
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv.to_string()}});
        Object::from_json(serde_json::to_vec(&v).unwrap()).unwrap()
    }

    fn indexer() -> Arc<Indexer<ConfigMap>> {
        Arc::new(Indexer::new(Indexers::new().with_namespace_index()))
    }

    #[tokio::test(start_paused = true)]
    async fn reads_give_the_newer_of_the_cache_and_the_writes() {
        let backing = indexer();
        backing.add(cm("a", 5)).unwrap();
        let cache = MutationCache::new(backing.clone(), Duration::from_secs(60), false);
        cache.mutation(cm("a", 7));
        assert_eq!(cache.get_by_key("ns/a").unwrap().resource_version(), Some("7"));
        cache.mutation(cm("a", 6));
        assert_eq!(cache.get_by_key("ns/a").unwrap().resource_version(), Some("7"), "an older write is ignored");
        // The cache catches up: its version wins and the write is forgotten.
        backing.update(cm("a", 8)).unwrap();
        assert_eq!(cache.get_by_key("ns/a").unwrap().resource_version(), Some("8"));
        backing.update(cm("a", 5)).unwrap();
        assert_eq!(cache.get_by_key("ns/a").unwrap().resource_version(), Some("5"), "forgotten once overtaken");
        // A write the cache has not seen created is missing without include_adds.
        cache.mutation(cm("new", 9));
        assert!(cache.get_by_key("ns/new").is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn adds_are_read_and_indexed_until_they_expire() {
        let backing = indexer();
        backing.add(cm("a", 5)).unwrap();
        let cache = MutationCache::new(backing.clone(), Duration::from_secs(60), true);
        cache.mutation(cm("new", 9));
        cache.mutation(cm("a", 6));
        assert_eq!(cache.get_by_key("ns/new").unwrap().resource_version(), Some("9"));
        let mut got: Vec<String> = cache
            .by_index(NAMESPACE_INDEX, "ns")
            .unwrap()
            .iter()
            .map(|o| format!("{}@{}", o.key(), o.resource_version().unwrap()))
            .collect();
        got.sort();
        assert_eq!(got, ["ns/a@6", "ns/new@9"]);
        assert!(cache.by_index(NAMESPACE_INDEX, "other").unwrap().is_empty());
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(cache.get_by_key("ns/new").is_none(), "expired");
        assert_eq!(cache.get_by_key("ns/a").unwrap().resource_version(), Some("5"));
    }

    /// A write that moved an object to another index value is not read there once the cache
    /// holds a newer version (still under the old value).
    #[tokio::test(start_paused = true)]
    async fn an_overtaken_write_is_not_indexed() {
        let tier = |o: &Object<ConfigMap>| -> Result<Vec<String>, crate::store::IndexFuncError> {
            Ok(o.label("tier").map(|t| vec![t.to_string()]).unwrap_or_default())
        };
        let backing = Arc::new(Indexer::new(Indexers::new().with("tier", tier)));
        let labelled = |rv: u64, tier: &str| {
            let v = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": "ns", "resourceVersion": rv.to_string(), "labels": {"tier": tier}}});
            Object::<ConfigMap>::from_json(serde_json::to_vec(&v).unwrap()).unwrap()
        };
        backing.add(labelled(5, "gold")).unwrap();
        let cache = MutationCache::new(backing.clone(), Duration::from_secs(60), true);
        cache.mutation(labelled(6, "silver"));
        assert_eq!(cache.by_index("tier", "silver").unwrap().len(), 1, "the write is read under its new value");
        assert_eq!(cache.by_index("tier", "gold").unwrap()[0].resource_version(), Some("6"));
        backing.update(labelled(7, "gold")).unwrap();
        assert!(cache.by_index("tier", "silver").unwrap().is_empty(), "overtaken by the cache");
        assert_eq!(cache.get_by_key("ns/a").unwrap().resource_version(), Some("7"));
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_a_hundred_writes_are_held() {
        let cache = MutationCache::new(indexer(), Duration::from_secs(60), true);
        for i in 0..CAPACITY {
            cache.mutation(cm(&format!("o{i}"), 1));
        }
        // Used again: the next least recently used goes instead.
        assert!(cache.get_by_key("ns/o0").is_some());
        cache.mutation(cm(&format!("o{CAPACITY}"), 1));
        assert!(cache.get_by_key("ns/o0").is_some());
        assert!(cache.get_by_key("ns/o1").is_none(), "the least recently used went");
        assert!(cache.get_by_key(&format!("ns/o{CAPACITY}")).is_some());
    }
}
