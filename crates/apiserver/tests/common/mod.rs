//! Shared helpers for the integration tests: a tiny HTTP/1.1 JSON client and
//! a line-oriented watch stream reader, both over hyper-util's client.

#![allow(dead_code)]

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use informer_apiserver::{ApiError, ApiServer};
use serde_json::{Value, json};

pub mod https;
pub mod recorded;
pub mod tools;

#[derive(Clone)]
pub struct Client {
    inner: HyperClient<HttpConnector, Full<Bytes>>,
    pub base: String,
    pub token: Option<String>,
    /// Headers sent with every request (impersonation…).
    pub headers: Vec<(String, String)>,
}

pub struct Resp {
    pub code: u16,
    pub headers: HeaderMap,
    pub body: Value,
    pub raw: Bytes,
}

/// A 422's causes as `field: message`, in the answer's order.
pub fn causes(r: &Resp) -> Vec<String> {
    let causes = r.body["details"]["causes"].as_array().cloned().unwrap_or_default();
    causes.iter().map(|c| format!("{}: {}", c["field"].as_str().unwrap(), c["message"].as_str().unwrap())).collect()
}

impl Client {
    pub fn new(server: &ApiServer) -> Self {
        Client {
            inner: HyperClient::builder(TokioExecutor::new()).build_http(),
            base: server.url(),
            token: None,
            headers: Vec::new(),
        }
    }

    pub fn with_token(mut self, t: &str) -> Self {
        self.token = Some(t.to_string());
        self
    }

    /// The client impersonating `user` (kube's `Impersonate-User` header).
    pub fn impersonating(mut self, user: &str) -> Self {
        self.headers.push(("impersonate-user".into(), user.into()));
        self
    }

    fn build(&self, method: Method, path: &str, body: Vec<u8>, ct: &str) -> Request<Full<Bytes>> {
        self.build_with(method, path, body, ct, "application/json", None)
    }

    fn build_with(
        &self,
        method: Method,
        path: &str,
        body: Vec<u8>,
        ct: &str,
        accept: &str,
        user_agent: Option<&str>,
    ) -> Request<Full<Bytes>> {
        let mut b = Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path))
            .header("content-type", ct)
            .header("accept", accept);
        if let Some(t) = &self.token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        if let Some(ua) = user_agent {
            b = b.header("user-agent", ua);
        }
        for (k, v) in &self.headers {
            b = b.header(k.as_str(), v.as_str());
        }
        b.body(Full::new(Bytes::from(body))).expect("request")
    }

    async fn send(&self, req: Request<Full<Bytes>>) -> Resp {
        let resp = tokio::time::timeout(Duration::from_secs(20), self.inner.request(req))
            .await
            .expect("request timed out")
            .expect("request failed");
        let code = resp.status().as_u16();
        let headers = resp.headers().clone();
        let raw = tokio::time::timeout(Duration::from_secs(30), resp.into_body().collect())
            .await
            .expect("response body timed out")
            .expect("body")
            .to_bytes();
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Resp { code, headers, body, raw }
    }

    pub async fn send_raw(&self, method: Method, path: &str, body: Vec<u8>, ct: &str) -> Resp {
        self.send_as(method, path, body, ct, None).await
    }

    /// Sends a request with the given User-Agent (none: no User-Agent header).
    pub async fn send_as(&self, method: Method, path: &str, body: Vec<u8>, ct: &str, user_agent: Option<&str>) -> Resp {
        self.send(self.build_with(method, path, body, ct, "application/json", user_agent)).await
    }

    /// A request with a body of type `ct` and its own `Accept` header.
    pub async fn send_accepting(&self, method: Method, path: &str, body: Vec<u8>, ct: &str, accept: &str) -> Resp {
        self.send(self.build_with(method, path, body, ct, accept, None)).await
    }

    /// A GET with headers of its own.
    pub async fn get_with_headers(&self, path: &str, headers: &[(&str, &str)]) -> Resp {
        let mut req = self.build_with(Method::GET, path, Vec::new(), "application/json", "application/json", None);
        for (k, v) in headers {
            req.headers_mut()
                .insert(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), http::HeaderValue::from_str(v).unwrap());
        }
        self.send(req).await
    }

    /// A GET with its own `Accept` header (Table, PartialObjectMetadata…).
    pub async fn get_accepting(&self, path: &str, accept: &str) -> Resp {
        self.send(self.build_with(Method::GET, path, Vec::new(), "application/json", accept, None)).await
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.send_raw(Method::GET, path, Vec::new(), "application/json").await
    }

    pub async fn post(&self, path: &str, v: &Value) -> Resp {
        self.send_raw(Method::POST, path, serde_json::to_vec(v).unwrap(), "application/json").await
    }

    pub async fn put(&self, path: &str, v: &Value) -> Resp {
        self.send_raw(Method::PUT, path, serde_json::to_vec(v).unwrap(), "application/json").await
    }

    pub async fn patch(&self, path: &str, ct: &str, v: &Value) -> Resp {
        self.send_raw(Method::PATCH, path, serde_json::to_vec(v).unwrap(), ct).await
    }

    pub async fn delete(&self, path: &str) -> Resp {
        self.send_raw(Method::DELETE, path, Vec::new(), "application/json").await
    }

    /// Opens a watch; panics unless it answers 200.
    pub async fn watch(&self, path: &str) -> WatchStream {
        self.watch_accepting(path, "application/json").await
    }

    pub async fn watch_accepting(&self, path: &str, accept: &str) -> WatchStream {
        let req = self.build_with(Method::GET, path, Vec::new(), "application/json", accept, None);
        let resp = self.inner.request(req).await.expect("watch request");
        assert_eq!(resp.status().as_u16(), 200, "watch {path}");
        WatchStream { body: resp.into_body(), buf: Vec::new(), done: false, broken: false }
    }
}

pub struct WatchStream {
    body: Incoming,
    buf: Vec<u8>,
    pub done: bool,
    /// The body ended with an error (a broken connection), not a clean end.
    pub broken: bool,
}

impl WatchStream {
    /// The next event, or None when the stream ended. Panics after `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        tokio::time::timeout(wait, self.next()).await.expect("timed out waiting for a watch event")
    }

    pub async fn next(&mut self) -> Option<Value> {
        let line = self.next_line().await?;
        Some(serde_json::from_slice(&line).expect("event json"))
    }

    /// The next event line as sent (with its newline), or None when the stream ended.
    pub async fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                return Some(self.buf.drain(..=i).collect());
            }
            // A partial line at the end of a broken body is not an event.
            if self.done {
                return None;
            }
            match self.body.frame().await {
                Some(Ok(f)) => {
                    if let Some(d) = f.data_ref() {
                        self.buf.extend_from_slice(d);
                    }
                }
                Some(Err(_)) => {
                    self.done = true;
                    self.broken = true;
                }
                None => self.done = true,
            }
        }
    }

    /// Asserts that the stream ends (within `wait`) with no further events.
    pub async fn expect_end(&mut self, wait: Duration) {
        let ev = tokio::time::timeout(wait, self.next()).await.expect("stream did not end");
        assert!(ev.is_none(), "unexpected event {ev:?}");
    }
}

/// How long one expected watch event may take when a controller of the server makes it.
pub const EVENT: Duration = Duration::from_secs(20);

/// Asserts that `/apis` lists each group of `pairs` right after the one before it.
pub async fn assert_listed_after(c: &Client, pairs: &[(&str, &str)]) {
    let apis = c.get("/apis").await;
    let groups: Vec<&str> =
        apis.body["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    let at = |g: &str| groups.iter().position(|n| *n == g).unwrap_or_else(|| panic!("{g} in {groups:?}"));
    for (before, group) in pairs {
        assert_eq!(at(before) + 1, at(group), "{group} after {before}: {groups:?}");
    }
}

/// The group and version priorities of the local APIService `name` (which must exist).
pub async fn api_service_priorities(c: &Client, name: &str) -> (Option<i64>, Option<i64>) {
    let service = c.get(&format!("/apis/apiregistration.k8s.io/v1/apiservices/{name}")).await;
    assert_eq!(service.code, 200, "{}", service.body);
    let spec = &service.body["spec"];
    (spec["groupPriorityMinimum"].as_i64(), spec["versionPriority"].as_i64())
}

/// Reads events until one satisfies `pred` (each within [`EVENT`]); returns it.
pub async fn until(w: &mut WatchStream, what: &str, mut pred: impl FnMut(&Value) -> bool) -> Value {
    loop {
        let e = tokio::time::timeout(EVENT, w.next())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
            .unwrap_or_else(|| panic!("the watch ended before {what}"));
        if pred(&e) {
            return e;
        }
    }
}

/// A pod spec with one container: the least a pod needs.
pub fn pod_spec() -> Value {
    json!({"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]})
}

/// A workload spec (Deployment, ReplicaSet, DaemonSet, StatefulSet) whose selector picks its
/// template's pods, labelled `app: <app>`.
pub fn workload_spec(app: &str) -> Value {
    json!({"selector": {"matchLabels": {"app": app}},
        "template": {"metadata": {"labels": {"app": app}}, "spec": pod_spec()}})
}

/// Where the admission configurations are served.
pub const ADMISSION: &str = "/apis/admissionregistration.k8s.io/v1";

/// Binds a ValidatingAdmissionPolicy `name` refusing every DELETE of `resource` in `group` (any
/// version) with `message`, and waits until the server's cache holds the binding.
pub async fn refuse_deletes(c: &Client, name: &str, (group, resource): (&str, &str), message: &str) {
    let policy = json!({"metadata": {"name": name}, "spec": {"failurePolicy": "Fail",
        "validations": [{"expression": "false", "message": message}],
        "matchConstraints": {"resourceRules": [{"apiGroups": [group], "apiVersions": ["*"],
                                                "operations": ["DELETE"], "resources": [resource]}]}}});
    let binding = json!({"metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}});
    assert_eq!(c.post(&format!("{ADMISSION}/validatingadmissionpolicies"), &policy).await.code, 201);
    assert_eq!(c.post(&format!("{ADMISSION}/validatingadmissionpolicybindings"), &binding).await.code, 201);
    assert_eq!(c.get(&format!("{ADMISSION}/validatingadmissionpolicybindings")).await.code, 200);
}

/// An apps/v1 Deployment of `replicas` nginx pods labelled `app: <name>`.
pub fn deployment(name: &str, replicas: u64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

pub fn pod(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    })
}

/// A kube-rs client of the server, from its kubeconfig.
pub async fn kube_client(s: &ApiServer) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(&s.kubeconfig_yaml()).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await.unwrap();
    kube::Client::try_from(cfg).unwrap()
}

pub fn rv_of(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"].as_str().expect("resourceVersion").parse().expect("numeric rv")
}

pub async fn server() -> ApiServer {
    informer_apiserver::testing::builder().start().await.expect("start")
}

/// A server authorizing with RBAC, as kube-apiserver's default `--authorization-mode`; the
/// client of [`Client::new`] is its administrator.
pub async fn rbac_server() -> ApiServer {
    informer_apiserver::testing::builder()
        .authorization(informer_apiserver::AuthorizationMode::Rbac)
        .start()
        .await
        .expect("start")
}

/// A server as the recorded kube-apiserver ran (`tests/fixtures/kube-apiserver`): without the
/// ServiceAccount admission plugin, so pods are stored as they are sent.
pub async fn recorded_server() -> ApiServer {
    informer_apiserver::testing::builder().service_account_admission(false).start().await.expect("start")
}

/// A server without the disruption controller, whose PodDisruptionBudgets keep the status their
/// writers give them (as kube-apiserver without kube-controller-manager).
pub async fn server_without_disruption_controller() -> ApiServer {
    informer_apiserver::testing::builder().disruption_controller(false).start().await.expect("start")
}

/// A server that also serves the namespaced custom type `widgets.example.com/v1` (a type with
/// no built-in schema).
pub async fn server_with_widgets() -> ApiServer {
    informer_apiserver::testing::builder()
        .register(informer_apiserver::ResourceInfo::new("example.com", "v1", "widgets", "Widget", true))
        .start()
        .await
        .expect("start")
}

/// Creates the namespace `fixtures`, where the recorded exchanges took place.
pub async fn fixtures_namespace(c: &Client) {
    let r = c.post("/api/v1/namespaces", &serde_json::json!({"metadata": {"name": "fixtures"}})).await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    // Its `default` ServiceAccount, which the server's controller writes a moment later, is
    // there before the test goes on (no write of it comes in the middle of the test).
    let mut w = c.watch("/api/v1/namespaces/fixtures/serviceaccounts?watch=1&resourceVersion=0").await;
    until(&mut w, "the default service account", |e| e["object"]["metadata"]["name"] == "default").await;
}

/// Creates namespaces (objects can be created only in existing ones).
pub async fn create_namespaces(s: &ApiServer, names: &[&str]) -> Result<(), ApiError> {
    informer_apiserver::testing::create_namespaces(s, names).await
}

pub const PODS: &str = "/api/v1/namespaces/default/pods";
pub const SEC: Duration = Duration::from_secs(5);

/// A Deployment's containers as (name, image) pairs, in order.
pub fn containers_of(v: &Value) -> Vec<(String, String)> {
    v["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| {
            (c["name"].as_str().unwrap_or_default().to_string(), c["image"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

/// Owned (name, image) pairs, to compare with [`containers_of`].
pub fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

/// Creates a CustomResourceDefinition and waits, on a watch of it, until it is established.
pub async fn define(c: &Client, crd: &Value) {
    const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let name = crd["metadata"]["name"].as_str().unwrap().to_string();
    let r = c.post(CRDS, crd).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let mut w = c.watch(&format!("{CRDS}?watch=true&fieldSelector=metadata.name%3D{name}")).await;
    loop {
        let ev = w.next_within(SEC).await.expect("the definition's watch ended");
        let conditions = ev["object"]["status"]["conditions"].as_array().cloned().unwrap_or_default();
        if conditions.iter().any(|c| c["type"] == "Established" && c["status"] == "True") {
            return;
        }
    }
}

/// A CustomResourceDefinition `<singular>s.example.com` of one served and stored version `v1`,
/// whose schema gives `spec` the schema `spec`.
pub fn crd_of(singular: &str, kind: &str, scope: &str, spec: Value) -> Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{singular}s.example.com")},
        "spec": {"group": "example.com", "scope": scope,
                 "names": {"plural": format!("{singular}s"), "singular": singular, "kind": kind},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]}
    })
}
