//! `informer serve`: runs the embeddable Kubernetes API server (`informer-apiserver`) as a
//! standalone process until SIGINT or SIGTERM: in memory by default, durable with `--data-dir`,
//! on etcd with kube-apiserver's `--etcd-servers` flags (several processes can share one etcd).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Keep objects durably in this directory (embedded SQLite): every acknowledged write is on
    /// disk, and a restart on the same directory resumes objects, resourceVersions and watches.
    #[arg(long, conflicts_with = "etcd_servers")]
    pub data_dir: Option<PathBuf>,
    /// Keep objects in etcd (comma-separated client URLs, as kube-apiserver's flag).
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// The prefix of every etcd key.
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,
    /// How often the storage's history is compacted (Go duration: 30s, 5m, 1h; 0 never).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub etcd_compaction_interval: Duration,
    /// How long an Event is kept after its last write, as kube-apiserver's flag (Go duration;
    /// 0 keeps Events for good).
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    pub event_ttl: Duration,
    /// On SIGTERM, how long requests are still served while /readyz fails (so that load
    /// balancers stop sending new ones).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub shutdown_delay_duration: Duration,
    /// During shutdown keep the listener open and answer new requests 429 with Retry-After until
    /// the requests in progress are done (default: close the listener, answer 503).
    #[arg(long)]
    pub shutdown_send_retry_after: bool,
    /// During shutdown, how long open watches go on after the other requests are done.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub shutdown_watch_termination_grace_period: Duration,
    /// Install the CustomResourceDefinitions of every .yaml, .yml and .json file of this
    /// directory before serving (created, or updated when they exist).
    #[arg(long)]
    pub crds: Option<PathBuf>,
    /// Run without the garbage collector (as kube-apiserver alone, envtest): owner references
    /// are only recorded, and `orphan` or `foregroundDeletion` finalizers stay until removed.
    #[arg(long)]
    pub no_garbage_collector: bool,
    /// kube-apiserver's flag: false gives deletions no `orphan` or `foregroundDeletion`
    /// finalizers (but namespaces') and runs no garbage collector.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_garbage_collector: bool,
    /// Run without the disruption controller (as kube-apiserver alone): PodDisruptionBudgets keep
    /// the status their writers give them.
    #[arg(long)]
    pub no_disruption_controller: bool,
    /// kube-apiserver's flag: admission plugins not to run (comma-separated). `ServiceAccount`
    /// (as envtest runs kube-apiserver): pods are created as they are sent, with no service
    /// account given, looked up or mounted.
    #[arg(long, value_delimiter = ',', value_parser = ["ServiceAccount"])]
    pub disable_admission_plugins: Vec<String>,
    /// Sign and check service account tokens with this ECDSA P-256 or RSA (2048–4096 bits) private
    /// key (PKCS#8 PEM or DER, SEC1 `EC PRIVATE KEY` or PKCS#1 `RSA PRIVATE KEY` PEM, as kubeadm's
    /// `sa.key`), as
    /// kube-apiserver's `--service-account-signing-key-file`; replicas on one etcd share it.
    /// Default: a key of the server's own (kept in `--data-dir`; new at each start otherwise).
    #[arg(long, alias = "service-account-signing-key-file")]
    pub service_account_key_file: Option<PathBuf>,
    /// How requests are authorized, as kube-apiserver's `--authorization-mode` (a list, such as
    /// `Node,RBAC`): `AlwaysAllow` (every request) or `RBAC` (Roles, ClusterRoles and their
    /// bindings decide; the server holds kube's default roles, and the server's own user is in
    /// `system:masters`); `Node` beside one of them adds nothing.
    #[arg(long, default_value = "AlwaysAllow")]
    pub authorization_mode: informer_apiserver::AuthorizationMode,
    /// The address the `default/kubernetes` Service's endpoints give for this server, as
    /// kube-apiserver's flag (default: the listen address, or when that is loopback or
    /// unspecified, the host's address on its default route).
    #[arg(long)]
    pub advertise_address: Option<std::net::IpAddr>,
    /// Reach `https` backends of `pods/proxy`, `services/proxy` and `nodes/proxy` without
    /// verifying their certificates, as kube-apiserver's proxies do (default: verified against
    /// the system's roots).
    #[arg(long)]
    pub proxy_insecure_skip_tls_verify: bool,
}

/// Parses a Go-style duration (`300ms`, `30s`, `5m`, `1h30m`, `0`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    if rest.is_empty() {
        return Err("empty duration".into());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (num, tail) = rest.split_at(digits);
        let n: f64 = num.parse().map_err(|_| format!("invalid duration {s:?}"))?;
        let unit = tail.find(|c: char| c.is_ascii_digit()).unwrap_or(tail.len());
        let (u, next) = tail.split_at(unit);
        let secs = match u {
            "ns" => n / 1e9,
            "us" | "µs" => n / 1e6,
            "ms" => n / 1e3,
            "s" => n,
            "m" => n * 60.0,
            "h" => n * 3600.0,
            _ => return Err(format!("invalid duration {s:?}: unknown unit {u:?}")),
        };
        total += Duration::from_secs_f64(secs);
        rest = next;
    }
    Ok(total)
}

/// Runs the server until SIGINT or SIGTERM.
pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let opts = informer_apiserver::ServeOptions {
        addr: args.addr,
        token: args.token,
        tls_cert: args.tls_cert,
        tls_key: args.tls_key,
        write_kubeconfig: args.write_kubeconfig,
        data_dir: args.data_dir,
        etcd_servers: args.etcd_servers,
        etcd_prefix: args.etcd_prefix,
        compaction_interval: args.etcd_compaction_interval,
        event_ttl: args.event_ttl,
        crds_dir: args.crds,
        garbage_collector: !args.no_garbage_collector,
        garbage_collection: args.enable_garbage_collector,
        disruption_controller: !args.no_disruption_controller,
        service_account_admission: !args.disable_admission_plugins.iter().any(|p| p == "ServiceAccount"),
        service_account_key_file: args.service_account_key_file,
        authorization: args.authorization_mode,
        advertise_address: args.advertise_address,
        verify_proxied_tls: !args.proxy_insecure_skip_tls_verify,
        shutdown: informer_apiserver::GracefulShutdown {
            delay: args.shutdown_delay_duration,
            send_retry_after: args.shutdown_send_retry_after,
            watch_grace: args.shutdown_watch_termination_grace_period,
            ..Default::default()
        },
    };
    informer_apiserver::serve(opts).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("").is_err());
    }
}
