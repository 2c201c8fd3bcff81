//! The final check: once the load stopped, the cache must converge to exactly the server's pods
//! (same keys, same resourceVersions). Any difference is a lost event.
//!
//! Invariant: the check passes only if `missing + extra + stale == 0` within the convergence
//! limit; it prints one `check:` line with the counts and one verdict line.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use informer::{Indexer, SharedIndexInformer};
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

/// Key → resourceVersion.
type View = BTreeMap<String, String>;

/// Where the truth is read from.
pub enum Truth {
    Embedded(Arc<ApiServer>),
    Cluster(Box<Api<Pod>>),
}

const CONVERGENCE_LIMIT: Duration = Duration::from_secs(30);

impl Truth {
    fn server_rv(&self) -> String {
        match self {
            Truth::Embedded(s) => s.resource_version().to_string(),
            Truth::Cluster(_) => "-".to_string(),
        }
    }

    async fn pods(&self, ns: &str) -> anyhow::Result<View> {
        match self {
            Truth::Embedded(s) => Ok(s
                .list("pods", Some(ns))
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
            Truth::Cluster(api) => Ok(api
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

/// Waits for the cache to equal the server's pods (re-reading both), then reports.
pub async fn verify(truth: &Truth, ns: &str, informer: &SharedIndexInformer<Pod>) -> anyhow::Result<bool> {
    let target = truth.server_rv();
    let t0 = Instant::now();
    let poll = match truth {
        Truth::Embedded(_) => Duration::from_millis(20),
        Truth::Cluster(_) => Duration::from_millis(500),
    };
    let mut expected = truth.pods(ns).await?;
    let mut got = cached(informer.indexer());
    while got != expected && t0.elapsed() < CONVERGENCE_LIMIT {
        tokio::time::sleep(poll).await;
        if matches!(truth, Truth::Cluster(_)) {
            expected = truth.pods(ns).await?;
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
