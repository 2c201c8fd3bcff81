//! The printers of pods and the workloads that make them: pods, Deployments, ReplicaSets,
//! StatefulSets, DaemonSets, Jobs, CronJobs, ReplicationControllers, PodTemplates,
//! ControllerRevisions, HorizontalPodAutoscalers and PodDisruptionBudgets.
//!
//! Invariants: as kube-apiserver v1.35's printers (see [`super`]); a pod's status is kube's
//! aggregate of its init containers, containers and deletion; an autoscaler of either version
//! is read in its autoscaling/v2 form.

use serde_json::{Value, json};

use super::{AGE, CONTAINERS, Col, Doc, IMAGES, NAME, Printer, age, containers, int, labels, list, name, text};
use crate::registry::ResourceInfo;

const READY_TEXT: &str = "Number of the pod with ready state";

/// The printer of a workload kind.
pub(super) fn printer(info: &ResourceInfo) -> Option<Printer> {
    let (columns, cells): (&'static [Col], super::Cells) = match (info.group.as_str(), info.plural.as_str()) {
        ("", "pods") => (&POD, pod),
        ("apps", "deployments") => (&DEPLOYMENT, deployment),
        ("apps", "replicasets") => (&REPLICA_SET, replica_set),
        ("apps", "statefulsets") => (&STATEFUL_SET, stateful_set),
        ("apps", "daemonsets") => (&DAEMON_SET, daemon_set),
        ("apps", "controllerrevisions") => (&CONTROLLER_REVISION, controller_revision),
        ("batch", "jobs") => (&JOB, job),
        ("batch", "cronjobs") => (&CRON_JOB, cron_job),
        ("", "replicationcontrollers") => (&REPLICATION_CONTROLLER, replication_controller),
        ("", "podtemplates") => (&POD_TEMPLATE, pod_template),
        ("autoscaling", "horizontalpodautoscalers") => (&AUTOSCALER, autoscaler),
        ("policy", "poddisruptionbudgets") => (&BUDGET, budget),
        _ => return None,
    };
    Some(Printer { columns, cells })
}

const POD: [Col; 9] = [
    NAME,
    Col("Ready", "string", "", 0, Doc::Text("The aggregate readiness state of this pod for accepting traffic.")),
    Col("Status", "string", "", 0, Doc::Text("The aggregate status of the containers in this pod.")),
    Col(
        "Restarts",
        "string",
        "",
        0,
        Doc::Text(
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        ),
    ),
    AGE,
    Col("IP", "string", "", 1, Doc::Field("io.k8s.api.core.v1.PodStatus", "podIP")),
    Col("Node", "string", "", 1, Doc::Field("io.k8s.api.core.v1.PodSpec", "nodeName")),
    Col("Nominated Node", "string", "", 1, Doc::Field("io.k8s.api.core.v1.PodStatus", "nominatedNodeName")),
    Col("Readiness Gates", "string", "", 1, Doc::Field("io.k8s.api.core.v1.PodSpec", "readinessGates")),
];

/// Whether the condition of type `t` in `conditions` is `True`.
fn condition_true(conditions: &[Value], t: &str) -> bool {
    conditions.iter().any(|c| text(c, "/type") == t && text(c, "/status") == "True")
}

/// A container's `lastState.terminated.finishedAt`, if any.
fn last_finished(status: &Value) -> Option<jiff::Timestamp> {
    status.pointer("/lastState/terminated/finishedAt").and_then(Value::as_str).and_then(|t| t.parse().ok())
}

/// The reason a terminated container without one shows: its signal, else its exit code.
fn exit_reason(terminated: &Value, prefix: &str) -> String {
    match terminated.get("reason").and_then(Value::as_str).filter(|r| !r.is_empty()) {
        Some(r) => format!("{prefix}{r}"),
        None => match terminated.get("signal").and_then(Value::as_i64).filter(|s| *s != 0) {
            Some(s) => format!("{prefix}Signal:{s}"),
            None => format!("{prefix}ExitCode:{}", terminated.get("exitCode").and_then(Value::as_i64).unwrap_or(0)),
        },
    }
}

fn pod(v: &Value) -> Vec<Value> {
    let conditions = list(v, "/status/conditions");
    let phase = text(v, "/status/phase");
    let mut reason = match text(v, "/status/reason") {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    if conditions.iter().any(|c| text(c, "/type") == "PodScheduled" && text(c, "/reason") == "SchedulingGated") {
        reason = "SchedulingGated".into();
    }
    let init_specs = list(v, "/spec/initContainers");
    let restartable =
        |name: &str| init_specs.iter().any(|c| text(c, "/name") == name && text(c, "/restartPolicy") == "Always");
    let total = list(v, "/spec/containers").len() + init_specs.iter().filter(|c| restartable(text(c, "/name"))).count();
    let (mut ready, mut restarts, mut sidecar_restarts) = (0, 0, 0);
    let (mut last_restart, mut last_sidecar_restart) = (None, None);
    let mut initializing = false;
    for (i, c) in list(v, "/status/initContainerStatuses").iter().enumerate() {
        let count = int(c, "/restartCount");
        restarts += count;
        let finished = last_finished(c);
        last_restart = last_restart.max(finished);
        let sidecar = restartable(text(c, "/name"));
        if sidecar {
            sidecar_restarts += count;
            last_sidecar_restart = last_sidecar_restart.max(finished);
        }
        let terminated = c.pointer("/state/terminated");
        let waiting = c.pointer("/state/waiting/reason").and_then(Value::as_str).unwrap_or_default();
        if terminated.is_some_and(|t| int(t, "/exitCode") == 0) {
            continue;
        }
        if sidecar && c.get("started").and_then(Value::as_bool) == Some(true) {
            if c.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = match terminated {
            Some(t) => exit_reason(t, "Init:"),
            None if !waiting.is_empty() && waiting != "PodInitializing" => format!("Init:{waiting}"),
            None => format!("Init:{i}/{}", init_specs.len()),
        };
        initializing = true;
        break;
    }
    if !initializing || condition_true(conditions, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let (mut running, mut error_reason) = (false, None);
        for c in list(v, "/status/containerStatuses").iter().rev() {
            restarts += int(c, "/restartCount");
            last_restart = last_restart.max(last_finished(c));
            let waiting = c.pointer("/state/waiting/reason").and_then(Value::as_str).unwrap_or_default();
            let terminated = c.pointer("/state/terminated");
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(t) = terminated {
                reason = exit_reason(t, "");
                if int(t, "/exitCode") != 0 {
                    error_reason = Some(reason.clone());
                }
            } else if c.get("ready").and_then(Value::as_bool) == Some(true) && c.pointer("/state/running").is_some() {
                running = true;
                ready += 1;
            }
        }
        if reason == "Completed" {
            if running && condition_true(conditions, "Ready") {
                reason = "Running".into();
            } else if let Some(e) = error_reason {
                reason = e;
            } else if running {
                reason = "NotReady".into();
            }
        }
    }
    let deleting = v.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
    if deleting && text(v, "/status/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && !matches!(phase, "Succeeded" | "Failed") {
        reason = "Terminating".into();
    }
    let restarts_cell = match last_restart {
        Some(t) if restarts != 0 => {
            format!("{restarts} ({} ago)", super::human_duration(jiff::Timestamp::now().duration_since(t).as_secs()))
        }
        _ => restarts.to_string(),
    };
    let or_none = |s: &str| if s.is_empty() { "<none>".to_string() } else { s.to_string() };
    let gates = list(v, "/spec/readinessGates");
    let gates_cell = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let met = gates
            .iter()
            .filter(|g| {
                let t = text(g, "/conditionType");
                conditions.iter().find(|c| text(c, "/type") == t).is_some_and(|c| text(c, "/status") == "True")
            })
            .count();
        format!("{met}/{}", gates.len())
    };
    vec![
        json!(name(v)),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_cell),
        json!(age(v)),
        json!(or_none(text(v, "/status/podIPs/0/ip"))),
        json!(or_none(text(v, "/spec/nodeName"))),
        json!(or_none(text(v, "/status/nominatedNodeName"))),
        json!(gates_cell),
    ]
}

/// The row conditions of a pod's row: `Completed` once it succeeded or failed.
pub(super) fn pod_conditions(v: &Value) -> Option<Value> {
    let (reason, message) = match text(v, "/status/phase") {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(json!([{"type": "Completed", "status": "True", "reason": reason, "message": message}]))
}

const DEPLOYMENT: [Col; 8] = [
    NAME,
    Col("Ready", "string", "", 0, Doc::Text(READY_TEXT)),
    Col("Up-to-date", "string", "", 0, Doc::Field("io.k8s.api.apps.v1.DeploymentStatus", "updatedReplicas")),
    Col("Available", "string", "", 0, Doc::Field("io.k8s.api.apps.v1.DeploymentStatus", "availableReplicas")),
    AGE,
    CONTAINERS,
    IMAGES,
    Col(
        "Selector",
        "string",
        "",
        1,
        Doc::Text(
            "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
        ),
    ),
];

fn deployment(v: &Value) -> Vec<Value> {
    let [names, images] = containers(v, "/spec/template/spec/containers");
    let selector = super::selector_text(v.pointer("/spec/selector")).unwrap_or_else(|| "<invalid>".into());
    vec![
        json!(name(v)),
        json!(format!("{}/{}", int(v, "/status/readyReplicas"), int(v, "/spec/replicas"))),
        json!(int(v, "/status/updatedReplicas")),
        json!(int(v, "/status/availableReplicas")),
        json!(age(v)),
        names,
        images,
        json!(selector),
    ]
}

const REPLICA_SET: [Col; 8] = [
    NAME,
    Col("Desired", "integer", "", 0, Doc::Field("io.k8s.api.apps.v1.ReplicaSetSpec", "replicas")),
    Col("Current", "integer", "", 0, Doc::Field("io.k8s.api.apps.v1.ReplicaSetStatus", "replicas")),
    Col("Ready", "integer", "", 0, Doc::Field("io.k8s.api.apps.v1.ReplicaSetStatus", "readyReplicas")),
    AGE,
    CONTAINERS,
    IMAGES,
    Col(
        "Selector",
        "string",
        "",
        1,
        Doc::Text(
            "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        ),
    ),
];

fn replica_set(v: &Value) -> Vec<Value> {
    let [names, images] = containers(v, "/spec/template/spec/containers");
    vec![
        json!(name(v)),
        json!(int(v, "/spec/replicas")),
        json!(int(v, "/status/replicas")),
        json!(int(v, "/status/readyReplicas")),
        json!(age(v)),
        names,
        images,
        json!(super::selector(v.pointer("/spec/selector"))),
    ]
}

const STATEFUL_SET: [Col; 5] = [NAME, Col("Ready", "string", "", 0, Doc::Text(READY_TEXT)), AGE, CONTAINERS, IMAGES];

fn stateful_set(v: &Value) -> Vec<Value> {
    let [names, images] = containers(v, "/spec/template/spec/containers");
    let ready = format!("{}/{}", int(v, "/status/readyReplicas"), int(v, "/spec/replicas"));
    vec![json!(name(v)), json!(ready), json!(age(v)), names, images]
}

const DAEMON_SET_STATUS: &str = "io.k8s.api.apps.v1.DaemonSetStatus";

const DAEMON_SET: [Col; 11] = [
    NAME,
    Col("Desired", "integer", "", 0, Doc::Field(DAEMON_SET_STATUS, "desiredNumberScheduled")),
    Col("Current", "integer", "", 0, Doc::Field(DAEMON_SET_STATUS, "currentNumberScheduled")),
    Col(
        "Ready",
        "integer",
        "",
        0,
        Doc::Text(
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
        ),
    ),
    Col("Up-to-date", "integer", "", 0, Doc::Field(DAEMON_SET_STATUS, "updatedNumberScheduled")),
    Col("Available", "integer", "", 0, Doc::Field(DAEMON_SET_STATUS, "numberAvailable")),
    Col("Node Selector", "string", "", 0, Doc::Field("io.k8s.api.core.v1.PodSpec", "nodeSelector")),
    AGE,
    CONTAINERS,
    IMAGES,
    Col(
        "Selector",
        "string",
        "",
        1,
        Doc::Text(
            "A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        ),
    ),
];

fn daemon_set(v: &Value) -> Vec<Value> {
    let [names, images] = containers(v, "/spec/template/spec/containers");
    vec![
        json!(name(v)),
        json!(int(v, "/status/desiredNumberScheduled")),
        json!(int(v, "/status/currentNumberScheduled")),
        json!(int(v, "/status/numberReady")),
        json!(int(v, "/status/updatedNumberScheduled")),
        json!(int(v, "/status/numberAvailable")),
        json!(labels(v.pointer("/spec/template/spec/nodeSelector"))),
        json!(age(v)),
        names,
        images,
        json!(super::selector(v.pointer("/spec/selector"))),
    ]
}

const JOB: [Col; 8] = [
    NAME,
    Col("Status", "string", "", 0, Doc::Text("Status of the job.")),
    Col("Completions", "string", "", 0, Doc::Field("io.k8s.api.batch.v1.JobStatus", "succeeded")),
    Col("Duration", "string", "", 0, Doc::Text("Time required to complete the job.")),
    AGE,
    CONTAINERS,
    IMAGES,
    Col("Selector", "string", "", 1, Doc::Field("io.k8s.api.batch.v1.JobSpec", "selector")),
];

fn job(v: &Value) -> Vec<Value> {
    let conditions = list(v, "/status/conditions");
    let first_true =
        |t: &str| conditions.iter().find(|c| text(c, "/type") == t).is_some_and(|c| text(c, "/status") == "True");
    let deleting = v.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
    let status = match () {
        _ if first_true("Complete") => "Complete",
        _ if first_true("Failed") => "Failed",
        _ if deleting => "Terminating",
        _ if first_true("Suspended") => "Suspended",
        _ if first_true("FailureTarget") => "FailureTarget",
        _ if first_true("SuccessCriteriaMet") => "SuccessCriteriaMet",
        _ => "Running",
    };
    let succeeded = int(v, "/status/succeeded");
    let completions = match v.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int(v, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let time = |p: &str| v.pointer(p).and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let duration = match (time("/status/startTime"), time("/status/completionTime")) {
        (None, _) => String::new(),
        (Some(s), None) => super::human_duration(jiff::Timestamp::now().duration_since(s).as_secs()),
        (Some(s), Some(c)) => super::human_duration(c.as_second() - s.as_second()),
    };
    let [names, images] = containers(v, "/spec/template/spec/containers");
    vec![
        json!(name(v)),
        json!(status),
        json!(completions),
        json!(duration),
        json!(age(v)),
        names,
        images,
        json!(super::selector(v.pointer("/spec/selector"))),
    ]
}

const CRON_JOB_SPEC: &str = "io.k8s.api.batch.v1.CronJobSpec";

const CRON_JOB: [Col; 10] = [
    NAME,
    Col("Schedule", "string", "", 0, Doc::Field(CRON_JOB_SPEC, "schedule")),
    Col("Timezone", "string", "", 0, Doc::Field(CRON_JOB_SPEC, "timeZone")),
    Col("Suspend", "boolean", "", 0, Doc::Field(CRON_JOB_SPEC, "suspend")),
    Col("Active", "integer", "", 0, Doc::Field("io.k8s.api.batch.v1.CronJobStatus", "active")),
    Col("Last Schedule", "string", "", 0, Doc::Field("io.k8s.api.batch.v1.CronJobStatus", "lastScheduleTime")),
    AGE,
    CONTAINERS,
    IMAGES,
    Col("Selector", "string", "", 1, Doc::Field("io.k8s.api.batch.v1.JobSpec", "selector")),
];

fn cron_job(v: &Value) -> Vec<Value> {
    let suspend = match v.pointer("/spec/suspend").and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    let last = match v.pointer("/status/lastScheduleTime").and_then(Value::as_str) {
        Some(t) => super::since(Some(t)),
        None => "<none>".into(),
    };
    let [names, images] = containers(v, "/spec/jobTemplate/spec/template/spec/containers");
    vec![
        json!(name(v)),
        json!(text(v, "/spec/schedule")),
        json!(super::text_or(v, "/spec/timeZone", "<none>")),
        json!(suspend),
        json!(list(v, "/status/active").len()),
        json!(last),
        json!(age(v)),
        names,
        images,
        json!(super::selector(v.pointer("/spec/jobTemplate/spec/selector"))),
    ]
}

const REPLICATION_CONTROLLER: [Col; 8] = [
    NAME,
    Col("Desired", "integer", "", 0, Doc::Field("io.k8s.api.core.v1.ReplicationControllerSpec", "replicas")),
    Col("Current", "integer", "", 0, Doc::Field("io.k8s.api.core.v1.ReplicationControllerStatus", "replicas")),
    Col("Ready", "integer", "", 0, Doc::Field("io.k8s.api.core.v1.ReplicationControllerStatus", "readyReplicas")),
    AGE,
    CONTAINERS,
    IMAGES,
    Col("Selector", "string", "", 1, Doc::Field("io.k8s.api.core.v1.ReplicationControllerSpec", "selector")),
];

fn replication_controller(v: &Value) -> Vec<Value> {
    let [names, images] = containers(v, "/spec/template/spec/containers");
    vec![
        json!(name(v)),
        json!(int(v, "/spec/replicas")),
        json!(int(v, "/status/replicas")),
        json!(int(v, "/status/readyReplicas")),
        json!(age(v)),
        names,
        images,
        json!(labels(v.pointer("/spec/selector"))),
    ]
}

const POD_TEMPLATE: [Col; 4] = [
    NAME,
    Col("Containers", "string", "", 0, Doc::Text("Names of each container in the template.")),
    Col("Images", "string", "", 0, Doc::Text("Images referenced by each container in the template.")),
    Col("Pod Labels", "string", "", 0, Doc::Text("The labels for the pod template.")),
];

fn pod_template(v: &Value) -> Vec<Value> {
    let [names, images] = containers(v, "/template/spec/containers");
    vec![json!(name(v)), names, images, json!(labels(v.pointer("/template/metadata/labels")))]
}

const CONTROLLER_REVISION: [Col; 4] = [
    NAME,
    Col("Controller", "string", "", 0, Doc::Text("Controller of the object")),
    Col("Revision", "string", "", 0, Doc::Text("revision indicates the revision of the state represented by Data.")),
    AGE,
];

fn controller_revision(v: &Value) -> Vec<Value> {
    let owner = list(v, "/metadata/ownerReferences")
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true));
    let controller = match owner {
        None => "<none>".to_string(),
        Some(o) => {
            let group = match text(o, "/apiVersion").split_once('/') {
                Some((g, _)) => g,
                None => "",
            };
            let (kind, owner_name) = (text(o, "/kind"), text(o, "/name"));
            match (group, kind) {
                ("", "") => owner_name.to_string(),
                ("", k) => format!("{}/{owner_name}", k.to_lowercase()),
                (g, k) => format!("{}/{owner_name}", format!("{k}.{g}").to_lowercase()),
            }
        }
    };
    vec![json!(name(v)), json!(controller), json!(int(v, "/revision")), json!(age(v))]
}

/// kube's columns of an autoscaling/v1 `Scale` (`printScale`).
pub(super) const SCALE: [Col; 3] = [
    NAME,
    Col("Desired", "integer", "", 0, Doc::Field("io.k8s.api.autoscaling.v1.ScaleSpec", "replicas")),
    Col("Available", "integer", "", 0, Doc::Field("io.k8s.api.autoscaling.v1.ScaleStatus", "replicas")),
];

/// A `Scale`'s cells: its name, the replicas wanted and those observed.
pub(super) fn scale(v: &Value) -> Vec<Value> {
    let replicas = |part: &str| v.pointer(&format!("/{part}/replicas")).and_then(Value::as_i64).unwrap_or(0);
    vec![json!(name(v)), json!(replicas("spec")), json!(replicas("status"))]
}

const AUTOSCALER: [Col; 7] = [
    NAME,
    Col(
        "Reference",
        "string",
        "",
        0,
        Doc::Field("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec", "scaleTargetRef"),
    ),
    Col("Targets", "string", "", 0, Doc::Field("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec", "metrics")),
    Col("MinPods", "string", "", 0, Doc::Field("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec", "minReplicas")),
    Col("MaxPods", "string", "", 0, Doc::Field("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec", "maxReplicas")),
    Col(
        "Replicas",
        "string",
        "",
        0,
        Doc::Field("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "currentReplicas"),
    ),
    AGE,
];

fn autoscaler(v: &Value) -> Vec<Value> {
    let reference = format!("{}/{}", text(v, "/spec/scaleTargetRef/kind"), text(v, "/spec/scaleTargetRef/name"));
    let min_pods = v.pointer("/spec/minReplicas").and_then(Value::as_i64).map_or("<unset>".into(), |n| n.to_string());
    vec![
        json!(name(v)),
        json!(reference),
        json!(autoscaler_targets(v)),
        json!(min_pods),
        json!(int(v, "/spec/maxReplicas")),
        json!(int(v, "/status/currentReplicas")),
        json!(age(v)),
    ]
}

/// An autoscaler's metrics as kube shows them: `current/target` per metric (the status's metric
/// at the same index is the current one), resource metrics named, the first two and how many
/// more.
fn autoscaler_targets(v: &Value) -> String {
    let specs = list(v, "/spec/metrics");
    if specs.is_empty() {
        return "<none>".into();
    }
    let statuses = list(v, "/status/currentMetrics");
    let quantity = |x: Option<&Value>| match x {
        Some(q) => super::quantity(Some(q)),
        None => "<nil>".into(),
    };
    let shown: Vec<String> = specs
        .iter()
        .take(2)
        .enumerate()
        .map(|(i, spec)| {
            let kind = text(spec, "/type");
            let source_key = match kind {
                "External" => "external",
                "Pods" => "pods",
                "Object" => "object",
                "Resource" => "resource",
                "ContainerResource" => "containerResource",
                _ => return "<unknown type>".into(),
            };
            let source = spec.get(source_key).cloned().unwrap_or(Value::Null);
            let target = source.get("target").cloned().unwrap_or(Value::Null);
            let current = statuses.get(i).and_then(|s| s.get(source_key)).and_then(|s| s.get("current"));
            let current_of = |field: &str| {
                current.map_or("<unknown>".to_string(), |c| match c.get(field) {
                    Some(q) => quantity(Some(q)),
                    None => "<nil>".into(),
                })
            };
            match kind {
                "External" | "Object" if target.get("averageValue").is_some() => {
                    let cur =
                        current.and_then(|c| c.get("averageValue")).map_or("<unknown>".into(), |q| quantity(Some(q)));
                    format!("{cur}/{} (avg)", quantity(target.get("averageValue")))
                }
                "External" | "Object" => format!("{}/{}", current_of("value"), quantity(target.get("value"))),
                "Pods" => format!("{}/{}", current_of("averageValue"), quantity(target.get("averageValue"))),
                _ => {
                    let name = text(&source, "/name");
                    if target.get("averageValue").is_some() {
                        format!("{name}: {}/{}", current_of("averageValue"), quantity(target.get("averageValue")))
                    } else {
                        let cur = current
                            .and_then(|c| c.get("averageUtilization"))
                            .and_then(Value::as_i64)
                            .map_or("<unknown>".into(), |u| format!("{u}%"));
                        let want = target
                            .get("averageUtilization")
                            .and_then(Value::as_i64)
                            .map_or("<auto>".into(), |u| format!("{u}%"));
                        format!("{name}: {cur}/{want}")
                    }
                }
            }
        })
        .collect();
    let mut out = shown.join(", ");
    if specs.len() > 2 {
        out.push_str(&format!(" + {} more...", specs.len() - 2));
    }
    out
}

const BUDGET: [Col; 5] = [
    NAME,
    Col("Min Available", "string", "", 0, Doc::Text("The minimum number of pods that must be available.")),
    Col("Max Unavailable", "string", "", 0, Doc::Text("The maximum number of pods that may be unavailable.")),
    Col(
        "Allowed Disruptions",
        "integer",
        "",
        0,
        Doc::Text("Calculated number of pods that may be disrupted at this time."),
    ),
    AGE,
];

fn budget(v: &Value) -> Vec<Value> {
    // An IntOrString as Go prints it; N/A when not set.
    let bound = |k: &str| match v.pointer(&format!("/spec/{k}")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "N/A".into(),
    };
    vec![
        json!(name(v)),
        json!(bound("minAvailable")),
        json!(bound("maxUnavailable")),
        json!(int(v, "/status/disruptionsAllowed")),
        json!(age(v)),
    ]
}
