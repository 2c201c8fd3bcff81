//! The `default/kubernetes` Service and its Endpoints and EndpointSlice, as kube-apiserver v1.35's
//! kubernetes-service controller and its lease endpoint reconciler keep them: how Pods find the
//! API server.
//!
//! Invariants, as kube's controller holds them:
//! - the Service is created when missing (by `kube-apiserver`: labels `component=apiserver`,
//!   `provider=kubernetes`, cluster IP the first address of the service range, 10.96.0.1, port
//!   443 `https` to the server's port, no selector) and never changed after;
//! - every server that serves renews its lease, a key `<prefix>/masterleases/<ip>` holding an
//!   Endpoints object of its address, every [`INTERVAL`] on a clock other passes do not move; a
//!   lease not renewed for [`LEASE_TTL`] is dropped (etcd's TTL in kube; here judged by the
//!   key's revision standing still that long while this server watched, so that no two servers'
//!   clocks are compared and an outage expires nobody);
//! - the Endpoints `kubernetes` hold one subset whose addresses are those of the live leases
//!   (left alone in any order, written in key order), labelled
//!   `endpointslice.kubernetes.io/skip-mirror=true`; no lease at all leaves them as they are
//!   ("refusing to erase all endpoints"), but for the last server shutting down, which removes
//!   itself; their ports are the server's when it starts, when it shuts down (kube's
//!   `reconcilePorts`) and when they are made, and kept otherwise (servers sharing a storage are
//!   taken to listen on one port);
//! - the EndpointSlice `kubernetes` follows the Endpoints (address type IPv4, one ready endpoint
//!   per address, label `kubernetes.io/service-name=kubernetes`), written only when its
//!   endpoints, ports or labels differ;
//! - the advertised address is IPv4 and neither loopback, link-local nor unspecified (kube's
//!   Endpoints validation refuses those): by default the address the server listens on, or when
//!   that is loopback or unspecified, the host's address on its default route, as
//!   kube-apiserver chooses it; without one, the Service is kept and no endpoint is written
//!   (where kube-apiserver would not start);
//! - a pass runs at each renewal and on every change to a Service, Endpoints or EndpointSlice;
//!   one that finds the three objects in the cache as the last one left them, between
//!   renewals, reads nothing else.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::controller_loop::{Loop, Wakers};
use crate::object::elements as items;
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
/// How long a lease lives without renewal (kube's `DefaultEndpointReconcilerTTL`).
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
/// (the source address the kernel picks towards that route's gateway, read from
/// `/proc/net/route`, or towards a remote address when there is none; no packet is sent).
pub(crate) fn default_advertise_address(listen: IpAddr) -> Option<Ipv4Addr> {
    if !listen.is_loopback() && !listen.is_unspecified() {
        return usable(listen);
    }
    let routes = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    let towards = default_gateway(&routes).unwrap_or(Ipv4Addr::new(203, 0, 113, 1));
    let socket = UdpSocket::bind(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))).ok()?;
    socket.connect(SocketAddr::from((towards, 9))).ok()?;
    usable(socket.local_addr().ok()?.ip())
}

/// The gateway of the default route of lowest metric in `/proc/net/route`'s table (its
/// addresses in the kernel's byte order, hexadecimal), if it has one.
fn default_gateway(table: &str) -> Option<Ipv4Addr> {
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (dest, gateway, metric, mask) =
                (hex(f.get(1)?)?, hex(f.get(2)?)?, f.get(6)?.parse::<u32>().ok()?, hex(f.get(7)?)?);
            (dest == 0 && mask == 0 && gateway != 0).then_some((metric, Ipv4Addr::from(gateway.to_ne_bytes())))
        })
        .min_by_key(|(metric, _)| *metric)
        .map(|(_, gateway)| gateway)
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
    if cached(store, &info)?.is_some() {
        return Ok(());
    }
    create_absent(store, &info, service_body(port)).await.map(drop)
}

/// Creates `body` as the server's own write; None when another server made it meanwhile (the
/// next pass looks at it).
async fn create_absent(store: &Store, info: &ResourceInfo, body: Value) -> Result<Option<Value>, ApiError> {
    match store.create_many(info, Some(NAMESPACE), vec![body], false, MANAGER).await {
        Ok(mut created) => Ok(Some(created.remove(0).value())),
        Err(e) if e.code == 409 => Ok(None),
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
    /// When this server last listed them.
    listed: Option<Instant>,
}

/// The longest gap between two listings of the leases over which a revision standing still
/// counts: a longer one (the storage or the cache away, a slow pass) is time no server may have
/// been able to renew in, so every lease's count starts again.
const WATCHED_GAP: Duration = Duration::from_millis(12_500);

impl Leases {
    /// The leases of the servers sharing `store`'s storage.
    pub(crate) fn new(store: &Store) -> Self {
        Leases::under(format!("{}masterleases/", store.cache().layout().root()))
    }

    fn under(prefix: String) -> Self {
        Leases { prefix, seen: HashMap::new(), listed: None }
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
    /// [`LEASE_TTL`] of this server's watch (listings at most [`WATCHED_GAP`] apart) are deleted
    /// (unless renewed meanwhile) and left out.
    async fn live(&mut self, storage: &dyn Storage) -> Result<Vec<String>, ApiError> {
        let req = RangeRequest { prefix: self.prefix.clone(), ..Default::default() };
        let found = storage.range(req).await.map_err(storage_error)?;
        let now = Instant::now();
        if self.listed.is_none_or(|at| now.duration_since(at) > WATCHED_GAP) {
            self.seen.clear();
        }
        self.listed = Some(now);
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
        for _ in 0..8 {
            let Some(kv) = storage.get(&key).await.map_err(storage_error)? else { return Ok(()) };
            match storage.delete(key.clone(), kv.mod_revision).await {
                Ok(_) | Err(StorageError::NotFound) => return Ok(()),
                Err(StorageError::Conflict { .. }) => continue,
                Err(e) => return Err(storage_error(e)),
            }
        }
        Err(ApiError::internal("the lease kept changing while being removed"))
    }
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

/// One of the three objects as the cache holds it (read after the pass's consistent read: a
/// write made from a stale copy is refused on its resourceVersion or made again by the next
/// pass).
fn cached(store: &Store, info: &ResourceInfo) -> Result<Option<Value>, ApiError> {
    Ok(store.cache().get(info, NAMESPACE, NAME)?.map(|o| o.value()))
}

/// What a pass does with the Endpoints' ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ports {
    /// Kept as they are (servers sharing a storage are taken to share a port; were they not,
    /// each would write its own in turn).
    Kept,
    /// Set to this server's (kube's `reconcilePorts`: at start and at shutdown).
    Reconciled,
}

/// Brings the Endpoints and EndpointSlice to the addresses of the live `leases`, as kube's
/// `doReconcile`: the Endpoints are left alone when they hold one subset whose addresses are the
/// live ones (in any order), whose ports are this server's when `ports` says so, and they carry
/// the skip-mirror label; otherwise the addresses are set to the live ones in key order (a
/// subset made with this server's port when there was not exactly one). The Endpoints are read
/// before the leases are listed and written on the condition that they did not change
/// meanwhile: a pass that listed the leases before another server changed them cannot put back
/// what that server's pass wrote after. No live lease erases nothing unless `stopping` (the
/// last server removing itself), and missing Endpoints are not made when `stopping`.
async fn reconcile(
    store: &Store,
    leases: &mut Leases,
    port: u16,
    (ports_rule, stopping): (Ports, bool),
) -> Result<(), ApiError> {
    let (Some(ep_info), slice_info) = (endpoints(store), endpoint_slices(store)) else { return Ok(()) };
    let current = cached(store, &ep_info)?;
    let ips = leases.live(store.storage().as_ref()).await?;
    if current.is_none() && stopping {
        return Ok(());
    }
    if ips.is_empty() && !stopping {
        return Err(ApiError::internal(
            "no API server IP addresses were listed in storage, refusing to erase all endpoints for the kubernetes Service",
        ));
    }
    let own_ports = ports(port);
    let exists = current.is_some();
    let mut eps = current.unwrap_or_else(|| json!({"metadata": {"name": NAME, "namespace": NAMESPACE}}));
    let labelled = eps.pointer("/metadata/labels").and_then(|l| l.get(SKIP_MIRROR)) == Some(&json!("true"));
    let subsets = items(eps.get("subsets"));
    let format_correct = subsets.len() == 1;
    let listed: Option<Vec<&str>> = subsets.first().map(|s| {
        let mut a: Vec<&str> = items(s.get("addresses")).iter().filter_map(|a| a["ip"].as_str()).collect();
        a.sort_unstable();
        a
    });
    let mut live: Vec<&str> = ips.iter().map(String::as_str).collect();
    live.sort_unstable();
    let ips_correct = format_correct && listed.as_ref() == Some(&live);
    let ports_correct = ports_rule == Ports::Kept || subsets.first().and_then(|s| s.get("ports")) == Some(&own_ports);
    if exists && labelled && format_correct && ips_correct && ports_correct {
        return match slice_info {
            Some(info) => ensure_slice(store, &info, &eps).await,
            None => Ok(()),
        };
    }
    eps["metadata"]["labels"][SKIP_MIRROR] = json!("true");
    if !format_correct {
        eps["subsets"] = json!([{"addresses": [], "ports": own_ports.clone()}]);
    }
    if !format_correct || !ips_correct {
        let addresses: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
        eps["subsets"][0]["addresses"] = Value::Array(addresses);
    }
    if !ports_correct {
        eps["subsets"][0]["ports"] = own_ports;
    }
    // kube's repacking: a subset left without an address is no subset.
    let empty = |s: &Value| items(s.get("addresses")).is_empty() && items(s.get("notReadyAddresses")).is_empty();
    if items(eps.get("subsets")).iter().all(empty)
        && let Some(o) = eps.as_object_mut()
    {
        o.remove("subsets");
    }
    let written = if exists {
        let opts = WriteOpts { field_manager: MANAGER.into(), ..WriteOpts::main(false) };
        store.update(&ep_info, Some(NAMESPACE), Some(NAME), eps, opts).await?.value()
    } else {
        match create_absent(store, &ep_info, eps).await? {
            Some(created) => created,
            None => return Ok(()),
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
    let create = || async { create_absent(store, info, desired.clone()).await.map(drop) };
    let Some(current) = cached(store, info)? else { return create().await };
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
    /// When the lease was last renewed (the next renewal is [`INTERVAL`] after, whatever passes
    /// other changes cause meanwhile, as kube's non-sliding loop).
    renewed: Option<Instant>,
    /// Whether the ports were reconciled yet (kube does it once at start).
    started: bool,
    /// The three objects' resourceVersions in the cache after the last full pass.
    seen: Option<[u64; 3]>,
}

impl Controller {
    /// The controller of a server advertising `advertised`; None when `store` serves no
    /// Services.
    pub(crate) fn new(store: Arc<Store>, advertised: Advertised) -> Option<Self> {
        services(&store)?;
        let leases = Leases::new(&store);
        Some(Controller { store, advertised, leases, renewed: None, started: false, seen: None })
    }

    /// The resourceVersions of the Service, Endpoints and EndpointSlice in the cache (0: none).
    fn observed(&self) -> [u64; 3] {
        let rv = |info: Option<Arc<ResourceInfo>>| {
            let found = info.and_then(|i| self.store.cache().get(&i, NAMESPACE, NAME).ok().flatten());
            found.map_or(0, |o| o.rv)
        };
        [rv(services(&self.store)), rv(endpoints(&self.store)), rv(endpoint_slices(&self.store))]
    }

    /// When the next renewal is due.
    fn next_renewal(&self) -> Option<Instant> {
        self.renewed.map(|at| at + INTERVAL)
    }

    /// One pass: the Service created when missing; every [`INTERVAL`] the lease renewed; the
    /// leases listed, and the Endpoints and EndpointSlice brought to the live addresses (their
    /// ports to this server's at the first pass). A pass between renewals that finds the three
    /// objects in the cache as the last one left them reads nothing else (it runs on every
    /// change to any Service, Endpoints or EndpointSlice).
    pub(crate) async fn pass(&mut self) -> Result<(), ApiError> {
        let now = Instant::now();
        let due = self.next_renewal().is_none_or(|at| now >= at);
        // The renewal's slot on the clock: the one due, unless a whole interval was missed.
        let slot = self.next_renewal().filter(|at| now.duration_since(*at) < INTERVAL).unwrap_or(now);
        if !due && self.seen == Some(self.observed()) {
            return Ok(());
        }
        let store = self.store.clone();
        store.fresh().await?;
        ensure_service(&store, self.advertised.port).await?;
        if let Some(ip) = self.advertised.ip {
            if due {
                self.leases.renew(store.storage().as_ref(), ip).await?;
            }
            let ports = if self.started { Ports::Kept } else { Ports::Reconciled };
            reconcile(&store, &mut self.leases, self.advertised.port, (ports, false)).await?;
            self.started = true;
        }
        if due {
            self.renewed = Some(slot);
        }
        // Recorded once the cache holds this pass's own writes, so that the next pass finds the
        // objects as this one left them.
        store.fresh().await?;
        self.seen = Some(self.observed());
        Ok(())
    }

    /// Runs passes on every change to Services, Endpoints and EndpointSlices and at every
    /// renewal, until `stop` turns true.
    pub(crate) async fn run(mut self, stop: watch::Receiver<bool>) {
        let store = self.store.clone();
        let Some(own) = services(&store) else { return };
        let others: Vec<Arc<ResourceInfo>> = match self.advertised.ip {
            Some(_) => [endpoints(&store), endpoint_slices(&store)].into_iter().flatten().collect(),
            None => Vec::new(),
        };
        let wake_at = std::sync::Mutex::new(self.next_renewal());
        let lp = Loop {
            name: "kubernetes-service-controller",
            retry: RETRY,
            cache: store.cache(),
            resync: None,
            wake_at: Some(&wake_at),
        };
        let wakers = || Wakers { own: own.clone(), candidates: others.clone(), registry: false };
        // (Taken by one pass at a time: the loop runs its passes in turn.)
        let this = tokio::sync::Mutex::new(&mut self);
        let pass = || async {
            let mut me = this.lock().await;
            let done = me.pass().await;
            *wake_at.lock().unwrap_or_else(|e| e.into_inner()) = me.next_renewal();
            done.map(|()| others.clone())
        };
        lp.run(wakers, pass, stop).await;
    }
}

/// What a server shutting down does, as kube's pre-shutdown hook: its lease removed, and the
/// Endpoints and EndpointSlice brought to the other servers' addresses with its ports (none
/// when it was the last one).
pub(crate) async fn remove(store: &Store, advertised: Advertised) -> Result<(), ApiError> {
    let Some(ip) = advertised.ip else { return Ok(()) };
    let mut leases = Leases::new(store);
    leases.remove(store.storage().as_ref(), ip).await?;
    store.fresh().await?;
    reconcile(store, &mut leases, advertised.port, (Ports::Reconciled, true)).await
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
        // Time this server did not watch (the storage away) does not count: after a gap every
        // lease starts again.
        leases.renew(&storage, a).await.unwrap();
        leases.renew(&storage, b).await.unwrap();
        assert_eq!(leases.live(&storage).await.unwrap(), ["192.0.2.1", "192.0.2.2"]);
        tokio::time::advance(LEASE_TTL * 2).await;
        leases.renew(&storage, a).await.unwrap();
        assert_eq!(leases.live(&storage).await.unwrap(), ["192.0.2.1", "192.0.2.2"]);
        tokio::time::advance(INTERVAL).await;
        leases.renew(&storage, a).await.unwrap();
        assert_eq!(leases.live(&storage).await.unwrap(), ["192.0.2.1", "192.0.2.2"]);
        tokio::time::advance(INTERVAL).await;
        leases.renew(&storage, a).await.unwrap();
        assert_eq!(leases.live(&storage).await.unwrap(), ["192.0.2.1"]);
        // A lease holds an Endpoints of its address, its generation moved on by each renewal.
        let kv = storage.get("/registry/masterleases/192.0.2.1").await.unwrap().unwrap();
        let value: Value = serde_json::from_slice(&kv.value).unwrap();
        assert_eq!(value["subsets"], json!([{"addresses": [{"ip": "192.0.2.1"}]}]));
        assert_eq!((&value["kind"], &value["metadata"]["generation"]), (&json!("Endpoints"), &json!(6)));
        // A lease another server sees for the first time counts from then; a removed one is gone.
        let mut other = Leases::under("/registry/masterleases/".into());
        tokio::time::advance(LEASE_TTL).await;
        assert_eq!(other.live(&storage).await.unwrap(), ["192.0.2.1"]);
        other.remove(&storage, a).await.unwrap();
        assert!(other.live(&storage).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_pass_over_objects_already_right_writes_nothing() {
        // A server without endpoints of its own, and a controller advertising an address.
        // (No identity lease: its renewals would move the revision.)
        let server = crate::ApiServer::builder()
            .advertise_address(Ipv4Addr::LOCALHOST.into())
            .apiserver_identity(false)
            .start()
            .await
            .unwrap();
        let store = server.store().clone();
        let advertised = Advertised { ip: Some(Ipv4Addr::new(192, 0, 2, 50)), port: 6443 };
        let mut controller = Controller::new(store.clone(), advertised).unwrap();
        controller.pass().await.unwrap();
        let eps = store.get(&endpoints(&store).unwrap(), NAMESPACE, NAME).await.unwrap().value();
        assert_eq!(eps["subsets"], json!([{"addresses": [{"ip": "192.0.2.50"}], "ports": ports(6443)}]));
        let written = store.storage().current_revision().await.unwrap();
        // Not due, the objects as left: nothing read but the cache (the leases not listed).
        let listed = controller.leases.listed;
        controller.pass().await.unwrap();
        assert_eq!(controller.leases.listed, listed);
        // The objects read again (as after a change elsewhere), not due: the leases listed,
        // nothing written.
        controller.seen = None;
        controller.pass().await.unwrap();
        assert_ne!(controller.leases.listed, listed);
        assert_eq!(store.storage().current_revision().await.unwrap(), written);
        // Due: the lease alone is written.
        controller.renewed = Some(Instant::now() - INTERVAL);
        controller.pass().await.unwrap();
        assert_eq!(store.storage().current_revision().await.unwrap(), written + 1);
        assert_eq!(controller.next_renewal().map(|at| at > Instant::now()), Some(true));
    }

    #[test]
    fn the_default_route_of_lowest_metric_is_read() {
        let table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
            eth1\t00000000\t0101A8C0\t0003\t0\t0\t200\t00000000\t0\t0\t0\n\
            eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n\
            eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
        assert_eq!(default_gateway(table), Some(Ipv4Addr::new(192, 0, 2, 1)));
        assert_eq!(default_gateway("Iface\tDestination\n"), None);
    }

    #[test]
    fn the_slice_follows_the_endpoints() {
        let s = json!([{"addresses": [{"ip": "10.0.0.2"}, {"ip": "10.0.0.3"}], "ports": ports(6443)}]);
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
        let empty = slice_body(&Value::Null);
        assert_eq!((empty["endpoints"].clone(), empty["ports"].clone()), (Value::Null, Value::Null));
    }
}
