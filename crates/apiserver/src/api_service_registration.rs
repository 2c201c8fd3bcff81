//! kube-apiserver's registration of the APIServices of what it serves itself: one per built-in
//! group version when the server starts, and one per served version of a CustomResourceDefinition
//! group for as long as a definition serves it (kube's autoregister and crd-autoregister
//! controllers).
//!
//! Invariants: each is named `<version>.<group>` and local (no service), so it is stored
//! available ([`crate::api_service`]); built-in ones carry the label
//! `kube-aggregator.kubernetes.io/automanaged: onstart` and kube's priorities, and are made (or
//! their spec put back) by the start-up pass (retried until one succeeds), so a user may delete or
//! change one afterwards; those of custom resources carry `automanaged: "true"` and priorities
//! 1000 and 100, are kept in step with the definitions on every pass, and are deleted once no
//! definition serves their version (a built-in group version's never is); the spec of an
//! APIService whose label is neither `onstart` nor `"true"` is never changed. The group of
//! APIServices itself has none. As kube's local availability controller, every pass gives any
//! local APIService that lost it the condition `Available` (`Local`) back, in its place. A
//! start-up registration that fails is retried until a pass succeeds; a restart of a running
//! server does not register again (what was registered is stored).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::controller_loop::{Loop, Wakers};
use crate::delete_options::DeleteOpts;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::{Store, WriteOpts};

/// The label that marks an APIService the server keeps.
pub(crate) const MANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";
/// The field manager of the server's writes.
const MANAGER: &str = "kube-apiserver";
const RETRY: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// The registration of one group version: its spec and the label's value.
struct Wanted {
    spec: Value,
    managed: &'static str,
}

/// The controller over a store's APIServices.
pub(crate) struct Controller {
    store: Arc<Store>,
    services: Arc<ResourceInfo>,
    crds: Option<Arc<ResourceInfo>>,
    /// Whether a pass registered the built-in group versions.
    started: AtomicBool,
}

impl Controller {
    /// The controller for `store`; None when it serves no APIServices. Unless `started`, its
    /// passes register the built-in group versions too until one succeeds.
    pub fn new(store: Arc<Store>, started: bool) -> Option<Controller> {
        let services = store.registry().find(crate::api_service::GROUP, "v1", "apiservices").cloned()?;
        let crds = store.registry().find(crate::crd::GROUP, "v1", "customresourcedefinitions").cloned();
        Some(Controller { store, services, crds, started: AtomicBool::new(started) })
    }

    /// Runs until `stop` turns true.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let lp =
            Loop { name: "crd-autoregister", retry: RETRY, cache: self.store.cache(), resync: None, wake_at: None };
        let wakers =
            || Wakers { own: self.services.clone(), candidates: self.crds.iter().cloned().collect(), registry: false };
        lp.run(wakers, || self.pass(), stop).await;
    }

    /// The built-in group versions the server serves, with kube's priorities.
    fn built_in(&self) -> BTreeMap<String, Wanted> {
        let registry = self.store.registry();
        let mut wanted = BTreeMap::new();
        for info in registry.all().iter().filter(|i| i.custom.is_none() && i.group != crate::api_service::GROUP) {
            let Some((group_priority, version_priority)) = crate::api_service::priorities(&info.group, &info.version)
            else {
                continue;
            };
            wanted.insert(
                crate::api_service::name_of(&info.group, &info.version),
                Wanted { spec: spec(&info.group, &info.version, group_priority, version_priority), managed: "onstart" },
            );
        }
        wanted
    }

    /// The versions the CustomResourceDefinitions serve.
    fn custom(&self) -> Result<BTreeMap<String, Wanted>, ApiError> {
        let mut wanted = BTreeMap::new();
        let Some(crds) = &self.crds else { return Ok(wanted) };
        let (_, definitions) = self.store.cache().snapshot(crds, None, &Selectors::default())?;
        for crd in &definitions {
            let crd = crd.value();
            let group = crd.pointer("/spec/group").and_then(Value::as_str).unwrap_or_default();
            for v in crd.pointer("/spec/versions").and_then(Value::as_array).into_iter().flatten() {
                let version = v.get("name").and_then(Value::as_str).unwrap_or_default();
                if group.is_empty() || version.is_empty() || v.get("served").and_then(Value::as_bool) != Some(true) {
                    continue;
                }
                let name = crate::api_service::name_of(group, version);
                wanted.insert(name, Wanted { spec: spec(group, version, 1000, 100), managed: "true" });
            }
        }
        Ok(wanted)
    }

    /// One pass: until one succeeds, the built-in group versions' APIServices too; always those
    /// of the definitions, and the local ones' availability. Returns what wakes the next pass.
    pub async fn pass(&self) -> Result<Vec<Arc<ResourceInfo>>, ApiError> {
        let start = !self.started.load(Ordering::Acquire);
        let built_in = self.built_in();
        let mut wanted = self.custom()?;
        wanted.retain(|name, _| !built_in.contains_key(name));
        let built_in_names: Vec<String> = built_in.keys().cloned().collect();
        if start {
            wanted.extend(built_in);
        }
        let (_, stored) = self.store.cache().snapshot(&self.services, None, &Selectors::default())?;
        let mut first_error = None;
        let mut note = |e: ApiError, name: &str| {
            if !matches!(e.code, 404 | 409) {
                tracing::debug!(apiservice = %name, error = %e, "registering an APIService");
                first_error.get_or_insert(e);
            }
        };
        for (name, w) in &wanted {
            let current = stored.iter().find(|s| s.name == *name).map(|s| s.value());
            let label = current.as_ref().and_then(|c| managed(c).map(str::to_string));
            match current {
                None => {
                    let body = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                        "metadata": {"name": name, "labels": {MANAGED: w.managed}}, "spec": w.spec});
                    if let Err(e) = self.store.create_many(&self.services, None, vec![body], false, MANAGER).await {
                        note(e, name);
                    }
                }
                // Only the spec is put back, of an APIService the server keeps.
                Some(mut current)
                    if matches!(label.as_deref(), Some("onstart" | "true")) && current.get("spec") != Some(&w.spec) =>
                {
                    current["spec"] = w.spec.clone();
                    let opts = WriteOpts::default().by(MANAGER);
                    if let Err(e) = self.store.update(&self.services, None, Some(name), current, opts).await {
                        note(e, name);
                    }
                }
                Some(_) => {}
            }
        }
        for s in &stored {
            let value = s.value();
            let gone = !wanted.contains_key(&s.name)
                && !built_in_names.contains(&s.name)
                && match managed(&value) {
                    Some("true") => true,
                    Some("onstart") => start,
                    _ => false,
                };
            if gone {
                if let Err(e) = self.store.delete(&self.services, "", &s.name, &DeleteOpts::with_uid(&s.uid)).await {
                    note(e, &s.name);
                }
                continue;
            }
            if let Some(status) = lost_availability(&value) {
                let mut restored = value.clone();
                restored["status"] = status;
                let opts = WriteOpts::status(false).by(MANAGER);
                if let Err(e) = self.store.update(&self.services, None, Some(&s.name), restored, opts).await {
                    note(e, &s.name);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => {
                self.started.store(true, Ordering::Release);
                Ok(self.crds.iter().cloned().collect())
            }
        }
    }
}

/// The value of an APIService's label that marks it as the server's.
fn managed(service: &Value) -> Option<&str> {
    service.pointer("/metadata/labels").and_then(|l| l.get(MANAGED)).and_then(Value::as_str)
}

/// The status to write back when a local APIService's `Available` condition is not kube's
/// `Local` one: its other conditions, and that one (its transition time kept while it was `True`).
fn lost_availability(service: &Value) -> Option<Value> {
    if service.pointer("/spec/service").is_some_and(|s| !s.is_null()) {
        return None;
    }
    let conditions = service.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let current = conditions.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Available"));
    let now = crate::object::now_rfc3339();
    let mut wanted = crate::api_service::local_condition(&now);
    if let Some(c) = current {
        let same = |k: &str| c.get(k) == wanted.get(k);
        if same("status") && same("reason") && same("message") {
            return None;
        }
        if same("status")
            && let Some(t) = c.get("lastTransitionTime")
        {
            wanted["lastTransitionTime"] = t.clone();
        }
    }
    // In its place, as kube's `SetAPIServiceCondition` sets it.
    let mut conditions = conditions;
    match conditions.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some("Available")) {
        Some(c) => *c = wanted,
        None => conditions.push(wanted),
    }
    Some(json!({"conditions": conditions}))
}

/// A local APIService's spec.
fn spec(group: &str, version: &str, group_priority: i64, version_priority: i64) -> Value {
    let mut spec =
        json!({"version": version, "groupPriorityMinimum": group_priority, "versionPriority": version_priority});
    if !group.is_empty() {
        spec["group"] = json!(group);
    }
    spec
}

/// Registers the APIServices of every group version the server serves, as the server starts
/// (as its own user, once the cache holds what is stored); whether the pass succeeded.
pub(crate) async fn register_at_start(store: &Arc<Store>) -> bool {
    let Some(controller) = Controller::new(store.clone(), false) else { return true };
    register(&controller).await.is_ok()
}

/// One start-up pass of `controller`, as the server's user.
async fn register(controller: &Controller) -> Result<Vec<Arc<ResourceInfo>>, ApiError> {
    let pass = async {
        controller.store.fresh().await?;
        controller.pass().await
    };
    crate::requester::scope(Some(crate::requester::server_user()), pass).await
}

/// Retries the start-up registration that failed, after delays that double from 100 ms to 5 s,
/// until a pass succeeds or `stop` turns true.
pub(crate) async fn retry_registration(store: Arc<Store>, mut stop: watch::Receiver<bool>) {
    let Some(controller) = Controller::new(store, false) else { return };
    let mut delay = RETRY.0;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        match register(&controller).await {
            Ok(_) => return,
            Err(e) => tracing::warn!(error = %e, "registering the APIServices; retrying"),
        }
        delay = (delay * 2).min(RETRY.1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_service_gets_its_availability_back() {
        let local = |status: Value| json!({"spec": {"group": "apps", "version": "v1"}, "status": status});
        let available = local(json!({"conditions": [crate::api_service::local_condition("2026-01-01T00:00:00Z")]}));
        assert_eq!(lost_availability(&available), None);
        let lost = lost_availability(&local(json!({"conditions": [{"type": "Available", "status": "False",
            "reason": "Broken", "lastTransitionTime": "2026-01-01T00:00:00Z"}]})));
        let condition = &lost.unwrap()["conditions"][0];
        assert_eq!((&condition["status"], &condition["reason"]), (&json!("True"), &json!("Local")));
        assert_ne!(condition["lastTransitionTime"], "2026-01-01T00:00:00Z");
        let remote = json!({"spec": {"service": {"namespace": "a", "name": "b"}}, "status": {}});
        assert_eq!(lost_availability(&remote), None);
    }

    #[test]
    fn the_core_group_has_no_group_in_its_spec() {
        assert_eq!(
            spec("", "v1", 18000, 1),
            json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1})
        );
        assert_eq!(spec("apps", "v1", 17800, 15)["group"], "apps");
    }
}
