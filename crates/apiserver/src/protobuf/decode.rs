//! Protobuf messages read into their JSON form, field by field from the table.
//!
//! Invariants: a message decodes completely or not at all; Kubernetes' wrapper messages read as
//! their JSON forms; unset (empty) strings are left out, but for strings Go holds by pointer;
//! numbers and booleans are kept as sent (the stored form drops the zeros Go leaves out);
//! fields the table does not know are skipped.

use std::collections::HashMap;

use base64::Engine;
use serde_json::{Map, Value};

use super::wire::{Raw, Reader, Wire};
use super::{FieldDef, Kind, META, messages};

/// One message's JSON form.
pub(super) fn message(name: &str, bytes: &[u8]) -> Result<Value, String> {
    if let Some(v) = wrapper(name, bytes)? {
        return Ok(v);
    }
    let fields = messages().get(name).ok_or_else(|| format!("no protobuf form for {name}"))?;
    let mut out = Map::new();
    for item in Wire::new(bytes) {
        let (tag, raw) = item?;
        let Some(f) = fields.get(&tag) else { continue };
        if f.map {
            let Raw::Len(entry) = raw else { return Err(format!("{}: a map entry must be length-delimited", f.json)) };
            let (k, v) = map_entry(f, entry)?;
            let m = out.entry(f.json.clone()).or_insert_with(|| Value::Object(Map::new()));
            if let (Some(m), Some(v)) = (m.as_object_mut(), v) {
                m.insert(k, v);
            }
            continue;
        }
        let values = scalar_or_message(f, raw)?;
        if f.inline {
            for v in values {
                if let Value::Object(fields) = v {
                    out.extend(fields);
                }
            }
            continue;
        }
        if f.repeated {
            let list = out.entry(f.json.clone()).or_insert_with(|| Value::Array(Vec::new()));
            if let Some(list) = list.as_array_mut() {
                list.extend(values);
            }
        } else if let Some(v) = values.into_iter().last() {
            out.insert(f.json.clone(), v);
        }
    }
    // Unset strings are written empty; Go's JSON leaves them out. A string Go holds by pointer
    // is written only when set, so its "" is a value.
    out.retain(|k, v| {
        !matches!(v, Value::String(s) if s.is_empty()) || crate::managed_fields::presence::is_pointer_string(name, k)
    });
    Ok(Value::Object(out))
}

/// A map field's entry: key (field 1, text) and value (field 2) in the field's value kind.
fn map_entry(f: &FieldDef, entry: &[u8]) -> Result<(String, Option<Value>), String> {
    let mut key = String::new();
    let mut value = None;
    for item in Wire::new(entry) {
        match item? {
            (1, Raw::Len(b)) => key = utf8(b)?,
            (2, raw) => value = scalar_or_message(f, raw)?.into_iter().last(),
            _ => {}
        }
    }
    // A map entry without a value holds the kind's zero value.
    let value = value.or(match f.kind {
        Kind::String | Kind::Bytes => Some(Value::String(String::new())),
        Kind::Message => Some(Value::Object(Map::new())),
        _ => Some(Value::from(0)),
    });
    Ok((key, value))
}

/// The values one occurrence of a field carries (several for a packed repeated number).
fn scalar_or_message(f: &FieldDef, raw: Raw) -> Result<Vec<Value>, String> {
    let one = |v: Value| Ok(vec![v]);
    match (f.kind, raw) {
        (Kind::String, Raw::Len(b)) => one(Value::String(utf8(b)?)),
        (Kind::Bytes, Raw::Len(b)) => one(Value::String(base64::engine::general_purpose::STANDARD.encode(b))),
        (Kind::Bool, Raw::Varint(n)) => one(Value::Bool(n != 0)),
        (Kind::Int32, Raw::Varint(n)) => one(Value::from(n as i32)),
        (Kind::Int64, Raw::Varint(n)) => one(Value::from(n as i64)),
        (Kind::Double, Raw::Fixed64(n)) => {
            let d = f64::from_bits(n);
            one(serde_json::Number::from_f64(d).map(Value::Number).unwrap_or(Value::Null))
        }
        (Kind::Int32 | Kind::Int64 | Kind::Bool, Raw::Len(b)) => {
            // A packed list of varints.
            let mut out = Vec::new();
            let mut r = Reader { buf: b };
            while !r.buf.is_empty() {
                let n = r.varint()?;
                out.push(match f.kind {
                    Kind::Bool => Value::Bool(n != 0),
                    Kind::Int32 => Value::from(n as i32),
                    _ => Value::from(n as i64),
                });
            }
            Ok(out)
        }
        (Kind::Message, Raw::Len(b)) => {
            let name = f.message.as_deref().ok_or_else(|| format!("{}: no message type", f.json))?;
            match message(name, b)? {
                Value::Null => Ok(Vec::new()),
                v => one(v),
            }
        }
        (_, _) => Err(format!("{}: unexpected wire type", f.json)),
    }
}

/// The JSON forms of Kubernetes' wrapper messages; None for an ordinary message. A zero `Time`
/// is `null` (Go's zero time), which leaves the field out.
fn wrapper(name: &str, bytes: &[u8]) -> Result<Option<Value>, String> {
    let fields = || -> Result<HashMap<u32, Raw>, String> { Wire::new(bytes).collect() };
    let text = |v: Option<&Raw>| -> Result<String, String> {
        match v {
            Some(Raw::Len(b)) => utf8(b),
            _ => Ok(String::new()),
        }
    };
    let number = |v: Option<&Raw>| match v {
        Some(Raw::Varint(n)) => *n as i64,
        _ => 0,
    };
    let json = |v: Option<&Raw>| -> Result<Value, String> {
        match v {
            Some(Raw::Len(b)) if !b.is_empty() => serde_json::from_slice(b).map_err(|e| format!("raw JSON: {e}")),
            _ => Ok(Value::Null),
        }
    };
    let v = match name.strip_prefix(META) {
        Some(t @ ("Time" | "MicroTime")) => {
            let f = fields()?;
            let (secs, nanos) = (number(f.get(&1)), number(f.get(&2)));
            if secs == 0 && nanos == 0 {
                return Ok(Some(Value::Null));
            }
            let ts = jiff::Timestamp::new(secs, if t == "Time" { 0 } else { (nanos / 1000 * 1000) as i32 })
                .map_err(|e| format!("{t}: {e}"))?;
            let text = if t == "Time" { format!("{ts:.0}") } else { format!("{ts:.6}") };
            Value::String(text)
        }
        Some("Duration") => Value::String(go_duration(number(fields()?.get(&1)))),
        Some("FieldsV1") => json(fields()?.get(&1))?,
        _ => match name {
            "io.k8s.apimachinery.pkg.api.resource.Quantity" => Value::String(text(fields()?.get(&1))?),
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => {
                let f = fields()?;
                if number(f.get(&1)) == 1 {
                    Value::String(text(f.get(&3))?)
                } else {
                    Value::from(number(f.get(&2)) as i32)
                }
            }
            "io.k8s.apimachinery.pkg.runtime.RawExtension"
            | "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON" => json(fields()?.get(&1))?,
            // A user's extra values: a bare list of strings in JSON.
            n if is_extra_value(n) => {
                let mut items = Vec::new();
                for field in Wire::new(bytes) {
                    if let (1, Raw::Len(b)) = field? {
                        items.push(Value::String(utf8(b)?));
                    }
                }
                Value::Array(items)
            }
            _ => return Ok(None),
        },
    };
    Ok(Some(v))
}

/// Whether a message is an `ExtraValue` (authentication, authorization and certificates: a
/// message of `items` in protobuf, a list of strings in JSON).
pub(super) fn is_extra_value(name: &str) -> bool {
    name.starts_with("pb:api.") && name.ends_with(".ExtraValue")
}

/// Go's `time.Duration` text (`1h2m3.5s`, `0s`).
fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        let (unit, div) = if n < 1_000 {
            ("ns", 1)
        } else if n < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{sign}{}{unit}", trim_fraction(n, div));
    }
    let (h, rest) = (n / 3_600_000_000_000, n % 3_600_000_000_000);
    let (m, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let mut out = String::from(sign);
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&format!("{}s", trim_fraction(rest, 1_000_000_000)));
    out
}

/// `n / div` as decimal text without trailing zeros (`1.5`, `2`).
fn trim_fraction(n: u64, div: u64) -> String {
    let whole = n / div;
    let frac = n % div;
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

pub(super) fn utf8(b: &[u8]) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| "a string is not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_go_prints_them() {
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(3_723_000_000_000), "1h2m3s");
        assert_eq!(go_duration(120_000_000_000), "2m0s");
        assert_eq!(go_duration(2_000_000), "2ms");
        assert_eq!(go_duration(-5), "-5ns");
    }
}
