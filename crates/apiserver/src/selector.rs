//! Label and field selectors: parsing (kube syntax), matching, and a `LabelSelector` object
//! printed as kube prints one (its selector's string, Go's `%v`).
//!
//! Label selectors support equality (`a=b`, `a==b`, `a!=b`), set-based
//! (`a in (x,y)`, `a notin (x)`), existence (`a`, `!a`) and `a>1`/`a<1`.
//! Field selectors support `=`, `==`, `!=` on the fields a resource declares.
//! Matching works on precomputed `(key, value)` slices so no JSON is parsed on
//! the watch hot path. An empty selector matches everything.

use serde_json::Value;

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

/// A token of kube's label selector lexer.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// The token a literal stands for (identifiers aside).
fn token_of(literal: &[u8]) -> Option<Token> {
    Some(match literal {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits a label selector into kube's tokens, each with its literal (a NUL byte ends the
/// input, as in kube's lexer).
fn lex(s: &str) -> Vec<(Token, String)> {
    let b = s.as_bytes();
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        while pos < end && is_whitespace(b[pos]) {
            pos += 1;
        }
        if pos == end {
            out.push((Token::End, String::new()));
            return out;
        }
        let start = pos;
        if is_special(b[pos]) {
            // The longest run of symbols that is a token ("!=" rather than "!").
            let mut last = None;
            while pos < end && is_special(b[pos]) {
                match token_of(&b[start..=pos]) {
                    Some(t) => last = Some((t, pos + 1)),
                    None if last.is_some() => break,
                    None => {}
                }
                pos += 1;
            }
            // Every single symbol is a token, so one was found.
            let (token, after) = last.unwrap_or((Token::Comma, start + 1));
            pos = after;
            out.push((token, String::from_utf8_lossy(&b[start..pos]).into_owned()));
        } else {
            while pos < end && !is_special(b[pos]) && !is_whitespace(b[pos]) {
                pos += 1;
            }
            let literal = String::from_utf8_lossy(&b[start..pos]).into_owned();
            let token = token_of(literal.as_bytes()).unwrap_or(Token::Identifier);
            out.push((token, literal));
        }
    }
}

/// kube's label selector parser over the lexed tokens.
struct Parser {
    items: Vec<(Token, String)>,
    at: usize,
}

impl Parser {
    /// The next token; `in` and `notin` are identifiers where values are read.
    fn peek(&self, values: bool) -> (Token, &str) {
        let (t, l) = &self.items[self.at.min(self.items.len() - 1)];
        let t = match t {
            Token::In | Token::NotIn if values => Token::Identifier,
            t => t.clone(),
        };
        (t, l)
    }

    fn next(&mut self, values: bool) -> (Token, String) {
        let (t, l) = self.peek(values);
        let out = (t, l.to_string());
        self.at += 1;
        out
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut reqs = Vec::new();
        loop {
            let (t, l) = self.peek(true);
            match t {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self.requirement().map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(r);
                    let (t, l) = self.next(true);
                    match t {
                        Token::End => return Ok(reqs),
                        Token::Comma => {
                            let (t2, l2) = self.peek(true);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!("found '{l2}', expected: identifier after ','"));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::End => return Ok(reqs),
                _ => return Err(format!("found '{l}', expected: !, identifier, or 'end of string'")),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (mut t, mut key) = self.next(true);
        let not = t == Token::DoesNotExist;
        if not {
            (t, key) = self.next(true);
        }
        if t != Token::Identifier {
            return Err(format!("found '{key}', expected: identifier"));
        }
        let faults = crate::cel_format::qualified_name(&key);
        if !faults.is_empty() {
            return Err(format!("<nil>: Invalid value: {}: {}", go_quote(&key), faults.join("; ")));
        }
        let (after, _) = self.peek(true);
        if not || matches!(after, Token::End | Token::Comma) {
            let op = if not { Op::NotExists } else { Op::Exists };
            return Ok(Requirement { key, op });
        }
        let (t, l) = self.next(false);
        let values = match t {
            Token::In | Token::NotIn => self.set()?,
            Token::Equals | Token::DoubleEquals | Token::NotEquals | Token::GreaterThan | Token::LessThan => {
                vec![self.exact()?]
            }
            _ => return Err(format!("found '{l}', expected: in, notin, =, ==, !=, gt, lt")),
        };
        new_requirement(key, t, values)
    }

    /// `( values )`: a set, sorted, the empty value standing for a missing one.
    fn set(&mut self) -> Result<Vec<String>, String> {
        let (t, l) = self.next(true);
        if t != Token::OpenPar {
            return Err(format!("found '{l}' expected: '('"));
        }
        let (t, l) = self.peek(true);
        let l = l.to_string();
        let mut set = std::collections::BTreeSet::new();
        match t {
            Token::Identifier | Token::Comma => {
                loop {
                    let (t, l) = self.next(true);
                    match t {
                        Token::Identifier => {
                            set.insert(l);
                            let (t2, l2) = self.peek(true);
                            match t2 {
                                Token::Comma => continue,
                                Token::ClosedPar => break,
                                _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                            }
                        }
                        Token::Comma => {
                            if set.is_empty() {
                                set.insert(String::new());
                            }
                            let (t2, _) = self.peek(true);
                            if t2 == Token::ClosedPar {
                                set.insert(String::new());
                                break;
                            }
                            if t2 == Token::Comma {
                                set.insert(String::new());
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',', or identifier")),
                    }
                }
                if self.next(true).0 != Token::ClosedPar {
                    return Err(format!("found '{l}', expected: ')'"));
                }
            }
            Token::ClosedPar => {
                self.next(true);
                set.insert(String::new());
            }
            _ => return Err(format!("found '{l}', expected: ',', ')' or identifier")),
        }
        Ok(set.into_iter().collect())
    }

    /// The one value of an exact match (empty when none follows).
    fn exact(&mut self) -> Result<String, String> {
        let (t, _) = self.peek(true);
        if matches!(t, Token::End | Token::Comma) {
            return Ok(String::new());
        }
        match self.next(true) {
            (Token::Identifier, l) => Ok(l),
            (_, l) => Err(format!("found '{l}', expected: identifier")),
        }
    }
}

/// kube's `NewRequirement` for a parsed key, operator and values: its faults, joined as kube's
/// aggregate joins them.
fn new_requirement(key: String, op: Token, values: Vec<String>) -> Result<Requirement, String> {
    let mut faults: Vec<String> = Vec::new();
    let mut number = None;
    if matches!(op, Token::GreaterThan | Token::LessThan) {
        for (i, v) in values.iter().enumerate() {
            match v.parse::<i64>() {
                Ok(n) => number = Some(n),
                Err(_) => faults.push(format!(
                    "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                    go_quote(v)
                )),
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let wrong = crate::cel_format::label_value(v);
        if !wrong.is_empty() {
            faults.push(format!("values[{i}][{key}]: Invalid value: {}: {}", go_quote(v), wrong.join("; ")));
        }
    }
    faults.dedup();
    match faults.len() {
        0 => {}
        1 => return Err(faults.remove(0)),
        _ => return Err(format!("[{}]", faults.join(", "))),
    }
    let one = || values.first().cloned().unwrap_or_default();
    let op = match op {
        Token::In => Op::In(values),
        Token::NotIn => Op::NotIn(values),
        Token::NotEquals => Op::NotEq(one()),
        Token::GreaterThan => Op::Gt(number.unwrap_or_default()),
        Token::LessThan => Op::Lt(number.unwrap_or_default()),
        _ => Op::Eq(one()),
    };
    Ok(Requirement { key, op })
}

/// Go's `%q` of a string.
fn go_quote(s: &str) -> String {
    crate::pod_security_checks::go_quote(s)
}

impl LabelSelector {
    /// Parses a label selector as kube-apiserver does (its syntax, its validation of keys and
    /// values, its messages).
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut parser = Parser { items: lex(s), at: 0 };
        let reqs = parser.parse().map_err(ApiError::bad_request)?;
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

/// A parsed field selector (only `=`, `==`, `!=`): its terms, each a label, whether it is
/// negated, and the unescaped value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSelector {
    reqs: Vec<(String, bool, String)>,
}

/// kube's `UnescapeValue`: `\\`, `\,` and `\=` stand for the character; any other escape, and an
/// unescaped `,` or `=`, are refused.
fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!("invalid field selector: invalid escape sequence: \\{c}"));
            }
            out.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            ',' | '=' => {
                return Err(format!("invalid field selector: unescaped character in value: {}", c as u32));
            }
            c => out.push(c),
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".into());
    }
    Ok(out)
}

/// Splits on the commas no backslash escapes.
fn split_terms(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

impl FieldSelector {
    /// Parses a field selector as kube's `fields.ParseSelector` does (terms sorted, empty ones
    /// passed over, nothing trimmed); its labels are checked by [`Self::for_resource`].
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if s.is_empty() {
            return Ok(FieldSelector { reqs });
        }
        let mut terms = split_terms(s);
        terms.sort_unstable();
        for term in terms.into_iter().filter(|t| !t.is_empty()) {
            let split = term.char_indices().find_map(|(i, _)| {
                let rest = &term[i..];
                ["!=", "==", "="].into_iter().find(|op| rest.starts_with(op)).map(|op| (i, op))
            });
            let Some((i, op)) = split else {
                return Err(ApiError::bad_request(format!("invalid selector: '{s}'; can't understand '{term}'")));
            };
            let value = unescape(&term[i + op.len()..]).map_err(ApiError::bad_request)?;
            reqs.push((term[..i].to_string(), op == "!=", value));
        }
        Ok(FieldSelector { reqs })
    }

    /// The selector with its labels converted as `info` converts them (kube's field label
    /// conversion, [`crate::field_labels`]): a label it does not know is a 400.
    pub fn for_resource(mut self, info: &ResourceInfo) -> Result<Self, ApiError> {
        for (label, _, _) in &mut self.reqs {
            let converted = crate::field_labels::convert(info, label).map_err(ApiError::bad_request)?;
            if converted != label {
                *label = converted.to_string();
            }
        }
        Ok(self)
    }

    /// The selector of the object named `name`.
    pub fn name_is(name: &str) -> Self {
        FieldSelector { reqs: vec![("metadata.name".into(), false, name.into())] }
    }

    /// Whether the selector is empty (matches everything).
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// The value a term of the selector requires `field` to equal, as kube's
    /// `RequiresExactMatch` finds it.
    pub fn requires_exact(&self, field: &str) -> Option<&str> {
        self.reqs.iter().find(|(k, neg, _)| k == field && !neg).map(|(_, _, v)| v.as_str())
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

/// A `LabelSelector` as the string kube-apiserver shows (`app=web,tier in (a,b)`): one
/// requirement per label or expression, ordered by key. A ReplicationController's selector is a
/// plain set of labels.
pub(crate) fn selector_string(sel: &Value) -> String {
    let mut reqs: Vec<(String, String)> = Vec::new();
    let is_set = sel.as_object().is_some_and(|m| {
        !m.contains_key("matchLabels") && !m.contains_key("matchExpressions") && m.values().all(Value::is_string)
    });
    if is_set && let Some(labels) = sel.as_object() {
        for (k, v) in labels {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    if let Some(labels) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    for e in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let mut values: Vec<&str> =
            e.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        values.sort_unstable();
        let r = match e.get("operator").and_then(Value::as_str).unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key.to_string(), r));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter().map(|(_, r)| r).collect::<Vec<_>>().join(",")
}

/// A label selector as Go's `%v` prints a `*metav1.LabelSelector` (its generated `String`):
/// `&LabelSelector{MatchLabels:map[string]string{k: v,},MatchExpressions:[]LabelSelectorRequirement{…},}`,
/// labels in key order; `nil` for none.
pub(crate) fn go_selector(selector: &Value) -> String {
    let Some(sel) = selector.as_object() else { return "nil".into() };
    let mut labels: Vec<(&String, &str)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k, v.as_str().unwrap_or("")))
        .collect();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> =
                e.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                text("key"),
                text("operator"),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
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
    /// Parses both selectors from query values, as kube-apiserver reads its query: their
    /// syntax (a 400), before the list options are judged; the field labels are converted
    /// for a resource by [`Self::for_resource`], after.
    pub fn parse_query(label: Option<&str>, field: Option<&str>) -> Result<Self, ApiError> {
        Ok(Selectors {
            labels: LabelSelector::parse(label.unwrap_or(""))?,
            fields: FieldSelector::parse(field.unwrap_or(""))?,
        })
    }

    /// The selectors with their field labels converted for `info` ([`FieldSelector::for_resource`]).
    pub fn for_resource(self, info: &ResourceInfo) -> Result<Self, ApiError> {
        Ok(Selectors { labels: self.labels, fields: self.fields.for_resource(info)? })
    }

    /// Parses both selectors for `info`.
    pub fn parse(label: Option<&str>, field: Option<&str>, info: &ResourceInfo) -> Result<Self, ApiError> {
        Self::parse_query(label, field)?.for_resource(info)
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
    use serde_json::json;

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

    fn label_error(s: &str) -> String {
        LabelSelector::parse(s).expect_err(s).message
    }

    #[test]
    fn label_syntax_as_kube_parses_it() {
        let labels = l(&[("a", "b"), ("n", "5"), ("in", "notin")]);
        for (sel, want) in [
            ("a in (b)", true),
            ("a in(b)", true),
            ("a notin ()", true),
            ("a in (,x)", false),
            ("zz in (,x)", false),
            ("a=", false),
            ("zz!=", true),
            ("in=notin", true),
            ("in in (notin)", true),
            ("n>4,n<6", true),
            ("  a  ==  b  ", true),
            ("!zz,a", true),
        ] {
            assert_eq!(LabelSelector::parse(sel).unwrap().matches(&labels), want, "{sel}");
        }
        assert!(LabelSelector::parse("").unwrap().is_empty());
        assert!(LabelSelector::parse(" \t").unwrap().is_empty());
    }

    #[test]
    fn label_faults_carry_kubes_messages() {
        let name = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        assert_eq!(label_error("-a=b"), format!("unable to parse requirement: <nil>: Invalid value: \"-a\": {name}"));
        assert!(label_error("Foo.com/a=b").starts_with("unable to parse requirement: <nil>: Invalid value: \"Foo.com/a\": prefix part a lowercase RFC 1123 subdomain"));
        assert!(label_error("a/b/c=d").contains("a valid label key must consist of"));
        let value = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        assert_eq!(
            label_error("a=b-"),
            format!("unable to parse requirement: values[0][a]: Invalid value: \"b-\": {value}")
        );
        assert_eq!(
            label_error("a in (x,y-)"),
            format!("unable to parse requirement: values[1][a]: Invalid value: \"y-\": {value}")
        );
        assert_eq!(
            label_error("a>x"),
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            label_error("a>-1"),
            format!("unable to parse requirement: values[0][a]: Invalid value: \"-1\": {value}")
        );
        assert_eq!(
            label_error("a>x-"),
            format!(
                "unable to parse requirement: [values[0]: Invalid value: \"x-\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][a]: Invalid value: \"x-\": {value}]"
            )
        );
        assert_eq!(label_error("a=b,"), "found '', expected: identifier after ','");
        assert_eq!(
            label_error("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(label_error("a in x"), "unable to parse requirement: found 'x' expected: '('");
        assert_eq!(label_error("a in (x"), "unable to parse requirement: found '', expected: ',' or ')'");
        assert_eq!(label_error("a in (x y)"), "unable to parse requirement: found 'y', expected: ',' or ')'");
        assert_eq!(label_error("a=b c"), "found 'c', expected: ',' or 'end of string'");
        assert_eq!(label_error("!a=b"), "found '=', expected: ',' or 'end of string'");
        assert_eq!(label_error("=a"), "found '=', expected: !, identifier, or 'end of string'");
        assert_eq!(label_error("a=(b)"), "unable to parse requirement: found '(', expected: identifier");
    }

    fn field_error(s: &str) -> String {
        FieldSelector::parse(s).expect_err(s).message
    }

    #[test]
    fn field_syntax_as_kube_parses_it() {
        let fields = l(&[("metadata.name", "a,b=c\\"), ("spec.x", "")]);
        assert!(FieldSelector::parse(r"metadata.name=a\,b\=c\\").unwrap().matches(&fields));
        assert!(FieldSelector::parse(r"metadata.name==a\,b\=c\\,").unwrap().matches(&fields));
        assert!(FieldSelector::parse(r",spec.x=,spec.y!=z").unwrap().matches(&fields));
        assert!(!FieldSelector::parse(r"metadata.name!=a\,b\=c\\").unwrap().matches(&fields));
        assert!(FieldSelector::parse("").unwrap().is_empty());
        assert!(FieldSelector::parse(",").unwrap().is_empty());
        assert_eq!(field_error("metadata.name=a=b"), "invalid field selector: unescaped character in value: 61");
        assert_eq!(field_error(r"metadata.name=a\x"), r"invalid field selector: invalid escape sequence: \x");
        assert_eq!(field_error(r"metadata.name=a\"), r"invalid field selector: invalid escape sequence: \");
        assert_eq!(field_error("b,a=1"), "invalid selector: 'b,a=1'; can't understand 'b'");
        // Terms are read sorted: the first in that order is the one refused.
        assert_eq!(field_error("z=1,a=1=2"), "invalid field selector: unescaped character in value: 61");
        // Nothing is trimmed: the label keeps its space, and is not one kube knows.
        let pods = crate::registry::Registry::with_defaults();
        let pods = pods.all().iter().find(|i| i.is_core("pods")).cloned().unwrap();
        let e = FieldSelector::parse("metadata.name =a").unwrap().for_resource(&pods).unwrap_err();
        assert_eq!(e.message, "field label not supported: metadata.name ");
        let host = FieldSelector::parse("spec.host=n1").unwrap().for_resource(&pods).unwrap();
        assert!(host.matches(&l(&[("spec.nodeName", "n1")])));
    }

    #[test]
    fn selectors_render_as_kube_does() {
        assert_eq!(selector_string(&json!({"matchLabels": {"app": "api"}})), "app=api");
        assert_eq!(selector_string(&json!({"tier": "web", "app": "api"})), "app=api,tier=web");
        let sel = json!({
            "matchLabels": {"tier": "web", "app": "api"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "zone", "operator": "NotIn", "values": ["b"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "blue", "operator": "Exists"}
            ]
        });
        assert_eq!(selector_string(&sel), "app=api,blue,!canary,env in (dev,prod),tier=web,zone notin (b)");
        assert_eq!(selector_string(&json!({})), "");
    }
}
