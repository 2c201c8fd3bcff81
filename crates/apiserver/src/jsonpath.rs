//! The JSONPath subset CustomResourceDefinitions use in `additionalPrinterColumns`:
//! `.a.b`, `.a[0]`, `.a[*].b`, `.a[?(@.type=="Ready")].status` and `['key.with.dots']`.
//!
//! Invariant: evaluation never fails: a path that does not apply (or that this subset does not
//! read) selects nothing.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
    /// `[?(@.<path> == <value>)]`
    Filter(Vec<String>, Value),
}

fn parse(path: &str) -> Option<Vec<Step>> {
    let p = path.trim().trim_start_matches('{').trim_end_matches('}');
    let p = p.strip_prefix('$').unwrap_or(p);
    let mut steps = Vec::new();
    let b = p.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'.' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j] != b'.' && b[j] != b'[' {
                    j += 1;
                }
                if j > start {
                    steps.push(Step::Field(p[start..j].to_string()));
                }
                i = j;
            }
            b'[' => {
                let end = p[i..].find(']')? + i;
                let inner = p[i + 1..end].trim();
                if inner == "*" {
                    steps.push(Step::All);
                } else if let Ok(n) = inner.parse::<usize>() {
                    steps.push(Step::Index(n));
                } else if let Some(f) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
                    let (lhs, rhs) = f.split_once("==")?;
                    let lhs = lhs.trim().strip_prefix("@.")?;
                    let rhs = rhs.trim();
                    let value = if let Some(s) = rhs.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                        Value::String(s.to_string())
                    } else if let Some(s) = rhs.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
                        Value::String(s.to_string())
                    } else {
                        serde_json::from_str(rhs).ok()?
                    };
                    steps.push(Step::Filter(lhs.split('.').map(str::to_string).collect(), value));
                } else if let Some(k) = inner.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
                    steps.push(Step::Field(k.to_string()));
                } else {
                    return None;
                }
                i = end + 1;
            }
            _ => return None,
        }
    }
    Some(steps)
}

/// The values `path` selects in `v`, in document order.
pub fn select<'a>(v: &'a Value, path: &str) -> Vec<&'a Value> {
    let Some(steps) = parse(path) else { return Vec::new() };
    let mut cur = vec![v];
    for step in &steps {
        let mut next = Vec::new();
        for c in cur {
            match step {
                Step::Field(f) => next.extend(c.get(f.as_str())),
                Step::Index(n) => next.extend(c.get(*n)),
                Step::All => match c {
                    Value::Array(a) => next.extend(a.iter()),
                    Value::Object(m) => next.extend(m.values()),
                    _ => {}
                },
                Step::Filter(field, want) => {
                    for item in c.as_array().into_iter().flatten() {
                        if field.iter().try_fold(item, |v, k| v.get(k.as_str())) == Some(want) {
                            next.push(item);
                        }
                    }
                }
            }
        }
        cur = next;
    }
    cur
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
}
