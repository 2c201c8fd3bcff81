//! Field sets: the fields a manager owns, as a tree of [`PathElement`]s, with the set algebra
//! server-side apply needs (their `FieldsV1` form is [`super::fields_v1`]'s).
//!
//! A set holds *members* (paths in the set) and *children* (subtrees holding deeper members).
//! A path can be both a member and the parent of members: in `FieldsV1` that node is written with
//! a `"."` entry. Membership of a path says nothing about its parents: owning
//! `.spec.replicas` does not own `.spec`.
//!
//! Invariants: members and children are sorted by [`PathElement`] order without duplicates;
//! no child subtree is empty (an operation that empties one drops it), so a set is empty exactly
//! when it has neither members nor children, and two sets are equal exactly when their trees
//! are. The operations follow structured-merge-diff's: [`FieldSet::difference`] removes exact
//! members only, [`FieldSet::recursive_difference`] also everything below a removed member.

use std::cmp::Ordering;

use super::path::{Path, PathElement};

/// A set of field paths (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: Vec<PathElement>,
    children: Vec<(PathElement, FieldSet)>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        FieldSet::default()
    }

    /// A set of the given paths.
    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a [PathElement]>) -> Self {
        let mut s = FieldSet::new();
        for p in paths {
            s.insert(p);
        }
        s
    }

    /// The set of `members` and `children`, both sorted by element without duplicates, no child
    /// empty.
    pub(super) fn from_sorted(members: Vec<PathElement>, children: Vec<(PathElement, FieldSet)>) -> Self {
        debug_assert!(members.is_sorted_by(|a, b| a < b) && children.is_sorted_by(|a, b| a.0 < b.0));
        debug_assert!(children.iter().all(|(_, c)| !c.is_empty()));
        FieldSet { members, children }
    }

    /// Whether the set has no member at any depth.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// The members at this level.
    pub fn members(&self) -> &[PathElement] {
        &self.members
    }

    /// The subtrees below this level.
    pub fn children(&self) -> &[(PathElement, FieldSet)] {
        &self.children
    }

    /// Adds a path (not its parents). The empty path (the object itself) is never a member.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [pe] => self.insert_member(pe.clone()),
            [pe, rest @ ..] => self.child_mut(pe).insert(rest),
        }
    }

    /// Adds a member at this level.
    pub fn insert_member(&mut self, pe: PathElement) {
        // Walks add members in order: most go last.
        if self.members.last().is_none_or(|last| *last < pe) {
            self.members.push(pe);
        } else if let Err(i) = self.members.binary_search(&pe) {
            self.members.insert(i, pe);
        }
    }

    /// Attaches `set` below `pe`, merging it with what is there (nothing when it is empty).
    pub fn insert_child(&mut self, pe: PathElement, set: FieldSet) {
        if set.is_empty() {
            return;
        }
        if self.children.last().is_none_or(|(last, _)| *last < pe) {
            self.children.push((pe, set));
            return;
        }
        match self.children.binary_search_by(|(c, _)| c.cmp(&pe)) {
            Ok(i) => self.children[i].1.merge(set),
            Err(i) => self.children.insert(i, (pe, set)),
        }
    }

    /// Adds `pe` as a member (when `member`) and attaches `set` below it.
    pub fn insert_node(&mut self, pe: PathElement, member: bool, set: FieldSet) {
        match (member, set.is_empty()) {
            (true, true) => self.insert_member(pe),
            (true, false) => {
                self.insert_member(pe.clone());
                self.insert_child(pe, set);
            }
            (false, _) => self.insert_child(pe, set),
        }
    }

    /// The subtree below `pe`, created empty when absent. Callers must leave it non-empty.
    fn child_mut(&mut self, pe: &PathElement) -> &mut FieldSet {
        let i = match self.children.binary_search_by(|(c, _)| c.cmp(pe)) {
            Ok(i) => i,
            Err(i) => {
                self.children.insert(i, (pe.clone(), FieldSet::new()));
                i
            }
        };
        &mut self.children[i].1
    }

    /// Whether `pe` is a member at this level.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.binary_search(pe).is_ok()
    }

    /// The subtree below `pe`, if any.
    pub fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.binary_search_by(|(c, _)| c.cmp(pe)).ok().map(|i| &self.children[i].1)
    }

    /// Whether the field `name` is a member at this level.
    pub fn has_field_member(&self, name: &str) -> bool {
        self.members.binary_search_by(|m| m.cmp_field(name)).is_ok()
    }

    /// The subtree below the field `name`, if any.
    pub fn field_child(&self, name: &str) -> Option<&FieldSet> {
        self.children.binary_search_by(|(c, _)| c.cmp_field(name)).ok().map(|i| &self.children[i].1)
    }

    /// Whether `path` is a member.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [pe] => self.has_member(pe),
            [pe, rest @ ..] => self.child(pe).is_some_and(|c| c.has(rest)),
        }
    }

    /// The paths in the set: members of each level before the paths below it, in element order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(Path(p));
        }
        for (pe, c) in &self.children {
            prefix.push(pe.clone());
            c.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The number of members at every depth.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.iter().map(|(_, c)| c.len()).sum::<usize>()
    }

    /// Every path in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            members: join_members(&self.members, &other.members, SetOp::Union),
            children: join_children(&self.children, &other.children, SetOp::Union),
        }
    }

    /// Adds every path of `other` to this set.
    pub fn union_with(&mut self, other: &FieldSet) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        *self = self.union(other);
    }

    /// Removes the members of `other` from this set (paths below them stay), in place.
    pub fn subtract(&mut self, other: &FieldSet) {
        if other.is_empty() || self.is_empty() {
            return;
        }
        if !other.members.is_empty() {
            self.members.retain(|m| !other.has_member(m));
        }
        if !other.children.is_empty() {
            for (pe, c) in &mut self.children {
                if let Some(o) = other.child(pe) {
                    c.subtract(o);
                }
            }
            self.children.retain(|(_, c)| !c.is_empty());
        }
    }

    /// Adds every path of `other` to this set, taking it.
    pub fn merge(&mut self, other: FieldSet) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other;
            return;
        }
        let members = std::mem::take(&mut self.members);
        self.members = merge_owned(members, other.members, |a, b| a.cmp(b), |_, _| {});
        let children = std::mem::take(&mut self.children);
        self.children = merge_owned(children, other.children, |a, b| a.0.cmp(&b.0), |a, b| a.1.merge(b.1));
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            members: join_members(&self.members, &other.members, SetOp::Intersection),
            children: join_children(&self.children, &other.children, SetOp::Intersection),
        }
    }

    /// The paths of this set that are not members of `other` (paths below a member of `other`
    /// stay).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        if other.is_empty() {
            return self.clone();
        }
        FieldSet {
            members: join_members(&self.members, &other.members, SetOp::Difference),
            children: join_children(&self.children, &other.children, SetOp::Difference),
        }
    }

    /// The paths of this set that neither are members of `other` nor lie below one.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        if other.is_empty() {
            return self.clone();
        }
        let members = join_members(&self.members, &other.members, SetOp::Difference);
        let mut children = Vec::with_capacity(self.children.len());
        for (pe, c) in &self.children {
            if other.has_member(pe) {
                continue;
            }
            match other.child(pe) {
                Some(o) => {
                    let d = c.recursive_difference(o);
                    if !d.is_empty() {
                        children.push((pe.clone(), d));
                    }
                }
                None => children.push((pe.clone(), c.clone())),
            }
        }
        FieldSet { members, children }
    }

    /// Removes the members of `other` and everything below them from this set, in place (the
    /// in-place [`FieldSet::recursive_difference`]).
    pub fn recursive_subtract(&mut self, other: &FieldSet) {
        if other.is_empty() || self.is_empty() {
            return;
        }
        if !other.members.is_empty() {
            self.members.retain(|m| !other.has_member(m));
        }
        self.children.retain_mut(|(pe, c)| {
            if other.has_member(pe) {
                return false;
            }
            if let Some(o) = other.child(pe) {
                c.recursive_subtract(o);
            }
            !c.is_empty()
        });
    }

    /// The members that have no members below them.
    pub fn leaves(&self) -> FieldSet {
        let members = self.members.iter().filter(|m| self.child(m).is_none()).cloned().collect();
        let children =
            self.children.iter().map(|(pe, c)| (pe.clone(), c.leaves())).filter(|(_, c)| !c.is_empty()).collect();
        FieldSet { members, children }
    }
}

/// Merges two sorted, duplicate-free lists, taking their elements; `both` combines an element
/// both have into the first.
fn merge_owned<T>(a: Vec<T>, b: Vec<T>, cmp: impl Fn(&T, &T) -> Ordering, both: impl Fn(&mut T, T)) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let mut a = a.into_iter().peekable();
    let mut b = b.into_iter().peekable();
    loop {
        let order = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => cmp(x, y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => break,
        };
        match order {
            Ordering::Less => out.extend(a.next()),
            Ordering::Greater => out.extend(b.next()),
            Ordering::Equal => {
                if let (Some(mut x), Some(y)) = (a.next(), b.next()) {
                    both(&mut x, y);
                    out.push(x);
                }
            }
        }
    }
    out
}

/// A set operation on sorted, duplicate-free element lists (see [`join_sorted`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Intersection,
    Difference,
}

/// `a op b` for two lists sorted by `cmp` without duplicates: an element only in `a` stays
/// unless `op` intersects, one only in `b` stays in a union, and one in both becomes
/// `both(a's, b's)` (left out when that is `None`).
fn join_sorted<T: Clone>(
    a: &[T],
    b: &[T],
    op: SetOp,
    cmp: impl Fn(&T, &T) -> Ordering,
    both: impl Fn(&T, &T) -> Option<T>,
) -> Vec<T> {
    let mut out = Vec::with_capacity(if op == SetOp::Union { a.len() + b.len() } else { a.len() });
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match cmp(&a[i], &b[j]) {
            Ordering::Less => {
                if op != SetOp::Intersection {
                    out.push(a[i].clone());
                }
                i += 1;
            }
            Ordering::Greater => {
                if op == SetOp::Union {
                    out.push(b[j].clone());
                }
                j += 1;
            }
            Ordering::Equal => {
                out.extend(both(&a[i], &b[j]));
                i += 1;
                j += 1;
            }
        }
    }
    if op != SetOp::Intersection {
        out.extend_from_slice(&a[i..]);
    }
    if op == SetOp::Union {
        out.extend_from_slice(&b[j..]);
    }
    out
}

/// `a op b` of member lists: a member in both stays unless `op` is a difference.
fn join_members(a: &[PathElement], b: &[PathElement], op: SetOp) -> Vec<PathElement> {
    join_sorted(a, b, op, |x, y| x.cmp(y), |x, _| (op != SetOp::Difference).then(|| x.clone()))
}

/// `a op b` of child lists: a child in both becomes `op` of the two sets, left out when empty.
fn join_children(
    a: &[(PathElement, FieldSet)],
    b: &[(PathElement, FieldSet)],
    op: SetOp,
) -> Vec<(PathElement, FieldSet)> {
    join_sorted(
        a,
        b,
        op,
        |x, y| x.0.cmp(&y.0),
        |x, y| {
            let s = match op {
                SetOp::Union => x.1.union(&y.1),
                SetOp::Intersection => x.1.intersection(&y.1),
                SetOp::Difference => x.1.difference(&y.1),
            };
            (!s.is_empty()).then(|| (x.0.clone(), s))
        },
    )
}

#[cfg(test)]
pub(super) mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    pub(crate) fn p(s: &str) -> Vec<PathElement> {
        s.split('.').filter(|x| !x.is_empty()).map(PathElement::field).collect()
    }

    pub(crate) fn set(paths: &[&str]) -> FieldSet {
        let mut s = FieldSet::new();
        for x in paths {
            s.insert(&p(x));
        }
        s
    }

    #[test]
    fn difference_keeps_what_lies_below_a_removed_member() {
        let s = set(&["a", "a.b", "c"]);
        let o = set(&["a"]);
        assert_eq!(s.difference(&o), set(&["a.b", "c"]));
        assert_eq!(s.recursive_difference(&o), set(&["c"]));
        assert_eq!(set(&["a.b", "a.c"]).leaves(), set(&["a.b", "a.c"]));
        assert_eq!(set(&["a", "a.b"]).leaves(), set(&["a.b"]));
    }

    fn arb_path() -> impl Strategy<Value = Vec<PathElement>> {
        let pe = prop_oneof![
            "[a-d]".prop_map(|s| PathElement::field(&s)),
            (0u8..3).prop_map(|n| PathElement::key(vec![("name".into(), json!(format!("n{n}")))])),
            (0u8..3).prop_map(|n| PathElement::Value(Box::new(json!(n)))),
        ];
        proptest::collection::vec(pe, 1..4)
    }

    pub(crate) fn arb_set() -> impl Strategy<Value = FieldSet> {
        proptest::collection::vec(arb_path(), 0..8).prop_map(|ps| FieldSet::from_paths(ps.iter().map(Vec::as_slice)))
    }

    fn paths(s: &FieldSet) -> std::collections::BTreeSet<Path> {
        s.paths().into_iter().collect()
    }

    proptest! {
        #[test]
        fn set_algebra_matches_sets_of_paths(a in arb_set(), b in arb_set()) {
            let (pa, pb) = (paths(&a), paths(&b));
            prop_assert_eq!(paths(&a.union(&b)), pa.union(&pb).cloned().collect());
            prop_assert_eq!(paths(&a.intersection(&b)), pa.intersection(&pb).cloned().collect());
            prop_assert_eq!(paths(&a.difference(&b)), pa.difference(&pb).cloned().collect());
            let below = |x: &Path| pb.iter().any(|m| x.0.starts_with(&m.0));
            prop_assert_eq!(
                paths(&a.recursive_difference(&b)),
                pa.iter().filter(|x| !below(x)).cloned().collect()
            );
            // Laws: union is commutative, difference and intersection partition a set.
            prop_assert_eq!(a.union(&b), b.union(&a));
            prop_assert_eq!(a.difference(&b).union(&a.intersection(&b)), a.clone());
            prop_assert!(a.difference(&b).intersection(&b).is_empty());
            prop_assert_eq!(a.union(&a), a.clone());
            // Every path is found; no empty subtree is left behind.
            for x in &pa {
                prop_assert!(a.has(&x.0));
            }
            fn no_empty(s: &FieldSet) -> bool {
                s.children().iter().all(|(_, c)| !c.is_empty() && no_empty(c))
            }
            prop_assert!(no_empty(&a.difference(&b)) && no_empty(&a.intersection(&b)) && no_empty(&a.recursive_difference(&b)));
            // The in-place forms agree.
            let mut d = a.clone();
            d.subtract(&b);
            prop_assert_eq!(&d, &a.difference(&b));
            prop_assert!(no_empty(&d));
            let mut u = a.clone();
            u.merge(b.clone());
            prop_assert_eq!(&u, &a.union(&b));
            let mut r = a.clone();
            r.recursive_subtract(&b);
            prop_assert_eq!(&r, &a.recursive_difference(&b));
            prop_assert!(no_empty(&r));
            prop_assert_eq!(a.len(), paths(&a).len());
        }
    }
}
