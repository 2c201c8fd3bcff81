//! ControllerRunner over HTTP against the embedded API server: client-go's pod-controller
//! scenario (a cache warmed with a pod deleted while the controller was down) and a metrics
//! export, with a real `kube::Client` and `KubeListerWatcher`.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::client;
use informer::runner::{Action, ControllerRunner, RunnerMetrics};
use informer::{KubeListerWatcher, Object, SharedIndexInformer};
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(30);

fn pod(name: &str, image: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": image}]}})
}

async fn expect(rx: &mut mpsc::UnboundedReceiver<(String, Option<String>)>, want: &[(&str, Option<&str>)]) {
    let mut want: BTreeSet<(String, Option<String>)> =
        want.iter().map(|(k, i)| (k.to_string(), i.map(str::to_string))).collect();
    while !want.is_empty() {
        let got = tokio::time::timeout(LIMIT, rx.recv()).await.expect("timed out").expect("closed");
        assert!(want.remove(&got), "unexpected reconcile {got:?}; still expecting {want:?}");
    }
}

#[tokio::test]
async fn pod_controller_over_http() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    server.create("pods", pod("web-1", "nginx:1")).await.unwrap();
    let informer =
        SharedIndexInformer::<Pod>::new(KubeListerWatcher::new(client(&server).await, Some("default")), Duration::ZERO);
    // Known from a previous run, deleted since.
    informer.indexer().add(Object::from_json(serde_json::to_vec(&pod("mypod", "busybox")).unwrap()).unwrap()).unwrap();

    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = RunnerMetrics::new(&mut registry);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = ControllerRunner::builder("pods")
        .informer(&informer)
        .workers(2)
        .metrics(&metrics)
        .build(move |key, pod: Option<Object<Pod>>| {
            let tx = tx.clone();
            async move {
                let image = match &pod {
                    None => None,
                    Some(p) => Some(
                        p.get().map_err(|e| e.to_string())?.spec.as_ref().unwrap().containers[0].image.clone().unwrap(),
                    ),
                };
                let _ = tx.send((key.to_string(), image));
                Ok::<_, String>(Action::Done)
            }
        })
        .unwrap();
    let cancel = CancellationToken::new();
    let inf = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let run = tokio::spawn({
        let (r, c) = (runner.clone(), cancel.clone());
        async move { r.run(c).await }
    });

    expect(&mut rx, &[("default/web-1", Some("nginx:1")), ("default/mypod", None)]).await;
    // A new image on the pod as stored (admission gave it its service account's volume).
    let mut web = server.get("pods", "default", "web-1").await.unwrap();
    web["spec"]["containers"][0]["image"] = "nginx:2".into();
    server.update("pods", web).await.unwrap();
    expect(&mut rx, &[("default/web-1", Some("nginx:2"))]).await;
    // A pod is written terminating before it goes (MODIFIED, then DELETED, as kube-apiserver
    // deletes pods): the controller may see it once more before it sees it gone.
    server.delete("pods", "default", "web-1").await.unwrap();
    let mut reconciles: u64 = 3;
    loop {
        let got = tokio::time::timeout(LIMIT, rx.recv()).await.expect("timed out").expect("closed");
        reconciles += 1;
        match got {
            (key, None) if key == "default/web-1" => break,
            (key, Some(image)) if key == "default/web-1" && image == "nginx:2" => {}
            other => panic!("unexpected reconcile {other:?}"),
        }
    }

    cancel.cancel();
    run.await.unwrap().unwrap();
    inf.await.unwrap();
    // The DELETED event may have queued the key again while the reconcile that saw it gone ran:
    // at most that one more, of the pod gone; nothing else.
    if let Ok(got) = rx.try_recv() {
        assert_eq!(got, ("default/web-1".to_string(), None), "only the deletion after the deletion");
        reconciles += 1;
    }
    assert!(rx.try_recv().is_err(), "nothing more after the deletion");
    assert_eq!(metrics.reconciles("pods", "success"), reconciles);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains(&format!(r#"workqueue_adds_total{{name="pods"}} {reconciles}"#)), "{text}");
    assert!(text.contains(r#"reconcile_errors_total{controller="pods"} 0"#), "{text}");
}
