//! The standalone runner used by the `informer serve` CLI subcommand: kube-apiserver's storage
//! flags (`--etcd-servers`, `--etcd-prefix`, `--etcd-compaction-interval`) or a data directory,
//! CustomResourceDefinitions to install from a directory (`--crds`), the service account signing
//! key (`--service-account-key-file`),
//! and kube-apiserver's graceful shutdown on SIGINT/SIGTERM (`--shutdown-delay-duration`,
//! `--shutdown-send-retry-after`, `--shutdown-watch-termination-grace-period`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::server::{ApiServer, GracefulShutdown, StorageConfig};

/// Options of [`serve`].
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Listen address.
    pub addr: SocketAddr,
    /// Required bearer token.
    pub token: Option<String>,
    /// TLS certificate PEM file (needs `tls_key`).
    pub tls_cert: Option<PathBuf>,
    /// TLS private key PEM file.
    pub tls_key: Option<PathBuf>,
    /// Where to write a kubeconfig for the server.
    pub write_kubeconfig: Option<PathBuf>,
    /// Keep objects durably in this directory (SQLite).
    pub data_dir: Option<PathBuf>,
    /// Keep objects in etcd at these client URLs.
    pub etcd_servers: Vec<String>,
    /// The etcd key prefix.
    pub etcd_prefix: String,
    /// How often the storage's history is compacted (zero: never).
    pub compaction_interval: Duration,
    /// How long an Event is kept after its last write (zero: for good; see
    /// [`crate::ApiServerBuilder::event_ttl`]).
    pub event_ttl: Duration,
    /// How the server shuts down on SIGINT or SIGTERM.
    pub shutdown: GracefulShutdown,
    /// A directory of CustomResourceDefinitions to install before serving (see
    /// [`crate::ApiServerBuilder::crds_from_dir`]).
    pub crds_dir: Option<PathBuf>,
    /// Whether the garbage collector runs (see [`crate::ApiServerBuilder::garbage_collector`]).
    pub garbage_collector: bool,
    /// kube-apiserver's `--enable-garbage-collector` (see
    /// [`crate::ApiServerBuilder::garbage_collection`]).
    pub garbage_collection: bool,
    /// Whether the disruption controller runs (see
    /// [`crate::ApiServerBuilder::disruption_controller`]).
    pub disruption_controller: bool,
    /// Whether kube's ServiceAccount admission plugin runs (see
    /// [`crate::ApiServerBuilder::service_account_admission`]).
    pub service_account_admission: bool,
    /// The service account signing key (ECDSA P-256 or RSA: PKCS#8 PEM or DER, SEC1 or PKCS#1 PEM; see
    /// [`crate::ApiServerBuilder::service_account_key`]).
    pub service_account_key_file: Option<PathBuf>,
    /// How requests are authorized (see [`crate::ApiServerBuilder::authorization`]).
    pub authorization: crate::AuthorizationMode,
    /// The address the `default/kubernetes` Service's endpoints give (see
    /// [`crate::ApiServerBuilder::advertise_address`]).
    pub advertise_address: Option<std::net::IpAddr>,
    /// Whether the proxies verify `https` backends (see
    /// [`crate::ApiServerBuilder::verify_proxied_tls`]).
    pub verify_proxied_tls: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            token: None,
            tls_cert: None,
            tls_key: None,
            write_kubeconfig: None,
            data_dir: None,
            etcd_servers: Vec::new(),
            etcd_prefix: "/registry".into(),
            compaction_interval: Duration::from_secs(300),
            event_ttl: crate::event_ttl::DEFAULT_TTL,
            shutdown: GracefulShutdown::default(),
            crds_dir: None,
            garbage_collector: true,
            garbage_collection: true,
            disruption_controller: true,
            service_account_admission: true,
            service_account_key_file: None,
            authorization: crate::AuthorizationMode::AlwaysAllow,
            advertise_address: None,
            verify_proxied_tls: true,
        }
    }
}

/// Errors of [`serve`].
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Bad option combination.
    #[error("invalid options: {0}")]
    Options(String),
    /// I/O (bind, TLS files, kubeconfig, storage).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Starts a server with `opts`; returns it (keep it alive to keep serving).
pub async fn start(opts: ServeOptions) -> Result<ApiServer, ServeError> {
    let mut b = ApiServer::builder()
        .addr(opts.addr)
        .etcd_prefix(opts.etcd_prefix.clone())
        .compaction_interval(opts.compaction_interval)
        .event_ttl(opts.event_ttl)
        .garbage_collector(opts.garbage_collector)
        .garbage_collection(opts.garbage_collection)
        .disruption_controller(opts.disruption_controller)
        .service_account_admission(opts.service_account_admission)
        .authorization(opts.authorization)
        .verify_proxied_tls(opts.verify_proxied_tls);
    b = match (&opts.data_dir, opts.etcd_servers.is_empty()) {
        (Some(_), false) => {
            return Err(ServeError::Options("--data-dir and --etcd-servers are two different storages".into()));
        }
        (Some(d), true) => b.storage(StorageConfig::Sqlite(d.clone())),
        (None, false) => b.storage(StorageConfig::Etcd { endpoints: opts.etcd_servers.clone() }),
        (None, true) => b,
    };
    if let Some(t) = &opts.token {
        b = b.token(t.clone());
    }
    if let Some(ip) = opts.advertise_address {
        b = b.advertise_address(ip);
    }
    if let Some(dir) = &opts.crds_dir {
        b = b.crds_from_dir(dir);
    }
    if let Some(path) = &opts.service_account_key_file {
        let bytes = std::fs::read(path)?;
        let der = match std::str::from_utf8(&bytes) {
            Ok(text) if text.contains("-----BEGIN") => crate::service_account_token::pkcs8_from_pem(text)
                .map_err(|e| ServeError::Options(format!("--service-account-key-file {}: {e}", path.display())))?,
            _ => bytes,
        };
        crate::service_account_token::TokenSigner::from_pkcs8(&der)
            .map_err(|e| ServeError::Options(format!("--service-account-key-file {}: {e}", path.display())))?;
        b = b.service_account_key(der);
    }
    match (&opts.tls_cert, &opts.tls_key) {
        (Some(c), Some(k)) => b = b.tls(c.clone(), k.clone()),
        (None, None) => {}
        _ => {
            return Err(ServeError::Options("--tls-cert and --tls-key go together".into()));
        }
    }
    let server = b.start().await?;
    if let Some(p) = &opts.write_kubeconfig {
        server.write_kubeconfig(p)?;
    }
    Ok(server)
}

/// Runs a server until SIGINT (Ctrl-C) or SIGTERM, then shuts it down gracefully as
/// `opts.shutdown` says.
pub async fn serve(opts: ServeOptions) -> Result<(), ServeError> {
    let shutdown = opts.shutdown;
    let server = start(opts).await?;
    tracing::info!(url = %server.url(), "informer apiserver listening");
    eprintln!("informer apiserver listening on {}", server.url());
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
    tracing::info!("shutting down");
    server.shutdown_gracefully(shutdown).await;
    Ok(())
}
