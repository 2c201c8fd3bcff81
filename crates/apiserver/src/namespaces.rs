//! Namespaces as kube-apiserver and kube-controller-manager run them: the NamespaceLifecycle
//! admission rules, the two-step deletion of a namespace, and the namespace controller that
//! empties a terminating namespace and then finalizes it.
//!
//! The life of a namespace:
//! 1. Created with `spec.finalizers: [kubernetes]` and `status.phase: Active` (see
//!    [`crate::defaults`]). `default`, `kube-system`, `kube-public` and `kube-node-lease` exist
//!    from the start ([`SYSTEM`]).
//! 2. A DELETE only marks it: `deletionTimestamp` set, phase `Terminating` (200 with the object).
//!    `default`, `kube-system` and `kube-public` cannot be deleted (403, [`IMMORTAL`]). New objects
//!    are refused in a terminating namespace (403, cause `NamespaceTerminating`), and in one that
//!    does not exist (404 naming the namespace).
//! 3. The [`Controller`] deletes every object of every namespaced resource in it, its pods first
//!    (the rest once no pod is left, as kube's ordered namespace deletion). Objects with
//!    finalizers are only marked, and keep the namespace (with conditions saying what remains, as
//!    kube-controller-manager writes them) until their finalizers are removed.
//! 4. Once it is empty, the controller removes the `kubernetes` finalizer through the `finalize`
//!    subresource; with no finalizers left, that write deletes the namespace.
//!
//! Invariants: the controller acts only on what the watch cache shows after it has caught up
//! with the storage, so a namespace is finalized only when none of its objects is left; its
//! watchers therefore see every object's DELETED event before the namespace's. It is woken by
//! the cache's change notifications (never by a timer, except to retry after a failure),
//! and a controller started on a storage that holds terminating namespaces finishes them.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::controller_loop::{Loop, Wakers};
use crate::delete_options::{DeleteOpts, Propagation};
use crate::object::{self, StoredObject};
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::{Store, Target, WriteOpts};

/// The finalizer of the namespace controller (`spec.finalizers`).
pub const FINALIZER: &str = "kubernetes";

/// The namespaces a server creates at start.
pub const SYSTEM: [&str; 4] = ["default", "kube-node-lease", "kube-public", "kube-system"];

/// The namespaces that cannot be deleted.
pub const IMMORTAL: [&str; 3] = ["default", "kube-public", "kube-system"];

/// Makes the namespace `name` unless it exists (kube's `tryEnsureNamespace`), as the server's
/// own user.
pub(crate) async fn ensure(store: &crate::store::Store, name: &str) -> Result<(), ApiError> {
    let Some(info) = store.namespaces_info() else { return Ok(()) };
    let obj = serde_json::json!({"metadata": {"name": name}});
    match store.create_many(info, None, vec![obj], false, "kube-apiserver").await {
        Err(e) if e.code != 409 => Err(e),
        _ => Ok(()),
    }
}

/// Whether `info` is the core/v1 namespaces resource.
pub fn is_namespaces(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.version == "v1" && info.plural == "namespaces"
}

/// Whether a namespace is being terminated (no new objects may be created in it).
pub fn is_terminating(ns: &StoredObject) -> bool {
    ns.kept.iter().any(|(k, _)| *k == "deletionTimestamp")
        || ns.fields.iter().any(|(f, v)| f == "status.phase" && v == "Terminating")
}

/// kube's rule for a write of a namespace's status: its phase is `Active` until the namespace
/// is being deleted, `Terminating` once it is (a status write cannot start its deletion).
pub(crate) fn status_causes(obj: &Map<String, Value>) -> Vec<crate::structural::Cause> {
    let deleting = obj.get("metadata").and_then(|m| m.get("deletionTimestamp")).is_some_and(|t| !t.is_null());
    let phase = obj.get("status").and_then(|s| s.get("phase")).and_then(Value::as_str).unwrap_or("");
    let fault = match (deleting, phase) {
        (false, "Active") | (true, "Terminating") => return Vec::new(),
        (false, _) => "may only be 'Active' if `deletionTimestamp` is empty",
        (true, _) => "may only be 'Terminating' if `deletionTimestamp` is not empty",
    };
    vec![crate::policy_validation::invalid("status.Phase".into(), phase, fault)]
}

/// Whether a namespace (as a JSON map) has finalizers in its spec.
pub fn has_spec_finalizers(obj: &Map<String, Value>) -> bool {
    obj.get("spec").and_then(|s| s.get("finalizers")).and_then(Value::as_array).is_some_and(|f| !f.is_empty())
}

/// Marks a namespace (as a JSON map) terminating: `deletionTimestamp` now and phase
/// `Terminating`. False when it already was.
pub fn mark_terminating(obj: &mut Map<String, Value>) -> bool {
    let Some(Value::Object(meta)) = obj.get_mut("metadata") else { return false };
    if meta.contains_key("deletionTimestamp") {
        return false;
    }
    meta.insert("deletionTimestamp".into(), object::now_rfc3339().into());
    match obj.get_mut("status") {
        Some(Value::Object(status)) => {
            status.insert("phase".into(), "Terminating".into());
        }
        _ => {
            obj.insert("status".into(), json!({"phase": "Terminating"}));
        }
    }
    true
}

/// 404 for an object created in a namespace that does not exist.
pub fn not_found(ns: &str) -> ApiError {
    ApiError::not_found("", "namespaces", ns)
}

/// 403 for an object created in a terminating namespace.
pub fn terminating(info: &ResourceInfo, name: &str, ns: &str) -> ApiError {
    let mut e = ApiError::forbidden(
        &info.group,
        &info.plural,
        name,
        &format!("unable to create new content in namespace {ns} because it is being terminated"),
    );
    if let Some(Value::Object(d)) = e.details.as_deref_mut() {
        d.insert(
            "causes".into(),
            json!([{
                "reason": "NamespaceTerminating",
                "message": format!("namespace {ns} is being terminated"),
                "field": "metadata.namespace",
            }]),
        );
    }
    e
}

/// 403 for deleting one of the [`IMMORTAL`] namespaces.
pub fn undeletable(name: &str) -> ApiError {
    ApiError::forbidden("", "namespaces", name, "this namespace may not be deleted")
}

/// The objects left in a namespace, per resource.
type Contents = Vec<(Arc<ResourceInfo>, Vec<Arc<StoredObject>>)>;

/// What one pass over a terminating namespace found.
enum Pass {
    /// It is finalized (or gone).
    Done,
    /// Objects remain (being finalized by others): wait for changes of these resources.
    Remaining(Vec<Arc<ResourceInfo>>),
}

/// The namespace controller (see the module documentation). One runs in every server whose
/// registry serves namespaces.
pub struct Controller {
    store: Arc<Store>,
    ns_info: Arc<ResourceInfo>,
}

/// The field manager of the controller's writes (kube-controller-manager's).
const CONTROLLER: &str = "kube-controller-manager";

/// How long the controller waits before it retries after a failure, at first and at most.
const RETRY: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// How many deletions of one namespace's objects are in flight at once.
const PARALLEL_DELETES: usize = 32;

impl Controller {
    /// A controller for `store`; None when it does not serve namespaces.
    pub fn new(store: Arc<Store>) -> Option<Controller> {
        let ns_info = store.namespaces_info()?.clone();
        Some(Controller { store, ns_info })
    }

    /// Runs until `stop` turns true.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let lp = Loop { name: "namespace", retry: RETRY, cache: self.store.cache(), resync: None, wake_at: None };
        let wakers = || Wakers {
            own: self.ns_info.clone(),
            candidates: self.store.registry().each_resource().filter(|i| i.namespaced).cloned().collect(),
            registry: false,
        };
        lp.run(wakers, || self.pass(), stop).await;
    }

    /// Processes every terminating namespace once; returns the resources whose changes may let
    /// one of them progress.
    async fn pass(&self) -> Result<Vec<Arc<ResourceInfo>>, ApiError> {
        let cache = self.store.cache();
        let (_, all) = cache.snapshot(&self.ns_info, None, &Selectors::default())?;
        let mut waits: Vec<Arc<ResourceInfo>> = Vec::new();
        let mut first_error = None;
        for ns in all.iter().filter(|n| is_terminating(n)) {
            match self.sync(ns).await {
                Ok(Pass::Done) => {}
                Ok(Pass::Remaining(infos)) => {
                    for i in infos {
                        if !waits.iter().any(|w| Arc::ptr_eq(w, &i)) {
                            waits.push(i);
                        }
                    }
                }
                Err(e) => {
                    tracing::debug!(namespace = %ns.name, error = %e, "namespace controller");
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(waits),
        }
    }

    /// One terminating namespace: deletes what it holds, then finalizes it when nothing is left.
    async fn sync(&self, ns: &StoredObject) -> Result<Pass, ApiError> {
        let Value::Object(obj) = ns.value() else { return Err(ApiError::internal("namespace is not an object")) };
        let finalizers = object::strings(obj.get("spec").and_then(|s| s.get("finalizers")));
        if finalizers.is_empty() {
            // Finalized, but still here (its finalizers were emptied before the deletion, or
            // its metadata finalizers are being removed): a DELETE ends it when it can.
            return match self.store.delete(&self.ns_info, "", &ns.name, &DeleteOpts::with_uid(&ns.uid)).await {
                Ok(_) => Ok(Pass::Done),
                Err(e) if e.code == 404 || e.code == 409 => Ok(Pass::Done),
                Err(e) => Err(e),
            };
        }
        // As kube's controller, the contents go whatever finalizers the namespace has; only
        // `kubernetes` is this controller's to remove (another is its owner's business).
        // As kube's ordered namespace deletion: the pods first, the rest once they are gone (a
        // pod's ConfigMaps, Secrets and claims outlive it).
        let is_pods = |i: &ResourceInfo| i.is_core("pods");
        let mut failures = self.delete_contents(&ns.name, is_pods).await;
        // Count the remaining objects once the cache has seen every write so far (ours included).
        if !self.store.fresh().await? {
            return Err(ApiError::internal("the watch cache is behind the storage"));
        }
        let mut remaining = self.remaining(&ns.name, is_pods)?;
        if remaining.is_empty() && failures.is_empty() {
            failures = self.delete_contents(&ns.name, |i| !is_pods(i)).await;
            if !self.store.fresh().await? {
                return Err(ApiError::internal("the watch cache is behind the storage"));
            }
            remaining = self.remaining(&ns.name, |_| true)?;
        }
        if remaining.is_empty() && failures.is_empty() {
            self.finalize(obj, &finalizers).await?;
            return Ok(Pass::Done);
        }
        self.report(obj, &remaining, &failures).await?;
        // A deletion that failed is tried again after a delay; what remains wakes the next pass.
        if let Some(e) = failures.into_iter().next() {
            return Err(e);
        }
        Ok(Pass::Remaining(remaining.into_iter().map(|(info, _)| info).collect()))
    }

    /// Deletes every object of the namespace of the resources `which` selects not already being
    /// deleted; the failures, the first of each resource (kube's per-resource deletion errors).
    async fn delete_contents(&self, ns: &str, which: impl Fn(&ResourceInfo) -> bool) -> Vec<ApiError> {
        let cache = self.store.cache();
        let registry = self.store.registry();
        let mut targets = Vec::new();
        let mut failures: Vec<(Arc<ResourceInfo>, ApiError)> = Vec::new();
        for info in registry.each_resource().filter(|i| i.namespaced && which(i)) {
            let objs = match cache.snapshot(info, Some(ns), &Selectors::default()) {
                Ok((_, objs)) => objs,
                Err(e) => {
                    failures.push((info.clone(), e));
                    continue;
                }
            };
            for o in objs.into_iter().filter(|o| !o.kept.iter().any(|(k, _)| *k == "deletionTimestamp")) {
                targets.push((info.clone(), o));
            }
        }
        let store = &self.store;
        let mut deletes = futures_util::stream::iter(targets)
            .map(|(info, o)| async move {
                match store
                    .delete(
                        &info,
                        &o.namespace,
                        &o.name,
                        &DeleteOpts::with_uid(&o.uid).propagation(Propagation::Background),
                    )
                    .await
                {
                    // Gone meanwhile, or replaced: the next pass sees it.
                    Err(e) if e.code == 404 || e.code == 409 => Ok(()),
                    r => r.map(drop).map_err(|e| (info, e)),
                }
            })
            .buffer_unordered(PARALLEL_DELETES);
        while let Some(r) = deletes.next().await {
            if let Err((info, e)) = r
                && !failures.iter().any(|(i, _)| Arc::ptr_eq(i, &info))
            {
                failures.push((info, e));
            }
        }
        failures.into_iter().map(|(_, e)| e).collect()
    }

    /// The objects left in the namespace of the resources `which` selects, per resource.
    fn remaining(&self, ns: &str, which: impl Fn(&ResourceInfo) -> bool) -> Result<Contents, ApiError> {
        let cache = self.store.cache();
        let mut out = Vec::new();
        for info in self.store.registry().each_resource().filter(|i| i.namespaced && which(i)) {
            let (_, objs) = cache.snapshot(info, Some(ns), &Selectors::default())?;
            if !objs.is_empty() {
                out.push((info.clone(), objs));
            }
        }
        Ok(out)
    }

    /// Removes the `kubernetes` finalizer (`PUT …/finalize`); with no finalizer left the
    /// namespace goes away.
    async fn finalize(&self, mut obj: Map<String, Value>, finalizers: &[String]) -> Result<(), ApiError> {
        if !finalizers.iter().any(|f| f == FINALIZER) {
            return Ok(());
        }
        let rest: Vec<&String> = finalizers.iter().filter(|f| *f != FINALIZER).collect();
        if let Some(Value::Object(spec)) = obj.get_mut("spec") {
            spec.insert("finalizers".into(), json!(rest));
        }
        let opts = WriteOpts { target: Target::Finalize, ..Default::default() }.by(CONTROLLER);
        match self.store.update(&self.ns_info, None, None, Value::Object(obj), opts).await {
            // Changed meanwhile: the change wakes the next pass.
            Err(e) if e.code == 404 || e.code == 409 => Ok(()),
            r => r.map(drop),
        }
    }

    /// Writes the conditions kube-controller-manager gives a namespace whose contents are not
    /// all gone yet, or could not all be deleted (`failures`); nothing when they are already
    /// there.
    async fn report(
        &self,
        mut obj: Map<String, Value>,
        remaining: &Contents,
        failures: &[ApiError],
    ) -> Result<(), ApiError> {
        let mut resources = Vec::new();
        let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
        for (info, objs) in remaining {
            resources.push(format!("{}.{} has {} resource instances", info.plural, info.group, objs.len()));
            for o in objs {
                let v = o.value();
                let names: HashSet<&str> =
                    v["metadata"]["finalizers"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                for f in names {
                    *finalizers.entry(f.to_string()).or_default() += 1;
                }
            }
        }
        resources.sort();
        let finalizers: Vec<String> =
            finalizers.iter().map(|(f, n)| format!("{f} in {n} resource instances")).collect();
        let wanted = [
            (
                "NamespaceDeletionDiscoveryFailure",
                "False",
                "ResourcesDiscovered",
                "All resources successfully discovered".to_string(),
            ),
            (
                "NamespaceDeletionGroupVersionParsingFailure",
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed".to_string(),
            ),
            match failures {
                [] => (
                    "NamespaceDeletionContentFailure",
                    "False",
                    "ContentDeleted",
                    "All content successfully deleted, may be waiting on finalization".to_string(),
                ),
                _ => (
                    "NamespaceDeletionContentFailure",
                    "True",
                    "ContentDeletionFailed",
                    format!("Failed to delete all resource types, {} remaining: {}", failures.len(), {
                        // kube's makeDeleteContentCondition sorts the messages.
                        let mut messages: Vec<&str> = failures.iter().map(|e| e.message.as_str()).collect();
                        messages.sort_unstable();
                        messages.join(", ")
                    }),
                ),
            },
            if resources.is_empty() {
                ("NamespaceContentRemaining", "False", "ContentRemoved", "All content successfully removed".to_string())
            } else {
                (
                    "NamespaceContentRemaining",
                    "True",
                    "SomeResourcesRemain",
                    format!("Some resources are remaining: {}", resources.join(", ")),
                )
            },
            if finalizers.is_empty() {
                (
                    "NamespaceFinalizersRemaining",
                    "False",
                    "ContentHasNoFinalizers",
                    "All content-preserving finalizers finished".to_string(),
                )
            } else {
                (
                    "NamespaceFinalizersRemaining",
                    "True",
                    "SomeFinalizersRemain",
                    format!("Some content in the namespace has finalizers remaining: {}", finalizers.join(", ")),
                )
            },
        ];
        let status = match obj.get_mut("status") {
            Some(Value::Object(s)) => s,
            _ => {
                obj.insert("status".into(), json!({"phase": "Terminating"}));
                match obj.get_mut("status") {
                    Some(Value::Object(s)) => s,
                    _ => unreachable!("status was just set to an object"),
                }
            }
        };
        let old: Vec<Value> = status.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        let now = object::now_rfc3339();
        // As kube's updateConditions: conditions of other types stay; one that changes keeps its
        // place, and its transition time unless its status changed.
        let mut conditions = old.clone();
        for (kind, st, reason, message) in &wanted {
            match conditions.iter_mut().find(|c| c["type"] == *kind) {
                None => conditions.push(
                    json!({"type": kind, "status": st, "lastTransitionTime": now, "reason": reason, "message": message}),
                ),
                Some(c) => {
                    if c["status"] != *st {
                        c["lastTransitionTime"] = now.clone().into();
                    }
                    c["status"] = (*st).into();
                    c["reason"] = (*reason).into();
                    c["message"] = message.clone().into();
                }
            }
        }
        if conditions == old {
            return Ok(());
        }
        status.insert("conditions".into(), Value::Array(conditions));
        let opts = WriteOpts::status(false).by(CONTROLLER);
        match self.store.update(&self.ns_info, None, None, Value::Object(obj), opts).await {
            Err(e) if e.code == 404 || e.code == 409 => Ok(()),
            r => r.map(drop),
        }
    }
}
