//! What kube-apiserver's Go decoder refuses in the body of a built-in type: a JSON value of
//! another kind than its field's Go type (a string for an `int32`, an object for a list of
//! containers), and what the decoders of Kubernetes' own value types refuse (a quantity that is
//! not one, a time that is not RFC 3339, an int-or-string that is neither, bytes that are not
//! base64). The Go types are read off the OpenAPI schema of the built-in types.
//!
//! Invariants: the error is the decoder's, word for word: `json: cannot unmarshal <JSON kind>
//! into Go struct field <struct>.<JSON path of the field> of type <Go type>` (the path names
//! struct fields only, not list indexes or map keys), or the value type's own message. As Go's
//! decoder, a kind mismatch is remembered and the walk goes on, while a value type's refusal ends
//! it at once and wins; of several mismatches the first in key order is reported. `null` is
//! accepted everywhere (Go leaves the zero value). Fields the schema does not name, and values of
//! a free-form type (RawExtension, JSON, FieldsV1), are not looked at. A named Go type the schema
//! does not name (a `PullPolicy`, a `ResourceList`) is reported as its underlying type.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Number, Value};

use crate::schema::Schemas;

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";

/// `time.RFC3339`, as `metav1.Time` parses it.
const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
/// `metav1.RFC3339Micro`, as `metav1.MicroTime` parses it.
const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

/// Checks `obj`, a body of the built-in type `group/version, Kind=kind`, as kube's decoder reads
/// it into that type; Err is the decoder's message. Types without a built-in schema pass.
pub(crate) fn check(group: &str, version: &str, kind: &str, obj: &Map<String, Value>) -> Result<(), String> {
    let types = types();
    let Some(root) = types.root(group, version, kind) else { return Ok(()) };
    let mut walk = Walk { types, fields: Vec::new(), strukt: short_name(root.definition), saved: None };
    walk.fields_of(obj, root)?;
    walk.saved.map_or(Ok(()), Err)
}

/// The Go types of the built-in definitions, compiled once: every struct with its fields.
struct Types {
    structs: Vec<Struct>,
    by_definition: HashMap<&'static str, usize>,
}

/// A struct: its definition (`io.k8s.api.apps.v1.DeploymentSpec`) and its fields by name, in
/// the order of their names' bytes (the order of a decoded object's keys).
struct Struct {
    definition: &'static str,
    fields: Vec<(&'static str, GoType)>,
}

impl Types {
    /// The struct of the built-in type `group/version, Kind=kind`.
    fn root(&'static self, group: &str, version: &str, kind: &str) -> Option<&'static Struct> {
        let name = crate::schema::builtin().name_of(group, version, kind)?;
        self.by_definition.get(name).map(|&i| &self.structs[i])
    }
}

impl Struct {
    /// The members of an object (given in key order) that are fields of the struct, each with
    /// its field's type: both are walked in key order, without lookups.
    fn fields_in<'o, V>(
        &'static self,
        members: impl Iterator<Item = (&'o String, V)>,
    ) -> impl Iterator<Item = (&'o String, V, &'static GoType)> {
        let mut fields = self.fields.iter().peekable();
        members.filter_map(move |(k, v)| {
            while fields.next_if(|(name, _)| *name < k.as_str()).is_some() {}
            fields.next_if(|(name, _)| *name == k.as_str()).map(|(_, ty)| (k, v, ty))
        })
    }
}

/// A Go type, as far as decoding JSON into it goes.
enum GoType {
    /// A struct, by its index in [`Types::structs`].
    Struct(usize),
    /// A slice.
    List(Box<GoType>),
    /// A map with string keys.
    Map(Box<GoType>),
    /// An integer of this Go type (`int32`, `int64`), with its bounds.
    Int(&'static str, i64, i64),
    Float,
    Bool,
    String,
    /// `[]byte`, written as base64.
    Bytes,
    Quantity,
    IntOrString,
    /// `metav1.Time` or `metav1.MicroTime`, parsed with this layout.
    Time(&'static str),
    /// Anything (free-form JSON, or a schema that says nothing).
    Any,
}

fn types() -> &'static Types {
    static TYPES: OnceLock<Types> = OnceLock::new();
    TYPES.get_or_init(|| {
        let schemas = crate::schema::builtin();
        let with_fields = |def: &'static Value| def.get("properties").and_then(Value::as_object);
        let definitions: Vec<(&'static str, &'static Map<String, Value>)> =
            schemas.definitions().iter().filter_map(|(name, def)| Some((name.as_str(), with_fields(def)?))).collect();
        let by_definition: HashMap<&'static str, usize> =
            definitions.iter().enumerate().map(|(i, (name, _))| (*name, i)).collect();
        let structs = definitions
            .iter()
            .map(|(definition, props)| {
                let mut fields: Vec<(&'static str, GoType)> =
                    props.iter().map(|(k, v)| (k.as_str(), go_type(schemas, &by_definition, v))).collect();
                fields.sort_unstable_by(|a, b| a.0.cmp(b.0));
                Struct { definition, fields }
            })
            .collect();
        Types { structs, by_definition }
    })
}

impl GoType {
    /// What `reflect.Type.String()` says of the type.
    fn name(&self, types: &Types) -> String {
        match self {
            GoType::Struct(i) => qualified_name(types.structs[*i].definition),
            GoType::List(item) => format!("[]{}", item.name(types)),
            GoType::Map(value) => format!("map[string]{}", value.name(types)),
            GoType::Int(name, ..) => (*name).into(),
            GoType::Float => "float64".into(),
            GoType::Bool => "bool".into(),
            GoType::String => "string".into(),
            GoType::Bytes => "[]uint8".into(),
            GoType::Quantity => "resource.Quantity".into(),
            GoType::IntOrString => "intstr.IntOrString".into(),
            GoType::Time(RFC3339_MICRO) => "v1.MicroTime".into(),
            GoType::Time(_) => "v1.Time".into(),
            GoType::Any => "interface {}".into(),
        }
    }
}

/// `io.k8s.api.apps.v1.DeploymentSpec` → `DeploymentSpec`.
fn short_name(definition: &str) -> &str {
    definition.rsplit('.').next().unwrap_or(definition)
}

/// `io.k8s.api.apps.v1.DeploymentSpec` → `v1.DeploymentSpec` (Go names a type by its package).
fn qualified_name(definition: &str) -> String {
    let mut parts = definition.rsplit('.');
    match (parts.next(), parts.next()) {
        (Some(name), Some(package)) => format!("{package}.{name}"),
        _ => definition.to_string(),
    }
}

fn go_type(schemas: &'static Schemas, structs: &HashMap<&'static str, usize>, schema: &'static Value) -> GoType {
    let (s, definition) = schemas.resolve_named(schema);
    match definition {
        Some(QUANTITY) => return GoType::Quantity,
        Some(INT_OR_STRING) => return GoType::IntOrString,
        Some(TIME) => return GoType::Time(RFC3339),
        Some(MICRO_TIME) => return GoType::Time(RFC3339_MICRO),
        Some(d) if structs.contains_key(d) => return GoType::Struct(structs[d]),
        _ => {}
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or_default(),
        _ => "",
    };
    let format = s.get("format").and_then(Value::as_str);
    match ty {
        "string" if format == Some("byte") => GoType::Bytes,
        "string" => GoType::String,
        "integer" => match format {
            Some("int32") => GoType::Int("int32", i32::MIN.into(), i32::MAX.into()),
            Some("int64") => GoType::Int("int64", i64::MIN, i64::MAX),
            _ => GoType::Int("int", i64::MIN, i64::MAX),
        },
        "number" => GoType::Float,
        "boolean" => GoType::Bool,
        "array" => match s.get("items") {
            Some(items) => GoType::List(Box::new(go_type(schemas, structs, items))),
            None => GoType::Any,
        },
        "object" => match s.get("additionalProperties").filter(|a| a.is_object()) {
            Some(values) => GoType::Map(Box::new(go_type(schemas, structs, values))),
            None => GoType::Any,
        },
        _ => GoType::Any,
    }
}

/// An integer as Go reads one: `-0` too, which the JSON decoder here reads as a negative zero
/// float (`-0.0`, which Go refuses, reads the same).
fn int_of(n: &Number) -> Option<i64> {
    n.as_i64().or_else(|| n.as_f64().filter(|f| *f == 0.0 && f.is_sign_negative()).map(|_| 0))
}

/// Turns the whole-number floats of a built-in object's integer fields into integers, as
/// kube-apiserver's unstructured converter reads a strategically merged object (`2.0` is
/// `2`); other values are left to [`check`].
pub(crate) fn whole_numbers_as_ints(group: &str, version: &str, kind: &str, obj: &mut Map<String, Value>) {
    fn fields(obj: &mut Map<String, Value>, st: &'static Struct, types: &'static Types) {
        for (_, v, ty) in st.fields_in(obj.iter_mut()) {
            value(v, ty, types);
        }
    }
    fn value(v: &mut Value, ty: &'static GoType, types: &'static Types) {
        match (ty, v) {
            (GoType::Struct(i), Value::Object(m)) => fields(m, &types.structs[*i], types),
            (GoType::List(item), Value::Array(items)) => items.iter_mut().for_each(|i| value(i, item, types)),
            (GoType::Map(each), Value::Object(m)) => m.values_mut().for_each(|i| value(i, each, types)),
            (GoType::Int(..) | GoType::IntOrString, v @ Value::Number(_)) => {
                if let Some(i) = v.as_f64().and_then(whole_int)
                    && v.as_i64().is_none()
                {
                    *v = Value::Number(i.into());
                }
                // Go's conversion wraps an integer to the field's width.
                if let (GoType::Int("int32", ..), Some(i)) = (ty, v.as_i64()) {
                    *v = Value::Number(i64::from(i as i32).into());
                }
            }
            _ => {}
        }
    }
    let types = types();
    if let Some(root) = types.root(group, version, kind) {
        fields(obj, root, types);
    }
}

/// A float as the integer Go writes it as, when it is a whole number an `int64` holds.
pub(crate) fn whole_int(f: f64) -> Option<i64> {
    // 2^63: whole floats below it in magnitude are integers Go can hold.
    const BOUND: f64 = 9_223_372_036_854_775_808.0;
    (f.fract() == 0.0 && (-BOUND..BOUND).contains(&f)).then_some(f as i64)
}

/// How Go's decoder names the kind of a JSON value in its errors.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The decoder's state: the struct fields it is in, the innermost struct, and the first
/// mismatch it met.
struct Walk<'v> {
    types: &'static Types,
    fields: Vec<&'v str>,
    strukt: &'static str,
    saved: Option<String>,
}

impl<'v> Walk<'v> {
    /// Go's `UnmarshalTypeError` where the walk is.
    fn type_error(&self, value: &str, ty: &str) -> String {
        format!(
            "json: cannot unmarshal {value} into Go struct field {}.{} of type {ty}",
            self.strukt,
            self.fields.join(".")
        )
    }

    fn save(&mut self, value: &str, ty: &str) {
        if self.saved.is_none() {
            self.saved = Some(self.type_error(value, ty));
        }
    }

    /// The fields of `obj` the struct has, found by walking both in key order.
    fn fields_of(&mut self, obj: &'v Map<String, Value>, st: &'static Struct) -> Result<(), String> {
        for (k, v, ty) in st.fields_in(obj.iter()) {
            self.fields.push(k);
            self.value(v, ty)?;
            self.fields.pop();
        }
        Ok(())
    }

    fn value(&mut self, v: &'v Value, ty: &'static GoType) -> Result<(), String> {
        match (ty, v) {
            (_, Value::Null) | (GoType::Any, _) => {}
            (GoType::Struct(i), Value::Object(m)) => {
                let st = &self.types.structs[*i];
                let outer = std::mem::replace(&mut self.strukt, short_name(st.definition));
                self.fields_of(m, st)?;
                self.strukt = outer;
            }
            (GoType::List(item), Value::Array(items)) => {
                for i in items {
                    self.value(i, item)?;
                }
            }
            (GoType::Map(value), Value::Object(m)) => {
                for i in m.values() {
                    self.value(i, value)?;
                }
            }
            (GoType::Int(name, min, max), Value::Number(n)) => {
                if !int_of(n).is_some_and(|i| (*min..=*max).contains(&i)) {
                    self.save(&format!("number {n}"), name);
                }
            }
            (GoType::Bytes, Value::Array(items)) => {
                // Go decodes a list of numbers into a byte slice too.
                for i in items {
                    match i {
                        Value::Null => {}
                        Value::Number(n) if int_of(n).is_some_and(|b| (0..=255).contains(&b)) => {}
                        Value::Number(n) => self.save(&format!("number {n}"), "uint8"),
                        _ => self.save(json_kind(i), "uint8"),
                    }
                }
            }
            (GoType::Float, Value::Number(_)) | (GoType::Bool, Value::Bool(_)) | (GoType::String, Value::String(_)) => {
            }
            (GoType::Bytes, Value::String(s)) => {
                if let Err(at) = base64_std(s)
                    && self.saved.is_none()
                {
                    self.saved = Some(format!("illegal base64 data at input byte {at}"));
                }
            }
            (GoType::Quantity, Value::String(s)) => quantity(s.trim())?,
            (GoType::Quantity, Value::Number(n)) => quantity(&n.to_string())?,
            (GoType::Quantity, _) => return Err(QUANTITY_FORMAT.into()),
            (GoType::IntOrString, Value::String(_)) => {}
            (GoType::IntOrString, Value::Number(n)) if int_of(n).and_then(|i| i32::try_from(i).ok()).is_some() => {}
            (GoType::IntOrString, Value::Number(n)) => return Err(self.type_error(&format!("number {n}"), "int32")),
            (GoType::IntOrString, _) => return Err(self.type_error(json_kind(v), "int32")),
            (GoType::Time(layout), Value::String(s)) => go_time(layout, s)?,
            (GoType::Time(_), _) => return Err(self.type_error(json_kind(v), "string")),
            (ty, v) => {
                let name = ty.name(self.types);
                self.save(json_kind(v), &name);
            }
        }
        Ok(())
    }
}

const QUANTITY_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// `resource.ParseQuantity`'s refusals, step by step as it reads: the form (`ErrFormatWrong`),
/// the suffix (`ErrSuffix`), then a number its decimal type cannot read (`ErrNumeric`). An empty
/// number is zero (`Mi`, `.`, `+`), and no quantity is too large.
fn quantity(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Err(QUANTITY_FORMAT.into());
    }
    let digits_from = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut pos = usize::from(matches!(b[0], b'+' | b'-'));
    while pos < b.len() && b[pos] == b'0' {
        pos += 1;
    }
    if pos == b.len() {
        return Ok(());
    }
    let num_start = pos;
    pos = digits_from(pos);
    let num_len = (pos - num_start).max(1);
    let mut denom_len = 0;
    if pos < b.len() && b[pos] == b'.' {
        let start = pos + 1;
        pos = digits_from(start);
        denom_len = pos - start;
    }
    let value = &s[..pos];
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() {
        if matches!(b[pos], b'+' | b'-') {
            pos += 1;
        }
        if digits_from(pos) < b.len() {
            return Err(QUANTITY_FORMAT.into());
        }
    }
    // The suffix: a decimal or binary one, or an exponent that fits in 64 bits (then kept in 32,
    // as Go keeps it, wrapping).
    let (binary, exponent): (bool, i32) = match &s[suffix_start..] {
        "" => (false, 0),
        "n" => (false, -9),
        "u" => (false, -6),
        "m" => (false, -3),
        "k" => (false, 3),
        "M" => (false, 6),
        "G" => (false, 9),
        "T" => (false, 12),
        "P" => (false, 15),
        "E" => (false, 18),
        "Ki" => (true, 10),
        "Mi" => (true, 20),
        "Gi" => (true, 30),
        "Ti" => (true, 40),
        "Pi" => (true, 50),
        "Ei" => (true, 60),
        e if e.len() > 1 && e.starts_with(['e', 'E']) => match e[1..].parse::<i64>() {
            Ok(x) => (false, x as i32),
            Err(_) => return Err("unable to parse quantity's suffix".into()),
        },
        _ => return Err("unable to parse quantity's suffix".into()),
    };
    // Read exactly as an integer when it fits the precision, else as a decimal, which needs a
    // digit.
    let (digits, denom) = (num_len as i32, denom_len as i32);
    let precision = match (binary, denom) {
        (false, _) => 18i32.wrapping_sub(digits.wrapping_add(denom)),
        (true, 0) => 15 - digits - exponent * 3 / 10 - 1,
        (true, _) => -1,
    };
    let scale = if binary { 0 } else { exponent }.wrapping_sub(denom);
    let exact = precision >= 0 && scale >= -9;
    if exact || value.bytes().any(|c| c.is_ascii_digit()) {
        Ok(())
    } else {
        Err("unable to parse numeric part of quantity".into())
    }
}

/// Go's `base64.StdEncoding` decoding: Err is the offset `CorruptInputError` names.
fn base64_std(s: &str) -> Result<(), usize> {
    let b = s.as_bytes();
    let valid = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let mut i = 0;
    loop {
        // One quantum of four characters (newlines are skipped).
        let mut j = 0;
        while j < 4 {
            while i < b.len() && (b[i] == b'\n' || b[i] == b'\r') {
                i += 1;
            }
            if i == b.len() {
                return if j == 0 { Ok(()) } else { Err(i - j) };
            }
            let c = b[i];
            i += 1;
            if valid(c) {
                j += 1;
                continue;
            }
            if c != b'=' || j < 2 {
                return Err(i - 1);
            }
            // Padding: `==` after two characters, `=` after three, then nothing but newlines.
            if j == 2 {
                while i < b.len() && (b[i] == b'\n' || b[i] == b'\r') {
                    i += 1;
                }
                if i == b.len() {
                    return Err(i);
                }
                if b[i] != b'=' {
                    return Err(i - 1);
                }
                i += 1;
            }
            while i < b.len() && (b[i] == b'\n' || b[i] == b'\r') {
                i += 1;
            }
            return if i < b.len() { Err(i) } else { Ok(()) };
        }
    }
}

/// Go's `time.Parse(time.RFC3339, s)`, with its errors.
pub(crate) fn rfc3339(s: &str) -> Result<(), String> {
    go_time(RFC3339, s)
}

/// Go's `time.Parse(layout, s)` for the two layouts of Kubernetes' times, with its errors.
/// The value is read byte by byte, as Go reads it.
fn go_time(layout: &str, s: &str) -> Result<(), String> {
    let cannot = |rest: &[u8], elem: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            time_quote(s.as_bytes()),
            time_quote(layout.as_bytes()),
            time_quote(rest),
            time_quote(elem.as_bytes())
        )
    };
    let out_of_range = |what: &str| format!("parsing time {}: {what} out of range", time_quote(s.as_bytes()));
    let digit = |v: &[u8], i: usize| v.get(i).filter(|b| b.is_ascii_digit()).map(|b| u32::from(b - b'0'));
    // Up to two digits (exactly two when `fixed`), as Go's `getnum`.
    let num = |v: &[u8], fixed: bool| -> Option<(u32, usize)> {
        match (digit(v, 0)?, digit(v, 1)) {
            (a, Some(b)) => Some((a * 10 + b, 2)),
            (_, None) if fixed => None,
            (a, None) => Some((a, 1)),
        }
    };
    let literal = |v: &mut &[u8], c: u8| -> Result<(), String> {
        match v.strip_prefix(&[c]) {
            Some(rest) => {
                *v = rest;
                Ok(())
            }
            None => Err(cannot(v, &char::from(c).to_string())),
        }
    };
    let mut v = s.as_bytes();
    if v.len() < 4 || !v[..4].iter().all(u8::is_ascii_digit) {
        return Err(cannot(v, "2006"));
    }
    let year = v[..4].iter().fold(0, |y, d| y * 10 + u32::from(d - b'0'));
    v = &v[4..];
    literal(&mut v, b'-')?;
    let Some((month, n)) = num(v, true) else { return Err(cannot(v, "01")) };
    v = &v[n..];
    if !(1..=12).contains(&month) {
        return Err(out_of_range("month"));
    }
    literal(&mut v, b'-')?;
    let Some((day, n)) = num(v, true) else { return Err(cannot(v, "02")) };
    v = &v[n..];
    literal(&mut v, b'T')?;
    let Some((hour, n)) = num(v, false) else { return Err(cannot(v, "15")) };
    v = &v[n..];
    if hour >= 24 {
        return Err(out_of_range("hour"));
    }
    literal(&mut v, b':')?;
    let Some((minute, n)) = num(v, true) else { return Err(cannot(v, "04")) };
    v = &v[n..];
    if minute >= 60 {
        return Err(out_of_range("minute"));
    }
    literal(&mut v, b':')?;
    let Some((second, n)) = num(v, true) else { return Err(cannot(v, "05")) };
    v = &v[n..];
    if second >= 60 {
        return Err(out_of_range("second"));
    }
    let separator = |v: &[u8]| matches!(v.first(), Some(b'.' | b','));
    let digits_after = |v: &[u8]| v.iter().skip(1).take_while(|b| b.is_ascii_digit()).count();
    if layout == RFC3339_MICRO {
        // `.000000`: a separator and six characters Go's `atoi` reads (a sign, then digits).
        let frac = v.get(1..7).unwrap_or_default();
        let (negative, unsigned) = match frac.split_first() {
            Some((b'-', rest)) => (true, rest),
            Some((b'+', rest)) => (false, rest),
            _ => (false, frac),
        };
        if v.len() < 7 || !separator(v) || !unsigned.iter().all(u8::is_ascii_digit) {
            return Err(cannot(v, ".000000"));
        }
        if negative && unsigned.iter().any(|d| *d != b'0') {
            return Err(out_of_range("fractional second"));
        }
        v = &v[7..];
    } else if separator(v) && digits_after(v) > 0 {
        v = &v[1 + digits_after(v)..];
    }
    match v.strip_prefix(b"Z") {
        Some(rest) => v = rest,
        None => {
            if v.len() < 6 || v[3] != b':' {
                return Err(cannot(v, "Z07:00"));
            }
            // As Go: the minutes are read only after good hours; a range error wins over a
            // bad number or sign, the minutes' over the hours'.
            let hours = num(&v[1..3], true).map(|(n, _)| n);
            let minutes = hours.and(num(&v[4..6], true)).map(|(n, _)| n);
            if minutes.is_some_and(|m| m > 60) {
                return Err(out_of_range("time zone offset minute"));
            }
            if hours.is_some_and(|h| h > 24) {
                return Err(out_of_range("time zone offset hour"));
            }
            if minutes.is_none() || !matches!(v[0], b'+' | b'-') {
                return Err(cannot(v, "Z07:00"));
            }
            v = &v[6..];
        }
    }
    if !v.is_empty() {
        return Err(format!("parsing time {}: extra text: {}", time_quote(s.as_bytes()), time_quote(v)));
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day < 1 || day > days {
        return Err(out_of_range("day"));
    }
    Ok(())
}

/// Go's `time.quote`: in double quotes, `"` and `\` escaped, every byte outside printable ASCII
/// as `\xNN`.
fn time_quote(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for &b in s {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(b));
            }
            b' '..=0x7f => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check_json(group: &str, version: &str, kind: &str, v: Value) -> Result<(), String> {
        check(group, version, kind, v.as_object().unwrap())
    }

    #[test]
    fn kinds_that_go_cannot_decode_are_named_as_go_names_them() {
        let deployment = |spec: Value| check_json("apps", "v1", "Deployment", json!({"spec": spec}));
        assert_eq!(
            deployment(json!({"replicas": "three"})),
            Err("json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32".into())
        );
        assert_eq!(deployment(json!({"replicas": -0.0})), Ok(()), "-0 is an integer");
        assert_eq!(
            deployment(json!({"replicas": 0.0})),
            Err("json: cannot unmarshal number 0.0 into Go struct field DeploymentSpec.spec.replicas of type int32"
                .into())
        );
        assert_eq!(
            deployment(json!({"replicas": 1.5})),
            Err("json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"
                .into())
        );
        assert_eq!(
            check_json("apps", "v1", "Deployment", json!({"status": "x"})),
            Err("json: cannot unmarshal string into Go struct field Deployment.status of type v1.DeploymentStatus"
                .into())
        );
        let pod = |spec: Value| check_json("", "v1", "Pod", json!({"spec": spec}));
        assert_eq!(
            pod(json!({"containers": {"name": "c"}})),
            Err("json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"
                .into())
        );
        assert_eq!(
            pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]})),
            Err("json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
                .into())
        );
        assert_eq!(
            pod(json!({"nodeSelector": {"a": 1}})),
            Err("json: cannot unmarshal number into Go struct field PodSpec.spec.nodeSelector of type string".into())
        );
        assert_eq!(
            pod(json!({"hostNetwork": "yes", "priority": 2147483648_i64})),
            Err("json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool".into()),
            "the first mismatch in key order"
        );
        // Nulls, unknown fields, free-form values and well-typed bodies pass.
        assert_eq!(pod(json!({"containers": null, "bogus": 1, "overhead": {"cpu": 1}})), Ok(()));
        assert_eq!(check_json("apps", "v1", "ControllerRevision", json!({"data": [1, "x"], "revision": 2})), Ok(()));
        assert_eq!(check_json("example.com", "v1", "Widget", json!({"spec": "x"})), Ok(()));
    }

    #[test]
    fn value_types_refuse_in_their_own_words_and_at_once() {
        let container = |c: Value| check_json("", "v1", "Pod", json!({"spec": {"containers": [c]}}));
        let limits = |q: Value| container(json!({"resources": {"limits": {"cpu": q}}, "name": 5}));
        assert_eq!(limits(json!("abc")), Err(QUANTITY_FORMAT.into()), "before the saved mismatch of `name`");
        assert_eq!(limits(json!("1kk")), Err("unable to parse quantity's suffix".into()));
        assert_eq!(limits(json!("1e99999999999999999999")), Err("unable to parse quantity's suffix".into()));
        assert_eq!(limits(json!("1.2.3")), Err(QUANTITY_FORMAT.into()));
        assert_eq!(limits(json!("")), Err(QUANTITY_FORMAT.into()));
        assert_eq!(limits(json!("Ei")), Err("unable to parse numeric part of quantity".into()));
        // The exponent wraps to 32 bits, as Go keeps it.
        assert_eq!(limits(json!("e4294967286")), Err("unable to parse numeric part of quantity".into()));
        assert_eq!(limits(json!("e-20")), Err("unable to parse numeric part of quantity".into()));
        assert_eq!(limits(json!({})), Err(QUANTITY_FORMAT.into()));
        for q in [
            json!("100m"),
            json!(" 2Gi "),
            json!(1.5),
            json!("1e3"),
            json!("+5"),
            json!("99999999999999999999999Ei"),
            json!("Mi"),
            json!("."),
            json!("-"),
            json!("e3"),
            json!("1.Gi"),
            json!("e-4294967295"),
            json!(".5e-9223372036854775808"),
            json!(-0.0),
        ] {
            assert_eq!(container(json!({"resources": {"limits": {"cpu": q}}})), Ok(()), "{q}");
        }
        let probe = |port: Value| container(json!({"livenessProbe": {"httpGet": {"port": port}}}));
        assert_eq!(probe(json!("http")), Ok(()));
        assert_eq!(probe(json!(8080)), Ok(()));
        assert_eq!(
            probe(json!(true)),
            Err("json: cannot unmarshal bool into Go struct field HTTPGetAction.spec.containers.livenessProbe.httpGet.port of type int32"
                .into())
        );
        let secret = |data: Value| check_json("", "v1", "Secret", json!({"data": {"k": data}}));
        assert_eq!(secret(json!("aGVsbG8=")), Ok(()));
        assert_eq!(secret(json!("aGVsbG8")), Err("illegal base64 data at input byte 4".into()));
        assert_eq!(secret(json!("a$")), Err("illegal base64 data at input byte 1".into()));
        assert_eq!(secret(json!("aGk=x")), Err("illegal base64 data at input byte 4".into()));
        assert_eq!(secret(json!("ab=c")), Err("illegal base64 data at input byte 2".into()));
        assert_eq!(secret(json!("ab=")), Err("illegal base64 data at input byte 3".into()));
        assert_eq!(secret(json!("aG\nk=")), Ok(()));
        assert_eq!(secret(json!([104, 105])), Ok(()), "a list of bytes");
        assert_eq!(
            secret(json!([104, 256])),
            Err("json: cannot unmarshal number 256 into Go struct field Secret.data of type uint8".into())
        );
        assert_eq!(
            secret(json!(5)),
            Err("json: cannot unmarshal number into Go struct field Secret.data of type []uint8".into())
        );
    }

    #[test]
    fn strategically_merged_whole_numbers_are_integers_of_the_field_s_width() {
        let mut d = json!({"spec": {"replicas": 3.0, "minReadySeconds": 4294967297_i64, "paused": 1.0,
            "template": {"spec": {"containers": [{"ports": [{"containerPort": 80.0}]}], "priority": 1.5}}}});
        whole_numbers_as_ints("apps", "v1", "Deployment", d.as_object_mut().unwrap());
        assert_eq!(
            d,
            json!({"spec": {"replicas": 3, "minReadySeconds": 1, "paused": 1.0,
                "template": {"spec": {"containers": [{"ports": [{"containerPort": 80}]}], "priority": 1.5}}}})
        );
    }

    #[test]
    fn times_parse_as_go_parses_them() {
        let created = |t: Value| check_json("", "v1", "ConfigMap", json!({"metadata": {"creationTimestamp": t}}));
        for ok in ["2026-01-02T03:04:05Z", "2026-01-02T03:04:05.5+01:00", "2024-02-29T3:04:05-07:00"] {
            assert_eq!(created(json!(ok)), Ok(()), "{ok}");
        }
        let layout = "\"2006-01-02T15:04:05Z07:00\"";
        for (bad, message) in [
            ("x", format!("parsing time \"x\" as {layout}: cannot parse \"x\" as \"2006\"")),
            ("2026-01-02", format!("parsing time \"2026-01-02\" as {layout}: cannot parse \"\" as \"T\"")),
            ("2026-13-02T00:00:00Z", "parsing time \"2026-13-02T00:00:00Z\": month out of range".into()),
            ("2025-02-29T00:00:00Z", "parsing time \"2025-02-29T00:00:00Z\": day out of range".into()),
            (
                "2026-01-02T00:00:00",
                format!("parsing time \"2026-01-02T00:00:00\" as {layout}: cannot parse \"\" as \"Z07:00\""),
            ),
            ("2026-01-02T00:00:00Zjunk", "parsing time \"2026-01-02T00:00:00Zjunk\": extra text: \"junk\"".into()),
        ] {
            assert_eq!(created(json!(bad)), Err(message), "{bad}");
        }
        // Read byte by byte: a character of several bytes is not split.
        assert_eq!(
            created(json!("2026-01-02T00:00:00+00:0é")),
            Err(format!(
                "parsing time \"2026-01-02T00:00:00+00:0\\xc3\\xa9\" as {layout}: cannot parse \"+00:0\\xc3\\xa9\" as \"Z07:00\""
            ))
        );
        assert_eq!(
            created(json!("2026-01-02T00:00:00+30:61")),
            Err("parsing time \"2026-01-02T00:00:00+30:61\": time zone offset minute out of range".into())
        );
        assert_eq!(
            created(json!(5)),
            Err("json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string".into())
        );
        let lease = |t: &str| check_json("coordination.k8s.io", "v1", "Lease", json!({"spec": {"renewTime": t}}));
        assert_eq!(lease("2026-03-01T10:00:00.123456Z"), Ok(()));
        assert_eq!(lease("2026-03-01T10:00:00.+12345Z"), Ok(()), "Go's atoi takes a sign");
        assert_eq!(lease("2026-03-01T10:00:00.-00000Z"), Ok(()));
        assert_eq!(
            lease("2026-03-01T10:00:00.-12345Z"),
            Err("parsing time \"2026-03-01T10:00:00.-12345Z\": fractional second out of range".into())
        );
        assert!(lease("2026-03-01T10:00:00.12345é").is_err());
        assert_eq!(
            lease("2026-03-01T10:00:00Z"),
            Err("parsing time \"2026-03-01T10:00:00Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" as \".000000\""
                .into())
        );
    }
}
