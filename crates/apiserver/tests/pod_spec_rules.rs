//! Security contexts, affinity, topology spread constraints, DNS config, host aliases, gates,
//! the pod's OS, volume mounts, raw devices and resize policies, judged over HTTP as kube-apiserver judges them (nothing stored on refusal), the
//! label keys kube merges into a created pod's selectors, and what kubectl and the Python client
//! see of both.

mod common;

use common::*;
use serde_json::{Value, json};

/// A pod of one container with `spec` members set over the common test pod's.
fn pod_with(name: &str, labels: Value, spec: Value) -> Value {
    let mut p = pod(name, labels);
    for (k, v) in spec.as_object().unwrap() {
        p["spec"][k] = v.clone();
    }
    p
}

#[tokio::test]
async fn security_contexts_are_judged_as_kube_judges_them() {
    let s = server().await;
    let c = Client::new(&s);
    let mut bad = pod_with(
        "locked",
        json!({}),
        json!({"securityContext": {"runAsUser": -1, "seccompProfile": {"type": "Localhost"},
            "sysctls": [{"name": "net.core.somaxconn", "value": "1"}, {"name": "net.core.somaxconn", "value": "2"}]}}),
    );
    bad["spec"]["containers"][0]["securityContext"] = json!({"allowPrivilegeEscalation": false, "privileged": true});
    let r = c.post(PODS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"locked\" is invalid: [spec.containers[0].securityContext: Invalid value: {\"Capabilities\":null,\
         \"Privileged\":true,\"SELinuxOptions\":null,\"WindowsOptions\":null,\"RunAsUser\":null,\"RunAsGroup\":null,\
         \"RunAsNonRoot\":null,\"ReadOnlyRootFilesystem\":null,\"AllowPrivilegeEscalation\":false,\"ProcMount\":null,\
         \"SeccompProfile\":null,\"AppArmorProfile\":null}: cannot set `allowPrivilegeEscalation` to false and \
         `privileged` to true, \
         spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive, \
         spec.securityContext.sysctls[1].name: Duplicate value: \"net.core.somaxconn\", \
         spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost]"
    );
    assert_eq!(r.body["details"]["causes"][0]["field"], "spec.containers[0].securityContext");
    assert_eq!(c.get(&format!("{PODS}/locked")).await.code, 404);
    // The restricted profile's context, and a privileged container beside it, are kube's to accept.
    let mut good = pod_with(
        "locked",
        json!({}),
        json!({"securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "fsGroup": 2000,
            "seccompProfile": {"type": "RuntimeDefault"},
            "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]}}),
    );
    good["spec"]["containers"][0]["securityContext"] =
        json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": true});
    good["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "agent", "image": "busybox", "securityContext": {"privileged": true}}));
    let r = c.post(PODS, &good).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

#[tokio::test]
async fn affinity_and_spread_constraints_are_judged_and_label_keys_merged() {
    let s = server().await;
    let c = Client::new(&s);
    let labels = json!({"app": "web", "pod-template-hash": "abc"});
    let zone = |action: &str| json!({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": action});
    let bad = pod_with(
        "spread",
        labels.clone(),
        json!({"affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "in", "values": ["a"]}]}]}},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "podAffinityTerm":
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}}]}},
            "topologySpreadConstraints": [zone("DoNotSchedule"), zone("DoNotSchedule")]}),
    );
    let r = c.post(PODS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"spread\" is invalid: [spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.\
         nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: \"in\": not a valid selector operator, \
         spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: \
         must be in the range 1-100, \
         spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{zone, DoNotSchedule}\"]"
    );
    assert_eq!(c.get(&format!("{PODS}/spread")).await.code, 404);

    // A created pod's match label keys become expressions of its own label values.
    let selector = json!({"matchLabels": {"app": "web"}});
    let mut spread = zone("ScheduleAnyway");
    spread["labelSelector"] = selector.clone();
    spread["matchLabelKeys"] = json!(["pod-template-hash"]);
    let good = pod_with(
        "spread",
        labels.clone(),
        json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": selector, "matchLabelKeys": ["pod-template-hash"], "topologyKey": "kubernetes.io/hostname"}]}},
            "topologySpreadConstraints": [spread]}),
    );
    let r = c.post(PODS, &good).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let merged = json!({"matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "pod-template-hash", "operator": "In", "values": ["abc"]}]});
    let stored = c.get(&format!("{PODS}/spread")).await.body;
    let term = &stored["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(term["labelSelector"], merged);
    assert_eq!(stored["spec"]["topologySpreadConstraints"][0]["labelSelector"], merged);

    // Merged before it is judged: a key also in the selector is there twice (kube's path quirk).
    let mut twice = zone("DoNotSchedule");
    twice["labelSelector"] = json!({"matchLabels": {"app": "web"}});
    twice["matchLabelKeys"] = json!(["app"]);
    let r = c.post(PODS, &pod_with("twice", labels.clone(), json!({"topologySpreadConstraints": [twice]}))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"twice\" is invalid: spec.topologySpreadConstraints[0][0]: Invalid value: \"app\": exists in both \
         matchLabelKeys and labelSelector"
    );

    // A template is stored as written, and judged at its own path.
    let mut deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": workload_spec("web")});
    let mut template_spread = zone("Sometimes");
    template_spread["labelSelector"] = json!({"matchLabels": {"app": "web"}});
    template_spread["matchLabelKeys"] = json!(["pod-template-hash"]);
    deployment["spec"]["template"]["spec"]["topologySpreadConstraints"] = json!([template_spread]);
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let r = c.post(deployments, &deployment).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Deployment.apps \"web\" is invalid: spec.template.spec.topologySpreadConstraints[0].whenUnsatisfiable: \
         Unsupported value: \"Sometimes\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
    );
    deployment["spec"]["template"]["spec"]["topologySpreadConstraints"][0]["whenUnsatisfiable"] =
        json!("DoNotSchedule");
    let r = c.post(deployments, &deployment).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let stored = &r.body["spec"]["template"]["spec"]["topologySpreadConstraints"][0]["labelSelector"];
    assert_eq!(stored, &json!({"matchLabels": {"app": "web"}}));
}

#[tokio::test]
async fn dns_hosts_gates_and_os_are_judged_as_kube_judges_them() {
    let s = server().await;
    let c = Client::new(&s);
    let bad = pod_with(
        "dns",
        json!({}),
        json!({"dnsPolicy": "None", "os": {"name": "windows"}, "securityContext": {"runAsUser": 1000},
            "schedulingGates": [{"name": "example.com/a"}, {"name": "example.com/a"}],
            "hostAliases": [{"ip": "not-an-ip", "hostnames": ["db.local"]}], "nodeName": "node-1"}),
    );
    let r = c.post(PODS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"dns\" is invalid: [spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None, \
         spec.schedulingGates[1]: Duplicate value: \"example.com/a\", \
         spec.hostAliases[0].ip: Invalid value: \"not-an-ip\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff), \
         spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod, \
         spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared]"
    );
    assert_eq!(c.get(&format!("{PODS}/dns")).await.code, 404);
    let good = pod_with(
        "dns",
        json!({}),
        json!({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.96.0.10"],
            "searches": ["default.svc.cluster.local", "_tcp.example.com."], "options": [{"name": "ndots", "value": "2"}]},
            "os": {"name": "linux"}, "hostAliases": [{"ip": "10.0.0.5", "hostnames": ["db.local"]}],
            "readinessGates": [{"conditionType": "example.com/ready"}], "schedulingGates": [{"name": "example.com/a"}]}),
    );
    let r = c.post(PODS, &good).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

#[tokio::test]
async fn mounts_devices_and_resize_policies_are_judged_as_kube_judges_them() {
    let s = server().await;
    let c = Client::new(&s);
    let mut bad = pod_with(
        "mounted",
        json!({}),
        json!({"restartPolicy": "Never", "volumes": [{"name": "data", "emptyDir": {}}]}),
    );
    bad["spec"]["containers"][0]["volumeMounts"] =
        json!([{"name": "data", "mountPath": "/data", "subPath": "../etc", "mountPropagation": "Bidirectional"}]);
    bad["spec"]["containers"][0]["volumeDevices"] = json!([{"name": "data", "devicePath": "/dev/xvda"}]);
    bad["spec"]["containers"][0]["resizePolicy"] =
        json!([{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]);
    let r = c.post(PODS, &bad).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"mounted\" is invalid: [spec.containers[0].volumeMounts[0].name: Invalid value: \"data\": must not \
         already exist in volumeDevices, \
         spec.containers[0].volumeMounts.subPath: Invalid value: \"../etc\": must not contain '..', \
         spec.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available \
         only to privileged containers, \
         spec.containers[0].volumeDevices[0].name: Invalid value: \"data\": can only use volume source type of \
         PersistentVolumeClaim or Ephemeral for block mode, \
         spec.containers[0].volumeDevices[0].name: Invalid value: \"data\": must not already exist in volumeMounts, \
         spec.containers[0].resizePolicy: Invalid value: \"RestartContainer\": must be 'NotRequired' when \
         `restartPolicy` is 'Never']"
    );
    assert_eq!(c.get(&format!("{PODS}/mounted")).await.code, 404);
    // A CSI node plugin: privileged, with bidirectional propagation; a claim used as a raw device.
    let mut good = pod_with(
        "mounted",
        json!({}),
        json!({"volumes": [{"name": "plugins", "hostPath": {"path": "/var/lib/kubelet"}},
            {"name": "disk", "persistentVolumeClaim": {"claimName": "disk"}}]}),
    );
    good["spec"]["containers"][0]["securityContext"] = json!({"privileged": true});
    good["spec"]["containers"][0]["volumeMounts"] = json!([{"name": "plugins", "mountPath": "/var/lib/kubelet", "mountPropagation": "Bidirectional", "subPath": "plugins"}]);
    good["spec"]["containers"][0]["volumeDevices"] = json!([{"name": "disk", "devicePath": "/dev/xvda"}]);
    good["spec"]["containers"][0]["resizePolicy"] =
        json!([{"resourceName": "memory", "restartPolicy": "RestartContainer"}]);
    let r = c.post(PODS, &good).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

#[tokio::test]
async fn kubectl_and_python_see_kubes_refusals_and_merged_keys() {
    use common::tools::{kubectl_bin, kubectl_versions, python_json, tempdir};
    let s = server().await;
    let c = Client::new(&s);
    let dir = tempdir("kubectl-pod-rules");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let cache = dir.join("cache");
    let manifest = |action: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels:\n      \
             app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      \
             topologySpreadConstraints:\n      - maxSkew: 1\n        topologyKey: topology.kubernetes.io/zone\n        \
             whenUnsatisfiable: {action}\n        labelSelector:\n          matchLabels:\n            app: web\n      \
             containers:\n      - name: c\n        image: nginx\n"
        )
    };
    let file = dir.join("web.yaml");
    let f = file.to_str().unwrap().to_string();
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        std::fs::write(&file, manifest("DoNotSchedul")).unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "-f", &f]).await;
        assert!(!ok, "{bin}: {out}");
        assert!(
            err.contains(
                "The Deployment \"web\" is invalid: spec.template.spec.topologySpreadConstraints[0].whenUnsatisfiable: \
                 Unsupported value: \"DoNotSchedul\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
            ),
            "{bin}: {err}"
        );
        assert_eq!(c.get("/apis/apps/v1/namespaces/default/deployments/web").await.code, 404, "{bin}");
        std::fs::write(&file, manifest("DoNotSchedule")).unwrap();
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["apply", "-f", &f]).await;
        assert!(ok, "{bin}: {out}{err}");
        let (ok, out, err) = kubectl_bin(bin, &kc, &cache, &["delete", "deployment", "web"]).await;
        assert!(ok, "{bin}: {out}{err}");
    }
    let script = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
core = client.CoreV1Api()
def pod(name, **spec):
    return client.V1Pod(metadata=client.V1ObjectMeta(name=name, labels={"app": "web", "rev": "r1"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")], **spec))
try:
    core.create_namespaced_pod("default", pod("p", security_context=client.V1PodSecurityContext(run_as_user=-1)))
    refused = None
except ApiException as e:
    refused = {"status": e.status, "body": json.loads(e.body)}
# (This client's models predate matchLabelKeys: the pod goes as a plain body.)
body = {"metadata": {"name": "q", "labels": {"app": "web", "rev": "r1"}}, "spec": {
    "containers": [{"name": "c", "image": "nginx"}],
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["rev"]}]}}
created = core.create_namespaced_pod("default", body)
expressions = created.spec.topology_spread_constraints[0].label_selector.match_expressions
print(json.dumps({"refused": refused,
    "merged": [{"key": e.key, "operator": e.operator, "values": e.values} for e in expressions]}))
"#;
    let line = python_json(script, &kc).await;
    assert_eq!(line["refused"]["status"], 422, "{line}");
    assert_eq!(
        line["refused"]["body"]["message"],
        "Pod \"p\" is invalid: spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, \
         inclusive"
    );
    assert_eq!(line["merged"], json!([{"key": "rev", "operator": "In", "values": ["r1"]}]), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}
