//! A pod's `eviction` subresource: a deletion that respects PodDisruptionBudgets, as
//! `kubectl drain`, cluster autoscalers and node-maintenance operators ask for it with a
//! policy/v1 `Eviction` (policy/v1beta1 is read too).
//!
//! Invariants, as kube-apiserver's eviction handler:
//! - the Eviction is judged by admission as a CREATE of `pods/eviction`; the deletion it then
//!   makes is not judged again;
//! - a pod that is `Pending`, `Succeeded`, `Failed` or already terminating is deleted without
//!   looking at budgets; a running pod is matched against the budgets of its namespace (a budget
//!   with no selector matches nothing): none, it is deleted; more than one, a `Failure` Status
//!   with code 500 is answered and nothing changes;
//! - with one budget, a pod that is not Ready is deleted without spending the budget when the
//!   budget allows it (`unhealthyPodEvictionPolicy: AlwaysAllow`, or the budget is healthy);
//!   otherwise one of the budget's `disruptionsAllowed` is spent (its status written, with the
//!   pod in `disruptedPods`, by the server's own user) before the pod is deleted, and a budget
//!   that allows none, or whose status is older than its spec, answers 429;
//! - a budget's status is its controller's ([`crate::disruption_controller`], when the server
//!   runs it) or its writers';
//! - a success answers a `Success` Status with code 201; a dry run spends and deletes nothing;
//! - as any create, an eviction in a namespace that is gone or terminating is refused (kube's
//!   NamespaceLifecycle admission);
//! - the pod's `DisruptionTarget` mark is the server's own write (managed fields unchanged),
//!   and the budget's status is written as kube's loopback client writes it (the server's user,
//!   field manager `kube-apiserver`, no options of the eviction's).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::delete_options::DeleteOpts;
use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::{Store, WriteOpts};
use crate::strategy::Target;

/// The subresource's name.
pub(crate) const SUBRESOURCE: &str = "eviction";

/// What the subresource carries: a policy/v1 Eviction (policy/v1beta1 read too).
const CARRIED: crate::pod_subresource::Carried = crate::pod_subresource::Carried {
    subresource: SUBRESOURCE,
    kind: "Eviction",
    api_versions: &["policy/v1", "policy/v1beta1"],
};

/// How many evictions a budget may have granted that its controller has not yet seen.
const MAX_DISRUPTED_PODS: usize = 2000;

/// How often a write lost to a concurrent one is tried again.
const RETRIES: usize = 20;

/// The field manager of the budget status writes (kube-apiserver's loopback client).
const MANAGER: &str = "kube-apiserver";

/// The resource the body is read as: a policy/v1 `Eviction`.
pub(crate) fn body_info() -> ResourceInfo {
    ResourceInfo::new("policy", "v1", "evictions", "Eviction", true)
}

/// Evicts pod `name` of namespace `ns` as `body` (an Eviction) asks; `dry_run` is the request's
/// `dryRun`. Answers the Status to send with 201.
pub(crate) async fn evict(store: &Store, ns: &str, name: &str, body: Value, dry_run: bool) -> Result<Value, ApiError> {
    let (pods, eviction) =
        crate::pod_subresource::admit(store, &CARRIED, (ns, name), body, dry_run, |_| Ok(())).await?;
    let mut opts = DeleteOpts::from_request(&[], eviction.get("deleteOptions").unwrap_or(&Value::Null))?;
    opts.dry_run |= dry_run;
    opts.admitted = true;
    let asked_rv = opts.precondition_rv.is_some();

    // Pods that are not running (or already going) are deleted without looking at budgets.
    let mut tries = 0;
    let pod = loop {
        let pod = store.stored(&pods, ns, name).await?;
        let value = pod.value();
        if !budgets_ignored(&value) {
            break pod;
        }
        let mut o = opts.clone();
        if !finishing(&value) && !asked_rv {
            o.precondition_rv = Some(pod.rv.to_string());
        }
        match mark_and_delete(store, &pods, ns, name, o).await {
            Ok(()) => return Ok(crate::pod_subresource::success()),
            Err(e) if e.code == 409 && !asked_rv && tries < RETRIES => tries += 1,
            Err(e) => return Err(e),
        }
    };

    let value = pod.value();
    let budgets = budgets_of(store, ns, &value).await?;
    if budgets.len() > 1 {
        return Err(ApiError::new(
            500,
            "",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        ));
    }
    // The pod's version the deletion must find when it was judged by its readiness, and the
    // budget that judged it.
    let mut judged_at = None;
    if let Some(budget) = budgets.into_iter().next() {
        if !ready(&value) && unhealthy_evictable(&budget.value()) {
            judged_at = Some((pod.rv, budget.name.clone()));
        } else {
            spend(store, ns, name, budget, opts.dry_run).await?;
        }
    }
    let mut o = opts;
    if let Some((rv, _)) = &judged_at {
        o.precondition_rv = Some(rv.to_string());
    }
    match mark_and_delete(store, &pods, ns, name, o).await {
        Ok(()) => Ok(crate::pod_subresource::success()),
        // The pod changed since its readiness was judged: the client tries again.
        Err(e) if e.code == 409 && !asked_rv && judged_at.is_some() => {
            Err(still_processing(judged_at.as_ref().map_or("", |(_, b)| b)))
        }
        Err(e) => Err(e),
    }
}

/// Whether a pod is deleted without looking at budgets: not running, or already terminating.
fn budgets_ignored(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed" | "Pending") || terminating(pod)
}

/// Whether a pod is done or going, so its deletion need not be pinned to the version read.
fn finishing(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed") || terminating(pod)
}

fn phase(pod: &Value) -> &str {
    pod.get("status").and_then(|s| s.get("phase")).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn terminating(pod: &Value) -> bool {
    pod.get("metadata").and_then(|m| m.get("deletionTimestamp")).is_some_and(|t| !t.is_null())
}

/// Whether the pod's `Ready` condition is `True`.
pub(crate) fn ready(pod: &Value) -> bool {
    let conditions = pod.get("status").and_then(|s| s.get("conditions")).and_then(Value::as_array);
    conditions.into_iter().flatten().any(|c| {
        c.get("type").and_then(Value::as_str) == Some("Ready")
            && c.get("status").and_then(Value::as_str) == Some("True")
    })
}

fn status_int(budget: &Value, field: &str) -> i64 {
    budget.get("status").and_then(|s| s.get(field)).and_then(Value::as_i64).unwrap_or(0)
}

/// Whether a pod that is not Ready may go without spending the budget: the budget says so
/// (`AlwaysAllow`), or it is healthy (the default `IfHealthyBudget`).
fn unhealthy_evictable(budget: &Value) -> bool {
    let policy = budget.get("spec").and_then(|s| s.get("unhealthyPodEvictionPolicy")).and_then(Value::as_str);
    if policy == Some("AlwaysAllow") {
        return true;
    }
    let (current, desired) = (status_int(budget, "currentHealthy"), status_int(budget, "desiredHealthy"));
    current >= desired && desired > 0
}

/// The budgets of `ns` whose selector matches the pod's labels.
async fn budgets_of(store: &Store, ns: &str, pod: &Value) -> Result<Vec<Arc<StoredObject>>, ApiError> {
    let registry = store.registry();
    let Some(info) = registry.find("policy", "v1", "poddisruptionbudgets") else {
        return Ok(Vec::new());
    };
    let labels = pod.get("metadata").and_then(|m| m.get("labels")).cloned().unwrap_or(Value::Null);
    let (_, all) = store.snapshot(info, Some(ns), &Selectors::default()).await?;
    Ok(all
        .into_iter()
        .filter(|b| {
            let value = b.value();
            let selector = value.get("spec").and_then(|s| s.get("selector")).unwrap_or(&Value::Null);
            selects(selector, &labels)
        })
        .collect())
}

/// Whether a budget's selector selects these labels: a missing or malformed selector selects
/// nothing, an empty one every pod of the namespace.
pub(crate) fn selects(selector: &Value, labels: &Value) -> bool {
    selects_with(selector, |k| labels.get(k).and_then(Value::as_str))
}

/// [`selects`], for the labels `label` looks up.
pub(crate) fn selects_with<'a>(selector: &Value, label: impl Fn(&str) -> Option<&'a str>) -> bool {
    if !selector.is_object() {
        return false;
    }
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    let well_formed = expressions.into_iter().flatten().all(|e| {
        let values = e.get("values").and_then(Value::as_array).map_or(0, Vec::len);
        match e.get("operator").and_then(Value::as_str) {
            Some("In" | "NotIn") => values > 0,
            Some("Exists" | "DoesNotExist") => values == 0,
            _ => false,
        }
    });
    well_formed && crate::admission_policy::selector_matches_with(selector, label)
}

/// Marks the pod as disrupted (condition `DisruptionTarget`, unless a dry run) and deletes it,
/// both checked against the options' preconditions. The mark is the server's own write: the
/// pod's managed fields stay as they are.
async fn mark_and_delete(
    store: &Store,
    pods: &ResourceInfo,
    ns: &str,
    name: &str,
    mut opts: DeleteOpts,
) -> Result<(), ApiError> {
    if !opts.dry_run {
        let mut pod = store.stored(pods, ns, name).await?;
        let mut tries = 0;
        let marked = loop {
            if let Some(u) = opts.precondition_uid.as_deref().filter(|u| *u != pod.uid) {
                return Err(crate::delete_options::unmet_uid(pods, name, u, &pod.uid));
            }
            if let Some(rv) = opts.unmet_rv(pod.rv) {
                return Err(crate::delete_options::unmet_rv(pods, name, rv, pod.rv));
            }
            let Value::Object(mut value) = pod.value() else {
                return Err(ApiError::internal("stored pod is not an object"));
            };
            add_disruption_condition(&mut value);
            match store.write_as_server(pods, &pod, value, Target::Status, false).await? {
                Some(marked) => break marked,
                None if tries < RETRIES => {
                    tries += 1;
                    pod = store.stored(pods, ns, name).await?;
                }
                None => return Err(ApiError::conflict("", "pods", name)),
            }
        };
        if opts.precondition_rv.is_some() {
            opts.precondition_rv = Some(marked.rv.to_string());
        }
    }
    store.delete(pods, ns, name, &opts).await.map(drop)
}

/// Sets the pod's `DisruptionTarget` condition as the eviction sets it.
fn add_disruption_condition(o: &mut Map<String, Value>) {
    let status = o.entry("status").or_insert_with(|| Value::Object(Map::new()));
    if let Some(status) = status.as_object_mut()
        && let Value::Object(condition) = json!({"type": "DisruptionTarget", "status": "True", "lastProbeTime": null,
            "lastTransitionTime": null, "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"})
    {
        crate::object::set_condition(status, condition);
    }
}

/// Spends one of the budget's disruptions on pod `pod` (recording it in `disruptedPods`), trying
/// again on a fresh read when a concurrent write wins.
async fn spend(store: &Store, ns: &str, pod: &str, budget: Arc<StoredObject>, dry_run: bool) -> Result<(), ApiError> {
    let registry = store.registry();
    let info = registry.find("policy", "v1", "poddisruptionbudgets").cloned().ok_or_else(ApiError::no_route)?;
    let name = budget.name.clone();
    let mut budget = budget;
    let mut conflict = ApiError::conflict("policy", "poddisruptionbudgets", &name);
    for _ in 0..RETRIES {
        let mut value = budget.value();
        check(&value, budget.generation, &name)?;
        let status = value.as_object_mut().and_then(|o| {
            o.entry("status").or_insert_with(|| Value::Object(Map::new()));
            o.get_mut("status").and_then(Value::as_object_mut)
        });
        let Some(status) = status else { return Err(ApiError::internal("budget status is not an object")) };
        let allowed = status.get("disruptionsAllowed").and_then(Value::as_i64).unwrap_or(0) - 1;
        status.insert("disruptionsAllowed".into(), allowed.into());
        if allowed == 0 {
            let observed = status.get("observedGeneration").and_then(Value::as_i64).unwrap_or(0);
            set_condition(status, observed);
        }
        if dry_run {
            return Ok(());
        }
        let disrupted = status.entry("disruptedPods").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(d) = disrupted {
            d.insert(pod.into(), crate::object::now_rfc3339().into());
        }
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), budget.rv.to_string().into());
        }
        // As kube's loopback client: the server's user, with options of its own.
        let write = store.update(&info, Some(ns), Some(&name), value, WriteOpts::status(false).by(MANAGER));
        match crate::admission_options::scope(crate::requester::scope(None, write)).await {
            Ok(_) => return Ok(()),
            Err(e) if e.code == 409 => {
                conflict = e;
                budget = store.stored(&info, ns, &name).await?;
            }
            Err(e) => return Err(e),
        }
    }
    // Still losing after every try: the last conflict, as kube's retry answers.
    Err(conflict)
}

/// Whether the budget allows a disruption now: its status must be current and grant one.
fn check(budget: &Value, generation: i64, name: &str) -> Result<(), ApiError> {
    if status_int(budget, "observedGeneration") < generation {
        return Err(still_processing(name));
    }
    let allowed = status_int(budget, "disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::forbidden("policy", "poddisruptionbudget", name, "pdb disruptions allowed is negative"));
    }
    let disrupted = budget.get("status").and_then(|s| s.get("disruptedPods")).and_then(Value::as_object);
    if disrupted.is_some_and(|d| d.len() > MAX_DISRUPTED_PODS) {
        return Err(ApiError::forbidden(
            "policy",
            "poddisruptionbudget",
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(refused(&no_disruption_left(budget, name), 0));
    }
    Ok(())
}

/// Why a budget allows no disruption, in kube's words: its failed sync, its health, or its
/// `DisruptionAllowed` condition.
fn no_disruption_left(budget: &Value, name: &str) -> String {
    let conditions = budget.get("status").and_then(|s| s.get("conditions")).and_then(Value::as_array);
    let condition = conditions
        .into_iter()
        .flatten()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("DisruptionAllowed"))
        .filter(|c| c.get("status").and_then(Value::as_str) == Some("False"));
    let text = |k: &str| condition.and_then(|c| c.get(k)).and_then(Value::as_str).unwrap_or("");
    let (reason, message) = (text("reason"), text("message"));
    let (desired, current) = (status_int(budget, "desiredHealthy"), status_int(budget, "currentHealthy"));
    if !message.is_empty() && reason == "SyncFailed" {
        format!("The disruption budget {name} does not allow evicting pods currently because it failed sync: {message}")
    } else if current <= desired {
        format!("The disruption budget {name} needs {desired} healthy pods and has {current} currently")
    } else if !message.is_empty() {
        format!("The disruption budget {name} does not allow evicting pods currently ({reason}): {message}")
    } else {
        format!("The disruption budget {name} does not allow evicting pods currently")
    }
}

/// 429 "Cannot evict pod as it would violate the pod's disruption budget." with its cause.
fn refused(cause: &str, retry_after: u64) -> ApiError {
    let mut e =
        ApiError::new(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.");
    let mut details = json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]});
    if retry_after > 0 {
        details["retryAfterSeconds"] = retry_after.into();
        e.retry_after = Some(retry_after);
    }
    e.details = Some(Box::new(details));
    e
}

/// 429 for a budget whose status has not caught up with it (or with the pod), retry in 10 s.
fn still_processing(name: &str) -> ApiError {
    refused(&format!("The disruption budget {name} is still being processed by the server."), 10)
}

/// kube's `DisruptionAllowed` condition once no disruption is left (`InsufficientPods`).
fn set_condition(status: &mut Map<String, Value>, observed_generation: i64) {
    let mut condition = Map::new();
    condition.insert("type".into(), "DisruptionAllowed".into());
    condition.insert("status".into(), "False".into());
    if observed_generation != 0 {
        condition.insert("observedGeneration".into(), observed_generation.into());
    }
    condition.insert("lastTransitionTime".into(), Value::Null);
    condition.insert("reason".into(), "InsufficientPods".into());
    condition.insert("message".into(), "".into());
    crate::object::set_condition(status, condition);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_select_only_with_a_well_formed_selector() {
        let labels = json!({"app": "web"});
        assert!(selects(&json!({"matchLabels": {"app": "web"}}), &labels));
        assert!(selects(&json!({}), &labels), "an empty selector selects every pod");
        assert!(!selects(&Value::Null, &labels), "no selector selects nothing");
        assert!(!selects(&json!({"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}), &labels));
        assert!(selects(&json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}), &labels));
        assert!(!selects(&json!({"matchLabels": {"app": "db"}}), &labels));
    }

    #[test]
    fn unready_pods_go_freely_only_from_healthy_or_permissive_budgets() {
        let budget = |current: i64, desired: i64, policy: Option<&str>| {
            let mut b = json!({"spec": {}, "status": {"currentHealthy": current, "desiredHealthy": desired}});
            if let Some(p) = policy {
                b["spec"]["unhealthyPodEvictionPolicy"] = p.into();
            }
            b
        };
        assert!(unhealthy_evictable(&budget(2, 2, None)));
        assert!(!unhealthy_evictable(&budget(1, 2, None)));
        assert!(!unhealthy_evictable(&budget(0, 0, Some("IfHealthyBudget"))));
        assert!(unhealthy_evictable(&budget(0, 2, Some("AlwaysAllow"))));
    }

    #[test]
    fn a_budget_refuses_as_kube_refuses() {
        let b = |status: Value| json!({"status": status});
        let e = check(
            &b(json!({"observedGeneration": 1, "disruptionsAllowed": 0, "desiredHealthy": 2,
            "currentHealthy": 2})),
            1,
            "web",
        )
        .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (429, "Cannot evict pod as it would violate the pod's disruption budget.")
        );
        assert_eq!(
            e.details.unwrap()["causes"][0]["message"],
            "The disruption budget web needs 2 healthy pods and has 2 currently"
        );
        let e = check(&b(json!({"observedGeneration": 1, "disruptionsAllowed": 1})), 2, "web").unwrap_err();
        assert_eq!((e.code, e.retry_after), (429, Some(10)));
        let e = check(&b(json!({"observedGeneration": 2, "disruptionsAllowed": -1})), 2, "web").unwrap_err();
        assert_eq!(e.message, "poddisruptionbudget.policy \"web\" is forbidden: pdb disruptions allowed is negative");
        assert!(check(&b(json!({"observedGeneration": 2, "disruptionsAllowed": 1})), 2, "web").is_ok());
    }
}
