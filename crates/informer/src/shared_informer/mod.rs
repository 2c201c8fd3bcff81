//! The shared informer (client-go's `SharedIndexInformer`): one list-watch of a resource, one
//! cache, and any number of handlers, each served at its own pace.
//!
//! A `SharedIndexInformer` runs a [`Reflector`] feeding a queue ([`RealFifo`] by default, or
//! [`DeltaFifo`]), pops deltas, applies them to its [`Indexer`] and fans the resulting
//! notifications out to every registered handler ([`process_deltas`](crate::controller::process_deltas) with the
//! informer as the handler).
//!
//! Guarantees (client-go's SharedInformer contract, plus what this crate adds):
//! - The cache is updated before handlers are told: a handler reading the cache sees at least
//!   the state of the notification it is handling. The cache eventually equals the server's
//!   state (the authoritative state of the list-watch) once it stops changing.
//! - Every handler receives notifications for one object in order, one call at a time; it is
//!   level-triggered: after a relist or a `Bounded` overflow intermediate states may be skipped,
//!   but the final state is always delivered. Resyncs replay the *cache* (not the server) as
//!   `on_update(obj, obj)`, only to handlers whose resync period is due.
//! - Each handler has its own buffer and consumer: a slow handler never delays other handlers,
//!   the process loop or the reflector (a `Bounded` handler taking its resync pauses delta
//!   processing for one copy of the cache). Panics in a handler are caught, logged and counted.
//! - A handler added after start first receives `on_add(obj, true)` for the cache's content,
//!   taken under a barrier with delta processing paused, so it misses nothing and sees nothing
//!   twice. Its registration is synced once the informer synced *and* every initial add reached
//!   it.
//! - `run` returns after the cancellation token fired and every handler consumer ended; nothing
//!   the informer started is left running.
//!
//! Queues (observable handler semantics are the same for both):
//! - [`QueueKind::RealFifo`] (default, client-go 1.36): every watch event in stream order;
//!   a relist is one atomic `ReplacedAll`, a resync one `SyncAll`; bookmarks update the store's
//!   resourceVersion.
//! - [`QueueKind::DeltaFifo`]: client-go's legacy queue with the store as known objects and
//!   `emit_replaced`; changes of one key are grouped and keys can be reordered.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use informer::{HandlerFns, SharedIndexInformer, fake::FakeSource};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use tokio_util::sync::CancellationToken;
//!
//! let source = FakeSource::new();
//! source.add(serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}}));
//! let informer = SharedIndexInformer::<ConfigMap>::new(source, std::time::Duration::ZERO);
//! let reg = informer
//!     .add_event_handler(HandlerFns::new().on_add(|o, _| println!("added {}", o.key())))
//!     .unwrap();
//! let cancel = CancellationToken::new();
//! let run = tokio::spawn({
//!     let (i, c) = (informer.clone(), cancel.clone());
//!     async move { i.run(c).await }
//! });
//! reg.synced().wait().await;
//! assert!(informer.lister().by_namespace("ns").get("a").is_some());
//! cancel.cancel();
//! run.await.unwrap();
//! assert!(informer.is_stopped());
//! # });
//! ```

mod listener;
mod metrics;
mod notification;
mod options;
mod processor;
mod queue;
mod registration;
mod stream;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use listener::{Backlog, BacklogPolicy};
pub use metrics::InformerMetrics;
pub use notification::Notification;
pub use options::{
    HandlerOptions, InformerOptions, MINIMUM_RESYNC_PERIOD, PanicPolicy, QueueKind, WatchErrorHandler,
    determine_resync_period,
};
pub use queue::DynListerWatcher;
pub use registration::{HandlerRegistration, InformerError};
pub use stream::NotificationStream;

use listener::{CacheView, Listener};
use metrics::InformerSeries;
use processor::{Processor, Sink};
use queue::InformerQueue;

use crate::controller::{BatchHooks, process_loop};
use crate::fifo::{DeltaFifo, DeltaFifoOptions, Queue, RealFifo, RealFifoOptions, Transform};
use crate::handler::ResourceEventHandler;
use crate::lister::Lister;
use crate::listwatch::{Error, ListerWatcher};
use crate::reflector::{Reflector, ReflectorHooks, ReflectorOptions, ReflectorStatus};
use crate::signal::Signal;
use crate::store::{Indexer, Indexers};

struct Config<K> {
    started: bool,
    stopped: bool,
    transform: Option<Transform<K>>,
    watch_error: Option<WatchErrorHandler>,
    resync_check_period: Duration,
    default_handler_resync: Duration,
}

struct Inner<K> {
    id: u64,
    name: String,
    lw: DynListerWatcher<K>,
    indexer: Arc<Indexer<K>>,
    processor: Arc<Processor<K>>,
    config: Mutex<Config<K>>,
    /// Held while deltas are applied and distributed; a late joiner takes it to snapshot the
    /// cache consistently (client-go's `blockDeltas`).
    block_deltas: Arc<Mutex<()>>,
    synced: Signal,
    stopped: Signal,
    status: std::sync::OnceLock<ReflectorStatus>,
    queue_kind: QueueKind,
    reflector_opts: ReflectorOptions,
    batch: usize,
    next_handler: AtomicU64,
    metrics: Option<InformerSeries>,
}

/// A shared informer. Cheap to clone (all clones are the same informer). See the module docs.
pub struct SharedIndexInformer<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        SharedIndexInformer { inner: self.inner.clone() }
    }
}

impl<K> std::fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("name", &self.inner.name)
            .field("synced", &self.inner.synced.is_set())
            .finish()
    }
}

static NEXT_INFORMER: AtomicU64 = AtomicU64::new(1);

impl<K: Send + Sync + 'static> SharedIndexInformer<K> {
    /// An informer over `lw` with a default resync period and the namespace index
    /// (client-go's `NewSharedIndexInformer`).
    pub fn new<L: ListerWatcher<K>>(lw: L, resync_period: Duration) -> Self {
        Self::with_options(lw, InformerOptions::default().resync_period(resync_period))
    }

    /// An informer with options.
    pub fn with_options<L: ListerWatcher<K>>(lw: L, opts: InformerOptions<K>) -> Self {
        let name = opts.name.unwrap_or_else(|| lw.describe());
        let metrics = opts.metrics.as_ref().map(|m| m.informer(&name));
        let id = NEXT_INFORMER.fetch_add(1, Ordering::Relaxed);
        SharedIndexInformer {
            inner: Arc::new(Inner {
                id,
                indexer: Arc::new(Indexer::new(opts.indexers)),
                processor: Arc::new(Processor::new(metrics.clone())),
                config: Mutex::new(Config {
                    started: false,
                    stopped: false,
                    transform: opts.transform,
                    watch_error: None,
                    resync_check_period: opts.resync_period,
                    default_handler_resync: opts.resync_period,
                }),
                block_deltas: Arc::default(),
                synced: Signal::new(format!("SharedIndexInformer {name}")),
                stopped: Signal::new(format!("SharedIndexInformer {name} stopped")),
                status: std::sync::OnceLock::new(),
                queue_kind: opts.queue,
                reflector_opts: opts.reflector,
                batch: opts.batch.max(1),
                next_handler: AtomicU64::new(1),
                lw: DynListerWatcher::new(lw),
                metrics,
                name,
            }),
        }
    }

    /// The informer's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The cache.
    pub fn indexer(&self) -> &Arc<Indexer<K>> {
        &self.inner.indexer
    }

    /// A lister over the cache.
    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.inner.indexer.clone())
    }

    /// Whether the initial list has been applied to the cache and distributed.
    pub fn has_synced(&self) -> bool {
        self.inner.synced.is_set()
    }

    /// The signal behind [`has_synced`](Self::has_synced).
    pub fn synced(&self) -> Signal {
        self.inner.synced.clone()
    }

    /// Whether the informer has stopped: its stream ended and no handler can be added any more
    /// ([`stopped`](Self::stopped) is set once `run` has also ended every handler consumer).
    pub fn is_stopped(&self) -> bool {
        self.inner.config.lock().stopped
    }

    /// The signal set when `run` has returned (every handler consumer ended).
    pub fn stopped(&self) -> Signal {
        self.inner.stopped.clone()
    }

    /// Whether `run` has been called.
    pub fn is_started(&self) -> bool {
        self.inner.config.lock().started
    }

    /// The reflector's last synced resourceVersion ("" before start or the first list).
    pub fn last_sync_resource_version(&self) -> String {
        self.inner.status.get().map(|s| s.last_sync_resource_version()).unwrap_or_default()
    }

    /// The resync check period (lowered by handlers added before start).
    pub fn resync_check_period(&self) -> Duration {
        self.inner.config.lock().resync_check_period
    }

    /// Sets the transform; only before `run`. It must be idempotent: a streaming list's objects
    /// are transformed as they arrive and again by the queue.
    pub fn set_transform(
        &self,
        f: impl Fn(crate::Object<K>) -> Result<crate::Object<K>, String> + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        let mut c = self.inner.config.lock();
        if c.started {
            return Err(InformerError::AlreadyStarted(self.inner.name.clone()));
        }
        c.transform = Some(Arc::new(f));
        Ok(())
    }

    /// Sets the handler of ListAndWatch errors (client-go's `SetWatchErrorHandler`); only
    /// before `run`. The default logs them.
    pub fn set_watch_error_handler(&self, f: impl Fn(&Error) + Send + Sync + 'static) -> Result<(), InformerError> {
        let mut c = self.inner.config.lock();
        if c.started {
            return Err(InformerError::AlreadyStarted(self.inner.name.clone()));
        }
        c.watch_error = Some(Arc::new(f));
        Ok(())
    }

    /// Adds indexes, at any time before the informer stopped; existing objects are indexed.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), InformerError> {
        if self.is_stopped() {
            return Err(InformerError::Stopped(self.inner.name.clone()));
        }
        self.inner.indexer.add_indexers(indexers)?;
        Ok(())
    }

    /// Registers a handler with the default resync period.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K>,
    ) -> Result<HandlerRegistration<K>, InformerError> {
        self.add_event_handler_with_options(handler, HandlerOptions::default())
    }

    /// Registers a handler with its own resync period (client-go's
    /// `AddEventHandlerWithResyncPeriod`).
    pub fn add_event_handler_with_resync(
        &self,
        handler: impl ResourceEventHandler<K>,
        resync_period: Duration,
    ) -> Result<HandlerRegistration<K>, InformerError> {
        self.add_event_handler_with_options(handler, HandlerOptions::default().resync_period(resync_period))
    }

    /// Registers a handler with options.
    pub fn add_event_handler_with_options(
        &self,
        handler: impl ResourceEventHandler<K>,
        opts: HandlerOptions,
    ) -> Result<HandlerRegistration<K>, InformerError> {
        let handler: Arc<dyn ResourceEventHandler<K>> = Arc::new(handler);
        let sink = if opts.dedicated_thread { Sink::Thread(handler) } else { Sink::Task(handler) };
        self.register(sink, opts)
    }

    /// The informer's notifications as a typed `Stream`: the counterpart of kube-runtime's
    /// `watcher`, with the cache kept and shared, and the old state of every update (see
    /// [`NotificationStream`]). Like a handler it has its own buffer, starts with the cache's
    /// content when the informer has already synced, and is removed when dropped.
    pub fn subscribe(&self) -> Result<NotificationStream<K>, InformerError> {
        self.subscribe_with_options(HandlerOptions::default())
    }

    /// Subscribes a stream with options (`dedicated_thread` is ignored).
    pub fn subscribe_with_options(&self, opts: HandlerOptions) -> Result<NotificationStream<K>, InformerError> {
        let reg = self.register(Sink::Stream, opts)?;
        Ok(NotificationStream::new(reg, self.inner.processor.clone()))
    }

    fn register(&self, sink: Sink<K>, opts: HandlerOptions) -> Result<HandlerRegistration<K>, InformerError> {
        let inner = &self.inner;
        let mut c = inner.config.lock();
        if c.stopped {
            return Err(InformerError::Stopped(inner.name.clone()));
        }
        let mut requested = opts.resync_period.unwrap_or(c.default_handler_resync);
        if !requested.is_zero() {
            if requested < MINIMUM_RESYNC_PERIOD {
                tracing::warn!(informer = %inner.name, ?requested, "resync period too small; using the minimum of 1s");
                requested = MINIMUM_RESYNC_PERIOD;
            }
            if requested < c.resync_check_period {
                if c.started {
                    tracing::warn!(informer = %inner.name, ?requested, check = ?c.resync_check_period,
                        "resync period smaller than the informer's check period, which cannot change after start; using the check period");
                    requested = c.resync_check_period;
                } else {
                    c.resync_check_period = requested;
                    inner.processor.resync_check_period_changed(requested);
                }
            }
        }
        let effective = determine_resync_period(requested, c.resync_check_period);
        let id = inner.next_handler.fetch_add(1, Ordering::Relaxed);
        let name: Arc<str> = opts.name.unwrap_or_else(|| format!("handler-{id}")).into();
        let listener = Arc::new(
            Listener::new(
                id,
                inner.id,
                name.clone(),
                opts.backlog,
                requested,
                effective,
                CacheView { indexer: inner.indexer.clone(), barrier: inner.block_deltas.clone() },
                inner.metrics.as_ref().map(|m| m.handler(&name)),
            )
            .on_panic(opts.on_panic),
        );
        if c.started {
            // Late join: no delta is processed while the cache is replayed to the newcomer. The
            // synthetic adds are queued before the listener becomes visible to the processor, so
            // the informer's sync cannot mark it synced before they are counted.
            let _barrier = inner.block_deltas.lock();
            let now = tokio::time::Instant::now();
            let mut n = 0usize;
            inner.indexer.for_each(|o| {
                n += 1;
                listener.push(Notification::Add { obj: o.clone(), is_in_initial_list: true }, now)
            });
            if inner.processor.add(listener.clone(), sink) {
                listener.upstream_synced();
            }
            tracing::debug!(informer = %inner.name, handler = %name, objects = n, "late handler joined");
        } else {
            inner.processor.add(listener.clone(), sink);
        }
        Ok(HandlerRegistration { listener })
    }

    /// Removes a handler: it receives nothing more (its pending backlog is dropped; a call in
    /// progress completes). Idempotent, also after the informer stopped.
    pub fn remove_event_handler(&self, reg: &HandlerRegistration<K>) -> Result<(), InformerError> {
        if reg.listener.informer_id != self.inner.id {
            return Err(InformerError::ForeignRegistration(self.inner.name.clone()));
        }
        let _c = self.inner.config.lock();
        let _barrier = self.inner.block_deltas.lock();
        self.inner.processor.remove(reg.listener.id);
        Ok(())
    }

    /// Removes a handler and waits until its consumer has ended (client-go's
    /// `ShutDownEventHandler`). Do not call it from inside that handler.
    pub async fn shutdown_event_handler(&self, reg: &HandlerRegistration<K>) -> Result<(), InformerError> {
        self.remove_event_handler(reg)?;
        if self.is_started() {
            reg.listener.finished.wait().await;
        }
        Ok(())
    }

    /// The registrations currently active.
    pub fn registrations(&self) -> Vec<HandlerRegistration<K>> {
        self.inner.processor.listeners().into_iter().map(|listener| HandlerRegistration { listener }).collect()
    }

    fn build_queue(&self, transform: Option<Transform<K>>) -> InformerQueue<K> {
        let name = format!("{} queue", self.inner.name);
        match self.inner.queue_kind {
            QueueKind::RealFifo => {
                InformerQueue::Real(RealFifo::new(RealFifoOptions { name, transform, ..Default::default() }))
            }
            QueueKind::DeltaFifo => InformerQueue::Delta(DeltaFifo::new(DeltaFifoOptions {
                name,
                known_objects: Some(self.inner.indexer.clone()),
                emit_replaced: true,
                transform,
            })),
        }
    }

    fn hooks(&self, watch_error: Option<WatchErrorHandler>) -> ReflectorHooks {
        let processor = self.inner.processor.clone();
        let mut hooks = ReflectorHooks {
            should_resync: Some(Arc::new(move || processor.should_resync())),
            watch_error,
            ..Default::default()
        };
        if let Some(m) = self.inner.metrics.clone() {
            let user = hooks.watch_error.take();
            let errors = m.errors.clone();
            hooks.watch_error = Some(Arc::new(move |e: &Error| {
                errors.inc();
                if let Some(u) = &user {
                    u(e);
                }
            }));
            // "initial" until a list has succeeded (retries and fallbacks of the first list too).
            let listed = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let listed2 = listed.clone();
            hooks.after_list = Some(Arc::new(move |_rv: &str| {
                listed2.store(true, Ordering::Relaxed);
            }));
            let m2 = m.clone();
            hooks.before_list = Some(Arc::new(move |rv: &str| {
                if !listed.load(Ordering::Relaxed) {
                    m2.lists_initial.inc();
                } else if rv.is_empty() {
                    m2.lists_unavailable.inc();
                } else {
                    m2.lists_relist.inc();
                }
            }));
            let watches = m.watches.clone();
            hooks.watch_started = Some(Arc::new(move |_rv: &str| {
                watches.inc();
            }));
        }
        hooks
    }

    /// Runs the informer until `cancel` fires, then stops every handler consumer and returns.
    ///
    /// The reflector runs in this future; the process loop (store updates and dispatch to the
    /// handlers) runs in a task of its own, so the two can overlap on a multi-threaded runtime.
    /// A second call (on any clone) logs a warning and returns at once.
    pub async fn run(&self, cancel: CancellationToken) {
        let inner = &self.inner;
        let (queue, reflector) = {
            let mut c = inner.config.lock();
            if c.started {
                tracing::warn!(informer = %inner.name, "the informer has already been started");
                return;
            }
            c.started = true;
            let queue = Arc::new(self.build_queue(c.transform.clone()));
            let opts = ReflectorOptions {
                name: inner.name.clone(),
                resync_period: c.resync_check_period,
                ..inner.reflector_opts.clone()
            };
            let hooks = self.hooks(c.watch_error.clone());
            let reflector = Reflector::new(Arc::new(inner.lw.clone()), queue.clone(), opts, hooks);
            let _ = inner.status.set(reflector.status());
            inner.processor.start();
            (queue, reflector)
        };
        tracing::info!(informer = %inner.name, "starting informer");
        let queue_synced = queue.synced_signal();
        let synced = async {
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = queue_synced.wait() => {
                    inner.synced.set();
                    inner.processor.upstream_synced();
                    tracing::info!(informer = %inner.name, objects = inner.indexer.len(), "informer synced");
                }
            }
        };
        // The process loop runs apart from the reflector, in its own task, so reading and decoding
        // the watch stream can overlap with applying and dispatching deltas.
        let span = tracing::info_span!("informer", informer = %inner.name);
        let (tx, rx) = tokio::sync::oneshot::channel::<std::thread::Result<()>>();
        let fut = {
            let (inner, queue, cancel) = (inner.clone(), queue.clone(), cancel.clone());
            async move {
                process_loop(&*queue, &inner.indexer, &*inner.processor, inner.batch, &*inner, &cancel).await;
                // Nothing pops the queue any more: a reflector waiting for room in it (a full
                // queue when the run was cancelled) is released, as client-go closes its queue
                // once the run's context is done.
                queue.close();
            }
        }
        .instrument(span.clone());
        let task = tokio::spawn(async move {
            let r = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(fut)).await;
            let _ = tx.send(r);
        });
        let _stop_on_drop = StopOnDrop { queue: queue.clone(), task };
        let mut teardown = Teardown { inner: inner.clone(), done: false };
        let process = async move {
            if let Ok(Err(panic)) = rx.await {
                std::panic::resume_unwind(panic);
            }
        };
        let reflect = async {
            reflector.run(cancel.clone()).await;
            queue.close();
        };
        async {
            tokio::join!(reflect, process, synced);
            inner.config.lock().stopped = true;
            inner.processor.stop().await;
        }
        .instrument(span)
        .await;
        teardown.done = true;
        inner.stopped.set();
        tracing::info!(informer = %inner.name, "informer stopped");
    }
}

/// If `run` ends without completing (its future dropped, or a panic of the process loop
/// re-raised), leaves the informer stopped all the same: no handler can be added, every listener
/// is closed and [`SharedIndexInformer::stopped`] is set, so nothing waits on a cache that no
/// longer changes.
struct Teardown<K: Send + Sync + 'static> {
    inner: Arc<Inner<K>>,
    done: bool,
}

impl<K: Send + Sync + 'static> Drop for Teardown<K> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.inner.config.lock().stopped = true;
        self.inner.processor.close_all();
        self.inner.stopped.set();
        tracing::warn!(informer = %self.inner.name, "informer stopped without completing its run");
    }
}

/// If `run`'s future is dropped before the informer stopped, stops the process loop at once: the
/// queue is closed (no more writes) and the loop's task aborted, so nothing queued is applied or
/// dispatched after that (a batch is applied inside a synchronous callback, so an abort never
/// leaves one half-applied). After a normal stop both are no-ops.
struct StopOnDrop<K: Send + Sync + 'static> {
    queue: Arc<InformerQueue<K>>,
    task: tokio::task::JoinHandle<()>,
}

impl<K: Send + Sync + 'static> Drop for StopOnDrop<K> {
    fn drop(&mut self) {
        self.queue.close();
        self.task.abort();
    }
}

/// The informer's side of the process loop ([`process_loop`]): each batch is applied under the
/// delta barrier with the processor collecting its notifications (queued to every listener at the
/// end of the batch), and the loop waits between batches while a `Block` handler is over its
/// limit.
impl<K: Send + Sync + 'static> BatchHooks for Inner<K> {
    fn apply(&self, apply: impl FnOnce()) {
        let start = self.metrics.as_ref().map(|_| tokio::time::Instant::now());
        {
            let _barrier = self.block_deltas.lock();
            self.processor.begin_batch();
            apply();
            self.processor.end_batch();
        }
        if let (Some(m), Some(start)) = (&self.metrics, start) {
            m.processing.observe(start.elapsed().as_secs_f64());
            m.store_objects.set(self.indexer.len() as i64);
            if let Some(rv) = self.indexer.last_resource_version() {
                m.set_last_rv(&rv);
            }
        }
    }

    fn popped(&self, queued: impl FnOnce() -> usize) {
        if let Some(m) = &self.metrics {
            m.queue_depth.set(queued() as i64);
        }
    }

    fn between_batches(&self) -> impl std::future::Future<Output = ()> + Send {
        self.processor.backpressure()
    }
}
