//! The embeddable server: builder, running handle, accept loop, restart,
//! kubeconfig, and direct in-process object access.
//!
//! Invariants: the store and controls outlive restarts (a restart keeps all
//! objects and the RV counter but drops the watch-cache history, like a real
//! apiserver restart); `stop()` closes the listener and every open
//! connection before it returns, so `restart()` can bind the same port.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::controls::{Controls, Fault};
use crate::handlers::{self, Config, Shared};
use crate::object::StoredObject;
use crate::registry::{Registry, ResourceInfo};
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::{HistoryConfig, PatchType, Store, WriteOpts};

/// Builds an [`ApiServer`].
#[derive(Debug, Clone)]
pub struct ApiServerBuilder {
    addr: SocketAddr,
    registry: Registry,
    cfg: Config,
    history: HistoryConfig,
    tls: Option<(PathBuf, PathBuf)>,
    default_namespaces: bool,
    data_dir: Option<PathBuf>,
}

impl Default for ApiServerBuilder {
    fn default() -> Self {
        ApiServerBuilder {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            registry: Registry::with_defaults(),
            cfg: Config::default(),
            history: HistoryConfig::default(),
            tls: None,
            default_namespaces: true,
            data_dir: None,
        }
    }
}

impl ApiServerBuilder {
    /// Listen address (default `127.0.0.1:0`).
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// Requires `Authorization: Bearer <token>` on every request.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.cfg.token = Some(token.into());
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

    /// How long a request for a future RV waits before 504 (default 3 s).
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

    /// Target watch chunk size in bytes (default 128 KiB).
    pub fn watch_chunk_bytes(mut self, bytes: usize) -> Self {
        self.cfg.chunk_bytes = bytes.max(1);
        self
    }

    /// Whether to create the `default`, `kube-system`, `kube-public` and
    /// `kube-node-lease` namespaces at start (default true).
    pub fn default_namespaces(mut self, yes: bool) -> Self {
        self.default_namespaces = yes;
        self
    }

    /// Persists objects and the RV counter in `dir` (loaded at start, saved
    /// every second when changed and on stop).
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// Binds and starts serving.
    pub async fn start(self) -> std::io::Result<ApiServer> {
        let tls = match &self.tls {
            Some((c, k)) => Some(crate::tls::acceptor(c, k)?),
            None => None,
        };
        let store = Arc::new(Store::new(Arc::new(self.registry), self.history));
        let loaded = match &self.data_dir {
            Some(d) => crate::persist::load(&store, d)?,
            None => false,
        };
        if !loaded
            && self.default_namespaces
            && let Some(ns) = store.registry().lookup("namespaces").cloned()
        {
            for n in ["default", "kube-node-lease", "kube-public", "kube-system"] {
                let obj = serde_json::json!({
                    "metadata": {"name": n, "labels": {"kubernetes.io/metadata.name": n}},
                    "spec": {"finalizers": ["kubernetes"]},
                });
                let _ = store.create(&ns, None, obj);
            }
        }
        let shared = Arc::new(Shared {
            store,
            controls: Arc::new(Controls::default()),
            cfg: self.cfg,
            server_address: Mutex::new(String::new()),
        });
        let saver = self.data_dir.clone().map(|dir| {
            let store = shared.store.clone();
            tokio::spawn(async move {
                let mut saved = store.resource_version();
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let rv = store.resource_version();
                    if rv != saved {
                        let (st, d) = (store.clone(), dir.clone());
                        match tokio::task::spawn_blocking(move || crate::persist::save(&st, &d)).await {
                            Ok(Ok(())) => saved = rv,
                            Ok(Err(e)) => tracing::warn!(error = %e, "saving state failed"),
                            Err(_) => {}
                        }
                    }
                }
            })
        });
        let server = ApiServer {
            shared,
            addr: Mutex::new(self.addr),
            tls,
            running: tokio::sync::Mutex::new(None),
            data_dir: self.data_dir,
            saver,
        };
        server.bind_and_run(self.addr).await?;
        Ok(server)
    }
}

struct Running {
    shutdown: watch::Sender<bool>,
    accept: JoinHandle<()>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

/// A running (or stopped) in-process API server.
pub struct ApiServer {
    shared: Arc<Shared>,
    addr: Mutex<SocketAddr>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    running: tokio::sync::Mutex<Option<Running>>,
    data_dir: Option<PathBuf>,
    saver: Option<JoinHandle<()>>,
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(s) = &self.saver {
            s.abort();
        }
        if let Ok(mut r) = self.running.try_lock()
            && let Some(r) = r.take()
        {
            let _ = r.shutdown.send(true);
            r.accept.abort();
        }
    }
}

async fn serve_conn<I>(shared: Arc<Shared>, io: I, mut shutdown: watch::Receiver<bool>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, std::convert::Infallible>(handlers::handle(shared, req).await) }
    });
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection(TokioIo::new(io), svc);
    tokio::select! {
        _ = conn => {}
        _ = shutdown.wait_for(|s| *s) => {}
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
        let accept = tokio::spawn(async move {
            loop {
                let (stream, _) = tokio::select! {
                    r = listener.accept() => match r {
                        Ok(s) => s,
                        Err(_) => continue,
                    },
                    _ = rx_accept.wait_for(|s| *s) => break,
                };
                let _ = stream.set_nodelay(true);
                let shared = shared.clone();
                let rx = rx.clone();
                let tls = tls.clone();
                let h = tokio::spawn(async move {
                    handle_stream(shared, stream, tls, rx).await;
                });
                let mut c = conns2.lock();
                c.retain(|h| !h.is_finished());
                c.push(h);
            }
        });
        *self.running.lock().await = Some(Running { shutdown: tx, accept, conns });
        Ok(())
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

    /// Writes the persistence snapshot now (no-op without a data dir).
    pub fn save_now(&self) -> std::io::Result<()> {
        match &self.data_dir {
            Some(d) => crate::persist::save(&self.shared.store, d),
            None => Ok(()),
        }
    }

    /// Stops serving: closes the listener and all connections (state kept,
    /// and saved when a data dir is set).
    pub async fn stop(&self) {
        if let Err(e) = self.save_now() {
            tracing::warn!(error = %e, "saving state failed");
        }
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

    /// Restarts on the same address, keeping objects and the RV counter but
    /// dropping watch-cache history (old RVs then get 410, as after a real
    /// apiserver restart).
    pub async fn restart(&self) -> std::io::Result<()> {
        self.stop().await;
        self.shared.store.reset_history();
        let addr = self.addr();
        self.bind_and_run(addr).await
    }

    /// Whether the server is currently serving.
    pub async fn is_running(&self) -> bool {
        self.running.lock().await.is_some()
    }

    // ---- test controls ----

    /// The live test controls.
    pub fn controls(&self) -> &Controls {
        &self.shared.controls
    }

    /// Ends every open watch now.
    pub fn drop_watches(&self) {
        self.shared.controls.drop_watches();
    }

    /// Compacts history up to the current RV; returns that RV.
    pub fn compact(&self) -> u64 {
        self.shared.store.compact(None)
    }

    /// Compacts history up to `rv`.
    pub fn compact_to(&self, rv: u64) -> u64 {
        self.shared.store.compact(Some(rv))
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

    /// The store (for advanced in-process use).
    pub fn store(&self) -> &Arc<Store> {
        &self.shared.store
    }

    /// The current cluster-wide resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.store.resource_version()
    }

    fn info(&self, resource: &str) -> Result<Arc<ResourceInfo>, ApiError> {
        self.shared.store.registry().lookup(resource).cloned().ok_or_else(ApiError::no_route)
    }

    /// Creates an object. `resource` is a plural (`pods`), `plural.group`
    /// (`deployments.apps`), kind or short name. The namespace comes from
    /// `metadata.namespace` (default `default`).
    pub fn create(&self, resource: &str, obj: Value) -> Result<Value, ApiError> {
        let info = self.info(resource)?;
        Ok(self.shared.store.create(&info, None, obj)?.value())
    }

    /// Creates many objects at once (all or nothing); returns the RV after.
    pub fn create_many(&self, resource: &str, objs: Vec<Value>) -> Result<u64, ApiError> {
        let info = self.info(resource)?;
        let out = self.shared.store.create_many(&info, None, objs, false)?;
        Ok(out.last().map(|o| o.rv).unwrap_or_else(|| self.resource_version()))
    }

    /// Replaces an object (resourceVersion in the body is a precondition).
    pub fn update(&self, resource: &str, obj: Value) -> Result<Value, ApiError> {
        let info = self.info(resource)?;
        Ok(self.shared.store.update(&info, None, None, obj, WriteOpts::default())?.value())
    }

    /// Applies a JSON merge patch.
    pub fn patch(&self, resource: &str, namespace: &str, name: &str, patch: &Value) -> Result<Value, ApiError> {
        let info = self.info(resource)?;
        let bytes = serde_json::to_vec(patch).map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok(self.shared.store.patch(&info, namespace, name, PatchType::Merge, &bytes, WriteOpts::default())?.value())
    }

    /// Deletes an object; returns its last state (with the deletion RV).
    pub fn delete(&self, resource: &str, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let info = self.info(resource)?;
        Ok(self.shared.store.delete(&info, namespace, name, None, None, false)?.value())
    }

    /// Gets an object.
    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Result<Value, ApiError> {
        let info = self.info(resource)?;
        Ok(self.shared.store.get(&info, namespace, name)?.value())
    }

    /// Lists objects (all namespaces when `namespace` is None), key order.
    pub fn list(&self, resource: &str, namespace: Option<&str>) -> Result<Vec<Value>, ApiError> {
        let info = self.info(resource)?;
        let (_, items) = self.shared.store.snapshot(&info, namespace, &Selectors::default())?;
        Ok(items.iter().map(|o| o.value()).collect())
    }

    /// Lists raw stored objects without parsing (fast path for benchmarks).
    pub fn list_raw(&self, resource: &str, namespace: Option<&str>) -> Result<Vec<Arc<StoredObject>>, ApiError> {
        let info = self.info(resource)?;
        Ok(self.shared.store.snapshot(&info, namespace, &Selectors::default())?.1)
    }
}

async fn handle_stream(
    shared: Arc<Shared>,
    stream: TcpStream,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut rx: watch::Receiver<bool>,
) {
    match tls {
        None => serve_conn(shared, stream, rx).await,
        Some(acc) => {
            let tls_stream = tokio::select! {
                r = acc.accept(stream) => match r {
                    Ok(s) => s,
                    Err(_) => return,
                },
                _ = rx.wait_for(|s| *s) => return,
            };
            serve_conn(shared, tls_stream, rx).await
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
