//! Custom resources whose CustomResourceDefinition converts them by webhook, against a
//! conversion webhook written with kube-rs's conversion types as operator authors write them: an
//! object written in one version is stored in the storage version the webhook made of it, and
//! served in every version through the webhook (GET, LIST in one review, WATCH, the object a
//! patch starts from, kube-rs's client); the webhook's answer is checked as kube-apiserver checks
//! it (the metadata restored but for labels and annotations, the name kept), and a webhook that
//! fails or cannot be reached fails the request with kube's 500 and its words, storing nothing.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::*;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use informer_apiserver::ApiServer;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const SEC: Duration = Duration::from_secs(10);

/// A conversion webhook: `/convert` converts Widgets between v1 (`spec.size`, a string) and v2
/// (`spec.count`, a number); `/meddle` converts too but also changes the generation and adds an
/// annotation; `/rename` renames the objects; `/label` labels them with the version they are
/// converted to; `/fail` refuses. `/mutate` is an admission webhook
/// that labels what it is offered. Every review is kept, with its path.
struct Webhook {
    addr: SocketAddr,
    ca_bundle: String,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Webhook {
    async fn start() -> Webhook {
        let cert = informer_apiserver::testing::WebhookCertificate::for_hosts(&["127.0.0.1"]).unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(cert.server_config().unwrap());
        let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let kept = seen.clone();
        let addr = https::serve(acceptor, move |req| answer(req, kept.clone())).await;
        Webhook { addr, ca_bundle: cert.ca_bundle(), seen }
    }

    fn client_config(&self, path: &str) -> Value {
        json!({"url": format!("https://{}{path}", self.addr), "caBundle": self.ca_bundle})
    }

    /// The reviews received at `path`, in order.
    fn seen(&self, path: &str) -> Vec<Value> {
        self.seen.lock().unwrap().iter().filter(|(p, _)| p == path).map(|(_, r)| r.clone()).collect()
    }
}

/// A Widget in the version asked for: v1's `size` (a string) is v2's `count` (a number), v1's
/// `color` v2's `colour`.
fn convert_widget(mut obj: Value, desired: &str) -> Value {
    let spec = obj["spec"].as_object().cloned().unwrap_or_default();
    let mut out = serde_json::Map::new();
    match desired.rsplit_once('/').map(|(_, v)| v) {
        Some("v2") => {
            if let Some(n) = spec.get("size").and_then(Value::as_str).and_then(|s| s.parse::<i64>().ok()) {
                out.insert("count".into(), n.into());
            }
            if let Some(c) = spec.get("color") {
                out.insert("colour".into(), c.clone());
            }
        }
        _ => {
            if let Some(n) = spec.get("count").and_then(Value::as_i64) {
                out.insert("size".into(), n.to_string().into());
            }
            if let Some(c) = spec.get("colour") {
                out.insert("color".into(), c.clone());
            }
        }
    }
    obj["spec"] = Value::Object(out);
    obj["apiVersion"] = desired.into();
    obj
}

async fn answer(
    req: hyper::Request<Incoming>,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    let path = req.uri().path().to_string();
    let body = req.into_body().collect().await?.to_bytes();
    let raw: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    seen.lock().unwrap().push((path.clone(), raw.clone()));
    if path == "/mutate" {
        // An admission webhook: labels what it is offered.
        let patch = br#"[{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]"#;
        let patch = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, patch);
        let out = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                         "response": {"uid": raw["request"]["uid"], "allowed": true, "patch": patch,
                                      "patchType": "JSONPatch"}});
        return Ok(hyper::Response::new(Full::new(Bytes::from(out.to_string()))));
    }
    let review: ConversionReview = serde_json::from_slice(&body).expect("a ConversionReview");
    let request = ConversionRequest::from_review(review).expect("a request");
    let desired = request.desired_api_version.clone();
    let objects = request.objects.clone();
    let response = ConversionResponse::for_request(request);
    let response = match path.as_str() {
        "/fail" => response.failure(kube::core::Status::failure("cannot convert", "Conflict")),
        _ => response.success(
            objects
                .into_iter()
                .map(|o| {
                    let mut o = convert_widget(o, &desired);
                    match path.as_str() {
                        "/meddle" => {
                            o["metadata"]["generation"] = json!(99);
                            o["metadata"]["annotations"] = json!({"converted-by": "webhook"});
                        }
                        "/rename" => o["metadata"]["name"] = json!("renamed"),
                        "/label" => {
                            let version = desired.rsplit_once('/').map_or("", |(_, v)| v);
                            o["metadata"]["labels"] = json!({"served-as": version});
                        }
                        _ => {}
                    }
                    o
                })
                .collect(),
        ),
    };
    let out = serde_json::to_vec(&response.into_review()).unwrap();
    Ok(hyper::Response::new(Full::new(Bytes::from(out))))
}

/// A Widget definition in `group`: v1 stores `spec.size` and `spec.color` (red by default), v2
/// serves `spec.count` and `spec.colour`, converted by the webhook `client_config` names.
fn widgets_crd(group: &str, client_config: Value) -> Value {
    let version = |name: &str, storage: bool, spec: Value| {
        json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": spec}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                version("v1", true, json!({"size": {"type": "string"},
                                           "color": {"type": "string", "default": "red"}})),
                version("v2", false, json!({"count": {"type": "integer"}, "colour": {"type": "string"}})),
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": client_config, "conversionReviewVersions": ["v1"]}},
        }
    })
}

fn widgets(group: &str, version: &str) -> String {
    format!("/apis/{group}/{version}/namespaces/default/widgets")
}

async fn stored(s: &ApiServer, group: &str, name: &str) -> Value {
    let layout = s.store().cache().layout().clone();
    let info = s.store().registry().find(group, "v1", "widgets").cloned().unwrap();
    let key = layout.object_key(&info, "default", name);
    let kv = s.store().storage().get(&key).await.unwrap().expect("stored");
    serde_json::from_slice(&kv.value).unwrap()
}

#[tokio::test]
async fn objects_are_stored_and_served_through_the_conversion_webhook() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let group = "conv.example.com";
    define(&c, &widgets_crd(group, hook.client_config("/convert"))).await;

    // Written in v2, stored as the webhook converts it to v1, answered as stored: read back
    // (with v1's default) and converted to v2 again.
    let r = c
        .post(
            &widgets(group, "v2"),
            &json!({"apiVersion": "conv.example.com/v2", "kind": "Widget",
                                              "metadata": {"name": "a"}, "spec": {"count": 3}}),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let red = json!({"count": 3, "colour": "red"});
    assert_eq!((r.body["apiVersion"].as_str(), &r.body["spec"]), (Some("conv.example.com/v2"), &red));
    let kept = stored(&s, group, "a").await;
    assert_eq!((kept["apiVersion"].as_str(), &kept["spec"]), (Some("conv.example.com/v1"), &json!({"size": "3"})));
    let reviews = hook.seen("/convert");
    assert_eq!(reviews.len(), 2);
    let request = &reviews[0]["request"];
    assert_eq!(reviews[0]["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(request["desiredAPIVersion"], "conv.example.com/v1");
    assert_eq!(request["objects"][0]["apiVersion"], "conv.example.com/v2");
    assert_eq!(request["objects"][0]["spec"], json!({"count": 3}));
    assert!(request["objects"][0]["metadata"].get("resourceVersion").is_none());
    let back = &reviews[1]["request"];
    assert_eq!(back["desiredAPIVersion"], "conv.example.com/v2");
    assert_eq!(back["objects"][0]["spec"], json!({"size": "3", "color": "red"}));

    // The storage version is served as stored, without the webhook; v2 through it.
    let v1 = c.get(&format!("{}/a", widgets(group, "v1"))).await;
    assert_eq!(
        (v1.body["apiVersion"].as_str(), &v1.body["spec"]),
        (Some("conv.example.com/v1"), &json!({"size": "3", "color": "red"}))
    );
    assert_eq!(hook.seen("/convert").len(), 2);
    let v2 = c.get(&format!("{}/a", widgets(group, "v2"))).await;
    assert_eq!(v2.code, 200, "{}", v2.body);
    assert_eq!((v2.body["apiVersion"].as_str(), &v2.body["spec"]), (Some("conv.example.com/v2"), &red));
    assert_eq!(v2.body["metadata"]["uid"], r.body["metadata"]["uid"]);
    assert_eq!(v2.body["metadata"]["resourceVersion"], r.body["metadata"]["resourceVersion"]);

    // A LIST converts each object in a review of its own; a second LIST reuses what the first
    // converted.
    let r = c.post(&widgets(group, "v1"), &json!({"apiVersion": format!("{group}/v1"), "kind": "Widget", "metadata": {"name": "b"}, "spec": {"size": "5"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let before = hook.seen("/convert").len();
    let list = c.get(&widgets(group, "v2")).await;
    assert_eq!(list.code, 200, "{}", list.body);
    assert_eq!(list.body["apiVersion"], "conv.example.com/v2");
    let counts: Vec<&Value> = list.body["items"].as_array().unwrap().iter().map(|i| &i["spec"]["count"]).collect();
    assert_eq!(counts, [&json!(3), &json!(5)]);
    let reviews = hook.seen("/convert");
    assert_eq!(reviews.len(), before + 2);
    assert!(reviews[before..].iter().all(|r| r["request"]["objects"].as_array().unwrap().len() == 1));
    assert_eq!(c.get(&widgets(group, "v2")).await.body["items"], list.body["items"]);
    assert_eq!(hook.seen("/convert").len(), before + 2);

    // A v2 watcher sees a v2 patch converted; the patch applied to the object in v2.
    let rv = list.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = c.watch(&format!("{}?watch=true&resourceVersion={rv}", widgets(group, "v2"))).await;
    let r = c
        .patch(&format!("{}/a", widgets(group, "v2")), "application/merge-patch+json", &json!({"spec": {"count": 4}}))
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    let red4 = json!({"count": 4, "colour": "red"});
    assert_eq!(r.body["spec"], red4);
    let ev = w.next_within(SEC).await.unwrap();
    assert_eq!((ev["type"].as_str(), &ev["object"]["spec"]), (Some("MODIFIED"), &red4));
    assert_eq!(ev["object"]["apiVersion"], "conv.example.com/v2");
    assert_eq!(stored(&s, group, "a").await["spec"], json!({"size": "4", "color": "red"}));

    // kube-rs reads and server-side applies v2 as any other version.
    let gvk = GroupVersionKind::gvk(group, "v2", "Widget");
    let api: Api<DynamicObject> = Api::namespaced_with(kube_client(&s).await, "default", &ApiResource::from_gvk(&gvk));
    assert_eq!(api.get("b").await.unwrap().data["spec"], json!({"count": 5, "colour": "red"}));
    let applied = json!({"apiVersion": "conv.example.com/v2", "kind": "Widget", "metadata": {"name": "b"},
                         "spec": {"count": 6}});
    let o = api.patch("b", &PatchParams::apply("widget-controller"), &Patch::Apply(&applied)).await.unwrap();
    assert_eq!(o.data["spec"], json!({"count": 6, "colour": "red"}));
    assert_eq!(stored(&s, group, "b").await["spec"], json!({"size": "6", "color": "red"}));
    let names: Vec<String> =
        api.list(&Default::default()).await.unwrap().items.into_iter().map(|o| o.metadata.name.unwrap()).collect();
    assert_eq!(names, ["a", "b"]);

    // A kube-rs watcher's streaming list: its initial objects converted too.
    let stream = kube::runtime::watcher(api.clone(), kube::runtime::watcher::Config::default().streaming_lists());
    let mut stream = std::pin::pin!(stream);
    let mut initial = Vec::new();
    loop {
        match tokio::time::timeout(SEC, stream.next()).await.expect("watcher event").unwrap().unwrap() {
            kube::runtime::watcher::Event::InitApply(o) => initial.push(o.data["spec"].clone()),
            kube::runtime::watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(initial, [json!({"count": 4, "colour": "red"}), json!({"count": 6, "colour": "red"})]);

    // A delete answers a Success Status naming the object.
    let r = c.delete(&format!("{}/a", widgets(group, "v2"))).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        (r.body["status"].as_str(), r.body["details"]["name"].as_str()),
        (Some("Success"), Some("a")),
        "{}",
        r.body
    );
    assert_eq!(r.body["details"]["kind"], "widgets");
}

#[tokio::test]
async fn answers_are_checked_and_metadata_restored_as_kube_does() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    define(&c, &widgets_crd("meddle.example.com", hook.client_config("/meddle"))).await;
    define(&c, &widgets_crd("rename.example.com", hook.client_config("/rename"))).await;

    // Only labels and annotations may change: the generation is the stored object's.
    let w = json!({"apiVersion": "meddle.example.com/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"size": "2"}});
    assert_eq!(c.post(&widgets("meddle.example.com", "v1"), &w).await.code, 201);
    let r = c.get(&format!("{}/a", widgets("meddle.example.com", "v2"))).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["generation"], 1);
    assert_eq!(r.body["metadata"]["annotations"], json!({"converted-by": "webhook"}));
    assert_eq!(r.body["spec"], json!({"count": 2, "colour": "red"}));

    // A converted object of another name is refused, in kube's words.
    let mut w = w;
    w["apiVersion"] = json!("rename.example.com/v1");
    assert_eq!(c.post(&widgets("rename.example.com", "v1"), &w).await.code, 201);
    let r = c.get(&format!("{}/a", widgets("rename.example.com", "v2"))).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "conversion webhook for rename.example.com/v1, Kind=Widget returned invalid object: must have the same name: a != renamed"
    );
}

#[tokio::test]
async fn a_failing_or_unreachable_webhook_fails_the_request_and_stores_nothing() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let group = "fail.example.com";
    define(&c, &widgets_crd(group, hook.client_config("/fail"))).await;
    let r = c.post(&widgets(group, "v1"), &json!({"apiVersion": format!("{group}/v1"), "kind": "Widget", "metadata": {"name": "a"}, "spec": {"size": "1"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);

    // Reads in another version: kube's 500 without a reason.
    let r = c.get(&format!("{}/a", widgets(group, "v2"))).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(r.body["message"], "conversion webhook for fail.example.com/v1, Kind=Widget failed: cannot convert");
    assert!(r.body.get("reason").is_none(), "{}", r.body);
    let r = c.get(&widgets(group, "v2")).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(r.body["message"], "conversion webhook for fail.example.com/v1, Kind=Widget failed: cannot convert");
    // A watch whose objects cannot be converted ends.
    let mut w = c.watch(&format!("{}?watch=true", widgets(group, "v2"))).await;
    w.expect_end(SEC).await;
    // The storage version is still served.
    assert_eq!(c.get(&format!("{}/a", widgets(group, "v1"))).await.code, 200);

    // Writes in another version: nothing is stored.
    let r = c.post(&widgets(group, "v2"), &json!({"apiVersion": format!("{group}/v2"), "kind": "Widget", "metadata": {"name": "b"}, "spec": {"count": 2}})).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(r.body["message"], "conversion webhook for fail.example.com/v2, Kind=Widget failed: cannot convert");
    let names = c.get(&widgets(group, "v1")).await.body["items"].as_array().unwrap().len();
    assert_eq!(names, 1);

    // A webhook that cannot be reached: Go's words for the failed call.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let config = json!({"url": format!("https://{closed}/convert"), "caBundle": hook.ca_bundle});
    define(&c, &widgets_crd("gone.example.com", config)).await;
    let r = c.post(&widgets("gone.example.com", "v2"), &json!({"apiVersion": "gone.example.com/v2", "kind": "Widget", "metadata": {"name": "b"}, "spec": {"count": 2}})).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(
        r.body["message"],
        format!(
            "conversion webhook for gone.example.com/v2, Kind=Widget failed: Post \"https://{closed}/convert?timeout=30s\": dial tcp {closed}: connect: connection refused"
        )
    );
    assert_eq!(c.get(&widgets("gone.example.com", "v1")).await.body["items"], json!([]));

    // A definition whose webhook refuses is still deleted, its objects with it (in the storage
    // version, which needs no conversion).
    let name = format!("widgets.{group}");
    let list = c.get(&format!("{CRDS}?fieldSelector=metadata.name%3D{name}")).await.body;
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let mut w = c.watch(&format!("{CRDS}?watch=true&resourceVersion={rv}&fieldSelector=metadata.name%3D{name}")).await;
    assert_eq!(c.delete(&format!("{CRDS}/{name}")).await.code, 200);
    while w.next_within(SEC).await.expect("the definition's watch ended")["type"] != "DELETED" {}
    let left = s.store().storage().range(informer_apiserver::storage::RangeRequest {
        prefix: format!("{}/{group}/widgets/", s.store().cache().layout().prefix()),
        ..Default::default()
    });
    assert_eq!(left.await.unwrap().kvs.len(), 0);
}

#[tokio::test]
async fn an_admission_webhook_of_another_version_is_offered_the_object_converted() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let group = "conv.example.com";
    define(&c, &widgets_crd(group, hook.client_config("/convert"))).await;
    let labeller = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "labeller"},
        "webhooks": [{"name": "labeller.example.com", "clientConfig": hook.client_config("/mutate"),
                      "rules": [{"operations": ["CREATE"], "apiGroups": [group], "apiVersions": ["v1"],
                                 "resources": ["widgets"]}],
                      "sideEffects": "None", "admissionReviewVersions": ["v1"]}]});
    let configs = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
    assert_eq!(c.post(configs, &labeller).await.code, 201);
    assert_eq!(c.get(configs).await.code, 200);

    let r = c.post(&widgets(group, "v2"), &json!({"apiVersion": format!("{group}/v2"), "kind": "Widget", "metadata": {"name": "a"}, "spec": {"count": 7}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["apiVersion"], "conv.example.com/v2");
    assert_eq!(
        (&r.body["spec"], &r.body["metadata"]["labels"]),
        (&json!({"count": 7, "colour": "red"}), &json!({"mutated": "yes"}))
    );
    let offered = &hook.seen("/mutate")[0]["request"];
    assert_eq!(offered["requestKind"]["version"], "v2");
    assert_eq!(offered["kind"]["version"], "v1");
    assert_eq!(
        (offered["object"]["apiVersion"].as_str(), &offered["object"]["spec"]),
        (Some("conv.example.com/v1"), &json!({"size": "7"}))
    );
    let kept = stored(&s, group, "a").await;
    assert_eq!((&kept["spec"], &kept["metadata"]["labels"]), (&json!({"size": "7"}), &json!({"mutated": "yes"})));
}

#[tokio::test]
async fn objects_stored_before_the_storage_version_changed_are_converted_from_it() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let group = "conv.example.com";
    let mut crd = widgets_crd(group, hook.client_config("/convert"));
    define(&c, &crd).await;
    let r = c.post(&widgets(group, "v1"), &json!({"apiVersion": format!("{group}/v1"), "kind": "Widget", "metadata": {"name": "old"}, "spec": {"size": "2"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);

    // v2 becomes the storage version; the object stays stored in v1.
    crd["spec"]["versions"][0]["storage"] = json!(false);
    crd["spec"]["versions"][1]["storage"] = json!(true);
    let r = c
        .patch(&format!("{CRDS}/widgets.{group}"), "application/merge-patch+json", &json!({"spec": crd["spec"]}))
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"]["storedVersions"], json!(["v1", "v2"]));
    let before = hook.seen("/convert").len();
    let v2 = c.get(&format!("{}/old", widgets(group, "v2"))).await;
    assert_eq!((v2.code, &v2.body["spec"]), (200, &json!({"count": 2, "colour": "red"})), "{}", v2.body);
    let v1 = c.get(&format!("{}/old", widgets(group, "v1"))).await;
    assert_eq!(v1.body["spec"], json!({"size": "2", "color": "red"}));
    let reviews = hook.seen("/convert");
    assert_eq!(reviews.len(), before + 1, "only the v2 read converts");
    assert_eq!(reviews[before]["request"]["objects"][0]["apiVersion"], "conv.example.com/v1");

    // A write stores it in the new storage version; reading it in v1 now converts.
    let r = c
        .patch(&format!("{}/old", widgets(group, "v2")), "application/merge-patch+json", &json!({"spec": {"count": 3}}))
        .await;
    assert_eq!((r.code, &r.body["spec"]), (200, &json!({"count": 3, "colour": "red"})), "{}", r.body);
    let layout = s.store().cache().layout().clone();
    let info = s.store().registry().find(group, "v2", "widgets").cloned().unwrap();
    let kv = s.store().storage().get(&layout.object_key(&info, "default", "old")).await.unwrap().unwrap();
    let kept: Value = serde_json::from_slice(&kv.value).unwrap();
    assert_eq!(
        (kept["apiVersion"].as_str(), &kept["spec"]),
        (Some("conv.example.com/v2"), &json!({"count": 3, "colour": "red"}))
    );
    let v1 = c.get(&format!("{}/old", widgets(group, "v1"))).await;
    assert_eq!(v1.body["spec"], json!({"size": "3", "color": "red"}));
}

#[tokio::test]
async fn selectors_match_objects_as_the_version_asked_for_serves_them() {
    let hook = Webhook::start().await;
    let s = server().await;
    let c = Client::new(&s);
    let group = "label.example.com";
    let mut crd = widgets_crd(group, hook.client_config("/label"));
    crd["spec"]["versions"][1]["selectableFields"] = json!([{"jsonPath": ".spec.count"}]);
    define(&c, &crd).await;
    for (name, size) in [("a", "3"), ("b", "4")] {
        let r = c.post(&widgets(group, "v1"), &json!({"apiVersion": format!("{group}/v1"), "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}})).await;
        assert_eq!(r.code, 201, "{}", r.body);
    }
    let names = |r: &Resp| -> Vec<String> {
        r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    // The label the webhook gives and a field only v2 has select in v2.
    let r = c.get(&format!("{}?labelSelector=served-as%3Dv2", widgets(group, "v2"))).await;
    assert_eq!((r.code, names(&r)), (200, vec!["a".to_string(), "b".to_string()]), "{}", r.body);
    assert!(names(&c.get(&format!("{}?labelSelector=served-as%3Dv2", widgets(group, "v1"))).await).is_empty());
    let r = c.get(&format!("{}?fieldSelector=spec.count%3D4", widgets(group, "v2"))).await;
    assert_eq!((r.code, names(&r)), (200, vec!["b".to_string()]), "{}", r.body);
    // Pages are taken from the matching objects.
    let r = c.get(&format!("{}?labelSelector=served-as%3Dv2&limit=1", widgets(group, "v2"))).await;
    assert_eq!(names(&r), ["a"]);
    let next = r.body["metadata"]["continue"].as_str().expect("a continue token").to_string();
    let r = c.get(&format!("{}?labelSelector=served-as%3Dv2&limit=1&continue={next}", widgets(group, "v2"))).await;
    assert_eq!(names(&r), ["b"]);
    // A watch's initial objects and its events alike.
    let mut w = c.watch(&format!("{}?watch=true&fieldSelector=spec.count%3D3", widgets(group, "v2"))).await;
    let ev = w.next_within(SEC).await.unwrap();
    assert_eq!((ev["type"].as_str(), ev["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("a")));
    let r = c.post(&widgets(group, "v1"), &json!({"apiVersion": format!("{group}/v1"), "kind": "Widget", "metadata": {"name": "c"}, "spec": {"size": "3"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    loop {
        let ev = w.next_within(SEC).await.unwrap();
        if ev["type"] == "BOOKMARK" {
            continue;
        }
        assert_eq!((ev["type"].as_str(), ev["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("c")));
        break;
    }
}
