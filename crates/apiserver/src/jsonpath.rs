//! client-go's JSONPath, as kube-apiserver evaluates a CustomResourceDefinition's
//! `additionalPrinterColumns` (missing keys allowed): fields (`.a.b`, `['key.with.dots']`, keys
//! in brackets single-quoted), `.*` (a map's values or a list's elements), indexes and slices
//! (`[0]`, `[-1]`, `[1:3]`, `[-2:]`, `[::2]`, and `[*]`, which is `[:]`: a list's elements, a
//! map fails), unions (`[0,2]`, `['a','b']`), recursive descent (`..name`) and filters
//! (`[?(@.type=="Ready")]`, `!=`, `<`, `<=`, `>`, `>=`, and `[?(@.ready)]` for presence, where
//! an operand that cannot be read is absent) against strings, numbers and booleans. Filters
//! nest at most eight deep (client-go's parser does not nest them).
//!
//! Invariants: evaluation never panics; a path client-go cannot parse, or whose evaluation fails
//! (an index out of bounds, a filter over a value that is not a list, values compared across
//! types), selects nothing, as the column's cell is then empty; map values come in key order.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    /// `*`: every value of a map, every element of a list.
    All,
    /// `..`: the value and everything below it.
    Descend,
    /// `[a:b:c]` (an index is the slice of one, derived from it).
    Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: Option<i64>,
        index: bool,
    },
    Union(Vec<Step>),
    Filter(Filter),
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    /// `@.a.b` (relative to the element), as steps.
    Path(Vec<Step>),
    Literal(Value),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: Operand,
    /// None: the presence filter `[?(@.a)]`.
    compare: Option<(Op, Operand)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Why an evaluation selects nothing (client-go's errors, not reported).
struct Fails;

/// How deeply filters may nest (client-go's parser does not nest them at all).
const MAX_DEPTH: usize = 8;

fn parse(path: &str) -> Option<Vec<Step>> {
    let p = path.trim();
    let p = p.strip_prefix('{').and_then(|p| p.strip_suffix('}')).unwrap_or(p).trim();
    let p = p.strip_prefix('$').unwrap_or(p);
    parse_steps(p, 0)
}

fn parse_steps(p: &str, depth: usize) -> Option<Vec<Step>> {
    if depth > MAX_DEPTH {
        return None;
    }
    let b = p.as_bytes();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'.' if b.get(i + 1) == Some(&b'.') => {
                steps.push(Step::Descend);
                i += 2;
                i = parse_name(p, i, &mut steps);
            }
            b'.' => {
                i = parse_name(p, i + 1, &mut steps);
            }
            b'[' => {
                let end = closing_bracket(p, i)?;
                steps.push(parse_bracket(p[i + 1..end].trim(), depth)?);
                i = end + 1;
            }
            b'*' => {
                steps.push(Step::All);
                i += 1;
            }
            _ => return None,
        }
    }
    Some(steps)
}

/// A field name from `i` (up to the next `.` or `[`), pushed as a step; where it ends.
fn parse_name(p: &str, i: usize, steps: &mut Vec<Step>) -> usize {
    let b = p.as_bytes();
    let mut j = i;
    while j < b.len() && b[j] != b'.' && b[j] != b'[' {
        j += 1;
    }
    match &p[i..j] {
        "" => {}
        "*" => steps.push(Step::All),
        name => steps.push(Step::Field(name.to_string())),
    }
    j
}

/// The `]` closing the `[` at `open`, skipping quoted text and nested brackets.
fn closing_bracket(p: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, c) in unquoted(&p[open..]) {
        match c {
            b'[' => depth += 1,
            b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(open + k);
                }
            }
            _ => {}
        }
    }
    None
}

/// The bytes of `s` outside its quoted text (quotes included in neither), with their offsets.
fn unquoted(s: &str) -> impl Iterator<Item = (usize, u8)> + '_ {
    let mut quote: Option<u8> = None;
    s.bytes().enumerate().filter(move |&(_, c)| match (quote, c) {
        (Some(q), c) if c == q => {
            quote = None;
            false
        }
        (Some(_), _) => false,
        (None, b'\'' | b'"') => {
            quote = Some(c);
            false
        }
        _ => true,
    })
}

fn parse_bracket(inner: &str, depth: usize) -> Option<Step> {
    if inner == "*" {
        // client-go reads `[*]` as `[:]`: every element of a list (a map fails).
        return Some(Step::Slice { start: None, end: None, step: None, index: false });
    }
    if let Some(f) = inner.strip_prefix('?') {
        let f = f.trim().strip_prefix('(')?.strip_suffix(')')?;
        return parse_filter(f.trim(), depth).map(Step::Filter);
    }
    let parts = split_top(inner, b',');
    let mut steps = Vec::with_capacity(parts.len());
    for part in &parts {
        let part = part.trim();
        // A key in brackets is single-quoted only, as client-go's parser reads it.
        match part.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
            Some(key) => steps.push(Step::Field(key.to_string())),
            None => steps.push(parse_slice(part)?),
        }
    }
    match steps.len() {
        0 => None,
        1 => steps.pop(),
        _ => Some(Step::Union(steps)),
    }
}

/// `s` split at `sep` outside quotes.
fn split_top(s: &str, sep: u8) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (k, _) in unquoted(s).filter(|&(_, c)| c == sep) {
        parts.push(&s[start..k]);
        start = k + 1;
    }
    parts.push(&s[start..]);
    parts
}

fn unquote(s: &str) -> Option<String> {
    let q = s.strip_prefix('\'').and_then(|s| s.strip_suffix('\''));
    q.or_else(|| s.strip_prefix('"').and_then(|s| s.strip_suffix('"'))).map(str::to_string)
}

fn parse_slice(s: &str) -> Option<Step> {
    let num = |t: &str| -> Option<Option<i64>> {
        let t = t.trim();
        if t.is_empty() { Some(None) } else { t.parse::<i64>().ok().map(Some) }
    };
    let parts: Vec<&str> = s.split(':').collect();
    match parts.as_slice() {
        [n] => {
            let n = num(n)??;
            // Wrapping as Go's int does: an end past i64 is out of bounds, not a panic.
            Some(Step::Slice { start: Some(n), end: Some(n.wrapping_add(1)), step: None, index: true })
        }
        [a, b] => Some(Step::Slice { start: num(a)?, end: num(b)?, step: None, index: false }),
        [a, b, c] => Some(Step::Slice { start: num(a)?, end: num(b)?, step: num(c)?, index: false }),
        _ => None,
    }
}

fn parse_filter(f: &str, depth: usize) -> Option<Filter> {
    const OPS: [(&str, Op); 6] =
        [("==", Op::Eq), ("!=", Op::Ne), ("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)];
    for (text, op) in OPS {
        let parts = split_top(f, text.as_bytes()[0]);
        // The operator's first character splits; the rest must follow it.
        let mut at = 0;
        for part in &parts[..parts.len().saturating_sub(1)] {
            at += part.len();
            if f[at..].starts_with(text) {
                let (l, r) = (&f[..at], &f[at + text.len()..]);
                let (left, right) = (parse_operand(l.trim(), depth)?, parse_operand(r.trim(), depth)?);
                return Some(Filter { left, compare: Some((op, right)) });
            }
            at += 1;
        }
    }
    Some(Filter { left: parse_operand(f, depth)?, compare: None })
}

fn parse_operand(s: &str, depth: usize) -> Option<Operand> {
    if let Some(rest) = s.strip_prefix('@') {
        return parse_steps(rest, depth + 1).map(Operand::Path);
    }
    if let Some(text) = unquote(s) {
        return Some(Operand::Literal(Value::String(text)));
    }
    match s {
        "true" => return Some(Operand::Literal(Value::Bool(true))),
        "false" => return Some(Operand::Literal(Value::Bool(false))),
        _ => {}
    }
    if let Ok(i) = s.parse::<i64>() {
        return Some(Operand::Literal(i.into()));
    }
    s.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(|n| Operand::Literal(Value::Number(n)))
}

/// The values `path` selects in `v`, in document order (nothing when client-go's evaluation
/// fails).
pub fn select<'a>(v: &'a Value, path: &str) -> Vec<&'a Value> {
    let Some(steps) = parse(path) else { return Vec::new() };
    eval(vec![v], &steps).unwrap_or_default()
}

fn eval<'a>(mut cur: Vec<&'a Value>, steps: &[Step]) -> Result<Vec<&'a Value>, Fails> {
    for step in steps {
        cur = eval_step(cur, step)?;
    }
    Ok(cur)
}

fn eval_step<'a>(cur: Vec<&'a Value>, step: &Step) -> Result<Vec<&'a Value>, Fails> {
    let mut next = Vec::new();
    match step {
        Step::Field(f) => next.extend(cur.into_iter().filter_map(|c| c.get(f.as_str()))),
        Step::All => {
            for c in cur {
                match c {
                    Value::Array(a) => next.extend(a.iter()),
                    Value::Object(m) => next.extend(m.values()),
                    _ => {}
                }
            }
        }
        Step::Descend => {
            for c in cur {
                descend(c, &mut next);
            }
        }
        Step::Slice { start, end, step, index } => {
            for c in cur.into_iter().filter(|c| !c.is_null()) {
                let Value::Array(a) = c else { return Err(Fails) };
                next.extend(slice(a, (*start, *end, *step), *index)?);
            }
        }
        Step::Union(steps) => {
            for s in steps {
                next.extend(eval_step(cur.clone(), s)?);
            }
        }
        Step::Filter(f) => {
            for c in cur.into_iter().filter(|c| !c.is_null()) {
                let Value::Array(items) = c else { return Err(Fails) };
                for item in items {
                    if keeps(f, item)? {
                        next.push(item);
                    }
                }
            }
        }
    }
    Ok(next)
}

/// `v` and every value below it, depth first (maps' values in key order).
fn descend<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    out.push(v);
    match v {
        Value::Array(a) => a.iter().for_each(|c| descend(c, out)),
        Value::Object(m) => m.values().for_each(|c| descend(c, out)),
        _ => {}
    }
}

/// client-go's `evalArray`: negative bounds count from the end; an empty range selects
/// nothing; a bound outside the list or a step below 1 fails.
fn slice(
    a: &[Value],
    (start, end, step): (Option<i64>, Option<i64>, Option<i64>),
    index: bool,
) -> Result<Vec<&Value>, Fails> {
    let len = a.len() as i64;
    let mut s = start.unwrap_or(0);
    if s < 0 {
        s += len;
    }
    let mut e = end.unwrap_or(len);
    if e < 0 || (e == 0 && index) {
        e += len;
    }
    if s == e {
        return Ok(Vec::new());
    }
    if s < 0 || s >= len || e < 0 || e > len || s > e {
        return Err(Fails);
    }
    let step = match step {
        Some(n) if n <= 0 => return Err(Fails),
        Some(n) => n as usize,
        None => 1,
    };
    Ok(a[s as usize..e as usize].iter().step_by(step).collect())
}

/// Whether a list element passes the filter (a comparison across types fails the path).
fn keeps(f: &Filter, item: &Value) -> Result<bool, Fails> {
    let operand = |o: &Operand| -> Result<Option<Value>, Fails> {
        match o {
            Operand::Literal(v) => Ok(Some(v.clone())),
            Operand::Path(steps) => {
                let found = eval(vec![item], steps)?;
                match found.as_slice() {
                    [] => Ok(None),
                    [one] => Ok(Some((*one).clone())),
                    _ => Err(Fails),
                }
            }
        }
    };
    let Some((op, right)) = &f.compare else {
        // Presence: an operand that cannot be read is absent (client-go passes over the error).
        return Ok(operand(&f.left).ok().flatten().is_some());
    };
    // Without a left value the element is passed over before the right one is read.
    let Some(l) = operand(&f.left)? else { return Ok(false) };
    let Some(r) = operand(right)? else { return Ok(false) };
    compare(&l, *op, &r)
}

/// text/template's comparison functions: values of one basic kind (strings, integers, floats,
/// booleans for equality); anything else fails.
fn compare(l: &Value, op: Op, r: &Value) -> Result<bool, Fails> {
    use std::cmp::Ordering;
    let ord = match (l, r) {
        (Value::String(a), Value::String(b)) => a.cmp(b),
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            (None, None) => a.as_f64().partial_cmp(&b.as_f64()).ok_or(Fails)?,
            _ => return Err(Fails),
        },
        (Value::Bool(a), Value::Bool(b)) if matches!(op, Op::Eq | Op::Ne) => a.cmp(b),
        _ => return Err(Fails),
    };
    Ok(match op {
        Op::Eq => ord == Ordering::Equal,
        Op::Ne => ord != Ordering::Equal,
        Op::Lt => ord == Ordering::Less,
        Op::Le => ord != Ordering::Greater,
        Op::Gt => ord == Ordering::Greater,
        Op::Ge => ord != Ordering::Less,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn printer_column_paths() {
        let v = json!({"spec": {"replicas": 2, "a.b": 1}, "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "X", "status": "False"}]}});
        assert_eq!(select(&v, ".spec.replicas"), [&json!(2)]);
        assert_eq!(select(&v, ".status.conditions[?(@.type==\"Ready\")].status"), [&json!("True")]);
        assert_eq!(select(&v, ".status.conditions[1].type"), [&json!("X")]);
        assert_eq!(select(&v, ".status.conditions[*].type").len(), 2);
        assert_eq!(select(&v, ".spec['a.b']"), [&json!(1)]);
        assert!(select(&v, ".nope.x").is_empty());
    }

    #[test]
    fn client_go_s_indexes_slices_unions_filters_and_descent() {
        let v = json!({"items": [{"n": 1, "ok": true}, {"n": 2}, {"n": 3, "ok": false}, {"n": 4}],
                       "m": {"b": {"n": 9}, "a": {"n": 8}}});
        let ns = |p: &str| select(&v, p).into_iter().cloned().collect::<Vec<_>>();
        assert_eq!(ns(".items[-1].n"), [json!(4)]);
        assert_eq!(ns(".items[-1:].n"), [json!(4)]);
        assert_eq!(ns(".items[1:3].n"), [json!(2), json!(3)]);
        assert_eq!(ns(".items[0,2].n"), [json!(1), json!(3)]);
        assert_eq!(ns(".items[?(@.n > 2)].n"), [json!(3), json!(4)]);
        assert_eq!(ns(".items[?(@.n != 2)].n"), [json!(1), json!(3), json!(4)]);
        assert_eq!(ns(".items[?(@.ok)].n"), [json!(1), json!(3)]);
        assert_eq!(ns(".m['a','b'].n"), [json!(8), json!(9)]);
        assert_eq!(ns("..n"), [json!(1), json!(2), json!(3), json!(4), json!(8), json!(9)]);
        assert_eq!(ns("{.m.*.n}"), [json!(8), json!(9)]);
        // Failures select nothing: out of bounds, a filter over a map, mixed types.
        assert!(ns(".items[7].n").is_empty());
        assert!(ns(".m[?(@.n == 8)]").is_empty());
        assert!(ns(".items[?(@.n == \"1\")]").is_empty());
        assert!(ns(".items[2:2]").is_empty());
        // `[*]` is `[:]`, which a map fails; a bracketed key is single-quoted.
        assert!(ns(".m[*].n").is_empty());
        assert!(ns(".m[\"a\"].n").is_empty());
        assert!(ns(".items[9223372036854775807]").is_empty());
        // A presence operand that cannot be read is absent; the path goes on.
        assert_eq!(ns(".items[?(@.ok[3])].n"), Vec::<serde_json::Value>::new());
        assert_eq!(ns(".items[?(@.n[0])].n"), Vec::<serde_json::Value>::new());
        let deep = format!(".items{}{}", "[?(@".repeat(20), ")]".repeat(20));
        assert!(ns(&deep).is_empty());
    }
}
