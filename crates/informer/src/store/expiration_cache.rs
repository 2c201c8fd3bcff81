//! client-go's `ExpirationCache` (`NewTTLStore`): a keyed store whose entries expire, for values a
//! controller looks up often and may fetch again (tokens, lookups of other systems, answers of
//! slow calls).
//!
//! Each entry is stamped when it is added, updated or replaced; an [`ExpirationPolicy`] says
//! whether an entry has expired ([`TtlPolicy`]: older than its TTL; a zero TTL never expires).
//!
//! Invariants, as client-go's: a read by key, or a listing, never gives an expired entry and
//! deletes the expired entries it meets, each under the lock that read it, so an entry added
//! meanwhile is never deleted; [`ExpirationCache::list_keys`] gives every key held, expired or
//! not (client-go's `ListKeys`); [`ExpirationCache::replace`] stamps every entry anew. Time comes
//! from tokio's clock, so tests run it under a paused clock.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// An entry of an [`ExpirationCache`] with its stamp (client-go's `TimestampedEntry`).
#[derive(Debug, Clone, PartialEq)]
pub struct TimestampedEntry<T> {
    /// The value.
    pub value: T,
    /// When it was last added, updated or replaced.
    pub timestamp: Instant,
    /// Its key.
    pub key: String,
}

/// Says whether an entry has expired (client-go's `ExpirationPolicy`).
pub trait ExpirationPolicy<T>: Send + Sync {
    /// Whether `entry` has expired.
    fn is_expired(&self, entry: &TimestampedEntry<T>) -> bool;
}

/// Entries expire once older than `ttl`; a zero TTL never expires them (client-go's `TTLPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtlPolicy {
    /// How long an entry lives.
    pub ttl: Duration,
}

impl<T> ExpirationPolicy<T> for TtlPolicy {
    fn is_expired(&self, entry: &TimestampedEntry<T>) -> bool {
        !self.ttl.is_zero() && entry.timestamp.elapsed() > self.ttl
    }
}

/// How an entry's key is made from its value.
pub type KeyFunc<T> = Box<dyn Fn(&T) -> Result<String, String> + Send + Sync>;

/// A keyed store whose entries expire (see the module documentation).
pub struct ExpirationCache<T> {
    entries: Mutex<HashMap<String, TimestampedEntry<T>>>,
    key_of: KeyFunc<T>,
    policy: Box<dyn ExpirationPolicy<T>>,
}

impl<T: Clone> ExpirationCache<T> {
    /// A store whose entries live `ttl` (client-go's `NewTTLStore`).
    pub fn with_ttl(key_of: impl Fn(&T) -> Result<String, String> + Send + Sync + 'static, ttl: Duration) -> Self {
        Self::with_policy(key_of, TtlPolicy { ttl })
    }

    /// A store whose entries expire as `policy` says (client-go's `NewExpirationStore`).
    pub fn with_policy(
        key_of: impl Fn(&T) -> Result<String, String> + Send + Sync + 'static,
        policy: impl ExpirationPolicy<T> + 'static,
    ) -> Self {
        ExpirationCache { entries: Mutex::new(HashMap::new()), key_of: Box::new(key_of), policy: Box::new(policy) }
    }

    /// Adds `value`, or replaces the entry of its key, stamped now; the key function's error
    /// otherwise.
    pub fn add(&self, value: T) -> Result<(), String> {
        let key = (self.key_of)(&value)?;
        let entry = TimestampedEntry { value, timestamp: Instant::now(), key: key.clone() };
        self.entries.lock().insert(key, entry);
        Ok(())
    }

    /// The same as [`Self::add`] (client-go's `Update`).
    pub fn update(&self, value: T) -> Result<(), String> {
        self.add(value)
    }

    /// Deletes the entry of `value`'s key.
    pub fn delete(&self, value: &T) -> Result<(), String> {
        let key = (self.key_of)(value)?;
        self.entries.lock().remove(&key);
        Ok(())
    }

    /// The value under `key`, unless it has expired (then it is deleted).
    pub fn get_by_key(&self, key: &str) -> Option<T> {
        let mut entries = self.entries.lock();
        let expired = self.policy.is_expired(entries.get(key)?);
        if expired {
            entries.remove(key);
            return None;
        }
        entries.get(key).map(|e| e.value.clone())
    }

    /// The value held under `value`'s key, unless it has expired.
    pub fn get(&self, value: &T) -> Result<Option<T>, String> {
        Ok(self.get_by_key(&(self.key_of)(value)?))
    }

    /// Every value that has not expired (the expired ones are deleted).
    pub fn list(&self) -> Vec<T> {
        let mut entries = self.entries.lock();
        entries.retain(|_, e| !self.policy.is_expired(e));
        entries.values().map(|e| e.value.clone()).collect()
    }

    /// Every key held, expired or not.
    pub fn list_keys(&self) -> Vec<String> {
        self.entries.lock().keys().cloned().collect()
    }

    /// Replaces every entry with `values`, all stamped now; nothing changes when a key cannot be
    /// made.
    pub fn replace(&self, values: Vec<T>) -> Result<(), String> {
        let now = Instant::now();
        let mut fresh = HashMap::with_capacity(values.len());
        for value in values {
            let key = (self.key_of)(&value)?;
            fresh.insert(key.clone(), TimestampedEntry { value, timestamp: now, key });
        }
        *self.entries.lock() = fresh;
        Ok(())
    }

    /// Nothing to resync (client-go's `Resync`).
    pub fn resync(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(ttl: Duration) -> ExpirationCache<(String, u32)> {
        ExpirationCache::with_ttl(|(k, _): &(String, u32)| Ok(k.clone()), ttl)
    }

    #[tokio::test(start_paused = true)]
    async fn entries_expire_after_their_ttl_and_are_deleted_when_read() {
        let c = cache(Duration::from_secs(10));
        c.add(("a".into(), 1)).unwrap();
        tokio::time::advance(Duration::from_secs(6)).await;
        c.add(("b".into(), 2)).unwrap();
        assert_eq!(c.get_by_key("a"), Some(("a".into(), 1)));
        tokio::time::advance(Duration::from_secs(5)).await;
        // `a` is 11 s old, `b` 5 s: only `a` expired, but it is still held until read.
        assert_eq!(c.list_keys().len(), 2);
        assert_eq!(c.get_by_key("a"), None);
        assert_eq!(c.list_keys(), ["b"]);
        // An update stamps the entry anew.
        c.update(("b".into(), 3)).unwrap();
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(c.list(), [("b".to_string(), 3)]);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(c.list().is_empty());
        assert!(c.list_keys().is_empty(), "a listing deletes what expired");
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_ttl_never_expires_and_replace_stamps_everything() {
        let c = cache(Duration::ZERO);
        c.add(("a".into(), 1)).unwrap();
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(c.get(&("a".into(), 0)).unwrap(), Some(("a".into(), 1)));
        let c = cache(Duration::from_secs(10));
        c.add(("old".into(), 1)).unwrap();
        tokio::time::advance(Duration::from_secs(8)).await;
        c.replace(vec![("x".into(), 1), ("y".into(), 2)]).unwrap();
        tokio::time::advance(Duration::from_secs(8)).await;
        let mut keys = c.list_keys();
        keys.sort();
        assert_eq!(keys, ["x", "y"], "replace drops what it does not hold and stamps the rest");
        c.delete(&("x".into(), 0)).unwrap();
        assert_eq!(c.get_by_key("x"), None);
        assert_eq!(c.get_by_key("y"), Some(("y".into(), 2)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_policy_of_ones_own_decides() {
        struct Odd;
        impl ExpirationPolicy<(String, u32)> for Odd {
            fn is_expired(&self, entry: &TimestampedEntry<(String, u32)>) -> bool {
                entry.value.1 % 2 == 1
            }
        }
        let c = ExpirationCache::with_policy(|(k, _): &(String, u32)| Ok(k.clone()), Odd);
        c.add(("a".into(), 1)).unwrap();
        c.add(("b".into(), 2)).unwrap();
        assert_eq!(c.list(), [("b".to_string(), 2)]);
        let refused = ExpirationCache::with_ttl(|_: &u32| Err("no key".to_string()), Duration::ZERO);
        assert_eq!(refused.add(1), Err("no key".to_string()));
    }
}
