//! Loading a server in-process with objects as a cluster holds them: created as their clients
//! create them, then given their status through the `status` subresource, as their controllers
//! (a pod's kubelet) write it — a create keeps none of the status it is sent; pods owned by a
//! ReplicaSet the server holds, so that its garbage collector keeps them.
//!
//! Invariant: every object is stored with the status it was given, or the load fails.

use futures_util::future::try_join_all;
use informer_apiserver::ApiServer;
use serde_json::{Value, json};

/// Creates, in `ns`, the ReplicaSet that `pod`'s first owner reference names (none of its pods
/// running) and returns `pod` owned by it: the garbage collector keeps such pods, where it
/// deletes those whose owner is missing.
pub async fn owned_by_a_replica_set(server: &ApiServer, ns: &str, pod: &Value) -> anyhow::Result<Value> {
    let labels = json!({"app": "owner"});
    let rs = server
        .create(
            "replicasets",
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": pod["metadata"]["ownerReferences"][0]["name"], "namespace": ns},
                "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}}),
        )
        .await?;
    let mut owned = pod.clone();
    owned["metadata"]["ownerReferences"][0]["uid"] = rs["metadata"]["uid"].clone();
    Ok(owned)
}

/// Creates `objs` of `resource` (together, as [`ApiServer::create_many`]), then writes each
/// one's `status` (concurrently); returns the newest resourceVersion written.
pub async fn create_with_status(server: &ApiServer, resource: &str, mut objs: Vec<Value>) -> anyhow::Result<u64> {
    let statuses: Vec<(String, String, Value)> = objs
        .iter_mut()
        .filter_map(|o| {
            let status = o.as_object_mut()?.remove("status")?;
            let text = |k: &str| o["metadata"][k].as_str().unwrap_or("default").to_string();
            Some((text("namespace"), text("name"), status))
        })
        .collect();
    let mut newest = server.create_many(resource, objs).await?;
    let writes = statuses.iter().map(|(ns, name, status)| async move {
        let written = server.patch_status(resource, ns, name, &json!({"status": status})).await?;
        anyhow::Ok(written["metadata"]["resourceVersion"].as_str().and_then(|rv| rv.parse::<u64>().ok()).unwrap_or(0))
    });
    for rv in try_join_all(writes).await? {
        newest = newest.max(rv);
    }
    Ok(newest)
}
