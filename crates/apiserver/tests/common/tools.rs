//! Real programs for the client tests: a fresh temporary directory, and kubectl run with its own
//! kubeconfig and cache directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

/// A new, empty directory under the system's temporary directory.
pub fn tempdir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let d = std::env::temp_dir().join(format!("apiserver-{tag}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs the kubectl binary `bin`: whether it succeeded, its stdout and its stderr.
pub async fn kubectl_bin(bin: &str, kc: &Path, cache: &Path, args: &[&str]) -> (bool, String, String) {
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(bin)
            .arg("--kubeconfig")
            .arg(kc)
            .arg("--cache-dir")
            .arg(cache)
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("kubectl timed out")
    .unwrap_or_else(|e| panic!("{bin} must be on PATH: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
