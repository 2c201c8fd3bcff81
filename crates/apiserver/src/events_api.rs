//! events.k8s.io/v1 Events, which kube-apiserver serves from the same storage as core/v1
//! Events: an object is stored in its core/v1 form whichever API wrote it, and each API shows it
//! in its own (kube's conversion: `involvedObject` is `regarding`, `message` is `note`,
//! `source`, `firstTimestamp`, `lastTimestamp` and `count` are `deprecatedSource`,
//! `deprecatedFirstTimestamp`, `deprecatedLastTimestamp` and `deprecatedCount`, and
//! `reportingComponent` is `reportingController`).
//!
//! Invariant: the two forms convert into each other without loss for the fields both have.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use crate::registry::ResourceInfo;

/// The events.k8s.io/v1 field and the core/v1 field it is stored as.
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

/// The group of the Events API.
pub(crate) const GROUP: &str = "events.k8s.io";

/// Whether `info` is events.k8s.io/v1 Events.
pub(crate) fn is_events_api(info: &ResourceInfo) -> bool {
    info.group == GROUP && info.plural == "events"
}

/// core/v1 Events, the form objects are stored in.
pub(crate) fn core() -> &'static ResourceInfo {
    static CORE: LazyLock<ResourceInfo> = LazyLock::new(|| {
        let mut r = ResourceInfo::new("", "v1", "events", "Event", true);
        r.list_items_have_kind = false;
        r
    });
    &CORE
}

fn rename(obj: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = obj.remove(from) {
        obj.insert(to.into(), v);
    }
}

/// An events.k8s.io/v1 Event in its core/v1 form.
pub(crate) fn to_core(obj: &Map<String, Value>) -> Map<String, Value> {
    let mut out = obj.clone();
    for (events, core) in RENAMED {
        rename(&mut out, events, core);
    }
    out.insert("apiVersion".into(), "v1".into());
    out.insert("kind".into(), "Event".into());
    out
}

/// A core/v1 Event in its events.k8s.io/v1 form, as Go writes that type: the reporting fields
/// core/v1 always writes are left out when empty, the times and source it holds by value are
/// there.
pub(crate) fn from_core(mut obj: Map<String, Value>) -> Map<String, Value> {
    for (events, core) in RENAMED {
        rename(&mut obj, core, events);
    }
    for omitted in ["reportingController", "reportingInstance"] {
        if obj.get(omitted).is_some_and(|v| v.as_str() == Some("")) {
            obj.remove(omitted);
        }
    }
    crate::go_form::normalize(&mut obj, "io.k8s.api.events.v1.Event");
    obj.insert("apiVersion".into(), format!("{GROUP}/v1").into());
    obj.insert("kind".into(), "Event".into());
    obj
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_two_forms_convert_into_each_other() {
        let events = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Pod", "name": "p"}, "note": "pulled", "reason": "Pulled", "type": "Normal",
            "reportingController": "kubelet", "reportingInstance": "node-1", "action": "Pull",
            "eventTime": "2026-01-01T00:00:00.000000Z", "deprecatedCount": 2});
        let core = to_core(events.as_object().unwrap());
        assert_eq!(
            Value::Object(core.clone()),
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
                "involvedObject": {"kind": "Pod", "name": "p"}, "message": "pulled", "reason": "Pulled", "type": "Normal",
                "reportingComponent": "kubelet", "reportingInstance": "node-1", "action": "Pull",
                "eventTime": "2026-01-01T00:00:00.000000Z", "count": 2})
        );
        let mut shown = events.clone();
        let zeros = [
            ("deprecatedSource", json!({})),
            ("deprecatedFirstTimestamp", Value::Null),
            ("deprecatedLastTimestamp", Value::Null),
        ];
        for (field, zero) in zeros {
            shown[field] = zero;
        }
        assert_eq!(Value::Object(from_core(core)), shown);
        // An Event core/v1 wrote, as events.k8s.io shows it.
        let core = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod"}, "source": {},
            "firstTimestamp": null, "lastTimestamp": null, "eventTime": null, "reportingComponent": "",
            "reportingInstance": ""});
        assert_eq!(
            Value::Object(from_core(core.as_object().unwrap().clone())),
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
                "regarding": {"kind": "Pod"}, "deprecatedSource": {}, "deprecatedFirstTimestamp": null,
                "deprecatedLastTimestamp": null, "eventTime": null})
        );
    }
}
