//! kube-apiserver's ResourceQuota admission plugin (on by default, the last validating plugin)
//! and the rules kube judges a ResourceQuota by.
//!
//! A write the quota evaluators charge ([`crate::quota_evaluators`]: every namespaced create,
//! a pod's resize or change of `activeDeadlineSeconds`, a Service's or claim's update) is checked
//! against each ResourceQuota of its namespace that applies to it — its `status.hard` names
//! something the kind's evaluator tracks and its scopes match the object — and charged to their
//! `status.used` before the object is stored:
//! - 403 `failed quota: q: must specify …` for a pod without the compute resources the quota
//!   limits, `status unknown for quota: q, resources: …` while the quota controller has not
//!   counted them, `exceeded quota: q, requested: …, used: …, limited: …` past a limit;
//! - the new usage is written to each quota's `status` (a compare-and-swap on the version read
//!   from the storage; a quota whose write fails is read and judged again, four times at most).
//!
//! Invariants: charges to a namespace's quotas are made one at a time on this server, and no
//! recount of a namespace by [`crate::quota_controller`] runs while an object charged there is
//! not yet stored (the [`Charges`] held until then); a dry run is judged alike and charges
//! nothing; a refused write charges nothing; only keys of `status.hard` are charged and only
//! those requested are judged; a usage never goes down through admission (deletions are given
//! back by the controller's recount).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::object::StoredObject;
use crate::quantity::{Quantity, ResourceList, add_into, list_of};
use crate::quota_evaluators::Evaluator;
use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::store::{Store, WriteOpts};
use crate::structural::{Cause, go_json, go_quote};

/// The field manager of the quota writes admission makes.
const MANAGER: &str = "kube-apiserver";

/// How many times at most a charge is read, judged and written (a failed write is tried again).
const ATTEMPTS: usize = 4;

/// Whether `info` is core/v1's ResourceQuotas.
pub(crate) fn is_quotas(info: &ResourceInfo) -> bool {
    info.is_core("resourcequotas")
}

/// The per-namespace locks of quota admission and the quota controller.
#[derive(Default)]
pub(crate) struct Gates(std::sync::Mutex<HashMap<String, Arc<Gate>>>);

/// One namespace's locks.
#[derive(Default)]
pub(crate) struct Gate {
    /// Held (shared) by each charged write until its object is stored; (exclusively) by a recount.
    pub(crate) in_flight: Arc<tokio::sync::RwLock<()>>,
    /// Held while the namespace's quotas are read, judged and charged.
    charging: tokio::sync::Mutex<()>,
}

impl Gates {
    /// Namespace `ns`'s locks.
    pub(crate) fn of(&self, ns: &str) -> Arc<Gate> {
        let mut gates = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if gates.len() >= 1024 && !gates.contains_key(ns) {
            // Namespaces no request or recount holds are forgotten.
            gates.retain(|_, g| Arc::strong_count(g) > 1);
        }
        gates.entry(ns.to_string()).or_default().clone()
    }
}

/// The charges a request made for writes not yet stored, by namespace: those namespaces are
/// not recounted meanwhile. One per namespace, reused by the request's later writes there (a
/// second shared lock could wait behind a recount waiting on the first).
#[derive(Default)]
pub(crate) struct Charges(Vec<(String, tokio::sync::OwnedRwLockReadGuard<()>)>);

impl Charges {
    /// Holds namespace `ns` for the request (once).
    async fn hold(&mut self, gate: &Gate, ns: &str) {
        if !self.0.iter().any(|(n, _)| n == ns) {
            self.0.push((ns.to_string(), gate.in_flight.clone().read_owned().await));
        }
    }
}

/// A write admission judges.
pub(crate) struct Write<'a> {
    pub(crate) info: &'a ResourceInfo,
    pub(crate) namespace: &'a str,
    /// The object's name (the generated one for a create with `generateName`).
    pub(crate) name: &'a str,
    pub(crate) object: &'a Map<String, Value>,
    /// The stored object, for an update.
    pub(crate) old: Option<&'a StoredObject>,
    /// `""`, `status`, `resize`, …
    pub(crate) subresource: &'a str,
    pub(crate) dry_run: bool,
}

/// A quota as admission reads it.
struct Quota {
    name: String,
    stored: Value,
    hard: ResourceList,
    used: ResourceList,
    selectors: Vec<(String, String, Vec<String>)>,
}

impl Quota {
    fn of(stored: Value) -> Quota {
        let name = stored.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
        let list = |p: &str| list_of(stored.pointer(p).and_then(Value::as_object));
        let (hard, used) = (list("/status/hard"), list("/status/used"));
        let selectors = selectors(stored.get("spec").unwrap_or(&Value::Null));
        Quota { name, stored, hard, used, selectors }
    }

    /// Whether the quota applies to `obj` of `evaluator` (kube's `Matches`).
    fn matches(&self, evaluator: &Evaluator, obj: &Value) -> bool {
        self.hard.keys().any(|k| evaluator.tracks(k)) && evaluator.in_scopes(&self.selectors, obj)
    }
}

/// A quota's scopes (as `Exists`) and scope selector expressions: scope, operator, values.
pub(crate) fn selectors(spec: &Value) -> Vec<(String, String, Vec<String>)> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let scopes = spec.get("scopes").and_then(Value::as_array).into_iter().flatten();
    let mut all: Vec<_> = scopes.map(|s| (text(s), "Exists".to_string(), Vec::new())).collect();
    let expressions = spec.pointer("/scopeSelector/matchExpressions").and_then(Value::as_array);
    for e in expressions.into_iter().flatten() {
        let values = e.get("values").and_then(Value::as_array).into_iter().flatten().map(text).collect();
        all.push((
            text(e.get("scopeName").unwrap_or(&Value::Null)),
            text(e.get("operator").unwrap_or(&Value::Null)),
            values,
        ));
    }
    all
}

/// `k=v` pairs of `list` in key order, as kube prints a ResourceList in its messages.
fn printed(list: &ResourceList, keys: &[&String]) -> String {
    let parts: Vec<String> = keys.iter().filter_map(|k| Some(format!("{k}={}", list.get(*k)?.shown()))).collect();
    parts.join(",")
}

/// Judges `w` against the quotas of its namespace and charges them; `charges` are to be held
/// until the object is stored.
pub(crate) async fn admit(store: &Store, w: Write<'_>, charges: &mut Charges) -> Result<(), ApiError> {
    if w.namespace.is_empty() || !w.info.namespaced {
        return Ok(());
    }
    // Updates are charged only for pods, Services and claims (object counts charge creates).
    if w.old.is_some() && !["pods", "services", "persistentvolumeclaims"].iter().any(|p| w.info.is_core(p)) {
        return Ok(());
    }
    let registry = store.registry();
    let Some(quotas_info) = registry.find("", "v1", "resourcequotas") else { return Ok(()) };
    let selectors = crate::selector::Selectors::default();
    let (_, cached) = store.cache().snapshot(quotas_info, Some(w.namespace), &selectors)?;
    if cached.is_empty() {
        return Ok(());
    }
    let Some(evaluator) = Evaluator::of(w.info) else { return Ok(()) };
    // The quotas whose `status.hard` names something of this kind (one the controller has not
    // given a status yet applies to nothing).
    let mut names: Vec<String> = cached
        .iter()
        .map(|q| q.value())
        .filter(|q| {
            q.pointer("/status/hard").and_then(Value::as_object).is_some_and(|h| h.keys().any(|k| evaluator.tracks(k)))
        })
        .filter_map(|q| Some(q.pointer("/metadata/name")?.as_str()?.to_string()))
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    let new = Value::Object(w.object.clone());
    let old = w.old.map(StoredObject::value);
    if let Some(old) = &old
        && !evaluator.charges_update(w.subresource, old, &new)
    {
        return Ok(());
    }
    let gate = store.quota_gates().of(w.namespace);
    charges.hold(&gate, w.namespace).await;
    let _charging = gate.charging.lock().await;
    let mut last_error = None;
    for _ in 0..ATTEMPTS {
        let mut quotas = Vec::new();
        for name in &names {
            match store.stored(quotas_info, w.namespace, name).await {
                Ok(q) => quotas.push(Quota::of(q.value())),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let charged = judge(&evaluator, &w, &new, old.as_ref(), &mut quotas)?;
        if w.dry_run || charged.is_empty() {
            return Ok(());
        }
        let mut failed = Vec::new();
        for q in quotas.into_iter().filter(|q| charged.contains(&q.name)) {
            let mut body = q.stored;
            let used: Map<String, Value> = q.used.iter().map(|(k, v)| (k.clone(), Value::String(v.shown()))).collect();
            if let Some(status) = body.as_object_mut().and_then(|b| crate::defaults::ensure_obj(b, "status")) {
                status.insert("used".into(), Value::Object(used));
            }
            let opts = WriteOpts::status(false).by(MANAGER);
            // (Boxed: the write goes through admission again.)
            let write = Box::pin(store.update(quotas_info, Some(w.namespace), Some(&q.name), body, opts));
            // Any failure is tried again from the quota as it is then (one deleted meanwhile is
            // no longer judged).
            if let Err(e) = crate::requester::scope(None, write).await {
                failed.push(q.name);
                last_error = Some(e);
            }
        }
        if failed.is_empty() {
            return Ok(());
        }
        names = failed;
    }
    Err(last_error.unwrap_or_else(|| ApiError::internal("resource quota evaluation failed")))
}

/// Judges the write against `quotas` and charges their `used` in place; answers the quotas
/// charged.
fn judge(
    evaluator: &Evaluator,
    w: &Write<'_>,
    new: &Value,
    old: Option<&Value>,
    quotas: &mut [Quota],
) -> Result<Vec<String>, ApiError> {
    let forbidden = |why: String| ApiError::forbidden(&w.info.group, &w.info.plural, w.name, &why);
    let mut matching = Vec::new();
    for (i, q) in quotas.iter().enumerate() {
        if !q.matches(evaluator, new) {
            continue;
        }
        let restricted: Vec<&str> = q.hard.keys().filter(|k| evaluator.tracks(k)).map(String::as_str).collect();
        evaluator.constraints(&restricted, new).map_err(|e| forbidden(format!("failed quota: {}: {e}", q.name)))?;
        if restricted.iter().any(|k| !q.used.contains_key(*k)) {
            let why = format!("status unknown for quota: {}, resources: {}", q.name, restricted.join(","));
            return Err(forbidden(why));
        }
        matching.push(i);
    }
    let usage = evaluator.usage(new);
    let negative: Vec<&str> = usage.iter().filter(|(_, q)| q.nanos < 0).map(|(k, _)| k.as_str()).collect();
    if !negative.is_empty() {
        return Err(forbidden(format!("quota usage is negative for resource(s): {}", negative.join(","))));
    }
    let old_usage = old.map(|o| evaluator.usage(o));
    let mut deltas: Vec<(usize, ResourceList)> = Vec::new();
    for i in matching {
        let delta = match (old, &old_usage) {
            (Some(old), Some(before)) if quotas[i].matches(evaluator, old) => usage
                .iter()
                .map(|(k, v)| {
                    let was = before.get(k).map_or(0, |b| b.nanos);
                    (k.clone(), Quantity { nanos: (v.nanos - was).max(0), format: v.format })
                })
                .collect(),
            _ => usage.clone(),
        };
        let delta: ResourceList = delta.into_iter().filter(|(_, v)| v.nanos != 0).collect();
        if !delta.is_empty() {
            deltas.push((i, delta));
        }
    }
    let mut charged = Vec::new();
    for (i, delta) in deltas {
        let q = &mut quotas[i];
        let requested: ResourceList = delta.into_iter().filter(|(k, _)| q.hard.contains_key(k)).collect();
        if requested.is_empty() {
            continue;
        }
        let mut used = q.used.clone();
        requested.iter().for_each(|(k, v)| add_into(&mut used, k, *v));
        if w.subresource != "status" {
            let exceeded: Vec<&String> = requested.keys().filter(|k| used[*k].nanos > q.hard[*k].nanos).collect();
            if !exceeded.is_empty() {
                let why = format!(
                    "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                    q.name,
                    printed(&requested, &exceeded),
                    printed(&q.used, &exceeded),
                    printed(&q.hard, &exceeded)
                );
                return Err(forbidden(why));
            }
        }
        q.used = used;
        charged.push(q.name.clone());
    }
    Ok(charged)
}

/// The standard scopes of a quota.
const SCOPES: [&str; 7] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
];

/// The resource names a quota limits without a domain (kube's standard quota resources).
fn standard_quota_resource(name: &str) -> bool {
    matches!(
        name,
        "cpu"
            | "memory"
            | "ephemeral-storage"
            | "requests.cpu"
            | "requests.memory"
            | "requests.storage"
            | "requests.ephemeral-storage"
            | "limits.cpu"
            | "limits.memory"
            | "limits.ephemeral-storage"
            | "pods"
            | "resourcequotas"
            | "services"
            | "replicationcontrollers"
            | "secrets"
            | "persistentvolumeclaims"
            | "configmaps"
            | "services.nodeports"
            | "services.loadbalancers"
    ) || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
}

/// Resources counted in whole units.
fn integer_resource(name: &str) -> bool {
    matches!(
        name,
        "pods"
            | "resourcequotas"
            | "services"
            | "replicationcontrollers"
            | "secrets"
            | "configmaps"
            | "persistentvolumeclaims"
            | "services.nodeports"
            | "services.loadbalancers"
    ) || crate::container_resources::extended_resource(name)
}

/// kube's `IsResourceQuotaScopeValidForResource`.
fn scope_valid_for(scope: &str, resource: &str) -> bool {
    let pod_compute = matches!(
        resource,
        "pods" | "cpu" | "memory" | "limits.cpu" | "limits.memory" | "requests.cpu" | "requests.memory"
    );
    match scope {
        "Terminating" | "NotTerminating" | "NotBestEffort" | "PriorityClass" | "CrossNamespacePodAffinity" => {
            pod_compute
        }
        "BestEffort" => resource == "pods",
        "VolumeAttributesClass" => matches!(resource, "persistentvolumeclaims" | "requests.storage"),
        _ => true,
    }
}

fn invalid(field: &str, shown: String, detail: &str) -> Cause {
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {shown}: {detail}"), field: field.into() }
}

/// The faults of a quota resource list at `at` (`spec.hard`, `status.used`…), names in order.
fn list_faults(list: Option<&Value>, at: &str, causes: &mut Vec<Cause>) {
    for (k, v) in list.and_then(Value::as_object).into_iter().flatten() {
        let field = format!("{at}[{k}]");
        crate::container_resources::resource_name_faults(k, &field, causes);
        if !k.contains('/') && !standard_quota_resource(k) {
            causes.push(invalid(&field, go_quote(k), "must be a standard resource for quota"));
        }
        let Some(q) = Quantity::of(v) else { continue };
        if q.nanos < 0 {
            causes.push(invalid(&field, go_quote(&q.shown()), "must be greater than or equal to 0"));
        }
        // kube's `MilliValue`, rounded up.
        let millis = q.nanos.div_euclid(1_000_000) + i128::from(q.nanos.rem_euclid(1_000_000) != 0);
        if integer_resource(k) && millis % 1000 != 0 {
            causes.push(invalid(&field, go_quote(&q.shown()), "must be an integer"));
        }
    }
}

/// Which write of a ResourceQuota is judged.
pub(crate) enum Judged<'a> {
    /// A create: the spec and the status.
    Create,
    /// An update of the object, from the stored one: the spec, and scopes that stay.
    Update(&'a Value),
    /// A write through `/status`: the status (its version is required, see [`version_required`]).
    Status,
}

/// The causes for which kube refuses the ResourceQuota `obj` (kube's `ValidateResourceQuota`,
/// `ValidateResourceQuotaUpdate` and `ValidateResourceQuotaStatusUpdate`, metadata aside).
pub(crate) fn validate(obj: &Map<String, Value>, judged: Judged<'_>) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Judged::Status = judged {
        status_faults(obj, &mut causes);
        return causes;
    }
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let hard: Vec<&String> =
        spec.get("hard").and_then(Value::as_object).map(|h| h.keys().collect()).unwrap_or_default();
    list_faults(spec.get("hard"), "spec.hard", &mut causes);
    let conflicting = |scopes: &[&str]| {
        [("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")]
            .iter()
            .filter(|(a, b)| scopes.contains(a) && scopes.contains(b))
            .count()
    };
    let scopes: Vec<&str> =
        spec.get("scopes").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let scopes_shown = go_json(spec.get("scopes").unwrap_or(&Value::Null));
    for scope in &scopes {
        if !SCOPES.contains(scope) {
            causes.push(invalid("spec.scopes", scopes_shown.clone(), "unsupported scope"));
        }
        for k in &hard {
            if standard_quota_resource(k) && !scope_valid_for(scope, k) {
                causes.push(invalid("spec.scopes", scopes_shown.clone(), "unsupported scope applied to resource"));
            }
        }
    }
    for _ in 0..conflicting(&scopes) {
        causes.push(invalid("spec.scopes", scopes_shown.clone(), "conflicting scopes"));
    }
    if let Some(selector) = spec.get("scopeSelector").filter(|s| !s.is_null()) {
        let at = "spec.scopeSelector.matchExpressions";
        let mut names = Vec::new();
        let expressions = selector.get("matchExpressions").and_then(Value::as_array);
        for e in expressions.into_iter().flatten() {
            let scope = e.get("scopeName").and_then(Value::as_str).unwrap_or_default();
            let op = e.get("operator").and_then(Value::as_str).unwrap_or_default();
            let values = e.get("values").and_then(Value::as_array).filter(|v| !v.is_empty());
            if !SCOPES.contains(&scope) {
                causes.push(invalid(&format!("{at}.scopeName"), go_quote(scope), "unsupported scope"));
            }
            for k in &hard {
                if standard_quota_resource(k) && !scope_valid_for(scope, k) {
                    causes.push(invalid(at, internal_selector(selector), "unsupported scope applied to resource"));
                }
            }
            if matches!(
                scope,
                "Terminating" | "NotTerminating" | "BestEffort" | "NotBestEffort" | "CrossNamespacePodAffinity"
            ) && op != "Exists"
            {
                causes.push(invalid(
                    &format!("{at}.operator"),
                    go_quote(op),
                    "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, \
                     ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, \
                     ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                ));
            }
            match op {
                "In" | "NotIn" if values.is_none() => causes.push(Cause {
                    reason: "FieldValueRequired",
                    message: "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for \
                              scope selector"
                        .into(),
                    field: format!("{at}.values"),
                }),
                "In" | "NotIn" => {}
                "Exists" | "DoesNotExist" => {
                    if let Some(v) = values {
                        causes.push(invalid(
                            &format!("{at}.values"),
                            go_json(&Value::Array(v.clone())),
                            "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                        ));
                    }
                }
                _ => causes.push(invalid(&format!("{at}.operator"), go_quote(op), "not a valid selector operator")),
            }
            names.push(scope);
        }
        for _ in 0..conflicting(&names) {
            causes.push(invalid(at, scopes_shown.clone(), "conflicting scopes"));
        }
    }
    if let Judged::Create = judged {
        status_faults(obj, &mut causes);
    }
    if let Judged::Update(old) = judged {
        let set = |v: &Value| -> std::collections::BTreeSet<String> {
            let scopes = v.pointer("/spec/scopes").and_then(Value::as_array).into_iter().flatten();
            scopes.filter_map(Value::as_str).map(str::to_string).collect()
        };
        if set(&Value::Object(obj.clone())) != set(old) {
            causes.push(invalid("spec.scopes", scopes_shown, "field is immutable"));
        }
    }
    causes
}

/// kube's 422 for a PUT of a quota's status without the version it replaces (kube's status
/// strategy requires one, though the kind allows unconditional updates).
pub(crate) fn version_required(info: &ResourceInfo, name: &str) -> ApiError {
    ApiError::invalid_object(&info.group, &info.kind, name, "resourceVersion", "FieldValueRequired", "Required value")
}

fn status_faults(obj: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let status = obj.get("status").unwrap_or(&Value::Null);
    list_faults(status.get("hard"), "status.hard", causes);
    list_faults(status.get("used"), "status.used", causes);
}

/// A scope selector as kube shows its internal type in a message: Go's field names, in their
/// order, `Values` null when there are none.
fn internal_selector(selector: &Value) -> String {
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    let shown: Vec<String> = expressions
        .into_iter()
        .flatten()
        .map(|e| {
            let text = |k: &str| go_json(e.get(k).unwrap_or(&Value::String(String::new())));
            let values = e.get("values").filter(|v| v.as_array().is_some_and(|a| !a.is_empty()));
            format!(
                "{{\"ScopeName\":{},\"Operator\":{},\"Values\":{}}}",
                text("scopeName"),
                text("operator"),
                go_json(values.unwrap_or(&Value::Null))
            )
        })
        .collect();
    match expressions {
        Some(_) => format!("{{\"MatchExpressions\":[{}]}}", shown.join(",")),
        None => "{\"MatchExpressions\":null}".to_string(),
    }
}

/// The warnings kube gives a quota created with a request above its limit.
pub(crate) fn create_warnings(obj: &Map<String, Value>) -> Vec<String> {
    let hard = list_of(obj.get("spec").and_then(|s| s.get("hard")).and_then(Value::as_object));
    let mut warnings = Vec::new();
    for r in ["cpu", "memory", "storage", "ephemeral-storage"] {
        let requested = format!("requests.{r}");
        let request = match hard.get(&requested) {
            Some(q) => Some((requested, q)),
            None if matches!(r, "cpu" | "memory") => hard.get(r).map(|q| (r.to_string(), q)),
            None => None,
        };
        let limit_name = format!("limits.{r}");
        if let (Some((name, request)), Some(limit)) = (request, hard.get(&limit_name))
            && request.nanos > limit.nanos
        {
            warnings.push(format!(
                "ResourceQuota {name} ({}) should be less than {limit_name} ({})",
                request.shown(),
                limit.shown()
            ));
        }
    }
    warnings
}

/// A quota's `status.used` after a recount: `counted` where the quota's evaluators counted, the
/// earlier value of what none counts, only names of `hard`.
pub(crate) fn recounted(
    hard: &Map<String, Value>,
    earlier: Option<&Map<String, Value>>,
    counted: &BTreeMap<String, Quantity>,
) -> Map<String, Value> {
    let mut used = Map::new();
    for k in hard.keys() {
        match (counted.get(k), earlier.and_then(|e| e.get(k))) {
            (Some(q), _) => {
                used.insert(k.clone(), Value::String(q.shown()));
            }
            (None, Some(v)) => {
                used.insert(k.clone(), v.clone());
            }
            (None, None) => {}
        }
    }
    used
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(obj: Value, judged: Judged<'_>) -> Vec<String> {
        validate(obj.as_object().unwrap(), judged).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn quotas_are_judged_as_kube_judges_them() {
        let q = json!({"spec": {"hard": {"pods": "1.5", "storage": "1", "memory": "-1", "count/pods": "2"},
            "scopes": ["BestEffort", "NotBestEffort"]}});
        assert_eq!(
            messages(q, Judged::Create),
            vec![
                "spec.hard[memory]: Invalid value: \"-1\": must be greater than or equal to 0",
                "spec.hard[pods]: Invalid value: \"1500m\": must be an integer",
                "spec.hard[storage]: Invalid value: \"storage\": must be a standard resource for quota",
                "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\"]: unsupported scope applied to resource",
                "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\"]: conflicting scopes",
            ]
        );
        let q = json!({"spec": {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "Terminating", "operator": "In", "values": ["x"]},
            {"scopeName": "PriorityClass", "operator": "In"},
            {"scopeName": "Nope", "operator": "Exists", "values": ["y"]}]}}});
        assert_eq!(
            messages(q, Judged::Create),
            vec![
                "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exists' when scope is any \
                 of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, \
                 ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when \
                 `operator` is 'In' or 'NotIn' for scope selector",
                "spec.scopeSelector.matchExpressions.scopeName: Invalid value: \"Nope\": unsupported scope",
                "spec.scopeSelector.matchExpressions.values: Invalid value: [\"y\"]: must be no value when \
                 `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            ]
        );
        let old = json!({"spec": {"scopes": ["Terminating"]}});
        assert_eq!(
            messages(json!({"spec": {"hard": {"pods": "1"}}}), Judged::Update(&old)),
            vec!["spec.scopes: Invalid value: null: field is immutable"]
        );
    }
}
