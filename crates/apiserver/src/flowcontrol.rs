//! The flowcontrol.apiserver.k8s.io/v1 kinds of API priority and fairness as kube-apiserver v1.35
//! stores them: FlowSchemas and PriorityLevelConfigurations, their v1 defaults, and their specs
//! written as kube prints its internal types in a field error.
//!
//! Invariants: defaults are v1's `SetDefaults_*`: a FlowSchema's `matchingPrecedence` 0 (or
//! missing) is 1000; a limited priority level's `nominalConcurrencyShares` is 30 and its
//! `lendablePercent` 0 when missing, its queuing's `queues`, `handSize` and `queueLengthLimit`
//! 64, 8 and 50 when 0 (only when `queuing` is there); an exempt block's two numbers are 0 when
//! missing (only when `exempt` is there). Nothing else is filled in. (That both kinds track
//! their generation, keep their status on a write of the main resource, and their metadata and
//! spec on a `status` write is [`crate::strategy`]'s.)

use serde_json::{Map, Value, json};

use crate::registry::ResourceInfo;
use crate::structural::{
    go_int_member as int, go_json, go_member as field, go_pointer as pointer, go_string_member as string, go_struct,
    go_structs as structs,
};

/// The API group of these kinds.
pub(crate) const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// The plural of FlowSchemas.
pub(crate) const FLOW_SCHEMAS: &str = "flowschemas";
/// The plural of PriorityLevelConfigurations.
pub(crate) const PRIORITY_LEVELS: &str = "prioritylevelconfigurations";

/// Whether `info` is one of the two kinds.
pub(crate) fn judges(info: &ResourceInfo) -> bool {
    info.group == GROUP && info.custom.is_none() && matches!(info.plural.as_str(), FLOW_SCHEMAS | PRIORITY_LEVELS)
}

/// Fills in v1's defaults of an object of one of the two kinds ([`judges`]).
pub(crate) fn default(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        if info.plural == FLOW_SCHEMAS {
            obj.insert("spec".into(), json!({"matchingPrecedence": 1000}));
        }
        return;
    };
    if info.plural == FLOW_SCHEMAS {
        default_flow_schema(spec);
    } else {
        default_priority_level(spec);
    }
}

/// A FlowSchema spec's defaults.
pub(crate) fn default_flow_schema(spec: &mut Map<String, Value>) {
    if spec.get("matchingPrecedence").and_then(Value::as_i64).unwrap_or(0) == 0 {
        spec.insert("matchingPrecedence".into(), json!(1000));
    }
}

/// A PriorityLevelConfiguration spec's defaults.
pub(crate) fn default_priority_level(spec: &mut Map<String, Value>) {
    if let Some(limited) = spec.get_mut("limited").and_then(Value::as_object_mut) {
        absent_to(limited, "nominalConcurrencyShares", 30);
        absent_to(limited, "lendablePercent", 0);
        let queuing = limited
            .get_mut("limitResponse")
            .and_then(Value::as_object_mut)
            .and_then(|r| r.get_mut("queuing"))
            .and_then(Value::as_object_mut);
        if let Some(queuing) = queuing {
            for (key, value) in [("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)] {
                if queuing.get(key).and_then(Value::as_i64).unwrap_or(0) == 0 {
                    queuing.insert(key.into(), json!(value));
                }
            }
        }
    }
    if let Some(exempt) = spec.get_mut("exempt").and_then(Value::as_object_mut) {
        absent_to(exempt, "nominalConcurrencyShares", 0);
        absent_to(exempt, "lendablePercent", 0);
    }
}

fn absent_to(m: &mut Map<String, Value>, key: &str, value: i64) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.into(), json!(value));
    }
}

/// The members the internal types hold by pointer: present, even empty, they differ from absent.
const POINTERS: [&str; 7] = ["distinguisherMethod", "user", "group", "serviceAccount", "limited", "exempt", "queuing"];

/// Whether two specs are the same to kube's `Semantic.DeepEqual` of the internal types: a
/// missing member, `null`, `false`, `""`, an empty list and an empty struct held by value are
/// Go's zero values; an empty struct held by pointer is not nil.
pub(crate) fn same_spec(a: &Value, b: &Value) -> bool {
    zeroless(a, false) == zeroless(b, false)
}

fn zeroless(v: &Value, pointer: bool) -> Option<Value> {
    match v {
        Value::Null | Value::Bool(false) => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) => {
            let kept: Vec<Value> = items.iter().map(|i| zeroless(i, false).unwrap_or(Value::Null)).collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(m) => {
            let kept: Map<String, Value> =
                m.iter().filter_map(|(k, v)| Some((k.clone(), zeroless(v, POINTERS.contains(&k.as_str()))?))).collect();
            (pointer || !kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other.clone()),
    }
}

/// The string member `key` of `v` (empty when absent).
pub(crate) fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A string as Go's `json.Marshal` writes it: how kube's field errors print a string of a named
/// Go type (`SubjectKind`, `PriorityLevelEnablement`…), and any string inside a struct.
pub(crate) fn go_string(s: &str) -> String {
    go_json(&json!(s))
}

/// A FlowSchema spec as kube prints its internal `FlowSchemaSpec`.
pub(crate) fn flow_schema_spec_json(spec: &Value) -> String {
    let named = |v: &Value| go_struct(&[("Name", string(v, "name"))]);
    go_struct(&[
        ("PriorityLevelConfiguration", named(spec.get("priorityLevelConfiguration").unwrap_or(&Value::Null))),
        ("MatchingPrecedence", int(spec, "matchingPrecedence")),
        (
            "DistinguisherMethod",
            pointer(spec.get("distinguisherMethod"), |d| go_struct(&[("Type", string(d, "type"))])),
        ),
        (
            "Rules",
            structs(spec.get("rules"), |r| {
                go_struct(&[
                    (
                        "Subjects",
                        structs(r.get("subjects"), |s| {
                            go_struct(&[
                                ("Kind", string(s, "kind")),
                                ("User", pointer(s.get("user"), named)),
                                ("Group", pointer(s.get("group"), named)),
                                (
                                    "ServiceAccount",
                                    pointer(s.get("serviceAccount"), |a| {
                                        go_struct(&[("Namespace", string(a, "namespace")), ("Name", string(a, "name"))])
                                    }),
                                ),
                            ])
                        }),
                    ),
                    (
                        "ResourceRules",
                        structs(r.get("resourceRules"), |x| {
                            go_struct(&[
                                ("Verbs", field(x, "verbs")),
                                ("APIGroups", field(x, "apiGroups")),
                                ("Resources", field(x, "resources")),
                                (
                                    "ClusterScope",
                                    x.get("clusterScope").and_then(Value::as_bool).unwrap_or(false).to_string(),
                                ),
                                ("Namespaces", field(x, "namespaces")),
                            ])
                        }),
                    ),
                    (
                        "NonResourceRules",
                        structs(r.get("nonResourceRules"), |x| {
                            go_struct(&[("Verbs", field(x, "verbs")), ("NonResourceURLs", field(x, "nonResourceURLs"))])
                        }),
                    ),
                ])
            }),
        ),
    ])
}

/// A PriorityLevelConfiguration spec as kube prints its internal
/// `PriorityLevelConfigurationSpec`.
pub(crate) fn priority_level_spec_json(spec: &Value) -> String {
    go_struct(&[
        ("Type", string(spec, "type")),
        (
            "Limited",
            pointer(spec.get("limited"), |l| {
                let response = l.get("limitResponse").unwrap_or(&Value::Null);
                go_struct(&[
                    ("NominalConcurrencyShares", field(l, "nominalConcurrencyShares")),
                    (
                        "LimitResponse",
                        go_struct(&[
                            ("Type", string(response, "type")),
                            (
                                "Queuing",
                                pointer(response.get("queuing"), |q| {
                                    go_struct(&[
                                        ("Queues", int(q, "queues")),
                                        ("HandSize", int(q, "handSize")),
                                        ("QueueLengthLimit", int(q, "queueLengthLimit")),
                                    ])
                                }),
                            ),
                        ]),
                    ),
                    ("LendablePercent", field(l, "lendablePercent")),
                    ("BorrowingLimitPercent", field(l, "borrowingLimitPercent")),
                ])
            }),
        ),
        (
            "Exempt",
            pointer(spec.get("exempt"), |e| {
                go_struct(&[
                    ("NominalConcurrencyShares", field(e, "nominalConcurrencyShares")),
                    ("LendablePercent", field(e, "lendablePercent")),
                ])
            }),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limited_levels_get_v1_defaults_and_only_present_blocks_are_filled() {
        let mut spec =
            json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 0}}}});
        default_priority_level(spec.as_object_mut().unwrap());
        assert_eq!(
            spec["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
                   "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}})
        );
        let mut reject =
            json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}});
        default_priority_level(reject.as_object_mut().unwrap());
        assert_eq!(reject["limited"]["nominalConcurrencyShares"], 0, "an explicit zero stays");
        assert!(reject["limited"]["limitResponse"].get("queuing").is_none());
        let mut exempt = json!({"type": "Exempt"});
        default_priority_level(exempt.as_object_mut().unwrap());
        assert!(exempt.get("exempt").is_none(), "no exempt block is made");
    }

    #[test]
    fn specs_compare_with_go_zero_values() {
        assert!(same_spec(&json!({"a": false, "b": [], "c": ""}), &json!({})));
        assert!(!same_spec(&json!({"n": 0}), &json!({})), "a pointer to zero is not nil");
    }
}
