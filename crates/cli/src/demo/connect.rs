//! Connecting the demo to its API server: the embedded one (its namespace created and preloaded
//! with pods) or a real cluster from a kubeconfig, with a preflight list so that an unreachable
//! server, bad credentials or missing permissions fail at once with a clear message instead of an
//! informer retrying forever.
//!
//! Invariant: `connect` returns only a client that could list pods in the namespace.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use super::load::pod;

/// The API server the demo talks to.
pub struct Target {
    pub client: kube::Client,
    /// The embedded server, when no kubeconfig was given.
    pub server: Option<Arc<ApiServer>>,
    /// Where the server is, for the view's title.
    pub description: String,
}

const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(15);

/// Starts the embedded server with `objects` pods, or connects to the cluster of `kubeconfig`.
pub async fn connect(kubeconfig: Option<&std::path::Path>, ns: &str, objects: usize) -> Result<Target> {
    let target = match kubeconfig {
        Some(path) => {
            let client = crate::client::from_file(path).await?;
            let url = kube::Config::from_custom_kubeconfig(
                kube::config::Kubeconfig::read_from(path)?,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .map(|c| c.cluster_url.to_string())
            .unwrap_or_else(|_| path.display().to_string());
            Target { client, server: None, description: format!("cluster {url}") }
        }
        None => {
            let s = ApiServer::builder().start().await.context("cannot start the embedded API server")?;
            // Pods are created only in a namespace that exists (`default` always does).
            match s.create("namespaces", serde_json::json!({"metadata": {"name": ns}})).await {
                Err(e) if e.code != 409 => return Err(anyhow!("creating namespace {ns}: {e}")),
                _ => {}
            }
            let pods: Vec<_> = (0..objects as u64).map(|i| pod(ns, i)).collect();
            s.create_many("pods", pods).await.map_err(|e| anyhow!("preloading pods: {e}"))?;
            let client = crate::client::from_yaml(&s.kubeconfig_yaml()).await?;
            let description = format!("embedded API server at {}", s.url());
            Target { client, server: Some(Arc::new(s)), description }
        }
    };
    preflight(&target, ns).await?;
    Ok(target)
}

/// Lists one pod to check reachability, authentication and authorization.
async fn preflight(target: &Target, ns: &str) -> Result<()> {
    let api: Api<Pod> = Api::namespaced(target.client.clone(), ns);
    let r = tokio::time::timeout(PREFLIGHT_TIMEOUT, api.list_metadata(&ListParams::default().limit(1))).await;
    let where_ = &target.description;
    match r {
        Err(_) => Err(anyhow!("the API server ({where_}) did not answer within {}s", PREFLIGHT_TIMEOUT.as_secs())),
        Ok(Ok(_)) => Ok(()),
        Ok(Err(kube::Error::Api(s))) if s.code == 401 => {
            Err(anyhow!("unauthorized (401) by {where_}: the kubeconfig's credentials were rejected: {}", s.message))
        }
        Ok(Err(kube::Error::Api(s))) if s.code == 403 => Err(anyhow!(
            "forbidden (403): the kubeconfig's user may not list pods in namespace {ns:?} on {where_}: {}",
            s.message
        )),
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => {
            Err(anyhow!("namespace {ns:?} or the pods resource was not found on {where_}: {}", s.message))
        }
        Ok(Err(kube::Error::Api(s))) => {
            Err(anyhow!("listing pods in {ns:?} on {where_} failed ({}): {}", s.code, s.message))
        }
        Ok(Err(e @ (kube::Error::HyperError(_) | kube::Error::Service(_)))) => {
            Err(anyhow!("cannot reach the API server ({where_}): {}", error_chain(&e)))
        }
        Ok(Err(e)) => Err(anyhow!("listing pods in {ns:?} on {where_} failed: {}", error_chain(&e))),
    }
}

/// An error and its sources on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}
