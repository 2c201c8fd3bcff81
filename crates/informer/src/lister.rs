//! Listers: read-only, typed views of an informer's cache (client-go's `GenericLister` /
//! `GenericNamespaceLister`), with label selectors.
//!
//! Invariants: listers never copy objects (they return `Object` handles); namespaced lists use
//! the [`NAMESPACE_INDEX`] when the cache has it and fall back to a full scan (with a warning
//! once per lister) otherwise; an empty selector returns everything without reading labels.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::object::Object;
use crate::selector::LabelSelector;
use crate::store::{Indexer, NAMESPACE_INDEX};

/// A lister over an [`Indexer`].
///
/// ```
/// use informer::{Indexer, Indexers, LabelSelector, Lister, Object};
/// use k8s_openapi::api::core::v1::Pod;
/// use std::sync::Arc;
/// let idx = Arc::new(Indexer::<Pod>::new(Indexers::new().with_namespace_index()));
/// idx.add(Object::from_json(&br#"{"metadata":{"name":"a","namespace":"ns","labels":{"app":"web"}}}"#[..]).unwrap()).unwrap();
/// let lister = Lister::new(idx);
/// let sel: LabelSelector = "app=web".parse().unwrap();
/// assert_eq!(lister.list(&sel).len(), 1);
/// assert_eq!(lister.by_namespace("ns").list(&sel).len(), 1);
/// assert!(lister.by_namespace("ns").get("a").is_some());
/// assert!(lister.by_namespace("other").get("a").is_none());
/// ```
pub struct Lister<K> {
    indexer: Arc<Indexer<K>>,
    warned: Arc<AtomicBool>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Lister {
            indexer: self.indexer.clone(),
            warned: self.warned.clone(),
        }
    }
}

impl<K> Lister<K> {
    /// A lister over `indexer`.
    pub fn new(indexer: Arc<Indexer<K>>) -> Self {
        Lister {
            indexer,
            warned: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The object with this key (`name` for cluster-scoped objects, `namespace/name` otherwise).
    pub fn get(&self, key: &str) -> Option<Object<K>> {
        self.indexer.get_by_key(key)
    }

    /// Every cached object matching `selector`.
    pub fn list(&self, selector: &LabelSelector) -> Vec<Object<K>> {
        if selector.is_empty() {
            return self.indexer.list();
        }
        let mut out = Vec::new();
        self.indexer.for_each(|o| {
            if selector.matches(o) {
                out.push(o.clone())
            }
        });
        out
    }

    /// A lister restricted to one namespace (`""` = all namespaces).
    pub fn by_namespace(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister {
            lister: self.clone(),
            namespace: namespace.to_string(),
        }
    }
}

/// A lister restricted to one namespace.
pub struct NamespaceLister<K> {
    lister: Lister<K>,
    namespace: String,
}

impl<K> NamespaceLister<K> {
    /// The object `name` in this namespace.
    pub fn get(&self, name: &str) -> Option<Object<K>> {
        if self.namespace.is_empty() {
            return self.lister.get(name);
        }
        self.lister
            .indexer
            .get_by_key(&format!("{}/{}", self.namespace, name))
    }

    /// The objects of this namespace matching `selector`.
    pub fn list(&self, selector: &LabelSelector) -> Vec<Object<K>> {
        if self.namespace.is_empty() {
            return self.lister.list(selector);
        }
        match self
            .lister
            .indexer
            .by_index(NAMESPACE_INDEX, &self.namespace)
        {
            Ok(objs) if selector.is_empty() => objs,
            Ok(mut objs) => {
                objs.retain(|o| selector.matches(o));
                objs
            }
            Err(_) => {
                if !self.lister.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "cache has no namespace index; listing by namespace scans every object"
                    );
                }
                let mut out = Vec::new();
                self.lister.indexer.for_each(|o| {
                    if o.namespace() == Some(self.namespace.as_str()) && selector.matches(o) {
                        out.push(o.clone())
                    }
                });
                out
            }
        }
    }
}
