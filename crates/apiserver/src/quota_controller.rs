//! kube-controller-manager's resourcequota controller, run by the server: it gives each
//! ResourceQuota its `status` — `hard` as the spec sets it (in kube's canonical quantities) and
//! `used` as the objects of its namespace add up ([`crate::quota_evaluators`], within the
//! quota's scopes) — and gives back what deleted, finished or shrunk objects no longer use.
//!
//! Invariants: a namespace is recounted while no object charged by [`crate::resource_quota`]
//! on this server is on its way to the storage there, and once the cache holds every
//! acknowledged write (so a recount never undoes this server's charges); usage counted below
//! the quota's is given back only when an object counted before was deleted or changed, or
//! every five minutes (as kube's controller, which creates do not wake: a charge another server
//! made for an object not stored yet stays); `used` names only keys of `hard`, each tracked one
//! from 0, and keeps the earlier value of a key no evaluator counts; a quota is written only when its
//! status changes, as the controller's service account with the field manager
//! `kube-controller-manager`, as a compare-and-swap on the version read (a quota changed
//! meanwhile is left to the pass its change wakes); a pass runs on every change to quotas and to
//! the resources some quota tracks, and every five minutes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::controller_loop::{Loop, Wakers};
use crate::quantity::{Format, Quantity, ResourceList, list_of};
use crate::quota_evaluators::Evaluator;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::{Store, WriteOpts};

/// The field manager of the controller's writes.
const MANAGER: &str = "kube-controller-manager";

/// The delays before retrying a failed pass.
const RETRY: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(5));

/// The full recount period (kube-controller-manager's `--resource-quota-sync-period`): what
/// only time changes, such as a pod's deletion grace running out, is counted then.
const RESYNC: Duration = Duration::from_secs(300);

/// The service account kube-controller-manager runs the controller as.
pub(crate) const SERVICE_ACCOUNT: &str = "resourcequota-controller";

/// The controller over a store's ResourceQuotas.
pub(crate) struct Controller {
    store: Arc<Store>,
    quotas: Arc<ResourceInfo>,
    /// What each namespace's last recount counted.
    counted: std::sync::Mutex<HashMap<String, Counted>>,
}

/// The objects a namespace's recount counted (resource and name, version), and when a recount
/// last gave usage back.
struct Counted {
    objects: HashMap<(String, String), u64>,
    full: std::time::Instant,
}

/// How a recount treats usage it counts below what the quota shows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Recount {
    /// Gives it back: an object counted before was deleted or changed, or the resync is due.
    Full,
    /// Keeps the quota's: since the last recount objects were only created, and admission
    /// charged them (one on its way to the storage through another server is not counted yet).
    RaiseOnly,
}

impl Controller {
    /// The controller for `store`; None when it does not serve ResourceQuotas.
    pub fn new(store: Arc<Store>) -> Option<Controller> {
        let quotas = store.registry().find("", "v1", "resourcequotas").cloned()?;
        Some(Controller { store, quotas, counted: Default::default() })
    }

    /// Runs until `stop` turns true.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let lp = Loop {
            name: "resourcequota-controller",
            retry: RETRY,
            cache: self.store.cache(),
            resync: Some(RESYNC),
            wake_at: None,
        };
        let wakers = || Wakers { own: self.quotas.clone(), candidates: self.tracked(), registry: true };
        lp.run(wakers, || self.pass(), stop).await;
    }

    /// The quotas the cache holds (in namespace `ns`, or all), by namespace.
    fn quotas(&self, ns: Option<&str>) -> Result<BTreeMap<String, Vec<Value>>, ApiError> {
        let (_, all) = self.store.cache().snapshot(&self.quotas, ns, &Selectors::default())?;
        let mut by_ns: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for q in all.iter() {
            by_ns.entry(q.namespace.clone()).or_default().push(q.value());
        }
        Ok(by_ns)
    }

    /// The resources some quota's `spec.hard` names something of, with their evaluators.
    fn evaluators(&self, quotas: &[&Value]) -> Vec<(Arc<ResourceInfo>, Evaluator)> {
        let names: BTreeSet<&str> = quotas
            .iter()
            .flat_map(|q| q.pointer("/spec/hard").and_then(Value::as_object).into_iter().flat_map(|h| h.keys()))
            .map(String::as_str)
            .collect();
        let registry = self.store.registry();
        let mut found = Vec::new();
        for info in registry.each_resource() {
            if let Some(e) = Evaluator::of(info).filter(|e| names.iter().any(|n| e.tracks(n))) {
                found.push((info.clone(), e));
            }
        }
        found
    }

    /// The resources whose changes may change some quota's usage.
    fn tracked(&self) -> Vec<Arc<ResourceInfo>> {
        let Ok(by_ns) = self.quotas(None) else { return Vec::new() };
        let all: Vec<&Value> = by_ns.values().flatten().collect();
        self.evaluators(&all).into_iter().map(|(info, _)| info).collect()
    }

    /// Recounts every namespace with quotas and writes the statuses that changed.
    async fn pass(&self) -> Result<Vec<Arc<ResourceInfo>>, ApiError> {
        let namespaces: Vec<String> = self.quotas(None)?.into_keys().collect();
        self.counted.lock().unwrap_or_else(|e| e.into_inner()).retain(|ns, _| namespaces.contains(ns));
        let mut first_error = None;
        for ns in namespaces {
            let gate = self.store.quota_gates().of(&ns);
            let _recount = gate.in_flight.write().await;
            if !self.store.fresh().await? {
                return Err(ApiError::storage_timeout("", "resourcequotas", "list"));
            }
            let by_ns = self.quotas(Some(&ns))?;
            let Some(quotas) = by_ns.get(&ns) else { continue };
            let evaluators = self.evaluators(&quotas.iter().collect::<Vec<_>>());
            let mut objects = Vec::with_capacity(evaluators.len());
            let mut versions = HashMap::new();
            for (info, evaluator) in &evaluators {
                let (_, listed) = self.store.cache().snapshot(info, Some(&ns), &Selectors::default())?;
                let resource = format!("{}/{}", info.group, info.plural);
                versions.extend(listed.iter().map(|o| ((resource.clone(), o.name.clone()), o.rv)));
                objects.push((evaluator, listed.iter().map(|o| o.value()).collect::<Vec<_>>()));
            }
            let recount = self.recount(&ns, versions);
            for quota in quotas {
                let Some(status) = status_of(quota, &objects, recount) else { continue };
                if let Err(e) = self.write(&ns, quota.clone(), status).await {
                    tracing::debug!(namespace = %ns, error = %e, "resource quota");
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(self.tracked()),
        }
    }

    /// How namespace `ns` is recounted, given the versions of the objects its quotas track now
    /// (kube's controller gives usage back on deletions, updates and its resync, not on creates).
    fn recount(&self, ns: &str, objects: HashMap<(String, String), u64>) -> Recount {
        let mut counted = self.counted.lock().unwrap_or_else(|e| e.into_inner());
        let now = std::time::Instant::now();
        let recount = match counted.get(ns) {
            Some(last) if now.duration_since(last.full) < RESYNC => {
                match last.objects.iter().all(|(k, rv)| objects.get(k) == Some(rv)) {
                    true => Recount::RaiseOnly,
                    false => Recount::Full,
                }
            }
            _ => Recount::Full,
        };
        let full = match (recount, counted.get(ns)) {
            (Recount::RaiseOnly, Some(last)) => last.full,
            _ => now,
        };
        counted.insert(ns.to_string(), Counted { objects, full });
        recount
    }

    /// Writes `status` to `quota` (the version the pass read).
    async fn write(&self, ns: &str, mut quota: Value, status: Value) -> Result<(), ApiError> {
        let name = quota.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
        if let Some(q) = quota.as_object_mut() {
            q.insert("status".into(), status);
        }
        let opts = WriteOpts::status(false).by(MANAGER);
        match self.store.update(&self.quotas, Some(ns), Some(&name), quota, opts).await {
            // Gone, or changed since the pass read it: the change wakes the next pass.
            Err(e) if e.code == 404 || e.code == 409 => Ok(()),
            r => r.map(drop),
        }
    }
}

/// The status `quota` should have given the namespace's `objects` (by evaluator); None when it
/// has it.
fn status_of(quota: &Value, objects: &[(&Evaluator, Vec<Value>)], recount: Recount) -> Option<Value> {
    let spec_hard = quota.pointer("/spec/hard").and_then(Value::as_object).cloned().unwrap_or_default();
    let hard: Map<String, Value> = spec_hard
        .iter()
        .map(|(k, v)| (k.clone(), Quantity::of(v).map_or_else(|| v.clone(), |q| Value::String(q.shown()))))
        .collect();
    let selectors = crate::resource_quota::selectors(quota.get("spec").unwrap_or(&Value::Null));
    let mut counted = ResourceList::new();
    for (evaluator, listed) in objects {
        let tracked: Vec<&String> = hard.keys().filter(|k| evaluator.tracks(k)).collect();
        if tracked.is_empty() {
            continue;
        }
        for k in &tracked {
            counted.entry((*k).clone()).or_insert(Quantity { nanos: 0, format: Format::DecimalSI });
        }
        for obj in listed.iter().filter(|o| evaluator.in_scopes(&selectors, o)) {
            for (k, q) in evaluator.usage(obj) {
                if let Some(have) = counted.get_mut(&k) {
                    *have = have.add(q);
                }
            }
        }
    }
    let status = quota.get("status");
    let earlier_used = status.and_then(|s| s.get("used")).and_then(Value::as_object);
    if recount == Recount::RaiseOnly {
        for (k, earlier) in list_of(earlier_used) {
            if let Some(c) = counted.get_mut(&k).filter(|c| c.nanos < earlier.nanos) {
                *c = earlier;
            }
        }
    }
    let used = crate::resource_quota::recounted(&hard, earlier_used, &counted);
    let same = |a: Option<&Map<String, Value>>, b: &Map<String, Value>| {
        a.is_some_and(|a| {
            let (a, b) = (list_of(Some(a)), list_of(Some(b)));
            a.len() == b.len() && a.iter().all(|(k, q)| b.get(k).is_some_and(|o| o.nanos == q.nanos))
        })
    };
    let status_hard = status.and_then(|s| s.get("hard")).and_then(Value::as_object);
    if same(status_hard, &hard) && same(earlier_used, &used) && status_hard.is_some_and(|h| h.len() == hard.len()) {
        return None;
    }
    Some(serde_json::json!({"hard": hard, "used": used}))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn statuses_count_what_the_quota_tracks_within_its_scopes() {
        let pods = vec![
            json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}]}}),
            json!({"spec": {"activeDeadlineSeconds": 10, "containers": [{"name": "a",
                "resources": {"requests": {"cpu": "1"}}}]}}),
            json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Failed"}}),
        ];
        let objects = vec![(&Evaluator::Pods, pods)];
        let quota =
            json!({"spec": {"hard": {"pods": "5", "requests.cpu": "2000m", "count/pods": "9", "secrets": "1"}}});
        assert_eq!(
            status_of(&quota, &objects, Recount::Full),
            Some(json!({"hard": {"count/pods": "9", "pods": "5", "requests.cpu": "2", "secrets": "1"},
                "used": {"count/pods": "3", "pods": "2", "requests.cpu": "1500m"}}))
        );
        let scoped = json!({"spec": {"hard": {"pods": "5"}, "scopes": ["NotTerminating"]},
            "status": {"hard": {"pods": "5"}, "used": {"pods": "1"}}});
        assert_eq!(status_of(&scoped, &objects, Recount::Full), None);
        // Kept where no evaluator counts.
        let kept =
            json!({"spec": {"hard": {"secrets": "1"}}, "status": {"hard": {"secrets": "1"}, "used": {"secrets": "4"}}});
        assert_eq!(status_of(&kept, &objects, Recount::Full), None);
        // After creates only, a charge counted nowhere yet stays; after a deletion it goes.
        let charged =
            json!({"spec": {"hard": {"pods": "5"}}, "status": {"hard": {"pods": "5"}, "used": {"pods": "3"}}});
        assert_eq!(status_of(&charged, &objects, Recount::RaiseOnly), None);
        assert_eq!(
            status_of(&charged, &objects, Recount::Full),
            Some(json!({"hard": {"pods": "5"}, "used": {"pods": "2"}}))
        );
    }
}
