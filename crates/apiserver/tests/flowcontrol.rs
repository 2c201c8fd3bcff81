//! flowcontrol.apiserver.k8s.io/v1 over HTTP: FlowSchemas and PriorityLevelConfigurations
//! discovered where kube-apiserver v1.35 lists them, its mandatory and suggested configuration in
//! place from the start (and back after a restart when deleted or changed), v1's defaults,
//! refusals, generations, the `Dangling` status its controller writes, the schema and level
//! each answer names, tables as `kubectl get` shows them, kube-rs's typed clients and the Python
//! client's dynamic client.

mod common;

use common::tools::KubectlTables;
use common::*;
use serde_json::{Value, json};

const GROUP_PATH: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";
const SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";

fn names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> =
        list["items"].as_array().unwrap().iter().map(|o| o["metadata"]["name"].as_str().unwrap().to_string()).collect();
    names.sort();
    names
}

fn schema(name: &str, level: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"priorityLevelConfiguration": {"name": level},
        "rules": [{"subjects": [{"kind": "User", "user": {"name": "alice"}}],
                   "resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["default"]}]}]}})
}

fn level(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"type": "Limited",
        "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 0}}}}})
}

/// Waits for the schema `name` to carry a `Dangling` condition of `status`; returns the schema.
async fn dangling(c: &Client, name: &str, status: &str) -> Value {
    let mut w = c.watch(&format!("{SCHEMAS}?watch=1&fieldSelector=metadata.name%3D{name}")).await;
    until(&mut w, "the Dangling condition", |e| {
        let conditions = e["object"]["status"]["conditions"].as_array().cloned().unwrap_or_default();
        conditions.iter().any(|c| c["type"] == "Dangling" && c["status"] == status)
    })
    .await["object"]
        .clone()
}

#[tokio::test]
async fn the_group_is_discovered_where_kube_lists_it() {
    let s = server().await;
    let c = Client::new(&s);
    assert_listed_after(&c, &[("resource.k8s.io", "flowcontrol.apiserver.k8s.io")]).await;
    let v1 = c.get(GROUP_PATH).await;
    let found: Vec<(String, String, bool)> = v1.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap().into(), r["kind"].as_str().unwrap().into(), r["namespaced"] == true))
        .collect();
    for name in
        ["flowschemas", "flowschemas/status", "prioritylevelconfigurations", "prioritylevelconfigurations/status"]
    {
        assert!(found.iter().any(|(n, _, namespaced)| n == name && !namespaced), "{name} in {found:?}");
    }
    assert_eq!(api_service_priorities(&c, "v1.flowcontrol.apiserver.k8s.io").await, (Some(16100), Some(21)));
}

#[tokio::test]
async fn the_configuration_is_in_place_from_the_start() {
    let s = server().await;
    let c = Client::new(&s);
    let levels = c.get(LEVELS).await;
    assert_eq!(
        names(&levels.body),
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    let schemas = c.get(SCHEMAS).await;
    assert_eq!(
        names(&schemas.body),
        [
            "catch-all",
            "exempt",
            "global-default",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "probes",
            "service-accounts",
            "system-leader-election",
            "system-node-high",
            "system-nodes"
        ]
    );
    let exempt = c.get(&format!("{LEVELS}/exempt")).await.body;
    assert_eq!(
        exempt["spec"],
        json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}})
    );
    assert_eq!(exempt["metadata"]["annotations"], json!({"apf.kubernetes.io/autoupdate-spec": "true"}));
    assert_eq!(exempt["metadata"]["generation"], 1);
    let managers: Vec<&str> = exempt["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers, ["api-priority-and-fairness-config-producer-v1"]);
    let election = c.get(&format!("{SCHEMAS}/system-leader-election")).await.body;
    assert_eq!(
        election["spec"],
        json!({"priorityLevelConfiguration": {"name": "leader-election"}, "matchingPrecedence": 100,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "system:kube-controller-manager"}},
                                    {"kind": "User", "user": {"name": "system:kube-scheduler"}},
                                    {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}}],
                       "resourceRules": [{"verbs": ["get", "create", "update"], "apiGroups": ["coordination.k8s.io"],
                                          "resources": ["leases"], "namespaces": ["*"]}]}]})
    );
    // Each schema's level exists: the controller says so.
    let probes = dangling(&c, "probes", "False").await;
    let condition = &probes["status"]["conditions"][0];
    assert_eq!(
        (condition["reason"].as_str(), condition["message"].as_str()),
        (
            Some("Found"),
            Some("This FlowSchema references the PriorityLevelConfiguration object named \"exempt\" and it exists")
        )
    );
    let status_managers: Vec<&str> = probes["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["subresource"] == "status")
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert_eq!(status_managers, ["api-priority-and-fairness-config-consumer-v1"]);
}

#[tokio::test]
async fn objects_are_defaulted_track_their_generation_and_keep_their_status() {
    let s = server().await;
    let c = Client::new(&s);
    let created = c.post(LEVELS, &level("batch")).await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(
        created.body["spec"]["limited"],
        json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
               "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
    );
    assert_eq!((created.body["metadata"]["generation"].as_i64(), created.body["status"].clone()), (Some(1), json!({})));

    let mut body = schema("batch", "batch");
    body["status"] = json!({"conditions": [{"type": "Mine", "status": "True"}]});
    let r = c.post(SCHEMAS, &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["matchingPrecedence"], 1000);
    assert_eq!(r.body["status"], json!({}), "a create's status is dropped");
    let found = dangling(&c, "batch", "False").await;

    // A status write changes the status alone; a write of the object keeps the status.
    let mut status = found.clone();
    status["metadata"]["labels"] = json!({"ignored": "yes"});
    status["spec"]["matchingPrecedence"] = json!(5);
    status["status"]["conditions"].as_array_mut().unwrap().push(json!({"type": "Mine", "status": "True"}));
    let r = c.put(&format!("{SCHEMAS}/batch/status"), &status).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!((r.body["metadata"].get("labels"), r.body["spec"]["matchingPrecedence"].as_i64()), (None, Some(1000)));
    assert_eq!(r.body["status"]["conditions"].as_array().unwrap().len(), 2);
    assert_eq!(r.body["metadata"]["generation"], 1);
    let mut changed = r.body.clone();
    changed["spec"]["matchingPrecedence"] = json!(500);
    changed["status"] = json!({});
    let r = c.put(&format!("{SCHEMAS}/batch"), &changed).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["generation"], 2);
    assert_eq!(r.body["status"]["conditions"].as_array().unwrap().len(), 2);

    // A delete answers a Status, as kube's generic store does for these kinds.
    let r = c.delete(&format!("{SCHEMAS}/batch")).await;
    assert_eq!((r.code, r.body["kind"].as_str(), r.body["status"].as_str()), (200, Some("Status"), Some("Success")));
    assert_eq!(r.body["details"]["kind"], "flowschemas");
}

#[tokio::test]
async fn a_schema_naming_a_missing_level_is_dangling_until_it_exists() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.post(SCHEMAS, &schema("later", "later")).await.code, 201);
    let missing = dangling(&c, "later", "True").await;
    let condition = &missing["status"]["conditions"][0];
    assert_eq!(
        (condition["reason"].as_str(), condition["message"].as_str()),
        (
            Some("NotFound"),
            Some(
                "This FlowSchema references the PriorityLevelConfiguration object named \"later\" but there is no such object"
            )
        )
    );
    assert_eq!(c.post(LEVELS, &level("later")).await.code, 201);
    dangling(&c, "later", "False").await;
}

#[tokio::test]
async fn invalid_objects_get_kubes_causes() {
    let s = server().await;
    let c = Client::new(&s);
    let bad = json!({"metadata": {"name": "bad"}, "spec": {"priorityLevelConfiguration": {"name": ""},
        "matchingPrecedence": 1, "distinguisherMethod": {"type": "ByPod"},
        "rules": [
            {"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": "a", "namespace": ""}, "user": {"name": "u"}},
                          {"kind": "Robot"}, {"kind": "ServiceAccount", "group": {"name": "g"}}],
             "resourceRules": [{"verbs": ["*", "get"], "apiGroups": [], "resources": ["*", "pods"], "namespaces": ["Bad"]}],
             "nonResourceRules": [{"verbs": ["post"], "nonResourceURLs": ["/health*", "metrics"]}]},
            {"subjects": []}]}});
    let r = c.post(SCHEMAS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        causes(&r),
        [
            "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1",
            "spec.distinguisherMethod.type: Unsupported value: {\"Type\":\"ByPod\"}: supported values: \"ByNamespace\", \"ByUser\"",
            "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
            "spec.rules[0].subjects[0].serviceAccount.namespace: Required value: must specify namespace for service account",
            "spec.rules[0].subjects[0].user: Forbidden: user is forbidden when subject kind is not 'User'",
            "spec.rules[0].subjects[1].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"",
            "spec.rules[0].subjects[2].serviceAccount: Required value: serviceAccount is required when subject kind is 'ServiceAccount'",
            "spec.rules[0].subjects[2].group: Forbidden: group is forbidden when subject kind is not 'Group'",
            "spec.rules[0].resourceRules[0].verbs: Invalid value: [\"*\",\"get\"]: if '*' is present, must not specify other verbs",
            "spec.rules[0].resourceRules[0].apiGroups: Required value: resource rules must supply at least one api group",
            "spec.rules[0].resourceRules[0].resources: Invalid value: [\"*\",\"pods\"]: if '*' is present, must not specify other resources",
            "spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: \"Bad\": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "spec.rules[0].nonResourceRules[0].verbs: Unsupported value: [\"post\"]: supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\"",
            "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"/health*\": wildcard can only do suffix matching",
            "spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: \"metrics\": must start with slash",
            "spec.rules[1].subjects: Required value: subjects must contain at least one value",
            "spec.rules[1]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
        ]
    );
    assert_eq!(
        r.body["message"].as_str().unwrap().split(':').next(),
        Some("FlowSchema.flowcontrol.apiserver.k8s.io \"bad\" is invalid")
    );

    let bad = json!({"metadata": {"name": "bad"}, "spec": {"type": "Limited", "exempt": {},
        "limited": {"nominalConcurrencyShares": -1, "lendablePercent": 101, "borrowingLimitPercent": -2,
                    "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 11, "queueLengthLimit": -1}}}}});
    let r = c.post(LEVELS, &bad).await;
    assert_eq!(
        causes(&r),
        [
            "spec.exempt: Forbidden: must be nil if the type is Limited",
            "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
            "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be positive",
            "spec.limited.limitResponse.queuing.handSize: Invalid value: 11: required entropy bits of deckSize 64 and handSize 11 should not be greater than 60",
            "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
            "spec.limited.borrowingLimitPercent: Invalid value: -2: if specified, must be a non-negative integer",
        ]
    );
    let r = c.post(LEVELS, &json!({"metadata": {"name": "free"}, "spec": {"type": "Exempt"}})).await;
    assert_eq!(
        causes(&r),
        ["spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'"]
    );
    // v1beta3's annotation for zero shares has no place on a v1 object.
    let mut annotated = level("annotated");
    annotated["metadata"]["annotations"] = json!({"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""});
    let r = c.post(LEVELS, &annotated).await;
    assert_eq!(
        causes(&r),
        [
            "metadata.annotations: Forbidden: annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden"
        ]
    );

    // The mandatory objects hold their specs, but for the exempt level's numbers.
    let mut catch_all = c.get(&format!("{LEVELS}/catch-all")).await.body;
    catch_all["spec"]["limited"]["nominalConcurrencyShares"] = json!(6);
    let r = c.put(&format!("{LEVELS}/catch-all"), &catch_all).await;
    assert_eq!(
        causes(&r),
        [
            "spec: Invalid value: {\"Type\":\"Limited\",\"Limited\":{\"NominalConcurrencyShares\":6,\"LimitResponse\":{\"Type\":\"Reject\",\"Queuing\":null},\"LendablePercent\":0,\"BorrowingLimitPercent\":null},\"Exempt\":null}: spec of 'catch-all' must equal the fixed value"
        ]
    );
    let mut exempt = c.get(&format!("{LEVELS}/exempt")).await.body;
    exempt["spec"]["exempt"]["nominalConcurrencyShares"] = json!(10);
    let r = c.put(&format!("{LEVELS}/exempt"), &exempt).await;
    assert_eq!(r.code, 200, "{}", r.body);
    // An empty member Go holds by pointer is not an absent one.
    let mut exempt = c.get(&format!("{SCHEMAS}/exempt")).await.body;
    exempt["spec"]["rules"][0]["subjects"][0]["user"] = json!({});
    let r = c.put(&format!("{SCHEMAS}/exempt"), &exempt).await;
    let found = causes(&r);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(
        found[0],
        "spec.rules[0].subjects[0].user: Forbidden: user is forbidden when subject kind is not 'User'"
    );
    let printed = "spec: Invalid value: {\"PriorityLevelConfiguration\":{\"Name\":\"exempt\"},\"MatchingPrecedence\":1,\
        \"DistinguisherMethod\":null,\"Rules\":[{\"Subjects\":[{\"Kind\":\"Group\",\"User\":{\"Name\":\"\"},\
        \"Group\":{\"Name\":\"system:masters\"},\"ServiceAccount\":null}],\"ResourceRules\":[{\"Verbs\":[\"*\"],\
        \"APIGroups\":[\"*\"],\"Resources\":[\"*\"],\"ClusterScope\":true,\"Namespaces\":[\"*\"]}],\
        \"NonResourceRules\":[{\"Verbs\":[\"*\"],\"NonResourceURLs\":[\"*\"]}]}]}: spec of 'exempt' must equal the fixed value";
    assert_eq!(found[1], printed);
}

#[tokio::test]
async fn a_restarted_server_puts_its_configuration_back() {
    let dir = informer_apiserver::testing::temp_data_dir();
    let start = || informer_apiserver::ApiServer::builder().data_dir(&dir).start();
    let s = start().await.expect("start");
    let c = Client::new(&s);
    // A deleted mandatory object, a changed one, a suggested one its user took over, and an
    // object of an older configuration still marked as the server's.
    assert_eq!(c.delete(&format!("{SCHEMAS}/catch-all")).await.code, 200);
    let mut system = c.get(&format!("{LEVELS}/system")).await.body;
    system["spec"]["limited"]["nominalConcurrencyShares"] = json!(3);
    system["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] = json!("false");
    assert_eq!(c.put(&format!("{LEVELS}/system"), &system).await.code, 200);
    let mut global = c.get(&format!("{LEVELS}/global-default")).await.body;
    global["spec"]["limited"]["lendablePercent"] = json!(7);
    assert_eq!(c.put(&format!("{LEVELS}/global-default"), &global).await.code, 200);
    let mut old = schema("endpoint-controller", "workload-high");
    old["metadata"]["annotations"] = json!({"apf.kubernetes.io/autoupdate-spec": "true"});
    assert_eq!(c.post(SCHEMAS, &old).await.code, 201);
    let mut mine = schema("mine", "workload-high");
    mine["metadata"]["annotations"] = json!({"apf.kubernetes.io/autoupdate-spec": "false"});
    assert_eq!(c.post(SCHEMAS, &mine).await.code, 201);
    drop(c);
    s.stop().await;
    drop(s);

    let s = start().await.expect("restart");
    let c = Client::new(&s);
    let catch_all = c.get(&format!("{SCHEMAS}/catch-all")).await;
    assert_eq!((catch_all.code, catch_all.body["spec"]["matchingPrecedence"].as_i64()), (200, Some(10000)));
    let system = c.get(&format!("{LEVELS}/system")).await.body;
    assert_eq!(system["spec"]["limited"]["nominalConcurrencyShares"], 3, "its user's, as it says");
    let global = c.get(&format!("{LEVELS}/global-default")).await.body;
    assert_eq!(global["spec"]["limited"]["lendablePercent"], 50, "still the server's");
    assert_eq!(c.get(&format!("{SCHEMAS}/endpoint-controller")).await.code, 404);
    assert_eq!(c.get(&format!("{SCHEMAS}/mine")).await.code, 200);
    drop(c);
    s.stop().await;
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_server_restarted_in_place_puts_its_configuration_back_at_once() {
    let s = server().await;
    let c = Client::new(&s);
    assert_eq!(c.delete(&format!("{SCHEMAS}/catch-all")).await.code, 200);
    let rv = c.get(SCHEMAS).await.body["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    s.restart().await.expect("restart");
    let mut w = c.watch(&format!("{SCHEMAS}?watch=1&resourceVersion={rv}")).await;
    let back =
        until(&mut w, "catch-all back", |e| e["type"] == "ADDED" && e["object"]["metadata"]["name"] == "catch-all")
            .await;
    assert_eq!(back["object"]["spec"]["matchingPrecedence"], 10000);
}

#[tokio::test]
async fn kubectl_prints_the_kinds_as_kube_does() {
    let s = server().await;
    let c = Client::new(&s);
    dangling(&c, "global-default", "False").await;
    let kubectl = KubectlTables::new(&s, "kubectl-flowcontrol");
    let get = |kind: &'static str| kubectl.get(kind);
    let rows = get("flowschemas").await;
    assert_eq!(rows[0], ["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"]);
    let order: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        order,
        [
            "exempt",
            "probes",
            "system-leader-election",
            "system-node-high",
            "system-nodes",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "service-accounts",
            "global-default",
            "catch-all"
        ],
        "by precedence, then name"
    );
    assert_eq!(rows[1][..4], ["exempt", "exempt", "1", "<none>"]);
    let global = rows.iter().find(|r| r[0] == "global-default").unwrap();
    assert_eq!(
        (global[1..4].to_vec(), global.last().unwrap().as_str()),
        (vec!["global-default".to_string(), "9900".into(), "ByUser".into()], "False")
    );
    let rows = get("prioritylevelconfigurations").await;
    assert_eq!(rows[0], ["NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"]);
    let row = |name: &str| rows.iter().find(|r| r[0] == name).unwrap()[..6].to_vec();
    assert_eq!(row("exempt"), ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"]);
    assert_eq!(row("catch-all"), ["catch-all", "Limited", "5", "<none>", "<none>", "<none>"]);
    assert_eq!(row("workload-low"), ["workload-low", "Limited", "100", "128", "6", "50"]);
}

#[tokio::test]
async fn kube_rs_reads_and_writes_the_kinds_typed() {
    use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
    use kube::api::{Api, ListParams, PostParams};
    let s = server().await;
    let client = kube_client(&s).await;
    let levels: Api<PriorityLevelConfiguration> = Api::all(client.clone());
    let typed: PriorityLevelConfiguration = serde_json::from_value(level("typed")).unwrap();
    let created = levels.create(&PostParams::default(), &typed).await.unwrap();
    let limited = created.spec.unwrap().limited.unwrap();
    assert_eq!((limited.nominal_concurrency_shares, limited.lendable_percent), (Some(30), Some(0)));
    let schemas: Api<FlowSchema> = Api::all(client);
    let typed: FlowSchema = serde_json::from_value(schema("typed", "typed")).unwrap();
    schemas.create(&PostParams::default(), &typed).await.unwrap();
    let listed = schemas.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 12);
}

/// The UID of the object at `path`.
async fn uid(c: &Client, path: String) -> String {
    c.get(&path).await.body["metadata"]["uid"].as_str().unwrap().to_string()
}

/// The two priority-and-fairness headers of an answer.
fn classified(r: &Resp) -> (Option<&str>, Option<&str>) {
    let header = |name: &str| r.headers.get(name).map(|v| v.to_str().unwrap());
    (header("x-kubernetes-pf-flowschema-uid"), header("x-kubernetes-pf-prioritylevel-uid"))
}

#[tokio::test]
async fn answers_name_the_schema_and_level_their_request_falls_under() {
    let s = rbac_server().await;
    let admin = Client::new(&s);
    let schema_uid = |name: &'static str| uid(&admin, format!("{SCHEMAS}/{name}"));
    let level_uid = |name: &'static str| uid(&admin, format!("{LEVELS}/{name}"));
    let (exempt, exempt_level) = (schema_uid("exempt").await, level_uid("exempt").await);

    // The server's own user is in system:masters, health checks included.
    let r = admin.get("/api/v1/namespaces").await;
    assert_eq!(classified(&r), (Some(exempt.as_str()), Some(exempt_level.as_str())));
    assert_eq!(classified(&admin.get("/healthz").await), (Some(exempt.as_str()), Some(exempt_level.as_str())));

    // A service account's request, refused or not, falls under `service-accounts`.
    let r = admin.post("/api/v1/namespaces/default/serviceaccounts", &json!({"metadata": {"name": "op"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let token =
        admin.post("/api/v1/namespaces/default/serviceaccounts/op/token", &json!({})).await.body["status"]["token"]
            .as_str()
            .unwrap()
            .to_string();
    let op = Client::new(&s).with_token(&token);
    let r = op.get("/api/v1/namespaces/default/pods").await;
    assert_eq!(r.code, 403, "{}", r.body);
    let (accounts, low) = (schema_uid("service-accounts").await, level_uid("workload-low").await);
    assert_eq!(classified(&r), (Some(accounts.as_str()), Some(low.as_str())));

    // Anyone else: `global-default`, or `probes` for a health check; kube's catch-all once the
    // schema that took them is gone.
    let alice = Client::new(&s).impersonating("alice");
    let (global, global_level) = (schema_uid("global-default").await, level_uid("global-default").await);
    assert_eq!(classified(&alice.get("/version").await), (Some(global.as_str()), Some(global_level.as_str())));
    let (probes, catch_all) = (schema_uid("probes").await, schema_uid("catch-all").await);
    assert_eq!(classified(&alice.get("/readyz").await), (Some(probes.as_str()), Some(exempt_level.as_str())));
    assert_eq!(admin.delete(&format!("{SCHEMAS}/global-default")).await.code, 200);
    let catch_all_level = level_uid("catch-all").await;
    assert_eq!(classified(&alice.get("/version").await), (Some(catch_all.as_str()), Some(catch_all_level.as_str())));

    // Connections to a pod and the profiler are not classified.
    let r = admin.get("/api/v1/namespaces/default/pods/none/log").await;
    assert_eq!(classified(&r), (None, None), "{}", r.code);
    assert_eq!(classified(&admin.get("/debug/pprof/heap").await), (None, None));
}

#[tokio::test]
async fn the_python_clients_dynamic_client_finds_and_writes_the_kinds() {
    let s = server().await;
    let dir = common::tools::tempdir("flowcontrol-python");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    // Its typed clients predate flowcontrol v1; the dynamic client finds it by discovery.
    let script = r#"
import json, sys
from kubernetes import config, dynamic
from kubernetes.client import api_client
config.load_kube_config(sys.argv[1])
client = dynamic.DynamicClient(api_client.ApiClient())
schemas = client.resources.get(api_version="flowcontrol.apiserver.k8s.io/v1", kind="FlowSchema")
levels = client.resources.get(api_version="flowcontrol.apiserver.k8s.io/v1", kind="PriorityLevelConfiguration")
created = levels.create(body={"metadata": {"name": "py"}, "spec": {"type": "Limited",
    "limited": {"limitResponse": {"type": "Reject"}}}})
probes = schemas.get(name="probes")
print(json.dumps({"schemas": sorted(i.metadata.name for i in schemas.get().items),
    "shares": created.spec.limited.nominalConcurrencyShares,
    "dangling": probes.status.conditions[0].status}))
"#;
    let line = common::tools::python_json(script, &kc).await;
    assert_eq!(line["schemas"].as_array().unwrap().len(), 11, "{line}");
    assert_eq!((line["shares"].as_i64(), line["dangling"].as_str()), (Some(30), Some("False")), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}
