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
//!   `serviceaccounts/token`; kubelet's projected tokens (bound to a pod, for the API server,
//!   3607 seconds) live a year and carry `warnafter`, as kube extends them;
//! - a token authenticates only while it is valid, while its service account (and the object it
//!   is bound to) still exists with the UID it names, and only for an audience it was issued
//!   for; it then authenticates as `system:serviceaccount:<namespace>:<name>` in the groups
//!   `system:serviceaccounts`, `system:serviceaccounts:<namespace>` and `system:authenticated`,
//!   with the token's id (and bound pod or node) as extra;
//! - tokens are never logged, and are not stored.

use std::sync::Arc;

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
    let creation = crate::pod_subresource::Creation {
        operation: "CREATE",
        info: &accounts,
        subresource: SUBRESOURCE,
        ns,
        name,
        dry_run,
    };
    creation.mutate(store, &mut req).await?;

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
    // The client's metadata (labels, annotations) with the account's name and namespace.
    let mut meta = req.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    for k in
        ["uid", "resourceVersion", "generation", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"]
    {
        meta.remove(k);
    }
    meta.insert("name".into(), name.into());
    meta.insert("namespace".into(), ns.into());
    meta.insert("creationTimestamp".into(), rfc3339(now).into());
    req.insert("metadata".into(), Value::Object(meta));
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
    creation.validate(store, &req).await?;

    let mut kubernetes = json!({"namespace": ns, "serviceaccount": {"name": name, "uid": account.uid}});
    if let Some(r) = &bound {
        bind_claims(store, ns, name, r, &mut kubernetes).await?;
    }
    // kubelet's projected tokens (bound to a pod, for the API server, an hour and seven seconds)
    // live a year, warning after their hour, as kube's `--service-account-extend-token-expiration`.
    let pod_bound = bound.as_ref().is_some_and(|r| r.get("kind").and_then(Value::as_str) == Some("Pod"));
    let lives = if pod_bound && seconds == WARN_ONLY_SECONDS && audiences == API_AUDIENCES {
        kubernetes["warnafter"] = (now + seconds).into();
        EXTENDED_SECONDS
    } else {
        seconds
    };
    let claims = json!({
        "aud": audiences, "exp": now + lives, "iat": now, "iss": ISSUER, "jti": crate::object::new_uid(),
        "kubernetes.io": kubernetes, "nbf": now, "sub": format!("system:serviceaccount:{ns}:{name}"),
    });
    let token = signer.sign(&claims).map_err(|e| ApiError::internal(&e))?;
    req.insert("status".into(), json!({"token": token, "expirationTimestamp": rfc3339(now + seconds)}));
    Ok(Value::Object(req))
}

/// The lifetime kubelet asks for its projected tokens, which kube extends.
const WARN_ONLY_SECONDS: i64 = 3607;
/// The lifetime kube gives them: a year.
const EXTENDED_SECONDS: i64 = 365 * 24 * 3600;

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
        ("v1" | "", "Pod") => ("pods", true, "pod"),
        ("v1" | "", "Secret") => ("secrets", true, "secret"),
        ("v1" | "", "Node") => ("nodes", false, "node"),
        _ => {
            let gvk = match crate::garbage_collector::parse_group_version(api_version) {
                Some((g, v)) if !g.is_empty() => format!("{g}/{v}, Kind={kind}"),
                Some((_, v)) => format!("/{v}, Kind={kind}"),
                None => format!("/, Kind={kind}"),
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
    // A pod on a node carries the node too (its UID when the node exists).
    if claim == "pod"
        && let Some(node) = object.value().pointer("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty())
    {
        let uid = match registry.find("", "v1", "nodes") {
            Some(nodes) => store.get(nodes, "", node).await.map(|n| n.uid.clone()).unwrap_or_default(),
            None => String::new(),
        };
        kubernetes["node"] = if uid.is_empty() { json!({"name": node}) } else { json!({"name": node, "uid": uid}) };
    }
    Ok(())
}

/// An object as the cache shows it, or the storage when the cache does not (yet).
async fn lookup(store: &Store, plural: &str, ns: &str, name: &str) -> Result<Option<Arc<StoredObject>>, String> {
    let registry = store.registry();
    let Some(info) = registry.find("", "v1", plural) else { return Ok(None) };
    if let Ok(Some(o)) = store.cache().get(info, ns, name) {
        return Ok(Some(o));
    }
    match store.stored(info, ns, name).await {
        Ok(o) => Ok(Some(o)),
        Err(e) if e.code == 404 => Ok(None),
        Err(e) => Err(e.message),
    }
}

/// Whether an object was deleted more than a minute ago (its tokens no longer valid).
fn deleted_long_ago(o: &StoredObject) -> bool {
    let deleted_at = o
        .kept
        .iter()
        .find(|(k, _)| *k == "deletionTimestamp")
        .and_then(|(_, v)| v.as_str())
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    deleted_at.is_some_and(|t| t.as_second() < now_seconds() - 60)
}

/// Go's `%q` of a list of strings (`["a" "b"]`).
fn go_list(items: &[String]) -> String {
    format!("[{}]", items.iter().map(|i| go_quote(i)).collect::<Vec<_>>().join(" "))
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
    // `aud` is a list or one string; a token without one is for the API server.
    let issued = match claims.get("aud") {
        Some(Value::String(a)) => vec![a.clone()],
        Some(Value::Array(_)) => crate::object::strings(claims.get("aud")),
        _ => API_AUDIENCES.map(str::to_string).to_vec(),
    };
    let matched: Vec<String> = issued.iter().filter(|a| wanted.contains(a)).cloned().collect();
    if matched.is_empty() {
        return Err(format!(
            "token audiences {} is invalid for the target audiences {}",
            go_list(&issued),
            go_list(&wanted)
        ));
    }
    let k = claims.get("kubernetes.io").cloned().unwrap_or(Value::Null);
    let text = |p: &str| k.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
    let (ns, name, uid) = (text("/namespace"), text("/serviceaccount/name"), text("/serviceaccount/uid"));
    const INVALIDATED: &str = "service account token has been invalidated";
    let account = lookup(store, "serviceaccounts", &ns, &name).await?.ok_or(INVALIDATED)?;
    if account.uid != uid {
        return Err(format!("service account UID ({}) does not match claim ({uid})", account.uid));
    }
    if deleted_long_ago(&account) {
        return Err(INVALIDATED.into());
    }
    let mut extra = Map::new();
    let jti = claims.get("jti").and_then(Value::as_str).unwrap_or("");
    if !jti.is_empty() {
        extra.insert("authentication.kubernetes.io/credential-id".into(), json!([format!("JTI={jti}")]));
    }
    let pod_bound = k.get("pod").is_some();
    for (claim, plural, namespace) in
        [("secret", "secrets", ns.as_str()), ("pod", "pods", ns.as_str()), ("node", "nodes", "")]
    {
        let (bound_name, bound_uid) = (text(&format!("/{claim}/name")), text(&format!("/{claim}/uid")));
        if bound_name.is_empty() {
            continue;
        }
        // The node a pod-bound token names is information, not a binding.
        if !(claim == "node" && pod_bound) {
            let found = lookup(store, plural, namespace, &bound_name).await?.ok_or(INVALIDATED)?;
            if found.uid != bound_uid {
                return Err(format!(
                    "{} UID ({}) does not match service account {claim} ref claim ({bound_uid})",
                    if claim == "pod" {
                        "Pod"
                    } else if claim == "node" {
                        "Node"
                    } else {
                        "Secret"
                    },
                    found.uid
                ));
            }
            if deleted_long_ago(&found) {
                return Err(INVALIDATED.into());
            }
        }
        if claim != "secret" {
            extra.insert(format!("authentication.kubernetes.io/{claim}-name"), json!([bound_name]));
            if !bound_uid.is_empty() {
                extra.insert(format!("authentication.kubernetes.io/{claim}-uid"), json!([bound_uid]));
            }
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

/// Answers a TokenReview: whether its token authenticates, as whom, for which audiences
/// (`server_token`: the token the server itself requires, which authenticates as its user).
pub(crate) async fn review(
    store: &Store,
    signer: &TokenSigner,
    server_token: Option<&str>,
    body: Value,
) -> Result<Value, ApiError> {
    let Value::Object(mut review) = body else {
        return Err(ApiError::bad_request("the object provided is unrecognized (must be of type TokenReview)"));
    };
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(ApiError::bad_request("token is required for TokenReview in authentication"));
    }
    let audiences = crate::object::strings(spec.get("audiences"));
    let status = match authenticate(store, signer, token, &audiences).await {
        Ok(None) if server_token == Some(token) => {
            json!({"authenticated": true, "user": crate::requester::server_user(), "audiences": audiences})
        }
        Ok(Some((user, matched))) => json!({"authenticated": true, "user": user, "audiences": matched}),
        // No authenticator recognizes it: not authenticated, no error.
        Ok(None) => json!({"user": {}}),
        Err(why) => json!({"user": {}, "error": why}),
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
