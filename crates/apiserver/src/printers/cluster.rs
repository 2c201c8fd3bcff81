//! The printers of the networking (ServiceCIDRs and IPAddresses too), RBAC, storage, scheduling, coordination, discovery,
//! admission and certificate kinds: Ingresses, IngressClasses, NetworkPolicies, RoleBindings,
//! ClusterRoleBindings, StorageClasses, PriorityClasses, Leases, EndpointSlices, webhook
//! configurations, ValidatingAdmissionPolicies and their bindings, CertificateSigningRequests,
//! APIServices.
//!
//! Invariants: as kube-apiserver v1.35's printers (see [`super`]).

use serde_json::{Value, json};

use super::{AGE, Col, Doc, NAME, Printer, age, list, name, text, text_or};
use crate::registry::ResourceInfo;

/// The printer of one of these kinds.
pub(super) fn printer(info: &ResourceInfo) -> Option<Printer> {
    let (columns, cells): (&'static [Col], super::Cells) = match (info.group.as_str(), info.plural.as_str()) {
        ("networking.k8s.io", "ingresses") => (&INGRESS, ingress),
        ("networking.k8s.io", "ingressclasses") => (&INGRESS_CLASS, ingress_class),
        ("networking.k8s.io", "networkpolicies") => (&NETWORK_POLICY, network_policy),
        ("networking.k8s.io", "servicecidrs") => (&SERVICE_CIDR, service_cidr),
        ("networking.k8s.io", "ipaddresses") => (&IP_ADDRESS, ip_address),
        ("rbac.authorization.k8s.io", "rolebindings") => (&ROLE_BINDING, binding),
        ("rbac.authorization.k8s.io", "clusterrolebindings") => (&CLUSTER_ROLE_BINDING, binding),
        ("storage.k8s.io", "storageclasses") => (&STORAGE_CLASS, storage_class),
        ("scheduling.k8s.io", "priorityclasses") => (&PRIORITY_CLASS, priority_class),
        ("coordination.k8s.io", "leases") => (&LEASE, lease),
        ("discovery.k8s.io", "endpointslices") => (&ENDPOINT_SLICE, endpoint_slice),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations" | "mutatingwebhookconfigurations") => {
            (&WEBHOOKS, webhooks)
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => (&POLICY, policy),
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => (&POLICY_BINDING, policy_binding),
        ("certificates.k8s.io", "certificatesigningrequests") => (&CSR, csr),
        ("apiregistration.k8s.io", "apiservices") => (&API_SERVICE, api_service),
        _ => return None,
    };
    Some(Printer { columns, cells })
}

const INGRESS: [Col; 6] = [
    NAME,
    Col(
        "Class",
        "string",
        "",
        0,
        Doc::Text("The name of the IngressClass resource that should be used for additional configuration"),
    ),
    Col(
        "Hosts",
        "string",
        "",
        0,
        Doc::Text("Hosts that incoming requests are matched against before the ingress rule"),
    ),
    Col("Address", "string", "", 0, Doc::Text("Address is a list containing ingress points for the load-balancer")),
    Col("Ports", "string", "", 0, Doc::Text("Ports of TLS configurations that open")),
    AGE,
];

fn ingress(v: &Value) -> Vec<Value> {
    let rules = list(v, "/spec/rules");
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for r in rules {
        if hosts.len() == 3 {
            more = true;
        }
        if !more && !text(r, "/host").is_empty() {
            hosts.push(text(r, "/host"));
        }
    }
    let hosts = match (hosts.is_empty(), more) {
        (true, _) => "*".to_string(),
        (false, false) => hosts.join(","),
        (false, true) => format!("{} + {} more...", hosts.join(","), rules.len() - 3),
    };
    let ports = if list(v, "/spec/tls").is_empty() { "80" } else { "80, 443" };
    vec![
        json!(name(v)),
        json!(text_or(v, "/spec/ingressClassName", "<none>")),
        json!(hosts),
        json!(super::core::load_balancer(v, "/status/loadBalancer/ingress")),
        json!(ports),
        json!(age(v)),
    ]
}

const INGRESS_CLASS: [Col; 4] = [
    NAME,
    Col("Controller", "string", "", 0, Doc::Text("Controller that is responsible for handling this class")),
    Col("Parameters", "string", "", 0, Doc::Text("A reference to a resource with additional parameters")),
    AGE,
];

fn ingress_class(v: &Value) -> Vec<Value> {
    let parameters = match v.pointer("/spec/parameters").filter(|p| p.is_object()) {
        None => "<none>".to_string(),
        Some(p) => {
            let group = p.get("apiGroup").and_then(Value::as_str).map(|g| format!(".{g}")).unwrap_or_default();
            format!("{}{group}/{}", text(p, "/kind"), text(p, "/name"))
        }
    };
    vec![json!(name(v)), json!(text(v, "/spec/controller")), json!(parameters), json!(age(v))]
}

const SERVICE_CIDR: [Col; 3] = [
    NAME,
    Col(
        "CIDRs",
        "string",
        "",
        0,
        Doc::Text(
            "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to \
             assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable.",
        ),
    ),
    AGE,
];

fn service_cidr(v: &Value) -> Vec<Value> {
    let cidrs: Vec<&str> = list(v, "/spec/cidrs").iter().filter_map(Value::as_str).collect();
    vec![json!(name(v)), json!(cidrs.join(",")), json!(age(v))]
}

/// kube's IPAddress printer declares two columns and fills three cells (the age last).
const IP_ADDRESS: [Col; 2] = [
    NAME,
    Col(
        "ParentRef",
        "string",
        "",
        0,
        Doc::Text(
            "ParentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent \
             object.",
        ),
    ),
];

fn ip_address(v: &Value) -> Vec<Value> {
    let parent = match v.pointer("/spec/parentRef").filter(|p| p.is_object()) {
        None => "<none>".to_string(),
        Some(p) => {
            let mut shown = match text(p, "/group") {
                "" => text(p, "/resource").to_lowercase(),
                group => format!("{}.{group}", text(p, "/resource")).to_lowercase(),
            };
            for k in ["/namespace", "/name"] {
                if !text(p, k).is_empty() || k == "/name" {
                    shown = format!("{shown}/{}", text(p, k));
                }
            }
            shown
        }
    };
    vec![json!(name(v)), json!(parent), json!(age(v))]
}

const NETWORK_POLICY: [Col; 3] = [
    NAME,
    Col(
        "Pod-Selector",
        "string",
        "",
        0,
        Doc::Text(
            "Selects the pods to which this NetworkPolicy object applies.  The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods.  In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace.",
        ),
    ),
    AGE,
];

fn network_policy(v: &Value) -> Vec<Value> {
    vec![json!(name(v)), json!(super::selector(v.pointer("/spec/podSelector"))), json!(age(v))]
}

const ROLE_BINDING: [Col; 6] = [
    NAME,
    Col(
        "Role",
        "string",
        "",
        0,
        Doc::Text(
            "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        ),
    ),
    AGE,
    Col("Users", "string", "", 1, Doc::Text("Users in the roleBinding")),
    Col("Groups", "string", "", 1, Doc::Text("Groups in the roleBinding")),
    Col("ServiceAccounts", "string", "", 1, Doc::Text("ServiceAccounts in the roleBinding")),
];

const CLUSTER_ROLE_BINDING: [Col; 6] = [
    NAME,
    Col(
        "Role",
        "string",
        "",
        0,
        Doc::Text(
            "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        ),
    ),
    AGE,
    Col("Users", "string", "", 1, Doc::Text("Users in the clusterRoleBinding")),
    Col("Groups", "string", "", 1, Doc::Text("Groups in the clusterRoleBinding")),
    Col("ServiceAccounts", "string", "", 1, Doc::Text("ServiceAccounts in the clusterRoleBinding")),
];

fn binding(v: &Value) -> Vec<Value> {
    let (mut users, mut groups, mut accounts) = (Vec::new(), Vec::new(), Vec::new());
    for s in list(v, "/subjects") {
        match text(s, "/kind") {
            "User" => users.push(text(s, "/name").to_string()),
            "Group" => groups.push(text(s, "/name").to_string()),
            "ServiceAccount" => accounts.push(format!("{}/{}", text(s, "/namespace"), text(s, "/name"))),
            _ => {}
        }
    }
    vec![
        json!(name(v)),
        json!(format!("{}/{}", text(v, "/roleRef/kind"), text(v, "/roleRef/name"))),
        json!(age(v)),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(accounts.join(", ")),
    ]
}

const STORAGE_CLASS_TYPE: &str = "io.k8s.api.storage.v1.StorageClass";

const STORAGE_CLASS: [Col; 6] = [
    NAME,
    Col("Provisioner", "string", "", 0, Doc::Field(STORAGE_CLASS_TYPE, "provisioner")),
    Col("ReclaimPolicy", "string", "", 0, Doc::Field(STORAGE_CLASS_TYPE, "reclaimPolicy")),
    Col("VolumeBindingMode", "string", "", 0, Doc::Field(STORAGE_CLASS_TYPE, "volumeBindingMode")),
    Col("AllowVolumeExpansion", "string", "", 0, Doc::Field(STORAGE_CLASS_TYPE, "allowVolumeExpansion")),
    AGE,
];

fn storage_class(v: &Value) -> Vec<Value> {
    let annotation = |k: &str| v.pointer(&format!("/metadata/annotations/{k}")).and_then(Value::as_str) == Some("true");
    let default = annotation("storageclass.kubernetes.io~1is-default-class")
        || annotation("storageclass.beta.kubernetes.io~1is-default-class");
    let shown_name = if default { format!("{} (default)", name(v)) } else { name(v).to_string() };
    vec![
        json!(shown_name),
        json!(text(v, "/provisioner")),
        json!(text_or(v, "/reclaimPolicy", "Delete")),
        json!(text_or(v, "/volumeBindingMode", "Immediate")),
        json!(v.get("allowVolumeExpansion").and_then(Value::as_bool).unwrap_or(false)),
        json!(age(v)),
    ]
}

const PRIORITY_CLASS_TYPE: &str = "io.k8s.api.scheduling.v1.PriorityClass";

const PRIORITY_CLASS: [Col; 5] = [
    NAME,
    Col("Value", "integer", "", 0, Doc::Field(PRIORITY_CLASS_TYPE, "value")),
    Col("Global-Default", "boolean", "", 0, Doc::Field(PRIORITY_CLASS_TYPE, "globalDefault")),
    AGE,
    Col("PreemptionPolicy", "string", "", 0, Doc::Field(PRIORITY_CLASS_TYPE, "preemptionPolicy")),
];

fn priority_class(v: &Value) -> Vec<Value> {
    vec![
        json!(name(v)),
        json!(super::int(v, "/value")),
        json!(v.get("globalDefault").and_then(Value::as_bool).unwrap_or(false)),
        json!(age(v)),
        json!(text(v, "/preemptionPolicy")),
    ]
}

const LEASE: [Col; 3] =
    [NAME, Col("Holder", "string", "", 0, Doc::Field("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")), AGE];

fn lease(v: &Value) -> Vec<Value> {
    vec![json!(name(v)), json!(text(v, "/spec/holderIdentity")), json!(age(v))]
}

const ENDPOINT_SLICE: [Col; 5] = [
    NAME,
    Col(
        "AddressType",
        "string",
        "",
        0,
        Doc::Text(
            "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name.",
        ),
    ),
    Col(
        "Ports",
        "string",
        "",
        0,
        Doc::Text(
            "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. When ports is empty, it indicates that there are no defined ports. When a port is defined with a nil port value, it indicates \"all ports\". Each slice may include a maximum of 100 ports.",
        ),
    ),
    Col("Endpoints", "string", "", 0, Doc::Field("io.k8s.api.discovery.v1.EndpointSlice", "endpoints")),
    AGE,
];

/// The first three items and how many more; `<unset>` when there are none.
fn with_more(items: Vec<String>) -> String {
    match items.len() {
        n if n > 3 => format!("{} + {} more...", items[..3].join(","), n - 3),
        _ if items.concat().is_empty() => "<unset>".into(),
        _ => items.join(","),
    }
}

fn endpoint_slice(v: &Value) -> Vec<Value> {
    let ports = list(v, "/ports")
        .iter()
        .map(|p| match (p.get("port").and_then(Value::as_i64), p.get("name").and_then(Value::as_str)) {
            (Some(port), _) => port.to_string(),
            (None, Some(n)) => n.to_string(),
            (None, None) => "*".into(),
        })
        .collect();
    let addresses = list(v, "/endpoints")
        .iter()
        .flat_map(|e| list(e, "/addresses").iter().filter_map(Value::as_str).map(str::to_string))
        .collect();
    vec![
        json!(name(v)),
        json!(text(v, "/addressType")),
        json!(with_more(ports)),
        json!(with_more(addresses)),
        json!(age(v)),
    ]
}

const WEBHOOKS: [Col; 3] = [
    NAME,
    Col(
        "Webhooks",
        "integer",
        "",
        0,
        Doc::Text("Webhooks indicates the number of webhooks registered in this configuration"),
    ),
    AGE,
];

fn webhooks(v: &Value) -> Vec<Value> {
    vec![json!(name(v)), json!(list(v, "/webhooks").len()), json!(age(v))]
}

const POLICY: [Col; 4] = [
    NAME,
    Col(
        "Validations",
        "integer",
        "",
        0,
        Doc::Text("Validations indicates the number of validation rules defined in this configuration"),
    ),
    Col(
        "ParamKind",
        "string",
        "",
        0,
        Doc::Text("ParamKind specifies the kind of resources used to parameterize this policy"),
    ),
    AGE,
];

fn policy(v: &Value) -> Vec<Value> {
    let param_kind = match v.pointer("/spec/paramKind").filter(|p| p.is_object()) {
        Some(p) => format!("{}/{}", text(p, "/apiVersion"), text(p, "/kind")),
        None => "<unset>".into(),
    };
    vec![json!(name(v)), json!(list(v, "/spec/validations").len()), json!(param_kind), json!(age(v))]
}

const POLICY_BINDING: [Col; 4] = [
    NAME,
    Col(
        "PolicyName",
        "string",
        "",
        0,
        Doc::Text("PolicyName indicates the policy definition which the policy binding binded to"),
    ),
    Col(
        "ParamRef",
        "string",
        "",
        0,
        Doc::Text("ParamRef indicates the param resource which sets the configration param"),
    ),
    AGE,
];

fn policy_binding(v: &Value) -> Vec<Value> {
    let param_ref = match v.pointer("/spec/paramRef").filter(|p| p.is_object()) {
        None => "<unset>".to_string(),
        Some(p) if !text(p, "/name").is_empty() => match text(p, "/namespace") {
            "" => format!("*/{}", text(p, "/name")),
            ns => format!("{ns}/{}", text(p, "/name")),
        },
        Some(p) => match p.get("selector").filter(|s| s.is_object()) {
            Some(s) => crate::selector::go_selector(s),
            None => "<unset>".into(),
        },
    };
    vec![json!(name(v)), json!(text(v, "/spec/policyName")), json!(param_ref), json!(age(v))]
}

const CSR_SPEC: &str = "io.k8s.api.certificates.v1.CertificateSigningRequestSpec";

const CSR: [Col; 6] = [
    NAME,
    AGE,
    Col("SignerName", "string", "", 0, Doc::Field(CSR_SPEC, "signerName")),
    Col("Requestor", "string", "", 0, Doc::Field(CSR_SPEC, "username")),
    Col("RequestedDuration", "string", "", 0, Doc::Field(CSR_SPEC, "expirationSeconds")),
    Col(
        "Condition",
        "string",
        "",
        0,
        Doc::Field("io.k8s.api.certificates.v1.CertificateSigningRequestStatus", "conditions"),
    ),
];

fn csr(v: &Value) -> Vec<Value> {
    let duration =
        v.pointer("/spec/expirationSeconds").and_then(Value::as_i64).map_or("<none>".into(), super::human_duration);
    vec![
        json!(name(v)),
        json!(age(v)),
        json!(text_or(v, "/spec/signerName", "<none>")),
        json!(text(v, "/spec/username")),
        json!(duration),
        json!(csr_condition(v)),
    ]
}

/// kube's condition of a certificate signing request: `Denied`, `Approved` or `Pending`, then
/// `,Failed` and `,Issued`.
fn csr_condition(v: &Value) -> String {
    let conditions = list(v, "/status/conditions");
    let has = |t: &str| conditions.iter().any(|c| text(c, "/type") == t);
    let mut out = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        out.push_str(",Failed");
    }
    if !text(v, "/status/certificate").is_empty() {
        out.push_str(",Issued");
    }
    out
}

const API_SERVICE: [Col; 4] = [
    NAME,
    Col("Service", "string", "", 0, Doc::Text("The reference to the service that hosts this API endpoint.")),
    Col("Available", "string", "", 0, Doc::Text("Whether this service is available.")),
    AGE,
];

/// `Local` or the service's `<namespace>/<name>`; the `Available` condition's status, with its
/// reason when it is not `True`.
fn api_service(v: &Value) -> Vec<Value> {
    let service = match v.pointer("/spec/service").filter(|s| !s.is_null()) {
        None => "Local".to_string(),
        Some(s) => format!("{}/{}", text(s, "/namespace"), text(s, "/name")),
    };
    let available = list(v, "/status/conditions").iter().find(|c| text(c, "/type") == "Available");
    let available = match available.map(|c| (text(c, "/status"), text(c, "/reason"))) {
        None => "Unknown".to_string(),
        Some(("True", _)) => "True".to_string(),
        Some((status, "")) => status.to_string(),
        Some((status, reason)) => format!("{status} ({reason})"),
    };
    vec![json!(name(v)), json!(service), json!(available), json!(age(v))]
}
