//! client-go's `Heap`: a keyed priority queue, thread-safe, whose [`Heap::pop`] waits for an item
//! — for work taken in an order of its own (earliest deadline, highest priority) rather than
//! first in, first out.
//!
//! Invariants, as client-go's: one entry per key; adding a value whose key is held replaces it
//! in place and moves it to its new rank; [`Heap::add_if_not_present`] leaves a held key as it
//! is; [`Heap::pop`] gives the entry no other is less than (by the `less` function) and waits
//! while the heap is empty; once closed, writes fail with [`HeapError::Closed`] and a pop of an
//! empty heap returns it at once (a pop already waiting wakes up with it), while what is held
//! can still be popped and read.

use std::collections::HashMap;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// Why a heap refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeapError {
    /// The heap is closed (client-go's "heap is closed").
    #[error("heap is closed")]
    Closed,
    /// The deleted value's key is not held (client-go's "object not found").
    #[error("object not found")]
    NotFound,
    /// The key function refused the value.
    #[error("couldn't create key for object: {0}")]
    Key(String),
}

/// How an entry's key is made from its value.
pub type KeyFunc<T> = Box<dyn Fn(&T) -> Result<String, String> + Send + Sync>;

/// Whether the first value comes before the second.
pub type LessFunc<T> = Box<dyn Fn(&T, &T) -> bool + Send + Sync>;

struct State<T> {
    /// The binary heap, as keys.
    queue: Vec<String>,
    /// Each key's value and its place in `queue`.
    items: HashMap<String, (T, usize)>,
    closed: bool,
}

/// A keyed priority queue (see the module documentation).
pub struct Heap<T> {
    state: Mutex<State<T>>,
    pushed: Notify,
    key_of: KeyFunc<T>,
    less: LessFunc<T>,
}

impl<T: Clone> Heap<T> {
    /// A heap keyed by `key_of` and ordered by `less` (client-go's `NewHeap`).
    pub fn new(
        key_of: impl Fn(&T) -> Result<String, String> + Send + Sync + 'static,
        less: impl Fn(&T, &T) -> bool + Send + Sync + 'static,
    ) -> Self {
        Heap {
            state: Mutex::new(State { queue: Vec::new(), items: HashMap::new(), closed: false }),
            pushed: Notify::new(),
            key_of: Box::new(key_of),
            less: Box::new(less),
        }
    }

    fn key(&self, value: &T) -> Result<String, HeapError> {
        (self.key_of)(value).map_err(HeapError::Key)
    }

    /// Adds `value`, or replaces the entry of its key and moves it to its new rank.
    pub fn add(&self, value: T) -> Result<(), HeapError> {
        self.insert(value, true)
    }

    /// Puts `value` in under its key (replacing a held entry when `replace`) and wakes poppers.
    fn insert(&self, value: T, replace: bool) -> Result<(), HeapError> {
        let key = self.key(&value)?;
        {
            let mut s = self.state.lock();
            if s.closed {
                return Err(HeapError::Closed);
            }
            self.put(&mut s, key, value, replace);
        }
        self.pushed.notify_waiters();
        Ok(())
    }

    /// The same as [`Self::add`] (client-go's `Update`).
    pub fn update(&self, value: T) -> Result<(), HeapError> {
        self.add(value)
    }

    /// Adds every value of `values`, as [`Self::add`] does, under one lock; a key function's
    /// error stops there (what came before it stays added).
    pub fn bulk_add(&self, values: Vec<T>) -> Result<(), HeapError> {
        let result = {
            let mut s = self.state.lock();
            if s.closed {
                return Err(HeapError::Closed);
            }
            values.into_iter().try_for_each(|v| {
                let key = self.key(&v)?;
                self.put(&mut s, key, v, true);
                Ok(())
            })
        };
        self.pushed.notify_waiters();
        result
    }

    /// Adds `value` unless its key is held (then the held entry stays as it is).
    pub fn add_if_not_present(&self, value: T) -> Result<(), HeapError> {
        self.insert(value, false)
    }

    /// Deletes the entry of `value`'s key; [`HeapError::NotFound`] when none is held.
    pub fn delete(&self, value: &T) -> Result<(), HeapError> {
        let key = self.key(value)?;
        let mut s = self.state.lock();
        let Some(&(_, at)) = s.items.get(&key) else { return Err(HeapError::NotFound) };
        self.remove_at(&mut s, at);
        Ok(())
    }

    /// The first entry by `less`, removed; waits while the heap is empty and open;
    /// [`HeapError::Closed`] once it is closed and empty.
    pub async fn pop(&self) -> Result<T, HeapError> {
        loop {
            let notified = self.pushed.notified();
            tokio::pin!(notified);
            // Registered before the state is read, so a push that follows is not missed.
            notified.as_mut().enable();
            {
                let mut s = self.state.lock();
                if !s.queue.is_empty() {
                    return Ok(self.remove_at(&mut s, 0));
                }
                if s.closed {
                    return Err(HeapError::Closed);
                }
            }
            notified.await;
        }
    }

    /// Closes the heap: writes fail, and pops of an empty heap return [`HeapError::Closed`].
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.pushed.notify_waiters();
    }

    /// Whether the heap is closed.
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// The value held under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<T> {
        self.state.lock().items.get(key).map(|(v, _)| v.clone())
    }

    /// The value held under `value`'s key.
    pub fn get(&self, value: &T) -> Result<Option<T>, HeapError> {
        let key = self.key(value)?;
        Ok(self.get_by_key(&key))
    }

    /// Every value held, in no particular order.
    pub fn list(&self) -> Vec<T> {
        self.state.lock().items.values().map(|(v, _)| v.clone()).collect()
    }

    /// Every key held, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        self.state.lock().items.keys().cloned().collect()
    }

    /// How many entries are held.
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Puts `value` under `key`: replaced in place when held and `replace`, else left as it is.
    fn put(&self, s: &mut State<T>, key: String, value: T, replace: bool) {
        if let Some(&(_, at)) = s.items.get(&key) {
            if replace {
                s.items.get_mut(&key).expect("held").0 = value;
                self.fix(s, at);
            }
            return;
        }
        let at = s.queue.len();
        s.queue.push(key.clone());
        s.items.insert(key, (value, at));
        self.up(s, at);
    }

    fn value(s: &State<T>, at: usize) -> &T {
        &s.items[&s.queue[at]].0
    }

    fn is_less(&self, s: &State<T>, i: usize, j: usize) -> bool {
        (self.less)(Self::value(s, i), Self::value(s, j))
    }

    fn swap(s: &mut State<T>, i: usize, j: usize) {
        s.queue.swap(i, j);
        for at in [i, j] {
            let key = &s.queue[at];
            s.items.get_mut(key).expect("held").1 = at;
        }
    }

    fn up(&self, s: &mut State<T>, mut at: usize) {
        while at > 0 {
            let parent = (at - 1) / 2;
            if !self.is_less(s, at, parent) {
                break;
            }
            Self::swap(s, at, parent);
            at = parent;
        }
    }

    /// Moves the entry at `at` down; whether it moved.
    fn down(&self, s: &mut State<T>, start: usize) -> bool {
        let mut at = start;
        loop {
            let left = 2 * at + 1;
            if left >= s.queue.len() {
                break;
            }
            let right = left + 1;
            let child = if right < s.queue.len() && self.is_less(s, right, left) { right } else { left };
            if !self.is_less(s, child, at) {
                break;
            }
            Self::swap(s, at, child);
            at = child;
        }
        at > start
    }

    fn fix(&self, s: &mut State<T>, at: usize) {
        if !self.down(s, at) {
            self.up(s, at);
        }
    }

    fn remove_at(&self, s: &mut State<T>, at: usize) -> T {
        let last = s.queue.len() - 1;
        if at != last {
            Self::swap(s, at, last);
        }
        let key = s.queue.pop().expect("not empty");
        let (value, _) = s.items.remove(&key).expect("held");
        if at < s.queue.len() {
            self.fix(s, at);
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    type Entry = (String, i64);

    fn heap() -> Heap<Entry> {
        Heap::new(
            |v: &Entry| if v.0.is_empty() { Err("no key".into()) } else { Ok(v.0.clone()) },
            |a: &Entry, b: &Entry| a.1 < b.1,
        )
    }

    fn e(k: &str, v: i64) -> Entry {
        (k.to_string(), v)
    }

    #[tokio::test]
    async fn pops_come_in_order_and_updates_move_entries() {
        let h = heap();
        for (i, v) in [50, 10, 70, 30, 90, 20, 60, 40, 80, 0].into_iter().enumerate() {
            h.add(e(&format!("k{i}"), v)).unwrap();
        }
        // k2 (70) moves first, k9 (0) last; k3 is deleted.
        h.update(e("k2", -5)).unwrap();
        h.add(e("k9", 100)).unwrap();
        h.delete(&e("k3", 0)).unwrap();
        assert_eq!(h.delete(&e("nope", 0)), Err(HeapError::NotFound));
        h.add_if_not_present(e("k1", 1000)).unwrap();
        h.add_if_not_present(e("new", 15)).unwrap();
        assert_eq!(h.len(), 10);
        assert_eq!(h.get_by_key("k1"), Some(e("k1", 10)), "a held key stays as it is");
        let mut order = Vec::new();
        while !h.is_empty() {
            order.push(h.pop().await.unwrap().1);
        }
        assert_eq!(order, [-5, 10, 15, 20, 40, 50, 60, 80, 90, 100]);
    }

    #[tokio::test]
    async fn bulk_adds_stop_at_a_bad_key_and_keep_what_came_before() {
        let h = heap();
        assert!(matches!(h.bulk_add(vec![e("a", 3), e("", 1), e("b", 2)]), Err(HeapError::Key(_))));
        assert_eq!(h.list_keys(), vec!["a".to_string()]);
        h.bulk_add(vec![e("b", 2), e("a", 1)]).unwrap();
        assert_eq!(h.pop().await.unwrap(), e("a", 1));
        assert_eq!(h.get(&e("b", 0)).unwrap(), Some(e("b", 2)));
        assert_eq!(h.list(), vec![e("b", 2)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_pop_waits_for_an_item_and_closing_wakes_it() {
        let h = Arc::new(heap());
        let waiting = tokio::spawn({
            let h = h.clone();
            async move { h.pop().await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiting.is_finished(), "an empty heap makes a pop wait");
        h.add(e("a", 1)).unwrap();
        assert_eq!(waiting.await.unwrap(), Ok(e("a", 1)));

        let waiting = tokio::spawn({
            let h = h.clone();
            async move { h.pop().await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        h.close();
        assert_eq!(waiting.await.unwrap(), Err(HeapError::Closed));
        assert!(h.is_closed());
        assert_eq!(h.add(e("b", 1)), Err(HeapError::Closed));
        assert_eq!(h.add_if_not_present(e("b", 1)), Err(HeapError::Closed));
        assert_eq!(h.bulk_add(vec![e("b", 1)]), Err(HeapError::Closed));
    }

    #[tokio::test]
    async fn what_a_closed_heap_holds_can_still_be_popped() {
        let h = heap();
        h.add(e("a", 1)).unwrap();
        h.close();
        assert_eq!(h.pop().await, Ok(e("a", 1)));
        assert_eq!(h.pop().await, Err(HeapError::Closed));
    }
}
