//! The versions and server-owned metadata a write carries, answered over HTTP as kube-apiserver
//! answers them: a PUT of a custom resource, a CustomResourceDefinition, a Lease, an admission
//! configuration or a PodDisruptionBudget must name the version it was made from (most other
//! built-in kinds take the stored one); some kinds are created by a PUT; a version Go cannot read
//! fails the write; a create that carries a version fails in the storage, after validation; an
//! update cannot change the uid, set a deletion time or change a grace period, and leaves the
//! creation time as it was. kube-rs and the Python client see the same answers.

mod common;

use common::*;
use serde_json::{Value, json};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const MERGE: &str = "application/merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

/// As read back from a cluster: with the version it had there, which the server installs it
/// without.
const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
  resourceVersion: "81234"
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

async fn widgets() -> informer_apiserver::ApiServer {
    informer_apiserver::testing::builder().crd(WIDGET_CRD).start().await.unwrap()
}

/// The JSON line the Python client's `script` prints, run against `s`.
async fn python(s: &informer_apiserver::ApiServer, tag: &str, script: &str) -> Value {
    let dir = common::tools::tempdir(tag);
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let line = common::tools::python_json(script, &kc).await;
    let _ = std::fs::remove_dir_all(&dir);
    line
}

/// The cause of kube's 422 for a write without the version its kind needs.
fn refused_for_version() -> Value {
    json!([{"reason": "FieldValueInvalid", "message": "Invalid value: 0: must be specified for an update",
        "field": "metadata.resourceVersion"}])
}

fn without_version(mut v: Value) -> Value {
    v["metadata"].as_object_mut().unwrap().remove("resourceVersion");
    v
}

#[tokio::test]
async fn a_custom_resource_or_crd_put_must_name_its_version() {
    let s = widgets().await;
    let c = Client::new(&s);
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}});
    // A PUT of an object that does not exist is 404 before anything else.
    assert_eq!(c.put(&format!("{WIDGETS}/w"), &w).await.code, 404);
    let created = c.post(WIDGETS, &w).await;
    assert_eq!(created.code, 201, "{}", created.body);

    let mut changed = without_version(created.body.clone());
    changed["spec"]["size"] = json!(2);
    let r = c.put(&format!("{WIDGETS}/w"), &changed).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "widgets.example.com \"w\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an \
         update"
    );
    assert_eq!(
        r.body["details"],
        json!({"name": "w", "group": "example.com", "kind": "widgets", "causes": [{"reason": "FieldValueInvalid",
            "message": "Invalid value: 0: must be specified for an update", "field": "metadata.resourceVersion"}]})
    );
    let r = c.put(&format!("{WIDGETS}/w/status"), &changed).await;
    assert_eq!((r.code, &r.body["details"]["causes"]), (422, &refused_for_version()), "{}", r.body);
    assert_eq!(c.get(&format!("{WIDGETS}/w")).await.body["spec"]["size"], 1);

    // A version of 0 is none.
    changed["metadata"]["resourceVersion"] = json!("0");
    let r = c.put(&format!("{WIDGETS}/w"), &changed).await;
    assert_eq!((r.code, &r.body["details"]["causes"]), (422, &refused_for_version()), "{}", r.body);
    // A patch that takes the version away is refused as such a PUT; a stale one is a conflict.
    let r = c.patch(&format!("{WIDGETS}/w"), MERGE, &json!({"metadata": {"resourceVersion": null}})).await;
    assert_eq!((r.code, &r.body["details"]["causes"]), (422, &refused_for_version()), "{}", r.body);
    let r = c.patch(&format!("{WIDGETS}/w"), MERGE, &json!({"metadata": {"resourceVersion": "1"}})).await;
    assert_eq!(r.code, 409, "{}", r.body);
    // So is an apply whose configuration sets the version to 0.
    let config = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "resourceVersion": "0"}, "spec": {"size": 5}});
    let r = c.patch(&format!("{WIDGETS}/w?fieldManager=tester&force=true"), APPLY, &config).await;
    assert_eq!((r.code, &r.body["details"]["causes"]), (422, &refused_for_version()), "{}", r.body);

    // With the version it was made from, the same write is stored; a patch needs none.
    changed["metadata"]["resourceVersion"] = created.body["metadata"]["resourceVersion"].clone();
    let r = c.put(&format!("{WIDGETS}/w"), &changed).await;
    assert_eq!((r.code, &r.body["spec"]["size"]), (200, &json!(2)), "{}", r.body);
    let r = c.patch(&format!("{WIDGETS}/w"), MERGE, &json!({"spec": {"size": 3}})).await;
    assert_eq!(r.code, 200, "{}", r.body);

    let crd = c.get(&format!("{CRDS}/widgets.example.com")).await.body;
    let r = c.put(&format!("{CRDS}/widgets.example.com"), &without_version(crd)).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "customresourcedefinitions.apiextensions.k8s.io \"widgets.example.com\" is invalid: \
         metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );

    // So do the built-in kinds kube's strategies name, their status too.
    let webhooks = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "hooks"}});
    let at = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    assert_eq!(c.post(at, &webhooks).await.code, 201);
    let r = c.put(&format!("{at}/hooks"), &webhooks).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "validatingwebhookconfigurations.admissionregistration.k8s.io \"hooks\" is invalid: \
         metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );
    let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
    assert_eq!(c.post(pdbs, &pdb).await.code, 201);
    let mut status = pdb.clone();
    status["status"] = json!({"currentHealthy": 1, "desiredHealthy": 1, "disruptionsAllowed": 0, "expectedPods": 1});
    let r = c.put(&format!("{pdbs}/pdb/status"), &status).await;
    assert_eq!((r.code, &r.body["details"]["causes"]), (422, &refused_for_version()), "{}", r.body);

    // A built-in type's PUT without a version (or with 0) replaces whatever is stored.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}});
    assert_eq!(c.post(CONFIGMAPS, &cm).await.code, 201);
    let r = c.put(&format!("{CONFIGMAPS}/cm"), &json!({"metadata": {"name": "cm"}, "data": {"a": "2"}})).await;
    assert_eq!((r.code, &r.body["data"]["a"]), (200, &json!("2")), "{}", r.body);
    let r = c
        .put(
            &format!("{CONFIGMAPS}/cm"),
            &json!({"metadata": {"name": "cm", "resourceVersion": "0"},
        "data": {"a": "3"}}),
        )
        .await;
    assert_eq!((r.code, &r.body["data"]["a"]), (200, &json!("3")), "{}", r.body);
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "resourceVersion": "0"}});
    let r = c.patch(&format!("{CONFIGMAPS}/cm?fieldManager=tester"), APPLY, &config).await;
    assert_eq!((r.code, &r.body["data"]["a"]), (200, &json!("3")), "{}", r.body);

    // A version kube's versioner cannot read fails the write of an object that exists, in Go's words.
    let garbled = json!({"metadata": {"name": "cm", "resourceVersion": "12a"}});
    let r = c.put(&format!("{CONFIGMAPS}/cm"), &garbled).await;
    assert_eq!(
        (r.code, &r.body["message"], r.body.get("reason")),
        (500, &json!("strconv.ParseUint: parsing \"12a\": invalid syntax"), None),
        "{}",
        r.body
    );
    let huge = json!({"metadata": {"resourceVersion": "99999999999999999999"}});
    let r = c.patch(&format!("{CONFIGMAPS}/cm"), MERGE, &huge).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(r.body["message"], "strconv.ParseUint: parsing \"99999999999999999999\": value out of range");
    let mut missing = garbled.clone();
    missing["metadata"]["name"] = json!("missing");
    assert_eq!(c.put(&format!("{CONFIGMAPS}/missing"), &missing).await.code, 404);
    // The storage judges a uid before it reads the version.
    let mut other = garbled.clone();
    other["metadata"]["uid"] = json!("other");
    assert_eq!(c.put(&format!("{CONFIGMAPS}/cm"), &other).await.code, 409);
    // The body names what the URL names.
    let r = c.put(&format!("{CONFIGMAPS}/cm"), &json!({"data": {"a": "4"}})).await;
    assert_eq!(
        (r.code, &r.body["message"]),
        (400, &json!("the name of the object () does not match the name on the URL (cm)")),
        "{}",
        r.body
    );
    assert_eq!(c.get(&format!("{CONFIGMAPS}/cm")).await.body["data"]["a"], "3");
}

#[tokio::test]
async fn kube_rs_replace_of_a_custom_resource_without_its_version_is_refused() {
    use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
    let s = widgets().await;
    let client = kube_client(&s).await;
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Widget"), "widgets");
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let mut w = DynamicObject::new("w", &ar);
    w.data = json!({"spec": {"size": 1}});
    let created = api.create(&PostParams::default(), &w).await.unwrap();
    let mut stale = created.clone();
    stale.metadata.resource_version = None;
    stale.data["spec"]["size"] = json!(2);
    match api.replace("w", &PostParams::default(), &stale).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
            assert!(e.message.ends_with("metadata.resourceVersion: Invalid value: 0: must be specified for an update"));
        }
        other => panic!("replaced without a version: {other:?}"),
    }
    let mut current = created;
    current.data["spec"]["size"] = json!(2);
    let replaced = api.replace("w", &PostParams::default(), &current).await.unwrap();
    assert_eq!(replaced.data["spec"]["size"], 2);
}

#[tokio::test]
async fn a_create_carrying_a_version_fails_in_the_storage_after_validation() {
    let s = server().await;
    let c = Client::new(&s);
    let cm = |name: &str, rv: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "resourceVersion": rv}});
    let r = c.post(CONFIGMAPS, &cm("cm", "5")).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "resourceVersion should not be set on objects to be created", "code": 500})
    );
    assert_eq!(c.get(&format!("{CONFIGMAPS}/cm")).await.code, 404);
    // Validation answers first.
    let r = c.post(CONFIGMAPS, &cm("Bad_Name", "5")).await;
    assert_eq!(r.code, 422, "{}", r.body);
    // A dry run stores nothing and so is not refused; nor is a version kube cannot read, or 0.
    let r = c.post(&format!("{CONFIGMAPS}?dryRun=All"), &cm("cm", "5")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    for (name, rv) in [("a", "abc"), ("b", "0"), ("c", "+7")] {
        let r = c.post(CONFIGMAPS, &cm(name, rv)).await;
        assert_eq!(r.code, 201, "{rv}: {}", r.body);
        assert_ne!(r.body["metadata"]["resourceVersion"], rv);
    }
    // The storage refuses the version before it finds the name taken.
    let r = c.post(CONFIGMAPS, &cm("a", "9")).await;
    assert_eq!(r.code, 500, "{}", r.body);

    let script = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
core = client.CoreV1Api()
cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="copied", resource_version="12"))
try:
    core.create_namespaced_config_map("default", cm)
    print(json.dumps({"created": True}))
except ApiException as e:
    print(json.dumps({"status": e.status, "body": json.loads(e.body)}))
"#;
    let line = python(&s, "python-create-version", script).await;
    assert_eq!(line["status"], 500, "{line}");
    assert_eq!(line["body"]["message"], "resourceVersion should not be set on objects to be created");
}

#[tokio::test]
async fn an_update_cannot_change_the_uid_or_the_deletion_metadata() {
    let s = server().await;
    let c = Client::new(&s);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "finalizers": ["example.com/hold"]}, "data": {"a": "1"}});
    let created = c.post(CONFIGMAPS, &cm).await.body;
    let uid = created["metadata"]["uid"].clone();
    let at = format!("{CONFIGMAPS}/cm");

    // A PUT's uid is a precondition the storage judges; a patch's is a change validation refuses.
    let mut other = created.clone();
    other["metadata"]["uid"] = json!("other");
    let r = c.put(&at, &other).await;
    assert_eq!(r.code, 409, "{}", r.body);
    assert_eq!(
        r.body["message"],
        format!(
            "Operation cannot be fulfilled on configmaps \"cm\": StorageError: invalid object, Code: 4, Key: \
             /registry/configmaps/default/cm, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in \
             precondition: other, UID in object meta: {}",
            uid.as_str().unwrap()
        )
    );
    let r = c.patch(&at, MERGE, &json!({"metadata": {"uid": "other"}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ConfigMap \"cm\" is invalid: metadata.uid: Invalid value: \"other\": field is immutable"
    );

    // Left out, the uid is the stored one's; the creation time stays as it was.
    let mut written = without_version(created.clone());
    written["metadata"].as_object_mut().unwrap().remove("uid");
    written["metadata"]["creationTimestamp"] = json!("2001-01-01T00:00:00Z");
    written["data"]["a"] = json!("2");
    let r = c.put(&at, &written).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["uid"], uid);
    assert_eq!(r.body["metadata"]["creationTimestamp"], created["metadata"]["creationTimestamp"]);

    // Only a delete sets the deletion time.
    let mut deleting = without_version(r.body.clone());
    deleting["metadata"]["deletionTimestamp"] = json!("2030-01-01T00:00:00+01:00");
    let r = c.put(&at, &deleting).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ConfigMap \"cm\" is invalid: metadata.deletionTimestamp: Invalid value: \"2029-12-31T23:00:00Z\": field is \
         immutable"
    );
    assert!(c.get(&at).await.body["metadata"].get("deletionTimestamp").is_none());

    // Once it is set, a write that leaves out the time and period keeps them; a new period is refused.
    assert_eq!(c.delete(&at).await.code, 200);
    let marked = c.get(&at).await.body;
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
    let mut kept = without_version(marked.clone());
    let meta = kept["metadata"].as_object_mut().unwrap();
    meta.remove("deletionTimestamp");
    meta.remove("deletionGracePeriodSeconds");
    kept["data"]["a"] = json!("3");
    let r = c.put(&at, &kept).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["deletionTimestamp"], marked["metadata"]["deletionTimestamp"]);
    assert_eq!(r.body["metadata"]["deletionGracePeriodSeconds"], 0);
    let r = c.patch(&at, MERGE, &json!({"metadata": {"deletionGracePeriodSeconds": 30}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ConfigMap \"cm\" is invalid: metadata.deletionGracePeriodSeconds: Invalid value: 30: field is immutable"
    );
    let r = c.patch(&at, MERGE, &json!({"metadata": {"finalizers": null}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(c.get(&at).await.code, 404);
}

#[tokio::test]
async fn a_put_creates_what_kube_creates_on_update_and_leases_need_their_version() {
    let s = server().await;
    let c = Client::new(&s);
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "leader", "resourceVersion": "70000"}, "spec": {"holderIdentity": "a"}});
    // A version Go cannot read fails even the PUT that would create.
    let mut garbled = lease.clone();
    garbled["metadata"]["resourceVersion"] = json!("v1");
    let r = c.put(&format!("{leases}/leader"), &garbled).await;
    assert_eq!((r.code, &r.body["message"]), (500, &json!("strconv.ParseUint: parsing \"v1\": invalid syntax")));
    // Created through the PUT, the version in the body dropped: it carries the one it was stored at.
    let r = c.put(&format!("{leases}/leader"), &lease).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let rv = r.body["metadata"]["resourceVersion"].clone();
    assert_eq!(c.get(&format!("{leases}/leader")).await.body["metadata"]["resourceVersion"], rv);
    assert_ne!(rv, "70000", "{}", r.body);
    let r = c.put(&format!("{leases}/leader"), &without_version(lease.clone())).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "leases.coordination.k8s.io \"leader\" is invalid: metadata.resourceVersion: Invalid value: 0: must be \
         specified for an update"
    );
    let mut renewed = lease.clone();
    renewed["metadata"]["resourceVersion"] = rv;
    renewed["spec"]["holderIdentity"] = json!("b");
    let r = c.put(&format!("{leases}/leader"), &renewed).await;
    assert_eq!((r.code, &r.body["spec"]["holderIdentity"]), (200, &json!("b")), "{}", r.body);

    // A uid in the body of a PUT that would create is a precondition nothing meets.
    let mut with_uid = without_version(lease);
    with_uid["metadata"]["name"] = json!("other");
    with_uid["metadata"]["uid"] = json!("u-1");
    let r = c.put(&format!("{leases}/other"), &with_uid).await;
    assert_eq!(r.code, 409, "{}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .ends_with("Precondition failed: UID in precondition: u-1, UID in object meta: "),
        "{}",
        r.body
    );

    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]}});
    let r = c.put("/api/v1/namespaces/default/services/web", &svc).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.body["spec"]["clusterIP"].as_str().is_some_and(|ip| ip.starts_with("10.")), "{}", r.body);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}});
    assert_eq!(c.put(&format!("{CONFIGMAPS}/cm"), &cm).await.code, 404);
    // A dry run stores nothing; a namespace that does not exist is refused as a create's.
    let dry = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "dry"}});
    assert_eq!(c.put(&format!("{leases}/dry?dryRun=All"), &dry).await.code, 201);
    assert_eq!(c.get(&format!("{leases}/dry")).await.code, 404);
    let r = c.put("/apis/coordination.k8s.io/v1/namespaces/nope/leases/dry", &dry).await;
    assert_eq!((r.code, &r.body["message"]), (404, &json!("namespaces \"nope\" not found")), "{}", r.body);

    // The Python client's replace of a missing Role creates it.
    let script = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
rbac = client.RbacAuthorizationV1Api()
role = client.V1Role(metadata=client.V1ObjectMeta(name="reader"),
    rules=[client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get"])])
out, status, _ = rbac.replace_namespaced_role_with_http_info("reader", "default", role)
print(json.dumps({"status": status, "name": out.metadata.name, "uid": out.metadata.uid}))
"#;
    let line = python(&s, "python-create-on-update", script).await;
    assert_eq!((&line["status"], &line["name"]), (&json!(201), &json!("reader")), "{line}");
    let stored = c.get("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/reader").await;
    assert_eq!(stored.body["metadata"]["uid"], line["uid"]);
}

#[tokio::test]
async fn a_kind_without_a_strategy_s_generation_keeps_the_one_it_was_created_with() {
    let s = server().await;
    let c = Client::new(&s);
    let cm = |generation: i64| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "generation": generation}});
    let r = c.post(CONFIGMAPS, &cm(-1)).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ConfigMap \"cm\" is invalid: metadata.generation: Invalid value: -1: must be greater than or equal to 0"
    );
    let r = c.post(CONFIGMAPS, &cm(5)).await;
    assert_eq!((r.code, &r.body["metadata"]["generation"]), (201, &json!(5)), "{}", r.body);
    let r = c.put(&format!("{CONFIGMAPS}/cm"), &cm(9)).await;
    assert_eq!((r.code, &r.body["metadata"]["generation"]), (200, &json!(5)), "{}", r.body);
    // A kind whose strategy keeps one starts at 1 whatever was written.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "generation": 7},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let r = c.post("/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!((r.code, &r.body["metadata"]["generation"]), (201, &json!(1)), "{}", r.body);
}

#[tokio::test]
async fn a_put_that_creates_needs_the_create_verb() {
    let s = rbac_server().await;
    let admin = Client::new(&s);
    let role = json!({"metadata": {"name": "lease-writer"}, "rules": [{"apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"], "verbs": ["get", "update"]}]});
    let roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";
    assert_eq!(admin.post(roles, &role).await.code, 201);
    let binding = json!({"metadata": {"name": "dave"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role", "name": "lease-writer"}, "subjects": [{"apiGroup": "rbac.authorization.k8s.io",
        "kind": "User", "name": "dave"}]});
    assert_eq!(
        admin.post("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", &binding).await.code,
        201
    );
    // A consistent read: the cache that authorizes holds the binding.
    assert_eq!(admin.get(roles).await.code, 200);
    let dave = admin.clone().impersonating("dave");
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "leader"}});
    let at = "/apis/coordination.k8s.io/v1/namespaces/default/leases/leader";
    let r = dave.put(at, &lease).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "leases.coordination.k8s.io \"leader\" is forbidden: User \"dave\" cannot create resource \"leases\" in \
         API group \"coordination.k8s.io\" in the namespace \"default\""
    );
    assert_eq!(admin.get(at).await.code, 404);
    let created = admin.put(at, &lease).await;
    assert_eq!(created.code, 201, "{}", created.body);
    // Once it exists, `update` is all the PUT needs.
    let r = dave.put(at, &created.body).await;
    assert_eq!(r.code, 200, "{}", r.body);
}

#[tokio::test]
async fn a_restart_installs_crds_read_back_from_a_cluster_over_the_stored_ones() {
    use informer_apiserver::{ApiServer, StorageConfig};
    // The manifest as `kubectl get -o yaml` gives it: with the uid and creation time it had there.
    let manifest = WIDGET_CRD.replace(
        "  resourceVersion: \"81234\"\n",
        "  resourceVersion: \"81234\"\n  uid: 0b7c6a52-5a53-4b1e-9b43-52d4e0a7c1d2\n  creationTimestamp: \"2020-01-01T00:00:00Z\"\n",
    );
    let dir = informer_apiserver::testing::temp_data_dir();
    let start = || ApiServer::builder().storage(StorageConfig::Sqlite(dir.clone())).crd(&manifest).start();
    let s = start().await.unwrap();
    let c = Client::new(&s);
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert_eq!(c.post(WIDGETS, &w).await.code, 201);
    let crd = c.get(&format!("{CRDS}/widgets.example.com")).await.body;
    assert_ne!(crd["metadata"]["uid"], "0b7c6a52-5a53-4b1e-9b43-52d4e0a7c1d2");
    s.stop().await;
    drop(s);

    let s = start().await.unwrap();
    let c = Client::new(&s);
    let again = c.get(&format!("{CRDS}/widgets.example.com")).await.body;
    assert_eq!(again["metadata"]["uid"], crd["metadata"]["uid"]);
    assert_eq!(c.get(&format!("{WIDGETS}/w")).await.code, 200);
    s.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_puts_of_a_missing_object_create_it_once_and_update_it_after() {
    let s = server().await;
    let c = Client::new(&s);
    let at = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/shared";
    // Each writer on its own connection, all released at once.
    let writers: Vec<Client> = (0..16).map(|_| Client::new(&s)).collect();
    let go = std::sync::Arc::new(tokio::sync::Barrier::new(writers.len()));
    let puts = writers.into_iter().enumerate().map(|(i, w)| {
        let go = go.clone();
        tokio::spawn(async move {
            let role = json!({"metadata": {"name": "shared", "labels": {"writer": i.to_string()}}, "rules": []});
            go.wait().await;
            w.put(at, &role).await
        })
    });
    let answers: Vec<Resp> = futures_util::future::join_all(puts).await.into_iter().map(Result::unwrap).collect();
    let created = answers.iter().filter(|r| r.code == 201).count();
    let updated = answers.iter().filter(|r| r.code == 200).count();
    let refusals: Vec<&Value> = answers.iter().filter(|r| r.code >= 300).map(|r| &r.body["message"]).collect();
    assert_eq!((created, updated), (1, 15), "{refusals:?}");
    assert_eq!(c.get(at).await.code, 200);
}
