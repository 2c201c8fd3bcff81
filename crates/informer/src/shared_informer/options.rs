//! Options of informers and handler registrations, and client-go's resync-period rules.
//!
//! Invariants (client-go's `determineResyncPeriod`): a handler period of 0 never resyncs; a
//! non-zero period is at least [`MINIMUM_RESYNC_PERIOD`]; an informer whose check period is 0
//! never resyncs any handler; a handler period below the check period is raised to it.

use std::sync::Arc;
use std::time::Duration;

use super::listener::BacklogPolicy;
use super::metrics::InformerMetrics;
use crate::fifo::Transform;
use crate::listwatch::Error;
use crate::reflector::ReflectorOptions;
use crate::store::Indexers;

/// client-go's `minimumResyncPeriod`.
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// client-go's `determineResyncPeriod`: the effective period of a handler that asked for
/// `desired` on an informer checking every `check`.
pub fn determine_resync_period(desired: Duration, check: Duration) -> Duration {
    if desired.is_zero() {
        return Duration::ZERO;
    }
    if check.is_zero() {
        tracing::warn!(?desired, "the informer does not resync (period 0); the handler's resync period is ignored");
        return Duration::ZERO;
    }
    desired.max(check)
}

/// Which queue sits between the reflector and the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueKind {
    /// [`RealFifo`](crate::RealFifo) in atomic mode (client-go 1.36's default).
    #[default]
    RealFifo,
    /// [`DeltaFifo`](crate::DeltaFifo) with the cache as known objects and `emit_replaced` (client-go's legacy
    /// informer queue).
    DeltaFifo,
}

/// A callback receiving ListAndWatch errors (client-go's `WatchErrorHandler`).
pub type WatchErrorHandler = Arc<dyn Fn(&Error) + Send + Sync>;

/// Options of a [`SharedIndexInformer`](super::SharedIndexInformer).
///
/// ```
/// use informer::{Indexers, InformerOptions, QueueKind, SharedIndexInformer, fake::FakeSource};
/// use k8s_openapi::api::core::v1::Pod;
/// use std::time::Duration;
/// let opts = InformerOptions::<Pod>::default()
///     .name("pods")
///     .resync_period(Duration::from_secs(300))
///     .queue(QueueKind::DeltaFifo)
///     .indexers(Indexers::new().with_namespace_index().with("by-node", |p: &informer::Object<Pod>| {
///         Ok(p.get().ok().and_then(|p| p.spec.as_ref()?.node_name.clone()).into_iter().collect())
///     }))
///     .transform(|o| Ok(o));
/// let informer = SharedIndexInformer::with_options(FakeSource::new(), opts);
/// assert_eq!(informer.name(), "pods");
/// ```
pub struct InformerOptions<K> {
    /// Name for logs, metrics and sync results (default: the lister-watcher's description).
    pub name: Option<String>,
    /// Default resync period of handlers, and the informer's resync check period (0 = never).
    pub resync_period: Duration,
    /// Indexes of the cache (default: the namespace index).
    pub indexers: Indexers<K>,
    /// The queue.
    pub queue: QueueKind,
    /// Reflector settings (streaming lists, page size, watch timeouts, backoff, base selectors).
    /// `name` and `resync_period` are set by the informer.
    pub reflector: ReflectorOptions,
    /// Applied to every object entering the queue (see [`Transform`]); must be idempotent: a
    /// streaming list's objects are transformed as they arrive and again by the queue.
    pub transform: Option<Transform<K>>,
    /// Metrics (none by default).
    pub metrics: Option<InformerMetrics>,
    /// Deltas applied per process step (RealFifo batch mode; default 64).
    pub batch: usize,
}

impl<K: 'static> Default for InformerOptions<K> {
    fn default() -> Self {
        InformerOptions {
            name: None,
            resync_period: Duration::ZERO,
            indexers: Indexers::new().with_namespace_index(),
            queue: QueueKind::RealFifo,
            reflector: ReflectorOptions::default(),
            transform: None,
            metrics: None,
            batch: 64,
        }
    }
}

impl<K: 'static> InformerOptions<K> {
    /// Sets the name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// Sets the default resync period.
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }
    /// Sets the indexers (replacing the default namespace index).
    pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
        self.indexers = indexers;
        self
    }
    /// Selects the queue.
    pub fn queue(mut self, queue: QueueKind) -> Self {
        self.queue = queue;
        self
    }
    /// Sets the reflector options.
    pub fn reflector(mut self, reflector: ReflectorOptions) -> Self {
        self.reflector = reflector;
        self
    }
    /// Sets the transform, which must be idempotent (see the `transform` field).
    pub fn transform(
        mut self,
        f: impl Fn(crate::Object<K>) -> Result<crate::Object<K>, String> + Send + Sync + 'static,
    ) -> Self {
        self.transform = Some(Arc::new(f));
        self
    }
    /// Records metrics.
    pub fn metrics(mut self, metrics: InformerMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }
}

/// Options of one handler registration.
///
/// ```
/// use informer::{BacklogPolicy, HandlerFns, HandlerOptions, SharedIndexInformer, fake::FakeSource};
/// use k8s_openapi::api::core::v1::Pod;
/// use std::time::Duration;
/// let informer = SharedIndexInformer::<Pod>::new(FakeSource::new(), Duration::from_secs(60));
/// let reg = informer
///     .add_event_handler_with_options(
///         HandlerFns::new().on_update(|_old, new| println!("{} changed", new.key())),
///         HandlerOptions::new()
///             .name("slow-exporter")
///             .resync_period(Duration::from_secs(600))
///             .backlog(BacklogPolicy::Bounded(10_000))
///             .dedicated_thread(),
///     )
///     .unwrap();
/// assert_eq!(reg.name(), "slow-exporter");
/// assert_eq!(reg.resync_period(), Duration::from_secs(600));
/// ```
#[derive(Debug, Clone, Default)]
pub struct HandlerOptions {
    /// Name for logs and metrics (default `handler-<id>`).
    pub name: Option<String>,
    /// Resync period (default: the informer's); raised to [`MINIMUM_RESYNC_PERIOD`] and adjusted
    /// against the informer's check period as client-go does.
    pub resync_period: Option<Duration>,
    /// Backlog policy.
    pub backlog: BacklogPolicy,
    /// Call the handler from a dedicated OS thread instead of a tokio task. Use it for handlers
    /// that block (I/O, locks held for long): they then never hold a runtime worker.
    pub dedicated_thread: bool,
    /// What a panic in the handler does (default: the notification is logged and skipped).
    pub on_panic: PanicPolicy,
}

/// What a panic in an event handler does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PanicPolicy {
    /// The panic is logged and counted, the notification skipped; an initial add the handler did
    /// not get through keeps it from reporting synced.
    #[default]
    Skip,
    /// The panic is logged and the process aborts, as client-go's `HandleCrash` crashes a
    /// process by default: a supervisor (a Pod's restart policy) starts it again, and a handler
    /// that panics on an initial add restarts the process instead of leaving it unsynced.
    Abort,
}

impl HandlerOptions {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// Sets the resync period.
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = Some(period);
        self
    }
    /// Sets the backlog policy.
    pub fn backlog(mut self, policy: BacklogPolicy) -> Self {
        self.backlog = policy;
        self
    }
    /// Runs the handler on its own thread.
    pub fn dedicated_thread(mut self) -> Self {
        self.dedicated_thread = true;
        self
    }
    /// Sets what a panic in the handler does.
    pub fn on_panic(mut self, policy: PanicPolicy) -> Self {
        self.on_panic = policy;
        self
    }
}
