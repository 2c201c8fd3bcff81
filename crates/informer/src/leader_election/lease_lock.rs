//! [`LeaseLock`]: the election record in a `coordination.k8s.io/v1` Lease, through
//! `kube::Client` (client-go's `resourcelock.LeaseLock`).
//!
//! Invariants: `get` and `create` remember the Lease they return, `update` replaces that Lease
//! (PUT with its `resourceVersion`, so the API server answers 409 if anyone wrote since) with only
//! its spec changed and remembers the result; a 409 or an AlreadyExists is
//! [`LockError::Conflict`], a 404 on `get` is [`LockError::NotFound`]. Metadata other than the
//! spec (labels, annotations, owner references) is kept as read.

use futures_util::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use parking_lot::Mutex;

use super::lock::{LockError, ResourceLock};
use super::record::LeaderElectionRecord;

/// A [`ResourceLock`] on a Lease object.
///
/// ```no_run
/// use informer::leader_election::LeaseLock;
/// # async fn example(client: kube::Client) {
/// let lock = LeaseLock::new(client, "kube-system", "my-controller");
/// # }
/// ```
pub struct LeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
    /// The Lease last read or written, whose resourceVersion the next update is checked against.
    last: Mutex<Option<Lease>>,
}

impl std::fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseLock").field("namespace", &self.namespace).field("name", &self.name).finish()
    }
}

impl LeaseLock {
    /// A lock on the Lease `namespace/name` (created on the first campaign if absent).
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> Self {
        LeaseLock {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            name: name.to_string(),
            last: Mutex::new(None),
        }
    }

    fn error(&self, e: kube::Error) -> LockError {
        match e {
            kube::Error::Api(s) if s.code == 409 => LockError::Conflict(self.describe(), s.message.clone()),
            kube::Error::Api(s) if s.code == 404 => LockError::NotFound(self.describe()),
            e => LockError::Other(self.describe(), Box::new(e)),
        }
    }

    fn remember(&self, lease: Lease) -> LeaderElectionRecord {
        let record = lease.spec.as_ref().map(LeaderElectionRecord::from_lease_spec).unwrap_or_default();
        *self.last.lock() = Some(lease);
        record
    }
}

impl ResourceLock for LeaseLock {
    fn get(&self) -> BoxFuture<'_, Result<LeaderElectionRecord, LockError>> {
        Box::pin(async move {
            let lease = self.api.get(&self.name).await.map_err(|e| self.error(e))?;
            Ok(self.remember(lease))
        })
    }

    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(record.to_lease_spec()),
            };
            let created = self.api.create(&PostParams::default(), &lease).await.map_err(|e| self.error(e))?;
            self.remember(created);
            Ok(())
        })
    }

    fn update(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let Some(mut lease) = self.last.lock().clone() else {
                return Err(LockError::Other(
                    self.describe(),
                    "lease not initialized, call get or create first".into(),
                ));
            };
            lease.spec = Some(record.to_lease_spec());
            let updated =
                self.api.replace(&self.name, &PostParams::default(), &lease).await.map_err(|e| self.error(e))?;
            self.remember(updated);
            Ok(())
        })
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn object_reference(&self) -> Option<ObjectReference> {
        let last = self.last.lock();
        let meta = &last.as_ref()?.metadata;
        Some(ObjectReference {
            api_version: Some("coordination.k8s.io/v1".into()),
            kind: Some("Lease".into()),
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            ..Default::default()
        })
    }
}
