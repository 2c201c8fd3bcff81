//! The standalone runner used by the `informer serve` CLI subcommand.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::server::ApiServer;

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
    /// Persistence directory for objects and the RV counter.
    pub data_dir: Option<PathBuf>,
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
        }
    }
}

/// Errors of [`serve`].
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Bad option combination.
    #[error("invalid options: {0}")]
    Options(String),
    /// I/O (bind, TLS files, kubeconfig).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Starts a server with `opts`; returns it (keep it alive to keep serving).
pub async fn start(opts: ServeOptions) -> Result<ApiServer, ServeError> {
    let mut b = ApiServer::builder().addr(opts.addr);
    if let Some(d) = &opts.data_dir {
        b = b.data_dir(d.clone());
    }
    if let Some(t) = &opts.token {
        b = b.token(t.clone());
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

/// Runs a server until Ctrl-C.
pub async fn serve(opts: ServeOptions) -> Result<(), ServeError> {
    let server = start(opts).await?;
    tracing::info!(url = %server.url(), "informer apiserver listening");
    eprintln!("informer apiserver listening on {}", server.url());
    let _ = tokio::signal::ctrl_c().await;
    server.stop().await;
    Ok(())
}
