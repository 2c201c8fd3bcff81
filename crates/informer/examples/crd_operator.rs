//! An operator for a custom kind, end to end on the embedded API server.
//!
//! `Gadget` (`demo.example.org/v1`) is derived with kube's `CustomResource` macro; its generated
//! CustomResourceDefinition is installed by `ApiServer::builder().crd(…)` before the server
//! starts. The operator keeps, for every Gadget, a ConfigMap `gadget-<name>` (owned by the
//! Gadget) holding its replica count, and reports it in the Gadget's status. It watches both
//! kinds: a Gadget's change, or a change of its ConfigMap (even its deletion), reconciles the
//! Gadget.
//!
//! The program creates two Gadgets, scales one, deletes the other's ConfigMap, then exits once
//! the operator has brought everything in line.
//!
//! ```text
//! cargo run -p informer --example crd_operator
//! ```

use std::time::Duration;

use informer::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::watch;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A gadget: how many replicas it wants.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(group = "demo.example.org", version = "v1", kind = "Gadget", namespaced, status = "GadgetStatus")]
#[kube(printcolumn = r#"{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}"#)]
#[kube(printcolumn = r#"{"name": "Ready", "type": "integer", "jsonPath": ".status.ready"}"#)]
pub struct GadgetSpec {
    /// The replicas wanted.
    pub replicas: i32,
}

/// What the operator did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GadgetStatus {
    /// The replicas the Gadget's ConfigMap holds.
    pub ready: i32,
}

/// The Gadget owning a ConfigMap, if any.
fn owner(cm: &Object<ConfigMap>) -> Vec<ObjectKey> {
    let refs = cm.get().ok().and_then(|c| c.metadata.owner_references.clone()).unwrap_or_default();
    refs.iter().filter(|o| o.kind == "Gadget").filter_map(|o| ObjectKey::new(cm.namespace(), &o.name).ok()).collect()
}

/// Brings one Gadget's ConfigMap and status in line with its spec.
async fn reconcile(client: kube::Client, gadget: &Gadget) -> Result<(), BoxError> {
    let ns = gadget.namespace().unwrap_or_else(|| "default".into());
    let want = gadget.spec.replicas;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("gadget-{}", gadget.name_any()), "namespace": ns,
                     "ownerReferences": [{"apiVersion": "demo.example.org/v1", "kind": "Gadget",
                                          "name": gadget.name_any(), "uid": gadget.uid().unwrap_or_default(), "controller": true}]},
        "data": {"replicas": want.to_string()},
    });
    let name = format!("gadget-{}", gadget.name_any());
    match cms.get_opt(&name).await? {
        None => drop(cms.create(&PostParams::default(), &serde_json::from_value(cm)?).await?),
        Some(c) if c.data.as_ref().and_then(|d| d.get("replicas")) != Some(&want.to_string()) => {
            let patch = Patch::Merge(json!({"data": {"replicas": want.to_string()}}));
            cms.patch(&name, &PatchParams::default(), &patch).await?;
        }
        Some(_) => {}
    }
    if gadget.status.as_ref().map(|s| s.ready) != Some(want) {
        let gadgets: Api<Gadget> = Api::namespaced(client, &ns);
        let patch = Patch::Merge(json!({"status": {"ready": want}}));
        gadgets.patch_status(&gadget.name_any(), &PatchParams::default(), &patch).await?;
    }
    Ok(())
}

/// Runs the demonstration on an embedded server; returns each Gadget's (name, replicas, ready,
/// ConfigMap replicas) at the end.
pub async fn run() -> Result<Vec<(String, i32, i32, String)>, BoxError> {
    let server = informer_apiserver::ApiServer::builder().crd(serde_json::to_string(&Gadget::crd())?).start().await?;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml())?;
    let client = kube::Client::try_from(kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?)?;

    let factory = SharedInformerFactory::new(client.clone());
    let (gadgets_inf, cms_inf) = (factory.informer::<Gadget>(), factory.informer::<ConfigMap>());
    // Each reconcile done is counted, so the program knows when the operator is idle.
    let (done_tx, mut done_rx) = watch::channel(0u64);
    let runner =
        ControllerRunner::builder("gadgets").informer(&gadgets_inf).watches(&cms_inf, owner).workers(2).build({
            let client = client.clone();
            move |key, gadget: Option<Object<Gadget>>| {
                let (client, done_tx) = (client.clone(), done_tx.clone());
                async move {
                    if let Some(g) = gadget {
                        let g = g.get().map_err(|e| e.to_string())?;
                        reconcile(client, g).await.map_err(|e| e.to_string())?;
                        println!("reconciled {key}: {} replicas", g.spec.replicas);
                    }
                    done_tx.send_modify(|n| *n += 1);
                    Ok::<_, String>(Action::Done)
                }
            }
        })?;
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    let operator = tokio::spawn({
        let (r, c) = (runner.clone(), cancel.clone());
        async move { r.run(c).await }
    });

    let gadgets: Api<Gadget> = Api::namespaced(client.clone(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for (name, replicas) in [("alpha", 1), ("beta", 2)] {
        let mut g = Gadget::new(name, GadgetSpec { replicas });
        g.metadata.namespace = Some("default".into());
        gadgets.create(&PostParams::default(), &g).await?;
    }
    // Converged: every Gadget's status and ConfigMap say its replicas.
    let mut converged = async |expected: &[(&str, i32)]| -> Result<Vec<(String, i32, i32, String)>, BoxError> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let mut state = Vec::new();
            for (name, _) in expected {
                let g = gadgets.get(name).await?;
                let cm = cms.get_opt(&format!("gadget-{name}")).await?;
                let cm_replicas = cm.and_then(|c| c.data.and_then(|d| d.get("replicas").cloned())).unwrap_or_default();
                state.push((name.to_string(), g.spec.replicas, g.status.map_or(-1, |s| s.ready), cm_replicas));
            }
            if state.iter().zip(expected).all(|(s, (_, r))| s.1 == *r && s.2 == *r && s.3 == r.to_string()) {
                return Ok(state);
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!("the operator did not converge: {state:?}").into());
            }
            // Woken by the operator's next reconcile.
            let _ = tokio::time::timeout(Duration::from_secs(1), done_rx.changed()).await;
        }
    };
    converged(&[("alpha", 1), ("beta", 2)]).await?;
    gadgets.patch("alpha", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 3}}))).await?;
    cms.delete("gadget-beta", &DeleteParams::default()).await?;
    let state = converged(&[("alpha", 3), ("beta", 2)]).await?;

    cancel.cancel();
    operator.await??;
    Ok(state)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    for (name, replicas, ready, cm) in run().await? {
        println!("{name}: {replicas} wanted, {ready} ready, ConfigMap gadget-{name} holds {cm}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn the_operator_brings_every_gadget_in_line() {
        let state = super::run().await.unwrap();
        assert_eq!(state, [("alpha".to_string(), 3, 3, "3".to_string()), ("beta".to_string(), 2, 2, "2".to_string())]);
    }
}
