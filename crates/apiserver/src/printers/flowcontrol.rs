//! The printers of the flowcontrol.apiserver.k8s.io kinds: FlowSchemas and
//! PriorityLevelConfigurations.
//!
//! Invariants: as kube-apiserver v1.35's printers (see [`super`]); a FlowSchema's `MissingPL`
//! is its `Dangling` condition's status (`?` without one); a priority level's numbers are
//! `<none>` where it has no `limited` (or no `queuing`) block; FlowSchemas are listed by
//! matching precedence, then name ([`order`]).

use std::sync::Arc;

use serde_json::{Value, json};

use super::{AGE, Col, Doc, NAME, Printer, age, name, text};
use crate::flowcontrol::{FLOW_SCHEMAS, GROUP, PRIORITY_LEVELS};
use crate::object::StoredObject;
use crate::registry::ResourceInfo;

/// The printer of one of these kinds.
pub(super) fn printer(info: &ResourceInfo) -> Option<Printer> {
    if info.group != GROUP {
        return None;
    }
    let (columns, cells): (&'static [Col], super::Cells) = match info.plural.as_str() {
        FLOW_SCHEMAS => (&SCHEMA, schema),
        PRIORITY_LEVELS => (&LEVEL, level),
        _ => return None,
    };
    Some(Printer { columns, cells })
}

const SCHEMA_SPEC: &str = "io.k8s.api.flowcontrol.v1.FlowSchemaSpec";

const SCHEMA: [Col; 6] = [
    NAME,
    Col(
        "PriorityLevel",
        "string",
        "",
        0,
        Doc::Field("io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationReference", "name"),
    ),
    Col("MatchingPrecedence", "string", "", 0, Doc::Field(SCHEMA_SPEC, "matchingPrecedence")),
    Col("DistinguisherMethod", "string", "", 0, Doc::Field(SCHEMA_SPEC, "distinguisherMethod")),
    AGE,
    Col("MissingPL", "string", "", 0, Doc::Text("references a broken or non-existent PriorityLevelConfiguration")),
];

fn schema(v: &Value) -> Vec<Value> {
    let method = match v.pointer("/spec/distinguisherMethod").filter(|d| d.is_object()) {
        Some(d) => text(d, "/type").to_string(),
        None => "<none>".into(),
    };
    let conditions = v.pointer("/status/conditions").and_then(Value::as_array);
    let dangling = conditions.and_then(|c| c.iter().find(|c| c["type"] == "Dangling"));
    let missing = dangling.map_or("?", |c| c["status"].as_str().unwrap_or(""));
    vec![
        json!(name(v)),
        json!(text(v, "/spec/priorityLevelConfiguration/name")),
        json!(v.pointer("/spec/matchingPrecedence").and_then(Value::as_i64).unwrap_or(0)),
        json!(method),
        json!(age(v)),
        json!(missing),
    ]
}

const LEVEL_SPEC: &str = "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationSpec";
const QUEUING: &str = "io.k8s.api.flowcontrol.v1.QueuingConfiguration";

const LEVEL: [Col; 7] = [
    NAME,
    Col("Type", "string", "", 0, Doc::Field(LEVEL_SPEC, "type")),
    Col(
        "NominalConcurrencyShares",
        "string",
        "",
        0,
        Doc::Field("io.k8s.api.flowcontrol.v1.LimitedPriorityLevelConfiguration", "nominalConcurrencyShares"),
    ),
    Col("Queues", "string", "", 0, Doc::Field(QUEUING, "queues")),
    Col("HandSize", "string", "", 0, Doc::Field(QUEUING, "handSize")),
    Col("QueueLengthLimit", "string", "", 0, Doc::Field(QUEUING, "queueLengthLimit")),
    AGE,
];

fn level(v: &Value) -> Vec<Value> {
    let number = |at: Option<&Value>, key: &str| match at.filter(|x| x.is_object()) {
        Some(x) => json!(x.get(key).and_then(Value::as_i64).unwrap_or(0)),
        None => json!("<none>"),
    };
    let limited = v.pointer("/spec/limited");
    let queuing = limited.filter(|l| l.is_object()).and_then(|l| l.pointer("/limitResponse/queuing"));
    vec![
        json!(name(v)),
        json!(text(v, "/spec/type")),
        number(limited, "nominalConcurrencyShares"),
        number(queuing, "queues"),
        number(queuing, "handSize"),
        number(queuing, "queueLengthLimit"),
        json!(age(v)),
    ]
}

/// The order kube prints a list's objects in, as indexes into `items`: FlowSchemas by matching
/// precedence, then name; None for the kinds printed in the list's order.
pub(super) fn order(info: &ResourceInfo, items: &[Arc<StoredObject>]) -> Option<Vec<usize>> {
    if info.group != GROUP || info.plural != FLOW_SCHEMAS {
        return None;
    }
    let precedence =
        |o: &StoredObject| o.value().pointer("/spec/matchingPrecedence").and_then(Value::as_i64).unwrap_or(0);
    let mut keyed: Vec<(i64, &str, usize)> =
        items.iter().enumerate().map(|(i, o)| (precedence(o), o.name.as_str(), i)).collect();
    keyed.sort();
    Some(keyed.into_iter().map(|(_, _, i)| i).collect())
}
