//! The options of a DELETE (kube's `DeleteOptions`): its preconditions, whether it is a dry run,
//! and what becomes of the object's dependents (`propagationPolicy`, or the older
//! `orphanDependents`), and the finalizers of the garbage collector a deletion gives the object.
//!
//! Invariants: options come from the request's body when it has one and from its query
//! otherwise, as kube-apiserver decodes them; they are checked before anything is read or
//! written (422 `DeleteOptions.meta.k8s.io "" is invalid`); the finalizers are decided as
//! kube's generic registry decides them — the request's options first, then the finalizers the
//! object already has, then the resource's default — and only where a garbage collector runs,
//! so no finalizer is set that nothing would remove.

use serde_json::Value;

use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::structural::{Cause, go_json, go_quote};

/// The finalizer that has the garbage collector orphan an object's dependents before it goes.
pub const ORPHAN: &str = "orphan";

/// The finalizer that keeps an object until its blocking dependents are gone.
pub const FOREGROUND: &str = "foregroundDeletion";

/// What a deletion does to the object's dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// The dependents lose their reference to the object and stay.
    Orphan,
    /// The object goes now; the garbage collector deletes the dependents after.
    Background,
    /// The object stays (finalizer `foregroundDeletion`) until its blocking dependents are gone.
    Foreground,
}

impl Propagation {
    /// kube's name of the policy.
    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::Orphan => "Orphan",
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
        }
    }
}

/// The options of one deletion.
#[derive(Debug, Clone, Default)]
pub struct DeleteOpts {
    /// `preconditions.resourceVersion`: the object must be at this version. It is compared as
    /// kube compares it, with the version as the server writes it: "0123" or "abc" is never met.
    pub precondition_rv: Option<String>,
    /// `preconditions.uid`: the object must have this UID.
    pub precondition_uid: Option<String>,
    /// `propagationPolicy`.
    pub propagation: Option<Propagation>,
    /// `orphanDependents` (deprecated by `propagationPolicy`; both may not be set).
    pub orphan_dependents: Option<bool>,
    /// Nothing is written.
    pub dry_run: bool,
    /// `gracePeriodSeconds`: how long a pod may take to terminate (see
    /// [`crate::graceful_deletion`]); `None` takes the pod's own.
    pub grace_period_seconds: Option<i64>,
    /// The deletion carries out a request admission already judged as another operation (a
    /// pod's eviction): it is not offered to admission again, as kube's eviction deletes.
    pub(crate) admitted: bool,
    /// The deletion is one of a DELETE of a collection in this namespace ("" for a cluster-scoped
    /// resource): admission sees it as kube's DeleteCollection offers it, without a name and in
    /// that namespace.
    pub(crate) collection: Option<String>,
}

impl DeleteOpts {
    /// Options with only a dry-run flag.
    pub fn dry_run(dry_run: bool) -> Self {
        DeleteOpts { dry_run, ..Default::default() }
    }

    /// Options that delete only the object with this UID.
    pub fn with_uid(uid: &str) -> Self {
        DeleteOpts { precondition_uid: Some(uid.to_string()), ..Default::default() }
    }

    /// The precondition's version when the object's version `rv` does not meet it.
    pub(crate) fn unmet_rv(&self, rv: u64) -> Option<&str> {
        self.precondition_rv.as_deref().filter(|wanted| *wanted != rv.to_string())
    }

    /// Sets the grace period (`0` removes a pod at once).
    pub fn grace_period(mut self, seconds: i64) -> Self {
        self.grace_period_seconds = Some(seconds);
        self
    }

    /// Sets the propagation policy.
    pub fn propagation(mut self, p: Propagation) -> Self {
        self.propagation = Some(p);
        self
    }

    /// The options of a request: its `DeleteOptions` body (`body`, `Value::Null` when it sent
    /// none) or else its query (`dryRun` included).
    pub fn from_request(query: &[(String, String)], body: &Value) -> Result<Self, ApiError> {
        let mut opts = DeleteOpts::default();
        let (policy, dry_run): (Option<String>, Vec<String>) = if body.is_object() {
            check_body(body)?;
            let pre = body.get("preconditions");
            opts.precondition_rv =
                pre.and_then(|p| p.get("resourceVersion")).and_then(Value::as_str).map(str::to_string);
            opts.precondition_uid = pre.and_then(|p| p.get("uid")).and_then(Value::as_str).map(str::to_string);
            opts.orphan_dependents = body.get("orphanDependents").and_then(Value::as_bool);
            opts.grace_period_seconds = body.get("gracePeriodSeconds").and_then(Value::as_i64);
            (
                body.get("propagationPolicy").and_then(Value::as_str).map(str::to_string),
                crate::object::strings(body.get("dryRun")),
            )
        } else {
            let first = |key: &str| query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
            // kube's query booleans: only "0" and "false" (any case) are false.
            opts.orphan_dependents = first("orphanDependents").map(crate::body::query_bool);
            if let Some(g) = first("gracePeriodSeconds") {
                opts.grace_period_seconds = Some(parse_int64(g)?);
            }
            let dry_run = query.iter().filter(|(k, _)| k == "dryRun").map(|(_, v)| v.clone());
            (first("propagationPolicy").map(str::to_string), dry_run.collect())
        };
        let mut causes = Vec::new();
        if opts.orphan_dependents.is_some()
            && let Some(p) = &policy
        {
            causes.push(Cause {
                reason: "FieldValueInvalid",
                message: format!(
                    "Invalid value: {}: orphanDependents and deletionPropagation cannot be both set",
                    go_quote(p)
                ),
                field: "propagationPolicy".into(),
            });
        }
        opts.propagation = match policy.as_deref() {
            None => None,
            Some("Orphan") => Some(Propagation::Orphan),
            Some("Background") => Some(Propagation::Background),
            Some("Foreground") => Some(Propagation::Foreground),
            Some(other) => {
                causes.push(Cause {
                    reason: "FieldValueNotSupported",
                    message: format!(
                        "Unsupported value: {}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                        go_quote(other)
                    ),
                    field: "propagationPolicy".into(),
                });
                None
            }
        };
        if dry_run.iter().any(|d| d != "All") {
            causes.push(Cause {
                reason: "FieldValueNotSupported",
                message: format!(
                    "Unsupported value: {}: supported values: \"All\"",
                    go_json(&Value::from(dry_run.clone()))
                ),
                field: "dryRun".into(),
            });
        }
        if !causes.is_empty() {
            return Err(invalid(&causes));
        }
        opts.dry_run = !dry_run.is_empty();
        Ok(opts)
    }
}

/// A query integer as Go's `strconv.ParseInt` reads it; its error is kube's 400.
pub(crate) fn parse_int64(v: &str) -> Result<i64, ApiError> {
    crate::go_strconv::parse_int(v).map_err(ApiError::bad_request)
}

/// A body that Go's decoder cannot read into `DeleteOptions`: 400 with its words.
fn check_body(body: &Value) -> Result<(), ApiError> {
    let wrong = |v: &Value, field: &str, ty: &str| {
        let kind = match v {
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            _ => "object",
        };
        Err(ApiError::bad_request(format!(
            "json: cannot unmarshal {kind} into Go struct field DeleteOptions.{field} of type {ty}"
        )))
    };
    fn typed(v: Option<&Value>, ok: fn(&Value) -> bool) -> Option<&Value> {
        v.filter(|v| !v.is_null() && !ok(v))
    }
    if let Some(v) = typed(body.get("propagationPolicy"), Value::is_string) {
        return wrong(v, "propagationPolicy", "v1.DeletionPropagation");
    }
    if let Some(v) = typed(body.get("orphanDependents"), Value::is_boolean) {
        return wrong(v, "orphanDependents", "bool");
    }
    if let Some(v) = typed(body.get("gracePeriodSeconds"), |v| v.as_i64().is_some()) {
        return wrong(v, "gracePeriodSeconds", "int64");
    }
    if let Some(v) = typed(body.get("dryRun"), Value::is_array) {
        return wrong(v, "dryRun", "[]string");
    }
    if let Some(v) = body.get("dryRun").and_then(Value::as_array).into_iter().flatten().find(|v| !v.is_string()) {
        return wrong(v, "dryRun", "string");
    }
    match body.get("preconditions") {
        None | Some(Value::Null) => {}
        Some(Value::Object(p)) => {
            if let Some(v) = typed(p.get("uid"), Value::is_string) {
                return wrong(v, "preconditions.uid", "types.UID");
            }
            if let Some(v) = typed(p.get("resourceVersion"), Value::is_string) {
                return wrong(v, "preconditions.resourceVersion", "string");
            }
        }
        Some(v) => return wrong(v, "preconditions", "v1.Preconditions"),
    }
    Ok(())
}

/// 422 `DeleteOptions.meta.k8s.io "" is invalid: …` with these causes.
fn invalid(causes: &[Cause]) -> ApiError {
    let listed: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
    let summary = if listed.len() == 1 { listed[0].clone() } else { format!("[{}]", listed.join(", ")) };
    let mut e = ApiError::new(422, "Invalid", format!("DeleteOptions.meta.k8s.io \"\" is invalid: {summary}"));
    e.details = Some(Box::new(serde_json::json!({
        "group": "meta.k8s.io",
        "kind": "DeleteOptions",
        "causes": causes.iter().map(|c| serde_json::json!({"reason": c.reason, "message": c.message, "field": c.field})).collect::<Vec<_>>(),
    })));
    e
}

/// What a resource's deletions do to dependents when neither the request nor the object says.
fn orphans_by_default(info: &ResourceInfo) -> bool {
    // Kept from before the garbage collector existed: core/v1 ReplicationControllers and
    // batch/v1 Jobs orphan their pods unless told otherwise.
    (info.group.is_empty() && info.version == "v1" && info.plural == "replicationcontrollers")
        || (info.group == "batch" && info.version == "v1" && info.plural == "jobs")
}

/// The warning of a batch/v1 Job deletion that leaves the policy to the Job's default.
pub const JOB_PODS_PRESERVED: &str = "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning";

/// Warns, as kube's Job storage does, when a batch/v1 Job's deletion names no policy (its pods
/// are then orphaned).
pub(crate) fn warn_on_default(info: &ResourceInfo, opts: &DeleteOpts) {
    if info.plural == "jobs"
        && orphans_by_default(info)
        && opts.propagation.is_none()
        && opts.orphan_dependents.is_none()
    {
        crate::warning::record(JOB_PODS_PRESERVED);
    }
}

/// The garbage collector's finalizers a deletion leaves on an object with `finalizers`: the
/// new list when it differs from the old one (as sets), None when it stays.
pub(crate) fn gc_finalizers(info: &ResourceInfo, finalizers: &[String], opts: &DeleteOpts) -> Option<Vec<String>> {
    if is_event(info) {
        // Events have no dependents (kube's Event strategy supports no collection policy).
        return None;
    }
    let has = |f: &str| finalizers.iter().find(|x| *x == ORPHAN || *x == FOREGROUND).is_some_and(|x| x == f);
    let orphan = match (opts.orphan_dependents, opts.propagation) {
        (Some(o), _) => o,
        (None, Some(p)) => p == Propagation::Orphan,
        (None, None) if finalizers.iter().any(|f| f == ORPHAN || f == FOREGROUND) => has(ORPHAN),
        (None, None) => orphans_by_default(info),
    };
    let foreground = match (opts.orphan_dependents, opts.propagation) {
        (Some(_), _) => false,
        (None, Some(p)) => p == Propagation::Foreground,
        (None, None) => has(FOREGROUND),
    };
    let out = with_gc_finalizers(finalizers, orphan, foreground);
    let set = |l: &[String]| l.iter().cloned().collect::<std::collections::BTreeSet<String>>();
    (set(&out) != set(finalizers)).then_some(out)
}

/// `finalizers` with the collector's as asked: the others first, in order, then `orphan`, then
/// `foregroundDeletion`.
fn with_gc_finalizers(finalizers: &[String], orphan: bool, foreground: bool) -> Vec<String> {
    let mut out: Vec<String> = finalizers.iter().filter(|f| *f != ORPHAN && *f != FOREGROUND).cloned().collect();
    if orphan {
        out.push(ORPHAN.into());
    }
    if foreground {
        out.push(FOREGROUND.into());
    }
    out
}

/// The collector's finalizers the first DELETE of a namespace leaves on it (kube's namespace
/// storage decides them from the request's options, else from those it has): the new list when
/// it differs from the old one (as sets), None when it stays.
pub(crate) fn namespace_gc_finalizers(finalizers: &[String], opts: &DeleteOpts) -> Option<Vec<String>> {
    let has = |f: &str| finalizers.iter().any(|x| x == f);
    let orphan = match (opts.orphan_dependents, opts.propagation) {
        (Some(o), _) => o,
        (None, Some(p)) => p == Propagation::Orphan,
        (None, None) => has(ORPHAN),
    };
    let foreground = match (opts.orphan_dependents, opts.propagation) {
        (Some(o), _) => !o,
        (None, Some(p)) => p == Propagation::Foreground,
        (None, None) => has(FOREGROUND),
    };
    (orphan != has(ORPHAN) || foreground != has(FOREGROUND)).then(|| with_gc_finalizers(finalizers, orphan, foreground))
}

/// Whether a resource is core/v1's or events.k8s.io's events.
pub(crate) fn is_event(info: &ResourceInfo) -> bool {
    info.plural == "events" && (info.group.is_empty() || info.group == "events.k8s.io")
}

/// kube's 409 for a `preconditions.uid` the object does not have (`rest.BeforeDelete`'s words;
/// the registries of CustomResourceDefinitions and namespaces say it their own way).
pub(crate) fn unmet_uid(info: &ResourceInfo, name: &str, wanted: &str, found: &str) -> ApiError {
    if own_preconditions(info) {
        return registry_conflict(info, name, &format!("UID in precondition: {wanted}, UID in object meta: {found}"));
    }
    unmet(
        info,
        name,
        &format!(
            "the UID in the precondition ({wanted}) does not match the UID in record ({found}). The object might have been deleted and then recreated"
        ),
    )
}

/// kube's 409 for a `preconditions.resourceVersion` the object is no longer at.
pub(crate) fn unmet_rv(info: &ResourceInfo, name: &str, wanted: &str, found: u64) -> ApiError {
    if own_preconditions(info) {
        let why = format!("ResourceVersion in precondition: {wanted}, ResourceVersion in object meta: {found}");
        return registry_conflict(info, name, &why);
    }
    unmet(
        info,
        name,
        &format!(
            "the ResourceVersion in the precondition ({wanted}) does not match the ResourceVersion in record ({found}). The object might have been modified"
        ),
    )
}

/// Whether the resource's registry checks a deletion's preconditions itself.
fn own_preconditions(info: &ResourceInfo) -> bool {
    crate::crd::is_crds(info) || crate::namespaces::is_namespaces(info)
}

/// The CustomResourceDefinition and namespace registries' own precondition conflict, on their
/// resource.
fn registry_conflict(info: &ResourceInfo, name: &str, why: &str) -> ApiError {
    let mut e = ApiError::conflict(&info.group, &info.plural, name);
    e.message = format!(
        "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: {why}",
        crate::status::qualified_resource(&info.group, &info.plural)
    );
    e
}

/// A conflict on the object's kind (kube names it by kind here, not by resource).
fn unmet(info: &ResourceInfo, name: &str, why: &str) -> ApiError {
    let mut e = ApiError::conflict(&info.group, &info.kind, name);
    e.message = format!(
        "Operation cannot be fulfilled on {} \"{name}\": {why}",
        crate::status::qualified_resource(&info.group, &info.kind)
    );
    e
}

/// Whether a DELETE that removed an object answers with the object, as kube's registries of
/// pods, services, namespaces, service accounts, persistent volumes and their claims, resource
/// quotas, pod templates, storage classes, CSI drivers and nodes, volume attachments, volume
/// attributes classes and the four kinds of resource.k8s.io do; the others answer a `Success` Status naming it.
pub fn answers_with_object(info: &ResourceInfo) -> bool {
    const OBJECT: [(&str, &str); 17] = [
        ("", "pods"),
        ("", "services"),
        ("", "namespaces"),
        ("", "serviceaccounts"),
        ("", "persistentvolumes"),
        ("", "persistentvolumeclaims"),
        ("", "resourcequotas"),
        ("", "podtemplates"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "volumeattachments"),
        ("storage.k8s.io", "volumeattributesclasses"),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "resourceclaims"),
        ("resource.k8s.io", "resourceclaimtemplates"),
        ("resource.k8s.io", "resourceslices"),
    ];
    info.custom.is_none() && OBJECT.contains(&(info.group.as_str(), info.plural.as_str()))
}

/// Whether the response to a deletion that left the object in place is 202 Accepted (kube
/// answers so only when the request asked for cascading with `orphanDependents: false`).
pub fn accepted(opts: &DeleteOpts) -> bool {
    opts.orphan_dependents == Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn info(group: &str, version: &str, plural: &str) -> ResourceInfo {
        ResourceInfo::new(group, version, plural, "Thing", true)
    }

    #[test]
    fn body_wins_over_query() {
        let body = serde_json::json!({"kind": "DeleteOptions", "propagationPolicy": "Foreground",
            "preconditions": {"uid": "u1", "resourceVersion": "7"}});
        let query = q(&[("propagationPolicy", "Orphan"), ("dryRun", "All")]);
        let o = DeleteOpts::from_request(&query, &body).unwrap();
        assert_eq!(o.propagation, Some(Propagation::Foreground));
        assert_eq!((o.precondition_rv.as_deref(), o.precondition_uid.as_deref()), (Some("7"), Some("u1")));
        assert!(!o.dry_run, "a body's options replace the query's");
        let o = DeleteOpts::from_request(&query, &Value::Null).unwrap();
        assert_eq!(o.propagation, Some(Propagation::Orphan));
        assert!(o.dry_run);
    }

    #[test]
    fn grace_periods_from_body_or_query() {
        let body = serde_json::json!({"gracePeriodSeconds": 5});
        assert_eq!(
            DeleteOpts::from_request(&q(&[("gracePeriodSeconds", "9")]), &body).unwrap().grace_period_seconds,
            Some(5)
        );
        let o =
            DeleteOpts::from_request(&q(&[("gracePeriodSeconds", "+0"), ("gracePeriodSeconds", "7")]), &Value::Null);
        assert_eq!(o.unwrap().grace_period_seconds, Some(0));
        assert_eq!(DeleteOpts::from_request(&[], &Value::Null).unwrap().grace_period_seconds, None);
        let e = DeleteOpts::from_request(&q(&[("gracePeriodSeconds", "soon")]), &Value::Null).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (400, "strconv.ParseInt: parsing \"soon\": invalid syntax"));
        let e = DeleteOpts::from_request(&q(&[("gracePeriodSeconds", "99999999999999999999")]), &Value::Null);
        assert_eq!(e.unwrap_err().message, "strconv.ParseInt: parsing \"99999999999999999999\": value out of range");
    }

    #[test]
    fn refused_as_kube_refuses() {
        let e = DeleteOpts::from_request(&q(&[("propagationPolicy", "Later")]), &Value::Null).unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Later\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        );
        let both = serde_json::json!({"propagationPolicy": "Orphan", "orphanDependents": true});
        let e = DeleteOpts::from_request(&[], &both).unwrap_err();
        assert_eq!(
            e.message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set"
        );
        // Every cause at once.
        let query = q(&[("propagationPolicy", "Later"), ("orphanDependents", "true"), ("dryRun", "Some")]);
        let e = DeleteOpts::from_request(&query, &Value::Null).unwrap_err();
        assert_eq!(
            e.message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: [propagationPolicy: Invalid value: \"Later\": orphanDependents and deletionPropagation cannot be both set, propagationPolicy: Unsupported value: \"Later\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\", dryRun: Unsupported value: [\"Some\"]: supported values: \"All\"]"
        );
        let e = DeleteOpts::from_request(&[], &serde_json::json!({"orphanDependents": "yes"})).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "json: cannot unmarshal string into Go struct field DeleteOptions.orphanDependents of type bool")
        );
    }

    #[test]
    fn query_booleans_are_false_only_when_they_say_so() {
        for (v, orphan) in [("false", false), ("FALSE", false), ("0", false), ("f", true), ("", true), ("yes", true)] {
            let o =
                DeleteOpts::from_request(&q(&[("orphanDependents", v), ("orphanDependents", "false")]), &Value::Null)
                    .unwrap();
            assert_eq!(o.orphan_dependents, Some(orphan), "{v:?}");
        }
    }

    #[test]
    fn finalizers_follow_options_then_object_then_default() {
        let pods = info("", "v1", "pods");
        let jobs = info("batch", "v1", "jobs");
        let none: Vec<String> = Vec::new();
        let fg = DeleteOpts::default().propagation(Propagation::Foreground);
        assert_eq!(gc_finalizers(&pods, &none, &fg), Some(vec![FOREGROUND.to_string()]));
        assert_eq!(gc_finalizers(&pods, &none, &DeleteOpts::default()), None);
        assert_eq!(gc_finalizers(&jobs, &none, &DeleteOpts::default()), Some(vec![ORPHAN.to_string()]));
        let bg = DeleteOpts::default().propagation(Propagation::Background);
        assert_eq!(gc_finalizers(&jobs, &none, &bg), None);
        // A deletion already under way keeps its policy unless the request names another.
        let marked = vec!["x".to_string(), FOREGROUND.to_string()];
        assert_eq!(gc_finalizers(&jobs, &marked, &DeleteOpts::default()), None);
        let orphan = DeleteOpts::default().propagation(Propagation::Orphan);
        assert_eq!(gc_finalizers(&pods, &marked, &orphan), Some(vec!["x".to_string(), ORPHAN.to_string()]));
        let cascade = DeleteOpts { orphan_dependents: Some(false), ..Default::default() };
        assert_eq!(gc_finalizers(&pods, &marked, &cascade), Some(vec!["x".to_string()]));
        assert!(accepted(&cascade));
    }
}
