//! Building a `kube::Client` from a kubeconfig file or from kubeconfig text, with clear errors.

use anyhow::{Context, Result};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// A client for a kubeconfig file.
pub async fn from_file(path: &std::path::Path) -> Result<kube::Client> {
    let kc = Kubeconfig::read_from(path).with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
    from_kubeconfig(kc).await
}

/// A client for kubeconfig YAML text.
pub async fn from_yaml(yaml: &str) -> Result<kube::Client> {
    let kc = Kubeconfig::from_yaml(yaml).context("invalid kubeconfig")?;
    from_kubeconfig(kc).await
}

async fn from_kubeconfig(kc: Kubeconfig) -> Result<kube::Client> {
    let cfg =
        kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.context("invalid kubeconfig")?;
    kube::Client::try_from(cfg).context("cannot build a client from the kubeconfig")
}
