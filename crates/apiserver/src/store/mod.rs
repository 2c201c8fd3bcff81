//! The REST layer in front of the storage (kube-apiserver's registry store): validates writes,
//! fills the server-owned metadata, turns GET/PUT/PATCH/DELETE into compare-and-swap writes on
//! the storage, and answers reads from the watch cache.
//!
//! Invariants: a write either commits exactly one storage revision or changes nothing (every check
//! runs before the storage write, which is itself one compare-and-swap); an update whose object
//! differs from the stored one only in the times of its `managedFields` entries changes nothing
//! (kube-apiserver's `IgnoreManagedFieldsTimestampsTransformer`); an update computes its
//! result from the version it compares against, and starts over from the storage's newer version
//! when another write got there first (or fails with 409 when the request carried a
//! resourceVersion precondition). Reads without a resourceVersion are consistent: they wait until
//! the cache has reached the storage's current revision, and read the storage itself if it does
//! not in time.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Map, Value};

use crate::cache::{ListAt, ListPage, WatchCache};
use crate::defaults::{self, ClusterIps};
use crate::delete_options::DeleteOpts;
use crate::field_validation::{self, FieldValidation};
use crate::graceful_deletion::Grace;
use crate::managed_fields::{self, ManagerKey, Operation};
use crate::name_generator::{self, NameGenerator};
use crate::namespaces;
use crate::object::{self, StoredObject, Template};
use crate::registry::{Registry, ResourceInfo};
use crate::selector::Selectors;
use crate::service_account_admission;
use crate::status::ApiError;
use crate::storage::keys::KeyLayout;
use crate::storage::{RangeRequest, Storage, StorageError};
use crate::strategy;
use crate::validation;

mod body_checks;
mod patch;
mod tracking;

use body_checks::meta_mut;
pub(crate) use body_checks::{
    check_api_version, check_body, check_decodable, check_type_meta, meta_str, parse_rv_field, resolve_namespace,
    unrecognized,
};
pub use patch::PatchType;
pub(crate) use patch::{
    DecodedPatch, invalid_patch, refuse_custom_resource_strategic, unsupported_custom_resource_patch,
};
pub(crate) use tracking::Tracking;
use tracking::{ZERO_OBJECT, track};

pub use crate::cache::HistoryConfig;
pub use crate::strategy::Target;

/// Options of updates and patches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteOpts {
    /// What the write changes: the object, its `status` subresource (only `status` changes) or a
    /// namespace's `finalize` subresource (see [`crate::strategy`]).
    pub target: Target,
    /// Validate and compute the result without storing it (`dryRun=All`).
    pub dry_run: bool,
    /// What to do with fields the type does not know in a patched object.
    pub validation: FieldValidation,
    /// Who writes, as `managedFields` records it (see [`managed_fields::manager_name`]; empty:
    /// `unknown`).
    pub field_manager: String,
    /// The write carries out a request admission already judged as another operation (a pod's
    /// eviction): it is not offered to admission again.
    pub(crate) admitted: bool,
}

impl WriteOpts {
    /// A write to the object itself.
    pub fn main(dry_run: bool) -> Self {
        WriteOpts { target: Target::Main, dry_run, ..Default::default() }
    }

    /// A write to the `status` subresource.
    pub fn status(dry_run: bool) -> Self {
        WriteOpts { target: Target::Status, dry_run, ..Default::default() }
    }

    /// The same options with `manager` as the field manager.
    pub fn by(mut self, manager: &str) -> Self {
        self.field_manager = manager.to_string();
        self
    }
}

/// How a create was asked for: a POST, or a write to an object that did not exist (an apply, a
/// PUT of a kind kube creates on update), which kube authorizes as `create` too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CreateVia {
    /// A POST.
    Post,
    /// An apply or a PUT.
    Write,
}

/// How many creates of one [`Store::create_many`] call are sent to the storage at once: enough
/// for durable backends to commit them together.
const CREATES_IN_FLIGHT: usize = 256;

/// The REST layer (see the module documentation). Cheap to share via `Arc`.
pub struct Store {
    storage: Arc<dyn Storage>,
    cache: Arc<WatchCache>,
    layout: KeyLayout,
    rv_wait: Duration,
    /// The highest revision of a write acknowledged by this server.
    last_write: AtomicU64,
    /// The highest revision of a LimitRange or StorageClass this server wrote (admission reads
    /// them from the cache once it holds that revision).
    admission_inputs_written: AtomicU64,
    /// The highest revision of a CustomResourceDefinition this server wrote (requests wait until
    /// the cache, whose definitions the served kinds follow, holds it).
    definitions_written: AtomicU64,
    /// The core/v1 namespaces resource, when served: then namespaced objects are created only in
    /// existing namespaces that are not terminating.
    namespaces: Option<Arc<ResourceInfo>>,
    /// The core/v1 services resource, when served (its cluster IPs are allocated here).
    services: Option<Arc<ResourceInfo>>,
    /// networking.k8s.io/v1 ipaddresses, when served: a Service's cluster IP is recorded as one
    /// ([`crate::cluster_ip_addresses`]).
    ip_addresses: Option<Arc<ResourceInfo>>,
    /// networking.k8s.io/v1 servicecidrs, when served: the ranges a Service may ask addresses of.
    service_cidrs: Option<Arc<ResourceInfo>>,
    /// Cluster IPs given to Services.
    cluster_ips: ClusterIps,
    /// Node ports given to Services.
    node_ports: crate::reservations::Reservations,
    /// Whether a garbage collector runs: deletions then give objects its finalizers.
    garbage_collection: bool,
    gc_finalizers: bool,
    event_ttl: Duration,
    /// The resourceVersion up to which the garbage collector has judged every change.
    gc_progress: tokio::sync::watch::Sender<u64>,
    /// The per-namespace locks of quota admission and recounts.
    quota_gates: crate::resource_quota::Gates,
    /// The names of objects created with `generateName`.
    names: NameGenerator,
    /// Whether kube's ServiceAccount admission runs.
    service_account_admission: bool,
    /// The names of the service account volumes admission adds (not seeded: they do not move
    /// the names `generateName` gives).
    volume_names: NameGenerator,
}

/// One LIST page request.
#[derive(Debug, Clone, Copy)]
pub struct ListQuery<'a> {
    /// The namespace, if any.
    pub ns: Option<&'a str>,
    /// The state to read.
    pub at: ListAt,
    /// The first key to consider (inclusive).
    pub start: Option<&'a str>,
    /// At most this many items (0: all).
    pub limit: usize,
    /// Selectors.
    pub sel: &'a Selectors,
    /// Whether the read must see every write acknowledged before it (no resourceVersion given).
    pub consistent: bool,
}

/// How a create's single object was named: from its `generateName` (`generated`), and whether
/// it has one at all.
#[derive(Default)]
struct Named {
    generated: bool,
    generate_name: bool,
}

/// What one compare-and-swap attempt of an update gave.
pub(crate) enum Attempt {
    Done(Arc<StoredObject>),
    /// Another write got there first: its version (the next attempt starts again from the
    /// request's body).
    Retry(Arc<StoredObject>),
}

/// A create's object once mutating admission is done with it ([`Store::mutate_create`]), and
/// what its admission read, for [`Store::finish_create`].
#[derive(Clone)]
struct Mutated {
    obj: Map<String, Value>,
    ns: String,
    now: String,
    /// It carried a resourceVersion kube's storage refuses on a create.
    versioned: bool,
    limit_ranges: Vec<Value>,
    classes: Vec<Value>,
    /// The service account admission looked up for a pod.
    account: Option<Value>,
}

/// The cluster IPs and node ports Services have, read from the cache once per request.
#[derive(Default)]
struct InUse {
    cluster_ips: Option<HashSet<u32>>,
    node_ports: Option<HashSet<u32>>,
    /// Quota charges of the objects being created, held until they are stored.
    charges: crate::resource_quota::Charges,
}

/// The cluster IP among a Service's field-selector values.
fn cluster_ip<'a>(mut fields: impl Iterator<Item = &'a (String, String)>) -> Option<std::net::Ipv4Addr> {
    fields.find(|(f, _)| f == "spec.clusterIP").and_then(|(_, ip)| defaults::ipv4_of(ip))
}

/// kube's refusal of the cluster IP a Service (`name`, its spec `spec`) asked for.
fn ip_refused(info: &ResourceInfo, name: &str, spec: &Value, detail: &str) -> ApiError {
    // kube shows the addresses asked for, the one it could not give as written.
    let shown = crate::structural::go_json(spec.get("clusterIPs").unwrap_or(&Value::Null));
    let written = spec.get("clusterIP").and_then(Value::as_str).unwrap_or_default();
    let msg = format!("Invalid value: {shown}: failed to allocate IP {written}: {detail}");
    ApiError::invalid_object(&info.group, &info.kind, name, "spec.clusterIPs", "FieldValueInvalid", &msg)
}

/// Why a Service's address could not be recorded as an IPAddress.
enum Unrecorded {
    /// Another IPAddress holds it.
    Taken,
    /// The IPAddress's create failed.
    Failed(ApiError),
}

impl Unrecorded {
    /// kube's answer for the Service `name` (its spec `spec`): an address it asked for is
    /// refused with the reason (422), one the server chose is an internal error (500).
    fn answer(self, info: &ResourceInfo, name: &str, spec: &Value, requested: bool) -> ApiError {
        let detail = match self {
            Unrecorded::Taken => "provided IP is already allocated".to_string(),
            Unrecorded::Failed(e) => e.message,
        };
        match requested {
            true => ip_refused(info, name, spec, &detail),
            false => ApiError::internal(&format!("failed to allocate a serviceIP: {detail}")),
        }
    }
}

/// How many times a create chooses a Service's address again when the one it chose was
/// recorded for another meanwhile (kube's allocator tries the next address).
const ALLOCATION_ATTEMPTS: usize = 8;

/// Whether `s` is a resourceVersion kube's versioner reads as one other than 0.
fn is_version(s: &str) -> bool {
    parse_rv_field(s).is_ok_and(|v| v != 0)
}

fn has_finalizers(meta: &Map<String, Value>) -> bool {
    meta.get("finalizers").and_then(Value::as_array).is_some_and(|a| !a.is_empty())
}

/// A patched object must keep the URL's namespace and name, as kube's patch handler judges it:
/// the namespace first (`EnsureObjectNamespaceMatchesRequestNamespace`; `ns` is empty for a
/// cluster-scoped resource), then the name (`checkName`).
pub(crate) fn check_patched_name(obj: &Map<String, Value>, name: &str, ns: &str) -> Result<(), ApiError> {
    if !ns.is_empty() && meta_str(obj, "namespace").is_some_and(|n| !n.is_empty() && n != ns) {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    match meta_str(obj, "name").unwrap_or_default() {
        n if n == name => Ok(()),
        n if n.is_empty() => Err(ApiError::bad_request(format!(
            "the name of the object ({name} based on URL) was undeterminable: name must be provided"
        ))),
        n => Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        ))),
    }
}

/// kube's 409 for a create of a name `stored` holds: "object is being deleted: …" when it is
/// being deleted (a name cannot be taken again before its object is gone).
fn already_exists(info: &ResourceInfo, name: &str, stored: Option<&StoredObject>) -> ApiError {
    let mut e = ApiError::already_exists(&info.group, &info.plural, name);
    if stored.is_some_and(|o| o.kept.iter().any(|(k, _)| *k == "deletionTimestamp")) {
        e.message = format!("{BEING_DELETED}{}", e.message);
    }
    e
}

/// What kube's store puts in front of an AlreadyExists message when the name's object is being
/// deleted.
pub(crate) const BEING_DELETED: &str = "object is being deleted: ";

/// A storage failure as the Status kube-apiserver answers with.
fn storage_error(e: StorageError, info: &ResourceInfo, name: &str, operation: &str) -> ApiError {
    match e {
        StorageError::NotFound => ApiError::not_found(&info.group, &info.plural, name),
        StorageError::AlreadyExists => ApiError::already_exists(&info.group, &info.plural, name),
        StorageError::Conflict { .. } => ApiError::conflict(&info.group, &info.plural, name),
        StorageError::Compacted { .. } => ApiError::expired("The resourceVersion for the provided list is too old."),
        StorageError::FutureRevision { requested, current } => ApiError::too_large_rv(requested, current),
        StorageError::Unavailable(msg) => {
            tracing::warn!(resource = %info.plural, operation, error = %msg, "storage unavailable");
            ApiError::storage_timeout(&info.group, &info.plural, operation)
        }
        StorageError::Internal(msg) => ApiError::internal(&msg),
    }
}

impl Store {
    /// A store writing to `storage` and reading from `cache`.
    pub fn new(storage: Arc<dyn Storage>, cache: Arc<WatchCache>, rv_wait: Duration) -> Self {
        let layout = cache.layout().clone();
        let registry = cache.registry();
        let namespaces = registry.all().iter().find(|i| namespaces::is_namespaces(i)).cloned();
        let services = registry.all().iter().find(|i| defaults::is_service(i)).cloned();
        let networking = |plural: &str| registry.find(crate::service_cidr::GROUP, "v1", plural).cloned();
        Store {
            ip_addresses: networking(crate::service_cidr::IP_ADDRESSES),
            service_cidrs: networking(crate::service_cidr::SERVICE_CIDRS),
            storage,
            cache,
            layout,
            rv_wait,
            last_write: AtomicU64::new(0),
            admission_inputs_written: AtomicU64::new(0),
            definitions_written: AtomicU64::new(0),
            quota_gates: Default::default(),
            namespaces,
            services,
            cluster_ips: ClusterIps::default(),
            node_ports: crate::node_ports::reservations(),
            garbage_collection: false,
            gc_finalizers: false,
            event_ttl: Duration::ZERO,
            gc_progress: tokio::sync::watch::channel(0).0,
            names: NameGenerator::default(),
            service_account_admission: true,
            volume_names: NameGenerator::default(),
        }
    }

    /// Makes the names of objects created with `generateName` follow from `seed`: a run that
    /// creates the same objects in the same order names them alike.
    pub fn with_name_seed(mut self, seed: u64) -> Self {
        self.names = NameGenerator::seeded(seed);
        self
    }

    /// The name a create stores, as kube's `BeforeCreate` gives it: the object's own, else one
    /// made from `generateName` (then `generated` is set); written into the object. 422 when
    /// there is neither.
    fn name_for_create(
        &self,
        info: &ResourceInfo,
        obj: &mut Map<String, Value>,
        generated: &mut bool,
    ) -> Result<String, ApiError> {
        *generated = false;
        let name = match (meta_str(obj, "name"), meta_str(obj, "generateName")) {
            (Some(n), _) => n,
            // kube's IPAddress strategy names one by its generateName as it is.
            (None, Some(g))
                if crate::service_cidr::judges(info) && info.plural == crate::service_cidr::IP_ADDRESSES =>
            {
                g
            }
            (None, Some(g)) => {
                *generated = true;
                self.names.generate(&g)
            }
            // kube's LimitRange strategy names a nameless one with a UUID.
            (None, None) if crate::limit_ranger::is_limit_ranges(info) => object::new_uid(),
            (None, None) => return Err(name_required(info)),
        };
        // (The name is judged with the rest of the object's metadata: `crate::object_meta`.)
        meta_mut(obj).insert("name".into(), name.clone().into());
        Ok(name)
    }

    /// Runs the garbage collector (see [`crate::ApiServerBuilder::garbage_collector`]).
    pub fn with_garbage_collection(mut self, on: bool) -> Self {
        self.garbage_collection = on;
        self
    }

    /// Has deletions give objects the garbage collector's finalizers (`orphan`,
    /// `foregroundDeletion`), as kube-apiserver does with `--enable-garbage-collector` (its
    /// default); a namespace gets them either way.
    pub fn with_gc_finalizers(mut self, on: bool) -> Self {
        self.gc_finalizers = on;
        self
    }

    /// Has Events expire `ttl` after their last write (zero: kept; see [`crate::event_ttl`]).
    pub fn with_event_ttl(mut self, ttl: Duration) -> Self {
        self.event_ttl = ttl;
        self
    }

    /// Runs kube's ServiceAccount admission plugin on pods created, or not.
    pub fn with_service_account_admission(mut self, yes: bool) -> Self {
        self.service_account_admission = yes;
        self
    }

    /// How long Events are kept after their last write (zero: for good).
    pub fn event_ttl(&self) -> Duration {
        self.event_ttl
    }

    /// Authorizes requests in `mode`.
    pub fn with_authorization(self, mode: crate::authorizer::AuthorizationMode) -> Self {
        self.cache.set_authorization(mode);
        self
    }

    /// How requests are authorized.
    pub fn authorization(&self) -> crate::authorizer::AuthorizationMode {
        self.cache.authorization()
    }

    /// Whether the garbage collector runs.
    pub fn garbage_collection(&self) -> bool {
        self.garbage_collection
    }

    /// The resourceVersion up to which the garbage collector has read every change and made
    /// every judgement those changes called for (its own writes included), as it publishes it.
    pub fn garbage_collector_progress(&self) -> &tokio::sync::watch::Sender<u64> {
        &self.gc_progress
    }

    /// The core/v1 namespaces resource, if served.
    pub fn namespaces_info(&self) -> Option<&Arc<ResourceInfo>> {
        self.namespaces.as_ref()
    }

    /// The served resources.
    pub fn registry(&self) -> Arc<Registry> {
        self.cache.registry()
    }

    /// The watch cache.
    pub fn cache(&self) -> &Arc<WatchCache> {
        &self.cache
    }

    /// The storage.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The newest resourceVersion this server knows: its cache's, or its last write's.
    pub fn resource_version(&self) -> u64 {
        self.cache.resource_version().max(self.last_write.load(Ordering::Acquire))
    }

    fn wrote(&self, info: &ResourceInfo, obj: StoredObject) -> Arc<StoredObject> {
        let obj = Arc::new(obj);
        self.noted(info, obj.rv);
        self.cache.hint(obj.clone());
        obj
    }

    /// Records a write of `info` acknowledged at revision `rev`.
    fn noted(&self, info: &ResourceInfo, rev: u64) {
        self.last_write.fetch_max(rev, Ordering::AcqRel);
        if crate::limit_ranger::is_limit_ranges(info)
            || info.group == "storage.k8s.io" && info.plural == "storageclasses"
        {
            self.admission_inputs_written.fetch_max(rev, Ordering::AcqRel);
        }
        if crate::crd::is_crds(info) {
            self.definitions_written.fetch_max(rev, Ordering::AcqRel);
        }
    }

    /// The per-namespace locks of quota admission and recounts.
    pub(crate) fn quota_gates(&self) -> &crate::resource_quota::Gates {
        &self.quota_gates
    }

    /// Waits until the cache holds every LimitRange and StorageClass this server wrote, which
    /// admission plugins read from it (a cache that does not catch up in time is read as it is).
    /// Those written through another server arrive as the cache follows the storage, as kube's
    /// informers' do (kube's LimitRanger also lists a namespace whose informer shows none, at most
    /// every 30 seconds).
    pub(crate) async fn admission_view(&self) {
        let written = self.admission_inputs_written.load(Ordering::Acquire);
        if written != 0 && written > self.cache.resource_version() {
            self.cache.wait_for_rv(written, self.rv_wait).await;
        }
    }

    /// Waits until the cache holds every CustomResourceDefinition this server wrote, so that a
    /// request after a definition's change is served by the kinds as changed (a cache that does
    /// not catch up in time is read as it is). kube-apiserver applies a change a moment after
    /// answering it; here a client that saw its write answered sees it in force.
    pub(crate) async fn definitions_view(&self) {
        let written = self.definitions_written.load(Ordering::Acquire);
        if written != 0 && written > self.cache.resource_version() {
            self.cache.wait_for_rv(written, self.rv_wait).await;
        }
    }

    /// The LimitRanges of namespace `ns`, by name, from the cache (see [`Self::admission_view`]).
    pub(crate) async fn limit_ranges(&self, ns: &str) -> Result<Vec<Value>, ApiError> {
        let registry = self.cache.registry();
        let Some(info) = registry.find("", "v1", "limitranges") else { return Ok(Vec::new()) };
        self.admission_view().await;
        // A list comes in key order: within a namespace, by name.
        let (_, all) = self.cache.snapshot(info, Some(ns), &Selectors::default())?;
        Ok(all.iter().map(|r| r.value()).collect())
    }

    /// Whether kube's ServiceAccount admission judges a create of `info` (pods, when service
    /// accounts are served).
    pub(crate) fn admits_service_accounts(&self, info: &ResourceInfo) -> bool {
        self.service_account_admission
            && info.is_core("pods")
            && self.cache.registry().find("", "v1", "serviceaccounts").is_some()
    }

    /// A name for a service account volume (not from the seeded generator: these names do not
    /// move the names `generateName` gives).
    pub(crate) fn volume_name(&self, prefix: &str) -> String {
        self.volume_names.generate(prefix)
    }

    /// Waits until the cache holds every write acknowledged before the call (by any server of
    /// the storage). False when it did not in time (then read the storage).
    pub async fn fresh(&self) -> Result<bool, ApiError> {
        self.cache.check_ready()?;
        let rev = self.storage.current_revision().await.map_err(|e| match e {
            StorageError::Unavailable(m) => {
                tracing::warn!(error = %m, "consistent read: storage unavailable");
                ApiError::storage_timeout("", "", "list")
            }
            other => ApiError::internal(&other.to_string()),
        })?;
        Ok(self.cache.wait_for_rv(rev, self.rv_wait).await)
    }

    fn parse_kv(&self, info: &ResourceInfo, kv: &crate::storage::KeyValue) -> Result<Arc<StoredObject>, ApiError> {
        let (ns, name) =
            self.layout.parse(info, &kv.key).ok_or_else(|| ApiError::internal("a key of another resource"))?;
        object::from_storage(info, ns, name, kv.value.clone(), kv.mod_revision)
            .map(Arc::new)
            .map_err(|e| ApiError::internal(&format!("stored object {}: {e}", kv.key)))
    }

    /// The version of an object a write starts from: the cache's (which may be stale: the
    /// compare-and-swap then fails and reports the newer one), or the storage's when the cache does
    /// not have it (yet). The flag says whether it is known to be current.
    pub(crate) async fn current(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
    ) -> Result<(Arc<StoredObject>, bool), ApiError> {
        if self.cache.readiness() == crate::cache::Readiness::Ready
            && let Some(o) = self.cache.get(info, ns, name)?
        {
            return Ok((crate::conversion::one_served(info, o).await?, false));
        }
        self.stored(info, ns, name).await.map(|o| (o, true))
    }

    /// When `old` came from the cache (`is_current` false) and the storage holds another
    /// version, that version: a request about to answer without writing checks it is not
    /// answering on a stale object. 404 when the storage holds none.
    async fn newer_than_cached(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        old: &StoredObject,
        is_current: bool,
    ) -> Result<Option<Arc<StoredObject>>, ApiError> {
        if is_current {
            return Ok(None);
        }
        let stored = self.stored(info, ns, name).await?;
        Ok((stored.rv != old.rv).then_some(stored))
    }

    /// The storage's version of an object.
    pub(crate) async fn stored(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let key = self.layout.object_key(info, ns, name);
        let o = match self.storage.get(&key).await {
            Ok(Some(kv)) => self.parse_kv(info, &kv)?,
            Ok(None) => return Err(ApiError::not_found(&info.group, &info.plural, name)),
            Err(e) => return Err(storage_error(e, info, name, "get")),
        };
        crate::conversion::one_served(info, o).await
    }

    /// The version a failed compare-and-swap reported.
    async fn conflicted(
        &self,
        info: &ResourceInfo,
        name: &str,
        e: StorageError,
        op: &str,
    ) -> Result<Arc<StoredObject>, ApiError> {
        match e {
            StorageError::Conflict { current: Some(kv) } => {
                crate::conversion::one_served(info, self.parse_kv(info, &kv)?).await
            }
            StorageError::Conflict { current: None } | StorageError::NotFound => {
                Err(ApiError::not_found(&info.group, &info.plural, name))
            }
            other => Err(storage_error(other, info, name, op)),
        }
    }

    /// Creates an object. `url_ns` is the namespace from the URL, if any.
    pub async fn create(
        &self,
        info: &ResourceInfo,
        url_ns: Option<&str>,
        body: Value,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let mut objs = self.create_many(info, url_ns, vec![body], false, "").await?;
        objs.pop().ok_or_else(|| ApiError::internal("no object created"))
    }

    /// Checks that objects may be created in namespace `ns`, as kube-apiserver's
    /// NamespaceLifecycle admission does: 404 when it does not exist, 403 when it is being
    /// terminated. The watch cache answers; the storage only when the cache does not have the
    /// namespace (it may not have seen it yet). `name` is the object's, for the 403.
    pub(crate) async fn admit_create(&self, info: &ResourceInfo, ns: &str, name: &str) -> Result<(), ApiError> {
        let Some(ns_info) = &self.namespaces else { return Ok(()) };
        if !info.namespaced {
            return Ok(());
        }
        let cached = match self.cache.readiness() {
            crate::cache::Readiness::Ready => self.cache.get(ns_info, "", ns)?,
            crate::cache::Readiness::Initializing => None,
        };
        let namespace = match cached {
            Some(o) => o,
            None => match self.stored(ns_info, "", ns).await {
                Ok(o) => {
                    // Admission reads the namespace (its labels, for selectors) from the cache:
                    // let the cache catch up with it first.
                    self.cache.wait_for_rv(o.rv, self.rv_wait).await;
                    o
                }
                Err(e) if e.code == 404 => return Err(namespaces::not_found(ns)),
                Err(e) => return Err(e),
            },
        };
        if namespaces::is_terminating(&namespace) {
            return Err(namespaces::terminating(info, name, ns));
        }
        Ok(())
    }

    /// What a create's mutating admission makes of `obj`, a checked body whose namespace is
    /// resolved: its metadata filled, its managers recorded, the server's admission plugins and
    /// the mutating webhooks run (once per request, as in kube, however many names it tries).
    async fn mutate_create(
        &self,
        info: &ResourceInfo,
        mut obj: Map<String, Value>,
        (tracking, dry_run): (Tracking, bool),
        manager: &str,
    ) -> Result<Mutated, ApiError> {
        let applied = matches!(tracking, Tracking::Applied(_));
        let requested = managed_fields::take_requested(&mut obj);
        let now = object::now_rfc3339();
        let meta = meta_mut(&mut obj);
        // kube's storage refuses a create that carries a version it can read (not one of an
        // apply, whose object is built from the request's own), after every check before it.
        let versioned = !applied && meta.get("resourceVersion").and_then(Value::as_str).is_some_and(is_version);
        meta.insert("uid".into(), object::new_uid().into());
        if strategy::tracks_generation(info) {
            meta.insert("generation".into(), 1.into());
        } else if meta.get("generation").and_then(Value::as_i64) == Some(0) {
            // A kind without a strategy's generation keeps what was written (0 is Go's unset).
            meta.remove("generation");
        }
        meta.insert("creationTimestamp".into(), now.clone().into());
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.remove("resourceVersion");
        defaults::decode(info, &mut obj);
        let managers = match tracking {
            Tracking::Applied(m) => m,
            Tracking::Update | Tracking::Scale => {
                let api_version = info.api_version();
                let ignored = managed_fields::ignored_fields(info, Target::Main, &[]);
                let ctx = managed_fields::Context {
                    ty: managed_fields::type_of(info),
                    api_version: &api_version,
                    ignored: &ignored,
                };
                let key = ManagerKey::new(managed_fields::recorded_name(manager), Operation::Update, &api_version, "");
                let new = Value::Object(std::mem::take(&mut obj));
                let cmp = managed_fields::changes(&ZERO_OBJECT, &new, ctx);
                if let Value::Object(o) = new {
                    obj = o;
                }
                let mut m = managed_fields::base_managers(None, requested, false, cmp.touched());
                managed_fields::record(&mut m, cmp, ctx, &key, &now);
                m
            }
        };
        managed_fields::store_into(&mut obj, &managers);
        let ns = meta_str(&obj, "namespace").unwrap_or_default();
        // Mutating webhooks see the object before the server gives it a uid, a creation time and
        // a generation, and before it names an object that asks for a generated name: a webhook
        // may set the name itself, as in kube.
        let requested_name = meta_str(&obj, "name").unwrap_or_default();
        let limit_ranges = match crate::limit_ranger::judges(info, Target::Main, true) {
            true => self.limit_ranges(&ns).await?,
            false => Vec::new(),
        };
        let classes = self.priority_classes(info, &obj).await?;
        let storage_classes = crate::storage_admission::classes_for(self, info).await?;
        let judged = self.admits_service_accounts(info);
        let mut account = match judged && !service_account_admission::is_mirror(&obj) {
            true => Some(service_account_admission::account_for(self, &obj, &ns).await?),
            false => None,
        };
        let admit = |obj: &mut Map<String, Value>| {
            if info.is_core("pods") {
                crate::limit_ranger::default_pod(obj, &limit_ranges, true);
            }
            if judged {
                service_account_admission::admit_pod(self, obj, account.as_ref())?;
            }
            defaults::admission_plugins(info, obj, defaults::Write::Create, &classes)?;
            crate::storage_admission::admit_create(info, obj, &storage_classes);
            Ok(())
        };
        admit(&mut obj)?;
        let mutation = crate::admission_webhook::Mutation {
            obj: Some(&mut obj),
            default: &|o: &mut Map<String, Value>| defaults::decode(info, o),
            server_set: if strategy::tracks_generation(info) {
                &["uid", "creationTimestamp", "generation"]
            } else {
                &["uid", "creationTimestamp"]
            },
            readmit: &admit,
        };
        let mutating = create_attributes(info, &ns, &requested_name, dry_run);
        crate::admission_webhook::mutate(&self.cache, &mutating, mutation).await?;
        service_account_admission::after_webhooks(self, &mut obj, &ns, &mut account).await?;
        crate::owner_reference_dedup::dedup(&mut obj, true);
        Ok(Mutated { obj, ns, now, versioned, limit_ranges, classes, account })
    }

    /// The object a create stores (before its revision is known), from what mutating admission
    /// made of it: named (one attempt's generated name), prepared by its strategy, given its
    /// Service addresses, validated and judged by validating admission and quota.
    async fn finish_create(
        &self,
        info: &ResourceInfo,
        mutated: Mutated,
        (in_use, named): (&mut InUse, &mut Named),
        (via, dry_run): (CreateVia, bool),
    ) -> Result<Template, ApiError> {
        let Mutated { mut obj, ns, now, versioned, limit_ranges, classes, account } = mutated;
        named.generate_name = meta_str(&obj, "generateName").is_some();
        let name = self.name_for_create(info, &mut obj, &mut named.generated)?;
        let attributes =
            |object| crate::admission_policy::Attributes { object, ..create_attributes(info, &ns, &name, dry_run) };
        strategy::prepare_create(info, &mut obj, &now);
        crate::certificate_signing::prepare_create(info, &mut obj);
        defaults::admit(info, &mut obj, defaults::Write::Create)?;
        crate::rbac_escalation::check(&self.cache, info, &obj, None, via == CreateVia::Write)?;
        // As kube's Service store: the address is given before validation and validating
        // admission, which see it, and given back when they refuse.
        let is_service = defaults::is_service(info);
        if is_service {
            // kube's Service store judges the addresses and families before it allocates, and
            // answers with those faults alone.
            let faults = crate::service_ips::check(obj.get("spec").unwrap_or(&Value::Null), None);
            if !faults.is_empty() {
                return Err(crate::custom_resource::invalid(info, &name, &faults));
            }
            self.allocate_cluster_ip(info, &name, &mut obj, (&mut in_use.cluster_ips, dry_run))?;
            if let Err(e) = self.allocate_node_ports(&name, &mut obj, None, &mut in_use.node_ports) {
                // (A dry run reserves no address.)
                if let Some(ip) = defaults::requested_cluster_ip(&obj).filter(|_| !dry_run) {
                    self.cluster_ips.release(ip);
                }
                return Err(e);
            }
        }
        let checked = async {
            let leading = crate::dra_strategy::admin_access(&self.cache, info, &obj, None, false);
            validation::validate(info, &obj, None, Target::Main, leading)?;
            if via == CreateVia::Write {
                // As kube's create-on-update authorization: after validation, before validating
                // admission.
                crate::authorizer::check_requester(&self.cache, "create", info, &ns, &name)?;
            }
            crate::limit_ranger::check(info, &obj, &name, &limit_ranges)?;
            service_account_admission::validate(self, info, (&obj, account.as_ref()), &ns, &name).await?;
            crate::certificate_signing::check_create(info, &obj)?;
            defaults::validate_admission(info, &obj, defaults::Write::Create, &classes)?;
            crate::pod_security::admit(self, &attributes(Some(&obj))).await?;
            crate::admission_policy::admit(&self.cache, &attributes(Some(&obj))).await?;
            crate::admission_webhook::validate(&self.cache, &attributes(Some(&obj))).await?;
            let quota = crate::resource_quota::Write {
                info,
                namespace: &ns,
                name: &name,
                object: &obj,
                old: None,
                subresource: "",
                dry_run,
            };
            crate::resource_quota::admit(self, quota, &mut in_use.charges).await?;
            match versioned && !dry_run {
                true => Err(ApiError::new(500, "", "resourceVersion should not be set on objects to be created")),
                false => Ok(()),
            }
        };
        if let Err(e) = checked.await {
            if is_service {
                self.release_allocations(info, &[Template::new(info, &obj)], dry_run);
            }
            return Err(e);
        }
        self.template(info, &mut obj).await
    }

    /// The template of a write of `obj`, which takes its stored form ([`defaults::go_stored`]):
    /// when the resource's conversion webhook converts it, the object it converts to the
    /// storage version is stored and answered converted back.
    async fn template(&self, info: &ResourceInfo, obj: &mut Map<String, Value>) -> Result<Template, ApiError> {
        defaults::go_stored(info, obj);
        Ok(match crate::conversion::for_write(info, obj).await? {
            Some((stored, answered)) => Template::converted(info, &answered, &stored),
            None => Template::new(info, obj),
        })
    }

    /// The PriorityClasses a write of `obj` to `info` needs (none unless it writes a pod), from
    /// the cache; when the class the pod names is not there, once the cache has caught up with
    /// the storage (a class created just before).
    async fn priority_classes(&self, info: &ResourceInfo, obj: &Map<String, Value>) -> Result<Vec<Value>, ApiError> {
        if !defaults::needs_priority_classes(info) {
            return Ok(Vec::new());
        }
        let registry = self.cache.registry();
        let Some(classes) = registry.find("scheduling.k8s.io", "v1", "priorityclasses") else { return Ok(Vec::new()) };
        let read = || -> Result<Vec<Value>, ApiError> {
            let listed =
                self.cache.list(classes, None, crate::cache::ListAt::Latest, None, 0, &Selectors::default())?;
            Ok(listed.items.iter().map(|o| defaults::priority_class_fields(o)).collect())
        };
        let found = read()?;
        let named = obj.get("spec").and_then(|s| s.get("priorityClassName")).and_then(Value::as_str);
        let has = |list: &[Value], n: &str| {
            list.iter().any(|c| c.pointer("/metadata/name").and_then(Value::as_str) == Some(n))
        };
        match named {
            Some(n) if !n.is_empty() && !has(&found, n) && self.fresh().await? => read(),
            _ => Ok(found),
        }
    }

    /// Gives a Service being created the cluster IP it asked for (422 when another Service has
    /// it) or a free one. `used` caches the addresses Services have, read once per request. A
    /// dry run, as kube's dry-run allocator, only checks that an address asked for may be given
    /// and shows the range's network address where it would choose one.
    fn allocate_cluster_ip(
        &self,
        info: &ResourceInfo,
        name: &str,
        obj: &mut Map<String, Value>,
        (used, dry_run): (&mut Option<HashSet<u32>>, bool),
    ) -> Result<(), ApiError> {
        let requested = defaults::requested_cluster_ip(obj);
        if requested.is_none() && !defaults::needs_cluster_ip(obj) {
            return Ok(());
        }
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let refused = |detail: &str| ip_refused(info, name, &spec, detail);
        if dry_run {
            // kube's dry-run allocator: one range's, which checks only the range.
            match requested {
                Some(ip) if !defaults::ClusterIps::in_range(ip) => {
                    let range = crate::default_service_cidr::RANGE;
                    let detail =
                        format!("the provided IP ({ip}) is not in the valid range. The range of valid IPs is {range}");
                    return Err(refused(&detail));
                }
                Some(_) => {}
                None => defaults::set_cluster_ip(obj, defaults::ClusterIps::network()),
            }
            return Ok(());
        }
        if let Some(ip) = requested
            && !self.allocatable(ip)?
        {
            return Err(refused("the provided network does not match the current range"));
        }
        let used = match used {
            Some(u) => u,
            None => used.insert(self.cluster_ips_in_use()?),
        };
        let cache_rv = self.cache.resource_version();
        match requested {
            Some(ip) if self.cluster_ips.claim(ip, used, cache_rv) => {
                // The address stays as it was written.
                used.insert(u32::from(ip));
                Ok(())
            }
            Some(_) => Err(refused("provided IP is already allocated")),
            None => {
                let ip = self
                    .cluster_ips
                    .allocate(used, cache_rv)
                    .ok_or_else(|| ApiError::internal("failed to allocate a serviceIP: range is full"))?;
                used.insert(u32::from(ip));
                defaults::set_cluster_ip(obj, ip);
                Ok(())
            }
        }
    }

    /// Gives the Service `obj` (named `name`; over `old`, its stored spec, on an update) its node
    /// ports ([`crate::node_ports`]); `used` caches the node ports Services have, read once per
    /// request. Answers the ports it reserved.
    fn allocate_node_ports(
        &self,
        name: &str,
        obj: &mut Map<String, Value>,
        old: Option<&Map<String, Value>>,
        used: &mut Option<HashSet<u32>>,
    ) -> Result<Vec<u32>, ApiError> {
        let spec = obj.get("spec").and_then(Value::as_object);
        // The ports in use are read only when the Service takes ports it does not have.
        let none = HashSet::new();
        let used = if spec.is_some_and(|s| crate::node_ports::wants(s, old)) {
            match used {
                Some(u) => &*u,
                None => &*used.insert(self.node_ports_in_use()?),
            }
        } else {
            &none
        };
        let cache_rv = self.cache.resource_version();
        crate::node_ports::allocate(obj, old, name, &self.node_ports, used, cache_rv)
    }

    /// The node ports the Services in the watch cache have (an updated Service's own too, as
    /// kube's allocator holds them while it updates).
    fn node_ports_in_use(&self) -> Result<HashSet<u32>, ApiError> {
        let Some(services) = &self.services else { return Ok(HashSet::new()) };
        let (_, all) = self.cache.snapshot(services, None, &Selectors::default())?;
        Ok(all.iter().flat_map(|s| crate::node_ports::in_spec_bytes(s.spec_bytes())).collect())
    }

    /// The cluster IPs the Services in the watch cache have, and the addresses its IPAddresses
    /// hold.
    fn cluster_ips_in_use(&self) -> Result<HashSet<u32>, ApiError> {
        let Some(services) = &self.services else { return Ok(HashSet::new()) };
        let (_, all) = self.cache.snapshot(services, None, &Selectors::default())?;
        let mut used: HashSet<u32> = all.iter().filter_map(|s| cluster_ip(s.fields.iter())).map(u32::from).collect();
        if let Some(addresses) = &self.ip_addresses {
            let (_, all) = self.cache.snapshot(addresses, None, &Selectors::default())?;
            used.extend(all.iter().filter_map(|a| a.name.parse::<std::net::Ipv4Addr>().ok()).map(u32::from));
        }
        Ok(used)
    }

    /// Whether a Service may ask for `ip`: an address of the server's range or of a ServiceCIDR
    /// in use (see [`crate::cluster_ip_addresses::in_ready_block`]).
    fn allocatable(&self, ip: std::net::Ipv4Addr) -> Result<bool, ApiError> {
        if defaults::ClusterIps::in_range(ip) {
            return Ok(true);
        }
        let Some(cidrs) = &self.service_cidrs else { return Ok(false) };
        let (_, all) = self.cache.snapshot(cidrs, None, &Selectors::default())?;
        Ok(crate::cluster_ip_addresses::in_ready_block(&all, ip))
    }

    /// Records that the Service `ns`/`name` holds `ip`, as kube's allocator does before it
    /// writes the Service: creates its IPAddress, as the server. Answers the IPAddress (None when
    /// the server serves none); an address another IPAddress holds is [`Unrecorded::Taken`].
    async fn record_cluster_ip(
        &self,
        (ns, name): (&str, &str),
        ip: std::net::Ipv4Addr,
    ) -> Result<Option<Arc<StoredObject>>, Unrecorded> {
        let Some(addresses) = &self.ip_addresses else { return Ok(None) };
        let body = crate::cluster_ip_addresses::body(ip, ns, name);
        let create = self.create_many(addresses, None, vec![body], false, crate::cluster_ip_addresses::MANAGER);
        match crate::requester::scope(Some(crate::requester::server_user()), create).await {
            Ok(mut created) => Ok(created.pop()),
            Err(e) if e.code == 409 => {
                // Recorded for this Service already (a write tried again): it holds the address.
                let existing = self.stored(addresses, "", &ip.to_string()).await.ok();
                let ours = |o: &Arc<StoredObject>| crate::cluster_ip_addresses::parent(&o.value()) == Some((ns, name));
                existing.filter(ours).map(Some).ok_or(Unrecorded::Taken)
            }
            Err(e) => Err(Unrecorded::Failed(e)),
        }
    }

    /// Deletes the IPAddresses `recorded` for Services whose write failed (those whose Service
    /// is stored with the address stay).
    async fn forget_cluster_ips(&self, recorded: Vec<(String, String, Arc<StoredObject>)>) {
        let Some(services) = &self.services else { return };
        for (ns, name, address) in recorded {
            let stored = self.stored(services, &ns, &name).await;
            if stored.is_ok_and(|s| cluster_ip(s.fields.iter()).is_some_and(|ip| ip.to_string() == address.name)) {
                continue;
            }
            self.delete_ip_address(&address).await;
        }
    }

    /// Gives back the address `ip` the Service `ns`/`name` held: deletes its IPAddress, if it
    /// names that Service.
    async fn release_cluster_ip(&self, (ns, name): (&str, &str), ip: std::net::Ipv4Addr) {
        let Some(addresses) = &self.ip_addresses else { return };
        let Ok(address) = self.stored(addresses, "", &ip.to_string()).await else { return };
        if crate::cluster_ip_addresses::parent(&address.value()) == Some((ns, name)) {
            self.delete_ip_address(&address).await;
        }
    }

    /// Deletes the IPAddress `address` (as it was read), as the server.
    async fn delete_ip_address(&self, address: &StoredObject) {
        let Some(addresses) = &self.ip_addresses else { return };
        let opts = DeleteOpts { precondition_uid: Some(address.uid.clone()), ..Default::default() };
        let delete = self.delete(addresses, "", &address.name, &opts);
        if let Err(e) = crate::requester::scope(Some(crate::requester::server_user()), delete).await {
            // The repair controller deletes it.
            tracing::debug!(address = %address.name, error = %e, "releasing a cluster IP");
        }
    }

    /// Creates many objects (one revision each, written concurrently, a few hundred at a time, so
    /// durable backends commit them together). Every body is validated and every name checked before the first write; a
    /// name taken meanwhile fails that object only, and the call returns the first error.
    /// Namespaced objects are created only in existing namespaces that are not terminating
    /// ([`Self::admit_create`]).
    ///
    /// (The future is boxed: a Service's create creates its IPAddress through it.)
    pub fn create_many<'a>(
        &'a self,
        info: &'a ResourceInfo,
        url_ns: Option<&'a str>,
        bodies: Vec<Value>,
        dry_run: bool,
        manager: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<Vec<Arc<StoredObject>>, ApiError>> {
        let bodies = bodies.into_iter().map(|b| (b, Tracking::Update)).collect();
        Box::pin(self.create_tracked(info, url_ns, bodies, (CreateVia::Post, dry_run), manager))
    }

    /// [`Self::create_many`], each body with how its `managedFields` are computed.
    pub(crate) async fn create_tracked(
        &self,
        info: &ResourceInfo,
        url_ns: Option<&str>,
        bodies: Vec<(Value, Tracking)>,
        (via, dry_run): (CreateVia, bool),
        manager: &str,
    ) -> Result<Vec<Arc<StoredObject>>, ApiError> {
        let mut checked = Vec::with_capacity(bodies.len());
        for (b, tracking) in bodies {
            let mut obj = check_body(info, b)?;
            crate::owner_reference_dedup::dedup(&mut obj, false);
            let ns = resolve_namespace(info, &mut obj, url_ns)?;
            if info.custom.as_ref().is_some_and(|c| c.terminating) {
                // kube's admission refuses it, once the body is read.
                let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
                return Err(ApiError::forbidden(
                    &info.group,
                    &info.plural,
                    name,
                    "create not allowed while custom resource definition is terminating",
                ));
            }
            checked.push((obj, ns, tracking));
        }
        if info.namespaced && self.namespaces.is_some() {
            let mut admitted: Vec<&str> = Vec::new();
            for (obj, ns, _) in &checked {
                if !admitted.contains(&ns.as_str()) {
                    self.admit_create(info, ns, meta_str(obj, "name").as_deref().unwrap_or("")).await?;
                    admitted.push(ns);
                }
            }
        }
        if defaults::is_service(info) && !dry_run && !self.fresh().await? {
            // Cluster IPs are given from what the cache shows: it must hold every Service.
            return Err(ApiError::storage_timeout(&info.group, &info.plural, "create"));
        }
        let mut mutated = Vec::with_capacity(checked.len());
        for (obj, _, tracking) in checked {
            mutated.push(self.mutate_create(info, obj, (tracking, dry_run), manager).await?);
        }
        // As kube's store: a create whose generated name is taken tries another one (mutating
        // admission is not asked again; validating admission judges each attempt).
        let attempts = match mutated.as_slice() {
            [m] if needs_name_generation(&m.obj) => name_generator::MAX_CREATE_ATTEMPTS,
            _ => 1,
        };
        for _ in 1..attempts {
            let mut named = Named::default();
            match self.create_mutated(info, mutated.clone(), (via, dry_run), &mut named).await {
                Err(e) if named.generated && e.reason == "AlreadyExists" => continue,
                done => return done,
            }
        }
        let mut named = Named::default();
        match self.create_mutated(info, mutated, (via, dry_run), &mut named).await {
            // kube's CheckGeneratedNameError: a name taken by an object that asked for one.
            Err(e) if named.generate_name && e.reason == "AlreadyExists" => Err(name_generator::conflict(info, &e)),
            done => done,
        }
    }

    /// Names, prepares and writes the creates of mutated bodies (see [`Self::create_many`]);
    /// `named` tells how the last body was named (what a create of one body needs).
    async fn create_mutated(
        &self,
        info: &ResourceInfo,
        mut mutated: Vec<Mutated>,
        (via, dry_run): (CreateVia, bool),
        named: &mut Named,
    ) -> Result<Vec<Arc<StoredObject>>, ApiError> {
        let is_service = defaults::is_service(info);
        let mut attempt = 0;
        let (prepared, recorded) = 'attempts: loop {
            attempt += 1;
            // Whether the server chooses each Service's address (it asked for none).
            let chosen: Vec<bool> =
                mutated.iter().map(|m| is_service && defaults::requested_cluster_ip(&m.obj).is_none()).collect();
            let mut prepared = Vec::with_capacity(mutated.len());
            let mut in_use = InUse::default();
            // (Only a Service's create is tried again: other kinds' bodies are taken, not copied.)
            let batch = if is_service { mutated.clone() } else { std::mem::take(&mut mutated) };
            for m in batch {
                match self.finish_create(info, m, (&mut in_use, &mut *named), (via, dry_run)).await {
                    Ok(t) => prepared.push(t),
                    Err(e) => {
                        self.release_allocations(info, &prepared, dry_run);
                        return Err(e);
                    }
                }
            }
            // As kube's allocator: each address is recorded before its Service is written, and
            // released when the write fails.
            let mut recorded = Vec::new();
            if is_service && !dry_run {
                for (t, chosen) in prepared.iter().zip(&chosen) {
                    let Some(ip) = cluster_ip(t.fields().iter()) else { continue };
                    match self.record_cluster_ip((t.namespace(), t.name()), ip).await {
                        Ok(Some(address)) => recorded.push((t.namespace().to_string(), t.name().to_string(), address)),
                        Ok(None) => {}
                        Err(e) => {
                            self.release_allocations(info, &prepared, dry_run);
                            self.forget_cluster_ips(recorded).await;
                            // An address the server chose, recorded for another meanwhile: it
                            // chooses again.
                            if *chosen && attempt < ALLOCATION_ATTEMPTS {
                                continue 'attempts;
                            }
                            let spec: Value =
                                t.spec_bytes().and_then(|b| serde_json::from_slice(b).ok()).unwrap_or(Value::Null);
                            return Err(e.answer(info, t.name(), &spec, !*chosen));
                        }
                    }
                }
            }
            break (prepared, recorded);
        };
        let result = self.create_prepared(info, prepared, dry_run).await;
        if result.is_err() {
            self.forget_cluster_ips(recorded).await;
        }
        if is_service && let Ok(created) = &result {
            for o in created.iter().filter(|o| o.rv > 0) {
                if let Some(ip) = cluster_ip(o.fields.iter()) {
                    self.cluster_ips.written(ip, o.rv);
                }
                for n in crate::node_ports::given_in_spec_bytes(o.spec_bytes()) {
                    self.node_ports.written(n, o.rv);
                }
            }
        }
        result
    }

    /// Frees the cluster IPs and node ports given to Services that will not be created (a dry
    /// run's only node ports: it reserves no address).
    fn release_allocations(&self, info: &ResourceInfo, prepared: &[Template], dry_run: bool) {
        if defaults::is_service(info) {
            for t in prepared {
                if let Some(ip) = cluster_ip(t.fields().iter()).filter(|_| !dry_run) {
                    self.cluster_ips.release(ip);
                }
                for n in crate::node_ports::given_in_spec_bytes(t.spec_bytes()) {
                    self.node_ports.release(n);
                }
            }
        }
    }

    /// Writes prepared creates (see [`Self::create_many`]).
    async fn create_prepared(
        &self,
        info: &ResourceInfo,
        prepared: Vec<Template>,
        dry_run: bool,
    ) -> Result<Vec<Arc<StoredObject>>, ApiError> {
        let mut seen = HashSet::new();
        for t in &prepared {
            if !seen.insert(t.key().to_string()) {
                self.release_allocations(info, &prepared, dry_run);
                return Err(ApiError::already_exists(&info.group, &info.plural, t.name()));
            }
        }
        // A dry run asks the storage whether the name is taken, as kube's dry-run storage does;
        // a real create asks when the cache holds the name (the cache may not have seen a
        // delete yet: the storage decides).
        let ready = self.cache.readiness() == crate::cache::Readiness::Ready;
        if dry_run || ready {
            for t in &prepared {
                if !dry_run && self.cache.get(info, t.namespace(), t.name())?.is_none() {
                    continue;
                }
                let taken = match self.stored(info, t.namespace(), t.name()).await {
                    Err(e) if e.code == 404 => None,
                    Err(e) => Some(e),
                    Ok(o) => Some(already_exists(info, t.name(), Some(&o))),
                };
                if let Some(e) = taken {
                    self.release_allocations(info, &prepared, dry_run);
                    return Err(e);
                }
            }
        }
        if dry_run {
            self.release_allocations(info, &prepared, dry_run);
            // Like kube: the would-be object, without a resourceVersion.
            return Ok(prepared.into_iter().map(|t| Arc::new(t.finish_without_rv())).collect());
        }
        let writes = prepared.into_iter().map(|t| async move {
            let key = self.layout.object_key(info, t.namespace(), t.name());
            match self.storage.create(key, t.storage_value()).await {
                Ok(rev) => Ok(self.wrote(info, t.finish(rev))),
                Err(StorageError::AlreadyExists) => {
                    self.release_allocations(info, std::slice::from_ref(&t), false);
                    let stored = self.stored(info, t.namespace(), t.name()).await.ok();
                    Err(already_exists(info, t.name(), stored.as_deref()))
                }
                Err(e) => {
                    self.release_allocations(info, std::slice::from_ref(&t), false);
                    Err(storage_error(e, info, t.name(), "create"))
                }
            }
        });
        // A bounded number in flight: each storage request's deadline then covers its own round
        // trip rather than the time it waited behind thousands of others.
        let results: Vec<_> = futures_util::stream::iter(writes).buffered(CREATES_IN_FLIGHT).collect().await;
        results.into_iter().collect()
    }

    /// Gets an object (a consistent read). While the cache is (re)initializing the storage
    /// answers, as kube's cacher delegates.
    pub async fn get(&self, info: &ResourceInfo, ns: &str, name: &str) -> Result<Arc<StoredObject>, ApiError> {
        let ns = if info.namespaced { ns } else { "" };
        if self.cache.check_ready().is_ok() && self.fresh().await? {
            let o =
                self.cache.get(info, ns, name)?.ok_or_else(|| ApiError::not_found(&info.group, &info.plural, name))?;
            return crate::conversion::one_served(info, o).await;
        }
        self.get_from_storage(info, ns, name).await
    }

    /// Gets an object as a GET with `resourceVersion` does: `""` a consistent read; `"0"` the
    /// cache's copy, whatever its age; a number, the cache's copy once the cache has reached
    /// it (kube's 504 "Too large resource version" when it does not in time). An unparsable
    /// version is the versioner's error as kube's cacher returns it (500 without a reason).
    /// While the cache is (re)initializing the storage answers.
    pub async fn get_at(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        resource_version: &str,
    ) -> Result<Arc<StoredObject>, ApiError> {
        if resource_version.is_empty() {
            return self.get(info, ns, name).await;
        }
        let ns = if info.namespaced { ns } else { "" };
        let min = match resource_version {
            "0" => 0,
            r => crate::list::read_rv(r).map_err(|e| ApiError::new(500, "", e))?,
        };
        if self.cache.check_ready().is_err() {
            return self.get_from_storage(info, ns, name).await;
        }
        if min > self.cache.resource_version() && !self.cache.wait_for_rv(min, self.rv_wait).await {
            return Err(ApiError::too_large_rv(min, self.cache.resource_version()));
        }
        let o = self.cache.get(info, ns, name)?.ok_or_else(|| ApiError::not_found(&info.group, &info.plural, name))?;
        crate::conversion::one_served(info, o).await
    }

    async fn get_from_storage(&self, info: &ResourceInfo, ns: &str, name: &str) -> Result<Arc<StoredObject>, ApiError> {
        let key = self.layout.object_key(info, ns, name);
        let o = match self.storage.get(&key).await {
            Ok(Some(kv)) => self.parse_kv(info, &kv)?,
            Ok(None) => return Err(ApiError::not_found(&info.group, &info.plural, name)),
            Err(e) => return Err(storage_error(e, info, name, "get")),
        };
        crate::conversion::one_served(info, o).await
    }

    /// Replaces an object as the server's own write. A non-empty `metadata.resourceVersion` in
    /// the body is a precondition (409 on mismatch); without one (or with 0), whatever is stored
    /// is replaced. A uid left out is the stored one's; another one is refused (422). For the
    /// `status` target, only the `status` of the body is applied.
    pub async fn update(
        &self,
        info: &ResourceInfo,
        url_ns: Option<&str>,
        url_name: Option<&str>,
        body: Value,
        opts: WriteOpts,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let (obj, ns, name) = put_target(info, url_ns, url_name, body)?;
        let (cur, is_current) = self.current(info, &ns, &name).await?;
        self.update_from(info, (cur, is_current), obj, &name, &opts, None).await
    }

    /// A client's PUT, as kube's generic store answers it: a missing object of a kind whose
    /// strategy allows it is created (`true` in the answer); a uid in the body is a precondition;
    /// kinds whose strategy does not allow unconditional updates (custom resources, CRDs, leases,
    /// admission configurations, …) need the body's `resourceVersion`.
    pub async fn put(
        &self,
        info: &ResourceInfo,
        url_ns: Option<&str>,
        url_name: Option<&str>,
        body: Value,
        opts: WriteOpts,
    ) -> Result<(Arc<StoredObject>, bool), ApiError> {
        let (mut obj, ns, name) = put_target(info, url_ns, url_name, body)?;
        crate::owner_reference_dedup::dedup(&mut obj, false);
        if let Some(u) = url_name.filter(|_| meta_str(&obj, "name").is_none()) {
            // As kube's handler: the body must name what the URL names.
            let msg = format!("the name of the object () does not match the name on the URL ({u})");
            return Err(ApiError::bad_request(msg));
        }
        let uid = meta_str(&obj, "uid");
        // A version of 0 is none, as kube's versioner reads it; one it cannot read fails the write
        // once the object is found.
        let version = meta_str(&obj, "resourceVersion").map(|s| parse_rv_field(&s)).transpose();
        let unversioned = matches!(version, Ok(None | Some(0)));
        let needs_version = unversioned && !strategy::allows_unconditional_update(info);
        // A refusal for want of a version is answered from the storage's version, not the cache's.
        let found = match needs_version {
            true => self.stored(info, &ns, &name).await.map(|o| (o, true)),
            false => self.current(info, &ns, &name).await,
        };
        let (cur, is_current) = match found {
            Err(e) if e.code == 404 && opts.target == Target::Main && strategy::allows_create_on_update(info) => {
                if let Some(u) = uid.as_deref() {
                    let key = self.layout.object_key(info, &ns, &name);
                    return Err(ApiError::precondition_failed(&info.group, &info.plural, &name, &key, ("UID", u, "")));
                }
                // As kube's create through an update: a version in the body is dropped.
                version.clone()?;
                let mut created = obj.clone();
                meta_mut(&mut created).remove("resourceVersion");
                let url_ns = info.namespaced.then_some(ns.as_str());
                let bodies = vec![(Value::Object(created), Tracking::Update)];
                let how = (CreateVia::Write, opts.dry_run);
                match self.create_tracked(info, url_ns, bodies, how, &opts.field_manager).await {
                    // Created meanwhile by another write: this one updates it, as kube's retry does.
                    Err(e) if e.code == 409 && e.reason == "AlreadyExists" => {
                        (self.stored(info, &ns, &name).await?, true)
                    }
                    created => {
                        let o = created?.into_iter().next();
                        return Ok((o.ok_or_else(|| ApiError::internal("no object created"))?, true));
                    }
                }
            }
            found => found?,
        };
        // The storage judges the uid before the version is read.
        let (cur, is_current) = match uid.as_deref() {
            Some(u) => self.checked_uid(info, (cur, is_current), &name, u).await?,
            None => (cur, is_current),
        };
        version?;
        if needs_version {
            return Err(version_required(info, &name));
        }
        if unversioned && opts.target == Target::Status && crate::resource_quota::is_quotas(info) {
            return Err(crate::resource_quota::version_required(info, &name));
        }
        self.update_from(info, (cur, is_current), obj, &name, &opts, uid.as_deref()).await.map(|o| (o, false))
    }

    /// `cur` if it has the uid `uid`, read again from the storage when it came from the cache;
    /// kube's storage's 409 when it has another.
    async fn checked_uid(
        &self,
        info: &ResourceInfo,
        (cur, is_current): (Arc<StoredObject>, bool),
        name: &str,
        uid: &str,
    ) -> Result<(Arc<StoredObject>, bool), ApiError> {
        let (cur, is_current) = match cur.uid != uid && !is_current {
            true => (self.stored(info, &cur.namespace, name).await?, true),
            false => (cur, is_current),
        };
        if cur.uid != uid {
            let key = self.layout.object_key(info, &cur.namespace, name);
            return Err(ApiError::precondition_failed(&info.group, &info.plural, name, &key, ("UID", uid, &cur.uid)));
        }
        Ok((cur, is_current))
    }

    /// Writes `obj` over `cur` (read from the cache unless `is_current`), again over newer versions
    /// while the body names none; `uid`: the body's, a precondition.
    async fn update_from(
        &self,
        info: &ResourceInfo,
        (mut cur, mut is_current): (Arc<StoredObject>, bool),
        obj: Map<String, Value>,
        name: &str,
        opts: &WriteOpts,
        uid: Option<&str>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let precondition = match meta_str(&obj, "resourceVersion") {
            Some(s) => Some(parse_rv_field(&s)?).filter(|rv| *rv != 0),
            None => None,
        };
        let ns = cur.namespace.clone();
        loop {
            if let Some(u) = uid {
                (cur, is_current) = self.checked_uid(info, (cur, is_current), name, u).await?;
            }
            if precondition.is_some_and(|p| p != cur.rv) {
                // The cache's version may be behind the precondition: check the storage's.
                if !is_current {
                    (cur, is_current) = (self.stored(info, &ns, name).await?, true);
                    continue;
                }
                return Err(ApiError::conflict(&info.group, &info.plural, name));
            }
            // Refused on the cache's version, it is judged again on the storage's (see `settle`).
            match self.replace(info, (&cur, is_current), obj.clone(), opts, Tracking::Update).await {
                Ok(Attempt::Retry(newer)) => (cur, is_current) = (newer, true),
                attempt => match self.settle(info, (&ns, name), (&cur, is_current), attempt).await? {
                    ControlFlow::Break(r) => return Ok(r),
                    ControlFlow::Continue(newer) => (cur, is_current) = (newer, true),
                },
            }
        }
    }

    /// Applies a patch to an object.
    pub async fn patch(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        kind: PatchType,
        patch: &[u8],
        opts: WriteOpts,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let ns = if info.namespaced { ns } else { "" };
        let (decoded, body_problems) =
            DecodedPatch::decode(kind, (&info.group, &info.version, &info.kind), patch, opts.validation)?;
        let (mut cur, mut is_current) = self.current(info, ns, name).await?;
        loop {
            let attempt = async {
                let mut doc = cur.value();
                decoded.apply(&mut doc)?;
                body_checks::check_patched(info, kind, &mut doc, |patched| {
                    decoded.invalid_value(&cur.value(), patched)
                })?;
                let unknown = field_validation::prune_unknown(info, &mut doc);
                field_validation::check_patch(opts.validation, &body_problems, &unknown, || {
                    // The value kube names is the object before its unknown fields are pruned.
                    let mut patched = cur.value();
                    match decoded.apply(&mut patched) {
                        Ok(()) => decoded.invalid_value(&cur.value(), &patched),
                        Err(_) => doc.to_string(),
                    }
                })?;
                let obj = body_checks::check_envelope(info, doc)?;
                check_patched_name(&obj, name, if info.namespaced { ns } else { "" })?;
                let version = match meta_str(&obj, "resourceVersion") {
                    Some(s) => parse_rv_field(&s)?,
                    None => 0,
                };
                if version == 0 && !strategy::allows_unconditional_update(info) {
                    // A patch that takes the version away (or sets 0) is a PUT without one.
                    return Err(version_required(info, name));
                }
                if version != 0 && version != cur.rv {
                    return Err(ApiError::conflict(&info.group, &info.plural, name));
                }
                self.replace(info, (&cur, is_current), obj, &opts, Tracking::Update).await
            }
            .await;
            match self.settle(info, (ns, name), (&cur, is_current), attempt).await? {
                ControlFlow::Break(r) => return Ok(r),
                ControlFlow::Continue(newer) => (cur, is_current) = (newer, true),
            }
        }
    }

    /// The outcome of a write's attempt from `tried` (`is_current`: read from the storage): its
    /// answer, or the version of the object to try again from. An attempt that started from the
    /// cache's version and failed is tried again from the storage's when that is newer, as
    /// kube-apiserver's GuaranteedUpdate does: the cache may be behind, and a patch, an apply's
    /// field conflicts or a precondition judged against a stale version are not the answer.
    /// When the cache was not behind, the failure is the answer (admission is not asked twice).
    pub(crate) async fn settle(
        &self,
        info: &ResourceInfo,
        (ns, name): (&str, &str),
        (tried, is_current): (&StoredObject, bool),
        attempt: Result<Attempt, ApiError>,
    ) -> Result<ControlFlow<Arc<StoredObject>, Arc<StoredObject>>, ApiError> {
        match attempt {
            Ok(Attempt::Done(r)) => Ok(ControlFlow::Break(r)),
            Ok(Attempt::Retry(newer)) => Ok(ControlFlow::Continue(newer)),
            Err(e) if !is_current => match self.stored(info, ns, name).await? {
                stored if stored.rv == tried.rv => Err(e),
                stored => Ok(ControlFlow::Continue(stored)),
            },
            Err(e) => Err(e),
        }
    }

    /// The storage key of an object (what kube's storage errors name).
    pub(crate) fn key_of(&self, info: &ResourceInfo, ns: &str, name: &str) -> String {
        self.layout.object_key(info, ns, name)
    }

    /// Writes `new` over `old` (read from the storage) as the server's own edit of a request
    /// admission already judged (a pod's binding, an eviction's condition): through `target`,
    /// its managed fields as they are, not offered to admission again (see [`crate::binding`],
    /// [`crate::eviction`]). `Ok(None)`: `old` is no longer the stored version.
    pub(crate) async fn write_as_server(
        &self,
        info: &ResourceInfo,
        old: &Arc<StoredObject>,
        new: Map<String, Value>,
        target: Target,
        dry_run: bool,
    ) -> Result<Option<Arc<StoredObject>>, ApiError> {
        let value = old.value();
        let managers = managed_fields::Managers::decode(value.get("metadata").and_then(|m| m.get("managedFields")))
            .unwrap_or_default();
        let opts = WriteOpts { target, dry_run, admitted: true, ..Default::default() };
        match self.replace(info, (old, true), new, &opts, Tracking::Applied(managers)).await? {
            Attempt::Done(o) => Ok(Some(o)),
            Attempt::Retry(..) => Ok(None),
        }
    }

    /// Computes the successor of `old` and writes it if `old` is still the stored version.
    /// `is_current` says whether `old` was read from the storage: a version from the cache may be
    /// stale, so an answer that writes nothing (a no-op, a dry run) is only given from a version
    /// read from the storage, as kube-apiserver re-reads before it answers a no-op.
    pub(crate) async fn replace(
        &self,
        info: &ResourceInfo,
        (old, is_current): (&Arc<StoredObject>, bool),
        new: Map<String, Value>,
        opts: &WriteOpts,
        tracking: Tracking,
    ) -> Result<Attempt, ApiError> {
        let (target, dry_run) = (opts.target, opts.dry_run);
        let mut new = new;
        let requested = managed_fields::take_requested(&mut new);
        // What kube's decoder fills: the whole body's defaults, or only the status's for a
        // write through `/status` of a built-in type (the rest of the body is the stored
        // object's; a custom resource's schema defaults the whole body, status included).
        let default = |o: &mut Map<String, Value>| {
            if target == Target::Status && info.custom.is_none() {
                defaults::status(info, o);
                defaults::status_write_metadata(info, o);
            } else {
                defaults::decode(info, o);
            }
        };
        default(&mut new);
        let mut obj = strategy::prepare_update(info, target, old, new);
        if crate::crd::is_crds(info) && target == Target::Main {
            crate::crd::prepare_update(&mut obj);
        }
        let subresource = match tracking {
            Tracking::Scale => "scale",
            _ => managed_fields::subresource_of(target),
        };
        let managers = track(info, old, &mut obj, opts, tracking, requested);
        let attributes = |object| crate::admission_policy::Attributes {
            info,
            operation: "UPDATE",
            subresource,
            namespace: &old.namespace,
            name: &old.name,
            object,
            old: Some(old),
            dry_run,
        };
        // LimitRanger judges claims' updates and pods' resizes, not what is being deleted.
        let limit_ranges = match crate::limit_ranger::judges(info, target, false)
            && !old.kept.iter().any(|(k, _)| *k == "deletionTimestamp")
        {
            true => self.limit_ranges(&old.namespace).await?,
            false => Vec::new(),
        };
        let admit = |obj: &mut Map<String, Value>| {
            if target == Target::Resize {
                crate::limit_ranger::default_pod(obj, &limit_ranges, false);
            }
            if target != Target::Status {
                // An update keeps the pod's priority: no class is read.
                defaults::admission_plugins(info, obj, defaults::Write::Update(old), &[])?;
            }
            Ok(())
        };
        admit(&mut obj)?;
        let mutation = crate::admission_webhook::Mutation {
            obj: Some(&mut obj),
            default: &default,
            server_set: &[],
            readmit: &admit,
        };
        if !opts.admitted && crate::admission_webhook::mutate(&self.cache, &attributes(None), mutation).await? {
            // As kube's update strategies run after mutating admission: what a webhook changed
            // outside the part this write may change is dropped.
            obj = strategy::prepare_update(info, target, old, obj);
            if crate::crd::is_crds(info) && target == Target::Main {
                crate::crd::prepare_update(&mut obj);
            }
        }
        crate::owner_reference_dedup::dedup(&mut obj, true);
        if target != Target::Status {
            defaults::admit(info, &mut obj, defaults::Write::Update(old))?;
        }
        // A binding is the server's own edit, outside the strategy: the generation stays.
        // Nor does a write through `/status` (kube's status strategies keep the generation, a
        // Deployment's annotations notwithstanding).
        let bump = !matches!(target, Target::Binding | Target::Status) && strategy::bumps_generation(info, old, &obj);
        {
            let meta = meta_mut(&mut obj);
            meta.insert("name".into(), old.name.clone().into());
            if info.namespaced {
                meta.insert("namespace".into(), old.namespace.clone().into());
            } else {
                meta.remove("namespace");
            }
            // As kube's BeforeUpdate: a uid left out is the stored one's, the creation time and a
            // deletion time once set cannot be changed, nor a grace period removed; what else the
            // write changes of them, validation refuses.
            if meta.get("uid").and_then(Value::as_str).is_none_or(str::is_empty) {
                match old.uid.as_str() {
                    "" => meta.remove("uid"),
                    uid => meta.insert("uid".into(), uid.into()),
                };
            }
            for f in object::KEPT_META {
                let given = meta.get(*f).is_some_and(|v| !v.is_null());
                match old.kept.iter().find(|(k, _)| k == f) {
                    Some((_, v)) if *f != "deletionGracePeriodSeconds" || !given => meta.insert((*f).into(), v.clone()),
                    Some(_) => None,
                    None if *f == "creationTimestamp" || !given => meta.remove(*f),
                    None => None,
                };
            }
            meta.remove("resourceVersion");
            if strategy::tracks_generation(info) {
                let g = old.generation.max(1);
                meta.insert("generation".into(), (if bump { g + 1 } else { g }).into());
            } else if bump && strategy::bumps_untracked_generation(info) {
                meta.insert("generation".into(), (old.generation + 1).into());
            } else if old.generation != 0 {
                // The generation a create was given stays; an update cannot change it.
                meta.insert("generation".into(), old.generation.into());
            } else {
                meta.remove("generation");
            }
        }
        managers.store_into(&mut obj);
        if info.custom.is_some() {
            // Judged here, before the type is left to the storage's form.
            crate::custom_resource::check_kind(info, &obj)?;
        }
        obj.remove("kind");
        obj.remove("apiVersion");
        crate::rbac_escalation::check(&self.cache, info, &obj, Some(old), true)?;
        if target == Target::Main && defaults::is_service(info) {
            let stored = old.value();
            let faults = crate::service_ips::check(obj.get("spec").unwrap_or(&Value::Null), stored.get("spec"));
            if !faults.is_empty() {
                return Err(crate::custom_resource::invalid(info, &old.name, &faults));
            }
        }
        let mut claimed_ip = crate::reservations::Claimed::new(self.cluster_ips.reservations(), Vec::new());
        let mut given_ip = None;
        if target == Target::Main && defaults::leaves_external_name(info, old, &obj) {
            // As kube's Service store: a Service that stops being an ExternalName is given the
            // address it asks for (422 when another Service has it) or a free one.
            let requested = defaults::requested_cluster_ip(&obj).is_some();
            self.allocate_cluster_ip(info, &old.name, &mut obj, (&mut None, dry_run))?;
            if let Some(ip) = defaults::requested_cluster_ip(&obj).filter(|_| !dry_run) {
                // Held until the Service is stored (given back if it is not).
                claimed_ip = crate::reservations::Claimed::new(self.cluster_ips.reservations(), vec![u32::from(ip)]);
                given_ip = Some((ip, requested));
            }
        }
        let mut claimed = crate::reservations::Claimed::new(&self.node_ports, Vec::new());
        if target == Target::Main && defaults::is_service(info) {
            let stored = old.value();
            let old_spec = stored.get("spec").and_then(Value::as_object);
            let wanted = obj.get("spec").and_then(Value::as_object);
            if wanted.is_some_and(|s| crate::node_ports::wants(s, old_spec)) && !dry_run && !self.fresh().await? {
                // Node ports are given from what the cache shows: it must hold every Service.
                return Err(ApiError::storage_timeout(&info.group, &info.plural, "update"));
            }
            let empty = Map::new();
            let ports = self.allocate_node_ports(&old.name, &mut obj, Some(old_spec.unwrap_or(&empty)), &mut None)?;
            claimed = crate::reservations::Claimed::new(&self.node_ports, ports);
        }
        let leading = match crate::dra_validation::judges(info) && target == Target::Status {
            true => crate::dra_strategy::admin_access(&self.cache, info, &obj, Some(&old.value()), true),
            false => Vec::new(),
        };
        validation::validate(info, &obj, Some(old), target, leading)?;
        crate::certificate_signing::check_update(&self.cache, info, target, &obj, old)?;
        if defaults::is_priority_class(info) {
            let classes = self.priority_classes(info, &obj).await?;
            defaults::validate_admission(info, &obj, defaults::Write::Update(old), &classes)?;
        }
        if !opts.admitted {
            crate::limit_ranger::check(info, &obj, &old.name, &limit_ranges)?;
            if target == Target::EphemeralContainers {
                service_account_admission::validate_ephemeral(self, info, &obj, &old.namespace, &old.name).await?;
            }
            if target == Target::Main && crate::storage_admission::is_claims(info) {
                crate::storage_admission::check_resize(self, &obj, &old.value()).await?;
            }
            crate::pod_security::admit(self, &attributes(Some(&obj))).await?;
            crate::admission_policy::admit(&self.cache, &attributes(Some(&obj))).await?;
            crate::admission_webhook::validate(&self.cache, &attributes(Some(&obj))).await?;
        }
        // Held until the object is stored.
        let mut charges = crate::resource_quota::Charges::default();
        if !opts.admitted {
            let quota = crate::resource_quota::Write {
                info,
                namespace: &old.namespace,
                name: &old.name,
                object: &obj,
                old: Some(old),
                subresource,
                dry_run,
            };
            crate::resource_quota::admit(self, quota, &mut charges).await?;
        }
        // Removing the last finalizer of an object being deleted deletes it once its grace period
        // is over (a namespace's `spec.finalizers` count too).
        let finalized = obj
            .get("metadata")
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key("deletionTimestamp") && !has_finalizers(m))
            && crate::graceful_deletion::period_over(old)
            && !(namespaces::is_namespaces(info) && namespaces::has_spec_finalizers(&obj));
        // A write whose only change is the time of a managedFields entry is none (kube's store
        // puts the old times back before its no-op check): a custom resource's object compared
        // strictly, as the write made it (before its storage codec prunes it); a built-in one's
        // as its Go struct holds it (without the empty lists and maps Go leaves out).
        let custom = info.custom.is_some();
        let times_only = custom && tracking::only_timestamps_moved(&obj, old);
        let template = self.template(info, &mut obj).await?;
        // (A write that changes only such times changes only digits, in place: the bytes tell
        // most updates apart without the comparison.)
        let times_only = times_only
            || (!custom && template.differs_only_in_digits(old) && tracking::only_timestamps_moved(&obj, old));
        let no_op = !finalized && (template.same_as(old) || times_only);
        if (no_op || dry_run) && !is_current {
            let stored = self.stored(info, &old.namespace, &old.name).await?;
            if stored.rv != old.rv {
                return Ok(Attempt::Retry(stored));
            }
        }
        // A no-op update writes nothing and returns the current object.
        if no_op {
            return Ok(Attempt::Done(old.clone()));
        }
        if dry_run {
            return Ok(Attempt::Done(Arc::new(template.finish(old.rv))));
        }
        let key = self.layout.object_key(info, &old.namespace, &old.name);
        // A Service's address is given back once the write that drops it is stored (deleted, an
        // ExternalName, or another address), as kube's allocator commits a release.
        let held = match defaults::is_service(info) && (finalized || target == Target::Main) {
            true => cluster_ip(old.fields.iter())
                .filter(|ip| finalized || cluster_ip(template.fields().iter()) != Some(*ip)),
            false => None,
        };
        if finalized {
            // As kube-apiserver: the update is not stored, the object is deleted, and the answer is
            // the updated object at the resourceVersion it was computed from.
            return match self.storage.delete(key, old.rv).await {
                Ok(rev) => {
                    self.noted(info, rev);
                    if let Some(ip) = held {
                        self.release_cluster_ip((&old.namespace, &old.name), ip).await;
                    }
                    Ok(Attempt::Done(Arc::new(template.finish(old.rv))))
                }
                Err(e) => self.conflicted(info, &old.name, e, "update").await.map(Attempt::Retry),
            };
        }
        // As kube's allocator, the address a Service is given is recorded before it is written,
        // and forgotten when the write fails.
        let mut recorded = Vec::new();
        if let Some((ip, requested)) = given_ip {
            match self.record_cluster_ip((&old.namespace, &old.name), ip).await {
                Ok(Some(address)) => recorded.push((old.namespace.clone(), old.name.clone(), address)),
                Ok(None) => {}
                Err(e) => {
                    let spec: Value =
                        template.spec_bytes().and_then(|b| serde_json::from_slice(b).ok()).unwrap_or(Value::Null);
                    return Err(e.answer(info, &old.name, &spec, requested));
                }
            }
        }
        match self.storage.update(key, template.storage_value(), old.rv).await {
            Ok(rev) => {
                claimed.stored(rev);
                claimed_ip.stored(rev);
                if let Some(ip) = held {
                    self.release_cluster_ip((&old.namespace, &old.name), ip).await;
                }
                Ok(Attempt::Done(self.wrote(info, template.finish(rev))))
            }
            Err(e) => {
                self.forget_cluster_ips(recorded).await;
                self.conflicted(info, &old.name, e, "update").await.map(Attempt::Retry)
            }
        }
    }

    /// Deletes an object; returns its last state (carrying the deletion RV when it is gone) and
    /// whether it is gone. An object with finalizers is only marked (`deletionTimestamp`) and
    /// goes away when its last finalizer is removed; where a garbage collector runs, the
    /// deletion first gives it the collector's finalizers the options call for
    /// ([`crate::delete_options`]).
    ///
    /// As kube's Service store, a Service that is gone gives its cluster IP back: its IPAddress is
    /// deleted before the answer. (The future is boxed: that deletion goes through it.)
    pub fn delete<'a>(
        &'a self,
        info: &'a ResourceInfo,
        ns: &'a str,
        name: &'a str,
        opts: &'a DeleteOpts,
    ) -> futures_util::future::BoxFuture<'a, Result<(Arc<StoredObject>, bool), ApiError>> {
        Box::pin(async move {
            let deleted = self.delete_object(info, ns, name, opts).await;
            if let Ok((last, true)) = &deleted
                && defaults::is_service(info)
                && !opts.dry_run
                && let Some(ip) = cluster_ip(last.fields.iter())
            {
                self.release_cluster_ip((&last.namespace, &last.name), ip).await;
            }
            deleted
        })
    }

    async fn delete_object(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOpts,
    ) -> Result<(Arc<StoredObject>, bool), ApiError> {
        let ns = if info.namespaced { ns } else { "" };
        let (precondition_uid, dry_run) = (opts.precondition_uid.as_deref(), opts.dry_run);
        let is_namespace = namespaces::is_namespaces(info);
        let (mut old, mut is_current) = self.current(info, ns, name).await?;
        loop {
            let uid_differs = precondition_uid.is_some_and(|u| u != old.uid);
            if (opts.unmet_rv(old.rv).is_some() || uid_differs) && !is_current {
                (old, is_current) = (self.stored(info, ns, name).await?, true);
                continue;
            }
            if let Some(u) = precondition_uid.filter(|u| *u != old.uid) {
                return Err(crate::delete_options::unmet_uid(info, name, u, &old.uid));
            }
            if let Some(rv) = opts.unmet_rv(old.rv) {
                return Err(crate::delete_options::unmet_rv(info, name, rv, old.rv));
            }
            let Value::Object(mut map) = old.value() else {
                return Err(ApiError::internal("stored object is not an object"));
            };
            if is_namespace {
                // kube's namespace storage: once terminating, a namespace whose content is still
                // being removed is answered as it is, before admission; the lifecycle admission
                // refuses to delete the system's namespaces, after the preconditions.
                let terminating = map.get("metadata").is_some_and(|m| m.get("deletionTimestamp").is_some());
                if terminating && namespaces::has_spec_finalizers(&map) {
                    if let Some(newer) = self.newer_than_cached(info, ns, name, &old, is_current).await? {
                        (old, is_current) = (newer, true);
                        continue;
                    }
                    return Ok((old, false));
                }
                if namespaces::IMMORTAL.contains(&name) {
                    return Err(namespaces::undeletable(name));
                }
            }
            // A pod is marked terminating first (`crate::graceful_deletion`); a DELETE of one
            // already terminating that does not shorten its period changes nothing (and is not
            // judged by admission, as kube answers it before).
            let grace = crate::graceful_deletion::before_delete(info, &mut map, opts.grace_period_seconds);
            match grace {
                Grace::Pending => {
                    if let Some(newer) = self.newer_than_cached(info, ns, name, &old, is_current).await? {
                        (old, is_current) = (newer, true);
                        continue;
                    }
                    return Ok((old, false));
                }
                // Admission sees the period the deletion takes, as kube's options carry it.
                Grace::Marked(period) => crate::admission_options::set_grace_period(period),
                Grace::Immediate => {}
            }
            let attributes = crate::admission_policy::Attributes {
                info,
                operation: "DELETE",
                subresource: "",
                namespace: opts.collection.as_deref().unwrap_or(ns),
                name: if opts.collection.is_some() { "" } else { name },
                object: None,
                old: Some(&*old),
                dry_run,
            };
            let judged = async {
                let nothing = crate::admission_webhook::Mutation {
                    obj: None,
                    default: &|_| {},
                    server_set: &[],
                    readmit: &crate::admission_webhook::Mutation::no_readmit,
                };
                crate::admission_webhook::mutate(&self.cache, &attributes, nothing).await?;
                crate::admission_policy::admit(&self.cache, &attributes).await?;
                crate::admission_webhook::validate(&self.cache, &attributes).await
            };
            let verdict = if opts.admitted {
                drop(judged);
                Ok(())
            } else {
                judged.await
            };
            match verdict {
                Ok(()) => {}
                // Refused on the cache's version: judged again on the storage's, as kube judges
                // a delete on the object it deletes; not again when the cache was not behind.
                Err(e) if !is_current => match self.stored(info, ns, name).await? {
                    stored if stored.rv == old.rv => return Err(e),
                    stored => {
                        (old, is_current) = (stored, true);
                        continue;
                    }
                },
                Err(e) => return Err(e),
            }
            let key = self.layout.object_key(info, ns, name);
            let marked = if is_namespace {
                // A namespace is first only marked: it terminates (its contents are deleted) and
                // goes away once its finalizers are gone (see `crate::namespaces`).
                let marked = namespaces::mark_terminating(&mut map);
                if !marked && namespaces::has_spec_finalizers(&map) {
                    return Ok((old, false));
                }
                if marked {
                    let meta = meta_mut(&mut map);
                    if let Some(f) =
                        crate::delete_options::namespace_gc_finalizers(&object::strings(meta.get("finalizers")), opts)
                    {
                        meta.insert("finalizers".into(), f.into_iter().map(Value::from).collect());
                    }
                }
                marked
            } else if crate::crd::is_crds(info)
                && map.get("metadata").is_none_or(|m| m.get("deletionTimestamp").is_none())
            {
                // A CustomResourceDefinition is first only marked: the server deletes its objects,
                // then removes the cleanup finalizer (see `crate::crd_controller`).
                crate::crd_controller::mark_deleted(&mut map);
                true
            } else {
                false
            };
            if marked {
                let t = Template::new(info, &map);
                if dry_run {
                    return Ok((Arc::new(t.finish(old.rv)), false));
                }
                match self.storage.update(key, t.storage_value(), old.rv).await {
                    Ok(rev) => return Ok((self.wrote(info, t.finish(rev)), false)),
                    Err(e) => {
                        (old, is_current) = (self.conflicted(info, name, e, "delete").await?, true);
                        continue;
                    }
                }
            }
            let meta = meta_mut(&mut map);
            let finalizers = object::strings(meta.get("finalizers"));
            // A namespace or definition reaches this point only once its own first step is done
            // (terminating with no `spec.finalizers` left; marked for cleanup): from there kube's
            // generic store deletes it, and gives the collector's finalizers as for any object.
            let changed =
                if self.gc_finalizers { crate::delete_options::gc_finalizers(info, &finalizers, opts) } else { None };
            let pending = changed.as_ref().unwrap_or(&finalizers);
            let result = if let Grace::Marked(period) = grace {
                if let Some(f) = &changed {
                    meta.insert("finalizers".into(), f.iter().map(|s| Value::from(s.as_str())).collect());
                }
                let stays = period > 0 || !pending.is_empty();
                let t = self.template(info, &mut map).await?;
                if dry_run {
                    return Ok((Arc::new(t.finish(old.rv)), !stays));
                }
                // Written terminating first, then (at a period of 0, no finalizers) removed.
                match self.storage.update(key.clone(), t.storage_value(), old.rv).await {
                    Ok(rev) if stays => Ok((self.wrote(info, t.finish(rev)), false)),
                    Ok(rev) => {
                        let marked = self.wrote(info, t.finish(rev));
                        let t = Template::from_stored(&marked);
                        match self.storage.delete(key, rev).await {
                            Ok(rev) => return Ok((self.wrote(info, t.finish(rev)), true)),
                            // Removed by another request in between: gone all the same, as kube
                            // ignores a NotFound here. Changed in between: judged again.
                            Err(e) => match self.conflicted(info, name, e, "delete").await {
                                Err(gone) if gone.code == 404 => return Ok((marked, true)),
                                Err(other) => return Err(other),
                                Ok(newer) => {
                                    (old, is_current) = (newer, true);
                                    continue;
                                }
                            },
                        }
                    }
                    Err(e) => Err(e),
                }
            } else if !pending.is_empty() {
                let deleting = meta.contains_key("deletionTimestamp");
                if deleting && changed.is_none() {
                    // Nothing to write: answered on the storage's version, not a stale cached one
                    // (an object deleted and made again meanwhile is deleted in its turn).
                    if let Some(newer) = self.newer_than_cached(info, ns, name, &old, is_current).await? {
                        (old, is_current) = (newer, true);
                        continue;
                    }
                    return Ok((old, false));
                }
                if let Some(f) = &changed {
                    meta.insert("finalizers".into(), f.iter().map(|s| Value::from(s.as_str())).collect());
                }
                if !deleting {
                    meta.insert("deletionTimestamp".into(), object::now_rfc3339().into());
                    if let Some(g) = meta.get("generation").and_then(Value::as_i64).filter(|g| *g > 0) {
                        meta.insert("generation".into(), (g + 1).into());
                    }
                }
                meta.insert("deletionGracePeriodSeconds".into(), 0.into());
                let t = self.template(info, &mut map).await?;
                if dry_run {
                    return Ok((Arc::new(t.finish(old.rv)), false));
                }
                self.storage
                    .update(key, t.storage_value(), old.rv)
                    .await
                    .map(|rev| (self.wrote(info, t.finish(rev)), false))
            } else {
                if dry_run {
                    return Ok((old, true));
                }
                let t = Template::from_stored(&old);
                self.storage.delete(key, old.rv).await.map(|rev| (self.wrote(info, t.finish(rev)), true))
            };
            match result {
                Ok(o) => return Ok(o),
                Err(e) => (old, is_current) = (self.conflicted(info, name, e, "delete").await?, true),
            }
        }
    }

    /// Lists one page: from the cache, after waiting for it to be fresh for a consistent read;
    /// from the storage when the cache does not catch up in time.
    pub async fn list(&self, info: &ResourceInfo, q: ListQuery<'_>) -> Result<ListPage, ApiError> {
        self.cache.check_ready()?;
        // Objects a webhook converts are matched as they are served: all of them are read and
        // converted, then the page is taken.
        let converted_first = crate::conversion::webhook_of(info).is_some() && !q.sel.is_empty();
        let (limit, sel) = if converted_first { (0, &Selectors::default()) } else { (q.limit, q.sel) };
        let mut page = if !q.consistent || self.fresh().await? {
            match (self.cache.list(info, q.ns, q.at, q.start, limit, sel), q.at) {
                // Older than the cache's history: the storage's, as kube's cacher delegates
                // such a list to etcd (which answers 410 once it has compacted that revision).
                (Err(e), ListAt::Exact(rv)) if e.code == 410 => {
                    self.list_from_storage(info, (q.ns, q.start), Some(rv), limit, sel).await?
                }
                (page, _) => page?,
            }
        } else {
            self.list_from_storage(info, (q.ns, q.start), None, limit, sel).await?
        };
        let items =
            crate::conversion::to_served(self.cache.conversions(), info, std::mem::take(&mut page.items)).await?;
        if converted_first {
            crate::cache::fill_page(&mut page, items.iter(), q.limit, q.sel);
        } else {
            page.items = items;
        }
        Ok(page)
    }

    /// A page read from the storage while the cache is (re)initializing: the latest state, or
    /// the state at `revision`, converted to the version served.
    pub async fn list_unready(
        &self,
        info: &ResourceInfo,
        (ns, start): (Option<&str>, Option<&str>),
        revision: Option<u64>,
        limit: usize,
    ) -> Result<ListPage, ApiError> {
        let mut page = self.list_from_storage(info, (ns, start), revision, limit, &Selectors::default()).await?;
        page.items =
            crate::conversion::to_served(self.cache.conversions(), info, std::mem::take(&mut page.items)).await?;
        Ok(page)
    }

    /// A list read from the storage: the latest state (a consistent list the cache lags
    /// behind), or the state at `revision` (one older than the cache's history).
    async fn list_from_storage(
        &self,
        info: &ResourceInfo,
        (ns, start): (Option<&str>, Option<&str>),
        revision: Option<u64>,
        limit: usize,
        sel: &Selectors,
    ) -> Result<ListPage, ApiError> {
        let prefix = self.layout.list_prefix(info, ns);
        let range = self
            .storage
            .range(RangeRequest { prefix, revision, ..Default::default() })
            .await
            .map_err(|e| storage_error(e, info, "", "list"))?;
        let rv = revision.unwrap_or(range.revision);
        let mut page = ListPage { rv, items: Vec::new(), next_after: None, remaining: 0 };
        let mut objs = Vec::with_capacity(range.kvs.len());
        for kv in &range.kvs {
            let o = self.parse_kv(info, kv)?;
            if start.is_none_or(|s| o.key.as_str() >= s) {
                objs.push(o);
            }
        }
        let mut it = objs.into_iter().peekable();
        while let Some(o) = it.next() {
            if sel.matches(&o.labels, &o.fields) {
                let key = o.key.clone();
                page.items.push(o);
                if limit > 0 && page.items.len() >= limit {
                    if it.peek().is_some() {
                        page.next_after = Some(key);
                        page.remaining = it.count() as u64;
                    }
                    break;
                }
            }
        }
        Ok(page)
    }

    /// Current objects matching `sel` in key order, with the RV they are at (consistent).
    pub async fn snapshot(
        &self,
        info: &ResourceInfo,
        ns: Option<&str>,
        sel: &Selectors,
    ) -> Result<(u64, Vec<Arc<StoredObject>>), ApiError> {
        let q = ListQuery { ns, at: ListAt::Latest, start: None, limit: 0, sel, consistent: true };
        let p = self.list(info, q).await?;
        Ok((p.rv, p.items))
    }

    /// Compacts the storage's history up to `rv` (default: the current revision) and the
    /// cache's with it; returns the revision compacted.
    pub async fn compact(&self, rv: Option<u64>) -> Result<u64, ApiError> {
        let current = self.storage.current_revision().await.map_err(|e| ApiError::internal(&e.to_string()))?;
        let target = rv.unwrap_or(current).min(current);
        // Never past the cache's own position: its watch of the storage must go on.
        self.cache.wait_for_rv(target, self.rv_wait).await;
        let target = target.min(self.cache.resource_version());
        match self.storage.compact(target).await {
            Ok(()) | Err(StorageError::Compacted { .. }) => {}
            Err(e) => return Err(ApiError::internal(&e.to_string())),
        }
        self.cache.compact(target);
        Ok(target)
    }
}

/// kube's 422 for a write without the version its kind's strategy requires (its message names
/// the resource where it names a kind).
pub(crate) fn version_required(info: &ResourceInfo, name: &str) -> ApiError {
    let msg = "Invalid value: 0: must be specified for an update";
    ApiError::invalid_object(&info.group, &info.plural, name, "metadata.resourceVersion", "FieldValueInvalid", msg)
}

/// A PUT's body, checked, with its namespace resolved and its name (the URL's, which the body's
/// must match).
fn put_target(
    info: &ResourceInfo,
    url_ns: Option<&str>,
    url_name: Option<&str>,
    body: Value,
) -> Result<(Map<String, Value>, String, String), ApiError> {
    let mut obj = check_body(info, body)?;
    let ns = resolve_namespace(info, &mut obj, url_ns)?;
    let name = match (meta_str(&obj, "name"), url_name) {
        (Some(b), Some(u)) if b != u => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({b}) does not match the name on the URL ({u})"
            )));
        }
        (Some(b), _) => b,
        (None, Some(u)) => u.to_string(),
        (None, None) => return Err(name_required(info)),
    };
    Ok((obj, ns, name))
}

/// What admission is told of a create of `name` (none yet: "") in `ns`, without its object.
fn create_attributes<'a>(
    info: &'a ResourceInfo,
    ns: &'a str,
    name: &'a str,
    dry_run: bool,
) -> crate::admission_policy::Attributes<'a> {
    crate::admission_policy::Attributes {
        info,
        operation: "CREATE",
        subresource: "",
        namespace: ns,
        name,
        object: None,
        old: None,
        dry_run,
    }
}

/// Whether a create of `obj` asks the server to name it (kube's `needsNameGeneration`).
fn needs_name_generation(obj: &Map<String, Value>) -> bool {
    meta_str(obj, "name").is_none() && meta_str(obj, "generateName").is_some()
}

/// kube's 422 for a write whose object has neither a name nor a generateName.
fn name_required(info: &ResourceInfo) -> ApiError {
    ApiError::invalid_object(
        &info.group,
        &info.kind,
        "",
        "metadata.name",
        "FieldValueRequired",
        "Required value: name or generateName is required",
    )
}
