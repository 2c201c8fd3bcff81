//! The final check: once the load stopped, the cache must converge to exactly the server's pods
//! (same keys, same resourceVersions). Any difference is a lost event.
//!
//! Invariant: the check passes only if `missing + extra + stale == 0` within the convergence
//! limit; it prints one `check:` line with the counts and one verdict line.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use informer::{Indexer, SharedIndexInformer};
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use tokio_util::sync::CancellationToken;

/// Key → resourceVersion.
type View = BTreeMap<String, String>;

/// Where the truth is read from.
pub enum Truth {
    Embedded(Arc<ApiServer>),
    /// A real cluster; `rv` is the latest list resourceVersion seen by [`Truth::track_server_rv`].
    Cluster {
        api: Box<Api<Pod>>,
        rv: Arc<Mutex<String>>,
    },
}

const CONVERGENCE_LIMIT: Duration = Duration::from_secs(30);

impl Truth {
    /// The truth of a cluster.
    pub fn cluster(api: Api<Pod>) -> Self {
        Truth::Cluster { api: Box::new(api), rv: Arc::default() }
    }

    /// The server's current resourceVersion ("-" while unknown).
    pub fn server_rv(&self) -> String {
        match self {
            Truth::Embedded(s) => s.resource_version().to_string(),
            Truth::Cluster { rv, .. } => {
                let rv = rv.lock().map(|r| r.clone()).unwrap_or_default();
                if rv.is_empty() { "-".to_string() } else { rv }
            }
        }
    }

    /// For a cluster, reads the server's resourceVersion (a one-item list) every 2 s until
    /// `cancel` fires. The embedded server's is read directly.
    pub fn track_server_rv(&self, cancel: CancellationToken) -> Option<tokio::task::JoinHandle<()>> {
        let Truth::Cluster { api, rv } = self else { return None };
        let (api, rv) = ((**api).clone(), rv.clone());
        Some(tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(2));
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tick.tick() => {}
                }
                match api.list_metadata(&ListParams::default().limit(1)).await {
                    Ok(list) => {
                        if let (Some(new), Ok(mut cur)) = (list.metadata.resource_version, rv.lock()) {
                            *cur = new;
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "reading the server's resourceVersion"),
                }
            }
        }))
    }

    async fn pods(&self, ns: &str) -> anyhow::Result<View> {
        match self {
            Truth::Embedded(s) => Ok(s
                .list("pods", Some(ns))
                .await
                .map_err(|e| anyhow::anyhow!("listing pods: {e}"))?
                .into_iter()
                .map(|p| {
                    let m = &p["metadata"];
                    (
                        format!("{}/{}", m["namespace"].as_str().unwrap_or(""), m["name"].as_str().unwrap_or("")),
                        m["resourceVersion"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()),
            Truth::Cluster { api, .. } => Ok(api
                .list_metadata(&ListParams::default())
                .await?
                .items
                .into_iter()
                .map(|p| {
                    let m = p.metadata;
                    (
                        format!("{}/{}", m.namespace.unwrap_or_default(), m.name.unwrap_or_default()),
                        m.resource_version.unwrap_or_default(),
                    )
                })
                .collect()),
        }
    }
}

fn cached(store: &Indexer<Pod>) -> View {
    store.list().into_iter().map(|o| (o.key().to_string(), o.resource_version().unwrap_or("").to_string())).collect()
}

/// How long the final check waits for a server that is away.
const AWAY_LIMIT: Duration = Duration::from_secs(600);

/// The server's pods, waiting (up to [`AWAY_LIMIT`]) for a server that is away, with a countdown
/// to each retry on stdout.
async fn pods_when_back(truth: &Truth, ns: &str) -> anyhow::Result<View> {
    let since = Instant::now();
    let mut delay = 1u64;
    loop {
        match truth.pods(ns).await {
            Ok(v) => return Ok(v),
            Err(e) if since.elapsed() < AWAY_LIMIT => {
                for left in (1..=delay).rev() {
                    println!("check: the API server is away ({e:#}); retrying in {left} s");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                delay = (delay * 2).min(5);
            }
            Err(e) => return Err(e.context(format!("the API server was away for {} s", AWAY_LIMIT.as_secs()))),
        }
    }
}

/// Waits for the cache to equal the server's pods (re-reading both), then reports.
pub async fn verify(truth: &Truth, ns: &str, informer: &SharedIndexInformer<Pod>) -> anyhow::Result<bool> {
    let target = truth.server_rv();
    let poll = match truth {
        Truth::Embedded(_) => Duration::from_millis(20),
        Truth::Cluster { .. } => Duration::from_millis(500),
    };
    let mut expected = pods_when_back(truth, ns).await?;
    let t0 = Instant::now();
    let mut got = cached(informer.indexer());
    while got != expected && t0.elapsed() < CONVERGENCE_LIMIT {
        tokio::time::sleep(poll).await;
        if matches!(truth, Truth::Cluster { .. }) {
            expected = pods_when_back(truth, ns).await?;
        }
        got = cached(informer.indexer());
    }
    let missing = expected.keys().filter(|k| !got.contains_key(*k)).count();
    let extra = got.keys().filter(|k| !expected.contains_key(*k)).count();
    let stale = expected.iter().filter(|(k, v)| got.get(*k).is_some_and(|g| g != *v)).count();
    let lost = missing + extra + stale;
    println!(
        "check: server pods={} cached={} missing={missing} extra={extra} stale={stale} lost_events={lost} (server rv {target}, client rv {}, converged in {:.0} ms)",
        expected.len(),
        got.len(),
        informer.last_sync_resource_version(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    if lost == 0 {
        println!("check: cache == server");
    } else {
        println!("check: FAILED: the cache differs from the server");
    }
    Ok(lost == 0)
}
