//! An in-memory [`ResourceLock`] for leader election tests on paused time: one stored record with
//! a version (as an API server keeps a Lease and its resourceVersion), a lock per candidate that
//! checks its writes against the version it last saw, a log of every write with its instant, and
//! per-candidate faults (errors, hangs, latency, writes whose answer is lost).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use informer::leader_election::{LeaderElectionRecord, LockError, ResourceLock};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;

/// One successful write.
#[derive(Debug, Clone)]
pub struct Write {
    pub at: Instant,
    pub by: String,
    pub record: LeaderElectionRecord,
}

#[derive(Default)]
struct Stored {
    record: Option<(LeaderElectionRecord, u64)>,
    rv: u64,
    writes: Vec<Write>,
    conflicts: u64,
}

/// The stored record, shared by every candidate's lock.
#[derive(Default)]
pub struct MemoryStore(Mutex<Stored>);

impl MemoryStore {
    pub fn new() -> Arc<Self> {
        Arc::new(MemoryStore::default())
    }

    /// A lock for candidate `who`, and its fault switches.
    pub fn lock(self: &Arc<Self>, who: &str) -> (MemoryLock, Faults) {
        let faults = Faults::default();
        (
            MemoryLock { store: self.clone(), who: who.to_string(), seen: Mutex::new(None), faults: faults.clone() },
            faults,
        )
    }

    pub fn record(&self) -> Option<LeaderElectionRecord> {
        self.0.lock().record.as_ref().map(|(r, _)| r.clone())
    }

    /// A write by someone outside the election (another client, or a test standing in for one).
    pub fn put(&self, record: LeaderElectionRecord) {
        let mut s = self.0.lock();
        s.rv += 1;
        let rv = s.rv;
        s.record = Some((record.clone(), rv));
        s.writes.push(Write { at: Instant::now(), by: "outside".into(), record });
    }

    /// Deletes the record (someone deleted the Lease).
    pub fn remove(&self) {
        self.0.lock().record = None;
    }

    /// A new version with the same record (someone changed the object's metadata).
    pub fn touch(&self) {
        let mut s = self.0.lock();
        s.rv += 1;
        let rv = s.rv;
        if let Some((_, v)) = &mut s.record {
            *v = rv;
        }
    }

    pub fn writes(&self) -> Vec<Write> {
        self.0.lock().writes.clone()
    }

    /// Writes refused because the writer's version was stale.
    pub fn conflicts(&self) -> u64 {
        self.0.lock().conflicts
    }
}

/// Fault switches of one candidate's lock.
#[derive(Clone)]
pub struct Faults(Arc<FaultState>);

struct FaultState {
    fail: AtomicBool,
    lose_answers: AtomicBool,
    hang: watch::Sender<bool>,
    latency_us: AtomicU64,
}

impl Default for Faults {
    fn default() -> Self {
        Faults(Arc::new(FaultState {
            fail: AtomicBool::new(false),
            lose_answers: AtomicBool::new(false),
            hang: watch::channel(false).0,
            latency_us: AtomicU64::new(0),
        }))
    }
}

impl Faults {
    /// Every call fails before reaching the store (a server answering 500).
    pub fn fail(&self, yes: bool) {
        self.0.fail.store(yes, Ordering::SeqCst);
    }
    /// Writes reach the store but their answer is lost (the call fails).
    pub fn lose_answers(&self, yes: bool) {
        self.0.lose_answers.store(yes, Ordering::SeqCst);
    }
    /// Calls wait, without reaching the store, until the hang is lifted.
    pub fn hang(&self, yes: bool) {
        self.0.hang.send_replace(yes);
    }
    /// Every call takes this long.
    pub fn latency(&self, d: Duration) {
        self.0.latency_us.store(d.as_micros() as u64, Ordering::SeqCst);
    }

    async fn before(&self, what: &str) -> Result<(), LockError> {
        let latency = Duration::from_micros(self.0.latency_us.load(Ordering::SeqCst));
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let mut hang = self.0.hang.subscribe();
        let _ = hang.wait_for(|h| !*h).await;
        if self.0.fail.load(Ordering::SeqCst) {
            return Err(LockError::Other(what.into(), "injected server error".into()));
        }
        Ok(())
    }

    fn after(&self, what: &str) -> Result<(), LockError> {
        if self.0.lose_answers.load(Ordering::SeqCst) {
            return Err(LockError::Other(what.into(), "injected lost answer".into()));
        }
        Ok(())
    }
}

/// One candidate's lock on a [`MemoryStore`].
pub struct MemoryLock {
    store: Arc<MemoryStore>,
    who: String,
    /// The version last read or written through this lock.
    seen: Mutex<Option<u64>>,
    faults: Faults,
}

impl MemoryLock {
    /// Runs `f` on the store between the faults; `f` returns its result and the version this
    /// lock saw, remembered only if the answer arrives.
    fn call<'a, T: Send + 'a>(
        &'a self,
        f: impl FnOnce(&mut Stored) -> Result<(T, u64), LockError> + Send + 'a,
    ) -> BoxFuture<'a, Result<T, LockError>> {
        let what = self.describe();
        Box::pin(async move {
            self.faults.before(&what).await?;
            let r = f(&mut self.store.0.lock());
            let (r, seen) = r?;
            self.faults.after(&what)?;
            *self.seen.lock() = Some(seen);
            Ok(r)
        })
    }
}

fn boxed<'a, T>(f: impl Future<Output = T> + Send + 'a) -> BoxFuture<'a, T> {
    Box::pin(f)
}

impl ResourceLock for MemoryLock {
    fn get(&self) -> BoxFuture<'_, Result<LeaderElectionRecord, LockError>> {
        self.call(move |s| match &s.record {
            None => Err(LockError::NotFound("memory".into())),
            Some((r, rv)) => Ok((r.clone(), *rv)),
        })
    }

    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>> {
        self.call(move |s| {
            if s.record.is_some() {
                s.conflicts += 1;
                return Err(LockError::Conflict("memory".into(), "already exists".into()));
            }
            s.rv += 1;
            s.record = Some((record.clone(), s.rv));
            s.writes.push(Write { at: Instant::now(), by: self.who.clone(), record });
            Ok(((), s.rv))
        })
    }

    fn update(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>> {
        let seen = *self.seen.lock();
        let Some(seen) = seen else {
            return boxed(async { Err(LockError::Other("memory".into(), "lease not initialized".into())) });
        };
        self.call(move |s| {
            if s.record.as_ref().map(|(_, rv)| *rv) != Some(seen) {
                s.conflicts += 1;
                return Err(LockError::Conflict("memory".into(), "the object has been modified".into()));
            }
            s.rv += 1;
            s.record = Some((record.clone(), s.rv));
            s.writes.push(Write { at: Instant::now(), by: self.who.clone(), record });
            Ok(((), s.rv))
        })
    }

    fn describe(&self) -> String {
        format!("memory/{}", self.who)
    }
}
