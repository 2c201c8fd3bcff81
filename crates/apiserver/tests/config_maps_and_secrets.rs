//! ConfigMaps and Secrets over HTTP and through real clients, as kube-apiserver serves them: a
//! Secret's `stringData` becomes its `data`; keys, sizes, types and `immutable` are judged with
//! kube's messages, and nothing refused is stored.

mod common;

use common::*;
use serde_json::{Value, json};

const SECRETS: &str = "/api/v1/namespaces/default/secrets";
const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";
const MERGE: &str = "application/merge-patch+json";

#[tokio::test]
async fn string_data_is_written_into_data() {
    let s = server().await;
    let c = Client::new(&s);
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
        "data": {"user": "b2xk", "keep": "a2VwdA=="}, "stringData": {"user": "admin", "pass": "s3cret"}});
    let r = c.post(SECRETS, &secret).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // `stringData` wins over `data` for the same key, and is not kept.
    let want = json!({"user": "YWRtaW4=", "keep": "a2VwdA==", "pass": "czNjcmV0"});
    assert_eq!(r.body["data"], want);
    assert!(r.body.get("stringData").is_none(), "{}", r.body);
    let got = c.get(&format!("{SECRETS}/creds")).await.body;
    assert_eq!((got["data"].clone(), got.get("stringData")), (want, None));
    // A patch of `stringData` changes `data`.
    let r = c.patch(&format!("{SECRETS}/creds"), MERGE, &json!({"stringData": {"pass": "n3w"}})).await;
    assert_eq!((r.code, &r.body["data"]["pass"]), (200, &json!("bjN3")));
    assert!(r.body.get("stringData").is_none(), "{}", r.body);
}

#[tokio::test]
async fn keys_types_and_immutability_are_judged_as_by_kube() {
    let s = server().await;
    let c = Client::new(&s);
    let tls = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cert"}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": "eA=="}});
    let r = c.post(SECRETS, &tls).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(r.body["message"], "Secret \"cert\" is invalid: data[tls.key]: Required value");
    assert_eq!(c.get(&format!("{SECRETS}/cert")).await.code, 404);

    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"}, "data": {"app config": "x"}});
    let r = c.post(CONFIG_MAPS, &cm).await;
    assert_eq!(
        r.body["message"],
        "ConfigMap \"bad\" is invalid: data[app config]: Invalid value: \"app config\": a valid config key must consist \
         of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for \
         validation is '[-._a-zA-Z0-9]+')"
    );

    // Once immutable, a ConfigMap keeps its data and stays immutable; its labels may change.
    let frozen = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "frozen"}, "immutable": true,
        "data": {"a": "1"}});
    assert_eq!(c.post(CONFIG_MAPS, &frozen).await.code, 201);
    let before = c.get(&format!("{CONFIG_MAPS}/frozen")).await.body;
    let r = c.patch(&format!("{CONFIG_MAPS}/frozen"), MERGE, &json!({"immutable": false, "data": {"a": "2"}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ConfigMap \"frozen\" is invalid: [immutable: Forbidden: field is immutable when `immutable` is set, \
         data: Forbidden: field is immutable when `immutable` is set]"
    );
    assert_eq!(c.get(&format!("{CONFIG_MAPS}/frozen")).await.body, before);
    let labelled = c.patch(&format!("{CONFIG_MAPS}/frozen"), MERGE, &json!({"metadata": {"labels": {"a": "b"}}})).await;
    assert_eq!(labelled.code, 200, "{}", labelled.body);

    // A Secret's type does not change.
    let opaque = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"}, "data": {"a": "eA=="}});
    assert_eq!(c.post(SECRETS, &opaque).await.code, 201);
    let r = c.patch(&format!("{SECRETS}/plain"), MERGE, &json!({"type": "example.com/other"})).await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (422, Some("Secret \"plain\" is invalid: type: Invalid value: \"example.com/other\": field is immutable"))
    );
}

const PY_SECRET: &str = r#"
import base64, json, sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
v1 = client.CoreV1Api()
body = client.V1Secret(metadata=client.V1ObjectMeta(name="py"), string_data={"token": "abc"})
created = v1.create_namespaced_secret("default", body)
read = v1.read_namespaced_secret("py", "default")
print(json.dumps({"created": created.data, "read": base64.b64decode(read.data["token"]).decode(),
    "string_data": read.string_data}), flush=True)
"#;

#[tokio::test]
async fn real_clients_write_secrets_as_with_kube() {
    let s = server().await;
    let c = Client::new(&s);
    let dir = common::tools::tempdir("python-secret");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let out = common::tools::python(PY_SECRET, &[kc.to_str().unwrap()]).await;
    let line: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(line, json!({"created": {"token": "YWJj"}, "read": "abc", "string_data": null}));

    use common::tools::{kubectl_bin, kubectl_versions};
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let cache = dir.join("cache");
        let args = ["create", "secret", "generic", "kubectl-made", "--from-literal=password=hunter2"];
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &args).await;
        assert!(ok, "{bin}: {out}{err}");
        let got = c.get(&format!("{SECRETS}/kubectl-made")).await.body;
        assert_eq!(got["data"], json!({"password": "aHVudGVyMg=="}), "{bin}");
        // A manifest with stringData, applied, reads back as data.
        let file = dir.join("secret.yaml");
        std::fs::write(
            &file,
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\nstringData:\n  url: http://db\n",
        )
        .unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "-f", file.to_str().unwrap()]).await;
        assert!(ok, "{bin}: {out}{err}");
        let got = c.get(&format!("{SECRETS}/applied")).await.body;
        assert_eq!(got["data"], json!({"url": "aHR0cDovL2Ri"}), "{bin}");
        // Applied again unchanged: accepted, data as it was.
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "-f", file.to_str().unwrap()]).await;
        assert!(ok, "{bin}: {out}{err}");
        for name in ["kubectl-made", "applied"] {
            assert_eq!(c.delete(&format!("{SECRETS}/{name}")).await.code, 200, "{bin}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
