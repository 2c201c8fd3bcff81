//! A minimal controller on the shared-informer layer, against the embedded API server:
//! a factory hands out the pod informer, a handler enqueues keys into a work queue, a worker
//! reconciles from the lister, and everything shuts down cleanly.
//!
//! Run with `cargo run -p informer --example factory_workqueue` (the same controller on
//! [`ControllerRunner`](informer::ControllerRunner): `--example pod_controller`).

use std::time::Duration;

use informer::workqueue::WorkQueue;
use informer::{HandlerFns, LabelSelector, SharedInformerFactory};
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = ApiServer::builder().start().await?;
    for i in 0..5 {
        server
            .create(
                "pods",
                json!({"metadata": {"name": format!("web-{i}"), "namespace": "default", "labels": {"app": "web"}},
                   "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
            )
            .await?;
    }
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml())?;
    let client = kube::Client::try_from(kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?)?;

    let factory =
        SharedInformerFactory::builder(client).namespace("default").resync_period(Duration::from_secs(30)).build();
    let pods = factory.informer::<Pod>();
    let queue = WorkQueue::<String>::new();
    let enqueue = |q: &WorkQueue<String>, key: &informer::ObjectKey| q.add(key.to_string());
    let (q1, q2, q3) = (queue.clone(), queue.clone(), queue.clone());
    let registration = pods.add_event_handler(
        HandlerFns::new()
            .on_add(move |o, _| enqueue(&q1, o.key()))
            .on_update(move |_, o| enqueue(&q2, o.key()))
            .on_delete(move |d| enqueue(&q3, d.key())),
    )?;

    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.wait_for_cache_sync(Some(Duration::from_secs(30))).await.into_result()?;
    registration.synced().wait().await;

    let lister = pods.lister();
    let worker = tokio::spawn({
        let queue = queue.clone();
        async move {
            while let Some(key) = queue.get().await {
                match lister.get(&key) {
                    Some(pod) => println!("reconcile {key} (resourceVersion {:?})", pod.resource_version()),
                    None => println!("reconcile {key}: deleted"),
                }
                queue.done(&key);
            }
        }
    });

    server.delete("pods", "default", "web-0").await?;
    let web: LabelSelector = "app=web".parse()?;
    println!("{} web pods cached", pods.lister().by_namespace("default").list(&web).len());

    queue.shut_down_with_drain_all().await;
    worker.await?;
    factory.shutdown().await;
    Ok(())
}
