//! Admission webhooks, called as kube-apiserver calls them: every create, update and delete of
//! a resource (and every connection to a pod, as a `CONNECT` with its options) is offered to the webhooks of the MutatingWebhookConfigurations whose rules,
//! namespace and object selectors and `matchConditions` match it, one after another (by
//! configuration name, then in the configuration's order), each able to refuse the request or
//! change the object with a JSON Patch (when one did, the server's own mutating admission runs
//! again, and a webhook with `reinvocationPolicy: IfNeeded` is called again once when a later
//! one, or that admission, changed the object); then, once the object is validated, to the
//! matching webhooks of the ValidatingWebhookConfigurations, all at once, each able to refuse
//! it. The exchange is an AdmissionReview over HTTPS ([`crate::webhook_client`]), of the first
//! of the webhook's `admissionReviewVersions` the server speaks (`v1`, `v1beta1`).
//!
//! A rule for another served version of the resource matches too (`matchPolicy: Equivalent`,
//! the default): the webhook gets the object in that version, and its patch is converted back.
//!
//! Invariants: configurations are read from the watch cache, so a write sees every webhook the
//! cache holds; no webhook judges the `admissionregistration.k8s.io` resources (a broken
//! webhook could otherwise never be removed); a refusal is kube's Status (`admission webhook
//! "<name>" denied the request: <message>`, the webhook's code, at least 400); a webhook that
//! cannot be called, or answers out of protocol, fails the request with kube's 500 under
//! `failurePolicy: Fail` (the default) and is skipped under `Ignore`; a dry run is offered only
//! to webhooks without side effects (`None`, `NoneOnDryRun`), any other one refuses it; the
//! object is defaulted again after each patch; with no configuration, a write costs two reads
//! of the watch cache and nothing else.

use std::sync::Arc;
use std::time::Duration;

use cel::{Context, Value as Cel};
use serde_json::{Map, Value, json};

use crate::admission_policy::{Attributes, GROUP};
use crate::cache::{ListAt, WatchCache};
use crate::registry::{Registry, ResourceInfo};
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::structural::go_quote;
use crate::webhook_client::Endpoint;

/// The resource of MutatingWebhookConfigurations.
pub(crate) const MUTATING: &str = "mutatingwebhookconfigurations";
/// The resource of ValidatingWebhookConfigurations.
pub(crate) const VALIDATING: &str = "validatingwebhookconfigurations";

/// What a called webhook answered that the request goes on with.
struct Allowed {
    /// The JSON Patch (RFC 6902) of a mutating webhook.
    patch: Option<json_patch::Patch>,
    /// The object sent (in the version the webhook asked for).
    sent: Option<Value>,
    /// The version the webhook asked for, when it is not the request's.
    equivalent: Option<Arc<ResourceInfo>>,
}

/// How a webhook's rules match a request.
enum Matched {
    No,
    /// In the requested version.
    Requested,
    /// In another version of the same resource (`matchPolicy: Equivalent`).
    Equivalent(Arc<ResourceInfo>),
}

/// The object mutating webhooks may change, and what the server does around them.
pub(crate) struct Mutation<'a> {
    /// The object (None on delete).
    pub obj: Option<&'a mut Map<String, Value>>,
    /// Defaults the object again after a patch.
    pub default: &'a (dyn Fn(&mut Map<String, Value>) + Sync),
    /// `metadata` fields the server set that kube only sets after mutating admission: hidden
    /// from the webhooks and restored after them.
    pub server_set: &'a [&'a str],
    /// The server's own mutating admission (LimitRanger's defaults, a pod's priority and
    /// tolerations…), run again when a webhook changed the object, as kube reinvokes the whole
    /// mutating chain.
    pub readmit: &'a Readmit<'a>,
}

/// The server's own mutating admission of an object (see [`Mutation::readmit`]).
pub(crate) type Readmit<'a> = dyn Fn(&mut Map<String, Value>) -> Result<(), ApiError> + Sync + 'a;

impl Mutation<'_> {
    /// No server admission to run again.
    pub(crate) fn no_readmit(_: &mut Map<String, Value>) -> Result<(), ApiError> {
        Ok(())
    }
}

/// Offers the request to the mutating webhooks, which change the object with their patches.
/// When one did, the server's own mutating admission runs again (`readmit`), then a webhook
/// with `reinvocationPolicy: IfNeeded` is called once more when a webhook after it, or that
/// admission, changed the object. True when a webhook's patch changed the object.
pub(crate) async fn mutate(cache: &Arc<WatchCache>, a: &Attributes<'_>, m: Mutation<'_>) -> Result<bool, ApiError> {
    let hooks = webhooks(cache, a, MUTATING)?;
    if hooks.is_empty() {
        return Ok(false);
    }
    let Mutation { mut obj, default, server_set, readmit } = m;
    let hidden = obj.as_deref_mut().map(|o| take_metadata(o, server_set)).unwrap_or_default();
    let result = mutate_all(cache, a, &hooks, obj.as_deref_mut(), default, readmit).await;
    if let Some(o) = obj {
        restore_metadata(o, hidden);
    }
    result
}

/// Takes `fields` out of the object's metadata.
fn take_metadata(obj: &mut Map<String, Value>, fields: &[&str]) -> Vec<(String, Value)> {
    let Some(Value::Object(meta)) = obj.get_mut("metadata") else { return Vec::new() };
    fields.iter().filter_map(|f| meta.remove(*f).map(|v| (f.to_string(), v))).collect()
}

/// Puts fields taken by [`take_metadata`] back.
fn restore_metadata(obj: &mut Map<String, Value>, fields: Vec<(String, Value)>) {
    if fields.is_empty() {
        return;
    }
    let meta = obj.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.extend(fields);
    }
}

/// Runs the mutating webhooks in order; when one changed the object, the server's admission
/// again, then once more those with `reinvocationPolicy: IfNeeded` that a later change followed.
async fn mutate_all(
    cache: &Arc<WatchCache>,
    a: &Attributes<'_>,
    hooks: &[Value],
    mut obj: Option<&mut Map<String, Value>>,
    default: &(dyn Fn(&mut Map<String, Value>) + Sync),
    readmit: &Readmit<'_>,
) -> Result<bool, ApiError> {
    let namespace = crate::admission_policy::namespace_object(cache, a)?;
    let old = a.old.map(|o| crate::admission_policy::view(a, o.value()));
    // The IfNeeded webhooks called, and whether the object changed after each was.
    let mut if_needed: Vec<(usize, bool)> = Vec::new();
    let mut any_changed = false;
    for (i, hook) in hooks.iter().enumerate() {
        let once = mutate_once(hook, cache, a, obj.as_deref_mut(), old.as_ref(), &namespace, default).await?;
        let Some(changed) = once else { continue };
        if changed {
            any_changed = true;
            if_needed.iter_mut().for_each(|(_, after)| *after = true);
        }
        if hook.get("reinvocationPolicy").and_then(Value::as_str) == Some("IfNeeded") {
            if_needed.push((i, false));
        }
    }
    if any_changed && let Some(o) = obj.as_deref_mut() {
        let before = o.clone();
        readmit(o)?;
        if *o != before {
            if_needed.iter_mut().for_each(|(_, after)| *after = true);
        }
    }
    for (i, _) in if_needed.into_iter().filter(|(_, after)| *after) {
        let once = mutate_once(&hooks[i], cache, a, obj.as_deref_mut(), old.as_ref(), &namespace, default).await?;
        any_changed |= once == Some(true);
    }
    Ok(any_changed)
}

/// Calls one mutating webhook and applies its patch, then `default`: None when it does not
/// match, whether its patch changed the object otherwise.
async fn mutate_once(
    hook: &Value,
    cache: &Arc<WatchCache>,
    a: &Attributes<'_>,
    obj: Option<&mut Map<String, Value>>,
    old: Option<&Value>,
    namespace: &Value,
    default: &(dyn Fn(&mut Map<String, Value>) + Sync),
) -> Result<Option<bool>, ApiError> {
    let object = obj.as_deref().map(|o| crate::admission_policy::view(a, Value::Object(o.clone())));
    let Some(allowed) = offer(hook, cache, a, object, old.cloned(), namespace, true).await? else {
        return Ok(None);
    };
    let (Some(patch), Some(obj), Some(mut patched)) = (allowed.patch, obj, allowed.sent) else {
        return Ok(Some(false));
    };
    apply_patch(&mut patched, &patch)?;
    if a.subresource == "scale" {
        // The webhook patched the Scale: its replicas go to the parent.
        let mut parent = Value::Object(obj.clone());
        crate::scale::apply_scale(a.info, &mut parent, &patched)?;
        patched = parent;
    }
    let Value::Object(mut patched) = patched else {
        return Err(ApiError::internal("the patched object is not an object"));
    };
    if let Some(hook_info) = &allowed.equivalent {
        // Back to the version of the request.
        patched = crate::conversion::for_admission(hook_info, a.info, patched)
            .await?
            .ok_or_else(|| ApiError::internal("the patched object changed its kind"))?;
    }
    for k in ["apiVersion", "kind"] {
        match obj.get(k) {
            Some(v) => patched.insert(k.into(), v.clone()),
            None => patched.remove(k),
        };
    }
    // Fields the type does not have are dropped, as kube's decoding into the type (or a custom
    // resource's pruning) drops them.
    let mut value = Value::Object(std::mem::take(&mut patched));
    if !crate::admission_policy::carries_own_object(a.subresource) {
        crate::field_validation::prune_unknown(a.info, &mut value);
    }
    if let Value::Object(m) = value {
        patched = m;
    }
    let changed = !same_object(a.info, &patched, obj);
    *obj = patched;
    default(obj);
    Ok(Some(changed))
}

/// Whether two forms of an object are the same object, as kube's `Semantic.DeepEqual` of the
/// decoded objects judges them: a built-in kind's compared in Go's form (a `""` Go leaves out
/// is no value, an empty list none), a custom resource's as they are.
fn same_object(info: &ResourceInfo, a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    if a == b {
        return true;
    }
    let Some(definition) = crate::schema::builtin().name_of(&info.group, &info.version, &info.kind) else {
        return false;
    };
    let (mut a, mut b) = (a.clone(), b.clone());
    crate::go_form::normalize(&mut a, definition);
    crate::go_form::normalize(&mut b, definition);
    a == b
}

/// Applies a webhook's JSON Patch, one operation after another; a failure is kube's 500 in the
/// words of the JSON Patch library kube uses (`add operation does not apply: doc is missing
/// path: "/metadata/labels/a": missing value`).
fn apply_patch(doc: &mut Value, patch: &json_patch::Patch) -> Result<(), ApiError> {
    for op in &patch.0 {
        if let Err(e) = json_patch::patch(doc, std::slice::from_ref(op)) {
            return Err(ApiError::internal(&patch_error(doc, op, &e)));
        }
    }
    Ok(())
}

/// kube's text of a patch operation that does not apply to `doc`.
fn patch_error(doc: &Value, op: &json_patch::PatchOperation, e: &json_patch::PatchError) -> String {
    use json_patch::PatchOperation::{Add, Remove};
    let path = match op {
        Add(o) => o.path.to_string(),
        Remove(o) => o.path.to_string(),
        _ => return e.to_string(),
    };
    let (parent, key) = path.rsplit_once('/').unwrap_or(("", &path));
    let key = key.replace("~1", "/").replace("~0", "~");
    let parent_value = doc.pointer(parent);
    match (op, parent_value) {
        (Add(_), None) => format!("add operation does not apply: doc is missing path: \"{path}\": missing value"),
        (Remove(_), None) => format!("remove operation does not apply: doc is missing path: \"{path}\": missing value"),
        (Remove(_), Some(Value::Object(m))) if !m.contains_key(&key) => {
            format!("error in remove for path: '{path}': Unable to remove nonexistent key: {key}: missing value")
        }
        _ => e.to_string(),
    }
}

/// Offers the request, its object as it will be stored, to the validating webhooks.
pub(crate) async fn validate(cache: &Arc<WatchCache>, a: &Attributes<'_>) -> Result<(), ApiError> {
    let hooks = webhooks(cache, a, VALIDATING)?;
    if hooks.is_empty() {
        return Ok(());
    }
    let namespace = crate::admission_policy::namespace_object(cache, a)?;
    let object = a.object.map(|o| crate::admission_policy::object_view(a, o));
    let old = a.old.map(|o| crate::admission_policy::view(a, o.value()));
    let calls = hooks.iter().map(|h| offer(h, cache, a, object.clone(), old.clone(), &namespace, false));
    for answer in futures_util::future::join_all(calls).await {
        answer?;
    }
    Ok(())
}

/// The webhooks of every configuration of `plural` (by configuration name, then in order);
/// none for the exempt resources.
fn webhooks(cache: &WatchCache, a: &Attributes<'_>, plural: &str) -> Result<Vec<Value>, ApiError> {
    if a.info.group == GROUP {
        return Ok(Vec::new());
    }
    let registry = cache.registry();
    let Some(info) = registry.find(GROUP, "v1", plural) else { return Ok(Vec::new()) };
    let mut configs: Vec<Value> = cache
        .list(info, None, ListAt::Latest, None, 0, &Selectors::default())?
        .items
        .iter()
        .map(|c| c.value())
        .collect();
    configs.sort_by(|x, y| name_of(x).cmp(name_of(y)));
    Ok(configs
        .iter_mut()
        .filter_map(|c| match c.get_mut("webhooks").map(Value::take) {
            Some(Value::Array(hooks)) => Some(hooks),
            _ => None,
        })
        .flatten()
        .collect())
}

fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
}

/// Offers the request to one webhook: Ok(None) when it does not match, what it allowed
/// otherwise (nothing to patch when its call failed and is ignored: it was called, and a
/// webhook with `reinvocationPolicy: IfNeeded` may be called again, as in kube).
async fn offer(
    hook: &Value,
    cache: &Arc<WatchCache>,
    a: &Attributes<'_>,
    object: Option<Value>,
    old: Option<Value>,
    namespace: &Value,
    mutating: bool,
) -> Result<Option<Allowed>, ApiError> {
    let registry = cache.registry();
    let registry: &Registry = &registry;
    let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
    let fail_closed = hook.get("failurePolicy").and_then(Value::as_str) != Some("Ignore");
    let failed = |reason: String| {
        if fail_closed {
            Err(ApiError::internal(&format!("failed calling webhook {}: {reason}", go_quote(name))))
        } else {
            tracing::warn!(webhook = name, "admission webhook failed and is ignored: {reason}");
            Ok(Some(Allowed { patch: None, sent: None, equivalent: None }))
        }
    };
    let equivalent = match matches(hook, a, registry, object.as_ref(), old.as_ref(), namespace) {
        Matched::No => return Ok(None),
        Matched::Requested => None,
        Matched::Equivalent(info) => Some(info),
    };
    let in_version = async |v: Option<Value>| match (&equivalent, v) {
        (_, v) if crate::admission_policy::subresource_kind(&a.info.plural, a.subresource).is_some() => Ok(v),
        (Some(info), Some(Value::Object(m))) => {
            crate::conversion::for_admission(a.info, info, m).await.map(|m| m.map(Value::Object))
        }
        (_, v) => Ok(v),
    };
    let (object, old) = (in_version(object).await?, in_version(old).await?);
    let (object, old) = (crate::admission_policy::go_written(object), crate::admission_policy::go_written(old));
    match conditions_hold(hook, a, cache, object.as_ref(), old.as_ref()) {
        Ok(true) => {}
        Ok(false) => return Ok(None),
        Err(e) if fail_closed => return Err(ApiError::forbidden(&a.info.group, &a.info.plural, a.name, &e)),
        Err(e) => {
            tracing::warn!(webhook = name, "a match condition failed and the webhook is ignored: {e}");
            return Ok(None);
        }
    }
    if a.dry_run && !matches!(hook.get("sideEffects").and_then(Value::as_str), Some("None" | "NoneOnDryRun")) {
        return Err(ApiError::bad_request(format!("admission webhook {} does not support dry run", go_quote(name))));
    }
    let timeout = Duration::from_secs(hook.get("timeoutSeconds").and_then(Value::as_u64).unwrap_or(10));
    let Some(endpoint) = hook.get("clientConfig").and_then(|c| Endpoint::of(c, timeout)) else {
        return failed("failed to call webhook: the webhook has neither a url nor a service".into());
    };
    let uid = crate::object::new_uid();
    let version = review_version(hook);
    let review = review(version, a, equivalent.as_deref(), &uid, object.as_ref(), old.as_ref());
    let answer = match crate::webhook_client::post(&endpoint, review.to_string().into_bytes()).await {
        Ok(v) => v,
        Err(e) => return failed(format!("failed to call webhook: {e}")),
    };
    let patch = match patch_bytes(answer.pointer("/response/patch")) {
        Ok(p) => p,
        Err(e) => return failed(format!("failed to call webhook: {e}")),
    };
    let response = match verify(version, &answer, &uid, mutating, patch.is_some()) {
        Ok(r) => r,
        Err(e) => return failed(format!("received invalid webhook response: {e}")),
    };
    for w in response.get("warnings").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        crate::warning::record(w);
    }
    if response.get("allowed").and_then(Value::as_bool) != Some(true) {
        return Err(denied(name, response.get("status")));
    }
    let Some(bytes) = patch else { return Ok(Some(Allowed { patch: None, sent: object, equivalent })) };
    let patch: json_patch::Patch = match serde_json::from_slice(&bytes) {
        Ok(p) => p,
        Err(e) => return failed(format!("received undecodable patch in webhook response: {e}")),
    };
    if patch.0.is_empty() {
        return Ok(Some(Allowed { patch: None, sent: object, equivalent }));
    }
    if object.is_none() {
        return Err(ApiError::internal(&format!(
            "admission webhook {} attempted to modify the object, which is not supported for this operation",
            go_quote(name)
        )));
    }
    // A v1beta1 answer's patch is a JSON Patch whatever its patchType says, as kube reads it.
    let patch_type = match version {
        V1BETA1 => "JSONPatch",
        _ => response.get("patchType").and_then(Value::as_str).unwrap_or(""),
    };
    if patch_type != "JSONPatch" {
        return failed(format!("unsupported patch type {}", go_quote(patch_type)));
    }
    Ok(Some(Allowed { patch: Some(patch), sent: object, equivalent }))
}

/// The bytes of a response's `patch`: base64 text, as Go encodes bytes, or an array of byte
/// values, which Go decodes too (and some webhook libraries send).
fn patch_bytes(patch: Option<&Value>) -> Result<Option<Vec<u8>>, String> {
    match patch {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(p)) if p.is_empty() => Ok(None),
        Some(Value::String(p)) => {
            base64::Engine::decode(&base64::engine::general_purpose::STANDARD, p).map(Some).map_err(|e| e.to_string())
        }
        Some(Value::Array(items)) if items.is_empty() => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()).ok_or_else(|| format!("invalid byte in patch: {b}")))
            .collect::<Result<Vec<u8>, String>>()
            .map(Some),
        Some(other) => Err(format!("invalid patch: {other}")),
    }
}

/// Whether the webhook's rules (in the requested version or, by its `matchPolicy`, another)
/// and selectors match the request.
fn matches(
    hook: &Value,
    a: &Attributes<'_>,
    registry: &Registry,
    object: Option<&Value>,
    old: Option<&Value>,
    namespace: &Value,
) -> Matched {
    let rules = hook.get("rules").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let by_rules = |a: &Attributes<'_>| rules.iter().any(|r| crate::admission_policy::rule_matches(r, a));
    let matched = if by_rules(a) {
        Matched::Requested
    } else if hook.get("matchPolicy").and_then(Value::as_str) == Some("Exact") {
        Matched::No
    } else {
        let mut others = registry
            .all()
            .iter()
            .filter(|r| r.group == a.info.group && r.plural == a.info.plural && r.version != a.info.version);
        match others.find(|r| by_rules(&Attributes { info: r, ..*a })) {
            Some(r) => Matched::Equivalent(r.clone()),
            None => Matched::No,
        }
    };
    if matches!(matched, Matched::No) {
        return Matched::No;
    }
    let labels = |v: &Value| v.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
    if let Some(sel) = hook.get("namespaceSelector") {
        let judged = if a.info.group.is_empty() && a.info.plural == "namespaces" {
            object.or(old).map(labels)
        } else if a.info.namespaced {
            Some(labels(namespace))
        } else {
            None
        };
        if judged.is_some_and(|l| !crate::admission_policy::selector_matches(sel, &l)) {
            return Matched::No;
        }
    }
    if let Some(sel) = hook.get("objectSelector") {
        let selects = |v: Option<&Value>| {
            v.is_some_and(|v| crate::admission_policy::object_selector_matches(sel, a.subresource, &labels(v)))
        };
        if !selects(object) && !selects(old) {
            return Matched::No;
        }
    }
    matched
}

/// Whether every `matchConditions` expression of the webhook holds (any false: it does not);
/// the error, when none is false and some fail to evaluate, is kube's text of the failures.
fn conditions_hold(
    hook: &Value,
    a: &Attributes<'_>,
    cache: &Arc<WatchCache>,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Result<bool, String> {
    let conditions = hook.get("matchConditions").and_then(Value::as_array);
    let Some(conditions) = conditions.filter(|c| !c.is_empty()) else { return Ok(true) };
    let mut ctx = Context::with_env(crate::validation_rules::env());
    let cel = |v: Option<&Value>| v.map_or(Cel::Null, crate::validation_rules::json_to_cel);
    ctx.add_variable_from_value("object", cel(object));
    ctx.add_variable_from_value("oldObject", cel(old));
    ctx.add_variable_from_value("request", crate::validation_rules::json_to_cel(&crate::admission_policy::request(a)));
    crate::cel_authz::bind(&mut ctx, cache, crate::admission_policy::request_resource(a));
    crate::admission_policy::conditions_hold(conditions, &ctx)
}

/// The AdmissionReview version a webhook is sent: the first of its `admissionReviewVersions`
/// the server speaks.
fn review_version(hook: &Value) -> &'static str {
    let versions = hook.get("admissionReviewVersions").and_then(Value::as_array);
    let first = versions.into_iter().flatten().filter_map(Value::as_str).find(|v| matches!(*v, "v1" | "v1beta1"));
    if first == Some("v1beta1") { V1BETA1 } else { V1 }
}

const V1: &str = "admission.k8s.io/v1";
const V1BETA1: &str = "admission.k8s.io/v1beta1";

/// The AdmissionReview sent (`version` an apiVersion of it): the request's attributes, objects
/// and options.
fn review(
    version: &str,
    a: &Attributes<'_>,
    equivalent: Option<&ResourceInfo>,
    uid: &str,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Value {
    let mut request = crate::admission_policy::request_as(a, equivalent);
    if let Value::Object(r) = &mut request {
        for k in ["subResource", "requestSubResource", "name", "namespace"] {
            if r.get(k).and_then(Value::as_str) == Some("") {
                r.remove(k);
            }
        }
        r.insert("uid".into(), uid.into());
        r.insert("object".into(), object.cloned().unwrap_or(Value::Null));
        r.insert("oldObject".into(), old.cloned().unwrap_or(Value::Null));
        let kind = match a.operation {
            "CREATE" => Some("CreateOptions"),
            "UPDATE" => Some("UpdateOptions"),
            "DELETE" => Some("DeleteOptions"),
            // A connection has no operation options.
            _ => None,
        };
        let options = kind.map(|kind| {
            let mut options = Map::new();
            options.insert("kind".into(), kind.into());
            options.insert("apiVersion".into(), "meta.k8s.io/v1".into());
            options.extend(crate::admission_options::current());
            if a.dry_run && !options.contains_key("dryRun") {
                options.insert("dryRun".into(), json!(["All"]));
            }
            Value::Object(options)
        });
        r.insert("options".into(), options.unwrap_or(Value::Null));
    }
    json!({"kind": "AdmissionReview", "apiVersion": version, "request": request})
}

/// The `response` of a webhook's AdmissionReview of `version`, checked as kube checks it:
/// a v1 answer must carry the request's uid and its own apiVersion and kind, a mutating
/// webhook's patch and patchType come together, and a validating webhook sends neither; a
/// v1beta1 answer is taken as kube takes it, unchecked. `has_patch` says whether it carries a
/// non-empty patch.
fn verify<'a>(
    version: &str,
    answer: &'a Value,
    uid: &str,
    mutating: bool,
    has_patch: bool,
) -> Result<&'a Value, String> {
    let text = |v: &'a Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    let Some(response) = answer.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    if version == V1BETA1 {
        return Ok(response);
    }
    if text(response, "uid") != uid {
        return Err(format!("expected response.uid={}, got {}", go_quote(uid), go_quote(text(response, "uid"))));
    }
    let (api_version, kind) = (text(answer, "apiVersion"), text(answer, "kind"));
    if api_version != V1 || kind != "AdmissionReview" {
        // Go prints a GroupVersionKind as `<group>/<version>, Kind=<kind>`.
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{version}, Kind={kind}"
        ));
    }
    let patch_type = response.get("patchType").filter(|t| !t.is_null());
    if mutating {
        if has_patch && patch_type.is_none() {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        if !has_patch && patch_type.is_some() {
            return Err("webhook returned response.patchType but not response.patch".into());
        }
        if let Some(t) = patch_type.and_then(Value::as_str).filter(|t| t.is_empty()) {
            return Err(format!("webhook returned invalid response.patchType of {}", go_quote(t)));
        }
    } else if has_patch {
        return Err("validating webhook may not return response.patch".into());
    } else if patch_type.is_some() {
        return Err("validating webhook may not return response.patchType".into());
    }
    Ok(response)
}

/// kube's Status for a webhook's refusal: its status's code (at least 400), reason and
/// details, the message naming the webhook.
fn denied(name: &str, status: Option<&Value>) -> ApiError {
    let empty = json!({});
    let status = status.unwrap_or(&empty);
    let text = |k: &str| status.get(k).and_then(Value::as_str).unwrap_or("");
    let denied_by = format!("admission webhook {} denied the request", go_quote(name));
    let message = match (text("message"), text("reason")) {
        ("", "") => format!("{denied_by} without explanation"),
        ("", reason) => format!("{denied_by}: {reason}"),
        (message, _) => format!("{denied_by}: {message}"),
    };
    let code = status.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok()).filter(|c| *c >= 400);
    let mut e = ApiError::new(code.unwrap_or(400), text("reason"), message);
    e.details = status.get("details").cloned().map(Box::new);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_read_as_kube_words_them() {
        let e = denied("deny.example.com", Some(&json!({"code": 403, "message": "no pets allowed"})));
        assert_eq!(
            (e.code, e.message.as_str()),
            (403, "admission webhook \"deny.example.com\" denied the request: no pets allowed")
        );
        let e = denied("d.example.com", Some(&json!({"code": 200, "reason": "NotWanted"})));
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "admission webhook \"d.example.com\" denied the request: NotWanted")
        );
        let e = denied("d.example.com", None);
        assert_eq!(e.message, "admission webhook \"d.example.com\" denied the request without explanation");
    }

    #[test]
    fn responses_out_of_protocol_are_refused_as_kube_refuses_them() {
        let review = |response: Value| json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response});
        let ok = review(json!({"uid": "u", "allowed": true}));
        assert!(verify(V1, &ok, "u", false, false).is_ok());
        assert_eq!(verify(V1, &ok, "v", false, false).unwrap_err(), "expected response.uid=\"v\", got \"u\"");
        let old =
            json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "response": {"uid": "u"}});
        assert_eq!(
            verify(V1, &old, "u", false, false).unwrap_err(),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview"
        );
        let untyped = json!({"response": {"uid": "u"}});
        assert_eq!(
            verify(V1, &untyped, "u", false, false).unwrap_err(),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="
        );
        let patch = review(json!({"uid": "u", "allowed": true, "patch": "W10="}));
        assert_eq!(
            verify(V1, &patch, "u", true, true).unwrap_err(),
            "webhook returned response.patch but not response.patchType"
        );
        let typed = review(json!({"uid": "u", "allowed": true, "patchType": "JSONPatch"}));
        assert_eq!(
            verify(V1, &typed, "u", true, false).unwrap_err(),
            "webhook returned response.patchType but not response.patch"
        );
        let both = review(json!({"uid": "u", "allowed": true, "patch": "W10=", "patchType": "JSONPatch"}));
        assert!(verify(V1, &both, "u", true, true).is_ok());
        assert_eq!(
            verify(V1, &both, "u", false, true).unwrap_err(),
            "validating webhook may not return response.patch"
        );
        let none = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"});
        assert_eq!(verify(V1, &none, "u", true, false).unwrap_err(), "webhook response was absent");
        // A validating webhook's patch type alone; a mutating webhook's empty patch type.
        let typed_only = review(json!({"uid": "u", "allowed": true, "patchType": "JSONPatch"}));
        assert_eq!(
            verify(V1, &typed_only, "u", false, false).unwrap_err(),
            "validating webhook may not return response.patchType"
        );
        let empty_type = review(json!({"uid": "u", "allowed": true, "patch": "W10=", "patchType": ""}));
        assert_eq!(
            verify(V1, &empty_type, "u", true, true).unwrap_err(),
            "webhook returned invalid response.patchType of \"\""
        );
        // A v1beta1 answer is taken unchecked, as kube takes it.
        let beta = json!({"response": {"allowed": true, "patch": "W10="}});
        assert!(verify(V1BETA1, &beta, "u", true, true).is_ok());
    }

    #[test]
    fn the_first_review_version_the_server_speaks_is_sent() {
        let hook = |v: Value| json!({"admissionReviewVersions": v});
        assert_eq!(review_version(&hook(json!(["v1beta1", "v1"]))), V1BETA1);
        assert_eq!(review_version(&hook(json!(["v2", "v1", "v1beta1"]))), V1);
        assert_eq!(review_version(&hook(json!(["v1beta1"]))), V1BETA1);
    }

    #[test]
    fn patches_are_base64_or_byte_arrays() {
        assert_eq!(patch_bytes(Some(&json!("W10="))).unwrap(), Some(b"[]".to_vec()));
        assert_eq!(patch_bytes(Some(&json!([91, 93]))).unwrap(), Some(b"[]".to_vec()));
        assert_eq!(patch_bytes(Some(&json!(""))).unwrap(), None);
        assert_eq!(patch_bytes(None).unwrap(), None);
        assert!(patch_bytes(Some(&json!("%%%"))).is_err());
        assert!(patch_bytes(Some(&json!([256]))).is_err());
    }

    #[test]
    fn patches_that_do_not_apply_fail_in_kube_s_words() {
        let failure = |doc: Value, patch: Value| {
            let mut doc = doc;
            let patch: json_patch::Patch = serde_json::from_value(patch).unwrap();
            apply_patch(&mut doc, &patch).unwrap_err().message
        };
        let doc = json!({"metadata": {"name": "a"}});
        assert_eq!(
            failure(doc.clone(), json!([{"op": "add", "path": "/metadata/labels/x", "value": "1"}])),
            "Internal error occurred: add operation does not apply: doc is missing path: \"/metadata/labels/x\": missing value"
        );
        assert_eq!(
            failure(doc.clone(), json!([{"op": "remove", "path": "/metadata/name2"}])),
            "Internal error occurred: error in remove for path: '/metadata/name2': Unable to remove nonexistent key: name2: missing value"
        );
        assert_eq!(
            failure(doc.clone(), json!([{"op": "remove", "path": "/spec/x"}])),
            "Internal error occurred: remove operation does not apply: doc is missing path: \"/spec/x\": missing value"
        );
        // Operations apply in order: a parent added first is there for the next.
        let mut ok = doc;
        let patch: json_patch::Patch = serde_json::from_value(json!([
            {"op": "add", "path": "/metadata/labels", "value": {}},
            {"op": "add", "path": "/metadata/labels/x", "value": "1"}
        ]))
        .unwrap();
        apply_patch(&mut ok, &patch).unwrap();
        assert_eq!(ok["metadata"]["labels"]["x"], "1");
    }
}
