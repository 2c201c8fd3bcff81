//! Custom resources converted between versions by their CustomResourceDefinition's conversion
//! webhook (`spec.conversion.strategy: Webhook`), as kube-apiserver converts them: one object
//! per `ConversionReview` (in the first of `conversionReviewVersions` the server speaks, `v1` or
//! `v1beta1`), the answer checked (its uid, its result, a kind on what it returns, one object,
//! of the version asked for, of the same kind, name, namespace and uid), the original metadata
//! restored except labels and annotations, then the fields the target version's schema does not
//! know pruned.
//!
//! Invariants: an object of such a resource is kept as it is stored (in the version it was
//! stored in, which is the storage version unless that changed since) in every view of the
//! watch cache and wherever a write starts from; it is converted when it leaves the server in
//! another version (GET, LIST, WATCH, the object a write starts from) and when a write of a
//! version other than the storage version is stored. An object already in the version asked
//! for is never sent. A conversion that fails fails the request with kube's 500 and kube's
//! words, and nothing is stored.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

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

/// The resource as `version` serves it (its `apiVersion` and schema).
pub fn version_info(info: &ResourceInfo, version: &str) -> ResourceInfo {
    let mut out = info.clone();
    if let Some(c) = &info.custom
        && version != info.version
    {
        out.version = version.to_string();
        let mut custom = (**c).clone();
        custom.schema = c.version_schemas.get(version).cloned();
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

/// How many conversions of one read are in flight at once.
const IN_FLIGHT: usize = 8;

/// Objects (kept as stored) as `info`'s version serves them, each converted on its own as
/// kube-apiserver converts them (once per object, version and revision: a conversion made for
/// a LIST or a WATCH is kept in `memo` for the next). Those already in the version are kept.
pub async fn to_served(
    memo: &Conversions,
    info: &ResourceInfo,
    objs: Vec<Arc<StoredObject>>,
) -> Result<Vec<Arc<StoredObject>>, ApiError> {
    if webhook_of(info).is_none() || !objs.iter().any(|o| needs_conversion(info, o)) {
        return Ok(objs);
    }
    use futures_util::StreamExt;
    let source = Source::of(info);
    let source = &source;
    futures_util::stream::iter(objs.into_iter().map(|o| async move {
        if !needs_conversion(info, &o) {
            return Ok(o);
        }
        let key = source.as_ref().map(|s| Key { source: s.clone(), key: o.key.clone(), rv: o.rv });
        if let Some(hit) = key.as_ref().and_then(|k| memo.get(k)) {
            return Ok(hit);
        }
        let converted = served(info, &o).await?;
        if let Some(k) = key {
            memo.put(k, info, converted.clone());
        }
        Ok(converted)
    }))
    .buffered(IN_FLIGHT)
    .collect::<Vec<Result<_, ApiError>>>()
    .await
    .into_iter()
    .collect()
}

/// One object (kept as stored) as `info`'s version serves it, converted now (a GET reads the
/// storage and converts, as kube's does).
pub async fn one_served(info: &ResourceInfo, obj: Arc<StoredObject>) -> Result<Arc<StoredObject>, ApiError> {
    if !needs_conversion(info, &obj) {
        return Ok(obj);
    }
    served(info, &obj).await
}

/// Converts one stored object to `info`'s version: the webhook's answer pruned with the
/// version's schema.
async fn served(info: &ResourceInfo, o: &StoredObject) -> Result<Arc<StoredObject>, ApiError> {
    let Some(webhook) = webhook_of(info) else { return Err(ApiError::internal("no conversion webhook")) };
    let m = convert(info, webhook, without_rv(&o.json())).await.map_err(unknown_error)?;
    Ok(Arc::new(object::build(info, &pruned(info, m), o.rv)))
}

/// `m` without what `info`'s schema does not know, nor the nulls it does not allow.
fn pruned(info: &ResourceInfo, m: Map<String, Value>) -> Map<String, Value> {
    let Some(schema) = info.custom.as_ref().and_then(|c| c.schema.as_ref()) else { return m };
    let mut v = Value::Object(m);
    crate::structural::prune(schema, &mut v);
    crate::structural::drop_nulls(schema, &mut v);
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Watch events (their objects kept as stored) as `info`'s version serves them: the objects
/// and, when `with_prev`, the states they replaced. None when every one is in the version.
pub async fn events_served(
    memo: &Conversions,
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
    let mut converted = to_served(memo, info, objs).await?.into_iter();
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

/// What a write of `obj` in `info`'s version stores and answers when a webhook converts it:
/// the object in the storage version (pruned with its schema), and that object as `info`'s
/// version serves it (defaulted with the storage schema, converted back, pruned), as kube
/// answers a write with what it stored. None when the object is stored as it is.
pub async fn for_write(
    info: &ResourceInfo,
    obj: &Map<String, Value>,
) -> Result<Option<(Map<String, Value>, Map<String, Value>)>, ApiError> {
    let Some(webhook) = webhook_of(info).filter(|_| !is_storage_version(info)) else { return Ok(None) };
    let storage = storage_info(info);
    let mut sent = obj.clone();
    // What is stored carries no resourceVersion.
    if let Some(Value::Object(meta)) = sent.get_mut("metadata") {
        meta.remove("resourceVersion");
    }
    sent.insert("apiVersion".into(), info.api_version().into());
    sent.insert("kind".into(), info.kind.clone().into());
    let stored = pruned(&storage, convert(&storage, webhook, sent).await.map_err(unknown_error)?);
    let mut read = stored.clone();
    crate::custom_resource::default(&storage, &mut read);
    let answered = pruned(info, convert(info, webhook, read).await.map_err(unknown_error)?);
    Ok(Some((stored, answered)))
}

/// An object of `from`'s version in `to`'s version of the same resource, for an admission
/// webhook registered for `to`: through the conversion webhook when the resource converts by
/// webhook (not pruned: kube's converter alone), else as conversion `None` does: only the
/// `apiVersion` changes (None when it is not an object of the resource). A failed conversion is kube's internal error.
pub async fn for_admission(
    from: &ResourceInfo,
    to: &ResourceInfo,
    mut obj: Map<String, Value>,
) -> Result<Option<Map<String, Value>>, ApiError> {
    if from.version != to.version && crate::autoscaling_v1::is_v1(from) {
        return Ok(Some(crate::autoscaling_v1::to_v2(&obj)));
    }
    if from.version != to.version && crate::autoscaling_v1::is_v1(to) {
        return Ok(Some(crate::autoscaling_v1::from_v2(&obj)));
    }
    let Some(webhook) = webhook_of(to).filter(|_| from.version != to.version) else {
        return Ok(crate::custom_resource::converted_for_admission(to, obj));
    };
    obj.insert("apiVersion".into(), from.api_version().into());
    obj.insert("kind".into(), from.kind.clone().into());
    convert(to, webhook, obj).await.map(Some).map_err(|e| ApiError::internal(&e))
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

/// The body of a ConversionReview request, its keys in the order kube writes them.
fn review_body(review_version: &str, uid: &str, desired: &str, obj: &Map<String, Value>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/");
    out.extend_from_slice(review_version.as_bytes());
    out.extend_from_slice(b"\",\"request\":{\"uid\":");
    let _ = serde_json::to_writer(&mut out, uid);
    out.extend_from_slice(b",\"desiredAPIVersion\":");
    let _ = serde_json::to_writer(&mut out, desired);
    out.extend_from_slice(b",\"objects\":[");
    let _ = serde_json::to_writer(&mut out, obj);
    out.extend_from_slice(b"]},\"response\":{\"uid\":\"\",\"convertedObjects\":null,\"result\":{\"metadata\":{}}}}");
    out
}

/// Converts one object to `target`'s version through the webhook, checked as kube checks the
/// answer; the error is kube's message.
async fn convert(
    target: &ResourceInfo,
    webhook: &ConversionWebhook,
    obj: Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let desired = target.api_version();
    let text = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let api_version = text(&obj, "apiVersion");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version.as_str()));
    let subject = gvk(group, version, &text(&obj, "kind"));
    // As kube-apiserver 1.35's webhook converter words its faults (naming the object's own
    // version and kind).
    let hook_fail = |e: String| format!("conversion webhook for {subject} failed: {e}");
    let review_version = webhook
        .review_versions
        .iter()
        .find(|v| matches!(v.as_str(), "v1" | "v1beta1"))
        .ok_or_else(|| "no supported conversion review versions".to_string())?;
    let uid = object::new_uid();
    let endpoint = crate::webhook_client::Endpoint::of(&webhook.client_config, TIMEOUT)
        .ok_or_else(|| hook_fail("no client configuration".into()))?;
    let answer = crate::webhook_client::post(&endpoint, review_body(review_version, &uid, &desired, &obj))
        .await
        .map_err(hook_fail)?;
    let converted = read_answer(&answer, review_version, &uid).map_err(hook_fail)?;
    if converted.len() != 1 {
        return Err(format!("conversion webhook for {subject} returned {} objects, expected 1", converted.len()));
    }
    let mut converted = unstructured(converted)?.pop().unwrap_or_default();
    let at_index = |e: String| format!("conversion webhook for {subject} returned invalid object at index 0: {e}");
    let got = text(&converted, "apiVersion");
    if got != desired {
        return Err(at_index(format!("invalid groupVersion (expected {desired}, received {got})")));
    }
    let (kind, got_kind) = (text(&obj, "kind"), text(&converted, "kind"));
    if kind != got_kind {
        return Err(at_index(format!("invalid kind (expected {kind}, received {got_kind})")));
    }
    let meta_text = |m: &Map<String, Value>, k: &str| {
        m.get("metadata").and_then(|x| x.get(k)).and_then(Value::as_str).unwrap_or("").to_string()
    };
    for (field, word) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (e, a) = (meta_text(&obj, field), meta_text(&converted, field));
        if e != a {
            return Err(format!(
                "conversion webhook for {subject} returned invalid object: must have the same {word}: {e} != {a}"
            ));
        }
    }
    restore_metadata(&obj, &mut converted)
        .map_err(|e| format!("conversion webhook for {subject} returned invalid metadata: {e}"))?;
    Ok(converted)
}

/// The answered objects read as kube reads each into an unstructured object (a kind required).
fn unstructured(converted: Vec<Value>) -> Result<Vec<Map<String, Value>>, String> {
    let mut objects = Vec::with_capacity(converted.len());
    for c in converted {
        match c {
            Value::Object(m) if m.get("kind").and_then(Value::as_str).is_some_and(|k| !k.is_empty()) => objects.push(m),
            Value::Object(_) | Value::Null => return Err(format!("Object 'Kind' is missing in '{c}'")),
            other => {
                let ty = match other {
                    Value::String(_) => "string",
                    Value::Number(_) => "number",
                    Value::Bool(_) => "bool",
                    _ => "array",
                };
                return Err(format!("json: cannot unmarshal {ty} into Go value of type map[string]interface {{}}"));
            }
        }
    }
    Ok(objects)
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
    let mut total = 0;
    for (k, v) in m {
        // Annotation keys are judged in lower case.
        let judged = if field == "labels" { k.clone() } else { k.to_lowercase() };
        for f in crate::cel_format::qualified_name(&judged) {
            faults.push(format!("{path}: Invalid value: {k:?}: {f}"));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
        if field == "labels" {
            let v = v.as_str().unwrap_or("");
            for f in crate::cel_format::label_value(v) {
                faults.push(format!("{path}: Invalid value: {v:?}: {f}"));
            }
        }
    }
    if field == "annotations" && total > ANNOTATIONS_LIMIT {
        faults.push(format!("{path}: Too long: may not be more than {ANNOTATIONS_LIMIT} bytes"));
    }
    // An aggregate says each message once.
    let mut seen = std::collections::HashSet::new();
    faults.retain(|f| seen.insert(f.clone()));
    faults
}

/// kube's limit on the total size of an object's annotations.
const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// Conversions made for reads of one server's objects, reused while the object, the version
/// (and its schema) and the webhook's configuration are unchanged, as kube-apiserver's watch
/// cache of a version keeps what it converted. Bounded: emptied when full.
#[derive(Default)]
pub struct Conversions {
    done: parking_lot::Mutex<HashMap<Key, Converted>>,
}

/// A conversion and the schema it was pruned with, kept alive so that its address, part of the
/// key, is not reused.
type Converted = (Arc<StoredObject>, Option<Arc<Value>>);

/// How many conversions [`Conversions`] keeps.
const CONVERSIONS_KEPT: usize = 50_000;

impl Conversions {
    fn get(&self, k: &Key) -> Option<Arc<StoredObject>> {
        self.done.lock().get(k).map(|(o, _)| o.clone())
    }

    fn put(&self, k: Key, info: &ResourceInfo, v: Arc<StoredObject>) {
        let schema = info.custom.as_ref().and_then(|c| c.schema.clone());
        let mut done = self.done.lock();
        if done.len() >= CONVERSIONS_KEPT {
            done.clear();
        }
        done.insert(k, (v, schema));
    }
}

/// What a read converts to: the resource, the version and its schema, the webhook's
/// configuration. Worked out once per read.
#[derive(PartialEq, Eq, Hash)]
struct Source {
    resource: String,
    version: String,
    schema: usize,
    webhook: u64,
}

impl Source {
    fn of(info: &ResourceInfo) -> Option<Arc<Source>> {
        use std::hash::{Hash, Hasher};
        let custom = info.custom.as_ref()?;
        let webhook = custom.conversion_webhook.as_ref()?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        webhook.client_config.to_string().hash(&mut h);
        webhook.review_versions.hash(&mut h);
        Some(Arc::new(Source {
            resource: custom.crd_name.clone(),
            version: info.version.clone(),
            schema: custom.schema.as_ref().map_or(0, |s| Arc::as_ptr(s) as usize),
            webhook: h.finish(),
        }))
    }
}

/// A conversion: what it converts to, the object and its revision.
#[derive(PartialEq, Eq, Hash)]
struct Key {
    source: Arc<Source>,
    key: String,
    rv: u64,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
    fn annotations_are_judged_in_lower_case_and_by_their_total_size() {
        let original = object(json!({}));
        let mut converted = object(json!({}));
        converted["metadata"]["annotations"] = json!({"Example.com/Note": "x"});
        restore_metadata(&original, &mut converted).unwrap();
        converted["metadata"]["annotations"] = json!({"big": "x".repeat(ANNOTATIONS_LIMIT)});
        let e = restore_metadata(&original, &mut converted).unwrap_err();
        assert_eq!(e, "metadata.annotation: Too long: may not be more than 262144 bytes");
    }

    #[test]
    fn answered_objects_need_a_kind() {
        assert_eq!(unstructured(vec![json!({"kind": "Thing"})]).unwrap().len(), 1);
        assert_eq!(
            unstructured(vec![json!({"apiVersion": "v1"})]).unwrap_err(),
            r#"Object 'Kind' is missing in '{"apiVersion":"v1"}'"#
        );
        assert_eq!(
            unstructured(vec![json!("x")]).unwrap_err(),
            "json: cannot unmarshal string into Go value of type map[string]interface {}"
        );
    }

    #[test]
    fn reviews_are_written_in_kubes_key_order() {
        let obj = object(json!({}));
        let body = String::from_utf8(review_body("v1", "u", "x.example.com/v2", &obj)).unwrap();
        assert!(body.starts_with(r#"{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"u","desiredAPIVersion":"x.example.com/v2","objects":[{"#), "{body}");
        assert!(
            body.ends_with(r#"}]},"response":{"uid":"","convertedObjects":null,"result":{"metadata":{}}}}"#),
            "{body}"
        );
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["request"]["objects"][0]["metadata"]["name"], "a");
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
