//! The query options of writes (`CreateOptions`, `UpdateOptions`, `PatchOptions`) as
//! kube-apiserver reads and validates them: `fieldManager`, `force`, `dryRun` and
//! `fieldValidation`.
//!
//! Invariants: a repeated parameter has its first value (`dryRun` all of them); every problem
//! is reported at once, in kube's order (`force`, `fieldManager`, `dryRun`, `fieldValidation`),
//! as one 422 `Invalid` on `<Kind>.meta.k8s.io ""` with a cause per problem; an apply patch
//! needs a `fieldManager`; `force` is only for apply patches; a field manager has at most 128
//! bytes, all printable as Go's `unicode.IsPrint` judges (positions in bytes); `dryRun` is only
//! `All`.

use serde_json::{Value, json};

use crate::field_validation::FieldValidation;
use crate::managed_fields::MAX_MANAGER_LENGTH;
use crate::status::ApiError;

/// The validated options of a write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteParams {
    /// What to do with unknown and duplicate fields.
    pub validation: FieldValidation,
    /// `fieldManager`, if given.
    pub field_manager: Option<String>,
    /// `force` (apply patches).
    pub force: bool,
}

/// The kind of write whose options these are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH of a patch type other than apply.
    Patch,
    /// PATCH with `application/apply-patch+yaml`.
    Apply,
}

impl WriteKind {
    fn options(self) -> &'static str {
        match self {
            WriteKind::Create => "CreateOptions",
            WriteKind::Update => "UpdateOptions",
            WriteKind::Patch | WriteKind::Apply => "PatchOptions",
        }
    }
}

/// A parameter's first value, as kube's parameter codec reads a repeated one.
fn first<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Reads and validates the options of a write of `kind` from its query.
pub fn parse(query: &[(String, String)], kind: WriteKind) -> Result<WriteParams, ApiError> {
    let mut causes: Vec<(String, &'static str, String)> = Vec::new();
    let force = first(query, "force");
    if kind == WriteKind::Patch && force.is_some() {
        causes.push((
            "force".into(),
            "FieldValueForbidden",
            "Forbidden: may not be specified for non-apply patch".into(),
        ));
    }
    let field_manager = first(query, "fieldManager").filter(|m| !m.is_empty());
    if kind == WriteKind::Apply && field_manager.is_none() {
        causes.push((
            "fieldManager".into(),
            "FieldValueRequired",
            "Required value: is required for apply patch".into(),
        ));
    }
    if let Some(m) = field_manager {
        if m.len() > MAX_MANAGER_LENGTH {
            causes.push((
                "fieldManager".into(),
                "FieldValueTooLong",
                format!("Too long: may not be more than {MAX_MANAGER_LENGTH} bytes"),
            ));
        }
        for (i, c) in m.char_indices() {
            if !crate::pod_security_checks::go_printable(c) {
                causes.push((
                    "fieldManager".into(),
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: {}: invalid character U+{:04X} (at position {i})",
                        crate::pod_security_checks::go_quote(m),
                        c as u32
                    ),
                ));
            }
        }
    }
    let dry_run: Vec<&str> = query.iter().filter(|(k, _)| k == "dryRun").map(|(_, v)| v.as_str()).collect();
    if dry_run.iter().any(|d| *d != "All") {
        causes.push((
            "dryRun".into(),
            "FieldValueNotSupported",
            format!("Unsupported value: {}: supported values: \"All\"", Value::from(dry_run)),
        ));
    }
    let validation = match FieldValidation::parse(first(query, "fieldValidation"), kind.options()) {
        Ok(v) => v,
        Err(e) => {
            if let Some(c) =
                e.details.as_ref().and_then(|d| d.get("causes")).and_then(Value::as_array).and_then(|c| c.first())
            {
                let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                causes.push((s("field"), "FieldValueNotSupported", s("message")));
            }
            FieldValidation::default()
        }
    };
    if causes.is_empty() {
        let force = force.is_some_and(crate::body::query_bool);
        return Ok(WriteParams { validation, field_manager: field_manager.map(str::to_string), force });
    }
    let options = kind.options();
    let texts: Vec<String> = causes.iter().map(|(f, _, m)| format!("{f}: {m}")).collect();
    let summary = if let [one] = texts.as_slice() { one.clone() } else { format!("[{}]", texts.join(", ")) };
    let mut e = ApiError::new(422, "Invalid", format!("{options}.meta.k8s.io \"\" is invalid: {summary}"));
    let causes: Vec<Value> = causes.iter().map(|(f, r, m)| json!({"reason": r, "message": m, "field": f})).collect();
    e.details = Some(Box::new(json!({"group": "meta.k8s.io", "kind": options, "causes": causes})));
    Err(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn apply_needs_a_field_manager_and_force_is_for_apply_only() {
        let e = parse(&q(&[]), WriteKind::Apply).unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
        let e = parse(&q(&[("force", "true")]), WriteKind::Patch).unwrap_err();
        assert_eq!(
            e.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        );
        let long = "m".repeat(129);
        let e = parse(&q(&[("fieldManager", &long), ("fieldValidation", "Bogus")]), WriteKind::Create).unwrap_err();
        assert!(
            e.message.starts_with("CreateOptions.meta.k8s.io \"\" is invalid: [fieldManager: Too long"),
            "{}",
            e.message
        );
        let ok = parse(&q(&[("fieldManager", "a"), ("force", "true")]), WriteKind::Apply).unwrap();
        assert_eq!((ok.field_manager.as_deref(), ok.force), (Some("a"), true));
    }

    #[test]
    fn parameters_are_read_as_kube_s_codec_reads_them() {
        let apply = |pairs: &[(&str, &str)]| parse(&q(pairs), WriteKind::Apply).unwrap();
        assert!(apply(&[("fieldManager", "a"), ("force", "")]).force);
        assert!(apply(&[("fieldManager", "a"), ("force", "yes")]).force);
        assert!(!apply(&[("fieldManager", "a"), ("force", "False")]).force);
        assert!(!apply(&[("fieldManager", "a"), ("force", "0"), ("force", "1")]).force);
        assert_eq!(apply(&[("fieldManager", "a"), ("fieldManager", "b")]).field_manager.as_deref(), Some("a"));
    }

    #[test]
    fn dry_run_is_all_or_refused_and_managers_are_printable() {
        let e = parse(&q(&[("dryRun", "All"), ("dryRun", "x"), ("fieldValidation", "Bogus")]), WriteKind::Update)
            .unwrap_err();
        assert_eq!(
            e.message,
            "UpdateOptions.meta.k8s.io \"\" is invalid: [dryRun: Unsupported value: [\"All\",\"x\"]: supported values: \"All\", fieldValidation: Unsupported value: \"Bogus\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"]"
        );
        assert!(parse(&q(&[("dryRun", "All")]), WriteKind::Create).is_ok());
        let e = parse(&q(&[("fieldManager", "é\u{a0}b")]), WriteKind::Create).unwrap_err();
        assert_eq!(
            e.message,
            "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \"é\\u00a0b\": invalid character U+00A0 (at position 2)"
        );
    }
}
