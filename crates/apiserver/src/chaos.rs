//! The faults a real kube-apiserver produces, as one list a chaos schedule draws from, each
//! injected into an [`ApiServer`] through its controls.
//!
//! Invariants: [`inject`] leaves the server serving normally when it returns (every control it
//! set is reset, a stopped server is restarted), so faults can follow each other in any order;
//! what happens while a fault lasts is up to the caller's `window` future (a writer's next writes,
//! a number of seconds).

use std::time::Duration;

use rand::Rng;
use rand::seq::SliceRandom;

use crate::controls::UnresponsiveClose;
use crate::server::{ApiServer, GracefulShutdown};

/// One fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    /// Every open watch ends (a clean close).
    DropWatches,
    /// Every open connection breaks in the middle of its next write.
    CutConnections,
    /// HTTP/2 GOAWAY on every connection.
    Goaway,
    /// The next requests get 429 with Retry-After.
    TooManyRequests,
    /// The next requests get 500.
    InternalErrors,
    /// Every request is answered late for a while.
    SlowResponses,
    /// Watchers that do not keep up are closed, as kube-apiserver closes them (with a slow link).
    UnresponsiveClose,
    /// The watch cache falls behind its storage for a while (504s, reads from storage).
    CacheLag,
    /// A restart: the watch cache is rebuilt, every watch ends.
    Restart,
    /// A restart whose watch cache takes a while to fill (429s meanwhile).
    ColdRestart,
    /// The server is away (connections refused), then back.
    Outage,
    /// A graceful shutdown (readyz fails, 429s, drain, watches closed), away, then back.
    GracefulShutdown,
    /// Away while the storage's history is compacted past every client.
    CompactionWhileDisconnected,
}

/// Every fault.
pub const FAULTS: &[Fault] = &[
    Fault::DropWatches,
    Fault::CutConnections,
    Fault::Goaway,
    Fault::TooManyRequests,
    Fault::InternalErrors,
    Fault::SlowResponses,
    Fault::UnresponsiveClose,
    Fault::CacheLag,
    Fault::Restart,
    Fault::ColdRestart,
    Fault::Outage,
    Fault::GracefulShutdown,
    Fault::CompactionWhileDisconnected,
];

impl Fault {
    /// A short name (`outage`, `graceful-shutdown`, …).
    pub fn name(self) -> &'static str {
        match self {
            Fault::DropWatches => "drop-watches",
            Fault::CutConnections => "cut-connections",
            Fault::Goaway => "goaway",
            Fault::TooManyRequests => "429s",
            Fault::InternalErrors => "500s",
            Fault::SlowResponses => "slow-responses",
            Fault::UnresponsiveClose => "unresponsive-close",
            Fault::CacheLag => "cache-lag",
            Fault::Restart => "restart",
            Fault::ColdRestart => "cold-restart",
            Fault::Outage => "outage",
            Fault::GracefulShutdown => "graceful-shutdown",
            Fault::CompactionWhileDisconnected => "compaction-while-away",
        }
    }

    /// What the fault does, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            Fault::DropWatches => "every watch ends",
            Fault::CutConnections => "connections cut in the middle of an event",
            Fault::Goaway => "HTTP/2 GOAWAY on every connection",
            Fault::TooManyRequests => "the next requests get 429 Retry-After",
            Fault::InternalErrors => "the next requests get 500",
            Fault::SlowResponses => "every answer late",
            Fault::UnresponsiveClose => "slow link, watchers that fall behind closed",
            Fault::CacheLag => "watch cache behind its storage (504s)",
            Fault::Restart => "restart, watch cache rebuilt",
            Fault::ColdRestart => "restart, cold watch cache (429s while it fills)",
            Fault::Outage => "server away (connections refused)",
            Fault::GracefulShutdown => "graceful shutdown (readyz fails, 503s or 429s, drain), away, back",
            Fault::CompactionWhileDisconnected => "away while the history is compacted (410s)",
        }
    }
}

/// A schedule of `n` faults: every fault once per pass, each pass in its own random order.
pub fn schedule(rng: &mut impl Rng, n: usize) -> Vec<Fault> {
    let mut out = Vec::with_capacity(n + FAULTS.len());
    while out.len() < n {
        let mut pass = FAULTS.to_vec();
        pass.shuffle(rng);
        out.extend(pass);
    }
    out.truncate(n);
    out
}

/// Injects `fault`; `window` runs while it lasts (for the faults that last; the others drop it).
/// Returns once the server serves normally again.
pub async fn inject(server: &ApiServer, fault: Fault, rng: &mut impl Rng, window: impl Future<Output = ()>) {
    match fault {
        Fault::DropWatches => {
            window.await;
            server.drop_watches();
        }
        Fault::CutConnections => {
            window.await;
            server.cut_connections();
        }
        Fault::Goaway => {
            window.await;
            server.goaway();
        }
        Fault::TooManyRequests => {
            server.fail_next_with_429(rng.random_range(1..6), 1);
            server.drop_watches();
        }
        Fault::InternalErrors => {
            server.fail_next_with_500(rng.random_range(1..4));
            server.drop_watches();
        }
        Fault::SlowResponses => {
            server.set_latency(Duration::from_millis(rng.random_range(50..300)));
            server.drop_watches();
            window.await;
            server.set_latency(Duration::ZERO);
        }
        Fault::UnresponsiveClose => {
            server.set_stream_delay(Duration::from_millis(2));
            server.set_unresponsive_close(Some(UnresponsiveClose { buffer: 10, grace: Duration::from_millis(30) }));
            server.drop_watches();
            window.await;
            server.set_unresponsive_close(None);
            server.set_stream_delay(Duration::ZERO);
        }
        Fault::CacheLag => {
            server.set_cache_lag(Duration::from_millis(rng.random_range(50..400)));
            window.await;
            server.set_cache_lag(Duration::ZERO);
        }
        Fault::Restart => {
            window.await;
            restart(server).await;
        }
        Fault::ColdRestart => {
            window.await;
            let cold = Duration::from_millis(rng.random_range(100..1500));
            if let Err(e) = server.restart_with_cold_cache(cold).await {
                tracing::error!(error = %e, "chaos: cannot restart the server");
            }
        }
        Fault::Outage => {
            server.stop().await;
            window.await;
            restart(server).await;
        }
        Fault::GracefulShutdown => {
            let opts = GracefulShutdown {
                delay: Duration::from_millis(rng.random_range(0..300)),
                drain_timeout: Duration::from_secs(5),
                watch_grace: Duration::from_millis(rng.random_range(0..200)),
                send_retry_after: rng.random_bool(0.5),
            };
            server.shutdown_gracefully(opts).await;
            window.await;
            restart(server).await;
        }
        Fault::CompactionWhileDisconnected => {
            server.stop().await;
            window.await;
            if let Err(e) = server.compact().await {
                tracing::error!(error = %e, "chaos: compaction failed");
            }
            restart(server).await;
        }
    }
}

async fn restart(server: &ApiServer) {
    if let Err(e) = server.restart().await {
        tracing::error!(error = %e, "chaos: cannot restart the server");
    }
}
