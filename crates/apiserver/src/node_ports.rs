//! The node ports of NodePort and LoadBalancer Services, given as kube-apiserver's Service
//! store gives them, from kube's default range 30000-32767:
//! - on create, each port without one gets a free node port (ports of the same number share
//!   one); a node port asked for is claimed, refused with kube's 422 when it is out of range or
//!   another Service has it; a LoadBalancer with `allocateLoadBalancerNodePorts: false` gets
//!   only those asked for;
//! - on update, a port left without a node port keeps the one its name had ([`keep`]), new
//!   ports get free ones, and node ports the Service gives up are free again;
//! - a LoadBalancer whose external traffic policy is `Local` gets a health check node port.
//!
//! Invariants: a node port is never given to two Services (the values in use are read from a
//! watch cache that has caught up with the storage, and [`Reservations`] covers writes it has not
//! shown yet); a write that fails gives back what it was given.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::reservations::Reservations;
use crate::status::ApiError;

/// kube's default node port range.
const FIRST: u32 = 30000;
const COUNT: u32 = 2768;
const RANGE: &str = "30000-32767";

/// Reservations of the node port range.
pub(crate) fn reservations() -> Reservations {
    Reservations::new(FIRST, COUNT)
}

fn kind(spec: &Map<String, Value>) -> &str {
    spec.get("type").and_then(Value::as_str).unwrap_or("ClusterIP")
}

fn needs_node_ports(spec: &Map<String, Value>) -> bool {
    matches!(kind(spec), "NodePort" | "LoadBalancer")
}

/// Whether ports without a node port get one (a LoadBalancer may ask for none).
fn allocates(spec: &Map<String, Value>) -> bool {
    match kind(spec) {
        "NodePort" => true,
        "LoadBalancer" => spec.get("allocateLoadBalancerNodePorts") != Some(&Value::Bool(false)),
        _ => false,
    }
}

fn needs_health_check(spec: &Map<String, Value>) -> bool {
    kind(spec) == "LoadBalancer" && spec.get("externalTrafficPolicy").and_then(Value::as_str) == Some("Local")
}

fn ports(spec: &Map<String, Value>) -> impl Iterator<Item = &Map<String, Value>> {
    spec.get("ports").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_object)
}

/// A port's node port (0: none).
fn node_port(port: &Map<String, Value>) -> i64 {
    port.get("nodePort").and_then(Value::as_i64).unwrap_or(0)
}

fn health_check_port(spec: &Map<String, Value>) -> i64 {
    spec.get("healthCheckNodePort").and_then(Value::as_i64).unwrap_or(0)
}

fn positive(n: i64) -> Option<u32> {
    u32::try_from(n).ok().filter(|n| *n != 0)
}

/// The node ports a Service's spec holds: its ports' and its health check's.
pub(crate) fn in_spec(spec: &Map<String, Value>) -> Vec<u32> {
    ports(spec).map(node_port).chain([health_check_port(spec)]).filter_map(positive).collect()
}

/// The node ports a Service's spec was given: those of a Service that needs node ports, and its
/// health check port when it needs one.
fn given(spec: &Map<String, Value>) -> Vec<u32> {
    let ports = ports(spec).map(node_port).filter(|_| needs_node_ports(spec));
    let check = Some(health_check_port(spec)).filter(|_| needs_health_check(spec));
    ports.chain(check).filter_map(positive).collect()
}

fn parse(spec: Option<&[u8]>) -> Option<Map<String, Value>> {
    spec.and_then(|b| serde_json::from_slice(b).ok())
}

/// The node ports in a Service's serialized spec.
pub(crate) fn in_spec_bytes(spec: Option<&[u8]>) -> Vec<u32> {
    parse(spec).map(|s| in_spec(&s)).unwrap_or_default()
}

/// The node ports a Service's serialized spec was given (see [`allocate`]).
pub(crate) fn given_in_spec_bytes(spec: Option<&[u8]>) -> Vec<u32> {
    parse(spec).map(|s| given(&s)).unwrap_or_default()
}

/// kube's `patchAllocatedValues` for node ports: when the Service was given node ports and is
/// still given them, a port the update left without one takes the one the port of its name had
/// (unless another port of the update has it), and the health check port is kept.
pub(crate) fn keep(spec: &mut Map<String, Value>, old: &Map<String, Value>) {
    if allocates(old) && allocates(spec) {
        let by_name: Vec<(String, i64)> = ports(old)
            .map(|p| (p.get("name").and_then(Value::as_str).unwrap_or("").to_string(), node_port(p)))
            .collect();
        let count = spec.get("ports").and_then(Value::as_array).map_or(0, Vec::len);
        for i in 0..count {
            let used: Vec<i64> = ports(spec).map(node_port).filter(|n| *n != 0).collect();
            let Some(port) = spec.get_mut("ports").and_then(|p| p.get_mut(i)).and_then(Value::as_object_mut) else {
                continue;
            };
            if node_port(port) != 0 {
                continue;
            }
            let name = port.get("name").and_then(Value::as_str).unwrap_or("");
            // (Go's map keeps the last port of a name.)
            let had = by_name.iter().rev().find(|(n, _)| n == name).map_or(0, |(_, p)| *p);
            if had != 0 && !used.contains(&had) {
                port.insert("nodePort".into(), had.into());
            }
        }
    }
    if needs_health_check(old) && needs_health_check(spec) && health_check_port(spec) == 0 {
        let had = health_check_port(old);
        if had != 0 {
            spec.insert("healthCheckNodePort".into(), had.into());
        }
    }
}

/// Whether giving `spec` its node ports (over `old` on an update) takes any port it does not
/// already have: only then are the ports in use read.
pub(crate) fn wants(spec: &Map<String, Value>, old: Option<&Map<String, Value>>) -> bool {
    let had: Vec<i64> = old.map(|o| ports(o).map(node_port).collect()).unwrap_or_default();
    let new_port = |n: i64| n != 0 && !had.contains(&n);
    let ports_wanted =
        needs_node_ports(spec) && ports(spec).any(|p| new_port(node_port(p)) || node_port(p) == 0 && allocates(spec));
    let check = needs_health_check(spec) && !old.is_some_and(needs_health_check);
    ports_wanted || check
}

/// One Service's allocation: the values it reserved so far.
struct Op<'a> {
    reservations: &'a Reservations,
    used: &'a HashSet<u32>,
    cache_rv: u64,
    claimed: Vec<u32>,
}

impl Op<'_> {
    /// Claims `n`: kube's port allocator's refusal when it cannot.
    fn claim(&mut self, n: i64) -> Result<(), String> {
        let Some(n) = u32::try_from(n).ok().filter(|n| self.reservations.contains(*n)) else {
            return Err(format!("provided port is not in the valid range. The range of valid ports is {RANGE}"));
        };
        if !self.reservations.claim(n, self.used, self.cache_rv) {
            return Err("provided port is already allocated".into());
        }
        self.claimed.push(n);
        Ok(())
    }

    fn next(&mut self) -> Result<u32, String> {
        let n = self.reservations.allocate(self.used, self.cache_rv).ok_or("range is full")?;
        self.claimed.push(n);
        Ok(n)
    }
}

/// Gives the Service `svc` (named `name`; replacing one whose spec was `old`) its node ports,
/// given the ports other Services have (`used`, at the cache's revision `cache_rv`). Answers the
/// ports it reserved, which the caller gives back if the write fails.
pub(crate) fn allocate(
    svc: &mut Map<String, Value>,
    old: Option<&Map<String, Value>>,
    name: &str,
    reservations: &Reservations,
    used: &HashSet<u32>,
    cache_rv: u64,
) -> Result<Vec<u32>, ApiError> {
    let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(Vec::new()) };
    let mut op = Op { reservations, used, cache_rv, claimed: Vec::new() };
    let given = match old {
        None => create(spec, name, &mut op),
        Some(old) => update(spec, old, name, &mut op),
    };
    match given {
        Ok(()) => Ok(op.claimed),
        Err(e) => {
            for n in op.claimed {
                reservations.release(n);
            }
            Err(e)
        }
    }
}

fn invalid(name: &str, i: usize, n: i64, fault: &str) -> ApiError {
    ApiError::invalid_object(
        "",
        "Service",
        name,
        &format!("spec.ports[{i}].nodePort"),
        "FieldValueInvalid",
        &format!("Invalid value: {n}: {fault}"),
    )
}

fn set_node_port(spec: &mut Map<String, Value>, i: usize, n: i64) {
    if let Some(port) = spec.get_mut("ports").and_then(|p| p.get_mut(i)).and_then(Value::as_object_mut) {
        port.insert("nodePort".into(), n.into());
    }
}

/// kube's `initNodePorts` and the health check port of a new Service.
fn create(spec: &mut Map<String, Value>, name: &str, op: &mut Op<'_>) -> Result<(), ApiError> {
    if needs_node_ports(spec) {
        let numbered: Vec<(i64, i64)> =
            ports(spec).map(|p| (p.get("port").and_then(Value::as_i64).unwrap_or(0), node_port(p))).collect();
        let mut given: Vec<(i64, i64)> = Vec::new();
        for (i, (number, asked)) in numbered.iter().copied().enumerate() {
            if asked == 0 && !allocates(spec) {
                continue;
            }
            match given.iter().find(|(p, _)| *p == number).map(|(_, n)| *n) {
                None => {
                    // The first node port any port of this number asks for.
                    let requested = numbered.iter().find(|(p, n)| *p == number && *n != 0).map_or(0, |(_, n)| *n);
                    let n = if requested != 0 {
                        op.claim(requested).map_err(|e| invalid(name, i, requested, &e))?;
                        requested
                    } else {
                        let next = op.next();
                        i64::from(next.map_err(|e| ApiError::internal(&format!("failed to allocate a nodePort: {e}")))?)
                    };
                    set_node_port(spec, i, n);
                    given.push((number, n));
                }
                Some(shared) if asked == 0 => set_node_port(spec, i, shared),
                Some(shared) if asked != shared => {
                    op.claim(asked).map_err(|e| invalid(name, i, asked, &e))?;
                }
                Some(_) => {}
            }
        }
    }
    if needs_health_check(spec) {
        health_check(spec, op)?;
    }
    Ok(())
}

/// kube's `allocHealthCheckNodePort`.
fn health_check(spec: &mut Map<String, Value>, op: &mut Op<'_>) -> Result<(), ApiError> {
    let asked = health_check_port(spec);
    if asked != 0 {
        op.claim(asked)
            .map_err(|e| ApiError::internal(&format!("failed to allocate requested HealthCheck NodePort {asked}: {e}")))
    } else {
        let n =
            op.next().map_err(|e| ApiError::internal(&format!("failed to allocate a HealthCheck NodePort 0: {e}")))?;
        spec.insert("healthCheckNodePort".into(), n.into());
        Ok(())
    }
}

/// kube's `updateNodePorts` and `updateHealthCheckNodePort`.
fn update(
    spec: &mut Map<String, Value>,
    old: &Map<String, Value>,
    name: &str,
    op: &mut Op<'_>,
) -> Result<(), ApiError> {
    if needs_node_ports(spec) {
        let had: Vec<i64> = ports(old).map(node_port).filter(|n| *n != 0).collect();
        let asked: Vec<(String, i64)> = ports(spec)
            .map(|p| (p.get("protocol").and_then(Value::as_str).unwrap_or("").to_string(), node_port(p)))
            .collect();
        let mut claimed_here: Vec<i64> = Vec::new();
        let mut pairs: Vec<(String, i64)> = Vec::new();
        for (i, (protocol, n)) in asked.into_iter().enumerate() {
            if n == 0 && !allocates(spec) {
                continue;
            }
            let n = if n != 0 {
                if !had.contains(&n) && !claimed_here.contains(&n) {
                    op.claim(n).map_err(|e| invalid(name, i, n, &e))?;
                    claimed_here.push(n);
                }
                n
            } else {
                let n = op.next().map_err(|e| ApiError::internal(&format!("failed to allocate a nodePort: {e}")))?;
                set_node_port(spec, i, i64::from(n));
                i64::from(n)
            };
            if pairs.iter().any(|(p, m)| *p == protocol && *m == n) {
                // (kube answers this plain error as it comes, before validation.)
                return Err(ApiError::new(500, "", format!("duplicate nodePort: {{{protocol} {n}}}")));
            }
            pairs.push((protocol, n));
        }
    }
    if needs_health_check(spec) && !needs_health_check(old) {
        health_check(spec, op)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn service(spec: Value) -> Map<String, Value> {
        json!({"metadata": {"name": "web"}, "spec": spec}).as_object().unwrap().clone()
    }

    fn node_ports(svc: &Map<String, Value>) -> Vec<Value> {
        svc["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.get("nodePort").cloned().unwrap_or(Value::Null))
            .collect()
    }

    #[test]
    fn new_ports_get_free_node_ports_and_ports_of_a_number_share_one() {
        let r = reservations();
        let none = HashSet::new();
        let mut svc = service(json!({"type": "NodePort", "ports": [
            {"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
            {"name": "web", "port": 80, "protocol": "TCP", "nodePort": 30080}]}));
        let claimed = allocate(&mut svc, None, "web", &r, &none, 0).unwrap();
        let given = node_ports(&svc);
        assert_eq!(given[0], given[1], "one node port for both protocols of port 53");
        assert!((30000..=32767).contains(&given[0].as_u64().unwrap()));
        assert_eq!(given[2], 30080);
        assert_eq!(claimed.len(), 2);
        // A ClusterIP Service gets none; a load balancer that asks for none gets none.
        let mut plain = service(json!({"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}]}));
        assert_eq!(allocate(&mut plain, None, "plain", &r, &none, 0).unwrap(), Vec::<u32>::new());
        let mut lb = service(json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
            "externalTrafficPolicy": "Local", "ports": [{"port": 80, "protocol": "TCP"}]}));
        assert_eq!(allocate(&mut lb, None, "lb", &r, &none, 0).unwrap().len(), 1, "the health check port only");
        assert_eq!(node_ports(&lb), [Value::Null]);
        assert!(lb["spec"]["healthCheckNodePort"].is_u64());
    }

    #[test]
    fn node_ports_asked_for_are_claimed_or_refused_as_kube_refuses_them() {
        let r = reservations();
        let used: HashSet<u32> = [30080].into_iter().collect();
        let mut taken =
            service(json!({"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}]}));
        let e = allocate(&mut taken, None, "web", &r, &used, 0).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                422,
                "Service \"web\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
            )
        );
        let mut outside = service(json!({"type": "NodePort", "ports": [
            {"name": "a", "port": 81, "protocol": "TCP"}, {"name": "b", "port": 80, "protocol": "TCP", "nodePort": 80}]}));
        let e = allocate(&mut outside, None, "web", &r, &used, 0).unwrap_err();
        assert_eq!(
            e.message,
            "Service \"web\" is invalid: spec.ports[1].nodePort: Invalid value: 80: provided port is not in the valid \
             range. The range of valid ports is 30000-32767"
        );
        // What the refused write was given is free again.
        let mut all = service(json!({"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP"}]}));
        let r = Reservations::new(30000, 1);
        let mut first = service(json!({"type": "NodePort", "ports": [
            {"name": "a", "port": 81, "protocol": "TCP"}, {"name": "b", "port": 80, "protocol": "TCP", "nodePort": 30000}]}));
        assert!(allocate(&mut first, None, "web", &r, &HashSet::new(), 0).is_err());
        assert_eq!(allocate(&mut all, None, "web", &r, &HashSet::new(), 0).unwrap(), [30000]);
    }

    #[test]
    fn updates_keep_node_ports_by_port_name() {
        let old = service(json!({"type": "NodePort", "ports": [
            {"name": "web", "port": 80, "protocol": "TCP", "nodePort": 30080},
            {"name": "metrics", "port": 9090, "protocol": "TCP", "nodePort": 30090}]}));
        let mut new = service(json!({"type": "NodePort", "ports": [
            {"name": "metrics", "port": 9091, "protocol": "TCP"}, {"name": "admin", "port": 8080, "protocol": "TCP"}]}));
        let old_spec = old["spec"].as_object().unwrap();
        keep(new["spec"].as_object_mut().unwrap(), old_spec);
        let r = reservations();
        let claimed = allocate(&mut new, Some(old_spec), "web", &r, &HashSet::new(), 0).unwrap();
        let given = node_ports(&new);
        assert_eq!(given[0], 30090, "kept by name");
        assert_eq!(claimed, [given[1].as_u64().unwrap() as u32], "only the new port is reserved");
        // Nothing new is wanted from an update that keeps the node ports it had.
        assert!(!wants(old_spec, Some(old_spec)));
        assert!(wants(new["spec"].as_object().unwrap(), None));
    }
}
