//! ValidatingAdmissionPolicies over HTTP: a policy bound with `Deny` refuses the writes it
//! matches with kube-apiserver's Status (422 Invalid, `<resource> "<name>" is forbidden:
//! ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request: <message>`),
//! and only those: other resources, operations and namespaces pass; `Warn` gives a `Warning`
//! header; `params` come from the object the binding's `paramRef` names or from each it
//! selects; faults of configuration and audit annotations that cannot be evaluated refuse; the
//! authorizer allows the server's user; deletes are judged on `oldObject`; a policy whose
//! expression does not compile is refused; the oldest and the newest kubectl apply a policy and
//! report its refusal.

mod common;

use common::*;
use serde_json::{Value, json};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

fn policy(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": name}, "spec": spec})
}

fn binding(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
           "metadata": {"name": name}, "spec": spec})
}

/// A consistent read of the bindings: from here on the server's cache, which admission reads
/// policies, bindings and params from, holds every write made before it.
async fn settled(c: &Client) {
    assert_eq!(c.get(BINDINGS).await.code, 200);
}

fn deployments_rule(operations: Value) -> Value {
    json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": operations,
                              "resources": ["deployments"]}]})
}

#[tokio::test]
async fn a_bound_policy_refuses_what_it_matches_in_kube_words() {
    let s = server().await;
    create_namespaces(&s, &["test", "prod"]).await.unwrap();
    let c = Client::new(&s);
    // A policy whose expression names what a policy does not declare is refused.
    let typo = policy(
        "typo",
        json!({"matchConstraints": deployments_rule(json!(["CREATE"])),
               "validations": [{"expression": "objec.spec.replicas <= 5"}]}),
    );
    let r = c.post(POLICIES, &typo).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"typo\" is invalid: spec.validations[0].expression: \
         Invalid value: \"objec.spec.replicas <= 5\": compilation failed: ERROR: <input>:1:1: undeclared reference to \
         'objec' (in container '')\n | objec.spec.replicas <= 5\n | ^"
    );
    let r = c
        .post(
            POLICIES,
            &policy(
                "max-replicas.example.com",
                json!({"failurePolicy": "Fail", "matchConstraints": deployments_rule(json!(["CREATE", "UPDATE"])),
                       "validations": [{"expression": "object.spec.replicas <= 5",
                                        "message": "replicas must be no greater than 5"}]}),
            ),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = c
        .post(
            BINDINGS,
            &binding(
                "max-replicas-test",
                json!({"policyName": "max-replicas.example.com", "validationActions": ["Deny"],
                       "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "test"}}}}),
            ),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    settled(&c).await;

    let test = "/apis/apps/v1/namespaces/test/deployments";
    let r = c.post(test, &deployment("big", 10)).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let cause = "ValidatingAdmissionPolicy 'max-replicas.example.com' with binding 'max-replicas-test' denied request: \
                 replicas must be no greater than 5";
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("deployments.apps \"big\" is forbidden: {cause}"), "reason": "Invalid",
               "details": {"name": "big", "group": "apps", "kind": "deployments", "causes": [{"message": cause}]},
               "code": 422})
    );
    assert_eq!(c.get(&format!("{test}/big")).await.code, 404);

    // Within the limit it is written; an update past it is refused.
    assert_eq!(c.post(test, &deployment("small", 3)).await.code, 201);
    let merge = "application/merge-patch+json";
    let r = c.patch(&format!("{test}/small"), merge, &json!({"spec": {"replicas": 7}})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(c.get(&format!("{test}/small")).await.body["spec"]["replicas"], 3);

    // Outside the binding's namespaces, and for operations the policy does not name, it does not judge.
    assert_eq!(c.post("/apis/apps/v1/namespaces/prod/deployments", &deployment("big", 10)).await.code, 201);
    assert_eq!(c.delete(&format!("{test}/small")).await.code, 200);
}

#[tokio::test]
async fn warnings_params_and_deletes() {
    let s = server().await;
    create_namespaces(&s, &["apps"]).await.unwrap();
    let c = Client::new(&s);
    // The limit comes from a ConfigMap named by the binding.
    let r = c
        .post(
            "/api/v1/namespaces/apps/configmaps",
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits"}, "data": {"maxReplicas": "4"}}),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let spec = json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                      "matchConstraints": deployments_rule(json!(["*"])),
                      "variables": [{"name": "limit", "expression": "int(params.data.maxReplicas)"}],
                      "validations": [{"expression": "object.spec.replicas <= variables.limit",
                                       "messageExpression": "'replicas ' + string(object.spec.replicas) + ' over ' + string(variables.limit)"}]});
    assert_eq!(c.post(POLICIES, &policy("limit", spec)).await.code, 201);
    let r = c
        .post(
            BINDINGS,
            &binding(
                "limit-warn",
                json!({"policyName": "limit", "validationActions": ["Warn"],
                       "paramRef": {"name": "limits", "namespace": "apps", "parameterNotFoundAction": "Deny"}}),
            ),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    settled(&c).await;
    let r = c.post("/apis/apps/v1/namespaces/apps/deployments", &deployment("wide", 6)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        r.headers["warning"],
        "299 - \"Validation failed for ValidatingAdmissionPolicy 'limit' with binding 'limit-warn': replicas 6 over 4\""
    );

    // A delete is judged on the object it removes.
    let spec = json!({"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                          "operations": ["DELETE"], "resources": ["configmaps"]}]},
                      "validations": [{"expression": "!has(oldObject.metadata.labels) || oldObject.metadata.labels['protected'] != 'true'",
                                       "message": "protected", "reason": "Forbidden"}]});
    assert_eq!(c.post(POLICIES, &policy("keep-protected", spec)).await.code, 201);
    let b = binding("keep-protected", json!({"policyName": "keep-protected", "validationActions": ["Deny"]}));
    assert_eq!(c.post(BINDINGS, &b).await.code, 201);
    settled(&c).await;
    let merge = "application/merge-patch+json";
    let path = "/api/v1/namespaces/apps/configmaps/limits";
    assert_eq!(c.patch(path, merge, &json!({"metadata": {"labels": {"protected": "true"}}})).await.code, 200);
    let r = c.delete(path).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(r.body["reason"], "Forbidden");
    assert_eq!(
        r.body["message"],
        "configmaps \"limits\" is forbidden: ValidatingAdmissionPolicy 'keep-protected' with binding 'keep-protected' denied request: protected"
    );
    assert_eq!(c.get(path).await.code, 200);
    assert_eq!(c.patch(path, merge, &json!({"metadata": {"labels": {"protected": "false"}}})).await.code, 200);
    assert_eq!(c.delete(path).await.code, 200);
    settled(&c).await;

    // With its params gone, a binding whose parameterNotFoundAction is Deny refuses: a fault of
    // the binding's configuration refuses under failurePolicy Fail whatever its actions.
    let r = c.post("/apis/apps/v1/namespaces/apps/deployments", &deployment("narrow", 1)).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "deployments.apps \"narrow\" is forbidden: ValidatingAdmissionPolicy 'limit' with binding 'limit-warn' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
}

#[tokio::test]
async fn selected_params_audit_annotations_and_the_authorizer() {
    let s = server().await;
    create_namespaces(&s, &["apps"]).await.unwrap();
    let c = Client::new(&s);
    let limits = |name: &str, max: &str, selected: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "labels": {"limits": selected}}, "data": {"maxReplicas": max}})
    };
    let spec = json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                      "matchConstraints": deployments_rule(json!(["CREATE"])),
                      "validations": [{"expression": "object.spec.replicas <= int(params.data.maxReplicas)",
                                       "messageExpression": "'over ' + params.metadata.name"}],
                      "auditAnnotations": [{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}]});
    assert_eq!(c.post(POLICIES, &policy("limit", spec)).await.code, 201);
    let selecting = json!({"policyName": "limit", "validationActions": ["Deny"],
                           "paramRef": {"selector": {"matchLabels": {"limits": "yes"}}, "parameterNotFoundAction": "Allow"}});
    assert_eq!(c.post(BINDINGS, &binding("limit-selected", selecting)).await.code, 201);
    settled(&c).await;
    // No param selected and Allow: the policy judges nothing.
    let create = |name: &str, replicas: u64| {
        let c = &c;
        let d = deployment(name, replicas);
        async move { c.post("/apis/apps/v1/namespaces/apps/deployments", &d).await }
    };
    assert_eq!(create("unjudged", 50).await.code, 201);
    for (name, max, selected) in [("high", "8", "yes"), ("low", "4", "yes"), ("ignored", "1", "no")] {
        assert_eq!(c.post("/api/v1/namespaces/apps/configmaps", &limits(name, max, selected)).await.code, 201);
    }
    settled(&c).await;
    // Every selected param judges; the unselected one does not.
    assert_eq!(create("small", 3).await.code, 201);
    let r = create("medium", 6).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "deployments.apps \"medium\" is forbidden: ValidatingAdmissionPolicy 'limit' with binding 'limit-selected' denied request: over low"
    );

    // A value kube types `dyn` is refused when the policy is written; one that gives neither a
    // string nor null when evaluated refuses the request.
    let spec = json!({"matchConstraints": deployments_rule(json!(["CREATE"])),
                      "auditAnnotations": [{"key": "replicas", "valueExpression": "object.spec.replicas"}]});
    let r = c.post(POLICIES, &policy("annotate", spec)).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["details"]["causes"][0]["message"],
        "Invalid value: \"object.spec.replicas\": must evaluate to one of [string null_type] but got dyn"
    );
    let value = "optional.of(object.spec.replicas).orValue(0)";
    let spec = json!({"matchConstraints": deployments_rule(json!(["CREATE"])),
                      "auditAnnotations": [{"key": "replicas", "valueExpression": value}]});
    assert_eq!(c.post(POLICIES, &policy("annotate", spec)).await.code, 201);
    let b = binding("annotate", json!({"policyName": "annotate", "validationActions": ["Audit"]}));
    assert_eq!(c.post(BINDINGS, &b).await.code, 201);
    settled(&c).await;
    let r = create("annotated", 2).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "deployments.apps \"annotated\" is forbidden: ValidatingAdmissionPolicy 'annotate' with binding 'annotate' denied request: valueExpression 'optional.of(object.spec.replicas).orValue(0)' resulted in unsupported return type: int. Return type must be either string or null."
    );

    // A paramKind no resource serves is a fault of the policy, refused before any binding.
    let spec = json!({"paramKind": {"apiVersion": "example.com/v1", "kind": "Limits"},
                      "matchConstraints": deployments_rule(json!(["UPDATE"])), "failurePolicy": "Fail",
                      "validations": [{"expression": "true"}]});
    assert_eq!(c.post(POLICIES, &policy("unknown-params", spec)).await.code, 201);
    let b = binding("unknown-params", json!({"policyName": "unknown-params", "validationActions": ["Warn"]}));
    assert_eq!(c.post(BINDINGS, &b).await.code, 201);
    settled(&c).await;
    let merge = "application/merge-patch+json";
    let r = c
        .patch("/apis/apps/v1/namespaces/apps/deployments/small", merge, &json!({"metadata": {"labels": {"a": "b"}}}))
        .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "deployments.apps \"small\" is forbidden: ValidatingAdmissionPolicy 'unknown-params' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=Limits'"
    );

    // The authorizer allows the server's one user everything.
    let spec = json!({"matchConstraints": deployments_rule(json!(["DELETE"])),
                      "validations": [{"expression": "!authorizer.requestResource.check('delete').allowed()",
                                       "message": "the server's user may delete"},
                                      {"expression": "authorizer.group('').resource('pods').namespace('apps').check('create').reason() != ''",
                                       "message": "allowed without a reason"}]});
    assert_eq!(c.post(POLICIES, &policy("authorized", spec)).await.code, 201);
    let b = binding("authorized", json!({"policyName": "authorized", "validationActions": ["Deny"]}));
    assert_eq!(c.post(BINDINGS, &b).await.code, 201);
    settled(&c).await;
    let r = c.delete("/apis/apps/v1/namespaces/apps/deployments/small").await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "deployments.apps \"small\" is forbidden: ValidatingAdmissionPolicy 'authorized' with binding 'authorized' denied request: the server's user may delete"
    );
    let messages: Vec<&Value> = r.body["details"]["causes"].as_array().unwrap().iter().map(|c| &c["message"]).collect();
    assert_eq!(messages.len(), 1, "{messages:?}");
}

const KUBECTL_POLICY: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: demo-policy.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: demo-binding-test.example.com
spec:
  policyName: demo-policy.example.com
  validationActions: [Deny]
"#;

#[tokio::test]
async fn kubectl_applies_a_policy_and_reports_its_refusal() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let s = server().await;
        let dir = tempdir("kubectl-vap");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let file = dir.join("policy.yaml");
        std::fs::write(&file, KUBECTL_POLICY).unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "-f", file.to_str().unwrap()]).await;
        assert!(ok, "{bin}: {out}{err}");
        assert!(
            out.contains(
                "validatingadmissionpolicybinding.admissionregistration.k8s.io/demo-binding-test.example.com created"
            ),
            "{bin}: {out}"
        );
        settled(&Client::new(&s)).await;
        let create = ["create", "deployment", "web", "--image=nginx", "--replicas=7", "-n", "default"];
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &create).await;
        assert!(!ok, "{bin}: {out}{err}");
        assert!(
            err.contains(
                "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'demo-policy.example.com' with binding \
                 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5"
            ),
            "{bin}: {err}"
        );
        let create = ["create", "deployment", "web", "--image=nginx", "--replicas=2", "-n", "default"];
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &create).await;
        assert!(ok, "{bin}: {out}{err}");
    }
}

#[tokio::test]
async fn policies_judge_webhook_configurations_and_a_false_condition_outweighs_errors() {
    let s = server().await;
    create_namespaces(&s, &["apps"]).await.unwrap();
    let c = Client::new(&s);
    // Webhook configurations are judged like any other resource.
    let spec = json!({"matchConstraints": {"resourceRules": [{"apiGroups": ["admissionregistration.k8s.io"],
                          "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["validatingwebhookconfigurations"]}]},
                      "validations": [{"expression": "object.webhooks.all(w, w.failurePolicy == 'Ignore')",
                                       "message": "webhooks must fail open"}]});
    assert_eq!(c.post(POLICIES, &policy("fail-open", spec)).await.code, 201);
    let b = binding("fail-open", json!({"policyName": "fail-open", "validationActions": ["Deny"]}));
    assert_eq!(c.post(BINDINGS, &b).await.code, 201);
    // A condition that is false skips the policy even where another fails to evaluate; errors
    // alone refuse under Fail.
    let spec = json!({"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                          "operations": ["CREATE"], "resources": ["configmaps"]}]},
                      "matchConditions": [{"name": "broken", "expression": "object.data.missing == 'x'"},
                                          {"name": "labelled", "expression": "has(object.metadata.labels)"}],
                      "validations": [{"expression": "false", "message": "judged"}]});
    assert_eq!(c.post(POLICIES, &policy("conditions", spec)).await.code, 201);
    let b = binding("conditions", json!({"policyName": "conditions", "validationActions": ["Deny"]}));
    assert_eq!(c.post(BINDINGS, &b).await.code, 201);
    // `namespaceObject` is the namespace as kube shows it to policies: no managedFields.
    let spec = json!({"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                          "operations": ["CREATE"], "resources": ["configmaps"]}]},
                      "validations": [{"expression": "namespaceObject.metadata.name == 'apps' && !has(namespaceObject.metadata.managedFields)",
                                       "message": "namespace view"}]});
    assert_eq!(c.post(POLICIES, &policy("namespace-view", spec)).await.code, 201);
    let b = binding("namespace-view", json!({"policyName": "namespace-view", "validationActions": ["Deny"]}));
    assert_eq!(c.post(BINDINGS, &b).await.code, 201);
    settled(&c).await;

    let hook = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                      "metadata": {"name": "guard"},
                      "webhooks": [{"name": "guard.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                                    "clientConfig": {"url": "https://127.0.0.1:1/validate"},
                                    "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"],
                                               "apiVersions": ["v1"], "resources": ["widgets"]}]}]});
    let r = c.post("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", &hook).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "validatingwebhookconfigurations.admissionregistration.k8s.io \"guard\" is forbidden: ValidatingAdmissionPolicy 'fail-open' with binding 'fail-open' denied request: webhooks must fail open"
    );

    let configmap = |name: &str, meta: Value| {
        let mut m = meta;
        m["name"] = json!(name);
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": {"k": "v"}})
    };
    let path = "/api/v1/namespaces/apps/configmaps";
    let r = c.post(path, &configmap("plain", json!({}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = c.post(path, &configmap("labelled", json!({"labels": {"a": "b"}}))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "configmaps \"labelled\" is forbidden: ValidatingAdmissionPolicy 'conditions' with binding 'conditions' denied request: expression 'object.data.missing == 'x'' resulted in error: no such key: missing"
    );
}

#[tokio::test]
async fn policies_judge_the_user_a_request_impersonates() {
    let s = server().await;
    let c = Client::new(&s);
    let only_controller = policy(
        "only-controller.example.com",
        json!({"matchConstraints": deployments_rule(json!(["CREATE"])),
               "validations": [{"expression": "request.userInfo.username == 'system:serviceaccount:default:controller' \
                                               && 'system:serviceaccounts:default' in request.userInfo.groups",
                                "messageExpression": "'not for ' + request.userInfo.username"}]}),
    );
    assert_eq!(c.post(POLICIES, &only_controller).await.code, 201);
    let bound =
        binding("only-controller", json!({"policyName": "only-controller.example.com", "validationActions": ["Deny"]}));
    assert_eq!(c.post(BINDINGS, &bound).await.code, 201);
    settled(&c).await;

    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let r = c.post(deployments, &deployment("by-admin", 1)).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().ends_with("denied request: not for system:admin"), "{}", r.body);

    let kc = kube::config::Kubeconfig::from_yaml(&s.kubeconfig_yaml()).unwrap();
    let mut as_controller =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await.unwrap();
    as_controller.auth_info.impersonate = Some("system:serviceaccount:default:controller".into());
    let api: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(kube::Client::try_from(as_controller).unwrap(), "default");
    let d = serde_json::from_value(deployment("by-controller", 1)).unwrap();
    api.create(&Default::default(), &d).await.unwrap();

    // Groups without a user are kube's 400.
    let kc = kube::config::Kubeconfig::from_yaml(&s.kubeconfig_yaml()).unwrap();
    let mut only_groups =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await.unwrap();
    only_groups.auth_info.impersonate_groups = Some(vec!["devs".into()]);
    let api: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(kube::Client::try_from(only_groups).unwrap(), "default");
    match api.get("by-controller").await.unwrap_err() {
        kube::Error::Api(status) => assert_eq!(
            (status.code, status.message.as_str()),
            (400, "requested [{Group  devs    }] without impersonating a user")
        ),
        other => panic!("{other}"),
    }
}

/// A namespace created while the watch cache lags is admitted into at once, and admission sees
/// it as it is: the create reads it from the storage and waits for the cache to hold it, so a
/// binding's namespace selector matches its labels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_the_cache_has_not_seen_yet_is_judged_by_its_labels() {
    let s = server().await;
    let c = Client::new(&s);
    let no_deployments = policy(
        "no-deployments.example.com",
        json!({"matchConstraints": deployments_rule(json!(["CREATE"])),
               "validations": [{"expression": "false", "message": "no deployments here"}]}),
    );
    assert_eq!(c.post(POLICIES, &no_deployments).await.code, 201);
    let bound = binding(
        "no-deployments-in-locked",
        json!({"policyName": "no-deployments.example.com", "validationActions": ["Deny"],
               "matchResources": {"namespaceSelector": {"matchLabels": {"locked": "yes"}}}}),
    );
    assert_eq!(c.post(BINDINGS, &bound).await.code, 201);
    settled(&c).await;

    s.set_cache_lag(std::time::Duration::from_millis(500));
    let ns =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh", "labels": {"locked": "yes"}}});
    assert_eq!(c.post("/api/v1/namespaces", &ns).await.code, 201);
    let r = c.post("/apis/apps/v1/namespaces/fresh/deployments", &deployment("d", 1)).await;
    s.set_cache_lag(std::time::Duration::ZERO);
    assert_eq!(r.code, 422, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().ends_with("denied request: no deployments here"), "{}", r.body);
}

/// A delete or an update refused on the watch cache's version of an object, which may be
/// behind, is judged again on the storage's, as kube judges the object it writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_refused_on_a_stale_cached_object_are_judged_on_the_stored_one() {
    let s = server().await;
    let c = Client::new(&s);
    let rules = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                          "operations": ["DELETE", "UPDATE"], "resources": ["configmaps"]}]});
    let spec = json!({"matchConstraints": rules,
                      "validations": [{"expression": "!has(oldObject.metadata.labels) || oldObject.metadata.labels['protected'] != 'true'",
                                       "message": "protected"}]});
    assert_eq!(c.post(POLICIES, &policy("keep-protected", spec)).await.code, 201);
    let b = binding("keep-protected", json!({"policyName": "keep-protected", "validationActions": ["Deny"]}));
    assert_eq!(c.post(BINDINGS, &b).await.code, 201);
    settled(&c).await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = |name: &str, protected: &str| json!({"metadata": {"name": name, "labels": {"protected": protected}}, "data": {"k": "v"}});
    for name in ["deleted", "replaced"] {
        assert_eq!(c.post(cms, &cm(name, "false")).await.code, 201);
    }
    // Protected, as the cache sees them.
    let merge = "application/merge-patch+json";
    for name in ["deleted", "replaced"] {
        let r = c.patch(&format!("{cms}/{name}"), merge, &json!({"metadata": {"labels": {"protected": "true"}}})).await;
        assert_eq!(r.code, 200, "{}", r.body);
    }
    assert_eq!(c.get(&format!("{cms}/deleted")).await.code, 200);
    s.set_cache_lag(std::time::Duration::from_millis(500));
    // Then unprotected in the storage itself while the cache lags, as another server of the same
    // storage would write them: the policy must judge the stored versions.
    for name in ["deleted", "replaced"] {
        let info = s.store().registry().find("", "v1", "configmaps").cloned().unwrap();
        let key = s.store().cache().layout().object_key(&info, "default", name);
        let kv = s.store().storage().get(&key).await.unwrap().unwrap();
        let mut v: serde_json::Value = serde_json::from_slice(&kv.value).unwrap();
        v["metadata"]["labels"]["protected"] = json!("false");
        s.store().storage().update(key, serde_json::to_vec(&v).unwrap().into(), kv.mod_revision).await.unwrap();
    }
    let r = c.delete(&format!("{cms}/deleted")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let mut body = cm("replaced", "false");
    body["data"] = json!({"k": "changed"});
    let r = c.put(&format!("{cms}/replaced"), &body).await;
    s.set_cache_lag(std::time::Duration::ZERO);
    assert_eq!(r.code, 200, "{}", r.body);
}

/// A policy sees a built-in object as kube's Go type writes it: a `""` Go leaves out is absent
/// (`has()` is false), a field Go always writes is there.
#[tokio::test]
async fn policies_see_objects_as_go_writes_them() {
    let s = server().await;
    let c = Client::new(&s);
    let rule = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                         "resources": ["pods"]}]});
    let checks = json!([
        {"expression": "!has(object.spec.nodeName)", "message": "nodeName is set"},
        {"expression": "!has(object.spec.imagePullSecrets)", "message": "imagePullSecrets is set"},
        {"expression": "has(object.spec.containers[0].resources)", "message": "resources is missing"}]);
    let r = c.post(POLICIES, &policy("go-form", json!({"matchConstraints": rule, "validations": checks}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r =
        c.post(BINDINGS, &binding("go-form", json!({"policyName": "go-form", "validationActions": ["Deny"]}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    settled(&c).await;
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}],
                     "nodeName": "", "imagePullSecrets": []}});
    let r = c.post("/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let pod =
        json!({"metadata": {"name": "q"}, "spec": {"containers": [{"name": "c", "image": "nginx"}], "nodeName": "n1"}});
    let r = c.post("/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().ends_with("denied request: nodeName is set"), "{}", r.body);
    // An empty list Go always writes is the decoded object's empty slice, `[]`, not `null`.
    let rule = json!({"resourceRules": [{"apiGroups": ["rbac.authorization.k8s.io"], "apiVersions": ["v1"],
                                         "operations": ["CREATE"], "resources": ["roles"]}]});
    let checks = json!([{"expression": "object.rules.size() == 0 || object.rules.all(r, has(r.verbs))"}]);
    let r = c.post(POLICIES, &policy("rules", json!({"matchConstraints": rule, "validations": checks}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = c.post(BINDINGS, &binding("rules", json!({"policyName": "rules", "validationActions": ["Deny"]}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    settled(&c).await;
    let role = json!({"metadata": {"name": "empty"}, "rules": []});
    let r = c.post("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", &role).await;
    assert_eq!(r.code, 201, "{}", r.body);
}
