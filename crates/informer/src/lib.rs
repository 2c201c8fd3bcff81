//! Kubernetes list-watch and informer machinery for Rust, faithful to client-go's semantics.
//!
//! The pipeline: a [`Reflector`] lists and watches the API server and feeds a queue
//! ([`RealFifo`] by default, or [`DeltaFifo`]); the informer pops deltas, applies them to an
//! [`Indexer`] (the local cache) and distributes notifications to handlers. Most programs use a
//! [`SharedInformerFactory`] or a [`SharedIndexInformer`], register handlers (or subscribe to a
//! [`NotificationStream`]) and read the cache through a [`Lister`]. Controllers put keys in a
//! [`workqueue`] and reconcile them with a [`ControllerRunner`], which can run as several replicas
//! of which one works at a time ([`leader_election`]), and report what they do as Kubernetes
//! Events ([`events`], or core/v1 Events as most Go controllers write them: [`record`]). Code
//! around them waits for objects to reach a state with [`watch_tools`] and retries writes that
//! lost a race with [`retry`].
//! [`prelude`] imports what most programs use. See `docs/design.md`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod backoff;
pub mod controller;
pub mod decode;
pub mod delta;
pub mod events;
pub mod factory;
pub mod fake;
pub mod fifo;
pub mod filtering;
pub mod handler;
pub mod informer_thread;
pub mod key;
pub mod kube_lw;
pub mod leader_election;
pub mod lister;
pub mod listwatch;
pub mod object;
pub mod prelude;
pub mod record;
pub mod reflector;
pub mod retry;
pub mod runner;
pub mod selector;
pub mod shared_informer;
pub mod signal;
pub mod store;
pub mod sync_tracker;
pub mod wait;
pub mod watch_tools;
pub mod workqueue;

pub use controller::{Controller, process_deltas};
pub use delta::{Delta, DeltaType};
pub use factory::{FactoryBuilder, SharedInformerFactory};
pub use fifo::{DeltaFifo, FifoClosed, RealFifo};
pub use filtering::FilteringHandler;
pub use handler::{HandlerFns, ResourceEventHandler};
pub use informer_thread::InformerThread;
pub use key::{KeyError, ObjectKey};
pub use kube_lw::KubeListerWatcher;
pub use leader_election::{LeaderElectionConfig, LeaderElector, LeaderEvent, LeaseLock};
pub use lister::{Lister, NamespaceLister};
pub use listwatch::{
    Error, ListOptions, ListWatch, ListerWatcher, ObjectList, ResourceVersionMatch, Status, TransportFailure,
    WatchEvent, WatchStream,
};
pub use object::{DecodeError, DeletedObject, Object, Tombstone};
pub use reflector::{Reflector, ReflectorHooks, ReflectorOptions, ReflectorStatus};
pub use runner::{Action, ControllerRunner, ControllerRunnerBuilder, RunnerError, RunnerMetrics, RunnerStats};
pub use selector::{LabelSelector, SelectorError};
pub use shared_informer::{
    Backlog, BacklogPolicy, DynListerWatcher, HandlerOptions, HandlerRegistration, InformerError, InformerMetrics,
    InformerOptions, Notification, NotificationStream, PanicPolicy, QueueKind, SharedIndexInformer, WatchErrorHandler,
};
pub use signal::Signal;
pub use store::{
    ExpirationCache, IndexError, IndexFunc, IndexFuncError, Indexer, Indexers, MutationCache, NAMESPACE_INDEX, Txn,
};
pub use sync_tracker::AsyncTracker;
pub use wait::{NotSynced, SyncResult, wait_for_cache_sync};

/// The cancellation token every `run` takes (tokio-util's), re-exported so that a program needs
/// no direct dependency on tokio-util.
pub use tokio_util::sync::CancellationToken;

/// The README's examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;
