//! Protobuf over HTTP: kubectl's `create configmap` and `create secret` as recorded against
//! kube-apiserver v1.35 (`tests/fixtures/kube-apiserver/50-*`, `51-*`, the objects as
//! kube-apiserver then showed them in JSON: `53-*`, `54-*`, and in protobuf: `52-*`), kubectl's
//! protobuf creates of every version on the machine, the Status answers to bodies that cannot
//! be read, and answers — objects, lists, errors, watch streams — read back with the kube-rs
//! project's generated protobuf types (`k8s-pb`).

mod common;

use common::recorded::{comparable, recorded};
use common::tools::{kubectl_bin, kubectl_versions, tempdir};
use common::*;
use serde_json::{Value, json};

use bytes::Bytes;
use http_body_util::BodyExt;
use k8s_pb::api::core::v1::{ConfigMap, ConfigMapList};
use k8s_pb::apimachinery::pkg::apis::meta::v1::{Status, WatchEvent};
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn content_type(r: &Resp) -> &str {
    r.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default()
}

/// The `runtime.Unknown` of an enveloped body: (apiVersion, kind, raw message).
fn unwrap_envelope(body: &[u8]) -> (String, String, Vec<u8>) {
    let rest = body.strip_prefix(b"k8s\0").expect("the k8s\\0 magic");
    let u = Unknown::decode(rest).expect("a runtime.Unknown");
    let tm = u.type_meta.unwrap_or_default();
    (tm.api_version.unwrap_or_default(), tm.kind.unwrap_or_default(), u.raw.unwrap_or_default())
}

#[tokio::test]
async fn kubectl_protobuf_creates_store_what_kube_apiserver_stores() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    for (create, view) in [
        ("50-proto-kubectl-create-configmap.txt", "53-proto-get-configmap-json-view.txt"),
        ("51-proto-kubectl-create-secret.txt", "54-proto-get-secret-json-view.txt"),
    ] {
        let step = recorded(create);
        assert_eq!(step.content_type, "application/vnd.kubernetes.protobuf");
        let r = c.send_raw(step.method.clone(), &step.path, step.request_body.clone(), &step.content_type).await;
        assert_eq!(r.code, 201, "{create}: {}", r.body);
        let expected = recorded(view).response;
        assert_eq!(comparable(&r.body), comparable(&expected), "{create}");
        // kube-apiserver keeps no generation for ConfigMaps and Secrets.
        assert_eq!(r.body["metadata"].get("generation"), expected["metadata"].get("generation"), "{create}");
        let name = expected["metadata"]["name"].as_str().unwrap();
        let plural = if expected["kind"] == "Secret" { "secrets" } else { "configmaps" };
        let stored = c.get(&format!("/api/v1/namespaces/fixtures/{plural}/{name}")).await;
        assert_eq!(comparable(&stored.body), comparable(&expected), "{create}: stored");
    }
}

#[tokio::test]
async fn unreadable_protobuf_bodies_are_refused_whole() {
    let s = server_with_widgets().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let configmap = recorded("50-proto-kubectl-create-configmap.txt").request_body;
    let secret = recorded("51-proto-kubectl-create-secret.txt").request_body;
    let pb = "application/vnd.kubernetes.protobuf";
    let configmaps = "/api/v1/namespaces/fixtures/configmaps";

    // Cut short: 400, nothing stored.
    let r = c.send_raw(http::Method::POST, configmaps, configmap[..configmap.len() - 9].to_vec(), pb).await;
    assert_eq!((r.code, r.body["reason"].as_str()), (400, Some("BadRequest")), "{}", r.body);
    // Not an envelope at all.
    let r = c.send_raw(http::Method::POST, configmaps, b"{\"kind\":\"ConfigMap\"}".to_vec(), pb).await;
    assert_eq!(r.code, 400, "{}", r.body);
    // A Secret sent to the ConfigMaps.
    let r = c.send_raw(http::Method::POST, configmaps, secret, pb).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(c.get(configmaps).await.body["items"], json!([]));
    // Custom resources have no protobuf form.
    let widgets = "/apis/example.com/v1/namespaces/fixtures/widgets";
    let r = c.send_raw(http::Method::POST, widgets, configmap, pb).await;
    assert_eq!(r.code, 415, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
    );
}

#[tokio::test]
async fn kubectl_create_sends_protobuf_and_succeeds() {
    let s = server().await;
    let c = Client::new(&s);
    let dir = tempdir("kubectl-protobuf");
    let kc = dir.join("kubeconfig");
    s.write_kubeconfig(&kc).unwrap();
    for (i, bin) in kubectl_versions().iter().enumerate() {
        let ns = format!("pb-{i}");
        let cache = dir.join(format!("cache-{i}"));
        let run = |args: Vec<String>| {
            let (bin, kc, cache) = (bin.clone(), kc.clone(), cache.clone());
            async move {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let (ok, out, err) = kubectl_bin(&bin, &kc, &cache, &args).await;
                assert!(ok, "{bin} {args:?}: {out}{err}");
            }
        };
        let a = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        run(a(&format!("create namespace {ns}"))).await;
        run(a(&format!("create configmap settings -n {ns} --from-literal=a=b --from-literal=c=d"))).await;
        run(a(&format!("create secret generic creds -n {ns} --from-literal=p=q"))).await;
        run(a(&format!("create deployment web -n {ns} --image=nginx:1.27 --replicas=0 --port=8080"))).await;
        run(a(&format!("create service clusterip web -n {ns} --tcp=80:8080"))).await;

        let get = |path: String| {
            let c = &c;
            async move { c.get(&path).await.body }
        };
        let cm = get(format!("/api/v1/namespaces/{ns}/configmaps/settings")).await;
        assert_eq!(cm["data"], json!({"a": "b", "c": "d"}), "{bin}");
        let secret = get(format!("/api/v1/namespaces/{ns}/secrets/creds")).await;
        assert_eq!((&secret["data"], &secret["type"]), (&json!({"p": "cQ=="}), &json!("Opaque")), "{bin}");
        let d = get(format!("/apis/apps/v1/namespaces/{ns}/deployments/web")).await;
        assert_eq!(d["spec"]["replicas"], 0, "{bin}: an explicit zero is kept");
        let container = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            (&container["image"], &container["ports"][0]["containerPort"]),
            (&json!("nginx:1.27"), &json!(8080))
        );
        assert_eq!(d["spec"]["selector"]["matchLabels"], json!({"app": "web"}), "{bin}");
        // Go's encoder writes every unset number and boolean as 0 and false; those Go holds by
        // value are stored as kube-apiserver writes them back: not at all, and not owned.
        let template = &d["spec"]["template"];
        for (at, absent) in [
            (&d["spec"], "paused"),
            (&d["spec"], "minReadySeconds"),
            (&template["metadata"], "generation"),
            (&template["spec"], "hostNetwork"),
            (container, "stdin"),
            (container, "tty"),
        ] {
            assert!(at.get(absent).is_none(), "{bin}: {absent} in {at}");
        }
        let owned = d["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"].to_string();
        assert!(!owned.contains("f:paused") && !owned.contains("f:stdin"), "{bin}: {owned}");
        assert!(d["metadata"].get("creationTimestamp").and_then(Value::as_str).is_some(), "{bin}");
        let svc = get(format!("/api/v1/namespaces/{ns}/services/web")).await;
        let port = &svc["spec"]["ports"][0];
        assert_eq!((&port["port"], &port["targetPort"]), (&json!(80), &json!(8080)), "{bin}: {svc}");
    }
}

#[tokio::test]
async fn answers_are_protobuf_for_clients_that_prefer_it() {
    let s = server_with_widgets().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let step = recorded("50-proto-kubectl-create-configmap.txt");
    assert_eq!(c.send_raw(step.method.clone(), &step.path, step.request_body, PROTOBUF).await.code, 201);
    let path = "/api/v1/namespaces/fixtures/configmaps/settings";

    // One object: ours reads as kube-apiserver's did (`52-*`), but for identity and versions.
    let r = c.get_accepting(path, "application/vnd.kubernetes.protobuf,application/json").await;
    assert_eq!((r.code, content_type(&r)), (200, PROTOBUF));
    let (api_version, kind, raw) = unwrap_envelope(&r.raw);
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "ConfigMap"));
    let ours = ConfigMap::decode(raw.as_slice()).unwrap();
    let kubes = {
        let text = std::fs::read_to_string(format!(
            "{}/tests/fixtures/kube-apiserver/52-proto-get-configmap.txt",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let resp = text.split_once("=== RESPONSE ===").unwrap().1.split_once("\n\n").unwrap().1;
        let b64: String = resp.lines().skip(1).take_while(|l| !l.trim().is_empty()).collect();
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        ConfigMap::decode(unwrap_envelope(&bytes).2.as_slice()).unwrap()
    };
    assert_eq!(ours.data, kubes.data);
    let (m, k) = (ours.metadata.unwrap(), kubes.metadata.unwrap());
    assert_eq!((&m.name, &m.namespace), (&k.name, &k.namespace));
    assert!(m.creation_timestamp.and_then(|t| t.seconds).is_some_and(|s| s > 0));
    assert_eq!(m.resource_version.unwrap(), c.get(path).await.body["metadata"]["resourceVersion"]);

    // A list.
    let r = c.get_accepting("/api/v1/namespaces/fixtures/configmaps", PROTOBUF).await;
    assert_eq!(r.code, 200);
    let (_, kind, raw) = unwrap_envelope(&r.raw);
    assert_eq!(kind, "ConfigMapList");
    let list = ConfigMapList::decode(raw.as_slice()).unwrap();
    let names: Vec<_> = list.items.iter().map(|i| i.metadata.clone().unwrap().name.unwrap()).collect();
    assert_eq!(names, ["settings"]);
    assert_eq!(list.metadata.unwrap().resource_version.unwrap(), s.resource_version().to_string());

    // An error is a protobuf Status.
    let r = c.get_accepting("/api/v1/namespaces/fixtures/configmaps/missing", PROTOBUF).await;
    assert_eq!((r.code, content_type(&r)), (404, PROTOBUF));
    let (_, kind, raw) = unwrap_envelope(&r.raw);
    assert_eq!(kind, "Status");
    let status = Status::decode(raw.as_slice()).unwrap();
    assert_eq!((status.reason.as_deref(), status.code), (Some("NotFound"), Some(404)));

    // Clients that prefer JSON get JSON; custom resources have no protobuf form.
    let r = c.get_accepting(path, "application/json, application/vnd.kubernetes.protobuf").await;
    assert_eq!(content_type(&r), "application/json");
    let widgets = "/apis/example.com/v1/namespaces/fixtures/widgets";
    let r = c.get_accepting(widgets, "application/vnd.kubernetes.protobuf,application/json").await;
    assert_eq!(content_type(&r), "application/json");
    assert_eq!(c.get_accepting(widgets, PROTOBUF).await.code, 406);
}

#[tokio::test]
async fn watch_streams_are_length_delimited_watch_events() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let configmaps = "/api/v1/namespaces/fixtures/configmaps";
    c.post(configmaps, &json!({"metadata": {"name": "before"}, "data": {"a": "1"}})).await;
    let rv = s.resource_version();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<Bytes>>();
    let req = http::Request::get(format!(
        "{}{configmaps}?watch=true&resourceVersion={}&allowWatchBookmarks=true",
        s.url(),
        rv - 1
    ))
    .header("accept", PROTOBUF)
    .body(http_body_util::Empty::new())
    .unwrap();
    let r = client.request(req).await.unwrap();
    assert_eq!(r.headers()["content-type"], "application/vnd.kubernetes.protobuf;stream=watch");
    let mut body = r.into_body();
    c.post(configmaps, &json!({"metadata": {"name": "after"}, "data": {"b": "2"}})).await;
    c.delete(&format!("{configmaps}/before")).await;

    let mut buf: Vec<u8> = Vec::new();
    let mut events: Vec<(String, String)> = Vec::new();
    while events.len() < 3 {
        let frame = tokio::time::timeout(std::time::Duration::from_secs(10), body.frame())
            .await
            .expect("a watch event in time")
            .expect("the stream goes on")
            .unwrap();
        buf.extend_from_slice(&frame.into_data().unwrap());
        while buf.len() >= 4 {
            let len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
            if buf.len() < 4 + len {
                break;
            }
            let ev = WatchEvent::decode(&buf[4..4 + len]).expect("a WatchEvent");
            buf.drain(..4 + len);
            let (_, kind, raw) = unwrap_envelope(&ev.object.unwrap().raw.unwrap());
            assert_eq!(kind, "ConfigMap");
            let name = ConfigMap::decode(raw.as_slice()).unwrap().metadata.unwrap().name.unwrap();
            events.push((ev.r#type.unwrap(), name));
        }
    }
    let want = [("ADDED", "before"), ("ADDED", "after"), ("DELETED", "before")];
    assert_eq!(events, want.map(|(t, n)| (t.to_string(), n.to_string())));
}

/// An object as a protobuf body, enveloped.
fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    use k8s_pb::apimachinery::pkg::runtime::TypeMeta;
    let u = Unknown {
        type_meta: Some(TypeMeta { api_version: Some(api_version.into()), kind: Some(kind.into()) }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(u.encode_to_vec());
    out
}

#[tokio::test]
async fn pods_written_by_another_protobuf_encoder_read_as_their_json() {
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apimachinery::pkg::api::resource::Quantity;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let container = core::Container {
        name: Some("web".into()),
        image: Some("nginx:1.27".into()),
        ports: vec![core::ContainerPort {
            container_port: Some(8080),
            name: Some("http".into()),
            ..Default::default()
        }],
        env: vec![core::EnvVar {
            name: Some("MODE".into()),
            value_from: Some(core::EnvVarSource {
                config_map_key_ref: Some(core::ConfigMapKeySelector {
                    local_object_reference: Some(core::LocalObjectReference { name: Some("settings".into()) }),
                    key: Some("mode".into()),
                    optional: Some(false),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }],
        resources: Some(core::ResourceRequirements {
            limits: [("cpu".to_string(), Quantity { string: Some("250m".into()) })].into(),
            ..Default::default()
        }),
        readiness_probe: Some(core::Probe {
            handler: Some(core::ProbeHandler {
                http_get: Some(core::HttpGetAction {
                    path: Some("/healthz".into()),
                    port: Some(IntOrString { r#type: Some(1), int_val: Some(0), str_val: Some("http".into()) }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            period_seconds: Some(5),
            ..Default::default()
        }),
        volume_mounts: vec![core::VolumeMount {
            name: Some("data".into()),
            mount_path: Some("/data".into()),
            ..Default::default()
        }],
        ..Default::default()
    };
    let pod = core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: Some("pb".into()),
            labels: [("app".to_string(), "pb".to_string())].into(),
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            containers: vec![container],
            volumes: vec![core::Volume {
                name: Some("data".into()),
                volume_source: Some(core::VolumeSource {
                    empty_dir: Some(core::EmptyDirVolumeSource {
                        size_limit: Some(Quantity { string: Some("1Gi".into()) }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
            }],
            termination_grace_period_seconds: Some(0),
            ..Default::default()
        }),
        status: None,
    };
    let body = envelope("v1", "Pod", pod.encode_to_vec());
    let pods = "/api/v1/namespaces/fixtures/pods";
    let r = c.send_raw(http::Method::POST, pods, body, PROTOBUF).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let got = c.get(&format!("{pods}/pb")).await.body;
    let spec = &got["spec"];
    let ctr = &spec["containers"][0];
    assert_eq!(ctr["ports"], json!([{"containerPort": 8080, "name": "http", "protocol": "TCP"}]));
    assert_eq!(
        ctr["env"],
        json!([{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode", "optional": false}}}])
    );
    // Requests default to the limits, as kube-apiserver defaults them.
    assert_eq!(ctr["resources"], json!({"limits": {"cpu": "250m"}, "requests": {"cpu": "250m"}}));
    let probe = &ctr["readinessProbe"];
    assert_eq!(probe["httpGet"]["port"], "http", "{probe}");
    assert_eq!((probe["httpGet"]["path"].as_str(), probe["periodSeconds"].as_i64()), (Some("/healthz"), Some(5)));
    assert_eq!(spec["volumes"][0], json!({"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}));
    let credentials = spec["volumes"][1]["name"].as_str().unwrap_or_default();
    assert!(credentials.starts_with("kube-api-access-"), "the service account's: {}", spec["volumes"]);
    assert_eq!(spec["terminationGracePeriodSeconds"], 0, "an explicit zero is kept");
    assert_eq!(got["metadata"]["labels"], json!({"app": "pb"}));

    // And read back in protobuf, the same pod as k8s-pb's types see it.
    let bytes = c.get_accepting(&format!("{pods}/pb"), PROTOBUF).await.raw;
    let back = core::Pod::decode(unwrap_envelope(&bytes).2.as_slice()).unwrap();
    let back_ctr = &back.spec.as_ref().unwrap().containers[0];
    let http_get = back_ctr.readiness_probe.clone().and_then(|p| p.handler).and_then(|h| h.http_get).unwrap();
    let port = http_get.port.unwrap();
    assert_eq!((port.r#type, port.str_val.as_deref()), (Some(1), Some("http")));
    assert_eq!((http_get.path.as_deref(), http_get.scheme.as_deref()), (Some("/healthz"), Some("HTTP")));
    assert_eq!(back_ctr.env, pod.spec.as_ref().unwrap().containers[0].env);
    let volumes = &back.spec.as_ref().unwrap().volumes;
    assert_eq!(volumes[..1], pod.spec.as_ref().unwrap().volumes[..]);
    let projected = volumes[1].volume_source.as_ref().and_then(|s| s.projected.as_ref()).unwrap();
    assert_eq!((projected.sources.len(), projected.default_mode), (3, Some(420)));
    let token = projected.sources[0].service_account_token.as_ref().unwrap();
    assert_eq!((token.path.as_deref(), token.expiration_seconds), (Some("token"), Some(3607)));

    // A protobuf DeleteOptions body: a stale precondition is a conflict, a current one deletes.
    let delete = |rv: &str| {
        let opts = meta::DeleteOptions {
            preconditions: Some(meta::Preconditions { resource_version: Some(rv.into()), uid: None }),
            ..Default::default()
        };
        envelope("v1", "DeleteOptions", opts.encode_to_vec())
    };
    let path = format!("{pods}/pb");
    let r = c.send_raw(http::Method::DELETE, &path, delete("1"), PROTOBUF).await;
    assert_eq!(r.code, 409, "{}", r.body);
    let rv = got["metadata"]["resourceVersion"].as_str().unwrap();
    let r = c.send_raw(http::Method::DELETE, &path, delete(rv), PROTOBUF).await;
    assert_eq!(r.code, 200, "{}", r.body);
}

/// Zeros as Go's protobuf encoder writes them: every unset string as "" and every number and
/// boolean held by value as 0 and false, a pointer's only when set. Read back in JSON, the
/// objects are as kube-apiserver writes them: the zeros Go holds by value gone, a pointer's ""
/// and 0 kept, the fields Go always writes present.
#[tokio::test]
async fn zeros_from_go_encoders_are_stored_as_kube_apiserver_stores_them() {
    use k8s_pb::api::apps::v1 as apps;
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::api::discovery::v1 as discovery;
    use k8s_pb::apimachinery::pkg::api::resource::Quantity;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let meta = |name: &str| meta::ObjectMeta {
        name: Some(name.into()),
        generate_name: Some(String::new()),
        namespace: Some(String::new()),
        generation: Some(0),
        ..Default::default()
    };
    let post = |path: &'static str, body: Vec<u8>| {
        let c = &c;
        async move {
            let r = c.send_raw(http::Method::POST, path, body, PROTOBUF).await;
            assert_eq!(r.code, 201, "{}", r.body);
            r.body
        }
    };

    let claim = core::PersistentVolumeClaim {
        metadata: Some(meta("no-class")),
        spec: Some(core::PersistentVolumeClaimSpec {
            access_modes: vec!["ReadWriteOnce".into()],
            storage_class_name: Some(String::new()),
            volume_name: Some(String::new()),
            resources: Some(core::VolumeResourceRequirements {
                requests: [("storage".to_string(), Quantity { string: Some("1Gi".into()) })].into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    };
    let got = post(
        "/api/v1/namespaces/fixtures/persistentvolumeclaims",
        envelope("v1", "PersistentVolumeClaim", claim.encode_to_vec()),
    )
    .await;
    assert_eq!(got["spec"]["storageClassName"], "", "a pointer's \"\" asks for no class: {got}");
    assert!(got["spec"].get("volumeName").is_none(), "{got}");
    assert!(got["metadata"].get("generateName").is_none(), "{got}");

    let container = core::Container {
        name: Some("web".into()),
        image: Some("nginx".into()),
        stdin: Some(false),
        stdin_once: Some(false),
        tty: Some(false),
        ports: vec![core::ContainerPort { container_port: Some(80), host_port: Some(0), ..Default::default() }],
        ..Default::default()
    };
    let labels: std::collections::BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
    let deployment = apps::Deployment {
        metadata: Some(meta("web")),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            selector: Some(meta::LabelSelector { match_labels: labels.clone(), ..Default::default() }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta { labels, generation: Some(0), ..Default::default() }),
                spec: Some(core::PodSpec {
                    containers: vec![container],
                    host_network: Some(false),
                    host_pid: Some(false),
                    termination_grace_period_seconds: Some(0),
                    ..Default::default()
                }),
            }),
            min_ready_seconds: Some(0),
            paused: Some(false),
            revision_history_limit: Some(0),
            ..Default::default()
        }),
        status: None,
    };
    let got = post(
        "/apis/apps/v1/namespaces/fixtures/deployments",
        envelope("apps/v1", "Deployment", deployment.encode_to_vec()),
    )
    .await;
    let spec = &got["spec"];
    assert_eq!((&spec["replicas"], &spec["revisionHistoryLimit"]), (&json!(0), &json!(0)), "pointers' zeros: {spec}");
    assert_eq!(spec["template"]["spec"]["terminationGracePeriodSeconds"], 0);
    for absent in ["paused", "minReadySeconds"] {
        assert!(spec.get(absent).is_none(), "{absent}: {spec}");
    }
    assert_eq!(spec["template"]["metadata"], json!({"labels": {"app": "web"}}));
    let pod_spec = &spec["template"]["spec"];
    assert!(pod_spec.get("hostNetwork").is_none() && pod_spec.get("hostPID").is_none(), "{pod_spec}");
    let ctr = &pod_spec["containers"][0];
    assert_eq!(ctr["ports"], json!([{"containerPort": 80, "protocol": "TCP"}]));
    assert!(["stdin", "stdinOnce", "tty"].iter().all(|f| ctr.get(f).is_none()), "{ctr}");

    // An EndpointSlice's unnamed port is named "" (a pointer); no endpoints is `null`, as Go
    // writes a list without `omitempty`.
    let slice = discovery::EndpointSlice {
        metadata: Some(meta("web-1")),
        address_type: Some("IPv4".into()),
        endpoints: vec![],
        ports: vec![discovery::EndpointPort {
            name: Some(String::new()),
            port: Some(8080),
            protocol: Some("TCP".into()),
            ..Default::default()
        }],
    };
    let got = post(
        "/apis/discovery.k8s.io/v1/namespaces/fixtures/endpointslices",
        envelope("discovery.k8s.io/v1", "EndpointSlice", slice.encode_to_vec()),
    )
    .await;
    assert_eq!(got["ports"], json!([{"name": "", "port": 8080, "protocol": "TCP"}]), "{got}");
    assert_eq!(got["endpoints"], Value::Null);
    assert!(got.as_object().unwrap().contains_key("endpoints"), "{got}");
}

/// A user's extra values are a message of `items` in protobuf and a bare list in JSON: read
/// from a protobuf SubjectAccessReview and written back in its protobuf answer.
#[tokio::test]
async fn extra_values_cross_between_protobuf_and_json() {
    use k8s_pb::api::authorization::v1::{
        ExtraValue, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    };
    let s = server().await;
    let c = Client::new(&s);
    let review = SubjectAccessReview {
        spec: Some(SubjectAccessReviewSpec {
            user: Some("ann".into()),
            extra: [("scopes".to_string(), ExtraValue { items: vec!["a".into(), "b".into()] })].into(),
            resource_attributes: Some(ResourceAttributes {
                verb: Some("get".into()),
                resource: Some("pods".into()),
                namespace: Some("default".into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let body = envelope("authorization.k8s.io/v1", "SubjectAccessReview", review.encode_to_vec());
    let path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let json = c.send_raw(http::Method::POST, path, body.clone(), PROTOBUF).await;
    assert_eq!(json.code, 201, "{}", json.body);
    assert_eq!(json.body["spec"]["extra"], json!({"scopes": ["a", "b"]}));
    let r = c.send_accepting(http::Method::POST, path, body, PROTOBUF, PROTOBUF).await;
    assert_eq!((r.code, content_type(&r)), (201, PROTOBUF));
    let (_, kind, raw) = unwrap_envelope(&r.raw);
    assert_eq!(kind, "SubjectAccessReview");
    let answer = SubjectAccessReview::decode(raw.as_slice()).unwrap();
    assert_eq!(answer.spec.unwrap().extra["scopes"].items, ["a", "b"]);
}

#[tokio::test]
async fn the_storage_node_and_aggregator_kinds_are_answered_in_protobuf() {
    use k8s_pb::api::node::v1::RuntimeClass;
    use k8s_pb::api::storage::v1::{CSIDriver, CSIDriverSpec, VolumeAttachment};
    use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use k8s_pb::apimachinery::pkg::runtime::TypeMeta;
    use k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
    let s = server().await;
    let c = Client::new(&s);
    // A CSIDriver written by a protobuf client is defaulted as one written in JSON; the others are
    // written in JSON and read in protobuf.
    let driver = CSIDriver {
        metadata: Some(ObjectMeta { name: Some("csi.example.com".into()), ..Default::default() }),
        spec: Some(CSIDriverSpec { pod_info_on_mount: Some(true), ..Default::default() }),
    };
    let envelope = |api_version: &str, kind: &str, raw: Vec<u8>| {
        let type_meta = Some(TypeMeta { api_version: Some(api_version.into()), kind: Some(kind.into()) });
        let u = Unknown {
            type_meta,
            raw: Some(raw),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        [b"k8s\0".to_vec(), u.encode_to_vec()].concat()
    };
    let body = envelope("storage.k8s.io/v1", "CSIDriver", driver.encode_to_vec());
    let r = c.send_raw(http::Method::POST, "/apis/storage.k8s.io/v1/csidrivers", body, PROTOBUF).await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.raw));
    let got = c.get_accepting("/apis/storage.k8s.io/v1/csidrivers/csi.example.com", PROTOBUF).await;
    let (api_version, kind, raw) = unwrap_envelope(&got.raw);
    assert_eq!((api_version.as_str(), kind.as_str()), ("storage.k8s.io/v1", "CSIDriver"));
    let spec = CSIDriver::decode(raw.as_slice()).unwrap().spec.unwrap();
    assert_eq!((spec.attach_required, spec.pod_info_on_mount), (Some(true), Some(true)));
    assert_eq!(spec.volume_lifecycle_modes, ["Persistent"]);

    let va = json!({"metadata": {"name": "va-1"}, "spec": {"attacher": "csi.example.com", "nodeName": "node-1",
        "source": {"persistentVolumeName": "pv-1"}}});
    assert_eq!(c.post("/apis/storage.k8s.io/v1/volumeattachments", &va).await.code, 201);
    let got = c.get_accepting("/apis/storage.k8s.io/v1/volumeattachments/va-1", PROTOBUF).await;
    let attachment = VolumeAttachment::decode(unwrap_envelope(&got.raw).2.as_slice()).unwrap();
    assert_eq!(attachment.status.unwrap().attached, Some(false));
    let class = json!({"metadata": {"name": "gvisor"}, "handler": "runsc"});
    assert_eq!(c.post("/apis/node.k8s.io/v1/runtimeclasses", &class).await.code, 201);
    let got = c.get_accepting("/apis/node.k8s.io/v1/runtimeclasses/gvisor", PROTOBUF).await;
    assert_eq!(RuntimeClass::decode(unwrap_envelope(&got.raw).2.as_slice()).unwrap().handler.as_deref(), Some("runsc"));
    let got = c.get_accepting("/apis/apiregistration.k8s.io/v1/apiservices/v1.apps", PROTOBUF).await;
    let service = APIService::decode(unwrap_envelope(&got.raw).2.as_slice()).unwrap();
    assert_eq!(service.spec.unwrap().group_priority_minimum, Some(17800));
    let available = service.status.unwrap().conditions;
    assert_eq!(available[0].reason.as_deref(), Some("Local"));
}

#[tokio::test]
async fn the_dynamic_resource_kinds_are_answered_in_protobuf() {
    use k8s_pb::api::resource::v1::{
        DeviceClaim, DeviceRequest, ExactDeviceRequest, ResourceClaim, ResourceClaimSpec, ResourceSlice,
    };
    use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use k8s_pb::apimachinery::pkg::runtime::TypeMeta;
    let s = server().await;
    let c = Client::new(&s);
    // A claim written by a protobuf client is defaulted as one written in JSON.
    let request = DeviceRequest {
        name: Some("gpu".into()),
        exactly: Some(ExactDeviceRequest { device_class_name: Some("gpu.example.com".into()), ..Default::default() }),
        ..Default::default()
    };
    let claim = ResourceClaim {
        metadata: Some(ObjectMeta { name: Some("gpu".into()), ..Default::default() }),
        spec: Some(ResourceClaimSpec { devices: Some(DeviceClaim { requests: vec![request], ..Default::default() }) }),
        status: None,
    };
    let type_meta =
        Some(TypeMeta { api_version: Some("resource.k8s.io/v1".into()), kind: Some("ResourceClaim".into()) });
    let u = Unknown {
        type_meta,
        raw: Some(claim.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let body = [b"k8s\0".to_vec(), u.encode_to_vec()].concat();
    let path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims";
    let r = c.send_raw(http::Method::POST, path, body, PROTOBUF).await;
    assert_eq!(r.code, 201, "{}", String::from_utf8_lossy(&r.raw));
    let got = c.get_accepting(&format!("{path}/gpu"), PROTOBUF).await;
    let (api_version, kind, raw) = unwrap_envelope(&got.raw);
    assert_eq!((api_version.as_str(), kind.as_str()), ("resource.k8s.io/v1", "ResourceClaim"));
    let read = ResourceClaim::decode(raw.as_slice()).unwrap();
    let exactly = read.spec.unwrap().devices.unwrap().requests.remove(0).exactly.unwrap();
    assert_eq!((exactly.allocation_mode.as_deref(), exactly.count), (Some("ExactCount"), Some(1)));

    let slice = json!({"metadata": {"name": "s"}, "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
        "pool": {"name": "node-1", "resourceSliceCount": 1}, "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}}}]}});
    assert_eq!(c.post("/apis/resource.k8s.io/v1/resourceslices", &slice).await.code, 201);
    let got = c.get_accepting("/apis/resource.k8s.io/v1/resourceslices/s", PROTOBUF).await;
    let spec = ResourceSlice::decode(unwrap_envelope(&got.raw).2.as_slice()).unwrap().spec.unwrap();
    assert_eq!(spec.node_name.as_deref(), Some("node-1"));
    assert_eq!(spec.devices[0].attributes["model"].string.as_deref(), Some("a100"));
}

#[tokio::test]
async fn the_flowcontrol_kinds_are_answered_in_protobuf() {
    use k8s_pb::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfigurationList};
    let s = server().await;
    let c = Client::new(&s);
    let got = c.get_accepting("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/probes", PROTOBUF).await;
    assert_eq!(content_type(&got), PROTOBUF);
    let (api_version, kind, raw) = unwrap_envelope(&got.raw);
    assert_eq!((api_version.as_str(), kind.as_str()), ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema"));
    let schema = FlowSchema::decode(raw.as_slice()).unwrap();
    let spec = schema.spec.unwrap();
    assert_eq!(
        (spec.matching_precedence, spec.priority_level_configuration.unwrap().name.as_deref()),
        (Some(2), Some("exempt"))
    );
    let conditions = schema.status.unwrap().conditions;
    assert_eq!((conditions[0].r#type.as_deref(), conditions[0].status.as_deref()), (Some("Dangling"), Some("False")));
    let got = c.get_accepting("/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations", PROTOBUF).await;
    let list = PriorityLevelConfigurationList::decode(unwrap_envelope(&got.raw).2.as_slice()).unwrap();
    assert_eq!(list.items.len(), 8);
}

#[tokio::test]
async fn the_service_cidr_kinds_are_answered_in_protobuf() {
    use k8s_pb::api::networking::v1::ServiceCIDR;
    let s = server().await;
    let c = Client::new(&s);
    let got = c.get_accepting("/apis/networking.k8s.io/v1/servicecidrs/kubernetes", PROTOBUF).await;
    assert_eq!(content_type(&got), PROTOBUF);
    let (api_version, kind, raw) = unwrap_envelope(&got.raw);
    assert_eq!((api_version.as_str(), kind.as_str()), ("networking.k8s.io/v1", "ServiceCIDR"));
    let cidr = ServiceCIDR::decode(raw.as_slice()).unwrap();
    assert_eq!(cidr.spec.unwrap().cidrs, ["10.96.0.0/12"]);
    let ready = &cidr.status.unwrap().conditions[0];
    assert_eq!((ready.r#type.as_deref(), ready.status.as_deref()), (Some("Ready"), Some("True")));
}
