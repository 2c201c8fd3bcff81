//! Type checking of validation rules against the schema they sit on, as kube-apiserver checks
//! them when a CustomResourceDefinition is written: `self` and `oldSelf` have the type of the
//! rule's node, a selected field must be one of the object's properties (named as CEL names
//! them: `-` as `__dash__`, `.` as `__dot__`, `/` as `__slash__`, `__` as `__underscores__`, a
//! CEL keyword `k` as `__k__`), names must be declared, operators must be given operands of
//! types they take, and a comprehension must range over a list or a map.
//!
//! Invariants: an error is reported only where the types are certain, so a rule kube accepts
//! is never refused here. What the schema leaves open (`x-kubernetes-int-or-string`,
//! `x-kubernetes-preserve-unknown-fields`, embedded resources, `duration` strings) and what a
//! function not typed here returns are `dyn`, which goes with anything, and an expression that
//! already failed is not reported again by the expressions around it. Errors are cel-go's
//! text, sorted by where they occur, each with its source line and a caret under the place.

use cel::Program;
use cel::common::ast::{EntryExpr, Expr, LiteralValue};
use cel::parser::Expression;
use serde_json::Value;

/// The type of a CEL expression over a schema's values.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ty<'s> {
    /// Any type: left open by the schema, or not known here.
    Dyn,
    /// The type of an expression already reported as wrong.
    Error,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Timestamp,
    Duration,
    /// A type value, such as `int`.
    Type,
    List(Box<Ty<'s>>),
    Map(Box<Ty<'s>>, Box<Ty<'s>>),
    /// An object of the schema: its properties are its fields.
    Object(&'s Value),
    /// The resource itself: its properties, `apiVersion`, `kind` and `metadata`.
    Root(&'s Value),
    /// The resource's `metadata`: only `name` and `generateName`.
    RootMetadata,
    Optional(Box<Ty<'s>>),
    /// A library's own type, by its CEL name (`kubernetes.NamedFormat`).
    Opaque(&'static str),
}

impl std::fmt::Display for Ty<'_> {
    /// The type as cel-go writes it in errors.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ty::Dyn => f.write_str("dyn"),
            Ty::Error => f.write_str("*error*"),
            Ty::Null => f.write_str("null_type"),
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::String => f.write_str("string"),
            Ty::Bytes => f.write_str("bytes"),
            Ty::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Ty::Duration => f.write_str("google.protobuf.Duration"),
            Ty::Type => f.write_str("type"),
            Ty::List(t) => write!(f, "list({t})"),
            Ty::Map(k, v) => write!(f, "map({k}, {v})"),
            Ty::Object(_) | Ty::Root(_) | Ty::RootMetadata => f.write_str("object"),
            Ty::Optional(t) => write!(f, "optional_type({t})"),
            Ty::Opaque(name) => f.write_str(name),
        }
    }
}

impl<'s> Ty<'s> {
    /// The type of the values `node` admits; `root` for the resource's own schema.
    pub(crate) fn of_schema(node: &'s Value, root: bool) -> Ty<'s> {
        if root {
            return Ty::Root(node);
        }
        let Some(m) = node.as_object() else { return Ty::Dyn };
        let flag = |k: &str| m.get(k).and_then(Value::as_bool) == Some(true);
        if flag("x-kubernetes-int-or-string")
            || flag("x-kubernetes-preserve-unknown-fields")
            || flag("x-kubernetes-embedded-resource")
        {
            return Ty::Dyn;
        }
        match m.get("type").and_then(Value::as_str) {
            Some("object") => match m.get("additionalProperties") {
                Some(add) if add.is_object() => Ty::Map(Box::new(Ty::String), Box::new(Ty::of_schema(add, false))),
                _ => Ty::Object(node),
            },
            Some("array") => Ty::List(Box::new(
                m.get("items").filter(|i| i.is_object()).map_or(Ty::Dyn, |i| Ty::of_schema(i, false)),
            )),
            Some("string") => match m.get("format").and_then(Value::as_str) {
                Some("date-time" | "date") => Ty::Timestamp,
                Some("byte") => Ty::Bytes,
                Some("duration") => Ty::Dyn,
                _ => Ty::String,
            },
            Some("integer") => Ty::Int,
            Some("number") => Ty::Double,
            Some("boolean") => Ty::Bool,
            _ => Ty::Dyn,
        }
    }

    /// Whether the type is unknown here: anything goes with it.
    fn open(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::Error)
    }

    fn numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }

    /// The type of field `name` of an object, `None` when it has no such field; `Some(Dyn)`
    /// where the type does not say.
    fn field(&self, name: &str) -> Option<Ty<'s>> {
        let of_properties = |node: &'s Value| {
            node.get("properties").and_then(Value::as_object).and_then(|props| {
                props.iter().find(|(k, _)| escape(k).as_deref() == Some(name)).map(|(_, s)| Ty::of_schema(s, false))
            })
        };
        match self {
            Ty::Object(node) => of_properties(node),
            Ty::Root(node) => match name {
                "apiVersion" | "kind" => Some(Ty::String),
                "metadata" => Some(Ty::RootMetadata),
                _ => of_properties(node).or_else(|| {
                    let open = node.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool);
                    (open == Some(true)).then_some(Ty::Dyn)
                }),
            },
            Ty::RootMetadata => matches!(name, "name" | "generateName").then_some(Ty::String),
            _ => Some(Ty::Dyn),
        }
    }
}

/// `name` as CEL names a property, as kube escapes it; `None` for a name CEL cannot reach.
pub(crate) fn escape(name: &str) -> Option<String> {
    const KEYWORDS: [&str; 21] = [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if KEYWORDS.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// The types of an expression's parts, by expression id.
pub(crate) type Types<'s> = std::collections::HashMap<u64, Ty<'s>>;

/// Checks `program` (compiled from `source`) with `self_ty` as the type of `self` and of
/// `oldSelf` (an optional of it with `optional_old_self`): the type of its result and of each
/// of its parts, or cel-go's errors.
pub(crate) fn check_typed<'s>(
    program: &Program,
    source: &str,
    self_ty: Ty<'s>,
    optional_old_self: bool,
) -> Result<(Ty<'s>, Types<'s>), String> {
    let old_ty = if optional_old_self { Ty::Optional(Box::new(self_ty.clone())) } else { self_ty.clone() };
    run(program, source, vec![("self".into(), self_ty), ("oldSelf".into(), old_ty)])
}

/// Checks `program` (compiled from `source`) where only `names` are declared, each of type
/// `dyn` (an admission policy's `object`, `request`…): the type of its result, or cel-go's
/// errors.
pub(crate) fn check_declared(program: &Program, source: &str, names: &[&str]) -> Result<Ty<'static>, String> {
    run(program, source, names.iter().map(|n| (n.to_string(), Ty::Dyn)).collect()).map(|(t, _)| t)
}

/// Checks `program` (compiled from `source`) where `scopes` are declared with their types: the
/// type of its result, or cel-go's errors.
pub(crate) fn check_scoped<'s>(
    program: &Program,
    source: &str,
    scopes: Vec<(String, Ty<'s>)>,
) -> Result<Ty<'s>, String> {
    run(program, source, scopes).map(|(t, _)| t)
}

/// Checks `program` with `scopes` declared: its type, or its errors sorted by place.
fn run<'s>(program: &Program, source: &str, scopes: Vec<(String, Ty<'s>)>) -> Result<(Ty<'s>, Types<'s>), String> {
    let mut checker = Checker { program, scopes, errors: Vec::new(), pairs: Vec::new(), types: Types::new() };
    let ty = checker.expr(program.expression());
    if checker.errors.is_empty() {
        return Ok((ty, checker.types));
    }
    checker.errors.sort_by_key(|(offset, _)| *offset);
    let shown: Vec<String> = checker.errors.iter().map(|(offset, message)| display(source, *offset, message)).collect();
    Err(shown.join("\n"))
}

/// An error as cel-go shows it: `ERROR: <input>:line:column: message`, the source line and a
/// caret under the character at byte `offset`.
fn display(source: &str, offset: usize, message: &str) -> String {
    // The parser's offsets count bytes; cel-go's columns count characters.
    let mut end = offset.min(source.len());
    while !source.is_char_boundary(end) {
        end -= 1;
    }
    let before = &source[..end];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count();
    display_at(source, line, column, message)
}

/// An error at `line` (from 1) and `column` (from 0) as cel-go shows it.
pub(crate) fn display_at(source: &str, line: usize, column: usize, message: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{}: {message}", column + 1);
    if let Some(text) = source.split('\n').nth(line.saturating_sub(1)) {
        out.push_str(&format!("\n | {}\n | {}^", text.replace('\t', " "), ".".repeat(column)));
    }
    out
}

struct Checker<'p, 's> {
    program: &'p Program,
    /// Declared names, innermost last.
    scopes: Vec<(String, Ty<'s>)>,
    /// Errors with the offset they are reported at.
    errors: Vec<(usize, String)>,
    /// The types of the halves of the pairs a two-variable comprehension iterates (see
    /// `cel_comprehension`), innermost last.
    pairs: Vec<(Ty<'s>, Ty<'s>)>,
    /// The type found for each expression, by id.
    types: Types<'s>,
}

/// Names of types, which are values of type `type`.
const TYPE_NAMES: [&str; 11] =
    ["bool", "bytes", "double", "int", "list", "map", "null_type", "optional_type", "string", "type", "uint"];

/// The packages of kube's CEL environment, whose qualified names are not declared variables.
const PACKAGES: [&str; 12] =
    ["base64", "cidr", "format", "google", "ip", "kubernetes", "lists", "math", "net", "optional", "sets", "strings"];

impl<'s> Checker<'_, 's> {
    fn report(&mut self, id: u64, message: String) -> Ty<'s> {
        let offset = self.program.source_info().offset_for(id).map_or(0, |(start, _)| start as usize);
        self.errors.push((offset, message));
        Ty::Error
    }

    fn no_overload(&mut self, id: u64, function: &str, target: Option<&Ty<'s>>, args: &[Ty<'s>]) -> Ty<'s> {
        let args: Vec<String> = args.iter().map(ToString::to_string).collect();
        let target = target.map(|t| format!("{t}.")).unwrap_or_default();
        self.report(
            id,
            format!("found no matching overload for '{function}' applied to '{target}({})'", args.join(", ")),
        )
    }

    fn lookup(&self, name: &str) -> Option<Ty<'s>> {
        self.scopes.iter().rev().find(|(n, _)| n == name).map(|(_, t)| t.clone())
    }

    fn expr(&mut self, e: &Expression) -> Ty<'s> {
        let t = self.typed(e);
        self.types.insert(e.id, t.clone());
        t
    }

    fn typed(&mut self, e: &Expression) -> Ty<'s> {
        match &e.expr {
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::Uint,
            },
            Expr::Ident(name) => match self.lookup(name) {
                Some(t) => t,
                None if TYPE_NAMES.contains(&name.as_str()) => Ty::Type,
                None => self.report(e.id, format!("undeclared reference to '{name}' (in container '')")),
            },
            Expr::Select(s) => {
                // A package's qualified name (`google.protobuf.Timestamp`, `net.IP`) is left to
                // evaluation.
                if let Expr::Ident(name) = &s.operand.expr
                    && self.lookup(name).is_none()
                    && PACKAGES.contains(&name.as_str())
                {
                    return Ty::Dyn;
                }
                let operand = self.expr(&s.operand);
                let field = self.select(e.id, &operand, &s.field);
                if s.test { if field == Ty::Error { Ty::Error } else { Ty::Bool } } else { field }
            }
            Expr::Call(c) => {
                // A call on a package's name is a namespaced function (`sets.contains`).
                let target = match c.target.as_deref() {
                    Some(t) => match &t.expr {
                        Expr::Ident(name) if self.lookup(name).is_none() && PACKAGES.contains(&name.as_str()) => None,
                        _ => Some(self.expr(t)),
                    },
                    None => None,
                };
                let args: Vec<Ty<'s>> = c.args.iter().map(|a| self.expr(a)).collect();
                self.call(e, &c.func_name, target, args)
            }
            Expr::Comprehension(c) => {
                let (range, pair) = match crate::cel_comprehension::pairs_target(&c.iter_range) {
                    Some(target) => self.pairs_range(target),
                    None => (self.expr(&c.iter_range), None),
                };
                let bound = self.bound_half(&c.iter_range);
                let (first, second) = match &range {
                    _ if bound.is_some() => (bound.unwrap_or(Ty::Dyn), Ty::Dyn),
                    Ty::List(t) => (if c.iter_var2.is_some() { Ty::Int } else { (**t).clone() }, (**t).clone()),
                    Ty::Map(k, v) => ((**k).clone(), (**v).clone()),
                    t if t.numeric() || matches!(t, Ty::Bool | Ty::String | Ty::Bytes | Ty::Null) => {
                        self.report(
                            c.iter_range.id,
                            format!(
                                "expression of type '{t}' cannot be range of a comprehension (must be list, map, or dynamic)"
                            ),
                        );
                        (Ty::Error, Ty::Error)
                    }
                    _ => (Ty::Dyn, Ty::Dyn),
                };
                let init = self.expr(&c.accu_init);
                let pairs_depth = self.pairs.len();
                if let Some(p) = pair {
                    self.pairs.push(p);
                }
                let depth = self.scopes.len();
                self.scopes.push((c.accu_var.clone(), init.clone()));
                self.scopes.push((c.iter_var.clone(), first));
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((v2.clone(), second));
                }
                self.expr(&c.loop_cond);
                let step = self.expr(&c.loop_step);
                self.scopes.truncate(depth);
                // A binding's result is its body's; a fold's accumulator keeps its initial type
                // where the step's is open.
                let accu = if step.open() && c.accu_var != crate::cel_comprehension::BOUND { init } else { step };
                self.scopes.push((c.accu_var.clone(), accu));
                let result = self.expr(&c.result);
                self.scopes.truncate(depth);
                self.pairs.truncate(pairs_depth);
                result
            }
            Expr::List(l) => {
                let items: Vec<Ty<'s>> = l.elements.iter().map(|i| self.expr(i)).collect();
                Ty::List(Box::new(common(&items)))
            }
            Expr::Map(m) => {
                let mut keys = Vec::new();
                let mut values = Vec::new();
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        keys.push(self.expr(&me.key));
                        values.push(self.expr(&me.value));
                    }
                }
                Ty::Map(Box::new(common(&keys)), Box::new(common(&values)))
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.expr(&f.value);
                    }
                }
                Ty::Dyn
            }
            Expr::Unspecified => Ty::Dyn,
        }
    }

    /// The range of a two-variable comprehension over `target` (see `cel_comprehension`): its
    /// type, a list of pairs, and the types of the pairs' halves (index and element, key and
    /// value); a scalar is refused in cel-go's words.
    fn pairs_range(&mut self, target: &Expression) -> (Ty<'s>, Option<(Ty<'s>, Ty<'s>)>) {
        let t = self.expr(target);
        let halves = match &t {
            Ty::Error => return (Ty::Error, None),
            t if t.numeric() || matches!(t, Ty::Bool | Ty::String | Ty::Bytes | Ty::Null) => {
                let message = format!(
                    "expression of type '{t}' cannot be range of a comprehension (must be list, map, or dynamic)"
                );
                return (self.report(target.id, message), None);
            }
            Ty::List(e) => (Ty::Int, (**e).clone()),
            Ty::Map(k, v) => ((**k).clone(), (**v).clone()),
            _ => (Ty::Dyn, Ty::Dyn),
        };
        (Ty::List(Box::new(Ty::List(Box::new(Ty::Dyn)))), Some(halves))
    }

    /// The type of the half of the current pair that a one-element range `[@pair[i]]` binds
    /// (the binding of a two-variable comprehension's names), if `range` is one.
    fn bound_half(&self, range: &Expression) -> Option<Ty<'s>> {
        let half = crate::cel_comprehension::bound_half(range)?;
        let (first, second) = self.pairs.last()?;
        Some(if half == 0 { first.clone() } else { second.clone() })
    }

    /// The type of `operand.field`.
    fn select(&mut self, id: u64, operand: &Ty<'s>, field: &str) -> Ty<'s> {
        match operand {
            Ty::Object(_) | Ty::Root(_) | Ty::RootMetadata => match operand.field(field) {
                Some(t) => t,
                None => self.report(id, format!("undefined field '{field}'")),
            },
            Ty::Map(_, v) => (**v).clone(),
            Ty::Optional(inner) => match self.select(id, inner, field) {
                Ty::Error => Ty::Error,
                t => Ty::Optional(Box::new(t)),
            },
            Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Bytes | Ty::List(_) => {
                self.report(id, format!("type '{operand}' does not support field selection"))
            }
            _ => Ty::Dyn,
        }
    }

    fn call(&mut self, e: &Expression, function: &str, target: Option<Ty<'s>>, args: Vec<Ty<'s>>) -> Ty<'s> {
        use Ty::*;
        let id = e.id;
        if args.iter().chain(target.iter()).any(|t| *t == Error) {
            return Error;
        }
        let kind_of = |t: &Ty<'s>| -> u8 {
            match t {
                Int | Uint | Double => 1,
                String => 2,
                Bool => 3,
                Bytes => 4,
                Timestamp => 5,
                Duration => 6,
                List(_) => 7,
                Map(..) => 8,
                _ => 0,
            }
        };
        match (function, target.as_ref(), args.as_slice()) {
            ("_&&_" | "_||_", None, [_, _]) => {
                // cel-go types a logical operator's operands one by one.
                let Expr::Call(c) = &e.expr else { return Bool };
                let mut result = Bool;
                for (arg, t) in c.args.iter().zip(&args) {
                    if !(t.open() || *t == Bool) {
                        result = self.report(arg.id, format!("expected type 'bool' but found '{t}'"));
                    }
                }
                result
            }
            ("!_", None, [a]) => {
                if a.open() || *a == Bool {
                    Bool
                } else {
                    self.no_overload(id, function, None, &args)
                }
            }
            ("_?_:_", None, [c, a, b]) => {
                if !(c.open() || *c == Bool) {
                    return self.no_overload(id, function, None, &args);
                }
                if a == b { a.clone() } else { Dyn }
            }
            ("_==_" | "_!=_", None, [a, b]) => {
                let (ka, kb) = (kind_of(a), kind_of(b));
                if ka != 0 && kb != 0 && ka != kb { self.no_overload(id, function, None, &args) } else { Bool }
            }
            ("_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) => {
                let unordered = |t: &Ty<'s>| matches!(kind_of(t), 7 | 8);
                let (ka, kb) = (kind_of(a), kind_of(b));
                if unordered(a) || unordered(b) || ka != 0 && kb != 0 && ka != kb {
                    self.no_overload(id, function, None, &args)
                } else {
                    Bool
                }
            }
            ("@in", None, [_, container]) => match container {
                List(_) | Map(..) | Dyn => Bool,
                t if kind_of(t) != 0 => self.no_overload(id, function, None, &args),
                _ => Bool,
            },
            ("_+_" | "_-_" | "_*_" | "_/_" | "_%_", None, [a, b]) => self.arithmetic(id, function, a, b),
            ("-_", None, [a]) => match a {
                Int | Double | Duration | Dyn => a.clone(),
                t if kind_of(t) != 0 => self.no_overload(id, function, None, &args),
                _ => Dyn,
            },
            ("_[_]", None, [container, _]) => match container {
                List(t) => (**t).clone(),
                Map(_, v) => (**v).clone(),
                Int | Uint | Double | Bool | String | Bytes | Timestamp | Duration => {
                    self.no_overload(id, function, None, &args)
                }
                _ => Dyn,
            },
            ("_?._", None, [operand, _]) => {
                let Expr::Call(c) = &e.expr else { return Dyn };
                let Some(Expr::Literal(LiteralValue::String(field))) = c.args.get(1).map(|a| &a.expr) else {
                    return Dyn;
                };
                let field = field.inner().to_string();
                match self.select(id, operand, &field) {
                    Error => Error,
                    Optional(t) => Optional(t),
                    t => Optional(Box::new(t)),
                }
            }
            ("size", None, [a]) | ("size", Some(a), []) => match a {
                String | Bytes | List(_) | Map(..) | Dyn => Int,
                _ if kind_of(a) != 0 => {
                    if target.is_some() {
                        self.no_overload(id, function, Some(a), &[])
                    } else {
                        self.no_overload(id, function, None, &args)
                    }
                }
                _ => Int,
            },
            (
                "startsWith"
                | "endsWith"
                | "contains"
                | "matches"
                | "isSorted"
                | "hasValue"
                | "@not_strictly_false"
                | "equivalent"
                | "intersects"
                | "bool",
                _,
                _,
            ) => Bool,
            (
                "indexOf" | "lastIndexOf" | "int" | "getFullYear" | "getMonth" | "getDate" | "getDayOfMonth"
                | "getDayOfWeek" | "getDayOfYear" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds",
                _,
                _,
            ) => Int,
            (
                "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring" | "charAt" | "format" | "join"
                | "string" | "find" | "quote",
                _,
                _,
            ) => String,
            (
                "isQuantity"
                | "isInteger"
                | "isGreaterThan"
                | "isLessThan"
                | "isURL"
                | "isIP"
                | "isCanonical"
                | "isUnspecified"
                | "isLoopback"
                | "isLinkLocalMulticast"
                | "isLinkLocalUnicast"
                | "isGlobalUnicast"
                | "isCIDR"
                | "containsIP"
                | "containsCIDR",
                _,
                _,
            ) => Bool,
            ("asInteger" | "compareTo" | "sign" | "family" | "prefixLength" | "major" | "minor" | "patch", _, _) => Int,
            ("isSemver", _, _) => Bool,
            // kube's format library: `format.<name>()` is a format, `format.named(s)` an optional
            // one, and a format's `validate` gives the faults, if any.
            (f, None, []) if crate::cel_format::FORMATS.contains(&f) => Opaque(crate::cel_format::NAME),
            ("named", None, [String | Dyn]) => Optional(Box::new(Opaque(crate::cel_format::NAME))),
            ("validate", Some(Opaque(_) | Dyn), [String | Dyn]) => Optional(Box::new(List(Box::new(String)))),
            ("validate", Some(t), _) => self.no_overload(id, function, Some(t), &args),
            ("getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath", _, _) => String,
            ("asApproximateFloat", _, _) => Double,
            ("getQuery", _, _) => Map(Box::new(String), Box::new(List(Box::new(String)))),
            ("split" | "findAll", _, _) => List(Box::new(String)),
            ("uint", _, _) => Uint,
            ("double", _, _) => Double,
            ("bytes", _, _) => Bytes,
            ("timestamp", _, _) => Timestamp,
            ("duration", _, _) => Duration,
            ("type", _, _) => Type,
            ("sum" | "min" | "max", Some(List(t)), []) => (**t).clone(),
            ("value", Some(Optional(t)), []) => (**t).clone(),
            ("orValue", Some(Optional(t)), [other]) if **t == *other => other.clone(),
            ("of" | "ofNonZeroValue", None, [a]) => Optional(Box::new(a.clone())),
            _ => Dyn,
        }
    }

    fn arithmetic(&mut self, id: u64, function: &str, a: &Ty<'s>, b: &Ty<'s>) -> Ty<'s> {
        use Ty::*;
        if a.open() || b.open() {
            return Dyn;
        }
        let result = match (function, a, b) {
            (_, Int, Int) | (_, Uint, Uint) => Some(a.clone()),
            ("_+_" | "_-_" | "_*_" | "_/_", Double, Double) => Some(Double),
            ("_+_", String, String) | ("_+_", Bytes, Bytes) => Some(a.clone()),
            ("_+_", List(x), List(y)) => Some(List(Box::new(if x == y { (**x).clone() } else { Dyn }))),
            ("_+_", Timestamp, Duration) | ("_+_", Duration, Timestamp) | ("_-_", Timestamp, Duration) => {
                Some(Timestamp)
            }
            ("_+_" | "_-_", Duration, Duration) | ("_-_", Timestamp, Timestamp) => Some(Duration),
            _ => None,
        };
        let known = |t: &Ty<'s>| !matches!(t, Object(_) | Root(_) | RootMetadata | Optional(_) | Type | Null);
        match result {
            Some(t) => t,
            None if known(a) && known(b) => self.no_overload(id, function, None, &[a.clone(), b.clone()]),
            None => Dyn,
        }
    }
}

/// The type of a list literal's items or a map literal's keys or values: theirs if all share
/// it, else `dyn`.
fn common<'s>(types: &[Ty<'s>]) -> Ty<'s> {
    match types.split_first() {
        Some((first, rest)) if rest.iter().all(|t| t == first) => first.clone(),
        _ => Ty::Dyn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> Value {
        json!({"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "name": {"type": "string"},
            "x-y": {"type": "integer"},
            "when": {"type": "string", "format": "date-time"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "count": {"type": "integer"}}}},
            "port": {"x-kubernetes-int-or-string": true},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }})
    }

    fn run(schema: &Value, root: bool, rule: &str) -> Result<String, String> {
        let program = crate::validation_rules::compile(rule)?;
        check_typed(&program, rule, Ty::of_schema(schema, root), false).map(|(t, _)| t.to_string())
    }

    #[test]
    fn rules_kube_accepts_type_check() {
        let s = spec();
        for rule in [
            "self.replicas > 0 && self.name.startsWith('a')",
            "self.x__dash__y == 1",
            "has(self.name) ? self.name.size() < 10 : true",
            "self.labels.all(k, k.size() < 64 && self.labels[k] != '')",
            "self.items.all(i, i.name != '' && i.count >= 0)",
            "self.items.map(i, i.count).sum() < 100",
            "self.items.exists_one(i, i.name == 'main')",
            "self.items.filter(i, i.count > 1).size() <= 3",
            "self.port == 80 || self.port == 'http'",
            "self.free.anything.goes > 1",
            "self.when < timestamp('2030-01-01T00:00:00Z')",
            "self.replicas < 10.0 && self.replicas > 2u",
            "self.labels.all(k, v, k.size() < 64 && v != '')",
            "self.items.exists(i, item, i > 0 && item.name == 'x')",
            "self.when < google.protobuf.Timestamp{seconds: 1}",
            "sets.contains(['a', 'b'], [self.name])",
            "self == oldSelf",
            "type(self.replicas) == int",
            "self.name in ['a', 'b'] && 'a' in self.labels",
            "quantity(self.name).isLessThan(quantity('1Gi')) && quantity(self.name).compareTo(quantity('1')) > 0",
            "isURL(self.name) && url(self.name).getScheme() == 'https'",
            "cidr('10.0.0.0/8').containsIP(self.name) && ip(self.name).family() == 4",
            "!format.dns1123Label().validate(self.name).hasValue()",
            "format.named('labelValue').value().validate(self.name).orValue([]).size() == 0",
        ] {
            assert_eq!(run(&s, false, rule), Ok("bool".to_string()), "{rule}");
        }
        // A format's faults are an optional list, not a bool.
        assert_eq!(
            run(&s, false, "format.dns1123Label().validate(self.name)"),
            Ok("optional_type(list(string))".into())
        );
    }

    #[test]
    fn undefined_fields_and_names_are_cel_go_s_errors() {
        let s = spec();
        assert_eq!(
            run(&s, false, "self.replica > 0"),
            Err("ERROR: <input>:1:5: undefined field 'replica'\n | self.replica > 0\n | ....^".into())
        );
        assert_eq!(
            run(&s, false, "has(self.nme)"),
            Err("ERROR: <input>:1:4: undefined field 'nme'\n | has(self.nme)\n | ...^".into())
        );
        assert_eq!(
            run(&s, false, "self.items.all(i, i.nme != '')"),
            Err("ERROR: <input>:1:20: undefined field 'nme'\n | self.items.all(i, i.nme != '')\n | ...................^".into())
        );
        assert_eq!(
            run(&s, false, "replicas > 0"),
            Err("ERROR: <input>:1:1: undeclared reference to 'replicas' (in container '')\n | replicas > 0\n | ^"
                .into())
        );
        assert_eq!(
            run(&s, false, "format.named('labelValue').validate(self.name)"),
            Err("ERROR: <input>:1:36: found no matching overload for 'validate' applied to 'optional_type(kubernetes.NamedFormat).(string)'\n | format.named('labelValue').validate(self.name)\n | ...................................^".into())
        );
        assert_eq!(
            run(&s, false, "self.replicas.all(k, v, true)"),
            Err("ERROR: <input>:1:5: expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)\n | self.replicas.all(k, v, true)\n | ....^".into())
        );
        assert_eq!(
            run(&s, false, "self.items.all(i, item, item.nme != '')"),
            Err("ERROR: <input>:1:29: undefined field 'nme'\n | self.items.all(i, item, item.nme != '')\n | ............................^".into())
        );
        assert_eq!(
            run(&s, false, "self.labels.exists(k, v, k.size() > v)"),
            Err("ERROR: <input>:1:35: found no matching overload for '_>_' applied to '(int, string)'\n | self.labels.exists(k, v, k.size() > v)\n | ..................................^".into())
        );
        // Errors come in the order of their places.
        assert_eq!(
            run(&s, false, "self.a == 1 && self.b == 2"),
            Err("ERROR: <input>:1:5: undefined field 'a'\n | self.a == 1 && self.b == 2\n | ....^\n\
                 ERROR: <input>:1:20: undefined field 'b'\n | self.a == 1 && self.b == 2\n | ...................^"
                .into())
        );
        // At the root, metadata holds only the names.
        let root = json!({"type": "object", "properties": {"spec": s}});
        assert_eq!(run(&root, true, "self.metadata.name.startsWith('a') && self.kind == 'K'"), Ok("bool".into()));
        assert_eq!(
            run(&root, true, "size(self.metadata.labels) > 0"),
            Err("ERROR: <input>:1:19: undefined field 'labels'\n | size(self.metadata.labels) > 0\n | ..................^"
                .into())
        );
    }

    #[test]
    fn operands_of_the_wrong_type_are_refused() {
        let s = spec();
        assert_eq!(
            run(&s, false, "self.replicas == true"),
            Err("ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, bool)'\n | self.replicas == true\n | ..............^".into())
        );
        assert_eq!(
            run(&s, false, "self.name > 1"),
            Err("ERROR: <input>:1:11: found no matching overload for '_>_' applied to '(string, int)'\n | self.name > 1\n | ..........^".into())
        );
        assert_eq!(
            run(&s, false, "self.replicas && true"),
            Err("ERROR: <input>:1:5: expected type 'bool' but found 'int'\n | self.replicas && true\n | ....^".into())
        );
        assert_eq!(
            run(&s, false, "self.replicas.size() > 1"),
            Err("ERROR: <input>:1:19: found no matching overload for 'size' applied to 'int.()'\n | self.replicas.size() > 1\n | ..................^".into())
        );
        assert_eq!(
            run(&s, false, "self.replicas + 1.5 > 2.0"),
            Err("ERROR: <input>:1:15: found no matching overload for '_+_' applied to '(int, double)'\n | self.replicas + 1.5 > 2.0\n | ..............^".into())
        );
        assert_eq!(
            run(&s, false, "self.name.first == 'a'"),
            Err("ERROR: <input>:1:10: type 'string' does not support field selection\n | self.name.first == 'a'\n | .........^".into())
        );
        assert_eq!(
            run(&s, false, "self.replicas.all(x, x > 0)"),
            Err("ERROR: <input>:1:5: expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)\n | self.replicas.all(x, x > 0)\n | ....^".into())
        );
    }

    #[test]
    fn the_result_type_is_known() {
        let s = spec();
        assert_eq!(run(&s, false, "self.replicas + 1"), Ok("int".into()));
        assert_eq!(run(&s, false, "self.items.map(i, i.name)"), Ok("list(dyn)".into()));
        assert_eq!(run(&s, false, "self.items.map(i, i.name) + ['x']"), Ok("list(dyn)".into()));
        assert_eq!(run(&s, false, "self.port"), Ok("dyn".into()));
        assert_eq!(run(&s, false, "quantity(self.name).compareTo(quantity('1'))"), Ok("int".into()));
        assert_eq!(run(&s, false, "url(self.name).getQuery()"), Ok("map(string, list(string))".into()));
    }

    #[test]
    fn property_names_escape_as_kube_escapes_them() {
        assert_eq!(escape("x-y").as_deref(), Some("x__dash__y"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("plain_name1").as_deref(), Some("plain_name1"));
        assert_eq!(escape("1st"), None);
        assert_eq!(escape("a b"), None);
    }
}
