//! `metadata.managedFields` as data: each manager's field set, API version and time, decoded
//! from and encoded to the entries kube-apiserver stores.
//!
//! Invariants: a manager is identified as kube-apiserver identifies it — by name, operation,
//! subresource and, for `Update`s only, API version (an applier keeps one entry whatever
//! version it applies with); decoding refuses what kube-apiserver refuses (an operation other
//! than `Apply`/`Update`, an empty API version, a `fieldsType` other than `FieldsV1`, an
//! unreadable `fieldsV1`); entries are encoded in kube-apiserver's order: `Apply` before
//! `Update`, then by time (none first), manager, API version and subresource; a manager whose
//! set is empty has no entry.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fields_v1::Without;
use super::set::FieldSet;

/// The operation that gave a manager its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update or patch.
    Update,
}

impl Operation {
    /// The name in `managedFields` (`Apply`, `Update`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// The identity of a manager (kube-apiserver's manager identifier).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ManagerKey {
    /// The manager's name (`fieldManager`, or the client's User-Agent prefix).
    pub manager: String,
    /// How it got its fields.
    pub operation: Operation,
    /// The API version, for `Update`s (empty for `Apply`).
    pub api_version: String,
    /// The subresource written (`status`, `scale`), or empty.
    pub subresource: String,
}

impl ManagerKey {
    /// The key of `manager` doing `operation` at `api_version` through `subresource`.
    pub fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Self {
        ManagerKey {
            manager: manager.to_string(),
            operation,
            api_version: if operation == Operation::Apply { String::new() } else { api_version.to_string() },
            subresource: subresource.to_string(),
        }
    }

    /// kube-apiserver's manager identifier: the entry's JSON without fields and time (the order
    /// conflicts and the ten-manager cap sort managers in).
    pub fn identifier(&self) -> String {
        let q = |s: &str| Value::from(s).to_string();
        let mut parts = Vec::new();
        if !self.manager.is_empty() {
            parts.push(format!("\"manager\":{}", q(&self.manager)));
        }
        parts.push(format!("\"operation\":{}", q(self.operation.as_str())));
        if !self.api_version.is_empty() {
            parts.push(format!("\"apiVersion\":{}", q(&self.api_version)));
        }
        if !self.subresource.is_empty() {
            parts.push(format!("\"subresource\":{}", q(&self.subresource)));
        }
        format!("{{{}}}", parts.join(","))
    }

    /// How conflicts name the manager: `"alpha"` for an applier, `"kubectl" with subresource
    /// "scale" using apps/v1` for an updater.
    pub fn describe(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }
}

/// What a manager owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The fields.
    pub set: FieldSet,
    /// The API version the set is in.
    pub api_version: String,
    /// When the manager last changed the object (RFC 3339, seconds), if recorded.
    pub time: Option<String>,
}

/// Every manager of an object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Managers(pub BTreeMap<ManagerKey, Entry>);

impl Managers {
    /// Reads `metadata.managedFields` (absent: no manager).
    pub fn decode(v: Option<&Value>) -> Result<Managers, String> {
        Self::decode_without(v, Without::none())
    }

    /// Reads `metadata.managedFields` with every manager's set read `without` the members of
    /// those sets (see [`FieldSet::from_fields_v1_without`]); a manager left without fields keeps
    /// its entry.
    pub fn decode_without(v: Option<&Value>, without: Without<'_>) -> Result<Managers, String> {
        let mut out = Managers::default();
        let entries = match v {
            None | Some(Value::Null) => return Ok(out),
            Some(Value::Array(a)) => a,
            Some(other) => return Err(format!("managedFields must be a list, got {other}")),
        };
        for (i, e) in entries.iter().enumerate() {
            let Value::Object(e) = e else { return Err(format!("managed fields entry {i} is not an object")) };
            let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
            let operation = match s("operation") {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                _ => return Err("operation must be `Apply` or `Update`".into()),
            };
            let api_version = s("apiVersion");
            if api_version.is_empty() {
                return Err("apiVersion must not be empty".into());
            }
            match s("fieldsType") {
                "FieldsV1" => {}
                "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
                other => return Err(format!("invalid fieldsType {other:?} in managed fields entry {i}")),
            }
            let set = match e.get("fieldsV1") {
                None | Some(Value::Null) => FieldSet::new(),
                Some(f) => {
                    FieldSet::from_fields_v1_without(f, without).map_err(|m| format!("error decoding set: {m}"))?
                }
            };
            let key = ManagerKey::new(s("manager"), operation, api_version, s("subresource"));
            let time = e.get("time").and_then(Value::as_str).map(str::to_string);
            out.0.insert(key, Entry { set, api_version: api_version.to_string(), time });
        }
        Ok(out)
    }

    /// The entries of `metadata.managedFields`, in kube-apiserver's order; None without any.
    pub fn encode(&self) -> Option<Value> {
        let mut entries: Vec<(&ManagerKey, &Entry)> = self.0.iter().filter(|(_, e)| !e.set.is_empty()).collect();
        if entries.is_empty() {
            return None;
        }
        entries.sort_by(|(a, ea), (b, eb)| {
            a.operation
                .cmp(&b.operation)
                .then_with(|| seconds(ea.time.as_deref()).cmp(&seconds(eb.time.as_deref())))
                .then_with(|| a.manager.cmp(&b.manager))
                .then_with(|| ea.api_version.cmp(&eb.api_version))
                .then_with(|| a.subresource.cmp(&b.subresource))
        });
        let list = entries
            .into_iter()
            .map(|(k, e)| {
                let mut m = Map::new();
                if !k.manager.is_empty() {
                    m.insert("manager".into(), k.manager.clone().into());
                }
                m.insert("operation".into(), k.operation.as_str().into());
                m.insert("apiVersion".into(), e.api_version.clone().into());
                if let Some(t) = &e.time {
                    m.insert("time".into(), t.clone().into());
                }
                m.insert("fieldsType".into(), "FieldsV1".into());
                m.insert("fieldsV1".into(), e.set.to_fields_v1());
                if !k.subresource.is_empty() {
                    m.insert("subresource".into(), k.subresource.clone().into());
                }
                Value::Object(m)
            })
            .collect();
        Some(Value::Array(list))
    }

    /// Drops the managers left without fields.
    pub fn drop_empty(&mut self) {
        self.0.retain(|_, e| !e.set.is_empty());
    }
}

/// The seconds since the epoch of an RFC 3339 time (0 when absent or unreadable, as kube
/// sorts entries without a time first).
pub(crate) fn seconds(t: Option<&str>) -> i64 {
    t.and_then(|t| t.parse::<jiff::Timestamp>().ok()).map(|t| t.as_second()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn entries_round_trip_in_kube_order() {
        let v = json!([
            {"manager": "unknown", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-11-23T08:34:11Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:replicas": {}}}, "subresource": "status"},
            {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}, "subresource": "scale"},
            {"manager": "gamma", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-11-23T08:33:49Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:team": {}}}}},
            {"manager": "alpha", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-11-23T08:33:34Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:selector": {}}}},
        ]);
        let m = Managers::decode(Some(&v)).unwrap();
        let out = m.encode().unwrap();
        let order: Vec<&str> = out.as_array().unwrap().iter().map(|e| e["manager"].as_str().unwrap()).collect();
        assert_eq!(order, ["alpha", "gamma", "kubectl", "unknown"]);
        assert_eq!(out.as_array().unwrap()[2], v[1]);
        assert!(
            Managers::decode(Some(&json!([{"operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}])))
                .is_err()
        );
        assert!(Managers::decode(Some(&json!([{"operation": "Update", "apiVersion": "v1"}]))).is_err());
        assert!(Managers::decode(Some(&json!([{"operation": "Update", "fieldsType": "FieldsV1"}]))).is_err());
        assert_eq!(
            ManagerKey::new("kubectl", Operation::Update, "apps/v1", "scale").describe(),
            "\"kubectl\" with subresource \"scale\" using apps/v1"
        );
        assert_eq!(ManagerKey::new("alpha", Operation::Apply, "apps/v1", "").describe(), "\"alpha\"");
    }
}
