//! The default ServiceCIDR, `kubernetes`, as kube-apiserver v1.35's
//! `kubernetes-service-cidr-controller` keeps it: the server's service range (10.96.0.0/12) as a
//! ServiceCIDR, created when missing and marked `Ready`.
//!
//! Invariants, as kube's controller holds them:
//! - a missing `kubernetes` ServiceCIDR is created (by `kube-apiserver`, no labels, annotations or
//!   finalizers) with the server's range;
//! - one whose blocks are the server's, not being deleted, whose `Ready` condition is absent or
//!   `Unknown`, gets `Ready` `True` (no reason, kube's message, the time of the write) by a forced
//!   server-side apply of `status` as [`MANAGER`]; a `Ready` already `True` or `False`, or other
//!   blocks than the server's, are left as they are;
//! - a pass runs before the server answers, on every change to a ServiceCIDR and every
//!   [`PERIOD`].

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::apply::ApplyOpts;
use crate::controller_loop::{Loop, Wakers};
use crate::registry::ResourceInfo;
use crate::service_cidr::{GROUP, SERVICE_CIDRS};
use crate::status::ApiError;
use crate::store::Store;
use crate::strategy::Target;

/// The controller's field manager.
pub(crate) const MANAGER: &str = "kubernetes-service-cidr-controller";
/// The default ServiceCIDR's name.
pub(crate) const NAME: &str = "kubernetes";
/// The server's service range.
pub(crate) const RANGE: &str = crate::defaults::SERVICE_RANGE;
/// How often kube's controller looks at the object when nothing changes.
pub(crate) const PERIOD: Duration = Duration::from_secs(10);
const READY_MESSAGE: &str = "Kubernetes default Service CIDR is ready";
const RETRY: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

fn info(store: &Store) -> Option<Arc<ResourceInfo>> {
    store.registry().find(GROUP, "v1", SERVICE_CIDRS).cloned()
}

/// Whether the stored object `obj` wants its `Ready` condition written.
fn wants_ready(obj: &Value) -> bool {
    let blocks = obj.pointer("/spec/cidrs").and_then(Value::as_array);
    let ours = blocks.is_some_and(|b| b.len() == 1 && b[0] == RANGE);
    let deleting = obj.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    let conditions = obj.pointer("/status/conditions").and_then(Value::as_array);
    let ready = conditions.into_iter().flatten().find(|c| c["type"] == "Ready");
    ours && !deleting && ready.is_none_or(|c| c["status"] == "Unknown")
}

/// One pass: the object created when missing, then marked ready when it should be.
pub(crate) async fn ensure(store: &Store) -> Result<(), ApiError> {
    let Some(info) = info(store) else { return Ok(()) };
    store.fresh().await?;
    let stored = match store.get(&info, "", NAME).await {
        Ok(o) => o.value(),
        Err(e) if e.code == 404 => {
            let body = json!({"metadata": {"name": NAME}, "spec": {"cidrs": [RANGE]}});
            match store.create_many(&info, None, vec![body], false, "kube-apiserver").await {
                Ok(mut created) => created.remove(0).value(),
                // Created meanwhile: the next pass looks at it.
                Err(e) if e.code == 409 => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    if !wants_ready(&stored) {
        return Ok(());
    }
    // (kube's apply leaves the reason out.)
    let condition = json!({"type": "Ready", "status": "True", "message": READY_MESSAGE,
        "lastTransitionTime": crate::object::now_rfc3339()});
    let body = json!({"kind": "ServiceCIDR", "apiVersion": format!("{GROUP}/v1"), "metadata": {"name": NAME},
        "status": {"conditions": [condition]}});
    let opts = ApplyOpts { target: Target::Status, force: true, field_manager: MANAGER.into(), ..Default::default() };
    let bytes = serde_json::to_vec(&body).map_err(|e| ApiError::internal(&e.to_string()))?;
    match store.apply(&info, "", NAME, &bytes, &opts).await {
        Ok(_) => Ok(()),
        // Deleted meanwhile: the next pass creates it.
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Runs the controller over `store` until `stop` turns true (nothing when the store does not
/// serve ServiceCIDRs).
pub(crate) async fn run(store: Arc<Store>, stop: watch::Receiver<bool>) {
    let Some(own) = info(&store) else { return };
    let lp = Loop { name: MANAGER, retry: RETRY, cache: store.cache(), resync: Some(PERIOD), wake_at: None };
    let wakers = || Wakers { own: own.clone(), candidates: Vec::new(), registry: false };
    let pass = || async { ensure(&store).await.map(|()| Vec::new()) };
    lp.run(wakers, pass, stop).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_servers_own_block_is_marked_ready_once() {
        let obj = |cidrs: Value, status: Value| json!({"metadata": {"name": NAME}, "spec": {"cidrs": cidrs}, "status": status});
        assert!(wants_ready(&obj(json!([RANGE]), json!({}))));
        assert!(wants_ready(&obj(json!([RANGE]), json!({"conditions": [{"type": "Ready", "status": "Unknown"}]}))));
        assert!(!wants_ready(&obj(json!([RANGE]), json!({"conditions": [{"type": "Ready", "status": "False"}]}))));
        assert!(!wants_ready(&obj(json!([RANGE]), json!({"conditions": [{"type": "Ready", "status": "True"}]}))));
        assert!(!wants_ready(&obj(json!(["10.0.0.0/24"]), json!({}))));
        let mut deleting = obj(json!([RANGE]), json!({}));
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(!wants_ready(&deleting));
    }
}
