//! YAML read as kube-apiserver reads it (sigs.k8s.io/yaml over go-yaml v2): a request body
//! (POST, PUT, apply) as its first document, a manifest file as all its documents, as JSON.
//!
//! Invariants: plain scalars resolve as YAML 1.1 does in go-yaml v2 (`null`, `~` and the empty
//! scalar are null; `true`, `yes`, `on`, `y` and their capitalized forms are true, their
//! opposites false; decimal, octal `0…`, hexadecimal `0x…` and binary `0b…` integers; floats),
//! quoted scalars are strings; mapping keys become strings (`on:` is the key `"true"`);
//! aliases expand to their anchor's value; of duplicate keys the last wins, and each
//! duplicate is reported with its line, as go-yaml's strict decoding reports it; collections
//! nest at most 128 deep, and aliases expand to at most a million values.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// How deep collections may nest (JSON bodies are limited the same way by their decoder).
const MAX_DEPTH: usize = 128;

/// A decoded YAML document.
#[derive(Debug)]
pub(crate) struct Document {
    /// The document as JSON (`null` for an empty body).
    pub(crate) value: Value,
    /// go-yaml's strict-decoding complaints: `line N: key "k" already set in map`.
    pub(crate) duplicates: Vec<String>,
}

/// Decodes the first YAML document of `text`; the error is the parser's message.
pub(crate) fn decode(text: &str) -> Result<Document, String> {
    let mut b = Builder::default();
    let mut parser = Parser::new_from_str(text);
    parser.load(&mut b, false).map_err(|e| e.to_string())?;
    if let Some(e) = b.error {
        return Err(e);
    }
    Ok(Document { value: b.root.unwrap_or(Value::Null), duplicates: b.duplicates })
}

/// Decodes every document of a YAML stream (an empty document is `null`); anchors do not
/// reach from one document into the next, and of duplicate keys the last wins.
pub(crate) fn decode_all(text: &str) -> Result<Vec<Value>, String> {
    let mut b = Builder { multi: true, ..Builder::default() };
    let mut parser = Parser::new_from_str(text);
    parser.load(&mut b, true).map_err(|e| e.to_string())?;
    if let Some(e) = b.error {
        return Err(e);
    }
    Ok(b.documents)
}

enum Frame {
    Seq(Vec<Value>, usize, usize),
    Map { map: Map<String, Value>, key: Option<(String, usize)>, anchor: usize, nodes: usize },
}

/// The most values aliases may expand to (a document of aliases of aliases grows exponentially).
const MAX_ALIASED_NODES: usize = 1_000_000;

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    root: Option<Value>,
    /// Anchored values and how many values each holds.
    anchors: HashMap<usize, (Value, usize)>,
    /// How many values aliases expanded to so far.
    aliased: usize,
    duplicates: Vec<String>,
    error: Option<String>,
    done: bool,
    /// Whether every document is read (into `documents`), not only the first.
    multi: bool,
    documents: Vec<Value>,
}

impl Builder {
    /// Places a finished value (holding `nodes` values) in its parent (or as the document).
    fn put(&mut self, v: Value, line: usize, nodes: usize) {
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(v);
                }
                self.done = !self.multi;
            }
            Some(Frame::Seq(items, _, n)) => {
                items.push(v);
                *n += nodes;
            }
            Some(Frame::Map { map, key, nodes: n, .. }) => match key.take() {
                None => match key_string(&v) {
                    Ok(k) => *key = Some((k, line)),
                    Err(e) => self.error = self.error.take().or(Some(e)),
                },
                Some((k, key_line)) => {
                    *n += nodes;
                    if map.insert(k.clone(), v).is_some() {
                        self.duplicates.push(format!("line {key_line}: key {k:?} already set in map"));
                    }
                }
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.done {
            return;
        }
        let line = mark.line();
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                let v = scalar(&text, style, tag.as_ref().map(|t| t.suffix.as_str()));
                if anchor > 0 {
                    self.anchors.insert(anchor, (v.clone(), 1));
                }
                self.put(v, line, 1);
            }
            Event::SequenceStart(..) | Event::MappingStart(..) if self.stack.len() >= MAX_DEPTH => {
                self.error = Some(format!("exceeded max depth of {MAX_DEPTH}"));
                self.done = true;
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq(Vec::new(), anchor, 0)),
            Event::MappingStart(anchor, _) => {
                self.stack.push(Frame::Map { map: Map::new(), key: None, anchor, nodes: 0 })
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (v, anchor, nodes) = match self.stack.pop() {
                    Some(Frame::Seq(items, a, n)) => (Value::Array(items), a, n + 1),
                    Some(Frame::Map { map, anchor, nodes, .. }) => (Value::Object(map), anchor, nodes + 1),
                    None => return,
                };
                if anchor > 0 {
                    self.anchors.insert(anchor, (v.clone(), nodes));
                }
                self.put(v, line, nodes);
            }
            Event::Alias(id) => {
                let (v, nodes) = self.anchors.get(&id).cloned().unwrap_or((Value::Null, 1));
                self.aliased += nodes;
                if self.aliased > MAX_ALIASED_NODES {
                    self.error = Some("document contains excessive aliasing".into());
                    self.done = true;
                    return;
                }
                self.put(v, line, nodes);
            }
            Event::DocumentEnd if self.multi => {
                self.documents.push(self.root.take().unwrap_or(Value::Null));
                self.anchors.clear();
                self.aliased = 0;
            }
            Event::DocumentEnd => {
                if self.root.is_some() {
                    self.done = true;
                }
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentStart => {}
        }
    }
}

/// A mapping key as sigs.k8s.io/yaml turns it into a JSON key.
fn key_string(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(format!("unsupported map key: {other}")),
    }
}

/// The value of a scalar: plain scalars resolve as in go-yaml v2, others are strings.
fn scalar(text: &str, style: TScalarStyle, tag: Option<&str>) -> Value {
    match tag {
        Some("str") => return Value::String(text.to_string()),
        Some("null") => return Value::Null,
        Some("bool" | "int" | "float") => return resolve(text).unwrap_or_else(|| Value::String(text.to_string())),
        _ => {}
    }
    if style != TScalarStyle::Plain {
        return Value::String(text.to_string());
    }
    resolve(text).unwrap_or_else(|| Value::String(text.to_string()))
}

fn resolve(text: &str) -> Option<Value> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Some(Value::Null),
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Some(Value::Bool(true));
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Some(Value::Bool(false));
        }
        _ => {}
    }
    let first = *text.as_bytes().first()?;
    if !(first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.')) {
        return None;
    }
    let plain = text.replace('_', "");
    let (negative, digits) = match plain.as_bytes().first() {
        Some(b'-') => (true, &plain[1..]),
        Some(b'+') => (false, &plain[1..]),
        _ => (false, plain.as_str()),
    };
    let int = if let Some(hex) = digits.strip_prefix("0x") {
        i128::from_str_radix(hex, 16).ok()
    } else if let Some(bin) = digits.strip_prefix("0b") {
        i128::from_str_radix(bin, 2).ok()
    } else if digits.len() > 1 && digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit()) {
        i128::from_str_radix(&digits[1..], 8).ok()
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse::<i128>().ok()
    } else {
        None
    };
    if let Some(i) = int {
        let i = if negative { -i } else { i };
        if let Ok(i) = i64::try_from(i) {
            return Some(Value::Number(i.into()));
        }
        if let Ok(u) = u64::try_from(i) {
            return Some(Value::Number(u.into()));
        }
    }
    if let Some(f) = crate::yaml_resolve::float(text) {
        // Written to JSON as Go writes a float64: a whole number without a fraction
        // (`1.0` and `1e3` are the integers 1 and 1000 to the decoder).
        if let Some(i) = crate::go_types::whole_int(f) {
            return Some(Value::Number(i.into()));
        }
        return Number::from_f64(f).map(Value::Number);
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn yaml_reads_as_go_yaml_v2_reads_it() {
        let d = decode(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n  labels:\n    on: yes\n    n: '1'\nspec:\n  replicas: 3\n  ratio: 1.5\n  whole: 2.0\n  big: 1e3\n  hex: 0x10\n  octal: 010\n  none: ~\n  list: [a, \"b\", 3]\n",
        )
        .unwrap();
        assert_eq!(
            d.value,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "api", "labels": {"true": true, "false": "1"}},
                "spec": {"replicas": 3, "ratio": 1.5, "whole": 2, "big": 1000, "hex": 16, "octal": 8, "none": null, "list": ["a", "b", 3]}})
        );
        assert!(d.duplicates.is_empty());
        let d = decode("a: 1\nb:\n  c: 2\n  c: 3\n").unwrap();
        assert_eq!(d.value, json!({"a": 1, "b": {"c": 3}}));
        assert_eq!(d.duplicates, ["line 4: key \"c\" already set in map"]);
        // JSON is YAML.
        assert_eq!(
            decode("{\"a\": [1, 2.5, \"x\"], \"b\": null}").unwrap().value,
            json!({"a": [1, 2.5, "x"], "b": null})
        );
        assert_eq!(decode("").unwrap().value, Value::Null);
        assert_eq!(decode("base: &b {x: 1}\nother: *b\n").unwrap().value, json!({"base": {"x": 1}, "other": {"x": 1}}));
        assert!(decode("a: [1, 2\n").is_err());
        assert!(decode(&format!("{}1{}", "[".repeat(200), "]".repeat(200))).is_err());
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            bomb.push_str(&format!("a{i}: &a{i} [{}]\n", vec![format!("*a{}", i - 1); 10].join(", ")));
        }
        assert_eq!(decode(&bomb).unwrap_err(), "document contains excessive aliasing");
        assert_eq!(decode("[_, +, -x, -1]").unwrap().value, json!(["_", "+", "-x", -1]));
        // Floats after a dot are Go's ParseFloat's: underscores only between digits.
        assert_eq!(decode("[.5, .5_0, ._5, .5_, 1_000.5]").unwrap().value, json!([0.5, 0.5, "._5", ".5_", 1000.5]));
    }

    #[test]
    fn a_stream_reads_as_its_documents() {
        let docs = decode_all("a: yes\nb: &x [1]\n---\n# nothing\n---\nc: 010\nc: 2\n...\n---\n- {d: ~}\n").unwrap();
        assert_eq!(docs, [json!({"a": true, "b": [1]}), Value::Null, json!({"c": 2}), json!([{"d": null}])]);
        assert_eq!(decode_all("{\"a\": 1}").unwrap(), [json!({"a": 1})]);
        assert!(decode_all("").unwrap().is_empty());
        // An anchor belongs to its document.
        assert!(decode_all("a: &x 1\n---\nb: *x\n").unwrap_err().contains("unknown anchor"));
        assert!(decode_all("a: 1\n---\nb: [2\n").is_err());
    }
}
