//! Graceful deletion, as kube-apiserver's pod strategy gives it: a pod bound to a node is not
//! removed by a DELETE but marked terminating (`deletionTimestamp` in the future,
//! `deletionGracePeriodSeconds` the period), for its kubelet to stop it and delete it again with
//! a grace period of 0. The server runs no kubelet, so such a pod stays terminating until a
//! DELETE with `gracePeriodSeconds=0` (as on a cluster whose node is gone, or under envtest).
//!
//! Invariants (kube's `BeforeDelete` and the pod strategy's `CheckGracefulDelete`):
//! - only pods are deleted gracefully; every other resource is removed (or finalized) at once;
//! - the period is the request's, else the pod's `spec.terminationGracePeriodSeconds`, else 0;
//!   it is 0 for a pod not bound to a node or already `Succeeded`/`Failed`, and a negative period
//!   counts as 1 second;
//! - a pod marked with a period of 0 is still written once (its watchers see it terminating)
//!   and then removed, unless finalizers keep it;
//! - a pod already terminating with a period only changes when a request asks for a shorter
//!   one (the deadline moves with it); otherwise the DELETE changes nothing.

use serde_json::{Map, Value};

use crate::registry::ResourceInfo;

/// What a DELETE does to an object, before finalizers are considered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grace {
    /// Not deleted gracefully: removed now, or marked with a period of 0 if finalizers keep it.
    Immediate,
    /// Already terminating and not shortened: the DELETE changes nothing.
    Pending,
    /// Marked terminating with this period (written into the object); at 0 it goes at once
    /// unless finalizers keep it.
    Marked(i64),
}

/// Whether objects of the resource are deleted gracefully (pods).
pub(crate) fn is_graceful(info: &ResourceInfo) -> bool {
    info.is_core("pods")
}

/// Decides the deletion of `object` with the requested period and marks the object when it is
/// deleted gracefully.
pub(crate) fn before_delete(info: &ResourceInfo, object: &mut Map<String, Value>, requested: Option<i64>) -> Grace {
    if !is_graceful(info) {
        return Grace::Immediate;
    }
    let requested = requested.map(|g| if g < 0 { 1 } else { g });
    let spec = object.get("spec");
    let bound = spec.and_then(|s| s.get("nodeName")).and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let own = spec.and_then(|s| s.get("terminationGracePeriodSeconds")).and_then(Value::as_i64);
    let finished = matches!(
        object.get("status").and_then(|s| s.get("phase")).and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    let meta = object.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else { return Grace::Immediate };
    if let Some(since) = meta.get("deletionTimestamp").and_then(Value::as_str).map(str::to_string) {
        // A negative period counts as 1 second; a period of 0 is over.
        let current = meta.get("deletionGracePeriodSeconds").and_then(Value::as_i64).filter(|c| *c != 0);
        let Some(current) = current.map(|c| c.max(1)) else {
            return Grace::Immediate;
        };
        return match requested {
            Some(mut p) if p < current => {
                if let Ok(t) = since.parse::<jiff::Timestamp>()
                    && let Ok(mut moved) = t.checked_add(jiff::SignedDuration::from_secs(p - current))
                {
                    // Never into the past: a deadline already over is now, and a graceful
                    // request keeps the shortest period (1 s) for its kubelet to finish.
                    let now = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second()).unwrap_or(moved);
                    if moved < now {
                        moved = now;
                        if p != 0 {
                            p = 1;
                        }
                    }
                    meta.insert("deletionTimestamp".into(), moved.to_string().into());
                }
                meta.insert("deletionGracePeriodSeconds".into(), p.into());
                Grace::Marked(p)
            }
            _ => Grace::Pending,
        };
    }
    let mut period = requested.or(own).unwrap_or(0);
    if !bound || finished {
        period = 0;
    }
    if period < 0 {
        period = 1;
    }
    let deadline = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(period))
        .and_then(|t| jiff::Timestamp::from_second(t.as_second()))
        .map(|t| t.to_string())
        .unwrap_or_else(|_| crate::object::now_rfc3339());
    meta.insert("deletionTimestamp".into(), deadline.into());
    meta.insert("deletionGracePeriodSeconds".into(), period.into());
    if let Some(g) = meta.get("generation").and_then(Value::as_i64).filter(|g| *g > 0) {
        meta.insert("generation".into(), (g + 1).into());
    }
    Grace::Marked(period)
}

/// Whether removing the last finalizer of `old` (being deleted) removes it: only once its grace
/// period is over (none, or 0), as kube's `ShouldDeleteDuringUpdate`.
pub(crate) fn period_over(old: &crate::object::StoredObject) -> bool {
    old.kept
        .iter()
        .find(|(k, _)| *k == "deletionGracePeriodSeconds")
        .and_then(|(_, v)| v.as_i64())
        .is_none_or(|p| p == 0)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pods() -> ResourceInfo {
        ResourceInfo::new("", "v1", "pods", "Pod", true)
    }

    fn pod(node: &str, own: Option<i64>, phase: &str) -> Map<String, Value> {
        let mut spec = json!({"containers": [{"name": "c", "image": "i"}]});
        if !node.is_empty() {
            spec["nodeName"] = node.into();
        }
        if let Some(g) = own {
            spec["terminationGracePeriodSeconds"] = g.into();
        }
        let Value::Object(m) = json!({"metadata": {"name": "p", "generation": 1}, "spec": spec,
            "status": {"phase": phase}})
        else {
            unreachable!()
        };
        m
    }

    fn meta(m: &Map<String, Value>) -> &Value {
        &m["metadata"]
    }

    #[test]
    fn a_bound_pod_takes_the_requested_period_then_its_own() {
        let mut p = pod("n1", Some(30), "Running");
        assert_eq!(before_delete(&pods(), &mut p, None), Grace::Marked(30));
        assert_eq!(meta(&p)["deletionGracePeriodSeconds"], 30);
        assert_eq!(meta(&p)["generation"], 2);
        let deadline: jiff::Timestamp = meta(&p)["deletionTimestamp"].as_str().unwrap().parse().unwrap();
        let ahead = deadline.as_second() - jiff::Timestamp::now().as_second();
        assert!((28..=30).contains(&ahead), "the deadline is the period ahead: {ahead}");
        let mut p = pod("n1", Some(30), "Running");
        assert_eq!(before_delete(&pods(), &mut p, Some(5)), Grace::Marked(5));
        let mut p = pod("n1", None, "Running");
        assert_eq!(before_delete(&pods(), &mut p, Some(-3)), Grace::Marked(1), "negative periods count as 1");
    }

    #[test]
    fn unbound_or_finished_pods_and_other_resources_go_at_once() {
        let mut p = pod("", Some(30), "Pending");
        assert_eq!(before_delete(&pods(), &mut p, Some(10)), Grace::Marked(0));
        assert_eq!(meta(&p)["deletionGracePeriodSeconds"], 0);
        let mut p = pod("n1", Some(30), "Succeeded");
        assert_eq!(before_delete(&pods(), &mut p, None), Grace::Marked(0));
        let mut p = pod("n1", Some(30), "Running");
        let configmaps = ResourceInfo::new("", "v1", "configmaps", "ConfigMap", true);
        assert_eq!(before_delete(&configmaps, &mut p, None), Grace::Immediate);
        assert!(meta(&p).get("deletionTimestamp").is_none());
    }

    #[test]
    fn a_terminating_pod_only_shortens_its_period() {
        let mut p = pod("n1", Some(30), "Running");
        before_delete(&pods(), &mut p, None);
        let first: jiff::Timestamp = meta(&p)["deletionTimestamp"].as_str().unwrap().parse().unwrap();
        assert_eq!(before_delete(&pods(), &mut p, None), Grace::Pending);
        assert_eq!(before_delete(&pods(), &mut p, Some(30)), Grace::Pending);
        assert_eq!(before_delete(&pods(), &mut p, Some(10)), Grace::Marked(10));
        let moved: jiff::Timestamp = meta(&p)["deletionTimestamp"].as_str().unwrap().parse().unwrap();
        assert_eq!(first.as_second() - moved.as_second(), 20, "the deadline moves with the period");
        assert_eq!(meta(&p)["generation"], 2, "generation moves once");
        assert_eq!(before_delete(&pods(), &mut p, Some(0)), Grace::Marked(0));
        assert_eq!(before_delete(&pods(), &mut p, Some(0)), Grace::Immediate, "a period of 0 is over");
    }

    #[test]
    fn a_shortened_deadline_never_moves_into_the_past() {
        let mut p = pod("n1", Some(30), "Running");
        let meta = p.get_mut("metadata").and_then(Value::as_object_mut).unwrap();
        // Marked 40 s ago with 30 s: the deadline was 10 s ago.
        let past = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second() - 10).unwrap();
        meta.insert("deletionTimestamp".into(), past.to_string().into());
        meta.insert("deletionGracePeriodSeconds".into(), 30.into());
        assert_eq!(before_delete(&pods(), &mut p, Some(5)), Grace::Marked(1), "graceful: 1 s left");
        let deadline: jiff::Timestamp = p["metadata"]["deletionTimestamp"].as_str().unwrap().parse().unwrap();
        assert!(deadline.as_second() >= jiff::Timestamp::now().as_second() - 1, "now, not in the past");
    }
}
