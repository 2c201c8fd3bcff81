//! The CustomResourceDefinition controllers of kube-apiserver's apiextensions server, in one
//! task per server: the naming controller (`status.acceptedNames`, `NamesAccepted`), the
//! establishing controller (`Established`) and the finalizing controller (a deleted
//! CustomResourceDefinition's objects are deleted, then its `customresourcecleanup` finalizer is
//! removed, which deletes it).
//!
//! The life of a CustomResourceDefinition:
//! 1. Created with an empty status (no conditions, empty accepted names, the storage version as
//!    stored: [`crate::crd::fresh_status`]).
//! 2. The controller accepts its names unless another CustomResourceDefinition of the group
//!    already has them (`NamesAccepted` False, reason `PluralConflict`, `KindConflict`…, message
//!    `"<name>" is already in use`), and marks it `Established`; the watch cache then serves its
//!    kinds ([`crate::crd::served_versions`]). Later changes of the names are accepted the same
//!    way; an established definition stays established.
//! 3. A DELETE only marks it ([`mark_deleted`]: deletionTimestamp, the cleanup finalizer,
//!    `Terminating` True `InstanceDeletionPending`); new objects are refused (403). The
//!    controller sets `InstanceDeletionInProgress`, deletes every object straight from the
//!    registry (without admission, as kube's finalizer; a failure is `InstanceDeletionFailed`),
//!    and once the watch cache (caught up with the storage) shows none left, sets
//!    `InstanceDeletionCompleted` (`NeverEstablished` for a definition never established) and
//!    removes the finalizer: the definition is deleted and its kinds are no longer served.
//!
//! Invariants: the controller acts only on what the watch cache shows; its writes are
//! compare-and-swap updates computed from what it read, so several servers on one etcd do not
//! undo each other, and a write equal to the stored object writes nothing. It is woken by the
//! cache's change notifications, and retries after a failure.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::controller_loop::{Loop, Wakers};
use crate::crd::{CLEANUP_FINALIZER, condition};
use crate::delete_options::DeleteOpts;
use crate::object;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::{Store, WriteOpts};

/// The field manager of the controllers' writes, as kube-apiserver's own client is named.
const MANAGER: &str = "kube-apiserver";

/// Marks a CustomResourceDefinition (as a JSON map) deleted, as kube-apiserver's DELETE does:
/// deletionTimestamp now, the cleanup finalizer, `Terminating` True.
pub fn mark_deleted(obj: &mut Map<String, Value>) {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        meta.insert("deletionTimestamp".into(), object::now_rfc3339().into());
        let f = meta.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(a) = f.as_array_mut()
            && !a.iter().any(|x| x.as_str() == Some(CLEANUP_FINALIZER))
        {
            a.push(CLEANUP_FINALIZER.into());
        }
    }
    set_condition(
        obj,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    );
}

/// Sets a condition of the status (kept in place when present; its lastTransitionTime moves
/// only when its status does). Whether anything changed.
fn set_condition(obj: &mut Map<String, Value>, kind: &str, status: &str, reason: &str, message: &str) -> bool {
    let st = obj.entry("status").or_insert_with(|| json!({}));
    if !st.is_object() {
        *st = json!({});
    }
    let conds = st.as_object_mut().map(|s| s.entry("conditions").or_insert(Value::Null));
    let Some(conds) = conds else { return false };
    if !conds.is_array() {
        *conds = json!([]);
    }
    let Some(list) = conds.as_array_mut() else { return false };
    let now = object::now_rfc3339();
    match list.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some(kind)) {
        Some(c) => {
            if c["status"] == status && c["reason"] == reason && c["message"] == message {
                return false;
            }
            if c["status"] != status {
                c["lastTransitionTime"] = now.into();
            }
            c["status"] = status.into();
            c["reason"] = reason.into();
            c["message"] = message.into();
        }
        None => list.push(json!({
            "type": kind, "status": status, "lastTransitionTime": now, "reason": reason, "message": message,
        })),
    }
    true
}

/// The names other CustomResourceDefinitions of a group have: (plural, singular and short
/// names; kinds and list kinds).
fn names_in_use(all: &[Value], group: &str, except: &str) -> (HashSet<String>, HashSet<String>) {
    let mut resources = HashSet::new();
    let mut kinds = HashSet::new();
    for crd in all {
        if crd["spec"]["group"].as_str() != Some(group) || crd["metadata"]["name"].as_str() == Some(except) {
            continue;
        }
        let accepted = &crd["status"]["acceptedNames"];
        for f in ["plural", "singular"] {
            if let Some(s) = accepted[f].as_str().filter(|s| !s.is_empty()) {
                resources.insert(s.to_string());
            }
        }
        for s in accepted["shortNames"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            resources.insert(s.to_string());
        }
        for f in ["kind", "listKind"] {
            if let Some(s) = accepted[f].as_str().filter(|s| !s.is_empty()) {
                kinds.insert(s.to_string());
            }
        }
    }
    (resources, kinds)
}

/// The accepted names and conditions a CustomResourceDefinition should have (kube's naming and
/// establishing controllers); whether its status changes.
fn accept_names(crd: &mut Map<String, Value>, all: &[Value]) -> bool {
    let v = Value::Object(crd.clone());
    let name = v["metadata"]["name"].as_str().unwrap_or("").to_string();
    let (resources, kinds) = names_in_use(all, v["spec"]["group"].as_str().unwrap_or(""), &name);
    let requested = &v["spec"]["names"];
    let accepted = &v["status"]["acceptedNames"];
    let mut next = accepted.as_object().cloned().unwrap_or_default();
    let mut conflict: Option<(&str, String)> = None;
    let fresh = |req: &str, acc: &str, used: &HashSet<String>| req == acc || !used.contains(req);
    for (field, reason, used) in [
        ("plural", "PluralConflict", &resources),
        ("singular", "SingularConflict", &resources),
        ("kind", "KindConflict", &kinds),
        ("listKind", "ListKindConflict", &kinds),
    ] {
        let req = requested[field].as_str().unwrap_or("");
        if field == "kind" {
            // Short names are checked between singular and kind, as kube does.
            let want: Vec<&str> =
                requested["shortNames"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let have: Vec<&str> =
                accepted["shortNames"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            if want != have {
                let taken: Vec<String> = want
                    .iter()
                    .filter(|s| !have.contains(s) && resources.contains(**s))
                    .map(|s| format!("{s:?} is already in use"))
                    .collect();
                if taken.is_empty() {
                    if want.is_empty() {
                        next.remove("shortNames");
                    } else {
                        next.insert("shortNames".into(), json!(want));
                    }
                } else {
                    let msg = if taken.len() == 1 { taken[0].clone() } else { format!("[{}]", taken.join(", ")) };
                    conflict = Some(("ShortNamesConflict", msg));
                }
            }
        }
        if fresh(req, accepted[field].as_str().unwrap_or(""), used) {
            if !req.is_empty() || field == "plural" || field == "kind" {
                next.insert(field.into(), req.into());
            }
        } else {
            conflict = Some((reason, format!("{req:?} is already in use")));
        }
    }
    match requested.get("categories").filter(|c| c.as_array().is_some_and(|a| !a.is_empty())) {
        Some(c) => next.insert("categories".into(), c.clone()),
        None => next.remove("categories"),
    };
    let mut changed = false;
    let status = crd.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    if let Some(st) = status.as_object_mut()
        && st.get("acceptedNames") != Some(&Value::Object(next.clone()))
    {
        st.insert("acceptedNames".into(), Value::Object(next));
        changed = true;
    }
    let accepted_ok = conflict.is_none();
    changed |= match &conflict {
        None => set_condition(crd, "NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        Some((reason, msg)) => set_condition(crd, "NamesAccepted", "False", reason, msg),
    };
    let established = condition(&Value::Object(crd.clone()), "Established")
        .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"));
    if !established {
        changed |= if accepted_ok {
            set_condition(crd, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
        } else {
            set_condition(crd, "Established", "False", "NotAccepted", "not all names are accepted")
        };
    }
    changed
}

/// The CustomResourceDefinition controller (see the module documentation). One runs in every
/// server whose registry serves CustomResourceDefinitions.
pub struct Controller {
    store: Arc<Store>,
    crds: Arc<ResourceInfo>,
}

/// How long the controller waits before it retries after a failure, at first and at most.
const RETRY: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(5));

/// How many deletions of a definition's objects are in flight at once.
const PARALLEL_DELETES: usize = 32;

impl Controller {
    /// A controller for `store`; None when it does not serve CustomResourceDefinitions.
    pub fn new(store: Arc<Store>) -> Option<Controller> {
        let crds = store.registry().all().iter().find(|i| crate::crd::is_crds(i))?.clone();
        Some(Controller { store, crds })
    }

    /// Runs until `stop` turns true.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let lp = Loop {
            name: "customresourcedefinition",
            retry: RETRY,
            cache: self.store.cache(),
            resync: None,
            wake_at: None,
        };
        let wakers = || Wakers {
            own: self.crds.clone(),
            candidates: self.store.registry().each_resource().cloned().collect(),
            registry: true,
        };
        lp.run(wakers, || self.pass(), stop).await;
    }

    /// Processes every CustomResourceDefinition once; returns the resources whose changes let a
    /// deleted one progress.
    async fn pass(&self) -> Result<Vec<Arc<ResourceInfo>>, ApiError> {
        let (_, stored) = self.store.cache().snapshot(&self.crds, None, &Selectors::default())?;
        let mut all: Vec<Value> = stored.iter().map(|o| o.value()).collect();
        let mut waits = Vec::new();
        let mut first_error = None;
        for i in 0..all.len() {
            let Value::Object(mut crd) = all[i].clone() else { continue };
            let deleting = crd.get("metadata").and_then(|m| m.get("deletionTimestamp")).is_some_and(|t| !t.is_null());
            let r = if deleting {
                self.finalize(crd).await.map(|w| {
                    waits.extend(w);
                })
            } else if accept_names(&mut crd, &all) {
                match self.write_status(crd).await {
                    Ok(Some(v)) => {
                        all[i] = v;
                        Ok(())
                    }
                    Ok(None) => Ok(()),
                    Err(e) => Err(e),
                }
            } else {
                Ok(())
            };
            if let Err(e) = r {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(waits),
        }
    }

    /// Writes the status of a CustomResourceDefinition (as read, so a newer version makes it a
    /// 409 and the next pass starts over); its new state, None when it changed meanwhile.
    async fn write_status(&self, crd: Map<String, Value>) -> Result<Option<Value>, ApiError> {
        match self.store.update(&self.crds, None, None, Value::Object(crd), WriteOpts::status(false).by(MANAGER)).await
        {
            Ok(o) => Ok(Some(o.value())),
            Err(e) if e.code == 404 || e.code == 409 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A deleted CustomResourceDefinition: deletes its objects, then removes the finalizer once
    /// none is left.
    async fn finalize(&self, mut crd: Map<String, Value>) -> Result<Vec<Arc<ResourceInfo>>, ApiError> {
        let has_finalizer = crd
            .get("metadata")
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|x| x.as_str() == Some(CLEANUP_FINALIZER)));
        if !has_finalizer {
            return Ok(Vec::new());
        }
        let name = crd["metadata"]["name"].as_str().unwrap_or("").to_string();
        let established = crate::crd::condition_true(&Value::Object(crd.clone()), "Established");
        if set_condition(
            &mut crd,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        ) {
            match self.write_status(crd).await? {
                Some(Value::Object(m)) => crd = m,
                // Changed meanwhile: the change wakes the next pass.
                _ => return Ok(Vec::new()),
            }
        }
        let served = self.store.registry().custom(&name);
        // Deleted in the storage version, which no conversion webhook has to convert.
        let storage = served.iter().find(|i| crate::conversion::is_storage_version(i)).or(served.first());
        let (reason, message) = match storage.cloned() {
            _ if !established => ("NeverEstablished", "resource was never established"),
            Some(info) => {
                if let Err(e) = self.delete_all(&info).await {
                    let message = format!("could not issue all deletes: {}", e.message);
                    set_condition(&mut crd, "Terminating", "True", "InstanceDeletionFailed", &message);
                    self.write_status(crd).await?;
                    return Err(e);
                }
                if !self.store.fresh().await? {
                    return Err(ApiError::internal("the watch cache is behind the storage"));
                }
                let (_, left) = self.store.cache().snapshot(&info, None, &Selectors::default())?;
                if !left.is_empty() {
                    return Ok(vec![info]);
                }
                ("InstanceDeletionCompleted", "removed all instances")
            }
            None => ("InstanceDeletionCompleted", "removed all instances"),
        };
        if set_condition(&mut crd, "Terminating", "False", reason, message) {
            match self.write_status(crd).await? {
                Some(Value::Object(m)) => crd = m,
                _ => return Ok(Vec::new()),
            }
        }
        if let Some(Value::Array(f)) = crd.get_mut("metadata").and_then(|m| m.get_mut("finalizers")) {
            f.retain(|x| x.as_str() != Some(CLEANUP_FINALIZER));
        }
        match self.store.update(&self.crds, None, None, Value::Object(crd), WriteOpts::default().by(MANAGER)).await {
            Err(e) if e.code == 404 || e.code == 409 => Ok(Vec::new()),
            r => r.map(|_| Vec::new()),
        }
    }

    /// Deletes every object of a custom resource not already being deleted.
    async fn delete_all(&self, info: &Arc<ResourceInfo>) -> Result<(), ApiError> {
        let (_, objs) = self.store.cache().snapshot(info, None, &Selectors::default())?;
        let store = &self.store;
        let mut deletes = futures_util::stream::iter(
            objs.into_iter().filter(|o| !o.kept.iter().any(|(k, _)| *k == "deletionTimestamp")),
        )
        .map(|o| async move {
            // Straight to the registry, as kube's finalizer deletes them: admission is not asked
            // (a webhook refusing deletions, or down, does not keep the definition forever).
            let opts = DeleteOpts { admitted: true, ..DeleteOpts::with_uid(&o.uid) };
            match store.delete(info, &o.namespace, &o.name, &opts).await {
                Err(e) if e.code == 404 || e.code == 409 => Ok(()),
                r => r.map(drop),
            }
        })
        .buffer_unordered(PARALLEL_DELETES);
        let mut first_error = None;
        while let Some(r) = deletes.next().await {
            if let Err(e) = r {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, plural: &str, kind: &str) -> Map<String, Value> {
        json!({"metadata": {"name": name}, "spec": {"group": "g.io", "names": {"plural": plural, "kind": kind, "listKind": format!("{kind}List")}},
               "status": {"conditions": null, "acceptedNames": {"plural": "", "kind": ""}}})
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn names_are_accepted_unless_taken() {
        let mut a = crd("as.g.io", "as", "A");
        assert!(accept_names(&mut a, &[]));
        assert_eq!(a["status"]["acceptedNames"], json!({"plural": "as", "kind": "A", "listKind": "AList"}));
        assert_eq!(a["status"]["conditions"][0]["reason"], "NoConflicts");
        assert_eq!(a["status"]["conditions"][1]["reason"], "InitialNamesAccepted");
        assert!(!accept_names(&mut a.clone(), &[]), "nothing changes the second time");
        let mut b = crd("bs.g.io", "bs", "A");
        assert!(accept_names(&mut b, &[Value::Object(a)]));
        assert_eq!(b["status"]["conditions"][0]["reason"], "ListKindConflict", "the last conflict is reported");
        assert_eq!(b["status"]["conditions"][0]["message"], "\"AList\" is already in use");
        assert_eq!(b["status"]["conditions"][1]["status"], "False");
    }
}
