//! [`SharedInformerFactory`]: hands out one shared informer per resource, so every part of a
//! program watching the same resource shares one list-watch and one cache (client-go's
//! `SharedInformerFactory`, `dynamicinformer` and `metadatainformer` in one).
//!
//! Invariants:
//! - One informer per key per factory: typed informers are keyed by Rust type (`TypeId`),
//!   dynamic ones by group/version/resource, metadata-only ones by group/version/resource in a
//!   separate key space. Namespace and list-option tweaks are factory-wide.
//! - `start` runs every informer not yet started (call it again after requesting new ones);
//!   after `shutdown` it does nothing.
//! - `shutdown` cancels every informer the factory started and waits until each `run` has
//!   returned (so every handler consumer has ended). Difference from client-go, whose
//!   `Shutdown` only waits and hangs when the caller forgot to cancel.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use kube::core::{ApiResource, DynamicObject, PartialObjectMeta};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::kube_lw::KubeListerWatcher;
use crate::listwatch::{ListOptions, ListerWatcher};
use crate::shared_informer::{
    InformerError, InformerMetrics, InformerOptions, NotificationStream, SharedIndexInformer,
};
use crate::signal::Signal;
use crate::wait::{SyncResult, wait_for_cache_sync};

trait AnyInformer: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn run_boxed(&self, cancel: CancellationToken) -> BoxFuture<'static, ()>;
    fn synced(&self) -> Signal;
    fn stopped(&self) -> Signal;
}

impl<K: Send + Sync + 'static> AnyInformer for SharedIndexInformer<K> {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn run_boxed(&self, cancel: CancellationToken) -> BoxFuture<'static, ()> {
        let me = self.clone();
        Box::pin(async move { me.run(cancel).await })
    }
    fn synced(&self) -> Signal {
        SharedIndexInformer::synced(self)
    }
    fn stopped(&self) -> Signal {
        SharedIndexInformer::stopped(self)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Typed(TypeId),
    Dynamic(String),
    Metadata(String),
}

fn gvr(ar: &ApiResource) -> String {
    format!("{}/{}/{}", ar.group, ar.version, ar.plural)
}

struct Entry {
    informer: Box<dyn AnyInformer>,
    running: Option<(CancellationToken, tokio::task::JoinHandle<()>)>,
}

type Tweak = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;

/// Builder of a [`SharedInformerFactory`].
pub struct FactoryBuilder {
    client: kube::Client,
    namespace: Option<String>,
    resync: Duration,
    tweak: Option<Tweak>,
    custom_resync: HashMap<Key, Duration>,
    transforms: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    metrics: Option<InformerMetrics>,
}

impl FactoryBuilder {
    /// Watches only this namespace (default: all).
    pub fn namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = Some(ns.into());
        self
    }
    /// Default resync period of every informer.
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync = period;
        self
    }
    /// Adjusts the list and watch options of every informer (label / field selectors).
    pub fn tweak_list_options(mut self, f: impl Fn(&mut ListOptions) + Send + Sync + 'static) -> Self {
        self.tweak = Some(Arc::new(f));
        self
    }
    /// A resync period for the informer of type `K`.
    pub fn resync_period_for<K: 'static>(mut self, period: Duration) -> Self {
        self.custom_resync.insert(Key::Typed(TypeId::of::<K>()), period);
        self
    }
    /// A transform for the informer of type `K` (for dynamic informers: `DynamicObject`, for
    /// metadata informers: `PartialObjectMeta<DynamicObject>`); it must be idempotent (see
    /// `InformerOptions::transform`).
    pub fn transform_for<K: 'static>(
        mut self,
        f: impl Fn(crate::Object<K>) -> Result<crate::Object<K>, String> + Send + Sync + 'static,
    ) -> Self {
        let t: crate::fifo::Transform<K> = Arc::new(f);
        self.transforms.insert(TypeId::of::<K>(), Box::new(t));
        self
    }
    /// Records metrics of every informer.
    pub fn metrics(mut self, metrics: InformerMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }
    /// Builds the factory.
    pub fn build(self) -> SharedInformerFactory {
        SharedInformerFactory {
            inner: Arc::new(FactoryInner {
                client: self.client,
                namespace: self.namespace,
                resync: self.resync,
                tweak: self.tweak,
                custom_resync: self.custom_resync,
                transforms: self.transforms,
                metrics: self.metrics,
                state: Mutex::new(State { informers: HashMap::new(), shutting_down: false }),
            }),
        }
    }
}

struct State {
    informers: HashMap<Key, Entry>,
    shutting_down: bool,
}

/// The informer of `key`, if the factory has one.
fn existing<K: Send + Sync + 'static>(st: &State, key: &Key) -> Option<SharedIndexInformer<K>> {
    let e = st.informers.get(key)?;
    let informer = e.informer.as_any().downcast_ref::<SharedIndexInformer<K>>();
    Some(informer.expect("factory key maps to one object type").clone())
}

struct FactoryInner {
    client: kube::Client,
    namespace: Option<String>,
    resync: Duration,
    tweak: Option<Tweak>,
    custom_resync: HashMap<Key, Duration>,
    transforms: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    metrics: Option<InformerMetrics>,
    state: Mutex<State>,
}

impl FactoryInner {
    /// The factory's transform for informers of `K`, if any.
    fn transform_of<K: 'static>(&self) -> Option<crate::fifo::Transform<K>> {
        self.transforms.get(&TypeId::of::<K>())?.downcast_ref::<crate::fifo::Transform<K>>().cloned()
    }
}

/// A factory of shared informers over one `kube::Client`. Cheap to clone.
///
/// ```no_run
/// # async fn f(client: kube::Client) {
/// use informer::SharedInformerFactory;
/// use k8s_openapi::api::core::v1::Pod;
/// use std::time::Duration;
/// let factory = SharedInformerFactory::builder(client).namespace("default").build();
/// let pods = factory.informer::<Pod>();
/// assert!(std::ptr::eq(pods.indexer().as_ref(), factory.informer::<Pod>().indexer().as_ref()));
/// let cancel = tokio_util::sync::CancellationToken::new();
/// factory.start(&cancel);
/// factory.wait_for_cache_sync(Some(Duration::from_secs(30))).await.into_result().unwrap();
/// factory.shutdown().await;
/// # }
/// ```
#[derive(Clone)]
pub struct SharedInformerFactory {
    inner: Arc<FactoryInner>,
}

impl SharedInformerFactory {
    /// A factory with default options (all namespaces, no resync).
    pub fn new(client: kube::Client) -> Self {
        Self::builder(client).build()
    }

    /// A builder.
    pub fn builder(client: kube::Client) -> FactoryBuilder {
        FactoryBuilder {
            client,
            namespace: None,
            resync: Duration::ZERO,
            tweak: None,
            custom_resync: HashMap::new(),
            transforms: HashMap::new(),
            metrics: None,
        }
    }

    fn get_or_create<K, L>(
        &self,
        key: Key,
        name: String,
        make_lw: impl FnOnce(&kube::Client, Option<&str>) -> L,
    ) -> SharedIndexInformer<K>
    where
        K: Send + Sync + 'static,
        L: ListerWatcher<K>,
    {
        let inner = &self.inner;
        let mut st = inner.state.lock();
        if let Some(existing) = existing(&st, &key) {
            return existing;
        }
        let lw = make_lw(&inner.client, inner.namespace.as_deref());
        let mut opts = InformerOptions::<K>::default()
            .name(name)
            .resync_period(*inner.custom_resync.get(&key).unwrap_or(&inner.resync));
        if let Some(t) = &inner.tweak {
            t(&mut opts.reflector.base);
        }
        opts.transform = inner.transform_of::<K>();
        if let Some(m) = &inner.metrics {
            opts.metrics = Some(m.clone());
        }
        let informer = SharedIndexInformer::with_options(lw, opts);
        st.informers.insert(key, Entry { informer: Box::new(informer.clone()), running: None });
        informer
    }

    /// client-go's `InformerFor`: the factory's informer of `K`, built by `make` (given the
    /// factory's client and `K`'s resync period) when the factory has none yet (`make` is not
    /// called if [`Self::informer`] already made one). [`Self::informer`] returns it for `K`, and
    /// the factory gives it its transform for `K` ([`FactoryBuilder::transform_for`]) and starts
    /// it at the next [`Self::start`] (none after [`Self::shutdown`]), as the others: a controller
    /// can give one resource an informer of its own making (another source, a field selector,
    /// indexers set up front) that the rest of the program still shares. `make` runs under the
    /// factory's lock and must not call the factory; it returns an informer not yet started. It
    /// is given neither the factory's namespace nor its list-option tweak, and the informer gets
    /// no [`FactoryBuilder::metrics`]; a factory transform for `K` replaces one `make` set (as
    /// client-go's `InformerFor` sets the factory's).
    ///
    /// ```no_run
    /// # async fn f(client: kube::Client) {
    /// use informer::prelude::*;
    /// use informer::{InformerOptions, KubeListerWatcher};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let factory = SharedInformerFactory::new(client);
    /// let pods = factory.informer_for::<Pod>(|client, resync| {
    ///     let mut opts = InformerOptions::default().name("pods-on-node-1").resync_period(resync);
    ///     opts.reflector.base.field_selector = Some("spec.nodeName=node-1".into());
    ///     SharedIndexInformer::with_options(KubeListerWatcher::<Pod>::new(client.clone(), None), opts)
    /// });
    /// assert_eq!(factory.informer::<Pod>().name(), pods.name());
    /// # }
    /// ```
    pub fn informer_for<K>(
        &self,
        make: impl FnOnce(&kube::Client, Duration) -> SharedIndexInformer<K>,
    ) -> SharedIndexInformer<K>
    where
        K: Send + Sync + 'static,
    {
        let inner = &self.inner;
        let key = Key::Typed(TypeId::of::<K>());
        let mut st = inner.state.lock();
        if let Some(existing) = existing(&st, &key) {
            return existing;
        }
        let resync = *inner.custom_resync.get(&key).unwrap_or(&inner.resync);
        let informer = make(&inner.client, resync);
        if let Some(t) = inner.transform_of::<K>()
            && let Err(e) = informer.set_transform(move |o| t(o))
        {
            tracing::warn!(error = %e, "the factory's transform was not given to an informer already started");
        }
        st.informers.insert(key, Entry { informer: Box::new(informer.clone()), running: None });
        informer
    }

    /// The shared informer of a statically typed resource.
    pub fn informer<K>(&self) -> SharedIndexInformer<K>
    where
        K: kube::Resource + Send + Sync + 'static,
        K::DynamicType: Default,
    {
        let dt = K::DynamicType::default();
        let name = format!("{}.{}", K::plural(&dt), K::api_version(&dt));
        self.get_or_create(Key::Typed(TypeId::of::<K>()), name, |c, ns| KubeListerWatcher::<K>::new(c.clone(), ns))
    }

    /// The notifications of the shared informer of `K` as a typed `Stream`, the counterpart of
    /// kube-runtime's `watcher` (see [`NotificationStream`]): `factory.subscribe::<Pod>()` is
    /// `factory.informer::<Pod>().subscribe()`. It yields once the factory is started.
    ///
    /// ```no_run
    /// # async fn f(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use futures_util::StreamExt;
    /// use informer::prelude::*;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let factory = SharedInformerFactory::new(client);
    /// let mut pods = factory.subscribe::<Pod>()?;
    /// factory.start(&CancellationToken::new());
    /// while let Some(n) = pods.next().await {
    ///     match n {
    ///         Notification::Add { obj, .. } => println!("added {}", obj.key()),
    ///         Notification::Update { old, new } => println!("{}: {:?} -> {:?}", new.key(), old.resource_version(), new.resource_version()),
    ///         Notification::Delete(d) => println!("deleted {}", d.key()),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn subscribe<K>(&self) -> Result<NotificationStream<K>, InformerError>
    where
        K: kube::Resource + Send + Sync + 'static,
        K::DynamicType: Default,
    {
        self.informer::<K>().subscribe()
    }

    /// The shared informer of a resource described at run time.
    pub fn dynamic(&self, resource: &ApiResource) -> SharedIndexInformer<DynamicObject> {
        let key = gvr(resource);
        self.get_or_create(Key::Dynamic(key.clone()), key, |c, ns| {
            KubeListerWatcher::<DynamicObject>::new_with(c.clone(), ns, resource)
        })
    }

    /// The shared metadata-only informer of a resource (objects carry only type and metadata).
    pub fn metadata(&self, resource: &ApiResource) -> SharedIndexInformer<PartialObjectMeta<DynamicObject>> {
        let key = gvr(resource);
        self.get_or_create(Key::Metadata(key.clone()), format!("{key} (metadata)"), |c, ns| {
            KubeListerWatcher::<PartialObjectMeta<DynamicObject>>::new_with(c.clone(), ns, resource).metadata_only()
        })
    }

    /// Runs every informer not yet started, each until `cancel` fires or `shutdown`. Idempotent.
    pub fn start(&self, cancel: &CancellationToken) {
        let mut st = self.inner.state.lock();
        if st.shutting_down {
            return;
        }
        for e in st.informers.values_mut() {
            if e.running.is_none() {
                let token = cancel.child_token();
                let fut = e.informer.run_boxed(token.clone());
                e.running = Some((token, tokio::spawn(fut)));
            }
        }
    }

    /// Waits until every started informer has synced (or stopped), or `timeout`; names those
    /// that did not sync.
    pub async fn wait_for_cache_sync(&self, timeout: Option<Duration>) -> SyncResult {
        let pairs: Vec<(Signal, Signal)> = {
            let st = self.inner.state.lock();
            st.informers
                .values()
                .filter(|e| e.running.is_some())
                .map(|e| (e.informer.synced(), e.informer.stopped()))
                .collect()
        };
        let all = futures_util::future::join_all(pairs.iter().map(|(synced, stopped)| async {
            tokio::select! {
                _ = synced.wait() => {}
                _ = stopped.wait() => {}
            }
        }));
        match timeout {
            Some(t) => {
                let _ = tokio::time::timeout(t, all).await;
            }
            None => {
                all.await;
            }
        }
        let synced: Vec<Signal> = pairs.into_iter().map(|(s, _)| s).collect();
        // Everything has ended: this only classifies (and logs).
        wait_for_cache_sync(&synced, Some(Duration::ZERO)).await
    }

    /// Stops every informer the factory started and waits until they have all returned.
    /// Concurrent and repeated calls are fine.
    pub async fn shutdown(&self) {
        // Every caller waits for every informer to stop (client-go's Shutdown waits on its
        // group in each caller); an informer whose run panicked is stopped all the same.
        let stopped: Vec<Signal> = {
            let mut st = self.inner.state.lock();
            st.shutting_down = true;
            st.informers
                .values()
                .filter_map(|e| e.running.as_ref().map(|(token, _)| (token, e.informer.stopped())))
                .map(|(token, stopped)| {
                    token.cancel();
                    stopped
                })
                .collect()
        };
        futures_util::future::join_all(stopped.iter().map(Signal::wait)).await;
    }
}
