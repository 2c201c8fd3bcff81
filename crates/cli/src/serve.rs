//! `informer serve`: runs the embeddable Kubernetes list/watch API server
//! (`informer-apiserver`) as a standalone process until Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Arguments of `informer serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Require `Authorization: Bearer <TOKEN>` on every request.
    #[arg(long)]
    pub token: Option<String>,
    /// TLS certificate (PEM); serves HTTPS together with --tls-key.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Write a kubeconfig for this server to this path.
    #[arg(long)]
    pub write_kubeconfig: Option<PathBuf>,
    /// Persist objects and the resourceVersion counter in this directory.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

/// Runs the server until Ctrl-C.
pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let opts = informer_apiserver::ServeOptions {
        addr: args.addr,
        token: args.token,
        tls_cert: args.tls_cert,
        tls_key: args.tls_key,
        write_kubeconfig: args.write_kubeconfig,
        data_dir: args.data_dir,
    };
    informer_apiserver::serve(opts).await?;
    Ok(())
}
