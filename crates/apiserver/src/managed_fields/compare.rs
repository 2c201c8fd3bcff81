//! Comparing two versions of an object field by field (structured-merge-diff's `Compare`):
//! which fields a write added, modified and removed.
//!
//! Invariants: a path is in at most one of the three sets; leaves (scalars, atomic lists and
//! maps, empty lists and maps) are compared by value; a list element or map entry present on
//! one side only is added or removed together with everything below it; a struct field that
//! Go always serializes (see [`super::presence`]) counts as present with its zero value where
//! the JSON leaves it out, so that it is never added or removed as a whole, and an empty list
//! or map in a field Go leaves out when empty counts as absent (built-in types are compared as
//! kube-apiserver compares their Go structs). One walk over both values, without copying them.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fields_v1::Without;
use super::items::element_of;
use super::path::{PathElement, values_equal};
use super::set::FieldSet;
use crate::schema::{Atom, ListKind, ListType, MapType, TypeRef};

/// The fields a change from one version to another touched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Fields only the new version has.
    pub added: FieldSet,
    /// Fields both have, with different values.
    pub modified: FieldSet,
    /// Fields only the old version has.
    pub removed: FieldSet,
}

impl Comparison {
    /// Whether the versions are the same.
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// The fields the change touched: what an update takes from every other manager.
    pub fn touched(&self) -> Without<'_> {
        Without::of([&self.added, &self.modified, &self.removed])
    }

    /// The comparison without `ignored` and anything below it.
    pub fn excluding(mut self, ignored: &FieldSet) -> Comparison {
        self.added.recursive_subtract(ignored);
        self.modified.recursive_subtract(ignored);
        self.removed.recursive_subtract(ignored);
        self
    }

    fn attach(&mut self, pe: PathElement, own: Own, below: Comparison) {
        let Comparison { added, modified, removed } = below;
        let parts = [
            (own == Own::Added, added, &mut self.added),
            (own == Own::Modified, modified, &mut self.modified),
            (own == Own::Removed, removed, &mut self.removed),
        ];
        // The element is copied for every set that takes it but the last.
        let last = parts.iter().rposition(|(member, child, _)| *member || !child.is_empty());
        let mut pe = Some(pe);
        for (i, (member, child, set)) in parts.into_iter().enumerate() {
            if !member && child.is_empty() {
                continue;
            }
            let Some(name) = (if Some(i) == last { pe.take() } else { pe.clone() }) else { return };
            set.insert_node(name, member, child);
        }
    }
}

/// How a value itself changed (besides what is below it).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Own {
    Same,
    Added,
    Modified,
    Removed,
}

/// Compares `old` and `new`, two versions of an object of type `ty`.
pub(crate) fn compare(old: &Value, new: &Value, ty: TypeRef<'_>) -> Comparison {
    let mut w = Walk { below: Comparison::default(), in_leaf: false, own: Own::Same };
    w.compare(Some(old), Some(new), ty);
    w.below
}

struct Walk {
    below: Comparison,
    in_leaf: bool,
    own: Own,
}

fn same_kind(a: &Atom<'_>, b: &Atom<'_>) -> bool {
    matches!((a, b), (Atom::Scalar(_), Atom::Scalar(_)) | (Atom::List(_), Atom::List(_)) | (Atom::Map(_), Atom::Map(_)))
}

impl Walk {
    fn compare(&mut self, lhs: Option<&Value>, rhs: Option<&Value>, ty: TypeRef<'_>) {
        // The atom of the side that is present (the new one's when both are, unless the value
        // changed kind).
        if rhs.is_none() {
            self.handle(ty.atom(lhs), lhs, rhs);
        } else if lhs.is_none() {
            self.handle(ty.atom(rhs), lhs, rhs);
        } else {
            let (alhs, arhs) = (ty.atom(lhs), ty.atom(rhs));
            if same_kind(&alhs, &arhs) {
                self.handle(arhs, lhs, rhs);
            } else {
                // The value changed kind: what the old one held is removed, what the new one
                // holds added, each walked as its own kind.
                let mut old = Walk { below: Comparison::default(), in_leaf: false, own: Own::Same };
                old.handle(alhs, lhs, rhs);
                self.handle(arhs, lhs, rhs);
                self.below.added.union_with(&old.below.added);
                self.below.modified.union_with(&old.below.modified);
                self.below.removed.union_with(&old.below.removed);
                if self.own == Own::Same {
                    self.own = old.own;
                }
            }
        }
        if !self.in_leaf {
            if lhs.is_none() {
                self.own = Own::Added;
            } else if rhs.is_none() {
                self.own = Own::Removed;
            }
        }
    }

    fn leaf(&mut self, lhs: Option<&Value>, rhs: Option<&Value>) {
        if self.in_leaf {
            return;
        }
        self.in_leaf = true;
        self.own = match (lhs, rhs) {
            (None, _) => Own::Added,
            (_, None) => Own::Removed,
            (Some(l), Some(r)) if !values_equal(l, r) => Own::Modified,
            _ => Own::Same,
        };
    }

    fn handle(&mut self, atom: Atom<'_>, lhs: Option<&Value>, rhs: Option<&Value>) {
        match atom {
            Atom::Scalar(_) => self.leaf(lhs, rhs),
            Atom::List(list) => {
                let l = lhs.and_then(Value::as_array);
                let r = rhs.and_then(Value::as_array);
                let empty = l.is_none_or(Vec::is_empty) && r.is_none_or(Vec::is_empty);
                if list.kind == ListKind::Atomic || empty {
                    self.leaf(lhs, rhs);
                    return;
                }
                self.items(&list, l.map(Vec::as_slice).unwrap_or_default(), r.map(Vec::as_slice).unwrap_or_default());
            }
            Atom::Map(map) => {
                let l = lhs.and_then(Value::as_object);
                let r = rhs.and_then(Value::as_object);
                let empty = l.is_none_or(Map::is_empty) && r.is_none_or(Map::is_empty);
                if map.atomic || empty {
                    self.leaf(lhs, rhs);
                    return;
                }
                self.entries(&map, l, r);
            }
        }
    }

    /// Compares a child, named `pe` (made only when the child changed).
    fn child(&mut self, pe: impl FnOnce() -> PathElement, lhs: Option<&Value>, rhs: Option<&Value>, ty: TypeRef<'_>) {
        let mut w = Walk { below: Comparison::default(), in_leaf: false, own: Own::Same };
        w.compare(lhs, rhs, ty);
        if w.own != Own::Same || !w.below.is_same() {
            self.below.attach(pe(), w.own, w.below);
        }
    }

    fn entries(&mut self, map: &MapType<'_>, l: Option<&Map<String, Value>>, r: Option<&Map<String, Value>>) {
        let mut keys_l = l.into_iter().flat_map(|m| m.keys()).peekable();
        let mut keys_r = r.into_iter().flat_map(|m| m.keys()).peekable();
        loop {
            let order = match (keys_l.peek(), keys_r.peek()) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some(a), Some(b)) => a.cmp(b),
            };
            let key = match order {
                std::cmp::Ordering::Less => keys_l.next(),
                std::cmp::Ordering::Greater => keys_r.next(),
                std::cmp::Ordering::Equal => {
                    keys_r.next();
                    keys_l.next()
                }
            };
            let Some(key) = key else { break };
            let lv = l.and_then(|m| map.go_value(key, m.get(key)));
            let rv = r.and_then(|m| map.go_value(key, m.get(key)));
            if lv.is_none() && rv.is_none() {
                // Absent from both as Go holds them (an empty `omitempty` list on either side).
                continue;
            }
            self.child(|| PathElement::field(key), lv, rv, map.field_or_deduced(key));
        }
    }

    fn items(&mut self, list: &ListType<'_>, l: &[Value], r: &[Value]) {
        // Every element named once, in the order first seen; duplicates kept together.
        let mut order: Vec<PathElement> = Vec::with_capacity(l.len().max(r.len()));
        let mut left: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
        let mut right: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
        for v in l {
            let Ok(pe) = element_of(list, v) else { continue };
            left.entry(pe.clone())
                .or_insert_with(|| {
                    order.push(pe);
                    Vec::new()
                })
                .push(v);
        }
        for v in r {
            let Ok(pe) = element_of(list, v) else { continue };
            let known = left.contains_key(&pe);
            right
                .entry(pe.clone())
                .or_insert_with(|| {
                    if !known {
                        order.push(pe);
                    }
                    Vec::new()
                })
                .push(v);
        }
        for pe in order {
            let lv: &[&Value] = left.get(&pe).map(Vec::as_slice).unwrap_or_default();
            let rv: &[&Value] = right.get(&pe).map(Vec::as_slice).unwrap_or_default();
            match (lv.len(), rv.len()) {
                (0, 0) => {}
                (0 | 1, 0 | 1) => self.child(|| pe, lv.first().copied(), rv.first().copied(), list.items),
                (a, b) if a >= 2 && b >= 2 => {
                    let equal = a == b && lv.iter().zip(rv).all(|(x, y)| values_equal(x, y));
                    if !equal {
                        self.below.modified.insert_member(pe);
                    }
                }
                (a, _) if a >= 2 => {
                    if let Some(v) = rv.first() {
                        self.child(|| pe.clone(), None, Some(v), list.items);
                    }
                    self.below.removed.insert_member(pe);
                }
                _ => {
                    if let Some(v) = lv.first() {
                        self.child(|| pe.clone(), Some(v), None, list.items);
                    }
                    self.below.added.insert_member(pe);
                }
            }
        }
    }
}
