//! `w1-server`: the W1 workload served by a process of its own, as a real API server is: the
//! client benchmark's heap, threads and allocator then hold nothing of the server's.
//!
//! Writes a kubeconfig for the server to `--kubeconfig-out`, prints `ready <address>` on stdout,
//! and serves until its standard input closes (the parent exited or closed the pipe), so a
//! benchmark driver never leaves a server behind.

use std::io::Read;

use anyhow::{Context, Result};
use clap::Parser;
use informer_bench::w1::{W1Config, W1Server};

#[derive(Parser)]
#[command(about = "Serve the W1 workload until standard input closes")]
struct Args {
    /// Pods listed.
    #[arg(long, default_value_t = 10_000)]
    pods: u64,
    /// MODIFIED events each watch streams after the list.
    #[arg(long, default_value_t = 100_000)]
    updates: u64,
    /// Pace the updates at this many per second (each carries its send time; see `W1Config`).
    #[arg(long)]
    latency_rate: Option<u64>,
    /// Namespace of the pods.
    #[arg(long, short = 'n', default_value = "default")]
    namespace: String,
    /// Where to write the kubeconfig of the server.
    #[arg(long)]
    kubeconfig_out: std::path::PathBuf,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let cfg = W1Config { pods: args.pods, updates: args.updates, list_rv: 1000, rate: args.latency_rate };
    let server = W1Server::spawn(cfg, &args.namespace).context("cannot start W1")?;
    std::fs::write(&args.kubeconfig_out, server.kubeconfig_yaml())
        .with_context(|| format!("cannot write {}", args.kubeconfig_out.display()))?;
    println!("ready {}", server.addr());
    // Serve until the parent closes our standard input (or exits).
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(server);
    Ok(())
}
