//! Field paths: how a field of an object is named in `metadata.managedFields` and in apply
//! conflicts.
//!
//! A [`PathElement`] selects one child of a value: a field of a map or struct (`f:name`), the
//! element of an associative list whose key fields have given values (`k:{"name":"app"}`), the
//! element of a set with a given value (`v:"example.com/a"`), or an element by its index
//! (`i:0`). A [`Path`] is a sequence of them from the object's root.
//!
//! Invariants: elements are totally ordered as structured-merge-diff orders them (fields, then
//! keys, then values, then indexes; fields by name, keys field by field, values by kind then
//! value), which is the order of the members of a serialized field set. A key's fields are
//! sorted by name. The serialized form of keys and values is the JSON kube-apiserver writes
//! (Go's encoder: `<`, `>` and `&` escaped), so a field set serializes to the same bytes as
//! kube-apiserver's.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt::{self, Write as _};
use std::sync::LazyLock;

use serde_json::{Map, Number, Value};

/// A field name: one the built-in types declare (shared, never copied) or any other.
#[derive(Debug, Clone)]
pub enum Name {
    /// A field name of the built-in schemas.
    Known(&'static str),
    /// Any other name (a map key, a custom resource's field).
    Other(Box<str>),
}

impl Name {
    /// The name of `s`, shared when the built-in schemas declare it.
    pub fn of(s: &str) -> Name {
        static KNOWN: LazyLock<HashSet<&'static str, foldhash::fast::RandomState>> = LazyLock::new(|| {
            let mut names = HashSet::with_hasher(foldhash::fast::RandomState::default());
            for def in crate::schema::builtin().definitions().values() {
                if let Some(props) = def.get("properties").and_then(Value::as_object) {
                    names.extend(props.keys().map(String::as_str));
                }
            }
            names.extend(["apiVersion", "kind", "metadata"]);
            names
        });
        match KNOWN.get(s) {
            Some(k) => Name::Known(k),
            None => Name::Other(s.into()),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Name::Known(s) => s,
            Name::Other(s) => s,
        }
    }
}

impl std::ops::Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

/// One step of a [`Path`].
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A field of a map or struct.
    Field(Name),
    /// The element of an associative list with these key field values (sorted by name).
    Key(Box<[(Box<str>, Value)]>),
    /// The element of a set (a list of scalars) with this value.
    Value(Box<Value>),
    /// An element by its index.
    Index(usize),
}

impl PathElement {
    /// A field element.
    pub fn field(name: &str) -> Self {
        PathElement::Field(Name::of(name))
    }

    /// A key element from key fields in any order.
    pub fn key(mut fields: Vec<(Box<str>, Value)>) -> Self {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields.into_boxed_slice())
    }

    /// The field name, for a field element.
    pub fn as_field(&self) -> Option<&str> {
        match self {
            PathElement::Field(f) => Some(f),
            _ => None,
        }
    }

    /// How the element orders against the field element `name` (without making one).
    pub(crate) fn cmp_field(&self, name: &str) -> Ordering {
        match self {
            PathElement::Field(f) => f.as_str().cmp(name),
            _ => Ordering::Greater,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// About how many bytes [`PathElement::write_key`] writes (exact for fields).
    pub(crate) fn key_len_hint(&self) -> usize {
        match self {
            PathElement::Field(f) => 2 + f.len(),
            _ => 24,
        }
    }

    /// Serializes the element as a key of a `fieldsV1` object (`f:name`, `k:{…}`, `v:…`, `i:3`).
    pub fn write_key(&self, out: &mut String) {
        match self {
            PathElement::Field(f) => {
                out.push_str("f:");
                out.push_str(f);
            }
            PathElement::Key(fields) => {
                out.push_str("k:{");
                for (i, (name, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_go_string(out, name);
                    out.push(':');
                    write_go_json(out, v);
                }
                out.push('}');
            }
            PathElement::Value(v) => {
                out.push_str("v:");
                write_go_json(out, v);
            }
            PathElement::Index(i) => {
                let _ = write!(out, "i:{i}");
            }
        }
    }

    /// Parses a key of a `fieldsV1` object. `Ok(None)` for an element type this server does not
    /// know (skipped, as kube-apiserver skips them); an error for a malformed one.
    pub fn parse_key(s: &str) -> Result<Option<Self>, String> {
        let b = s.as_bytes();
        if b.len() < 2 {
            return Err(format!("key must be 2 characters long: {s}"));
        }
        if b[1] != b':' {
            return Err(format!("missing colon: {s}"));
        }
        let rest = &s[2..];
        Ok(Some(match b[0] {
            b'f' => PathElement::field(rest),
            b'v' => {
                let v: Value = serde_json::from_str(rest).map_err(|e| format!("parsing {s}: {e}"))?;
                PathElement::Value(Box::new(v))
            }
            b'k' => {
                let m: Map<String, Value> = serde_json::from_str(rest).map_err(|e| format!("parsing {s}: {e}"))?;
                PathElement::key(m.into_iter().map(|(k, v)| (k.into_boxed_str(), v)).collect())
            }
            b'i' => PathElement::Index(rest.parse().map_err(|e| format!("parsing {s}: {e}"))?),
            _ => return Ok(None),
        }))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.as_str().cmp(b.as_str()),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b.iter()) {
                    let c = an.cmp(bn).then_with(|| compare_values(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl fmt::Display for PathElement {
    /// The human form kube-apiserver uses in conflicts and validation errors: `.name`,
    /// `[name="app"]`, `[="example.com/a"]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{}", &**name),
            PathElement::Key(fields) => {
                f.write_char('[')?;
                for (i, (name, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_char(',')?;
                    }
                    write!(f, "{name}={}", DisplayValue(v))?;
                }
                f.write_char(']')
            }
            PathElement::Value(v) => write!(f, "[={}]", DisplayValue(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from an object's root.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Path(pub Vec<PathElement>);

impl Path {
    /// A path of field names.
    pub fn fields(names: &[&str]) -> Self {
        Path(names.iter().map(|n| PathElement::field(n)).collect())
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

/// A value as structured-merge-diff prints it in a path: strings quoted as Go quotes them,
/// numbers and booleans as they are, lists in brackets.
struct DisplayValue<'a>(&'a Value);

impl fmt::Display for DisplayValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Number(n) => f.write_str(&go_number(n)),
            Value::String(s) => f.write_str(&go_quote(s)),
            Value::Array(items) => {
                f.write_char('[')?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_char(',')?;
                    }
                    write!(f, "{}", DisplayValue(v))?;
                }
                f.write_char(']')
            }
            Value::Object(m) => {
                for (k, v) in m {
                    write!(f, "{k}={}", DisplayValue(v))?;
                }
                Ok(())
            }
        }
    }
}

/// Go's `%q` of a string: double-quoted, with Go's escapes for what is not printable.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if c.is_control() => {
                let n = c as u32;
                if n < 0x80 {
                    let _ = write!(out, "\\x{n:02x}");
                } else if n < 0x10000 {
                    let _ = write!(out, "\\u{n:04x}");
                } else {
                    let _ = write!(out, "\\U{n:08x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A number as Go prints an `int64` or a `float64` decoded from JSON.
fn go_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or_default();
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        let s = format!("{f:e}");
        // Go writes `1e+21`, Rust `1e21`.
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    }
}

/// Writes a string as Go's JSON encoder does (HTML-safe: `<`, `>`, `&`, U+2028 and U+2029
/// escaped).
pub(crate) fn write_go_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes a value as Go's JSON encoder writes the unstructured form of it (object keys sorted).
pub(crate) fn write_go_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n)),
        Value::String(s) => write_go_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_string(out, k);
                out.push(':');
                write_go_json(out, &m[k]);
            }
            out.push('}');
        }
    }
}

/// structured-merge-diff's total order of values: numbers (compared numerically, integers and
/// floats together), then strings, booleans, lists, maps, and null last.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let c = compare_values(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<(&String, &Value)> = x.iter().collect();
            let mut ys: Vec<(&String, &Value)> = y.iter().collect();
            xs.sort_unstable_by(|p, q| p.0.cmp(q.0));
            ys.sort_unstable_by(|p, q| p.0.cmp(q.0));
            for (p, q) in xs.iter().zip(&ys) {
                let c = p.0.cmp(q.0).then_with(|| compare_values(p.1, q.1));
                if c != Ordering::Equal {
                    return c;
                }
            }
            xs.len().cmp(&ys.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

fn compare_numbers(x: &Number, y: &Number) -> Ordering {
    match (x.as_i64(), y.as_i64()) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => {
            let (a, b) = (x.as_f64().unwrap_or_default(), y.as_f64().unwrap_or_default());
            a.partial_cmp(&b).unwrap_or(Ordering::Equal)
        }
    }
}

/// Whether two values are equal as structured-merge-diff compares them (an integer equals the
/// float of the same value).
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Ordering::Equal,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| values_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(s: &str) -> String {
        let mut out = String::new();
        PathElement::parse_key(s).unwrap().unwrap().write_key(&mut out);
        out
    }

    #[test]
    fn keys_round_trip_in_kube_form() {
        for k in ["f:spec", "k:{\"name\":\"app\"}", "k:{\"containerPort\":80,\"protocol\":\"TCP\"}", "v:\"a\"", "i:3"] {
            assert_eq!(key(k), k);
        }
        // Key fields are sorted; HTML characters escaped as Go escapes them.
        assert_eq!(
            key("k:{\"protocol\":\"TCP\",\"containerPort\":80}"),
            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}"
        );
        assert_eq!(key("v:\"a<b\""), "v:\"a\\u003cb\"");
        assert_eq!(PathElement::parse_key("x:whatever").unwrap(), None);
        assert!(PathElement::parse_key("f").is_err());
        assert!(PathElement::parse_key("k:{oops").is_err());
    }

    #[test]
    fn elements_order_as_structured_merge_diff() {
        let mut v = [
            PathElement::Index(1),
            PathElement::Value(Box::new(json!("b"))),
            PathElement::key(vec![("name".into(), json!("x"))]),
            PathElement::field("b"),
            PathElement::Value(Box::new(json!(2))),
            PathElement::field("a"),
        ];
        v.sort();
        let text: Vec<String> = v.iter().map(ToString::to_string).collect();
        assert_eq!(text, [".a", ".b", "[name=\"x\"]", "[=2]", "[=\"b\"]", "[1]"]);
    }

    #[test]
    fn paths_print_as_in_conflicts() {
        let p = Path(vec![
            PathElement::field("spec"),
            PathElement::field("containers"),
            PathElement::key(vec![("name".into(), json!("app"))]),
            PathElement::field("image"),
        ]);
        assert_eq!(p.to_string(), ".spec.containers[name=\"app\"].image");
        assert!(values_equal(&json!(1), &json!(1.0)));
        assert_eq!(go_number(&serde_json::Number::from_f64(1e21).unwrap()), "1e+21");
    }
}
