//! Test support: servers on the storage backend a test run selects, so one suite runs unchanged on
//! every backend.
//!
//! `INFORMER_TEST_STORAGE` selects it: `memory` (the default), `sqlite` (a fresh data directory
//! per server) or `etcd` (one etcd process per test binary, started on first use, and a key
//! prefix of its own per server, so servers never see each other's objects).
//!
//! Admission webhooks run by a test get their certificates from [`WebhookCertificate`].
//!
//! Invariants: every server [`builder`] returns starts empty; directories and processes it
//! creates never outlive the test process (the etcd process dies with it; stale directories of
//! dead test processes are removed on the next run).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::etcd_process::EtcdProcess;
use crate::server::{ApiServer, ApiServerBuilder, StorageConfig};
pub use crate::webhook_certificate::WebhookCertificate;

/// The storage backends a test run can select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// In memory.
    Memory,
    /// SQLite in a temporary directory.
    Sqlite,
    /// A real etcd.
    Etcd,
}

/// The backend `INFORMER_TEST_STORAGE` names (memory when unset).
///
/// # Panics
/// On an unknown name: a misspelt variable must not silently test the memory backend.
pub fn backend() -> Backend {
    match std::env::var("INFORMER_TEST_STORAGE").as_deref() {
        Err(_) | Ok("") | Ok("memory") => Backend::Memory,
        Ok("sqlite") => Backend::Sqlite,
        Ok("etcd") => Backend::Etcd,
        Ok(other) => panic!("INFORMER_TEST_STORAGE={other:?}: expected memory, sqlite or etcd"),
    }
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// A fresh directory for one test server's data, removed with the test process's others on the
/// next run.
pub fn temp_data_dir() -> PathBuf {
    static CLEANED: OnceLock<()> = OnceLock::new();
    CLEANED.get_or_init(|| remove_stale("informer-test-data-"));
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("informer-test-data-{}-{n}", std::process::id()))
}

/// Removes `<tmp>/<prefix><pid>-…` entries of processes that are gone.
pub(crate) fn remove_stale(prefix: &str) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(rest) = name.strip_prefix(prefix) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn shared_etcd() -> String {
    static ETCD: OnceLock<EtcdProcess> = OnceLock::new();
    ETCD.get_or_init(|| EtcdProcess::start().expect("start etcd for the tests (is etcd-server installed?)")).url()
}

/// [`ApiServer::builder`] on the selected backend, advertising no address (loopback, which the
/// kubernetes Service's endpoints never hold) and without the identity lease: no lease is
/// renewed, so a test's revisions move with its own writes alone; tests of those leases turn
/// them on.
pub fn builder() -> ApiServerBuilder {
    let builder = match backend() {
        Backend::Memory => ApiServer::builder(),
        Backend::Sqlite => ApiServer::builder().storage(StorageConfig::Sqlite(temp_data_dir())),
        Backend::Etcd => {
            let n = SEQ.fetch_add(1, Ordering::Relaxed);
            ApiServer::builder()
                .storage(StorageConfig::Etcd { endpoints: vec![shared_etcd()] })
                .etcd_prefix(format!("/test-{}-{n}/registry", std::process::id()))
        }
    };
    builder.advertise_address(std::net::Ipv4Addr::LOCALHOST.into()).apiserver_identity(false)
}

/// A builder of another server on `server`'s storage, under the same key prefix: a replica, as
/// kube-apiserver replicas share one etcd.
pub fn replica_of(server: &ApiServer) -> ApiServerBuilder {
    let store = server.store();
    ApiServer::builder()
        .storage(StorageConfig::Custom(store.storage().clone()))
        .etcd_prefix(store.cache().layout().prefix())
}

/// Creates the namespaces `names` (those that exist already are left as they are), each with
/// its `default` ServiceAccount: a server, like kube-apiserver, creates objects only in
/// namespaces that exist.
pub async fn create_namespaces(server: &ApiServer, names: &[&str]) -> Result<(), crate::ApiError> {
    for name in names {
        match server.create("namespaces", serde_json::json!({"metadata": {"name": name}})).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    server.settle_service_accounts().await;
    Ok(())
}

/// A TCP proxy for fault tests: forwards every connection to a target address that can be
/// changed (a load balancer switching replicas), refuses new connections while blocked (a
/// server or network that is away), and can reset every open connection at once (a connection
/// reset in the middle of a stream).
///
/// Invariants: a connection is forwarded to the target current when it was accepted; a reset
/// closes both sides of every connection open at that moment; dropping the proxy stops it.
pub struct TcpProxy {
    addr: std::net::SocketAddr,
    state: std::sync::Arc<parking_lot::Mutex<ProxyState>>,
    reset: tokio::sync::watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

struct ProxyState {
    target: std::net::SocketAddr,
    blocked: bool,
    accepted: u64,
}

impl TcpProxy {
    /// A proxy on a free loopback port forwarding to `target`.
    pub async fn start(target: std::net::SocketAddr) -> std::io::Result<TcpProxy> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = std::sync::Arc::new(parking_lot::Mutex::new(ProxyState { target, blocked: false, accepted: 0 }));
        let (reset, _) = tokio::sync::watch::channel(0u64);
        let st = state.clone();
        let resets = reset.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else { continue };
                let (target, blocked) = {
                    let mut s = st.lock();
                    s.accepted += 1;
                    (s.target, s.blocked)
                };
                if blocked {
                    // Refused as a closed port would: reset at once.
                    let _ = inbound.set_zero_linger();
                    drop(inbound);
                    continue;
                }
                let mut reset_rx = resets.subscribe();
                reset_rx.borrow_and_update();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                        let _ = inbound.set_zero_linger();
                        return;
                    };
                    let _ = inbound.set_nodelay(true);
                    let _ = outbound.set_nodelay(true);
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = reset_rx.changed() => {
                            let _ = inbound.set_zero_linger();
                            let _ = outbound.set_zero_linger();
                        }
                    }
                });
            }
        });
        Ok(TcpProxy { addr, state, reset, task })
    }

    /// The proxy's address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Forwards new connections to `target` from now on.
    pub fn set_target(&self, target: std::net::SocketAddr) {
        self.state.lock().target = target;
    }

    /// Refuses (true) or accepts (false) new connections.
    pub fn set_blocked(&self, blocked: bool) {
        self.state.lock().blocked = blocked;
    }

    /// Resets every open connection now.
    pub fn reset_connections(&self) {
        self.reset.send_modify(|n| *n += 1);
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.state.lock().accepted
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.task.abort();
        self.reset_connections();
    }
}
