//! Who makes the request being served, as admission webhooks (`userInfo`) and admission
//! policies (`request.userInfo`) see it: the server's one user (`system:admin` in
//! `system:masters`), or the user a request impersonates with kube's headers
//! (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`, `Impersonate-Extra-<key>`),
//! which kube-apiserver with `--authorization-mode=AlwaysAllow` lets every user do.
//!
//! Invariants: the user belongs to the request whose handling set it (a task-local scope, as
//! its options and warnings have); outside a request it is the server's user, or that of the
//! controller acting; impersonation is
//! resolved as kube resolves it (a service account's groups when none are given,
//! `system:authenticated` or `system:unauthenticated` added as kube adds them), and groups,
//! extras or a uid without a user are kube's 400. The server's garbage collector acts as its
//! service account (`system:serviceaccount:kube-system:generic-garbage-collector`), as
//! kube-controller-manager's does.

use std::future::Future;

use http::HeaderMap;
use serde_json::{Map, Value, json};

use crate::request_info::RequestInfo;
use crate::status::ApiError;

tokio::task_local! {
    static USER: Value;
}

/// The server's own user.
pub(crate) fn server_user() -> Value {
    json!({"username": "system:admin", "groups": ["system:masters", "system:authenticated"]})
}

/// The user of a request without credentials, as kube's anonymous authenticator names it.
pub(crate) fn anonymous() -> Value {
    json!({"username": ANONYMOUS, "groups": [UNAUTHENTICATED]})
}

/// A service account's user, as its token authenticates it.
pub(crate) fn service_account(namespace: &str, name: &str) -> Value {
    json!({
        "username": format!("system:serviceaccount:{namespace}:{name}"),
        "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{namespace}"), "system:authenticated"],
    })
}

/// Runs `f` as `user` (None: the server's user).
pub(crate) async fn scope<T>(user: Option<Value>, f: impl Future<Output = T>) -> T {
    USER.scope(user.unwrap_or_else(server_user), f).await
}

/// The `userInfo` of the request being served.
pub(crate) fn user_info() -> Value {
    USER.try_with(Value::clone).unwrap_or_else(|_| server_user())
}

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

const AUTHENTICATED: &str = "system:authenticated";
const UNAUTHENTICATED: &str = "system:unauthenticated";
const ANONYMOUS: &str = "system:anonymous";

/// Whether `header` (lower-case) is one of the impersonation headers.
pub(crate) fn is_impersonation(header: &str) -> bool {
    [USER_HEADER, GROUP_HEADER, UID_HEADER].contains(&header) || header.starts_with(EXTRA_PREFIX)
}

/// What a request asks to impersonate, read from its headers.
struct Asked {
    user: String,
    groups: Vec<String>,
    uid: String,
    extra: Vec<(String, Vec<String>)>,
}

fn asked(headers: &HeaderMap) -> Asked {
    // Go's clients send non-ASCII values as they are: read as UTF-8.
    let text = |v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let mut extra: Vec<(String, Vec<String>)> = Vec::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            let key = unescape(key);
            match extra.iter_mut().find(|(k, _)| *k == key) {
                Some((_, values)) => values.push(text(value)),
                None => extra.push((key, vec![text(value)])),
            }
        }
    }
    Asked {
        user: headers.get(USER_HEADER).map(text).unwrap_or_default(),
        groups: headers.get_all(GROUP_HEADER).iter().map(text).collect(),
        uid: headers.get(UID_HEADER).map(text).unwrap_or_default(),
        extra,
    }
}

/// The requests kube authorizes before it lets a user impersonate another, in its order (the
/// user or service account, each group, each extra value, the uid): verb `impersonate` on
/// `users`, `serviceaccounts` (in the account's namespace), `groups`, and authentication.k8s.io
/// `userextras` (the key as subresource) and `uids`, each named by the value asked for.
pub(crate) fn impersonation_requests(headers: &HeaderMap) -> Vec<RequestInfo> {
    let a = asked(headers);
    let request = |group: &str, resource: &str, name: &str| RequestInfo {
        resource_request: true,
        verb: "impersonate".into(),
        group: group.into(),
        version: "v1".into(),
        resource: resource.into(),
        name: name.into(),
        ..Default::default()
    };
    let mut out = Vec::new();
    if !a.user.is_empty() {
        match service_account_namespace(&a.user) {
            Some(ns) => {
                let name = a.user.rsplit(':').next().unwrap_or("");
                out.push(RequestInfo { namespace: ns.into(), ..request("", "serviceaccounts", name) });
            }
            None => out.push(request("", "users", &a.user)),
        }
    }
    out.extend(a.groups.iter().map(|g| request("", "groups", g)));
    for (key, values) in &a.extra {
        out.extend(
            values.iter().map(|v| RequestInfo { subresource: key.clone(), ..request(AUTHENTICATION, "userextras", v) }),
        );
    }
    if !a.uid.is_empty() {
        out.push(request(AUTHENTICATION, "uids", &a.uid));
    }
    out
}

const AUTHENTICATION: &str = "authentication.k8s.io";

/// The user a request impersonates (None when it impersonates no one).
pub(crate) fn impersonated(headers: &HeaderMap) -> Result<Option<Value>, ApiError> {
    let Asked { user: requested, groups, uid, extra } = asked(headers);
    if requested.is_empty() {
        if groups.is_empty() && extra.is_empty() && uid.is_empty() {
            return Ok(None);
        }
        // Go's `%v` of the requests kube would have checked.
        let mut asked: Vec<String> = groups.iter().map(|g| format!("{{Group  {g}    }}")).collect();
        for (key, values) in &extra {
            asked.extend(values.iter().map(|v| format!("{{UserExtra  {v}  authentication.k8s.io/v1  {key}}}")));
        }
        if !uid.is_empty() {
            asked.push(format!("{{UID  {uid}  authentication.k8s.io/v1  }}"));
        }
        return Err(ApiError::bad_request(format!("requested [{}] without impersonating a user", asked.join(" "))));
    }
    let mut all_groups = groups.clone();
    if groups.is_empty()
        && let Some(namespace) = service_account_namespace(&requested)
    {
        all_groups = vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{namespace}")];
    }
    if requested == ANONYMOUS {
        if !all_groups.iter().any(|g| g == UNAUTHENTICATED) {
            all_groups.push(UNAUTHENTICATED.into());
        }
    } else if !all_groups.iter().any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED) {
        all_groups.push(AUTHENTICATED.into());
    }
    let mut user = Map::new();
    user.insert("username".into(), requested.into());
    if !uid.is_empty() {
        user.insert("uid".into(), uid.into());
    }
    user.insert("groups".into(), all_groups.into());
    if !extra.is_empty() {
        user.insert("extra".into(), extra.into_iter().map(|(k, v)| (k, Value::from(v))).collect::<Map<_, _>>().into());
    }
    Ok(Some(Value::Object(user)))
}

/// The namespace of a service account's user name (`system:serviceaccount:<ns>:<name>`, both
/// parts valid names).
fn service_account_namespace(username: &str) -> Option<&str> {
    let rest = username.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    let valid =
        crate::cel_format::dns1123_label(namespace).is_empty() && crate::cel_format::dns1123_subdomain(name).is_empty();
    valid.then_some(namespace)
}

/// An extra's key as kube reads it from its header: lower case, `%`-escapes decoded.
fn unescape(key: &str) -> String {
    let key = key.to_ascii_lowercase();
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = key.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                // A malformed escape: kube keeps the key as it came.
                None => return key,
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn users_are_impersonated_as_kube_resolves_them() {
        assert_eq!(impersonated(&headers(&[])).unwrap(), None);
        let sa = impersonated(&headers(&[("Impersonate-User", "system:serviceaccount:ops:controller")])).unwrap();
        assert_eq!(
            sa,
            Some(json!({"username": "system:serviceaccount:ops:controller",
                        "groups": ["system:serviceaccounts", "system:serviceaccounts:ops", "system:authenticated"]}))
        );
        let jane = impersonated(&headers(&[
            ("Impersonate-User", "jane"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Uid", "u-1"),
            ("Impersonate-Extra-Scopes%2Fv1", "read"),
        ]))
        .unwrap();
        assert_eq!(
            jane,
            Some(json!({"username": "jane", "uid": "u-1", "groups": ["devs", "ops", "system:authenticated"],
                        "extra": {"scopes/v1": ["read"]}}))
        );
        let anonymous = impersonated(&headers(&[("Impersonate-User", "system:anonymous")])).unwrap();
        assert_eq!(anonymous.unwrap()["groups"], json!(["system:unauthenticated"]));
    }

    #[test]
    fn groups_without_a_user_are_refused_in_kubes_words() {
        let e = impersonated(&headers(&[("Impersonate-Group", "devs")])).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (400, "requested [{Group  devs    }] without impersonating a user"));
    }
}
