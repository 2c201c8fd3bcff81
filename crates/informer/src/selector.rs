//! Label selectors (Kubernetes `labels.Selector` text syntax), parsed and matched locally for
//! listers.
//!
//! Grammar: requirements separated by commas, all of which must hold:
//! `key=value`, `key==value`, `key!=value`, `key in (v1,v2)`, `key notin (v1,v2)`, `key` (exists),
//! `!key` (does not exist), `key>n`, `key<n` (integer comparisons). `!=` and `notin` also match
//! objects without the label. Keys are `[prefix/]name` (name: at most 63 characters of
//! alphanumerics, `-`, `_`, `.`, beginning and ending alphanumeric; prefix a DNS subdomain);
//! values are empty or follow the name rule. An empty selector matches everything.
//!
//! Invariant: a selector that parses never fails to match (matching is total).

use std::fmt;

use crate::object::Object;

/// A selector syntax error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector {selector:?}: {message}")]
pub struct SelectorError {
    /// The selector text.
    pub selector: String,
    /// What is wrong.
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
}

/// A parsed label selector.
///
/// ```
/// use informer::LabelSelector;
/// let s: LabelSelector = "app=web,tier in (front,back),!legacy".parse().unwrap();
/// assert!(s.matches_labels([("app", "web"), ("tier", "front")]));
/// assert!(!s.matches_labels([("app", "web"), ("tier", "front"), ("legacy", "")]));
/// assert!("app in ()".parse::<LabelSelector>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    reqs: Vec<Requirement>,
}

impl LabelSelector {
    /// Matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses selector text.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let err = |m: &str| SelectorError {
            selector: text.to_string(),
            message: m.to_string(),
        };
        let mut reqs = Vec::new();
        for part in split_top_level(text).map_err(|m| err(&m))? {
            let part = part.trim();
            if part.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(err("empty requirement"));
            }
            reqs.push(parse_requirement(part).map_err(|m| err(&m))?);
        }
        Ok(LabelSelector { reqs })
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Whether an object's labels match.
    pub fn matches<K>(&self, obj: &Object<K>) -> bool {
        self.reqs.iter().all(|r| r.matches(obj.label(&r.key)))
    }

    /// Whether a label set matches.
    pub fn matches_labels<'a>(&self, labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> bool {
        let labels: Vec<(&str, &str)> = labels.into_iter().collect();
        self.reqs
            .iter()
            .all(|r| r.matches(labels.iter().find(|(k, _)| *k == r.key).map(|(_, v)| *v)))
    }
}

impl std::str::FromStr for LabelSelector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.reqs.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match &r.op {
                Op::Eq(v) => write!(f, "{}={v}", r.key)?,
                Op::NotEq(v) => write!(f, "{}!={v}", r.key)?,
                Op::In(vs) => write!(f, "{} in ({})", r.key, vs.join(","))?,
                Op::NotIn(vs) => write!(f, "{} notin ({})", r.key, vs.join(","))?,
                Op::Exists => write!(f, "{}", r.key)?,
                Op::DoesNotExist => write!(f, "!{}", r.key)?,
                Op::Gt(n) => write!(f, "{}>{n}", r.key)?,
                Op::Lt(n) => write!(f, "{}<{n}", r.key)?,
            }
        }
        Ok(())
    }
}

impl Requirement {
    fn matches(&self, value: Option<&str>) -> bool {
        match (&self.op, value) {
            (Op::Exists, v) => v.is_some(),
            (Op::DoesNotExist, v) => v.is_none(),
            (Op::Eq(x), Some(v)) => v == x,
            (Op::In(xs), Some(v)) => xs.iter().any(|x| x == v),
            (Op::NotEq(x), Some(v)) => v != x,
            (Op::NotIn(xs), Some(v)) => !xs.iter().any(|x| x == v),
            (Op::NotEq(_) | Op::NotIn(_), None) => true,
            (Op::Gt(n), Some(v)) => v.parse::<i64>().is_ok_and(|v| v > *n),
            (Op::Lt(n), Some(v)) => v.parse::<i64>().is_ok_and(|v| v < *n),
            (_, None) => false,
        }
    }
}

/// Splits on commas outside parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => {
                depth += 1;
                if depth > 1 {
                    return Err("nested parentheses".into());
                }
            }
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err("unbalanced ')'".into());
                }
            }
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unbalanced '('".into());
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn parse_requirement(s: &str) -> Result<Requirement, String> {
    if let Some(rest) = s.strip_prefix('!') {
        let key = rest.trim();
        validate_key(key)?;
        return Ok(Requirement {
            key: key.into(),
            op: Op::DoesNotExist,
        });
    }
    // Set-based: "key in (...)" / "key notin (...)".
    if let Some(open) = s.find('(') {
        let head = s[..open].trim_end();
        let (key, notin) = if let Some(k) = head.strip_suffix(" notin") {
            (k.trim(), true)
        } else if let Some(k) = head.strip_suffix(" in") {
            (k.trim(), false)
        } else {
            return Err(format!("expected 'in' or 'notin' before '(' in {s:?}"));
        };
        validate_key(key)?;
        let close = s.rfind(')').ok_or("missing ')'")?;
        if !s[close + 1..].trim().is_empty() {
            return Err(format!("unexpected text after ')' in {s:?}"));
        }
        let mut values = Vec::new();
        for v in s[open + 1..close].split(',') {
            let v = v.trim();
            validate_value(v)?;
            values.push(v.to_string());
        }
        if s[open + 1..close].trim().is_empty() {
            return Err("a set needs at least one value".into());
        }
        let op = if notin {
            Op::NotIn(values)
        } else {
            Op::In(values)
        };
        return Ok(Requirement {
            key: key.into(),
            op,
        });
    }
    for (tok, kind) in [("==", 0), ("!=", 1), ("=", 0), (">", 2), ("<", 3)] {
        if let Some(i) = s.find(tok) {
            let key = s[..i].trim();
            let value = s[i + tok.len()..].trim();
            validate_key(key)?;
            let op = match kind {
                0 | 1 => {
                    validate_value(value)?;
                    if kind == 0 {
                        Op::Eq(value.into())
                    } else {
                        Op::NotEq(value.into())
                    }
                }
                _ => {
                    let n: i64 = value
                        .parse()
                        .map_err(|_| format!("{value:?} is not an integer"))?;
                    if kind == 2 { Op::Gt(n) } else { Op::Lt(n) }
                }
            };
            return Ok(Requirement {
                key: key.into(),
                op,
            });
        }
    }
    let key = s.trim();
    validate_key(key)?;
    Ok(Requirement {
        key: key.into(),
        op: Op::Exists,
    })
}

fn valid_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn valid_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

fn validate_key(key: &str) -> Result<(), String> {
    let ok = match key.split_once('/') {
        Some((prefix, name)) => valid_dns_subdomain(prefix) && valid_name(name),
        None => valid_name(key),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("invalid label key {key:?}"))
    }
}

fn validate_value(v: &str) -> Result<(), String> {
    if v.is_empty() || valid_name(v) {
        Ok(())
    } else {
        Err(format!("invalid label value {v:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(sel: &str, labels: &[(&str, &str)]) -> bool {
        LabelSelector::parse(sel)
            .unwrap()
            .matches_labels(labels.iter().copied())
    }

    #[test]
    fn equality_and_sets() {
        let l = [("a", "b"), ("env", "prod"), ("n", "5")];
        assert!(m("", &l));
        assert!(m("a=b", &l));
        assert!(m("a==b", &l));
        assert!(!m("a!=b", &l));
        assert!(m("x!=b", &l), "!= matches missing labels");
        assert!(m("env in (prod, dev)", &l));
        assert!(!m("env notin (prod)", &l));
        assert!(m("x notin (prod)", &l));
        assert!(m("a", &l));
        assert!(!m("!a", &l));
        assert!(m("!x", &l));
        assert!(m("a=b,env in (prod),!x", &l));
        assert!(!m("a=b,env in (dev)", &l));
        assert!(m("n>4,n<6", &l));
        assert!(!m("n>5", &l));
        assert!(m("example.com/tier!=x", &l));
    }

    #[test]
    fn bad_selectors() {
        for bad in [
            "a in ()",
            "a in (x",
            "a in x)",
            "=b",
            "a=b=c",
            "a b",
            "a,,b",
            "-a=b",
            "a=-b",
            "a>x",
            "a in (x,(y))",
            "a foo (x)",
            "Bad_Prefix/a=b",
        ] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn display_round_trips() {
        let s = LabelSelector::parse("a=b, c in (x,y),!d,e").unwrap();
        assert_eq!(LabelSelector::parse(&s.to_string()).unwrap(), s);
    }
}
