//! Index functions: named functions mapping an object to the values it is indexed under.
//!
//! An index function returns zero, one or several values for an object (client-go's `IndexFunc`);
//! the [`Indexer`](crate::Indexer) keeps, per index name, a map from each value to the set of keys
//! of the objects that produced it. [`Indexers`] is the named collection handed to an indexer or
//! an informer. The built-in [`NAMESPACE_INDEX`] indexes objects by namespace (`""` for
//! cluster-scoped objects), as client-go's `MetaNamespaceIndexFunc`.

use std::fmt;
use std::sync::Arc;

use crate::object::Object;

/// The name of the built-in namespace index.
pub const NAMESPACE_INDEX: &str = "namespace";

/// A user index function failed for an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IndexFuncError(pub String);

/// A named index function: object → the values it is indexed under.
pub type IndexFunc<K> = Arc<dyn Fn(&Object<K>) -> Result<Vec<String>, IndexFuncError> + Send + Sync>;

/// A set of named index functions.
///
/// ```
/// use informer::{Indexers, Object};
/// use k8s_openapi::api::core::v1::Pod;
/// let idx: Indexers<Pod> = Indexers::new()
///     .with_namespace_index()
///     .with("app", |o: &Object<Pod>| Ok(o.label("app").map(|a| vec![a.to_string()]).unwrap_or_default()));
/// assert_eq!(idx.names().collect::<Vec<_>>(), ["namespace", "app"]);
/// ```
pub struct Indexers<K> {
    pub(crate) funcs: Vec<(Arc<str>, IndexFunc<K>)>,
}

impl<K> Default for Indexers<K> {
    fn default() -> Self {
        Indexers { funcs: Vec::new() }
    }
}

impl<K> Clone for Indexers<K> {
    fn clone(&self) -> Self {
        Indexers { funcs: self.funcs.clone() }
    }
}

impl<K> fmt::Debug for Indexers<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.funcs.iter().map(|(n, _)| &**n)).finish()
    }
}

impl<K: 'static> Indexers<K> {
    /// No indexes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a named index function (a later function with the same name replaces the earlier).
    pub fn with<F>(mut self, name: &str, f: F) -> Self
    where
        F: Fn(&Object<K>) -> Result<Vec<String>, IndexFuncError> + Send + Sync + 'static,
    {
        self.insert(name, Arc::new(f));
        self
    }

    /// Adds the built-in namespace index under [`NAMESPACE_INDEX`].
    pub fn with_namespace_index(self) -> Self {
        self.with(NAMESPACE_INDEX, namespace_index_func)
    }

    /// Inserts or replaces a named index function.
    pub fn insert(&mut self, name: &str, f: IndexFunc<K>) {
        if let Some(slot) = self.funcs.iter_mut().find(|(n, _)| &**n == name) {
            slot.1 = f;
        } else {
            self.funcs.push((Arc::from(name), f));
        }
    }

    /// The index names, in insertion order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.funcs.iter().map(|(n, _)| &**n)
    }

    /// Whether there are no index functions.
    pub fn is_empty(&self) -> bool {
        self.funcs.is_empty()
    }
}

/// client-go's `MetaNamespaceIndexFunc`: the object's namespace (`""` when cluster-scoped).
pub fn namespace_index_func<K>(obj: &Object<K>) -> Result<Vec<String>, IndexFuncError> {
    Ok(vec![obj.namespace().unwrap_or("").to_string()])
}
