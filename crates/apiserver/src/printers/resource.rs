//! The printers of the resource.k8s.io kinds: DeviceClasses, ResourceClaims,
//! ResourceClaimTemplates and ResourceSlices.
//!
//! Invariants: as kube-apiserver v1.35's printers (see [`super`]); a claim's state names what
//! has happened to it (`pending`, `allocated`, `reserved`, `deleted`), comma-separated.

use serde_json::{Value, json};

use super::{AGE, Col, Doc, NAME, Printer, age, name, text};
use crate::registry::ResourceInfo;

/// The printer of one of these kinds.
pub(super) fn printer(info: &ResourceInfo) -> Option<Printer> {
    if info.group != crate::dra_validation::GROUP {
        return None;
    }
    let (columns, cells): (&'static [Col], super::Cells) = match info.plural.as_str() {
        "deviceclasses" | "resourceclaimtemplates" => (&NAME_AND_AGE, name_and_age),
        "resourceclaims" => (&CLAIM, claim),
        "resourceslices" => (&SLICE, slice),
        _ => return None,
    };
    Some(Printer { columns, cells })
}

const NAME_AND_AGE: [Col; 2] = [NAME, AGE];

fn name_and_age(v: &Value) -> Vec<Value> {
    vec![json!(name(v)), json!(age(v))]
}

const CLAIM: [Col; 3] = [
    NAME,
    Col("State", "string", "", 0, Doc::Text("A summary of the current state (allocated, pending, reserved, etc.).")),
    AGE,
];

fn claim(v: &Value) -> Vec<Value> {
    let mut state = Vec::new();
    let deleted = v.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    if deleted {
        state.push("deleted");
    }
    if v.pointer("/status/allocation").is_none_or(Value::is_null) {
        if !deleted {
            state.push("pending");
        }
    } else {
        state.push("allocated");
        if v.pointer("/status/reservedFor").and_then(Value::as_array).is_some_and(|r| !r.is_empty()) {
            state.push("reserved");
        }
    }
    vec![json!(name(v)), json!(state.join(",")), json!(age(v))]
}

const SLICE_SPEC: &str = "io.k8s.api.resource.v1.ResourceSliceSpec";

const SLICE: [Col; 5] = [
    NAME,
    Col("Node", "string", "", 0, Doc::Field(SLICE_SPEC, "nodeName")),
    Col("Driver", "string", "", 0, Doc::Field(SLICE_SPEC, "driver")),
    Col("Pool", "string", "", 0, Doc::Field("io.k8s.api.resource.v1.ResourcePool", "name")),
    AGE,
];

fn slice(v: &Value) -> Vec<Value> {
    vec![
        json!(name(v)),
        json!(text(v, "/spec/nodeName")),
        json!(text(v, "/spec/driver")),
        json!(text(v, "/spec/pool/name")),
        json!(age(v)),
    ]
}
