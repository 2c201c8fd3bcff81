//! Go's `fmt` and `reflect` renderings of a decoded JSON value, for the messages kube-apiserver
//! builds from one with `%v`, `%s` or `reflect.TypeOf` (a strategic merge patch's errors).
//!
//! The value is held as kube's decoders hold it: an integer literal that fits an `int64` is an
//! `int64`, any other number a `float64`; objects are `map[string]interface {}`, arrays
//! `[]interface {}`, `null` a nil interface.
//!
//! Invariants: maps print their keys in byte order (as `fmt` sorts them), `map[k:v k2:v2]`;
//! slices print `[a b]`; a nil prints `<nil>`; a float prints as `%v` prints a `float64` (the
//! shortest digits that read back as the same number, with an exponent below 1e-4 and from
//! 1e+06 on); a verb a value does not take prints as `fmt` prints it (`%!s(int64=1)`), except
//! inside a map or slice where a nil stays `<nil>`.

use serde_json::{Map, Number, Value};

/// Go's type of a decoded JSON value (`reflect.TypeOf`), None for a nil.
pub(crate) fn type_name(v: &Value) -> Option<&'static str> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(_) => "bool",
        Value::Number(n) if is_int64(n) => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    })
}

/// Whether kube's decoder holds `n` as an `int64` (else a `float64`).
fn is_int64(n: &Number) -> bool {
    n.is_i64()
}

/// `fmt.Sprintf("%v", v)`.
pub(crate) fn v(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value, Verb::V, true);
    out
}

/// `fmt.Sprintf("%s", v)`.
pub(crate) fn s(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value, Verb::S, true);
    out
}

/// `fmt.Sprintf("%v", m)` of a map.
pub(crate) fn map(m: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_map(&mut out, m, Verb::V);
    out
}

/// `fmt.Sprintf("%v", l)` of a slice.
pub(crate) fn list(items: &[Value]) -> String {
    let mut out = String::new();
    write_list(&mut out, items, Verb::V);
    out
}

/// `fmt.Sprint` of several slices as one `[][]interface {}`: `[[a b] [c]]`.
pub(crate) fn slices(lists: &[&[Value]]) -> String {
    let mut out = String::from("[");
    for (i, list) in lists.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_list(&mut out, list, Verb::V);
    }
    out.push(']');
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Verb {
    V,
    S,
}

fn write(out: &mut String, value: &Value, verb: Verb, top: bool) {
    match value {
        Value::Null if top && verb == Verb::S => out.push_str("%!s(<nil>)"),
        Value::Null => out.push_str("<nil>"),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => write_list(out, items, verb),
        Value::Object(m) => write_map(out, m, verb),
        Value::Bool(_) | Value::Number(_) => {
            let plain = match value {
                Value::Number(n) => number(n),
                other => other.to_string(),
            };
            match verb {
                Verb::V => out.push_str(&plain),
                Verb::S => {
                    let ty = type_name(value).unwrap_or_default();
                    out.push_str(&format!("%!s({ty}={plain})"));
                }
            }
        }
    }
}

fn write_map(out: &mut String, m: &Map<String, Value>, verb: Verb) {
    out.push_str("map[");
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(k);
        out.push(':');
        write(out, v, verb, false);
    }
    out.push(']');
}

fn write_list(out: &mut String, items: &[Value], verb: Verb) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write(out, item, verb, false);
    }
    out.push(']');
}

/// A number as `%v` prints kube's decoded value: an `int64` in decimal, a `float64` as Go
/// formats it.
fn number(n: &Number) -> String {
    match n.as_i64() {
        Some(i) => i.to_string(),
        None => float(n.as_f64().unwrap_or_default()),
    }
}

/// `%v` of a `float64`: `strconv.FormatFloat(f, 'g', -1, 64)`, the exponent form when the
/// decimal exponent is below -4 or at least 6 (Go's shortest `%g` judges by precision 6).
pub(crate) fn float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0");
    }
    // Rust's `{:e}` gives the shortest digits that read back as `f`: `d.ddde±x`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').expect("an exponent");
    let exp: i32 = exp.parse().expect("a decimal exponent");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{point}e{esign}{:02}", exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let int_len = exp as usize + 1;
    if digits.len() <= int_len {
        format!("{sign}{digits}{}", "0".repeat(int_len - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maps_and_slices_print_as_fmt_prints_them() {
        assert_eq!(v(&json!({"image": "nginx:2"})), "map[image:nginx:2]");
        assert_eq!(v(&json!({"b": [1, "x", null], "a": {"c": true}})), "map[a:map[c:true] b:[1 x <nil>]]");
        assert_eq!(v(&json!({})), "map[]");
        assert_eq!(v(&json!([])), "[]");
        assert_eq!(v(&Value::Null), "<nil>");
        assert_eq!(slices(&[&[json!("a"), json!("b")], &[], &[json!({"k": 1})]]), "[[a b] [] [map[k:1]]]");
    }

    #[test]
    fn numbers_print_as_int64_or_float64() {
        assert_eq!(v(&json!(80)), "80");
        assert_eq!(v(&json!(-3)), "-3");
        assert_eq!(v(&json!(1.5)), "1.5");
        assert_eq!(v(&json!(80.0)), "80");
        assert_eq!(v(&json!(1e21)), "1e+21");
        assert_eq!(v(&json!(123456.0)), "123456");
        assert_eq!(v(&json!(1234567.0)), "1.234567e+06");
        assert_eq!(v(&json!(1000000.0)), "1e+06");
        assert_eq!(v(&json!(0.0001)), "0.0001");
        assert_eq!(v(&json!(0.00001)), "1e-05");
        assert_eq!(v(&json!(-2.5e-7)), "-2.5e-07");
        assert_eq!(v(&json!(1e100)), "1e+100");
        assert_eq!(v(&json!(0.1)), "0.1");
        assert_eq!(v(&json!(12.25)), "12.25");
        // Beyond int64: a float64.
        let big: Value = serde_json::from_str("18446744073709551615").unwrap();
        assert_eq!(v(&big), "1.8446744073709552e+19");
        assert_eq!(type_name(&big), Some("float64"));
    }

    #[test]
    fn the_s_verb_complains_of_values_that_are_not_strings() {
        assert_eq!(s(&json!("bogus")), "bogus");
        assert_eq!(s(&json!(1)), "%!s(int64=1)");
        assert_eq!(s(&json!(1.5)), "%!s(float64=1.5)");
        assert_eq!(s(&json!(true)), "%!s(bool=true)");
        assert_eq!(s(&Value::Null), "%!s(<nil>)");
        assert_eq!(s(&json!({"a": 1, "b": null, "c": "x"})), "map[a:%!s(int64=1) b:<nil> c:x]");
    }

    #[test]
    fn type_names_are_reflects() {
        assert_eq!(type_name(&json!("x")), Some("string"));
        assert_eq!(type_name(&json!(1)), Some("int64"));
        assert_eq!(type_name(&json!(1.0)), Some("float64"));
        assert_eq!(type_name(&json!([])), Some("[]interface {}"));
        assert_eq!(type_name(&json!({})), Some("map[string]interface {}"));
        assert_eq!(type_name(&Value::Null), None);
    }
}
