//! kube-apiserver's format library for validation rules: named string formats
//! (`format.dns1123Label()`, `format.named('labelValue')`, …) whose `validate(s)` gives
//! `optional.none()` for a valid string and otherwise the list of what is wrong, in the words
//! of Kubernetes' own validation (`a lowercase RFC 1123 label must consist of …`).
//!
//! Invariants: the formats and their messages are kube's (`dns1123Label`, `dns1123Subdomain`,
//! `dns1035Label`, `qualifiedName`, their `…Prefix` forms that accept a trailing dash,
//! `labelValue`, `uri`, `uuid`, `byte`, `date`, `datetime`); `format.named` of another name is
//! `optional.none()`; validating never fails, whatever the string.

use std::sync::{Arc, LazyLock};

use cel::common::types::{STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::objects::{Opaque, OptionalValue};
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};
use regex::Regex;

use crate::cel_library::{arg, give, string_arg};

/// The CEL type of a format.
pub(crate) const NAME: &str = "kubernetes.NamedFormat";

/// The formats, by the name CEL knows them by.
pub(crate) const FORMATS: [&str; 13] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

/// One of [`FORMATS`].
#[derive(Debug, PartialEq, Eq)]
struct Format(&'static str);

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        NAME
    }
}

/// Adds the library to `env`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    macro_rules! constant {
        ($($i:literal),*) => {$(
            env.add_overload(&format!("format.{}", FORMATS[$i]), &format!("format_{}", FORMATS[$i]), vec![], constant::<$i>)?;
        )*};
    }
    constant!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
    env.add_overload("format.named", "format_named", vec![STRING_TYPE], named)?;
    env.add_member_overload("validate", "format_validate", Type::new_opaque_type(NAME), vec![STRING_TYPE], validate)?;
    Ok(())
}

fn constant<'b, 'v, const I: usize>(_: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Opaque(Arc::new(Format(FORMATS[I]))))
}

fn named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let name = string_arg(&args, 0, "format.named")?;
    let found = FORMATS.iter().find(|f| **f == name).map(|f| Cel::Opaque(Arc::new(Format(f))));
    give(Cel::Opaque(Arc::new(match found {
        Some(f) => OptionalValue::of(f),
        None => OptionalValue::none(),
    })))
}

fn validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let format = match arg(&args, 0)? {
        Cel::Opaque(o) => o.downcast_ref::<Format>().map(|f| f.0),
        _ => None,
    }
    .ok_or_else(|| ExecutionError::function_error("validate", "expected a format"))?;
    let s = string_arg(&args, 1, "validate")?;
    let faults = faults(format, &s);
    let result = if faults.is_empty() {
        OptionalValue::none()
    } else {
        OptionalValue::of(Cel::List(Arc::new(faults.into_iter().map(|f| Cel::String(Arc::new(f))).collect())))
    };
    give(Cel::Opaque(Arc::new(result)))
}

const LABEL: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const SUBDOMAIN: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_MESSAGE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const KEY: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const KEY_MESSAGE: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const C_IDENTIFIER: &str = "[A-Za-z_][A-Za-z0-9_]*";
const C_IDENTIFIER_MESSAGE: &str = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'";
const CONDITION_REASON: &str = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?";
const CONDITION_REASON_MESSAGE: &str = "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'";
const VALUE: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// The patterns, anchored and compiled once.
static PATTERNS: LazyLock<[(&'static str, Regex); 7]> = LazyLock::new(|| {
    [LABEL, SUBDOMAIN, DNS1035, KEY, VALUE, C_IDENTIFIER, CONDITION_REASON]
        .map(|p| (p, Regex::new(&format!("^{p}$")).expect("a valid pattern")))
});

/// Whether all of `s` matches `pattern` (one of the patterns above).
fn matches(pattern: &str, s: &str) -> bool {
    PATTERNS.iter().find(|(p, _)| *p == pattern).is_some_and(|(_, r)| r.is_match(s))
}

/// Kubernetes' `RegexError`: the message, its examples and the pattern.
fn regex_error(message: &str, pattern: &str, examples: &[&str]) -> String {
    // Kubernetes writes " or " after the previous example's "', ": two spaces.
    let shown: String =
        examples.iter().enumerate().map(|(i, e)| format!("{}'{e}', ", if i > 0 { " or " } else { "" })).collect();
    if examples.is_empty() {
        format!("{message} (regex used for validation is '{pattern}')")
    } else {
        format!("{message} (e.g. {shown}regex used for validation is '{pattern}')")
    }
}

/// The length limit of util/validation (labels, subdomains).
fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// The length limit of the content package (label keys and values), in its words.
fn max_bytes(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

pub(crate) fn dns1123_label(s: &str) -> Vec<String> {
    let mut faults = Vec::new();
    if s.len() > 63 {
        faults.push(max_len(63));
    }
    if !matches(LABEL, s) {
        faults.push(if matches(SUBDOMAIN, s) {
            "must not contain dots".into()
        } else {
            regex_error(LABEL_MESSAGE, LABEL, &["my-name", "123-abc"])
        });
    }
    faults
}

pub(crate) fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut faults = Vec::new();
    if s.len() > 253 {
        faults.push(max_len(253));
    }
    if !matches(SUBDOMAIN, s) {
        faults.push(regex_error(SUBDOMAIN_MESSAGE, SUBDOMAIN, &["example.com"]));
    }
    faults
}

/// The content package's `IsCIdentifier`.
pub(crate) fn c_identifier(s: &str) -> Vec<String> {
    match matches(C_IDENTIFIER, s) {
        true => Vec::new(),
        false => vec![regex_error(C_IDENTIFIER_MESSAGE, C_IDENTIFIER, &["my_name", "MY_NAME", "MyName"])],
    }
}

/// meta/v1's condition reason format.
pub(crate) fn condition_reason(s: &str) -> Vec<String> {
    match matches(CONDITION_REASON, s) {
        true => Vec::new(),
        false => vec![regex_error(
            CONDITION_REASON_MESSAGE,
            CONDITION_REASON,
            &["my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB"],
        )],
    }
}

pub(crate) fn dns1035_label(s: &str) -> Vec<String> {
    let mut faults = Vec::new();
    if s.len() > 63 {
        faults.push(max_len(63));
    }
    if !matches(DNS1035, s) {
        faults.push(regex_error(DNS1035_MESSAGE, DNS1035, &["my-name", "abc-123"]));
    }
    faults
}

/// kube's `maskTrailingDash` for generated-name prefixes: it cuts two bytes (not one) and
/// adds `a`; a cut inside a character leaves text that no format accepts, as in Go.
pub(crate) fn mask_trailing_dash(s: &str) -> String {
    if s.len() > 1 && s.ends_with('-') {
        let mut bytes = s.as_bytes()[..s.len() - 2].to_vec();
        bytes.push(b'a');
        String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    } else {
        s.to_string()
    }
}

/// The content package's subdomain check (its length limit in bytes).
fn content_subdomain(s: &str) -> Vec<String> {
    let mut faults = Vec::new();
    if s.len() > 253 {
        faults.push(max_bytes(253));
    }
    if !matches(SUBDOMAIN, s) {
        faults.push(regex_error(SUBDOMAIN_MESSAGE, SUBDOMAIN, &["example.com"]));
    }
    faults
}

pub(crate) fn qualified_name(s: &str) -> Vec<String> {
    let mut faults = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                faults.push("prefix part must be non-empty".into());
            } else {
                faults.extend(content_subdomain(prefix).into_iter().map(|f| format!("prefix part {f}")));
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(KEY_MESSAGE, KEY, &["MyName", "my.name", "123-abc"])
            )];
        }
    };
    if name.is_empty() {
        faults.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        faults.push(format!("name part {}", max_bytes(63)));
    }
    if !matches(KEY, name) {
        faults.push(format!("name part {}", regex_error(KEY_MESSAGE, KEY, &["MyName", "my.name", "123-abc"])));
    }
    faults
}

pub(crate) fn label_value(s: &str) -> Vec<String> {
    let mut faults = Vec::new();
    if s.len() > 63 {
        faults.push(max_bytes(63));
    }
    if !matches(VALUE, s) {
        faults.push(regex_error(VALUE_MESSAGE, VALUE, &["MyValue", "my_value", "12345"]));
    }
    faults
}

/// What is wrong with `s` in `format` (nothing when it is valid).
fn faults(format: &str, s: &str) -> Vec<String> {
    let fault = |ok: bool, message: &str| if ok { Vec::new() } else { vec![message.to_string()] };
    match format {
        "dns1123Label" => dns1123_label(s),
        "dns1123Subdomain" => dns1123_subdomain(s),
        "dns1035Label" => dns1035_label(s),
        "qualifiedName" => qualified_name(s),
        "dns1123LabelPrefix" => dns1123_label(&mask_trailing_dash(s)),
        "dns1123SubdomainPrefix" => dns1123_subdomain(&mask_trailing_dash(s)),
        "dns1035LabelPrefix" => dns1035_label(&mask_trailing_dash(s)),
        "labelValue" => label_value(s),
        "uri" => crate::cel_url::request_uri_error(s).into_iter().collect(),
        "uuid" => fault(crate::schema_formats::format_ok("uuid", s), "does not match the UUID format"),
        "byte" => fault(crate::schema_formats::format_ok("byte", s), "invalid base64"),
        "date" => fault(crate::schema_formats::format_ok("date", s), "invalid date"),
        _ => fault(crate::schema_formats::format_ok("date-time", s), "invalid datetime"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(expression: &str) -> Cel {
        crate::cel_library::eval_with(register, expression).unwrap()
    }

    fn text(s: &str) -> Cel {
        Cel::String(Arc::new(s.to_string()))
    }

    #[test]
    fn valid_strings_give_none_and_invalid_ones_kube_s_messages() {
        assert_eq!(eval("format.dns1123Label().validate('my-name').hasValue()"), Cel::Bool(false));
        assert_eq!(
            eval("format.dns1123Label().validate('My_Name').value()[0]"),
            text(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must \
                 start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for \
                 validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            )
        );
        assert_eq!(
            eval("format.dns1123Label().validate('a.b').value()"),
            Cel::List(Arc::new(vec![text("must not contain dots")]))
        );
        assert_eq!(eval("format.dns1123SubdomainPrefix().validate('my-prefix-').hasValue()"), Cel::Bool(false));
        assert_eq!(eval("format.dns1123Subdomain().validate('my-prefix-').hasValue()"), Cel::Bool(true));
        assert_eq!(eval("format.qualifiedName().validate('example.com/MyName').hasValue()"), Cel::Bool(false));
        assert_eq!(eval("format.qualifiedName().validate('/x').value()[0]"), text("prefix part must be non-empty"));
        assert_eq!(eval("format.labelValue().validate('').hasValue()"), Cel::Bool(false));
        assert_eq!(eval("format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()"), Cel::Bool(false));
        assert_eq!(eval("format.uuid().validate('nope').value()[0]"), text("does not match the UUID format"));
        assert_eq!(eval("format.date().validate('2021-01-01').hasValue()"), Cel::Bool(false));
        assert_eq!(eval("format.datetime().validate('2021-01-01').value()[0]"), text("invalid datetime"));
        assert_eq!(
            eval("format.uri().validate('example.com').value()[0]"),
            text("parse \"example.com\": invalid URI for request")
        );
        assert_eq!(eval("format.byte().validate('aGVsbG8=').hasValue()"), Cel::Bool(false));
        assert_eq!(eval("format.byte().validate('').hasValue()"), Cel::Bool(true));
        assert_eq!(eval("format.uuid().validate('123e4567e89b12d3a456426614174000').hasValue()"), Cel::Bool(false));
        assert_eq!(eval("format.datetime().validate('2021-01-01T10:00:00.5+01:00').hasValue()"), Cel::Bool(false));
        assert_eq!(eval("format.datetime().validate('2021-01-01 10:00:00Z').hasValue()"), Cel::Bool(true));
        // A prefix cut inside a character is simply invalid.
        assert_eq!(eval("format.dns1123LabelPrefix().validate('é-').hasValue()"), Cel::Bool(true));
        let long = "a".repeat(64);
        assert_eq!(
            eval(&format!("format.labelValue().validate('{long}').value()[0]")),
            text("must be no more than 63 bytes")
        );
    }

    #[test]
    fn formats_are_found_by_name() {
        assert_eq!(eval("format.named('dns1035Label').hasValue()"), Cel::Bool(true));
        assert_eq!(eval("format.named('dns1035Label').value().validate('1abc').hasValue()"), Cel::Bool(true));
        assert_eq!(eval("format.named('nope').hasValue()"), Cel::Bool(false));
    }
}
