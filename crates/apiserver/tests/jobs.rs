//! Jobs and CronJobs are judged as kube-apiserver judges them, over HTTP and through real
//! clients: selectors the server generated, templates that do not change once a Job runs,
//! statuses a Job controller may write, schedules and time zones a CronJob can follow; nothing
//! refused is stored.

mod common;

use common::*;
use serde_json::{Value, json};

const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";
const CRONJOBS: &str = "/apis/batch/v1/namespaces/default/cronjobs";
const MERGE: &str = "application/merge-patch+json";

fn job(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    let template = json!({"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}});
    spec.as_object_mut().unwrap().entry("template").or_insert(template);
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn jobs_are_judged_over_http() {
    let s = server().await;
    let c = Client::new(&s);
    // A selector of one's own, without asking for a manual one.
    let mut own = job("own", json!({"selector": {"matchLabels": {"app": "batch"}}}));
    own["spec"]["template"]["metadata"] = json!({"labels": {"app": "batch"}});
    let r = c.post(JOBS, &own).await;
    assert_eq!(r.code, 422, "{}", r.body);
    let causes = r.body["details"]["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 1, "{}", r.body);
    assert_eq!(causes[0]["field"], "spec.selector");
    let message = causes[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Invalid value: {\"matchLabels\":{\"app\":\"batch\",\"batch.kubernetes.io/controller-uid\":\""
        )
    );
    assert!(message.ends_with("\"}}: `selector` not auto-generated"), "{message}");
    assert_eq!(c.get(&format!("{JOBS}/own")).await.code, 404);
    own["spec"]["manualSelector"] = json!(true);
    assert_eq!(c.post(JOBS, &own).await.code, 201);

    // A running Job's template and completions do not change; its parallelism and labels do.
    assert_eq!(c.post(JOBS, &job("pi", json!({}))).await.code, 201);
    let before = c.get(&format!("{JOBS}/pi")).await.body;
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:1.37"}]}}}});
    let r = c.patch(&format!("{JOBS}/pi"), "application/strategic-merge-patch+json", &image).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(r.body["details"]["causes"][0]["field"], "spec.template");
    let message = r.body["message"].as_str().unwrap();
    assert!(message.starts_with("Job.batch \"pi\" is invalid: spec.template: Invalid value: {"), "{message}");
    assert!(message.ends_with("}: field is immutable"), "{message}");
    assert_eq!(c.get(&format!("{JOBS}/pi")).await.body, before);
    let r = c.patch(&format!("{JOBS}/pi"), MERGE, &json!({"spec": {"completions": 3}})).await;
    assert_eq!(
        r.body["message"],
        "Job.batch \"pi\" is invalid: spec.completions: Invalid value: 3: field is immutable"
    );
    let r = c.patch(&format!("{JOBS}/pi"), MERGE, &json!({"spec": {"parallelism": 2}})).await;
    assert_eq!((r.code, &r.body["spec"]["parallelism"]), (200, &json!(2)));
    let r = c.patch(&format!("{JOBS}/pi"), MERGE, &json!({"metadata": {"labels": {"team": "a"}}})).await;
    assert_eq!(r.code, 200, "{}", r.body);

    // A fault of the spec on update: kube reports it twice, names it once.
    let r = c.patch(&format!("{JOBS}/pi"), MERGE, &json!({"spec": {"backoffLimit": -1}})).await;
    assert_eq!(
        r.body["message"],
        "Job.batch \"pi\" is invalid: spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"
    );
    assert_eq!(r.body["details"]["causes"].as_array().unwrap().len(), 2, "{}", r.body);

    // A suspended Job that never started may move its pods, once.
    assert_eq!(c.post(JOBS, &job("queued", json!({"suspend": true}))).await.code, 201);
    let admit = json!({"spec": {"suspend": false, "template": {"spec": {"nodeSelector": {"pool": "gpu"}}}}});
    let r = c.patch(&format!("{JOBS}/queued"), MERGE, &admit).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["template"]["spec"]["nodeSelector"], json!({"pool": "gpu"}));
    let again = json!({"spec": {"template": {"spec": {"nodeSelector": {"pool": "cpu"}}}}});
    let r = c.patch(&format!("{JOBS}/queued"), MERGE, &again).await;
    assert_eq!((r.code, &r.body["details"]["causes"][0]["field"]), (422, &json!("spec.template")), "{}", r.body);

    // Pods that restart Always, and a pod failure policy kube cannot follow.
    let mut bad = job("bad", json!({"podFailurePolicy": {"rules": [{"action": "FailJob"}]}}));
    bad["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    let r = c.post(JOBS, &bad).await;
    assert_eq!(
        r.body["message"],
        "Job.batch \"bad\" is invalid: [spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes \
         and OnPodConditions is required, spec.template.spec.restartPolicy: Required value: valid values: \
         \"OnFailure\", \"Never\"]"
    );
    assert_eq!(c.get(&format!("{JOBS}/bad")).await.code, 404);
}

fn cron_job(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    let template = json!({"spec": {"template":
        {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "OnFailure"}}}});
    spec.as_object_mut().unwrap().entry("jobTemplate").or_insert(template);
    json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn cron_jobs_are_judged_over_http() {
    let s = server().await;
    let c = Client::new(&s);
    let cases = [
        (
            json!({"schedule": "0 0 * *"}),
            "spec.schedule: Invalid value: \"0 0 * *\": expected exactly 5 fields, found 4: [0 0 * *]",
        ),
        (
            json!({"schedule": "@fortnightly"}),
            "spec.schedule: Invalid value: \"@fortnightly\": unrecognized descriptor: @fortnightly",
        ),
        (
            json!({"schedule": "CRON_TZ=Europe/Rome 0 9 * * *"}),
            "spec.schedule: Invalid value: \"CRON_TZ=Europe/Rome 0 9 * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ),
        (
            json!({"schedule": "0 9 * * *", "timeZone": "Europe/Atlantis"}),
            "spec.timeZone: Invalid value: \"Europe/Atlantis\": unknown time zone Europe/Atlantis",
        ),
    ];
    for (spec, fault) in cases {
        let r = c.post(CRONJOBS, &cron_job("nightly", spec)).await;
        assert_eq!(r.code, 422, "{}", r.body);
        assert_eq!(r.body["message"], format!("CronJob.batch \"nightly\" is invalid: {fault}"));
    }
    assert_eq!(c.get(&format!("{CRONJOBS}/nightly")).await.code, 404);
    let long = "n".repeat(53);
    let r = c.post(CRONJOBS, &cron_job(&long, json!({"schedule": "@daily"}))).await;
    assert_eq!(
        r.body["message"],
        format!(
            "CronJob.batch \"{long}\" is invalid: metadata.name: Invalid value: \"{long}\": must be no more than 52 characters"
        )
    );
    let good = cron_job("nightly", json!({"schedule": "30 2 * * mon-fri", "timeZone": "Europe/Rome"}));
    assert_eq!(c.post(CRONJOBS, &good).await.code, 201);
    let r = c.patch(&format!("{CRONJOBS}/nightly"), MERGE, &json!({"spec": {"schedule": "*/61 * * * *"}})).await;
    assert_eq!(r.code, 200, "a step past the range is kube's too: {}", r.body);
    let r = c.patch(&format!("{CRONJOBS}/nightly"), MERGE, &json!({"spec": {"concurrencyPolicy": "Sometimes"}})).await;
    assert_eq!(
        r.body["message"],
        "CronJob.batch \"nightly\" is invalid: spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported \
         values: \"Allow\", \"Forbid\", \"Replace\""
    );
}

#[tokio::test]
async fn kubectl_creates_jobs_and_is_refused_as_by_kube() {
    use common::tools::{kubectl_bin, kubectl_versions, tempdir};
    let versions = kubectl_versions();
    for bin in [versions.first().unwrap(), versions.last().unwrap()] {
        let s = server().await;
        let c = Client::new(&s);
        let dir = tempdir("kubectl-jobs");
        let kc = dir.join("config");
        s.write_kubeconfig(&kc).unwrap();
        let cache = dir.join("cache");
        let kubectl = |args: Vec<&'static str>| {
            let (kc, cache) = (kc.clone(), cache.clone());
            async move { kubectl_bin(bin, &kc, &cache, &args).await }
        };
        let (ok, out, err) =
            kubectl(vec!["create", "cronjob", "nightly", "--image=busybox", "--schedule=61 * * * *"]).await;
        assert!(!ok, "{bin}: {out}");
        // (kubectl create words the 422 as the server's message.)
        assert!(
            err.contains(
                "CronJob.batch \"nightly\" is invalid: spec.schedule: Invalid value: \"61 * * * *\": end of range (61) \
                 above maximum (59): 61"
            ),
            "{bin}: {err}"
        );
        assert_eq!(c.get(&format!("{CRONJOBS}/nightly")).await.code, 404, "{bin}");
        for args in [
            vec!["create", "cronjob", "nightly", "--image=busybox", "--schedule=*/5 * * * *"],
            vec!["create", "job", "once", "--from=cronjob/nightly"],
            vec!["create", "job", "pi", "--image=busybox", "--", "echo", "hi"],
            vec!["patch", "job", "pi", "-p", r#"{"spec":{"parallelism":2}}"#],
        ] {
            let (ok, out, err) = kubectl(args.clone()).await;
            assert!(ok, "{bin} {args:?}: {out}{err}");
        }
        let (ok, out, err) = kubectl(vec!["set", "image", "job/pi", "pi=busybox:1.37"]).await;
        assert!(!ok, "{bin}: {out}");
        assert!(err.contains("\"pi\" is invalid: spec.template: Invalid value: {"), "{bin}: {err}");
        assert!(err.contains("field is immutable"), "{bin}: {err}");
        let once = c.get(&format!("{JOBS}/once")).await.body;
        assert_eq!(once["metadata"]["ownerReferences"][0]["name"], "nightly", "{bin}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

const PY_JOBS: &str = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
batch = client.BatchV1Api()
container = client.V1Container(name="c", image="busybox")
job = client.V1Job(metadata=client.V1ObjectMeta(name="pi"), spec=client.V1JobSpec(
    template=client.V1PodTemplateSpec(spec=client.V1PodSpec(containers=[container], restart_policy="Never"))))
created = batch.create_namespaced_job("default", job)
print(json.dumps({"created": created.metadata.name,
    "selector": created.spec.selector.match_labels}), flush=True)
try:
    batch.patch_namespaced_job("pi", "default", {"spec": {"completions": 5}})
    print(json.dumps({"patched": True}), flush=True)
except ApiException as e:
    print(json.dumps({"status": e.status, "body": json.loads(e.body)}), flush=True)
"#;

#[tokio::test]
async fn the_python_client_gets_kubes_refusal() {
    let s = server().await;
    let dir = common::tools::tempdir("python-jobs");
    let kc = dir.join("config");
    s.write_kubeconfig(&kc).unwrap();
    let out = common::tools::python(PY_JOBS, &[kc.to_str().unwrap()]).await;
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0]["created"], "pi", "{lines:?}");
    assert!(lines[0]["selector"]["batch.kubernetes.io/controller-uid"].is_string(), "{lines:?}");
    assert_eq!(lines[1]["status"], 422, "{lines:?}");
    assert_eq!(
        lines[1]["body"]["message"],
        "Job.batch \"pi\" is invalid: spec.completions: Invalid value: 5: field is immutable"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_job_status_moves_as_its_controller_may_move_it() {
    let s = server().await;
    let c = Client::new(&s);
    let r = c.post(JOBS, &job("work", json!({}))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let status = format!("{JOBS}/work/status");
    let start = "2026-11-27T10:00:00Z";
    // A status write keeps the metadata it changes (kube's Job status strategy resets the spec alone).
    let r = c
        .patch(
            &status,
            MERGE,
            &json!({"metadata": {"labels": {"phase": "running"}}, "spec": {"parallelism": 5},
                "status": {"startTime": start, "active": 1, "ready": 1}}),
        )
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        (&r.body["metadata"]["labels"]["phase"], &r.body["spec"]["parallelism"]),
        (&json!("running"), &json!(1))
    );

    // Complete without the conditions and times that go with it: kube's causes, in its order.
    let complete = json!({"status": {"active": 0, "ready": 0, "succeeded": 1,
        "conditions": [{"type": "Complete", "status": "True"}]}});
    let r = c.patch(&status, MERGE, &complete).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Job.batch \"work\" is invalid: [status.completionTime: Required value: completionTime is required for \
         Complete jobs, status.conditions: Invalid value: cannot set Complete=True condition without the \
         SuccessCriteriaMet=true condition]"
    );
    assert_eq!(r.body["details"]["kind"], "Job");
    assert_eq!(c.get(&format!("{JOBS}/work")).await.body["status"]["active"], 1, "nothing stored");

    // As the Job controller finishes it: stored.
    let done = json!({"status": {"active": 0, "ready": 0, "succeeded": 1, "completionTime": "2026-11-27T10:05:00Z",
        "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}});
    let r = c.patch(&status, MERGE, &done).await;
    assert_eq!(r.code, 200, "{}", r.body);

    // kube-rs writes the status as a controller does; a finished Job stays finished.
    use k8s_openapi::api::batch::v1::Job;
    let api: kube::Api<Job> = kube::Api::default_namespaced(kube_client(&s).await);
    let undo = json!({"status": {"succeeded": 0, "conditions": null, "completionTime": "2026-11-27T11:00:00Z"}});
    let e = api.patch_status("work", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&undo)).await;
    let kube::Error::Api(e) = e.unwrap_err() else { panic!("not an API error") };
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        e.message,
        "Job.batch \"work\" is invalid: [status.completionTime: Invalid value: \"2026-11-27T11:00:00Z\": cannot set \
         completionTime when there is no Complete=True condition, status.conditions: Invalid value: cannot disable the \
         terminal Complete=True condition, status.succeeded: Invalid value: 0: cannot decrease the succeeded counter, \
         status.completionTime: Invalid value: \"2026-11-27T11:00:00Z\": field is immutable, status.conditions: \
         Invalid value: cannot disable the SuccessCriteriaMet=True condition]"
    );
    let stored = api.get_status("work").await.unwrap().status.unwrap();
    // (`active: 0` is Go's zero of a field it leaves out when empty.)
    assert_eq!((stored.succeeded, stored.active), (Some(1), None));
}
