//! The static cost of a CustomResourceDefinition's validation rules, as kube-apiserver
//! estimates it when a definition is written: cel-go's estimate of an expression's worst cost
//! (literals 0, names and field selections 1, a list built 10, a map 30, a comprehension its
//! range's size times its step, string work a tenth of a unit per character, a regular
//! expression a quarter per character of the pattern…) over the largest values the schema
//! admits (`maxLength`, `maxItems`, `maxProperties`, or else what fits in a 3 MiB request), with
//! kube's costs for its own functions; a rule's cost is then multiplied by the number of times
//! it can run in one object (the product of the limits of the lists and maps above it, or what
//! fits in a request where one of them has none).
//!
//! Invariants: the estimate never exceeds kube's, so a definition kube accepts is never
//! refused: every part is costed as kube costs it where its types and sizes are certain here,
//! and as the least it could cost where they are not (a size unknown here is 0, a function not
//! costed here costs only its arguments). Paths from `self` to the values an expression reads
//! are built and looked up as kube looks them up, quirks included (a name with no path of its
//! own is looked up at the rule's node). Two-variable comprehensions, which run here in another
//! shape (see `cel_comprehension`), are costed as cel-go costs its own.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use cel::Program;
use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, LiteralValue, operators};
use cel::parser::Expression;
use serde_json::Value;

use crate::cel_check::{Ty, Types, escape};

/// The largest request kube-apiserver takes, on which the sizes of unbounded values are based.
const MAX_REQUEST: u64 = 3 * 1024 * 1024;
/// The longest string a request can carry (its quotes taken off).
const MAX_STRING: u64 = MAX_REQUEST - 2;
/// cel-go's cost of traversing one character of a string.
const STRING_FACTOR: f64 = 0.1;
/// cel-go's cost of one character of a regular expression.
const REGEX_FACTOR: f64 = 0.25;
/// The longest pattern of kube's named formats, on which `validate` is costed.
const FORMAT_REGEX: f64 = 128.0;
/// The cost above which kube refuses a rule.
pub(crate) const RULE_LIMIT: u64 = 10_000_000;
/// The cost above which kube refuses a schema's rules altogether.
pub(crate) const TOTAL_LIMIT: u64 = 100_000_000;

/// A node of the type kube declares for a schema, as paths reach it.
#[derive(Clone, Copy)]
enum Decl<'s> {
    /// A schema node; `true` for the root of a resource (the definition's or an embedded one).
    Schema(&'s Value, bool),
    /// The `metadata` kube declares at a resource's root: `name` and `generateName` (with the
    /// schema's own `metadata`, if any).
    Meta(Option<&'s Value>),
    /// A string kube declares at a resource's root, with no limit.
    String,
    /// A string kube declares at a resource's root with at most this many characters.
    Capped(u64),
    /// A map's key: a string kube gives no size.
    Key,
}

fn int_or_string(node: &Value) -> bool {
    node.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true)
}

fn embedded(node: &Value) -> bool {
    node.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true)
}

fn kind(node: &Value) -> &str {
    node.get("type").and_then(Value::as_str).unwrap_or("")
}

fn limit(node: &Value, key: &str) -> Option<u64> {
    node.get(key).and_then(Value::as_i64).map(|n| n.max(0) as u64)
}

/// The schema of a map's values, when the node is an object with an `additionalProperties` schema.
fn map_values(node: &Value) -> Option<&Value> {
    node.get("additionalProperties").filter(|a| a.is_object())
}

/// Whether kube declares a type for the node, so that CEL can reach it.
fn exposed(node: &Value) -> bool {
    if int_or_string(node) {
        return true;
    }
    match kind(node) {
        "array" => node.get("items").filter(|i| i.is_object()).is_some_and(exposed),
        "object" => map_values(node).is_none_or(exposed),
        "string" | "boolean" | "number" | "integer" => true,
        _ => false,
    }
}

/// The fewest bytes a value of the node takes in JSON, as kube counts them.
fn min_size(node: &Value) -> u64 {
    if int_or_string(node) {
        return 1;
    }
    match kind(node) {
        "object" if map_values(node).is_none() => {
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut size = 2;
            for (name, prop) in node.get("properties").and_then(Value::as_object).into_iter().flatten() {
                let defaulted = prop.get("default").is_some_and(|d| !d.is_null());
                if exposed(prop) && required.contains(&name.as_str()) && !defaulted {
                    size += name.len() as u64 + min_size(prop) + 4;
                }
            }
            size
        }
        "array" | "object" => 2,
        "string" => match node.get("format").and_then(Value::as_str) {
            Some("duration") => 3,
            Some("date") => 12,
            Some("date-time") => 21,
            _ => 2,
        },
        "boolean" => 4,
        _ => 1,
    }
}

/// The number of times a rule on `node` can run in one object when a list or map above it has
/// no limit.
pub(crate) fn unbounded_cardinality(node: &Value) -> u64 {
    MAX_REQUEST / (min_size(node) + 1)
}

/// The factor by which `node` multiplies how often the rules below it can run: its `maxItems`
/// or `maxProperties` for a list or map (`None` without one), 1 otherwise.
pub(crate) fn fan_out(node: &Value) -> Option<u64> {
    match kind(node) {
        "object" if node.get("additionalProperties").is_some_and(|a| !a.is_null()) => limit(node, "maxProperties"),
        "array" => limit(node, "maxItems"),
        _ => Some(1),
    }
}

/// Whether kube replaces the declarations of `kind`, `apiVersion` and `metadata` of a
/// resource's root `node` with its own (plain strings, `metadata` with `name` and
/// `generateName` only), so that rules below them see kube's types, not the schema's.
pub(crate) fn replaces_meta(node: &Value) -> bool {
    !Decl::keeps_meta(node)
}

impl<'s> Decl<'s> {
    /// Whether a resource's root keeps its own declarations of `kind`, `apiVersion` and
    /// `metadata.name`/`generateName` (kube's otherwise replace them).
    fn keeps_meta(node: &Value) -> bool {
        fn prop<'v>(n: Option<&'v Value>, k: &str) -> Option<&'v Value> {
            n?.get("properties")?.get(k)
        }
        let typed = |n: Option<&Value>, t: &str| n.map(kind) == Some(t);
        let meta = prop(Some(node), "metadata");
        typed(prop(Some(node), "kind"), "string")
            && typed(prop(Some(node), "apiVersion"), "string")
            && typed(meta, "object")
            && typed(prop(meta, "name"), "string")
            && typed(prop(meta, "generateName"), "string")
    }

    fn child(self, step: &str) -> Option<Decl<'s>> {
        match self {
            Decl::Schema(node, root) => match step {
                "@items" | "@values" => {
                    let elem = match kind(node) {
                        "array" => node.get("items").filter(|i| i.is_object()),
                        "object" => map_values(node),
                        _ => None,
                    }?;
                    Some(Decl::Schema(elem, embedded(elem)))
                }
                "@keys" => (kind(node) == "object" && map_values(node).is_some()).then_some(Decl::Key),
                name => {
                    if int_or_string(node) || kind(node) != "object" || map_values(node).is_some() {
                        return None;
                    }
                    if root && !Decl::keeps_meta(node) {
                        match name {
                            "kind" | "apiVersion" => return Some(Decl::String),
                            "metadata" => {
                                return Some(Decl::Meta(node.get("properties").and_then(|p| p.get("metadata"))));
                            }
                            _ => {}
                        }
                    }
                    let props = node.get("properties").and_then(Value::as_object)?;
                    let (_, prop) = props.iter().find(|(k, p)| escape(k).as_deref() == Some(name) && exposed(p))?;
                    Some(Decl::Schema(prop, embedded(prop)))
                }
            },
            // Names are costed at most at a DNS subdomain's length (a generated name's prefix
            // one less), or the schema's own limit, as newer kube-apiservers cost them; v1.35
            // costs them at a request's size, so a rule accepted here may be refused there,
            // never the other way round.
            Decl::Meta(schema) => {
                let cap = match step {
                    "name" => 253,
                    "generateName" => 252,
                    _ => return None,
                };
                let own = schema.and_then(|m| m.get("properties")?.get(step)).and_then(|n| limit(n, "maxLength"));
                Some(Decl::Capped(own.map_or(cap, |own| own.min(cap))))
            }
            Decl::String | Decl::Capped(_) | Decl::Key => None,
        }
    }

    /// kube's `MaxElements`: the most characters, items or entries a value can have.
    fn max_elements(self) -> u64 {
        let node = match self {
            Decl::Schema(node, _) => node,
            Decl::String => return MAX_STRING,
            Decl::Capped(n) => return n * 4,
            Decl::Meta(_) | Decl::Key => return 0,
        };
        let max_length = limit(node, "maxLength");
        if int_or_string(node) {
            return max_length.map_or(MAX_STRING, |n| n.saturating_mul(4));
        }
        match kind(node) {
            "array" => limit(node, "maxItems")
                .unwrap_or_else(|| node.get("items").map_or(0, |items| MAX_STRING / (min_size(items) + 1))),
            "object" => match map_values(node) {
                Some(values) => limit(node, "maxProperties").unwrap_or(MAX_STRING / (min_size(values) + 6)),
                None => 0,
            },
            "string" => match node.get("format").and_then(Value::as_str) {
                Some("byte") => max_length.unwrap_or(MAX_STRING),
                Some("duration" | "date-time") => 32,
                Some("date") => 12,
                _ => match (max_length, node.get("enum").and_then(Value::as_array)) {
                    (Some(n), _) => n.saturating_mul(4),
                    (None, Some(values)) if !values.is_empty() => {
                        values.iter().filter_map(Value::as_str).map(|v| v.len() as u64).max().unwrap_or(0)
                    }
                    _ => MAX_STRING,
                },
            },
            _ => 0,
        }
    }
}

/// The sizes of the entries of a list or map an expression builds.
#[derive(Clone, Copy)]
struct Entries {
    map: bool,
    key: u64,
    value: u64,
}

impl Entries {
    fn union(a: Option<Entries>, b: Option<Entries>) -> Option<Entries> {
        let (a, b) = (a?, b?);
        Some(Entries { map: a.map, key: a.key.max(b.key), value: a.value.max(b.value) })
    }
}

/// A path as cel-go holds one: a Go slice, whose `append` writes into the array it shares with
/// the path appended to when that array has room (Go's growth: 1, 2, 4, 8… elements), so that
/// a later path can change an earlier one before kube looks a size up through it. kube's
/// estimates follow such paths; so do these.
#[derive(Clone, Default)]
struct GoPath {
    array: Rc<RefCell<Vec<String>>>,
    len: usize,
}

impl GoPath {
    /// `[]string{name}`.
    fn of(name: &str) -> GoPath {
        GoPath { array: Rc::new(RefCell::new(vec![name.to_string()])), len: 1 }
    }

    /// Go's `append(path, step)`.
    fn append(&self, step: &str) -> GoPath {
        let cap = self.array.borrow().len();
        if self.len < cap {
            self.array.borrow_mut()[self.len] = step.to_string();
            return GoPath { array: self.array.clone(), len: self.len + 1 };
        }
        let mut array: Vec<String> = self.array.borrow()[..self.len].to_vec();
        array.push(step.to_string());
        array.resize(if cap == 0 { 1 } else { cap * 2 }, String::new());
        GoPath { array: Rc::new(RefCell::new(array)), len: self.len + 1 }
    }

    /// What the path holds now.
    fn read(&self) -> Vec<String> {
        self.array.borrow()[..self.len].to_vec()
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The range of the two-variable comprehension being costed.
struct Pairs {
    /// The paths of the two names: the range's keys (indices) and its values.
    paths: (GoPath, GoPath),
    entries: Option<Entries>,
}

impl Pairs {
    /// As cel-go pushes the two names of a comprehension over `range` (at `path`): the keys'
    /// path appended first, then the values'.
    fn over(path: &GoPath, entries: Option<Entries>, list: bool) -> Pairs {
        let keys = path.append(if list { "@indices" } else { "@keys" });
        let values = path.append(if list { "@items" } else { "@values" });
        Pairs { paths: (keys, values), entries }
    }
}

/// The range a two-variable comprehension runs over, when `c` is one.
fn pairs_of(c: &ComprehensionExpr) -> Option<&Expression> {
    crate::cel_comprehension::pairs_target(&c.iter_range)
}

/// A name bound inside an expression: a comprehension's variable or accumulator.
struct Local {
    name: String,
    path: GoPath,
    size: Option<u64>,
    entries: Option<Entries>,
}

/// The largest cost of `program`, a rule (or message expression) checked with `types`, on the
/// schema node `node` (`root` for a resource's root).
pub(crate) fn estimate(program: &Program, types: &Types<'_>, node: &Value, root: bool) -> u64 {
    let mut coster = Coster {
        types,
        root: Decl::Schema(node, root || embedded(node)),
        paths: HashMap::new(),
        sizes: HashMap::new(),
        entries: HashMap::new(),
        locals: Vec::new(),
        pairs: Vec::new(),
    };
    coster.cost(program.expression())
}

/// kube's words for a cost over its limit.
pub(crate) fn over_budget(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, \
         and maxLength where arrays, maps, and strings are declared)"
    )
}

fn scaled(n: u64, factor: f64) -> u64 {
    let v = (n as f64 * factor).ceil();
    if v >= u64::MAX as f64 { u64::MAX } else { v as u64 }
}

struct Coster<'a, 's> {
    types: &'a Types<'s>,
    /// The rule's node, where paths start.
    root: Decl<'s>,
    /// The path of each expression that has one, from a name through fields, `@items`,
    /// `@keys` and `@values`.
    paths: HashMap<u64, GoPath>,
    sizes: HashMap<u64, u64>,
    entries: HashMap<u64, Entries>,
    locals: Vec<Local>,
    /// The ranges of the two-variable comprehensions being costed, innermost last.
    pairs: Vec<Pairs>,
}

impl<'s> Coster<'_, 's> {
    fn ty(&self, e: &Expression) -> Ty<'s> {
        self.types.get(&e.id).cloned().unwrap_or(Ty::Dyn)
    }

    fn local(&self, name: &str) -> Option<&Local> {
        self.locals.iter().rev().find(|l| l.name == name)
    }

    fn path(&self, e: &Expression) -> GoPath {
        if let Expr::Ident(name) = &e.expr
            && let Some(l) = self.local(name)
        {
            return l.path.clone();
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    /// The size at `path` as it reads now, looked up from the rule's node past the path's first
    /// name.
    fn size_at(&self, path: &GoPath) -> Option<u64> {
        self.size_at_steps(&path.read())
    }

    /// The size of the items of `list` as kube looks it up for its list functions: through a
    /// copy of the list's path with `@items` added (none without a path).
    fn items_size(&self, list: &Expression) -> Option<u64> {
        let path = self.path(list);
        if path.is_empty() {
            return None;
        }
        let mut steps = path.read();
        steps.push("@items".into());
        self.size_at_steps(&steps)
    }

    fn size_at_steps(&self, path: &[String]) -> Option<u64> {
        let (_, steps) = path.split_first()?;
        let mut at = self.root;
        for step in steps {
            at = at.child(step)?;
        }
        Some(at.max_elements())
    }

    /// cel-go's size of an expression's value (characters, bytes, items or entries), where it
    /// has one.
    fn size(&mut self, e: &Expression) -> Option<u64> {
        if let Some(s) = self.sizes.get(&e.id) {
            return Some(*s);
        }
        match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => return Some(s.chars().count() as u64),
            Expr::Literal(LiteralValue::Bytes(b)) => return Some(b.len() as u64),
            Expr::Literal(_) => return Some(1),
            Expr::List(l) => return Some(l.elements.len() as u64),
            Expr::Map(m) => return Some(m.entries.len() as u64),
            _ => {}
        }
        if let Some(s) = self.size_at(&self.path(e)) {
            self.sizes.insert(e.id, s);
            return Some(s);
        }
        let scalar =
            |t: &Ty<'_>| matches!(t, Ty::Bool | Ty::Double | Ty::Duration | Ty::Int | Ty::Timestamp | Ty::Uint);
        match self.ty(e) {
            t if scalar(&t) => return Some(1),
            Ty::Optional(t) if scalar(&t) => return Some(1),
            _ => {}
        }
        match &e.expr {
            Expr::Ident(name) => self.local(name).and_then(|l| l.size),
            _ => None,
        }
    }

    /// The size as a lower bound of cel-go's: 0 where it is unknown here.
    fn size_or_least(&mut self, e: &Expression) -> u64 {
        self.size(e).unwrap_or(0)
    }

    fn entries_of(&self, e: &Expression) -> Option<Entries> {
        if let Some(s) = self.entries.get(&e.id) {
            return Some(*s);
        }
        match &e.expr {
            Expr::Ident(name) => self.local(name).and_then(|l| l.entries),
            _ => None,
        }
    }

    fn cost(&mut self, e: &Expression) -> u64 {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => 0,
            Expr::Ident(name) => {
                if self.local(name).is_none() {
                    self.paths.insert(e.id, GoPath::of(name));
                }
                1
            }
            Expr::Select(s) => {
                let operand = self.cost(&s.operand);
                if s.test {
                    // kube gives a presence test no cost of its own.
                    return operand;
                }
                let selects =
                    matches!(self.ty(&s.operand), Ty::Map(..) | Ty::Object(_) | Ty::Root(_) | Ty::RootMetadata);
                let path = self.path(&s.operand).append(&s.field);
                self.paths.insert(e.id, path);
                operand.saturating_add(u64::from(selects))
            }
            Expr::Call(c) => self.call(e, c),
            Expr::List(l) => {
                let mut sum = 10u64;
                let mut item = 0;
                for element in &l.elements {
                    sum = sum.saturating_add(self.cost(element));
                    item = item.max(self.size_or_least(element));
                }
                self.entries.insert(e.id, Entries { map: false, key: 1, value: item });
                sum
            }
            Expr::Map(m) => {
                let mut sum = 30u64;
                let (mut key, mut value) = (0, 0);
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        sum = sum.saturating_add(self.cost(&me.key)).saturating_add(self.cost(&me.value));
                        key = key.max(self.size_or_least(&me.key));
                        value = value.max(self.size_or_least(&me.value));
                    }
                }
                self.entries.insert(e.id, Entries { map: true, key, value });
                sum
            }
            Expr::Struct(s) => {
                let mut sum = 40u64;
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        sum = sum.saturating_add(self.cost(&f.value));
                    }
                }
                sum
            }
            Expr::Comprehension(c) => self.comprehension(e, c),
        }
    }

    fn comprehension(&mut self, e: &Expression, c: &ComprehensionExpr) -> u64 {
        // Two-variable comprehensions run here over their range's pairs, each half bound by a
        // one-element comprehension (see `cel_comprehension`): they are costed as cel-go costs
        // the comprehension over the range itself, with the two names as its variables.
        let range = match pairs_of(c) {
            Some(target) => target,
            None if c.accu_var == crate::cel_comprehension::BOUND => {
                if let Some(half) = crate::cel_comprehension::bound_half(&c.iter_range) {
                    return self.binding(e, c, half);
                }
                &c.iter_range
            }
            None => &c.iter_range,
        };
        let pairs = !std::ptr::eq(range, &c.iter_range);
        let mut sum = self.cost(range).saturating_add(self.cost(&c.accu_init));
        let accu = Local {
            name: c.accu_var.clone(),
            path: self.path(&c.accu_init),
            size: self.size(&c.accu_init),
            entries: self.entries_of(&c.accu_init),
        };
        self.locals.push(accu);
        let entries = self.entries_of(range);
        let list = match entries {
            Some(en) => !en.map,
            None => matches!(self.ty(range), Ty::List(_)),
        };
        let each = if pairs {
            self.pairs.push(Pairs::over(&self.path(range), entries, list));
            let each = self.cost(&c.loop_cond).saturating_add(self.cost(&c.loop_step));
            self.pairs.pop();
            each
        } else {
            let path = self.path(range).append(if list { "@items" } else { "@keys" });
            let size = entries.map(|en| if list { en.value } else { en.key });
            self.locals.push(Local { name: c.iter_var.clone(), path, size, entries: None });
            let each = self.cost(&c.loop_cond).saturating_add(self.cost(&c.loop_step));
            self.locals.pop();
            each
        };
        sum = sum.saturating_add(self.cost(&c.result));
        self.locals.pop();
        let count = self.size_or_least(range);
        sum = sum.saturating_add(count.saturating_mul(each));
        match &c.accu_init.expr {
            Expr::Literal(_) => {
                if let Some(s) = self.size(&c.accu_init) {
                    self.sizes.insert(e.id, s);
                }
            }
            Expr::List(_) | Expr::Map(_) => {
                if let Some(s) = self.size(range) {
                    self.sizes.insert(e.id, s);
                }
                if let Some(en) = self.entries_of(&c.loop_step) {
                    self.entries.insert(e.id, en);
                }
            }
            _ => {}
        }
        sum
    }

    /// A name bound to one half of the current pair: cel-go's iteration variable over the
    /// range's keys (indices) or values; costs what its body costs.
    fn binding(&mut self, e: &Expression, c: &ComprehensionExpr, half: usize) -> u64 {
        let Some(pairs) = self.pairs.last() else { return 0 };
        let (path, size) = match half {
            0 => (pairs.paths.0.clone(), pairs.entries.map(|en| en.key)),
            _ => (pairs.paths.1.clone(), pairs.entries.map(|en| en.value)),
        };
        self.locals.push(Local { name: c.iter_var.clone(), path, size, entries: None });
        let cost = self.cost(&c.loop_step);
        self.locals.pop();
        if let Some(s) = self.size(&c.loop_step) {
            self.sizes.insert(e.id, s);
        }
        if let Some(en) = self.entries_of(&c.loop_step) {
            self.entries.insert(e.id, en);
        }
        cost
    }

    /// `transformMap` and `transformMapEntry`, built here as a list of entries made a map: cel-go
    /// builds the map itself (`{}`, then one `cel.@mapInsert` an entry, at one unit beyond its
    /// arguments).
    fn map_transform(&mut self, e: &Expression, c: &ComprehensionExpr, entry: bool) -> Option<u64> {
        let target = pairs_of(c)?;
        let (filter, add) = match &c.loop_step.expr {
            Expr::Call(step) if step.func_name == operators::CONDITIONAL && step.args.len() == 3 => {
                (Some(&step.args[0]), &step.args[1])
            }
            _ => (None, &c.loop_step),
        };
        let Expr::Call(add) = &add.expr else { return None };
        let Some(Expr::List(one)) = add.args.get(1).map(|a| &a.expr) else { return None };
        let element = one.elements.first()?;
        let value = if entry {
            element
        } else {
            let Expr::List(pair) = &element.expr else { return None };
            pair.elements.get(1)?
        };
        let mut sum = self.cost(target).saturating_add(30).saturating_add(1);
        let entries = self.entries_of(target);
        let list = entries.map_or_else(|| matches!(self.ty(target), Ty::List(_)), |en| !en.map);
        self.pairs.push(Pairs::over(&self.path(target), entries, list));
        // `@mapInsert(@result, k, v)` or `@mapInsert(@result, entry)`.
        let insert = 1u64.saturating_add(1).saturating_add(u64::from(!entry)).saturating_add(self.cost(value));
        let each = match filter {
            Some(f) => self.cost(f).saturating_add(insert.max(1)),
            None => insert,
        };
        self.pairs.pop();
        let count = self.size_or_least(target);
        sum = sum.saturating_add(count.saturating_mul(each));
        if let Some(s) = self.size(target) {
            self.sizes.insert(e.id, s);
        }
        Some(sum)
    }

    fn call(&mut self, e: &Expression, c: &CallExpr) -> u64 {
        if c.func_name == "dyn" && c.target.is_none() && c.args.len() == 1 {
            let arg = &c.args[0];
            let cost = self.cost(arg);
            if let Some(s) = self.size(arg) {
                self.sizes.insert(e.id, s);
            }
            if let Some(en) = self.entries_of(arg) {
                self.entries.insert(e.id, en);
            }
            return cost.saturating_add(1);
        }
        if let [arg] = c.args.as_slice()
            && let Expr::Comprehension(inner) = &arg.expr
        {
            let entry = match c.func_name.as_str() {
                crate::cel_comprehension::TO_MAP => Some(false),
                crate::cel_comprehension::MERGE => Some(true),
                _ => None,
            };
            if let Some(entry) = entry
                && let Some(cost) = self.map_transform(e, inner, entry)
            {
                return cost;
            }
        }
        let mut args_cost = 0u64;
        let mut costs = Vec::with_capacity(c.args.len());
        // As cel-go, each argument's size is worked out (and kept) right after its cost, before
        // later paths can change its own.
        for arg in &c.args {
            let cost = self.cost(arg);
            self.size(arg);
            costs.push(cost);
            args_cost = args_cost.saturating_add(cost);
        }
        let target_cost = match c.target.as_deref() {
            // A call on a package's name (`sets.contains`) has no target.
            Some(t) if matches!(&t.expr, Expr::Ident(n) if self.local(n).is_none() && self.types.get(&t.id).is_none()) => {
                0
            }
            Some(t) => {
                let cost = self.cost(t);
                self.size(t);
                cost
            }
            None => 0,
        };
        let (cost, result) = self.function(e, c, &costs, args_cost);
        let result = result.or_else(|| self.size(e));
        if let Some(s) = result {
            self.sizes.insert(e.id, s);
        }
        target_cost.saturating_add(cost)
    }

    /// The cost of a call beyond its target's, and the size of its result where the function
    /// gives one.
    fn function(&mut self, e: &Expression, c: &CallExpr, costs: &[u64], args: u64) -> (u64, Option<u64>) {
        use Ty::*;
        let target = c.target.as_deref().filter(|t| self.types.contains_key(&t.id));
        // A function of a package (`ip.isCanonical`) goes by its qualified name.
        let name = match c.target.as_deref().map(|t| &t.expr) {
            Some(Expr::Ident(package)) if target.is_none() => format!("{package}.{}", c.func_name),
            _ => c.func_name.clone(),
        };
        let arg_ty: Vec<Ty<'s>> = c.args.iter().map(|a| self.ty(a)).collect();
        let plus = |n: u64| (n.saturating_add(args), None);
        let textual = |t: &Ty<'_>| matches!(t, String | Bytes);
        // kube's costs of its own functions come first.
        match (name.as_str(), target, c.args.as_slice()) {
            ("isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf", Some(t), _) => {
                let n = self.size_or_least(t);
                let cost = match self.ty(t) {
                    List(item) => {
                        let mut each = 1u64;
                        if textual(&item) {
                            let size = self.items_size(t);
                            each = each.saturating_add(scaled(size.unwrap_or(0), STRING_FACTOR));
                        }
                        n.saturating_mul(each)
                    }
                    _ => scaled(n, STRING_FACTOR),
                };
                return plus(cost);
            }
            ("url" | "jsonpatch.escapeKey", None, [a]) => {
                let n = self.size_or_least(a);
                return (scaled(n, STRING_FACTOR).saturating_add(args), Some(n));
            }
            ("lowerAscii" | "upperAscii" | "substring" | "trim", Some(t), _) => {
                let n = self.size_or_least(t);
                return (scaled(n, STRING_FACTOR).saturating_add(args), Some(n));
            }
            ("replace", Some(t), [from, to, ..]) => {
                let n = self.size_or_least(t);
                let with = self.size_or_least(to);
                // The fewest characters replaced: a literal's own, none for a field's value
                // (whose size runs from 0); unknown otherwise.
                let fewest = match &from.expr {
                    Expr::Literal(LiteralValue::String(s)) => Some(s.chars().count() as u64),
                    Expr::Select(_) if self.size_at(&self.path(from)).is_some() => Some(0),
                    _ => None,
                };
                let size = fewest.map(|fewest| match fewest {
                    0 => n.saturating_add(1).saturating_mul(with).saturating_add(n),
                    f if with <= f => n,
                    f => n.div_ceil(f).saturating_mul(with),
                });
                return (scaled(n, 2.0 * STRING_FACTOR).saturating_add(args), size);
            }
            ("split", Some(t), _) => {
                let n = self.size_or_least(t);
                let most = match c.args.get(1).map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::Int(i))) => (**i).max(0) as u64,
                    _ => n,
                };
                return (scaled(n, 2.0 * STRING_FACTOR).saturating_add(args), Some(most));
            }
            ("join", Some(t), _) => {
                let count = self.size_or_least(t);
                let mut size = 0u64;
                if matches!(self.ty(t), List(_)) {
                    let item = self.items_size(t);
                    size = count.saturating_mul(item.unwrap_or(0));
                }
                if let Some(sep) = c.args.first() {
                    let sep = self.size_or_least(sep);
                    size = size.saturating_add(sep.saturating_mul(count.saturating_sub(1)));
                }
                return (scaled(size, STRING_FACTOR).saturating_add(args), Some(size));
            }
            ("find" | "findAll", Some(t), [pattern, ..]) => {
                let n = self.size_or_least(t);
                let text = scaled(n.saturating_add(1), STRING_FACTOR);
                let regex = scaled(self.size_or_least(pattern), REGEX_FACTOR);
                return (text.saturating_mul(regex).saturating_add(args), Some(n));
            }
            ("cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver", _, [a, ..]) => {
                let n = self.size_or_least(a);
                return plus(scaled(n, STRING_FACTOR));
            }
            ("ip", Some(_), []) => return plus(1),
            ("ip", _, [a, ..]) => {
                let n = self.size_or_least(a);
                return plus(scaled(n, STRING_FACTOR));
            }
            ("ip.isCanonical", _, [a, ..]) => {
                let n = self.size_or_least(a);
                return plus(scaled(n, 2.0 * STRING_FACTOR));
            }
            ("containsIP" | "containsCIDR", Some(_), [a, ..]) => {
                let mut cost = scaled(32, STRING_FACTOR);
                if name == "containsCIDR" {
                    cost += scaled(16, STRING_FACTOR) + 1;
                }
                if matches!(self.ty(a), String) {
                    cost = cost.saturating_add(scaled(self.size_or_least(a), STRING_FACTOR));
                }
                return plus(cost);
            }
            ("validate", _, [a, ..]) => {
                let n = self.size_or_least(a);
                return plus(scaled(scaled(n, STRING_FACTOR), FORMAT_REGEX * REGEX_FACTOR));
            }
            (
                "masked"
                | "prefixLength"
                | "family"
                | "isUnspecified"
                | "isLoopback"
                | "isLinkLocalMulticast"
                | "isLinkLocalUnicast"
                | "isGlobalUnicast"
                | "format.named"
                | "sign"
                | "asInteger"
                | "isInteger"
                | "asApproximateFloat"
                | "isGreaterThan"
                | "isLessThan"
                | "compareTo"
                | "add"
                | "sub"
                | "major"
                | "minor"
                | "patch"
                | "getScheme"
                | "getHostname"
                | "getHost"
                | "getPort"
                | "getEscapedPath"
                | "getQuery",
                _,
                _,
            ) => return plus(1),
            _ => {}
        }
        // cel-go's costs.
        match (name.as_str(), target, c.args.as_slice()) {
            ("_&&_" | "_||_", None, _) => (args, None),
            ("_?_:_", None, [_, a, b]) => {
                let size = self.size_or_least(a).max(self.size_or_least(b));
                if let Some(en) = Entries::union(self.entries_of(a), self.entries_of(b)) {
                    self.entries.insert(e.id, en);
                }
                (costs[0].saturating_add(costs[1].max(costs[2])), Some(size))
            }
            ("_+_", None, [a, b]) => {
                let (ta, tb) = (self.ty(a), self.ty(b));
                let list = matches!((&ta, &tb), (List(_), List(_)));
                let text = matches!((&ta, &tb), (String, String) | (Bytes, Bytes));
                if !(list || text) {
                    return plus(1);
                }
                let size = self.size_or_least(a).saturating_add(self.size_or_least(b));
                if let Some(en) = Entries::union(self.entries_of(a), self.entries_of(b)) {
                    self.entries.insert(e.id, en);
                }
                let own = if list { 1 } else { scaled(size, STRING_FACTOR) };
                (own.saturating_add(args), Some(size))
            }
            ("_==_" | "_!=_", None, [a, b]) => match (self.ty(a), self.ty(b)) {
                (Opaque(x), Opaque(y)) if x == y => plus(1),
                _ => {
                    let smallest = self.size_or_least(a).min(self.size_or_least(b));
                    plus(scaled(smallest, STRING_FACTOR))
                }
            },
            ("_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) => {
                let (ta, tb) = (self.ty(a), self.ty(b));
                if textual(&ta) || textual(&tb) {
                    let smallest = self.size_or_least(a).min(self.size_or_least(b));
                    plus(scaled(smallest, STRING_FACTOR))
                } else {
                    plus(1)
                }
            }
            ("@in", None, [_, container]) => match self.ty(container) {
                List(_) => plus(self.size_or_least(container)),
                _ => plus(1),
            },
            ("matches", Some(t), [pattern]) => {
                let text = scaled(self.size_or_least(t).saturating_add(1), STRING_FACTOR);
                let regex = scaled(self.size_or_least(pattern), REGEX_FACTOR);
                plus(text.saturating_mul(regex))
            }
            ("contains", Some(t), [part]) if matches!(self.ty(t), String) => {
                let text = scaled(self.size_or_least(t), STRING_FACTOR);
                let part = scaled(self.size_or_least(part), STRING_FACTOR);
                plus(text.saturating_mul(part))
            }
            ("startsWith" | "endsWith", Some(_), [part]) => plus(scaled(self.size_or_least(part), STRING_FACTOR)),
            ("_[_]", None, [container, _]) => {
                let step = match self.ty(container) {
                    List(_) => "@items",
                    Map(..) => "@values",
                    _ => return plus(1),
                };
                let path = self.path(container).append(step);
                self.paths.insert(e.id, path);
                let size = self.entries_of(container).map(|en| en.value);
                (1u64.saturating_add(args), size)
            }
            // Functions cel-go costs by their arguments' sizes, whose exact rules are not
            // followed here, and functions of libraries costed by their own estimators: the
            // least they cost is their arguments'.
            ("bytes" | "string", None, [_]) if arg_ty.iter().any(|t| textual(t) || *t == Dyn) => (args, None),
            ("format" | "strings.quote", _, _) => (args, None),
            (name, _, _) if STANDARD.contains(&name) => plus(1),
            _ => (args, None),
        }
    }
}

/// Functions cel-go costs at one unit beyond their arguments.
const STANDARD: [&str; 35] = [
    "!_",
    "-_",
    "_-_",
    "_*_",
    "_/_",
    "_%_",
    "@not_strictly_false",
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "duration",
    "timestamp",
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
    "charAt",
    "reverse",
    "matches",
    "value",
    "hasValue",
    "orValue",
    "or",
    "optional.of",
];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cel_check::check_typed;

    fn cost(schema: &Value, root: bool, rule: &str) -> u64 {
        let program = crate::validation_rules::compile(rule).expect("compiles");
        let (_, types) = check_typed(&program, rule, Ty::of_schema(schema, root), false).expect("type checks");
        estimate(&program, &types, schema, root)
    }

    fn spec() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "short": {"type": "string", "maxLength": 10},
                "replicas": {"type": "integer"},
                "names": {"type": "array", "items": {"type": "string"}},
                "few": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 8}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }
        })
    }

    #[test]
    fn scalars_cost_their_selections() {
        // self (1) .replicas (1) > 0 (1)
        assert_eq!(cost(&spec(), false, "self.replicas > 0"), 3);
        // has() adds nothing of its own.
        assert_eq!(cost(&spec(), false, "has(self.name)"), 1);
    }

    #[test]
    fn strings_cost_by_their_largest_length() {
        // Equality costs a tenth of the shorter side: 'abc' is 3 characters.
        assert_eq!(cost(&spec(), false, "self.name == 'abc'"), 2 + 1);
        // maxLength 10 counts 40 bytes; against an unbounded string: ceil(4.0) + 4.
        assert_eq!(cost(&spec(), false, "self.short == self.name"), 4 + 4);
        // matches: ceil((3145726 + 1) / 10) * ceil(8 / 4) + 2.
        assert_eq!(cost(&spec(), false, "self.name.matches('^[a-z]+$')"), 314_573 * 2 + 2);
    }

    #[test]
    fn comprehensions_cost_each_item() {
        // Unbounded strings: (3145726) / (2 + 1) items.
        let items = 1_048_575u64;
        // all: range 2, result 1; each item: @not_strictly_false(@result) 2, @result && (x == 'a') 1 + 2.
        assert_eq!(cost(&spec(), false, "self.names.all(x, x == 'a')"), 2 + 1 + items * (2 + 1 + 2));
        // Five items of at most 32 bytes: matches costs ceil(33 / 10) times ceil(2 / 4), and x 1.
        assert_eq!(cost(&spec(), false, "self.few.all(x, x.matches('^a'))"), 2 + 1 + 5 * (2 + 1 + 4 + 1));
    }

    #[test]
    fn two_variable_comprehensions_cost_as_cel_go_s_own() {
        // An unbounded map of strings: 3145726 / (2 + 6) entries, each value 3145726 characters.
        assert_eq!(
            cost(&spec(), false, "self.labels.all(k, v, v.matches('^a'))"),
            2 + 1 + 393_215 * (2 + 1 + 314_573 + 1)
        );
        // transformList builds a list of five items of 33 characters: 2 + 10 + 1 + 5 * 17; then
        // all() over its five items, each 6.
        assert_eq!(cost(&spec(), false, "self.few.transformList(i, v, v + 'x').all(s, s.size() > 0)"), 98 + 1 + 5 * 6);
        // transformMap builds its map with one insertion an entry (1 beyond @result, the key
        // and the value, `v + 'x'` being 4 + 1): 2 + 30 + 1 + 5 * (3 + 5), then size() and the
        // comparison.
        assert_eq!(cost(&spec(), false, "self.few.transformMap(i, v, v + 'x').size() > 0"), 73 + 2);
    }

    #[test]
    fn paths_share_their_arrays_as_cel_go_s_go_slices_do() {
        // `x.b` is appended into the array `x.a` was appended into, before the size of the
        // inner range `x.a` is looked up: kube sizes that range as `b` (an integer: 0 items).
        let s = json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 1000, "items": {
            "type": "object", "properties": {
                "a": {"type": "array", "maxItems": 10000, "items": {"type": "integer"}},
                "b": {"type": "integer"}}}}}});
        assert_eq!(cost(&s, false, "self.l.all(x, x.a.all(y, y == x.b))"), 2 + 1 + 1000 * (2 + 1 + 3));
        // The values' path overwrites the keys' in an array with room: an index is sized as an
        // item (an integer: 0, so `i == 0` costs only its arguments).
        let s = json!({"type": "object", "properties": {"a": {"type": "object", "properties": {
            "l": {"type": "array", "items": {"type": "integer"}}}}}});
        assert_eq!(cost(&s, false, "self.a.l.all(i, v, i == 0)"), 3 + 1 + 1_572_863 * (2 + 1 + 1));
    }

    #[test]
    fn resource_roots_declare_their_type_and_names() {
        let root = json!({"type": "object", "properties": {"metadata": {"type": "object"}, "spec": spec()}});
        // A name counts at most 253 characters: 1012 bytes.
        assert_eq!(cost(&root, true, "self.metadata.name.contains('x')"), 102 + 3);
        assert_eq!(cost(&root, true, "self.kind.contains('x')"), 314_573 + 2);
    }

    #[test]
    fn budgets_are_reported_in_kube_words() {
        assert_eq!(
            over_budget("estimated rule cost", 20_000_000, RULE_LIMIT),
            "estimated rule cost exceeds budget by factor of 2.0x (try simplifying the rule, or adding maxItems, \
             maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
        assert!(over_budget("x", 12_000_000, RULE_LIMIT).contains("factor of 1.200000x"));
        assert!(over_budget("x", u64::MAX, RULE_LIMIT).contains("factor of more than 100x"));
    }
}
