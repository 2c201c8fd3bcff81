//! A container's probes and lifecycle handlers, judged as kube-apiserver's `validateContainers`
//! and `validateInitContainers` judge them: one handler each (`exec` with a command, `httpGet`
//! with a path, a port and a scheme, `tcpSocket` or `grpc` with a port; a lifecycle hook may
//! also `sleep` up to the pod's grace period), counts not negative, liveness and startup probes
//! that succeed once, no grace period on a readiness probe. Init containers have none of these
//! unless they restart `Always` (sidecars).
//!
//! Invariants: only the container is read (and the pod's grace period, for `sleep`); causes
//! come in kube's order with its paths and messages.

use serde_json::Value;

use crate::pod_validation::{forbidden, number};
use crate::policy_validation::{invalid, required, unsupported};
use crate::structural::Cause;

/// The probes and lifecycle of a regular container (or a sidecar) at `path`; `grace` is the
/// pod's `terminationGracePeriodSeconds`.
pub(crate) fn regular(c: &Value, grace: Option<i64>, path: &str, causes: &mut Vec<Cause>) {
    if let Some(lifecycle) = present(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = present(lifecycle, hook) {
                handler(h, LIFECYCLE, grace, &format!("{path}.lifecycle.{hook}"), causes);
            }
        }
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let Some(p) = present(c, key) else { continue };
        let at = format!("{path}.{key}");
        probe(p, grace, &at, causes);
        if key == "readinessProbe" {
            if let Some(g) = present(p, "terminationGracePeriodSeconds").and_then(Value::as_i64) {
                causes.push(number(
                    format!("{at}.terminationGracePeriodSeconds"),
                    g,
                    "must not be set for readinessProbes",
                ));
            }
        } else {
            let threshold = int(p, "successThreshold");
            if threshold != 1 {
                causes.push(number(format!("{at}.successThreshold"), threshold, "must be 1"));
            }
        }
    }
}

/// The probes and lifecycle of an init container at `path`: a sidecar's are judged as a regular
/// container's; other init containers may have none.
pub(crate) fn init(c: &Value, grace: Option<i64>, path: &str, causes: &mut Vec<Cause>) {
    if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
        return regular(c, grace, path, causes);
    }
    for key in ["lifecycle", "livenessProbe", "readinessProbe", "startupProbe"] {
        if present(c, key).is_some() {
            causes.push(forbidden(
                format!("{path}.{key}"),
                "may not be set for init containers without restartPolicy=Always",
            ));
        }
    }
}

fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|v| !v.is_null())
}

fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// The handlers a probe may have, and a lifecycle hook, in the order kube counts them.
const PROBE: &[&str] = &["exec", "httpGet", "tcpSocket", "grpc"];
const LIFECYCLE: &[&str] = &["exec", "httpGet", "tcpSocket", "sleep"];

/// kube's `validateProbe`: the handler, then counts that are not negative and a grace period
/// above zero.
fn probe(p: &Value, grace: Option<i64>, at: &str, causes: &mut Vec<Cause>) {
    handler(p, PROBE, grace, at, causes);
    for key in ["initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"] {
        let n = int(p, key);
        if n < 0 {
            causes.push(number(format!("{at}.{key}"), n, "must be greater than or equal to 0"));
        }
    }
    if let Some(g) = present(p, "terminationGracePeriodSeconds").and_then(Value::as_i64).filter(|g| *g <= 0) {
        causes.push(number(format!("{at}.terminationGracePeriodSeconds"), g, "must be greater than 0"));
    }
}

/// kube's `validateHandler`: exactly one of `kinds`, which is judged.
fn handler(h: &Value, kinds: &[&str], grace: Option<i64>, at: &str, causes: &mut Vec<Cause>) {
    let mut set = kinds.iter().filter(|k| present(h, k).is_some());
    let Some(first) = set.next() else {
        causes.push(required(at.into(), "must specify a handler type"));
        return;
    };
    let v = &h[*first];
    let path = format!("{at}.{first}");
    match *first {
        "exec" => {
            if v.get("command").and_then(Value::as_array).is_none_or(Vec::is_empty) {
                causes.push(required(format!("{path}.command"), ""));
            }
        }
        "httpGet" => {
            if v.get("path").and_then(Value::as_str).unwrap_or("").is_empty() {
                causes.push(required(format!("{path}.path"), ""));
            }
            port_num_or_name(v.get("port"), &format!("{path}.port"), causes);
            let scheme = v.get("scheme").and_then(Value::as_str).unwrap_or("");
            if !matches!(scheme, "HTTP" | "HTTPS") {
                causes.push(unsupported(format!("{path}.scheme"), scheme, &["HTTP", "HTTPS"]));
            }
            for header in v.get("httpHeaders").and_then(Value::as_array).into_iter().flatten() {
                let name = header.get("name").and_then(Value::as_str).unwrap_or("");
                if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                    causes.push(invalid(
                        format!("{path}.httpHeaders"),
                        name,
                        "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', \
                         regex used for validation is '[-A-Za-z0-9]+')",
                    ));
                }
            }
        }
        "tcpSocket" => port_num_or_name(v.get("port"), &format!("{path}.port"), causes),
        "grpc" => {
            let port = int(v, "port");
            if !(1..=65535).contains(&port) {
                causes.push(number(format!("{path}.port"), port, PORT_RANGE));
            }
        }
        _ => {
            // sleep: up to the pod's grace period.
            let seconds = int(v, "seconds");
            if let Some(g) = grace
                && (seconds < 0 || seconds > g)
            {
                let detail = format!("must be non-negative and less than terminationGracePeriodSeconds ({g})");
                causes.push(number(path, seconds, &detail));
            }
        }
    }
    for other in set {
        causes.push(forbidden(format!("{at}.{other}"), "may not specify more than 1 handler type"));
    }
}

const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// kube's `ValidatePortNumOrName`: a number in range, or an IANA port name.
fn port_num_or_name(port: Option<&Value>, at: &str, causes: &mut Vec<Cause>) {
    match port {
        Some(Value::String(s)) => {
            for fault in crate::pod_spec_validation::port_name_faults(s) {
                causes.push(invalid(at.into(), s, fault));
            }
        }
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            if !(1..=65535).contains(&n) {
                causes.push(number(at.into(), n, PORT_RANGE));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn judged(c: Value, init_container: bool) -> Vec<String> {
        let mut causes = Vec::new();
        if init_container {
            init(&c, Some(30), "spec.initContainers[0]", &mut causes);
        } else {
            regular(&c, Some(30), "spec.containers[0]", &mut causes);
        }
        causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    /// A probe as defaulting leaves it.
    fn probe(handler: Value) -> Value {
        let mut p = json!({"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3});
        for (k, v) in handler.as_object().unwrap() {
            p[k] = v.clone();
        }
        p
    }

    #[test]
    fn sound_probes_and_hooks_pass() {
        let c = json!({"name": "c",
            "livenessProbe": probe(json!({"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP",
                "httpHeaders": [{"name": "X-Probe", "value": "1"}]}})),
            "readinessProbe": probe(json!({"tcpSocket": {"port": 8080}})),
            "startupProbe": probe(json!({"grpc": {"port": 9090, "service": ""}})),
            "lifecycle": {"preStop": {"sleep": {"seconds": 5}}, "postStart": {"exec": {"command": ["true"]}}}});
        assert_eq!(judged(c, false), Vec::<String>::new());
    }

    #[test]
    fn faults_are_kube_s() {
        let mut liveness =
            probe(json!({"exec": {"command": []}, "httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}}));
        liveness["successThreshold"] = json!(2);
        liveness["periodSeconds"] = json!(-1);
        let mut readiness = probe(json!({"httpGet": {"path": "", "port": 0, "scheme": "FTP",
            "httpHeaders": [{"name": "Bad Header", "value": "x"}]}}));
        readiness["terminationGracePeriodSeconds"] = json!(10);
        let c = json!({"name": "c", "livenessProbe": liveness, "readinessProbe": readiness,
            "startupProbe": probe(json!({})),
            "lifecycle": {"preStop": {"sleep": {"seconds": 60}}}});
        assert_eq!(
            judged(c, false),
            [
                "spec.containers[0].lifecycle.preStop.sleep: Invalid value: 60: must be non-negative and less than terminationGracePeriodSeconds (30)",
                "spec.containers[0].livenessProbe.exec.command: Required value",
                "spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type",
                "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
                "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
                "spec.containers[0].readinessProbe.httpGet.path: Required value",
                "spec.containers[0].readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.containers[0].readinessProbe.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"",
                "spec.containers[0].readinessProbe.httpGet.httpHeaders: Invalid value: \"Bad Header\": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
                "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: must not be set for readinessProbes",
                "spec.containers[0].startupProbe: Required value: must specify a handler type",
            ]
        );
    }

    #[test]
    fn init_containers_have_probes_only_as_sidecars() {
        let c = json!({"name": "i", "livenessProbe": probe(json!({"tcpSocket": {"port": 80}})),
            "lifecycle": {"postStart": {"exec": {"command": ["true"]}}}});
        assert_eq!(
            judged(c.clone(), true),
            [
                "spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always",
                "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
            ]
        );
        let mut sidecar = c;
        sidecar["restartPolicy"] = json!("Always");
        assert_eq!(judged(sidecar, true), Vec::<String>::new());
    }
}
