//! Runs `informer bench --w1` and `kube-runtime-bench --w1` side by side (each in its own process,
//! so RSS figures are per client) for list and streaming modes and both handlers, and prints every
//! JSON line plus the ratios informer / kube-runtime.
//!
//! Build both first: `cargo build --release -p informer-cli -p informer-bench`, then run
//! `target/release/w1-compare [--updates N] [--pods N]` (the two binaries are found next to it).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

fn run(bin: &PathBuf, args: &[String]) -> Result<Value> {
    let out = Command::new(bin).args(args).output().with_context(|| format!("running {}", bin.display()))?;
    if !out.status.success() {
        bail!("{} failed: {}", bin.display(), String::from_utf8_lossy(&out.stderr));
    }
    let line = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or("").to_string();
    serde_json::from_str(&line).with_context(|| format!("bad output line {line:?}"))
}

fn main() -> Result<()> {
    let mut updates = "100000".to_string();
    let mut pods = "10000".to_string();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--updates" => updates = it.next().context("--updates N")?,
            "--pods" => pods = it.next().context("--pods N")?,
            other => bail!("unknown argument {other}"),
        }
    }
    let dir = std::env::current_exe()?.parent().context("exe dir")?.to_path_buf();
    let ours = dir.join("informer");
    let theirs = dir.join("kube-runtime-bench");
    for (b, hint) in [(&ours, "informer-cli"), (&theirs, "informer-bench")] {
        if !b.exists() {
            bail!("{} not found: cargo build --release -p {hint}", b.display());
        }
    }
    for mode in ["--list", "--streaming"] {
        for handler in ["keys", "full"] {
            let common = vec![
                "--w1".to_string(),
                mode.to_string(),
                "--handler".into(),
                handler.into(),
                "--updates".into(),
                updates.clone(),
                "--pods".into(),
                pods.clone(),
            ];
            let mut a = vec!["bench".to_string()];
            a.extend(common.iter().cloned());
            let i = run(&ours, &a)?;
            let k = run(&theirs, &common)?;
            println!("{i}");
            println!("{k}");
            let ratio = |f: &str| -> String {
                match (i[f].as_f64(), k[f].as_f64()) {
                    (Some(x), Some(y)) if y > 0.0 => format!("{:.2}", x / y),
                    _ => "-".into(),
                }
            };
            println!(
                "ratio informer/kube-runtime ({mode} {handler}): sync_ms {} updates_per_s {} rss_after_sync {} peak_rss {}",
                ratio("sync_ms"),
                ratio("updates_per_s"),
                ratio("rss_after_sync_kb"),
                ratio("peak_rss_kb")
            );
        }
    }
    // Fan-out: ten handlers, the last sleeping 1 ms per notification; the figure is the first
    // (fast) handler's throughput relative to a single handler.
    let base = vec![
        "bench".to_string(),
        "--w1".into(),
        "--streaming".into(),
        "--updates".into(),
        updates.clone(),
        "--pods".into(),
        pods.clone(),
    ];
    let one = run(&ours, &base)?;
    let mut fan = base.clone();
    fan.extend(["--handlers".to_string(), "10".into(), "--slow-handler".into()]);
    let ten = run(&ours, &fan)?;
    println!("{one}");
    println!("{ten}");
    if let (Some(a), Some(b)) = (one["updates_per_s"].as_f64(), ten["updates_per_s"].as_f64()) {
        println!(
            "fan-out: with 10 handlers (one sleeping 1 ms per event) a fast handler keeps {:.0}% of single-handler throughput",
            100.0 * b / a
        );
    }
    Ok(())
}
