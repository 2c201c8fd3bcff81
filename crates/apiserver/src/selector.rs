//! Label and field selectors: parsing (kube syntax) and matching.
//!
//! Label selectors support equality (`a=b`, `a==b`, `a!=b`), set-based
//! (`a in (x,y)`, `a notin (x)`), existence (`a`, `!a`) and `a>1`/`a<1`.
//! Field selectors support `=`, `==`, `!=` on the fields a resource declares.
//! Matching works on precomputed `(key, value)` slices so no JSON is parsed on
//! the watch hot path. An empty selector matches everything.

use crate::registry::ResourceInfo;
use crate::status::ApiError;

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    NotExists,
    Gt(i64),
    Lt(i64),
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    op: Op,
}

/// A parsed label selector.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LabelSelector {
    reqs: Vec<Requirement>,
}

fn lookup<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn valid_label_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_label_value(v: &str) -> bool {
    v.len() <= 63 && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Splits on commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_err(msg: String) -> ApiError {
    ApiError::bad_request(format!("unable to parse requirement: {msg}"))
}

fn parse_set(rest: &str) -> Result<Vec<String>, ApiError> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| parse_err(format!("found '{rest}', expected: '('")))?;
    let mut vals = Vec::new();
    for v in inner.split(',') {
        let v = v.trim();
        if !valid_label_value(v) {
            return Err(parse_err(format!("values[0]: Invalid value: \"{v}\"")));
        }
        vals.push(v.to_string());
    }
    Ok(vals)
}

impl LabelSelector {
    /// Parses a kube label selector string.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector { reqs });
        }
        for part in split_top(s) {
            let p = part.trim();
            if p.is_empty() {
                return Err(parse_err("found ',', expected: !, identifier, or 'end of string'".into()));
            }
            let req = if let Some(k) = p.strip_prefix('!') {
                let k = k.trim();
                Requirement { key: k.to_string(), op: Op::NotExists }
            } else if let Some(i) = p.find("!=") {
                let (k, v) = (p[..i].trim(), p[i + 2..].trim());
                Requirement { key: k.into(), op: Op::NotEq(v.into()) }
            } else if let Some(i) = p.find("==") {
                let (k, v) = (p[..i].trim(), p[i + 2..].trim());
                Requirement { key: k.into(), op: Op::Eq(v.into()) }
            } else if let Some(i) = p.find('=') {
                let (k, v) = (p[..i].trim(), p[i + 1..].trim());
                Requirement { key: k.into(), op: Op::Eq(v.into()) }
            } else if let Some(i) = p.find(['>', '<']) {
                let (k, v) = (p[..i].trim(), p[i + 1..].trim());
                let n: i64 = v
                    .parse()
                    .map_err(|_| parse_err("for 'Gt', 'Lt' operators, the value must be an integer".to_string()))?;
                let op = if p.as_bytes()[i] == b'>' { Op::Gt(n) } else { Op::Lt(n) };
                Requirement { key: k.into(), op }
            } else if let Some((k, rest)) = p.split_once(char::is_whitespace) {
                let rest = rest.trim_start();
                if let Some(set) = rest.strip_prefix("notin") {
                    Requirement { key: k.into(), op: Op::NotIn(parse_set(set)?) }
                } else if let Some(set) = rest.strip_prefix("in") {
                    Requirement { key: k.into(), op: Op::In(parse_set(set)?) }
                } else {
                    return Err(parse_err(format!("found '{rest}', expected: in, notin, =, ==, !=, gt, lt")));
                }
            } else {
                Requirement { key: p.to_string(), op: Op::Exists }
            };
            if !valid_label_key(&req.key) {
                return Err(parse_err(format!(
                    "key: Invalid value: \"{}\": name part must consist of alphanumeric characters, '-', '_' or '.'",
                    req.key
                )));
            }
            if let Op::Eq(v) | Op::NotEq(v) = &req.op
                && !valid_label_value(v)
            {
                return Err(parse_err(format!("values[0][{}]: Invalid value: \"{v}\"", req.key)));
            }
            reqs.push(req);
        }
        Ok(LabelSelector { reqs })
    }

    /// Whether the selector is empty (matches everything).
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Whether an object with these labels matches.
    pub fn matches(&self, labels: &[(String, String)]) -> bool {
        self.reqs.iter().all(|r| {
            let v = lookup(labels, &r.key);
            match &r.op {
                Op::Eq(x) => v == Some(x.as_str()),
                Op::NotEq(x) => v != Some(x.as_str()),
                Op::In(xs) => v.is_some_and(|v| xs.iter().any(|x| x == v)),
                Op::NotIn(xs) => v.is_none_or(|v| !xs.iter().any(|x| x == v)),
                Op::Exists => v.is_some(),
                Op::NotExists => v.is_none(),
                Op::Gt(n) => v.and_then(|v| v.parse::<i64>().ok()).is_some_and(|x| x > *n),
                Op::Lt(n) => v.and_then(|v| v.parse::<i64>().ok()).is_some_and(|x| x < *n),
            }
        })
    }
}

/// A parsed field selector (only `=`, `==`, `!=`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSelector {
    reqs: Vec<(String, bool, String)>,
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            if let Some(n) = it.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Splits on unescaped commas.
fn split_escaped(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut esc = false;
    for c in s.chars() {
        if esc {
            cur.push('\\');
            cur.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else if c == ',' {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out
}

impl FieldSelector {
    /// Parses a field selector and checks every field against `info`.
    pub fn parse(s: &str, info: &ResourceInfo) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector { reqs });
        }
        for part in split_escaped(s) {
            let p = part.trim();
            let (k, neg, v) = if let Some(i) = p.find("!=") {
                (&p[..i], true, &p[i + 2..])
            } else if let Some(i) = p.find("==") {
                (&p[..i], false, &p[i + 2..])
            } else if let Some(i) = p.find('=') {
                (&p[..i], false, &p[i + 1..])
            } else {
                return Err(ApiError::bad_request(format!("invalid selector: '{s}'; can't understand '{p}'")));
            };
            let k = k.trim();
            if !info.supports_field(k) {
                return Err(ApiError::bad_request(format!("field label not supported: {k}")));
            }
            reqs.push((k.to_string(), neg, unescape(v.trim())));
        }
        Ok(FieldSelector { reqs })
    }

    /// Whether the selector is empty (matches everything).
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Whether an object with these precomputed field values matches. A
    /// missing field compares as the empty string, like kube.
    pub fn matches(&self, fields: &[(String, String)]) -> bool {
        self.reqs.iter().all(|(k, neg, v)| {
            let have = lookup(fields, k).unwrap_or("");
            (have == v) != *neg
        })
    }
}

/// Label + field selector pair.
#[derive(Debug, Clone, Default)]
pub struct Selectors {
    /// Label part.
    pub labels: LabelSelector,
    /// Field part.
    pub fields: FieldSelector,
}

impl Selectors {
    /// Parses both selectors from query values.
    pub fn parse(label: Option<&str>, field: Option<&str>, info: &ResourceInfo) -> Result<Self, ApiError> {
        Ok(Selectors {
            labels: LabelSelector::parse(label.unwrap_or(""))?,
            fields: FieldSelector::parse(field.unwrap_or(""), info)?,
        })
    }

    /// Whether both are empty.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether an object matches both.
    pub fn matches(&self, labels: &[(String, String)], fields: &[(String, String)]) -> bool {
        self.labels.matches(labels) && self.fields.matches(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn label_forms() {
        let labels = l(&[("a", "b"), ("env", "prod")]);
        for (sel, want) in [
            ("a=b", true),
            ("a==b", true),
            ("a!=b", false),
            ("a in (x, b)", true),
            ("a notin (b)", false),
            ("a", true),
            ("!a", false),
            ("!zz", true),
            ("a=b,env=prod", true),
            ("a=b,env in (dev)", false),
            ("zz!=q", true),
        ] {
            assert_eq!(LabelSelector::parse(sel).unwrap().matches(&labels), want, "{sel}");
        }
        assert!(LabelSelector::parse("a in x").is_err());
        assert!(LabelSelector::parse("a=b=c").is_err());
        assert!(LabelSelector::parse(",").is_err());
    }
}
