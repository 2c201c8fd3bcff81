//! The rules kube-apiserver v1.35 judges a write of a Job's `/status` by (`ValidateJobUpdateStatus`
//! with the options its status strategy computes), so a Job controller tested here is refused what
//! a cluster refuses it:
//! - counters are not negative, and `failed` (and `succeeded`, but for an indexed Job whose
//!   completions equal its parallelism) never decrease; uncounted pod uids are not empty and
//!   appear once across both lists;
//! - terminal conditions hold together: `Complete` needs `SuccessCriteriaMet` and a
//!   `completionTime` (at or after `startTime`, never changed once set), `Failed` needs
//!   `FailureTarget`, neither goes with the other or with `FailureTarget`; `Complete`,
//!   `Failed`, `FailureTarget` and `SuccessCriteriaMet` once `True` stay so; a finished Job has
//!   a start time, no active, terminating or uncounted pods;
//! - `completedIndexes` and `failedIndexes` are well formed, only on indexed Jobs (failed ones
//!   only with a per-index backoff limit), and do not overlap;
//! - no more ready pods than active ones; a start time, once set, stays while the Job is not
//!   suspended (unless the write resumes it).
//!
//! Invariants: most rules judge only what the write changes (the options kube derives from the
//! old and new status), so a status already out of line does not block unrelated writes; causes
//! come in kube's order with its paths, messages and value renderings; the spec judged is the
//! stored one (a status write cannot change it, though its metadata changes are kept, as kube's
//! Job status strategy keeps them).

use serde_json::{Value, json};

use crate::job_validation::{index_count, index_interval};
use crate::policy_validation::required;
use crate::structural::{Cause, go_json, go_quote};
use crate::workload_validation::invalid_value;

/// Whether `info` is batch/v1's Jobs.
pub(crate) fn is_jobs(info: &crate::registry::ResourceInfo) -> bool {
    info.group == "batch" && info.plural == "jobs"
}

/// The causes for which kube refuses `new`, a Job's status written over the stored `old`.
pub(crate) fn validate(new: &Value, old: &Value) -> Vec<Cause> {
    let (new_s, old_s) = (Status::of(new), Status::of(old));
    let spec = new.get("spec").unwrap_or(&Value::Null);
    let opts = Options::new(spec, &new_s, &old_s);
    let mut causes = Vec::new();
    status(spec, &new_s, &opts, &mut causes);
    update(spec, &new_s, &old_s, &opts, &mut causes);
    causes
}

/// What the rules read of a Job's status.
struct Status<'a> {
    conditions: &'a [Value],
    active: i64,
    succeeded: i64,
    failed: i64,
    ready: Option<i64>,
    terminating: Option<i64>,
    completed_indexes: &'a str,
    failed_indexes: Option<&'a str>,
    uncounted: Option<&'a Value>,
    start: Option<&'a str>,
    completion: Option<&'a str>,
}

impl<'a> Status<'a> {
    fn of(job: &'a Value) -> Self {
        let status = job.get("status").unwrap_or(&Value::Null);
        let present = |k: &str| status.get(k).filter(|v| !v.is_null());
        let count = |k: &str| present(k).and_then(Value::as_i64);
        Status {
            conditions: present("conditions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]),
            active: count("active").unwrap_or(0),
            succeeded: count("succeeded").unwrap_or(0),
            failed: count("failed").unwrap_or(0),
            ready: count("ready"),
            terminating: count("terminating"),
            completed_indexes: present("completedIndexes").and_then(Value::as_str).unwrap_or(""),
            failed_indexes: present("failedIndexes").and_then(Value::as_str),
            uncounted: present("uncountedTerminatedPods"),
            start: present("startTime").and_then(Value::as_str),
            completion: present("completionTime").and_then(Value::as_str),
        }
    }

    fn condition(&self, kind: &str, status: &str) -> bool {
        self.conditions.iter().any(|c| c.get("type").and_then(Value::as_str) == Some(kind) && c["status"] == status)
    }

    fn is(&self, kind: &str) -> bool {
        self.condition(kind, "True")
    }

    fn complete(&self) -> bool {
        self.is("Complete")
    }

    fn failed_condition(&self) -> bool {
        self.is("Failed")
    }

    fn finished(&self) -> bool {
        self.complete() || self.failed_condition()
    }

    fn uncounted_list(&self, key: &str) -> &'a [Value] {
        self.uncounted.and_then(|u| u.get(key)).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Whether two optional timestamps name the same instant.
fn same_time(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a == b || instant(a).is_some_and(|x| Some(x) == instant(b)),
        _ => false,
    }
}

fn instant(t: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    chrono::DateTime::parse_from_rfc3339(t).ok()
}

/// The uncounted pods as kube compares them: an empty list is a missing one.
fn uncounted_equal(a: Option<&Value>, b: Option<&Value>) -> bool {
    let list = |u: &Value, k: &str| u.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => list(a, "succeeded") == list(b, "succeeded") && list(a, "failed") == list(b, "failed"),
        _ => false,
    }
}

/// Which rules judge the write (kube's `JobStatusValidationOptions`, as its status strategy sets
/// them with the JobManagedBy feature, on in v1.35).
struct Options {
    decreasing_succeeded: bool,
    completed_indexes: bool,
    failed_indexes: bool,
    overlap: bool,
    failed_without_target: bool,
    complete_without_criteria: bool,
    finished_with_active: bool,
    finished_without_start: bool,
    finished_with_uncounted: bool,
    start_time_update: bool,
    completion_before_start: bool,
    not_complete_with_completion_time: bool,
    complete_with_failed: bool,
    complete_with_failure_target: bool,
    more_ready_than_active: bool,
    finished_with_terminating: bool,
}

impl Options {
    fn new(spec: &Value, new: &Status, old: &Status) -> Self {
        let int = |k: &str| spec.get(k).and_then(Value::as_i64);
        let indexed = spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
        let changed = |kind: &str| new.is(kind) != old.is(kind);
        let finished = new.finished() != old.finished();
        let complete = changed("Complete");
        let failed = changed("Failed");
        let failure_target = changed("FailureTarget");
        let criteria = changed("SuccessCriteriaMet");
        let completed_indexes = new.completed_indexes != old.completed_indexes;
        let failed_indexes = new.failed_indexes != old.failed_indexes;
        let active = new.active != old.active;
        let start = !same_time(new.start, old.start);
        let completion = !same_time(new.completion, old.completion);
        let suspended_without_completions =
            spec.get("suspend").and_then(Value::as_bool) == Some(true) && int("completions") == Some(0);
        let resuming = old.is("Suspended") && new.condition("Suspended", "False");
        Options {
            decreasing_succeeded: !indexed || int("completions") != int("parallelism"),
            completed_indexes,
            failed_indexes,
            overlap: failed_indexes || completed_indexes,
            failed_without_target: failed || failed_indexes,
            complete_without_criteria: complete || criteria,
            finished_with_active: finished || active,
            finished_without_start: (finished || start) && !suspended_without_completions,
            finished_with_uncounted: finished || !uncounted_equal(new.uncounted, old.uncounted),
            start_time_update: start && !resuming,
            completion_before_start: start || completion,
            not_complete_with_completion_time: complete || completion,
            complete_with_failed: complete || failed,
            complete_with_failure_target: complete || failure_target,
            more_ready_than_active: new.ready != old.ready || active,
            finished_with_terminating: finished || new.terminating != old.terminating,
        }
    }
}

fn conditions(detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {detail}"),
        field: "status.conditions".into(),
    }
}

fn count(at: &str, n: i64, detail: &str) -> Cause {
    invalid_value(at, &n.to_string(), detail)
}

fn time(t: Option<&str>) -> String {
    crate::validation::go_time(t, false)
}

/// kube's `validateJobStatus`: the new status on its own.
fn status(spec: &Value, s: &Status, opts: &Options, causes: &mut Vec<Cause>) {
    for (key, n) in [("active", Some(s.active)), ("succeeded", Some(s.succeeded)), ("failed", Some(s.failed))]
        .into_iter()
        .chain([("ready", s.ready), ("terminating", s.terminating)])
    {
        if let Some(n) = n.filter(|n| *n < 0) {
            causes.push(count(&format!("status.{key}"), n, "must be greater than or equal to 0"));
        }
    }
    if s.uncounted.is_some() {
        let mut seen = std::collections::HashSet::new();
        for key in ["succeeded", "failed"] {
            for (i, uid) in s.uncounted_list(key).iter().enumerate() {
                let at = format!("status.uncountedTerminatedPods.{key}[{i}]");
                let uid = uid.as_str().unwrap_or("");
                if uid.is_empty() {
                    causes.push(invalid_value(&at, "\"\"", "must not be empty"));
                } else if !seen.insert(uid) {
                    let message = format!("Duplicate value: {}", go_quote(uid));
                    causes.push(Cause { reason: "FieldValueDuplicate", message, field: at });
                }
            }
        }
    }
    let (complete, failed, target) = (s.complete(), s.failed_condition(), s.is("FailureTarget"));
    let criteria = s.is("SuccessCriteriaMet");
    if opts.complete_with_failed && complete && failed {
        causes.push(conditions("cannot set Complete=True and Failed=true conditions"));
    }
    if opts.complete_with_failure_target && complete && target {
        causes.push(conditions("cannot set Complete=True and FailureTarget=true conditions"));
    }
    if opts.not_complete_with_completion_time && s.completion.is_some() && !complete {
        causes.push(invalid_value(
            "status.completionTime",
            &time(s.completion),
            "cannot set completionTime when there is no Complete=True condition",
        ));
    }
    if opts.not_complete_with_completion_time && s.completion.is_none() && complete {
        causes.push(required("status.completionTime".into(), "completionTime is required for Complete jobs"));
    }
    if opts.completion_before_start
        && let (Some(start), Some(done)) = (s.start.and_then(instant), s.completion.and_then(instant))
        && done < start
    {
        causes.push(invalid_value(
            "status.completionTime",
            &time(s.completion),
            "must be equal to or after `startTime`",
        ));
    }
    if opts.failed_without_target && failed && !target {
        causes.push(conditions("cannot set Failed=True condition without the FailureTarget=true condition"));
    }
    if opts.complete_without_criteria && complete && !criteria {
        causes.push(conditions("cannot set Complete=True condition without the SuccessCriteriaMet=true condition"));
    }
    let finished = s.finished();
    if opts.finished_with_active && s.active > 0 && finished {
        causes.push(count("status.active", s.active, "active>0 is invalid for finished job"));
    }
    if opts.finished_without_start && s.start.is_none() && finished {
        causes.push(required("status.startTime".into(), "startTime is required for finished job"));
    }
    if opts.finished_with_uncounted
        && finished
        && s.uncounted_list("succeeded").len() + s.uncounted_list("failed").len() > 0
    {
        causes.push(invalid_value(
            "status.uncountedTerminatedPods",
            &shown_uncounted(s.uncounted),
            "must be empty for finished job",
        ));
    }
    indexes(spec, s, opts, causes);
    if opts.finished_with_terminating && s.terminating.is_some_and(|n| n > 0) && finished {
        causes.push(count(
            "status.terminating",
            s.terminating.unwrap_or(0),
            "terminating>0 is invalid for finished job",
        ));
    }
    if opts.more_ready_than_active
        && let Some(ready) = s.ready.filter(|r| *r > s.active)
    {
        causes.push(count("status.ready", ready, "cannot set more ready pods than active"));
    }
    if criteria && failed {
        causes.push(conditions("cannot set SuccessCriteriaMet=True and Failed=true conditions"));
    }
    if criteria && target {
        causes.push(conditions("cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"));
    }
    if spec.get("successPolicy").is_some_and(|p| !p.is_null()) && !criteria && complete {
        causes.push(conditions("cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"));
    }
}

/// The rules on `completedIndexes` and `failedIndexes`.
fn indexes(spec: &Value, s: &Status, opts: &Options, causes: &mut Vec<Cause>) {
    let completions = spec.get("completions").and_then(Value::as_i64);
    let per_index = spec.get("backoffLimitPerIndex").is_some_and(|v| !v.is_null());
    let indexed = spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    if opts.completed_indexes
        && let Some(c) = completions
        && let Err(e) = index_count(s.completed_indexes, c)
    {
        let detail = format!("error parsing completedIndexes: {e}");
        causes.push(invalid_value("status.completedIndexes", &go_quote(s.completed_indexes), &detail));
    }
    if opts.failed_indexes
        && let (Some(c), true, Some(failed)) = (completions, per_index, s.failed_indexes)
        && let Err(e) = index_count(failed, c)
    {
        let detail = format!("error parsing failedIndexes: {e}");
        causes.push(invalid_value("status.failedIndexes", &go_json(&json!(failed)), &detail));
    }
    if opts.completed_indexes && !s.completed_indexes.is_empty() && !indexed {
        causes.push(invalid_value(
            "status.completedIndexes",
            &go_quote(s.completed_indexes),
            "cannot set non-empty completedIndexes when non-indexed completion mode",
        ));
    }
    if opts.failed_indexes
        && !per_index
        && let Some(failed) = s.failed_indexes
    {
        causes.push(invalid_value(
            "status.failedIndexes",
            &go_quote(failed),
            "cannot set non-null failedIndexes when backoffLimitPerIndex is null",
        ));
    }
    if opts.overlap
        && let (Some(c), Some(failed)) = (completions, s.failed_indexes)
        && let Some(at) = overlap(s.completed_indexes, failed, c)
    {
        let detail = format!("failedIndexes and completedIndexes overlap at index: {at}");
        causes.push(invalid_value("status.failedIndexes", &go_quote(failed), &detail));
    }
}

/// The first index both lists name (kube's `validateFailedIndexesNotOverlapCompleted`: a walk
/// over both in order, passing over fragments that do not parse).
fn overlap(completed: &str, failed: &str, completions: i64) -> Option<i64> {
    if completed.is_empty() || failed.is_empty() {
        return None;
    }
    let (c, f): (Vec<&str>, Vec<&str>) = (completed.split(',').collect(), failed.split(',').collect());
    let (mut ci, mut fi) = (0, 0);
    while ci < c.len() && fi < f.len() {
        match (index_interval(c[ci], completions), index_interval(f[fi], completions)) {
            (Err(_), _) => ci += 1,
            (_, Err(_)) => fi += 1,
            (Ok((cx, cy)), Ok((fx, fy))) => {
                if cx <= fy && fx <= cy {
                    return Some(cx.max(fx));
                }
                if cx <= fx {
                    ci += 1;
                } else {
                    fi += 1;
                }
            }
        }
    }
    None
}

/// The uncounted pods as kube's field error shows them: Go's JSON of its internal type.
fn shown_uncounted(u: Option<&Value>) -> String {
    let list = |k: &str| u.and_then(|u| u.get(k)).filter(|v| !v.is_null()).cloned().unwrap_or(Value::Null);
    format!("{{\"Succeeded\":{},\"Failed\":{}}}", go_json(&list("succeeded")), go_json(&list("failed")))
}

/// kube's `ValidateJobStatusUpdate`'s rules over the stored status.
fn update(spec: &Value, new: &Status, old: &Status, opts: &Options, causes: &mut Vec<Cause>) {
    for kind in ["Failed", "Complete", "FailureTarget"] {
        if old.is(kind) && !new.is(kind) {
            causes.push(conditions(&format!("cannot disable the terminal {kind}=True condition")));
        }
    }
    if new.failed < old.failed {
        causes.push(count("status.failed", new.failed, "cannot decrease the failed counter"));
    }
    if opts.decreasing_succeeded && new.succeeded < old.succeeded {
        causes.push(count("status.succeeded", new.succeeded, "cannot decrease the succeeded counter"));
    }
    if new.completion.is_some() && old.completion.is_some() && !same_time(new.completion, old.completion) {
        causes.push(invalid_value("status.completionTime", &time(new.completion), "field is immutable"));
    }
    let suspended = spec.get("suspend").and_then(Value::as_bool) == Some(true);
    if opts.start_time_update && old.start.is_some() && !same_time(old.start, new.start) && !suspended {
        causes.push(required("status.startTime".into(), "startTime cannot be removed for unsuspended job"));
    }
    if old.is("SuccessCriteriaMet") && !new.is("SuccessCriteriaMet") {
        causes.push(conditions("cannot disable the SuccessCriteriaMet=True condition"));
    }
    if old.complete() && !old.is("SuccessCriteriaMet") && new.is("SuccessCriteriaMet") {
        causes.push(conditions("cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(status: Value) -> Value {
        json!({"spec": {"completions": 1, "parallelism": 1}, "status": status})
    }

    fn messages(new: Value, old: Value) -> Vec<String> {
        validate(&new, &old).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    const START: &str = "2026-11-27T10:00:00Z";

    #[test]
    fn a_finished_job_needs_its_conditions_and_times() {
        let old = job(json!({"startTime": START, "active": 1}));
        let complete = json!([{"type": "Complete", "status": "True"}]);
        assert_eq!(
            messages(job(json!({"startTime": START, "active": 1, "conditions": complete})), old.clone()),
            [
                "status.completionTime: Required value: completionTime is required for Complete jobs",
                "status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
                "status.active: Invalid value: 1: active>0 is invalid for finished job",
            ]
        );
        let done = json!([{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]);
        let finished = json!({"startTime": START, "completionTime": START, "succeeded": 1, "conditions": done});
        assert!(messages(job(finished.clone()), old).is_empty());
        // Once finished, it stays so and its times stay.
        let mut undone = finished.clone();
        undone["conditions"] = json!([]);
        undone["completionTime"] = json!("2026-11-27T11:00:00Z");
        undone["succeeded"] = json!(0);
        assert_eq!(
            messages(job(undone), job(finished)),
            [
                "status.completionTime: Invalid value: \"2026-11-27T11:00:00Z\": cannot set completionTime when there is no Complete=True condition",
                "status.conditions: Invalid value: cannot disable the terminal Complete=True condition",
                "status.succeeded: Invalid value: 0: cannot decrease the succeeded counter",
                "status.completionTime: Invalid value: \"2026-11-27T11:00:00Z\": field is immutable",
                "status.conditions: Invalid value: cannot disable the SuccessCriteriaMet=True condition",
            ]
        );
    }

    #[test]
    fn counters_uids_and_indexes_are_judged() {
        let uncounted = json!({"succeeded": ["a", ""], "failed": ["a"]});
        assert_eq!(
            messages(job(json!({"active": -1, "ready": 2, "uncountedTerminatedPods": uncounted})), job(json!({}))),
            [
                "status.active: Invalid value: -1: must be greater than or equal to 0",
                "status.uncountedTerminatedPods.succeeded[1]: Invalid value: \"\": must not be empty",
                "status.uncountedTerminatedPods.failed[0]: Duplicate value: \"a\"",
                "status.ready: Invalid value: 2: cannot set more ready pods than active",
            ]
        );
        let indexed = |status: Value| {
            json!({"spec": {"completions": 5, "parallelism": 2, "completionMode": "Indexed", "backoffLimitPerIndex": 1},
                "status": status})
        };
        assert_eq!(
            messages(indexed(json!({"completedIndexes": "0,5", "failedIndexes": "1-3"})), indexed(json!({}))),
            ["status.completedIndexes: Invalid value: \"0,5\": error parsing completedIndexes: too large index: \"5\"",]
        );
        assert_eq!(
            messages(indexed(json!({"completedIndexes": "0,2", "failedIndexes": "1-3"})), indexed(json!({}))),
            ["status.failedIndexes: Invalid value: \"1-3\": failedIndexes and completedIndexes overlap at index: 2"]
        );
        assert_eq!(
            messages(job(json!({"completedIndexes": "0", "failedIndexes": ""})), job(json!({}))),
            [
                "status.completedIndexes: Invalid value: \"0\": cannot set non-empty completedIndexes when non-indexed completion mode",
                "status.failedIndexes: Invalid value: \"\": cannot set non-null failedIndexes when backoffLimitPerIndex is null",
            ]
        );
    }

    #[test]
    fn a_status_already_out_of_line_does_not_block_other_writes() {
        // Finished without a start time: only a write that touches it is judged on it.
        let done = json!([{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}]);
        let old = job(json!({"conditions": done, "active": 1}));
        assert!(messages(job(json!({"conditions": done, "active": 1, "failed": 1})), old.clone()).is_empty());
        assert_eq!(
            messages(job(json!({"conditions": done, "active": 2})), old),
            ["status.active: Invalid value: 2: active>0 is invalid for finished job"]
        );
    }

    #[test]
    fn a_start_time_stays_unless_the_job_is_suspended_or_resumed() {
        let running = job(json!({"startTime": START}));
        let moved = job(json!({"startTime": "2026-11-27T10:30:00Z"}));
        assert_eq!(
            messages(moved.clone(), running.clone()),
            ["status.startTime: Required value: startTime cannot be removed for unsuspended job"]
        );
        let mut suspended = moved.clone();
        suspended["spec"]["suspend"] = json!(true);
        assert!(messages(suspended, running.clone()).is_empty());
        let mut old = running;
        old["status"]["conditions"] = json!([{"type": "Suspended", "status": "True"}]);
        let mut resumed = moved;
        resumed["status"]["conditions"] = json!([{"type": "Suspended", "status": "False"}]);
        assert!(messages(resumed, old).is_empty());
    }
}
