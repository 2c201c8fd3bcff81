//! The loop of the server's own controllers (the namespace controller, the
//! CustomResourceDefinition controller), driven by the watch cache as kube-controller-manager's
//! controllers are driven by their informers: a pass over what the cache shows, then a wait for a
//! change that may let the pass progress.
//!
//! Invariants: every resource a pass may wait on is subscribed to before the pass, so a change the
//! cache receives during the pass (such as the deletions the pass made, coming back through the
//! storage's watch) wakes the next pass; a failed pass is retried after a delay that doubles up to
//! a limit, and a successful pass resets the delay; a reset of the cache (a relist from the
//! storage) wakes a pass, and so does the resync period when the controller has one; a pass
//! runs only while the cache is ready; the loop ends when `stop` turns true.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::FutureExt;
use tokio::sync::watch;

use crate::cache::WatchCache;
use crate::registry::ResourceInfo;
use crate::status::ApiError;

/// What wakes a controller's next pass.
pub(crate) struct Wakers {
    /// The controller's own resource: any change to it wakes the next pass.
    pub own: Arc<ResourceInfo>,
    /// Resources a pass may wait on: a change to one that the pass returned wakes the next pass.
    pub candidates: Vec<Arc<ResourceInfo>>,
    /// Whether a change to the set of served resources wakes the next pass.
    pub registry: bool,
}

/// A controller's loop parameters.
pub(crate) struct Loop<'a> {
    /// Names the controller in logs.
    pub name: &'static str,
    /// The delay before retrying a failed pass, at first and at most.
    pub retry: (Duration, Duration),
    /// The cache the controller reads.
    pub cache: &'a Arc<WatchCache>,
    /// The longest wait between passes (a full resync), if any.
    pub resync: Option<Duration>,
}

impl Loop<'_> {
    /// Runs passes until `stop` turns true. `wakers` is read before each pass; `pass` returns
    /// the resources whose changes may let it progress.
    pub async fn run<P, F>(&self, wakers: impl Fn() -> Wakers, mut pass: P, mut stop: watch::Receiver<bool>)
    where
        P: FnMut() -> F,
        F: Future<Output = Result<Vec<Arc<ResourceInfo>>, ApiError>>,
    {
        let cache = self.cache;
        let mut retry = self.retry.0;
        loop {
            tokio::select! {
                _ = cache.until_ready() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            let mut epoch = cache.reset_epoch();
            epoch.borrow_and_update();
            let w = wakers();
            let Ok(mut own) = cache.subscribe(&w.own) else { return };
            own.borrow_and_update();
            let mut registry = cache.registry_changes();
            registry.borrow_and_update();
            let mut candidates: Vec<(Arc<ResourceInfo>, watch::Receiver<u64>)> = Vec::new();
            for info in w.candidates {
                if let Ok(mut rx) = cache.subscribe(&info) {
                    rx.borrow_and_update();
                    candidates.push((info, rx));
                }
            }
            let (waits, failed) = match pass().await {
                Ok(waits) => (waits, false),
                Err(e) => {
                    tracing::warn!(controller = self.name, error = %e, "retrying");
                    (Vec::new(), true)
                }
            };
            retry = if failed { (retry * 2).min(self.retry.1) } else { self.retry.0 };
            let waited = |info: &ResourceInfo| waits.iter().any(|w| w.group == info.group && w.plural == info.plural);
            let mut changed: Vec<_> =
                candidates.iter_mut().filter(|(info, _)| waited(info)).map(|(_, rx)| rx.changed().boxed()).collect();
            changed.push(own.changed().boxed());
            if w.registry {
                changed.push(registry.changed().boxed());
            }
            tokio::select! {
                _ = futures_util::future::select_all(changed) => {}
                _ = epoch.changed() => {}
                _ = tokio::time::sleep(retry), if failed => {}
                _ = tokio::time::sleep(self.resync.unwrap_or_default()), if self.resync.is_some() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }
}
