//! Real programs for the client tests: a fresh temporary directory, kubectl run with its own
//! kubeconfig and cache directory, and the Python client's scripts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

/// Runs a Python `script` (with the Kubernetes client importable) with `args`; its standard
/// output, once it has succeeded.
pub async fn python(script: &str, args: &[&str]) -> String {
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new("/usr/bin/python3").arg("-c").arg(script).args(args).kill_on_drop(true).output(),
    )
    .await
    .expect("python timed out")
    .expect("python runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a Python script with the kubeconfig `kc` as its argument and reads the one JSON line it
/// prints.
pub async fn python_json(script: &str, kc: &Path) -> serde_json::Value {
    let out = python(script, &[kc.to_str().unwrap()]).await;
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

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

/// `kubectl get <kind>` of the newest kubectl against a server, as the words of each line.
pub struct KubectlTables {
    bin: String,
    kc: PathBuf,
    cache: PathBuf,
}

impl KubectlTables {
    /// A kubeconfig and cache for `server` in a fresh directory tagged `tag`.
    pub fn new(server: &informer_apiserver::ApiServer, tag: &str) -> KubectlTables {
        let dir = tempdir(tag);
        let kc = dir.join("config");
        server.write_kubeconfig(&kc).unwrap();
        KubectlTables { bin: kubectl_versions().last().unwrap().clone(), kc, cache: dir.join("cache") }
    }

    /// The lines of `kubectl get <kind>`, each split into its words; panics if kubectl fails.
    pub async fn get(&self, kind: &str) -> Vec<Vec<String>> {
        let (ok, out, err) = kubectl_bin(&self.bin, &self.kc, &self.cache, &["get", kind]).await;
        assert!(ok, "{} get {kind}: {err}", self.bin);
        out.lines().map(|l| l.split_whitespace().map(str::to_string).collect()).collect()
    }
}

/// The kubectl binaries of the machine (`kubectl.1.27` … `kubectl.1.33`), on PATH or beside the
/// `kubectl` on PATH (the Cloud SDK's dispatcher keeps them there).
pub fn kubectl_versions() -> Vec<String> {
    let beside = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("kubectl")).find(|k| k.exists()))
        .and_then(|k| std::fs::canonicalize(k).ok())
        .and_then(|k| k.parent().map(Path::to_path_buf));
    let found: Vec<String> = (27..=33)
        .filter_map(|m| {
            let name = format!("kubectl.1.{m}");
            let path = beside.as_ref().map(|d| d.join(&name)).filter(|p| p.exists());
            let bin = path.map(|p| p.to_string_lossy().into_owned()).unwrap_or(name);
            std::process::Command::new(&bin).args(["version", "--client"]).output().is_ok().then_some(bin)
        })
        .collect();
    assert!(
        found.iter().any(|b| b.ends_with("kubectl.1.27")) && found.iter().any(|b| b.ends_with("kubectl.1.33")),
        "kubectl.1.27 … kubectl.1.33 must be on PATH, found {found:?}"
    );
    found
}

/// Generates a self-signed certificate for 127.0.0.1 and localhost with the openssl CLI (an
/// authority certificate, as `openssl req -x509` makes it): the certificate and key files.
pub async fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let out = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .await
        .expect("the openssl CLI is needed to make a test certificate (apt-get install -y openssl)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (cert, key)
}
