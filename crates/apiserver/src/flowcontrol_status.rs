//! The status kube-apiserver's priority-and-fairness controller gives FlowSchemas: a `Dangling`
//! condition saying whether the PriorityLevelConfiguration a schema names exists (and is whole).
//!
//! Invariants, as kube's `api-priority-and-fairness-config-consumer-v1` holds them:
//! - a schema whose level is stored and whole has `Dangling` `False`, reason `Found`; any other
//!   `True`, reason `NotFound`; the message names the level; a level is whole when its `type`
//!   matches the block it holds (`limited` for `Limited`, `exempt` for `Exempt`), only the level
//!   named `exempt` is `Exempt`, and a limited level queues exactly when it has `queuing`;
//! - the condition is written only when its status, reason or message differs from the stored
//!   one, then with the time of the write, by a forced server-side apply of the `status`
//!   subresource (other conditions stay); a schema written six times within a minute waits
//!   until that minute has passed;
//! - nothing writes a PriorityLevelConfiguration's status; a pass runs on every change to a
//!   FlowSchema or a PriorityLevelConfiguration.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::apply::ApplyOpts;
use crate::controller_loop::{Loop, Wakers};
use crate::flowcontrol::{FLOW_SCHEMAS, GROUP, PRIORITY_LEVELS};
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::Store;
use crate::strategy::Target;

/// The controller's field manager.
pub(crate) const MANAGER: &str = "api-priority-and-fairness-config-consumer-v1";

const RETRY: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));
/// More writes than this of one schema within a minute wait (kube's `shouldDelayUpdate`).
const WRITES_PER_MINUTE: usize = 5;
const MINUTE: Duration = Duration::from_secs(60);

/// The controller over a store's FlowSchemas.
pub(crate) struct Controller {
    store: Arc<Store>,
    schemas: Arc<ResourceInfo>,
    levels: Arc<ResourceInfo>,
    /// When each schema was written lately.
    writes: Mutex<HashMap<String, Vec<Instant>>>,
    wake_at: Mutex<Option<Instant>>,
}

impl Controller {
    /// A controller for `store`; None when it does not serve both kinds.
    pub fn new(store: Arc<Store>) -> Option<Controller> {
        let schemas = store.registry().find(GROUP, "v1", FLOW_SCHEMAS).cloned()?;
        let levels = store.registry().find(GROUP, "v1", PRIORITY_LEVELS).cloned()?;
        Some(Controller { store, schemas, levels, writes: Mutex::default(), wake_at: Mutex::default() })
    }

    /// Runs until `stop` turns true.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let lp =
            Loop { name: MANAGER, retry: RETRY, cache: self.store.cache(), resync: None, wake_at: Some(&self.wake_at) };
        let wakers = || Wakers { own: self.schemas.clone(), candidates: vec![self.levels.clone()], registry: false };
        lp.run(wakers, || self.pass(), stop).await;
    }

    /// Writes the condition of every schema whose stored one is not as it should be, reading the
    /// cache once it holds everything written so far (its own last writes included).
    async fn pass(&self) -> Result<Vec<Arc<ResourceInfo>>, ApiError> {
        self.store.fresh().await?;
        let cache = self.store.cache();
        let (_, levels) = cache.snapshot(&self.levels, None, &Selectors::default())?;
        let whole: Vec<String> = levels.iter().filter(|l| is_whole(&l.value())).map(|l| l.name.clone()).collect();
        let (_, schemas) = cache.snapshot(&self.schemas, None, &Selectors::default())?;
        *self.wake_at.lock().unwrap_or_else(|e| e.into_inner()) = None;
        // Schemas gone are forgotten.
        self.writes.lock().unwrap_or_else(|e| e.into_inner()).retain(|name, _| schemas.iter().any(|s| s.name == *name));
        let mut writes = Vec::new();
        for schema in schemas.iter() {
            let value = schema.value();
            let level = value.pointer("/spec/priorityLevelConfiguration/name").and_then(Value::as_str).unwrap_or("");
            let wanted = dangling(level, whole.iter().any(|w| w == level));
            if current_matches(&value, &wanted) || !self.may_write(&schema.name) {
                continue;
            }
            writes.push(async move {
                let written = self.write(&schema.name, wanted).await;
                if let Err(e) = &written {
                    tracing::debug!(flowschema = %schema.name, error = %e, "flowschema status");
                }
                written
            });
        }
        // The schemas are written independently, at once (durable storages commit them together).
        let results = futures_util::future::join_all(writes).await;
        match results.into_iter().find_map(Result::err) {
            Some(e) => Err(e),
            None => Ok(vec![self.levels.clone()]),
        }
    }

    /// Whether `name` may be written now (at most five writes within the last minute); if not,
    /// the next pass is due when it may.
    fn may_write(&self, name: &str) -> bool {
        let now = Instant::now();
        let mut writes = self.writes.lock().unwrap_or_else(|e| e.into_inner());
        let times = writes.entry(name.to_string()).or_default();
        times.retain(|t| now.duration_since(*t) < MINUTE);
        if times.len() > WRITES_PER_MINUTE {
            let due = times[0] + MINUTE;
            let mut wake = self.wake_at.lock().unwrap_or_else(|e| e.into_inner());
            *wake = Some(wake.map_or(due, |w| w.min(due)));
            return false;
        }
        times.push(now);
        true
    }

    async fn write(&self, name: &str, mut condition: Value) -> Result<(), ApiError> {
        condition["lastTransitionTime"] = json!(crate::object::now_rfc3339());
        let body = json!({"kind": "FlowSchema", "apiVersion": format!("{GROUP}/v1"), "metadata": {"name": name},
            "status": {"conditions": [condition]}});
        let opts =
            ApplyOpts { target: Target::Status, force: true, field_manager: MANAGER.into(), ..Default::default() };
        let bytes = serde_json::to_vec(&body).map_err(|e| ApiError::internal(&e.to_string()))?;
        match self.store.apply(&self.schemas, "", name, &bytes, &opts).await {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Runs one pass of the controller now, so the
/// FlowSchemas the server starts with carry their condition when it answers. A failure is the
/// running controller's to retry.
pub(crate) async fn settle(store: &Arc<Store>) {
    let Some(controller) = Controller::new(store.clone()) else { return };
    if let Err(e) = crate::requester::scope(Some(crate::requester::server_user()), controller.pass()).await {
        tracing::warn!(error = %e, "writing the FlowSchemas' status");
    }
}

/// Whether a stored priority level is whole enough to be used (see the module documentation).
pub(crate) fn is_whole(level: &Value) -> bool {
    let spec = level.get("spec").unwrap_or(&Value::Null);
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
    let has = |k: &str| spec.get(k).is_some_and(Value::is_object);
    let name = level.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if (kind == "Limited") != has("limited")
        || (kind == "Exempt") != has("exempt")
        || (kind == "Exempt") != (name == "exempt")
    {
        return false;
    }
    match spec.pointer("/limited/limitResponse") {
        Some(response) => {
            let reject = response.get("type").and_then(Value::as_str) == Some("Reject");
            reject != response.get("queuing").is_some_and(Value::is_object)
        }
        None => true,
    }
}

/// The `Dangling` condition of a schema naming `level` (without its time).
fn dangling(level: &str, exists: bool) -> Value {
    let quoted = crate::structural::go_quote(level);
    match exists {
        true => json!({"type": "Dangling", "status": "False", "reason": "Found",
            "message": format!("This FlowSchema references the PriorityLevelConfiguration object named {quoted} and it exists")}),
        false => json!({"type": "Dangling", "status": "True", "reason": "NotFound",
            "message": format!("This FlowSchema references the PriorityLevelConfiguration object named {quoted} but there is no such object")}),
    }
}

fn current_matches(schema: &Value, wanted: &Value) -> bool {
    let conditions = schema.pointer("/status/conditions").and_then(Value::as_array);
    let Some(current) = conditions.and_then(|c| c.iter().find(|c| c["type"] == "Dangling")) else { return false };
    ["status", "reason", "message"].iter().all(|k| current.get(*k) == wanted.get(*k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exempt_level_without_its_block_is_not_whole() {
        assert!(is_whole(&json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}})));
        assert!(!is_whole(&json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt"}})));
        assert!(!is_whole(&json!({"metadata": {"name": "x"}, "spec": {"type": "Limited",
            "limited": {"limitResponse": {"type": "Reject", "queuing": {"queues": 1}}}}})));
    }
}
