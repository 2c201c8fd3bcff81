//! Service account tokens over the API, as kube-apiserver serves them: a service account's
//! `token` subresource (authentication.k8s.io/v1 `TokenRequest`: `kubectl create token`, kube-rs's
//! `Api::create_token_request`), `tokenreviews` (`TokenReview`: who a token authenticates), and
//! requests made with such a token, which act as its service account.
//!
//! Invariants, as kube's token registry and service account authenticator:
//! - a token is issued only for a service account that exists, for `expirationSeconds` between
//!   10 minutes and 2^32 seconds (default one hour), for the request's audiences (default the API
//!   server's), and when bound, to a Pod (running as that service account), Secret or Node that
//!   exists with the UID named; the TokenRequest is judged by admission as a CREATE of
//!   `serviceaccounts/token`;
//! - a token authenticates only while it is valid, while its service account (and the object it
//!   is bound to) still exists with the UID it names, and only for an audience it was issued
//!   for; it then authenticates as `system:serviceaccount:<namespace>:<name>` in the groups
//!   `system:serviceaccounts`, `system:serviceaccounts:<namespace>` and `system:authenticated`,
//!   with the token's id (and bound pod or node) as extra;
//! - tokens are never logged, and are not stored.

use serde_json::{Map, Value, json};

use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::service_account_token::{API_AUDIENCES, ISSUER, TokenSigner};
use crate::status::ApiError;
use crate::store::Store;
use crate::structural::go_quote;

/// The subresource's name.
pub(crate) const SUBRESOURCE: &str = "token";

/// A token's shortest and longest life, in seconds.
const MIN_SECONDS: i64 = 600;
const MAX_SECONDS: i64 = 1 << 32;

/// The resource a TokenRequest body is read as.
pub(crate) fn body_info() -> ResourceInfo {
    ResourceInfo::new("authentication.k8s.io", "v1", "tokenrequests", "TokenRequest", true)
}

/// Whether `info` is authentication.k8s.io's `tokenreviews`.
pub(crate) fn is_token_reviews(info: &ResourceInfo) -> bool {
    info.group == "authentication.k8s.io" && info.plural == "tokenreviews"
}

fn now_seconds() -> i64 {
    jiff::Timestamp::now().as_second()
}

fn rfc3339(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds).map(|t| t.to_string()).unwrap_or_default()
}

fn invalid(name: &str, field: &str, value: &Value, why: &str) -> ApiError {
    let message = format!("Invalid value: {}: {why}", crate::structural::go_json(value));
    ApiError::invalid_object("authentication.k8s.io", "TokenRequest", name, field, "FieldValueInvalid", &message)
}

/// Issues a token for service account `name` of namespace `ns` as the TokenRequest `body`
/// asks; `dry_run` is the request's `dryRun`. Answers the TokenRequest to send with 201.
pub(crate) async fn issue(
    store: &Store,
    signer: &TokenSigner,
    (ns, name): (&str, &str),
    body: Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let Value::Object(mut req) = body else {
        return Err(ApiError::bad_request("the object provided is unrecognized (must be of type TokenRequest)"));
    };
    let registry = store.registry();
    let accounts = registry.find("", "v1", "serviceaccounts").cloned().ok_or_else(ApiError::no_route)?;
    // Decoded as kube decodes it (its period defaulted), then offered to mutating admission.
    req.insert("kind".into(), "TokenRequest".into());
    req.insert("apiVersion".into(), "authentication.k8s.io/v1".into());
    let spec = req.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    if let Some(spec) = spec.as_object_mut()
        && spec.get("expirationSeconds").is_none_or(Value::is_null)
    {
        spec.insert("expirationSeconds".into(), 3600.into());
    }
    let attributes = |object| crate::admission_policy::Attributes {
        info: &accounts,
        operation: "CREATE",
        subresource: SUBRESOURCE,
        namespace: ns,
        name,
        object,
        old: None,
        dry_run,
    };
    let nothing = |_: &mut Map<String, Value>| {};
    let mutation = crate::admission_webhook::Mutation { obj: Some(&mut req), default: &nothing, server_set: &[] };
    crate::admission_webhook::mutate(store.cache(), &attributes(None), mutation).await?;

    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let meta = req.get("metadata").cloned().unwrap_or(Value::Null);
    let (asked_name, asked_ns) = (text(meta.get("name")), text(meta.get("namespace")));
    if !asked_name.is_empty() && asked_name != name {
        return Err(invalid(
            name,
            "metadata.name",
            &asked_name.into(),
            "must match the service account name if specified",
        ));
    }
    if !asked_ns.is_empty() && asked_ns != ns {
        return Err(invalid(
            name,
            "metadata.namespace",
            &asked_ns.into(),
            "must match the service account namespace if specified",
        ));
    }
    let account = store.get(&accounts, ns, name).await?;
    let now = now_seconds();
    let spec = req.get("spec").cloned().unwrap_or(Value::Null);
    let audiences = crate::object::strings(spec.get("audiences"));
    let audiences = if audiences.is_empty() { API_AUDIENCES.map(str::to_string).to_vec() } else { audiences };
    let seconds = spec.get("expirationSeconds").and_then(Value::as_i64).unwrap_or(3600);
    let bound = spec.get("boundObjectRef").filter(|r| r.is_object()).cloned();
    req.insert("metadata".into(), json!({"name": name, "namespace": ns, "creationTimestamp": rfc3339(now)}));
    req.insert("spec".into(), json!({"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": bound}));
    req.remove("status");
    if seconds < MIN_SECONDS {
        return Err(invalid(
            "",
            "spec.expirationSeconds",
            &seconds.into(),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if seconds > MAX_SECONDS {
        return Err(invalid(
            "",
            "spec.expirationSeconds",
            &seconds.into(),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    crate::admission_policy::admit(store.cache(), &attributes(Some(&req)))?;
    crate::admission_webhook::validate(store.cache(), &attributes(Some(&req))).await?;

    let mut kubernetes = json!({"namespace": ns, "serviceaccount": {"name": name, "uid": account.uid}});
    if let Some(r) = &bound {
        bind_claims(store, ns, name, r, &mut kubernetes).await?;
    }
    let claims = json!({
        "aud": audiences, "exp": now + seconds, "iat": now, "iss": ISSUER, "jti": crate::object::new_uid(),
        "kubernetes.io": kubernetes, "nbf": now, "sub": format!("system:serviceaccount:{ns}:{name}"),
    });
    let token = signer.sign(&claims);
    req.insert("status".into(), json!({"token": token, "expirationTimestamp": rfc3339(now + seconds)}));
    Ok(Value::Object(req))
}

/// The claims of a token bound to the object `r` names (a Pod, Secret or Node), checked as
/// kube checks it.
async fn bind_claims(
    store: &Store,
    ns: &str,
    account: &str,
    r: &Value,
    kubernetes: &mut Value,
) -> Result<(), ApiError> {
    let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind, name, uid) = (text("apiVersion"), text("kind"), text("name"), text("uid"));
    let registry = store.registry();
    let (plural, namespaced, claim) = match (api_version, kind) {
        ("v1", "Pod") => ("pods", true, "pod"),
        ("v1", "Secret") => ("secrets", true, "secret"),
        ("v1", "Node") => ("nodes", false, "node"),
        _ => {
            let gvk = match api_version.split_once('/') {
                Some((g, v)) => format!("{g}/{v}, Kind={kind}"),
                None => format!("/{api_version}, Kind={kind}"),
            };
            return Err(ApiError::bad_request(format!("cannot bind token to object of type {gvk}")));
        }
    };
    let info = registry.find("", "v1", plural).cloned().ok_or_else(ApiError::no_route)?;
    let object = store.get(&info, if namespaced { ns } else { "" }, name).await?;
    if claim == "pod" {
        let runs_as =
            object.value().pointer("/spec/serviceAccountName").and_then(Value::as_str).unwrap_or("").to_string();
        if runs_as != account {
            return Err(ApiError::bad_request(format!(
                "cannot bind token for serviceaccount {} to pod running with different serviceaccount name.",
                go_quote(account)
            )));
        }
    }
    if !uid.is_empty() && uid != object.uid {
        let mut e = ApiError::conflict("", kind, name);
        e.message = format!(
            "Operation cannot be fulfilled on {kind} {}: the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated",
            go_quote(name)
        );
        return Err(e);
    }
    kubernetes[claim] = json!({"name": name, "uid": object.uid});
    // A pod on a node that exists carries the node too.
    if claim == "pod"
        && let Some(node) = object.value().pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty())
        && let Some(nodes) = registry.find("", "v1", "nodes")
        && let Ok(n) = store.get(nodes, "", node).await
    {
        kubernetes["node"] = json!({"name": node, "uid": n.uid});
    }
    Ok(())
}

/// Who a token authenticates for `audiences` (none: the API server's). `Ok(None)`: not one of
/// this server's tokens; `Err`: one that does not (any longer) authenticate, and why.
pub(crate) async fn authenticate(
    store: &Store,
    signer: &TokenSigner,
    token: &str,
    audiences: &[String],
) -> Result<Option<(Value, Vec<String>)>, String> {
    let Some(claims) = signer.verify(token, now_seconds())? else { return Ok(None) };
    let wanted: Vec<String> =
        if audiences.is_empty() { API_AUDIENCES.map(str::to_string).to_vec() } else { audiences.to_vec() };
    let issued = crate::object::strings(claims.get("aud"));
    let matched: Vec<String> = wanted.iter().filter(|a| issued.contains(a)).cloned().collect();
    if matched.is_empty() {
        return Err(format!(
            "token audiences {} is invalid for the target audiences {}",
            crate::structural::go_json(&Value::from(issued)),
            crate::structural::go_json(&Value::from(wanted))
        ));
    }
    let k = claims.get("kubernetes.io").cloned().unwrap_or(Value::Null);
    let text = |p: &str| k.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
    let (ns, name, uid) = (text("/namespace"), text("/serviceaccount/name"), text("/serviceaccount/uid"));
    let registry = store.registry();
    let live = |plural: &str, ns: &str, name: &str| -> Result<Option<std::sync::Arc<StoredObject>>, String> {
        let Some(info) = registry.find("", "v1", plural) else { return Ok(None) };
        store.cache().get(info, ns, name).map_err(|e| e.message)
    };
    let account =
        live("serviceaccounts", &ns, &name)?.ok_or_else(|| format!("serviceaccounts {} not found", go_quote(&name)))?;
    if account.uid != uid {
        return Err(format!("service account UID ({}) does not match claim ({uid})", account.uid));
    }
    let mut extra = Map::new();
    let jti = claims.get("jti").and_then(Value::as_str).unwrap_or("");
    extra.insert("authentication.kubernetes.io/credential-id".into(), json!([format!("JTI={jti}")]));
    for (claim, plural, namespace) in
        [("pod", "pods", ns.as_str()), ("secret", "secrets", ns.as_str()), ("node", "nodes", "")]
    {
        let (bound_name, bound_uid) = (text(&format!("/{claim}/name")), text(&format!("/{claim}/uid")));
        if bound_name.is_empty() {
            continue;
        }
        let found = live(plural, namespace, &bound_name)?;
        // A node a pod ran on may go; the pod's token stays valid.
        if claim != "node" || k.get("pod").is_none() {
            let Some(found) = found.filter(|o| o.uid == bound_uid) else {
                return Err(format!("{claim} {} has been deleted or replaced", go_quote(&bound_name)));
            };
            // A pod being deleted keeps its tokens until a minute past its deletion time.
            let deleted_at = found
                .kept
                .iter()
                .find(|(k, _)| *k == "deletionTimestamp")
                .and_then(|(_, v)| v.as_str())
                .and_then(|t| t.parse::<jiff::Timestamp>().ok());
            if deleted_at.is_some_and(|t| t.as_second() < now_seconds() - 60) {
                return Err(format!("{claim} {ns}/{bound_name} has been deleted"));
            }
        }
        if claim != "secret" {
            extra.insert(format!("authentication.kubernetes.io/{claim}-name"), json!([bound_name]));
            extra.insert(format!("authentication.kubernetes.io/{claim}-uid"), json!([bound_uid]));
        }
    }
    let user = json!({
        "username": format!("system:serviceaccount:{ns}:{name}"),
        "uid": account.uid,
        "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{ns}"), "system:authenticated"],
        "extra": extra,
    });
    Ok(Some((user, matched)))
}

/// Answers a TokenReview: whether its token authenticates, as whom, for which audiences.
pub(crate) async fn review(store: &Store, signer: &TokenSigner, body: Value) -> Result<Value, ApiError> {
    let Value::Object(mut review) = body else {
        return Err(ApiError::bad_request("the object provided is unrecognized (must be of type TokenReview)"));
    };
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(ApiError::bad_request("token is required for TokenReview in authentication.k8s.io"));
    }
    let audiences = crate::object::strings(spec.get("audiences"));
    let status = match authenticate(store, signer, token, &audiences).await {
        Ok(Some((user, matched))) => json!({"authenticated": true, "user": user, "audiences": matched}),
        Ok(None) => json!({"user": {}, "error": "[invalid bearer token, token lookup failed]"}),
        Err(why) => json!({"user": {}, "error": format!("[invalid bearer token, {why}]")}),
    };
    let mut meta = review.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    for k in ["creationTimestamp", "uid", "resourceVersion", "namespace"] {
        meta.remove(k);
    }
    review.insert("kind".into(), "TokenReview".into());
    review.insert("apiVersion".into(), "authentication.k8s.io/v1".into());
    review.insert("metadata".into(), Value::Object(meta));
    review.insert("status".into(), status);
    Ok(Value::Object(review))
}
