//! JSON objects written as their protobuf messages, field by field from the table.
//!
//! Invariants: an object encodes completely or not at all (a value whose JSON type the message
//! cannot hold is an error naming the field, never a silently dropped field); fields are written
//! in tag order, map entries in key order; JSON fields the message does not have are left out,
//! as Go's decoder leaves them out of its types; Kubernetes' wrapper messages are written from
//! their JSON forms.

use base64::Engine;
use serde_json::Value;

use super::wire::Writer;
use super::{FieldDef, Kind, META, messages};

/// The message `name` holding `v`.
pub(super) fn message(name: &str, v: &Value) -> Result<Vec<u8>, String> {
    let mut w = Writer::new();
    if wrapper(name, v, &mut w)? {
        return Ok(w.buf);
    }
    let fields = messages().get(name).ok_or_else(|| format!("no protobuf form for {name}"))?;
    let Value::Object(obj) = v else { return Err(format!("{name}: expected an object")) };
    let mut tags: Vec<&u32> = fields.keys().collect();
    tags.sort();
    for tag in tags {
        let f = &fields[tag];
        if f.inline {
            // An embedded struct takes its fields from this object.
            let name = f.message.as_deref().ok_or_else(|| format!("{}: no message type", f.json))?;
            let inner = message(name, v)?;
            if !inner.is_empty() {
                w.bytes(*tag, &inner);
            }
            continue;
        }
        let Some(value) = obj.get(&f.json).filter(|v| !v.is_null()) else { continue };
        if f.map {
            let Value::Object(m) = value else { return Err(format!("{}: expected an object", f.json)) };
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for k in keys {
                let mut entry = Writer::new();
                entry.bytes(1, k.as_bytes());
                if !m[k].is_null() {
                    one(&mut entry, 2, f, &m[k])?;
                }
                w.bytes(*tag, &entry.buf);
            }
        } else if f.repeated {
            let Value::Array(items) = value else { return Err(format!("{}: expected a list", f.json)) };
            for item in items {
                one(&mut w, *tag, f, item)?;
            }
        } else {
            one(&mut w, *tag, f, value)?;
        }
    }
    Ok(w.buf)
}

/// One occurrence of field `f` holding `v`, as field number `tag`.
fn one(w: &mut Writer, tag: u32, f: &FieldDef, v: &Value) -> Result<(), String> {
    let wrong = || format!("{}: a {:?} cannot hold {v}", f.json, f.kind);
    match f.kind {
        Kind::String => w.bytes(tag, v.as_str().ok_or_else(wrong)?.as_bytes()),
        Kind::Bytes => {
            let b =
                base64::engine::general_purpose::STANDARD.decode(v.as_str().ok_or_else(wrong)?).map_err(|_| wrong())?;
            w.bytes(tag, &b);
        }
        Kind::Bool => w.int(tag, i64::from(v.as_bool().ok_or_else(wrong)?)),
        Kind::Int32 | Kind::Int64 => w.int(tag, v.as_i64().ok_or_else(wrong)?),
        Kind::Double => w.double(tag, v.as_f64().ok_or_else(wrong)?),
        Kind::Message => {
            let name = f.message.as_deref().ok_or_else(wrong)?;
            w.bytes(tag, &message(name, v).map_err(|e| format!("{}.{e}", f.json))?);
        }
    }
    Ok(())
}

/// Writes the wrapper messages from their JSON forms; false for an ordinary message.
fn wrapper(name: &str, v: &Value, w: &mut Writer) -> Result<bool, String> {
    let raw_json = |w: &mut Writer| -> Result<bool, String> {
        w.bytes(1, &serde_json::to_vec(v).map_err(|e| e.to_string())?);
        Ok(true)
    };
    match name.strip_prefix(META) {
        Some(t @ ("Time" | "MicroTime")) => {
            let text = v.as_str().ok_or_else(|| format!("{t}: expected text, got {v}"))?;
            let ts: jiff::Timestamp = text.parse().map_err(|e| format!("{t} {text:?}: {e}"))?;
            w.int(1, ts.as_second());
            if ts.subsec_nanosecond() != 0 {
                w.int(2, i64::from(ts.subsec_nanosecond()));
            }
            Ok(true)
        }
        Some("Duration") => {
            let text = v.as_str().ok_or_else(|| format!("Duration: expected text, got {v}"))?;
            w.int(1, crate::go_duration::parse(text).map_err(|e| format!("Duration {text:?}: {e}"))?);
            Ok(true)
        }
        Some("FieldsV1") => raw_json(w),
        _ => match name {
            "io.k8s.apimachinery.pkg.api.resource.Quantity" => {
                let text = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => return Err(format!("Quantity: expected text, got {v}")),
                };
                w.bytes(1, text.as_bytes());
                Ok(true)
            }
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => {
                match v {
                    Value::String(s) => {
                        w.int(1, 1);
                        w.bytes(3, s.as_bytes());
                    }
                    _ => {
                        w.int(1, 0);
                        w.int(2, v.as_i64().ok_or_else(|| format!("IntOrString: got {v}"))?);
                    }
                }
                Ok(true)
            }
            "io.k8s.apimachinery.pkg.runtime.RawExtension"
            | "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON" => raw_json(w),
            n if super::decode::is_extra_value(n) => {
                let Value::Array(items) = v else { return Err(format!("ExtraValue: expected a list, got {v}")) };
                for item in items {
                    let s = item.as_str().ok_or_else(|| format!("ExtraValue: expected text, got {item}"))?;
                    w.bytes(1, s.as_bytes());
                }
                Ok(true)
            }
            _ => Ok(false),
        },
    }
}
