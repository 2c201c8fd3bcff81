//! Object keys: the identity of an object in every cache, queue and index.
//!
//! A key is `namespace/name` for namespaced objects and `name` for cluster-scoped ones, exactly as
//! client-go's `MetaNamespaceKeyFunc` formats it. [`ObjectKey`] stores the formatted string once,
//! behind an `Arc`, so the store, its indexes and the queues share it without copying.
//!
//! Invariants: the name is never empty; a namespace, when present, is never empty; neither part
//! contains `/`. [`ObjectKey::parse`] rejects anything else with a [`KeyError`] (client-go's
//! `SplitMetaNamespaceKey` accepts some of these silently; a malformed key here is always an error).
//! Keys compare, hash and order by their formatted string, so a `HashMap<ObjectKey, _>` can be
//! queried with a plain `&str` key.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A malformed object key or object identity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The string is not `name` or `namespace/name`.
    #[error("unexpected key format: {0:?} (want \"name\" or \"namespace/name\")")]
    Format(String),
    /// The object has no `metadata.name`.
    #[error("object has no metadata.name")]
    MissingName,
}

/// The cache key of an object: `namespace/name`, or `name` when cluster-scoped.
///
/// ```
/// use informer::ObjectKey;
/// let k = ObjectKey::parse("default/web-0").unwrap();
/// assert_eq!(k.namespace(), Some("default"));
/// assert_eq!(k.name(), "web-0");
/// assert_eq!(k.to_string(), "default/web-0");
/// assert_eq!(ObjectKey::new(None, "node-1").unwrap().as_str(), "node-1");
/// assert!(ObjectKey::parse("a/b/c").is_err());
/// ```
#[derive(Clone)]
pub struct ObjectKey {
    full: Arc<str>,
    /// Byte offset of the `/` separator, or `u32::MAX` for cluster-scoped keys.
    slash: u32,
}

const NO_NAMESPACE: u32 = u32::MAX;

impl ObjectKey {
    /// Builds a key from an optional namespace and a name, validating both.
    pub fn new(namespace: Option<&str>, name: &str) -> Result<Self, KeyError> {
        if name.is_empty() {
            return Err(KeyError::MissingName);
        }
        match namespace {
            None | Some("") => {
                if name.contains('/') {
                    return Err(KeyError::Format(name.to_string()));
                }
                Ok(ObjectKey { full: Arc::from(name), slash: NO_NAMESPACE })
            }
            Some(ns) => {
                if ns.contains('/') || name.contains('/') {
                    return Err(KeyError::Format(format!("{ns}/{name}")));
                }
                let mut s = String::with_capacity(ns.len() + 1 + name.len());
                s.push_str(ns);
                s.push('/');
                s.push_str(name);
                Ok(ObjectKey { full: Arc::from(s), slash: ns.len() as u32 })
            }
        }
    }

    /// Parses `name` or `namespace/name`.
    pub fn parse(s: &str) -> Result<Self, KeyError> {
        let mut parts = s.split('/');
        let (a, b, rest) = (parts.next(), parts.next(), parts.next());
        match (a, b, rest) {
            (Some(name), None, None) if !name.is_empty() => Ok(ObjectKey { full: Arc::from(s), slash: NO_NAMESPACE }),
            (Some(ns), Some(name), None) if !ns.is_empty() && !name.is_empty() => {
                Ok(ObjectKey { full: Arc::from(s), slash: ns.len() as u32 })
            }
            _ => Err(KeyError::Format(s.to_string())),
        }
    }

    /// The namespace, or `None` for a cluster-scoped object.
    pub fn namespace(&self) -> Option<&str> {
        if self.slash == NO_NAMESPACE { None } else { Some(&self.full[..self.slash as usize]) }
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        if self.slash == NO_NAMESPACE { &self.full } else { &self.full[self.slash as usize + 1..] }
    }

    /// The formatted key.
    pub fn as_str(&self) -> &str {
        &self.full
    }
}

impl PartialEq for ObjectKey {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.full, &other.full) || *self.full == *other.full
    }
}
impl Eq for ObjectKey {}

impl Hash for ObjectKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Must hash exactly like `str` so that `Borrow<str>` lookups work.
        (*self.full).hash(state)
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.full.cmp(&other.full)
    }
}

impl Borrow<str> for ObjectKey {
    fn borrow(&self) -> &str {
        &self.full
    }
}

impl AsRef<str> for ObjectKey {
    fn as_ref(&self) -> &str {
        &self.full
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.full, f)
    }
}

impl std::str::FromStr for ObjectKey {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, KeyError> {
        ObjectKey::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn formats_and_splits() {
        let k = ObjectKey::new(Some("ns"), "a").unwrap();
        assert_eq!(k.as_str(), "ns/a");
        assert_eq!((k.namespace(), k.name()), (Some("ns"), "a"));
        let c = ObjectKey::new(Some(""), "node").unwrap();
        assert_eq!((c.namespace(), c.name(), c.as_str()), (None, "node", "node"));
        assert_eq!(ObjectKey::parse("ns/a").unwrap(), k);
        assert_eq!(ObjectKey::parse("node").unwrap(), c);
    }

    #[test]
    fn malformed_keys_are_errors() {
        for bad in ["", "/", "a/", "/a", "a/b/c", "a//b"] {
            assert!(matches!(ObjectKey::parse(bad), Err(KeyError::Format(_))), "{bad:?}");
        }
        assert_eq!(ObjectKey::new(Some("ns"), ""), Err(KeyError::MissingName));
        assert!(ObjectKey::new(Some("n/s"), "a").is_err());
        assert!(ObjectKey::new(None, "a/b").is_err());
    }

    #[test]
    fn borrow_lookup_by_str() {
        let mut m = HashMap::new();
        m.insert(ObjectKey::parse("ns/a").unwrap(), 1);
        assert_eq!(m.get("ns/a"), Some(&1));
        assert_eq!(m.get("ns/b"), None);
    }
}
