//! The IPAddress objects that record Services' cluster IPs, as kube-apiserver v1.35's allocator
//! writes them (one per address, named by it, labelled `ipaddress.kubernetes.io/ip-family` and
//! `ipaddress.kubernetes.io/managed-by: ipallocator.k8s.io`, its `parentRef` the Service), and
//! the repair controller that keeps them in step with the Services, as kube's
//! `ipallocator-repair-controller` does.
//!
//! The store writes a Service's IPAddress before the Service, as kube's allocator does (an
//! address some IPAddress holds is taken), deletes it again when the Service's write fails, and
//! deletes it once a write that drops the address (a delete, an ExternalName) is stored. The
//! controller repairs what that leaves:
//! - a Service whose address has no IPAddress (written before the server kept them, or by a
//!   server that stopped between the two writes) gets one; one that another Service's IPAddress
//!   names, when that Service does not hold the address, gets it back; one whose IPAddress lacks
//!   the allocator's labels gets a new one; an address in no ServiceCIDR (nor the server's range)
//!   is left alone;
//! - an IPAddress of the allocator's whose parent is not a Service, or whose Service holds
//!   another address, is deleted; one whose Service does not exist, or holds no address (an
//!   ExternalName), is deleted [`LEAK_GRACE`] after its creation (the write that gives the
//!   Service the address may not be stored yet).
//!
//! Invariants: IPv4 only (the server's Services are single-stack IPv4); every write is the
//! server's (`kube-apiserver`); deletes carry the UID they judged; a pass reads the cache once it
//! has caught up with the storage (the records before the Services), and runs on every change to
//! a Service or an IPAddress, when a waiting record's grace is over, and every [`RESYNC`]; a
//! failed write does not keep the pass from the others.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::controller_loop::{Loop, Wakers};
use crate::delete_options::DeleteOpts;
use crate::object::StoredObject;
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::service_cidr::{GROUP, IP_ADDRESSES, SERVICE_CIDRS};
use crate::status::ApiError;
use crate::store::Store;

/// The label naming an IPAddress's family.
pub(crate) const FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";
/// The label naming who manages an IPAddress.
pub(crate) const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
/// The allocator's name in [`MANAGED_BY_LABEL`].
pub(crate) const ALLOCATOR: &str = "ipallocator.k8s.io";
/// The field manager of the server's writes.
pub(crate) const MANAGER: &str = "kube-apiserver";
/// How often a pass runs when nothing changes.
pub(crate) const RESYNC: Duration = Duration::from_secs(180);
/// How long a record of the allocator's may wait for its Service before it is taken for a leak.
pub(crate) const LEAK_GRACE: Duration = Duration::from_secs(60);
const RETRY: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// The IPAddress recording that the Service `ns`/`name` holds `ip`.
pub(crate) fn body(ip: Ipv4Addr, ns: &str, name: &str) -> Value {
    json!({"metadata": {"name": ip.to_string(),
            "labels": {FAMILY_LABEL: "IPv4", MANAGED_BY_LABEL: ALLOCATOR}},
        "spec": {"parentRef": {"resource": "services", "namespace": ns, "name": name}}})
}

/// The resource of IPAddresses, if `store` serves it.
pub(crate) fn ip_addresses(store: &Store) -> Option<Arc<ResourceInfo>> {
    store.registry().find(GROUP, "v1", IP_ADDRESSES).cloned()
}

/// Whether `ip` is an address of a ServiceCIDR among `cidrs` that allocators use (ready or not
/// yet judged, not being deleted): inside one of its IPv4 blocks, not the block's network or
/// broadcast address.
pub(crate) fn in_ready_block(cidrs: &[Arc<StoredObject>], ip: Ipv4Addr) -> bool {
    cidrs.iter().map(|c| c.value()).filter(usable).any(|c| block_holds(&c, ip))
}

/// Whether `ip` is an address of any ServiceCIDR among `cidrs`, whatever its state.
fn in_any_block(cidrs: &[Arc<StoredObject>], ip: Ipv4Addr) -> bool {
    cidrs.iter().any(|c| block_holds(&c.value(), ip))
}

fn block_holds(cidr: &Value, ip: Ipv4Addr) -> bool {
    crate::object::strings(cidr.pointer("/spec/cidrs")).iter().any(|block| holds(block, ip))
}

fn usable(cidr: &Value) -> bool {
    let deleting = cidr.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    let conditions = cidr.pointer("/status/conditions").and_then(Value::as_array);
    let ready = conditions.into_iter().flatten().find(|c| c["type"] == "Ready");
    // kube's allocators take a block without the condition as ready (no controller may run).
    !deleting && ready.is_none_or(|c| c["status"] == "True")
}

/// Whether the IPv4 block `block` holds `ip` as an address to give.
fn holds(block: &str, ip: Ipv4Addr) -> bool {
    crate::service_cidr::ipv4_hosts(block).is_some_and(|hosts| hosts.contains(&u32::from(ip)))
}

/// The controller over a store's Services and IPAddresses.
pub(crate) struct Controller {
    store: Arc<Store>,
    services: Arc<ResourceInfo>,
    addresses: Arc<ResourceInfo>,
    cidrs: Option<Arc<ResourceInfo>>,
    /// When a record without its Service is old enough to go.
    wake_at: std::sync::Mutex<Option<tokio::time::Instant>>,
}

/// A Service's cluster IP as the controller reads it: its namespace, name and address.
struct Held {
    ns: String,
    name: String,
    ip: Ipv4Addr,
}

impl Controller {
    /// A controller for `store`; None when it does not serve Services and IPAddresses.
    pub fn new(store: Arc<Store>) -> Option<Controller> {
        let services = store.registry().find("", "v1", "services").cloned()?;
        let addresses = ip_addresses(&store)?;
        let cidrs = store.registry().find(GROUP, "v1", SERVICE_CIDRS).cloned();
        Some(Controller { store, services, addresses, cidrs, wake_at: Default::default() })
    }

    /// Runs until `stop` turns true.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let lp = Loop {
            name: "ipallocator-repair-controller",
            retry: RETRY,
            cache: self.store.cache(),
            resync: Some(RESYNC),
            wake_at: Some(&self.wake_at),
        };
        let wakers =
            || Wakers { own: self.addresses.clone(), candidates: vec![self.services.clone()], registry: false };
        lp.run(wakers, || self.pass(), stop).await;
    }

    /// One pass over every Service and IPAddress; a write that fails does not keep the others
    /// from being made (the first failure is answered, so the pass is tried again).
    async fn pass(&self) -> Result<Vec<Arc<ResourceInfo>>, ApiError> {
        self.store.fresh().await?;
        let cache = self.store.cache();
        let all = Selectors::default();
        // The records first: a Service read after them is at least as new, so a record its
        // Service gave up meanwhile is not made again.
        let (_, addresses) = cache.snapshot(&self.addresses, None, &all)?;
        let (_, services) = cache.snapshot(&self.services, None, &all)?;
        let cidrs = match &self.cidrs {
            Some(info) => cache.snapshot(info, None, &all)?.1,
            None => Vec::new(),
        };
        *self.wake_at.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let held: Vec<Held> = services.iter().filter_map(|s| held(s)).collect();
        let by_name: HashMap<&str, &Arc<StoredObject>> = addresses.iter().map(|a| (a.name.as_str(), a)).collect();
        let holds_ip = |ns: &str, name: &str, ip: &str| {
            held.iter().any(|h| h.ns == ns && h.name == name && h.ip.to_string() == ip)
        };
        let mut first_error = None;
        let mut note = |r: Result<(), ApiError>| {
            if let Err(e) = r {
                tracing::debug!(error = %e, "repairing cluster IPs");
                first_error.get_or_insert(e);
            }
        };
        for h in &held {
            // kube's repair leaves addresses of no ServiceCIDR alone.
            if !crate::defaults::ClusterIps::in_range(h.ip) && !in_any_block(&cidrs, h.ip) {
                continue;
            }
            let name = h.ip.to_string();
            let Some(a) = by_name.get(name.as_str()) else {
                note(self.create(h).await);
                continue;
            };
            let value = a.value();
            let parent = parent(&value);
            let ours = parent.is_some_and(|(ns, n)| ns == h.ns && n == h.name);
            // Another Service that holds the address keeps it (kube reports both).
            if !ours && parent.is_some_and(|(ns, n)| holds_ip(ns, n, &name)) {
                continue;
            }
            let labelled = label(a, MANAGED_BY_LABEL) == Some(ALLOCATOR) && label(a, FAMILY_LABEL) == Some("IPv4");
            if !ours || !labelled {
                note(self.delete(a).await);
                note(self.create(h).await);
            }
        }
        let now = jiff::Timestamp::now();
        for a in addresses.iter().filter(|a| label(a, MANAGED_BY_LABEL) == Some(ALLOCATOR)) {
            let value = a.value();
            match parent(&value) {
                Some((ns, name)) if holds_ip(ns, name, &a.name) => {}
                // Its Service may not be written yet: kube's repair waits a minute. (One that exists
                // without an address, an ExternalName, waits too: an update that gives it one
                // records the address before it writes the Service.)
                Some((ns, name)) if !held.iter().any(|h| h.ns == ns && h.name == name) => {
                    let created = value.pointer("/metadata/creationTimestamp").and_then(Value::as_str);
                    match leak_wait(created, now) {
                        Some(wait) => {
                            let due = tokio::time::Instant::now() + wait;
                            let mut wake = self.wake_at.lock().unwrap_or_else(|e| e.into_inner());
                            *wake = Some(wake.map_or(due, |w| w.min(due)));
                        }
                        None => note(self.delete(a).await),
                    }
                }
                _ => note(self.delete(a).await),
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(vec![self.services.clone()]),
        }
    }

    async fn create(&self, h: &Held) -> Result<(), ApiError> {
        let body = body(h.ip, &h.ns, &h.name);
        match self.store.create_many(&self.addresses, None, vec![body], false, MANAGER).await {
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn delete(&self, a: &StoredObject) -> Result<(), ApiError> {
        let opts = DeleteOpts { precondition_uid: Some(a.uid.clone()), ..Default::default() };
        match self.store.delete(&self.addresses, "", &a.name, &opts).await {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 || e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// How long a record whose Service is missing, created at `created`, still waits at `now`
/// before it goes (kube's minute); None when its time is up (or it has no readable time).
fn leak_wait(created: Option<&str>, now: jiff::Timestamp) -> Option<Duration> {
    let created: jiff::Timestamp = created?.parse().ok()?;
    let age_ms = now.as_millisecond() - created.as_millisecond();
    let left_ms = LEAK_GRACE.as_millis() as i64 - age_ms;
    (left_ms > 0).then(|| Duration::from_millis(left_ms as u64))
}

/// The value of the label `key` of `o`.
fn label<'a>(o: &'a StoredObject, key: &str) -> Option<&'a str> {
    o.labels.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// The Service an IPAddress names as its parent: its namespace and name.
pub(crate) fn parent(address: &Value) -> Option<(&str, &str)> {
    let p = address.pointer("/spec/parentRef")?;
    let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
    (text("group").is_empty() && text("resource") == "services").then(|| (text("namespace"), text("name")))
}

/// The IPv4 cluster IP the Service `s` holds, if any.
fn held(s: &StoredObject) -> Option<Held> {
    let value = s.value();
    let spec = value.get("spec")?;
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return None;
    }
    let ip = spec.get("clusterIP").and_then(Value::as_str).and_then(crate::defaults::ipv4_of)?;
    Some(Held { ns: s.namespace.clone(), name: s.name.clone(), ip })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_hold_their_addresses_but_network_and_broadcast() {
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert!(holds("10.96.0.0/12", ip("10.96.0.1")));
        assert!(holds("10.96.0.0/12", ip("10.111.255.254")));
        assert!(!holds("10.96.0.0/12", ip("10.96.0.0")));
        assert!(!holds("10.96.0.0/12", ip("10.111.255.255")));
        assert!(!holds("10.96.0.0/12", ip("10.112.0.1")));
        assert!(!holds("fd00::/64", ip("10.96.0.1")));
        assert!(!holds("10.0.0.5/32", ip("10.0.0.5")));
        assert!(!holds("10.0.0.4/31", ip("10.0.0.5")));
    }

    #[test]
    fn a_record_without_its_service_waits_a_minute_from_its_creation() {
        let now: jiff::Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        assert_eq!(leak_wait(Some("2026-01-01T00:00:30Z"), now), Some(Duration::from_secs(30)));
        assert_eq!(leak_wait(Some("2026-01-01T00:00:00Z"), now), None);
        assert_eq!(leak_wait(Some("2025-12-31T23:00:00Z"), now), None);
        assert_eq!(leak_wait(None, now), None);
    }

    #[test]
    fn an_address_record_names_its_service() {
        let b = body(Ipv4Addr::new(10, 96, 0, 10), "default", "web");
        assert_eq!(b["metadata"]["name"], "10.96.0.10");
        assert_eq!(b["metadata"]["labels"][MANAGED_BY_LABEL], ALLOCATOR);
        assert_eq!(b["spec"]["parentRef"], json!({"resource": "services", "namespace": "default", "name": "web"}));
    }
}
