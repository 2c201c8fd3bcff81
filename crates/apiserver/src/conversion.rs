//! Custom resources converted between versions by their CustomResourceDefinition's conversion
//! webhook (`spec.conversion.strategy: Webhook`), as kube-apiserver converts them: one
//! `ConversionReview` per batch of objects (in the first of `conversionReviewVersions` the server
//! speaks, `v1` or `v1beta1`), the answer checked (its uid, its result, one object per object
//! sent, each of the version asked for, of the same kind, name, namespace and uid), the
//! original metadata restored except labels and annotations, then the fields the target
//! version's schema does not know pruned.
//!
//! Invariants: an object of such a resource is kept as it is stored (in the version it was
//! stored in, which is the storage version unless that changed since) in every view of the
//! watch cache and wherever a write starts from; it is converted when it leaves the server in
//! another version (GET, LIST, WATCH, the object a write starts from) and when a write of a
//! version other than the storage version is stored. An object already in the version asked
//! for is never sent. A conversion that fails fails the request with kube's 500 and kube's
//! words, and nothing is stored.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::custom_resource::go_type;
use crate::object::{self, StoredObject};
use crate::registry::{ConversionWebhook, ResourceInfo};
use crate::status::ApiError;
use crate::watch_cache::Event;

/// How long a conversion webhook has to answer (kube's fixed timeout).
const TIMEOUT: Duration = Duration::from_secs(30);

/// The webhook that converts the resource's objects between versions, if its
/// CustomResourceDefinition converts by webhook.
pub fn webhook_of(info: &ResourceInfo) -> Option<&Arc<ConversionWebhook>> {
    info.custom.as_ref()?.conversion_webhook.as_ref()
}

/// Whether `info` is the version the resource stores objects in.
pub fn is_storage_version(info: &ResourceInfo) -> bool {
    info.custom.as_ref().is_none_or(|c| c.storage_version == info.version)
}

/// The resource as `version` serves it (its `apiVersion`; the schema the resource knows for it:
/// `info`'s own or the storage version's, none for another).
pub fn version_info(info: &ResourceInfo, version: &str) -> ResourceInfo {
    let mut out = info.clone();
    if let Some(c) = &info.custom
        && version != info.version
    {
        out.version = version.to_string();
        let mut custom = (**c).clone();
        custom.schema = if version == c.storage_version { c.storage_schema.clone() } else { None };
        out.custom = Some(Arc::new(custom));
    }
    out
}

/// The resource as its storage version serves it.
pub fn storage_info(info: &ResourceInfo) -> ResourceInfo {
    match &info.custom {
        Some(c) => version_info(info, &c.storage_version.clone()),
        None => info.clone(),
    }
}

/// kube's `GroupVersionKind` as Go prints it.
fn gvk(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}, Kind={kind}")
}

/// Whether an object is not yet in `info`'s version.
fn needs_conversion(info: &ResourceInfo, o: &StoredObject) -> bool {
    webhook_of(info).is_some() && !o.is_of(info)
}

/// Objects (kept as stored) as `info`'s version serves them; `list` says whether they answer a
/// LIST (kube names the list's kind in its messages). Those already in the version are kept.
pub async fn to_served(
    info: &ResourceInfo,
    mut objs: Vec<Arc<StoredObject>>,
    list: bool,
) -> Result<Vec<Arc<StoredObject>>, ApiError> {
    let Some(webhook) = webhook_of(info) else { return Ok(objs) };
    let sent: Vec<usize> = (0..objs.len()).filter(|i| !objs[*i].is_of(info)).collect();
    if sent.is_empty() {
        return Ok(objs);
    }
    let custom = info.custom.as_ref().map(|c| c.as_ref());
    let maps: Vec<Map<String, Value>> = sent.iter().map(|i| without_rv(&objs[*i].json())).collect();
    let subject = if list {
        gvk(&info.group, &info.version, custom.map_or("", |c| c.list_kind.as_str()))
    } else {
        let api_version = maps[0].get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        gvk(group, version, &info.kind)
    };
    let converted = convert(info, webhook, maps, &subject, list).await.map_err(unknown_error)?;
    let schema = custom.and_then(|c| c.schema.clone());
    for (i, m) in sent.into_iter().zip(converted) {
        let mut v = Value::Object(m);
        if let Some(s) = &schema {
            crate::structural::prune(s, &mut v);
            crate::structural::drop_nulls(s, &mut v);
        }
        let m = match v {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        objs[i] = Arc::new(object::build(info, &m, objs[i].rv));
    }
    Ok(objs)
}

/// One object (kept as stored) as `info`'s version serves it.
pub async fn one_served(info: &ResourceInfo, obj: Arc<StoredObject>) -> Result<Arc<StoredObject>, ApiError> {
    if !needs_conversion(info, &obj) {
        return Ok(obj);
    }
    to_served(info, vec![obj], false).await?.pop().ok_or_else(|| ApiError::internal("no object converted"))
}

/// Watch events (their objects kept as stored) as `info`'s version serves them: the objects
/// and, when `with_prev`, the states they replaced. None when every one is in the version.
pub async fn events_served(
    info: &ResourceInfo,
    events: &[Arc<Event>],
    with_prev: bool,
) -> Result<Option<Vec<Arc<Event>>>, ApiError> {
    let mut objs = Vec::with_capacity(events.len());
    for ev in events {
        objs.push(ev.obj.clone());
        if with_prev && let Some(p) = &ev.prev {
            objs.push(p.clone());
        }
    }
    if !objs.iter().any(|o| needs_conversion(info, o)) {
        return Ok(None);
    }
    let mut converted = to_served(info, objs, false).await?.into_iter();
    let mut out = Vec::with_capacity(events.len());
    for ev in events {
        let obj = converted.next().ok_or_else(|| ApiError::internal("no object converted"))?;
        let prev = match &ev.prev {
            Some(_) if with_prev => converted.next(),
            _ => None,
        };
        out.push(Arc::new(Event::new(ev.rv, ev.kind, obj, prev)));
    }
    Ok(Some(out))
}

/// An object written in `info`'s version as its storage version stores it (None when no
/// webhook converts it: the object is stored as it is, under the storage `apiVersion`).
pub async fn to_storage(info: &ResourceInfo, obj: &Map<String, Value>) -> Result<Option<Map<String, Value>>, ApiError> {
    if webhook_of(info).is_none() || is_storage_version(info) {
        return Ok(None);
    }
    between(info, &storage_info(info), obj.clone()).await
}

/// An object of `from`'s version in `to`'s version of the same resource: through the webhook
/// when the resource converts by webhook, else as conversion `None` does (None when it is not an
/// object of the resource).
pub async fn between(
    from: &ResourceInfo,
    to: &ResourceInfo,
    mut obj: Map<String, Value>,
) -> Result<Option<Map<String, Value>>, ApiError> {
    let webhook = to.custom.as_ref().and_then(|c| c.conversion_webhook.as_ref());
    let Some(webhook) = webhook.filter(|_| from.version != to.version) else {
        return Ok(crate::custom_resource::to_version(to, obj));
    };
    obj.insert("apiVersion".into(), from.api_version().into());
    obj.insert("kind".into(), from.kind.clone().into());
    let subject = gvk(&from.group, &from.version, &from.kind);
    let mut converted = convert(to, webhook, vec![obj], &subject, false).await.map_err(unknown_error)?;
    let mut v = Value::Object(converted.pop().unwrap_or_default());
    if let Some(s) = to.custom.as_ref().and_then(|c| c.schema.as_ref()) {
        crate::structural::prune(s, &mut v);
        crate::structural::drop_nulls(s, &mut v);
    }
    Ok(match v {
        Value::Object(m) => Some(m),
        _ => None,
    })
}

/// A failure that is not a kube `Status`: kube-apiserver answers it as 500 with no reason.
fn unknown_error(message: String) -> ApiError {
    ApiError::new(500, "", message)
}

fn without_rv(bytes: &[u8]) -> Map<String, Value> {
    let mut m: Map<String, Value> = serde_json::from_slice(bytes).unwrap_or_default();
    if let Some(Value::Object(meta)) = m.get_mut("metadata") {
        meta.remove("resourceVersion");
    }
    m
}

/// Converts `objs` (all of one version) to `target`'s version through the webhook, checked as
/// kube checks the answer. `subject` is the GroupVersionKind kube's messages name.
async fn convert(
    target: &ResourceInfo,
    webhook: &ConversionWebhook,
    objs: Vec<Map<String, Value>>,
    subject: &str,
    list: bool,
) -> Result<Vec<Map<String, Value>>, String> {
    let desired = target.api_version();
    let fail = |e: String| format!("conversion for {subject} failed: {e}");
    // The webhook's own messages name the list it was given: a lone object's has no kind.
    let hook_subject = if list { subject.to_string() } else { gvk("", "", "") };
    let hook_fail = |e: String| fail(format!("conversion webhook for {hook_subject} failed: {e}"));
    let review_version = webhook
        .review_versions
        .iter()
        .find(|v| matches!(v.as_str(), "v1" | "v1beta1"))
        .ok_or_else(|| fail("no supported conversion review versions".into()))?;
    let uid = object::new_uid();
    let review = json!({
        "kind": "ConversionReview",
        "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objs},
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
    });
    let endpoint = crate::webhook_client::Endpoint::of(&webhook.client_config, TIMEOUT)
        .ok_or_else(|| hook_fail("no client configuration".into()))?;
    let answer = crate::webhook_client::post(&endpoint, serde_json::to_vec(&review).unwrap_or_default())
        .await
        .map_err(hook_fail)?;
    let converted = read_answer(&answer, review_version, &uid).map_err(hook_fail)?;
    if converted.len() != objs.len() {
        return Err(format!("conversion for {subject} returned {} objects, expected {}", converted.len(), objs.len()));
    }
    let (want_group, want_version) = desired.rsplit_once('/').unwrap_or(("", desired.as_str()));
    let mut out = Vec::with_capacity(objs.len());
    for (i, (original, converted)) in objs.iter().zip(converted).enumerate() {
        let at = i + 1;
        let invalid =
            |e: String| format!("conversion for {subject} returned invalid converted object at index {at}: {e}");
        let Value::Object(mut converted) = converted else {
            return Err(invalid("not an object".into()));
        };
        let text = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let got = text(&converted, "apiVersion");
        let (got_group, got_version) = got.rsplit_once('/').unwrap_or(("", got.as_str()));
        if (got_group, got_version) != (want_group, want_version) {
            return Err(invalid(format!("invalid groupVersion (expected {desired}, received {got})")));
        }
        let (kind, got_kind) = (text(original, "kind"), text(&converted, "kind"));
        if kind != got_kind {
            return Err(invalid(format!("invalid kind (expected {kind}, received {got_kind})")));
        }
        let meta_text = |m: &Map<String, Value>, k: &str| {
            m.get("metadata").and_then(|x| x.get(k)).and_then(Value::as_str).unwrap_or("").to_string()
        };
        for (field, word) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
            let (e, a) = (meta_text(original, field), meta_text(&converted, field));
            if e != a {
                return Err(invalid(format!("must have the same {word}: {e} != {a}")));
            }
        }
        restore_metadata(original, &mut converted)
            .map_err(|e| format!("conversion for {subject} returned invalid metadata in object at index {at}: {e}"))?;
        out.push(converted);
    }
    Ok(out)
}

/// The converted objects of a webhook's answer, checked as kube checks it.
fn read_answer(answer: &Value, review_version: &str, uid: &str) -> Result<Vec<Value>, String> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    if review_version == "v1" {
        let got = gvk(
            text(answer, "apiVersion").rsplit_once('/').map_or("", |(g, _)| g),
            text(answer, "apiVersion").rsplit_once('/').map_or(text(answer, "apiVersion").as_str(), |(_, v)| v),
            &text(answer, "kind"),
        );
        let want = gvk("apiextensions.k8s.io", "v1", "ConversionReview");
        if got != want {
            return Err(format!("expected webhook response of {want}, got {got}"));
        }
    }
    let response = match answer.get("response") {
        Some(r) if r.is_object() => r,
        _ => return Err("no response provided".into()),
    };
    if review_version == "v1" && text(response, "uid") != uid {
        return Err(format!("expected response.uid={uid:?}, got {:?}", text(response, "uid")));
    }
    let result = response.get("result").cloned().unwrap_or(Value::Null);
    let status = text(&result, "status");
    if status != "Success" {
        let message = text(&result, "message");
        return Err(if message.is_empty() {
            format!("response.result.status was '{status}', not 'Success'")
        } else {
            message
        });
    }
    Ok(response.get("convertedObjects").and_then(Value::as_array).cloned().unwrap_or_default())
}

/// The original's metadata in the converted object, but for labels and annotations, which the
/// webhook may change (validated when it did).
fn restore_metadata(original: &Map<String, Value>, converted: &mut Map<String, Value>) -> Result<(), String> {
    let had = original.get("metadata");
    let Some(got) = converted.get("metadata") else {
        return match had {
            None => Ok(()),
            Some(_) => Err("missing metadata in converted object".into()),
        };
    };
    let Value::Object(got) = got.clone() else {
        return Err(format!("invalid metadata of type {} in converted object", go_type(got)));
    };
    let mut meta = match had {
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!("invalid metadata of type {} in input object", go_type(other)));
        }
        None => Map::new(),
    };
    for field in ["labels", "annotations"] {
        let changed = match got.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!("invalid metadata.{field} of type {} in converted object", go_type(other)));
            }
        };
        let before = meta.get(field).and_then(Value::as_object);
        let mut differs = before.map_or(0, Map::len) != changed.len();
        for (k, v) in changed {
            let Some(s) = v.as_str() else {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            };
            differs |= before.and_then(|b| b.get(k)).and_then(Value::as_str) != Some(s);
        }
        if differs {
            let faults = metadata_faults(field, changed);
            match faults.len() {
                0 => {}
                1 => return Err(faults.into_iter().next().unwrap_or_default()),
                _ => return Err(format!("[{}]", faults.join(", "))),
            }
        }
        meta.insert(field.into(), Value::Object(changed.clone()));
    }
    converted.insert("metadata".into(), Value::Object(meta));
    Ok(())
}

/// kube's faults of changed labels (keys and values) or annotations (keys), in its words.
fn metadata_faults(field: &str, m: &Map<String, Value>) -> Vec<String> {
    // kube names the annotations' path in the singular here.
    let path = if field == "labels" { "metadata.labels" } else { "metadata.annotation" };
    let mut faults = Vec::new();
    for (k, v) in m {
        for f in crate::cel_format::qualified_name(k) {
            faults.push(format!("{path}: Invalid value: {k:?}: {f}"));
        }
        if field == "labels" {
            let v = v.as_str().unwrap_or("");
            for f in crate::cel_format::label_value(v) {
                faults.push(format!("{path}: Invalid value: {v:?}: {f}"));
            }
        }
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(labels: Value) -> Map<String, Value> {
        json!({"apiVersion": "x.example.com/v1", "kind": "Thing",
               "metadata": {"name": "a", "uid": "u", "labels": labels, "generation": 2}})
        .as_object()
        .cloned()
        .unwrap_or_default()
    }

    #[test]
    fn metadata_but_labels_and_annotations_is_restored() {
        let original = object(json!({"app": "a"}));
        let mut converted = object(json!({"app": "b"}));
        converted["metadata"]["generation"] = json!(7);
        converted["metadata"]["annotations"] = json!({"note": "added"});
        restore_metadata(&original, &mut converted).unwrap();
        assert_eq!(converted["metadata"]["generation"], 2);
        assert_eq!(converted["metadata"]["labels"], json!({"app": "b"}));
        assert_eq!(converted["metadata"]["annotations"], json!({"note": "added"}));
    }

    #[test]
    fn changed_labels_are_validated_in_kubes_words() {
        let original = object(json!({"app": "a"}));
        let mut converted = object(json!({"app": "not valid"}));
        let e = restore_metadata(&original, &mut converted).unwrap_err();
        assert!(e.starts_with("metadata.labels: Invalid value: \"not valid\": a valid label must be"), "{e}");
        let mut converted = object(json!({"app": 3}));
        let e = restore_metadata(&original, &mut converted).unwrap_err();
        assert_eq!(e, "metadata.labels[app] must be a string, but is int64 in converted object");
    }

    #[test]
    fn answers_are_checked_as_kube_checks_them() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                        "response": {"uid": "u1", "result": {"status": "Success"}, "convertedObjects": [{}]}});
        assert_eq!(read_answer(&ok, "v1", "u1").unwrap().len(), 1);
        assert_eq!(read_answer(&ok, "v1", "u2").unwrap_err(), "expected response.uid=\"u2\", got \"u1\"");
        let untyped = json!({"response": {"uid": "u1"}});
        assert_eq!(
            read_answer(&untyped, "v1", "u1").unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got /, Kind="
        );
        // v1beta1 answers are read without their type or uid checked.
        let failed = json!({"response": {"result": {"status": "Failure", "message": "cannot convert"}}});
        assert_eq!(read_answer(&failed, "v1beta1", "u1").unwrap_err(), "cannot convert");
        let bare = json!({"response": {"result": {"status": "Failure"}}});
        assert_eq!(
            read_answer(&bare, "v1beta1", "u1").unwrap_err(),
            "response.result.status was 'Failure', not 'Success'"
        );
        assert_eq!(read_answer(&json!({}), "v1beta1", "u1").unwrap_err(), "no response provided");
    }
}
