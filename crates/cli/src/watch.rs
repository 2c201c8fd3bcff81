//! `informer watch RESOURCE`: an informer printing one line per add/update/delete, with
//! resourceVersions, like `kubectl get -w`.

use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use informer::{Controller, HandlerFns, Indexer, Indexers, KubeListerWatcher, RealFifo, ReflectorOptions};
use informer_apiserver::ApiServer;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use tokio_util::sync::CancellationToken;

/// Options of `informer watch`.
#[derive(Args)]
pub struct WatchArgs {
    /// The resource: pods, configmaps, secrets, services, nodes, namespaces, events,
    /// deployments, replicasets.
    resource: String,
    /// Namespace (default: all namespaces).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Label selector.
    #[arg(long, short = 'l')]
    selector: Option<String>,
    /// Watch a real cluster instead of an embedded API server with sample objects.
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Stop after this many seconds.
    #[arg(long)]
    duration: Option<u64>,
}

fn api_resource(name: &str) -> Option<(ApiResource, bool)> {
    let (g, v, k, p, namespaced) = match name {
        "pods" | "pod" | "po" => ("", "v1", "Pod", "pods", true),
        "configmaps" | "configmap" | "cm" => ("", "v1", "ConfigMap", "configmaps", true),
        "secrets" | "secret" => ("", "v1", "Secret", "secrets", true),
        "services" | "service" | "svc" => ("", "v1", "Service", "services", true),
        "events" | "event" | "ev" => ("", "v1", "Event", "events", true),
        "nodes" | "node" | "no" => ("", "v1", "Node", "nodes", false),
        "namespaces" | "namespace" | "ns" => ("", "v1", "Namespace", "namespaces", false),
        "deployments" | "deployment" | "deploy" => ("apps", "v1", "Deployment", "deployments", true),
        "replicasets" | "replicaset" | "rs" => ("apps", "v1", "ReplicaSet", "replicasets", true),
        _ => return None,
    };
    Some((ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(g, v, k), p), namespaced))
}

/// Runs the watch.
pub async fn run(args: WatchArgs) -> Result<bool> {
    let (ar, namespaced) = api_resource(&args.resource).with_context(|| {
        format!("unknown resource {:?} (try pods, configmaps, nodes, deployments, ...)", args.resource)
    })?;
    let mut server = None;
    let client = match &args.kubeconfig {
        Some(p) => crate::client::from_file(p).await?,
        None => {
            let s = ApiServer::builder().start().await.context("cannot start the embedded API server")?;
            if args.resource.starts_with("po") {
                for i in 0..3 {
                    let _ = s.create("pods", serde_json::json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":format!("sample-{i}"),"namespace":"default","labels":{"app":"sample"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}})).await;
                }
            }
            eprintln!("watching the embedded API server at {} (use --kubeconfig for a real cluster)", s.url());
            let c = crate::client::from_yaml(&s.kubeconfig_yaml()).await?;
            server = Some(s);
            c
        }
    };
    let ns = if namespaced { args.namespace.as_deref() } else { None };
    let mut lw = KubeListerWatcher::<DynamicObject>::new_with(client, ns, &ar);
    if let Some(sel) = &args.selector {
        lw = lw.label_selector(sel.clone());
    }
    let line = |ev: &str, o: &informer::Object<DynamicObject>| {
        println!("{ev:<8} {:<50} rv={}", o.key(), o.resource_version().unwrap_or("-"));
    };
    let handler = HandlerFns::<DynamicObject>::new()
        .on_add(move |o, _| line("ADDED", o))
        .on_update(move |_, o| line("MODIFIED", o))
        .on_delete(move |d| match d.object() {
            Some(o) => line("DELETED", o),
            None => println!("{:<8} {:<50} (final state unknown)", "DELETED", d.key()),
        });
    let ctrl = Arc::new(Controller::new(
        Arc::new(lw),
        Arc::new(RealFifo::new(Default::default())),
        Arc::new(Indexer::new(Indexers::new().with_namespace_index())),
        Arc::new(handler),
        ReflectorOptions { name: format!("watch-{}", args.resource), ..Default::default() },
        Default::default(),
    ));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (c, k) = (ctrl.clone(), cancel.clone());
        async move { c.run(k).await }
    });
    match args.duration {
        Some(d) => {
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_secs(d)) => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
    cancel.cancel();
    let _ = task.await;
    drop(server);
    Ok(true)
}
