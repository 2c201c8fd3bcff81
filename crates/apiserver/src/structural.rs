//! Structural schemas of custom resources (a CustomResourceDefinition version's
//! `openAPIV3Schema`): pruning unknown fields, defaulting, and validating an object, as
//! kube-apiserver's apiextensions server does on every write (and defaulting on every read).
//!
//! Invariants: the schema is read as written (no compilation step, so what the registry keeps
//! is what is applied); at the root `apiVersion`, `kind` and `metadata` are never pruned, and
//! inside `x-kubernetes-embedded-resource` objects neither are `apiVersion`, `kind` and
//! `metadata`; `x-kubernetes-preserve-unknown-fields` keeps what the schema does not name;
//! defaults are applied where a field is absent (or null and not `nullable`), and apply
//! inside defaulted values too; validation reports kube's causes (reason, field path, message)
//! in the order kube-openapi's validators run: a node's type first (a value of the wrong type is
//! then judged by `allOf`/`anyOf`/`oneOf`/`not` and its enum only), the combinations, a
//! string's bounds and format ([`crate::schema_formats`]) or a number's `multipleOf`, minimum
//! and maximum, a list's items then its size, the enum, then an object's size, its properties
//! by name and its `required` fields. `x-kubernetes-validations` (CEL) rules are
//! evaluated after this validation, by `validation_rules`.

use serde_json::Value;

/// One validation failure, as a cause of kube's 422.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// kube's cause reason (`FieldValueInvalid`, `FieldValueRequired`…).
    pub reason: &'static str,
    /// The message (`Invalid value: -1: spec.replicas in body should be …`).
    pub message: String,
    /// The field path (`spec.replicas`).
    pub field: String,
}

fn flag(node: &Value, key: &str) -> bool {
    node.get(key).and_then(Value::as_bool) == Some(true)
}

/// `key` below `path`, as kube prints field paths (`spec.replicas`).
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// Removes the fields of `obj` (a whole custom resource) that `schema` does not allow; returns
/// their paths, in key order.
pub fn prune(schema: &Value, obj: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    prune_node(schema, obj, "", (true, false), &mut unknown);
    unknown
}

/// Prunes `v` under `node`; `keep`: its unknown fields are kept whatever `node` says (kube's
/// `skipPrune` of the items of a list that preserves unknown fields, at any depth of lists).
fn prune_node(node: &Value, v: &mut Value, path: &str, (root, keep): (bool, bool), unknown: &mut Vec<String>) {
    let preserve = keep || flag(node, "x-kubernetes-preserve-unknown-fields");
    match v {
        Value::Object(m) => {
            let props = node.get("properties").and_then(Value::as_object);
            let additional = node.get("additionalProperties").filter(|a| a.is_object());
            let embedded = flag(node, "x-kubernetes-embedded-resource");
            let mut removed = Vec::new();
            for (k, child) in m.iter_mut() {
                if (root || embedded) && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    if let Some(s) = props.and_then(|p| p.get(k))
                        && k != "metadata"
                    {
                        prune_node(s, child, &join(path, k), (false, false), unknown);
                    }
                    continue;
                }
                match (props.and_then(|p| p.get(k)), additional) {
                    (Some(s), _) => prune_node(s, child, &join(path, k), (false, false), unknown),
                    (None, Some(s)) => prune_node(s, child, &join(path, k), (false, false), unknown),
                    (None, None) if preserve => {}
                    (None, None) => {
                        unknown.push(join(path, k));
                        removed.push(k.clone());
                    }
                }
            }
            for k in removed {
                m.remove(&k);
            }
        }
        Value::Array(items) => {
            if let Some(s) = node.get("items").filter(|s| s.is_object()) {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_node(s, item, &format!("{path}[{i}]"), (false, preserve), unknown);
                }
            }
        }
        _ => {}
    }
}

/// Fills the schema's defaults into `obj` (a whole custom resource).
pub fn default(schema: &Value, obj: &mut Value) {
    default_node(schema, obj);
}

fn default_node(node: &Value, v: &mut Value) {
    let schema_default = |s: &Value| s.get("default").cloned().unwrap_or(Value::Null);
    match v {
        Value::Object(m) => {
            let props = node.get("properties").and_then(Value::as_object);
            for (k, s) in props.into_iter().flatten() {
                let Some(d) = s.get("default") else { continue };
                match m.get(k) {
                    None => {
                        m.insert(k.clone(), d.clone());
                    }
                    Some(Value::Null) if !flag(s, "nullable") => {
                        m.insert(k.clone(), d.clone());
                    }
                    Some(_) => {}
                }
            }
            let additional = node.get("additionalProperties").filter(|a| a.is_object());
            for (k, child) in m.iter_mut() {
                if let Some(s) = props.and_then(|p| p.get(k)) {
                    default_node(s, child);
                } else if let Some(s) = additional {
                    if child.is_null() && !flag(s, "nullable") {
                        *child = schema_default(s);
                    }
                    default_node(s, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = node.get("items").filter(|s| s.is_object()) {
                for item in items {
                    if item.is_null() && !flag(s, "nullable") {
                        *item = schema_default(s);
                    }
                    default_node(s, item);
                }
            }
        }
        _ => {}
    }
}

/// Whether pruning `v` by `node` (a schema node below the root) would remove anything.
pub(crate) fn has_unknown_fields(node: &Value, v: &Value) -> bool {
    let mut unknown = Vec::new();
    prune_node(node, &mut v.clone(), "", (false, false), &mut unknown);
    !unknown.is_empty()
}

/// Validates `v` against `node` (a schema node below the root), naming it `path`.
pub(crate) fn validate_value(node: &Value, v: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    validate_node(node, v, None, path, &mut causes);
    causes
}

/// Validates `obj` (a whole custom resource, pruned and defaulted) against `schema`; `old` is
/// the object an update replaces. As kube ratchets validation, a value left as it was (or
/// below one: a property by name, a map value by key, a map-type list's item by its keys) is
/// not judged again, so objects stored before the schema was tightened can still be changed
/// elsewhere.
pub fn validate(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if old == Some(obj) {
        return causes;
    }
    combinators(schema, obj, old, "", &mut causes);
    if let (Some(props), Value::Object(m)) = (schema.get("properties").and_then(Value::as_object), obj) {
        // The root's own constraints on apiVersion, kind and metadata are kube's, not the schema's.
        let mut keys: Vec<&String> =
            m.keys().filter(|k| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata")).collect();
        keys.sort();
        for k in keys {
            if let Some(s) = props.get(k) {
                validate_node(s, &m[k], old.and_then(|o| o.get(k.as_str())), k, &mut causes);
            }
        }
        // Of the metadata, the schema may restrict the name and generateName alone.
        let meta_schema = props.get("metadata").and_then(|s| s.get("properties"));
        for f in ["name", "generateName"] {
            let v = m.get("metadata").and_then(|meta| meta.get(f));
            if let (Some(s), Some(v)) = (meta_schema.and_then(|p| p.get(f)), v) {
                let old = old.and_then(|o| o.get("metadata")).and_then(|meta| meta.get(f));
                validate_node(s, v, old, &format!("metadata.{f}"), &mut causes);
            }
        }
        for r in required(schema) {
            if !matches!(r, "apiVersion" | "kind" | "metadata") && !m.contains_key(r) {
                causes.push(Cause { reason: "FieldValueRequired", message: "Required value".into(), field: r.into() });
            }
        }
    }
    causes
}

/// The value validations `allOf`, `anyOf`, `oneOf` and `not` of `node` on `v` (`old` the value
/// an update replaces, for the alternatives' ratcheting), as kube's OpenAPI validator judges
/// them (in that validator's order: `anyOf`, `oneOf`, `allOf`, `not`): a combination that fails
/// adds a cause without a field (`<nil>`, kube's path of an error that is not a field's) naming
/// the value's path, then the faults of the alternative kube reports: for `anyOf` and a `oneOf`
/// that none validates, the failing alternative whose checks matched most (the first among
/// equals); for `allOf`, every alternative's.
fn combinators(node: &Value, v: &Value, old: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    let alternatives = |k: &str| node.get(k).and_then(Value::as_array).filter(|a| !a.is_empty());
    let judged = |s: &Value| {
        let mut found = Vec::new();
        validate_node(s, v, old, path, &mut found);
        found
    };
    let composite = |text: String| Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: \"\": {} {text}", go_quote(path)),
        field: "<nil>".into(),
    };
    // The failing alternative kube reports: the most checks matched, the first among equals.
    let best = |failures: Vec<(usize, Vec<Cause>)>| {
        let mut best: Option<(usize, Vec<Cause>)> = None;
        for (count, found) in failures {
            if best.as_ref().is_none_or(|(b, _)| count > *b) {
                best = Some((count, found));
            }
        }
        best.map(|(_, found)| found).unwrap_or_default()
    };
    if let Some(any) = alternatives("anyOf") {
        let mut failures = Vec::new();
        let mut valid = false;
        for s in any {
            let found = judged(s);
            if found.is_empty() {
                valid = true;
                break;
            }
            failures.push((match_count(s, v), found));
        }
        if !valid {
            causes.push(composite("must validate at least one schema (anyOf)".into()));
            causes.extend(best(failures));
        }
    }
    if let Some(one) = alternatives("oneOf") {
        let mut failures = Vec::new();
        let mut valid = 0;
        for s in one {
            let found = judged(s);
            if found.is_empty() {
                valid += 1;
            } else if valid == 0 {
                failures.push((match_count(s, v), found));
            }
        }
        match valid {
            1 => {}
            0 => {
                causes.push(composite("must validate one and only one schema (oneOf). Found none valid".into()));
                causes.extend(best(failures));
            }
            n => causes.push(composite(format!(
                "must validate one and only one schema (oneOf). Found {n} valid alternatives"
            ))),
        }
    }
    if let Some(all) = alternatives("allOf") {
        let mut valid = 0;
        for s in all {
            let found = judged(s);
            valid += usize::from(found.is_empty());
            causes.extend(found);
        }
        if valid < all.len() {
            let none = if valid == 0 { ". None validated" } else { "" };
            causes.push(composite(format!("must validate all the schemas (allOf){none}")));
        }
    }
    if let Some(not) = node.get("not").filter(|n| n.is_object())
        && judged(not).is_empty()
    {
        causes.push(composite("must not validate the schema (not)".into()));
    }
}

/// How many checks of kube's OpenAPI validator apply when `node` judges `v` (its `MatchCount`):
/// at every node reached, the type, combination and enum checks and the check of the value's
/// kind (with a format's for a string), then the nodes below that the value has.
fn match_count(node: &Value, v: &Value) -> usize {
    let here = match v {
        Value::String(_) if node.get("format").is_some() => 5,
        Value::Null | Value::Bool(_) => 3,
        _ => 4,
    };
    let below: usize = match v {
        Value::Object(m) => {
            let props = node.get("properties").and_then(Value::as_object);
            let additional = node.get("additionalProperties").filter(|a| a.is_object());
            m.iter().filter_map(|(k, c)| props.and_then(|p| p.get(k)).or(additional).map(|s| match_count(s, c))).sum()
        }
        Value::Array(items) => match node.get("items").filter(|s| s.is_object()) {
            Some(s) => items.iter().map(|i| match_count(s, i)).sum(),
            None => 0,
        },
        _ => 0,
    };
    here + below
}

/// Validates the `status` of `obj` (a whole custom resource) against the status's part of
/// `schema`, as kube judges a write through `/status`: the status is judged as a value of its
/// own (messages name paths below it), and the causes' fields are put under `status`; `old` is
/// the object the write replaces.
pub fn validate_status(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let (Some(node), Some(status)) = (schema.pointer("/properties/status"), obj.get("status")) {
        validate_node(node, status, old.and_then(|o| o.get("status")), "", &mut causes);
    }
    for c in &mut causes {
        c.field = match c.field.as_str() {
            "" | "<nil>" => "status".into(),
            f if f.starts_with('[') => format!("status{f}"),
            f => format!("status.{f}"),
        };
    }
    causes
}

fn required(node: &Value) -> impl Iterator<Item = &str> {
    node.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
}

/// The JSON type of a value as the OpenAPI validator names it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value as kube's field errors print it (since v1.34): scalars as Go's `%v` prints them, a string
/// quoted, lists and maps as Go's `json.Marshal` writes them (keys sorted, `<`, `>` and `&`
/// escaped).
pub fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_i64() => n.to_string(),
        // Go decodes any other number as a float64, which `%v` prints.
        Value::Number(n) => crate::go_fmt::float(n.as_f64().unwrap_or_default()),
        Value::String(s) => go_quote(s),
        Value::Array(_) | Value::Object(_) => go_json(v),
    }
}

/// A struct of kube's internal types as its field errors print it: JSON with Go's field names
/// (the internal types have no JSON names of their own), every field in the struct's order, each
/// value already written (`null` for a nil pointer or slice).
pub(crate) fn go_struct(fields: &[(&str, String)]) -> String {
    let body: Vec<String> = fields.iter().map(|(go, value)| format!("\"{go}\":{value}")).collect();
    format!("{{{}}}", body.join(","))
}

/// A member of a struct as kube's field errors print it: its JSON as Go writes it (`null` when
/// absent).
pub(crate) fn go_member(v: &Value, key: &str) -> String {
    go_json(v.get(key).unwrap_or(&Value::Null))
}

/// A string member of a struct as kube's field errors print it (`""` when absent).
pub(crate) fn go_string_member(v: &Value, key: &str) -> String {
    go_json(&Value::from(v.get(key).and_then(Value::as_str).unwrap_or("")))
}

/// An integer member of a struct held by value, as kube's field errors print it (0 when absent).
pub(crate) fn go_int_member(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_i64).unwrap_or(0).to_string()
}

/// A list of structs, each written by `each`, as kube's field errors print it: `null` when
/// absent, `[]` when empty (Go keeps a decoded empty list).
pub(crate) fn go_structs(v: Option<&Value>, each: impl Fn(&Value) -> String) -> String {
    match v.and_then(Value::as_array) {
        Some(items) => format!("[{}]", items.iter().map(each).collect::<Vec<_>>().join(",")),
        None => "null".into(),
    }
}

/// A struct held by pointer, written by `each`: `null` when absent.
pub(crate) fn go_pointer(v: Option<&Value>, each: impl Fn(&Value) -> String) -> String {
    match v {
        Some(x) if x.is_object() => each(x),
        _ => "null".into(),
    }
}

/// `v` as Go's `json.Marshal` writes it: keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped,
/// a float as Go's encoder writes a `float64` (`1` for 1.0, `1e+21`, `1e-7`).
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(v, &mut out);
    out
}

fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            out.push('{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&go_json_string(k));
                out.push(':');
                write_go_json(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(x, out);
            }
            out.push(']');
        }
        Value::String(s) => out.push_str(&go_json_string(s)),
        // Go decodes every number that is not an int64 as a float64.
        Value::Number(n) if !n.is_i64() => out.push_str(&go_json_float(n.as_f64().unwrap_or_default())),
        other => out.push_str(&other.to_string()),
    }
}

fn go_json_string(s: &str) -> String {
    serde_json::to_string(s)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// A `float64` as Go's JSON encoder writes it: the shortest digits, in the exponent form below
/// 1e-6 and from 1e21 on (a two-digit negative exponent written without its leading zero).
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let e = format!("{f:e}");
        match e.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => e,
        }
    } else {
        format!("{f}")
    }
}

/// Go's `%q` of a string (JSON's escaping is the same for what CRs hold).
pub fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn invalid(path: &str, v: &Value, detail: String) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {}: {detail}", go_value(v)),
        field: path.to_string(),
    }
}

fn type_invalid(path: &str, shown: &str, detail: String) -> Cause {
    Cause {
        reason: "FieldValueTypeInvalid",
        message: format!("Invalid value: {}: {detail}", go_quote(shown)),
        field: path.to_string(),
    }
}

fn number(n: &Value) -> Option<f64> {
    n.as_f64()
}

/// Validates `v` against its schema `node` as kube-openapi's schema validator does: for a null,
/// its type (unless nullable or untyped) and enum only; for a value of the wrong type, the
/// combinations and the enum still (every validator that applies to the value's kind); else
/// the combinations, the string's or number's bounds, a list's items then its size, the enum,
/// an object's size then its members and required fields. A value equal to its old one is not judged again (validation ratcheting).
fn validate_node(node: &Value, v: &Value, old: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    if old == Some(v) {
        return;
    }
    let actual = type_name(v);
    if v.is_null() && (flag(node, "nullable") || node.get("type").is_none()) {
        check_enum(node, v, path, causes);
        return;
    }
    let expected = if flag(node, "x-kubernetes-int-or-string") {
        (!matches!(actual, "integer" | "string")).then_some("integer,string")
    } else {
        node.get("type").and_then(Value::as_str).filter(|t| !(*t == actual || (*t == "number" && actual == "integer")))
    };
    if let Some(t) = expected {
        causes.push(type_invalid(path, actual, format!("{path} in body must be of type {t}: {}", go_quote(actual))));
        if !v.is_null() {
            combinators(node, v, old, path, causes);
        }
        check_enum(node, v, path, causes);
        return;
    }
    combinators(node, v, old, path, causes);
    match v {
        Value::String(s) => {
            if let Some(max) = node.get("maxLength").and_then(Value::as_u64)
                && s.chars().count() as u64 > max
            {
                let unit = if max == 1 { "byte" } else { "bytes" };
                causes.push(Cause {
                    reason: "FieldValueTooLong",
                    message: format!("Too long: may not be more than {max} {unit}"),
                    field: path.into(),
                });
            }
            if let Some(min) = node.get("minLength").and_then(Value::as_u64)
                && (s.chars().count() as u64) < min
            {
                causes.push(invalid(path, v, format!("{path} in body should be at least {min} chars long")));
            }
            if let Some(p) = node.get("pattern").and_then(Value::as_str)
                && regex::Regex::new(p).is_ok_and(|re| !re.is_match(s))
            {
                causes.push(invalid(path, v, format!("{path} in body should match '{p}'")));
            }
            if let Some(f) = node.get("format").and_then(Value::as_str)
                && !crate::schema_formats::format_ok(f, s)
            {
                causes.push(type_invalid(path, s, format!("{path} in body must be of type {f}: {}", go_quote(s))));
            }
        }
        // Numbers' formats (int32, int64, float, double) are among those kube strips from a
        // custom resource's schema: not checked.
        Value::Number(_) => {
            let x = number(v).unwrap_or_default();
            let bound = |b: &Value| fmt_bound(b, v);
            let exclusive = |k: &str| flag(node, k);
            if let Some(of) = node.get("multipleOf").filter(|m| m.as_f64().is_some_and(|f| f > 0.0)) {
                let f = of.as_f64().unwrap_or(1.0);
                if ((x / f) - (x / f).round()).abs() > 1e-9 {
                    causes.push(invalid(path, v, format!("{path} in body should be a multiple of {}", bound(of))));
                }
            }
            if let Some(min) = node.get("minimum").filter(|m| m.is_number()) {
                let m = number(min).unwrap_or_default();
                if exclusive("exclusiveMinimum") && x <= m {
                    causes.push(invalid(path, v, format!("{path} in body should be greater than {}", bound(min))));
                } else if x < m {
                    causes.push(invalid(
                        path,
                        v,
                        format!("{path} in body should be greater than or equal to {}", bound(min)),
                    ));
                }
            }
            if let Some(max) = node.get("maximum").filter(|m| m.is_number()) {
                let m = number(max).unwrap_or_default();
                if exclusive("exclusiveMaximum") && x >= m {
                    causes.push(invalid(path, v, format!("{path} in body should be less than {}", bound(max))));
                } else if x > m {
                    causes.push(invalid(
                        path,
                        v,
                        format!("{path} in body should be less than or equal to {}", bound(max)),
                    ));
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = node.get("items").filter(|s| s.is_object()) {
                let keys = map_keys(node);
                let olds = old.and_then(Value::as_array).filter(|_| !keys.is_empty());
                for (i, item) in items.iter().enumerate() {
                    // Only a map-type list's items correlate with old ones (by their keys).
                    let old_item = olds.and_then(|o| o.iter().find(|o| keys.iter().all(|k| o.get(*k) == item.get(*k))));
                    validate_node(s, item, old_item, &format!("{path}[{i}]"), causes);
                }
            }
            check_size(node, ("minItems", "maxItems", "items"), items.len(), path, causes);
            if flag(node, "uniqueItems") && items.iter().enumerate().any(|(i, a)| items[..i].contains(a)) {
                causes.push(invalid(path, v, format!("{path} in body shouldn't contain duplicates")));
            }
        }
        _ => {}
    }
    check_enum(node, v, path, causes);
    let Value::Object(m) = v else { return };
    check_size(node, ("minProperties", "maxProperties", "properties"), m.len(), path, causes);
    let props = node.get("properties").and_then(Value::as_object);
    let additional = node.get("additionalProperties").filter(|a| a.is_object());
    let embedded = flag(node, "x-kubernetes-embedded-resource");
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    for k in keys {
        if embedded && k == "metadata" {
            continue;
        }
        match (props.and_then(|p| p.get(k)), additional) {
            (Some(s), _) | (None, Some(s)) => {
                validate_node(s, &m[k], old.and_then(|o| o.get(k.as_str())), &join(path, k), causes)
            }
            _ => {}
        }
    }
    for r in required(node) {
        if !m.contains_key(r) {
            causes.push(Cause { reason: "FieldValueRequired", message: "Required value".into(), field: join(path, r) });
        }
    }
}

/// A list's or an object's size against the schema's bounds (`min`, `max` keywords; `unit` as
/// kube's "at least" message counts): the size is the invalid value, and "Too many" is counted
/// in items whatever was counted, as kube words it.
fn check_size(node: &Value, (min, max, unit): (&str, &str, &str), len: usize, path: &str, causes: &mut Vec<Cause>) {
    let len = len as u64;
    if let Some(min) = node.get(min).and_then(Value::as_u64)
        && len < min
    {
        causes.push(invalid(path, &len.into(), format!("{path} in body should have at least {min} {unit}")));
    }
    if let Some(max) = node.get(max).and_then(Value::as_u64)
        && len > max
    {
        causes.push(Cause {
            reason: "FieldValueTooMany",
            message: format!("Too many: {len}: must have at most {max} items"),
            field: path.into(),
        });
    }
}

/// The enum's refusal of `v`, as kube-openapi's common validator judges it: a value matches an
/// allowed one it converts to as Go converts (an integer to a float, a float to an integer by
/// truncation, an integer to a string as a character); a null matches nothing, not even a
/// `null` the enum lists. The allowed values print as strings or as their JSON.
fn check_enum(node: &Value, v: &Value, path: &str, causes: &mut Vec<Cause>) {
    let Some(allowed) = node.get("enum").and_then(Value::as_array).filter(|a| !a.is_empty()) else { return };
    if allowed.iter().any(|a| go_converts_to(v, a)) {
        return;
    }
    let values: Vec<String> = allowed
        .iter()
        .map(|a| match a {
            Value::String(s) => go_quote(s),
            other => go_quote(&go_json(other)),
        })
        .collect();
    causes.push(Cause {
        reason: "FieldValueNotSupported",
        message: format!("Unsupported value: {}: supported values: {}", go_value(v), values.join(", ")),
        field: path.into(),
    });
}

/// Whether `v`, converted to the Go type of `allowed` (when Go converts it), equals it.
fn go_converts_to(v: &Value, allowed: &Value) -> bool {
    let int = |n: &serde_json::Number| n.as_i64();
    match (v, allowed) {
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Number(a), Value::Number(b)) => match (int(a), int(b)) {
            (Some(x), Some(y)) => x == y,
            // An integer converts to a float64; a float64 to an int64 by truncation.
            (Some(x), None) => b.as_f64() == Some(x as f64),
            (None, Some(y)) => a.as_f64().is_some_and(|f| f.trunc() == y as f64),
            (None, None) => a.as_f64() == b.as_f64(),
        },
        (Value::Number(a), Value::String(s)) => {
            // Go's string(rune(n)): the character, or U+FFFD for no valid one.
            int(a).is_some_and(|n| {
                let c = u32::try_from(n).ok().and_then(char::from_u32).unwrap_or('\u{FFFD}');
                s.chars().eq(std::iter::once(c))
            })
        }
        (a, b) => a == b,
    }
}

/// A schema's bound as kube's message prints it: an integral bound of an integer as an `int64`,
/// any other as `%v` prints a `float64` (`0` for `0.0`).
fn fmt_bound(bound: &Value, v: &Value) -> String {
    let b = bound.as_f64().unwrap_or_default();
    if v.is_i64() && b.fract() == 0.0 && b.abs() < 9.2e18 {
        return format!("{}", b as i64);
    }
    crate::go_fmt::float(b)
}

/// The keys of a `x-kubernetes-list-type: map` list; empty for other lists.
pub(crate) fn map_keys(node: &Value) -> Vec<&str> {
    if node.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") {
        return Vec::new();
    }
    node.get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Removes from `obj` the nulls its schema allows neither as a value nor through a default (kube
/// prunes them before defaulting): properties and map values, at every depth (list items stay,
/// for defaulting to replace or validation to refuse).
pub fn drop_nulls(schema: &Value, obj: &mut Value) {
    drop_nulls_below(schema, obj, true);
}

fn drop_nulls_below(schema: &Value, obj: &mut Value, root: bool) {
    match obj {
        Value::Object(m) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            m.retain(|k, child| {
                let Some(s) = props.and_then(|p| p.get(k)).or(additional) else { return true };
                // The root's metadata is kube's own, whatever the schema says of it.
                if child.is_null() && !flag(s, "nullable") && s.get("default").is_none() && !(root && k == "metadata") {
                    return false;
                }
                drop_nulls_below(s, child, false);
                true
            });
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items").filter(|s| s.is_object()) {
                for item in items {
                    drop_nulls_below(s, item, false);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gadget() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["replicas"], "properties": {
                "replicas": {"type": "integer", "minimum": 0},
                "mode": {"type": "string", "enum": ["safe", "fast"], "default": "safe"},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 3}},
                "port": {"x-kubernetes-int-or-string": true}}},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}})
    }

    fn faults(schema: Value, obj: Value) -> Vec<String> {
        validate(&schema, &obj, None).iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn a_list_that_preserves_unknown_fields_keeps_its_items_unknown_fields() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "kept": {"type": "array", "x-kubernetes-preserve-unknown-fields": true,
                     "items": {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}},
            "pruned": {"type": "array", "items": {"type": "object", "properties": {}}}}}}});
        let mut o = json!({"spec": {"kept": [{"x": 1, "a": {"y": 2}}], "pruned": [{"x": 1}]}});
        assert_eq!(prune(&schema, &mut o), ["spec.kept[0].a.y", "spec.pruned[0].x"]);
        assert_eq!(o["spec"], json!({"kept": [{"x": 1, "a": {}}], "pruned": [{}]}));
    }

    #[test]
    fn validators_run_in_kube_openapi_s_order_with_its_values() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "list": {"type": "array", "minItems": 1, "maxItems": 1, "items": {"type": "object", "required": ["name"]}},
            "map": {"type": "object", "minProperties": 2, "required": ["x"], "additionalProperties": {"type": "integer"}},
            "level": {"type": "string", "enum": ["A", "B"], "nullable": true},
            "either": {"type": "string", "enum": ["A", "B", null], "nullable": true},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "count": {"type": "integer", "format": "int32", "minimum": 0.0, "maximum": 10.0, "multipleOf": 2.0},
            "ratio": {"type": "number", "minimum": 0.5}}}}});
        let got = faults(
            schema.clone(),
            json!({"spec": {"list": [], "map": {"a": "x"}, "level": null, "either": null, "mode": 5,
                            "count": 3_000_000_000_i64, "ratio": 0.25}}),
        );
        assert_eq!(
            got,
            [
                "spec.count: Invalid value: 3000000000: spec.count in body should be less than or equal to 10",
                // A null matches no value, not even the `null` an enum lists.
                "spec.either: Unsupported value: null: supported values: \"A\", \"B\", \"null\"",
                "spec.level: Unsupported value: null: supported values: \"A\", \"B\"",
                "spec.list: Invalid value: 0: spec.list in body should have at least 1 items",
                "spec.map: Invalid value: 1: spec.map in body should have at least 2 properties",
                "spec.map.a: Invalid value: \"string\": spec.map.a in body must be of type integer: \"string\"",
                "spec.map.x: Required value",
                "spec.mode: Invalid value: \"integer\": spec.mode in body must be of type string: \"integer\"",
                "spec.mode: Unsupported value: 5: supported values: \"a\", \"b\"",
                "spec.ratio: Invalid value: 0.25: spec.ratio in body should be greater than or equal to 0.5",
            ]
        );
        // Numbers match an enum as Go converts them.
        let numbers = json!({"type": "object", "properties": {
            "n": {"type": "number", "enum": [1.0, 2]}, "i": {"type": "integer", "enum": [3.0]}}});
        assert!(faults(numbers.clone(), json!({"n": 1, "i": 3})).is_empty());
        assert!(faults(numbers.clone(), json!({"n": 2.5})).is_empty(), "2.5 truncates to 2");
        assert_eq!(faults(numbers, json!({"n": 3})), ["n: Unsupported value: 3: supported values: \"1\", \"2\""]);
        // A list's items are judged before its size.
        let got = faults(schema.clone(), json!({"spec": {"list": [{}, {"name": "n"}], "count": 3}}));
        assert_eq!(
            got,
            [
                "spec.count: Invalid value: 3: spec.count in body should be a multiple of 2",
                "spec.list[0].name: Required value",
                "spec.list: Too many: 2: must have at most 1 items",
            ]
        );
    }

    #[test]
    fn one_of_any_of_all_of_and_not_judge_as_kube() {
        // The shape kube-rs gives an enum whose variants carry data.
        let spec = |combinator: &str| {
            json!({"type": "object", "properties": {"spec": {
                "type": "object",
                combinator: [{"required": ["a"]}, {"required": ["b"]}],
                "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            }}})
        };
        assert!(faults(spec("oneOf"), json!({"spec": {"a": "x"}})).is_empty());
        assert_eq!(
            faults(spec("oneOf"), json!({"spec": {}})),
            [
                "<nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found none valid",
                "spec.a: Required value",
            ]
        );
        assert_eq!(
            faults(spec("oneOf"), json!({"spec": {"a": "x", "b": 1}})),
            [
                "<nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found 2 valid alternatives"
            ]
        );
        assert!(faults(spec("anyOf"), json!({"spec": {"a": "x", "b": 1}})).is_empty());
        assert_eq!(
            faults(spec("anyOf"), json!({"spec": {}})),
            [
                "<nil>: Invalid value: \"\": \"spec\" must validate at least one schema (anyOf)",
                "spec.a: Required value"
            ]
        );
        assert_eq!(
            faults(spec("allOf"), json!({"spec": {"a": "x"}})),
            ["spec.b: Required value", "<nil>: Invalid value: \"\": \"spec\" must validate all the schemas (allOf)"]
        );
        assert_eq!(
            faults(spec("allOf"), json!({"spec": {}})),
            [
                "spec.a: Required value",
                "spec.b: Required value",
                "<nil>: Invalid value: \"\": \"spec\" must validate all the schemas (allOf). None validated",
            ]
        );
        let not = json!({"type": "object", "properties": {"spec": {
            "type": "object", "not": {"required": ["legacy"]}, "properties": {"legacy": {"type": "string"}}}}});
        assert!(faults(not.clone(), json!({"spec": {}})).is_empty());
        assert_eq!(
            faults(not, json!({"spec": {"legacy": "x"}})),
            ["<nil>: Invalid value: \"\": \"spec\" must not validate the schema (not)"]
        );
        // Alternatives judge values below the node, and the root's own.
        let root = json!({"type": "object", "oneOf": [{"required": ["spec"]}, {"required": ["data"]}],
            "properties": {"spec": {"type": "object"}, "data": {"type": "object"}}});
        assert_eq!(
            faults(root, json!({})),
            [
                "<nil>: Invalid value: \"\": \"\" must validate one and only one schema (oneOf). Found none valid",
                "spec: Required value"
            ]
        );
    }

    #[test]
    fn nulls_go_or_take_defaults_below_lists_and_maps() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "sized": {"type": "array", "items": {"type": "integer", "default": 1}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "limits": {"type": "object", "additionalProperties": {"type": "integer", "default": 5}},
        }}}});
        let mut obj = json!({"spec": {
            "list": [{"a": null}, null],
            "sized": [null, 3],
            "labels": {"x": null, "y": "z"},
            "limits": {"cpu": null},
        }});
        drop_nulls(&schema, &mut obj);
        default(&schema, &mut obj);
        assert_eq!(
            obj,
            json!({"spec": {"list": [{}, null], "sized": [1, 3], "labels": {"y": "z"}, "limits": {"cpu": 5}}})
        );
    }

    #[test]
    fn a_wrong_type_is_judged_by_the_combinations_still() {
        // The shape of an IntOrString field.
        let schema = json!({"type": "object", "properties": {"field": {
            "x-kubernetes-int-or-string": true, "nullable": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]}}});
        assert!(faults(schema.clone(), json!({"field": 42})).is_empty());
        assert_eq!(
            faults(schema, json!({"field": true})),
            [
                "field: Invalid value: \"boolean\": field in body must be of type integer,string: \"boolean\"",
                "<nil>: Invalid value: \"\": \"field\" must validate at least one schema (anyOf)",
                "field: Invalid value: \"boolean\": field in body must be of type integer: \"boolean\"",
            ]
        );
    }

    #[test]
    fn the_alternative_that_matched_most_is_reported() {
        let schema = json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "c": {"type": "integer"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"], "properties": {"c": {"minimum": 0}}}]}}});
        assert_eq!(
            faults(schema, json!({"spec": {"c": -1}})),
            [
                "<nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found none valid",
                "spec.c: Invalid value: -1: spec.c in body should be greater than or equal to 0",
                "spec.b: Required value",
            ]
        );
    }

    #[test]
    fn a_status_is_judged_as_a_value_of_its_own() {
        let schema = json!({"type": "object", "properties": {"status": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "source": {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}}}});
        let judged = |obj: Value| -> Vec<String> {
            validate_status(&schema, &obj, None).iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
        };
        assert_eq!(
            judged(json!({"status": {"replicas": "x", "source": {}}})),
            [
                "status.replicas: Invalid value: \"string\": replicas in body must be of type integer: \"string\"",
                "status: Invalid value: \"\": \"source\" must validate one and only one schema (oneOf). Found none valid",
                "status.source.a: Required value",
            ]
        );
        assert_eq!(
            judged(json!({"status": 1})),
            ["status: Invalid value: \"integer\":  in body must be of type object: \"integer\""]
        );
    }

    #[test]
    fn floats_print_as_go_prints_them() {
        assert_eq!(go_value(&json!(1.0)), "1");
        assert_eq!(go_value(&json!(1e6)), "1e+06");
        assert_eq!(go_value(&json!(2.5)), "2.5");
    }

    #[test]
    fn the_schema_restricts_the_name() {
        let schema = json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"}}},
            "spec": {"type": "object"}}});
        assert!(faults(schema.clone(), json!({"metadata": {"name": "abc"}})).is_empty());
        assert_eq!(
            faults(schema, json!({"metadata": {"name": "abc-def"}})),
            [
                "metadata.name: Too long: may not be more than 5 bytes",
                "metadata.name: Invalid value: \"abc-def\": metadata.name in body should match '^[a-z]+$'",
            ]
        );
    }

    #[test]
    fn go_json_writes_numbers_and_strings_as_go() {
        let v = json!({"b": [1.0, 1.5, 1e21, 1e-7, 1.5e-10, 1e20, -0.0, 18446744073709551615u64], "a": "<&>"});
        assert_eq!(
            go_json(&v),
            r#"{"a":"\u003c\u0026\u003e","b":[1,1.5,1e+21,1e-7,1.5e-10,100000000000000000000,-0,18446744073709552000]}"#
        );
    }

    #[test]
    fn prunes_defaults_and_validates() {
        let s = gadget();
        let mut o = json!({"apiVersion": "a/v1", "kind": "G", "metadata": {"name": "x"}, "junk": 1,
                           "spec": {"replicas": 1, "color": "red", "extra": {"any": {"thing": 1}}}});
        assert_eq!(prune(&s, &mut o), ["junk", "spec.color"]);
        default(&s, &mut o);
        assert_eq!(o["spec"], json!({"replicas": 1, "mode": "safe", "extra": {"any": {"thing": 1}}}));
        assert!(validate(&s, &o, None).is_empty());
        let bad = json!({"spec": {"mode": "turbo", "tags": ["a", "b", "cdef"], "port": true}});
        let causes = validate(&s, &bad, None);
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["spec.mode", "spec.port", "spec.tags[2]", "spec.tags", "spec.replicas"]);
        assert_eq!(causes[2].message, "Too long: may not be more than 3 bytes");
        assert_eq!(causes[3].message, "Too many: 3: must have at most 2 items");
        let wrong = validate(&s, &json!({"spec": {"replicas": "two"}}), None);
        assert_eq!(
            wrong[0].message,
            "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
        );
    }

    #[test]
    fn values_left_as_they_were_are_not_judged_again() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "mode": {"type": "string", "maxLength": 3},
            "n": {"type": "integer"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer", "maximum": 100}}}},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 2}}
        }}}});
        let old = json!({"spec": {"mode": "fast", "n": 1, "ports": [{"name": "a", "port": 500}], "tags": ["long"]}});
        let fields =
            |new: Value| -> Vec<String> { validate(&s, &new, Some(&old)).into_iter().map(|c| c.field).collect() };
        // Only n changed: the values the schema now refuses were stored before and are kept.
        assert!(
            fields(json!({"spec": {"mode": "fast", "n": 2, "ports": [{"name": "a", "port": 500}], "tags": ["long"]}}))
                .is_empty()
        );
        // A map-type list's items correlate by key: a new item is judged, the old one is not.
        assert_eq!(
            fields(
                json!({"spec": {"mode": "fast", "ports": [{"name": "b", "port": 600}, {"name": "a", "port": 500}], "tags": ["long"]}})
            ),
            ["spec.ports[0].port"]
        );
        // A changed value, or an item of a changed list that is not a map, is judged.
        assert_eq!(
            fields(json!({"spec": {"mode": "slow", "ports": [{"name": "a", "port": 500}], "tags": ["long", "x"]}})),
            ["spec.mode", "spec.tags[0]"]
        );
        assert_eq!(validate(&s, &old, None).len(), 3);
    }
}
