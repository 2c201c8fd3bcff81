//! What the tests share: a recording handler that checks the notification sequence it receives
//! is consistent (no duplicate add, no update or delete of an unknown key), and condition waits
//! that fail the test on timeout instead of sleeping; a kube client for the embedded API server;
//! and for leader election, client-go's default timing, a wait for an elector's event, an
//! in-memory lock ([`memory_lock`]) and a record of which replica reconciles which key
//! ([`reconciles`]); a recording work-queue metrics provider ([`metrics_provider`]).

#![allow(dead_code)]

pub mod memory_lock;
pub mod metrics_provider;
pub mod reconciles;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use informer::leader_election::{LeaderEvent, LeaderEvents};
use informer::{DeletedObject, Object, ResourceEventHandler, SharedIndexInformer};
use informer_apiserver::ApiServer;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// One received notification, described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ev {
    Add { key: String, rv: String, initial: bool },
    Update { key: String, old: String, new: String },
    Delete { key: String, tombstone: bool },
}

/// Records notifications and the view they imply.
#[derive(Default)]
pub struct Recorder {
    pub events: Mutex<Vec<Ev>>,
    pub view: Mutex<BTreeMap<String, String>>,
    pub errors: Mutex<Vec<String>>,
    pub notify: Notify,
    /// When false, a delete of an unknown key is not an error.
    pub strict_deletes: bool,
}

fn rv<K>(o: &Object<K>) -> String {
    o.resource_version().unwrap_or_default().to_string()
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Recorder { strict_deletes: true, ..Default::default() })
    }

    pub fn add<K>(&self, o: &Object<K>, initial: bool) {
        let key = o.key().to_string();
        if self.view.lock().insert(key.clone(), rv(o)).is_some() {
            self.errors.lock().push(format!("duplicate add of {key}"));
        }
        self.events.lock().push(Ev::Add { key, rv: rv(o), initial });
        self.notify.notify_waiters();
    }

    pub fn update<K>(&self, old: &Object<K>, new: &Object<K>) {
        let key = new.key().to_string();
        if self.view.lock().insert(key.clone(), rv(new)).is_none() {
            self.errors.lock().push(format!("update of unknown {key}"));
        }
        self.events.lock().push(Ev::Update { key, old: rv(old), new: rv(new) });
        self.notify.notify_waiters();
    }

    pub fn delete<K>(&self, d: &DeletedObject<K>) {
        let key = d.key().to_string();
        if self.view.lock().remove(&key).is_none() && self.strict_deletes {
            self.errors.lock().push(format!("delete of unknown {key}"));
        }
        self.events.lock().push(Ev::Delete { key, tombstone: d.is_final_state_unknown() });
        self.notify.notify_waiters();
    }

    pub fn count(&self, f: impl Fn(&Ev) -> bool) -> usize {
        self.events.lock().iter().filter(|e| f(e)).count()
    }

    pub fn len(&self) -> usize {
        self.events.lock().len()
    }

    pub fn view(&self) -> BTreeMap<String, String> {
        self.view.lock().clone()
    }

    pub fn assert_no_errors(&self) {
        let e = self.errors.lock();
        assert!(e.is_empty(), "inconsistent notifications: {e:?}");
    }

    /// Waits until `cond` holds; fails the test after `limit` without a notification.
    pub async fn wait_for(&self, what: &str, limit: Duration, cond: impl Fn(&Self) -> bool) {
        loop {
            let n = self.notify.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if cond(self) {
                return;
            }
            if tokio::time::timeout(limit, n).await.is_err() && !cond(self) {
                panic!("timed out waiting for {what}; {} events, view {:?}", self.len(), self.view());
            }
        }
    }
}

/// A handler recording into a shared [`Recorder`].
pub struct Rec(pub Arc<Recorder>);

impl<K: 'static> ResourceEventHandler<K> for Rec {
    fn on_add(&self, obj: &Object<K>, is_in_initial_list: bool) {
        self.0.add(obj, is_in_initial_list)
    }
    fn on_update(&self, old: &Object<K>, new: &Object<K>) {
        self.0.update(old, new)
    }
    fn on_delete(&self, obj: &DeletedObject<K>) {
        self.0.delete(obj)
    }
}

/// Runs an informer in a task; returns its token and join handle.
pub fn spawn<K: Send + Sync + 'static>(
    inf: &SharedIndexInformer<K>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let h = tokio::spawn({
        let (i, c) = (inf.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    (cancel, h)
}

/// key → resourceVersion of an informer's cache.
pub fn cache_view<K>(inf: &SharedIndexInformer<K>) -> BTreeMap<String, String>
where
    K: Send + Sync + 'static,
{
    inf.indexer().list().iter().map(|o| (o.key().to_string(), rv(o))).collect()
}

/// Waits for a signal, failing the test after `limit`.
pub async fn wait_signal(s: &informer::Signal, limit: Duration) {
    tokio::time::timeout(limit, s.wait()).await.unwrap_or_else(|_| panic!("timed out waiting for {}", s.name()));
}

/// A gate a (thread-run) handler waits at while it is closed.
#[derive(Default)]
pub struct Gate {
    closed: std::sync::Mutex<bool>,
    cv: std::sync::Condvar,
}

impl Gate {
    pub fn new() -> Arc<Self> {
        Arc::new(Gate::default())
    }
    pub fn close(&self) {
        *self.closed.lock().unwrap() = true;
    }
    pub fn open(&self) {
        *self.closed.lock().unwrap() = false;
        self.cv.notify_all();
    }
    /// Blocks the calling thread while the gate is closed.
    pub fn pass(&self) {
        let mut c = self.closed.lock().unwrap();
        while *c {
            c = self.cv.wait(c).unwrap();
        }
    }
}

/// A kube client for the embedded API server `s`.
pub async fn client(s: &ApiServer) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(&s.kubeconfig_yaml()).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
    kube::Client::try_from(cfg).unwrap()
}

/// client-go's default lease duration.
pub const LEASE: Duration = Duration::from_secs(15);
/// client-go's default renew deadline.
pub const RENEW: Duration = Duration::from_secs(10);
/// client-go's default retry period.
pub const RETRY: Duration = Duration::from_secs(2);
/// The longest a candidate waits between two attempts with the default retry period (plus 120%
/// jitter).
pub const MAX_RETRY_WAIT: Duration = Duration::from_millis(4400);

/// Receives events until one satisfies `f` and returns it; fails the test if `limit` passes
/// without an event or the elector is gone.
pub async fn until_event(events: &mut LeaderEvents, limit: Duration, f: impl Fn(&LeaderEvent) -> bool) -> LeaderEvent {
    loop {
        let e = tokio::time::timeout(limit, events.recv())
            .await
            .unwrap_or_else(|_| panic!("no leader election event within {limit:?}"))
            .expect("the elector is gone");
        if f(&e) {
            return e;
        }
    }
}

/// Runs one term of the elector `config` makes: campaigns, waits until it leads, then cancels
/// it and waits until `run` has returned (the term ended, the lease released if so configured).
pub async fn lead_one_term(config: informer::leader_election::LeaderElectionConfig) {
    let elector = informer::leader_election::LeaderElector::new(config).unwrap();
    let mut transitions = elector.subscribe();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (elector, cancel) = (elector.clone(), cancel.clone());
        async move { elector.run(cancel).await }
    });
    until_event(&mut transitions, Duration::from_secs(30), |e| matches!(e, LeaderEvent::StartedLeading(_))).await;
    cancel.cancel();
    run.await.unwrap().unwrap();
}
