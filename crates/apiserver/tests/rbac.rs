//! Role-based access control over HTTP, as kube-apiserver with `--authorization-mode=RBAC`
//! answers it: requests by users the server's own user impersonates and by service account
//! tokens are allowed by their Roles, ClusterRoles and bindings (names, subresources,
//! `fieldSelector=metadata.name=`), refused with kube's 403 and words otherwise; impersonation
//! itself is authorized; roles and bindings cannot grant what their writer does not hold (unless
//! it may `escalate` or `bind`); the default roles are there and `admin`, `edit` and `view`
//! gather the roles labelled to aggregate into them; access and rules reviews answer from the
//! roles; and kubectl, kube-rs and the Python client meet the same answers.

mod common;

use common::*;
use informer_apiserver::{ApiServer, AuthorizationMode};
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/default/pods";
const ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";
const BINDINGS: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";
const CLUSTER_ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
const CLUSTER_BINDINGS: &str = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
const SYSTEM_ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles";
const SYSTEM_BINDINGS: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings";
const SYSTEM_LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

async fn role(c: &Client, name: &str, rules: Vec<Value>) {
    let r = c.post(ROLES, &json!({"metadata": {"name": name}, "rules": rules})).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

/// Binds `role_kind`/`role` to `subject` in the default namespace.
async fn bind(c: &Client, name: &str, role_kind: &str, role: &str, subject: Value) {
    let binding = json!({"metadata": {"name": name}, "subjects": [subject],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}});
    let r = c.post(BINDINGS, &binding).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

fn user(name: &str) -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name})
}

/// A consistent read: from here on the server's cache, which authorizes requests, holds every
/// write made before it (as kube's authorizer reads its informers).
async fn settled(c: &Client) {
    assert_eq!(c.get(CLUSTER_ROLES).await.code, 200);
}

fn forbidden(r: &Resp, message: &str) {
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(r.body["reason"], "Forbidden");
    assert_eq!(r.body["message"], message);
}

#[tokio::test]
async fn requests_are_allowed_by_roles_and_refused_in_kube_s_words() {
    let s = rbac_server().await;
    let admin = Client::new(&s);
    let alice = admin.clone().impersonating("alice");
    let r = alice.get(PODS).await;
    forbidden(
        &r,
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"",
    );
    assert_eq!(r.body["details"], json!({"kind": "pods"}));
    // Discovery and the server's version are every authenticated user's (kube's default roles).
    for path in ["/version", "/api", "/apis", "/apis/apps/v1"] {
        assert_eq!(alice.get(path).await.code, 200, "{path}");
    }
    forbidden(&alice.get("/metrics").await, "forbidden: User \"alice\" cannot get path \"/metrics\"");

    role(&admin, "pod-reader", vec![rule(&[""], &["pods"], &["get", "list", "watch"])]).await;
    bind(&admin, "readers", "Role", "pod-reader", user("alice")).await;
    assert_eq!(admin.post(PODS, &pod("p", json!({}))).await.code, 201);
    settled(&admin).await;
    assert_eq!(alice.get(PODS).await.code, 200);
    assert_eq!(alice.get(&format!("{PODS}/p")).await.code, 200);
    let mut w = alice.watch(&format!("{PODS}?watch=true&resourceVersion=0")).await;
    // The role's watch verb allows the watch: its first event is the pod, not a refusal.
    let first = w.next().await.expect("an event");
    assert_eq!((first["type"].as_str(), first["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("p")));
    forbidden(
        &alice.delete(&format!("{PODS}/p")).await,
        "pods \"p\" is forbidden: User \"alice\" cannot delete resource \"pods\" in API group \"\" in the namespace \"default\"",
    );
    forbidden(
        &alice.get("/api/v1/namespaces/kube-system/pods").await,
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"kube-system\"",
    );
    forbidden(
        &alice.get("/api/v1/pods").await,
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" at the cluster scope",
    );
    // A resource the server does not serve is authorized (and refused) before it is looked up.
    forbidden(
        &alice.get("/apis/example.com/v1/namespaces/default/gadgets").await,
        "gadgets.example.com is forbidden: User \"alice\" cannot list resource \"gadgets\" in API group \"example.com\" in the namespace \"default\"",
    );
    // A binding to a role that does not exist gives no permission, and says so.
    bind(&admin, "ghost", "ClusterRole", "missing", user("alice")).await;
    settled(&admin).await;
    forbidden(
        &alice.get("/api/v1/namespaces/default/configmaps").await,
        "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\": RBAC: clusterrole.rbac.authorization.k8s.io \"missing\" not found",
    );
    assert_eq!(alice.get(PODS).await.code, 200, "the role that exists still allows");
    // The server's own user is in system:masters.
    assert_eq!(admin.get("/api/v1/namespaces/kube-system/pods").await.code, 200);
}

#[tokio::test]
async fn names_and_subresources_are_matched_as_kube_matches_them() {
    let s = rbac_server().await;
    let admin = Client::new(&s);
    let bob = admin.clone().impersonating("bob");
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    for name in ["lock", "other"] {
        assert_eq!(admin.post(leases, &json!({"metadata": {"name": name}, "spec": {}})).await.code, 201);
    }
    assert_eq!(admin.post(PODS, &pod("p", json!({}))).await.code, 201);
    let mut named = rule(&["coordination.k8s.io"], &["leases"], &["get", "list", "watch", "update"]);
    named["resourceNames"] = json!(["lock"]);
    role(&admin, "elector", vec![named, rule(&[""], &["pods/status"], &["get"])]).await;
    bind(&admin, "elector", "Role", "elector", user("bob")).await;
    settled(&admin).await;
    assert_eq!(bob.get(&format!("{leases}/lock")).await.code, 200);
    forbidden(
        &bob.get(&format!("{leases}/other")).await,
        "leases.coordination.k8s.io \"other\" is forbidden: User \"bob\" cannot get resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"default\"",
    );
    // A list or watch of one name (as client-go's lease lock and single-object informers ask).
    assert_eq!(bob.get(&format!("{leases}?fieldSelector=metadata.name%3Dlock")).await.code, 200);
    let mut w = bob.watch(&format!("{leases}?watch=1&fieldSelector=metadata.name%3Dlock&resourceVersion=0")).await;
    let first = w.next().await.expect("an event");
    assert_eq!((first["type"].as_str(), first["object"]["metadata"]["name"].as_str()), (Some("ADDED"), Some("lock")));
    assert_eq!(bob.get(leases).await.code, 403);
    assert_eq!(bob.get(&format!("{PODS}/p/status")).await.code, 200);
    forbidden(
        &bob.get(&format!("{PODS}/p")).await,
        "pods \"p\" is forbidden: User \"bob\" cannot get resource \"pods\" in API group \"\" in the namespace \"default\"",
    );
    forbidden(
        &bob.post(&format!("{PODS}/p/eviction"), &json!({"metadata": {"name": "p"}})).await,
        "pods \"p\" is forbidden: User \"bob\" cannot create resource \"pods/eviction\" in API group \"\" in the namespace \"default\"",
    );
}

#[tokio::test]
async fn roles_and_bindings_grant_only_what_their_writer_holds() {
    let s = rbac_server().await;
    let admin = Client::new(&s);
    let carol = admin.clone().impersonating("carol");
    role(
        &admin,
        "delegate",
        vec![
            rule(&["rbac.authorization.k8s.io"], &["roles", "rolebindings"], &["create"]),
            rule(&[""], &["pods"], &["get", "list"]),
        ],
    )
    .await;
    bind(&admin, "delegate", "Role", "delegate", user("carol")).await;
    settled(&admin).await;
    let held = json!({"metadata": {"name": "reader"}, "rules": [rule(&[""], &["pods"], &["get"])]});
    assert_eq!(carol.post(ROLES, &held).await.code, 201);
    let more = json!({"metadata": {"name": "deleter"},
        "rules": [rule(&[""], &["pods"], &["get", "watch", "delete"]), rule(&["apps"], &["deployments"], &["get"])]});
    forbidden(
        &carol.post(ROLES, &more).await,
        "roles.rbac.authorization.k8s.io \"deleter\" is forbidden: user \"carol\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"watch\" \"delete\"]}\n\
         {APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"get\"]}",
    );
    // Binding a role carol holds is allowed; binding `edit` is not, until she may `bind` it.
    let binding = |name: &str, role: &str| {
        json!({"metadata": {"name": name}, "subjects": [user("dave")],
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}})
    };
    assert_eq!(
        admin
            .post(
                CLUSTER_ROLES,
                &json!({"metadata": {"name": "pod-getter"}, "rules": [rule(&[""], &["pods"], &["get"])]})
            )
            .await
            .code,
        201
    );
    settled(&admin).await;
    assert_eq!(carol.post(BINDINGS, &binding("getters", "pod-getter")).await.code, 201);
    until_role(&admin, "edit", |r| r["verbs"].as_array().is_some_and(|v| v.contains(&json!("delete")))).await;
    let r = carol.post(BINDINGS, &binding("editors", "edit")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.starts_with("rolebindings.rbac.authorization.k8s.io \"editors\" is forbidden: user \"carol\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n"),
        "{message}"
    );
    // A binding to a role that does not exist is the role's 404 (for a writer without `bind`).
    let r = carol.post(BINDINGS, &binding("ghosts", "missing")).await;
    assert_eq!(r.code, 404, "{}", r.body);
    assert_eq!(r.body["message"], "clusterroles.rbac.authorization.k8s.io \"missing\" not found");
    let mut may_bind = rule(&["rbac.authorization.k8s.io"], &["clusterroles"], &["bind"]);
    may_bind["resourceNames"] = json!(["edit"]);
    role(&admin, "binder", vec![may_bind, rule(&["rbac.authorization.k8s.io"], &["roles"], &["escalate"])]).await;
    bind(&admin, "binder", "Role", "binder", user("carol")).await;
    settled(&admin).await;
    assert_eq!(carol.post(BINDINGS, &binding("editors", "edit")).await.code, 201);
    assert_eq!(carol.post(ROLES, &more).await.code, 201, "escalate lets carol write what she does not hold");
    // Only a user holding every permission may aggregate.
    let aggregated = json!({"metadata": {"name": "everything"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}});
    let cluster = rule(&["rbac.authorization.k8s.io"], &["clusterroles"], &["create"]);
    assert_eq!(
        admin.post(CLUSTER_ROLES, &json!({"metadata": {"name": "role-maker"}, "rules": [cluster]})).await.code,
        201
    );
    let r = admin
        .post(
            CLUSTER_BINDINGS,
            &json!({"metadata": {"name": "role-maker"}, "subjects": [user("carol")],
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "role-maker"}}),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    settled(&admin).await;
    forbidden(
        &carol.post(CLUSTER_ROLES, &aggregated).await,
        "clusterroles.rbac.authorization.k8s.io \"everything\" is forbidden: must have cluster-admin privileges to use the aggregationRule",
    );
    assert_eq!(admin.post(CLUSTER_ROLES, &aggregated).await.code, 201);
}

/// Waits until the ClusterRole `name` is as `pred` wants it (it is written by the server's
/// aggregation controller), and gives it.
async fn until_object(c: &Client, name: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let list = c.get(&format!("{CLUSTER_ROLES}?fieldSelector=metadata.name%3D{name}")).await;
    let rv = list.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    if let Some(found) = list.body["items"].as_array().unwrap().first()
        && pred(found)
    {
        return found.clone();
    }
    let path = format!("{CLUSTER_ROLES}?watch=true&resourceVersion={rv}&fieldSelector=metadata.name%3D{name}");
    let mut w = c.watch(&path).await;
    until(&mut w, name, |e| pred(&e["object"])).await["object"].clone()
}

/// Waits until the ClusterRole `name` holds a rule `pred` accepts.
async fn until_role(c: &Client, name: &str, pred: impl Fn(&Value) -> bool) -> Value {
    until_object(c, name, |v| v["rules"].as_array().is_some_and(|r| r.iter().any(&pred))).await
}

#[tokio::test]
async fn default_roles_aggregate_what_is_labelled_for_them() {
    let s = rbac_server().await;
    let admin = Client::new(&s);
    for name in
        ["cluster-admin", "system:discovery", "system:basic-user", "system:public-info-viewer", "system:auth-delegator"]
    {
        let r = admin.get(&format!("{CLUSTER_ROLES}/{name}")).await;
        assert_eq!(r.code, 200, "{name}");
        assert_eq!(r.body["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
    }
    let r = admin.get(&format!("{CLUSTER_BINDINGS}/cluster-admin")).await;
    assert_eq!(r.body["subjects"][0]["name"], "system:masters");
    // `view` gathers the pods rule of system:aggregate-to-view; `admin` gathers `edit`'s
    // (which gathers `view`'s).
    let pods_read = |r: &Value| {
        r["resources"].as_array().is_some_and(|l| l.contains(&json!("pods")))
            && r["verbs"].as_array().is_some_and(|v| v.contains(&json!("watch")))
    };
    until_role(&admin, "view", pods_read).await;
    until_role(&admin, "admin", pods_read).await;
    let widgets = |r: &Value| r["apiGroups"] == json!(["example.com"]);
    let labelled = json!({"metadata": {"name": "widget-viewer", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [rule(&["example.com"], &["widgets"], &["get", "list", "watch"])]});
    assert_eq!(admin.post(CLUSTER_ROLES, &labelled).await.code, 201);
    let view = until_role(&admin, "view", widgets).await;
    assert_eq!(
        view["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["manager"] == "clusterrole-aggregation-controller")
            .count(),
        1
    );
    until_role(&admin, "edit", widgets).await;
    until_role(&admin, "admin", widgets).await;
    // A user bound to `view` in a namespace reads what it gathered.
    bind(&admin, "viewers", "ClusterRole", "view", user("erin")).await;
    settled(&admin).await;
    let erin = admin.clone().impersonating("erin");
    assert_eq!(erin.get(PODS).await.code, 200);
    assert_eq!(erin.get("/api/v1/namespaces/default/secrets").await.code, 403, "view does not read secrets");
}

#[tokio::test]
async fn an_apply_that_creates_needs_create_and_a_binding_keeps_its_role() {
    let s = rbac_server().await;
    let admin = Client::new(&s);
    let alice = admin.clone().impersonating("alice");
    role(&admin, "patcher", vec![rule(&[""], &["configmaps"], &["patch", "get"])]).await;
    bind(&admin, "patcher", "Role", "patcher", user("alice")).await;
    settled(&admin).await;
    let path = "/api/v1/namespaces/default/configmaps/c?fieldManager=alice";
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
    forbidden(
        &alice.patch(path, "application/apply-patch+yaml", &config).await,
        "configmaps \"c\" is forbidden: User \"alice\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\"",
    );
    // Once it exists, `patch` is all an apply needs.
    assert_eq!(
        admin.post("/api/v1/namespaces/default/configmaps", &json!({"metadata": {"name": "c"}})).await.code,
        201
    );
    let r = alice.patch(path, "application/apply-patch+yaml", &config).await;
    assert_eq!(r.code, 200, "{}", r.body);
    // A binding's role never changes (kube's 422); its subjects may.
    let mut b = admin.get(&format!("{BINDINGS}/patcher")).await.body;
    b["roleRef"]["name"] = json!("other");
    let r = admin.put(&format!("{BINDINGS}/patcher"), &b).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "RoleBinding.rbac.authorization.k8s.io \"patcher\" is invalid: roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"Role\",\"Name\":\"other\"}: cannot change roleRef"
    );
    b["roleRef"]["name"] = json!("patcher");
    b["subjects"] = json!([user("alice"), user("bob")]);
    assert_eq!(admin.put(&format!("{BINDINGS}/patcher"), &b).await.code, 200);
    let bad = json!({"metadata": {"name": "bad"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Secret", "name": "x"}});
    let r = admin.post(BINDINGS, &bad).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body["message"],
        "RoleBinding.rbac.authorization.k8s.io \"bad\" is invalid: roleRef.kind: Unsupported value: \"Secret\": supported values: \"Role\", \"ClusterRole\""
    );
}

#[tokio::test]
async fn aggregation_runs_whatever_the_mode() {
    let s = server().await;
    let admin = Client::new(&s);
    assert_eq!(admin.get(&format!("{CLUSTER_ROLES}/cluster-admin")).await.code, 404, "no default roles without RBAC");
    // An aggregated role whose rules another manager holds (and that selects nothing) cannot be
    // emptied by the controller's apply; it holds up no other role.
    let held = json!({"metadata": {"name": "a-held"}, "rules": [rule(&[""], &["secrets"], &["get"])],
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"nothing": "selected"}}]}});
    assert_eq!(admin.post(CLUSTER_ROLES, &held).await.code, 201);
    let r = admin.post(CLUSTER_ROLES, &json!({"metadata": {"name": "empty"}, "aggregationRule": {}})).await;
    assert_eq!(r.code, 422);
    assert_eq!(
        r.body["message"],
        "ClusterRole.rbac.authorization.k8s.io \"empty\" is invalid: aggregationRule.clusterRoleSelectors: Required value"
    );
    let part = |name: &str, verb: &str| json!({"metadata": {"name": name, "labels": {"team": "a"}}, "rules": [rule(&[""], &["configmaps"], &[verb])]});
    assert_eq!(admin.post(CLUSTER_ROLES, &part("a-get", "get")).await.code, 201);
    let whole = json!({"metadata": {"name": "team-a"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"team": "a"}}]}});
    assert_eq!(admin.post(CLUSTER_ROLES, &whole).await.code, 201);
    assert_eq!(admin.post(CLUSTER_ROLES, &part("a-list", "list")).await.code, 201);
    let both = json!([rule(&[""], &["configmaps"], &["get"]), rule(&[""], &["configmaps"], &["list"])]);
    until_object(&admin, "team-a", |v| v["rules"] == both).await;
    assert_eq!(admin.delete(&format!("{CLUSTER_ROLES}/a-get")).await.code, 200);
    let left = json!([rule(&[""], &["configmaps"], &["list"])]);
    until_object(&admin, "team-a", |v| v["rules"] == left).await;
}

#[tokio::test]
async fn service_accounts_are_authorized_by_their_bindings_and_impersonation_is_checked() {
    let s = rbac_server().await;
    let admin = Client::new(&s);
    let r = admin.post("/api/v1/namespaces/default/serviceaccounts", &json!({"metadata": {"name": "builder"}})).await;
    assert_eq!(r.code, 201);
    let r = admin.post("/api/v1/namespaces/default/serviceaccounts/builder/token", &json!({})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let token = r.body["status"]["token"].as_str().unwrap().to_string();
    let builder = Client::new(&s).with_token(&token);
    forbidden(
        &builder.get(PODS).await,
        "pods is forbidden: User \"system:serviceaccount:default:builder\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"",
    );
    role(&admin, "pod-reader", vec![rule(&[""], &["pods"], &["list"])]).await;
    // A service account subject without a namespace is one of the binding's namespace.
    bind(&admin, "builder", "Role", "pod-reader", json!({"kind": "ServiceAccount", "name": "builder"})).await;
    settled(&admin).await;
    assert_eq!(builder.get(PODS).await.code, 200);
    // The account may not impersonate until a role lets it.
    let as_bob = builder.clone().impersonating("bob");
    forbidden(
        &as_bob.get(PODS).await,
        "users \"bob\" is forbidden: User \"system:serviceaccount:default:builder\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope",
    );
    let impersonator =
        json!({"metadata": {"name": "impersonator"}, "rules": [rule(&[""], &["users"], &["impersonate"])]});
    assert_eq!(admin.post(CLUSTER_ROLES, &impersonator).await.code, 201);
    let binding = json!({"metadata": {"name": "impersonator"}, "subjects": [{"kind": "ServiceAccount", "name": "builder", "namespace": "default"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonator"}});
    assert_eq!(admin.post(CLUSTER_BINDINGS, &binding).await.code, 201);
    settled(&admin).await;
    // Now the request is bob's, whom no role allows.
    forbidden(
        &as_bob.get(PODS).await,
        "pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"",
    );
}

#[tokio::test]
async fn access_reviews_answer_from_the_roles() {
    let s = rbac_server().await;
    let admin = Client::new(&s);
    role(&admin, "pod-reader", vec![rule(&[""], &["pods"], &["get", "list"])]).await;
    bind(&admin, "readers", "Role", "pod-reader", user("alice")).await;
    settled(&admin).await;
    let review = |verb: &str| json!({"spec": {"user": "alice", "resourceAttributes": {"namespace": "default", "verb": verb, "resource": "pods"}}});
    let r = admin.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", &review("list")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        r.body["status"],
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"readers/default\" of Role \"pod-reader\" to User \"alice\""})
    );
    let r = admin.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", &review("delete")).await;
    assert_eq!(r.body["status"], json!({"allowed": false}));
    let alice = admin.clone().impersonating("alice");
    let own = json!({"spec": {"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}}});
    let r = alice.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", &own).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["status"]["allowed"], true);
    let r = alice
        .post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", &json!({"spec": {"namespace": "default"}}))
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let rules = r.body["status"]["resourceRules"].as_array().unwrap();
    assert!(rules.contains(&json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]})), "{rules:?}");
    assert!(!rules.iter().any(|r| r["resources"] == json!(["*"])), "{rules:?}");
    assert!(
        r.body["status"]["nonResourceRules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["nonResourceURLs"].as_array().unwrap().contains(&json!("/version")))
    );
}

const PY_LIST: &str = r#"
import json, sys
from kubernetes import client
cfg = client.Configuration()
cfg.host = sys.argv[1]
cfg.api_key = {"authorization": "Bearer " + sys.argv[2]}
api = client.CoreV1Api(client.ApiClient(cfg))
try:
    api.list_namespaced_pod("default")
    print(json.dumps({"listed": True}))
except client.exceptions.ApiException as e:
    print(json.dumps({"status": e.status, "body": json.loads(e.body)}))
"#;

#[tokio::test]
async fn kubectl_kube_rs_and_python_meet_the_same_answers() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let s = rbac_server().await;
    let admin = Client::new(&s);
    // kube-rs impersonating alice.
    let kc = kube::config::Kubeconfig::from_yaml(&s.kubeconfig_yaml()).unwrap();
    let mut cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
    cfg.auth_info.impersonate = Some("alice".into());
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(kube::Client::try_from(cfg).unwrap(), "default");
    match pods.list(&Default::default()).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
            assert_eq!(
                e.message,
                "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
            );
        }
        other => panic!("expected a 403, got {other:?}"),
    }
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let dir = tempdir("kubectl-rbac");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let (ok, out, _) = kubectl_bin(bin, &kc, &cache, &["auth", "can-i", "list", "pods", "--as", "alice"]).await;
        assert!(!ok && out.trim() == "no", "{bin}: {out}");
        let (ok, _, err) = kubectl_bin(bin, &kc, &cache, &["get", "pods", "--as", "alice"]).await;
        assert!(!ok);
        assert!(
            err.contains("Error from server (Forbidden): pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""),
            "{bin}: {err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
    role(&admin, "pod-reader", vec![rule(&[""], &["pods"], &["list"])]).await;
    bind(&admin, "readers", "Role", "pod-reader", user("alice")).await;
    settled(&admin).await;
    assert!(pods.list(&Default::default()).await.is_ok());
    let dir = tempdir("kubectl-rbac");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let (ok, out, err) = kubectl_bin(
        versions.last().unwrap(),
        &kc,
        &dir.join("cache"),
        &["auth", "can-i", "list", "pods", "--as", "alice"],
    )
    .await;
    assert!(ok && out.trim() == "yes", "{out}{err}");
    let _ = std::fs::remove_dir_all(&dir);

    // The Python client with a service account's token.
    assert_eq!(
        admin.post("/api/v1/namespaces/default/serviceaccounts", &json!({"metadata": {"name": "py"}})).await.code,
        201
    );
    let token =
        admin.post("/api/v1/namespaces/default/serviceaccounts/py/token", &json!({})).await.body["status"]["token"]
            .as_str()
            .unwrap()
            .to_string();
    let run = || async {
        let out = common::tools::python(PY_LIST, &[&s.url(), &token]).await;
        serde_json::from_str::<Value>(&out).unwrap()
    };
    let answer = run().await;
    assert_eq!(answer["status"], 403, "{answer}");
    assert_eq!(
        answer["body"]["message"],
        "pods is forbidden: User \"system:serviceaccount:default:py\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    bind(&admin, "py", "Role", "pod-reader", json!({"kind": "ServiceAccount", "name": "py", "namespace": "default"}))
        .await;
    settled(&admin).await;
    assert_eq!(run().await, json!({"listed": true}));
}

/// What a bootstrap ClusterRole or ClusterRoleBinding holds now.
async fn bootstrap(c: &Client, kind: &str, name: &str) -> Value {
    let path = if kind == "role" { CLUSTER_ROLES } else { CLUSTER_BINDINGS };
    let r = c.get(&format!("{path}/{name}")).await;
    assert_eq!(r.code, 200, "{name}: {}", r.body);
    r.body
}

#[tokio::test]
async fn a_server_starting_on_its_data_puts_back_what_the_bootstrap_policy_lost() {
    let dir = informer_apiserver::testing::temp_data_dir();
    let start = || ApiServer::builder().data_dir(&dir).authorization(AuthorizationMode::Rbac).start();
    let s = start().await.unwrap();
    let c = Client::new(&s);
    // A rule taken from a role, another added; a label changed.
    let mut basic = bootstrap(&c, "role", "system:basic-user").await;
    basic["rules"] = json!([
        rule(&["authorization.k8s.io"], &["selfsubjectaccessreviews"], &["create"]),
        rule(&[""], &["pods"], &["get"])
    ]);
    basic["metadata"]["labels"]["kubernetes.io/bootstrapping"] = json!("mine");
    assert_eq!(c.put(&format!("{CLUSTER_ROLES}/system:basic-user"), &basic).await.code, 200);
    // A role deleted; a protected role emptied.
    assert_eq!(c.delete(&format!("{CLUSTER_ROLES}/system:discovery")).await.code, 200);
    let mut monitoring = bootstrap(&c, "role", "system:monitoring").await;
    monitoring["rules"] = json!([]);
    monitoring["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] = json!("false");
    assert_eq!(c.put(&format!("{CLUSTER_ROLES}/system:monitoring"), &monitoring).await.code, 200);
    // A binding's subject taken away, another bound to a different role.
    let mut public = bootstrap(&c, "binding", "system:public-info-viewer").await;
    public["subjects"] = json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]);
    assert_eq!(c.put(&format!("{CLUSTER_BINDINGS}/system:public-info-viewer"), &public).await.code, 200);
    assert_eq!(c.delete(&format!("{CLUSTER_BINDINGS}/system:basic-user")).await.code, 200);
    let rebound = json!({"metadata": {"name": "system:basic-user"}, "subjects": [user("bob")],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}});
    assert_eq!(c.post(CLUSTER_BINDINGS, &rebound).await.code, 201);
    // A namespaced default binding deleted.
    assert_eq!(c.delete(&format!("{SYSTEM_BINDINGS}/system::leader-locking-kube-scheduler")).await.code, 200);
    s.stop().await;
    drop(s);

    let s = start().await.unwrap();
    let c = Client::new(&s);
    let basic = bootstrap(&c, "role", "system:basic-user").await;
    assert_eq!(
        basic["rules"],
        json!([
            rule(&["authorization.k8s.io"], &["selfsubjectaccessreviews"], &["create"]),
            rule(&[""], &["pods"], &["get"]),
            rule(&["authorization.k8s.io"], &["selfsubjectrulesreviews"], &["create"]),
            rule(&["authentication.k8s.io"], &["selfsubjectreviews"], &["create"]),
        ])
    );
    assert_eq!(basic["metadata"]["labels"]["kubernetes.io/bootstrapping"], "mine");
    assert!(!bootstrap(&c, "role", "system:discovery").await["rules"].as_array().unwrap().is_empty());
    let monitoring = bootstrap(&c, "role", "system:monitoring").await;
    assert!(monitoring["rules"].as_array().is_none_or(Vec::is_empty), "protected: {monitoring}");
    let public = bootstrap(&c, "binding", "system:public-info-viewer").await;
    let subjects: Vec<&str> =
        public["subjects"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(subjects, ["alice", "system:authenticated", "system:unauthenticated"]);
    let basic_binding = bootstrap(&c, "binding", "system:basic-user").await;
    assert_eq!(basic_binding["roleRef"]["name"], "system:basic-user");
    assert_eq!(
        basic_binding["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                                  "name": "system:authenticated"}])
    );
    // The roles work again: any user may discover the API, the scheduler take its lease.
    assert_eq!(c.clone().impersonating("carol").get("/api").await.code, 200);
    let scheduler = c.clone().impersonating("system:kube-scheduler");
    assert_eq!(scheduler.get(&format!("{SYSTEM_LEASES}/kube-scheduler")).await.code, 404);

    // A restart in place reconciles them too.
    assert_eq!(c.delete(&format!("{CLUSTER_ROLES}/system:discovery")).await.code, 200);
    s.restart().await.unwrap();
    assert!(s.wait_ready(std::time::Duration::from_secs(20)).await);
    assert!(!bootstrap(&c, "role", "system:discovery").await["rules"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn namespaced_defaults_let_control_plane_components_lock_and_read_what_kube_grants() {
    let s = rbac_server().await;
    let c = Client::new(&s);
    // kube's defaults in kube-system and kube-public, labelled as bootstrap objects.
    let names = |list: &Resp| -> Vec<String> {
        list.body["items"].as_array().unwrap().iter().map(|o| o["metadata"]["name"].as_str().unwrap().into()).collect()
    };
    let roles = c.get(SYSTEM_ROLES).await;
    assert_eq!(
        names(&roles),
        [
            "extension-apiserver-authentication-reader",
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-scheduler",
            "system:controller:bootstrap-signer",
            "system:controller:cloud-provider",
            "system:controller:token-cleaner",
        ]
    );
    for o in roles.body["items"].as_array().unwrap() {
        assert_eq!(o["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults", "{o}");
    }
    let public = c.get("/apis/rbac.authorization.k8s.io/v1/namespaces/kube-public/rolebindings").await;
    assert_eq!(names(&public), ["system:controller:bootstrap-signer"]);
    assert_eq!(public.body["items"][0]["subjects"][0]["namespace"], "kube-system");
    // Without the default namespaces, the server makes those its defaults are in, as kube does.
    let bare = informer_apiserver::testing::builder()
        .default_namespaces(false)
        .authorization(AuthorizationMode::Rbac)
        .start()
        .await
        .expect("start");
    let bare_client = Client::new(&bare);
    for ns in ["kube-public", "kube-system"] {
        assert_eq!(bare_client.get(&format!("/api/v1/namespaces/{ns}")).await.code, 200, "{ns}");
    }
    assert_eq!(bare_client.get(&format!("{SYSTEM_ROLES}/extension-apiserver-authentication-reader")).await.code, 200);
    assert_eq!(bare_client.get("/api/v1/namespaces/default").await.code, 404);

    // The scheduler takes its lease in kube-system, and nowhere else.
    let scheduler = c.clone().impersonating("system:kube-scheduler");
    let lease = json!({"metadata": {"name": "kube-scheduler"}, "spec": {"holderIdentity": "a"}});
    assert_eq!(scheduler.post(SYSTEM_LEASES, &lease).await.code, 201);
    let r = scheduler.post("/apis/coordination.k8s.io/v1/namespaces/default/leases", &lease).await;
    forbidden(
        &r,
        "leases.coordination.k8s.io is forbidden: User \"system:kube-scheduler\" cannot create resource \"leases\" \
         in API group \"coordination.k8s.io\" in the namespace \"default\"",
    );
    let r = scheduler.delete(&format!("{SYSTEM_LEASES}/kube-scheduler")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    // The controller manager's service account and user read the authentication ConfigMap only.
    let manager = c.clone().impersonating("system:kube-controller-manager");
    let config = "/api/v1/namespaces/kube-system/configmaps";
    assert_eq!(manager.get(&format!("{config}/extension-apiserver-authentication")).await.code, 404);
    let r = manager.get(&format!("{config}/other")).await;
    forbidden(
        &r,
        "configmaps \"other\" is forbidden: User \"system:kube-controller-manager\" cannot get resource \
         \"configmaps\" in API group \"\" in the namespace \"kube-system\"",
    );
}
