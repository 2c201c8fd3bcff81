//! ValidatingAdmissionPolicy: the CEL admission of `admissionregistration.k8s.io/v1`, applied to
//! every create, update, delete and connection (`CONNECT`) as kube-apiserver applies it. A ValidatingAdmissionPolicyBinding
//! names a policy; where the policy's `matchConstraints` (and the binding's `matchResources`)
//! match the request — or, under `matchPolicy: Equivalent`, another served version of its
//! resource, which then sees the object converted to that version — and its `matchConditions`
//! hold, the policy's `validations` judge it, with
//! `object`, `oldObject`, `request`, `params`, `namespaceObject`, `variables` and `authorizer`
//! in scope, once per param the binding's `paramRef` names or selects. A validation that fails
//! under a binding whose `validationActions` include `Deny` refuses the request: `<resource>
//! "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied
//! request: <message>`, 422 Invalid unless the validation names another reason; under `Warn` it
//! is a `Warning` header.
//!
//! Invariants: policies, bindings and params are read from the watch cache, so a write sees
//! every one the cache holds; a policy never judges policies or bindings themselves; under
//! `failurePolicy: Fail` (the default) an expression that fails to evaluate is a failure, and a
//! fault of configuration (a `paramKind` no resource serves, no params under
//! `parameterNotFoundAction: Deny`, an audit annotation that gives neither a string nor null)
//! refuses whatever the binding's actions; under `Ignore` both are skipped. Every binding is
//! judged (for its warnings); the first refusal, in binding-name order, is the answer.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map as CelMap};
use cel::{Context, Value as Cel};
use serde_json::{Map, Value, json};

use crate::cache::{ListAt, WatchCache};
use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;

/// The group of the policy resources.
pub(crate) const GROUP: &str = "admissionregistration.k8s.io";

/// What a request is, for matching and for CEL's `request`.
pub(crate) struct Attributes<'a> {
    pub info: &'a ResourceInfo,
    /// `CREATE`, `UPDATE`, `DELETE`, or `CONNECT` for a connection's options.
    pub operation: &'static str,
    /// `status`, `scale` or "".
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// The object to be stored (None on delete).
    pub object: Option<&'a Map<String, Value>>,
    /// The object replaced or deleted (None on create); read only when a binding exists.
    pub old: Option<&'a StoredObject>,
    pub dry_run: bool,
}

/// Judges a request by every bound policy.
pub(crate) async fn admit(cache: &Arc<WatchCache>, a: &Attributes<'_>) -> Result<(), ApiError> {
    if a.info.group == GROUP && a.info.plural.starts_with("validatingadmissionpolic") {
        return Ok(());
    }
    let registry = cache.registry();
    let (Some(binding_info), Some(policy_info)) = (
        registry.find(GROUP, "v1", "validatingadmissionpolicybindings"),
        registry.find(GROUP, "v1", "validatingadmissionpolicies"),
    ) else {
        return Ok(());
    };
    let bindings = cache.list(binding_info, None, ListAt::Latest, None, 0, &Selectors::default())?.items;
    if bindings.is_empty() {
        return Ok(());
    }
    let object = a.object.map(|o| object_view(a, o));
    let old = a.old.map(|o| view(a, o.value()));
    let namespace = namespace_object(cache, a)?;
    // The resource's other served versions, which a policy matches by equivalence.
    let equivalents: Vec<Arc<ResourceInfo>> = if subresource_kind(&a.info.plural, a.subresource).is_none() {
        registry
            .all()
            .iter()
            .filter(|r| r.group == a.info.group && r.plural == a.info.plural && r.version != a.info.version)
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    // The object and old object in each equivalent version judged so far.
    let mut in_versions: Vec<(String, Option<Value>, Option<Value>)> = Vec::new();
    let mut verdict = Verdict { a, denied: None };
    for b in bindings {
        let binding = b.value();
        let Some(policy_name) = binding.pointer("/spec/policyName").and_then(Value::as_str) else { continue };
        let Some(policy) = cache.get(policy_info, "", policy_name)?.map(|p| p.value()) else { continue };
        let labelled = object.as_ref().or(old.as_ref());
        let constraints = policy.pointer("/spec/matchConstraints");
        let fits = |info: &ResourceInfo| {
            let at = Attributes { info, ..*a };
            constraints.is_none_or(|m| matches_resources(m, &at, labelled, &namespace))
        };
        // The version the policy judges: the request's, else (`matchPolicy: Equivalent`, the
        // default) another version of the resource its rules name.
        let equivalent = if fits(a.info) {
            None
        } else if constraints.and_then(|m| m.get("matchPolicy")).and_then(Value::as_str) != Some("Exact")
            && let Some(r) = equivalents.iter().find(|r| fits(r))
        {
            Some(r.clone())
        } else {
            continue;
        };
        let judged_as = Attributes { info: equivalent.as_deref().unwrap_or(a.info), ..*a };
        let a = &judged_as;
        let matches = |m: Option<&Value>| m.is_none_or(|m| matches_resources(m, a, labelled, &namespace));
        let fail_closed = policy.pointer("/spec/failurePolicy").and_then(Value::as_str) != Some("Ignore");
        let param_info = match param_resource(cache, &policy) {
            Ok(p) => p,
            Err(message) => {
                if fail_closed {
                    verdict.deny(&format!("ValidatingAdmissionPolicy '{policy_name}' denied request: {message}"), "");
                }
                continue;
            }
        };
        if !matches(binding.pointer("/spec/matchResources")) {
            continue;
        }
        let binding_name = binding.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
        let judged = Judged { policy: policy_name, binding: binding_name, fail_closed };
        let params = match params(cache, param_info.as_ref(), &binding, request_namespace(a)) {
            Ok(p) => p,
            Err(message) => {
                if fail_closed {
                    verdict.deny(&judged.denied(&format!("failed to configure binding: {message}")), "");
                }
                continue;
            }
        };
        let (object, old) = match &equivalent {
            None => (object.clone(), old.clone()),
            Some(info) => match in_versions.iter().find(|(v, _, _)| *v == info.version) {
                Some((_, o, old)) => (o.clone(), old.clone()),
                None => {
                    let original = verdict.a;
                    let convert = async |v: Option<Value>| -> Result<Option<Value>, ApiError> {
                        match v {
                            Some(Value::Object(m)) => {
                                let m = crate::conversion::for_admission(original.info, info, m).await?;
                                Ok(m.map(|m| with_type(info, Value::Object(m))))
                            }
                            other => Ok(other),
                        }
                    };
                    let converted = (convert(object.clone()).await?, convert(old.clone()).await?);
                    in_versions.push((info.version.clone(), converted.0.clone(), converted.1.clone()));
                    converted
                }
            },
        };
        let (object, old) = (go_written(object), go_written(old));
        let actions: Vec<&str> = binding
            .pointer("/spec/validationActions")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for param in params {
            let mut ctx = Context::with_env(crate::validation_rules::env());
            let cel_of = |v: Option<&Value>| v.map_or(Cel::Null, crate::validation_rules::json_to_cel);
            ctx.add_variable_from_value("object", cel_of(object.as_ref()));
            ctx.add_variable_from_value("oldObject", cel_of(old.as_ref()));
            ctx.add_variable_from_value("params", cel_of(param.as_ref()));
            ctx.add_variable_from_value("namespaceObject", crate::validation_rules::json_to_cel(&namespace));
            let request = request_as(verdict.a, equivalent.as_deref());
            ctx.add_variable_from_value("request", crate::validation_rules::json_to_cel(&request));
            crate::cel_authz::bind(&mut ctx, cache, request_resource(a));
            let vars = variables(&policy, &ctx);
            ctx.add_variable_from_value("variables", vars);
            let Some(failures) = judged.failures(&policy, &ctx) else { continue };
            for (message, reason) in failures {
                for action in &actions {
                    match *action {
                        "Deny" => verdict.deny(&judged.denied(&message), reason),
                        "Warn" => crate::warning::record(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}': {message}"
                        )),
                        _ => {}
                    }
                }
            }
            // Audit annotations have no audit log to go to here; one that cannot be evaluated
            // still refuses under `failurePolicy: Fail`, whatever the binding's actions.
            if let Some(message) = judged.audit_annotation_error(&policy, &ctx) {
                verdict.deny(&judged.denied(&message), "");
            }
        }
    }
    verdict.denied.map_or(Ok(()), Err)
}

/// The answer being built: the first refusal, kept while every other binding is still judged
/// (for its warnings), as in kube.
struct Verdict<'r, 'a> {
    a: &'r Attributes<'a>,
    denied: Option<ApiError>,
}

impl Verdict<'_, '_> {
    /// Records a refusal with `message` (`reason` "": Invalid) unless an earlier one stands.
    fn deny(&mut self, message: &str, reason: &str) {
        if self.denied.is_none() {
            self.denied = Some(refusal(self.a, message, if reason.is_empty() { "Invalid" } else { reason }));
        }
    }
}

/// A policy judged under one of its bindings.
struct Judged<'p> {
    policy: &'p str,
    binding: &'p str,
    fail_closed: bool,
}

impl Judged<'_> {
    /// kube's text of a refusal under this binding.
    fn denied(&self, message: &str) -> String {
        format!("ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {message}", self.policy, self.binding)
    }

    /// The policy's failures with one set of params, as (message, reason); None when its match
    /// conditions do not hold (one is false, or some fail to evaluate under `Ignore`). Match
    /// conditions that fail to evaluate under `Fail`, none being false, are the one failure;
    /// otherwise each validation that does not hold is one.
    fn failures<'v>(&self, policy: &'v Value, ctx: &Context) -> Option<Vec<(String, &'v str)>> {
        let conditions = policy.pointer("/spec/matchConditions").and_then(Value::as_array);
        match conditions_hold(conditions.map_or(&[][..], Vec::as_slice), ctx) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) if self.fail_closed => return Some(vec![(e, "")]),
            Err(_) => return None,
        }
        let mut out = Vec::new();
        for v in policy.pointer("/spec/validations").and_then(Value::as_array).into_iter().flatten() {
            let expression = v.get("expression").and_then(Value::as_str).unwrap_or("");
            match evaluate(expression, ctx) {
                Ok(Cel::Bool(true)) => {}
                Ok(_) => out
                    .push((failure_message(v, expression, ctx), v.get("reason").and_then(Value::as_str).unwrap_or(""))),
                Err(e) if self.fail_closed => {
                    out.push((format!("expression '{expression}' resulted in error: {e}"), ""))
                }
                Err(_) => {}
            }
        }
        Some(out)
    }

    /// The first `auditAnnotations` value that is neither a string nor null, or that fails to
    /// evaluate under `Fail`, as kube words it.
    fn audit_annotation_error(&self, policy: &Value, ctx: &Context) -> Option<String> {
        policy.pointer("/spec/auditAnnotations").and_then(Value::as_array).into_iter().flatten().find_map(|an| {
            let expression = an.get("valueExpression").and_then(Value::as_str).unwrap_or("");
            match evaluate(expression.trim(), ctx) {
                Ok(Cel::String(_) | Cel::Null) => None,
                Ok(other) => Some(format!(
                    "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                    expression.trim(),
                    cel_type_name(&other)
                )),
                Err(e) if self.fail_closed => {
                    Some(format!("expression '{}' resulted in error: {e}", expression.trim()))
                }
                Err(_) => None,
            }
        })
    }
}

/// The name cel-go gives the type of a value.
fn cel_type_name(v: &Cel) -> String {
    match v {
        Cel::Float(_) => "double".into(),
        Cel::Null => "null_type".into(),
        Cel::Duration(_) => "google.protobuf.Duration".into(),
        Cel::Timestamp(_) => "google.protobuf.Timestamp".into(),
        other => other.type_of().to_string(),
    }
}

/// The object a write stores as validating admission sees it: an update's carries the
/// resourceVersion it replaces, as in kube.
pub(crate) fn object_view(a: &Attributes<'_>, o: &Map<String, Value>) -> Value {
    let mut o = o.clone();
    if let (Some(old), "UPDATE") = (a.old, a.operation)
        && let Some(Value::Object(meta)) = o.get_mut("metadata")
    {
        meta.entry("resourceVersion").or_insert_with(|| old.rv.to_string().into());
    }
    view(a, Value::Object(o))
}

/// The group, version and kind of the objects a subresource's requests carry, when they are
/// not the resource's: a `scale` is an autoscaling/v1 `Scale`, a pod's `eviction` a policy/v1
/// `Eviction`, its `binding` a v1 `Binding`, a service account's `token` an
/// authentication.k8s.io/v1 `TokenRequest`, a pod's `exec`, `attach` and `portforward` the v1
/// `PodExecOptions`, `PodAttachOptions` and `PodPortForwardOptions` of the connection, a pod's,
/// Service's or node's `proxy` its v1 `PodProxyOptions`, `ServiceProxyOptions` or
/// `NodeProxyOptions`.
pub(crate) fn subresource_kind(plural: &str, subresource: &str) -> Option<(&'static str, &'static str, &'static str)> {
    match subresource {
        "proxy" => crate::proxy_subresource::options_kind(plural).map(|kind| ("", "v1", kind)),
        "scale" => Some(("autoscaling", "v1", "Scale")),
        "eviction" => Some(("policy", "v1", "Eviction")),
        "binding" => Some(("", "v1", "Binding")),
        "token" => Some(("authentication.k8s.io", "v1", "TokenRequest")),
        "attach" => Some(("", "v1", "PodAttachOptions")),
        "exec" => Some(("", "v1", "PodExecOptions")),
        "portforward" => Some(("", "v1", "PodPortForwardOptions")),
        _ => None,
    }
}

/// Whether a subresource's requests carry an object of their own (an `Eviction`, a `Binding`,
/// a `TokenRequest`, a connection's options) rather than a view of the resource's.
pub(crate) fn carries_own_object(subresource: &str) -> bool {
    matches!(subresource, "eviction" | "binding" | "token" | "attach" | "exec" | "portforward" | "proxy")
}

/// An object as admission sees it: for the `scale` subresource its autoscaling/v1 `Scale`, for
/// a subresource carrying its own object that object, otherwise the object with its
/// `apiVersion` and `kind`.
pub(crate) fn view(a: &Attributes<'_>, mut v: Value) -> Value {
    if a.subresource == "scale"
        && let Ok(scale) = crate::scale::scale_of_value(a.info, &v)
    {
        return scale.to_value();
    }
    if let (Some((group, version, kind)), Value::Object(m)) = (subresource_kind(&a.info.plural, a.subresource), &mut v)
        && carries_own_object(a.subresource)
    {
        let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        m.insert("apiVersion".into(), api_version.into());
        m.insert("kind".into(), kind.into());
        return v;
    }
    with_type(a.info, v)
}

/// A built-in object as Go's JSON encoder writes its decoded form, as kube hands it to
/// admission (encoded for a webhook's review, which its patch applies to; converted to
/// unstructured for CEL): without the value-held `""`, zeros, empty lists and maps it leaves
/// out, with the fields it always writes; an empty list it keeps stays `[]` (a stored object's
/// is `null` already). Custom resources are as they are.
pub(crate) fn go_written(v: Option<Value>) -> Option<Value> {
    let Some(Value::Object(mut m)) = v else { return v };
    let api_version = m.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = m.get("kind").and_then(Value::as_str).unwrap_or("");
    if let Some(definition) = crate::schema::builtin().name_of(group, version, kind).map(str::to_owned) {
        crate::go_form::normalize_decoded(&mut m, &definition);
    }
    Some(Value::Object(m))
}

/// `v` with the `apiVersion` and `kind` of `info`, as CEL sees objects.
pub(crate) fn with_type(info: &ResourceInfo, mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.insert("apiVersion".into(), info.api_version().into());
        m.insert("kind".into(), info.kind.clone().into());
    }
    v
}

/// The namespace of a namespaced request, as admission sees it (kube's `CreateNamespaceObject`:
/// its spec, status and the metadata fields below, without managedFields or owners); null
/// otherwise.
pub(crate) fn namespace_object(cache: &WatchCache, a: &Attributes<'_>) -> Result<Value, ApiError> {
    const KEPT: [&str; 12] = [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "finalizers",
    ];
    if !a.info.namespaced || a.namespace.is_empty() {
        return Ok(Value::Null);
    }
    let registry = cache.registry();
    let Some(ns_info) = registry.find("", "v1", "namespaces") else { return Ok(Value::Null) };
    let mut namespace = cache.get(ns_info, "", a.namespace)?.map(|n| n.value()).unwrap_or(Value::Null);
    if let Some(Value::Object(meta)) = namespace.get_mut("metadata") {
        meta.retain(|k, _| KEPT.contains(&k.as_str()));
    }
    Ok(namespace)
}

/// CEL's `request`: what the request is and who makes it. As in kube, a request on a
/// Namespace by name has that name as its namespace (its create has none), and the kind of a
/// subresource's request is that of the object it carries ([`subresource_kind`]).
pub(crate) fn request(a: &Attributes<'_>) -> Value {
    let gvk = if let Some((group, version, kind)) = subresource_kind(&a.info.plural, a.subresource) {
        json!({"group": group, "version": version, "kind": kind})
    } else {
        json!({"group": a.info.group, "version": a.info.version, "kind": a.info.kind})
    };
    let gvr = json!({"group": a.info.group, "version": a.info.version, "resource": a.info.plural});
    let namespace = request_namespace(a);
    json!({
        "kind": gvk, "resource": gvr, "subResource": a.subresource,
        "requestKind": gvk, "requestResource": gvr, "requestSubResource": a.subresource,
        "name": a.name, "namespace": namespace, "operation": a.operation,
        "userInfo": crate::requester::user_info(),
        "dryRun": a.dry_run,
    })
}

/// [`request`] of a request judged in an equivalent version of its resource (`info`): `kind`
/// and `resource` name that version; `requestKind` and `requestResource` the request's.
pub(crate) fn request_as(a: &Attributes<'_>, equivalent: Option<&ResourceInfo>) -> Value {
    let mut request = request(a);
    if let (Value::Object(r), Some(info)) = (&mut request, equivalent) {
        // A scale write is a Scale in every version (an eviction an Eviction, a binding a
        // Binding).
        if subresource_kind(&a.info.plural, a.subresource).is_none() {
            r.insert("kind".into(), json!({"group": info.group, "version": info.version, "kind": info.kind}));
        }
        r.insert("resource".into(), json!({"group": info.group, "version": info.version, "resource": info.plural}));
    }
    request
}

/// The policy's `variables`, each evaluated in order with those before it in scope; one that
/// fails to evaluate is left out (an expression naming it fails then).
fn variables(policy: &Value, ctx: &Context) -> Cel {
    let mut done: HashMap<Key, Cel> = HashMap::new();
    for v in policy.pointer("/spec/variables").and_then(Value::as_array).into_iter().flatten() {
        let (Some(name), Some(expression)) =
            (v.get("name").and_then(Value::as_str), v.get("expression").and_then(Value::as_str))
        else {
            continue;
        };
        let mut scoped = ctx.new_inner_scope();
        scoped.add_variable_from_value("variables", Cel::Map(CelMap { map: Arc::new(done.clone()) }));
        if let Ok(value) = evaluate(expression, &scoped) {
            done.insert(Key::String(Arc::new(name.to_string())), value);
        }
    }
    Cel::Map(CelMap { map: Arc::new(done) })
}

/// Compiles and runs a CEL expression; the error is kube's text of the failure.
pub(crate) fn evaluate(expression: &str, ctx: &Context) -> Result<Cel, String> {
    let program = crate::validation_rules::compile(expression).map_err(|e| format!("compilation failed: {e}"))?;
    program.execute(ctx).map_err(|e| crate::validation_rules::error_text(&e))
}

/// A failed validation's message: its `messageExpression`'s string, its `message`, or
/// `failed expression: <expression>`.
fn failure_message(v: &Value, expression: &str, ctx: &Context) -> String {
    if let Some(me) = v.get("messageExpression").and_then(Value::as_str)
        && let Ok(Cel::String(s)) = evaluate(me, ctx)
    {
        let s = s.trim();
        if !s.is_empty() && s.len() <= MAX_MESSAGE && !s.contains('\n') {
            return s.to_string();
        }
    }
    match v.get("message").and_then(Value::as_str).map(str::trim).filter(|m| !m.is_empty()) {
        Some(m) => m.to_string(),
        None => format!("failed expression: {}", expression.trim()),
    }
}

/// The longest message a `messageExpression` may give, in bytes.
const MAX_MESSAGE: usize = 5 * 1024;

/// Whether every match condition holds, as kube's matcher decides: any false, no; otherwise the
/// conditions that fail to evaluate are the error (`[<e1>, <e2>]` for several).
pub(crate) fn conditions_hold(conditions: &[Value], ctx: &Context) -> Result<bool, String> {
    let mut errors = Vec::new();
    for c in conditions {
        let expression = c.get("expression").and_then(Value::as_str).unwrap_or("");
        match evaluate(expression, ctx) {
            Ok(Cel::Bool(false)) => return Ok(false),
            Ok(_) => {}
            Err(e) => errors.push(format!("expression '{expression}' resulted in error: {e}")),
        }
    }
    match errors.len() {
        0 => Ok(true),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// The namespace a request is in, as admission sees it: a Namespace's own name for a request
/// on a Namespace by name (not its create, whose URL has no name).
/// The request's resource, as `authorizer.requestResource` checks it.
pub(crate) fn request_resource(a: &Attributes<'_>) -> crate::request_info::RequestInfo {
    crate::request_info::RequestInfo {
        resource_request: true,
        group: a.info.group.clone(),
        version: a.info.version.clone(),
        resource: a.info.plural.clone(),
        subresource: a.subresource.to_string(),
        namespace: request_namespace(a).to_string(),
        name: a.name.to_string(),
        ..Default::default()
    }
}

fn request_namespace<'a>(a: &Attributes<'a>) -> &'a str {
    let by_name = a.info.group.is_empty() && a.info.plural == "namespaces" && a.operation != "CREATE";
    if by_name { a.name } else { a.namespace }
}

/// kube's Status for a request a policy refuses with `message` (`<resource> "<name>" is
/// forbidden: <message>`), its code the one of `reason`.
fn refusal(a: &Attributes<'_>, message: &str, reason: &str) -> ApiError {
    let resource =
        if a.info.group.is_empty() { a.info.plural.clone() } else { format!("{}.{}", a.info.plural, a.info.group) };
    let code = match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    let mut details = Map::new();
    details.insert("name".into(), a.name.into());
    if !a.info.group.is_empty() {
        details.insert("group".into(), a.info.group.clone().into());
    }
    details.insert("kind".into(), a.info.plural.clone().into());
    details.insert("causes".into(), json!([{"message": message}]));
    ApiError {
        code,
        reason: reason.to_string(),
        message: format!("{resource} {:?} is forbidden: {message}", a.name),
        details: Some(Box::new(Value::Object(details))),
        continue_token: None,
        retry_after: None,
    }
}

/// The resource of a policy's `paramKind` (None without one); the error is kube's
/// configuration error when no served resource has that kind.
fn param_resource(cache: &WatchCache, policy: &Value) -> Result<Option<ResourceInfo>, String> {
    let Some(kind) = policy.pointer("/spec/paramKind").filter(|k| !k.is_null()) else { return Ok(None) };
    let api_version = kind.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = kind.get("kind").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let registry = cache.registry();
    match registry.all().iter().find(|r| r.group == group && r.version == version && r.kind == kind) {
        Some(info) => Ok(Some((**info).clone())),
        None => Err(format!(
            "failed to configure policy: failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind}'"
        )),
    }
}

/// The params a binding judges with, each a separate evaluation: `[None]` for a policy without
/// a `paramKind` or a binding without a `paramRef`; the object `paramRef.name` names, or every
/// object `paramRef.selector` selects (in the binding's namespace, else the request's, for a
/// namespaced kind). None found is an error under `parameterNotFoundAction: Deny` and no
/// evaluation under `Allow`. The error is kube's text of the configuration fault.
fn params(
    cache: &WatchCache,
    info: Option<&ResourceInfo>,
    binding: &Value,
    request_ns: &str,
) -> Result<Vec<Option<Value>>, String> {
    let (Some(info), Some(r)) = (info, binding.pointer("/spec/paramRef").filter(|r| !r.is_null())) else {
        return Ok(vec![None]);
    };
    let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let ns = match (info.namespaced, text("namespace")) {
        (false, "") => "",
        (false, _) => return Err("paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into()),
        (true, "") if request_ns.is_empty() => {
            return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
        }
        (true, "") => request_ns,
        (true, n) => n,
    };
    let found: Vec<Value> = if !text("name").is_empty() {
        cache.get(info, ns, text("name")).ok().flatten().map(|o| o.value()).into_iter().collect()
    } else if let Some(selector) = r.get("selector").filter(|s| !s.is_null()) {
        let within = info.namespaced.then_some(ns);
        let listed = cache.list(info, within, ListAt::Latest, None, 0, &Selectors::default()).map_err(|e| e.message)?;
        listed
            .items
            .iter()
            .map(|o| o.value())
            .filter(|v| selector_matches(selector, v.pointer("/metadata/labels").unwrap_or(&Value::Null)))
            .collect()
    } else {
        return Err("one of name or selector must be provided".into());
    };
    if found.is_empty() && text("parameterNotFoundAction") == "Deny" {
        return Err("no params found for policy binding with `Deny` parameterNotFoundAction".into());
    }
    Ok(found.into_iter().map(|p| Some(with_type(info, p))).collect())
}

/// Whether `m` (a policy's `matchConstraints` or a binding's `matchResources`) matches the
/// request: a `resourceRules` rule (if any) and no `excludeResourceRules` rule, and the
/// namespace and object selectors.
fn matches_resources(m: &Value, a: &Attributes<'_>, object: Option<&Value>, namespace: &Value) -> bool {
    let rules = |k: &str| m.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
    // Without resourceRules (a binding's matchResources may leave them out) resources are not
    // constrained.
    let included = rules("resourceRules");
    if !included.is_empty() && !included.iter().any(|r| rule_matches(r, a)) {
        return false;
    }
    if rules("excludeResourceRules").iter().any(|r| rule_matches(r, a)) {
        return false;
    }
    let labels_of = |v: Option<&Value>| v.and_then(|v| v.pointer("/metadata/labels")).cloned().unwrap_or(json!({}));
    if let Some(sel) = m.get("namespaceSelector")
        && a.info.namespaced
        && !selector_matches(sel, &labels_of(Some(namespace)))
    {
        return false;
    }
    if let Some(sel) = m.get("namespaceSelector")
        && a.info.group.is_empty()
        && a.info.plural == "namespaces"
        && !selector_matches(sel, &labels_of(object))
    {
        return false;
    }
    match m.get("objectSelector") {
        Some(sel) => object_selector_matches(sel, a.subresource, &labels_of(object)),
        None => true,
    }
}

/// Whether an `objectSelector` selects an object with `labels` offered through `subresource`,
/// as kube's object matcher judges it: an empty selector selects everything; a connection's
/// options (`exec`'s PodExecOptions…) have no metadata, so no other selector selects them.
pub(crate) fn object_selector_matches(sel: &Value, subresource: &str, labels: &Value) -> bool {
    let empty = ["matchLabels", "matchExpressions"].iter().all(|k| {
        sel.get(k).is_none_or(|v| {
            v.is_null() || v.as_object().is_some_and(Map::is_empty) || v.as_array().is_some_and(Vec::is_empty)
        })
    });
    if empty {
        return true;
    }
    !is_connection(subresource) && selector_matches(sel, labels)
}

/// Whether `subresource` is a connection whose requests carry options ([`subresource_kind`]).
pub(crate) fn is_connection(subresource: &str) -> bool {
    matches!(subresource, "attach" | "exec" | "portforward" | "proxy")
}

/// Whether a `NamedRuleWithOperations` matches the request.
pub(crate) fn rule_matches(r: &Value, a: &Attributes<'_>) -> bool {
    let has = |k: &str, want: &str| {
        r.get(k).and_then(Value::as_array).is_some_and(|v| v.iter().any(|x| x == "*" || x.as_str() == Some(want)))
    };
    if !has("operations", a.operation) || !has("apiGroups", &a.info.group) || !has("apiVersions", &a.info.version) {
        return false;
    }
    let resource_ok = r.get("resources").and_then(Value::as_array).is_some_and(|rs| {
        rs.iter().filter_map(Value::as_str).any(|pattern| {
            let (res, sub) = pattern.split_once('/').unwrap_or((pattern, ""));
            let res_ok = res == "*" || res == a.info.plural;
            let sub_ok =
                if pattern.contains('/') { sub == "*" || sub == a.subresource } else { a.subresource.is_empty() };
            res_ok && sub_ok
        })
    });
    if !resource_ok {
        return false;
    }
    let names = r.get("resourceNames").and_then(Value::as_array);
    if names.is_some_and(|n| !n.is_empty() && !n.iter().any(|x| x.as_str() == Some(a.name))) {
        return false;
    }
    match r.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" => !a.info.namespaced,
        "Namespaced" => a.info.namespaced,
        _ => true,
    }
}

/// The strings of the list at `key` of `v` (none when it is not a list).
pub(crate) fn strings<'v>(v: &'v Value, key: &str) -> Vec<&'v str> {
    v.get(key).and_then(Value::as_array).map(|l| l.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

/// Whether `labels` match a `LabelSelector` (`matchLabels` and `matchExpressions`); an empty
/// selector matches everything.
pub(crate) fn selector_matches(sel: &Value, labels: &Value) -> bool {
    selector_matches_with(sel, |k| labels.get(k).and_then(Value::as_str))
}

/// Whether a `LabelSelector` matches the labels `label` looks up.
pub(crate) fn selector_matches_with<'a>(sel: &Value, label: impl Fn(&str) -> Option<&'a str>) -> bool {
    let match_labels = sel.get("matchLabels").and_then(Value::as_object);
    if match_labels.is_some_and(|m| m.iter().any(|(k, v)| label(k) != v.as_str())) {
        return false;
    }
    sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten().all(|e| {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values = strings(e, "values");
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => label(key).is_some_and(|l| values.contains(&l)),
            "NotIn" => label(key).is_none_or(|l| !values.contains(&l)),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_selectors_match_as_kube_matches_them() {
        let labels = json!({"env": "prod", "tier": "web"});
        assert!(selector_matches(&json!({}), &labels));
        assert!(selector_matches(&json!({"matchLabels": {"env": "prod"}}), &labels));
        assert!(!selector_matches(&json!({"matchLabels": {"env": "dev"}}), &labels));
        let expr =
            |op: &str, values: Value| json!({"matchExpressions": [{"key": "env", "operator": op, "values": values}]});
        assert!(selector_matches(&expr("In", json!(["prod", "stage"])), &labels));
        assert!(!selector_matches(&expr("NotIn", json!(["prod"])), &labels));
        assert!(selector_matches(&expr("Exists", json!([])), &labels));
        assert!(!selector_matches(&expr("DoesNotExist", json!([])), &labels));
    }
}
