//! kube-apiserver's identity lease (`APIServerIdentity`, on by default in v1.35): each server
//! keeps a Lease in `kube-system` that says it is alive, and collects the leases of servers
//! gone for an hour.
//!
//! Invariants, as kube's `start-kube-apiserver-identity-lease-controller` and
//! `…-garbage-collector` hold them:
//! - the lease is named after the host (`apiserver-` and the lower-case base32 of the first 16
//!   bytes of the SHA-256 of the host name and `kube-apiserver`, each after its 2-byte length),
//!   so that servers on one host share it; it is labelled
//!   `apiserver.kubernetes.io/identity=kube-apiserver` and `kubernetes.io/hostname=<host>`;
//! - a server starting deletes the lease of its host (a previous run's, or another server's on
//!   the host) and makes it again, held by `<name>_<uuid of this run>` for 3600 s (one try,
//!   bounded: a start never waits on a failing storage); then its `renewTime` is written
//!   [`RENEW`] (jittered up to 4%) after each renewal ends, as kube's sliding `JitterUntil`, at
//!   once when the start did not write it, its duration and labels put back (a lease found
//!   taken over keeps its holder; one deleted is made again);
//!   a server shutting down gracefully deletes it, one that stops otherwise leaves it to expire;
//! - at start and every [`GC_PERIOD`], leases of `kube-system` with the identity label whose
//!   `renewTime` plus duration is past (or which lack either) are deleted, on the condition that
//!   they did not change since read;
//! - writes are the server's own (`kube-apiserver`); a renewal updates the lease it last wrote
//!   (five tries, a conflict reading it again), and failing that reads or makes it, trying again
//!   with a pause doubling from 200 ms to 7 s until the storage answers, as kube's lease
//!   controller; a failed deletion of an expired lease leaves it to the next collection.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::delete_options::DeleteOpts;
use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::store::{Store, WriteOpts};

/// Where the leases are.
pub(crate) const NAMESPACE: &str = "kube-system";
/// The label that marks them, and its value for this kind of server.
pub(crate) const IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";
const IDENTITY: &str = "kube-apiserver";
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// kube's `IdentityLeaseDurationSeconds`.
pub(crate) const DURATION_SECONDS: i64 = 3600;
/// kube's `IdentityLeaseRenewIntervalPeriod`.
pub(crate) const RENEW: Duration = Duration::from_secs(10);
/// How long a start waits for its identity lease (kube's lease controller's `shutdownTimeout`).
const BEGIN_TIMEOUT: Duration = Duration::from_secs(10);
/// kube's lease controller's `maxUpdateRetries`.
const UPDATE_TRIES: usize = 5;
/// kube's lease controller's `maxBackoff`.
const MAX_BACKOFF: Duration = Duration::from_secs(7);
/// kube's `IdentityLeaseGCPeriod`.
pub(crate) const GC_PERIOD: Duration = Duration::from_secs(3600);
const MANAGER: &str = "kube-apiserver";

/// The host's name, as Go's `os.Hostname` reads it on Linux.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// kube's `APIServerID` of a kube-apiserver on host `hostname`.
pub(crate) fn lease_name(hostname: &str) -> String {
    let mut data = Vec::with_capacity(hostname.len() + IDENTITY.len() + 4);
    for part in [hostname, IDENTITY] {
        data.extend_from_slice(&(part.len() as u16).to_be_bytes());
        data.extend_from_slice(part.as_bytes());
    }
    let hash = Sha256::digest(&data);
    format!("apiserver-{}", base32_lower(&hash[..16]))
}

/// RFC 4648 base32 without padding, in lower case.
fn base32_lower(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

/// A Lease's `renewTime` as kube writes one (MicroTime).
fn micro_now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Deletes the lease `name` of `store` whatever its version (gone already is fine): what a
/// server starting or shutting down gracefully does with its host's.
pub(crate) async fn delete(store: &Store, name: &str) -> Result<(), ApiError> {
    let Some(info) = store.registry().find("coordination.k8s.io", "v1", "leases").cloned() else { return Ok(()) };
    match store.delete(&info, NAMESPACE, name, &DeleteOpts::default()).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether the lease `lease` is expired at `now` (kube's `isLeaseExpired`: no renew time or
/// duration counts as expired).
fn expired(lease: &Value, now: jiff::Timestamp) -> bool {
    let renewed =
        lease.pointer("/spec/renewTime").and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let duration = lease.pointer("/spec/leaseDurationSeconds").and_then(Value::as_i64);
    match (renewed, duration) {
        (Some(at), Some(d)) => at.checked_add(jiff::SignedDuration::from_secs(d)).is_ok_and(|end| end < now),
        _ => true,
    }
}

/// `period` lengthened by up to 4%, as kube's `JitterUntil` with a factor of 0.04.
fn jittered(period: Duration) -> Duration {
    period.mul_f64(1.0 + rand::random::<f64>() * 0.04)
}

/// `attempt` until it succeeds, pausing 200 ms after the first failure, then twice as long
/// each time, up to [`MAX_BACKOFF`] (kube's `backoffEnsureLease`).
async fn backing_off<T, F: Future<Output = Result<T, ApiError>>>(mut attempt: impl FnMut() -> F, lease: &str) -> T {
    let mut pause = Duration::from_millis(100);
    loop {
        match attempt().await {
            Ok(found) => return found,
            Err(e) => {
                pause = (pause * 2).min(MAX_BACKOFF);
                tracing::warn!(lease, error = %e, retry_in = ?pause, "failed to ensure the apiserver identity lease exists");
                tokio::time::sleep(pause).await;
            }
        }
    }
}

/// The controller of one server's identity lease.
pub(crate) struct Controller {
    store: Arc<Store>,
    info: Arc<ResourceInfo>,
    hostname: String,
    name: String,
    holder: String,
    /// The lease as this controller last wrote or read it (kube's `latestLease`).
    latest: parking_lot::Mutex<Option<Value>>,
}

impl Controller {
    /// The controller of a server on this host; None when `store` serves no Leases.
    pub(crate) fn new(store: Arc<Store>) -> Option<Self> {
        let info = store.registry().find("coordination.k8s.io", "v1", "leases").cloned()?;
        let hostname = hostname();
        let name = lease_name(&hostname);
        let holder = format!("{name}_{}", crate::object::new_uid());
        Some(Controller { store, info, hostname, name, holder, latest: parking_lot::Mutex::new(None) })
    }

    /// The lease's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    fn labelled(&self, lease: &mut Value) {
        lease["metadata"]["labels"][IDENTITY_LABEL] = json!(IDENTITY);
        lease["metadata"]["labels"][HOSTNAME_LABEL] = json!(self.hostname);
    }

    /// What a server does as it starts: the lease of its host deleted (a stale one of a
    /// previous run), then made again with this run's holder — one try, bounded by
    /// [`BEGIN_TIMEOUT`]; the renewals then make it if this one failed. True when the lease was
    /// written.
    pub(crate) async fn begin(&self) -> bool {
        let begin = async {
            // (A failed deletion does not keep the lease from being renewed.)
            if let Err(e) = delete(&self.store, &self.name).await {
                tracing::warn!(lease = %self.name, error = %e, "failed to delete the stale apiserver identity lease");
            }
            match self.ensure().await {
                Ok((lease, true)) => {
                    *self.latest.lock() = Some(lease);
                    true
                }
                // Made meanwhile (another server on the host): one update, no reading again.
                Ok((lease, false)) => {
                    let renewed = self.update_once(lease).await;
                    if let Err(e) = &renewed {
                        tracing::warn!(lease = %self.name, error = %e, "failed to renew the apiserver identity lease");
                    }
                    renewed.is_ok()
                }
                Err(e) => {
                    tracing::warn!(lease = %self.name, error = %e, "failed to make the apiserver identity lease");
                    false
                }
            }
        };
        tokio::time::timeout(BEGIN_TIMEOUT, begin).await.unwrap_or(false)
    }

    /// Renews the lease, or makes it when missing, as kube's lease controller's `sync`: an
    /// update of the lease last written (up to [`UPDATE_TRIES`] times, a conflict reading it
    /// again); failing that, the lease read or made — tried again with a doubling pause up to
    /// [`MAX_BACKOFF`] until it can be — and updated unless just made.
    pub(crate) async fn renew(&self) {
        let latest = self.latest.lock().clone();
        if let Some(latest) = latest {
            match self.update_retrying(latest).await {
                Ok(()) => return,
                Err(e) => {
                    tracing::info!(lease = %self.name, error = %e, "failed to update lease using latest lease, fallback to ensure lease")
                }
            }
        }
        let (lease, created) = self.ensure_backing_off().await;
        *self.latest.lock() = Some(lease.clone());
        if !created && let Err(e) = self.update_retrying(lease).await {
            tracing::warn!(lease = %self.name, error = %e, "failed to renew the apiserver identity lease; will retry");
        }
    }

    /// Writes `base` renewed (renew time now, duration and labels put back) on its
    /// resourceVersion.
    async fn update_once(&self, base: Value) -> Result<(), ApiError> {
        let mut lease = base;
        lease["spec"]["renewTime"] = json!(micro_now());
        lease["spec"]["leaseDurationSeconds"] = json!(DURATION_SECONDS);
        self.labelled(&mut lease);
        let opts = WriteOpts { field_manager: MANAGER.into(), ..WriteOpts::main(false) };
        let stored = self.store.update(&self.info, Some(NAMESPACE), Some(&self.name), lease, opts).await?;
        *self.latest.lock() = Some(stored.value());
        Ok(())
    }

    /// [`Self::update_once`] up to [`UPDATE_TRIES`] times; a conflict reads the lease again.
    async fn update_retrying(&self, mut base: Value) -> Result<(), ApiError> {
        let mut tries = 1;
        loop {
            let e = match self.update_once(base.clone()).await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            tracing::warn!(lease = %self.name, error = %e, "failed to update the apiserver identity lease");
            if tries == UPDATE_TRIES {
                return Err(e);
            }
            tries += 1;
            if e.code == 409 {
                base = self.ensure_backing_off().await.0;
            }
        }
    }

    /// [`Self::ensure`] until it succeeds ([`backing_off`]).
    async fn ensure_backing_off(&self) -> (Value, bool) {
        backing_off(|| self.ensure(), &self.name).await
    }

    /// The lease as stored, or made when missing (true then).
    async fn ensure(&self) -> Result<(Value, bool), ApiError> {
        match self.store.get(&self.info, NAMESPACE, &self.name).await {
            Ok(found) => Ok((found.value(), false)),
            Err(e) if e.code == 404 => {
                let mut lease = json!({"metadata": {"name": self.name, "namespace": NAMESPACE},
                    "spec": {"holderIdentity": self.holder, "leaseDurationSeconds": DURATION_SECONDS,
                        "renewTime": micro_now()}});
                self.labelled(&mut lease);
                let made = self.store.create_many(&self.info, Some(NAMESPACE), vec![lease], false, MANAGER).await?;
                let made = made.into_iter().next().ok_or_else(|| ApiError::internal("the lease was not made"))?;
                Ok((made.value(), true))
            }
            Err(e) => Err(e),
        }
    }

    /// Deletes the expired identity leases (kube's `apiserverleasegc`).
    pub(crate) async fn collect(&self) -> Result<(), ApiError> {
        let store = &self.store;
        store.fresh().await?;
        let now = jiff::Timestamp::now();
        let (_, leases) = store.cache().snapshot(&self.info, Some(NAMESPACE), &Default::default())?;
        for lease in leases {
            let value = lease.value();
            let ours = value.pointer("/metadata/labels").and_then(|l| l.get(IDENTITY_LABEL)).and_then(Value::as_str)
                == Some(IDENTITY);
            if !ours || !expired(&value, now) {
                continue;
            }
            let name = value.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            let opts = DeleteOpts { precondition_rv: Some(lease.rv.to_string()), ..Default::default() };
            match store.delete(&self.info, NAMESPACE, name, &opts).await {
                // Gone, or renewed since: left to its server.
                Ok(_) => {}
                Err(e) if e.code == 404 || e.code == 409 => {}
                Err(e) => {
                    tracing::warn!(lease = name, error = %e, "failed to delete an expired apiserver identity lease")
                }
            }
        }
        Ok(())
    }

    /// Begins ([`Self::begin`]) unless `begun` says how a beginning went, then renews
    /// [`RENEW`] (jittered up to 4%) after each renewal ends — at once when the beginning did not
    /// write the lease — and collects at start and every [`GC_PERIOD`], until `stop` turns true.
    pub(crate) async fn run(self, begun: Option<bool>, mut stop: watch::Receiver<bool>) {
        let cache = self.store.cache().clone();
        let written = match begun {
            Some(written) => written,
            None => {
                tokio::select! {
                    _ = cache.until_ready() => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                tokio::select! {
                    written = self.begin() => written,
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        };
        let mut next = tokio::time::Instant::now() + if written { jittered(RENEW) } else { Duration::ZERO };
        let mut collect = tokio::time::interval(GC_PERIOD);
        collect.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let renewing = tokio::select! {
                _ = tokio::time::sleep_until(next) => true,
                _ = collect.tick() => false,
                _ = stop.wait_for(|s| *s) => return,
            };
            tokio::select! {
                _ = cache.until_ready() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            // Either waits for the storage as long as it takes, unless the server stops.
            if renewing {
                tokio::select! {
                    _ = self.renew() => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                next = tokio::time::Instant::now() + jittered(RENEW);
            } else {
                tokio::select! {
                    collected = self.collect() => if let Err(e) = collected {
                        tracing::warn!(error = %e, "failed to collect expired apiserver identity leases");
                    },
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_is_named_after_the_host() {
        assert_eq!(base32_lower(b"foobar"), "mzxw6ytboi");
        assert_eq!(base32_lower(b"f"), "my");
        assert_eq!(lease_name("node-1"), "apiserver-lgabes5ywnaqeagh5dny4zlzs4");
        assert_ne!(lease_name("node-1"), lease_name("node-2"));
    }

    #[tokio::test]
    async fn a_renewal_moves_the_renew_time_and_puts_the_labels_back() {
        let server = crate::ApiServer::builder().apiserver_identity(false).start().await.unwrap();
        let controller = Controller::new(server.store().clone()).unwrap();
        controller.renew().await;
        let made = server.get("leases", NAMESPACE, &controller.name).await.unwrap();
        assert_eq!(made["spec"]["holderIdentity"], json!(controller.holder));
        // Taken over meanwhile, its labels gone, renewed long ago: renewed as it is.
        let mut changed = made.clone();
        changed["spec"]["holderIdentity"] = json!("someone");
        changed["spec"]["renewTime"] = json!("2026-01-01T00:00:00.000000Z");
        changed["spec"]["leaseDurationSeconds"] = json!(5);
        changed["metadata"]["labels"] = json!({"x": "y"});
        server.update("leases", changed).await.unwrap();
        // The lease last written is stale: the update conflicts, the lease is read again.
        controller.renew().await;
        let renewed = server.get("leases", NAMESPACE, &controller.name).await.unwrap();
        assert_eq!(renewed["spec"]["holderIdentity"], "someone");
        assert_eq!(renewed["spec"]["leaseDurationSeconds"], DURATION_SECONDS);
        assert_ne!(renewed["spec"]["renewTime"], "2026-01-01T00:00:00.000000Z");
        assert_eq!(
            renewed["metadata"]["labels"],
            json!({"x": "y", IDENTITY_LABEL: IDENTITY, HOSTNAME_LABEL: controller.hostname})
        );
        // Deleted meanwhile: the update of the lease last written fails, the lease is made again.
        crate::apiserver_identity::delete(server.store(), &controller.name).await.unwrap();
        controller.renew().await;
        let remade = server.get("leases", NAMESPACE, &controller.name).await.unwrap();
        assert_eq!(remade["spec"]["holderIdentity"], json!(controller.holder));
        assert_ne!(remade["metadata"]["uid"], renewed["metadata"]["uid"]);
        // Another run on the host begins by replacing it: its own holder, a new object.
        let next = Controller::new(server.store().clone()).unwrap();
        assert!(next.begin().await);
        let replaced = server.get("leases", NAMESPACE, &controller.name).await.unwrap();
        assert_eq!(replaced["spec"]["holderIdentity"], json!(next.holder));
        assert_ne!(replaced["metadata"]["uid"], renewed["metadata"]["uid"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_storage_is_tried_again_with_a_doubling_pause() {
        let started = tokio::time::Instant::now();
        let tries = std::cell::Cell::new(0u32);
        let at = std::cell::RefCell::new(Vec::new());
        let attempt = || {
            tries.set(tries.get() + 1);
            at.borrow_mut().push(started.elapsed().as_millis());
            let n = tries.get();
            async move { if n < 8 { Err(ApiError::internal("down")) } else { Ok(n) } }
        };
        assert_eq!(backing_off(attempt, "l").await, 8);
        // Pauses of 0.2, 0.4, 0.8, 1.6, 3.2, 6.4 s, then 7 s.
        assert_eq!(*at.borrow(), [0, 200, 600, 1400, 3000, 6200, 12600, 19600]);
    }

    #[test]
    fn a_lease_past_its_duration_or_without_one_is_expired() {
        let now: jiff::Timestamp = "2026-01-01T02:00:00Z".parse().unwrap();
        let lease = |renew: Value, d: Value| json!({"spec": {"renewTime": renew, "leaseDurationSeconds": d}});
        assert!(!expired(&lease(json!("2026-01-01T01:00:00.000000Z"), json!(3600)), now));
        assert!(expired(&lease(json!("2026-01-01T00:59:59.999999Z"), json!(3600)), now));
        assert!(expired(&lease(Value::Null, json!(3600)), now));
        assert!(expired(&lease(json!("2026-01-01T01:30:00.000000Z"), Value::Null), now));
        assert!(micro_now().len() == "2026-01-01T00:00:00.000000Z".len(), "{}", micro_now());
    }
}
