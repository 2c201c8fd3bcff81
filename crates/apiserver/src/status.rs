//! metav1 `Status` error bodies, built exactly like kube-apiserver's.
//!
//! [`ApiError`] is the one error type of the crate: every failure that reaches
//! a client is an `ApiError`, rendered as a `Status` JSON object whose field
//! order (`kind, apiVersion, metadata, status, message, reason, details, code`)
//! matches the real server.

use serde_json::{Map, Value, json};

/// A failed API request: HTTP code, machine reason and human message, plus
/// optional `details` / `metadata.continue` exactly as they appear in `Status`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code (also `Status.code`).
    pub code: u16,
    /// `Status.reason`, e.g. `NotFound`.
    pub reason: String,
    /// `Status.message`.
    pub message: String,
    /// `Status.details` if any.
    pub details: Option<Box<Value>>,
    /// `Status.metadata.continue` (only for the expired-continue 410).
    pub continue_token: Option<String>,
    /// `Retry-After` header value in seconds, if any.
    pub retry_after: Option<u64>,
}

fn details(group: &str, kind: &str, name: &str) -> Value {
    let mut m = Map::new();
    if !name.is_empty() {
        m.insert("name".into(), name.into());
    }
    if !group.is_empty() {
        m.insert("group".into(), group.into());
    }
    m.insert("kind".into(), kind.into());
    Value::Object(m)
}

/// A resource with its group (`deployments.apps`), as Status messages name it.
pub fn qualified_resource(group: &str, resource: &str) -> String {
    qualified(group, resource)
}

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") }
}

/// What kube-apiserver's panic recovery filter answers a request its handler panicked on.
pub(crate) const PANICKED: &str = "This request caused apiserver to panic. Look in the logs for details.";

impl ApiError {
    /// A plain error without details.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: None,
            continue_token: None,
            retry_after: None,
        }
    }

    /// 404 `<resource> "<name>" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let mut e = Self::new(404, "NotFound", format!("{} \"{name}\" not found", qualified(group, resource)));
        e.details = Some(Box::new(details(group, resource, name)));
        e
    }

    /// 404 for an unknown path or resource.
    pub fn no_route() -> Self {
        let mut e = Self::new(404, "NotFound", "the server could not find the requested resource");
        e.details = Some(Box::new(json!({})));
        e
    }

    /// 409 `<resource> "<name>" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let mut e =
            Self::new(409, "AlreadyExists", format!("{} \"{name}\" already exists", qualified(group, resource)));
        e.details = Some(Box::new(details(group, resource, name)));
        e
    }

    /// 409 Conflict on a resourceVersion precondition mismatch.
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        let mut e = Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                qualified(group, resource)
            ),
        );
        e.details = Some(Box::new(details(group, resource, name)));
        e
    }

    /// 409 for a write whose precondition (`what`: `UID` or `ResourceVersion`) the stored object
    /// at `key` does not meet, in the words of kube's storage, which judges it.
    pub(crate) fn precondition_failed(
        group: &str,
        resource: &str,
        name: &str,
        key: &str,
        (what, wanted, found): (&str, &str, &str),
    ) -> Self {
        let mut e = Self::conflict(group, resource, name);
        e.message = format!(
            "Operation cannot be fulfilled on {} {}: StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: {what} in precondition: {wanted}, {what} in object meta: {found}",
            qualified(group, resource),
            crate::structural::go_quote(name)
        );
        e
    }

    /// 403 Forbidden for an object: `<resource> "<name>" is forbidden: <why>` (`forbidden: <why>`
    /// without a name), as an admission plugin refuses a request.
    pub fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let message = if resource.is_empty() {
            format!("forbidden: {why}")
        } else if name.is_empty() {
            format!("{} is forbidden: {why}", qualified(group, resource))
        } else {
            format!("{} \"{name}\" is forbidden: {why}", qualified(group, resource))
        };
        let mut e = Self::new(403, "Forbidden", message);
        e.details = Some(Box::new(details(group, resource, name)));
        e
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 422 Invalid for an object: `Kind[.group] "name" is invalid: field: Reason: detail`.
    pub fn invalid_object(
        group: &str,
        kind: &str,
        name: &str,
        field: &str,
        cause_reason: &str,
        cause_message: &str,
    ) -> Self {
        let qualified_kind = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
        let mut e =
            Self::new(422, "Invalid", format!("{qualified_kind} \"{name}\" is invalid: {field}: {cause_message}"));
        let mut d = Map::new();
        d.insert("name".into(), name.into());
        if !group.is_empty() {
            d.insert("group".into(), group.into());
        }
        d.insert("kind".into(), kind.into());
        d.insert("causes".into(), json!([{"reason": cause_reason, "message": cause_message, "field": field}]));
        if name.is_empty() {
            d.remove("name");
        }
        e.details = Some(Box::new(Value::Object(d)));
        e
    }

    /// 422 Invalid for ListOptions (`ListOptions.meta.k8s.io "" is invalid: ...`).
    pub fn invalid_list_options(field: &str, cause_reason: &str, cause_message: &str) -> Self {
        let mut e =
            Self::new(422, "Invalid", format!("ListOptions.meta.k8s.io \"\" is invalid: {field}: {cause_message}"));
        e.details = Some(Box::new(json!({
            "group": "meta.k8s.io",
            "kind": "ListOptions",
            "causes": [{"reason": cause_reason, "message": cause_message, "field": field}],
        })));
        e
    }

    /// 410 Expired.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 504 for a resourceVersion newer than the server has.
    pub fn too_large_rv(requested: u64, current: u64) -> Self {
        let mut e =
            Self::new(504, "Timeout", format!("Timeout: Too large resource version: {requested}, current: {current}"));
        e.details = Some(Box::new(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        })));
        // kube's error writer sets the header from the details: client-go retries on it.
        e.retry_after = Some(1);
        e
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large_body(limit: usize) -> Self {
        Self::new(413, "RequestEntityTooLarge", format!("Request entity too large: limit is {limit}"))
    }

    /// 429 TooManyRequests with Retry-After.
    pub fn too_many_requests(retry_after: u64) -> Self {
        let mut e = Self::new(429, "TooManyRequests", "Too many requests, please try again later.");
        e.details = Some(Box::new(json!({"retryAfterSeconds": retry_after})));
        e.retry_after = Some(retry_after);
        e
    }

    /// 429 while the watch cache (re)initializes, as kube-apiserver answers with its resilient
    /// watch cache initialization: "storage is (re)initializing", Retry-After 1.
    pub fn storage_initializing() -> Self {
        let mut e = Self::new(429, "TooManyRequests", "storage is (re)initializing");
        e.details = Some(Box::new(json!({"retryAfterSeconds": 1})));
        e.retry_after = Some(1);
        e
    }

    /// 504 for an operation the storage could not complete in time (unreachable etcd): kube's
    /// ServerTimeout message, with a Retry-After of 2 s.
    pub fn storage_timeout(group: &str, resource: &str, operation: &str) -> Self {
        let qualified = if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") };
        let mut e = Self::new(
            504,
            "Timeout",
            format!(
                "The {operation} operation against {qualified} could not be completed at this time, please try again."
            ),
        );
        let mut d = details(group, resource, operation);
        if let Value::Object(m) = &mut d {
            m.insert("retryAfterSeconds".into(), 2.into());
        }
        e.details = Some(Box::new(d));
        e.retry_after = Some(2);
        e
    }

    /// 500 InternalError.
    pub fn internal(cause: &str) -> Self {
        let mut e = Self::new(500, "InternalError", format!("Internal error occurred: {cause}"));
        e.details = Some(Box::new(json!({"causes": [{"message": cause}]})));
        e
    }

    /// kube-apiserver's answer to a request its handler panicked on (the panic recovery
    /// filter's 500, its words [`PANICKED`]), as a Status.
    pub(crate) fn panicked() -> Self {
        Self::new(500, "", PANICKED)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        let mut e =
            Self::new(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
        e.details = Some(Box::new(json!({})));
        e
    }

    /// The `Status` object as a JSON value.
    pub fn to_status(&self) -> Value {
        serde_json::to_value(self.wire()).unwrap_or_default()
    }

    /// The `Status` object serialized compactly, fields in kube-apiserver's order (a JSON map
    /// would sort them).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.wire()).unwrap_or_default()
    }

    /// The `Status` as Go's `json.Marshal` writes a `metav1.Status` whose type is not set (what
    /// a connection's error channel carries): without `kind` and `apiVersion`, and with `&`,
    /// `<`, `>`, U+2028 and U+2029 escaped as Go escapes them (they occur only in strings).
    pub(crate) fn to_untyped_bytes(&self) -> Vec<u8> {
        let wire = StatusWire { kind: "", api_version: "", ..self.wire() };
        let text = serde_json::to_string(&wire).unwrap_or_default();
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            match c {
                '&' => out.push_str("\\u0026"),
                '<' => out.push_str("\\u003c"),
                '>' => out.push_str("\\u003e"),
                '\u{2028}' => out.push_str("\\u2028"),
                '\u{2029}' => out.push_str("\\u2029"),
                c => out.push(c),
            }
        }
        out.into_bytes()
    }

    fn wire(&self) -> StatusWire<'_> {
        StatusWire {
            kind: "Status",
            api_version: "v1",
            metadata: StatusMeta { cont: self.continue_token.as_deref() },
            status: "Failure",
            message: &self.message,
            reason: &self.reason,
            details: self.details.as_deref(),
            code: self.code,
        }
    }
}

/// A failure `Status` as written on the wire: a struct, so its fields keep kube-apiserver's order.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusWire<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    kind: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    api_version: &'a str,
    metadata: StatusMeta<'a>,
    status: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a Value>,
    code: u16,
}

#[derive(serde::Serialize)]
struct StatusMeta<'a> {
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    cont: Option<&'a str>,
}

/// A `Status` with `status: Success` (returned by some deletes).
pub fn success_status(group: &str, resource: &str, name: &str, uid: &str) -> Value {
    let mut d = details(group, resource, name);
    if let Value::Object(m) = &mut d {
        m.insert("uid".into(), uid.into());
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": d})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_keep_kube_field_order_and_match_the_value_form() {
        let e = ApiError::not_found("apps", "deployments", "web");
        let bytes = e.to_bytes();
        let text = std::str::from_utf8(&bytes).unwrap();
        let at = |k: &str| text.find(&format!("\"{k}\":")).unwrap_or_else(|| panic!("{k} missing in {text}"));
        let order = ["kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"].map(at);
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), e.to_status());
        let v = e.to_status();
        assert_eq!(
            (v["kind"].as_str(), v["apiVersion"].as_str(), v["status"].as_str()),
            (Some("Status"), Some("v1"), Some("Failure"))
        );
        assert_eq!((v["reason"].as_str(), v["code"].as_u64()), (Some("NotFound"), Some(404)));
        assert_eq!((v["details"]["name"].as_str(), v["details"]["group"].as_str()), (Some("web"), Some("apps")));
        assert_eq!(v["metadata"], serde_json::json!({}), "no continue key without a token");

        let mut gone = ApiError::expired("too old");
        gone.continue_token = Some("tok".into());
        let v: Value = serde_json::from_slice(&gone.to_bytes()).unwrap();
        assert_eq!(v, gone.to_status());
        assert_eq!(v["metadata"]["continue"], "tok");
        assert_eq!(v["code"], 410);
    }
}
