//! Object keys: the identity of an object in every cache, queue and index.
//!
//! A key is `namespace/name` for namespaced objects and `name` for cluster-scoped ones, exactly as
//! client-go's `MetaNamespaceKeyFunc` formats it. [`ObjectKey`] stores the formatted string once,
//! in one reference-counted allocation behind a single pointer (a key is 8 bytes wherever it is
//! held), so the store, its indexes and the queues share it without copying.
//!
//! Invariants: the name is never empty; a namespace, when present, is never empty; neither part
//! contains `/`. [`ObjectKey::parse`] rejects anything else with a [`KeyError`] (client-go's
//! `SplitMetaNamespaceKey` accepts some of these silently; a malformed key here is always an error).
//! Keys compare, hash and order by their formatted string, so a `HashMap<ObjectKey, _>` can be
//! queried with a plain `&str` key.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};

use smallvec::SmallVec;
use triomphe::ThinArc;

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
/// use informer_object::ObjectKey;
/// let k = ObjectKey::parse("default/web-0").unwrap();
/// assert_eq!(k.namespace(), Some("default"));
/// assert_eq!(k.name(), "web-0");
/// assert_eq!(k.to_string(), "default/web-0");
/// assert_eq!(ObjectKey::new(None, "node-1").unwrap().as_str(), "node-1");
/// assert!(ObjectKey::parse("a/b/c").is_err());
/// ```
#[derive(Clone)]
pub struct ObjectKey {
    /// Header: byte offset of the `/` separator, or `u32::MAX` for cluster-scoped keys.
    /// Slice: the formatted key, always valid UTF-8 (built only from `&str`s).
    inner: ThinArc<u32, u8>,
}

const NO_NAMESPACE: u32 = u32::MAX;

/// The `/` offset of a key in namespace `ns` (`None` for a namespace too long to record).
fn slash_after(ns: &str) -> Option<u32> {
    u32::try_from(ns.len()).ok().filter(|&s| s != NO_NAMESPACE)
}

impl ObjectKey {
    /// An equal key in an allocation of its own, for a holder that outlives the object the key
    /// came from: a cache keeps its keys for as long as the objects stay cached, through every
    /// new version, and a key allocated next to the first version would stay between that
    /// version's freed slot and its neighbours, so the slot could not merge with them into room
    /// for a larger version.
    ///
    /// ```
    /// use informer_object::ObjectKey;
    /// let k = ObjectKey::parse("default/web-0").unwrap();
    /// let d = k.detached();
    /// assert_eq!(d, k);
    /// assert!(!d.ptr_eq(&k) && k.ptr_eq(&k.clone()));
    /// ```
    pub fn detached(&self) -> Self {
        ObjectKey { inner: ThinArc::from_header_and_slice(self.slash(), &self.inner.slice) }
    }

    /// Whether both keys are the same allocation (clones of one key).
    pub fn ptr_eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.inner.as_ptr(), other.inner.as_ptr())
    }

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
                Ok(ObjectKey::build(NO_NAMESPACE, &[name]))
            }
            Some(ns) => {
                if ns.contains('/') || name.contains('/') {
                    return Err(KeyError::Format(format!("{ns}/{name}")));
                }
                let slash = slash_after(ns).ok_or_else(|| KeyError::Format(format!("{ns}/{name}")))?;
                Ok(ObjectKey::build(slash, &[ns, "/", name]))
            }
        }
    }

    /// Parses `name` or `namespace/name`.
    pub fn parse(s: &str) -> Result<Self, KeyError> {
        let mut parts = s.split('/');
        let (a, b, rest) = (parts.next(), parts.next(), parts.next());
        match (a, b, rest) {
            (Some(name), None, None) if !name.is_empty() => Ok(ObjectKey::build(NO_NAMESPACE, &[s])),
            (Some(ns), Some(name), None) if !ns.is_empty() && !name.is_empty() => match slash_after(ns) {
                Some(slash) => Ok(ObjectKey::build(slash, &[s])),
                None => Err(KeyError::Format(s.to_string())),
            },
            _ => Err(KeyError::Format(s.to_string())),
        }
    }

    /// The namespace, or `None` for a cluster-scoped object.
    pub fn namespace(&self) -> Option<&str> {
        let slash = self.slash();
        if slash == NO_NAMESPACE { None } else { Some(&self.as_str()[..slash as usize]) }
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        let slash = self.slash();
        if slash == NO_NAMESPACE { self.as_str() } else { &self.as_str()[slash as usize + 1..] }
    }

    /// The formatted key.
    #[allow(unsafe_code)]
    pub fn as_str(&self) -> &str {
        // SAFETY: the slice is only ever built by `build`, from `&str`s joined whole, so it is
        // valid UTF-8. Checking it on every call
        // would tax each hash and comparison of a key, the hottest operation of every cache.
        unsafe { std::str::from_utf8_unchecked(&self.inner.slice) }
    }

    /// The key `parts` form joined (taking whole strings keeps it UTF-8: see `as_str`).
    fn build(slash: u32, parts: &[&str]) -> Self {
        let inner = match parts {
            [one] => ThinArc::from_header_and_slice(slash, one.as_bytes()),
            _ => {
                let mut s: SmallVec<[u8; 96]> = SmallVec::with_capacity(parts.iter().map(|p| p.len()).sum());
                for p in parts {
                    s.extend_from_slice(p.as_bytes());
                }
                ThinArc::from_header_and_slice(slash, &s)
            }
        };
        ObjectKey { inner }
    }

    fn slash(&self) -> u32 {
        self.inner.header.header
    }
}

impl PartialEq for ObjectKey {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.inner.slice.as_ptr(), other.inner.slice.as_ptr()) || self.as_str() == other.as_str()
    }
}
impl Eq for ObjectKey {}

impl Hash for ObjectKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Must hash exactly like `str` so that `Borrow<str>` lookups work.
        self.as_str().hash(state)
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Borrow<str> for ObjectKey {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for ObjectKey {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
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
    fn a_key_is_one_pointer_and_clones_share_it() {
        assert_eq!(std::mem::size_of::<ObjectKey>(), std::mem::size_of::<usize>());
        let k = ObjectKey::new(Some("a-much-longer-namespace-name"), "and-a-name").unwrap();
        let c = k.clone();
        assert!(std::ptr::eq(k.as_str().as_ptr(), c.as_str().as_ptr()));
        assert_eq!(c.as_str(), "a-much-longer-namespace-name/and-a-name");
        let long = "n".repeat(300);
        assert_eq!(ObjectKey::new(Some(&long), &long).unwrap().name(), long);
    }

    #[test]
    fn borrow_lookup_by_str() {
        let mut m = HashMap::new();
        m.insert(ObjectKey::parse("ns/a").unwrap(), 1);
        assert_eq!(m.get("ns/a"), Some(&1));
        assert_eq!(m.get("ns/b"), None);
    }
}
