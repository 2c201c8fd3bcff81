//! The consuming side of a listener: turns its buffer into the sequence of notifications a
//! handler sees, expanding `Bounded` overflow resyncs against what the handler has seen.
//!
//! Invariants: one consumer per listener; items come out in buffer order; an expanded resync
//! yields deletes (tombstones) for seen keys that vanished, then the snapshot's objects as
//! updates of seen keys or adds of new ones; for `Bounded` listeners every item is checked
//! against the seen set so the handler's view stays consistent (no add of a key it has, no
//! update or delete of a key it lacks); initial-add credits are released exactly once, whether
//! the item is delivered or dropped.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use foldhash::fast::RandomState;

use super::listener::{BacklogPolicy, Entry, Item, Listener};
use super::notification::Notification;
use crate::handler::ResourceEventHandler;
use crate::key::ObjectKey;
use crate::object::{DeletedObject, Object, Tombstone};

/// A backlog buffer that grew beyond this many entries is shrunk once it is empty again.
const SHRINK_ABOVE: usize = 1024;

/// Consumer-side state: a resync being expanded and, for `Bounded`, what the handler has seen.
pub(crate) struct Consumer<K> {
    expanded: VecDeque<Notification<K>>,
    expanded_credit: usize,
    seen: Option<HashMap<ObjectKey, Object<K>, RandomState>>,
}

impl<K: Send + Sync + 'static> Consumer<K> {
    pub fn new(policy: BacklogPolicy) -> Self {
        Consumer {
            expanded: VecDeque::new(),
            expanded_credit: 0,
            seen: matches!(policy, BacklogPolicy::Bounded(_)).then(HashMap::default),
        }
    }

    pub fn for_listener(l: &Listener<K>) -> Self {
        Self::new(l.policy)
    }

    /// The next item, or `None` once the listener is closed.
    pub async fn next(&mut self, l: &Listener<K>) -> Option<Item<K>> {
        loop {
            if let Some(n) = self.expanded.pop_front() {
                if l.removed.load(Ordering::Acquire) {
                    return None;
                }
                let credit = if self.expanded.is_empty() { std::mem::take(&mut self.expanded_credit) } else { 0 };
                match self.seen(Item { n, credit, enqueued: None, backlog: self.expanded.len() }) {
                    Some(item) => return Some(item),
                    None => {
                        l.finish_initial(credit);
                        continue;
                    }
                }
            }
            let (popped, backlog) = {
                let mut b = l.buf.lock();
                let p = b.items.pop_front();
                let backlog = b.items.len();
                if backlog == 0 && b.items.capacity() > SHRINK_ABOVE {
                    // A burst (the initial list, a relist) is over: give its buffer back.
                    b.items.shrink_to(SHRINK_ABOVE / 4);
                }
                if let Some(m) = &l.metrics {
                    m.backlog.set(b.items.len() as i64);
                }
                if p.is_none() && b.closed {
                    return None;
                }
                (p, backlog)
            };
            if popped.is_some() {
                l.taken(backlog);
            }
            let Some(p) = popped else {
                l.wake.notified().await;
                continue;
            };
            match p.entry {
                Entry::One(n) => {
                    let credit = usize::from(n.is_initial_add());
                    match self.seen(Item { n, credit, enqueued: Some(p.at), backlog }) {
                        Some(item) => return Some(item),
                        None => l.finish_initial(credit),
                    }
                }
                Entry::Resync { snapshot, credit } => {
                    self.expand(snapshot, credit);
                    if self.expanded.is_empty() {
                        l.finish_initial(std::mem::take(&mut self.expanded_credit));
                    }
                }
            }
        }
    }

    fn expand(&mut self, snapshot: Vec<Object<K>>, credit: usize) {
        let seen = self.seen.get_or_insert_with(HashMap::default);
        let mut present: std::collections::HashSet<&ObjectKey, RandomState> = std::collections::HashSet::default();
        for o in &snapshot {
            present.insert(o.key());
        }
        for (k, old) in seen.iter() {
            if !present.contains(k) {
                self.expanded.push_back(Notification::Delete(DeletedObject::FinalStateUnknown(Tombstone {
                    key: k.clone(),
                    last_known: Some(old.clone()),
                })));
            }
        }
        drop(present);
        for o in snapshot {
            let n = match seen.get(o.key()) {
                Some(old) => Notification::Update { old: old.clone(), new: o },
                None => Notification::Add { obj: o, is_in_initial_list: credit > 0 },
            };
            self.expanded.push_back(n);
        }
        self.expanded_credit += credit;
    }

    /// For `Bounded` listeners: keeps the handler's view consistent across cache resyncs and
    /// records what it has seen. Notifications already covered by a resync (an add of a key the
    /// handler has, with the very object it has; a delete of a key it does not have) are dropped;
    /// an add of a seen key becomes an update and an update of an unseen key an add.
    fn seen(&mut self, mut item: Item<K>) -> Option<Item<K>> {
        let Some(seen) = &mut self.seen else {
            return Some(item);
        };
        match item.n {
            Notification::Add { obj, is_in_initial_list } => match seen.insert(obj.key().clone(), obj.clone()) {
                Some(old) if old.ptr_eq(&obj) => return None,
                Some(old) => item.n = Notification::Update { old, new: obj },
                None => item.n = Notification::Add { obj, is_in_initial_list },
            },
            Notification::Update { old, new } => match seen.insert(new.key().clone(), new.clone()) {
                Some(prev) if prev.ptr_eq(&new) && !prev.ptr_eq(&old) => return None,
                Some(prev) => item.n = Notification::Update { old: prev, new },
                None => item.n = Notification::Add { obj: new, is_in_initial_list: false },
            },
            Notification::Delete(d) => {
                seen.remove(d.key())?;
                item.n = Notification::Delete(d);
            }
        }
        Some(item)
    }
}

/// Runs a handler's consumer loop until the listener is closed.
pub(crate) async fn run_handler<K: Send + Sync + 'static>(
    l: Arc<Listener<K>>,
    handler: Arc<dyn ResourceEventHandler<K>>,
) {
    let mut c = Consumer::for_listener(&l);
    while let Some(item) = c.next(&l).await {
        l.deliver(&*handler, item);
    }
    l.finished.set();
}
