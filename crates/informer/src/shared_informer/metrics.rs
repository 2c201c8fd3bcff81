//! Prometheus metrics of shared informers and their handlers.
//!
//! An [`InformerMetrics`] is registered once in a [`Registry`] and passed to informers through
//! [`InformerOptions::metrics`](super::InformerOptions::metrics) (or the factory). Informers
//! without it record nothing and read no clock for metrics. Each informer resolves its label
//! sets once, so the hot path only touches atomics.
//!
//! | metric | type | labels | updated |
//! |---|---|---|---|
//! | `informer_reflector_lists_total` | counter | informer, kind (`initial` until a list succeeded, then `relist`, or `resource_version_unavailable` for lists at "") | before every LIST or streaming list |
//! | `informer_reflector_watches_total` | counter | informer | every established watch |
//! | `informer_reflector_errors_total` | counter | informer | every ListAndWatch error |
//! | `informer_events_total` | counter | informer, kind (`add`, `update`, `sync`, `delete`) | every distributed notification |
//! | `informer_last_resource_version` | gauge | informer | after each processed batch (last 15 digits) |
//! | `informer_queue_depth` | gauge | informer | after each processed batch |
//! | `informer_processing_seconds` | histogram | informer | time to apply one popped batch and distribute it |
//! | `informer_store_objects` | gauge | informer | after each processed batch |
//! | `informer_handler_backlog` | gauge | informer, handler | on every enqueue and delivery |
//! | `informer_handler_delivery_seconds` | histogram | informer, handler | time from enqueue to delivery |
//! | `informer_handler_panics_total` | counter | informer, handler | every caught handler panic |
//! | `informer_handler_overflows_total` | counter | informer, handler | every `Bounded` backlog overflow |

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

/// Labels of informer-level metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct InformerLabels {
    /// The informer's name.
    pub informer: String,
}

/// Labels of metrics with a kind (`reason` of lists, `type` of events).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    /// The informer's name.
    pub informer: String,
    /// Reason of a list or type of an event.
    pub kind: String,
}

/// Labels of per-handler metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HandlerLabels {
    /// The informer's name.
    pub informer: String,
    /// The handler's name.
    pub handler: String,
}

type HistFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-6, 4.0, 14))
}

/// The metric families, registered once and shared (cheap to clone).
///
/// ```
/// use informer::InformerMetrics;
/// use prometheus_client::registry::Registry;
/// let mut registry = Registry::default();
/// let metrics = InformerMetrics::new(&mut registry);
/// let opts = informer::InformerOptions::<k8s_openapi::api::core::v1::Pod>::default()
///     .metrics(metrics.clone());
/// # let _ = opts;
/// ```
#[derive(Clone)]
pub struct InformerMetrics {
    lists: Family<KindLabels, Counter>,
    watches: Family<InformerLabels, Counter>,
    errors: Family<InformerLabels, Counter>,
    events: Family<KindLabels, Counter>,
    last_rv: Family<InformerLabels, Gauge>,
    queue_depth: Family<InformerLabels, Gauge>,
    processing: HistFamily<InformerLabels>,
    store_objects: Family<InformerLabels, Gauge>,
    backlog: Family<HandlerLabels, Gauge>,
    delivery: HistFamily<HandlerLabels>,
    panics: Family<HandlerLabels, Counter>,
    overflows: Family<HandlerLabels, Counter>,
}

impl std::fmt::Debug for InformerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InformerMetrics")
    }
}

impl InformerMetrics {
    /// Registers the families in `registry` (prefix `informer_`).
    pub fn new(registry: &mut Registry) -> Self {
        let m = InformerMetrics {
            lists: Family::default(),
            watches: Family::default(),
            errors: Family::default(),
            events: Family::default(),
            last_rv: Family::default(),
            queue_depth: Family::default(),
            processing: Family::new_with_constructor(latency_histogram),
            store_objects: Family::default(),
            backlog: Family::default(),
            delivery: Family::new_with_constructor(latency_histogram),
            panics: Family::default(),
            overflows: Family::default(),
        };
        let r = registry.sub_registry_with_prefix("informer");
        r.register(
            "reflector_lists",
            "LIST or streaming-list requests",
            m.lists.clone(),
        );
        r.register(
            "reflector_watches",
            "Established watches",
            m.watches.clone(),
        );
        r.register("reflector_errors", "ListAndWatch errors", m.errors.clone());
        r.register(
            "events",
            "Notifications distributed to handlers",
            m.events.clone(),
        );
        r.register(
            "last_resource_version",
            "Last resourceVersion of the store (last 15 digits)",
            m.last_rv.clone(),
        );
        r.register("queue_depth", "Entries in the queue", m.queue_depth.clone());
        r.register_with_unit(
            "processing",
            "Time to apply a popped batch and distribute it",
            Unit::Seconds,
            m.processing.clone(),
        );
        r.register(
            "store_objects",
            "Objects in the cache",
            m.store_objects.clone(),
        );
        r.register(
            "handler_backlog",
            "Pending notifications of a handler",
            m.backlog.clone(),
        );
        r.register_with_unit(
            "handler_delivery",
            "Time from enqueue to delivery of a notification",
            Unit::Seconds,
            m.delivery.clone(),
        );
        r.register("handler_panics", "Caught handler panics", m.panics.clone());
        r.register(
            "handler_overflows",
            "Bounded backlogs dropped and resynced from the cache",
            m.overflows.clone(),
        );
        m
    }

    pub(crate) fn informer(&self, name: &str) -> InformerSeries {
        let l = InformerLabels {
            informer: name.to_string(),
        };
        let kind = |fam: &Family<KindLabels, Counter>, k: &str| {
            fam.get_or_create(&KindLabels {
                informer: name.to_string(),
                kind: k.to_string(),
            })
            .clone()
        };
        InformerSeries {
            lists_initial: kind(&self.lists, "initial"),
            lists_relist: kind(&self.lists, "relist"),
            lists_unavailable: kind(&self.lists, "resource_version_unavailable"),
            watches: self.watches.get_or_create(&l).clone(),
            errors: self.errors.get_or_create(&l).clone(),
            ev_add: kind(&self.events, "add"),
            ev_update: kind(&self.events, "update"),
            ev_sync: kind(&self.events, "sync"),
            ev_delete: kind(&self.events, "delete"),
            last_rv: self.last_rv.get_or_create(&l).clone(),
            queue_depth: self.queue_depth.get_or_create(&l).clone(),
            processing: self.processing.get_or_create(&l).clone(),
            store_objects: self.store_objects.get_or_create(&l).clone(),
            metrics: self.clone(),
            name: name.to_string(),
        }
    }

    /// Number of lists of `informer` with `reason`, if recorded.
    pub fn lists(&self, informer: &str, reason: &str) -> u64 {
        self.lists
            .get_or_create(&KindLabels {
                informer: informer.into(),
                kind: reason.into(),
            })
            .get()
    }

    /// Number of notifications of `informer` of type `kind` (`add`, `update`, `sync`, `delete`).
    pub fn events(&self, informer: &str, kind: &str) -> u64 {
        self.events
            .get_or_create(&KindLabels {
                informer: informer.into(),
                kind: kind.into(),
            })
            .get()
    }

    /// Objects in the cache of `informer` at the last processed batch.
    pub fn store_objects(&self, informer: &str) -> i64 {
        self.store_objects
            .get_or_create(&InformerLabels {
                informer: informer.into(),
            })
            .get()
    }

    /// Caught panics of a handler.
    pub fn handler_panics(&self, informer: &str, handler: &str) -> u64 {
        self.panics
            .get_or_create(&HandlerLabels {
                informer: informer.into(),
                handler: handler.into(),
            })
            .get()
    }
}

/// One informer's resolved series.
#[derive(Clone)]
pub(crate) struct InformerSeries {
    pub lists_initial: Counter,
    pub lists_relist: Counter,
    pub lists_unavailable: Counter,
    pub watches: Counter,
    pub errors: Counter,
    pub ev_add: Counter,
    pub ev_update: Counter,
    pub ev_sync: Counter,
    pub ev_delete: Counter,
    pub last_rv: Gauge,
    pub queue_depth: Gauge,
    pub processing: Histogram,
    pub store_objects: Gauge,
    metrics: InformerMetrics,
    name: String,
}

impl InformerSeries {
    pub fn handler(&self, handler: &str) -> HandlerSeries {
        let l = HandlerLabels {
            informer: self.name.clone(),
            handler: handler.to_string(),
        };
        HandlerSeries {
            backlog: self.metrics.backlog.get_or_create(&l).clone(),
            delivery: self.metrics.delivery.get_or_create(&l).clone(),
            panics: self.metrics.panics.get_or_create(&l).clone(),
            overflows: self.metrics.overflows.get_or_create(&l).clone(),
        }
    }

    pub fn event(&self, kind: &str) {
        match kind {
            "add" => self.ev_add.inc(),
            "update" => self.ev_update.inc(),
            "sync" => self.ev_sync.inc(),
            _ => self.ev_delete.inc(),
        };
    }

    pub fn set_last_rv(&self, rv: &str) {
        let b = rv.as_bytes();
        let tail = &b[b.len().saturating_sub(15)..];
        if let Some(v) = std::str::from_utf8(tail)
            .ok()
            .and_then(|t| t.parse::<i64>().ok())
        {
            self.last_rv.set(v);
        }
    }
}

/// One handler's resolved series.
#[derive(Clone)]
pub(crate) struct HandlerSeries {
    pub backlog: Gauge,
    pub delivery: Histogram,
    pub panics: Counter,
    pub overflows: Counter,
}
