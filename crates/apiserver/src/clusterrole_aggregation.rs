//! kube-controller-manager's ClusterRole aggregation controller, run by the server: a ClusterRole
//! with an `aggregationRule` holds the rules of every other ClusterRole its
//! `clusterRoleSelectors` select (so `admin`, `edit` and `view` gain what roles labelled
//! `rbac.authorization.k8s.io/aggregate-to-edit: "true"` and the like grant).
//!
//! Invariants: the rules are gathered selector by selector, from the selected roles in name
//! order, each rule once, as kube gathers them; a role whose gathered rules equal its own is not
//! written, and a pass ends after a write that changed a role, so every role is gathered from
//! what the cache holds after the last change (roles that select each other settle), while one
//! that cannot be brought up to date holds up no other; the write is a forced
//! server-side apply of `rules` (none when nothing is gathered) by the field manager
//! `clusterrole-aggregation-controller`, made as that controller's service account, which under
//! RBAC may write roles once its binding exists (a refusal waits for a binding to change); a
//! pass runs on every change to a ClusterRole.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::apply::ApplyOpts;
use crate::controller_loop::{Loop, Wakers};
use crate::rbac::{GROUP, PolicyRule};
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::Store;

/// The controller's field manager.
pub(crate) const MANAGER: &str = "clusterrole-aggregation-controller";

const RETRY: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// The controller over a store's ClusterRoles.
pub(crate) struct Controller {
    store: Arc<Store>,
    info: Arc<ResourceInfo>,
}

impl Controller {
    /// A controller for `store`; None when it does not serve ClusterRoles.
    pub fn new(store: Arc<Store>) -> Option<Controller> {
        let info = store.registry().find(GROUP, "v1", "clusterroles").cloned()?;
        Some(Controller { store, info })
    }

    /// Runs until `stop` turns true.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let lp = Loop { name: MANAGER, retry: RETRY, cache: self.store.cache(), resync: None, wake_at: None };
        let bindings: Vec<Arc<ResourceInfo>> =
            self.store.registry().find(GROUP, "v1", "clusterrolebindings").cloned().into_iter().collect();
        let wakers = || Wakers { own: self.info.clone(), candidates: bindings.clone(), registry: false };
        lp.run(wakers, || self.pass(), stop).await;
    }

    /// Brings the first aggregated ClusterRole that is out of date, and can be, up to date: after
    /// a write that changed a role the pass ends, so the next pass (which the write wakes) reads
    /// what it changed, as kube's controller reads its informer for each role; a role the write
    /// leaves as it was (another manager holds its rules) or that cannot be written is passed
    /// over, so it holds up no other.
    async fn pass(&self) -> Result<Vec<Arc<ResourceInfo>>, ApiError> {
        let (_, all) = self.store.cache().snapshot(&self.info, None, &Selectors::default())?;
        let roles: Vec<(String, Value)> = all.iter().map(|o| (o.name.clone(), o.value())).collect();
        let mut first_error = None;
        let mut refused = false;
        for ((name, role), stored) in roles.iter().zip(&all) {
            let Some(selectors) = role.get("aggregationRule").filter(|a| a.is_object()) else { continue };
            let gathered = gather(name, selectors, &roles);
            if gathered == PolicyRule::all_of(role) {
                continue;
            }
            match self.write(name, &gathered).await {
                Ok(Some(rv)) if rv != stored.rv => return Ok(Vec::new()),
                Ok(_) => {}
                // Not (yet) allowed to write roles: until a binding changes.
                Err(e) if e.code == 403 => {
                    tracing::debug!(clusterrole = %name, error = %e, "clusterrole aggregation");
                    refused = true;
                }
                Err(e) => {
                    tracing::debug!(clusterrole = %name, error = %e, "clusterrole aggregation");
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None if refused => {
                Ok(self.store.registry().find(GROUP, "v1", "clusterrolebindings").cloned().into_iter().collect())
            }
            None => Ok(Vec::new()),
        }
    }

    /// Applies `rules` to the role `name`; the revision it is at afterwards (None: gone).
    async fn write(&self, name: &str, rules: &[PolicyRule]) -> Result<Option<u64>, ApiError> {
        let mut body = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRole", "metadata": {"name": name}});
        // No rules gathered: none applied, so the controller's rules are removed (kube's `WithRules()`).
        if !rules.is_empty() {
            body["rules"] = rules.iter().map(PolicyRule::to_value).collect::<Vec<_>>().into();
        }
        let opts = ApplyOpts { force: true, field_manager: MANAGER.into(), ..Default::default() };
        let bytes = serde_json::to_vec(&body).map_err(|e| ApiError::internal(&e.to_string()))?;
        match self.store.apply(&self.info, "", name, &bytes, &opts).await {
            Ok((written, _)) => Ok(Some(written.rv)),
            // Gone since the pass read it: nothing to aggregate.
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The rules an aggregated role `name` gathers from `roles` (name-ordered) through its
/// `aggregationRule`.
fn gather(name: &str, aggregation: &Value, roles: &[(String, Value)]) -> Vec<PolicyRule> {
    let mut rules: Vec<PolicyRule> = Vec::new();
    let selectors = aggregation.get("clusterRoleSelectors").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    for selector in selectors {
        for (other, role) in roles {
            let labels = role.get("metadata").and_then(|m| m.get("labels")).cloned().unwrap_or(json!({}));
            if other == name || !crate::admission_policy::selector_matches(selector, &labels) {
                continue;
            }
            for rule in PolicyRule::all_of(role) {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
        }
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_gathered_selector_by_selector_once_each() {
        let role = |name: &str, labels: Value, verbs: &[&str]| {
            (
                name.to_string(),
                json!({"metadata": {"name": name, "labels": labels},
                                       "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": verbs}]}),
            )
        };
        let roles = vec![
            role("a", json!({"edit": "true"}), &["get"]),
            role("b", json!({"view": "true"}), &["list"]),
            role("c", json!({"edit": "true", "view": "true"}), &["get"]),
            role("edit", json!({"edit": "true"}), &["delete"]),
        ];
        let aggregation =
            json!({"clusterRoleSelectors": [{"matchLabels": {"view": "true"}}, {"matchLabels": {"edit": "true"}}]});
        let verbs: Vec<Vec<String>> = gather("edit", &aggregation, &roles).into_iter().map(|r| r.verbs).collect();
        assert_eq!(verbs, vec![vec!["list".to_string()], vec!["get".to_string()]]);
    }
}
