//! kube-controller-manager's serviceaccounts controller, run by the server: every namespace that
//! is not being deleted has the ServiceAccount `default`, which pods run as when they name none
//! (see [`crate::service_account_admission`]).
//!
//! Invariants: the account is created as kube's controller creates it (`metadata.name` and
//! `namespace` alone, no secrets), as the controller's service account with the field manager
//! `kube-controller-manager`; one deleted is created again; a namespace being deleted (a
//! deletion time, or phase `Terminating`) gets none; a create that finds the account there, or
//! the namespace gone or going, is no failure; a pass runs on every change to namespaces and
//! service accounts.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::controller_loop::{Loop, Wakers};
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::Store;

/// The account every namespace has.
pub(crate) const DEFAULT: &str = "default";
/// The service account kube-controller-manager runs the controller as.
const SERVICE_ACCOUNT: &str = "service-account-controller";
/// The field manager of the controller's writes.
const MANAGER: &str = "kube-controller-manager";

const RETRY: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// The controller over a store's namespaces.
pub(crate) struct Controller {
    store: Arc<Store>,
    namespaces: Arc<ResourceInfo>,
    accounts: Arc<ResourceInfo>,
}

impl Controller {
    /// The controller for `store`; None when it serves no namespaces or service accounts.
    pub fn new(store: Arc<Store>) -> Option<Controller> {
        let namespaces = store.registry().find("", "v1", "namespaces").cloned()?;
        let accounts = store.registry().find("", "v1", "serviceaccounts").cloned()?;
        Some(Controller { store, namespaces, accounts })
    }

    /// The service account kube-controller-manager runs the controller as.
    pub fn service_account(&self) -> Value {
        crate::requester::service_account("kube-system", SERVICE_ACCOUNT)
    }

    /// Runs until `stop` turns true.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let lp = Loop {
            name: "serviceaccount-controller",
            retry: RETRY,
            cache: self.store.cache(),
            resync: None,
            wake_at: None,
        };
        let wakers =
            || Wakers { own: self.accounts.clone(), candidates: vec![self.namespaces.clone()], registry: false };
        lp.run(wakers, || self.pass(), stop).await;
    }

    /// Creates the account in every live namespace that lacks it; returns what wakes the next
    /// pass.
    pub async fn pass(&self) -> Result<Vec<Arc<ResourceInfo>>, ApiError> {
        let cache = self.store.cache();
        let (_, namespaces) = cache.snapshot(&self.namespaces, None, &Selectors::default())?;
        let (_, accounts) = cache.snapshot(&self.accounts, None, &Selectors::default())?;
        let has: HashSet<&str> = accounts.iter().filter(|a| a.name == DEFAULT).map(|a| a.namespace.as_str()).collect();
        let mut first_error = None;
        for ns in &namespaces {
            if has.contains(ns.name.as_str()) || terminating(&ns.value()) {
                continue;
            }
            let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT}});
            match self.store.create_many(&self.accounts, Some(&ns.name), vec![account], false, MANAGER).await {
                Ok(_) => {}
                // There already, or the namespace gone or going: the change wakes the next pass.
                Err(e) if matches!(e.code, 404 | 409) || (e.code == 403 && e.message.contains("terminated")) => {}
                Err(e) => {
                    tracing::debug!(namespace = %ns.name, error = %e, "default service account");
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(vec![self.namespaces.clone()]),
        }
    }
}

/// Runs one pass of the controller now, as its service account, once the cache holds every
/// namespace written so far. A failure (a webhook that refuses the create, say) is the running
/// controller's to retry.
pub(crate) async fn settle(store: &Arc<Store>) {
    let Some(controller) = Controller::new(store.clone()) else { return };
    let user = controller.service_account();
    let pass = async {
        store.fresh().await?;
        controller.pass().await
    };
    if let Err(e) = crate::requester::scope(Some(user), pass).await {
        tracing::warn!(error = %e, "creating the default service accounts");
    }
}

/// Whether a namespace is being deleted.
fn terminating(ns: &Value) -> bool {
    ns.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
        || ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_being_deleted_is_passed_over() {
        assert!(!terminating(&json!({"metadata": {"name": "a"}, "status": {"phase": "Active"}})));
        assert!(terminating(&json!({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"}})));
        assert!(terminating(&json!({"metadata": {"name": "a"}, "status": {"phase": "Terminating"}})));
    }
}
