//! A pod spec judged as kube-apiserver's `ValidatePodSpec` judges it, wherever one is written: a
//! pod's own spec (created, updated or resized) and the pod template of a workload (a
//! StatefulSet's with a volume for each of its volume claim templates,
//! [`statefulset_pod_spec`]).
//!
//! In kube's order:
//! - the volumes: each has one volume type and a name, a DNS label unique among them;
//! - the containers (at least one), then the init containers: a name (a DNS label unique among
//!   all of the pod's containers), an image, a termination message policy, ports (valid numbers
//!   and names, a supported protocol, a name once per container, a host port once per pod),
//!   environment variables (a printable name without `=`; `valueFrom` with exactly one source
//!   and no `value`), `envFrom` with one source, volume mounts and devices, a pull policy,
//!   resources ([`crate::container_resources`]), a resize policy ([`crate::volume_mounts`]) and
//!   a security context ([`crate::security_context`]);
//! - host ports on the host network match their container ports;
//! - each container's probes and lifecycle hooks ([`crate::container_probes`]);
//! - the restart and DNS policies; the node selector; the pod security context; affinity
//!   ([`crate::pod_affinity`]); DNS config ([`crate::pod_dns`]); readiness and scheduling gates;
//!   topology spread; HostProcess containers ([`crate::windows_options`]); user namespaces
//!   ([`crate::pod_os`]); the host name override; service account and node names, deadline,
//!   tolerations and host aliases ([`crate::pod_spec_fields`]); the pod's OS;
//! - for a pod, images without surrounding spaces.
//!
//! Invariants: the checks only read the spec, as it would be stored (after defaulting); causes
//! come in kube's order with its field paths and messages.

use serde_json::Value;

use crate::pod_validation::{forbidden, number};
use crate::policy_validation::{duplicate, invalid, required, unsupported};
use crate::structural::Cause;

/// The volume types of a volume source by their JSON names, in the order kube counts them,
/// each with the name kube's field path gives it (its own spelling).
const VOLUME_TYPES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

/// Where a pod spec is written: kube judges a pod's images more strictly than a template's.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// A pod's own spec.
    Pod,
    /// A workload's pod template.
    Template,
}

/// The causes for which kube refuses `spec`, a pod spec at `at` (`spec`, `spec.template.spec`).
pub(crate) fn validate(spec: &Value, at: &str, owner: Owner) -> Vec<Cause> {
    let mut causes = Vec::new();
    let volumes = volumes(spec, at, &mut causes);
    let pod_claims = crate::container_resources::pod_claims(spec);
    let containers = list(spec, "containers");
    let grace = spec.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
    let mut names: Vec<&str> = Vec::new();
    if containers.is_empty() {
        causes.push(required(format!("{at}.containers"), ""));
    } else {
        for (i, c) in containers.iter().enumerate() {
            let path = format!("{at}.containers[{i}]");
            container(c, spec, &volumes, &pod_claims, &path, &mut causes);
            let name = name_of(c);
            if names.contains(&name) {
                causes.push(duplicate(format!("{path}.name"), name));
            } else {
                names.push(name);
            }
            crate::container_probes::regular(c, grace, &path, &mut causes);
        }
        host_port_conflicts(containers.iter().enumerate(), &format!("{at}.containers"), &mut causes);
    }
    // Init containers' names are unique among the regular ones' too.
    names = containers.iter().map(name_of).collect();
    for (i, c) in list(spec, "initContainers").iter().enumerate() {
        let path = format!("{at}.initContainers[{i}]");
        container(c, spec, &volumes, &pod_claims, &path, &mut causes);
        let name = name_of(c);
        if names.contains(&name) {
            causes.push(duplicate(format!("{path}.name"), name));
        } else if !name.is_empty() {
            names.push(name);
        }
        // kube looks for conflicts within each init container alone, at index 0.
        host_port_conflicts(std::iter::once((0, c)), &format!("{at}.initContainers"), &mut causes);
        crate::container_probes::init(c, grace, &path, &mut causes);
    }
    causes.extend(crate::pod_ephemeral_containers::containers(spec, at, &volumes, &pod_claims));
    if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
        host_network_ports(containers, at, owner, &mut causes);
    }
    policy(spec, "restartPolicy", at, &["Always", "OnFailure", "Never"], &mut causes);
    policy(spec, "dnsPolicy", at, &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"], &mut causes);
    crate::pod_spec_fields::node_selector(spec, at, &mut causes);
    crate::security_context::pod(spec, at, &mut causes);
    crate::pod_affinity::affinity(spec, at, &mut causes);
    crate::pod_dns::dns_config(spec, at, &mut causes);
    crate::pod_spec_fields::gates(spec, at, &mut causes);
    crate::pod_affinity::topology_spread(spec, at, &mut causes);
    crate::windows_options::host_process(spec, at, &mut causes);
    crate::pod_os::host_users(spec, at, &mut causes);
    crate::pod_dns::hostname_override(spec, at, &mut causes);
    crate::pod_spec_fields::validate(spec, at, &mut causes);
    crate::pod_os::os(spec, at, &mut causes);
    match owner {
        Owner::Pod => {
            for key in ["containers", "initContainers"] {
                for (i, c) in list(spec, key).iter().enumerate() {
                    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                    if image.trim() != image {
                        let field = format!("{at}.{key}[{i}].image");
                        causes.push(invalid(field, image, "must not have leading or trailing whitespace"));
                    }
                }
            }
        }
        // (A template's ephemeral containers are judged with its metadata, after its spec:
        // [`crate::pod_annotations::template`].)
        Owner::Template => {}
    }
    causes
}

/// The spec of a template that is not there: Go's zero value, which kube defaults and judges.
pub(crate) fn zero_template_spec() -> Value {
    let mut spec = serde_json::Map::new();
    crate::defaults::pod_spec_defaults(&mut spec);
    Value::Object(spec)
}

/// The pod spec kube judges for the StatefulSet spec `sts`: its template's, without the host
/// name and subdomain the controller sets, whose volumes are
/// first one for each volume claim template (claiming it), then the template's own volumes but
/// those named as a claim template (which the claim's volume replaces in the pods). None without
/// a template.
pub(crate) fn statefulset_pod_spec(sts: &Value) -> Option<Value> {
    let mut spec = sts.pointer("/template/spec").cloned()?;
    if let Value::Object(m) = &mut spec {
        // The StatefulSet controller sets these itself (the pod's name, the service name).
        m.remove("hostname");
        m.remove("subdomain");
    }
    let claims: Vec<&str> = list(sts, "volumeClaimTemplates")
        .iter()
        .map(|t| t.pointer("/metadata/name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    if claims.is_empty() {
        return Some(spec);
    }
    let mut volumes: Vec<Value> = Vec::new();
    for name in &claims {
        if !volumes.iter().any(|v| name_of(v) == *name) {
            volumes.push(serde_json::json!({"name": name, "persistentVolumeClaim": {"claimName": name}}));
        }
    }
    volumes.extend(list(&spec, "volumes").iter().filter(|v| !claims.contains(&name_of(v))).cloned());
    if let Value::Object(m) = &mut spec {
        m.insert("volumes".into(), Value::Array(volumes));
    }
    Some(spec)
}

/// The checks kube's `validateContainerCommon` makes of every container at `path` of the pod
/// spec `spec`, in its order; `volumes` are the names of the pod's valid volumes
/// ([`valid_volumes`]).
pub(crate) fn container(
    c: &Value,
    spec: &Value,
    volumes: &[&str],
    pod_claims: &[&str],
    path: &str,
    causes: &mut Vec<Cause>,
) {
    let name = name_of(c);
    if name.is_empty() {
        causes.push(required(format!("{path}.name"), ""));
    } else {
        for fault in crate::cel_format::dns1123_label(name) {
            causes.push(invalid(format!("{path}.name"), name, &fault));
        }
    }
    if c.get("image").and_then(Value::as_str).unwrap_or("").is_empty() {
        causes.push(required(format!("{path}.image"), ""));
    }
    policy(c, "terminationMessagePolicy", path, &["File", "FallbackToLogsOnError"], causes);
    ports(c, path, causes);
    env(c, path, causes);
    env_from(c, path, causes);
    crate::volume_mounts::validate(c, volumes, path, causes);
    if !list(c, "volumeDevices").is_empty() {
        crate::volume_mounts::devices(c, volumes, &block_volumes(spec), path, causes);
    }
    policy(c, "imagePullPolicy", path, &["Always", "IfNotPresent", "Never"], causes);
    crate::container_resources::validate(c, pod_claims, path, causes);
    let restart = spec.get("restartPolicy").and_then(Value::as_str).unwrap_or("");
    crate::volume_mounts::resize_policy(c, restart, path, causes);
    crate::security_context::container(c, crate::security_context::host_users(spec), path, causes);
}

/// A policy field of `m` at `at`: required, and one of `supported`.
fn policy(m: &Value, key: &str, at: &str, supported: &[&str], causes: &mut Vec<Cause>) {
    let field = format!("{at}.{key}");
    match m.get(key).and_then(Value::as_str).unwrap_or("") {
        "" => causes.push(required(field, "")),
        v if supported.contains(&v) => {}
        v => causes.push(unsupported(field, v, supported)),
    }
}

/// The names of the valid volumes of the pod spec `spec` that a raw block device may use: claims
/// and ephemeral volumes.
fn block_volumes(spec: &Value) -> Vec<&str> {
    let claim = |v: &Value, k: &str| v.get(k).is_some_and(|s| !s.is_null());
    judged_volumes(spec, "", &mut Vec::new())
        .into_iter()
        .filter(|v| claim(v, "persistentVolumeClaim") || claim(v, "ephemeral"))
        .map(name_of)
        .collect()
}

/// The names of the volumes of the pod spec `spec` that have no faults: those a container may
/// mount.
pub(crate) fn valid_volumes(spec: &Value) -> Vec<&str> {
    volumes(spec, "", &mut Vec::new())
}

/// The pod's volumes, judged in order; answers the names of those without faults, which are
/// all that containers may mount.
fn volumes<'a>(spec: &'a Value, at: &str, causes: &mut Vec<Cause>) -> Vec<&'a str> {
    judged_volumes(spec, at, causes).into_iter().map(name_of).collect()
}

/// The pod's volumes judged in order (see [`volumes`]); answers those without faults.
fn judged_volumes<'a>(spec: &'a Value, at: &str, causes: &mut Vec<Cause>) -> Vec<&'a Value> {
    let mut names = Vec::new();
    let mut valid = Vec::new();
    for (i, v) in list(spec, "volumes").iter().enumerate() {
        let path = format!("{at}.volumes[{i}]");
        // kube judges the source first, then the name; a volume with any fault is not there
        // to mount.
        let mut faults = Vec::new();
        let mut types = VOLUME_TYPES.iter().filter(|(key, _)| v.get(*key).is_some_and(|s| !s.is_null()));
        if types.next().is_none() {
            faults.push(required(path.clone(), "must specify a volume type"));
        }
        for (_, shown) in types {
            faults.push(forbidden(format!("{path}.{shown}"), "may not specify more than 1 volume type"));
        }
        let name = name_of(v);
        if name.is_empty() {
            faults.push(required(format!("{path}.name"), ""));
        } else {
            for fault in crate::cel_format::dns1123_label(name) {
                faults.push(invalid(format!("{path}.name"), name, &fault));
            }
        }
        if names.contains(&name) {
            faults.push(duplicate(format!("{path}.name"), name));
        }
        if faults.is_empty() {
            names.push(name);
            valid.push(v);
        }
        causes.append(&mut faults);
    }
    valid
}

/// A container's ports: names (valid, each once), numbers in range, a supported protocol.
fn ports(c: &Value, path: &str, causes: &mut Vec<Cause>) {
    let mut names: Vec<&str> = Vec::new();
    for (j, p) in list(c, "ports").iter().enumerate() {
        let at = format!("{path}.ports[{j}]");
        let name = name_of(p);
        if !name.is_empty() {
            let faults = port_name_faults(name);
            if !faults.is_empty() {
                causes.extend(faults.iter().map(|f| invalid(format!("{at}.name"), name, f)));
            } else if names.contains(&name) {
                causes.push(duplicate(format!("{at}.name"), name));
            } else {
                names.push(name);
            }
        }
        let container_port = int(p, "containerPort");
        if container_port == 0 {
            causes.push(required(format!("{at}.containerPort"), ""));
        } else if !(1..=65535).contains(&container_port) {
            causes.push(number(format!("{at}.containerPort"), container_port, PORT_RANGE));
        }
        let host_port = int(p, "hostPort");
        if host_port != 0 && !(1..=65535).contains(&host_port) {
            causes.push(number(format!("{at}.hostPort"), host_port, PORT_RANGE));
        }
        policy(p, "protocol", &at, &["SCTP", "TCP", "UDP"], causes);
    }
}

/// kube's message for a port number out of range.
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// apimachinery's `IsValidPortName`: an IANA service name.
pub(crate) fn port_name_faults(name: &str) -> Vec<&'static str> {
    let mut faults = Vec::new();
    if name.len() > 15 {
        faults.push("must be no more than 15 characters");
    }
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        faults.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        faults.push("must contain at least one letter (a-z)");
    }
    if name.contains("--") {
        faults.push("must not contain consecutive hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        faults.push("must not begin or end with a hyphen");
    }
    faults
}

/// kube's `checkHostPortConflicts`: a host port (with its protocol and address) is taken once
/// among `containers`, numbered as they are in the list at `at`.
fn host_port_conflicts<'a>(containers: impl Iterator<Item = (usize, &'a Value)>, at: &str, causes: &mut Vec<Cause>) {
    let mut taken: Vec<String> = Vec::new();
    for (i, c) in containers {
        for (j, p) in list(c, "ports").iter().enumerate() {
            let port = int(p, "hostPort");
            if port == 0 {
                continue;
            }
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("");
            let ip = p.get("hostIP").and_then(Value::as_str).unwrap_or("");
            let key = format!("{protocol}/{ip}/{port}");
            if taken.contains(&key) {
                causes.push(duplicate(format!("{at}[{i}].ports[{j}].hostPort"), &key));
            } else {
                taken.push(key);
            }
        }
    }
}

/// On the host network a container's port is its host port: kube's `validatePodHostNetworkDeps`
/// (a template's port may leave its host port unset).
fn host_network_ports(containers: &[Value], at: &str, owner: Owner, causes: &mut Vec<Cause>) {
    for (i, c) in containers.iter().enumerate() {
        for (j, p) in list(c, "ports").iter().enumerate() {
            let host_port = int(p, "hostPort");
            if (owner == Owner::Pod || host_port != 0) && host_port != int(p, "containerPort") {
                causes.push(number(
                    format!("{at}.containers[{i}].ports[{j}].hostPort"),
                    host_port,
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
}

/// A container's environment variables: kube's `ValidateEnv` with relaxed names.
fn env(c: &Value, path: &str, causes: &mut Vec<Cause>) {
    for (k, e) in list(c, "env").iter().enumerate() {
        let at = format!("{path}.env[{k}]");
        let name = name_of(e);
        if name.is_empty() {
            causes.push(required(format!("{at}.name"), ""));
        } else if let Some(fault) = env_name_fault(name) {
            causes.push(invalid(format!("{at}.name"), name, fault));
        }
        let Some(from) = e.get("valueFrom").filter(|f| !f.is_null()) else { continue };
        let at = format!("{at}.valueFrom");
        let mut sources = 0;
        for key in ["fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef"] {
            let Some(source) = from.get(key).filter(|s| !s.is_null()) else { continue };
            sources += 1;
            if matches!(key, "configMapKeyRef" | "secretKeyRef") {
                let name = name_of(source);
                for fault in crate::cel_format::dns1123_subdomain(name) {
                    causes.push(invalid(format!("{at}.{key}.name"), name, &fault));
                }
                match source.get("key").and_then(Value::as_str).unwrap_or("") {
                    "" => causes.push(required(format!("{at}.{key}.key"), "")),
                    k => crate::config_validation::key_faults(k, &format!("{at}.{key}.key"), causes),
                }
            }
        }
        let value = e.get("value").and_then(Value::as_str).unwrap_or("");
        let fault = if sources == 0 {
            Some(
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
            )
        } else if !value.is_empty() {
            Some("may not be specified when `value` is not empty")
        } else if sources > 1 {
            Some("may not have more than one field specified at a time")
        } else {
            None
        };
        if let Some(fault) = fault {
            causes.push(invalid(at, "", fault));
        }
    }
}

/// apimachinery's `IsRelaxedEnvVarName` for a name that is not empty.
fn env_name_fault(name: &str) -> Option<&'static str> {
    let printable = |c: char| c.is_ascii() && !c.is_ascii_control() && c != '=';
    (!name.chars().all(printable))
        .then_some("a valid environment variable name must consist only of printable ASCII characters other than '='")
}

/// A container's `envFrom`: one source each, a valid prefix, named sources.
fn env_from(c: &Value, path: &str, causes: &mut Vec<Cause>) {
    for (k, e) in list(c, "envFrom").iter().enumerate() {
        let at = format!("{path}.envFrom[{k}]");
        let prefix = e.get("prefix").and_then(Value::as_str).unwrap_or("");
        if !prefix.is_empty()
            && let Some(fault) = env_name_fault(prefix)
        {
            causes.push(invalid(format!("{at}.prefix"), prefix, fault));
        }
        let mut sources = 0;
        for key in ["configMapRef", "secretRef"] {
            if let Some(source) = e.get(key).filter(|s| !s.is_null()) {
                sources += 1;
                if name_of(source).is_empty() {
                    causes.push(required(format!("{at}.{key}.name"), ""));
                }
            }
        }
        let fault = match sources {
            0 => Some("must specify one of: `configMapRef` or `secretRef`"),
            1 => None,
            _ => Some("may not have more than one field specified at a time"),
        };
        if let Some(fault) = fault {
            // kube reports the count at the list, not the item.
            causes.push(invalid(format!("{path}.envFrom"), "", fault));
        }
    }
}

/// A member's `name` (empty when it has none).
pub(crate) fn name_of(v: &Value) -> &str {
    v.get("name").and_then(Value::as_str).unwrap_or("")
}

/// An integer member (0 when missing, as Go's zero value).
pub(crate) fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// A list member (empty when missing).
pub(crate) fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(spec: Value, owner: Owner) -> Vec<String> {
        validate(&spec, "spec", owner).into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    /// A container as defaulting leaves it.
    fn container(name: &str) -> Value {
        json!({"name": name, "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
            "terminationMessagePolicy": "File"})
    }

    fn spec(containers: Value) -> Value {
        json!({"containers": containers, "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"})
    }

    #[test]
    fn a_defaulted_pod_passes() {
        let mut c = container("app");
        c["ports"] = json!([{"name": "http", "containerPort": 80, "protocol": "TCP"},
            {"name": "metrics", "containerPort": 9090, "hostPort": 9090, "protocol": "TCP"}]);
        c["env"] = json!([{"name": "MY VAR.1", "value": "x"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}}}]);
        c["envFrom"] = json!([{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}]);
        c["volumeMounts"] = json!([{"name": "data", "mountPath": "/data"}]);
        let mut s = spec(json!([c]));
        s["volumes"] = json!([{"name": "data", "emptyDir": {}}]);
        s["initContainers"] = json!([container("init")]);
        assert_eq!(messages(s, Owner::Pod), Vec::<String>::new());
    }

    #[test]
    fn containers_need_names_images_and_known_policies() {
        let mut s = spec(json!([
            {"name": "", "imagePullPolicy": "Sometimes", "terminationMessagePolicy": "File"},
            {"name": "My_App", "image": "a", "imagePullPolicy": "Always", "terminationMessagePolicy": ""},
            container("app"), container("app")
        ]));
        s["initContainers"] = json!([container("app"), container("setup"), container("setup")]);
        s["restartPolicy"] = json!("Sometimes");
        s["dnsPolicy"] = json!("");
        let label = crate::crd_validation::LABEL_MSG;
        assert_eq!(
            messages(s, Owner::Pod),
            [
                "spec.containers[0].name: Required value",
                "spec.containers[0].image: Required value",
                "spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
                &format!("spec.containers[1].name: Invalid value: \"My_App\": {label}"),
                "spec.containers[1].terminationMessagePolicy: Required value",
                "spec.containers[3].name: Duplicate value: \"app\"",
                "spec.initContainers[0].name: Duplicate value: \"app\"",
                "spec.initContainers[2].name: Duplicate value: \"setup\"",
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
                "spec.dnsPolicy: Required value",
            ]
        );
        assert_eq!(messages(spec(json!([])), Owner::Pod), ["spec.containers: Required value"]);
    }

    #[test]
    fn images_with_spaces_are_refused_only_in_pods() {
        let mut c = container("app");
        c["image"] = json!(" nginx");
        let mut s = spec(json!([c]));
        s["ephemeralContainers"] = json!([container("debug")]);
        assert_eq!(
            messages(s.clone(), Owner::Pod),
            ["spec.containers[0].image: Invalid value: \" nginx\": must not have leading or trailing whitespace"]
        );
        // (A template's ephemeral containers are refused with its metadata.)
        assert_eq!(messages(s, Owner::Template), Vec::<String>::new());
    }

    #[test]
    fn ports_are_judged_as_kube_judges_them() {
        let mut a = container("a");
        a["ports"] = json!([
            {"name": "HTTP", "containerPort": 0, "protocol": "tcp"},
            {"name": "web", "containerPort": 70000, "hostPort": 8080, "protocol": "TCP"},
            {"name": "web", "containerPort": 81, "hostPort": -1, "protocol": "TCP"},
            {"name": "-a--very-long-port-name", "containerPort": 82, "protocol": ""},
        ]);
        let mut b = container("b");
        b["ports"] = json!([{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"},
            {"containerPort": 8081, "hostPort": 8080, "protocol": "UDP"}]);
        let mut init = container("init");
        init["ports"] = json!([{"containerPort": 1, "hostPort": 9, "protocol": "TCP"},
            {"containerPort": 2, "hostPort": 9, "protocol": "TCP"}]);
        let mut s = spec(json!([a, b]));
        s["initContainers"] = json!([container("first"), init]);
        assert_eq!(
            messages(s, Owner::Template),
            [
                "spec.containers[0].ports[0].name: Invalid value: \"HTTP\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.containers[0].ports[0].name: Invalid value: \"HTTP\": must contain at least one letter (a-z)",
                "spec.containers[0].ports[0].containerPort: Required value",
                "spec.containers[0].ports[0].protocol: Unsupported value: \"tcp\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].ports[2].name: Duplicate value: \"web\"",
                "spec.containers[0].ports[2].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive",
                "spec.containers[0].ports[3].name: Invalid value: \"-a--very-long-port-name\": must be no more than 15 characters",
                "spec.containers[0].ports[3].name: Invalid value: \"-a--very-long-port-name\": must not contain consecutive hyphens",
                "spec.containers[0].ports[3].name: Invalid value: \"-a--very-long-port-name\": must not begin or end with a hyphen",
                "spec.containers[0].ports[3].protocol: Required value",
                "spec.containers[1].ports[0].hostPort: Duplicate value: \"TCP//8080\"",
                "spec.initContainers[0].ports[1].hostPort: Duplicate value: \"TCP//9\"",
            ]
        );
    }

    #[test]
    fn host_network_ports_match_their_containers() {
        let mut c = container("app");
        c["ports"] = json!([{"containerPort": 80, "protocol": "TCP"},
            {"containerPort": 81, "hostPort": 82, "protocol": "TCP"}]);
        let mut s = spec(json!([c]));
        s["hostNetwork"] = json!(true);
        let message = "must match `containerPort` when `hostNetwork` is true";
        assert_eq!(
            messages(s.clone(), Owner::Pod),
            [
                format!("spec.containers[0].ports[0].hostPort: Invalid value: 0: {message}"),
                format!("spec.containers[0].ports[1].hostPort: Invalid value: 82: {message}"),
            ]
        );
        assert_eq!(
            messages(s, Owner::Template),
            [format!("spec.containers[0].ports[1].hostPort: Invalid value: 82: {message}")]
        );
    }

    #[test]
    fn environment_variables_are_judged_as_kube_judges_them() {
        let mut c = container("app");
        c["env"] = json!([
            {"name": "", "value": "x"},
            {"name": "A=B"},
            {"name": "ÜBER"},
            {"name": "A", "valueFrom": {}},
            {"name": "B", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"},
                "secretKeyRef": {"name": "s", "key": "k"}}},
            {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"},
                "configMapKeyRef": {"name": "c"}, "secretKeyRef": {"key": "k"}}},
        ]);
        c["envFrom"] = json!([{"prefix": "A=", "configMapRef": {"name": "c"}}, {},
            {"configMapRef": {"name": "c"}, "secretRef": {"name": ""}}]);
        let subdomain = crate::cel_format::dns1123_subdomain("").remove(0);
        let printable =
            "a valid environment variable name must consist only of printable ASCII characters other than '='";
        assert_eq!(
            messages(spec(json!([c])), Owner::Pod),
            [
                "spec.containers[0].env[0].name: Required value".to_string(),
                format!("spec.containers[0].env[1].name: Invalid value: \"A=B\": {printable}"),
                format!("spec.containers[0].env[2].name: Invalid value: \"ÜBER\": {printable}"),
                "spec.containers[0].env[3].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`".into(),
                "spec.containers[0].env[4].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty".into(),
                "spec.containers[0].env[5].valueFrom.configMapKeyRef.key: Required value".into(),
                format!("spec.containers[0].env[5].valueFrom.secretKeyRef.name: Invalid value: \"\": {subdomain}"),
                "spec.containers[0].env[5].valueFrom: Invalid value: \"\": may not have more than one field specified at a time".into(),
                format!("spec.containers[0].envFrom[0].prefix: Invalid value: \"A=\": {printable}"),
                "spec.containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`".into(),
                "spec.containers[0].envFrom[2].secretRef.name: Required value".into(),
                "spec.containers[0].envFrom: Invalid value: \"\": may not have more than one field specified at a time".into(),
            ]
        );
    }

    #[test]
    fn volumes_have_one_type_and_a_unique_name() {
        let mut c = container("app");
        c["volumeMounts"] = json!([{"name": "both", "mountPath": "/a"}, {"name": "other", "mountPath": "/b"}]);
        let mut s = spec(json!([c]));
        s["volumes"] = json!([
            {"name": "data", "emptyDir": {}},
            {"name": "data", "configMap": {"name": "c"}},
            {"name": "both", "emptyDir": {}, "cephfs": {}, "downwardAPI": {}},
            {"name": "other", "secret": {"secretName": "s"}, "emptyDir": null},
            {"name": "Bad.Name"},
            {"emptyDir": {}},
            {"name": "Bad.Name", "emptyDir": {}},
        ]);
        let label = crate::crd_validation::LABEL_MSG;
        assert_eq!(
            messages(s, Owner::Pod),
            [
                "spec.volumes[1].name: Duplicate value: \"data\"",
                "spec.volumes[2].cephFS: Forbidden: may not specify more than 1 volume type",
                "spec.volumes[2].downwarAPI: Forbidden: may not specify more than 1 volume type",
                "spec.volumes[4]: Required value: must specify a volume type",
                &format!("spec.volumes[4].name: Invalid value: \"Bad.Name\": {label}"),
                "spec.volumes[5].name: Required value",
                // Not a duplicate: the first of its name had faults.
                &format!("spec.volumes[6].name: Invalid value: \"Bad.Name\": {label}"),
                // The invalid volume is not there to mount.
                "spec.containers[0].volumeMounts[0].name: Not found: \"both\"",
            ]
        );
    }

    #[test]
    fn a_statefulsets_pods_get_its_claims_as_volumes() {
        let mut c = container("db");
        c["volumeMounts"] = json!([{"name": "data", "mountPath": "/data"}, {"name": "logs", "mountPath": "/logs"}]);
        let mut template = spec(json!([c]));
        template["volumes"] = json!([{"name": "data", "emptyDir": {}, "hostPath": {"path": "/x"}},
            {"name": "logs", "emptyDir": {}}, {"name": "Bad"}]);
        let sts = json!({"template": {"spec": template}, "volumeClaimTemplates": [
            {"metadata": {"name": "data"}}, {"metadata": {"name": "data"}}]});
        let pod_spec = statefulset_pod_spec(&sts).unwrap();
        assert_eq!(
            pod_spec["volumes"],
            json!([{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "logs", "emptyDir": {}}, {"name": "Bad"}])
        );
        // The claim's volume replaces the template's own of that name; the others keep their
        // faults, at their place among the pod's volumes.
        let label = crate::crd_validation::LABEL_MSG;
        assert_eq!(
            messages(pod_spec, Owner::Template),
            [
                "spec.volumes[2]: Required value: must specify a volume type".into(),
                format!("spec.volumes[2].name: Invalid value: \"Bad\": {label}"),
            ]
        );
        let without_claims = json!({"template": {"spec": {"containers": []}}});
        assert_eq!(statefulset_pod_spec(&without_claims), Some(json!({"containers": []})));
        assert_eq!(statefulset_pod_spec(&json!({"replicas": 1})), None);
    }

    #[test]
    fn ephemeral_containers_are_judged_after_init_containers() {
        let mut debug = container("debug");
        debug["env"] = json!([{"name": "A=B"}]);
        debug["ports"] = json!([{"containerPort": 80, "protocol": "TCP"}]);
        let mut s = spec(json!([container("app")]));
        s["ephemeralContainers"] = json!([debug]);
        s["dnsPolicy"] = json!("Sometimes");
        let printable =
            "a valid environment variable name must consist only of printable ASCII characters other than '='";
        assert_eq!(
            messages(s, Owner::Template),
            [
                format!("spec.ephemeralContainers[0].env[0].name: Invalid value: \"A=B\": {printable}"),
                "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container".into(),
                "spec.dnsPolicy: Unsupported value: \"Sometimes\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"".into(),
            ]
        );
    }
}
