//! The API priority and fairness configuration kube-apiserver v1.35 keeps in place: the mandatory
//! FlowSchemas and PriorityLevelConfigurations (`exempt` and `catch-all`) and the suggested ones
//! (for nodes, leader election, controllers, service accounts and everyone else), and the pass
//! that keeps them there (kube's `priority-and-fairness-config-producer`).
//!
//! Invariants, as kube's ensurer holds them:
//! - every object is annotated `apf.kubernetes.io/autoupdate-spec: "true"` when written, has one
//!   rule, and equals its v1 defaults (so a stored one compares equal to it);
//! - a pass writes, stopping at the first failure (but a conflict, which the next pass sees):
//!   the suggested priority levels, the suggested FlowSchemas, the mandatory priority levels,
//!   the mandatory FlowSchemas; then deletes the FlowSchemas and then priority levels that are
//!   not among these but say `autoupdate-spec: "true"`. Within one list, the objects to update
//!   are written in the list's order, then the missing ones are created together (kube writes
//!   each in turn; a created batch commits together on the durable storages);
//! - a missing object is created (a deleted one comes back); a mandatory one is always set back
//!   to its spec (but for the `exempt` level's two numbers) and annotated `"true"`; a suggested
//!   one is set back only when its annotation reads true, or it has none and is at generation
//!   1; a suggested one without a readable annotation is annotated with that decision. Updates
//!   replace the spec whole, by the field manager `api-priority-and-fairness-config-producer-v1`.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::delete_options::DeleteOpts;
use crate::flowcontrol::{FLOW_SCHEMAS, GROUP, PRIORITY_LEVELS, same_spec};
use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::{Store, WriteOpts};

/// The annotation that says whether the server keeps an object's spec as it installs it.
pub(crate) const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";
/// How often the server brings its configuration back after the pass at its start.
pub(crate) const PERIOD: std::time::Duration = std::time::Duration::from_secs(60);
/// The field manager of the server's writes of its configuration.
pub(crate) const MANAGER: &str = "api-priority-and-fairness-config-producer-v1";

fn object(kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": kind,
           "metadata": {"name": name, "annotations": {AUTOUPDATE: "true"}}, "spec": spec})
}

fn limited(name: &str, shares: i64, lendable: i64, queuing: Option<(i64, i64)>) -> Value {
    let response = match queuing {
        Some((queues, hand)) => {
            json!({"type": "Queue", "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": 50}})
        }
        None => json!({"type": "Reject"}),
    };
    let spec = json!({"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
        "lendablePercent": lendable, "limitResponse": response}});
    object("PriorityLevelConfiguration", name, spec)
}

fn exempt_level() -> Value {
    let spec = json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}});
    object("PriorityLevelConfiguration", "exempt", spec)
}

fn groups(names: &[&str]) -> Vec<Value> {
    names.iter().map(|n| json!({"kind": "Group", "group": {"name": n}})).collect()
}

fn users(names: &[&str]) -> Vec<Value> {
    names.iter().map(|n| json!({"kind": "User", "user": {"name": n}})).collect()
}

fn kube_system_accounts() -> Vec<Value> {
    vec![json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}})]
}

/// Everything, resources and non-resource URLs.
fn everything() -> (Vec<Value>, Vec<Value>) {
    (
        vec![
            json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}),
        ],
        vec![json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
    )
}

fn schema(
    name: &str,
    level: &str,
    precedence: i64,
    distinguisher: Option<&str>,
    subjects: Vec<Value>,
    rules: (Vec<Value>, Vec<Value>),
) -> Value {
    let mut rule = json!({"subjects": subjects});
    if !rules.0.is_empty() {
        rule["resourceRules"] = rules.0.into();
    }
    if !rules.1.is_empty() {
        rule["nonResourceRules"] = rules.1.into();
    }
    let mut spec = json!({"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence});
    if let Some(d) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": d});
    }
    spec["rules"] = json!([rule]);
    object("FlowSchema", name, spec)
}

const EVERYONE: [&str; 2] = ["system:unauthenticated", "system:authenticated"];

/// The mandatory priority levels, in kube's order.
pub(crate) fn mandatory_priority_levels() -> Vec<Value> {
    vec![limited("catch-all", 5, 0, None), exempt_level()]
}

/// The mandatory FlowSchemas, in kube's order.
pub(crate) fn mandatory_flow_schemas() -> Vec<Value> {
    vec![
        schema("exempt", "exempt", 1, None, groups(&["system:masters"]), everything()),
        schema("catch-all", "catch-all", 10000, Some("ByUser"), groups(&EVERYONE), everything()),
    ]
}

/// The suggested priority levels, in kube's order.
pub(crate) fn suggested_priority_levels() -> Vec<Value> {
    vec![
        limited("system", 30, 33, Some((64, 6))),
        limited("node-high", 40, 25, Some((64, 6))),
        limited("leader-election", 10, 0, Some((16, 4))),
        limited("workload-high", 40, 50, Some((128, 6))),
        limited("workload-low", 100, 90, Some((128, 6))),
        limited("global-default", 20, 50, Some((128, 6))),
    ]
}

/// The suggested FlowSchemas, in kube's order.
pub(crate) fn suggested_flow_schemas() -> Vec<Value> {
    let leases = |verbs: Value| json!({"verbs": verbs, "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "namespaces": ["*"]});
    let nodes = json!({"verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"],
        "clusterScope": true, "namespaces": ["*"]});
    let mut election = users(&["system:kube-controller-manager", "system:kube-scheduler"]);
    election.extend(kube_system_accounts());
    let probes = json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]});
    vec![
        schema("system-nodes", "system", 500, Some("ByUser"), groups(&["system:nodes"]), everything()),
        schema(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            groups(&["system:nodes"]),
            (vec![nodes, leases(json!(["*"]))], Vec::new()),
        ),
        schema("probes", "exempt", 2, None, groups(&EVERYONE), (Vec::new(), vec![probes])),
        schema(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            election,
            (vec![leases(json!(["get", "create", "update"]))], Vec::new()),
        ),
        schema(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            users(&["system:kube-controller-manager"]),
            everything(),
        ),
        schema(
            "kube-scheduler",
            "workload-high",
            800,
            Some("ByNamespace"),
            users(&["system:kube-scheduler"]),
            everything(),
        ),
        schema(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            kube_system_accounts(),
            everything(),
        ),
        schema(
            "service-accounts",
            "workload-low",
            9000,
            Some("ByUser"),
            groups(&["system:serviceaccounts"]),
            everything(),
        ),
        schema("global-default", "global-default", 9900, Some("ByUser"), groups(&EVERYONE), everything()),
    ]
}

fn named(list: Vec<Value>, name: &str) -> Option<Value> {
    list.into_iter().find(|o| o["metadata"]["name"] == name)
}

/// The mandatory FlowSchema `name`, if it is one.
pub(crate) fn mandatory_flow_schema(name: &str) -> Option<Value> {
    named(mandatory_flow_schemas(), name)
}

/// The mandatory priority level `name`, if it is one.
pub(crate) fn mandatory_priority_level(name: &str) -> Option<Value> {
    named(mandatory_priority_levels(), name)
}

fn autoupdate(obj: &Value) -> Option<bool> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(AUTOUPDATE))
        .and_then(Value::as_str)
        .and_then(crate::go_strconv::parse_bool)
}

/// What a pass writes over a stored `current` for the configuration object `wanted`: None when
/// it is as it should be.
fn revised(current: &Value, wanted: &Value, mandatory: bool, plural: &str) -> Option<Value> {
    let stated = autoupdate(current);
    let keep_spec = match mandatory {
        true => true,
        false => stated.unwrap_or(current.pointer("/metadata/generation").and_then(Value::as_i64) == Some(1)),
    };
    let annotate = stated != Some(keep_spec);
    let mut spec = wanted["spec"].clone();
    if plural == PRIORITY_LEVELS && wanted["metadata"]["name"] == "exempt" {
        // The exempt level's two numbers are the user's.
        match current.pointer("/spec/exempt").filter(|e| e.is_object()) {
            Some(exempt) => {
                for key in ["nominalConcurrencyShares", "lendablePercent"] {
                    spec["exempt"][key] = exempt.get(key).cloned().unwrap_or(Value::Null);
                }
            }
            None => spec = wanted["spec"].clone(),
        }
    }
    let change_spec = keep_spec && !same_spec(current.get("spec").unwrap_or(&Value::Null), &spec);
    if !change_spec && !annotate {
        return None;
    }
    let mut out = current.clone();
    if change_spec {
        out["spec"] = spec;
    }
    if annotate {
        let meta = out["metadata"].as_object_mut()?;
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        annotations[AUTOUPDATE] = json!(keep_spec.to_string());
    }
    Some(out)
}

fn info(store: &Store, plural: &str) -> Option<Arc<ResourceInfo>> {
    store.registry().find(GROUP, "v1", plural).cloned()
}

/// Brings one kind's configuration objects `wanted` into the storage.
async fn ensure(store: &Store, info: &ResourceInfo, wanted: Vec<Value>, mandatory: bool) -> Result<(), ApiError> {
    let (_, stored) = store.cache().snapshot(info, None, &Selectors::default())?;
    let mut missing = Vec::new();
    for want in wanted {
        let name = want["metadata"]["name"].as_str().unwrap_or("");
        let Some(current) = stored.iter().find(|o| o.name == name) else {
            missing.push(want);
            continue;
        };
        let Some(body) = revised(&current.value(), &want, mandatory, &info.plural) else { continue };
        let opts = WriteOpts { field_manager: MANAGER.into(), ..WriteOpts::main(false) };
        match store.update(info, None, Some(name), body, opts).await {
            Ok(_) => {}
            // Changed meanwhile: the next pass sees it.
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    if !missing.is_empty() {
        match store.create_many(info, None, missing, false, MANAGER).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Deletes the objects of a kind that are not configuration objects but say the server keeps them.
async fn remove_unwanted(store: &Store, info: &ResourceInfo, names: &[String]) -> Result<(), ApiError> {
    let (_, stored) = store.cache().snapshot(info, None, &Selectors::default())?;
    for o in stored.iter().filter(|o| !names.contains(&o.name)) {
        if autoupdate(&o.value()) != Some(true) {
            continue;
        }
        match store.delete(info, "", &o.name, &DeleteOpts::default()).await {
            Ok(_) => {}
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One pass over the configuration (see the module documentation); Ok without doing anything
/// when the server does not serve the two kinds.
pub(crate) async fn ensure_all(store: &Store) -> Result<(), ApiError> {
    let (Some(levels), Some(schemas)) = (info(store, PRIORITY_LEVELS), info(store, FLOW_SCHEMAS)) else {
        return Ok(());
    };
    ensure(store, &levels, suggested_priority_levels(), false).await?;
    ensure(store, &schemas, suggested_flow_schemas(), false).await?;
    ensure(store, &levels, mandatory_priority_levels(), true).await?;
    ensure(store, &schemas, mandatory_flow_schemas(), true).await?;
    let names = |a: Vec<Value>, b: Vec<Value>| -> Vec<String> {
        a.iter().chain(&b).filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string)).collect()
    };
    remove_unwanted(store, &schemas, &names(mandatory_flow_schemas(), suggested_flow_schemas())).await?;
    remove_unwanted(store, &levels, &names(mandatory_priority_levels(), suggested_priority_levels())).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flowcontrol::{default_flow_schema, default_priority_level};

    #[test]
    fn every_object_is_annotated_and_holds_its_defaults() {
        let schemas = [mandatory_flow_schemas(), suggested_flow_schemas()].concat();
        let levels = [mandatory_priority_levels(), suggested_priority_levels()].concat();
        assert_eq!((schemas.len(), levels.len()), (11, 8));
        for (list, is_schema) in [(schemas, true), (levels, false)] {
            for o in list {
                assert_eq!(o["metadata"]["annotations"][AUTOUPDATE], "true");
                let mut spec = o["spec"].clone();
                match is_schema {
                    true => default_flow_schema(spec.as_object_mut().unwrap()),
                    false => default_priority_level(spec.as_object_mut().unwrap()),
                }
                assert_eq!(spec, o["spec"], "{}", o["metadata"]["name"]);
            }
        }
    }

    #[test]
    fn suggested_objects_are_kept_only_while_they_say_so() {
        let wanted = named(suggested_priority_levels(), "system").unwrap();
        let mut edited = wanted.clone();
        edited["spec"]["limited"]["nominalConcurrencyShares"] = json!(7);
        edited["metadata"]["generation"] = json!(2);
        // Annotated true: set back.
        assert_eq!(revised(&edited, &wanted, false, PRIORITY_LEVELS).unwrap()["spec"], wanted["spec"]);
        // No annotation and edited since: annotated false, left alone.
        edited["metadata"]["annotations"] = json!({});
        let out = revised(&edited, &wanted, false, PRIORITY_LEVELS).unwrap();
        assert_eq!(out["metadata"]["annotations"][AUTOUPDATE], "false");
        assert_eq!(out["spec"]["limited"]["nominalConcurrencyShares"], 7);
        // Mandatory: always set back and annotated true.
        let catch_all = mandatory_priority_level("catch-all").unwrap();
        let mut off = catch_all.clone();
        off["metadata"]["annotations"][AUTOUPDATE] = json!("false");
        off["spec"]["limited"]["nominalConcurrencyShares"] = json!(9);
        let out = revised(&off, &catch_all, true, PRIORITY_LEVELS).unwrap();
        assert_eq!(
            (out["spec"].clone(), out["metadata"]["annotations"][AUTOUPDATE].clone()),
            (catch_all["spec"].clone(), json!("true"))
        );
        // The exempt level keeps its numbers.
        let exempt = mandatory_priority_level("exempt").unwrap();
        let mut tuned = exempt.clone();
        tuned["spec"]["exempt"]["nominalConcurrencyShares"] = json!(3);
        assert!(revised(&tuned, &exempt, true, PRIORITY_LEVELS).is_none());
    }
}
