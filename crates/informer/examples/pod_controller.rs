//! The pod controller of client-go's workqueue example, on [`ControllerRunner`].
//!
//! An informer watches pods in namespace `default` and a runner with one worker prints
//! "Sync/Add/Update for Pod X" or "Pod X does not exist anymore" for each queued key. Before the
//! start the cache is warmed with a pod "mypod" known from a "previous run": it does not exist on
//! the server, so the initial list observes its deletion and the controller reports it gone.
//! Failed reconciles would be retried with backoff and dropped after 5 retries, as in client-go.
//!
//! Runs against an embedded API server by default (it creates two pods, updates one and deletes
//! the other, then exits once every change was reconciled). With `--kubeconfig FILE` it watches
//! a real cluster until Ctrl-C.
//!
//! ```text
//! cargo run -p informer --example pod_controller [-- --kubeconfig ~/.kube/config]
//! ```

use std::collections::BTreeSet;
use std::time::Duration;

use informer::runner::{Action, ControllerRunner};
use informer::{KubeListerWatcher, Object, SharedIndexInformer};
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::Pod;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn client(kubeconfig: Kubeconfig) -> Result<kube::Client, BoxError> {
    let cfg = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(kube::Client::try_from(cfg)?)
}

fn pod(name: &str, image: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"containers": [{"name": "main", "image": image}]}})
}

/// The business logic: print what happened to the pod.
fn sync_to_stdout(key: &str, pod: Option<&Object<Pod>>) -> Result<(), BoxError> {
    match pod {
        // Below we will warm up our cache with a Pod, so that we will see a delete for one pod.
        None => println!("Pod {key} does not exist anymore"),
        // Note that you also have to check the uid if you have a local controlled resource, which
        // is dependent on the actual instance, to detect that a Pod was recreated with the same name.
        Some(p) => println!("Sync/Add/Update for Pod {}", p.get()?.metadata.name.as_deref().unwrap_or(p.name())),
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    tracing_subscriber_init();
    let kubeconfig_path = std::env::args().skip_while(|a| a != "--kubeconfig").nth(1);
    let server = match &kubeconfig_path {
        Some(_) => None,
        None => Some(ApiServer::builder().start().await?),
    };
    let client = match (&kubeconfig_path, &server) {
        (Some(path), _) => client(Kubeconfig::read_from(path)?).await?,
        (None, Some(s)) => client(Kubeconfig::from_yaml(&s.kubeconfig_yaml())?).await?,
        (None, None) => return Err("no server".into()),
    };
    if let Some(s) = &server {
        s.create("pods", pod("web-1", "nginx:1.27")).await?;
        s.create("pods", pod("web-2", "nginx:1.27")).await?;
    }

    let informer = SharedIndexInformer::<Pod>::new(KubeListerWatcher::new(client, Some("default")), Duration::ZERO);

    // We can now warm up the cache for initial synchronization. Let's suppose that we knew about
    // a pod "mypod" on our last run, therefore add it to the cache. If this pod is not there
    // anymore, the controller will be notified about the removal after the cache has synced.
    informer.indexer().add(Object::from_json(serde_json::to_vec(&pod("mypod", "busybox"))?)?)?;

    let (seen_tx, mut seen) = mpsc::unbounded_channel::<(String, bool)>();
    let runner = ControllerRunner::builder("pod-controller").informer(&informer).workers(1).max_retries(5).build(
        move |key, pod| {
            let seen_tx = seen_tx.clone();
            async move {
                sync_to_stdout(key.as_str(), pod.as_ref())?;
                let _ = seen_tx.send((key.to_string(), pod.is_some()));
                Ok::<_, BoxError>(Action::Done)
            }
        },
    )?;

    // Now let's start the controller.
    let cancel = CancellationToken::new();
    let informer_task = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let runner_task = tokio::spawn({
        let (r, c) = (runner.clone(), cancel.clone());
        async move { r.run(c).await }
    });

    match &server {
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
        Some(s) => {
            // Wait until the initial state was reconciled, then make changes and wait for them.
            let mut expect: BTreeSet<(String, bool)> =
                [("default/web-1", true), ("default/web-2", true), ("default/mypod", false)]
                    .into_iter()
                    .map(|(k, e)| (k.to_string(), e))
                    .collect();
            wait_for(&mut seen, &mut expect).await?;
            // A new image on the pod as stored (admission gave it its service account's volume).
            let mut web = s.get("pods", "default", "web-1").await?;
            web["spec"]["containers"][0]["image"] = "nginx:1.28".into();
            s.update("pods", web).await?;
            s.delete("pods", "default", "web-2").await?;
            let mut expect: BTreeSet<(String, bool)> =
                [("default/web-1".to_string(), true), ("default/web-2".to_string(), false)].into();
            wait_for(&mut seen, &mut expect).await?;
        }
    }
    cancel.cancel();
    runner_task.await??;
    informer_task.await?;
    println!("Stopping Pod controller");
    Ok(())
}

/// Receives reconciles until every expected one was seen.
async fn wait_for(
    seen: &mut mpsc::UnboundedReceiver<(String, bool)>,
    expect: &mut BTreeSet<(String, bool)>,
) -> Result<(), BoxError> {
    while !expect.is_empty() {
        let got = tokio::time::timeout(Duration::from_secs(30), seen.recv()).await?.ok_or("controller stopped")?;
        expect.remove(&got);
    }
    Ok(())
}

/// Logs to stderr, filtered by `INFORMER_LOG` (default `warn`).
fn tracing_subscriber_init() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("INFORMER_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
}
