//! Test controls: the faults a real kube-apiserver produces, reproducible on demand — injected
//! errors, latency, slow streams, dropped watches, unresponsive-watcher closes, graceful
//! shutdown's 429s, connections cut in the middle of a response, HTTP/2 GOAWAY — plus counters to
//! synchronize on them.
//!
//! All controls are lock-free or short-lock and may be changed while the
//! server runs; they affect only requests that start (or watch events that are
//! written) after the change.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::status::ApiError;

/// A fault to inject into upcoming requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// 429 TooManyRequests with `Retry-After: secs`.
    TooManyRequests {
        /// Retry-After seconds.
        retry_after_secs: u64,
    },
    /// 500 InternalError.
    InternalError,
}

/// What kube-apiserver answers new requests once its shutdown delay has passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownAnswer {
    /// The default: the listener is closed, and requests that still arrive on open connections
    /// get 503 `ServiceUnavailable` "apiserver is shutting down" with `Retry-After: 1`.
    ServiceUnavailable,
    /// With `--shutdown-send-retry-after`: the listener stays open until the requests in flight
    /// are drained, and new requests get 429, `Retry-After: 5`, `Connection: close` and the
    /// plain-text "The apiserver is shutting down, please try again later.".
    RetryAfter,
}

/// kube-apiserver's close of watchers that do not keep up: its watch cache gives each watcher a
/// small buffer of events written after the watch started (10 by default) and closes the watcher
/// when that buffer stays full for longer than the dispatch budget (~100 ms), logging "Forcing …
/// watcher close due to unresponsiveness". The close is graceful (the pending events are still
/// sent) only when they hold the end bookmark of a streaming list; otherwise the stream just ends,
/// so a streaming list that is closed before its end marker never gets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnresponsiveClose {
    /// Events written since the watch started that may wait unsent.
    pub buffer: usize,
    /// How long the buffer may stay over `buffer` before the watcher is closed.
    pub grace: Duration,
}

impl Default for UnresponsiveClose {
    fn default() -> Self {
        UnresponsiveClose { buffer: 10, grace: Duration::from_millis(100) }
    }
}

/// Counts of handled resource requests by verb.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// LIST requests.
    pub list: u64,
    /// WATCH requests.
    pub watch: u64,
    /// GET of one object.
    pub get: u64,
    /// POST.
    pub create: u64,
    /// PUT.
    pub update: u64,
    /// PATCH.
    pub patch: u64,
    /// DELETE (object or collection).
    pub delete: u64,
}

/// A verb for [`Controls::count`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// LIST.
    List,
    /// WATCH.
    Watch,
    /// GET.
    Get,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE.
    Delete,
}

/// Live-adjustable test controls shared by all connections.
#[derive(Debug)]
pub struct Controls {
    faults: Mutex<(u64, Option<Fault>)>,
    latency_us: AtomicU64,
    stream_delay_us: AtomicU64,
    unresponsive: Mutex<Option<UnresponsiveClose>>,
    unresponsive_closes: AtomicU64,
    watch_epoch: watch::Sender<u64>,
    open_watches: watch::Sender<usize>,
    counts: Mutex<RequestCounts>,
    /// 0: serving; 1: 503 "apiserver is shutting down"; 2: 429 with `Retry-After: 5`.
    shutting_down: std::sync::atomic::AtomicU8,
    not_ready: std::sync::atomic::AtomicBool,
    in_flight: watch::Sender<usize>,
    cut_epoch: watch::Sender<u64>,
    goaway_epoch: watch::Sender<u64>,
}

/// Keeps a request counted in [`Controls::in_flight`] while alive.
#[derive(Debug)]
pub struct InFlight(watch::Sender<usize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Keeps a watch counted in [`Controls::open_watches`] while alive.
#[derive(Debug)]
pub struct WatchGuard(watch::Sender<usize>);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Default for Controls {
    fn default() -> Self {
        Controls {
            faults: Mutex::new((0, None)),
            latency_us: AtomicU64::new(0),
            stream_delay_us: AtomicU64::new(0),
            unresponsive: Mutex::new(None),
            unresponsive_closes: AtomicU64::new(0),
            watch_epoch: watch::channel(0).0,
            open_watches: watch::channel(0).0,
            counts: Mutex::new(RequestCounts::default()),
            shutting_down: std::sync::atomic::AtomicU8::new(0),
            not_ready: std::sync::atomic::AtomicBool::new(false),
            in_flight: watch::channel(0).0,
            cut_epoch: watch::channel(0).0,
            goaway_epoch: watch::channel(0).0,
        }
    }
}

impl Controls {
    /// Makes the next `n` requests fail with `fault`.
    pub fn fail_next(&self, n: u64, fault: Fault) {
        *self.faults.lock() = (n, Some(fault));
    }

    /// Consumes one pending fault, if any.
    pub fn take_fault(&self) -> Option<ApiError> {
        let mut f = self.faults.lock();
        if f.0 == 0 {
            return None;
        }
        f.0 -= 1;
        f.1.map(|fault| match fault {
            Fault::TooManyRequests { retry_after_secs } => ApiError::too_many_requests(retry_after_secs),
            Fault::InternalError => ApiError::internal("injected fault"),
        })
    }

    /// Sets a delay added before handling every request.
    pub fn set_latency(&self, d: Duration) {
        self.latency_us.store(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// The per-request latency.
    pub fn latency(&self) -> Duration {
        Duration::from_micros(self.latency_us.load(Ordering::Relaxed))
    }

    /// Sets a delay between watch events (0 disables; events then batch).
    pub fn set_stream_delay(&self, d: Duration) {
        self.stream_delay_us.store(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// The delay between watch events.
    pub fn stream_delay(&self) -> Duration {
        Duration::from_micros(self.stream_delay_us.load(Ordering::Relaxed))
    }

    /// Closes watchers that do not keep up, as kube-apiserver does (None: never; a watcher that
    /// falls behind the whole watch-cache history is still ended).
    pub fn set_unresponsive_close(&self, rule: Option<UnresponsiveClose>) {
        *self.unresponsive.lock() = rule;
    }

    /// The unresponsive-watcher rule in force.
    pub fn unresponsive_close(&self) -> Option<UnresponsiveClose> {
        *self.unresponsive.lock()
    }

    /// Counts one watcher closed for unresponsiveness.
    pub fn count_unresponsive_close(&self) {
        self.unresponsive_closes.fetch_add(1, Ordering::Relaxed);
    }

    /// Watchers closed for unresponsiveness so far.
    pub fn unresponsive_closes(&self) -> u64 {
        self.unresponsive_closes.load(Ordering::Relaxed)
    }

    /// Ends every open watch now.
    pub fn drop_watches(&self) {
        self.watch_epoch.send_modify(|e| *e += 1);
    }

    /// Registers an open watch until the guard is dropped.
    pub fn watch_opened(&self) -> WatchGuard {
        self.open_watches.send_modify(|n| *n += 1);
        WatchGuard(self.open_watches.clone())
    }

    /// Number of watch streams currently open.
    pub fn open_watches(&self) -> usize {
        *self.open_watches.borrow()
    }

    /// Waits until at least `n` watches are open; false on timeout.
    pub async fn wait_for_watches(&self, n: usize, timeout: Duration) -> bool {
        let mut rx = self.open_watches.subscribe();
        matches!(tokio::time::timeout(timeout, rx.wait_for(|c| *c >= n)).await, Ok(Ok(_)))
    }

    /// Waits until at most `n` watches are open; false on timeout.
    pub async fn wait_for_watches_at_most(&self, n: usize, timeout: Duration) -> bool {
        let mut rx = self.open_watches.subscribe();
        matches!(tokio::time::timeout(timeout, rx.wait_for(|c| *c <= n)).await, Ok(Ok(_)))
    }

    /// Counts one handled request.
    pub fn count(&self, verb: Verb) {
        let mut c = self.counts.lock();
        let f = match verb {
            Verb::List => &mut c.list,
            Verb::Watch => &mut c.watch,
            Verb::Get => &mut c.get,
            Verb::Create => &mut c.create,
            Verb::Update => &mut c.update,
            Verb::Patch => &mut c.patch,
            Verb::Delete => &mut c.delete,
        };
        *f += 1;
    }

    /// Request counts so far.
    pub fn request_counts(&self) -> RequestCounts {
        *self.counts.lock()
    }

    /// A receiver that changes when watches must be dropped.
    pub fn watch_epoch(&self) -> watch::Receiver<u64> {
        self.watch_epoch.subscribe()
    }

    /// Which answer new requests get while the server shuts down (`None`: served normally).
    pub fn set_shutting_down(&self, answer: Option<ShutdownAnswer>) {
        let v = match answer {
            None => 0,
            Some(ShutdownAnswer::ServiceUnavailable) => 1,
            Some(ShutdownAnswer::RetryAfter) => 2,
        };
        self.shutting_down.store(v, Ordering::SeqCst);
    }

    /// The answer new requests get while the server shuts down, if it does.
    pub fn shutting_down(&self) -> Option<ShutdownAnswer> {
        match self.shutting_down.load(Ordering::SeqCst) {
            1 => Some(ShutdownAnswer::ServiceUnavailable),
            2 => Some(ShutdownAnswer::RetryAfter),
            _ => None,
        }
    }

    /// Whether `/readyz` fails (from the start of a graceful shutdown) while requests are still
    /// served.
    pub fn set_not_ready(&self, yes: bool) {
        self.not_ready.store(yes, Ordering::SeqCst);
    }

    /// Whether `/readyz` fails.
    pub fn is_not_ready(&self) -> bool {
        self.not_ready.load(Ordering::SeqCst) || self.shutting_down().is_some()
    }

    /// Counts a request in flight until the guard is dropped.
    pub fn request_started(&self) -> InFlight {
        self.in_flight.send_modify(|n| *n += 1);
        InFlight(self.in_flight.clone())
    }

    /// Waits until at least `n` requests are in flight (watches excepted: their handler returns
    /// once the stream starts); false on timeout.
    pub async fn wait_for_requests_in_flight(&self, n: usize, timeout: Duration) -> bool {
        let mut rx = self.in_flight.subscribe();
        matches!(tokio::time::timeout(timeout, rx.wait_for(|c| *c >= n)).await, Ok(Ok(_)))
    }

    /// Waits until no request is in flight (watches excepted: their handler returns once the
    /// stream starts); false on timeout.
    pub async fn wait_drained(&self, timeout: Duration) -> bool {
        let mut rx = self.in_flight.subscribe();
        matches!(tokio::time::timeout(timeout, rx.wait_for(|n| *n == 0)).await, Ok(Ok(_)))
    }

    /// Cuts every open connection: its next write goes out half and the connection breaks (a
    /// connection reset in the middle of a response).
    pub fn cut_connections(&self) {
        self.cut_epoch.send_modify(|e| *e += 1);
    }

    /// A receiver that changes when connections must be cut.
    pub fn cut_epoch(&self) -> watch::Receiver<u64> {
        self.cut_epoch.subscribe()
    }

    /// Asks every open connection to go away: HTTP/2 connections get a GOAWAY (streams in
    /// progress finish, new ones need a new connection), HTTP/1.1 ones close after the response in
    /// progress.
    pub fn goaway(&self) {
        self.goaway_epoch.send_modify(|e| *e += 1);
    }

    /// A receiver that changes when connections must go away.
    pub fn goaway_epoch(&self) -> watch::Receiver<u64> {
        self.goaway_epoch.subscribe()
    }
}
