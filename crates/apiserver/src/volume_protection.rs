//! kube-controller-manager's pvc-protection and pv-protection controllers, run by the server:
//! they remove the finalizer [`crate::storage_admission`] gives claims and volumes once the
//! object is being deleted and nothing uses it, and give it back to a live one that lacks it.
//!
//! - A claim is in use while a pod of its namespace that is scheduled (`spec.nodeName`) names it
//!   in a `persistentVolumeClaim` volume, whatever the pod's phase, terminating or not; or while
//!   the pod that owns it as controller through a generic ephemeral volume (`<pod>-<volume>`) is
//!   not shut down (deleted with a grace period of 0).
//! - A volume is in use while its `status.phase` is `Bound`.
//!
//! Invariants: a claim is released only after the cache has caught up with the storage (a pod
//! created just before is seen, as kube's controller lists pods live before it releases); each
//! write is a PUT of the version the pass read, made as the controller's service account with
//! the field manager `kube-controller-manager` (admission sees it as kube's); a write that lost a
//! race is left to the pass the newer version wakes; an object whose write fails holds up no
//! other (the pass goes on and is retried); a claim held by pods waits for a change to pods; a
//! pass runs on every change to the controller's resource. The controllers run whether or not
//! the garbage collector does: the finalizers they remove are given on every create.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use crate::controller_loop::{Loop, Wakers};
use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::storage_admission::{CLAIM_PROTECTION, VOLUME_PROTECTION};
use crate::store::{Store, WriteOpts};

/// The field manager of the controllers' writes.
const MANAGER: &str = "kube-controller-manager";

const RETRY: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// What a controller protects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protected {
    Claims,
    Volumes,
}

/// The controller over a store's claims or volumes.
pub(crate) struct Controller {
    store: Arc<Store>,
    protected: Protected,
    info: Arc<ResourceInfo>,
    pods: Option<Arc<ResourceInfo>>,
}

impl Controller {
    /// The pvc-protection controller for `store`; None when it does not serve claims.
    pub fn claims(store: Arc<Store>) -> Option<Controller> {
        let info = store.registry().find("", "v1", "persistentvolumeclaims").cloned()?;
        let pods = store.registry().find("", "v1", "pods").cloned();
        Some(Controller { store, protected: Protected::Claims, info, pods })
    }

    /// The pv-protection controller for `store`; None when it does not serve volumes.
    pub fn volumes(store: Arc<Store>) -> Option<Controller> {
        let info = store.registry().find("", "v1", "persistentvolumes").cloned()?;
        Some(Controller { store, protected: Protected::Volumes, info, pods: None })
    }

    /// The service account kube-controller-manager runs the controller as.
    pub fn service_account(&self) -> Value {
        let name = match self.protected {
            Protected::Claims => "pvc-protection-controller",
            Protected::Volumes => "pv-protection-controller",
        };
        crate::requester::service_account("kube-system", name)
    }

    /// Runs until `stop` turns true.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let name = match self.protected {
            Protected::Claims => "pvc-protection-controller",
            Protected::Volumes => "pv-protection-controller",
        };
        let lp = Loop { name, retry: RETRY, cache: self.store.cache(), resync: None, wake_at: None };
        let pods: Vec<Arc<ResourceInfo>> = self.pods.iter().cloned().collect();
        let wakers = || Wakers { own: self.info.clone(), candidates: pods.clone(), registry: false };
        lp.run(wakers, || self.pass(), stop).await;
    }

    fn finalizer(&self) -> &'static str {
        match self.protected {
            Protected::Claims => CLAIM_PROTECTION,
            Protected::Volumes => VOLUME_PROTECTION,
        }
    }

    /// Releases every object being deleted that nothing uses and protects every live one that
    /// lacks the finalizer; answers the pods when a claim waits on them.
    async fn pass(&self) -> Result<Vec<Arc<ResourceInfo>>, ApiError> {
        let (_, all) = self.store.cache().snapshot(&self.info, None, &Selectors::default())?;
        let finalizer = self.finalizer();
        let mut held = false;
        let mut first_error = None;
        for object in &all {
            let deleting = object.kept.iter().any(|(k, v)| *k == "deletionTimestamp" && !v.is_null());
            // Only the finalizers are read of an object that needs nothing.
            let has = finalizers_of(object).iter().any(|f| f == finalizer);
            if deleting != has {
                continue;
            }
            let value = object.value();
            let finalizers = value.pointer("/metadata/finalizers").and_then(Value::as_array);
            let kept: Vec<Value> = match (deleting, has) {
                (true, true) => match self.in_use(object, &value).await {
                    Ok(true) => {
                        held = true;
                        continue;
                    }
                    Ok(false) => {
                        finalizers.into_iter().flatten().filter(|f| f.as_str() != Some(finalizer)).cloned().collect()
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                        continue;
                    }
                },
                (false, false) => finalizers.into_iter().flatten().cloned().chain([finalizer.into()]).collect(),
                _ => continue,
            };
            if let Err(e) = self.write(object, value, kept).await {
                // One object refused (by a webhook, say) holds up no other; the pass is retried.
                tracing::debug!(name = %object.name, error = %e, "volume protection");
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None if held => Ok(self.pods.iter().cloned().collect()),
            None => Ok(Vec::new()),
        }
    }

    /// Writes `value` (the version `object` read) with `finalizers`.
    async fn write(&self, object: &StoredObject, mut value: Value, finalizers: Vec<Value>) -> Result<(), ApiError> {
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            match finalizers.is_empty() {
                true => meta.remove("finalizers"),
                false => meta.insert("finalizers".into(), finalizers.into()),
            };
        }
        let ns = self.info.namespaced.then_some(object.namespace.as_str());
        let opts = WriteOpts::default().by(MANAGER);
        match self.store.update(&self.info, ns, Some(&object.name), value, opts).await {
            // Gone, or changed since the pass read it: the change wakes the next pass.
            Err(e) if e.code == 404 || e.code == 409 => Ok(()),
            r => r.map(drop),
        }
    }

    /// Whether something still uses the claim or volume `object` (`value`).
    async fn in_use(&self, object: &StoredObject, value: &Value) -> Result<bool, ApiError> {
        let Some(pods) = &self.pods else {
            return Ok(self.protected == Protected::Volumes
                && value.pointer("/status/phase").and_then(Value::as_str) == Some("Bound"));
        };
        if self.used_by_cached_pods(pods, object)? {
            return Ok(true);
        }
        // A pod the cache has not seen yet may use it.
        if !self.store.fresh().await? {
            return Err(ApiError::storage_timeout("", "pods", "list"));
        }
        self.used_by_cached_pods(pods, object)
    }

    fn used_by_cached_pods(&self, pods: &ResourceInfo, claim: &StoredObject) -> Result<bool, ApiError> {
        let (_, listed) = self.store.cache().snapshot(pods, Some(&claim.namespace), &Selectors::default())?;
        Ok(listed.iter().any(|pod| uses(&pod.value(), claim)))
    }
}

/// The finalizers of `object`, read without the rest of it.
fn finalizers_of(object: &StoredObject) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Head {
        metadata: Option<Meta>,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        finalizers: Option<Vec<String>>,
    }
    let head: Option<Head> = serde_json::from_slice(object.storage_value()).ok();
    head.and_then(|h| h.metadata).and_then(|m| m.finalizers).unwrap_or_default()
}

/// Whether `pod` uses `claim` (kube's `podUsesPVC`).
fn uses(pod: &Value, claim: &StoredObject) -> bool {
    if pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("").is_empty() {
        return false;
    }
    let pod_name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let pod_uid = pod.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
    let shut_down = pod.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
        && pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64) == Some(0);
    let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    volumes.iter().any(|v| {
        let named = v.pointer("/persistentVolumeClaim/claimName").and_then(Value::as_str) == Some(claim.name.as_str());
        let ephemeral = v.get("ephemeral").is_some_and(|e| !e.is_null())
            && !shut_down
            && v.get("name").and_then(Value::as_str).is_some_and(|n| format!("{pod_name}-{n}") == claim.name)
            && controlled_by(&claim.value(), pod_uid);
        named || ephemeral
    })
}

/// Whether `object`'s controller reference names the uid `uid`.
fn controlled_by(object: &Value, uid: &str) -> bool {
    let refs = object.pointer("/metadata/ownerReferences").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    refs.iter()
        .any(|r| r.get("controller") == Some(&Value::Bool(true)) && r.get("uid").and_then(Value::as_str) == Some(uid))
}
