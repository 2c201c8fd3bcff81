//! `fieldValidation` over HTTP against kube-apiserver v1.35's answers
//! (`tests/fixtures/kube-apiserver/60-*` … `67-*`): unknown and duplicate fields refused under
//! Strict, warned about under Warn (the default) and passed over under Ignore, never stored;
//! bad values of the parameter; the same for patches and for YAML bodies.

mod common;

use common::recorded::{comparable_managed, recorded};
use common::*;
use serde_json::json;

#[tokio::test]
async fn unknown_and_duplicate_fields_answer_as_kube_apiserver_does() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    for file in [
        "60-fieldval-strict-unknown-field.txt",
        "61-fieldval-warn-unknown-field.txt",
        "62-fieldval-ignore-unknown-field.txt",
        "63-fieldval-default-unknown-field.txt",
        "64-fieldval-strict-duplicate-field.txt",
        "65-fieldval-warn-duplicate-field.txt",
        "66-fieldval-invalid-value.txt",
        "67-fieldval-strict-yaml-body.txt",
    ] {
        let step = recorded(file);
        let r = c.send_raw(step.method.clone(), &step.path, step.request_body.clone(), &step.content_type).await;
        assert_eq!(r.code, step.status, "{file}: {}", r.body);
        assert_eq!(comparable_managed(&r.body), comparable_managed(&step.response), "{file}");
        let warnings: Vec<String> =
            r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect();
        assert_eq!(warnings, step.warnings, "{file}");
        if r.code == 201 {
            let name = r.body["metadata"]["name"].as_str().unwrap();
            let stored = c.get(&format!("/api/v1/namespaces/fixtures/configmaps/{name}")).await;
            assert_eq!(stored.body["data"], step.response["data"], "{file}");
            assert!(stored.body.get("bogus").is_none(), "{file}: an unknown field was stored");
        }
    }
}

#[tokio::test]
async fn nested_unknown_fields_in_updates_and_patches() {
    let s = server().await;
    let c = Client::new(&s);
    let path = "/api/v1/namespaces/default/pods";
    assert_eq!(c.post(path, &pod("p", json!({}))).await.code, 201);
    let mut body = c.get(&format!("{path}/p")).await.body;
    body["spec"]["containers"][0]["bogus"] = json!(1);
    body["metadata"]["nope"] = json!("x");
    let r = c.put(&format!("{path}/p?fieldValidation=Strict"), &body).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"metadata.nope\", unknown field \"spec.containers[0].bogus\""
    );
    let r = c.put(&format!("{path}/p"), &body).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let warnings: Vec<&str> = r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(
        warnings,
        [r#"299 - "unknown field \"metadata.nope\"""#, r#"299 - "unknown field \"spec.containers[0].bogus\"""#]
    );
    assert!(r.body["spec"]["containers"][0].get("bogus").is_none());

    // A patch is judged once applied: 422 on `patch`, whose value is the patched object (JSON
    // and merge patches) or the patch as the strategic merge leaves it.
    let merge = "application/merge-patch+json";
    let r = c.patch(&format!("{path}/p?fieldValidation=Strict"), merge, &json!({"spec": {"bogus": true}})).await;
    assert_eq!((r.code, r.body["reason"].as_str()), (422, Some("Invalid")), "{}", r.body);
    let cause = &r.body["details"]["causes"][0];
    assert_eq!((cause["field"].as_str(), cause["reason"].as_str()), (Some("patch"), Some("FieldValueInvalid")));
    let message = cause["message"].as_str().unwrap();
    assert!(message.starts_with("Invalid value: \"{\\\"apiVersion\\\":\\\"v1\\\","), "{message}");
    assert!(message.contains("\\\"bogus\\\":true"), "{message}");
    assert!(message.ends_with("\": strict decoding error: unknown field \"spec.bogus\""), "{message}");
    assert_eq!(r.body["message"], format!(" \"\" is invalid: patch: {message}"));
    // Duplicates in the patch come first; kube reads the object before judging them.
    let dup = br#"{"metadata":{"labels":{"a":"1","a":"2"}},"spec":{"bogus":1}}"#.to_vec();
    let r = c.send_raw(http::Method::PATCH, &format!("{path}/p?fieldValidation=Strict"), dup.clone(), merge).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .ends_with("strict decoding error: duplicate field \"metadata.labels.a\", unknown field \"spec.bogus\""),
        "{}",
        r.body
    );
    let r = c.send_raw(http::Method::PATCH, &format!("{path}/absent?fieldValidation=Strict"), dup, merge).await;
    assert_eq!(r.code, 404, "{}", r.body);
    // kubectl apply's patch: the ordered list leaves the patch with the merge.
    let strategic = "application/strategic-merge-patch+json";
    let applied = json!({"spec": {"$setElementOrder/containers": [{"name": "c"}],
                                  "containers": [{"name": "c", "imagee": "x"}]},
                         "metadata": {"labels": {"l": "v", "gone": null}}});
    let r = c.patch(&format!("{path}/p?fieldValidation=Strict"), strategic, &applied).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        " \"\" is invalid: patch: Invalid value: \"map[metadata:map[labels:map[l:v]] spec:map[]]\": strict decoding error: unknown field \"spec.containers[0].imagee\""
    );
    // A JSON patch's duplicates are its operations'.
    let ops = br#"[{"op":"add","op":"add","path":"/metadata/annotations","value":{"x":"y"}}]"#.to_vec();
    let r = c
        .send_raw(http::Method::PATCH, &format!("{path}/p?fieldValidation=Warn"), ops, "application/json-patch+json")
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.headers["warning"], r#"299 - "json patch duplicate field \"[0].op\"""#);
    let r = c.patch(&format!("{path}/p?fieldValidation=Bogus"), merge, &json!({})).await;
    assert_eq!(r.code, 422);
    assert!(r.body["message"].as_str().unwrap().starts_with("PatchOptions.meta.k8s.io \"\" is invalid"));
    let r = c
        .patch(&format!("{path}/p"), merge, &json!({"spec": {"bogus": true}, "metadata": {"labels": {"a": "b"}}}))
        .await;
    assert_eq!(r.code, 200);
    assert_eq!(r.headers["warning"], r#"299 - "unknown field \"spec.bogus\"""#);
    assert_eq!((r.body["metadata"]["labels"]["a"].as_str(), r.body["spec"].get("bogus")), (Some("b"), None));
}

#[tokio::test]
async fn yaml_bodies_create_and_replace_objects() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n  labels: {app: web}\ndata:\n  k: v\n  port: \"8080\"\nbogus: x\n";
    let path = "/api/v1/namespaces/fixtures/configmaps";
    let r = c.send_raw(http::Method::POST, path, yaml.as_bytes().to_vec(), "application/yaml").await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["data"], json!({"k": "v", "port": "8080"}));
    assert_eq!(r.body["metadata"]["labels"], json!({"app": "web"}));
    let warnings: Vec<_> = r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect();
    assert_eq!(warnings, vec![r#"299 - "unknown field \"bogus\"""#.to_string()]);

    let rv = r.body["metadata"]["resourceVersion"].as_str().unwrap();
    let update = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n  resourceVersion: \"{rv}\"\ndata:\n  k: w\n"
    );
    let r = c.send_raw(http::Method::PUT, &format!("{path}/from-yaml"), update.into_bytes(), "application/yaml").await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&format!("{path}/from-yaml")).await.body["data"], json!({"k": "w"}));

    let r = c.send_raw(http::Method::POST, path, b"metadata: [unclosed\n".to_vec(), "application/yaml").await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(r.body["reason"], "BadRequest");
    let r = c.send_raw(http::Method::POST, path, b"{}".to_vec(), "text/plain").await;
    assert_eq!(r.code, 415, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
}

#[tokio::test]
async fn yaml_bodies_read_as_go_yaml_v2_with_duplicate_keys_in_its_words() {
    let s = server().await;
    let c = Client::new(&s);
    fixtures_namespace(&c).await;
    let path = "/api/v1/namespaces/fixtures/configmaps";
    let yaml = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\nimmutable: yes\ndata:\n  k: v\n  k: w\nbogus: x\n"
        )
    };
    let r = c
        .send_raw(
            http::Method::POST,
            &format!("{path}?fieldValidation=Strict"),
            yaml("strict").into_bytes(),
            "application/yaml",
        )
        .await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: \
         yaml: unmarshal errors:\n  line 8: key \"k\" already set in map, unknown field \"bogus\""
    );
    assert_eq!(c.get(&format!("{path}/strict")).await.code, 404);

    let r = c
        .send_raw(
            http::Method::POST,
            &format!("{path}?fieldValidation=Warn"),
            yaml("warn").into_bytes(),
            "application/yaml",
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    // `yes` is true and the last of duplicate keys wins, as go-yaml v2 reads them.
    assert_eq!((&r.body["immutable"], &r.body["data"]), (&json!(true), &json!({"k": "w"})));
    let warnings: Vec<_> = r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_string()).collect();
    assert_eq!(warnings, [r#"299 - "line 8: key \"k\" already set in map""#, r#"299 - "unknown field \"bogus\"""#]);

    let r = c
        .send_raw(
            http::Method::POST,
            &format!("{path}?fieldValidation=Ignore"),
            yaml("ignore").into_bytes(),
            "application/yaml",
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.headers.get("warning").is_none());
}

#[tokio::test]
async fn values_go_cannot_decode_into_the_type_are_refused_and_not_stored() {
    let s = server().await;
    let c = Client::new(&s);
    let path = "/api/v1/namespaces/default/pods";
    let cannot = |detail: &str| format!("Pod in version \"v1\" cannot be handled as a Pod: {detail}");
    // A create, whatever fieldValidation says.
    let mut bad = pod("p", json!({}));
    bad["spec"]["containers"][0]["ports"] = json!([{"containerPort": "80"}]);
    for query in ["", "?fieldValidation=Ignore", "?fieldValidation=Strict"] {
        let r = c.post(&format!("{path}{query}"), &bad).await;
        assert_eq!((r.code, r.body["reason"].as_str()), (400, Some("BadRequest")), "{}", r.body);
        assert_eq!(
            r.body["message"],
            cannot(
                "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
            )
        );
    }
    // Before strict decoding's errors.
    bad["spec"]["bogus"] = json!(1);
    let r = c.post(&format!("{path}?fieldValidation=Strict"), &bad).await;
    assert_eq!(
        r.body["message"],
        cannot(
            "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
        )
    );
    let mut bad = pod("p", json!({}));
    bad["spec"]["containers"] = json!({"name": "c", "image": "i"});
    let r = c.post(path, &bad).await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (
            400,
            Some(&*cannot(
                "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"
            ))
        )
    );
    let mut bad = pod("p", json!({}));
    bad["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "lots"}});
    let r = c.post(path, &bad).await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (
            400,
            Some(&*cannot(
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            ))
        )
    );
    assert_eq!(c.get(&format!("{path}/p")).await.code, 404);
    // An update and a status write.
    let created = c.post(path, &pod("p", json!({}))).await.body;
    let mut bad = created.clone();
    bad["spec"]["activeDeadlineSeconds"] = json!(true);
    let r = c.put(&format!("{path}/p"), &bad).await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (
            400,
            Some(&*cannot(
                "json: cannot unmarshal bool into Go struct field PodSpec.spec.activeDeadlineSeconds of type int64"
            ))
        )
    );
    let mut bad = created.clone();
    bad["status"] = json!("Running");
    let r = c.put(&format!("{path}/p/status"), &bad).await;
    assert_eq!(
        (r.code, r.body["message"].as_str()),
        (400, Some(&*cannot("json: cannot unmarshal string into Go struct field Pod.status of type v1.PodStatus")))
    );
    // A patch whose result Go cannot decode: 422 on `patch`, as kube answers JSON and merge patches.
    let r = c.patch(&format!("{path}/p"), "application/merge-patch+json", &json!({"spec": {"priority": "high"}})).await;
    assert_eq!((r.code, r.body["reason"].as_str()), (422, Some("Invalid")), "{}", r.body);
    let cause = &r.body["details"]["causes"][0];
    assert_eq!(cause["field"], "patch");
    let message = cause["message"].as_str().unwrap();
    assert!(message.starts_with("Invalid value: \"{\\\"apiVersion\\\":\\\"v1\\\","), "{message}");
    assert!(
        message.ends_with("\": json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int32"),
        "{message}"
    );
    assert_eq!(r.body["message"], format!(" \"\" is invalid: patch: {message}"));
    // A strategic merge patch is read as kube's unstructured converter reads it: `60.0` is 60.
    let strategic = "application/strategic-merge-patch+json";
    let r = c.patch(&format!("{path}/p"), strategic, &json!({"spec": {"activeDeadlineSeconds": 60.0}})).await;
    assert_eq!((r.code, &r.body["spec"]["activeDeadlineSeconds"]), (200, &json!(60)), "{}", r.body);
    let r = c.patch(&format!("{path}/p"), strategic, &json!({"spec": {"activeDeadlineSeconds": 60.5}})).await;
    assert_eq!((r.code, r.body["reason"].as_str()), (422, Some("Invalid")), "{}", r.body);
    let created = c.get(&format!("{path}/p")).await.body;
    // A YAML body's `2.0` is the integer Go's YAML-to-JSON conversion writes.
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: from-yaml\nspec:\n  activeDeadlineSeconds: 2.0\n  containers:\n  - name: c\n    image: i\n";
    let r = c.send_raw(http::Method::POST, path, yaml.as_bytes().to_vec(), "application/yaml").await;
    assert_eq!((r.code, &r.body["spec"]["activeDeadlineSeconds"]), (201, &json!(2)), "{}", r.body);
    // Nothing was written.
    let stored = c.get(&format!("{path}/p")).await.body;
    assert_eq!(stored["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);
}
