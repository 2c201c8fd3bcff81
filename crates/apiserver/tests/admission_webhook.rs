//! Admission webhooks over HTTPS, against a webhook written with kube-rs's admission types as
//! operator authors write them: the server sends each matching create, update and delete as an
//! `admission.k8s.io/v1` AdmissionReview (kind, resource, operation, name, namespace, object,
//! oldObject, options); a refusal is kube-apiserver's Status (`admission webhook "<name>" denied
//! the request: <message>`); a mutating webhook's JSON Patch lands before validation and
//! storage; warnings become `Warning` headers; a webhook that cannot be reached or verified
//! fails the request with kube's 500 under `failurePolicy: Fail` and is skipped under `Ignore`;
//! configurations are defaulted and checked as kube does; the oldest and newest kubectl report
//! a refusal.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use serde_json::{Value, json};

const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A webhook server as an operator runs one: `/validate` refuses objects labelled
/// `forbidden`, changes of a `locked` ConfigMap's data and deletes of objects labelled `keep`,
/// and warns on every object it allows; `/mutate` labels objects `mutated: "yes"`; `/hang`
/// never answers. Every review received is kept, with its path.
struct Webhook {
    addr: SocketAddr,
    ca_bundle: String,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
    /// The TLS connections the server opened to the webhook.
    connections: Arc<std::sync::atomic::AtomicUsize>,
}

impl Webhook {
    /// A webhook serving a certificate its own authority signed (`caBundle`), as envtest's are.
    async fn start() -> Webhook {
        let cert = informer_apiserver::testing::WebhookCertificate::for_hosts(&["127.0.0.1"]).unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(cert.server_config().unwrap());
        Webhook::serve(acceptor, cert.ca_bundle()).await
    }

    /// A webhook serving a self-signed authority certificate (`openssl req -x509`), which Go
    /// trusts when it is the `caBundle` itself.
    async fn start_self_signed() -> Webhook {
        let dir = tools::tempdir("webhook");
        let (cert, key) = tools::self_signed(&dir).await;
        let acceptor = informer_apiserver::tls::acceptor(&cert, &key).unwrap();
        let pem = std::fs::read(&cert).unwrap();
        Webhook::serve(acceptor, base64::Engine::encode(&base64::engine::general_purpose::STANDARD, pem)).await
    }

    async fn serve(acceptor: tokio_rustls::TlsAcceptor, ca_bundle: String) -> Webhook {
        Webhook::serve_with(acceptor, ca_bundle, true).await
    }

    /// A webhook that closes every connection after one answer.
    async fn start_closing() -> Webhook {
        let cert = informer_apiserver::testing::WebhookCertificate::for_hosts(&["127.0.0.1"]).unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(cert.server_config().unwrap());
        Webhook::serve_with(acceptor, cert.ca_bundle(), false).await
    }

    async fn serve_with(acceptor: tokio_rustls::TlsAcceptor, ca_bundle: String, keep_alive: bool) -> Webhook {
        let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let kept = seen.clone();
        let (addr, connections) = https::serve_with(acceptor, move |req| answer(req, kept.clone()), keep_alive).await;
        Webhook { addr, ca_bundle, seen, connections }
    }

    fn client_config(&self, path: &str) -> Value {
        json!({"url": format!("https://{}{path}", self.addr), "caBundle": self.ca_bundle})
    }

    /// The reviews received at `path`, in order.
    fn seen(&self, path: &str) -> Vec<Value> {
        self.seen.lock().unwrap().iter().filter(|(p, _)| p == path).map(|(_, r)| r.clone()).collect()
    }
}

async fn answer(
    req: hyper::Request<Incoming>,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let body = req.into_body().collect().await?.to_bytes();
    let raw: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    seen.lock().unwrap().push((path.clone(), json!({"query": query, "review": raw})));
    if path == "/hang" {
        std::future::pending::<()>().await;
    }
    if path == "/status" {
        // Sets the status of the object it is offered, which a main-resource update may not.
        let uid = raw["request"]["uid"].clone();
        let patch = br#"[{"op": "add", "path": "/status/observedGeneration", "value": 42}]"#;
        let patch = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, patch);
        let out = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                         "response": {"uid": uid, "allowed": true, "patch": patch, "patchType": "JSONPatch"}});
        return Ok(hyper::Response::new(Full::new(Bytes::from(out.to_string()))));
    }
    if path.starts_with("/allow") {
        // Allows whatever it is offered, read as JSON only.
        let uid = raw["request"]["uid"].clone();
        let out = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                         "response": {"uid": uid, "allowed": true}});
        return Ok(hyper::Response::new(Full::new(Bytes::from(out.to_string()))));
    }
    if path == "/beta" {
        // An admission.k8s.io/v1beta1 webhook's answer: no uid, apiVersion or patchType.
        let patch = br#"[{"op": "add", "path": "/metadata/labels", "value": {"beta": "yes"}}]"#;
        let patch = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, patch);
        let out = json!({"response": {"allowed": true, "patch": patch}}).to_string();
        return Ok(hyper::Response::new(Full::new(Bytes::from(out))));
    }
    let review: AdmissionReview<DynamicObject> = serde_json::from_slice(&body).expect("an AdmissionReview");
    let request: AdmissionRequest<DynamicObject> = review.try_into().expect("a v1 request");
    let response = match path.as_str() {
        "/mutate" => mutate(&request),
        "/copy" => copy_annotation(&request),
        "/annotate" => annotate(&request),
        "/cap" => cap_replicas(&request),
        "/sidecar" => add_sidecar(&request),
        _ => validate(&request),
    };
    let out = serde_json::to_vec(&response.into_review()).unwrap();
    Ok(hyper::Response::new(Full::new(Bytes::from(out))))
}

fn labels(o: Option<&DynamicObject>) -> std::collections::BTreeMap<String, String> {
    o.and_then(|o| o.metadata.labels.clone()).unwrap_or_default()
}

fn validate(request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let (object, old) = (request.object.as_ref(), request.old_object.as_ref());
    match request.operation {
        Operation::Create if labels(object).contains_key("forbidden") => {
            return response.deny("objects labelled forbidden are not admitted");
        }
        Operation::Update
            if labels(old).contains_key("locked")
                && object.map(|o| &o.data["data"]) != old.map(|o| &o.data["data"]) =>
        {
            return response.deny("the data of a locked ConfigMap cannot change");
        }
        Operation::Delete if labels(old).contains_key("keep") => return response.deny("this object is kept"),
        _ => {}
    }
    let mut response = response;
    response.warnings = Some(vec![format!("checked {}", request.name)]);
    response
}

/// Labels the object `mutated: yes` (and adds a field ConfigMaps do not have), and names one that
/// has neither a name nor a generateName.
fn mutate(request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let meta = request.object.as_ref().map(|o| &o.metadata);
    let has_labels = meta.is_some_and(|m| m.labels.is_some());
    let mut patch = if has_labels {
        json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}])
    } else {
        json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
    };
    // A field the type does not have, which the server drops as kube does.
    patch.as_array_mut().unwrap().push(json!({"op": "add", "path": "/notAField", "value": 1}));
    if meta.is_some_and(|m| m.name.is_none() && m.generate_name.is_none()) {
        patch.as_array_mut().unwrap().push(json!({"op": "add", "path": "/metadata/name", "value": "named-by-webhook"}));
    }
    response.with_patch(serde_json::from_value(patch).unwrap()).unwrap()
}

/// Labels the object `copied` with its annotation `a` (or `none`).
fn copy_annotation(request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let a = request.object.as_ref().and_then(|o| o.metadata.annotations.as_ref()).and_then(|m| m.get("a"));
    let patch = json!([{"op": "add", "path": "/metadata/labels/copied", "value": a.map_or("none", String::as_str)}]);
    AdmissionResponse::from(request).with_patch(serde_json::from_value(patch).unwrap()).unwrap()
}

/// Caps a Scale's replicas at 3; refuses more than 10.
fn cap_replicas(request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let replicas = request.object.as_ref().and_then(|o| o.data["spec"]["replicas"].as_i64()).unwrap_or(0);
    if replicas > 10 {
        return response.deny(format!("{replicas} replicas is too many"));
    }
    if replicas <= 3 {
        return response;
    }
    let patch = json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]);
    response.with_patch(serde_json::from_value(patch).unwrap()).unwrap()
}

/// Adds a container named `sidecar` to a pod.
fn add_sidecar(request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let patch = json!([{"op": "add", "path": "/spec/containers/-", "value": {"name": "sidecar", "image": "envoy"}}]);
    AdmissionResponse::from(request).with_patch(serde_json::from_value(patch).unwrap()).unwrap()
}

/// Annotates the object `a: "1"`.
fn annotate(request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let patch = json!([{"op": "add", "path": "/metadata/annotations", "value": {"a": "1"}}]);
    AdmissionResponse::from(request).with_patch(serde_json::from_value(patch).unwrap()).unwrap()
}

fn config(kind: &str, name: &str, webhooks: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
           "webhooks": webhooks})
}

fn configmaps_hook(name: &str, client_config: Value, operations: Value) -> Value {
    json!({"name": name, "clientConfig": client_config, "sideEffects": "None", "admissionReviewVersions": ["v1"],
           "rules": [{"operations": operations, "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]})
}

fn configmap(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
}

/// A consistent read of the configurations: from here on the server's cache, which admission
/// reads webhooks from, holds every write made before it.
async fn settled(c: &Client) {
    assert_eq!(c.get(VALIDATING).await.code, 200);
    assert_eq!(c.get(MUTATING).await.code, 200);
}

/// Registers `hook` for ConfigMap creates as the mutating webhook `labeller.example.com`
/// (`/mutate`) and the validating webhook `guard.example.com` (`/validate`), and waits until the
/// server's cache holds both.
async fn labeller_and_guard(c: &Client, hook: &Webhook) {
    let create = json!(["CREATE"]);
    let m = config(
        "MutatingWebhookConfiguration",
        "labeller",
        json!([configmaps_hook("labeller.example.com", hook.client_config("/mutate"), create.clone())]),
    );
    assert_eq!(c.post(MUTATING, &m).await.code, 201);
    let v = config(
        "ValidatingWebhookConfiguration",
        "guard",
        json!([configmaps_hook("guard.example.com", hook.client_config("/validate"), create)]),
    );
    assert_eq!(c.post(VALIDATING, &v).await.code, 201);
    settled(c).await;
}

fn warnings(r: &Resp) -> Vec<String> {
    r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn a_validating_webhook_judges_creates_updates_and_deletes_in_kube_words() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let all = json!(["CREATE", "UPDATE", "DELETE"]);
    let cfg = config(
        "ValidatingWebhookConfiguration",
        "guard",
        json!([configmaps_hook("guard.example.com", hook.client_config("/validate"), all)]),
    );
    assert_eq!(c.post(VALIDATING, &cfg).await.code, 201);
    settled(&c).await;

    let r = c.post(CONFIGMAPS, &configmap("fine", json!({"locked": "1"}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(warnings(&r), ["299 - \"checked fine\""]);
    let sent = &hook.seen("/validate")[0];
    assert_eq!(sent["query"], "timeout=10s");
    let review = &sent["review"];
    assert_eq!((&review["apiVersion"], &review["kind"]), (&json!("admission.k8s.io/v1"), &json!("AdmissionReview")));
    let request = &review["request"];
    assert_eq!(request["kind"], json!({"group": "", "version": "v1", "kind": "ConfigMap"}));
    assert_eq!(request["resource"], json!({"group": "", "version": "v1", "resource": "configmaps"}));
    assert_eq!(
        (&request["operation"], &request["name"], &request["namespace"]),
        (&json!("CREATE"), &json!("fine"), &json!("default"))
    );
    assert_eq!(request["object"]["metadata"]["name"], "fine");
    assert_eq!(request["object"]["kind"], "ConfigMap");
    assert_eq!(request["oldObject"], Value::Null);
    assert_eq!(request["options"], json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}));
    assert_eq!(request["dryRun"], false);
    assert!(!request["uid"].as_str().unwrap().is_empty());

    // Refused: nothing is stored, and the Status is kube's (a webhook's code 0 becomes 400).
    let r = c.post(CONFIGMAPS, &configmap("bad", json!({"forbidden": "yes"}))).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "admission webhook \"guard.example.com\" denied the request: objects labelled forbidden are not admitted"
    );
    assert_eq!(r.body["kind"], "Status");
    assert_eq!(c.get(&format!("{CONFIGMAPS}/bad")).await.code, 404);
    // A dry run is offered too (the webhook has no side effects) and refused alike.
    let r = c.post(&format!("{CONFIGMAPS}?dryRun=All"), &configmap("bad", json!({"forbidden": "yes"}))).await;
    assert_eq!(r.code, 400, "{}", r.body);
    let last = hook.seen("/validate").last().cloned().unwrap();
    assert_eq!(last["review"]["request"]["dryRun"], true);
    // The options are what the client sent, as kube passes them on.
    let query = "?dryRun=All&fieldManager=kubectl-create&fieldValidation=Strict";
    let r = c.post(&format!("{CONFIGMAPS}{query}"), &configmap("bad", json!({"forbidden": "yes"}))).await;
    assert_eq!(r.code, 400, "{}", r.body);
    let last = hook.seen("/validate").last().cloned().unwrap();
    assert_eq!(
        last["review"]["request"]["options"],
        json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"],
               "fieldManager": "kubectl-create", "fieldValidation": "Strict"})
    );

    // Updates carry the old object: the locked data cannot change, its labels can.
    let path = format!("{CONFIGMAPS}/fine");
    let before = hook.seen("/validate").len();
    let r = c.patch(&path, "application/merge-patch+json", &json!({"data": {"k": "changed"}})).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "admission webhook \"guard.example.com\" denied the request: the data of a locked ConfigMap cannot change"
    );
    // Refused on the version the storage holds: not asked again.
    assert_eq!(hook.seen("/validate").len(), before + 1);
    let update = hook.seen("/validate").last().cloned().unwrap();
    assert_eq!(update["review"]["request"]["operation"], "UPDATE");
    assert_eq!(update["review"]["request"]["oldObject"]["data"]["k"], "v");
    assert_eq!(
        update["review"]["request"]["object"]["metadata"]["resourceVersion"],
        update["review"]["request"]["oldObject"]["metadata"]["resourceVersion"],
        "an update's object carries the resourceVersion it replaces"
    );
    assert_eq!(update["review"]["request"]["options"]["kind"], "UpdateOptions");
    let r = c.patch(&path, "application/merge-patch+json", &json!({"metadata": {"labels": {"keep": "1"}}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&path).await.body["data"]["k"], "v");

    // Deletes are judged on the old object, once.
    let before = hook.seen("/validate").len();
    let r = c.delete(&path).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(hook.seen("/validate").len(), before + 1);
    assert_eq!(r.body["message"], "admission webhook \"guard.example.com\" denied the request: this object is kept");
    let delete = hook.seen("/validate").last().cloned().unwrap();
    assert_eq!(delete["review"]["request"]["operation"], "DELETE");
    assert_eq!(
        delete["review"]["request"]["options"],
        json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"})
    );
    let r = c.delete(&format!("{path}?propagationPolicy=Foreground&gracePeriodSeconds=0")).await;
    assert_eq!(r.code, 400, "{}", r.body);
    let delete = hook.seen("/validate").last().cloned().unwrap();
    assert_eq!(
        delete["review"]["request"]["options"],
        json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "propagationPolicy": "Foreground",
               "gracePeriodSeconds": 0})
    );
    assert_eq!(delete["review"]["request"]["object"], Value::Null);
    assert_eq!(delete["review"]["request"]["oldObject"]["metadata"]["labels"]["keep"], "1");
    assert_eq!(c.get(&path).await.code, 200);
    // A collection's deletion is offered item by item, as kube offers it: no name.
    let r = c.delete(CONFIGMAPS).await;
    assert_eq!(r.code, 400, "{}", r.body);
    let delete = hook.seen("/validate").last().cloned().unwrap();
    assert_eq!(delete["review"]["request"]["name"], Value::Null, "{}", delete["review"]["request"]);
    assert_eq!(delete["review"]["request"]["namespace"], "default");
    assert_eq!(delete["review"]["request"]["oldObject"]["metadata"]["name"], "fine");
    assert_eq!(c.get(&path).await.code, 200);

    // Other resources are not offered to it.
    let before = hook.seen("/validate").len();
    let r = c.post(PODS, &pod("p", json!({"forbidden": "yes"}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(hook.seen("/validate").len(), before);

    // As in kube, a request on a Namespace by name has that name as its namespace.
    let mut namespaces = configmaps_hook("namespaces.example.com", hook.client_config("/validate"), json!(["UPDATE"]));
    namespaces["rules"][0]["resources"] = json!(["namespaces"]);
    let cfg = config("ValidatingWebhookConfiguration", "namespaces", json!([namespaces]));
    assert_eq!(c.post(VALIDATING, &cfg).await.code, 201);
    settled(&c).await;
    let patch = json!({"metadata": {"labels": {"team": "a"}}});
    let r = c.patch("/api/v1/namespaces/default", "application/merge-patch+json", &patch).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let update = hook.seen("/validate").last().cloned().unwrap();
    assert_eq!(update["review"]["request"]["resource"]["resource"], "namespaces");
    assert_eq!(
        (&update["review"]["request"]["name"], &update["review"]["request"]["namespace"]),
        (&json!("default"), &json!("default"))
    );
}

/// Installs `hook`'s `/validate` as the validating webhook `name` of ConfigMap creates, then
/// creates `count` ConfigMaps (`<name>-<i>`) one after another through it.
async fn create_through(c: &Client, hook: &Webhook, name: &str, count: usize) {
    let hooks =
        json!([configmaps_hook(&format!("{name}.example.com"), hook.client_config("/validate"), json!(["CREATE"]))]);
    assert_eq!(c.post(VALIDATING, &config("ValidatingWebhookConfiguration", name, hooks)).await.code, 201);
    settled(c).await;
    for i in 0..count {
        let r = c.post(CONFIGMAPS, &configmap(&format!("{name}-{i}"), json!({}))).await;
        assert_eq!(r.code, 201, "{}", r.body);
    }
}

#[tokio::test]
async fn writes_one_after_another_reach_a_webhook_over_one_connection() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    create_through(&c, &hook, "reuse", 5).await;
    let refused = c.post(CONFIGMAPS, &configmap("reuse-refused", json!({"forbidden": "yes"}))).await;
    assert_eq!(refused.code, 400, "{}", refused.body);
    assert_eq!(hook.seen("/validate").len(), 6);
    // As Go's transport keeps them, the connection (and its TLS handshake) serves every call.
    assert_eq!(hook.connections.load(std::sync::atomic::Ordering::SeqCst), 1);

    // A webhook that closes its connections: each call goes on a new one, none fails.
    let closing = Webhook::start_closing().await;
    create_through(&c, &closing, "closing", 5).await;
    assert_eq!(closing.seen("/validate").len(), 5);
    assert_eq!(closing.connections.load(std::sync::atomic::Ordering::SeqCst), 5);
}

#[tokio::test]
async fn a_mutating_webhook_patches_objects_before_validation_and_storage() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    labeller_and_guard(&c, &hook).await;

    let r = c.post(CONFIGMAPS, &json!({"metadata": {"name": "plain"}, "data": {"k": "v"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"], json!({"mutated": "yes"}));
    let stored = c.get(&format!("{CONFIGMAPS}/plain")).await;
    assert_eq!(stored.body["metadata"]["labels"], json!({"mutated": "yes"}));
    assert_eq!(stored.body.get("notAField"), None, "{}", stored.body);
    // The validating webhook saw the mutated object.
    let validated = hook.seen("/validate").last().cloned().unwrap();
    assert_eq!(validated["review"]["request"]["object"]["metadata"]["labels"]["mutated"], "yes");
    let r = c.post(CONFIGMAPS, &configmap("labelled", json!({"app": "a"}))).await;
    assert_eq!(r.body["metadata"]["labels"], json!({"app": "a", "mutated": "yes"}));
    // As in kube, mutating webhooks see an object before the server names it (generateName)
    // and gives it a uid and a creation time; validating webhooks see it named.
    let r = c.post(CONFIGMAPS, &json!({"metadata": {"generateName": "gen-"}, "data": {"k": "v"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let generated = r.body["metadata"]["name"].as_str().unwrap().to_string();
    assert!(generated.starts_with("gen-") && generated.len() > 4, "{generated}");
    assert!(r.body["metadata"]["uid"].is_string() && r.body["metadata"]["creationTimestamp"].is_string());
    let mutated = hook.seen("/mutate").last().cloned().unwrap()["review"]["request"].clone();
    assert_eq!(mutated.get("name"), None, "{mutated}");
    let meta = &mutated["object"]["metadata"];
    assert_eq!((meta.get("name"), meta.get("uid"), meta.get("creationTimestamp")), (None, None, None), "{meta}");
    assert_eq!(meta["generateName"], "gen-");
    let validated = hook.seen("/validate").last().cloned().unwrap()["review"]["request"].clone();
    assert_eq!(validated["name"], generated.as_str());
    assert_eq!(validated["object"]["metadata"]["name"], generated.as_str());
    // The name is required only after the mutating webhooks ran: one may set it.
    let r = c.post(CONFIGMAPS, &json!({"data": {"k": "v"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["name"], "named-by-webhook");
    assert_eq!(hook.seen("/mutate").last().unwrap()["review"]["request"].get("name"), None);
    assert_eq!(hook.seen("/validate").last().unwrap()["review"]["request"]["name"], "named-by-webhook");
    // Watchers see the object as stored.
    let listed = c.get(CONFIGMAPS).await;
    let names: Vec<&str> = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["metadata"]["labels"]["mutated"] == "yes")
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [generated.as_str(), "labelled", "named-by-webhook", "plain"]);
}

#[tokio::test]
async fn a_create_trying_other_generated_names_is_mutated_once_and_validated_each_time() {
    // The names a server seeded with 7 draws first (a server of its own, whose cache holds
    // nothing else).
    let first = informer_apiserver::testing::builder().generated_name_seed(7).start().await.unwrap();
    let mut names = Vec::new();
    for _ in 0..3 {
        let r = Client::new(&first).post(CONFIGMAPS, &json!({"metadata": {"generateName": "cm-"}})).await;
        names.push(r.body["metadata"]["name"].as_str().unwrap().to_string());
    }
    let hook = Webhook::start().await;
    let s = informer_apiserver::testing::builder().generated_name_seed(7).start().await.unwrap();
    let c = Client::new(&s);
    labeller_and_guard(&c, &hook).await;
    for n in &names[..2] {
        assert_eq!(c.post(CONFIGMAPS, &json!({"metadata": {"name": n}})).await.code, 201);
    }
    let (mutated, validated) = (hook.seen("/mutate").len(), hook.seen("/validate").len());
    let r = c.post(CONFIGMAPS, &json!({"metadata": {"generateName": "cm-"}})).await;
    assert_eq!((r.code, &r.body["metadata"]["name"]), (201, &json!(names[2])), "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"], json!({"mutated": "yes"}));
    // As kube: mutating admission once, before the store; validation with each name it tries.
    assert_eq!(hook.seen("/mutate").len(), mutated + 1);
    assert_eq!(hook.seen("/validate").len(), validated + 3);
    let tried: Vec<Value> =
        hook.seen("/validate")[validated..].iter().map(|r| r["review"]["request"]["name"].clone()).collect();
    assert_eq!(tried, names.iter().map(|n| json!(n)).collect::<Vec<_>>());
}

#[tokio::test]
async fn webhooks_see_what_kube_s_plugins_and_stores_add_and_the_update_strategy_has_the_last_word() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let rule = |group: &str, resource: &str, operation: &str| json!({"operations": [operation], "apiGroups": [group], "apiVersions": ["v1"], "resources": [resource]});
    let watcher = json!({"name": "watch.example.com", "clientConfig": hook.client_config("/observe"),
                         "sideEffects": "None", "admissionReviewVersions": ["v1"],
                         "rules": [rule("", "pods", "CREATE"), rule("", "services", "CREATE")]});
    assert_eq!(
        c.post(VALIDATING, &config("ValidatingWebhookConfiguration", "watch", json!([watcher]))).await.code,
        201
    );
    let mut early = json!({"name": "early.example.com", "clientConfig": hook.client_config("/observe-early"),
                           "sideEffects": "None", "admissionReviewVersions": ["v1"], "rules": [rule("", "pods", "CREATE")]});
    let status = json!({"name": "status.example.com", "clientConfig": hook.client_config("/status"),
                        "sideEffects": "None", "admissionReviewVersions": ["v1"],
                        "rules": [rule("apps", "deployments", "UPDATE")]});
    early["reinvocationPolicy"] = json!("Never");
    let m = config("MutatingWebhookConfiguration", "plugins", json!([early, status]));
    assert_eq!(c.post(MUTATING, &m).await.code, 201);
    settled(&c).await;

    // A pod's default tolerations come from an admission plugin that runs before the webhooks.
    // The pod is sent as its Go type writes it: without the empty strings and lists Go leaves
    // out, with the fields Go always writes.
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx", "workingDir": ""}],
                     "nodeName": "", "imagePullSecrets": []}});
    assert_eq!(c.post("/api/v1/namespaces/default/pods", &pod).await.code, 201);
    let seen = hook.seen("/observe-early").last().cloned().unwrap();
    let sent = &seen["review"]["request"]["object"];
    let tolerations = &sent["spec"]["tolerations"];
    assert_eq!(tolerations.as_array().map(Vec::len), Some(2), "{tolerations}");
    assert_eq!(sent["spec"].get("nodeName"), None, "{sent}");
    assert_eq!(sent["spec"].get("imagePullSecrets"), None, "{sent}");
    assert_eq!(sent["spec"]["containers"][0].get("workingDir"), None, "{sent}");
    assert_eq!(sent["spec"]["containers"][0]["resources"], json!({}), "{sent}");
    // A Service's cluster IP is given before validating admission sees it.
    let svc = json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}});
    let r = c.post("/api/v1/namespaces/default/services", &svc).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let seen = hook.seen("/observe").last().cloned().unwrap();
    assert_eq!(seen["review"]["request"]["object"]["spec"]["clusterIP"], r.body["spec"]["clusterIP"]);
    assert!(r.body["spec"]["clusterIP"].as_str().is_some_and(|ip| !ip.is_empty()));

    // A webhook's change to the status on a main-resource update is dropped, as kube's update
    // strategy drops it.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                                     "template": {"metadata": {"labels": {"app": "d"}},
                                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let path = "/apis/apps/v1/namespaces/default/deployments";
    assert_eq!(c.post(path, &deployment).await.code, 201);
    let merge = "application/merge-patch+json";
    let r = c.patch(&format!("{path}/d"), merge, &json!({"spec": {"replicas": 2}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(hook.seen("/status").len(), 1);
    assert_eq!(r.body["spec"]["replicas"], 2);
    assert_eq!(r.body["status"].get("observedGeneration"), None, "{}", r.body["status"]);
}

#[tokio::test]
async fn kube_s_admission_runs_again_on_what_a_mutating_webhook_added() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let limits = json!({"metadata": {"name": "defaults"}, "spec": {"limits": [{"type": "Container",
        "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "100m"}}]}});
    assert_eq!(c.post("/api/v1/namespaces/default/limitranges", &limits).await.code, 201);
    let sidecar = json!({"name": "sidecar.example.com", "clientConfig": hook.client_config("/sidecar"),
        "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]});
    let cfg = config("MutatingWebhookConfiguration", "sidecar", json!([sidecar]));
    assert_eq!(c.post(MUTATING, &cfg).await.code, 201);
    settled(&c).await;

    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let r = c.post(PODS, &pod).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let containers = r.body["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 2);
    // The sidecar came after LimitRanger's first pass: its defaults come from the second.
    for container in containers {
        assert_eq!(
            container["resources"],
            json!({"limits": {"cpu": "500m"}, "requests": {"cpu": "100m"}}),
            "{}",
            container["name"]
        );
    }
    assert_eq!(hook.seen("/sidecar").len(), 1, "a webhook that is not IfNeeded is called once");
}

#[tokio::test]
async fn a_webhook_that_speaks_only_v1beta1_gets_v1beta1_reviews() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let mut beta = configmaps_hook("beta.example.com", hook.client_config("/beta"), json!(["CREATE"]));
    beta["admissionReviewVersions"] = json!(["v1beta1"]);
    assert_eq!(c.post(MUTATING, &config("MutatingWebhookConfiguration", "beta", json!([beta]))).await.code, 201);
    settled(&c).await;
    let r = c.post(CONFIGMAPS, &json!({"metadata": {"name": "old-style"}, "data": {"k": "v"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"], json!({"beta": "yes"}));
    let sent = hook.seen("/beta").last().cloned().unwrap();
    assert_eq!(sent["review"]["apiVersion"], "admission.k8s.io/v1beta1");
    assert_eq!(sent["review"]["request"]["operation"], "CREATE");
}

#[tokio::test]
async fn an_if_needed_webhook_is_called_again_when_a_later_one_changed_the_object() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    for policy in ["IfNeeded", "Never"] {
        let selector = json!({"matchLabels": {"chain": policy}});
        let mut copy = configmaps_hook(
            &format!("copy-{}.example.com", policy.to_lowercase()),
            hook.client_config("/copy"),
            json!(["CREATE"]),
        );
        copy["reinvocationPolicy"] = json!(policy);
        copy["objectSelector"] = selector.clone();
        let mut annotate = configmaps_hook(
            &format!("annotate-{}.example.com", policy.to_lowercase()),
            hook.client_config("/annotate"),
            json!(["CREATE"]),
        );
        annotate["objectSelector"] = selector;
        let cfg = config(
            "MutatingWebhookConfiguration",
            &format!("chain-{}", policy.to_lowercase()),
            json!([copy, annotate]),
        );
        assert_eq!(c.post(MUTATING, &cfg).await.code, 201);
    }
    settled(&c).await;
    // The copy ran before the annotation existed; IfNeeded calls it again after.
    let r = c.post(CONFIGMAPS, &configmap("again", json!({"chain": "IfNeeded"}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"]["copied"], "1");
    assert_eq!(hook.seen("/copy").len(), 2);
    let r = c.post(CONFIGMAPS, &configmap("once", json!({"chain": "Never"}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"]["copied"], "none");
    assert_eq!(r.body["metadata"]["annotations"]["a"], "1");
    assert_eq!(hook.seen("/copy").len(), 3);
}

/// A patch that changes nothing is no change, as kube's `Semantic.DeepEqual` of the decoded
/// objects judges it, though the object was sent with values Go leaves out: an earlier
/// `IfNeeded` webhook is not called again.
#[tokio::test]
async fn a_patch_that_changes_nothing_calls_no_webhook_again() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let mut first = configmaps_hook("observe.example.com", hook.client_config("/observe-first"), json!(["CREATE"]));
    first["reinvocationPolicy"] = json!("IfNeeded");
    let annotate = configmaps_hook("annotate.example.com", hook.client_config("/annotate"), json!(["CREATE"]));
    let cfg = config("MutatingWebhookConfiguration", "steady", json!([first, annotate]));
    assert_eq!(c.post(MUTATING, &cfg).await.code, 201);
    settled(&c).await;
    let steady = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {}, "binaryData": {},
                        "metadata": {"name": "steady", "generateName": "", "annotations": {"a": "1"}}});
    let r = c.post(CONFIGMAPS, &steady).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(hook.seen("/annotate").len(), 1);
    assert_eq!(hook.seen("/observe-first").len(), 1);
    // A patch that changes something calls it again.
    let changed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "changed"}});
    assert_eq!(c.post(CONFIGMAPS, &changed).await.code, 201);
    assert_eq!(hook.seen("/observe-first").len(), 3);
}

#[tokio::test]
async fn scale_writes_are_offered_as_scales_to_scale_subresource_rules() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    assert_eq!(c.post(deployments, &deployment("web", 1)).await.code, 201);
    let rule = |resources: Value| json!([{"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": resources}]);
    let mut cap = configmaps_hook("cap.example.com", hook.client_config("/cap"), json!(["UPDATE"]));
    cap["rules"] = rule(json!(["deployments/scale"]));
    assert_eq!(c.post(MUTATING, &config("MutatingWebhookConfiguration", "cap", json!([cap]))).await.code, 201);
    // A webhook for the deployments themselves is not offered their scale.
    let mut main = configmaps_hook("main.example.com", hook.client_config("/validate"), json!(["UPDATE"]));
    main["rules"] = rule(json!(["deployments"]));
    assert_eq!(c.post(VALIDATING, &config("ValidatingWebhookConfiguration", "main", json!([main]))).await.code, 201);
    settled(&c).await;

    let scale = format!("{deployments}/web/scale");
    let r = c.patch(&scale, "application/merge-patch+json", &json!({"spec": {"replicas": 7}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["replicas"], 3, "the webhook capped it");
    assert_eq!(c.get(&format!("{deployments}/web")).await.body["spec"]["replicas"], 3);
    let request = hook.seen("/cap")[0]["review"]["request"].clone();
    assert_eq!(request["kind"], json!({"group": "autoscaling", "version": "v1", "kind": "Scale"}));
    assert_eq!(request["resource"], json!({"group": "apps", "version": "v1", "resource": "deployments"}));
    assert_eq!(request["subResource"], "scale");
    assert_eq!((&request["object"]["kind"], &request["object"]["spec"]["replicas"]), (&json!("Scale"), &json!(7)));
    assert_eq!(request["oldObject"]["spec"]["replicas"], 1);
    assert!(hook.seen("/validate").is_empty());

    let r = c
        .put(
            &scale,
            &json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 11}}),
        )
        .await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(r.body["message"], "admission webhook \"cap.example.com\" denied the request: 11 replicas is too many");
    assert_eq!(c.get(&format!("{deployments}/web")).await.body["spec"]["replicas"], 3);
    // The deployment's own updates go to the main webhook, not to the scale one.
    let r = c
        .patch(
            &format!("{deployments}/web"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"x": "y"}}}),
        )
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    // (A write judged on a cached version that turns out stale is judged again, as kube's
    // GuaranteedUpdate does, so the counts may include such retries.)
    let main_reviews = hook.seen("/validate");
    assert!(!main_reviews.is_empty());
    assert!(main_reviews.iter().all(|r| r["review"]["request"].get("subResource").is_none()), "{main_reviews:?}");
    let cap_reviews = hook.seen("/cap");
    assert!(cap_reviews.iter().all(|r| r["review"]["request"]["subResource"] == "scale"), "{cap_reviews:?}");
    assert_eq!(cap_reviews.last().unwrap()["review"]["request"]["object"]["spec"]["replicas"], 11);
}

#[tokio::test]
async fn connections_are_offered_as_connect_with_their_options() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post("/api/v1/namespaces/default/pods", &pod("web", json!({}))).await.code, 201);
    let rules =
        json!([{"operations": ["CONNECT"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/exec"]}]);
    let mut all = configmaps_hook("all.example.com", hook.client_config("/allow"), json!(["CONNECT"]));
    all["rules"] = rules.clone();
    // The options have no metadata: a selector other than the empty one selects nothing.
    let mut selected =
        configmaps_hook("selected.example.com", hook.client_config("/allow-selected"), json!(["CONNECT"]));
    selected["rules"] = rules;
    selected["objectSelector"] = json!({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]});
    let hooks = config("ValidatingWebhookConfiguration", "connect", json!([all, selected]));
    assert_eq!(c.post(VALIDATING, &hooks).await.code, 201);
    settled(&c).await;

    let r = c
        .send_raw(
            http::Method::POST,
            "/api/v1/namespaces/default/pods/web/exec?command=ls&command=-l&stdout=1&tty=false",
            vec![],
            "",
        )
        .await;
    assert_eq!((r.code, r.body["message"].as_str()), (400, Some("pod web does not have a host assigned")));
    let reviews = hook.seen("/allow");
    assert_eq!(reviews.len(), 1);
    let request = &reviews[0]["review"]["request"];
    assert_eq!(request["operation"], "CONNECT");
    assert_eq!(request["kind"], json!({"group": "", "version": "v1", "kind": "PodExecOptions"}));
    assert_eq!(request["resource"], json!({"group": "", "version": "v1", "resource": "pods"}));
    assert_eq!((&request["subResource"], &request["name"]), (&json!("exec"), &json!("web")));
    assert_eq!(
        request["object"],
        json!({"kind": "PodExecOptions", "apiVersion": "v1", "stdout": true, "command": ["ls", "-l"]})
    );
    assert_eq!((&request["oldObject"], &request["options"]), (&Value::Null, &Value::Null));
    assert!(hook.seen("/allow-selected").is_empty());
}

const CRONTABS: &str = r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "crontabs.stable.example.com"},
  "spec": {"group": "stable.example.com", "scope": "Namespaced",
    "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
    "versions": [
      {"name": "v1", "served": true, "storage": true,
       "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
      {"name": "v1beta1", "served": true, "storage": false,
       "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}"#;

#[tokio::test]
async fn a_webhook_for_one_version_sees_requests_to_the_others_in_its_version() {
    let hook = Webhook::start().await;
    let s = informer_apiserver::testing::builder().crd(CRONTABS).start().await.unwrap();
    let c = Client::new(&s);
    let v1 = json!([{"operations": ["CREATE"], "apiGroups": ["stable.example.com"], "apiVersions": ["v1"],
                     "resources": ["crontabs"]}]);
    let mut mutating = configmaps_hook("labeller.example.com", hook.client_config("/mutate"), json!(["CREATE"]));
    mutating["rules"] = v1.clone();
    assert_eq!(
        c.post(MUTATING, &config("MutatingWebhookConfiguration", "labeller", json!([mutating]))).await.code,
        201
    );
    let mut exact = configmaps_hook("exact.example.com", hook.client_config("/validate"), json!(["CREATE"]));
    exact["rules"] = v1;
    exact["matchPolicy"] = json!("Exact");
    assert_eq!(c.post(VALIDATING, &config("ValidatingWebhookConfiguration", "exact", json!([exact]))).await.code, 201);
    settled(&c).await;

    let tab = |v: &str, name: &str| {
        json!({"apiVersion": format!("stable.example.com/{v}"), "kind": "CronTab", "metadata": {"name": name},
               "spec": {"cronSpec": "* * * * */5"}})
    };
    let r = c.post("/apis/stable.example.com/v1beta1/namespaces/default/crontabs", &tab("v1beta1", "beta")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["apiVersion"], "stable.example.com/v1beta1");
    assert_eq!(r.body["metadata"]["labels"], json!({"mutated": "yes"}));
    let request = hook.seen("/mutate")[0]["review"]["request"].clone();
    assert_eq!(request["kind"], json!({"group": "stable.example.com", "version": "v1", "kind": "CronTab"}));
    assert_eq!(request["requestKind"], json!({"group": "stable.example.com", "version": "v1beta1", "kind": "CronTab"}));
    assert_eq!(request["resource"]["version"], "v1");
    assert_eq!(request["requestResource"]["version"], "v1beta1");
    assert_eq!(request["object"]["apiVersion"], "stable.example.com/v1");
    // `matchPolicy: Exact` is not offered the other version.
    assert!(hook.seen("/validate").is_empty());
    let r = c.post("/apis/stable.example.com/v1/namespaces/default/crontabs", &tab("v1", "one")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(hook.seen("/validate").len(), 1);
    assert_eq!(hook.seen("/mutate").len(), 2);
}

/// A request past its `timeout` (here held by a webhook that never answers) is answered 504 in
/// the words of kube's timeout filter, and what it would have written is not.
#[tokio::test]
async fn a_request_past_its_timeout_is_answered_504() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let mut h = configmaps_hook("hang.example.com", hook.client_config("/hang"), json!(["CREATE"]));
    h["timeoutSeconds"] = json!(30);
    assert_eq!(c.post(VALIDATING, &config("ValidatingWebhookConfiguration", "hanging", json!([h]))).await.code, 201);
    settled(&c).await;
    let r = c.post(&format!("{CONFIGMAPS}?timeout=200ms"), &configmap("late", json!({}))).await;
    assert_eq!(r.code, 504, "{:?}", r.raw);
    assert_eq!(r.headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(
        r.raw,
        "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Timeout: request did not complete within the allotted \
         timeout\",\"reason\":\"Timeout\",\"details\":{},\"code\":504}\n"
    );
    assert_eq!(c.get(&format!("{CONFIGMAPS}/late")).await.code, 404);
}

#[tokio::test]
async fn a_webhook_that_fails_fails_the_request_or_is_ignored_by_its_failure_policy() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let down = json!({"url": format!("https://127.0.0.1:{port}/validate"), "caBundle": hook.ca_bundle});
    let create = json!(["CREATE"]);
    let mut hooks = vec![configmaps_hook("down.example.com", down, create.clone())];
    hooks[0]["objectSelector"] = json!({"matchLabels": {"case": "down"}});
    // Without the caBundle the webhook's self-signed certificate is not trusted.
    let untrusted = json!({"url": format!("https://{}/validate", hook.addr)});
    let mut h = configmaps_hook("untrusted.example.com", untrusted, create.clone());
    h["objectSelector"] = json!({"matchLabels": {"case": "untrusted"}});
    hooks.push(h);
    let mut h = configmaps_hook("hang.example.com", hook.client_config("/hang"), create.clone());
    h["objectSelector"] = json!({"matchLabels": {"case": "hang"}});
    h["timeoutSeconds"] = json!(1);
    hooks.push(h);
    // A match condition that fails to evaluate refuses the request (Fail) with kube's 403.
    let mut h = configmaps_hook("condition.example.com", hook.client_config("/validate"), create.clone());
    h["objectSelector"] = json!({"matchLabels": {"case": "condition"}});
    h["matchConditions"] = json!([{"name": "tier", "expression": "object.metadata.labels.tier == 'web'"}]);
    hooks.push(h);
    let mut h = configmaps_hook("ignored.example.com", hook.client_config("/hang"), create);
    h["objectSelector"] = json!({"matchLabels": {"case": "ignored"}});
    h["timeoutSeconds"] = json!(1);
    h["failurePolicy"] = json!("Ignore");
    hooks.push(h);
    assert_eq!(c.post(VALIDATING, &config("ValidatingWebhookConfiguration", "failing", json!(hooks))).await.code, 201);
    settled(&c).await;

    let r = c.post(CONFIGMAPS, &configmap("a", json!({"case": "down"}))).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(r.body["reason"], "InternalError");
    assert_eq!(
        r.body["message"],
        format!(
            "Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post \
             \"https://127.0.0.1:{port}/validate?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
    let r = c.post(CONFIGMAPS, &configmap("b", json!({"case": "untrusted"}))).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(
        r.body["message"],
        format!(
            "Internal error occurred: failed calling webhook \"untrusted.example.com\": failed to call webhook: Post \
             \"https://{}/validate?timeout=10s\": tls: failed to verify certificate: x509: certificate signed by unknown authority",
            hook.addr
        )
    );
    let r = c.post(CONFIGMAPS, &configmap("c", json!({"case": "hang"}))).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(
        r.body["message"],
        format!(
            "Internal error occurred: failed calling webhook \"hang.example.com\": failed to call webhook: Post \
             \"https://{}/hang?timeout=1s\": context deadline exceeded",
            hook.addr
        )
    );
    let r = c.post(CONFIGMAPS, &configmap("m", json!({"case": "condition"}))).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "configmaps \"m\" is forbidden: expression 'object.metadata.labels.tier == 'web'' resulted in error: no such key: tier"
    );
    let before = hook.seen("/validate").len();
    let r = c.post(CONFIGMAPS, &configmap("n", json!({"case": "condition", "tier": "db"}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(hook.seen("/validate").len(), before, "a condition that does not hold skips the webhook");
    let r = c.post(CONFIGMAPS, &configmap("w", json!({"case": "condition", "tier": "web"}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(hook.seen("/validate").len(), before + 1);
    let r = c.post(CONFIGMAPS, &configmap("d", json!({"case": "ignored"}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // Objects no webhook selects are not offered to any.
    let before = hook.seen.lock().unwrap().len();
    assert_eq!(c.post(CONFIGMAPS, &configmap("e", json!({"case": "none"}))).await.code, 201);
    assert_eq!(hook.seen.lock().unwrap().len(), before);
}

#[tokio::test]
async fn webhook_configurations_are_defaulted_and_checked_as_kube_does() {
    let s = server().await;
    let c = Client::new(&s);
    let good =
        configmaps_hook("ok.example.com", json!({"service": {"namespace": "ops", "name": "hook"}}), json!(["*"]));
    let r = c.post(MUTATING, &config("MutatingWebhookConfiguration", "ok", json!([good]))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let hook = &r.body["webhooks"][0];
    assert_eq!(
        (&hook["failurePolicy"], &hook["matchPolicy"], &hook["timeoutSeconds"], &hook["reinvocationPolicy"]),
        (&json!("Fail"), &json!("Equivalent"), &json!(10), &json!("Never"))
    );
    assert_eq!((&hook["namespaceSelector"], &hook["objectSelector"]), (&json!({}), &json!({})));
    assert_eq!(hook["rules"][0]["scope"], "*");
    assert_eq!(hook["clientConfig"]["service"]["port"], 443);

    let mut bad = configmaps_hook("short.name", json!({"url": "http://127.0.0.1/x"}), json!(["CREATE"]));
    bad.as_object_mut().unwrap().remove("sideEffects");
    let r = c.post(VALIDATING, &config("ValidatingWebhookConfiguration", "bad", json!([bad]))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid: [webhooks[0].name: Invalid \
         value: \"short.name\": should be a domain with at least three segments separated by dots, \
         webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun, \
         webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired \
         format: https://host[/path]]"
    );
}

const KUBECTL_WEBHOOK: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: guard
webhooks:
- name: guard.example.com
  sideEffects: None
  admissionReviewVersions: [v1]
  rules:
  - operations: [CREATE]
    apiGroups: [""]
    apiVersions: [v1]
    resources: [configmaps]
  clientConfig:
"#;

#[tokio::test]
async fn kubectl_reports_a_webhook_s_refusal() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let hook = Webhook::start_self_signed().await;
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let s = server().await;
        let dir = tempdir("kubectl-webhook");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let file = dir.join("webhook.yaml");
        let manifest =
            format!("{KUBECTL_WEBHOOK}    url: https://{}/validate\n    caBundle: {}\n", hook.addr, hook.ca_bundle);
        std::fs::write(&file, manifest).unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "-f", file.to_str().unwrap()]).await;
        assert!(ok, "{bin}: {out}{err}");
        assert!(
            out.contains("validatingwebhookconfiguration.admissionregistration.k8s.io/guard created"),
            "{bin}: {out}"
        );
        settled(&Client::new(&s)).await;
        let create = ["create", "configmap", "c", "-n", "default", "--from-literal=k=v"];
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &create).await;
        assert!(ok, "{bin}: {out}{err}");
        assert!(err.contains("Warning: checked c"), "{bin}: {err}");
        let file = dir.join("forbidden.yaml");
        std::fs::write(&file, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: f\n  namespace: default\n  labels: {forbidden: \"yes\"}\n").unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["create", "-f", file.to_str().unwrap()]).await;
        assert!(!ok, "{bin}: {out}{err}");
        assert!(
            err.contains(
                "admission webhook \"guard.example.com\" denied the request: objects labelled forbidden are not admitted"
            ),
            "{bin}: {err}"
        );
    }
}

#[tokio::test]
async fn webhooks_see_the_user_a_request_impersonates() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let judge = configmaps_hook("judge.example.com", hook.client_config("/validate"), json!(["CREATE"]));
    let cfg = config("ValidatingWebhookConfiguration", "judge", json!([judge]));
    assert_eq!(c.post(VALIDATING, &cfg).await.code, 201);
    settled(&c).await;

    // A controller's client acting as its service account, as kube-rs sends it.
    let kc = kube::config::Kubeconfig::from_yaml(&s.kubeconfig_yaml()).unwrap();
    let mut as_controller =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await.unwrap();
    as_controller.auth_info.impersonate = Some("system:serviceaccount:default:controller".into());
    let client = kube::Client::try_from(as_controller).unwrap();
    let configmaps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(client, "default");
    let cm = serde_json::from_value(configmap("by-controller", json!({}))).unwrap();
    configmaps.create(&Default::default(), &cm).await.unwrap();
    let seen = hook.seen("/validate");
    assert_eq!(
        seen.last().unwrap()["review"]["request"]["userInfo"],
        json!({"username": "system:serviceaccount:default:controller",
               "groups": ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]})
    );

    // kubectl's --as and --as-group.
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let dir = tempdir("kubectl-as");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let bin = kubectl_versions().last().cloned().unwrap();
    let create = ["create", "configmap", "by-jane", "-n", "default", "--as=jane", "--as-group=devs"];
    let (ok, out, err) = kubectl_bin(&bin, &kc, &dir.join("cache"), &create).await;
    assert!(ok, "{bin}: {out}{err}");
    assert_eq!(
        hook.seen("/validate").last().unwrap()["review"]["request"]["userInfo"],
        json!({"username": "jane", "groups": ["devs", "system:authenticated"]})
    );

    // Without impersonation: the server's own user.
    assert_eq!(c.post(CONFIGMAPS, &configmap("by-admin", json!({}))).await.code, 201);
    assert_eq!(
        hook.seen("/validate").last().unwrap()["review"]["request"]["userInfo"],
        json!({"username": "system:admin", "groups": ["system:masters", "system:authenticated"]})
    );
}
