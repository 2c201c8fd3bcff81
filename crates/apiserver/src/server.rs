//! The embeddable server: builder, running handle, accept loop, restart, kubeconfig, and direct
//! in-process object access.
//!
//! A server is a [`Store`] (the REST layer) over a [`Storage`] backend — memory (the default),
//! SQLite in a data directory, or etcd — and a [`WatchCache`] fed by the storage's watch through a
//! [`Dispatcher`] task, plus a periodic compactor and the HTTP listener.
//!
//! Invariants: the storage and the controls outlive restarts; a restart rebuilds the watch cache
//! from the storage, which holds every object, the revision counter and the history since its
//! compacted revision, so watches from revisions before the restart resume (requests get 429 while
//! the cache initializes, as from kube-apiserver). `stop()` closes the listener and every open
//! connection before it returns, so `restart()` can bind the same port.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::cache::{Dispatcher, HistoryConfig, WatchCache};
use crate::controls::{Controls, Fault, ShutdownAnswer};
use crate::handlers::{self, Config, Shared};
use crate::http_version::HttpVersion;
use crate::object::StoredObject;
use crate::registry::{Registry, ResourceInfo};
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::storage::etcd::{EtcdOptions, EtcdStorage};
use crate::storage::keys::KeyLayout;
use crate::storage::memory::MemoryStorage;
use crate::storage::sqlite::SqliteStorage;
use crate::storage::{CompactorState, Storage};
use crate::store::{PatchType, Store, WriteOpts};

/// Where a server keeps its objects.
#[derive(Clone)]
pub enum StorageConfig {
    /// In memory, gone with the process (the default).
    Memory,
    /// Durable in a data directory (SQLite, `<dir>/state.db`): an acknowledged write survives a
    /// crash.
    Sqlite(PathBuf),
    /// In etcd (kube-apiserver's layout; several servers can share it).
    Etcd {
        /// Client URLs.
        endpoints: Vec<String>,
    },
    /// A storage built by the caller.
    Custom(Arc<dyn Storage>),
}

impl std::fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StorageConfig::Memory => f.write_str("Memory"),
            StorageConfig::Sqlite(d) => f.debug_tuple("Sqlite").field(d).finish(),
            StorageConfig::Etcd { endpoints } => f.debug_struct("Etcd").field("endpoints", endpoints).finish(),
            StorageConfig::Custom(s) => f.debug_tuple("Custom").field(&s.name()).finish(),
        }
    }
}

/// Builds an [`ApiServer`].
#[derive(Debug, Clone)]
pub struct ApiServerBuilder {
    addr: SocketAddr,
    registry: Registry,
    cfg: Config,
    history: HistoryConfig,
    tls: Option<(PathBuf, PathBuf)>,
    default_namespaces: bool,
    storage: StorageConfig,
    prefix: String,
    compaction_interval: Duration,
    ready_timeout: Duration,
    crds: Vec<Result<Value, String>>,
    garbage_collector: bool,
    garbage_collection: bool,
    event_ttl: Duration,
    disruption_controller: bool,
    service_account_admission: bool,
    service_account_key: Option<SigningKey>,
    authorization: crate::AuthorizationMode,
    name_seed: Option<u64>,
    advertise_address: Option<IpAddr>,
    apiserver_identity: bool,
}

/// A service account signing key (PKCS#8 DER), never printed.
#[derive(Clone)]
struct SigningKey(Vec<u8>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

/// The file of a data directory that keeps its service account signing key.
const SIGNING_KEY_FILE: &str = "service-account-key.pk8";

impl Default for ApiServerBuilder {
    fn default() -> Self {
        ApiServerBuilder {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            registry: Registry::with_defaults(),
            cfg: Config::default(),
            history: HistoryConfig::default(),
            tls: None,
            default_namespaces: true,
            storage: StorageConfig::Memory,
            prefix: "/registry".into(),
            compaction_interval: Duration::from_secs(300),
            ready_timeout: Duration::from_secs(60),
            crds: Vec::new(),
            garbage_collector: true,
            garbage_collection: true,
            event_ttl: crate::event_ttl::DEFAULT_TTL,
            disruption_controller: true,
            service_account_admission: true,
            service_account_key: None,
            authorization: crate::AuthorizationMode::AlwaysAllow,
            name_seed: None,
            advertise_address: None,
            apiserver_identity: true,
        }
    }
}

impl ApiServerBuilder {
    /// Listen address (default `127.0.0.1:0`).
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// How requests are authorized (kube-apiserver's `--authorization-mode`; default
    /// [`AlwaysAllow`](crate::AuthorizationMode::AlwaysAllow)). With
    /// [`Rbac`](crate::AuthorizationMode::Rbac) the server holds kube's default roles and
    /// bindings, and the users requests impersonate or service account tokens authenticate may
    /// do what their Roles and ClusterRoles allow; the server's own user is in `system:masters`
    /// and may do everything.
    pub fn authorization(mut self, mode: crate::AuthorizationMode) -> Self {
        self.authorization = mode;
        self
    }

    /// Requires `Authorization: Bearer <token>` on every request.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.cfg.token = Some(token.into());
        self
    }

    /// Signs and checks service account tokens with this ECDSA P-256 or RSA key (PKCS#8 DER; see
    /// [`crate::service_account_token::TokenSigner`]), as kube-apiserver's
    /// `--service-account-key-file` / `--service-account-signing-key-file`. Servers that share
    /// an etcd share their key this way. Without one the server makes its own (kept in the data
    /// directory of a durable server, so its tokens outlive a restart).
    pub fn service_account_key(mut self, pkcs8_der: Vec<u8>) -> Self {
        self.service_account_key = Some(SigningKey(pkcs8_der));
        self
    }

    /// Serves HTTPS with these PEM files.
    pub fn tls(mut self, cert_pem: impl Into<PathBuf>, key_pem: impl Into<PathBuf>) -> Self {
        self.tls = Some((cert_pem.into(), key_pem.into()));
        self
    }

    /// Registers an extra resource (or replaces a built-in one).
    pub fn register(mut self, info: ResourceInfo) -> Self {
        self.registry.register(info);
        self
    }

    /// Replaces the whole registry.
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// Maximum request body size (default 3 MiB); larger bodies get 413.
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.cfg.body_limit = bytes;
        self
    }

    /// Periodic watch bookmark interval (default 60 s).
    pub fn bookmark_interval(mut self, d: Duration) -> Self {
        self.cfg.bookmark_interval = d;
        self
    }

    /// Lead time of the bookmark sent before a watch's timeout (default 2 s).
    pub fn bookmark_before_timeout(mut self, d: Duration) -> Self {
        self.cfg.bookmark_before_timeout = d;
        self
    }

    /// Base of the default watch timeout, random in `[d, 2d)` (default 1800 s).
    pub fn min_request_timeout(mut self, d: Duration) -> Self {
        self.cfg.min_request_timeout = d;
        self
    }

    /// How long a request for a future RV (or a consistent read) waits for the watch cache
    /// before 504 (default 3 s).
    pub fn too_large_rv_wait(mut self, d: Duration) -> Self {
        self.cfg.rv_wait = d;
        self
    }

    /// Maximum events kept per resource in the watch cache (default 50 000; a watcher that falls further behind is ended, as kube-apiserver ends blocked watchers).
    pub fn history_capacity(mut self, events: usize) -> Self {
        self.history.capacity = events;
        self
    }

    /// Maximum age of watch-cache events (default 5 min; None = unbounded).
    pub fn history_max_age(mut self, age: Option<Duration>) -> Self {
        self.history.max_age = age;
        self
    }

    /// Whether `pods/proxy`, `services/proxy` and `nodes/proxy` verify the certificate of an
    /// `https` backend against the system's roots (default true). kube-apiserver's proxy
    /// transport verifies none, so pods serving self-signed certificates are reached through
    /// its proxies; `false` reaches them here too.
    pub fn verify_proxied_tls(mut self, yes: bool) -> Self {
        self.cfg.verify_proxied_tls = yes;
        self
    }

    /// Target watch chunk size in bytes (default 64 KiB).
    pub fn watch_chunk_bytes(mut self, bytes: usize) -> Self {
        self.cfg.chunk_bytes = bytes.max(1);
        self
    }

    /// Whether to create the `default`, `kube-system`, `kube-public` and
    /// `kube-node-lease` namespaces, the `system-node-critical` and `system-cluster-critical`
    /// PriorityClasses and the APIServices of the built-in group versions at start when absent,
    /// and to keep kube's priority-and-fairness configuration (its FlowSchemas and
    /// PriorityLevelConfigurations), the default ServiceCIDR, the `default/kubernetes` Service with
    /// its endpoints and the identity lease in place, at start and after (default true), as
    /// kube-apiserver does; `start()` fails when that configuration cannot be written. Without
    /// the namespaces, objects can be created only in namespaces created first; without the
    /// configuration, requests are classified under kube's own `exempt` and `catch-all`.
    pub fn default_namespaces(mut self, yes: bool) -> Self {
        self.default_namespaces = yes;
        self
    }

    /// The address the `default/kubernetes` Service's Endpoints and EndpointSlice give for this
    /// server, as kube-apiserver's `--advertise-address` (default, and for an unspecified
    /// address: the listen address, or when that is loopback or unspecified, the host's address
    /// on its default route). Only an IPv4 address that is neither loopback, link-local nor
    /// unspecified can be written there: with none, the Service is created and no endpoint is
    /// written (kube-apiserver refuses to start without one).
    pub fn advertise_address(mut self, ip: IpAddr) -> Self {
        self.advertise_address = Some(ip);
        self
    }

    /// Whether the server keeps its identity Lease in `kube-system` (kube-apiserver's
    /// `APIServerIdentity`, default true): named after the host, replaced at start, renewed
    /// every 10 s while the server serves, deleted at a graceful shutdown, and expired leases of
    /// servers gone for an hour deleted. Only with [`Self::default_namespaces`].
    pub fn apiserver_identity(mut self, yes: bool) -> Self {
        self.apiserver_identity = yes;
        self
    }

    /// Where objects are kept (default: memory).
    pub fn storage(mut self, storage: StorageConfig) -> Self {
        self.storage = storage;
        self
    }

    /// Keeps objects durably in `dir` (SQLite): a write is on disk before it is acknowledged,
    /// and a restart on the same directory restores objects, the resourceVersion counter and
    /// the watch history.
    pub fn data_dir(self, dir: impl Into<PathBuf>) -> Self {
        self.storage(StorageConfig::Sqlite(dir.into()))
    }

    /// Keeps objects in etcd at these client URLs (kube-apiserver's `--etcd-servers`).
    pub fn etcd(self, endpoints: Vec<String>) -> Self {
        self.storage(StorageConfig::Etcd { endpoints })
    }

    /// The storage key prefix (kube-apiserver's `--etcd-prefix`, default `/registry`).
    pub fn etcd_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How often the storage's history is compacted (kube-apiserver's
    /// `--etcd-compaction-interval`, default 5 min; zero: never).
    pub fn compaction_interval(mut self, d: Duration) -> Self {
        self.compaction_interval = d;
        self
    }

    /// Whether the server runs kube-controller-manager's garbage collector (default true): objects
    /// whose owners are all gone are deleted, and the finalizers deletions with
    /// `propagationPolicy` `Orphan` or `Foreground` (or a resource's default, such as a Job's)
    /// give objects (`orphan`, `foregroundDeletion`) are removed once their work is done.
    /// Without it, as kube-apiserver alone (envtest), owner references are only recorded and
    /// an object given such a finalizer stays until someone removes it.
    pub fn garbage_collector(mut self, yes: bool) -> Self {
        self.garbage_collector = yes;
        self
    }

    /// kube-apiserver's `--enable-garbage-collector` (default true). False: deletions give no
    /// `orphan` or `foregroundDeletion` finalizers (but a namespace's, which kube's namespace
    /// storage gives whatever the setting) and no garbage collector runs.
    pub fn garbage_collection(mut self, yes: bool) -> Self {
        self.garbage_collection = yes;
        self
    }

    /// How long an Event is kept after its last write (kube-apiserver's `--event-ttl`, default
    /// 1 h; zero: kept for good). Expired Events are deleted from the storage, so watchers of
    /// both Event APIs see them go.
    pub fn event_ttl(mut self, ttl: Duration) -> Self {
        self.event_ttl = ttl;
        self
    }

    /// Whether kube's ServiceAccount admission plugin runs (default true, as in a cluster): pods
    /// created run as a service account of their namespace, which must exist, with its
    /// credentials mounted. False is kube-apiserver's `--disable-admission-plugins=ServiceAccount`,
    /// as envtest runs it. The serviceaccounts controller, which gives every namespace its
    /// `default` account, runs either way.
    pub fn service_account_admission(mut self, yes: bool) -> Self {
        self.service_account_admission = yes;
        self
    }

    /// Whether the server runs kube-controller-manager's disruption controller (default true):
    /// PodDisruptionBudgets are given the status their pods add up to, which evictions spend.
    /// Without it, as with kube-apiserver alone, a budget's status is what its writers write.
    pub fn disruption_controller(mut self, yes: bool) -> Self {
        self.disruption_controller = yes;
        self
    }

    /// Seeds the random suffixes of the names given to objects created with `generateName`, so
    /// that a run creating the same objects in the same order names them alike (default: a seed
    /// from the operating system). A create whose generated name is taken tries another, up to
    /// eight, as kube-apiserver does.
    pub fn generated_name_seed(mut self, seed: u64) -> Self {
        self.name_seed = Some(seed);
        self
    }

    /// How long `start` waits for the watch cache to be filled (default 60 s).
    pub fn ready_timeout(mut self, d: Duration) -> Self {
        self.ready_timeout = d;
        self
    }

    /// Installs CustomResourceDefinitions at start (YAML, one document or several, or JSON; a
    /// `List` of them is read too), as envtest's `CRDs` option does: each is created (or
    /// updated, when one of that name is stored) before [`Self::start`] returns, and `start`
    /// returns once all of them are served. A manifest that cannot be read, or a definition the
    /// server refuses, makes `start` fail.
    pub fn crd(mut self, manifest: impl AsRef<str>) -> Self {
        match crate::crd::parse_manifests(manifest.as_ref()) {
            Ok(docs) => self.crds.extend(docs.into_iter().map(Ok)),
            Err(e) => self.crds.push(Err(e)),
        }
        self
    }

    /// [`Self::crd`] for every `.yaml`, `.yml` and `.json` file of a directory (envtest's
    /// `CRDDirectoryPaths`), in name order; files with other extensions are ignored.
    pub fn crds_from_dir(mut self, dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref();
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => {
                self.crds.push(Err(format!("reading {}: {e}", dir.display())));
                return self;
            }
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.is_file() && p.extension().is_some_and(|x| matches!(x.to_str(), Some("yaml" | "yml" | "json")))
            })
            .collect();
        files.sort();
        for f in files {
            match std::fs::read_to_string(&f) {
                Ok(text) => match crate::crd::parse_manifests(&text) {
                    Ok(docs) => self.crds.extend(docs.into_iter().map(Ok)),
                    Err(e) => self.crds.push(Err(format!("{}: {e}", f.display()))),
                },
                Err(e) => self.crds.push(Err(format!("reading {}: {e}", f.display()))),
            }
        }
        self
    }

    /// The service account token signer: the key given, the data directory's (made on first
    /// use), or a new one.
    fn token_signer(&self) -> std::io::Result<crate::service_account_token::TokenSigner> {
        use crate::service_account_token::TokenSigner;
        let invalid = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, e);
        if let Some(SigningKey(der)) = &self.service_account_key {
            return TokenSigner::from_pkcs8(der).map_err(invalid);
        }
        let StorageConfig::Sqlite(dir) = &self.storage else { return Ok(TokenSigner::generate()) };
        let path = dir.join(SIGNING_KEY_FILE);
        match std::fs::read(&path) {
            Ok(der) => TokenSigner::from_pkcs8(&der).map_err(|e| invalid(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Written whole or not at all: a temporary file, synced, then renamed.
                std::fs::create_dir_all(dir)?;
                let der = TokenSigner::generate_pkcs8();
                let partial = dir.join(format!("{SIGNING_KEY_FILE}.{}", std::process::id()));
                let mut options = std::fs::OpenOptions::new();
                options.write(true).create(true).truncate(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                let mut file = options.open(&partial)?;
                std::io::Write::write_all(&mut file, &der)?;
                file.sync_all()?;
                std::fs::rename(&partial, &path)?;
                std::fs::File::open(dir)?.sync_all()?;
                TokenSigner::from_pkcs8(&der).map_err(invalid)
            }
            Err(e) => Err(e),
        }
    }

    /// Binds and starts serving once the watch cache holds the storage's state (and the
    /// CustomResourceDefinitions given with [`Self::crd`] are served).
    pub async fn start(self) -> std::io::Result<ApiServer> {
        if let Some(Err(e)) = self.crds.iter().find(|c| c.is_err()) {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, e.clone()));
        }
        let tls = match &self.tls {
            Some((c, k)) => Some(crate::tls::acceptor(c, k)?),
            None => None,
        };
        let signer = self.token_signer()?;
        let storage: Arc<dyn Storage> = match &self.storage {
            StorageConfig::Memory => Arc::new(MemoryStorage::new(self.history.capacity.max(1000) * 2)),
            StorageConfig::Sqlite(dir) => Arc::new(SqliteStorage::open_when_free(dir, DATA_DIR_WAIT).await?),
            StorageConfig::Etcd { endpoints } => Arc::new(
                EtcdStorage::connect(EtcdOptions::new(endpoints.clone()))
                    .await
                    .map_err(|e| std::io::Error::other(e.to_string()))?,
            ),
            StorageConfig::Custom(s) => s.clone(),
        };
        let layout = KeyLayout::new(&self.prefix);
        let cache = Arc::new(WatchCache::new(Arc::new(self.registry), layout, self.history));
        let mut store = Store::new(storage.clone(), cache.clone(), self.cfg.rv_wait)
            .with_garbage_collection(self.garbage_collector && self.garbage_collection)
            .with_gc_finalizers(self.garbage_collection)
            .with_event_ttl(self.event_ttl)
            .with_authorization(self.authorization)
            .with_service_account_admission(self.service_account_admission);
        if let Some(seed) = self.name_seed {
            store = store.with_name_seed(seed);
        }
        let store = Arc::new(store);
        let mut background =
            Background::start(store.clone(), (self.compaction_interval, self.disruption_controller), Duration::ZERO);
        if !cache.wait_ready(self.ready_timeout).await {
            background.stop();
            return Err(std::io::Error::other(format!(
                "the {} storage could not be read within {:?}",
                storage.name(),
                self.ready_timeout
            )));
        }
        if self.default_namespaces && store.namespaces_info().is_some() {
            for n in crate::namespaces::SYSTEM {
                if let Err(e) = crate::namespaces::ensure(&store, n).await {
                    return Err(std::io::Error::other(format!("creating namespace {n}: {e}")));
                }
            }
            // kube-apiserver's system PriorityClasses.
            let classes = store.registry().find("scheduling.k8s.io", "v1", "priorityclasses").cloned();
            if let Some(info) = classes {
                for (name, value, description) in crate::defaults::SYSTEM_PRIORITY_CLASSES {
                    let obj = serde_json::json!({"metadata": {"name": name}, "value": value,
                        "description": description, "globalDefault": false, "preemptionPolicy": "PreemptLowerPriority"});
                    match store.create_many(&info, None, vec![obj], false, "kube-apiserver").await {
                        Ok(_) => {}
                        Err(e) if e.code == 409 => {}
                        Err(e) => return Err(std::io::Error::other(format!("creating PriorityClass {name}: {e}"))),
                    }
                }
            }
        }
        // The system namespaces' accounts are there when the server answers, as the
        // serviceaccounts controller makes them a moment after a cluster starts.
        if self.default_namespaces {
            crate::service_account_controller::settle(&store).await;
            if !crate::api_service_registration::register_at_start(&store).await {
                let retry =
                    crate::api_service_registration::retry_registration(store.clone(), background.stop.subscribe());
                background.tasks.push(tokio::spawn(retry));
            }
        }
        // The priority-and-fairness configuration, and its FlowSchemas' status, are written
        // before the server answers (so no write of the server's own comes after it starts but
        // for what its users change), and kept in place every minute after.
        if self.default_namespaces
            && let Err(e) = crate::flowcontrol_bootstrap::ensure_all(&store).await
        {
            background.stop();
            return Err(std::io::Error::other(format!("unable to initialize APF bootstrap configuration: {e}")));
        }
        crate::flowcontrol_status::settle(&store).await;
        // As kube's start-up hook, the default ServiceCIDR is there before the server answers.
        if self.default_namespaces
            && let Err(e) = crate::default_service_cidr::ensure(&store).await
        {
            background.stop();
            return Err(std::io::Error::other(format!("creating the default ServiceCIDR: {e}")));
        }
        let identity = self.default_namespaces && self.apiserver_identity;
        background.keep_configuration(&store, self.default_namespaces, false);
        if self.authorization == crate::AuthorizationMode::Rbac
            && let Err(e) = crate::rbac_bootstrap::install(&store).await
        {
            background.stop();
            return Err(e);
        }
        let crds: Vec<Value> = self.crds.into_iter().filter_map(Result::ok).collect();
        if let Err(e) = install_crds(&store, crds, self.ready_timeout).await {
            background.stop();
            return Err(e);
        }
        let shared = Arc::new(Shared {
            store,
            controls: Arc::new(Controls::default()),
            cfg: self.cfg,
            server_address: Mutex::new(String::new()),
            openapi: Default::default(),
            signer,
            secure: tls.is_some(),
            metrics: Default::default(),
            priority_and_fairness: Default::default(),
            storage_health: Default::default(),
        });
        let server = ApiServer {
            shared,
            addr: Mutex::new(self.addr),
            tls,
            running: tokio::sync::Mutex::new(None),
            background: Mutex::new(Some(background)),
            compaction_interval: self.compaction_interval,
            disruption_controller: self.disruption_controller,
            keeps_configuration: self.default_namespaces,
            ready_timeout: self.ready_timeout,
            advertise_address: self.advertise_address,
            serving_controllers: Mutex::new(None),
            identity,
        };
        server.bind_and_run(self.addr).await?;
        server.start_serving_controllers(true).await;
        Ok(server)
    }
}

/// Creates (or updates) CustomResourceDefinitions and waits until each is served.
async fn install_crds(store: &Arc<Store>, crds: Vec<Value>, timeout: Duration) -> std::io::Result<()> {
    if crds.is_empty() {
        return Ok(());
    }
    let info = store
        .registry()
        .all()
        .iter()
        .find(|i| crate::crd::is_crds(i))
        .cloned()
        .ok_or_else(|| std::io::Error::other("this server's registry does not serve CustomResourceDefinitions"))?;
    let mut names = Vec::new();
    for mut crd in crds {
        let name = crd.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("").to_string();
        let failed = |e: ApiError| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("CustomResourceDefinition {name}: {e}"))
        };
        // A manifest read back from a cluster carries the identity it had there: not this one's.
        if let Some(Value::Object(meta)) = crd.get_mut("metadata") {
            for server_set in ["resourceVersion", "uid", "creationTimestamp"] {
                meta.remove(server_set);
            }
        }
        match store.create(&info, None, crd.clone()).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {
                store.update(&info, None, None, crd, WriteOpts::default()).await.map_err(failed)?;
            }
            Err(e) => return Err(failed(e)),
        }
        names.push(name);
    }
    let served = store.cache().wait_for_registry(timeout, |reg| names.iter().all(|n| !reg.custom(n).is_empty())).await;
    if served {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "the CustomResourceDefinitions {names:?} were not established within {timeout:?}"
        )))
    }
}

/// How [`ApiServer::shutdown_gracefully`] goes.
#[derive(Debug, Clone, Copy)]
pub struct GracefulShutdown {
    /// How long requests are still served while `/readyz` fails (kube-apiserver's
    /// `--shutdown-delay-duration`).
    pub delay: Duration,
    /// How long requests in progress may take to finish.
    pub drain_timeout: Duration,
    /// How long open watches go on after that (`--shutdown-watch-termination-grace-period`).
    pub watch_grace: Duration,
    /// kube-apiserver's `--shutdown-send-retry-after`: after the delay the listener stays open
    /// and new requests get 429 with `Retry-After: 5` until the requests in progress are drained.
    /// Without it (the default) the listener closes after the delay, open connections get GOAWAY
    /// and requests that still arrive on them get 503 "apiserver is shutting down".
    pub send_retry_after: bool,
}

impl Default for GracefulShutdown {
    fn default() -> Self {
        GracefulShutdown {
            delay: Duration::ZERO,
            drain_timeout: Duration::from_secs(60),
            watch_grace: Duration::ZERO,
            send_retry_after: false,
        }
    }
}

/// The server's background tasks: the watch cache's dispatcher, the server's controllers and the
/// compactor.
struct Background {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Background {
    /// Starts the dispatcher (after `cold` — a slow cache initialization), the namespace
    /// controller (when namespaces are served), the CustomResourceDefinition controller, the
    /// ClusterRole aggregation controller, the claim and volume protection controllers, the
    /// serviceaccounts controller, the resourcequota controller, the disruption controller (when
    /// `disruption`), the garbage collector (when the store's deletions give its finalizers), the
    /// expiry of Events and the compactor.
    fn start(store: Arc<Store>, (compaction_interval, disruption): (Duration, bool), cold: Duration) -> Background {
        let (stop, rx) = watch::channel(false);
        let mut tasks = Vec::new();
        let dispatcher = Dispatcher::new(store.cache().clone(), store.storage().clone());
        let mut rx1 = rx.clone();
        tasks.push(tokio::spawn(async move {
            if !cold.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(cold) => {}
                    _ = rx1.wait_for(|s| *s) => return,
                }
            }
            dispatcher.run(rx1).await
        }));
        if let Some(controller) = crate::namespaces::Controller::new(store.clone()) {
            let rx3 = rx.clone();
            tasks.push(tokio::spawn(controller.run(rx3)));
        }
        if let Some(controller) = crate::crd_controller::Controller::new(store.clone()) {
            tasks.push(tokio::spawn(controller.run(rx.clone())));
        }
        if let Some(controller) = crate::clusterrole_aggregation::Controller::new(store.clone()) {
            let user = crate::requester::service_account("kube-system", crate::clusterrole_aggregation::MANAGER);
            tasks.push(tokio::spawn(crate::requester::scope(Some(user), controller.run(rx.clone()))));
        }
        for controller in [
            crate::volume_protection::Controller::claims(store.clone()),
            crate::volume_protection::Controller::volumes(store.clone()),
        ]
        .into_iter()
        .flatten()
        {
            let user = controller.service_account();
            tasks.push(tokio::spawn(crate::requester::scope(Some(user), controller.run(rx.clone()))));
        }
        if let Some(controller) = crate::cluster_ip_addresses::Controller::new(store.clone()) {
            let user = crate::requester::server_user();
            tasks.push(tokio::spawn(crate::requester::scope(Some(user), controller.run(rx.clone()))));
        }
        if let Some(controller) = crate::service_account_controller::Controller::new(store.clone()) {
            let user = controller.service_account();
            tasks.push(tokio::spawn(crate::requester::scope(Some(user), controller.run(rx.clone()))));
        }
        // (The built-in group versions' are registered as the server starts.)
        if let Some(controller) = crate::api_service_registration::Controller::new(store.clone(), true) {
            let user = crate::requester::server_user();
            tasks.push(tokio::spawn(crate::requester::scope(Some(user), controller.run(rx.clone()))));
        }
        if let Some(controller) = crate::quota_controller::Controller::new(store.clone()) {
            let user = crate::requester::service_account("kube-system", crate::quota_controller::SERVICE_ACCOUNT);
            tasks.push(tokio::spawn(crate::requester::scope(Some(user), controller.run(rx.clone()))));
        }
        if let Some(controller) = crate::disruption_controller::Controller::new(store.clone()).filter(|_| disruption) {
            let user = crate::requester::service_account("kube-system", crate::disruption_controller::SERVICE_ACCOUNT);
            tasks.push(tokio::spawn(crate::requester::scope(Some(user), controller.run(rx.clone()))));
        }
        if store.garbage_collection() {
            let collector = crate::garbage_collector::GarbageCollector::new(store.clone());
            // Its writes are made as kube-controller-manager's collector makes them, with its
            // service account's credentials.
            let user = crate::requester::service_account("kube-system", "generic-garbage-collector");
            tasks.push(tokio::spawn(crate::requester::scope(Some(user), collector.run(rx.clone()))));
        }
        if let Some(expiry) = crate::event_ttl::Expiry::new(store.clone(), store.event_ttl()) {
            tasks.push(tokio::spawn(expiry.run(rx.clone())));
        }
        if !compaction_interval.is_zero() {
            let mut rx2 = rx;
            tasks.push(tokio::spawn(async move {
                let mut state = CompactorState::default();
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(compaction_interval) => {}
                        _ = rx2.wait_for(|s| *s) => return,
                    }
                    match store.storage().compact_tick(&mut state).await {
                        Ok(Some(rev)) => {
                            store.cache().compact(rev);
                            tracing::debug!(revision = rev, "compacted the storage's history");
                        }
                        Ok(None) => {}
                        Err(e) => tracing::warn!(error = %e, "compaction failed"),
                    }
                }
            }));
        }
        Background { stop, tasks }
    }

    /// Starts the FlowSchema status controller and, when `configuration`, the default
    /// ServiceCIDR's controller and the pass that puts the priority-and-fairness configuration
    /// back every minute ([`crate::flowcontrol_bootstrap::PERIOD`]), at once when `now` (once
    /// the cache has caught up with the storage).
    fn keep_configuration(&mut self, store: &Arc<Store>, configuration: bool, now: bool) {
        let user = crate::requester::server_user;
        if let Some(controller) = crate::flowcontrol_status::Controller::new(store.clone()) {
            let run = controller.run(self.stop.subscribe());
            self.tasks.push(tokio::spawn(crate::requester::scope(Some(user()), run)));
        }
        if !configuration {
            return;
        }
        let run = crate::default_service_cidr::run(store.clone(), self.stop.subscribe());
        self.tasks.push(tokio::spawn(crate::requester::scope(Some(user()), run)));
        let (store, mut stop) = (store.clone(), self.stop.subscribe());
        self.tasks.push(tokio::spawn(crate::requester::scope(Some(user()), async move {
            let mut wait = if now { Duration::ZERO } else { crate::flowcontrol_bootstrap::PERIOD };
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                wait = crate::flowcontrol_bootstrap::PERIOD;
                store.cache().until_ready().await;
                let pass = async {
                    store.fresh().await?;
                    crate::flowcontrol_bootstrap::ensure_all(&store).await
                };
                if let Err(e) = pass.await {
                    tracing::warn!(error = %e, "keeping the priority-and-fairness configuration");
                    // A failed pass is tried again sooner, as kube's start-up polling does.
                    wait = Duration::from_secs(1);
                }
            }
        })));
    }

    fn stop(self) {
        let _ = self.stop.send(true);
        for t in self.tasks {
            t.abort();
        }
    }
}

/// How long a starting server waits for a data directory another server is letting go.
const DATA_DIR_WAIT: Duration = Duration::from_secs(10);

struct Running {
    shutdown: watch::Sender<bool>,
    /// Closes the listener while the open connections go on.
    stop_accepting: watch::Sender<bool>,
    accept: JoinHandle<()>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

/// A running (or stopped) in-process API server.
pub struct ApiServer {
    shared: Arc<Shared>,
    addr: Mutex<SocketAddr>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    running: tokio::sync::Mutex<Option<Running>>,
    background: Mutex<Option<Background>>,
    compaction_interval: Duration,
    disruption_controller: bool,
    /// Whether the server keeps its priority-and-fairness configuration and its default
    /// ServiceCIDR in place.
    keeps_configuration: bool,
    ready_timeout: Duration,
    /// The address given to [`ApiServerBuilder::advertise_address`], if any.
    advertise_address: Option<IpAddr>,
    /// Whether the server keeps its identity lease.
    identity: bool,
    /// The controllers that run while the server serves.
    serving_controllers: Mutex<Option<ServingControllers>>,
}

/// The controllers that run while a server serves: the `default/kubernetes` Service's and the
/// identity lease's.
struct ServingControllers {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// The address its lease holds, removed at a graceful shutdown.
    advertised: crate::kubernetes_service::Advertised,
    /// The identity lease, deleted at a graceful shutdown.
    identity_lease: Option<String>,
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(k) = self.serving_controllers.lock().take() {
            let _ = k.stop.send(true);
            k.tasks.iter().for_each(JoinHandle::abort);
        }
        if let Some(b) = self.background.lock().take() {
            b.stop();
        }
        if let Ok(mut r) = self.running.try_lock()
            && let Some(r) = r.take()
        {
            let _ = r.shutdown.send(true);
            r.accept.abort();
        }
    }
}

/// The most an HTTP/1.1 connection buffers: response bytes queued for the socket (a watch or a
/// list stops being polled for more while this much waits), and a request's head. hyper's default,
/// ~400 KiB, let every client that reads slower than the server write hold that much: a hundred
/// informers starting at once with streaming lists raised the server's peak RSS 1.6–1.7× its
/// steady RSS, 1.36× with 64 KiB, and 100 watchers of 1,000 updates/s got their events with a p99
/// of 25 ms rather than 4 ms. A request head that fills the read buffer is refused (431): one of
/// up to 64 KiB is always served, one past 256 KiB never (past 128 KiB on a connection's first
/// request: the buffer grows past the limit when reads bring more at once), where kube-apiserver
/// takes up to 1 MiB.
const HTTP1_MAX_BUF: usize = 64 * 1024;

/// How a connection whose version is not known beforehand is served: HTTP/1.1 or HTTP/2 as the
/// client's first bytes say (read, then handed back to the protocol's parser). One for the
/// server's lifetime, so that a connection's task borrows it rather than carrying a copy.
static CONNECTION_BUILDER: std::sync::LazyLock<hyper_util::server::conn::auto::Builder<TokioExecutor>> =
    std::sync::LazyLock::new(|| {
        let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
        builder.http1().max_buf_size(HTTP1_MAX_BUF);
        builder
    });

/// How a connection known to speak HTTP/1.1 is served (see [`crate::http_version`]), as
/// [`CONNECTION_BUILDER`] serves it.
static HTTP1_BUILDER: std::sync::LazyLock<hyper::server::conn::http1::Builder> = std::sync::LazyLock::new(|| {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.max_buf_size(HTTP1_MAX_BUF);
    builder
});

async fn serve_conn<I>(
    shared: Arc<Shared>,
    io: I,
    client: Option<std::net::SocketAddr>,
    version: HttpVersion,
    ends: ConnectionEnds,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let stop = ends.shutdown.clone();
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
        let shared = shared.clone();
        if let Some(addr) = client {
            req.extensions_mut().insert(crate::upgrade_aware_proxy::ClientAddr(addr));
        }
        // A connection taken over after a switch of protocols hears of the server's stop.
        if req.headers().contains_key(http::header::UPGRADE) {
            req.extensions_mut().insert(ServerStop(stop.clone()));
        }
        // Boxed: the connection keeps its request's future in a box of that future's size for
        // as long as it lives, where a boxed one takes its room only while a request runs (an
        // idle watch holds none).
        let answer = Box::pin(handlers::handle(shared, req));
        async move { Ok::<_, std::convert::Infallible>(answer.await) }
    });
    let io = TokioIo::new(crate::combined_writes::CombinedWrites::new(io));
    // An HTTP/1.1 connection is made in place: one moved into a pinned local would take its room
    // twice in the task. The others are boxed, so that their HTTP/2 state does not enlarge every
    // HTTP/1.1 connection's task. With upgrades: a connection to a pod opened as a WebSocket is
    // handed over after its 101.
    match version {
        HttpVersion::Http1 => {
            let conn = std::pin::pin!(HTTP1_BUILDER.serve_connection(io, svc).with_upgrades());
            ends.drive(conn, |c| c.graceful_shutdown()).await
        }
        HttpVersion::Http2 | HttpVersion::Unknown => {
            let mut conn = Box::pin(CONNECTION_BUILDER.serve_connection_with_upgrades(io, svc));
            ends.drive(conn.as_mut(), |c| c.graceful_shutdown()).await
        }
    }
}

/// The server's stop, as a request that may switch protocols is told of it: a connection it
/// takes over outlives the HTTP connection the server would otherwise close.
#[derive(Clone)]
pub(crate) struct ServerStop(watch::Receiver<bool>);

impl ServerStop {
    /// Completes once the server stops (never without a stop signal).
    pub(crate) async fn stopped(stop: &mut Option<ServerStop>) {
        match stop {
            Some(ServerStop(s)) => {
                let _ = s.wait_for(|stopped| *stopped).await;
            }
            None => std::future::pending().await,
        }
    }
}

/// What ends a connection's service, or asks it to finish: the server's shutdown, a GOAWAY and a
/// cut from the controls. Subscribed when the connection is accepted, so that neither is missed
/// while its TLS handshake or its first bytes are awaited.
struct ConnectionEnds {
    shutdown: watch::Receiver<bool>,
    goaway: watch::Receiver<u64>,
    cut: watch::Receiver<u64>,
}

impl ConnectionEnds {
    fn new(controls: &Controls, shutdown: watch::Receiver<bool>) -> Self {
        let mut goaway = controls.goaway_epoch();
        goaway.borrow_and_update();
        let mut cut = controls.cut_epoch();
        cut.borrow_and_update();
        ConnectionEnds { shutdown, goaway, cut }
    }

    /// Completes when the server shuts down or the controls ask connections to finish; awaited
    /// while a connection is not served yet, which is then closed (as an idle one is).
    async fn finish_asked(&mut self) {
        tokio::select! {
            biased;
            _ = self.shutdown.wait_for(|s| *s) => {}
            Ok(()) = self.goaway.changed() => {}
            Ok(()) = self.cut.changed() => {}
        }
    }

    /// Serves `conn` until it ends or the server shuts down; `graceful` asks it to finish.
    async fn drive<C: std::future::Future>(
        mut self,
        mut conn: std::pin::Pin<&mut C>,
        graceful: fn(std::pin::Pin<&mut C>),
    ) {
        loop {
            tokio::select! {
                _ = conn.as_mut() => return,
                _ = self.shutdown.wait_for(|s| *s) => return,
                // HTTP/2: GOAWAY, streams in progress go on; HTTP/1.1: close after the response.
                Ok(()) = self.goaway.changed() => graceful(conn.as_mut()),
                // A cut closes an idle connection at once, as a reset socket is closed: a client
                // does not find it in its pool later. One with a response under way is cut in
                // the middle of its next write (`CutIo`).
                Ok(()) = self.cut.changed() => graceful(conn.as_mut()),
            }
        }
    }
}

/// A connection's socket that the controls can cut: after [`Controls::cut_connections`] its next
/// write goes out half and every operation then fails, as a connection reset in the middle of a
/// response (an idle connection is closed at once by its task, see `serve_conn`).
struct CutIo<I> {
    inner: I,
    cut: watch::Receiver<u64>,
    broken: bool,
}

impl<I> CutIo<I> {
    fn new(inner: I, mut cut: watch::Receiver<u64>) -> Self {
        cut.borrow_and_update();
        CutIo { inner, cut, broken: false }
    }

    fn get_ref(&self) -> &I {
        &self.inner
    }

    fn reset() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::ConnectionReset, "connection cut")
    }
}

impl<I: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for CutIo<I> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.broken {
            return std::task::Poll::Ready(Err(Self::reset()));
        }
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<I: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for CutIo<I> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.broken {
            return std::task::Poll::Ready(Err(Self::reset()));
        }
        if self.cut.has_changed().unwrap_or(false) {
            self.broken = true;
            let half = buf.len() / 2;
            if half == 0 {
                return std::task::Poll::Ready(Err(Self::reset()));
            }
            return std::pin::Pin::new(&mut self.inner).poll_write(cx, &buf[..half]);
        }
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    /// Vectored writes go through, so that HTTP/2 sends a DATA frame's head and payload in one
    /// system call rather than two; a cut sends half of the first buffer.
    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.broken || self.cut.has_changed().unwrap_or(false) {
            let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
            return self.poll_write(cx, first);
        }
        std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl ApiServer {
    /// A builder with defaults.
    pub fn builder() -> ApiServerBuilder {
        ApiServerBuilder::default()
    }

    async fn bind_and_run(&self, addr: SocketAddr) -> std::io::Result<()> {
        let sock = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
        sock.set_reuseaddr(true)?;
        sock.bind(addr)?;
        let listener = sock.listen(1024)?;
        let local = listener.local_addr()?;
        *self.addr.lock() = local;
        *self.shared.server_address.lock() = local.to_string();
        let (tx, rx) = watch::channel(false);
        let conns: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::new(Mutex::new(Vec::new()));
        let shared = self.shared.clone();
        let tls = self.tls.clone();
        let conns2 = conns.clone();
        let mut rx_accept = rx.clone();
        let (stop_accepting, mut rx_stop_accepting) = watch::channel(false);
        let accept = tokio::spawn(async move {
            loop {
                let (stream, _) = tokio::select! {
                    r = listener.accept() => match r {
                        Ok(s) => s,
                        Err(_) => continue,
                    },
                    _ = rx_accept.wait_for(|s| *s) => break,
                    _ = rx_stop_accepting.wait_for(|s| *s) => break,
                };
                let _ = stream.set_nodelay(true);
                let shared = shared.clone();
                let rx = rx.clone();
                let tls = tls.clone();
                let h = tokio::spawn(handle_stream(shared, stream, tls, rx));
                let mut c = conns2.lock();
                c.retain(|h| !h.is_finished());
                c.push(h);
            }
        });
        *self.running.lock().await = Some(Running { shutdown: tx, stop_accepting, accept, conns });
        Ok(())
    }

    /// What the `default/kubernetes` Service's endpoints give for this server.
    fn advertised(&self) -> crate::kubernetes_service::Advertised {
        let addr = self.addr();
        // (An unspecified address is none given, as kube reads its flag.)
        let ip = match self.advertise_address.filter(|ip| !ip.is_unspecified()) {
            Some(ip) => crate::kubernetes_service::usable(ip),
            None => crate::kubernetes_service::default_advertise_address(addr.ip()),
        };
        crate::kubernetes_service::Advertised { ip, port: addr.port() }
    }

    /// Starts the controllers that run while the server serves (when it keeps its default
    /// configuration): the identity lease's and the `default/kubernetes` Service's, after a first
    /// pass of each when `first_pass` (so that the lease, the Service and its endpoints are there
    /// when [`ApiServerBuilder::start`] returns).
    async fn start_serving_controllers(&self, first_pass: bool) {
        if !self.keeps_configuration {
            return;
        }
        let store = &self.shared.store;
        let user = crate::requester::server_user;
        let (stop, rx) = watch::channel(false);
        let mut tasks = Vec::new();
        // The identity lease: begun (a stale one replaced) before the first pass answers.
        let identity = self.identity.then(|| crate::apiserver_identity::Controller::new(store.clone())).flatten();
        let identity_lease = identity.as_ref().map(|c| c.name().to_string());
        if let Some(controller) = identity {
            let begun =
                if first_pass { Some(crate::requester::scope(Some(user()), controller.begin()).await) } else { None };
            tasks.push(tokio::spawn(crate::requester::scope(Some(user()), controller.run(begun, rx.clone()))));
        }
        let advertised = self.advertised();
        if advertised.ip.is_none() {
            tracing::warn!(
                "no IPv4 address to advertise (neither loopback, link-local nor unspecified): the kubernetes Service gets no endpoints"
            );
        }
        if let Some(mut controller) = crate::kubernetes_service::Controller::new(store.clone(), advertised) {
            if first_pass && let Err(e) = crate::requester::scope(Some(user()), controller.pass()).await {
                tracing::warn!(error = %e, "unable to sync kubernetes service");
            }
            tasks.push(tokio::spawn(crate::requester::scope(Some(user()), controller.run(rx))));
        }
        let running = ServingControllers { stop, tasks, advertised, identity_lease };
        if let Some(old) = self.serving_controllers.lock().replace(running) {
            let _ = old.stop.send(true);
        }
    }

    /// Stops the controllers that run while the server serves (their passes under way given
    /// [`crate::kubernetes_service::INTERVAL`] to end, then cut); returns what they hold: the
    /// address of the kubernetes Service's lease and the identity lease's name.
    async fn stop_serving_controllers(&self) -> Option<(crate::kubernetes_service::Advertised, Option<String>)> {
        let running = self.serving_controllers.lock().take()?;
        let _ = running.stop.send(true);
        for mut task in running.tasks {
            if tokio::time::timeout(crate::kubernetes_service::INTERVAL, &mut task).await.is_err() {
                task.abort();
            }
        }
        Some((running.advertised, running.identity_lease))
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        *self.addr.lock()
    }

    /// `http://addr` or `https://addr`.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr())
    }

    /// A kubeconfig pointing at this server (with the token, if any).
    pub fn kubeconfig_yaml(&self) -> String {
        kubeconfig_yaml(&self.url(), self.shared.cfg.token.as_deref(), self.tls.is_some())
    }

    /// Writes [`Self::kubeconfig_yaml`] to `path`.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml())
    }

    /// Stops serving: closes the listener and all connections, those taken over by a switch of
    /// protocols (WebSocket watches, proxied tunnels) too (the storage keeps everything, and
    /// the watch cache goes on following it). The data directory, if any, is let go once the
    /// server is dropped and its background tasks are gone.
    pub async fn stop(&self) {
        self.stop_serving_controllers().await;
        let running = self.running.lock().await.take();
        if let Some(r) = running {
            let _ = r.shutdown.send(true);
            let _ = r.accept.await;
            let conns: Vec<JoinHandle<()>> = std::mem::take(&mut *r.conns.lock());
            for c in conns {
                let _ = c.await;
            }
        }
    }

    /// Restarts on the same address as a real restart does: the watch cache is rebuilt from the
    /// storage (objects, the RV counter and the history since the last compaction); requests get
    /// 429 until it is ready.
    pub async fn restart(&self) -> std::io::Result<()> {
        self.restart_with_cold_cache(Duration::ZERO).await
    }

    /// [`Self::restart`], with the watch cache taking `init_delay` longer to initialize (a cold
    /// cache on a large storage): meanwhile requests get 429 with Retry-After, and watches for
    /// revisions the cache has not reached get 504 "Too large resource version".
    pub async fn restart_with_cold_cache(&self, init_delay: Duration) -> std::io::Result<()> {
        self.stop().await;
        let store = self.shared.store.clone();
        if let Some(b) = self.background.lock().take() {
            b.stop();
        }
        store.cache().begin_reinit();
        let mut background =
            Background::start(store.clone(), (self.compaction_interval, self.disruption_controller), init_delay);
        background.keep_configuration(&store, self.keeps_configuration, true);
        *self.background.lock() = Some(background);
        // As kube's post-start hook on every start, before the server is ready: the bootstrap
        // roles reconciled.
        if store.authorization() == crate::AuthorizationMode::Rbac {
            store.cache().until_ready().await;
            if let Err(e) = crate::rbac_bootstrap::install(&store).await {
                tracing::warn!(error = %e, "unable to reconcile the bootstrap RBAC policy");
            }
        }
        let addr = self.addr();
        self.bind_and_run(addr).await?;
        self.start_serving_controllers(false).await;
        Ok(())
    }

    /// Shuts down as kube-apiserver does on SIGTERM: `/readyz` fails at once while requests are
    /// still served for `opts.delay`. Then, by default, the listener closes, open connections get
    /// GOAWAY (HTTP/2) or close after their response (HTTP/1.1), and requests still arriving on
    /// them get 503 "apiserver is shutting down" with `Retry-After: 1`; with
    /// `opts.send_retry_after` the listener stays open and new requests get 429 with
    /// `Retry-After: 5` and `Connection: close`. Requests in progress finish (up to
    /// `opts.drain_timeout`), open watches end `opts.watch_grace` later, and the server stops.
    /// [`Self::restart`] serves again.
    pub async fn shutdown_gracefully(&self, opts: GracefulShutdown) {
        let controls = &self.shared.controls;
        controls.set_not_ready(true);
        // As kube's pre-shutdown hooks, during the delay: this server's endpoint leaves the
        // kubernetes Service (within twice the renewal interval), and its identity lease is
        // deleted (within 10 s).
        let removal = async {
            let Some((advertised, identity_lease)) = self.stop_serving_controllers().await else { return };
            let store = &self.shared.store;
            let user = crate::requester::server_user;
            let removal = crate::kubernetes_service::remove(store, advertised);
            let removal = crate::requester::scope(Some(user()), removal);
            match tokio::time::timeout(crate::kubernetes_service::INTERVAL * 2, removal).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "unable to remove endpoints from kubernetes service"),
                Err(_) => tracing::warn!("removing endpoints from kubernetes service timed out"),
            }
            if let Some(name) = identity_lease {
                let deletion = crate::requester::scope(Some(user()), crate::apiserver_identity::delete(store, &name));
                match tokio::time::timeout(crate::apiserver_identity::RENEW, deletion).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!(error = %e, "failed to delete the apiserver identity lease"),
                    Err(_) => tracing::warn!("deleting the apiserver identity lease timed out"),
                }
            }
        };
        tokio::join!(removal, tokio::time::sleep(opts.delay));
        if opts.send_retry_after {
            controls.set_shutting_down(Some(ShutdownAnswer::RetryAfter));
        } else {
            controls.set_shutting_down(Some(ShutdownAnswer::ServiceUnavailable));
            if let Some(r) = self.running.lock().await.as_ref() {
                let _ = r.stop_accepting.send(true);
            }
            controls.goaway();
        }
        controls.wait_drained(opts.drain_timeout).await;
        tokio::time::sleep(opts.watch_grace).await;
        controls.drop_watches();
        self.stop().await;
        controls.set_shutting_down(None);
        controls.set_not_ready(false);
    }

    /// Makes the watch cache lag: it applies each change of the storage `lag` late (a cache
    /// behind its storage, as a busy kube-apiserver's can be). Requests for resourceVersions it
    /// has not reached wait, then get 504 "Too large resource version".
    pub fn set_cache_lag(&self, lag: Duration) {
        self.shared.store.cache().set_lag(lag);
    }

    /// Whether the server is currently serving.
    pub async fn is_running(&self) -> bool {
        self.running.lock().await.is_some()
    }

    /// Waits until the watch cache serves (after a restart); false on timeout.
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        self.shared.store.cache().wait_ready(timeout).await
    }

    // ---- test controls ----

    /// Gives every namespace its `default` ServiceAccount now, as the serviceaccounts controller
    /// does a moment after a namespace is created (so that no write of it comes later).
    pub async fn settle_service_accounts(&self) {
        crate::service_account_controller::settle(&self.shared.store).await;
    }

    /// The live test controls.
    pub fn controls(&self) -> &Controls {
        &self.shared.controls
    }

    /// Ends every open watch now.
    pub fn drop_watches(&self) {
        self.shared.controls.drop_watches();
    }

    /// Cuts every open connection in the middle of its next write (see
    /// [`Controls::cut_connections`]).
    pub fn cut_connections(&self) {
        self.shared.controls.cut_connections();
    }

    /// Sends HTTP/2 GOAWAY on every open connection (see [`Controls::goaway`]).
    pub fn goaway(&self) {
        self.shared.controls.goaway();
    }

    /// Compacts the storage's history (and the cache's) up to the current RV; returns that RV.
    pub async fn compact(&self) -> Result<u64, ApiError> {
        self.shared.store.compact(None).await
    }

    /// Compacts history up to `rv`.
    pub async fn compact_to(&self, rv: u64) -> Result<u64, ApiError> {
        self.shared.store.compact(Some(rv)).await
    }

    /// The next `n` requests fail with 429 and `Retry-After: retry_after_secs`.
    pub fn fail_next_with_429(&self, n: u64, retry_after_secs: u64) {
        self.shared.controls.fail_next(n, Fault::TooManyRequests { retry_after_secs });
    }

    /// The next `n` requests fail with 500.
    pub fn fail_next_with_500(&self, n: u64) {
        self.shared.controls.fail_next(n, Fault::InternalError);
    }

    /// Number of watch streams currently open.
    pub fn open_watches(&self) -> usize {
        self.shared.controls.open_watches()
    }

    /// Waits until at least `n` watch streams are open (false on timeout) —
    /// lets tests write only after a client's watch is established.
    pub async fn wait_for_watches(&self, n: usize, timeout: Duration) -> bool {
        self.shared.controls.wait_for_watches(n, timeout).await
    }

    /// Waits until at most `n` watch streams are open (false on timeout).
    pub async fn wait_for_watches_at_most(&self, n: usize, timeout: Duration) -> bool {
        self.shared.controls.wait_for_watches_at_most(n, timeout).await
    }

    /// Counts of handled resource requests by verb.
    pub fn request_counts(&self) -> crate::controls::RequestCounts {
        self.shared.controls.request_counts()
    }

    /// Adds a delay before handling every request.
    pub fn set_latency(&self, d: Duration) {
        self.shared.controls.set_latency(d);
    }

    /// Adds a delay between watch events (initial events of streaming lists included): a slow
    /// link.
    pub fn set_stream_delay(&self, d: Duration) {
        self.shared.controls.set_stream_delay(d);
    }

    /// Closes watchers that do not keep up, as kube-apiserver does (see
    /// [`UnresponsiveClose`](crate::controls::UnresponsiveClose)); None turns it off (the default).
    pub fn set_unresponsive_close(&self, rule: Option<crate::controls::UnresponsiveClose>) {
        self.shared.controls.set_unresponsive_close(rule);
    }

    // ---- in-process object access ----

    /// The REST layer (for advanced in-process use).
    pub fn store(&self) -> &Arc<Store> {
        &self.shared.store
    }

    /// The newest resourceVersion this server knows (its cache's, or its last write's).
    pub fn resource_version(&self) -> u64 {
        self.shared.store.resource_version()
    }

    /// The resource named `resource`, once the watch cache serves (in-process calls wait for a
    /// restarted cache instead of getting 429).
    async fn info(&self, resource: &str) -> Result<Arc<ResourceInfo>, ApiError> {
        self.shared.store.cache().wait_ready(self.ready_timeout).await;
        self.shared.store.registry().lookup(resource).cloned().ok_or_else(ApiError::no_route)
    }

    /// Creates an object. `resource` is a plural (`pods`), `plural.group`
    /// (`deployments.apps`), kind or short name. The namespace comes from
    /// `metadata.namespace` (default `default`). As over HTTP, a resource with a `status`
    /// subresource (Nodes excepted) starts with the status kube's create strategy gives it,
    /// whatever the body says: write the status with [`Self::update_status`] or
    /// [`Self::patch_status`] afterwards.
    pub async fn create(&self, resource: &str, obj: Value) -> Result<Value, ApiError> {
        let info = self.info(resource).await?;
        Ok(self.shared.store.create(&info, None, obj).await?.value())
    }

    /// Creates many objects at once (validated together, written concurrently); returns the
    /// newest RV written.
    pub async fn create_many(&self, resource: &str, objs: Vec<Value>) -> Result<u64, ApiError> {
        let info = self.info(resource).await?;
        let out = self.shared.store.create_many(&info, None, objs, false, "").await?;
        Ok(out.iter().map(|o| o.rv).max().unwrap_or_else(|| self.resource_version()))
    }

    /// Replaces an object as a PUT does (resourceVersion in the body is a precondition; custom
    /// resources and the kinds kube's strategies name need it; a missing Service, lease, RBAC
    /// object, … is created). For a resource with a `status` subresource the stored `status` is
    /// kept: see [`Self::update_status`].
    pub async fn update(&self, resource: &str, obj: Value) -> Result<Value, ApiError> {
        let info = self.info(resource).await?;
        Ok(self.shared.store.put(&info, None, None, obj, WriteOpts::default()).await?.0.value())
    }

    /// Replaces the `status` of an object through its `status` subresource (with the metadata
    /// its resource's status strategy takes, never the spec; resourceVersion in the body is a
    /// precondition, required as by [`Self::update`]).
    pub async fn update_status(&self, resource: &str, obj: Value) -> Result<Value, ApiError> {
        let info = self.info(resource).await?;
        if !info.status_subresource {
            return Err(ApiError::no_route());
        }
        Ok(self.shared.store.put(&info, None, None, obj, WriteOpts::status(false)).await?.0.value())
    }

    /// Applies a JSON merge patch to the `status` of an object (its `status` subresource).
    pub async fn patch_status(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<Value, ApiError> {
        let info = self.info(resource).await?;
        if !info.status_subresource {
            return Err(ApiError::no_route());
        }
        let bytes = serde_json::to_vec(patch).map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok(self
            .shared
            .store
            .patch(&info, namespace, name, PatchType::Merge, &bytes, WriteOpts::status(false))
            .await?
            .value())
    }

    /// Applies a JSON merge patch (to the object itself: for a resource with a `status`
    /// subresource, `status` is kept).
    pub async fn patch(&self, resource: &str, namespace: &str, name: &str, patch: &Value) -> Result<Value, ApiError> {
        let info = self.info(resource).await?;
        let bytes = serde_json::to_vec(patch).map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok(self
            .shared
            .store
            .patch(&info, namespace, name, PatchType::Merge, &bytes, WriteOpts::default())
            .await?
            .value())
    }

    /// Deletes an object as a DELETE without options does; returns its last state (with the
    /// deletion RV when it is gone). A pod bound to a node is only marked terminating, for the
    /// period its spec gives, as kube-apiserver marks it for its kubelet; delete it with
    /// [`DeleteOpts::grace_period`](crate::delete_options::DeleteOpts::grace_period)`(0)` to
    /// remove it at once.
    pub async fn delete(&self, resource: &str, namespace: &str, name: &str) -> Result<Value, ApiError> {
        self.delete_with(resource, namespace, name, &crate::delete_options::DeleteOpts::default()).await
    }

    /// Deletes an object with these options (such as a propagation policy); returns its last
    /// state (with the deletion RV when it is gone).
    pub async fn delete_with(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        opts: &crate::delete_options::DeleteOpts,
    ) -> Result<Value, ApiError> {
        let info = self.info(resource).await?;
        Ok(self.shared.store.delete(&info, namespace, name, opts).await?.0.value())
    }

    /// Waits (up to `timeout`) until the garbage collector has judged every change made so far
    /// and what its own writes led to — a test's way to know that an object the collector
    /// would delete is gone, or that one it keeps is kept for good. True at once when the
    /// collector does not run; false when the time runs out.
    pub async fn garbage_collector_settled(&self, timeout: Duration) -> bool {
        let store = &self.shared.store;
        if !store.garbage_collection() {
            return true;
        }
        let target = store.resource_version().max(store.cache().resource_version());
        let mut progress = store.garbage_collector_progress().subscribe();
        matches!(tokio::time::timeout(timeout, progress.wait_for(|p| *p >= target)).await, Ok(Ok(_)))
    }

    /// Gets an object (a consistent read).
    pub async fn get(&self, resource: &str, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let info = self.info(resource).await?;
        Ok(self.shared.store.get(&info, namespace, name).await?.value())
    }

    /// Lists objects (all namespaces when `namespace` is None), key order (a consistent read).
    pub async fn list(&self, resource: &str, namespace: Option<&str>) -> Result<Vec<Value>, ApiError> {
        Ok(self.list_raw(resource, namespace).await?.iter().map(|o| o.value()).collect())
    }

    /// Lists stored objects without parsing them (a consistent read).
    pub async fn list_raw(&self, resource: &str, namespace: Option<&str>) -> Result<Vec<Arc<StoredObject>>, ApiError> {
        let info = self.info(resource).await?;
        Ok(self.shared.store.snapshot(&info, namespace, &Selectors::default()).await?.1)
    }
}

async fn handle_stream(
    shared: Arc<Shared>,
    stream: TcpStream,
    tls: Option<tokio_rustls::TlsAcceptor>,
    rx: watch::Receiver<bool>,
) {
    let client = stream.peer_addr().ok();
    let mut ends = ConnectionEnds::new(&shared.controls, rx);
    let stream = CutIo::new(stream, shared.controls.cut_epoch());
    match tls {
        None => {
            // The client's first bytes are awaited as the connection would await them: a
            // shutdown, a GOAWAY or a cut closes it meanwhile.
            let version = tokio::select! {
                biased;
                _ = ends.finish_asked() => return,
                v = crate::http_version::peek(stream.get_ref()) => match v {
                    Ok(v) => v,
                    Err(_) => return,
                },
            };
            serve_conn(shared, stream, client, version, ends).await
        }
        // Boxed: the TLS state would otherwise enlarge the task of every plain connection.
        Some(acc) => {
            Box::pin(async move {
                let tls_stream = tokio::select! {
                    r = acc.accept(stream) => match r {
                        Ok(s) => s,
                        Err(_) => return,
                    },
                    _ = ends.shutdown.wait_for(|s| *s) => return,
                };
                let version = crate::http_version::negotiated(tls_stream.get_ref().1.alpn_protocol());
                serve_conn(shared, tls_stream, client, version, ends).await
            })
            .await
        }
    }
}

/// A kubeconfig YAML for `server` (optional bearer token; TLS verification
/// skipped for self-signed test certificates).
pub fn kubeconfig_yaml(server: &str, token: Option<&str>, insecure_tls: bool) -> String {
    let mut s = String::new();
    s.push_str("apiVersion: v1\nkind: Config\nclusters:\n- name: informer\n  cluster:\n");
    s.push_str(&format!("    server: {server}\n"));
    if insecure_tls {
        s.push_str("    insecure-skip-tls-verify: true\n");
    }
    s.push_str(
        "contexts:\n- name: informer\n  context:\n    cluster: informer\n    user: informer\n    namespace: default\n",
    );
    s.push_str("current-context: informer\nusers:\n- name: informer\n  user:");
    match token {
        Some(t) => s.push_str(&format!("\n    token: {t}\n")),
        None => s.push_str(" {}\n"),
    }
    s.push_str("preferences: {}\n");
    s
}
