//! The `informer` command: `demo` (the main job), `watch`, `serve`.

mod bench;
mod client;
mod demo;
mod discover;
mod serve;
mod watch;

use clap::{Parser, Subcommand};

/// Kubernetes list-watch and informers in Rust.
#[derive(Parser)]
#[command(name = "informer", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a sample controller (shared informer + controller runner) under load: an embedded API
    /// server (or a real cluster with --kubeconfig) and a load generator, with a live terminal
    /// view (q quits) or, when stdout is not a terminal, one line per second; at the end a summary
    /// that checks the cache against the server (exit 1 if they differ).
    Demo(demo::DemoArgs),
    /// Print add/update/delete lines for any resource the server serves (found through
    /// discovery, custom resources included), like `kubectl get -w`; `-o json` for scripts.
    Watch(watch::WatchArgs),
    /// Run the embedded Kubernetes list/watch API server standalone.
    Serve(serve::ServeArgs),
    /// Measure one informer on a pod workload (W1 in-process with --w1); prints one JSON line.
    Bench(bench::BenchArgs),
}

fn main() -> std::process::ExitCode {
    // SAFETY: first thing in `main`: no other thread runs yet.
    #[allow(unsafe_code)]
    unsafe {
        informer_bench::measure::configure_malloc()
    };
    let cli = Cli::parse();
    let filter = || tracing_subscriber::EnvFilter::try_from_env("INFORMER_LOG").unwrap_or_else(|_| "warn".into());
    if matches!(cli.command, Command::Demo(_)) && demo::uses_terminal_view() {
        // The live view owns the terminal: logs go to a ring it displays.
        tracing_subscriber::fmt()
            .with_env_filter(filter())
            .with_ansi(false)
            .with_writer(demo::logs::RingWriter::default)
            .init();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter()).with_writer(std::io::stderr).init();
    }
    let single = matches!(&cli.command, Command::Bench(a) if a.current_thread());
    let mut builder = if single {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let rt = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let result = rt.block_on(async {
        match cli.command {
            Command::Demo(a) => demo::run(a).await,
            Command::Watch(a) => watch::run(a).await,
            Command::Serve(a) => serve::run(a).await.map(|_| true),
            Command::Bench(a) => bench::run(a).await,
        }
    });
    match result {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
