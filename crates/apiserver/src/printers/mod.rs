//! kube-apiserver's table printers for its built-in kinds: the columns and cells of the
//! `meta.k8s.io/v1` `Table` that `kubectl get` shows ([`crate::table`] frames it).
//!
//! Invariants, as kube-apiserver v1.35 prints:
//! - the server prints the wide form: every column, those of priority 1 included (kubectl hides
//!   them unless `-o wide`), and every row has a cell for each column;
//! - a column's description is kube's: the documentation of the field it shows (read from the
//!   built-in OpenAPI definitions, without their `Possible enum values` note), or the text kube
//!   gives it (including the few kube takes from an older version of the type);
//! - a cell is a JSON string, number or boolean as kube's printer makes it (some columns declared
//!   `string` carry numbers, as kube's do); absent values print as kube prints them (`<none>`,
//!   `<unset>`, `<unknown>`, `<pending>`…); ages are human durations from now;
//! - kinds without a printer in kube (Roles, ClusterRoles, LimitRanges,
//!   CustomResourceDefinitions, CSIStorageCapacities) get kube's default columns: `Name` and
//!   `Created At`, the creation time in RFC 3339.

mod cluster;
mod core;
mod flowcontrol;
mod resource;
mod storage;
mod workloads;

use serde_json::{Value, json};

use crate::registry::ResourceInfo;

/// Where a column's description comes from.
#[derive(Clone, Copy)]
enum Doc {
    /// The documentation of a field of an OpenAPI definition (`io.k8s.api.core.v1.ServiceSpec`,
    /// `type`).
    Field(&'static str, &'static str),
    /// A text of its own.
    Text(&'static str),
}

/// A column: its name, type, format, priority and description.
#[derive(Clone, Copy)]
struct Col(&'static str, &'static str, &'static str, u8, Doc);

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The `Name` column every printer starts with (Events end with it).
const NAME: Col = Col("Name", "string", "name", 0, Doc::Field(META, "name"));

/// The `Age` column of the printers (a string: the human duration since creation).
const AGE: Col = Col("Age", "string", "", 0, Doc::Field(META, "creationTimestamp"));

/// The wide `Containers` and `Images` columns of the workload printers.
const CONTAINERS: Col = Col("Containers", "string", "", 1, Doc::Text("Names of each container in the template."));
const IMAGES: Col = Col("Images", "string", "", 1, Doc::Text("Images referenced by each container in the template."));

/// The documentation of `field` in the definition `def`, without the note on enum values.
fn doc(def: &str, field: &str) -> String {
    let schemas = crate::schema::builtin();
    let text = schemas
        .definition(def)
        .and_then(|(_, d)| d.pointer(&format!("/properties/{field}/description")))
        .and_then(Value::as_str)
        .unwrap_or_default();
    text.split("\n\nPossible enum values:").next().unwrap_or_default().to_string()
}

fn column(c: &Col) -> Value {
    let Col(name, ty, format, priority, d) = *c;
    let description = match d {
        Doc::Field(def, field) => doc(def, field),
        Doc::Text(t) => t.to_string(),
    };
    json!({"name": name, "type": ty, "format": format, "description": description, "priority": priority})
}

/// How an object's cells read.
type Cells = fn(&Value) -> Vec<Value>;

/// A printed kind: its columns and how an object's cells read.
struct Printer {
    columns: &'static [Col],
    cells: Cells,
}

/// The printer of a built-in kind, if kube has one.
fn printer(info: &ResourceInfo) -> Option<Printer> {
    workloads::printer(info)
        .or_else(|| core::printer(info))
        .or_else(|| cluster::printer(info))
        .or_else(|| storage::printer(info))
        .or_else(|| resource::printer(info))
        .or_else(|| flowcontrol::printer(info))
}

/// The order of a list's rows, as indexes into `items`, where kube's printer sorts them.
pub(crate) fn order(info: &ResourceInfo, items: &[std::sync::Arc<crate::object::StoredObject>]) -> Option<Vec<usize>> {
    flowcontrol::order(info, items)
}

/// The column definitions of a built-in kind's table; None for other resources.
pub(crate) fn columns(info: &ResourceInfo) -> Option<Value> {
    if !info.is_builtin() {
        return None;
    }
    Some(match printer(info) {
        Some(p) => p.columns.iter().map(column).collect(),
        None => {
            json!([column(&NAME), column(&Col("Created At", "date", "", 0, Doc::Field(META, "creationTimestamp")))])
        }
    })
}

/// The cells of a built-in kind's row for the object `v`; None for other resources.
pub(crate) fn cells(info: &ResourceInfo, v: &Value) -> Option<Vec<Value>> {
    if !info.is_builtin() {
        return None;
    }
    Some(match printer(info) {
        // An autoscaler is printed in its autoscaling/v2 form, whichever version serves it.
        Some(p) if crate::autoscaling_v1::is_v1(info) => match v.as_object() {
            Some(m) => (p.cells)(&Value::Object(crate::autoscaling_v1::to_v2(m))),
            None => (p.cells)(v),
        },
        Some(p) => (p.cells)(v),
        None => {
            let created = v.pointer("/metadata/creationTimestamp").and_then(Value::as_str);
            vec![json!(name(v)), json!(created.unwrap_or("0001-01-01T00:00:00Z"))]
        }
    })
}

/// The columns of an autoscaling/v1 `Scale`, as kube prints a built-in kind's `scale`.
pub(crate) fn scale_columns() -> Value {
    workloads::SCALE.iter().map(column).collect()
}

/// The cells of the `Scale` `v`.
pub(crate) fn scale_cells(v: &Value) -> Vec<Value> {
    workloads::scale(v)
}

/// The conditions of a built-in kind's row for `v` (a finished pod's `Completed`), if any.
pub(crate) fn row_conditions(info: &ResourceInfo, v: &Value) -> Option<Value> {
    (info.is_builtin() && info.is_core("pods")).then(|| workloads::pod_conditions(v)).flatten()
}

/// Whether a kind's empty table has an empty `rows` list (kube's printers) rather than none
/// (its default columns).
pub(crate) fn rows_listed_when_empty(info: &ResourceInfo) -> bool {
    !info.is_builtin() || printer(info).is_some()
}

/// The object's name.
fn name(v: &Value) -> &str {
    text(v, "/metadata/name")
}

/// The string at `pointer`, empty when absent.
fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// The integer at `pointer`, 0 when absent.
fn int(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or_default()
}

/// The string at `pointer`, or `absent`.
fn text_or(v: &Value, pointer: &str, absent: &str) -> String {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or(absent).to_string()
}

/// The list at `pointer`, empty when absent.
fn list<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// The object's age (`<unknown>` without a creation time).
fn age(v: &Value) -> String {
    since(v.pointer("/metadata/creationTimestamp").and_then(Value::as_str))
}

/// The human duration since an RFC 3339 time; `<unknown>` without one.
pub(crate) fn since(time: Option<&str>) -> String {
    match time.and_then(|t| t.parse::<jiff::Timestamp>().ok()) {
        // Go's `int(d.Seconds())`: the exact difference, truncated.
        Some(t) => human_duration(jiff::Timestamp::now().duration_since(t).as_secs()),
        None => "<unknown>".into(),
    }
}

/// A duration as kubectl's tables show it (apimachinery's `HumanDuration`: `90s`, `5m30s`,
/// `2h15m`, `3d4h`, `1y20d`).
pub(crate) fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let (minutes, hours) = (secs / 60, secs / 3600);
    let with = |whole: i64, unit: &str, part: i64, part_unit: &str| {
        if part == 0 { format!("{whole}{unit}") } else { format!("{whole}{unit}{part}{part_unit}") }
    };
    match () {
        _ if minutes < 10 => with(minutes, "m", secs % 60, "s"),
        _ if minutes < 180 => format!("{minutes}m"),
        _ if hours < 8 => with(hours, "h", minutes % 60, "m"),
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 24 * 8 => with(hours / 24, "d", hours % 24, "h"),
        _ if hours < 24 * 365 * 2 => format!("{}d", hours / 24),
        _ if hours < 24 * 365 * 8 => with(hours / 24 / 365, "y", (hours / 24) % 365, "d"),
        _ => format!("{}y", hours / 24 / 365),
    }
}

/// A map of labels as kube formats it: `k=v` pairs sorted and joined by commas; `<none>`
/// when empty.
fn labels(map: Option<&Value>) -> String {
    let mut pairs: Vec<String> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    if pairs.is_empty() {
        return "<none>".into();
    }
    pairs.sort_unstable();
    pairs.join(",")
}

/// A `LabelSelector` as kube's selector prints it (`app=web,tier in (a,b)`); empty for a
/// selector of nothing or everything, None when it is not one kube can read.
fn selector_text(sel: Option<&Value>) -> Option<String> {
    let Some(sel) = sel.filter(|s| !s.is_null()) else { return Some(String::new()) };
    let valid_key = |k: &str| crate::cel_format::qualified_name(k).is_empty();
    let valid_value = |v: &Value| v.as_str().is_some_and(|v| crate::cel_format::label_value(v).is_empty());
    for (k, v) in sel.get("matchLabels").and_then(Value::as_object).into_iter().flatten() {
        if !valid_key(k) || !valid_value(v) {
            return None;
        }
    }
    for e in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let values = e.get("values").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let fits = match e.get("operator").and_then(Value::as_str) {
            Some("In" | "NotIn") => !values.is_empty(),
            Some("Exists" | "DoesNotExist") => values.is_empty(),
            _ => false,
        };
        if !fits || !valid_key(text(e, "/key")) || !values.iter().all(valid_value) {
            return None;
        }
    }
    Some(crate::selector::selector_string(sel))
}

/// A `LabelSelector` as kube's `FormatLabelSelector` prints it: `<none>` when it selects
/// everything or is absent, `<error>` when it cannot be read.
fn selector(sel: Option<&Value>) -> String {
    match selector_text(sel) {
        Some(s) if s.is_empty() => "<none>".into(),
        Some(s) => s,
        None => "<error>".into(),
    }
}

/// The names and the images of a pod template's containers, each joined by commas.
fn containers(v: &Value, pointer: &str) -> [Value; 2] {
    let containers = list(v, pointer);
    let names: Vec<&str> = containers.iter().map(|c| text(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| text(c, "/image")).collect();
    [json!(names.join(",")), json!(images.join(","))]
}

/// A quantity as kube prints it (its canonical form), `0` when absent.
fn quantity(q: Option<&Value>) -> String {
    q.and_then(crate::quantity::Quantity::of).map_or_else(|| "0".to_string(), crate::quantity::Quantity::shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_kubectl_shows_them() {
        for (secs, shown) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (5, "5s"),
            (119, "119s"),
            (330, "5m30s"),
            (600, "10m"),
            (3600, "60m"),
            (8100, "135m"),
            (11_000, "3h3m"),
            (86_400, "24h"),
            (3 * 86_400 + 4 * 3600, "3d4h"),
            (30 * 86_400, "30d"),
            (800 * 86_400, "2y70d"),
            (3650 * 86_400, "10y"),
        ] {
            assert_eq!(human_duration(secs), shown, "{secs}");
        }
    }

    #[test]
    fn labels_and_selectors_print_as_kube_prints_them() {
        assert_eq!(labels(Some(&json!({"b": "1", "a": "2", "a.b": "0"}))), "a.b=0,a=2,b=1");
        assert_eq!(labels(Some(&json!({}))), "<none>");
        let sel = json!({"matchLabels": {"b": "x"}, "matchExpressions": [
            {"key": "a", "operator": "In", "values": ["z", "y"]}, {"key": "c", "operator": "DoesNotExist"}]});
        assert_eq!(selector(Some(&sel)), "a in (y,z),b=x,!c");
        assert_eq!(selector(Some(&json!({}))), "<none>");
        assert_eq!(selector(None), "<none>");
        assert_eq!(selector(Some(&json!({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}))), "<error>");
        assert_eq!(selector(Some(&json!({"matchLabels": {"a": "b c"}}))), "<error>");
    }

    fn printed(group: &str, plural: &str, v: Value) -> (Vec<String>, Vec<Value>) {
        let registry = crate::registry::Registry::with_defaults();
        let info = registry.all().iter().find(|i| i.group == group && i.plural == plural).cloned().unwrap();
        let names = columns(&info)
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect();
        (names, cells(&info, &v).unwrap())
    }

    #[test]
    fn cells_read_as_kube_prints_them() {
        let quota = json!({"metadata": {"name": "q"}, "status": {"hard": {"pods": "10", "limits.cpu": "2"}, "used": {"pods": "1"}}});
        let (names, cells) = printed("", "resourcequotas", quota);
        assert_eq!(names, ["Name", "Request", "Limit", "Age"]);
        assert_eq!(cells[..3], [json!("q"), json!("pods: 1/10"), json!("limits.cpu: 0/2")]);
        let slice = json!({"metadata": {"name": "s"}, "addressType": "IPv4", "ports": [{"name": ""}],
            "endpoints": [{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3", "10.0.0.4"]}]});
        let (_, cells) = printed("discovery.k8s.io", "endpointslices", slice);
        assert_eq!(
            cells[..4],
            [json!("s"), json!("IPv4"), json!("<unset>"), json!("10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...")]
        );
        let hpa = json!({"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 3,
            "metrics": [{"type": "Pods", "pods": {"metric": {"name": "m"}, "target": {"type": "AverageValue", "averageValue": "1000m"}}}]}});
        let (_, cells) = printed("autoscaling", "horizontalpodautoscalers", hpa);
        assert_eq!(cells[..5], [json!("h"), json!("Deployment/d"), json!("<unknown>/1"), json!("<unset>"), json!(3)]);
        let csr = json!({"metadata": {"name": "c"}, "spec": {"signerName": "example.com/s"}});
        let (_, cells) = printed("certificates.k8s.io", "certificatesigningrequests", csr);
        assert_eq!((&cells[3], &cells[4], &cells[5]), (&json!(""), &json!("<none>"), &json!("Pending")));
    }

    #[test]
    fn descriptions_come_from_the_definitions_without_enum_notes() {
        let d = doc("io.k8s.api.core.v1.ServiceSpec", "type");
        assert!(d.starts_with("type determines how the Service is exposed."), "{d}");
        assert!(!d.contains("Possible enum values"), "{d}");
    }
}
