//! Services judged as kube-apiserver's `ValidateService` judges them (after the server has given
//! a Service its address): ports (at least one unless headless or ExternalName; names that are
//! DNS labels, required and unique when there are several; numbers in range; a supported
//! protocol; a target port that is a number or a port name), a headless address only where it
//! makes sense, an ExternalName's DNS name and no address, a valid selector, session affinity
//! and type; no node port on a ClusterIP Service, no node port or port (with its protocol) listed
//! twice, an external traffic policy and a health check node port only where they apply; on
//! update, cluster IPs and a health check node port that do not change. The fields beside these
//! (external IPs, load balancer fields, traffic policies, application protocols, topology
//! annotations) are judged at their places by [`crate::service_fields`]. (Node ports are given before, as kube's Service store gives them: see
//! `crate::node_ports`.)
//! (What an update from another type no longer needs is dropped before, as kube's strategy
//! drops it: see `defaults::service_allocation`.)
//!
//! Invariants: only the Service (and the stored version an update replaces) is read; causes
//! come in kube's order, with its paths and messages.

use serde_json::{Map, Value};

use crate::pod_validation::{forbidden, number};
use crate::policy_validation::{duplicate, invalid, required, unsupported};
use crate::structural::{Cause, go_value};

/// The causes for which kube refuses the Service `svc` (over `old` on an update).
pub(crate) fn validate(svc: &Map<String, Value>, old: Option<&Map<String, Value>>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Object(Map::new());
    let spec = svc.get("spec").unwrap_or(&empty);
    let kind = str_of(spec, "type");
    if let Some(old) = old {
        let old_spec = old.get("spec").unwrap_or(&empty);
        cluster_ip_change(spec, old_spec, &mut causes);
        crate::service_fields::class_update(spec, old_spec, &mut causes);
        // A load balancer's health check port stays while it needs one.
        let check = |s: &Value| {
            let needs = str_of(s, "type") == "LoadBalancer" && str_of(s, "externalTrafficPolicy") == "Local";
            needs.then(|| s.get("healthCheckNodePort").and_then(Value::as_i64).unwrap_or(0))
        };
        if let (Some(now), Some(was)) = (check(spec), check(old_spec))
            && now != was
        {
            causes.push(forbidden("spec.healthCheckNodePort".into(), "field is immutable"));
        }
    }
    crate::service_fields::topology_annotations(svc, &mut causes);
    let ports = spec.get("ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let headless = cluster_ips(spec) == ["None"];
    if ports.is_empty() && !headless && kind != "ExternalName" {
        causes.push(required("spec.ports".into(), ""));
    }
    match kind {
        "LoadBalancer" | "NodePort" if headless => causes.push(invalid(
            "spec.clusterIPs[0]".into(),
            "None",
            &format!("may not be set to 'None' for {kind} services"),
        )),
        "ExternalName" => {
            for key in ["clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
                let set = match key {
                    "clusterIPs" => !cluster_ips(spec).is_empty(),
                    _ => spec.get(key).is_some_and(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty())),
                };
                if set {
                    causes.push(forbidden(format!("spec.{key}"), "may not be set for ExternalName services"));
                }
            }
            let name = str_of(spec, "externalName");
            let name = name.strip_suffix('.').unwrap_or(name);
            if name.is_empty() {
                causes.push(required("spec.externalName".into(), ""));
            } else {
                for fault in crate::cel_format::dns1123_subdomain(name) {
                    causes.push(invalid("spec.externalName".into(), name, &fault));
                }
            }
        }
        _ => {}
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        port(p, &format!("spec.ports[{i}]"), ports.len() > 1, &mut names, &mut causes);
    }
    crate::object_meta::labels(spec.get("selector"), "spec.selector", &mut causes);
    session_affinity(spec, &mut causes);
    causes.extend(crate::service_ips::related_fields(spec, old.and_then(|o| o.get("spec"))));
    crate::service_fields::external_ips(spec, old.and_then(|o| o.get("spec")), &mut causes);
    match kind {
        "" => causes.push(required("spec.type".into(), "")),
        "ClusterIP" | "ExternalName" | "LoadBalancer" | "NodePort" => {}
        other => causes.push(unsupported(
            "spec.type".into(),
            other,
            &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        )),
    }
    if kind == "ClusterIP" {
        // (An update from another type has dropped the node ports it kept, as kube's strategy.)
        for (i, p) in ports.iter().enumerate() {
            if p.get("nodePort").and_then(Value::as_i64).is_some_and(|n| n != 0) {
                let field = format!("spec.ports[{i}].nodePort");
                causes.push(forbidden(field, "may not be used when `type` is 'ClusterIP'"));
            }
        }
    }
    duplicates(ports, &mut causes);
    crate::service_fields::load_balancer(svc, old, &mut causes);
    external_traffic(spec, kind, &mut causes);
    crate::service_fields::traffic(spec, &mut causes);
    causes
}

/// kube's `validateServiceExternalTrafficPolicy`: an external traffic policy exactly where
/// traffic comes from outside, a health check node port exactly where a load balancer keeps it
/// on its nodes.
fn external_traffic(spec: &Value, kind: &str, causes: &mut Vec<Cause>) {
    let external_ips = spec.get("externalIPs").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    let accessible = matches!(kind, "LoadBalancer" | "NodePort") || kind == "ClusterIP" && external_ips;
    let policy = str_of(spec, "externalTrafficPolicy");
    if !accessible {
        if !policy.is_empty() {
            causes.push(invalid(
                "spec.externalTrafficPolicy".into(),
                policy,
                "may only be set for externally-accessible services",
            ));
        }
    } else if policy.is_empty() {
        causes.push(required("spec.externalTrafficPolicy".into(), ""));
    } else if !matches!(policy, "Cluster" | "Local") {
        causes.push(unsupported("spec.externalTrafficPolicy".into(), policy, &["Cluster", "Local"]));
    }
    let check = spec.get("healthCheckNodePort").and_then(Value::as_i64).unwrap_or(0);
    if !(kind == "LoadBalancer" && policy == "Local") {
        if check != 0 {
            causes.push(number(
                "spec.healthCheckNodePort".into(),
                check,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    } else if check == 0 {
        causes.push(required("spec.healthCheckNodePort".into(), ""));
    } else if !(1..=65535).contains(&check) {
        causes.push(number("spec.healthCheckNodePort".into(), check, RANGE));
    }
}

/// kube's checks for node ports given twice and ports listed twice, each for one protocol.
fn duplicates(ports: &[Value], causes: &mut Vec<Cause>) {
    let protocol = |p: &Value| str_of(p, "protocol").to_string();
    let int = |p: &Value, key: &str| p.get(key).and_then(Value::as_i64).unwrap_or(0);
    let mut node_ports: Vec<(String, i64)> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let n = int(p, "nodePort");
        if n == 0 {
            continue;
        }
        let key = (protocol(p), n);
        if node_ports.contains(&key) {
            causes.push(Cause {
                reason: "FieldValueDuplicate",
                message: format!("Duplicate value: {n}"),
                field: format!("spec.ports[{i}].nodePort"),
            });
        }
        node_ports.push(key);
    }
    let mut seen: Vec<(String, i64)> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let key = (protocol(p), int(p, "port"));
        if seen.contains(&key) {
            // Shown as Go's JSON of kube's internal ServicePort holding the pair.
            let shown = format!(
                r#"{{"Name":"","Protocol":{},"AppProtocol":null,"Port":{},"TargetPort":0,"NodePort":0}}"#,
                go_value(&Value::String(key.0.clone())),
                key.1
            );
            causes.push(Cause {
                reason: "FieldValueDuplicate",
                message: format!("Duplicate value: {shown}"),
                field: format!("spec.ports[{i}]"),
            });
        }
        seen.push(key);
    }
}

/// One port at `at`: its name (required when the Service has `several`, a DNS label, unique
/// among `names`), number, protocol and target port.
fn port<'a>(p: &'a Value, at: &str, several: bool, names: &mut Vec<&'a str>, causes: &mut Vec<Cause>) {
    let name = str_of(p, "name");
    if several && name.is_empty() {
        causes.push(required(format!("{at}.name"), ""));
    } else if !name.is_empty() {
        for fault in crate::cel_format::dns1123_label(name) {
            causes.push(invalid(format!("{at}.name"), name, &fault));
        }
        if names.contains(&name) {
            causes.push(duplicate(format!("{at}.name"), name));
        } else {
            names.push(name);
        }
    }
    let number_of = |key: &str| p.get(key).and_then(Value::as_i64).unwrap_or(0);
    let port = number_of("port");
    if !(1..=65535).contains(&port) {
        causes.push(number(format!("{at}.port"), port, RANGE));
    }
    match str_of(p, "protocol") {
        "" => causes.push(required(format!("{at}.protocol"), "")),
        "SCTP" | "TCP" | "UDP" => {}
        other => causes.push(unsupported(format!("{at}.protocol"), other, &["SCTP", "TCP", "UDP"])),
    }
    match p.get("targetPort") {
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&n) {
                causes.push(number(format!("{at}.targetPort"), n, RANGE));
            }
        }
        Some(Value::String(s)) => {
            for fault in crate::pod_spec_validation::port_name_faults(s) {
                causes.push(invalid(format!("{at}.targetPort"), s, fault));
            }
        }
        _ => {}
    }
    crate::service_fields::app_protocol(p, at, causes);
}

/// kube's message for a port number out of range.
const RANGE: &str = "must be between 1 and 65535, inclusive";

/// The session affinity: one kube knows; with `ClientIP`, a timeout of at most a day.
fn session_affinity(spec: &Value, causes: &mut Vec<Cause>) {
    match str_of(spec, "sessionAffinity") {
        "" => causes.push(required("spec.sessionAffinity".into(), "")),
        "None" => {
            if spec.get("sessionAffinityConfig").is_some_and(|c| !c.is_null()) {
                let field = "spec.sessionAffinityConfig".to_string();
                causes.push(forbidden(field, "must not be set when session affinity is None"));
            }
        }
        "ClientIP" => {
            let at = "spec.sessionAffinityConfig.clientIP.timeoutSeconds";
            match spec.pointer("/sessionAffinityConfig/clientIP/timeoutSeconds").and_then(Value::as_i64) {
                None => causes.push(required(at.into(), "when session affinity type is ClientIP")),
                Some(t) if t <= 0 || t > 86_400 => {
                    causes.push(number(at.into(), t, "must be greater than 0 and less than 86400"))
                }
                Some(_) => {}
            }
        }
        other => causes.push(unsupported("spec.sessionAffinity".into(), other, &["ClientIP", "None"])),
    }
}

/// kube's refusal of an update that moves a Service's primary cluster IP (ExternalName Services
/// and headless ones have none to keep).
fn cluster_ip_change(spec: &Value, old: &Value, causes: &mut Vec<Cause>) {
    if str_of(spec, "type") == "ExternalName" || str_of(old, "type") == "ExternalName" {
        return;
    }
    let (now, was) = (cluster_ips(spec), cluster_ips(old));
    if now == ["None"] && was == ["None"] {
        return;
    }
    let shown = go_value(&Value::from(now.clone()));
    let changed = |i: usize| Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {shown}: may not change once set"),
        field: format!("spec.clusterIPs[{i}]"),
    };
    if now.len() == was.len() {
        // Every address that moved.
        causes.extend((0..now.len()).filter(|i| now[*i] != was[*i]).map(changed));
    } else if let (Some(now_first), Some(was_first)) = (now.first(), was.first())
        && now_first != was_first
    {
        causes.push(changed(0));
    }
}

/// A Service's cluster IPs as kube reads them: `clusterIP` first when it is set.
fn cluster_ips(spec: &Value) -> Vec<&str> {
    let mut ips: Vec<&str> =
        spec.get("clusterIPs").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let first = str_of(spec, "clusterIP");
    if !first.is_empty() && ips.first() != Some(&first) {
        if ips.is_empty() {
            ips.push(first);
        } else {
            ips[0] = first;
        }
    }
    ips
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged(spec: Value, old: Option<Value>) -> Vec<String> {
        let svc = json!({"metadata": {"name": "s"}, "spec": spec});
        let old = old.map(|spec| json!({"metadata": {"name": "s"}, "spec": spec}));
        let causes = validate(svc.as_object().unwrap(), old.as_ref().and_then(Value::as_object));
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    /// A Service as defaulting and allocation leave it.
    fn service(ports: Value) -> Value {
        json!({"type": "ClusterIP", "sessionAffinity": "None", "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10"], "ports": ports, "selector": {"app": "web"}})
    }

    #[test]
    fn a_sound_service_passes() {
        let ports = json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http-alt"},
            {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 8443}]);
        assert_eq!(judged(service(ports), None), Vec::<String>::new());
        let headless =
            json!({"type": "ClusterIP", "sessionAffinity": "None", "clusterIP": "None", "clusterIPs": ["None"]});
        assert_eq!(judged(headless, None), Vec::<String>::new());
    }

    #[test]
    fn ports_are_judged_as_kube_judges_them() {
        let ports = json!([
            {"port": 80, "protocol": "TCP", "targetPort": 80},
            {"name": "Web", "port": 0, "protocol": "HTTP", "targetPort": 70000},
            {"name": "metrics", "port": 9090, "protocol": "TCP", "targetPort": "Metrics", "nodePort": 30001},
            {"name": "metrics", "port": 9091, "protocol": "TCP", "targetPort": 9091},
        ]);
        let mut spec = service(ports);
        spec["selector"] = json!({"app": "web server"});
        spec["sessionAffinity"] = json!("ClientIP");
        spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 0}});
        let label = crate::crd_validation::LABEL_MSG;
        let value = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', \
                     and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or \
                     '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        assert_eq!(
            judged(spec, None),
            [
                "spec.ports[0].name: Required value".to_string(),
                format!("spec.ports[1].name: Invalid value: \"Web\": {label}"),
                "spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive".into(),
                "spec.ports[1].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into(),
                "spec.ports[1].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive".into(),
                "spec.ports[2].targetPort: Invalid value: \"Metrics\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into(),
                "spec.ports[3].name: Duplicate value: \"metrics\"".into(),
                format!("spec.selector: Invalid value: \"web server\": {value}"),
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than 86400".into(),
                "spec.ports[2].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'".into(),
            ]
        );
    }

    #[test]
    fn node_ports_and_ports_are_listed_once_per_protocol() {
        let mut spec = service(json!([
            {"name": "a", "port": 53, "protocol": "UDP", "nodePort": 30053},
            {"name": "b", "port": 53, "protocol": "TCP", "nodePort": 30053},
            {"name": "c", "port": 80, "protocol": "TCP", "nodePort": 30053},
            {"name": "d", "port": 80, "protocol": "TCP", "nodePort": 30080},
        ]));
        spec["type"] = json!("NodePort");
        spec["externalTrafficPolicy"] = json!("Cluster");
        assert_eq!(
            judged(spec, None),
            [
                "spec.ports[2].nodePort: Duplicate value: 30053",
                "spec.ports[3]: Duplicate value: {\"Name\":\"\",\"Protocol\":\"TCP\",\"AppProtocol\":null,\"Port\":80,\"TargetPort\":0,\"NodePort\":0}",
            ]
        );
    }

    #[test]
    fn external_traffic_fields_only_where_they_apply() {
        let mut spec = service(json!([{"name": "a", "port": 80, "protocol": "TCP"}]));
        spec["externalTrafficPolicy"] = json!("Local");
        spec["healthCheckNodePort"] = json!(30100);
        assert_eq!(
            judged(spec, None),
            [
                "spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services",
                "spec.healthCheckNodePort: Invalid value: 30100: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ]
        );
        let mut lb = service(json!([{"name": "a", "port": 80, "protocol": "TCP", "nodePort": 30080}]));
        lb["type"] = json!("LoadBalancer");
        lb["externalTrafficPolicy"] = json!("Local");
        assert_eq!(judged(lb.clone(), None), ["spec.healthCheckNodePort: Required value"]);
        lb["healthCheckNodePort"] = json!(30100);
        assert_eq!(judged(lb.clone(), None), Vec::<String>::new());
        let mut moved = lb.clone();
        moved["healthCheckNodePort"] = json!(30101);
        assert_eq!(judged(moved, Some(lb)), ["spec.healthCheckNodePort: Forbidden: field is immutable"]);
    }

    #[test]
    fn types_and_addresses() {
        let mut spec = service(json!([]));
        spec["type"] = json!("Balanced");
        assert_eq!(
            judged(spec, None),
            [
                "spec.ports: Required value",
                "spec.type: Unsupported value: \"Balanced\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
            ]
        );
        let headless_lb = json!({"type": "LoadBalancer", "externalTrafficPolicy": "Cluster",
            "sessionAffinity": "None", "clusterIP": "None",
            "clusterIPs": ["None"], "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]});
        assert_eq!(
            judged(headless_lb, None),
            ["spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for LoadBalancer services"]
        );
        let external = json!({"type": "ExternalName", "sessionAffinity": "None", "externalName": "DB.example.com.",
            "clusterIP": "10.96.0.9"});
        let subdomain = crate::cel_format::dns1123_subdomain("DB.example.com").remove(0);
        assert_eq!(
            judged(external, None),
            [
                "spec.clusterIPs: Forbidden: may not be set for ExternalName services".to_string(),
                format!("spec.externalName: Invalid value: \"DB.example.com\": {subdomain}"),
            ]
        );
        // The address stays; other changes are judged as on create.
        let old = service(json!([{"port": 80, "protocol": "TCP", "targetPort": 80}]));
        let mut moved = old.clone();
        // (As kube's update normalizes it: the list follows a moved `clusterIP`.)
        moved["clusterIP"] = json!("10.96.0.11");
        moved["clusterIPs"] = json!(["10.96.0.11"]);
        assert_eq!(
            judged(moved, Some(old.clone())),
            ["spec.clusterIPs[0]: Invalid value: [\"10.96.0.11\"]: may not change once set"]
        );
        let mut typed = old.clone();
        typed["ports"][0]["nodePort"] = json!(30080);
        assert_eq!(
            judged(typed, Some(old)),
            ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]
        );
    }
}
