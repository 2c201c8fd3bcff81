//! `informer serve --crds DIR`: the CustomResourceDefinitions of a directory (multi-document
//! YAML and JSON; other files ignored) are served once the server listens, and a directory
//! holding something else than definitions stops the server with an error.

mod common;

use common::{Serve, client, scratch};
use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use serde_json::json;

fn crd(plural: &str, kind: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": plural, "kind": kind},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

#[tokio::test]
async fn definitions_of_the_directory_are_served_once_it_listens() {
    let dir = scratch("serve-crds");
    // JSON documents are YAML flow documents.
    let yaml = format!("# two definitions\n{}\n---\n{}\n", crd("widgets", "Widget"), crd("gears", "Gear"));
    std::fs::write(dir.join("two.yaml"), yaml).unwrap();
    std::fs::write(dir.join("one.json"), crd("bolts", "Bolt").to_string()).unwrap();
    std::fs::write(dir.join("README.md"), "not a manifest").unwrap();
    let serve = Serve::start(&["--crds", dir.to_str().unwrap()]);
    let c = client(&serve.url);
    for (plural, kind) in [("widgets", "Widget"), ("gears", "Gear"), ("bolts", "Bolt")] {
        let ar = ApiResource {
            group: "example.com".into(),
            version: "v1".into(),
            api_version: "example.com/v1".into(),
            kind: kind.into(),
            plural: plural.into(),
        };
        let api: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &ar);
        let obj: DynamicObject = serde_json::from_value(
            json!({"apiVersion": "example.com/v1", "kind": kind, "metadata": {"name": "x"}, "spec": {"a": 1}}),
        )
        .unwrap();
        let created = api.create(&PostParams::default(), &obj).await.unwrap();
        assert_eq!(created.data["spec"]["a"], 1, "{plural}");
    }

    let bad = scratch("serve-crds-bad");
    std::fs::write(bad.join("pod.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n").unwrap();
    let out = std::process::Command::new(common::BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--crds", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("CustomResourceDefinition"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
