//! certificates.k8s.io/v1 CertificateSigningRequests, as kube-apiserver's registry keeps them:
//! a client asks for a certificate (`spec.request`, a PEM `CERTIFICATE REQUEST`) from a signer
//! (`spec.signerName`); an approver adds an `Approved` or `Denied` condition through the
//! `approval` subresource (`kubectl certificate approve|deny`); the signer writes
//! `status.certificate` through `status`.
//!
//! Invariants, as kube's CSR strategies and validation:
//! - on create, the requester's identity is the server's to fill (`spec.username`, `uid`,
//!   `groups`, `extra` from the user making the request, whatever the body said) and the status
//!   starts empty: nobody creates a pre-approved request;
//! - a write of the resource itself changes only metadata (spec and status stay); a `status`
//!   write changes the status but keeps the `Approved` and `Denied` conditions as they were
//!   (adding one is refused); an `approval` write changes only the conditions; conditions get
//!   `lastUpdateTime` and `lastTransitionTime` (kept from a condition of the same type and
//!   status) when they lack them;
//! - the request must be a PEM certificate request whose signature checks, for a signer named
//!   `domain/path`, with usages from kube's list, each once, for at least ten minutes; the
//!   conditions are typed, each type once, `Approved`/`Denied`/`Failed` are `True` and
//!   `Approved`/`Denied` exclusive, and none of those three is removed; a certificate is PEM
//!   certificates and never changed once set;
//! - a request to `kubernetes.io/kube-apiserver-client` for an organization `system:masters` is
//!   refused in every mode (kube's CertificateSubjectRestriction admission);
//! - under RBAC, approving or denying needs `approve`, and changing the certificate or the
//!   conditions through `status` needs `sign`, on the signer (`certificates.k8s.io` `signers`, named by the signer or its `domain/*`), as
//!   kube's CertificateApproval and CertificateSigning admission check.

use base64::Engine;
use serde_json::{Map, Value, json};
use x509_parser::prelude::FromDer;

use crate::cache::WatchCache;
use crate::policy_validation::{duplicate, invalid, required, unsupported};
use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::strategy::Target;
use crate::structural::Cause;

/// The API group.
pub(crate) const GROUP: &str = "certificates.k8s.io";
/// The approval subresource.
pub(crate) const APPROVAL: &str = "approval";

/// The key usages kube accepts.
const USAGES: &[&str] = &[
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
];

/// Whether `info` is certificates.k8s.io CertificateSigningRequests.
pub(crate) fn is_csrs(info: &ResourceInfo) -> bool {
    info.group == GROUP && info.plural == "certificatesigningrequests"
}

/// Fills a request being created as kube's `PrepareForCreate`: the requester's identity (its
/// status is emptied by [`crate::strategy::prepare_create`]).
pub(crate) fn prepare_create(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    if !is_csrs(info) {
        return;
    }
    let user = crate::requester::user_info();
    if !obj.get("spec").is_some_and(Value::is_object) {
        obj.insert("spec".into(), json!({}));
    }
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        for k in ["username", "uid", "groups", "extra"] {
            spec.remove(k);
        }
        for (from, to) in [("username", "username"), ("uid", "uid"), ("groups", "groups"), ("extra", "extra")] {
            if let Some(v) = user.get(from).filter(|v| !is_empty(v)) {
                spec.insert(to.into(), v.clone());
            }
        }
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn conditions(obj: &Value) -> Vec<Value> {
    obj.get("status").and_then(|s| s.get("conditions")).and_then(Value::as_array).cloned().unwrap_or_default()
}

fn kind_of(c: &Value) -> &str {
    c.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The object an update of a request through `target` stores (kube's CSR update strategies):
/// `merged` is what the generic strategy made of the write, `old` the stored request.
pub(crate) fn prepare_update(target: Target, old: &Value, mut merged: Map<String, Value>) -> Map<String, Value> {
    let spec = old.get("spec").cloned().unwrap_or(Value::Null);
    merged.insert("spec".into(), spec);
    let mut status = match target {
        // The resource itself: status as stored.
        Target::Main | Target::Finalize | Target::Binding | Target::EphemeralContainers | Target::Resize => {
            old.get("status").cloned().unwrap_or(json!({}))
        }
        // Only the conditions.
        Target::Approval => {
            let mut status = old.get("status").cloned().unwrap_or(json!({}));
            let asked = merged.get("status").and_then(|s| s.get("conditions")).cloned();
            if let Some(s) = status.as_object_mut() {
                match asked {
                    Some(c) if !c.is_null() => s.insert("conditions".into(), c),
                    _ => s.remove("conditions"),
                };
            }
            status
        }
        // The status, with the approval as it was: instances of `Approved` and `Denied` keep
        // their stored values in place when their number is unchanged (kube's
        // `preserveConditionInstances`); a different number is refused by `check_update`.
        Target::Status => {
            let mut status = merged.get("status").cloned().unwrap_or(json!({}));
            let before = conditions(old);
            if let Some(list) = status.get_mut("conditions").and_then(Value::as_array_mut) {
                for t in ["Approved", "Denied"] {
                    let olds: Vec<&Value> = before.iter().filter(|c| kind_of(c) == t).collect();
                    let news: Vec<usize> = (0..list.len()).filter(|i| kind_of(&list[*i]) == t).collect();
                    if olds.len() == news.len() {
                        for (i, o) in news.into_iter().zip(olds) {
                            list[i] = o.clone();
                        }
                    }
                }
            }
            status
        }
    };
    if target != Target::Main {
        stamp_conditions(&mut status, old);
    }
    merged.insert("status".into(), status);
    merged
}

/// kube's `populateConditionTimestamps`.
fn stamp_conditions(status: &mut Value, old: &Value) {
    let now = crate::object::now_rfc3339();
    let before = conditions(old);
    let Some(list) = status.get_mut("conditions").and_then(Value::as_array_mut) else { return };
    for c in list.iter_mut().filter_map(Value::as_object_mut) {
        if c.get("lastUpdateTime").is_none_or(Value::is_null) {
            c.insert("lastUpdateTime".into(), now.clone().into());
        }
        if c.get("lastTransitionTime").is_none_or(Value::is_null) {
            let same = before.iter().find(|o| {
                o.get("type") == c.get("type")
                    && o.get("status") == c.get("status")
                    && o.get("lastTransitionTime").is_some_and(|t| !t.is_null())
            });
            let at = same.and_then(|o| o.get("lastTransitionTime").cloned()).unwrap_or_else(|| now.clone().into());
            c.insert("lastTransitionTime".into(), at);
        }
    }
}

/// The causes for which kube refuses a request (written over `old`).
pub(crate) fn validate(
    info: &ResourceInfo,
    obj: &Map<String, Value>,
    old: Option<&crate::object::StoredObject>,
) -> Vec<Cause> {
    if !is_csrs(info) {
        return Vec::new();
    }
    let old = old.map(crate::object::StoredObject::value);
    let old = old.as_ref();
    let mut causes = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let request = text(&spec, "request");
    if let Err(why) = check_request(&request) {
        causes.push(invalid("spec.request".into(), &request, &why));
    }
    let usages: Vec<String> = crate::object::strings(spec.get("usages"));
    if usages.is_empty() {
        causes.push(required("spec.usages".into(), ""));
    }
    let mut sorted_usages = USAGES.to_vec();
    sorted_usages.sort_unstable();
    for (i, u) in usages.iter().enumerate() {
        if !USAGES.contains(&u.as_str()) {
            causes.push(unsupported(format!("spec.usages[{i}]"), u, &sorted_usages));
        }
    }
    for (i, u) in usages.iter().enumerate() {
        if usages[..i].contains(u) {
            causes.push(duplicate(format!("spec.usages[{i}]"), u));
        }
    }
    let signer = text(&spec, "signerName");
    if signer.is_empty() {
        causes.push(required("spec.signerName".into(), ""));
    } else {
        causes.extend(signer_causes(&signer));
    }
    if let Some(seconds) = spec.get("expirationSeconds").and_then(Value::as_i64)
        && seconds < 600
    {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {seconds}: may not specify a duration less than 600 seconds (10 minutes)"),
            field: "spec.expirationSeconds".into(),
        });
    }
    let whole = Value::Object(obj.clone());
    let list = conditions(&whole);
    let mut seen: Vec<&str> = Vec::new();
    let (mut approved, mut denied) = (false, false);
    for (i, c) in list.iter().enumerate() {
        let at = |f: &str| format!("status.conditions[{i}].{f}");
        let kind = kind_of(c);
        let status = text(c, "status");
        if kind.is_empty() {
            causes.push(required(at("type"), ""));
        }
        let allowed: &[&str] =
            if matches!(kind, "Approved" | "Denied" | "Failed") { &["True"] } else { &["False", "True", "Unknown"] };
        if status.is_empty() {
            causes.push(required(at("status"), ""));
        } else if !allowed.contains(&status.as_str()) {
            causes.push(unsupported(at("status"), &status, allowed));
        }
        let exclusive = match kind {
            "Approved" => {
                approved = true;
                denied
            }
            "Denied" => {
                denied = true;
                approved
            }
            _ => false,
        };
        if exclusive {
            causes.push(invalid(
                "status.conditions".into(),
                kind,
                "Approved and Denied conditions are mutually exclusive",
            ));
        }
        if seen.contains(&kind) {
            causes.push(duplicate(at("type"), kind));
        }
        seen.push(kind);
    }
    let certificate = whole.pointer("/status/certificate").and_then(Value::as_str).unwrap_or("").to_string();
    let before = old.and_then(|o| o.pointer("/status/certificate")).and_then(Value::as_str).unwrap_or("");
    // A certificate left as it was is not judged again.
    if !certificate.is_empty()
        && (old.is_none() || before != certificate)
        && let Err(why) = check_certificates(&certificate)
    {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: \"<certificate data>\": {why}"),
            field: "status.certificate".into(),
        });
    }
    if let Some(old) = old {
        for t in ["Approved", "Denied", "Failed"] {
            let count = |v: &Value| conditions(v).iter().filter(|c| kind_of(c) == t).count();
            if count(&whole) < count(old) {
                causes.push(Cause {
                    reason: "FieldValueForbidden",
                    message: format!(
                        "Forbidden: updates may not remove a condition of type {}",
                        crate::structural::go_quote(t)
                    ),
                    field: "status.conditions".into(),
                });
            }
        }
        if !before.is_empty() && before != certificate {
            causes.push(Cause {
                reason: "FieldValueForbidden",
                message: "Forbidden: updates may not modify existing certificate content".into(),
                field: "status.certificate".into(),
            });
        }
    }
    causes
}

/// The bytes of a base64 field (line breaks skipped, as Go's decoder skips them).
fn decode(b64: &str) -> Result<Vec<u8>, String> {
    let clean: String = b64.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
    base64::engine::general_purpose::STANDARD.decode(clean).map_err(|e| e.to_string())
}

/// Why kube would refuse the base64 `request` (a PEM certificate request whose signature checks).
fn check_request(request: &str) -> Result<(), String> {
    let pem = decode(request)?;
    let block = pem_block(&pem, "CERTIFICATE REQUEST").ok_or("PEM block type must be CERTIFICATE REQUEST")?;
    let (_, csr) = x509_parser::certification_request::X509CertificationRequest::from_der(&block)
        .map_err(|e| format!("x509: {e}"))?;
    csr.verify_signature().map_err(|e| format!("x509: {e}"))
}

/// Why kube would refuse the base64 `certificate` (PEM certificates, one at least).
fn check_certificates(certificate: &str) -> Result<(), String> {
    let pem = decode(certificate)?;
    let blocks = pem_blocks(&pem);
    if blocks.is_empty() {
        return Err("must contain at least one CERTIFICATE PEM block".into());
    }
    for (label, der) in blocks {
        if label != "CERTIFICATE" {
            return Err(format!("only CERTIFICATE PEM blocks are allowed, found {label:?}"));
        }
        x509_parser::parse_x509_certificate(&der).map_err(|e| format!("x509: {e}"))?;
    }
    Ok(())
}

/// The PEM blocks of `pem` (label, DER).
fn pem_blocks(pem: &[u8]) -> Vec<(String, Vec<u8>)> {
    let text = String::from_utf8_lossy(pem);
    let mut out = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        let Some(label) = line.strip_prefix("-----BEGIN ").and_then(|l| l.strip_suffix("-----")) else { continue };
        let end = format!("-----END {label}-----");
        let body: String = lines.by_ref().take_while(|l| *l != end).collect();
        if let Ok(der) = base64::engine::general_purpose::STANDARD.decode(body) {
            out.push((label.to_string(), der));
        }
    }
    out
}

fn pem_block(pem: &[u8], label: &str) -> Option<Vec<u8>> {
    pem_blocks(pem).into_iter().next().filter(|(l, _)| l == label).map(|(_, der)| der)
}

/// The signer of client certificates for the API server, which may not name `system:masters`.
const API_SERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

/// Refuses a new request that asks the API server's client signer for a `system:masters`
/// certificate (kube's CertificateSubjectRestriction admission, in every mode, after validation).
pub(crate) fn check_create(info: &ResourceInfo, obj: &Map<String, Value>) -> Result<(), ApiError> {
    if !is_csrs(info) {
        return Ok(());
    }
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if spec.get("signerName").and_then(Value::as_str) != Some(API_SERVER_CLIENT_SIGNER) {
        return Ok(());
    }
    let request = spec.get("request").and_then(Value::as_str).unwrap_or("");
    let Some(der) = decode(request).ok().and_then(|pem| pem_block(&pem, "CERTIFICATE REQUEST")) else { return Ok(()) };
    let Ok((_, csr)) = x509_parser::certification_request::X509CertificationRequest::from_der(&der) else {
        return Ok(());
    };
    let masters = csr
        .certification_request_info
        .subject
        .iter_organization()
        .any(|o| o.as_str().is_ok_and(|o| o == crate::authorizer::PRIVILEGED_GROUP));
    if !masters {
        return Ok(());
    }
    let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
    Err(ApiError::forbidden(
        GROUP,
        &info.plural,
        name,
        &format!("use of {API_SERVER_CLIENT_SIGNER} signer with system:masters group is not allowed"),
    ))
}

/// What is wrong with a signer name (kube's `ValidateSignerName`): one `/` between a domain of
/// at least two DNS labels and a path of DNS subdomains separated by dots; kube's legacy signer
/// is refused by this API version.
fn signer_causes(signer: &str) -> Vec<Cause> {
    let field = || "spec.signerName".to_string();
    if signer == "kubernetes.io/legacy-unknown" {
        return vec![invalid(field(), signer, "the legacy signerName is not allowed via this API version")];
    }
    let segments: Vec<&str> = signer.split('/').collect();
    let [domain, path] = segments[..] else {
        return vec![invalid(
            field(),
            signer,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )];
    };
    let mut causes = Vec::new();
    let labels: Vec<&str> = domain.split('.').collect();
    if let Some((label, faults)) =
        labels.iter().map(|l| (l, crate::cel_format::dns1123_label(l))).find(|(_, f)| !f.is_empty())
    {
        for fault in faults {
            causes.push(invalid(
                field(),
                domain,
                &format!("validating label {}: {fault}", crate::structural::go_quote(label)),
            ));
        }
    }
    if labels.len() < 2 {
        causes.push(invalid(field(), domain, "should be a domain with at least two segments separated by dots"));
    }
    for label in path.split('.') {
        for fault in crate::cel_format::dns1123_subdomain(label) {
            causes.push(invalid(
                field(),
                path,
                &format!("validating label {}: {fault}", crate::structural::go_quote(label)),
            ));
        }
    }
    causes
}

/// Refuses what an update of a request through `target` may not do (kube's update validation:
/// only the approval adds `Approved` or `Denied`), then, under RBAC, an approval or a
/// certificate the requester may not give (kube's CertificateApproval and CertificateSigning
/// admission, after validation).
pub(crate) fn check_update(
    cache: &WatchCache,
    info: &ResourceInfo,
    target: Target,
    obj: &Map<String, Value>,
    old: &crate::object::StoredObject,
) -> Result<(), ApiError> {
    if !is_csrs(info) {
        return Ok(());
    }
    let old = old.value();
    let whole = Value::Object(obj.clone());
    if target != Target::Approval {
        let mut causes = Vec::new();
        for t in ["Approved", "Denied"] {
            let count = |v: &Value| conditions(v).iter().filter(|c| kind_of(c) == t).count();
            if count(&whole) > count(&old) {
                causes.push(Cause {
                    reason: "FieldValueForbidden",
                    message: format!(
                        "Forbidden: updates may not add a condition of type {}",
                        crate::structural::go_quote(t)
                    ),
                    field: "status.conditions".into(),
                });
            }
        }
        if !causes.is_empty() {
            let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
            return Err(crate::custom_resource::invalid(info, name, &causes));
        }
    }
    admit(cache, info, target, &whole, &old)
}

/// Under RBAC, refuses an approval, or a new certificate or conditions through `status`, that
/// the requester may not give for the request's signer.
fn admit(cache: &WatchCache, info: &ResourceInfo, target: Target, new: &Value, old: &Value) -> Result<(), ApiError> {
    if cache.authorization() == crate::AuthorizationMode::AlwaysAllow {
        return Ok(());
    }
    let at = |v: &Value, p: &str| v.pointer(p).cloned();
    let verb = match target {
        Target::Approval => "approve",
        Target::Status
            if at(new, "/status/certificate") != at(old, "/status/certificate")
                || at(new, "/status/conditions") != at(old, "/status/conditions") =>
        {
            "sign"
        }
        _ => return Ok(()),
    };
    let user = crate::rbac::User::of(&crate::requester::user_info());
    let signer = old.pointer("/spec/signerName").and_then(Value::as_str).unwrap_or("");
    let domain_wildcard = signer.split_once('/').map(|(d, _)| format!("{d}/*")).unwrap_or_default();
    let allowed = [signer.to_string(), domain_wildcard].iter().any(|name| {
        let r = crate::request_info::RequestInfo {
            resource_request: true,
            verb: verb.into(),
            group: GROUP.into(),
            version: "*".into(),
            resource: "signers".into(),
            name: name.clone(),
            ..Default::default()
        };
        crate::authorizer::authorize(cache, cache.authorization(), &user, &r).allowed
    });
    if allowed {
        return Ok(());
    }
    let name = new.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    Err(ApiError::forbidden(
        GROUP,
        &info.plural,
        name,
        &format!("user not permitted to {verb} requests with signerName {}", crate::structural::go_quote(signer)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signer_names_are_validated_as_kube_validates_them() {
        assert!(signer_causes("example.com/my-signer").is_empty());
        assert!(signer_causes("kubernetes.io/kube-apiserver-client").is_empty());
        for bad in
            ["my-signer", "/x", "a.com/x/y", "localhost/x", "example.com/Foo_Bar", "kubernetes.io/legacy-unknown"]
        {
            assert!(!signer_causes(bad).is_empty(), "{bad}");
        }
        assert_eq!(
            signer_causes("localhost/x")[0].message,
            "Invalid value: \"localhost\": should be a domain with at least two segments separated by dots"
        );
    }

    #[test]
    fn approval_writes_change_only_conditions_and_status_writes_keep_the_approval() {
        let old = json!({"spec": {"signerName": "example.com/s"},
            "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "Yes", "lastTransitionTime": "2026-01-01T00:00:00Z", "lastUpdateTime": "2026-01-01T00:00:00Z"}]}});
        let asked = json!({"spec": {"signerName": "other.com/s"},
            "status": {"certificate": "Zm9v", "conditions": [{"type": "Approved", "status": "True", "reason": "Changed"}]}});
        let Value::Object(asked) = asked else { unreachable!() };
        let out = prepare_update(Target::Status, &old, asked.clone());
        assert_eq!(out["spec"]["signerName"], "example.com/s");
        assert_eq!(out["status"]["certificate"], "Zm9v");
        assert_eq!(out["status"]["conditions"][0]["reason"], "Yes", "the approval stays as it was");
        let out = prepare_update(Target::Approval, &old, asked);
        assert!(out["status"].get("certificate").is_none(), "an approval does not sign");
        assert_eq!(out["status"]["conditions"][0]["reason"], "Changed");
        let denied = json!({"status": {"conditions": [{"type": "Denied", "status": "True", "reason": "No"}]}});
        let Value::Object(denied) = denied else { unreachable!() };
        let out = prepare_update(Target::Approval, &old, denied);
        let c = &out["status"]["conditions"][0];
        assert_eq!((c["type"].as_str(), c["status"].as_str()), (Some("Denied"), Some("True")));
        assert!(c["lastUpdateTime"].is_string() && c["lastTransitionTime"].is_string());
    }
}
