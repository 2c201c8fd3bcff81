//! Takeover times of leader election on the embedded API server: three candidates with
//! client-go's default timing (lease 15 s, renew deadline 10 s, retry period 2 s) campaign on one
//! Lease; the leader is either killed (its task aborted: no release, as a crashed process) or
//! stopped cleanly (release on cancel), and the time until another candidate starts leading is
//! printed. Each killed or stopped candidate is replaced by a fresh one, so three always campaign.
//!
//! Run with `cargo run --release -p informer --example leader_takeover [-- --kills N --releases N]`
//! (defaults 3 and 5; a kill takes about a lease duration).

use std::time::Duration;

use informer::leader_election::{LeaderElectionConfig, LeaderElector, LeaderEvent, LeaseLock};
use informer_apiserver::ApiServer;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

struct Candidate {
    id: String,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

async fn candidate(client: &kube::Client, id: String, events: &mpsc::UnboundedSender<(String, Instant)>) -> Candidate {
    let config = LeaderElectionConfig::new(LeaseLock::new(client.clone(), "default", "takeover"), id.clone())
        .release_on_cancel(true);
    let elector = LeaderElector::new(config).expect("valid configuration");
    let mut sub = elector.subscribe();
    let (tx, who) = (events.clone(), id.clone());
    tokio::spawn(async move {
        while let Some(e) = sub.recv().await {
            if let LeaderEvent::StartedLeading(_) = e {
                let _ = tx.send((who.clone(), Instant::now()));
            }
        }
    });
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let c = cancel.clone();
        async move {
            let _ = elector.run(c).await;
        }
    });
    Candidate { id, cancel, task }
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn summary(label: &str, mut v: Vec<Duration>) {
    v.sort();
    let s = |d: Duration| format!("{:.2} s", d.as_secs_f64());
    println!("{label}: n={} min {} median {} max {}", v.len(), s(v[0]), s(v[v.len() / 2]), s(v[v.len() - 1]));
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (kills, releases) = (arg("--kills", 3), arg("--releases", 5));
    let server = ApiServer::builder().start().await?;
    let kc = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml())?;
    let client = kube::Client::try_from(kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?)?;
    let (tx, mut started) = mpsc::unbounded_channel();
    let mut next = 0;
    let fresh = |n: &mut usize| {
        *n += 1;
        format!("candidate-{n}")
    };
    let mut candidates = Vec::new();
    for _ in 0..3 {
        candidates.push(candidate(&client, fresh(&mut next), &tx).await);
    }
    let (mut leader, _) = started.recv().await.ok_or("no leader")?;
    println!("lease 15 s, renew deadline 10 s, retry period 2 s; first leader {leader}");

    let mut results: Vec<(&str, Vec<Duration>)> = vec![("killed leader", Vec::new()), ("released lease", Vec::new())];
    for round in 0..kills + releases {
        let kill = round < kills;
        // Let the candidates settle into standby behind the current leader first.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let i = candidates.iter().position(|c| c.id == leader).ok_or("leader not found")?;
        let old = candidates.remove(i);
        let at = Instant::now();
        if kill {
            old.task.abort();
        } else {
            old.cancel.cancel();
        }
        let (new, when) = started.recv().await.ok_or("no new leader")?;
        let took = when - at;
        println!(
            "{} {}: {} -> {new} in {:.2} s",
            if kill { "kill" } else { "release" },
            round + 1,
            old.id,
            took.as_secs_f64()
        );
        results[usize::from(!kill)].1.push(took);
        let _ = old.task.await;
        leader = new;
        candidates.push(candidate(&client, fresh(&mut next), &tx).await);
    }
    for (label, v) in results {
        if !v.is_empty() {
            summary(label, v);
        }
    }
    for c in candidates {
        c.cancel.cancel();
        let _ = c.task.await;
    }
    Ok(())
}
