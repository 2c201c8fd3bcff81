//! The Reflector keeps a queue (and so the store behind it) in step with the API server, with
//! client-go 1.36's list/watch semantics.
//!
//! Cycle (`run`): ListAndWatch, on error call the watch-error hook, then always wait before the
//! next cycle (so every relist is delayed, as in client-go). The delay comes from one
//! [`RetryPolicy`] per reflector: the server's `Retry-After` when given, a short pause while the
//! connection itself fails (refused, reset, EOF, timed out), client-go's exponential backoff
//! otherwise (error answers, and transport failures such as TLS verification, DNS resolution or
//! credentials); the backoff restarts when a watch delivers an event after the list (a list that
//! succeeds, streaming or paged, does not restart it, nor does a streaming list's end bookmark) or
//! when the server answers again after an outage (see [`crate::backoff`]).
//!
//! ListAndWatch:
//! 1. Streaming list (default): WATCH with `sendInitialEvents=true`,
//!    `resourceVersionMatch=NotOlderThan`, bookmarks; ADDED/MODIFIED/DELETED fill a temporary map
//!    until the BOOKMARK annotated `k8s.io/initial-events-end: "true"`, whose resourceVersion becomes
//!    the sync point; then the map replaces the queue content atomically and the same stream goes
//!    on as the watch. Retriable errors (connection refused, 429) back off and retry; expired /
//!    too-large resourceVersion retries from `""` at once, without waiting (a server that answers
//!    so to a request at `""` gets a backoff step instead); anything else — including a plain
//!    bookmark before the end marker or no event at all for `initial_events_idle_timeout` (servers without
//!    streaming lists) — falls back to LIST. A stream that ends before its end marker also falls
//!    back to LIST for this cycle: kube-apiserver closes a watcher that does not keep up while it
//!    still sends the initial events (its "unresponsive" close), and under steady writes it would
//!    close every retry the same way, while a LIST is answered whole whatever the write rate
//!    (client-go retries the streaming list at once, which can repeat forever). A fake or old
//!    server never hangs the reflector.
//! 2. LIST (fallback or when streaming is off): first at resourceVersion `"0"` with page size 500,
//!    later at the last synced resourceVersion without paging (unless an RV `"0"` list came back
//!    paginated, which latches paging on); continue tokens are followed to the end with the
//!    resourceVersion cleared; a 410 on a later page becomes one unpaginated list; a 410 or "too
//!    large resource version" retries at once with `""`. The queue is replaced atomically with the
//!    full list.
//! 3. WATCH from the last resourceVersion with bookmarks and a timeout drawn from
//!    [min, 2×min] (default 5–10 min). A cleanly closed watch restarts at once without a relist.
//!    A watch that cannot be opened is opened again at the same resourceVersion, without a
//!    relist: after the short pause (connection refused) or Retry-After (429) however often it
//!    happens; after the short pause (a lost connection: reset, EOF, timed out, HTTP/2 connection
//!    lost) or Retry-After (a 5xx with Retry-After) up to [`MAX_WATCH_OPEN_RETRIES`] times in a
//!    row, as client-go's `Request.Watch` does, so a server or load balancer that restarts for a
//!    few seconds only costs a re-watch. (A request reset before any answer is also sent once
//!    more at once by the lister-watcher, as Go's transport does.) A 429 ERROR event backs off
//!    and re-watches too. A 410, a lost connection or 5xx past the retries, or any other error
//!    ends ListAndWatch (relist at the last resourceVersion after the backoff); a watch that ends
//!    in under a second with no event is an error. Bookmarks advance the resourceVersion and
//!    reach the queue. For watches started at `""`/`"0"` the resourceVersion only advances from
//!    the first non-ADDED event (the initial ADDEDs are not in resourceVersion order).
//! 4. A resync timer (if a period is set) calls the queue's `resync` whenever `should_resync`
//!    says a handler is due. It runs for the whole watch phase, once the list has synced: while a
//!    watch delivers events, while a watch is being opened, and during the retry waits of the
//!    phase (429, a failed connection, Retry-After); not during a list or a streaming list, nor
//!    during the wait before a relist. A resync failure ends the watch phase (the next cycle
//!    relists).
//!
//! Cancellation stops everything promptly; no task is spawned, so nothing is left running.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use parking_lot::Mutex;
use rand::Rng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backoff::{BackoffConfig, RetryPolicy};
use crate::fifo::{FifoError, Queue};
use crate::key::ObjectKey;
use crate::listwatch::{Error, ListOptions, ListerWatcher, ObjectList, ResourceVersionMatch, WatchEvent, WatchStream};
use crate::object::Object;

/// How many times in a row a watch whose opening failed with a lost connection or a 5xx with
/// Retry-After is opened again at the same resourceVersion before the reflector relists
/// (client-go's `Request.Watch` `maxRetries`).
pub const MAX_WATCH_OPEN_RETRIES: u32 = 10;

/// Reflector settings; `Default` gives client-go's.
#[derive(Debug, Clone)]
pub struct ReflectorOptions {
    /// Name for logs.
    pub name: String,
    /// LIST page size (client-go `WatchListPageSize`); `None` = 500 for RV "0"/"" lists and no
    /// paging for lists at a specific resourceVersion.
    pub page_size: Option<u32>,
    /// Use streaming lists (client-go `WatchListClient`, on by default since 1.35).
    pub streaming_list: bool,
    /// Minimum watch timeout; each watch asks for a random timeout in [min, 2×min]. client-go
    /// raises a smaller `MinWatchTimeout` to its 5-minute default; here any value down to a second
    /// is used (tests and short-lived programs ask for shorter watches on purpose).
    pub min_watch_timeout: Duration,
    /// Delays between cycles and retries (see [`crate::backoff`]).
    pub backoff: BackoffConfig,
    /// How often to check whether a resync is due (0 = never).
    pub resync_period: Duration,
    /// During a streaming list, give up and fall back to LIST after this long without any event.
    pub initial_events_idle_timeout: Duration,
    /// Base options (selectors) merged into every request.
    pub base: ListOptions,
    /// How long a watch that ends with an internal error (500) is opened again from the last
    /// resourceVersion instead of relisting, counted from the first such error (client-go's
    /// `MaxInternalErrorRetryDuration`; 0, the default, relists at once). The count starts
    /// again after a minute without one.
    pub max_internal_error_retry_duration: Duration,
}

impl Default for ReflectorOptions {
    fn default() -> Self {
        ReflectorOptions {
            name: "reflector".to_string(),
            page_size: None,
            streaming_list: true,
            min_watch_timeout: Duration::from_secs(300),
            backoff: BackoffConfig::default(),
            resync_period: Duration::ZERO,
            initial_events_idle_timeout: Duration::from_secs(10),
            base: ListOptions::default(),
            max_internal_error_retry_duration: Duration::ZERO,
        }
    }
}

type Hook = Arc<dyn Fn(&str) + Send + Sync>;
/// A callback receiving ListAndWatch errors.
pub type ErrorHook = Arc<dyn Fn(&Error) + Send + Sync>;

/// Hooks and callbacks of a reflector.
#[derive(Clone, Default)]
pub struct ReflectorHooks {
    /// Decides whether a resync is due when the resync timer fires (`None` = always).
    pub should_resync: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
    /// Called with ListAndWatch errors (list failures and watch-establishment failures), as
    /// client-go's WatchErrorHandler.
    pub watch_error: Option<ErrorHook>,
    /// Called before each LIST or streaming list with the resourceVersion requested.
    pub before_list: Option<Hook>,
    /// Called after each successful list with the list's resourceVersion.
    pub after_list: Option<Hook>,
    /// Called when a watch is established, with the resourceVersion it starts from (for
    /// metrics).
    pub watch_started: Option<Hook>,
}

#[derive(Debug, Default)]
struct RvState {
    last_sync: String,
    unavailable: bool,
    paginated_result: bool,
}

/// Shared, readable reflector state.
#[derive(Debug, Clone, Default)]
pub struct ReflectorStatus {
    inner: Arc<Mutex<RvState>>,
}

impl ReflectorStatus {
    /// The last resourceVersion the reflector synced to ("" before the first list).
    pub fn last_sync_resource_version(&self) -> String {
        self.inner.lock().last_sync.clone()
    }
}

/// Keeps a [`Queue`] in step with a [`ListerWatcher`]. See the module documentation.
pub struct Reflector<K, L, Q> {
    lw: Arc<L>,
    queue: Arc<Q>,
    opts: ReflectorOptions,
    hooks: ReflectorHooks,
    status: ReflectorStatus,
    _k: std::marker::PhantomData<fn() -> K>,
}

/// Where an event's resourceVersion comes from.
enum Either<K> {
    Obj(Object<K>),
    Rv(String),
}

enum Stop {
    Cancelled,
    Err(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Err(e)
    }
}

fn store_err(e: FifoError) -> Stop {
    match e {
        FifoError::Closed(_) => Stop::Cancelled,
        other => Stop::Err(Error::Store(other.to_string())),
    }
}

impl<K, L, Q> Reflector<K, L, Q>
where
    K: Send + Sync + 'static,
    L: ListerWatcher<K>,
    Q: Queue<K>,
{
    /// A reflector feeding `queue` from `lw`.
    pub fn new(lw: Arc<L>, queue: Arc<Q>, opts: ReflectorOptions, hooks: ReflectorHooks) -> Self {
        Reflector { lw, queue, opts, hooks, status: ReflectorStatus::default(), _k: std::marker::PhantomData }
    }

    /// A handle to read the last synced resourceVersion.
    pub fn status(&self) -> ReflectorStatus {
        self.status.clone()
    }

    /// The last synced resourceVersion.
    pub fn last_sync_resource_version(&self) -> String {
        self.status.last_sync_resource_version()
    }

    /// Runs until `cancel` fires.
    pub async fn run(&self, cancel: CancellationToken) {
        let mut retry = RetryPolicy::new(self.opts.backoff);
        while !cancel.is_cancelled() {
            let ended = match self.list_and_watch(&cancel, &mut retry).await {
                Ok(ended) => ended,
                Err(Stop::Cancelled) => return,
                Err(Stop::Err(e)) => {
                    self.watch_error(&e);
                    e
                }
            };
            let delay = retry.delay(&ended);
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    fn watch_error(&self, e: &Error) {
        if let Some(h) = &self.hooks.watch_error {
            h(e);
        }
        if e.is_expired() {
            tracing::debug!(reflector = %self.opts.name, error = %e, "watch closed");
        } else {
            tracing::warn!(reflector = %self.opts.name, error = %e, "list and watch failed");
        }
    }

    /// One ListAndWatch cycle. `Ok(e)`: the watch ended with `e` and the next cycle relists (as
    /// client-go, such endings do not reach the watch-error hook).
    async fn list_and_watch(&self, cancel: &CancellationToken, retry: &mut RetryPolicy) -> Result<Error, Stop> {
        let mut stream = None;
        if self.opts.streaming_list && self.lw.supports_streaming_list() {
            match self.watch_list(cancel, retry).await {
                Ok(s) => stream = Some(s),
                Err(Stop::Cancelled) => return Err(Stop::Cancelled),
                Err(Stop::Err(e)) => {
                    tracing::debug!(reflector = %self.opts.name, error = %e, "streaming list failed; falling back to LIST");
                }
            }
        }
        if stream.is_none() {
            self.list(cancel, retry).await?;
        }
        tracing::debug!(reflector = %self.opts.name, rv = %self.last_sync_resource_version(), "caches populated");
        self.watch(cancel, retry, stream).await
    }

    fn set_last_sync(&self, rv: &str) {
        let mut st = self.status.inner.lock();
        if st.last_sync != rv {
            // Reuses the buffer: this runs once per watch event.
            st.last_sync.clear();
            st.last_sync.push_str(rv);
        }
    }

    fn relist_resource_version(&self) -> String {
        let st = self.status.inner.lock();
        if st.unavailable {
            String::new()
        } else if st.last_sync.is_empty() {
            "0".to_string()
        } else {
            st.last_sync.clone()
        }
    }

    fn watch_timeout(&self) -> u32 {
        let min = self.opts.min_watch_timeout.as_secs().max(1);
        rand::rng().random_range(min..=2 * min) as u32
    }

    async fn cancellable<T>(&self, cancel: &CancellationToken, f: impl Future<Output = T>) -> Result<T, Stop> {
        tokio::select! {
            _ = cancel.cancelled() => Err(Stop::Cancelled),
            r = f => Ok(r),
        }
    }

    async fn list(&self, cancel: &CancellationToken, retry: &mut RetryPolicy) -> Result<(), Stop> {
        let rv = self.relist_resource_version();
        if let Some(h) = &self.hooks.before_list {
            h(&rv);
        }
        let (list, paginated) = match self.cancellable(cancel, self.paged_list(&rv)).await? {
            Err(e) if e.is_expired() || e.is_too_large_resource_version() => {
                self.status.inner.lock().unavailable = true;
                let rv2 = self.relist_resource_version();
                tracing::debug!(reflector = %self.opts.name, error = %e, "list resourceVersion unavailable; listing at the latest");
                self.cancellable(cancel, self.paged_list(&rv2)).await?
            }
            other => other,
        }
        .map_err(Stop::Err)?;
        retry.answered();
        {
            let mut st = self.status.inner.lock();
            if rv == "0" && paginated {
                st.paginated_result = true;
            }
            st.unavailable = false;
        }
        let list_rv = list.resource_version.clone();
        self.queue.replace(list.items, &list_rv).await.map_err(store_err)?;
        self.set_last_sync(&list_rv);
        if let Some(h) = &self.hooks.after_list {
            h(&list_rv);
        }
        Ok(())
    }

    /// LIST following continue tokens (client-go's pager). Returns the merged list and whether it
    /// was paginated.
    async fn paged_list(&self, rv: &str) -> Result<(ObjectList<K>, bool), Error> {
        let page = if let Some(p) = self.opts.page_size {
            p
        } else if self.status.inner.lock().paginated_result || rv.is_empty() || rv == "0" {
            500
        } else {
            0
        };
        let mut opts = self.opts.base.clone();
        opts.resource_version = Some(rv.to_string()).filter(|r| !r.is_empty());
        opts.limit = Some(page).filter(|p| *p > 0);
        let mut first = self.lw.list(&opts).await?;
        let Some(mut token) = first.continue_token.take() else {
            return Ok((first, false));
        };
        loop {
            let mut next = self.opts.base.clone();
            next.limit = opts.limit;
            next.continue_token = Some(token);
            match self.lw.list(&next).await {
                Ok(mut page) => {
                    first.items.append(&mut page.items);
                    match page.continue_token.take() {
                        Some(t) => token = t,
                        None => break,
                    }
                }
                Err(e) if e.is_expired() => {
                    // A later page expired: one full, unpaginated list at the original RV.
                    tracing::debug!(reflector = %self.opts.name, "continue token expired; full list");
                    let mut full = opts.clone();
                    full.limit = None;
                    let l = self.lw.list(&full).await?;
                    return Ok((l, true));
                }
                Err(e) => return Err(e),
            }
        }
        first.continue_token = None;
        Ok((first, true))
    }

    /// The streaming list. Ok(stream) once the initial events are in the queue.
    async fn watch_list(&self, cancel: &CancellationToken, retry: &mut RetryPolicy) -> Result<WatchStream<K>, Stop> {
        loop {
            let rv = {
                let st = self.status.inner.lock();
                if st.unavailable { String::new() } else { st.last_sync.clone() }
            };
            if let Some(h) = &self.hooks.before_list {
                h(&rv);
            }
            let mut opts = self.opts.base.clone();
            let at_latest = rv.is_empty();
            opts.resource_version = Some(rv).filter(|r| !r.is_empty());
            opts.resource_version_match = Some(ResourceVersionMatch::NotOlderThan);
            opts.send_initial_events = Some(true);
            opts.allow_watch_bookmarks = true;
            opts.timeout_seconds = Some(self.watch_timeout());
            let mut stream = match self.cancellable(cancel, self.lw.watch(&opts)).await? {
                Ok(s) => {
                    retry.answered();
                    s
                }
                Err(e) => {
                    self.retry_or_fail_watch_list(cancel, retry, e, at_latest).await?;
                    continue;
                }
            };
            let mut temp = InitialEvents::default();
            // Held transformed, as the queue would hold them (the queue transforms them again on
            // the replace: transforms are idempotent).
            let transform = self.queue.transform();
            loop {
                let next = tokio::select! {
                    _ = cancel.cancelled() => return Err(Stop::Cancelled),
                    r = tokio::time::timeout(self.opts.initial_events_idle_timeout, stream.next()) => r,
                };
                match next {
                    Err(_) => {
                        return Err(Stop::Err(Error::WatchListUnsupported(format!(
                            "no initial-events-end bookmark and no event for {:?}",
                            self.opts.initial_events_idle_timeout
                        ))));
                    }
                    Ok(None) => {
                        return Err(Stop::Err(Error::WatchListUnsupported(format!(
                            "the stream ended before the initial-events-end bookmark after {} objects",
                            temp.len()
                        ))));
                    }
                    Ok(Some(Err(e))) => {
                        self.retry_or_fail_watch_list(cancel, retry, e, at_latest).await?;
                        break;
                    }
                    Ok(Some(Ok(ev))) => match ev {
                        WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                            // An object the transform refuses is left out, as client-go's
                            // temporary store leaves it (the queue would refuse it too). A LIST's
                            // replace fails as a whole instead, as client-go's: it is retried.
                            match crate::fifo::apply_transform(&transform, o) {
                                Ok(o) => temp.upsert(o),
                                Err(e) => tracing::error!(reflector = %self.opts.name, error = %e,
                                    "unable to add a streaming list's object to the store"),
                            }
                        }
                        WatchEvent::Deleted(o) => temp.remove(o.key()),
                        WatchEvent::Bookmark { resource_version, initial_events_end: true } => {
                            self.status.inner.lock().unavailable = false;
                            self.queue.replace(temp.objects, &resource_version).await.map_err(store_err)?;
                            self.set_last_sync(&resource_version);
                            if let Some(h) = &self.hooks.after_list {
                                h(&resource_version);
                            }
                            return Ok(stream);
                        }
                        WatchEvent::Bookmark { .. } => {
                            return Err(Stop::Err(Error::WatchListUnsupported(
                                "bookmark without initial-events-end before the initial events completed".into(),
                            )));
                        }
                        WatchEvent::Error(status) => {
                            self.retry_or_fail_watch_list(cancel, retry, Error::api(status), at_latest).await?;
                            break;
                        }
                    },
                }
            }
        }
    }

    /// Classifies a streaming-list error: Ok(()) = retry, Err = give up (fall back to LIST).
    /// `at_latest`: the failed request asked for the latest data (resourceVersion "").
    async fn retry_or_fail_watch_list(
        &self,
        cancel: &CancellationToken,
        retry: &mut RetryPolicy,
        e: Error,
        at_latest: bool,
    ) -> Result<(), Stop> {
        if e.is_retriable() {
            self.wait_retry(cancel, retry, &e, &mut None).await
        } else if e.is_expired() || e.is_too_large_resource_version() {
            self.status.inner.lock().unavailable = true;
            if at_latest {
                // The latest data cannot be expired nor too new: a server that says so gets a
                // backoff step, never a busy loop.
                self.wait_retry(cancel, retry, &e, &mut None).await
            } else {
                tracing::debug!(reflector = %self.opts.name, error = %e, "streaming list resourceVersion unavailable; retrying at the latest");
                Ok(())
            }
        } else {
            Err(Stop::Err(e))
        }
    }

    /// Waits before retrying after `e`, keeping the resync timer `resync` (see [`Self::resyncing`]).
    async fn wait_retry(
        &self,
        cancel: &CancellationToken,
        retry: &mut RetryPolicy,
        e: &Error,
        resync: &mut Option<Instant>,
    ) -> Result<(), Stop> {
        let d = retry.delay(e);
        tracing::debug!(reflector = %self.opts.name, error = %e, delay = ?d, "retrying");
        self.resyncing(cancel, resync, tokio::time::sleep(d)).await
    }

    /// Runs `fut` to completion (unless cancelled) while keeping the resync timer: whenever
    /// `resync` comes due, the queue resyncs (if `should_resync` agrees) and the next deadline is
    /// set. `None`: no resync. A resync failure is returned as an error and abandons `fut`.
    async fn resyncing<T>(
        &self,
        cancel: &CancellationToken,
        resync: &mut Option<Instant>,
        fut: impl Future<Output = T>,
    ) -> Result<T, Stop> {
        let mut fut = std::pin::pin!(fut);
        loop {
            let resync_at = *resync;
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Stop::Cancelled),
                _ = async { tokio::time::sleep_until(resync_at.expect("guarded")).await }, if resync_at.is_some() => {
                    if self.hooks.should_resync.as_ref().is_none_or(|f| f()) {
                        tracing::debug!(reflector = %self.opts.name, "resync");
                        self.queue.resync().await.map_err(store_err)?;
                    }
                    *resync = self.new_resync_deadline();
                }
                r = &mut fut => return Ok(r),
            }
        }
    }

    /// A resync that fails while the watch phase waits or opens a watch ends the phase as one
    /// that fails during a watch does: the next cycle relists.
    fn resync_failed(&self, stop: Stop) -> Result<Error, Stop> {
        match stop {
            Stop::Cancelled => Err(Stop::Cancelled),
            Stop::Err(e) => {
                tracing::warn!(reflector = %self.opts.name, error = %e, "resync failed; relisting");
                Ok(e)
            }
        }
    }

    /// Watches until the watch ends with an error, which is returned (the next cycle relists).
    async fn watch(
        &self,
        cancel: &CancellationToken,
        retry: &mut RetryPolicy,
        mut first: Option<WatchStream<K>>,
    ) -> Result<Error, Stop> {
        let mut resync = self.new_resync_deadline();
        // Consecutive openings retried at the same resourceVersion.
        let mut open_retries = 0;
        let mut internal = InternalErrors::default();
        loop {
            if cancel.is_cancelled() {
                return Err(Stop::Cancelled);
            }
            let start = Instant::now();
            let (stream, propagate) = match first.take() {
                Some(s) => (s, true),
                None => {
                    let rv = self.last_sync_resource_version();
                    let mut opts = self.opts.base.clone();
                    let propagate = !(rv.is_empty() || rv == "0");
                    opts.resource_version = Some(rv).filter(|r| !r.is_empty());
                    opts.timeout_seconds = Some(self.watch_timeout());
                    opts.allow_watch_bookmarks = true;
                    let opened = match self.resyncing(cancel, &mut resync, self.lw.watch(&opts)).await {
                        Ok(opened) => opened,
                        Err(stop) => return self.resync_failed(stop),
                    };
                    match opened {
                        Ok(s) => {
                            open_retries = 0;
                            retry.answered();
                            if let Some(h) = &self.hooks.watch_started {
                                h(opts.resource_version.as_deref().unwrap_or(""));
                            }
                            (s, propagate)
                        }
                        Err(e) if e.is_retriable() => {
                            open_retries = 0;
                            if let Err(stop) = self.wait_retry(cancel, retry, &e, &mut resync).await {
                                return self.resync_failed(stop);
                            }
                            continue;
                        }
                        Err(e) if e.is_watch_open_retriable() && open_retries < MAX_WATCH_OPEN_RETRIES => {
                            open_retries += 1;
                            tracing::debug!(reflector = %self.opts.name, error = %e, attempt = open_retries,
                                "watch could not be opened; retrying at the same resourceVersion");
                            if let Err(stop) = self.wait_retry(cancel, retry, &e, &mut resync).await {
                                return self.resync_failed(stop);
                            }
                            continue;
                        }
                        Err(e) => return Err(Stop::Err(e)),
                    }
                }
            };
            match self.handle_watch(stream, start, propagate, cancel, &mut resync, retry).await {
                Ok(()) => continue,
                Err(Stop::Cancelled) => return Err(Stop::Cancelled),
                Err(Stop::Err(e)) if e.is_expired() => {
                    tracing::debug!(reflector = %self.opts.name, error = %e, "watch expired; relisting");
                    return Ok(e);
                }
                Err(Stop::Err(e)) if e.is_too_many_requests() => {
                    if let Err(stop) = self.wait_retry(cancel, retry, &e, &mut resync).await {
                        return self.resync_failed(stop);
                    }
                }
                Err(Stop::Err(e))
                    if e.is_internal()
                        && internal.retry(Instant::now(), self.opts.max_internal_error_retry_duration) =>
                {
                    tracing::debug!(reflector = %self.opts.name, error = %e, "watch ended with an internal error; watching again");
                }
                Err(Stop::Err(e)) => {
                    tracing::warn!(reflector = %self.opts.name, error = %e, "watch ended with error; relisting");
                    return Ok(e);
                }
            }
        }
    }

    fn new_resync_deadline(&self) -> Option<Instant> {
        (!self.opts.resync_period.is_zero()).then(|| Instant::now() + self.opts.resync_period)
    }

    async fn handle_watch(
        &self,
        mut stream: WatchStream<K>,
        start: Instant,
        mut propagate: bool,
        cancel: &CancellationToken,
        resync: &mut Option<Instant>,
        retry: &mut RetryPolicy,
    ) -> Result<(), Stop> {
        let mut count: u64 = 0;
        loop {
            let item = self.resyncing(cancel, resync, stream.next()).await?;
            let ev = match item {
                None => {
                    if start.elapsed() < Duration::from_secs(1) && count == 0 {
                        return Err(Stop::Err(Error::VeryShortWatch(self.opts.name.clone())));
                    }
                    return Ok(());
                }
                Some(Err(e)) => return Err(Stop::Err(e)),
                Some(Ok(ev)) => ev,
            };
            // The event's resourceVersion, read after the event is queued (an Arc clone, no copy).
            let (r, rv_of): (_, Either<K>) = match ev {
                WatchEvent::Added(o) => (self.queue.add(o.clone()).await, Either::Obj(o)),
                WatchEvent::Modified(o) => {
                    propagate = true;
                    (self.queue.update(o.clone()).await, Either::Obj(o))
                }
                WatchEvent::Deleted(o) => {
                    propagate = true;
                    (self.queue.delete(o.clone()).await, Either::Obj(o))
                }
                WatchEvent::Bookmark { resource_version, .. } => {
                    propagate = true;
                    (self.queue.bookmark(&resource_version).await, Either::Rv(resource_version))
                }
                WatchEvent::Error(status) => return Err(Stop::Err(Error::api(status))),
            };
            let rv = match &rv_of {
                Either::Obj(o) => o.resource_version(),
                Either::Rv(r) => Some(r.as_str()),
            };
            match r {
                Ok(()) => {}
                Err(FifoError::Closed(_)) => return Err(Stop::Cancelled),
                Err(e) => {
                    tracing::error!(reflector = %self.opts.name, error = %e, "unable to queue watch event")
                }
            }
            if propagate && let Some(rv) = rv.filter(|r| !r.is_empty()) {
                self.set_last_sync(rv);
            }
            if count == 0 {
                retry.progress();
            }
            count += 1;
        }
    }
}

/// client-go's `RetryWithDeadline` for watches that end with an internal error: retried while
/// the first such error is at most the window old; a minute without one starts the count again.
#[derive(Default)]
struct InternalErrors {
    first: Option<Instant>,
    last: Option<Instant>,
}

impl InternalErrors {
    /// Records an internal error at `now`; whether the watch is to be opened again.
    fn retry(&mut self, now: Instant, window: Duration) -> bool {
        if self.last.is_some_and(|last| now.duration_since(last) >= Duration::from_secs(60)) {
            self.first = None;
        }
        let first = *self.first.get_or_insert(now);
        self.last = Some(now);
        !window.is_zero() && now.duration_since(first) <= window
    }
}

/// The objects of a streaming list's initial events, latest version per key, until the
/// initial-events-end bookmark (client-go's temporary store).
///
/// The objects sit in a `Vec` in arrival order with a map from key to position, not in a tree:
/// a tree's nodes would be allocated between the objects as they arrive and freed at the end,
/// leaving small holes among the cached objects that the store's keys then fill, so the
/// objects' first versions, once replaced, could not merge into room for their successors.
struct InitialEvents<K> {
    objects: Vec<Object<K>>,
    positions: HashMap<ObjectKey, usize, foldhash::fast::RandomState>,
}

impl<K> Default for InitialEvents<K> {
    fn default() -> Self {
        Self { objects: Vec::new(), positions: HashMap::default() }
    }
}

impl<K> InitialEvents<K> {
    fn len(&self) -> usize {
        self.objects.len()
    }

    /// ADDED or MODIFIED: the object replaces its key's earlier version, if any.
    fn upsert(&mut self, obj: Object<K>) {
        match self.positions.get(obj.key()) {
            Some(&i) => self.objects[i] = obj,
            None => {
                self.positions.insert(obj.key().clone(), self.objects.len());
                self.objects.push(obj);
            }
        }
    }

    /// DELETED: the key's object, if any, leaves the set.
    fn remove(&mut self, key: &ObjectKey) {
        if let Some(i) = self.positions.remove(key) {
            self.objects.swap_remove(i);
            if let Some(moved) = self.objects.get(i) {
                self.positions.insert(moved.key().clone(), i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn internal_errors_are_retried_within_the_window_which_a_quiet_minute_restarts() {
        let window = Duration::from_secs(30);
        let mut errors = InternalErrors::default();
        let t0 = Instant::now();
        assert!(errors.retry(t0, window));
        assert!(errors.retry(t0 + Duration::from_secs(30), window));
        assert!(!errors.retry(t0 + Duration::from_secs(31), window));
        // A minute without an internal error starts the window again.
        assert!(errors.retry(t0 + Duration::from_secs(91), window));
        assert!(!InternalErrors::default().retry(t0, Duration::ZERO), "no window, no retry");
    }
}
