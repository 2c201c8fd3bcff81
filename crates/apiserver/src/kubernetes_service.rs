//! The `default/kubernetes` Service and its Endpoints and EndpointSlice, as kube-apiserver v1.35's
//! kubernetes-service controller and its lease endpoint reconciler keep them: how Pods find the
//! API server.
//!
//! Invariants, as kube's controller holds them:
//! - the Service is created when missing (by `kube-apiserver`: labels `component=apiserver`,
//!   `provider=kubernetes`, cluster IP the first address of the service range, 10.96.0.1, port
//!   443 `https` to the server's port, no selector) and never changed after;
//! - every server that serves renews its lease, a key `<prefix>/masterleases/<ip>` holding an
//!   Endpoints object of its address, every [`INTERVAL`]; a lease not renewed for [`LEASE_TTL`]
//!   is dropped (etcd's TTL in kube; here judged by the key's revision standing still that long,
//!   so that no two servers' clocks are compared);
//! - the Endpoints `kubernetes` lists the addresses of the live leases (one subset, their
//!   addresses in key order, port `https` to the server's port), labelled
//!   `endpointslice.kubernetes.io/skip-mirror=true`; no lease at all leaves them as they are
//!   ("refusing to erase all endpoints"), but for the last server shutting down, which removes
//!   itself;
//! - the EndpointSlice `kubernetes` follows the Endpoints (address type IPv4, one ready endpoint
//!   per address, label `kubernetes.io/service-name=kubernetes`), written only when its
//!   endpoints, ports or labels differ;
//! - the advertised address is IPv4 and neither loopback, link-local nor unspecified (kube's
//!   Endpoints validation refuses those): by default the address the server listens on, or when
//!   that is loopback or unspecified, the host's address on its default route, as
//!   kube-apiserver chooses it; without one, the Service is kept and no endpoint is written.
//!
//! Endpoint ports are kube's: written when the Endpoints have none (made, or emptied by the last
//! server's shutdown) and by a server shutting down, kept otherwise (servers sharing a storage
//! are taken to listen on one port). A server that stops without a graceful shutdown and starts
//! again on another port leaves the old port there until then, as kube-apiserver would.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::controller_loop::{Loop, Wakers};
use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::storage::{RangeRequest, Revision, Storage, StorageError};
use crate::store::{Store, WriteOpts};

/// The Service's (and its Endpoints' and EndpointSlice's) name.
pub(crate) const NAME: &str = "kubernetes";
/// Their namespace.
pub(crate) const NAMESPACE: &str = "default";
/// How often a server renews its lease and looks at the objects (kube's `EndpointInterval`).
pub(crate) const INTERVAL: Duration = Duration::from_secs(10);
/// How long a lease lives without renewal (kube's `--endpoint-reconciler` lease TTL).
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(15);
/// Who writes, as `managedFields` records it (kube's loopback client).
const MANAGER: &str = "kube-apiserver";
/// The label that keeps kube's EndpointSlice mirroring controller off the Endpoints.
const SKIP_MIRROR: &str = "endpointslice.kubernetes.io/skip-mirror";
/// The label naming an EndpointSlice's Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
const RETRY: (Duration, Duration) = (Duration::from_millis(200), Duration::from_secs(10));

/// The address other servers and Pods reach this server at: kube-apiserver's
/// `--advertise-address` and its secure port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Advertised {
    /// The address written into the Endpoints, if one can be (see [`usable`]).
    pub ip: Option<Ipv4Addr>,
    /// The port the server listens on.
    pub port: u16,
}

/// An address the Endpoints can hold: IPv4, neither loopback, link-local, multicast, broadcast
/// nor unspecified.
pub(crate) fn usable(ip: IpAddr) -> Option<Ipv4Addr> {
    let IpAddr::V4(v4) = ip else { return None };
    let special =
        v4.is_loopback() || v4.is_link_local() || v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast();
    (!special).then_some(v4)
}

/// The address kube-apiserver advertises when `--advertise-address` is not given: the one it
/// listens on, or when that is loopback or unspecified, the host's address on its default route
/// (the source address the kernel picks for a remote destination; no packet is sent).
pub(crate) fn default_advertise_address(listen: IpAddr) -> Option<Ipv4Addr> {
    if !listen.is_loopback() && !listen.is_unspecified() {
        return usable(listen);
    }
    let socket = UdpSocket::bind(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))).ok()?;
    socket.connect(SocketAddr::from(([192, 0, 2, 1], 9))).ok()?;
    usable(socket.local_addr().ok()?.ip())
}

fn info(store: &Store, group: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
    store.registry().find(group, "v1", plural).cloned()
}

fn services(store: &Store) -> Option<Arc<ResourceInfo>> {
    info(store, "", "services")
}

fn endpoints(store: &Store) -> Option<Arc<ResourceInfo>> {
    info(store, "", "endpoints")
}

fn endpoint_slices(store: &Store) -> Option<Arc<ResourceInfo>> {
    info(store, "discovery.k8s.io", "endpointslices")
}

/// The endpoint ports: the server's port, named `https`.
fn ports(port: u16) -> Value {
    json!([{"name": "https", "port": port, "protocol": "TCP"}])
}

/// The Service as kube's controller creates it.
fn service_body(port: u16) -> Value {
    json!({
        "metadata": {"name": NAME, "namespace": NAMESPACE,
            "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {
            "ports": [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": port}],
            "clusterIP": crate::defaults::kubernetes_service_ip().to_string(),
            "ipFamilyPolicy": "SingleStack",
            "sessionAffinity": "None",
            "type": "ClusterIP",
        },
    })
}

/// Creates the Service when it is missing.
async fn ensure_service(store: &Store, port: u16) -> Result<(), ApiError> {
    let Some(info) = services(store) else { return Ok(()) };
    match store.get(&info, NAMESPACE, NAME).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => {
            match store.create_many(&info, Some(NAMESPACE), vec![service_body(port)], false, MANAGER).await {
                Ok(_) => Ok(()),
                Err(e) if e.code == 409 => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

fn storage_error(e: StorageError) -> ApiError {
    ApiError::internal(&e.to_string())
}

/// The servers' leases: one key per advertised address, and when this server first saw each
/// key's current revision.
pub(crate) struct Leases {
    prefix: String,
    seen: HashMap<String, (Revision, Instant)>,
}

impl Leases {
    /// The leases of the servers sharing `store`'s storage.
    pub(crate) fn new(store: &Store) -> Self {
        Leases::under(format!("{}masterleases/", store.layout().root()))
    }

    fn under(prefix: String) -> Self {
        Leases { prefix, seen: HashMap::new() }
    }

    /// Renews (or takes) the lease of `ip`, as kube's `UpdateLease`: its Endpoints value written
    /// again with the generation moved on, so that the key's revision moves.
    async fn renew(&self, storage: &dyn Storage, ip: Ipv4Addr) -> Result<(), ApiError> {
        let key = format!("{}{ip}", self.prefix);
        for _ in 0..8 {
            let current = storage.get(&key).await.map_err(storage_error)?;
            let generation = current
                .as_ref()
                .and_then(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
                .and_then(|v| v.pointer("/metadata/generation").and_then(Value::as_i64))
                .unwrap_or(0);
            let value = json!({"kind": "Endpoints", "apiVersion": "v1",
                "metadata": {"generation": generation + 1, "creationTimestamp": null},
                "subsets": [{"addresses": [{"ip": ip.to_string()}]}]});
            let bytes = serde_json::to_vec(&value).map_err(|e| ApiError::internal(&e.to_string()))?;
            let written = match &current {
                None => storage.create(key.clone(), bytes.into()).await,
                Some(kv) => storage.update(key.clone(), bytes.into(), kv.mod_revision).await,
            };
            match written {
                Ok(_) => return Ok(()),
                Err(StorageError::AlreadyExists | StorageError::Conflict { .. }) => continue,
                Err(e) => return Err(storage_error(e)),
            }
        }
        Err(ApiError::internal("the lease kept changing while being renewed"))
    }

    /// The addresses of the live leases, in key order; leases whose revision stood still for
    /// [`LEASE_TTL`] are deleted (unless renewed meanwhile) and left out.
    async fn live(&mut self, storage: &dyn Storage) -> Result<Vec<String>, ApiError> {
        let req = RangeRequest { prefix: self.prefix.clone(), ..Default::default() };
        let found = storage.range(req).await.map_err(storage_error)?;
        let now = Instant::now();
        let mut live = Vec::new();
        let mut seen = HashMap::new();
        for kv in found.kvs {
            let since = match self.seen.get(&kv.key) {
                Some((rev, since)) if *rev == kv.mod_revision => *since,
                _ => now,
            };
            if now.duration_since(since) >= LEASE_TTL {
                match storage.delete(kv.key.clone(), kv.mod_revision).await {
                    Ok(_) | Err(StorageError::NotFound | StorageError::Conflict { .. }) => {}
                    Err(e) => return Err(storage_error(e)),
                }
                continue;
            }
            let value: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
            if let Some(ip) = value.pointer("/subsets/0/addresses/0/ip").and_then(Value::as_str)
                && !ip.is_empty()
            {
                live.push(ip.to_string());
            }
            seen.insert(kv.key, (kv.mod_revision, since));
        }
        self.seen = seen;
        Ok(live)
    }

    /// Removes the lease of `ip` (gone already is fine).
    async fn remove(&self, storage: &dyn Storage, ip: Ipv4Addr) -> Result<(), ApiError> {
        let key = format!("{}{ip}", self.prefix);
        loop {
            let Some(kv) = storage.get(&key).await.map_err(storage_error)? else { return Ok(()) };
            match storage.delete(key.clone(), kv.mod_revision).await {
                Ok(_) | Err(StorageError::NotFound) => return Ok(()),
                Err(StorageError::Conflict { .. }) => continue,
                Err(e) => return Err(storage_error(e)),
            }
        }
    }
}

/// The Endpoints' subsets for the live addresses `ips` (none when there is none) and `ports`.
fn subsets(ips: &[String], ports: Value) -> Value {
    if ips.is_empty() {
        return Value::Null;
    }
    let addresses: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
    json!([{"addresses": addresses, "ports": ports}])
}

/// The EndpointSlice kube derives from the Endpoints' first subset.
fn slice_body(subsets: &Value) -> Value {
    let subset = subsets.get(0);
    let ready = subset.and_then(|s| s.get("addresses")).and_then(Value::as_array).into_iter().flatten();
    let endpoints: Vec<Value> =
        ready.map(|a| json!({"addresses": [a["ip"].clone()], "conditions": {"ready": true}})).collect();
    let ports = subset.and_then(|s| s.get("ports")).cloned().unwrap_or(Value::Null);
    json!({
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {SERVICE_NAME_LABEL: NAME}},
        "addressType": "IPv4",
        "endpoints": if endpoints.is_empty() { Value::Null } else { Value::Array(endpoints) },
        "ports": ports,
    })
}

/// Brings the Endpoints and EndpointSlice to the addresses of the live `leases`, as kube's
/// `doReconcile`. The Endpoints are read before the leases are listed, and written on the
/// condition that they did not change meanwhile: a pass that listed the leases before another
/// server changed them cannot put back what that server's pass wrote after.
/// Nothing is erased when no lease is live unless `stopping` (the last server removing itself),
/// and missing Endpoints are not created when `stopping`. The ports are the server's `port` when
/// the Endpoints have none or when `stopping` (kube's `reconcilePorts`), and kept otherwise:
/// servers sharing a storage are taken to share a port (were they not, each would write its own
/// in turn).
async fn reconcile(store: &Store, leases: &mut Leases, port: u16, stopping: bool) -> Result<(), ApiError> {
    let (Some(ep_info), slice_info) = (endpoints(store), endpoint_slices(store)) else { return Ok(()) };
    let current = match store.get(&ep_info, NAMESPACE, NAME).await {
        Ok(o) => Some(o.value()),
        Err(e) if e.code == 404 => None,
        Err(e) => return Err(e),
    };
    let ips = leases.live(store.storage().as_ref()).await?;
    let ips = ips.as_slice();
    if current.is_none() && stopping {
        return Ok(());
    }
    if ips.is_empty() && !stopping {
        return Err(ApiError::internal(
            "no API server IP addresses were listed in storage, refusing to erase all endpoints for the kubernetes Service",
        ));
    }
    let kept = current.as_ref().and_then(|c| c.pointer("/subsets/0/ports"));
    let kept = kept.filter(|p| p.as_array().is_some_and(|p| !p.is_empty()) && !stopping);
    let desired = subsets(ips, kept.cloned().unwrap_or_else(|| ports(port)));
    let written = match current {
        None => {
            let body = json!({"metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {SKIP_MIRROR: "true"}},
                "subsets": desired});
            match store.create_many(&ep_info, Some(NAMESPACE), vec![body], false, MANAGER).await {
                Ok(mut created) => created.remove(0).value(),
                // Created by another server meanwhile: the next pass looks at it.
                Err(e) if e.code == 409 => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Some(mut cur) => {
            let labelled =
                cur.pointer(&format!("/metadata/labels/{}", SKIP_MIRROR.replace('/', "~1"))) == Some(&json!("true"));
            let have = cur.get("subsets").cloned().unwrap_or(Value::Null);
            if labelled && have == desired {
                cur
            } else {
                cur["metadata"]["labels"][SKIP_MIRROR] = json!("true");
                match desired {
                    Value::Null => drop(cur.as_object_mut().map(|o| o.remove("subsets"))),
                    d => cur["subsets"] = d,
                }
                let opts = WriteOpts { field_manager: MANAGER.into(), ..WriteOpts::main(false) };
                store.update(&ep_info, Some(NAMESPACE), Some(NAME), cur, opts).await?.value()
            }
        }
    };
    match slice_info {
        Some(info) => ensure_slice(store, &info, &written).await,
        None => Ok(()),
    }
}

/// Writes the EndpointSlice the Endpoints `eps` call for, as kube's
/// `EnsureEndpointSliceFromEndpoints`: created when missing, replaced when its address type
/// differs, updated when its endpoints, ports or labels do.
async fn ensure_slice(store: &Store, info: &ResourceInfo, eps: &Value) -> Result<(), ApiError> {
    let desired = slice_body(eps.get("subsets").unwrap_or(&Value::Null));
    let create = || async {
        match store.create_many(info, Some(NAMESPACE), vec![desired.clone()], false, MANAGER).await {
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    };
    let current = match store.get(info, NAMESPACE, NAME).await {
        Ok(o) => o.value(),
        Err(e) if e.code == 404 => return create().await,
        Err(e) => return Err(e),
    };
    if current.get("addressType") != desired.get("addressType") {
        match store.delete(info, NAMESPACE, NAME, &Default::default()).await {
            Ok(_) => {}
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
        return create().await;
    }
    let field = |v: &Value, f: &str| v.get(f).cloned().unwrap_or(Value::Null);
    let labels = |v: &Value| v.pointer("/metadata/labels").cloned().unwrap_or(Value::Null);
    if ["endpoints", "ports"].iter().all(|f| field(&current, f) == field(&desired, f))
        && labels(&current) == labels(&desired)
    {
        return Ok(());
    }
    // kube updates with the object it derived: no resourceVersion, whatever is stored replaced.
    let opts = WriteOpts { field_manager: MANAGER.into(), ..WriteOpts::main(false) };
    store.update(info, Some(NAMESPACE), Some(NAME), desired, opts).await.map(drop)
}

/// The controller of one serving server.
pub(crate) struct Controller {
    store: Arc<Store>,
    advertised: Advertised,
    leases: Leases,
    /// When the lease was last renewed.
    renewed: Option<Instant>,
}

impl Controller {
    /// The controller of a server advertising `advertised`; None when `store` serves no
    /// Services.
    pub(crate) fn new(store: Arc<Store>, advertised: Advertised) -> Option<Self> {
        services(&store)?;
        let leases = Leases::new(&store);
        Some(Controller { store, advertised, leases, renewed: None })
    }

    /// One pass: the Service created when missing; every [`INTERVAL`] the lease renewed; the
    /// leases listed, and the Endpoints and EndpointSlice brought to the live addresses.
    pub(crate) async fn pass(&mut self) -> Result<(), ApiError> {
        let store = self.store.clone();
        store.fresh().await?;
        ensure_service(&store, self.advertised.port).await?;
        let Some(ip) = self.advertised.ip else { return Ok(()) };
        if self.renewed.is_none_or(|at| at.elapsed() >= INTERVAL) {
            self.leases.renew(store.storage().as_ref(), ip).await?;
            self.renewed = Some(Instant::now());
        }
        reconcile(&store, &mut self.leases, self.advertised.port, false).await
    }

    /// Runs passes on every change to Services, Endpoints and EndpointSlices and every
    /// [`INTERVAL`], until `stop` turns true.
    pub(crate) async fn run(mut self, stop: watch::Receiver<bool>) {
        let store = self.store.clone();
        let Some(own) = services(&store) else { return };
        let others: Vec<Arc<ResourceInfo>> =
            [endpoints(&store), endpoint_slices(&store)].into_iter().flatten().collect();
        let lp = Loop {
            name: "kubernetes-service-controller",
            retry: RETRY,
            cache: store.cache(),
            resync: Some(INTERVAL),
            wake_at: None,
        };
        let wakers = || Wakers { own: own.clone(), candidates: others.clone(), registry: false };
        // (Taken by one pass at a time: the loop runs its passes in turn.)
        let this = tokio::sync::Mutex::new(&mut self);
        let pass = || async { this.lock().await.pass().await.map(|()| others.clone()) };
        lp.run(wakers, pass, stop).await;
    }
}

/// What a server shutting down does, as kube's pre-shutdown hook: its lease removed, and the
/// Endpoints and EndpointSlice brought to the other servers' addresses (none when it was the
/// last one).
pub(crate) async fn remove(store: &Store, advertised: Advertised) -> Result<(), ApiError> {
    let Some(ip) = advertised.ip else { return Ok(()) };
    let mut leases = Leases::new(store);
    leases.remove(store.storage().as_ref(), ip).await?;
    reconcile(store, &mut leases, advertised.port, true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_routable_ipv4_addresses_are_advertised() {
        assert_eq!(usable("10.1.2.3".parse().unwrap()), Some(Ipv4Addr::new(10, 1, 2, 3)));
        for bad in ["127.0.0.1", "0.0.0.0", "169.254.1.1", "224.0.0.1", "255.255.255.255", "::1", "2001:db8::1"] {
            assert_eq!(usable(bad.parse().unwrap()), None, "{bad}");
        }
        assert_eq!(default_advertise_address("192.0.2.7".parse().unwrap()), Some(Ipv4Addr::new(192, 0, 2, 7)));
        assert_eq!(default_advertise_address("169.254.0.9".parse().unwrap()), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lease_not_renewed_for_its_ttl_is_dropped() {
        let storage = crate::storage::memory::MemoryStorage::new(1000);
        let mut leases = Leases::under("/registry/masterleases/".into());
        let (a, b) = (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(192, 0, 2, 2));
        leases.renew(&storage, a).await.unwrap();
        leases.renew(&storage, b).await.unwrap();
        assert_eq!(leases.live(&storage).await.unwrap(), ["192.0.2.1", "192.0.2.2"]);
        // `a` goes on renewing, `b` stops.
        tokio::time::advance(INTERVAL).await;
        leases.renew(&storage, a).await.unwrap();
        assert_eq!(leases.live(&storage).await.unwrap(), ["192.0.2.1", "192.0.2.2"]);
        tokio::time::advance(LEASE_TTL - INTERVAL - Duration::from_millis(1)).await;
        assert_eq!(leases.live(&storage).await.unwrap(), ["192.0.2.1", "192.0.2.2"]);
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(leases.live(&storage).await.unwrap(), ["192.0.2.1"]);
        assert!(storage.get("/registry/masterleases/192.0.2.2").await.unwrap().is_none());
        // A lease holds an Endpoints of its address, its generation moved on by each renewal.
        let kv = storage.get("/registry/masterleases/192.0.2.1").await.unwrap().unwrap();
        let value: Value = serde_json::from_slice(&kv.value).unwrap();
        assert_eq!(value["subsets"], json!([{"addresses": [{"ip": "192.0.2.1"}]}]));
        assert_eq!((&value["kind"], &value["metadata"]["generation"]), (&json!("Endpoints"), &json!(2)));
        // A lease another server sees for the first time counts from then; a removed one is gone.
        let mut other = Leases::under("/registry/masterleases/".into());
        tokio::time::advance(LEASE_TTL).await;
        assert_eq!(other.live(&storage).await.unwrap(), ["192.0.2.1"]);
        other.remove(&storage, a).await.unwrap();
        assert!(other.live(&storage).await.unwrap().is_empty());
    }

    #[test]
    fn the_slice_follows_the_endpoints() {
        let s = subsets(&["10.0.0.2".into(), "10.0.0.3".into()], ports(6443));
        let slice = slice_body(&s);
        assert_eq!(
            slice["endpoints"],
            json!([
                {"addresses": ["10.0.0.2"], "conditions": {"ready": true}},
                {"addresses": ["10.0.0.3"], "conditions": {"ready": true}},
            ])
        );
        assert_eq!(slice["ports"], json!([{"name": "https", "port": 6443, "protocol": "TCP"}]));
        assert_eq!(slice["metadata"]["labels"], json!({SERVICE_NAME_LABEL: NAME}));
        let empty = slice_body(&subsets(&[], ports(6443)));
        assert_eq!((empty["endpoints"].clone(), empty["ports"].clone()), (Value::Null, Value::Null));
    }
}
