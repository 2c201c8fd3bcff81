//! kube-apiserver's PodSecurity admission (its default configuration: every level
//! `privileged:latest` unless a namespace's `pod-security.kubernetes.io/*` labels say otherwise,
//! no exemptions): a namespace's labels choose the Pod Security Standards level (and version)
//! pods are held to (`enforce`), and the one writes are warned of (`warn`).
//!
//! - A pod created or changed (new images or containers) that breaks the `enforce` level is
//!   refused with kube's 403 (`pods "x" is forbidden: violates PodSecurity
//!   "restricted:latest": …`); one that passes it but breaks `warn` gets kube's warning.
//! - A workload (deployment, replicaset, statefulset, daemonset, job, cronjob,
//!   replicationcontroller, podtemplate) is never refused: its pod template is only warned of.
//! - A namespace's labels are checked (422 for a level or version kube does not know), and
//!   tightening `enforce` warns of the existing pods that would be refused.
//!
//! Invariants: only creates and updates are judged, and of pods not the subresources kube
//! ignores (status, binding, eviction…); the checks are kube's own (`pod_security_checks`);
//! an unreadable `enforce` label enforces `restricted` (fails closed), unreadable `warn` and
//! `audit` labels warn of nothing; a warning level unset follows a stricter enforce level.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::admission_policy::Attributes;
use crate::object::StoredObject;
use crate::pod_security_checks::{self as checks, Level, Version};
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::Store;
use crate::structural::Cause;

const PREFIX: &str = "pod-security.kubernetes.io/";

/// Pods checked at most when a namespace's enforce level is tightened.
const MAX_PODS_TO_CHECK: usize = 3000;

/// How long checking the existing pods of a namespace may take.
const POD_CHECK_TIME: Duration = Duration::from_secs(1);

/// A level at a version (`restricted:latest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LevelVersion {
    level: Level,
    version: Version,
}

impl LevelVersion {
    const PRIVILEGED: LevelVersion = LevelVersion { level: Level::Privileged, version: Version(None) };

    fn text(self) -> String {
        format!("{}:{}", self.level.as_str(), self.version.as_string())
    }

    /// The failed checks of a pod's metadata and spec.
    fn failures(self, meta: &Value, spec: &Value) -> Vec<checks::Forbidden> {
        checks::evaluate(self.level, self.version, meta, spec)
    }
}

/// What a namespace's labels ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Policy {
    enforce: LevelVersion,
    audit: LevelVersion,
    warn: LevelVersion,
}

/// The policy of a namespace's labels and the faults of those kube cannot read (kube's
/// `PolicyToEvaluate` over the default configuration).
fn policy_of(labels: Option<&Map<String, Value>>) -> (Policy, Vec<Cause>) {
    let mut p =
        Policy { enforce: LevelVersion::PRIVILEGED, audit: LevelVersion::PRIVILEGED, warn: LevelVersion::PRIVILEGED };
    let mut faults = Vec::new();
    let Some(labels) = labels else { return (p, faults) };
    let label = |mode: &str, what: &str| {
        let key = if what.is_empty() { format!("{PREFIX}{mode}") } else { format!("{PREFIX}{mode}-{what}") };
        labels.get(&key).map(|v| (key, v.as_str().unwrap_or("").to_string()))
    };
    let mut fault = |key: String, value: &str, detail: &str| {
        faults.push(crate::policy_validation::invalid(format!("metadata.labels[{key}]"), value, detail));
    };
    let level_of = |mode: &str, on_error: Level, fault: &mut dyn FnMut(String, &str, &str)| {
        label(mode, "").map(|(key, value)| match Level::parse(&value) {
            Some(l) => (l, true),
            None => {
                fault(key, &value, "must be one of privileged, baseline, restricted");
                (on_error, false)
            }
        })
    };
    let mut has_enforce_level = false;
    if let Some((l, ok)) = level_of("enforce", Level::Restricted, &mut fault) {
        p.enforce.level = l;
        has_enforce_level = ok;
    }
    let version_of = |mode: &str, fault: &mut dyn FnMut(String, &str, &str)| {
        label(mode, "version").map(|(key, value)| {
            Version::parse(&value).unwrap_or_else(|| {
                fault(key, &value, "must be \"latest\" or \"v1.x\"");
                Version(None)
            })
        })
    };
    if let Some(v) = version_of("enforce", &mut fault) {
        p.enforce.version = v;
    }
    if let Some((l, _)) = level_of("audit", Level::Privileged, &mut fault) {
        p.audit.level = l;
    }
    if let Some(v) = version_of("audit", &mut fault) {
        p.audit.version = v;
    }
    let warn_level = level_of("warn", Level::Privileged, &mut fault);
    if let Some((l, _)) = warn_level {
        p.warn.level = l;
    }
    let warn_version = version_of("warn", &mut fault);
    if let Some(v) = warn_version {
        p.warn.version = v;
    }
    // Warn as strictly as an explicitly stricter enforce level.
    if warn_level.is_none() && has_enforce_level && p.enforce.level > p.warn.level {
        p.warn.level = p.enforce.level;
        if warn_version.is_none() {
            p.warn.version = p.enforce.version;
        }
    }
    (p, faults)
}

/// The resources that hold a pod template (judged here, and validated as kube validates
/// templates), and where the template is.
pub(crate) fn template_path(info: &crate::registry::ResourceInfo) -> Option<&'static [&'static str]> {
    Some(match (info.group.as_str(), info.plural.as_str()) {
        ("", "replicationcontrollers") => &["spec", "template"],
        ("", "podtemplates") => &["template"],
        ("apps", "replicasets" | "deployments" | "statefulsets" | "daemonsets") | ("batch", "jobs") => {
            &["spec", "template"]
        }
        ("batch", "cronjobs") => &["spec", "jobTemplate", "spec", "template"],
        _ => return None,
    })
}

/// Judges a create or update as kube's PodSecurity admission: the 403 of a pod that breaks its
/// namespace's enforce level, 422 for namespace labels kube cannot read; warnings recorded for
/// the request.
pub(crate) async fn admit(store: &Store, a: &Attributes<'_>) -> Result<(), ApiError> {
    if !matches!(a.operation, "CREATE" | "UPDATE") || a.info.custom.is_some() {
        return Ok(());
    }
    let Some(obj) = a.object else { return Ok(()) };
    if crate::namespaces::is_namespaces(a.info) {
        return namespace(store, a, obj);
    }
    if a.info.is_core("pods") {
        // The subresources kube ignores (the others, such as `ephemeralcontainers`, are judged).
        if matches!(
            a.subresource,
            "exec" | "attach" | "binding" | "eviction" | "log" | "portforward" | "proxy" | "status"
        ) {
            return Ok(());
        }
        let Some(namespace) = namespace_of(store, a.namespace).await? else {
            return Err(ApiError::internal(&format!("failed to lookup namespace \"{}\"", a.namespace)));
        };
        let Some((policy, faults)) = labelled_policy(&namespace) else { return Ok(()) };
        let fully_privileged =
            [policy.enforce, policy.audit, policy.warn].iter().all(|lv| lv.level == Level::Privileged);
        if faults.is_empty() && fully_privileged {
            return Ok(());
        }
        // Judged again only when containers or images change, as kube judges them (its pod
        // update validation allows no other change of the containers).
        if let Some(old) = a.old
            && !significant_pod_update(obj, old)
        {
            return Ok(());
        }
        let null = Value::Null;
        let (meta, spec) = (obj.get("metadata").unwrap_or(&null), obj.get("spec").unwrap_or(&null));
        let enforced = policy.enforce.failures(meta, spec);
        if !enforced.is_empty() {
            return Err(ApiError::forbidden(
                "",
                "pods",
                a.name,
                &format!("violates PodSecurity \"{}\": {}", policy.enforce.text(), checks::details(&enforced)),
            ));
        }
        if policy.warn != policy.enforce {
            warn(policy.warn, meta, spec);
        }
        return Ok(());
    }
    let Some(path) = template_path(a.info) else { return Ok(()) };
    if !a.subresource.is_empty() {
        return Ok(());
    }
    // A workload is allowed whatever happens here (a namespace that cannot be read included).
    let Some(namespace) = namespace_of(store, a.namespace).await.ok().flatten() else { return Ok(()) };
    let Some((policy, faults)) = labelled_policy(&namespace) else { return Ok(()) };
    if faults.is_empty() && policy.warn.level == Level::Privileged && policy.audit.level == Level::Privileged {
        return Ok(());
    }
    let mut template = Some(obj);
    for key in path {
        template = template.and_then(|m| m.get(*key)).and_then(Value::as_object);
    }
    if let Some(template) = template {
        let null = Value::Null;
        warn(policy.warn, template.get("metadata").unwrap_or(&null), template.get("spec").unwrap_or(&null));
    }
    Ok(())
}

/// Records kube's warning when the pod breaks `lv`.
fn warn(lv: LevelVersion, meta: &Value, spec: &Value) {
    let failed = lv.failures(meta, spec);
    if !failed.is_empty() {
        crate::warning::record(format!("would violate PodSecurity \"{}\": {}", lv.text(), checks::details(&failed)));
    }
}

/// The namespace `ns`, from the watch cache or else the storage (the cache may not have seen a
/// namespace just created); None when there is none.
async fn namespace_of(store: &Store, ns: &str) -> Result<Option<Arc<StoredObject>>, ApiError> {
    let Some(info) = store.namespaces_info() else { return Ok(None) };
    if let Some(namespace) = store.cache().get(info, "", ns)? {
        return Ok(Some(namespace));
    }
    match store.stored(info, "", ns).await {
        Ok(o) => Ok(Some(o)),
        Err(e) if e.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

/// The policy of a namespace whose labels name one; None (the default policy) for one whose
/// stored bytes do not mention the labels — the common case, decided without parsing it.
fn labelled_policy(namespace: &StoredObject) -> Option<(Policy, Vec<Cause>)> {
    memchr::memmem::find(namespace.storage_value(), PREFIX.as_bytes())?;
    let value = namespace.value();
    Some(policy_of(value.pointer("/metadata/labels").and_then(Value::as_object)))
}

/// kube's `isSignificantPodUpdate`: containers added or removed, an image changed, an
/// ephemeral container added or changed. Only the old pod's spec is read.
fn significant_pod_update(new: &Map<String, Value>, old: &StoredObject) -> bool {
    let old_spec: Option<Value> = old.spec_bytes().and_then(|b| serde_json::from_slice(b).ok());
    significant_spec_change(new.get("spec"), old_spec.as_ref())
}

fn significant_spec_change(spec: Option<&Value>, old_spec: Option<&Value>) -> bool {
    fn list<'a>(v: Option<&'a Value>, key: &str) -> &'a [Value] {
        v.and_then(|s| s.get(key)).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
    }
    fn image(c: &Value) -> &str {
        c.get("image").and_then(Value::as_str).unwrap_or("")
    }
    for key in ["containers", "initContainers"] {
        let (now, before) = (list(spec, key), list(old_spec, key));
        if now.len() != before.len() || now.iter().zip(before).any(|(a, b)| image(a) != image(b)) {
            return true;
        }
    }
    let before = list(old_spec, "ephemeralContainers");
    list(spec, "ephemeralContainers").iter().any(|c| {
        let name = c.get("name");
        match before.iter().find(|o| o.get("name") == name) {
            None => true,
            Some(o) => image(o) != image(c),
        }
    })
}

/// A namespace's labels judged (kube's `ValidateNamespace`).
fn namespace(store: &Store, a: &Attributes<'_>, obj: &Map<String, Value>) -> Result<(), ApiError> {
    if !a.subresource.is_empty() {
        return Ok(());
    }
    let labels =
        |o: &Map<String, Value>| o.get("metadata").and_then(|m| m.get("labels")).and_then(Value::as_object).cloned();
    let (policy, faults) = policy_of(labels(obj).as_ref());
    let invalid = || crate::custom_resource::invalid(a.info, a.name, &faults);
    let Some(old) = a.old else {
        return if faults.is_empty() { Ok(()) } else { Err(invalid()) };
    };
    let old = match old.value() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let (old_policy, old_faults) = policy_of(labels(&old).as_ref());
    let same_faults = |a: &[Cause], b: &[Cause]| {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.field == y.field && x.message == y.message)
    };
    if !faults.is_empty() && (old_faults.is_empty() || !same_faults(&faults, &old_faults)) {
        return Err(invalid());
    }
    if policy.enforce == old_policy.enforce
        || policy.enforce.level == Level::Privileged
        || (policy.enforce.version == old_policy.enforce.version && policy.enforce.level <= old_policy.enforce.level)
    {
        return Ok(());
    }
    for w in existing_pod_warnings(store, a.name, policy.enforce)? {
        crate::warning::record(w);
    }
    Ok(())
}

/// kube's `EvaluatePodsInNamespace`: the existing pods the new enforce level would refuse, one
/// line per distinct set of reasons, pods of one controller after the others, within kube's
/// limits (3000 pods, one second).
fn existing_pod_warnings(store: &Store, ns: &str, enforce: LevelVersion) -> Result<Vec<String>, ApiError> {
    let registry = store.cache().registry();
    let Some(pods_info) = registry.find("", "v1", "pods") else { return Ok(Vec::new()) };
    let (_, pods) = store.cache().snapshot(pods_info, Some(ns), &Selectors::default())?;
    // One pod per controller first, then the rest.
    let mut seen_controllers = HashSet::new();
    let (mut first, mut rest) = (Vec::new(), Vec::new());
    for pod in &pods {
        let repeated = controller_uid(pod).is_some_and(|uid| !seen_controllers.insert(uid));
        if repeated { rest.push(pod) } else { first.push(pod) }
    }
    first.extend(rest);
    let total = first.len();
    first.truncate(MAX_PODS_TO_CHECK);
    let mut checked = first.len();
    let deadline = Instant::now() + POD_CHECK_TIME;
    // Reasons → (first pod by name, count), in the order first seen.
    let mut found: Vec<(String, String, usize)> = Vec::new();
    for (i, pod) in first.into_iter().enumerate() {
        let value = pod.value();
        let null = Value::Null;
        let failed = enforce.failures(value.get("metadata").unwrap_or(&null), value.get("spec").unwrap_or(&null));
        if !failed.is_empty() {
            let reasons = checks::reasons(&failed);
            let name = pod.name.clone();
            match found.iter_mut().find(|(r, _, _)| *r == reasons) {
                Some((_, first_name, count)) => {
                    if name < *first_name {
                        *first_name = name;
                    }
                    *count += 1;
                }
                None => found.push((reasons, name, 1)),
            }
        }
        if Instant::now() > deadline {
            checked = i + 1;
            break;
        }
    }
    let mut warnings = Vec::new();
    if checked < total {
        warnings.push(format!(
            "new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"
        ));
    }
    if !found.is_empty() {
        warnings.push(format!(
            "existing pods in namespace \"{ns}\" violate the new PodSecurity enforce level \"{}\"",
            enforce.text()
        ));
    }
    let mut lines: Vec<String> = found
        .into_iter()
        .map(|(reasons, name, count)| match count {
            1 => format!("{name}: {reasons}"),
            2 => format!("{name} (and 1 other pod): {reasons}"),
            n => format!("{name} (and {} other pods): {reasons}", n - 1),
        })
        .collect();
    lines.sort();
    warnings.extend(lines);
    Ok(warnings)
}

/// The uid of the pod's controller, if it has one (read only when its bytes name one).
fn controller_uid(pod: &StoredObject) -> Option<String> {
    memchr::memmem::find(pod.storage_value(), b"\"controller\":true")?;
    let value = pod.value();
    let refs = value.pointer("/metadata/ownerReferences")?.as_array()?;
    let controller = refs.iter().find(|r| r.get("controller") == Some(&Value::Bool(true)))?;
    controller.get("uid").and_then(Value::as_str).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(labels: Value) -> (Policy, Vec<String>) {
        let (p, faults) = policy_of(labels.as_object());
        (p, faults.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect())
    }

    #[test]
    fn labels_choose_levels_and_warn_follows_a_stricter_enforce() {
        let (p, faults) = policy(json!({"pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/enforce-version": "v1.29"}));
        assert!(faults.is_empty());
        assert_eq!(p.enforce.text(), "baseline:v1.29");
        assert_eq!(p.warn.text(), "baseline:v1.29");
        assert_eq!(p.audit.text(), "privileged:latest");
        let (p, _) = policy(json!({"pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/warn": "restricted"}));
        assert_eq!((p.enforce.text(), p.warn.text()), ("baseline:latest".into(), "restricted:latest".into()));
    }

    #[test]
    fn unreadable_labels_fail_closed_for_enforce_and_open_for_warn() {
        let (p, faults) = policy(json!({"pod-security.kubernetes.io/enforce": "strict",
            "pod-security.kubernetes.io/warn": "loud", "pod-security.kubernetes.io/audit-version": "1.2"}));
        assert_eq!(p.enforce.level, Level::Restricted);
        assert_eq!(p.warn.level, Level::Privileged);
        assert_eq!(
            faults,
            [
                "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted",
                "metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: \"1.2\": must be \"latest\" or \"v1.x\"",
                "metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: \"loud\": must be one of privileged, baseline, restricted",
            ]
        );
    }

    #[test]
    fn only_new_images_and_containers_are_significant() {
        let old = json!({"containers": [{"name": "a", "image": "x"}]});
        let same = json!({"containers": [{"name": "a", "image": "x", "resources": {}}]});
        assert!(!significant_spec_change(Some(&same), Some(&old)));
        let changed = json!({"containers": [{"name": "a", "image": "y"}]});
        assert!(significant_spec_change(Some(&changed), Some(&old)));
        let debug = json!({"containers": [{"name": "a", "image": "x"}],
            "ephemeralContainers": [{"name": "debug", "image": "busybox"}]});
        assert!(significant_spec_change(Some(&debug), Some(&old)));
    }
}
