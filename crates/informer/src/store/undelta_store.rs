//! client-go's `UndeltaStore`: a keyed store that, after every change, hands the whole of its
//! contents to a push function — for consumers that want the full state each time rather than
//! deltas (client-go's kubelet config sources, which rebuild from the complete list).
//!
//! Invariants, as client-go's: each add, update, delete or replace is applied first and then
//! pushes the complete list of values it left (in no particular order), once per change, from
//! the thread that made it; a key function's error changes nothing and pushes nothing; reads
//! never push.

use std::collections::HashMap;

use parking_lot::Mutex;

/// How an entry's key is made from its value.
pub type KeyFunc<T> = Box<dyn Fn(&T) -> Result<String, String> + Send + Sync>;

/// What receives the whole contents after each change.
pub type PushFunc<T> = Box<dyn Fn(Vec<T>) + Send + Sync>;

/// A keyed store that pushes its whole contents after every change (see the module
/// documentation).
pub struct UndeltaStore<T> {
    entries: Mutex<HashMap<String, T>>,
    key_of: KeyFunc<T>,
    push: PushFunc<T>,
}

impl<T: Clone> UndeltaStore<T> {
    /// A store keyed by `key_of` that calls `push` with every value it holds after each change
    /// (client-go's `NewUndeltaStore`).
    pub fn new(
        push: impl Fn(Vec<T>) + Send + Sync + 'static,
        key_of: impl Fn(&T) -> Result<String, String> + Send + Sync + 'static,
    ) -> Self {
        UndeltaStore { entries: Mutex::new(HashMap::new()), key_of: Box::new(key_of), push: Box::new(push) }
    }

    /// Applies `change` under the lock, then pushes what the store holds after it.
    fn changed(&self, change: impl FnOnce(&mut HashMap<String, T>)) {
        let all = {
            let mut entries = self.entries.lock();
            change(&mut entries);
            entries.values().cloned().collect()
        };
        (self.push)(all);
    }

    /// Adds `value`, or replaces the entry of its key, then pushes.
    pub fn add(&self, value: T) -> Result<(), String> {
        let key = (self.key_of)(&value)?;
        self.changed(|e| {
            e.insert(key, value);
        });
        Ok(())
    }

    /// The same as [`Self::add`] (client-go's `Update`).
    pub fn update(&self, value: T) -> Result<(), String> {
        self.add(value)
    }

    /// Deletes the entry of `value`'s key, then pushes.
    pub fn delete(&self, value: &T) -> Result<(), String> {
        let key = (self.key_of)(value)?;
        self.changed(|e| {
            e.remove(&key);
        });
        Ok(())
    }

    /// Replaces the whole contents with `values`, then pushes once.
    pub fn replace(&self, values: Vec<T>) -> Result<(), String> {
        let mut fresh = HashMap::with_capacity(values.len());
        for v in values {
            fresh.insert((self.key_of)(&v)?, v);
        }
        self.changed(|e| *e = fresh);
        Ok(())
    }

    /// The value held under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<T> {
        self.entries.lock().get(key).cloned()
    }

    /// The value held under `value`'s key.
    pub fn get(&self, value: &T) -> Result<Option<T>, String> {
        let key = (self.key_of)(value)?;
        Ok(self.get_by_key(&key))
    }

    /// Every value held.
    pub fn list(&self) -> Vec<T> {
        self.entries.lock().values().cloned().collect()
    }

    /// Every key held.
    pub fn list_keys(&self) -> Vec<String> {
        self.entries.lock().keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    type Entry = (String, u32);
    type Pushed = Arc<Mutex<Vec<Vec<Entry>>>>;

    fn store() -> (UndeltaStore<Entry>, Pushed) {
        let pushed = Arc::new(Mutex::new(Vec::new()));
        let sink = pushed.clone();
        let store = UndeltaStore::new(
            move |mut all: Vec<(String, u32)>| {
                all.sort();
                sink.lock().push(all);
            },
            |v: &(String, u32)| if v.0.is_empty() { Err("no key".into()) } else { Ok(v.0.clone()) },
        );
        (store, pushed)
    }

    fn entry(k: &str, v: u32) -> (String, u32) {
        (k.to_string(), v)
    }

    #[test]
    fn every_change_pushes_the_whole_contents_once() {
        let (s, pushed) = store();
        s.add(entry("a", 1)).unwrap();
        s.add(entry("b", 2)).unwrap();
        s.update(entry("a", 3)).unwrap();
        s.delete(&entry("b", 0)).unwrap();
        assert_eq!(
            *pushed.lock(),
            vec![
                vec![entry("a", 1)],
                vec![entry("a", 1), entry("b", 2)],
                vec![entry("a", 3), entry("b", 2)],
                vec![entry("a", 3)]
            ]
        );
        s.replace(vec![entry("c", 4), entry("d", 5)]).unwrap();
        assert_eq!(pushed.lock().last().unwrap(), &vec![entry("c", 4), entry("d", 5)]);
        assert_eq!(pushed.lock().len(), 5, "a replace pushes once");
    }

    #[test]
    fn reads_and_failed_keys_push_nothing() {
        let (s, pushed) = store();
        s.add(entry("a", 1)).unwrap();
        assert_eq!(s.get_by_key("a"), Some(entry("a", 1)));
        assert_eq!(s.get(&entry("a", 0)).unwrap(), Some(entry("a", 1)));
        assert_eq!(s.list(), vec![entry("a", 1)]);
        assert_eq!(s.list_keys(), vec!["a".to_string()]);
        assert!(s.add(entry("", 9)).is_err());
        assert!(s.replace(vec![entry("b", 1), entry("", 2)]).is_err());
        assert_eq!(pushed.lock().len(), 1);
        assert_eq!(s.list(), vec![entry("a", 1)], "a failed replace changes nothing");
    }
}
