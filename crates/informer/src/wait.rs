//! Waiting for caches and handlers to sync (client-go's `WaitForCacheSync` / `WaitFor`), without
//! polling: every [`Signal`] is awaited directly.
//!
//! Invariant: the result names every signal that was not set when the wait ended, so a timeout
//! says exactly who did not sync.

use std::time::Duration;

use crate::signal::Signal;

/// The outcome of a wait: which signals were set and which were not (by name).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncResult {
    /// Names of the signals that were set.
    pub synced: Vec<String>,
    /// Names of the signals that were not set when the wait ended.
    pub not_synced: Vec<String>,
}

/// Not everything synced in time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("timed out waiting for caches to sync: {}", not_synced.join(", "))]
pub struct NotSynced {
    /// Names of the signals that were not set.
    pub not_synced: Vec<String>,
}

impl SyncResult {
    /// Whether everything synced.
    pub fn all_synced(&self) -> bool {
        self.not_synced.is_empty()
    }

    /// `Ok(())` if everything synced, else the names of those that did not.
    pub fn into_result(self) -> Result<(), NotSynced> {
        if self.all_synced() {
            Ok(())
        } else {
            Err(NotSynced {
                not_synced: self.not_synced,
            })
        }
    }
}

/// Waits until every signal is set or `timeout` passes (`None` = no limit).
///
/// Pass informers' and registrations' `synced()` signals.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use informer::{Signal, wait_for_cache_sync};
/// use std::time::Duration;
/// let a = Signal::new("pods");
/// let b = Signal::new("nodes");
/// a.set();
/// let r = wait_for_cache_sync(&[a, b], Some(Duration::from_millis(10))).await;
/// assert_eq!(r.not_synced, ["nodes"]);
/// # });
/// ```
pub async fn wait_for_cache_sync(signals: &[Signal], timeout: Option<Duration>) -> SyncResult {
    let all = futures_util::future::join_all(signals.iter().map(|s| s.wait()));
    let names: Vec<&str> = signals.iter().map(|s| s.name()).collect();
    tracing::info!(caches = ?names, "waiting for caches to sync");
    match timeout {
        Some(t) => {
            let _ = tokio::time::timeout(t, all).await;
        }
        None => {
            all.await;
        }
    }
    let mut r = SyncResult::default();
    for s in signals {
        if s.is_set() {
            r.synced.push(s.name().to_string());
        } else {
            r.not_synced.push(s.name().to_string());
        }
    }
    if r.all_synced() {
        tracing::info!(caches = ?names, "caches are synced");
    } else {
        tracing::warn!(not_synced = ?r.not_synced, "caches did not sync in time");
    }
    r
}
