//! kube-controller-manager's disruption controller, run by the server: it gives each
//! PodDisruptionBudget its `status` (how many of its pods are expected and healthy, how many
//! disruptions it allows, which evicted pods are still expected to go), which the pods'
//! `eviction` subresource ([`crate::eviction`]) spends; and it clears a pod's `DisruptionTarget`
//! condition that stayed `True` two minutes without the pod being deleted.
//!
//! Invariants, as kube's controller:
//! - a budget selects the pods of its namespace its selector matches (none without a selector,
//!   all with an empty one), whatever their phase;
//! - with an integer `minAvailable`, the pods expected are the pods selected; with
//!   `maxUnavailable` or a percentage, they are the replicas of the pods' controllers
//!   (ReplicationControllers, the Deployments of ReplicaSets, ReplicaSets, StatefulSets, then any
//!   resource with a `scale` subresource), each counted once; pods without a controller count
//!   nothing; percentages round up;
//! - a pod is healthy when it is Ready, not being deleted and not among the budget's disrupted
//!   pods; a disrupted pod is dropped from that list once it is being deleted, gone, or two
//!   minutes past its eviction (when the budget is judged again);
//! - `disruptionsAllowed` is the healthy pods beyond those desired, 0 when no pod is expected;
//!   the `DisruptionAllowed` condition says `SufficientPods` or `InsufficientPods`, its time
//!   moving only when its status changes; `observedGeneration` is the budget's generation;
//! - a budget that cannot be judged (a pod whose controller is missing or has no scale, a bad
//!   percentage) allows no disruption: `SyncFailed` with the reason, its observed generation
//!   left as it was;
//! - a budget is judged again when it changes, when a pod it selects changes, and when one of
//!   its disrupted pods is due (while no budget exists, pod changes are read once a second, for
//!   their `DisruptionTarget` conditions); its status is written only when it changes, as the
//!   controller's service account with the field manager `kube-controller-manager`, as a
//!   compare-and-swap on the version read (a budget changed meanwhile is left to the pass its
//!   change wakes). Changes of the pods' controllers alone do not wake it (as in kube);
//! - it records kube's Events ([`crate::event_recorder`], source `controllermanager`): on a
//!   budget, `NoPods` when it selects none, `CalculateExpectedPodCountFailed` when it cannot be
//!   judged, `UnmanagedPods` when a count by controllers meets pods without one; on a pod,
//!   `NotDeleted` when its eviction is two minutes old, `MultiplePodDisruptionBudgets` when a
//!   change of it finds several budgets selecting it (the first by name is named).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::controller_loop::{Loop, Wakers};
use crate::event_recorder::{EventRecorder, EventType, Involved};
use crate::eviction::{ready, selects_with, terminating};
use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::{Store, WriteOpts};
use crate::watch_cache::EventType as Change;

/// The field manager of the controller's writes.
const MANAGER: &str = "kube-controller-manager";

/// The source of the controller's Events (kube-controller-manager's recorder for it).
const EVENT_SOURCE: &str = "controllermanager";

/// The service account kube-controller-manager runs the controller as.
pub(crate) const SERVICE_ACCOUNT: &str = "disruption-controller";

/// The delays before retrying a failed pass.
const RETRY: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(5));

/// How long an evicted pod is expected to take to be deleted (kube's `DeletionTimeout`).
const DELETION_TIMEOUT: jiff::SignedDuration = jiff::SignedDuration::from_secs(120);

/// How long a pod may keep a `True` `DisruptionTarget` condition without being deleted.
const STALE_DISRUPTION_TIMEOUT: jiff::SignedDuration = jiff::SignedDuration::from_secs(120);

/// How often pod changes are read while no budget is served.
const POD_POLL: jiff::SignedDuration = jiff::SignedDuration::from_secs(1);

/// How many pod events are read at a time.
const READ_BATCH: usize = 1024;

/// The controller over a store's PodDisruptionBudgets.
pub(crate) struct Controller {
    store: Arc<Store>,
    budgets: Arc<ResourceInfo>,
    pods: Arc<ResourceInfo>,
    state: tokio::sync::Mutex<State>,
    /// The earliest time something is due (a disrupted pod, a stale condition).
    wake_at: std::sync::Mutex<Option<tokio::time::Instant>>,
    events: EventRecorder,
}

/// What the controller remembers between passes.
#[derive(Default)]
struct State {
    /// The pods' events are read after this version; None: everything is judged again.
    cursor: Option<u64>,
    /// The cache's rebuild the cursor belongs to (a rebuilt cache is read again whole).
    epoch: u64,
    /// The version of each budget (`ns/name`) last judged.
    judged: HashMap<String, u64>,
    /// Budgets to judge again at a time: their first disrupted pod's deadline.
    recheck: HashMap<String, jiff::Timestamp>,
    /// Pods (`ns/name`) whose `DisruptionTarget` condition turns stale at a time.
    stale: HashMap<String, Stale>,
    /// The budgets last read, with the cache's note of their last change then.
    budgets: Option<(u64, Arc<[Budget]>)>,
    /// The cache's rebuild whose pods were all looked at for budgets they share (a read of
    /// everything again after a failed pass does not look again, as kube's informer does not
    /// list again).
    announced: Option<u64>,
}

/// A budget as last read, with its selector parsed once.
struct Budget {
    obj: Arc<StoredObject>,
    selector: Value,
}

/// A pod whose `DisruptionTarget` condition turns stale.
struct Stale {
    namespace: String,
    name: String,
    /// When it is due (again, after a failed write).
    at: jiff::Timestamp,
    /// The wait after the next failed write.
    backoff: jiff::SignedDuration,
}

/// The first wait after a failed write of a stale condition; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: jiff::SignedDuration = jiff::SignedDuration::from_millis(50);

/// The longest wait between writes of a stale condition that keep failing.
const MAX_BACKOFF: jiff::SignedDuration = jiff::SignedDuration::from_secs(300);

impl Controller {
    /// The controller for `store`; None when it does not serve PodDisruptionBudgets and pods.
    pub fn new(store: Arc<Store>) -> Option<Controller> {
        let registry = store.registry();
        let budgets = registry.find("policy", "v1", "poddisruptionbudgets").cloned()?;
        let pods = registry.find("", "v1", "pods").cloned()?;
        let events = EventRecorder::new(store.clone(), EVENT_SOURCE, MANAGER);
        Some(Controller { store, budgets, pods, state: Default::default(), wake_at: Default::default(), events })
    }

    /// Runs until `stop` turns true.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let lp = Loop {
            name: "disruption-controller",
            retry: RETRY,
            cache: self.store.cache(),
            resync: None,
            wake_at: Some(&self.wake_at),
        };
        let wakers = || Wakers { own: self.budgets.clone(), candidates: vec![self.pods.clone()], registry: false };
        lp.run(wakers, || self.pass(), stop).await;
    }

    /// Reads what changed since the last pass, judges the budgets it concerns and clears the
    /// stale conditions that are due.
    async fn pass(&self) -> Result<Vec<Arc<ResourceInfo>>, ApiError> {
        let mut st = self.state.lock().await;
        let now = jiff::Timestamp::now();
        let changed = match self.changed_pods(&mut st) {
            Ok(c) => c,
            Err(e) => {
                st.cursor = None;
                return Err(e);
            }
        };
        let (changes, touched) = match changed {
            Changed::All(pods) => {
                st.stale.clear();
                for pod in &pods {
                    note_stale(&mut st, pod);
                }
                let first = st.announced != Some(st.epoch);
                st.announced = Some(st.epoch);
                (None, if first { pods } else { Vec::new() })
            }
            Changed::Some(events) => {
                for (pod, _, deleted) in &events {
                    match deleted {
                        true => drop(st.stale.remove(&pod.key)),
                        false => note_stale(&mut st, pod),
                    }
                }
                let touched = events.iter().map(|(pod, _, _)| pod.clone()).collect();
                (Some(events), touched)
            }
        };
        self.clear_stale(&mut st, now).await;
        if let Err(e) = self.judge_budgets(&mut st, changes.as_deref(), &touched, now).await {
            // The changes read are judged again from a fresh read.
            st.cursor = None;
            return Err(e);
        }
        let mut next = st.recheck.values().chain(st.stale.values().map(|s| &s.at)).min().copied();
        // Without budgets, pod changes matter only for their marks, which have two minutes to
        // go stale: they are read every second rather than on every write.
        let budgets = st.budgets.as_ref().is_some_and(|(_, b)| !b.is_empty());
        if !budgets {
            let poll = now + POD_POLL;
            next = Some(next.map_or(poll, |t| t.min(poll)));
        }
        *self.wake_at.lock().unwrap_or_else(|e| e.into_inner()) = next.map(|t| {
            let wait = now.duration_until(t).max(jiff::SignedDuration::ZERO);
            tokio::time::Instant::now() + Duration::try_from(wait).unwrap_or_default()
        });
        Ok(if budgets { vec![self.pods.clone()] } else { Vec::new() })
    }

    /// The pods changed since the last pass (all of them when their events since then are no
    /// longer kept, or the cache was rebuilt).
    fn changed_pods(&self, st: &mut State) -> Result<Changed, ApiError> {
        let cache = self.store.cache();
        let epoch = *cache.reset_epoch().borrow();
        if epoch != st.epoch {
            st.epoch = epoch;
            st.cursor = None;
        }
        if let Some(mut after) = st.cursor {
            let mut changes = Vec::new();
            let mut events = Vec::new();
            loop {
                events.clear();
                if cache.read_events(&self.pods, after, READ_BATCH, &mut events)?.is_err() {
                    st.cursor = None;
                    return self.changed_pods(st);
                }
                for e in &events {
                    changes.push((e.obj.clone(), e.prev.clone(), e.kind == Change::Deleted));
                }
                let Some(last) = events.last() else { break };
                after = last.rv;
                if events.len() < READ_BATCH {
                    break;
                }
            }
            st.cursor = Some(after);
            return Ok(Changed::Some(changes));
        }
        let (rv, pods) = cache.snapshot(&self.pods, None, &Selectors::default())?;
        st.cursor = Some(rv);
        st.judged.clear();
        st.budgets = None;
        Ok(Changed::All(pods))
    }

    /// Sets every stale `DisruptionTarget` condition that is due to `False`; a write that fails
    /// is tried again later, each time after twice the wait before.
    async fn clear_stale(&self, st: &mut State, now: jiff::Timestamp) {
        let due: Vec<(String, String, String)> = st
            .stale
            .iter()
            .filter(|(_, s)| s.at <= now)
            .map(|(k, s)| (k.clone(), s.namespace.clone(), s.name.clone()))
            .collect();
        for (key, ns, name) in due {
            match self.clear_condition(&ns, &name, now).await {
                Ok(()) => drop(st.stale.remove(&key)),
                Err(e) => {
                    tracing::debug!(namespace = %ns, pod = %name, error = %e, "disruption target");
                    if let Some(s) = st.stale.get_mut(&key) {
                        s.at = now + s.backoff;
                        s.backoff = (s.backoff * 2).min(MAX_BACKOFF);
                    }
                }
            }
        }
    }

    /// Writes a pod's `DisruptionTarget` condition `False` if it is still stale.
    async fn clear_condition(&self, ns: &str, name: &str, now: jiff::Timestamp) -> Result<(), ApiError> {
        let Some(pod) = self.store.cache().get(&self.pods, ns, name)? else { return Ok(()) };
        let mut value = pod.value();
        if stale_at(&value).is_none_or(|t| t > now) {
            return Ok(());
        }
        let conditions = value.pointer_mut("/status/conditions").and_then(Value::as_array_mut);
        for c in conditions.into_iter().flatten() {
            if c.get("type").and_then(Value::as_str) == Some(DISRUPTION_TARGET) {
                *c = json!({"type": DISRUPTION_TARGET, "status": "False", "lastProbeTime": null,
                    "lastTransitionTime": crate::object::now_rfc3339()});
                break;
            }
        }
        let opts = WriteOpts::status(false).by(MANAGER);
        match self.store.update(&self.pods, Some(ns), Some(name), value, opts).await {
            // Gone, or changed since: its event brings it back to the next pass.
            Err(e) if e.code == 404 || e.code == 409 => Ok(()),
            r => r.map(drop),
        }
    }

    /// Judges the budgets that changed, that select a pod of `changes` (before or after its
    /// change; every budget when None), or whose disrupted pods are due; a pod of `touched`
    /// (changed, or read whole) that several budgets select gets kube's Event.
    async fn judge_budgets(
        &self,
        st: &mut State,
        changes: Option<&[PodChange]>,
        touched: &[Arc<StoredObject>],
        now: jiff::Timestamp,
    ) -> Result<(), ApiError> {
        // Read again only when they changed (most passes follow pod writes alone).
        let cache = self.store.cache();
        let noted = *cache.subscribe(&self.budgets)?.borrow();
        let budgets = match &st.budgets {
            Some((at, budgets)) if *at == noted => budgets.clone(),
            _ => {
                let (_, read) = cache.snapshot(&self.budgets, None, &Selectors::default())?;
                let budgets: Arc<[Budget]> = read
                    .into_iter()
                    .map(|obj| {
                        let selector = obj.value().pointer("/spec/selector").cloned().unwrap_or(Value::Null);
                        Budget { obj, selector }
                    })
                    .collect();
                st.budgets = Some((noted, budgets.clone()));
                budgets
            }
        };
        if !budgets.is_empty() && !touched.is_empty() {
            self.several_budgets(&budgets, touched);
        }
        let present: std::collections::HashSet<&str> = budgets.iter().map(|b| b.obj.key.as_str()).collect();
        st.judged.retain(|k, _| present.contains(k.as_str()));
        st.recheck.retain(|k, _| present.contains(k.as_str()));
        let mut pods_of: HashMap<String, Vec<Arc<StoredObject>>> = HashMap::new();
        let mut first_error = None;
        for b in budgets.iter() {
            let budget = &b.obj;
            let due = st.recheck.get(&budget.key).is_some_and(|t| *t <= now);
            let dirty = due || st.judged.get(&budget.key) != Some(&budget.rv) || selects_a_change(b, changes);
            if !dirty {
                continue;
            }
            st.recheck.remove(&budget.key);
            let pods = match pods_of.get(&budget.namespace) {
                Some(p) => p,
                None => {
                    let (_, p) =
                        self.store.cache().snapshot(&self.pods, Some(&budget.namespace), &Selectors::default())?;
                    pods_of.entry(budget.namespace.clone()).or_insert(p)
                }
            };
            match self.judge(b, pods, now).await {
                Ok(recheck) => {
                    st.judged.insert(budget.key.clone(), budget.rv);
                    if let Some(t) = recheck {
                        st.recheck.insert(budget.key.clone(), t);
                    }
                }
                Err(e) => {
                    // Judged again on the retry.
                    st.judged.remove(&budget.key);
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Records kube's `MultiplePodDisruptionBudgets` on each pod of `pods` that several of
    /// `budgets` select, naming the first by name.
    fn several_budgets(&self, budgets: &[Budget], pods: &[Arc<StoredObject>]) {
        let mut selectors: HashMap<&str, Vec<&Budget>> = HashMap::new();
        for b in budgets {
            selectors.entry(b.obj.namespace.as_str()).or_default().push(b);
        }
        for pod in pods {
            let Some(in_namespace) = selectors.get(pod.namespace.as_str()) else { continue };
            let mut names: Vec<&str> = in_namespace
                .iter()
                .filter(|b| selects_labels(&b.selector, &pod.labels))
                .map(|b| b.obj.name.as_str())
                .collect();
            if names.len() < 2 {
                continue;
            }
            names.sort_unstable();
            let message = format!(
                "Pod {:?}/{:?} matches multiple PodDisruptionBudgets.  Chose {:?} arbitrarily.",
                pod.namespace, pod.name, names[0]
            );
            let involved = Involved::of(&self.pods, pod);
            self.events.record(&involved, EventType::Warning, "MultiplePodDisruptionBudgets", &message);
        }
    }

    /// Computes a budget's status from its namespace's `pods` and writes it if it changed; when
    /// its first disrupted pod is due. Records kube's Events on the way.
    async fn judge(
        &self,
        b: &Budget,
        pods: &[Arc<StoredObject>],
        now: jiff::Timestamp,
    ) -> Result<Option<jiff::Timestamp>, ApiError> {
        let budget = &b.obj;
        let value = budget.value();
        let selector = &b.selector;
        let (selected, values): (Vec<&Arc<StoredObject>>, Vec<Value>) =
            pods.iter().filter(|p| selects_labels(selector, &p.labels)).map(|p| (p, p.value())).unzip();
        let on_budget = Involved::of(&self.budgets, budget);
        if selected.is_empty() {
            self.events.record(&on_budget, EventType::Normal, "NoPods", "No matching pods found");
        }
        let finder = Finder { store: &self.store, namespace: &budget.namespace };
        let (status, recheck) = match compute(&value, &values, &finder, now) {
            Ok(c) => {
                if c.unmanaged {
                    let message = format!(
                        "Pods selected by this PodDisruptionBudget (selector: {}) were found to be unmanaged. As a \
                         result, the status of the PDB cannot be calculated correctly, which may result in undefined \
                         behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an \
                         integer value.",
                        crate::selector::go_selector(selector)
                    );
                    self.events.record(&on_budget, EventType::Warning, "UnmanagedPods", &message);
                }
                for name in &c.not_deleted {
                    let Some(pod) = selected.iter().find(|p| &p.name == name) else { continue };
                    // (kube names the budget's namespace twice.)
                    let message = format!(
                        "Pod was expected by PDB {}/{} to be deleted but it wasn't",
                        budget.namespace, budget.namespace
                    );
                    self.events.record(&Involved::of(&self.pods, pod), EventType::Warning, "NotDeleted", &message);
                }
                (updated_status(&value, &c), c.recheck)
            }
            Err(message) => {
                let failed = format!("Failed to calculate the number of expected pods: {message}");
                self.events.record(&on_budget, EventType::Warning, "CalculateExpectedPodCountFailed", &failed);
                (Some(failed_status(&value, &message)), None)
            }
        };
        let Some(status) = status else { return Ok(recheck) };
        let failing = status_is_failed(&status);
        match self.write_status(budget, &value, status).await {
            Err(e) if !failing => {
                // As kube's failSafe: a budget whose status cannot be written allows nothing.
                self.write_status(budget, &value, failed_status(&value, &e.message)).await?;
                Err(e)
            }
            r => r.map(|_| recheck),
        }
    }

    /// Writes `status` to the budget `value` (a compare-and-swap on the version read); gone or
    /// changed meanwhile, the change wakes the next pass.
    async fn write_status(&self, budget: &StoredObject, value: &Value, status: Value) -> Result<(), ApiError> {
        let mut value = value.clone();
        if let Some(o) = value.as_object_mut() {
            o.insert("status".into(), status);
        }
        let opts = WriteOpts::status(false).by(MANAGER);
        match self.store.update(&self.budgets, Some(&budget.namespace), Some(&budget.name), value, opts).await {
            Err(e) if e.code == 404 || e.code == 409 => Ok(()),
            r => r.map(drop),
        }
    }
}

/// A pod's change: its state (the last one for a deletion), the one before, whether it was
/// deleted.
type PodChange = (Arc<StoredObject>, Option<Arc<StoredObject>>, bool);

/// Whether the budget selects a pod of `changes` (every budget does when there are no such
/// changes to read, after a full read).
fn selects_a_change(budget: &Budget, changes: Option<&[PodChange]>) -> bool {
    let Some(changes) = changes else { return true };
    let selector = &budget.selector;
    let mut in_namespace = changes.iter().filter(|(p, _, _)| p.namespace == budget.obj.namespace);
    in_namespace.any(|(pod, prev, _)| {
        selects_labels(selector, &pod.labels) || prev.as_ref().is_some_and(|p| selects_labels(selector, &p.labels))
    })
}

/// Whether a budget's selector selects these labels.
fn selects_labels(selector: &Value, labels: &[(String, String)]) -> bool {
    selects_with(selector, |k| labels.iter().find(|(l, _)| l == k).map(|(_, v)| v.as_str()))
}

/// Whether a budget's status is one a failed judgement gives.
fn status_is_failed(status: &Value) -> bool {
    let conditions = status.get("conditions").and_then(Value::as_array);
    conditions.into_iter().flatten().any(|c| c.get("reason").and_then(Value::as_str) == Some("SyncFailed"))
}

/// The pods a pass reads.
enum Changed {
    /// Every pod (the first pass, or after events were missed).
    All(Vec<Arc<StoredObject>>),
    /// The pods' changes since the last pass, in order.
    Some(Vec<PodChange>),
}

/// The condition an eviction (or a preemption) gives a pod.
const DISRUPTION_TARGET: &str = "DisruptionTarget";

/// Records when the `DisruptionTarget` condition of `pod` turns stale, if it does.
fn note_stale(st: &mut State, pod: &StoredObject) {
    st.stale.remove(&pod.key);
    // Only a pod that names the condition is read.
    if memchr::memmem::find(pod.storage_value(), DISRUPTION_TARGET.as_bytes()).is_none() {
        return;
    }
    if let Some(at) = stale_at(&pod.value()) {
        let stale = Stale { namespace: pod.namespace.clone(), name: pod.name.clone(), at, backoff: FIRST_BACKOFF };
        st.stale.insert(pod.key.clone(), stale);
    }
}

/// When the pod's `DisruptionTarget` condition turns stale, if it can: it is `True`, not set by
/// the kubelet, and the pod is neither being deleted nor finished.
fn stale_at(pod: &Value) -> Option<jiff::Timestamp> {
    if terminating(pod) {
        return None;
    }
    let status = pod.get("status")?;
    if matches!(status.get("phase").and_then(Value::as_str), Some("Succeeded" | "Failed")) {
        return None;
    }
    let condition = status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(DISRUPTION_TARGET))?;
    if condition.get("status").and_then(Value::as_str) != Some("True")
        || condition.get("reason").and_then(Value::as_str) == Some("TerminationByKubelet")
    {
        return None;
    }
    // A condition without a time is stale at once.
    let since = condition.get("lastTransitionTime").and_then(Value::as_str).and_then(|t| t.parse().ok());
    Some(since.map_or(jiff::Timestamp::UNIX_EPOCH, |t: jiff::Timestamp| t + STALE_DISRUPTION_TIMEOUT))
}

/// What a budget's pods add up to.
#[derive(Debug, PartialEq)]
struct Computed {
    expected: i64,
    desired: i64,
    healthy: i64,
    allowed: i64,
    /// The disrupted pods still expected to go, with their eviction times as stored.
    disrupted: Map<String, Value>,
    /// When the first of them is due.
    recheck: Option<jiff::Timestamp>,
    /// Whether pods without a controller were met where pods are counted by their controllers.
    unmanaged: bool,
    /// The disrupted pods two minutes past their eviction and not being deleted.
    not_deleted: Vec<String>,
}

/// Finds the controllers of a namespace's pods, and their replicas, in the cache.
struct Finder<'a> {
    store: &'a Store,
    namespace: &'a str,
}

/// A pod's controller as a budget counts it: its uid and its desired replicas.
type Scale = (String, i64);

/// What finds a pod's controller (a cache, or a table in tests).
trait Controllers {
    /// The controller `owner` (a controller reference) names, if it is there; an error when it
    /// cannot be looked up.
    fn scale_of(&self, owner: &Value) -> Result<Option<Scale>, String>;
}

impl Finder<'_> {
    /// A workload of the namespace (every kind the finders read is served in `v1`).
    fn get(&self, group: &str, plural: &str, name: &str) -> Option<Value> {
        let registry = self.store.registry();
        let info = registry.find(group, "v1", plural)?;
        self.store.cache().get(info, self.namespace, name).ok().flatten().map(|o| o.value())
    }
}

impl Controllers for Finder<'_> {
    fn scale_of(&self, owner: &Value) -> Result<Option<Scale>, String> {
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let (api_version, kind, name, uid) =
            (text(owner, "apiVersion"), text(owner, "kind"), text(owner, "name"), text(owner, "uid"));
        let (group, version) = match api_version.split('/').collect::<Vec<_>>()[..] {
            [v] => ("", v),
            [g, v] => (g, v),
            _ => return Err(format!("unexpected GroupVersion string: {api_version}")),
        };
        let with_uid = |v: Option<Value>, uid: &str| v.filter(|o| uid_of(o) == uid);
        let apps = matches!(group, "apps" | "extensions");
        match kind.as_str() {
            "ReplicationController" if group.is_empty() => {
                if let Some(rc) = with_uid(self.get("", "replicationcontrollers", &name), &uid) {
                    return Ok(Some((uid, replicas(&rc))));
                }
            }
            "ReplicaSet" if apps => {
                if let Some(rs) = with_uid(self.get("apps", "replicasets", &name), &uid) {
                    let owner = controller_of(&rs);
                    let by_deployment =
                        owner.is_some_and(|o| o.get("kind").and_then(Value::as_str) == Some("Deployment"));
                    if let Some(o) = owner.filter(|_| by_deployment) {
                        let group = text(o, "apiVersion");
                        let deployment = match group.split('/').next() {
                            Some("apps" | "extensions") => self.get("apps", "deployments", &text(o, "name")),
                            _ => None,
                        };
                        if let Some(d) = with_uid(deployment, &text(o, "uid")) {
                            return Ok(Some((uid_of(&d).to_string(), replicas(&d))));
                        }
                    } else {
                        return Ok(Some((uid, replicas(&rs))));
                    }
                }
            }
            "StatefulSet" if group == "apps" => {
                if let Some(s) = with_uid(self.get("apps", "statefulsets", &name), &uid) {
                    return Ok(Some((uid, replicas(&s))));
                }
            }
            _ => {}
        }
        // Any other controller, through its scale subresource.
        let registry = self.store.registry();
        let Some(info) = registry.each_resource().find(|i| i.group == group && i.version == version && i.kind == kind)
        else {
            return Err(format!("no matches for kind {kind:?} in version {api_version:?}"));
        };
        if info.scale_subresource.is_none() {
            let resource = if group.is_empty() { info.plural.clone() } else { format!("{}.{group}", info.plural) };
            return Err(format!("{resource} does not implement the scale subresource"));
        }
        let Some(obj) = self.store.cache().get(info, self.namespace, &name).ok().flatten() else { return Ok(None) };
        if obj.uid != uid {
            return Ok(None);
        }
        let scale = crate::scale::scale_of(info, &obj).map_err(|e| e.message)?;
        Ok(Some((uid, scale.spec.replicas)))
    }
}

fn uid_of(obj: &Value) -> &str {
    obj.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default()
}

/// A workload's desired replicas (kube defaults them to 1).
fn replicas(obj: &Value) -> i64 {
    obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)
}

/// The object's controller reference, if it has one.
fn controller_of(obj: &Value) -> Option<&Value> {
    let owners = obj.pointer("/metadata/ownerReferences").and_then(Value::as_array)?;
    owners.iter().find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
}

/// What a budget's selected `pods` add up to at `now`; the reason when it cannot be computed.
fn compute(
    budget: &Value,
    pods: &[Value],
    controllers: &dyn Controllers,
    now: jiff::Timestamp,
) -> Result<Computed, String> {
    let spec = budget.get("spec");
    let field = |k: &str| spec.and_then(|s| s.get(k)).filter(|v| !v.is_null());
    let mut unmanaged = false;
    let (expected, desired) = match (field("maxUnavailable"), field("minAvailable")) {
        (Some(max), _) => {
            let expected = expected_scale(pods, controllers, &mut unmanaged)?;
            (expected, (expected - scaled(max, expected)?).max(0))
        }
        (None, Some(min)) if min.is_number() => (pods.len() as i64, min.as_i64().unwrap_or(0)),
        (None, Some(min)) => {
            let expected = expected_scale(pods, controllers, &mut unmanaged)?;
            (expected, scaled(min, expected)?)
        }
        (None, None) => (0, 0),
    };
    let (disrupted, recheck, not_deleted) = disrupted_pods(budget, pods, now);
    let healthy =
        pods.iter().filter(|p| !terminating(p) && !disrupted.contains_key(name_of(p)) && ready(p)).count() as i64;
    let allowed = if expected <= 0 { 0 } else { (healthy - desired).max(0) };
    Ok(Computed { expected, desired, healthy, allowed, disrupted, recheck, unmanaged, not_deleted })
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()
}

/// The replicas of the selected pods' controllers, each counted once (pods without one count
/// nothing, and set `unmanaged`).
fn expected_scale(pods: &[Value], controllers: &dyn Controllers, unmanaged: &mut bool) -> Result<i64, String> {
    let mut counted: HashMap<String, i64> = HashMap::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for pod in pods {
        let Some(owner) = controller_of(pod) else {
            *unmanaged = true;
            continue;
        };
        let uid = owner.get("uid").and_then(Value::as_str).unwrap_or_default();
        if !seen.insert(uid) {
            continue;
        }
        match controllers.scale_of(owner)? {
            Some((uid, replicas)) => {
                counted.insert(uid, replicas);
            }
            None => return Err(format!("found no controllers for pod {:?}", name_of(pod))),
        }
    }
    Ok(counted.values().sum())
}

/// An `IntOrString` of a budget scaled to `total`: a count as it is, a percentage rounded up.
fn scaled(v: &Value, total: i64) -> Result<i64, String> {
    if let Some(n) = v.as_i64() {
        return Ok(n);
    }
    let Some(s) = v.as_str() else { return Err("invalid value for IntOrString: invalid type".into()) };
    let Some(digits) = s.strip_suffix('%') else {
        return Err("invalid value for IntOrString: invalid type: string is not a percentage".into());
    };
    let percent: i64 = digits.parse().map_err(|_| {
        format!("invalid value for IntOrString: invalid value {s:?}: strconv.Atoi: parsing {digits:?}: invalid syntax")
    })?;
    Ok((percent * total + 99).div_euclid(100))
}

/// The budget's disrupted pods still expected to go at `now` (selected, not being deleted, within
/// two minutes of their eviction), when the first of them is due, and those past their two
/// minutes.
fn disrupted_pods(
    budget: &Value,
    pods: &[Value],
    now: jiff::Timestamp,
) -> (Map<String, Value>, Option<jiff::Timestamp>, Vec<String>) {
    let mut kept = Map::new();
    let mut recheck: Option<jiff::Timestamp> = None;
    let mut overdue = Vec::new();
    let Some(stored) = budget.pointer("/status/disruptedPods").and_then(Value::as_object) else {
        return (kept, recheck, overdue);
    };
    for pod in pods.iter().filter(|p| !terminating(p)) {
        let name = name_of(pod);
        let Some(at) = stored.get(name) else { continue };
        let Some(evicted) = at.as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok()) else { continue };
        let due = evicted + DELETION_TIMEOUT;
        if due < now {
            overdue.push(name.to_string());
            continue;
        }
        recheck = Some(recheck.map_or(due, |r| r.min(due)));
        kept.insert(name.to_string(), at.clone());
    }
    (kept, recheck, overdue)
}

/// The budget's status for `c`; None when it has it.
fn updated_status(budget: &Value, c: &Computed) -> Option<Value> {
    let status = budget.get("status").and_then(Value::as_object).cloned().unwrap_or_default();
    let generation = budget.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
    let int = |k: &str| status.get(k).and_then(Value::as_i64).unwrap_or(0);
    let stored_disrupted = status.get("disruptedPods").and_then(Value::as_object).cloned().unwrap_or_default();
    let (want_status, want_reason) = condition_for(c.allowed);
    let up_to_date = status.get("conditions").and_then(Value::as_array).into_iter().flatten().any(|cond| {
        cond.get("type").and_then(Value::as_str) == Some(CONDITION)
            && cond.get("status").and_then(Value::as_str) == Some(want_status)
            && cond.get("reason").and_then(Value::as_str) == Some(want_reason)
    });
    if int("currentHealthy") == c.healthy
        && int("desiredHealthy") == c.desired
        && int("expectedPods") == c.expected
        && int("disruptionsAllowed") == c.allowed
        && stored_disrupted == c.disrupted
        && int("observedGeneration") == generation
        && up_to_date
    {
        return None;
    }
    let mut status = status;
    status.insert("currentHealthy".into(), c.healthy.into());
    status.insert("desiredHealthy".into(), c.desired.into());
    status.insert("expectedPods".into(), c.expected.into());
    status.insert("disruptionsAllowed".into(), c.allowed.into());
    match c.disrupted.is_empty() {
        true => status.remove("disruptedPods"),
        false => status.insert("disruptedPods".into(), Value::Object(c.disrupted.clone())),
    };
    status.insert("observedGeneration".into(), generation.into());
    set_condition(&mut status, want_status, want_reason, "", generation);
    Some(Value::Object(status))
}

/// The budget's status when it cannot be judged: no disruption allowed, for `message`.
fn failed_status(budget: &Value, message: &str) -> Value {
    let mut status = budget.get("status").and_then(Value::as_object).cloned().unwrap_or_default();
    status.insert("disruptionsAllowed".into(), 0.into());
    let observed = status.get("observedGeneration").and_then(Value::as_i64).unwrap_or(0);
    set_condition(&mut status, "False", "SyncFailed", message, observed);
    Value::Object(status)
}

/// The budget's condition.
const CONDITION: &str = "DisruptionAllowed";

/// The `DisruptionAllowed` condition's status and reason for `allowed` disruptions.
fn condition_for(allowed: i64) -> (&'static str, &'static str) {
    match allowed > 0 {
        true => ("True", "SufficientPods"),
        false => ("False", "InsufficientPods"),
    }
}

/// Sets the `DisruptionAllowed` condition (its time moves only with its status).
fn set_condition(status: &mut Map<String, Value>, st: &str, reason: &str, message: &str, observed: i64) {
    let mut condition = Map::new();
    condition.insert("type".into(), CONDITION.into());
    condition.insert("status".into(), st.into());
    if observed != 0 {
        condition.insert("observedGeneration".into(), observed.into());
    }
    condition.insert("reason".into(), reason.into());
    condition.insert("message".into(), message.into());
    crate::object::set_condition(status, condition);
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Table(Vec<(&'static str, Result<Option<Scale>, String>)>);

    impl Controllers for Table {
        fn scale_of(&self, owner: &Value) -> Result<Option<Scale>, String> {
            let uid = owner["uid"].as_str().unwrap();
            self.0.iter().find(|(u, _)| *u == uid).map_or(Ok(None), |(_, r)| r.clone())
        }
    }

    fn pod(name: &str, owner: Option<&str>, ready: bool) -> Value {
        let owners = owner.map(|u| {
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": u,
            "controller": true}])
        });
        json!({"metadata": {"name": name, "ownerReferences": owners},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    fn budget(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "b", "generation": 2}, "spec": spec, "status": status})
    }

    fn now() -> jiff::Timestamp {
        "2026-01-01T00:10:00Z".parse().unwrap()
    }

    #[test]
    fn budgets_count_as_kubes_controller_counts() {
        let table = Table(vec![("rs", Ok(Some(("d".into(), 4))))]);
        let pods = vec![pod("a", Some("rs"), true), pod("b", Some("rs"), true), pod("c", Some("rs"), false)];
        let at = |spec: Value| {
            let c = compute(&budget(spec, json!({})), &pods, &table, now()).unwrap();
            (c.expected, c.desired, c.healthy, c.allowed)
        };
        // An integer minAvailable counts the pods selected; percentages the controllers' replicas,
        // rounded up.
        assert_eq!(at(json!({"minAvailable": 1})), (3, 1, 2, 1));
        assert_eq!(at(json!({"minAvailable": "50%"})), (4, 2, 2, 0));
        assert_eq!(at(json!({"maxUnavailable": 1})), (4, 3, 2, 0));
        assert_eq!(at(json!({"maxUnavailable": "25%"})), (4, 3, 2, 0));
        assert_eq!(at(json!({"maxUnavailable": "60%"})), (4, 1, 2, 1));
        assert_eq!(at(json!({})), (0, 0, 2, 0));
        // Pods without a controller count nothing; a missing controller fails the budget.
        let bare = vec![pod("x", None, true)];
        let c = compute(&budget(json!({"maxUnavailable": 1}), json!({})), &bare, &table, now()).unwrap();
        assert_eq!((c.expected, c.allowed), (0, 0));
        let lost = vec![pod("y", Some("gone"), true)];
        let e = compute(&budget(json!({"maxUnavailable": 1}), json!({})), &lost, &table, now()).unwrap_err();
        assert_eq!(e, "found no controllers for pod \"y\"");
        assert_eq!(
            scaled(&json!("x%"), 3).unwrap_err(),
            "invalid value for IntOrString: invalid value \"x%\": strconv.Atoi: parsing \"x\": invalid syntax"
        );
    }

    #[test]
    fn disrupted_pods_stay_unhealthy_until_deleted_or_due() {
        let table = Table(vec![]);
        let pods = vec![pod("a", None, true), pod("b", None, true)];
        let status = json!({"disruptedPods": {"a": "2026-01-01T00:09:00Z", "b": "2026-01-01T00:07:00Z",
            "gone": "2026-01-01T00:09:30Z"}});
        let c = compute(&budget(json!({"minAvailable": 1}), status), &pods, &table, now()).unwrap();
        assert_eq!(c.disrupted, json!({"a": "2026-01-01T00:09:00Z"}).as_object().unwrap().clone());
        assert_eq!(c.recheck, Some("2026-01-01T00:11:00Z".parse().unwrap()));
        assert_eq!((c.healthy, c.allowed), (1, 0));
    }

    #[test]
    fn statuses_are_written_when_they_change() {
        let b = budget(json!({"minAvailable": 1}), json!({}));
        let c = Computed {
            expected: 2,
            desired: 1,
            healthy: 2,
            allowed: 1,
            disrupted: Map::new(),
            recheck: None,
            unmanaged: false,
            not_deleted: Vec::new(),
        };
        let status = updated_status(&b, &c).unwrap();
        assert_eq!(status["observedGeneration"], 2);
        assert_eq!(status["disruptionsAllowed"], 1);
        let condition = &status["conditions"][0];
        assert_eq!(
            (&condition["reason"], &condition["status"], &condition["message"]),
            (&json!("SufficientPods"), &json!("True"), &json!(""))
        );
        let b = budget(json!({"minAvailable": 1}), status);
        assert_eq!(updated_status(&b, &c), None);
        // A failure keeps the observed generation and allows nothing.
        let failed = failed_status(&b, "found no controllers for pod \"y\"");
        assert_eq!((failed["disruptionsAllowed"].as_i64(), failed["observedGeneration"].as_i64()), (Some(0), Some(2)));
        assert_eq!(failed["conditions"][0]["reason"], "SyncFailed");
        assert!(updated_status(&budget(json!({}), failed), &c).is_some(), "a failed condition is never up to date");
    }

    #[test]
    fn stale_disruption_targets_are_found() {
        let with = |condition: Value, extra: Value| {
            let mut p = json!({"metadata": {"name": "p"}, "status": {"phase": "Running", "conditions": [condition]}});
            if let Value::Object(m) = extra {
                for (k, v) in m {
                    p["metadata"][k] = v;
                }
            }
            stale_at(&p)
        };
        let marked = json!({"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
            "lastTransitionTime": "2026-01-01T00:00:00Z"});
        assert_eq!(with(marked.clone(), json!({})), Some("2026-01-01T00:02:00Z".parse().unwrap()));
        assert_eq!(with(marked, json!({"deletionTimestamp": "2026-01-01T00:00:00Z"})), None);
        let kubelet = json!({"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"});
        assert_eq!(with(kubelet, json!({})), None);
    }
}
