//! The loop of the server's own controllers (the namespace controller, the
//! CustomResourceDefinition controller), driven by the watch cache as kube-controller-manager's
//! controllers are driven by their informers: a pass over what the cache shows, then a wait for a
//! change that may let the pass progress.
//!
//! Invariants: every resource a pass may wait on is subscribed to before the pass, so a change the
//! cache receives during the pass (such as the deletions the pass made, coming back through the
//! storage's watch) wakes the next pass; a failed pass is retried after a delay that doubles up to
//! a limit, and a successful pass resets the delay; a reset of the cache (a relist from the
//! storage) wakes a pass, and so does the resync period when the controller has one, and the
//! deadline its last pass set; a pass
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
    /// When the controller wants its next pass at the latest (a deadline a pass found), read
    /// after each pass.
    pub wake_at: Option<&'a std::sync::Mutex<Option<tokio::time::Instant>>>,
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
            let at = self.wake_at.and_then(|w| *w.lock().unwrap_or_else(|e| e.into_inner()));
            // A failed pass is retried after its delay, even when something is due sooner.
            let at = at.map(|at| if failed { at.max(tokio::time::Instant::now() + retry) } else { at });
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
                _ = tokio::time::sleep_until(at.unwrap_or_else(tokio::time::Instant::now)), if at.is_some() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::cache::Dispatcher;
    use crate::registry::Registry;
    use crate::storage::keys::KeyLayout;
    use crate::storage::memory::MemoryStorage;

    /// A served cache over an empty memory storage.
    async fn ready_cache(stop: watch::Receiver<bool>) -> Arc<WatchCache> {
        let registry = Arc::new(Registry::with_defaults());
        let cache = Arc::new(WatchCache::new(registry, KeyLayout::new("/registry"), Default::default()));
        let storage = Arc::new(MemoryStorage::new(1000));
        tokio::spawn(Dispatcher::new(cache.clone(), storage).run(stop));
        cache.until_ready().await;
        cache
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_wakes_the_next_pass_and_a_failure_waits_its_delay() {
        let (stop_tx, stop) = watch::channel(false);
        let cache = ready_cache(stop.clone()).await;
        let pods = cache.registry().find("", "v1", "pods").cloned().unwrap();
        let wake_at = Mutex::new(None);
        let lp = Loop {
            name: "test",
            retry: (Duration::from_secs(2), Duration::from_secs(8)),
            cache: &cache,
            resync: None,
            wake_at: Some(&wake_at),
        };
        let start = tokio::time::Instant::now();
        let deadline = start + Duration::from_secs(60);
        // Passes before the deadline (the cache's start may wake some) want the next one at the
        // deadline; the pass it wakes fails with something due at once; the next ends the loop.
        let (woken, retried) = (Mutex::new(None), Mutex::new(None));
        let pass = || {
            let now = tokio::time::Instant::now();
            let result = if now < deadline {
                *wake_at.lock().unwrap() = Some(deadline);
                Ok(Vec::new())
            } else if woken.lock().unwrap().is_none() {
                *woken.lock().unwrap() = Some(now - start);
                *wake_at.lock().unwrap() = Some(now);
                Err(ApiError::internal("failed"))
            } else {
                retried.lock().unwrap().get_or_insert(now - start);
                let _ = stop_tx.send(true);
                Ok(Vec::new())
            };
            async move { result }
        };
        let wakers = || Wakers { own: pods.clone(), candidates: Vec::new(), registry: false };
        lp.run(wakers, pass, stop).await;
        assert_eq!(woken.into_inner().unwrap(), Some(Duration::from_secs(60)), "woken at the deadline");
        assert_eq!(retried.into_inner().unwrap(), Some(Duration::from_secs(64)), "after the doubled retry delay");
    }
}
