//! Answers in YAML over HTTP (`Accept: application/yaml`), as kube-apiserver writes them:
//! objects byte for byte as kubectl's `-o yaml` prints the same JSON (both go through
//! sigs.k8s.io/yaml), lists, Tables, discovery and Status errors in YAML, a watch refused with a
//! 406, documents that are not negotiated left alone, and a YAML answer sent back as a YAML body.

mod common;

use common::tools::{kubectl_bin, kubectl_versions, python, tempdir};
use common::*;
use serde_json::{Value, json};

const YAML: &str = "application/yaml";

fn content_type(r: &Resp) -> &str {
    r.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default()
}

fn text(r: &Resp) -> &str {
    std::str::from_utf8(&r.raw).expect("UTF-8")
}

/// Strings go-yaml quotes, folds, or writes as blocks, and keys it sorts by their digits.
fn tricky_data() -> Value {
    json!({
        "plain": "plain", "empty": "", "bool": "true", "yes": "y", "int": "12", "hex": "0x1F",
        "float": "1.5", "sexagesimal": "1:20", "date": "2024-01-02", "not-a-date": "2024-02-30",
        "timestamp": "2024-01-02T03:04:05Z", "no-zone": "2024-01-02T03:04:05", "star": "*",
        "dash": "- a", "colon": "a: b", "hash": "a #b", "quote": "it's", "lead": " lead", "trail": "trail ",
        "tab": "tab\there", "emoji": "smile 😀", "nel": "a\u{85}b", "crlf": "a\r\nb\n",
        "block": "line one\n  indented\nend\n", "kept": "a\n\n", "stripped": "a\nb", "indented": " a\nb",
        "long": "lorem ipsum dolor sit amet ".repeat(8),
        "long-quoted": format!("- {}", "lorem ipsum dolor sit amet ".repeat(5).trim_end()),
        "a10": "x", "a2": "x", "a02": "x", "_x": "x", "1": "x", "on": "x",
    })
}

#[tokio::test]
async fn objects_in_yaml_are_what_kubectl_prints_for_them() {
    let s = server().await;
    let c = Client::new(&s);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "tricky", "labels": {"app": "web", "tier": "1"}}, "data": tricky_data()});
    assert_eq!(c.post("/api/v1/namespaces/default/configmaps", &cm).await.code, 201);
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}], "publishNotReadyAddresses": true}});
    assert_eq!(c.post("/api/v1/namespaces/default/services", &svc).await.code, 201);

    let dir = tempdir("yaml-answers");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let versions = kubectl_versions();
    for (path, kind) in [
        ("/api/v1/namespaces/default/configmaps/tricky", "cm/tricky"),
        ("/api/v1/namespaces/default/services/web", "svc/web"),
    ] {
        let r = c.get_accepting(path, YAML).await;
        assert_eq!((r.code, content_type(&r)), (200, YAML), "{}", text(&r));
        for bin in [versions.first().unwrap(), versions.last().unwrap()] {
            let args = ["get", kind, "-o", "yaml", "--show-managed-fields"];
            let (ok, out, err) = kubectl_bin(bin, &kc, &dir.join("cache"), &args).await;
            assert!(ok, "{bin}: {err}");
            assert_eq!(text(&r), out, "{bin} {kind}");
        }
    }
    // The style go-yaml gives each string, as kubectl printed it too.
    let r = c.get_accepting("/api/v1/namespaces/default/configmaps/tricky", YAML).await;
    for line in [
        "  bool: \"true\"\n",
        "  \"on\": x\n",
        "  timestamp: \"2024-01-02T03:04:05Z\"\n",
        "  no-zone: 2024-01-02T03:04:05\n",
        "  dash: '- a'\n",
        "  nel: a b\n",
        "  emoji: \"smile \\U0001F600\"\n",
        "  block: |\n    line one\n      indented\n    end\n",
        "  indented: |2-\n     a\n    b\n",
        "    tier: \"1\"\n",
    ] {
        assert!(text(&r).contains(line), "{line:?} in\n{}", text(&r));
    }
}

#[tokio::test]
async fn a_yaml_answer_reads_back_as_the_same_object() {
    let s = server().await;
    let c = Client::new(&s);
    // Every string but the NEL, which go-yaml folds into a space when it reads Go's JSON.
    let mut data = tricky_data();
    data.as_object_mut().unwrap().remove("nel");
    let cm = json!({"metadata": {"name": "round"}, "data": data});
    let created = c.post("/api/v1/namespaces/default/configmaps", &cm).await;
    assert_eq!(created.code, 201);
    let r = c.get_accepting("/api/v1/namespaces/default/configmaps/round", YAML).await;
    // Sent back as it came, the object is unchanged: the same data, nothing written.
    let put = c.send_raw(http::Method::PUT, "/api/v1/namespaces/default/configmaps/round", r.raw.to_vec(), YAML).await;
    assert_eq!(put.code, 200, "{}", put.body);
    assert_eq!(put.body["data"], created.body["data"]);
    assert_eq!(put.body["metadata"]["resourceVersion"], created.body["metadata"]["resourceVersion"]);
}

#[tokio::test]
async fn lists_tables_discovery_and_errors_come_in_yaml() {
    let s = server().await;
    let c = Client::new(&s);
    for name in ["a", "b"] {
        let cm = json!({"metadata": {"name": name}, "data": {"k": "v"}});
        assert_eq!(c.post("/api/v1/namespaces/default/configmaps", &cm).await.code, 201);
    }
    // A list, read by PyYAML.
    let r = c.get_accepting("/api/v1/namespaces/default/configmaps", YAML).await;
    assert_eq!((r.code, content_type(&r)), (200, YAML));
    let script = "import sys, yaml, json; print(json.dumps(yaml.safe_load(sys.argv[1])))";
    let read: Value = serde_json::from_str(python(script, &[text(&r)]).await.trim()).unwrap();
    let json_list = c.get("/api/v1/namespaces/default/configmaps").await.body;
    assert_eq!(read, json_list);
    assert!(text(&r).starts_with("apiVersion: v1\nitems:\n- data:\n    k: v\n  metadata:\n"), "{}", text(&r));

    // A Table.
    let r =
        c.get_accepting("/api/v1/namespaces/default/configmaps", "application/yaml;as=Table;v=v1;g=meta.k8s.io").await;
    assert_eq!((r.code, content_type(&r)), (200, YAML));
    assert!(text(&r).starts_with("apiVersion: meta.k8s.io/v1\ncolumnDefinitions:\n- description: "), "{}", text(&r));
    assert!(text(&r).contains("\nkind: Table\n"), "{}", text(&r));

    // Discovery.
    let r = c.get_accepting("/api", YAML).await;
    assert_eq!((r.code, content_type(&r)), (200, YAML));
    assert!(text(&r).starts_with("kind: APIVersions\nserverAddressByClientCIDRs:\n"), "{}", text(&r));
    assert!(text(&r).ends_with("versions:\n- v1\n"), "{}", text(&r));

    // Aggregated discovery in YAML, and in JSON when a YAML range without the rendering comes
    // first (kube's discovery wrapper counts only the ranges that ask for it).
    let aggregated = "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let r = c.get_accepting("/apis", &format!("application/yaml;{aggregated}")).await;
    assert_eq!((r.code, content_type(&r)), (200, format!("application/yaml;{aggregated}").as_str()));
    assert!(text(&r).starts_with("apiVersion: apidiscovery.k8s.io/v2\nitems:\n"), "{}", text(&r));
    let r = c.get_accepting("/apis", &format!("application/yaml, application/json;{aggregated}")).await;
    assert_eq!((r.code, content_type(&r)), (200, format!("application/json;{aggregated}").as_str()));

    // A Status error, with YAML first among several.
    let r = c.get_accepting("/api/v1/namespaces/default/configmaps/nope", "application/yaml, application/json").await;
    assert_eq!((r.code, content_type(&r)), (404, YAML));
    assert_eq!(
        text(&r),
        "apiVersion: v1\ncode: 404\ndetails:\n  kind: configmaps\n  name: nope\nkind: Status\nmessage: configmaps \"nope\" not found\nmetadata: {}\nreason: NotFound\nstatus: Failure\n"
    );
    // A refusal before the request is routed is negotiated too.
    let r = c.get_accepting("/api/v1/namespaces/default/configmaps?timeout=abc", YAML).await;
    assert_eq!((r.code, content_type(&r)), (400, YAML));
    assert!(
        text(&r).contains("\nmessage: 'invalid timeout specified in the request URL - time: invalid duration"),
        "{}",
        text(&r)
    );
    // A YAML list when YAML comes first, though a Table is asked for after it.
    let r = c
        .get_accepting(
            "/api/v1/namespaces/default/configmaps",
            "application/yaml, application/json;as=Table;g=meta.k8s.io;v=v1",
        )
        .await;
    assert!(text(&r).contains("\nkind: ConfigMapList\n"), "{}", text(&r));
    // JSON first: JSON.
    let r = c.get_accepting("/api/v1/namespaces/default/configmaps/a", "application/json, application/yaml").await;
    assert_eq!((r.code, content_type(&r)), (200, "application/json"));
    // A specific type before a wildcard: YAML.
    let r = c.get_accepting("/api/v1/namespaces/default/configmaps/a", "*/*, application/yaml").await;
    assert_eq!((r.code, content_type(&r)), (200, YAML));
}

#[tokio::test]
async fn a_watch_in_yaml_is_refused_and_documents_are_not_negotiated() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.get_accepting("/api/v1/namespaces/default/configmaps?watch=true", YAML).await;
    assert_eq!((r.code, content_type(&r)), (406, YAML));
    assert_eq!(
        text(&r),
        "apiVersion: v1\ncode: 406\nkind: Status\nmessage: 'only the following media types are accepted: application/json;stream=watch,\n  application/vnd.kubernetes.protobuf;stream=watch'\nmetadata: {}\nreason: NotAcceptable\nstatus: Failure\n"
    );
    // JSON first, the watch streams.
    let mut w = c
        .watch_accepting("/api/v1/namespaces/default/configmaps?watch=true", "application/json, application/yaml")
        .await;
    assert_eq!(c.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "w"}})).await.code, 201);
    let ev = until(&mut w, "the ADDED event", |e| e["type"] == "ADDED").await;
    assert_eq!(ev["object"]["metadata"]["name"], "w");

    // The version is JSON whatever the client accepts; health checks are text.
    let r = c.get_accepting("/version", YAML).await;
    assert_eq!((r.code, content_type(&r)), (200, "application/json"));
    assert!(r.body["gitVersion"].is_string());
    for path in ["/healthz", "/readyz/ping"] {
        let r = c.get_accepting(path, "text/plain").await;
        assert_eq!((r.code, text(&r)), (200, "ok"), "{path}");
    }
    // Nothing the server writes: kube's 406, in JSON.
    let r = c.get_accepting("/api/v1/namespaces/default/configmaps", "text/html").await;
    assert_eq!((r.code, content_type(&r)), (406, "application/json"));
}

#[tokio::test]
async fn an_object_go_yaml_cannot_read_back_is_a_500_in_yaml() {
    let s = server().await;
    let c = Client::new(&s);
    let cm = json!({"metadata": {"name": "del"}, "data": {"k": "a\u{7f}b"}});
    assert_eq!(c.post("/api/v1/namespaces/default/configmaps", &cm).await.code, 201);
    let r = c.get_accepting("/api/v1/namespaces/default/configmaps/del", YAML).await;
    assert_eq!((r.code, content_type(&r)), (500, YAML));
    assert_eq!(
        text(&r),
        "apiVersion: v1\ncode: 500\nkind: Status\nmessage: 'yaml: control characters are not allowed'\nmetadata: {}\nstatus: Failure\n"
    );
    // In JSON it is served.
    assert_eq!(c.get("/api/v1/namespaces/default/configmaps/del").await.body["data"]["k"], "a\u{7f}b");
}
