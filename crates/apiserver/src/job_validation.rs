//! The rules kube-apiserver judges batch/v1 Jobs and CronJobs by.
//!
//! A Job (kube's `ValidateJob`, and `ValidateJobUpdate` over the stored one):
//! - unless it asks for a manual selector, the selector and template labels are the ones the
//!   server generated (`batch.kubernetes.io/controller-uid`, `job-name` and their legacy forms);
//! - its spec ([`job_spec`]): counts not negative, a completion mode kube knows and the rules of
//!   indexed Jobs, a pod failure policy and a success policy kube can follow, a pod replacement
//!   policy, the pod template ([`crate::pod_spec_validation`]) whose pods restart `OnFailure` or
//!   `Never`, a selector that matches the template's labels;
//! - on update the spec is judged again (kube reports its faults twice), and the selector, the
//!   template, the completion mode, the failure and success policies, the per-index backoff
//!   limit and `managedBy` do not change; completions change only for indexed Jobs, with the
//!   parallelism. A suspended Job that never started may change its pods' scheduling: node
//!   selector, node affinity, tolerations, scheduling gates, labels and annotations.
//!
//! A CronJob (kube's `ValidateCronJobCreate` / `ValidateCronJobUpdate`): a schedule
//! ([`crate::cron_schedule`]) without a time zone in it, a time zone from the IANA database, a
//! concurrency policy, a job template judged as a Job's spec without its selector, history
//! limits not negative, and on create a name of at most 52 characters (its Jobs add 11).
//!
//! Invariants: only the object and the stored version an update replaces are read; causes come
//! in kube's order, with its paths and messages, values rendered as kube's field errors render
//! them (Go's JSON of the internal types for policies; a changed template is shown as its JSON).

use serde_json::{Map, Value, json};

use crate::pod_spec_validation::Owner;
use crate::policy_validation::{invalid, required, unsupported};
use crate::structural::{Cause, go_json, go_quote};
use crate::workload_validation::{invalid_value, nonnegative_at as nonnegative, shown_selector, template_labels_match};

/// The causes for which kube refuses the Job or CronJob `obj` (over `old`, the stored version
/// with today's defaults, on an update); None for other resources.
pub(crate) fn validate(
    info: &crate::registry::ResourceInfo,
    obj: &Map<String, Value>,
    old: Option<&Value>,
) -> Option<Vec<Cause>> {
    match (info.group.as_str(), info.plural.as_str()) {
        ("batch", "jobs") => Some(job(obj, old)),
        ("batch", "cronjobs") => Some(cron_job(obj, old)),
        _ => None,
    }
}

/// A member that is there and not null (Go's non-nil pointer).
fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|v| !v.is_null())
}

fn int(v: &Value, key: &str) -> Option<i64> {
    present(v, key).and_then(Value::as_i64)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A list's or map's value as kube's field errors show it: Go's JSON (`null` when nil).
fn shown(v: Option<&Value>) -> String {
    v.map_or_else(|| "null".into(), go_json)
}

/// How a value is shown in a field error.
type Show = fn(Option<&Value>) -> String;

/// A pointer's value as kube's field errors show it: what it points to, or `"null"` when nil.
fn shown_pointer(v: Option<&Value>, show: Show) -> String {
    match v {
        Some(_) => show(v),
        None => go_quote("null"),
    }
}

fn job(obj: &Map<String, Value>, old: Option<&Value>) -> Vec<Cause> {
    let empty = Value::Object(Map::new());
    let spec = obj.get("spec").unwrap_or(&empty);
    let meta = obj.get("metadata").unwrap_or(&empty);
    let old_spec = old.map(|o| o.get("spec").unwrap_or(&empty));
    // The prefixed labels are required of new Jobs and of those stored with them.
    let prefixed = old_spec.is_none_or(|s| {
        let labels = s.pointer("/template/metadata/labels");
        [CONTROLLER_UID, JOB_NAME].iter().all(|k| labels.and_then(|l| l.get(*k)).is_some())
    });
    let mut causes = generated_selector(meta, spec, prefixed);
    let spec_causes = job_spec(spec, old_spec.and_then(|o| o.get("template")));
    causes.extend(spec_causes.iter().cloned());
    indexed_name(meta, spec, &mut causes);
    if let (Some(old), Some(old_spec)) = (old, old_spec) {
        causes.extend(spec_causes);
        job_update(spec, old_spec, old, &mut causes);
    }
    causes
}

const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
const JOB_NAME: &str = "batch.kubernetes.io/job-name";

/// kube's `validateGeneratedSelector`: the template carries the labels the server generated, and
/// the selector selects them.
fn generated_selector(meta: &Value, spec: &Value, prefixed: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(selector) = present(spec, "selector") else { return causes };
    if spec.get("manualSelector") == Some(&Value::Bool(true)) {
        return causes;
    }
    let uid = text(meta, "uid");
    let name = text(meta, "name");
    if uid.is_empty() {
        causes.push(required("metadata.uid".into(), ""));
    }
    let mut expected = vec![("controller-uid", uid), ("job-name", name)];
    if prefixed {
        expected.extend([(CONTROLLER_UID, uid), (JOB_NAME, name)]);
    }
    let labels = spec.pointer("/template/metadata/labels").filter(|l| !l.is_null());
    for (key, value) in &expected {
        let at = format!("spec.template.metadata.labels[{key}]");
        let detail = format!("must be '{value}'");
        match labels.and_then(|l| l.get(*key)).and_then(Value::as_str) {
            None => causes.push(required(at, &detail)),
            Some(v) if v != *value => causes.push(invalid_value(&at, &shown(labels), &detail)),
            Some(_) => {}
        }
    }
    let mut parsed = Vec::new();
    crate::webhook_configuration::check_selector(selector, "spec.selector", &mut parsed);
    let set: Map<String, Value> = expected.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    if parsed.is_empty() && !crate::admission_policy::selector_matches(selector, &Value::Object(set)) {
        causes.push(invalid_value("spec.selector", &shown_selector(Some(selector)), "`selector` not auto-generated"));
    }
    causes
}

/// kube's `ValidateJobSpec`: the spec's own rules, then a selector that matches the template.
fn job_spec(spec: &Value, old_template: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    spec_rules(spec, "spec", old_template, &mut causes);
    let before = causes.len();
    let readable = match present(spec, "selector") {
        None => {
            causes.push(required("spec.selector".into(), ""));
            true
        }
        Some(sel) => {
            crate::webhook_configuration::check_selector(sel, "spec.selector", &mut causes);
            causes.len() == before
        }
    };
    // A selector that cannot be read is not compared; a missing one matches nothing.
    if readable {
        template_labels_match(spec, &mut causes);
    }
    causes
}

/// An indexed Job's last pod is named `<name>-<completions - 1>`, which must be a DNS label.
fn indexed_name(meta: &Value, spec: &Value, causes: &mut Vec<Cause>) {
    let Some(completions) = int(spec, "completions").filter(|c| *c > 0) else { return };
    if text(spec, "completionMode") != "Indexed" {
        return;
    }
    let name = text(meta, "name");
    let last = format!("{name}-{}", completions - 1);
    if !crate::cel_format::dns1123_label(&last).is_empty() {
        causes.push(invalid(
            "metadata.name".into(),
            name,
            &format!("will not able to create pod with invalid DNS label: {last}"),
        ));
    }
}

/// kube's `validateJobSpec`: the rules a Job's spec and a CronJob's job template share, at `at`.
fn spec_rules(spec: &Value, at: &str, old_template: Option<&Value>, causes: &mut Vec<Cause>) {
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        nonnegative(spec, at, key, causes);
    }
    let per_index = int(spec, "backoffLimitPerIndex");
    let max_failed = int(spec, "maxFailedIndexes");
    if max_failed.is_some() && per_index.is_none() {
        causes.push(required(format!("{at}.backoffLimitPerIndex"), "when maxFailedIndexes is specified"));
    }
    if let Some(managed_by) = present(spec, "managedBy").and_then(Value::as_str) {
        domain_prefixed_path(managed_by, &format!("{at}.managedBy"), causes);
        if managed_by.len() > 63 {
            causes.push(Cause {
                reason: "FieldValueTooLong",
                message: "Too long: may not be more than 63 bytes".into(),
                field: format!("{at}.managedBy"),
            });
        }
    }
    let number = |key: &str, n: i64, detail: &str| crate::pod_validation::number(format!("{at}.{key}"), n, detail);
    let completions = int(spec, "completions");
    let parallelism = int(spec, "parallelism");
    let indexed = match present(spec, "completionMode").and_then(Value::as_str) {
        None | Some("NonIndexed") => false,
        Some("Indexed") => {
            if completions.is_none() {
                causes.push(required(format!("{at}.completions"), "when completion mode is Indexed"));
            }
            if let Some(p) = parallelism.filter(|p| *p > 100_000) {
                causes.push(number(
                    "parallelism",
                    p,
                    "must be less than or equal to 100000 when completion mode is Indexed",
                ));
            }
            if let (Some(c), Some(m)) = (completions, max_failed)
                && m > c
            {
                causes.push(number("maxFailedIndexes", m, "must be less than or equal to completions"));
            }
            if let Some(m) = max_failed.filter(|m| *m > 100_000) {
                causes.push(number("maxFailedIndexes", m, "must be less than or equal to 100000"));
            }
            if completions.is_some_and(|c| c > 100_000) && per_index.is_some() {
                const HIGH: &str = "must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index";
                if max_failed.is_none() {
                    causes.push(required(
                        format!("{at}.maxFailedIndexes"),
                        "must be specified when completions is above 100000",
                    ));
                }
                if let Some(p) = parallelism.filter(|p| *p > 10_000) {
                    causes.push(number("parallelism", p, HIGH));
                }
                if let Some(m) = max_failed.filter(|m| *m > 10_000) {
                    causes.push(number("maxFailedIndexes", m, HIGH));
                }
            }
            true
        }
        Some(other) => {
            causes.push(unsupported(format!("{at}.completionMode"), other, &["NonIndexed", "Indexed"]));
            false
        }
    };
    let non_indexed = matches!(present(spec, "completionMode").and_then(Value::as_str), None | Some("NonIndexed"));
    if non_indexed {
        if let Some(n) = per_index {
            causes.push(number("backoffLimitPerIndex", n, "requires indexed completion mode"));
        }
        if let Some(n) = max_failed {
            causes.push(number("maxFailedIndexes", n, "requires indexed completion mode"));
        }
    }
    let failure_policy = present(spec, "podFailurePolicy");
    if let Some(policy) = failure_policy {
        pod_failure_policy(spec, policy, &format!("{at}.podFailurePolicy"), causes);
    }
    if let Some(policy) = present(spec, "successPolicy") {
        let path = format!("{at}.successPolicy");
        if indexed {
            success_policy(policy, completions, &path, causes);
        } else {
            causes.push(invalid_value(&path, &shown_success_policy(Some(policy)), "requires indexed completion mode"));
        }
    }
    if let Some(replacement) = present(spec, "podReplacementPolicy").and_then(Value::as_str) {
        let path = format!("{at}.podReplacementPolicy");
        if failure_policy.is_some() {
            if replacement != "Failed" {
                causes.push(unsupported(path, replacement, &["Failed"]));
            }
        } else if !matches!(replacement, "Failed" | "TerminatingOrFailed") {
            causes.push(unsupported(path, replacement, &["Failed", "TerminatingOrFailed"]));
        }
    }
    let template_spec = spec.pointer("/template/spec").filter(|s| !s.is_null());
    let zero = crate::pod_spec_validation::zero_template_spec();
    let (before, after) = crate::pod_annotations::template(
        spec.pointer("/template/metadata"),
        template_spec.unwrap_or(&zero),
        &format!("{at}.template"),
        old_template.and_then(|t| t.get("metadata")),
    );
    causes.extend(before);
    causes.extend(crate::pod_spec_validation::validate(
        template_spec.unwrap_or(&zero),
        &format!("{at}.template.spec"),
        Owner::Template,
    ));
    causes.extend(after);
    restart_policy(template_spec, failure_policy.is_some(), &format!("{at}.template.spec.restartPolicy"), causes);
}

/// A Job's pods run to completion: they restart `OnFailure` or `Never` (only `Never` with a pod
/// failure policy). Pod defaults give `Always` to a template that names none.
fn restart_policy(template_spec: Option<&Value>, failure_policy: bool, at: &str, causes: &mut Vec<Cause>) {
    let policy = template_spec.map_or("", |s| text(s, "restartPolicy"));
    match policy {
        "Always" | "" => causes.push(required(at.into(), r#"valid values: "OnFailure", "Never""#)),
        "OnFailure" if failure_policy => {
            causes.push(invalid(at.into(), policy, r#"only "Never" is supported when podFailurePolicy is specified"#))
        }
        "OnFailure" | "Never" => {}
        other => causes.push(unsupported(at.into(), other, &["OnFailure", "Never"])),
    }
}

/// kube's `IsDomainPrefixedPath` (`acme.io/controller`).
fn domain_prefixed_path(v: &str, at: &str, causes: &mut Vec<Cause>) {
    if v.is_empty() {
        causes.push(required(at.into(), ""));
        return;
    }
    let Some((host, path)) = v.split_once('/').filter(|(h, p)| !h.is_empty() && !p.is_empty()) else {
        causes.push(invalid(at.into(), v, r#"must be a domain-prefixed path (such as "acme.io/foo")"#));
        return;
    };
    for fault in crate::cel_format::dns1123_subdomain(host) {
        causes.push(invalid(at.into(), host, &fault));
    }
    let path_char = |c: char| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c);
    if !path.chars().all(path_char) {
        causes.push(invalid(
            at.into(),
            path,
            r"Invalid path (regex used for validation is '[A-Za-z0-9/\-._~%!$&'()*+,;=:]+')",
        ));
    }
}

/// A `Too many` cause.
fn too_many(at: String, n: usize, max: usize) -> Cause {
    Cause { reason: "FieldValueTooMany", message: format!("Too many: {n}: must have at most {max} items"), field: at }
}

/// kube's `validatePodFailurePolicy`.
fn pod_failure_policy(spec: &Value, policy: &Value, at: &str, causes: &mut Vec<Cause>) {
    const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];
    let rules = crate::pod_spec_validation::list(policy, "rules");
    if rules.len() > 20 {
        causes.push(too_many(format!("{at}.rules"), rules.len(), 20));
    }
    let template_spec = spec.pointer("/template/spec").unwrap_or(&Value::Null);
    let names: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| crate::pod_spec_validation::list(template_spec, k))
        .map(crate::pod_spec_validation::name_of)
        .collect();
    for (i, rule) in rules.iter().enumerate() {
        let rule_at = format!("{at}.rules[{i}]");
        match text(rule, "action") {
            "" => causes.push(required(
                format!("{rule_at}.action"),
                r#"valid values: ["Count" "FailIndex" "FailJob" "Ignore"]"#,
            )),
            "FailIndex" if present(spec, "backoffLimitPerIndex").is_none() => causes.push(invalid(
                format!("{rule_at}.action"),
                "FailIndex",
                "requires the backoffLimitPerIndex to be set",
            )),
            a if !ACTIONS.contains(&a) => causes.push(unsupported(format!("{rule_at}.action"), a, &ACTIONS)),
            _ => {}
        }
        let exit_codes = present(rule, "onExitCodes");
        if let Some(codes) = exit_codes {
            on_exit_codes(codes, &names, &format!("{rule_at}.onExitCodes"), causes);
        }
        let conditions = crate::pod_spec_validation::list(rule, "onPodConditions");
        if !conditions.is_empty() {
            on_pod_conditions(conditions, &format!("{rule_at}.onPodConditions"), causes);
        }
        let omitted = |detail: &str| Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {detail}"),
            field: rule_at.clone(),
        };
        match (exit_codes.is_some(), conditions.is_empty()) {
            (true, false) => causes.push(omitted("specifying both OnExitCodes and OnPodConditions is not supported")),
            (false, true) => causes.push(omitted("specifying one of OnExitCodes and OnPodConditions is required")),
            _ => {}
        }
    }
}

fn on_exit_codes(codes: &Value, names: &[&str], at: &str, causes: &mut Vec<Cause>) {
    let operator = text(codes, "operator");
    match operator {
        "" => causes.push(required(format!("{at}.operator"), r#"valid values: ["In" "NotIn"]"#)),
        "In" | "NotIn" => {}
        other => causes.push(unsupported(format!("{at}.operator"), other, &["In", "NotIn"])),
    }
    if let Some(name) = present(codes, "containerName").and_then(Value::as_str)
        && !names.contains(&name)
    {
        causes.push(invalid(
            format!("{at}.containerName"),
            name,
            "must be one of the container or initContainer names in the pod template",
        ));
    }
    let values: Vec<i64> = crate::pod_spec_validation::list(codes, "values").iter().filter_map(Value::as_i64).collect();
    let values_at = format!("{at}.values");
    if values.is_empty() {
        let shown = shown(present(codes, "values"));
        causes.push(invalid_value(&values_at, &shown, "at least one value is required"));
    } else if values.len() > 255 {
        causes.push(too_many(values_at.clone(), values.len(), 255));
    }
    let mut seen = Vec::new();
    for (j, v) in values.iter().enumerate() {
        let at = format!("{values_at}[{j}]");
        if operator == "In" && *v == 0 {
            causes.push(crate::pod_validation::number(at.clone(), 0, "must not be 0 for the In operator"));
        }
        if seen.contains(v) {
            causes.push(Cause { reason: "FieldValueDuplicate", message: format!("Duplicate value: {v}"), field: at });
        } else {
            seen.push(*v);
        }
    }
    if values.windows(2).any(|w| w[0] > w[1]) {
        causes.push(invalid_value(&values_at, &go_json(&json!(values)), "must be ordered"));
    }
}

fn on_pod_conditions(conditions: &[Value], at: &str, causes: &mut Vec<Cause>) {
    const STATUSES: [&str; 3] = ["False", "True", "Unknown"];
    if conditions.len() > 20 {
        causes.push(too_many(at.into(), conditions.len(), 20));
    }
    for (j, pattern) in conditions.iter().enumerate() {
        let kind = text(pattern, "type");
        for fault in crate::cel_format::qualified_name(kind) {
            causes.push(invalid(format!("{at}[{j}].type"), kind, &fault));
        }
        match text(pattern, "status") {
            "" => causes.push(required(format!("{at}[{j}].status"), r#"valid values: ["False" "True" "Unknown"]"#)),
            s if !STATUSES.contains(&s) => causes.push(unsupported(format!("{at}[{j}].status"), s, &STATUSES)),
            _ => {}
        }
    }
}

/// kube's `validateSuccessPolicy` (of an indexed Job).
fn success_policy(policy: &Value, completions: Option<i64>, at: &str, causes: &mut Vec<Cause>) {
    let rules = crate::pod_spec_validation::list(policy, "rules");
    if rules.is_empty() {
        causes.push(required(
            format!("{at}.rules"),
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if rules.len() > 20 {
        causes.push(too_many(format!("{at}.rules"), rules.len(), 20));
    }
    // (kube reads the completions an indexed Job must have; without them it was refused already.)
    let Some(completions) = completions else { return };
    for (i, rule) in rules.iter().enumerate() {
        let rule_at = format!("{at}.rules[{i}]");
        let indexes = present(rule, "succeededIndexes").and_then(Value::as_str);
        let count = int(rule, "succeededCount");
        if indexes.is_none() && count.is_none() {
            causes.push(required(
                rule_at.clone(),
                "at least one of succeededCount or succeededIndexes must be specified",
            ));
        }
        let mut total = 0;
        if let Some(indexes) = indexes {
            let indexes_at = format!("{rule_at}.succeededIndexes");
            if indexes.len() > 64 * 1024 {
                causes.push(Cause {
                    reason: "FieldValueTooLong",
                    message: "Too long: may not be more than 65536 bytes".into(),
                    field: indexes_at.clone(),
                });
            }
            match index_count(indexes, completions) {
                Ok(n) => total = n,
                Err(e) => causes.push(invalid(indexes_at, indexes, &format!("error parsing succeededIndexes: {e}"))),
            }
        }
        if let Some(count) = count {
            let count_at = format!("{rule_at}.succeededCount");
            if count < 0 {
                causes.push(crate::pod_validation::number(
                    count_at.clone(),
                    count,
                    "must be greater than or equal to 0",
                ));
            }
            if count > completions {
                let detail =
                    format!("must be less than or equal to {completions} (the number of specified completions)");
                causes.push(crate::pod_validation::number(count_at.clone(), count, &detail));
            }
            if indexes.is_some() && count > total {
                let detail = format!(
                    "must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"
                );
                causes.push(crate::pod_validation::number(count_at, count, &detail));
            }
        }
    }
}

/// How many indexes `0,2-4,7` names, as kube's `validateIndexesFormat` reads them.
pub(crate) fn index_count(indexes: &str, completions: i64) -> Result<i64, String> {
    if indexes.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0;
    for fragment in indexes.split(',') {
        let (x, y) = index_interval(fragment, completions)?;
        if let Some(previous) = last
            && previous >= x
        {
            return Err(format!("non-increasing order, previous: {previous}, current: {x}"));
        }
        total += y - x + 1;
        last = Some(y);
    }
    Ok(total)
}

/// The first and last index of one fragment (`3` or `2-4`) of an index list, as kube's
/// `parseIndexInterval` reads it.
pub(crate) fn index_interval(fragment: &str, completions: i64) -> Result<(i64, i64), String> {
    let atoi = |s: &str| -> Result<i64, String> {
        let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
        let valid = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
        let n = if valid { digits.parse::<i64>().ok() } else { None };
        let n = n.ok_or_else(|| format!("cannot convert string to integer for index: {}", go_quote(s)))?;
        let n = if s.starts_with('-') { -n } else { n };
        if n >= completions { Err(format!("too large index: {}", go_quote(s))) } else { Ok(n) }
    };
    let limits: Vec<&str> = fragment.split('-').collect();
    if limits.len() > 2 {
        return Err(format!(
            "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
            go_quote(fragment)
        ));
    }
    let x = atoi(limits[0])?;
    match limits.get(1) {
        Some(high) => {
            let y = atoi(high)?;
            if x >= y {
                return Err(format!("non-increasing order, previous: {x}, current: {y}"));
            }
            Ok((x, y))
        }
        None => Ok((x, x)),
    }
}

/// A pod failure policy as kube's field errors show it: Go's JSON of its internal type.
fn shown_failure_policy(policy: Option<&Value>) -> String {
    let Some(policy) = policy else { return "null".into() };
    let rules: Option<Vec<String>> = present(policy, "rules").and_then(Value::as_array).map(|rules| {
        rules
            .iter()
            .map(|r| {
                let exit_codes = present(r, "onExitCodes").map(|c| {
                    format!(
                        r#"{{"ContainerName":{},"Operator":{},"Values":{}}}"#,
                        shown(present(c, "containerName")),
                        go_json(&json!(text(c, "operator"))),
                        shown(present(c, "values")),
                    )
                });
                let conditions = present(r, "onPodConditions").and_then(Value::as_array).map(|list| {
                    let shown: Vec<String> = list
                        .iter()
                        .map(|p| {
                            format!(
                                r#"{{"Type":{},"Status":{}}}"#,
                                go_json(&json!(text(p, "type"))),
                                go_json(&json!(text(p, "status")))
                            )
                        })
                        .collect();
                    format!("[{}]", shown.join(","))
                });
                format!(
                    r#"{{"Action":{},"OnExitCodes":{},"OnPodConditions":{}}}"#,
                    go_json(&json!(text(r, "action"))),
                    exit_codes.unwrap_or_else(|| "null".into()),
                    conditions.unwrap_or_else(|| "null".into()),
                )
            })
            .collect()
    });
    format!(r#"{{"Rules":{}}}"#, rules.map_or_else(|| "null".into(), |r| format!("[{}]", r.join(","))))
}

/// A success policy as kube's field errors show it: Go's JSON of its internal type.
fn shown_success_policy(policy: Option<&Value>) -> String {
    let Some(policy) = policy else { return "null".into() };
    let rules: Option<Vec<String>> = present(policy, "rules").and_then(Value::as_array).map(|rules| {
        rules
            .iter()
            .map(|r| {
                format!(
                    r#"{{"SucceededIndexes":{},"SucceededCount":{}}}"#,
                    shown(present(r, "succeededIndexes")),
                    shown(present(r, "succeededCount"))
                )
            })
            .collect()
    });
    format!(r#"{{"Rules":{}}}"#, rules.map_or_else(|| "null".into(), |r| format!("[{}]", r.join(","))))
}

/// kube's `ValidateJobSpecUpdate` beyond the spec's own rules: what may not change.
fn job_update(spec: &Value, old_spec: &Value, old: &Value, causes: &mut Vec<Cause>) {
    let same = |key: &str| crate::semantic::equal(present(spec, key), present(old_spec, key));
    let completions = present(spec, "completions");
    if text(spec, "completionMode") != "Indexed" {
        if !same("completions") {
            causes.push(invalid_value("spec.completions", &shown_pointer(completions, shown), "field is immutable"));
        }
    } else if !same("completions")
        && let Some(c) = completions
        && c.as_i64() != int(spec, "parallelism")
    {
        causes.push(invalid_value(
            "spec.completions",
            &go_json(c),
            "can only be modified in tandem with spec.parallelism",
        ));
    }
    if !same("selector") {
        let shown = shown_pointer(present(spec, "selector"), shown_selector);
        causes.push(invalid_value("spec.selector", &shown, "field is immutable"));
    }
    template_update(spec, old_spec, old, causes);
    let immutable: [(&str, Show); 5] = [
        ("completionMode", shown),
        ("podFailurePolicy", shown_failure_policy),
        ("backoffLimitPerIndex", shown),
        ("managedBy", shown),
        ("successPolicy", shown_success_policy),
    ];
    for (key, show) in immutable {
        if !same(key) {
            let shown = shown_pointer(present(spec, key), show);
            causes.push(invalid_value(&format!("spec.{key}"), &shown, "field is immutable"));
        }
    }
}

/// A Job's template does not change, but for the scheduling of a suspended Job's pods before
/// the Job first started.
fn template_update(spec: &Value, old_spec: &Value, old: &Value, causes: &mut Vec<Cause>) {
    let empty = json!({});
    let template = present(spec, "template").unwrap_or(&empty);
    let mut old_template = present(old_spec, "template").cloned().unwrap_or_else(|| json!({}));
    let suspended = old_spec.get("suspend") == Some(&Value::Bool(true));
    let started = old.pointer("/status/startTime").is_some_and(|t| !t.is_null());
    if suspended && !started {
        let new_spec = template.get("spec").unwrap_or(&empty);
        let new_meta = template.get("metadata").unwrap_or(&empty);
        if !old_template.is_object() {
            old_template = json!({});
        }
        let Value::Object(old_object) = &mut old_template else { return };
        let old_pod = section(old_object, "spec");
        let node_affinity = |a: &Value| present(a, "nodeAffinity").cloned();
        match (present(new_spec, "affinity"), old_pod.get("affinity").filter(|a| !a.is_null()).cloned()) {
            (None, Some(mut affinity)) => {
                // Cleared: allowed when the stored affinity was only about nodes.
                set(&mut affinity, "nodeAffinity", None);
                if ["podAffinity", "podAntiAffinity"].iter().any(|k| present(&affinity, k).is_some()) {
                    old_pod.insert("affinity".into(), affinity);
                } else {
                    old_pod.remove("affinity");
                }
            }
            (Some(new), None) => {
                let mut affinity = json!({});
                set(&mut affinity, "nodeAffinity", node_affinity(new));
                old_pod.insert("affinity".into(), affinity);
            }
            (Some(new), Some(mut affinity)) => {
                set(&mut affinity, "nodeAffinity", node_affinity(new));
                old_pod.insert("affinity".into(), affinity);
            }
            (None, None) => {}
        }
        for key in ["nodeSelector", "tolerations", "schedulingGates"] {
            take(old_pod, key, new_spec);
        }
        let old_meta = section(old_object, "metadata");
        for key in ["annotations", "labels"] {
            take(old_meta, key, new_meta);
        }
    }
    // Compared as Go compares the decoded templates: zero values are unset.
    if crate::pod_validation::lenient(template) != crate::pod_validation::lenient(&old_template) {
        causes.push(invalid_value("spec.template", &go_json(template), "field is immutable"));
    }
}

/// The object member `key` of `m`, made an empty object when it is not one.
fn section<'a>(m: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let v = m.entry(key).or_insert_with(|| json!({}));
    if !v.is_object() {
        *v = json!({});
    }
    match v {
        Value::Object(o) => o,
        _ => unreachable!("made an object above"),
    }
}

/// Sets (or with None removes) the member `key` of the object `v`.
fn set(v: &mut Value, key: &str, to: Option<Value>) {
    if let Value::Object(m) = v {
        match to {
            Some(x) => m.insert(key.into(), x),
            None => m.remove(key),
        };
    }
}

/// Gives `to` the member `key` of `from` (removing it when `from` has none).
fn take(to: &mut Map<String, Value>, key: &str, from: &Value) {
    match present(from, key) {
        Some(v) => to.insert(key.into(), v.clone()),
        None => to.remove(key),
    };
}

fn cron_job(obj: &Map<String, Value>, old: Option<&Value>) -> Vec<Cause> {
    let empty = Value::Object(Map::new());
    let spec = obj.get("spec").unwrap_or(&empty);
    let old_spec = old.map(|o| o.get("spec").unwrap_or(&empty));
    let mut causes = Vec::new();
    let schedule = text(spec, "schedule");
    let time_zone = present(spec, "timeZone");
    if schedule.is_empty() {
        causes.push(required("spec.schedule".into(), ""));
    } else {
        if let Some(fault) = crate::cron_schedule::schedule_fault(schedule) {
            causes.push(invalid("spec.schedule".into(), schedule, &fault));
        }
        let tz_allowed = old_spec.is_some_and(|o| text(o, "schedule").contains("TZ"));
        if tz_allowed && schedule.contains("TZ") && time_zone.is_some() {
            causes.push(invalid(
                "spec.schedule".into(),
                schedule,
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        } else if !tz_allowed && schedule.contains("TZ") {
            causes.push(invalid(
                "spec.schedule".into(),
                schedule,
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
    nonnegative(spec, "spec", "startingDeadlineSeconds", &mut causes);
    if old_spec.is_none_or(|o| present(o, "timeZone") != time_zone)
        && let Some(tz) = time_zone.and_then(Value::as_str)
    {
        time_zone_faults(tz, &mut causes);
    }
    match text(spec, "concurrencyPolicy") {
        "" => causes.push(required("spec.concurrencyPolicy".into(), "")),
        "Allow" | "Forbid" | "Replace" => {}
        other => causes.push(unsupported("spec.concurrencyPolicy".into(), other, &["Allow", "Forbid", "Replace"])),
    }
    let job_spec = spec.pointer("/jobTemplate/spec").filter(|s| !s.is_null()).unwrap_or(&empty);
    let old_template = old_spec.and_then(|o| o.pointer("/jobTemplate/spec/template"));
    spec_rules(job_spec, "spec.jobTemplate.spec", old_template, &mut causes);
    if let Some(selector) = present(job_spec, "selector") {
        causes.push(invalid_value(
            "spec.jobTemplate.spec.selector",
            &shown_selector(Some(selector)),
            "`selector` will be auto-generated",
        ));
    }
    if job_spec.get("manualSelector") == Some(&Value::Bool(true)) {
        causes.push(Cause {
            reason: "FieldValueNotSupported",
            message: r#"Unsupported value: true: supported values: "nil", "false""#.into(),
            field: "spec.jobTemplate.spec.manualSelector".into(),
        });
    }
    nonnegative(spec, "spec", "successfulJobsHistoryLimit", &mut causes);
    nonnegative(spec, "spec", "failedJobsHistoryLimit", &mut causes);
    let name = obj.get("metadata").map_or("", |m| text(m, "name"));
    if old.is_none() && name.len() > 52 {
        causes.push(invalid("metadata.name".into(), name, "must be no more than 52 characters"));
    }
    causes
}

/// kube's `validateTimeZone` of a CronJob's time zone that is set.
fn time_zone_faults(tz: &str, causes: &mut Vec<Cause>) {
    let at = || "spec.timeZone".to_string();
    if tz.is_empty() {
        causes.push(invalid(at(), tz, "timeZone must be nil or non-empty string"));
        return;
    }
    let part_valid = |p: &str| {
        p != "."
            && p != ".."
            && !p.starts_with('-')
            && (1..=14).contains(&p.len())
            && p.chars().all(|c| c.is_ascii_alphanumeric() || ".-_+".contains(c))
    };
    if !tz.split('/').all(part_valid) {
        causes.push(invalid(at(), tz, &format!("unknown time zone {tz}")));
        return;
    }
    if tz.eq_ignore_ascii_case("Local") {
        causes.push(invalid(
            at(),
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if let Some(fault) = crate::cron_schedule::location_fault(tz) {
        causes.push(invalid(at(), tz, &fault));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::{Registry, ResourceInfo};

    fn info(plural: &str) -> ResourceInfo {
        Registry::with_defaults().lookup(plural).map(|i| (**i).clone()).unwrap()
    }

    fn pod_template() -> Value {
        json!({"spec": {"containers": [{"name": "main", "image": "busybox"}], "restartPolicy": "Never"}})
    }

    /// `body` as the server stores a create of it: defaulted, given a uid and (for a Job) its
    /// generated selector.
    fn created(plural: &str, body: Value) -> Map<String, Value> {
        let info = info(plural);
        let mut obj = body.as_object().unwrap().clone();
        obj.entry("metadata").or_insert_with(|| json!({"name": "pi", "namespace": "default"}));
        obj["metadata"]["uid"] = json!("u-1");
        crate::defaults::decode(&info, &mut obj);
        crate::defaults::admit(&info, &mut obj, crate::defaults::Write::Create).unwrap();
        obj
    }

    fn judged(plural: &str, obj: &Map<String, Value>, old: Option<&Map<String, Value>>) -> Vec<String> {
        let old = old.map(|o| Value::Object(o.clone()));
        let causes = validate(&info(plural), obj, old.as_ref()).unwrap();
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn job(spec: Value) -> Map<String, Value> {
        let mut spec = spec;
        spec.as_object_mut().unwrap().entry("template").or_insert_with(pod_template);
        created("jobs", json!({"metadata": {"name": "pi", "namespace": "default"}, "spec": spec}))
    }

    #[test]
    fn a_job_as_the_server_generates_it_is_valid() {
        assert_eq!(judged("jobs", &job(json!({})), None), Vec::<String>::new());
        let indexed = job(json!({"completionMode": "Indexed", "completions": 3, "parallelism": 3,
            "backoffLimitPerIndex": 1, "maxFailedIndexes": 1,
            "successPolicy": {"rules": [{"succeededIndexes": "0-1", "succeededCount": 2}]}}));
        assert_eq!(judged("jobs", &indexed, None), Vec::<String>::new());
    }

    #[test]
    fn a_selector_of_one_s_own_needs_a_manual_selector() {
        let mut spec = json!({"selector": {"matchLabels": {"app": "batch"}}});
        spec["template"] = pod_template();
        spec["template"]["metadata"] = json!({"labels": {"app": "batch"}});
        let obj = job(spec.clone());
        assert_eq!(
            judged("jobs", &obj, None),
            vec![
                "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"batch\",\"batch.kubernetes.io/controller-uid\":\"u-1\"}}: `selector` not auto-generated"
            ]
        );
        spec["manualSelector"] = json!(true);
        assert_eq!(judged("jobs", &job(spec), None), Vec::<String>::new());
    }

    #[test]
    fn generated_labels_are_the_job_s_own() {
        let mut spec = json!({});
        spec["template"] = pod_template();
        spec["template"]["metadata"] = json!({"labels": {"job-name": "other"}});
        assert_eq!(
            judged("jobs", &job(spec), None),
            vec![
                "spec.template.metadata.labels[job-name]: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"u-1\",\"batch.kubernetes.io/job-name\":\"pi\",\"controller-uid\":\"u-1\",\"job-name\":\"other\"}: must be 'pi'"
            ]
        );
    }

    #[test]
    fn spec_rules_come_in_kube_s_order() {
        let obj = job(json!({"parallelism": -1, "backoffLimit": -2, "maxFailedIndexes": 2,
            "completionMode": "Sometimes", "podReplacementPolicy": "Never"}));
        assert_eq!(
            judged("jobs", &obj, None),
            vec![
                "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0",
                "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
                "spec.completionMode: Unsupported value: \"Sometimes\": supported values: \"NonIndexed\", \"Indexed\"",
                "spec.podReplacementPolicy: Unsupported value: \"Never\": supported values: \"Failed\", \"TerminatingOrFailed\"",
            ]
        );
        let obj = job(json!({"backoffLimitPerIndex": 1,
            "successPolicy": {"rules": [{"succeededCount": 1}]}}));
        assert_eq!(
            judged("jobs", &obj, None),
            vec![
                "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
                "spec.successPolicy: Invalid value: {\"Rules\":[{\"SucceededIndexes\":null,\"SucceededCount\":1}]}: requires indexed completion mode",
            ]
        );
    }

    #[test]
    fn pods_restart_on_failure_or_never() {
        let mut spec = json!({});
        spec["template"] = json!({"spec": {"containers": [{"name": "main", "image": "busybox"}]}});
        assert_eq!(
            judged("jobs", &job(spec), None),
            vec!["spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""]
        );
        let mut spec = json!({"podFailurePolicy": {"rules": [{"action": "FailJob",
            "onExitCodes": {"operator": "In", "values": [42]}}]}});
        spec["template"] = pod_template();
        spec["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        assert_eq!(
            judged("jobs", &job(spec), None),
            vec![
                "spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified"
            ]
        );
    }

    #[test]
    fn pod_failure_policies_are_judged_rule_by_rule() {
        let obj = job(json!({"podFailurePolicy": {"rules": [
            {"action": "", "onExitCodes": {"containerName": "sidecar", "operator": "In", "values": [0, 3, 3, 1]}},
            {"action": "FailIndex", "onPodConditions": [{"type": "DisruptionTarget", "status": "Maybe"}]},
            {"action": "Explode"},
        ]}}));
        assert_eq!(
            judged("jobs", &obj, None),
            vec![
                "spec.podFailurePolicy.rules[0].action: Required value: valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]",
                "spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: \"sidecar\": must be one of the container or initContainer names in the pod template",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 3",
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [0,3,3,1]: must be ordered",
                "spec.podFailurePolicy.rules[1].action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set",
                "spec.podFailurePolicy.rules[1].onPodConditions[0].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\"",
                "spec.podFailurePolicy.rules[2].action: Unsupported value: \"Explode\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
                "spec.podFailurePolicy.rules[2]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
            ]
        );
    }

    #[test]
    fn indexed_jobs_name_their_pods_with_dns_labels() {
        let name = "a".repeat(62);
        let obj = created(
            "jobs",
            json!({"metadata": {"name": name, "namespace": "default"}, "spec": {"completionMode": "Indexed",
                "completions": 10, "parallelism": 1, "template": pod_template(),
                "successPolicy": {"rules": [{"succeededIndexes": "3-1"}, {"succeededCount": 11}]}}}),
        );
        assert_eq!(
            judged("jobs", &obj, None),
            vec![
                "spec.successPolicy.rules[0].succeededIndexes: Invalid value: \"3-1\": error parsing succeededIndexes: non-increasing order, previous: 3, current: 1".to_string(),
                "spec.successPolicy.rules[1].succeededCount: Invalid value: 11: must be less than or equal to 10 (the number of specified completions)".into(),
                format!("metadata.name: Invalid value: \"{name}\": will not able to create pod with invalid DNS label: {name}-9"),
            ]
        );
    }

    #[test]
    fn updates_keep_what_kube_keeps() {
        let old = job(json!({}));
        let mut new = old.clone();
        new["spec"]["completions"] = json!(2);
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox:1.37");
        new["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
        new["spec"]["parallelism"] = json!(4);
        new["spec"]["suspend"] = json!(true);
        let judged = judged("jobs", &new, Some(&old));
        assert_eq!(judged.len(), 3, "{judged:?}");
        assert_eq!(judged[0], "spec.completions: Invalid value: 2: field is immutable");
        let template = go_json(&new["spec"]["template"]);
        assert_eq!(judged[1], format!("spec.template: Invalid value: {template}: field is immutable"));
        assert_eq!(judged[2], "spec.managedBy: Invalid value: \"kueue.x-k8s.io/multikueue\": field is immutable");
    }

    #[test]
    fn what_go_leaves_out_is_no_change() {
        // Stored with zero values a typed client does not send back.
        let mut spec = json!({"managedBy": "kueue.x-k8s.io/multikueue"});
        spec["template"] = pod_template();
        spec["template"]["spec"]["containers"][0]["stdin"] = json!(false);
        spec["template"]["spec"]["containers"][0]["workingDir"] = json!("");
        let old = job(spec);
        let mut new = old.clone();
        let container = new["spec"]["template"]["spec"]["containers"][0].as_object_mut().unwrap();
        container.remove("stdin");
        container.remove("workingDir");
        assert_eq!(judged("jobs", &new, Some(&old)), Vec::<String>::new());
        // A pointer taken away is shown as kube shows a nil one.
        new["spec"].as_object_mut().unwrap().remove("managedBy");
        assert_eq!(judged("jobs", &new, Some(&old)), ["spec.managedBy: Invalid value: \"null\": field is immutable"]);
    }

    #[test]
    fn a_suspended_job_that_never_started_may_move_its_pods() {
        let old = job(json!({"suspend": true}));
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["nodeSelector"] = json!({"pool": "gpu"});
        new["spec"]["template"]["spec"]["tolerations"] = json!([{"key": "gpu", "operator": "Exists"}]);
        new["spec"]["template"]["metadata"]["annotations"] = json!({"queue": "a"});
        new["spec"]["template"]["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}});
        new["spec"]["suspend"] = json!(false);
        assert_eq!(judged("jobs", &new, Some(&old)), Vec::<String>::new());
        // Once started, it may not.
        let mut started = old.clone();
        started.insert("status".into(), json!({"startTime": "2026-11-26T10:00:00Z"}));
        let judged = judged("jobs", &new, Some(&started));
        assert_eq!(judged.len(), 1, "{judged:?}");
        let template = go_json(&new["spec"]["template"]);
        assert_eq!(judged[0], format!("spec.template: Invalid value: {template}: field is immutable"));
    }

    #[test]
    fn spec_faults_are_reported_twice_on_update() {
        let old = job(json!({}));
        let mut new = old.clone();
        new["spec"]["backoffLimit"] = json!(-1);
        assert_eq!(
            judged("jobs", &new, Some(&old)),
            vec![
                "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
                "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
    }

    fn cron_job(spec: Value) -> Map<String, Value> {
        let mut spec = spec;
        let m = spec.as_object_mut().unwrap();
        m.entry("schedule").or_insert(json!("*/5 * * * *"));
        m.entry("jobTemplate").or_insert_with(|| json!({"spec": {"template": pod_template()}}));
        created("cronjobs", json!({"metadata": {"name": "nightly", "namespace": "default"}, "spec": spec}))
    }

    #[test]
    fn a_cron_job_as_kubectl_creates_it_is_valid() {
        assert_eq!(judged("cronjobs", &cron_job(json!({})), None), Vec::<String>::new());
        let zoned = cron_job(json!({"schedule": "@every 1h", "timeZone": "Europe/Rome"}));
        assert_eq!(judged("cronjobs", &zoned, None), Vec::<String>::new());
    }

    #[test]
    fn cron_job_faults_come_in_kube_s_order() {
        let mut obj = cron_job(json!({"schedule": "0 25 * * *", "timeZone": "Mars/Olympus",
            "concurrencyPolicy": "Sometimes", "startingDeadlineSeconds": -5, "failedJobsHistoryLimit": -1,
            "jobTemplate": {"spec": {"selector": {"matchLabels": {"a": "b"}}, "manualSelector": true,
                "template": pod_template()}}}));
        obj["metadata"]["name"] = json!("n".repeat(53));
        assert_eq!(
            judged("cronjobs", &obj, None),
            vec![
                "spec.schedule: Invalid value: \"0 25 * * *\": end of range (25) above maximum (23): 25".to_string(),
                "spec.startingDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0".into(),
                "spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus".into(),
                "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"".into(),
                "spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` will be auto-generated".into(),
                "spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: \"nil\", \"false\"".into(),
                "spec.failedJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0".into(),
                format!("metadata.name: Invalid value: \"{}\": must be no more than 52 characters", "n".repeat(53)),
            ]
        );
    }

    #[test]
    fn time_zones_belong_in_their_field() {
        let obj = cron_job(json!({"schedule": "TZ=UTC 0 * * * *"}));
        assert_eq!(
            judged("cronjobs", &obj, None),
            vec![
                "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
            ]
        );
        // One stored with it keeps it, but not beside a time zone.
        let mut new = obj.clone();
        new["spec"]["successfulJobsHistoryLimit"] = json!(5);
        assert_eq!(judged("cronjobs", &new, Some(&obj)), Vec::<String>::new());
        new["spec"]["timeZone"] = json!("Local");
        assert_eq!(
            judged("cronjobs", &new, Some(&obj)),
            vec![
                "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use both timeZone field and TZ or CRON_TZ in schedule",
                "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            ]
        );
        // A long name stored before is kept on update.
        let mut long = cron_job(json!({}));
        long["metadata"]["name"] = json!("n".repeat(60));
        assert_eq!(judged("cronjobs", &long, Some(&long)), Vec::<String>::new());
    }
}
