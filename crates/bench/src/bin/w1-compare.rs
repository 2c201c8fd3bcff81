//! Runs `informer bench --w1` and `kube-runtime-bench --w1` side by side (each in its own process,
//! so RSS figures are per client) for list and streaming modes and both handlers, and prints every
//! JSON line plus the ratios informer / kube-runtime.
//!
//! Build both first: `cargo build --profile dist -p informer-cli -p informer-bench`, then run
//! `target/dist/w1-compare [--updates N] [--pods N] [--pairs N] [--current-thread]` (the two
//! binaries are found next to it; `--current-thread` runs both clients on a single-threaded tokio
//! runtime; each configuration runs `--pairs` interleaved pairs, 3 by default, and reports the
//! pair with the median ratio).
//!
//! `--server-process` runs the W1 server as a process of its own for every client run
//! (`w1-server`, also found next to it), as real servers are, instead of on a thread inside the
//! client's process; the clients then get `--kubeconfig` instead of `--w1`. The fan-out
//! configuration, whose kube-runtime side starts its own W1, is left out in that mode.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// `--current-thread`: passed on to every client run.
static CURRENT_THREAD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// With `--server-process`: the `w1-server` binary.
static SERVER: OnceLock<PathBuf> = OnceLock::new();

/// A `w1-server` process serving one client run; it stops when this is dropped (its standard
/// input closes).
struct ServerProcess {
    child: Child,
    kubeconfig: PathBuf,
}

impl ServerProcess {
    /// Starts `server` with the workload flags of a client's `args` (`--pods`, `--updates`,
    /// `--latency-rate`) and waits until it serves.
    fn start(server: &PathBuf, args: &[String]) -> Result<ServerProcess> {
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let kubeconfig = std::env::temp_dir().join(format!("w1-compare-{}-{run}.kubeconfig", std::process::id()));
        let mut cmd = Command::new(server);
        for flag in ["--pods", "--updates", "--latency-rate"] {
            if let Some(v) = args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)) {
                cmd.args([flag, v]);
            }
        }
        let mut child = cmd
            .arg("--kubeconfig-out")
            .arg(&kubeconfig)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("running {}", server.display()))?;
        let mut line = String::new();
        let stdout = child.stdout.take().context("w1-server's stdout")?;
        std::io::BufReader::new(stdout).read_line(&mut line)?;
        let server = ServerProcess { child, kubeconfig };
        if !line.starts_with("ready ") {
            bail!("w1-server did not start: {line:?}");
        }
        Ok(server)
    }

    /// A client's arguments against this server: `--w1` becomes `--kubeconfig FILE`.
    fn client_args(&self, args: &[String]) -> Vec<String> {
        let mut v: Vec<String> = args.iter().filter(|a| *a != "--w1").cloned().collect();
        v.extend(["--kubeconfig".into(), self.kubeconfig.display().to_string()]);
        v
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}

fn run(bin: &PathBuf, args: &[String]) -> Result<Value> {
    run_env(bin, args, &[])
}

fn run_env(bin: &PathBuf, args: &[String], env: &[(&str, &str)]) -> Result<Value> {
    let mut args = args.to_vec();
    if CURRENT_THREAD.load(std::sync::atomic::Ordering::Relaxed) {
        args.push("--current-thread".into());
    }
    let server = match SERVER.get() {
        Some(s) if args.iter().any(|a| a == "--w1") => Some(ServerProcess::start(s, &args)?),
        _ => None,
    };
    if let Some(s) = &server {
        args = s.client_args(&args);
    }
    let out = Command::new(bin)
        .args(&args)
        .envs(env.iter().copied())
        .output()
        .with_context(|| format!("running {}", bin.display()))?;
    if !out.status.success() {
        bail!("{} failed: {}", bin.display(), String::from_utf8_lossy(&out.stderr));
    }
    let line = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or("").to_string();
    serde_json::from_str(&line).with_context(|| format!("bad output line {line:?}"))
}

fn main() -> Result<()> {
    let mut updates = "100000".to_string();
    let mut pods = "10000".to_string();
    // Both clients on a single-threaded runtime (the W1 server always has its own thread).
    let mut single = false;
    let mut pairs = 3usize;
    let mut server_process = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--updates" => updates = it.next().context("--updates N")?,
            "--pods" => pods = it.next().context("--pods N")?,
            "--pairs" => {
                pairs = it.next().context("--pairs N")?.parse().context("--pairs N")?;
                if pairs == 0 {
                    bail!("--pairs must be at least 1");
                }
            }
            "--current-thread" => single = true,
            "--server-process" => server_process = true,
            other => bail!("unknown argument {other}"),
        }
    }
    CURRENT_THREAD.store(single, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::current_exe()?.parent().context("exe dir")?.to_path_buf();
    let ours = dir.join("informer");
    let theirs = dir.join("kube-runtime-bench");
    let server = dir.join("w1-server");
    for (b, hint) in [(&ours, "informer-cli"), (&theirs, "informer-bench"), (&server, "informer-bench")] {
        if !b.exists() {
            bail!("{} not found: cargo build --profile dist -p {hint}", b.display());
        }
    }
    if server_process {
        let _ = SERVER.set(server);
    }
    // Each configuration runs `pairs` interleaved pairs (ours, then kube-runtime's); the pair with
    // the median throughput ratio is reported, every pair's ratio listed (single runs on a noisy
    // 2-core machine swing by +-15%).
    let side_by_side = |label: &str, common: &[String], ours_extra: &[&str], env: &[(&str, &str)]| -> Result<()> {
        let mut a = vec!["bench".to_string()];
        a.extend(common.iter().cloned());
        a.extend(ours_extra.iter().map(|s| s.to_string()));
        let mut runs = Vec::new();
        for _ in 0..pairs {
            let i = run_env(&ours, &a, env)?;
            let k = run_env(&theirs, common, env)?;
            let r = i["updates_per_s"].as_f64().unwrap_or(0.0) / k["updates_per_s"].as_f64().unwrap_or(f64::MAX);
            runs.push((r, i, k));
        }
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        if pairs > 1 {
            let all: Vec<String> = runs.iter().map(|r| format!("{:.2}", r.0)).collect();
            println!("updates_per_s ratios of {pairs} pairs ({label}, sorted): {}", all.join(" "));
        }
        let (_, i, k) = runs.swap_remove(pairs / 2);
        println!("{i}");
        println!("{k}");
        let ratio = |f: &str| -> String {
            match (i[f].as_f64(), k[f].as_f64()) {
                (Some(x), Some(y)) if y > 0.0 => format!("{:.2}", x / y),
                _ => "-".into(),
            }
        };
        // /proc reports KiB; figures are quoted in MiB.
        let mib = |v: &Value, f: &str| v[f].as_f64().map_or("-".into(), |kb| format!("{:.1}", kb / 1024.0));
        println!(
            "ratio informer/kube-runtime ({label}): sync_ms {} updates_per_s {} rss_after_sync {} peak_rss {}; \
             RSS after sync {} vs {} MiB, peak {} vs {} MiB",
            ratio("sync_ms"),
            ratio("updates_per_s"),
            ratio("rss_after_sync_kb"),
            ratio("peak_rss_kb"),
            mib(&i, "rss_after_sync_kb"),
            mib(&k, "rss_after_sync_kb"),
            mib(&i, "peak_rss_kb"),
            mib(&k, "peak_rss_kb")
        );
        Ok(())
    };
    let common = |mode: &str, handler: &str| -> Vec<String> {
        let mut v: Vec<String> =
            vec!["--w1", mode, "--handler", handler, "--updates"].into_iter().map(Into::into).collect();
        v.extend([updates.clone(), "--pods".into(), pods.clone()]);
        v
    };
    for mode in ["--list", "--streaming"] {
        for handler in ["keys", "full"] {
            side_by_side(&format!("{mode} {handler}"), &common(mode, handler), &[], &[])?;
        }
    }
    // `full` as a decode-heavy controller would run it: our handler on its own OS thread
    // (`HandlerOptions::dedicated_thread`, back-pressure past 512 pending), so the typed decode runs
    // beside the watch stream; both processes with glibc's default per-thread malloc arenas (the
    // runs above use one arena, for RSS). kube-runtime decodes inside its watcher stream, so it has
    // no such option; it gets the same allocator setting.
    for mode in ["--list", "--streaming"] {
        side_by_side(
            &format!("{mode} full, handler thread, glibc default arenas"),
            &common(mode, "full"),
            &["--handler-thread", "--block", "512"],
            &[("INFORMER_MALLOC_ARENAS", "0")],
        )?;
    }
    // On a multi-threaded runtime, the informer (and its client) on a thread of its own with a
    // current-thread runtime (`--informer-thread`), as an application that needs the workers keeps
    // the informer's hot path on one thread; kube-runtime stays on the workers (it has no such mode).
    if !single {
        side_by_side("--list keys, informer thread", &common("--list", "keys"), &["--informer-thread"], &[])?;
        side_by_side("--list full, informer thread", &common("--list", "full"), &["--informer-thread"], &[])?;
        side_by_side(
            "--list full, informer thread and handler thread, glibc default arenas",
            &common("--list", "full"),
            &["--informer-thread", "--handler-thread", "--block", "512"],
            &[("INFORMER_MALLOC_ARENAS", "0")],
        )?;
    }
    // Fan-out and latency run on streaming lists.
    let base = vec![
        "--w1".to_string(),
        "--streaming".into(),
        "--updates".into(),
        updates.clone(),
        "--pods".into(),
        pods.clone(),
    ];
    if !server_process {
        fan_out(&ours, &theirs, &base, &updates)?;
    }
    // Latency: updates paced at 10,000/s, event-to-handler latency after sync.
    let lat = with(&base, &["--latency-rate", "10000"]);
    let mut lat_few = lat.clone();
    lat_few[3] = updates.parse::<u64>().unwrap_or(100_000).min(30_000).to_string();
    let i = run(&ours, &ours_args(lat_few.clone()))?;
    let k = run(&theirs, &lat_few)?;
    println!("{i}");
    println!("{k}");
    println!(
        "latency at 10,000 events/s: informer p50 {} us p99 {} us; kube-runtime p50 {} us p99 {} us",
        i["latency_p50_us"], i["latency_p99_us"], k["latency_p50_us"], k["latency_p99_us"]
    );
    Ok(())
}

/// The arguments of `informer bench` for `a`.
fn ours_args(a: Vec<String>) -> Vec<String> {
    let mut v = vec!["bench".to_string()];
    v.extend(a);
    v
}

/// `b` with `extra` appended.
fn with(b: &[String], extra: &[&str]) -> Vec<String> {
    let mut v = b.to_vec();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// Fan-out: ten handlers, the last sleeping 1 ms per notification; the figure is the first
/// (fast) handler's throughput relative to a single handler. kube-runtime's shared reflector
/// (`reflect_shared` + 10 subscribers) stalls every subscriber on the slow one (~1,000/s), so
/// its fan-out run streams fewer updates.
fn fan_out(ours: &PathBuf, theirs: &PathBuf, base: &[String], updates: &str) -> Result<()> {
    // Five interleaved pairs; the pair with the median ratio is reported (a single pair of
    // 1-second runs swings by +-15% on a noisy 2-core machine).
    let mut pairs = Vec::new();
    const PAIRS: usize = 5;
    for _ in 0..PAIRS {
        let one = run(ours, &ours_args(base.to_vec()))?;
        let ten = run(ours, &ours_args(with(base, &["--handlers", "10", "--slow-handler"])))?;
        let r = ten["updates_per_s"].as_f64().unwrap_or(0.0) / one["updates_per_s"].as_f64().unwrap_or(f64::MAX);
        pairs.push((r, one, ten));
    }
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let ratios: Vec<String> = pairs.iter().map(|p| format!("{:.0}%", 100.0 * p.0)).collect();
    println!("fan-out pairs (informer, sorted): {}", ratios.join(" "));
    let (_, one, ten) = pairs.swap_remove(PAIRS / 2);
    let k_one = run(theirs, base)?;
    let few: u64 = updates.parse::<u64>().unwrap_or(100_000).min(5_000);
    let mut k_base = base.to_vec();
    k_base[3] = few.to_string();
    let k_ten = run(theirs, &with(&k_base, &["--handlers", "10", "--slow-handler"]))?;
    for l in [&one, &ten, &k_one, &k_ten] {
        println!("{l}");
    }
    let keep = |a: &Value, b: &Value| match (a["updates_per_s"].as_f64(), b["updates_per_s"].as_f64()) {
        (Some(x), Some(y)) if x > 0.0 => format!("{:.0}%", 100.0 * y / x),
        _ => "-".into(),
    };
    println!(
        "fan-out: with 10 handlers (one sleeping 1 ms per event) a fast handler keeps {} of single-handler throughput (kube-runtime: {})",
        keep(&one, &ten),
        keep(&k_one, &k_ten)
    );
    Ok(())
}
