//! kube-apiserver v1.35's rules for the resource.k8s.io/v1 kinds of dynamic resource allocation:
//! DeviceClass, ResourceClaim (and its `status`), ResourceClaimTemplate and ResourceSlice (their
//! metadata is judged by [`crate::object_meta`]); and the warning their strategies give.
//!
//! Invariants: each check is kube's, with its field path, cause reason and message, in kube's
//! order (but for CEL selectors' cost, which is not bounded here). A list over its limit gives its one `Too many` cause and nothing of its items; a
//! repeated item of a set is named at its index. A claim's spec (and a template's) cannot change
//! once written: an update is judged by that alone (a template's is also judged whole); a claim's
//! `status` write is judged by what it changes (reservations, a new allocation, device statuses).
//! A DeviceClass's spec is judged twice on an update, so its causes repeat as kube's do. The fields
//! of features kube v1.35 leaves off are dropped before these rules run
//! ([`crate::dra_strategy`]), so their rules are not here.

use serde_json::{Map, Value};

use crate::csi_validation::{driver_name, too_long};
use crate::object::elements as items;
use crate::policy_validation::{duplicate, invalid, required, unsupported};
use crate::registry::ResourceInfo;
use crate::structural::{
    Cause, go_int_member as int, go_json, go_member as raw, go_string_member as string, go_struct,
    go_structs as structs,
};
use crate::workload_validation::invalid_value;

/// The API group of these kinds.
pub(crate) const GROUP: &str = "resource.k8s.io";
const IMMUTABLE: &str = "field is immutable";
const REQUEST_REF: &str =
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";

/// Whether `info` is one of the kinds these rules judge.
pub(crate) fn judges(info: &ResourceInfo) -> bool {
    info.group == GROUP
        && info.custom.is_none()
        && matches!(
            info.plural.as_str(),
            "deviceclasses" | "resourceclaims" | "resourceclaimtemplates" | "resourceslices"
        )
}

/// The causes of `obj`, of a kind these rules judge ([`judges`]), written over `old` (None on
/// create); `status` for a claim's `status` write.
pub(crate) fn validate(
    info: &ResourceInfo,
    obj: &Map<String, Value>,
    old: Option<&Map<String, Value>>,
    status: bool,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = member(obj, "spec");
    match (info.plural.as_str(), old) {
        ("deviceclasses", None) => device_class(spec, false, &mut causes),
        ("deviceclasses", Some(old)) => {
            device_class(spec, false, &mut causes);
            // Parameters written before are not held to the size limit again.
            let kept = crate::semantic::equal(spec.get("config"), member(old, "spec").get("config"));
            device_class(spec, kept, &mut causes);
        }
        ("resourceclaims", None) => claim_spec(spec, "spec", &mut causes),
        ("resourceclaims", Some(old)) if status => claim_status(obj, old, &mut causes),
        ("resourceclaims", Some(old)) => immutable_spec(spec, member(old, "spec"), &mut causes),
        ("resourceclaimtemplates", old) => {
            template_meta(spec.get("metadata"), &mut causes);
            claim_spec(spec.get("spec").unwrap_or(&Value::Null), "spec.spec", &mut causes);
            if let Some(old) = old {
                let old_spec = member(old, "spec");
                if !crate::semantic::equal(Some(spec), Some(old_spec)) {
                    let shown = template_spec_json(spec);
                    causes.push(invalid_value("spec", &shown, IMMUTABLE));
                }
            }
        }
        ("resourceslices", old) => slice_spec(spec, old.map(|o| member(o, "spec")), &mut causes),
        _ => {}
    }
    causes
}

/// The warning a valid ResourceSlice gets: a driver name with upper-case letters.
pub(crate) fn warnings(info: &ResourceInfo, obj: &Map<String, Value>) -> Vec<String> {
    if info.plural != "resourceslices" {
        return Vec::new();
    }
    let driver = text(member(obj, "spec").get("driver"));
    match driver.chars().any(|c| c.is_uppercase()) {
        true => vec![format!(
            "spec.driver: driver names should be lowercase; {} contains uppercase characters",
            crate::structural::go_quote(driver)
        )],
        false => Vec::new(),
    }
}

fn member<'a>(v: &'a Map<String, Value>, key: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    v.get(key).unwrap_or(&NULL)
}

fn text(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or_default()
}

fn too_many(at: &str, n: usize, max: usize) -> Cause {
    Cause {
        reason: "FieldValueTooMany",
        message: format!("Too many: {n}: must have at most {max} items"),
        field: at.into(),
    }
}

/// kube's `validateSlice` bound: the one cause of a list over `max`.
fn over(list: &[Value], max: usize, at: &str, causes: &mut Vec<Cause>) -> bool {
    if list.len() > max {
        causes.push(too_many(at, list.len(), max));
        return true;
    }
    false
}

/// kube's `validateSet` uniqueness: a repeated key named at its index.
fn repeats<'a>(keys: impl Iterator<Item = &'a str>, at: &str, causes: &mut Vec<Cause>) {
    let mut seen: Vec<&str> = Vec::new();
    for (i, key) in keys.enumerate() {
        if seen.contains(&key) {
            causes.push(duplicate(format!("{at}[{i}]"), key));
        } else {
            seen.push(key);
        }
    }
}

fn faults(at: &str, value: &str, faults: Vec<String>, causes: &mut Vec<Cause>) {
    causes.extend(faults.into_iter().map(|f| invalid(at.into(), value, &f)));
}

/// kube's `ValidateTemplateObjectMeta` of a template's `spec.metadata`: annotations and labels,
/// and nothing else of the object metadata set.
fn template_meta(meta: Option<&Value>, causes: &mut Vec<Cause>) {
    crate::object_meta::annotations(meta.and_then(|m| m.get("annotations")), "spec.metadata.annotations", causes);
    crate::object_meta::labels(meta.and_then(|m| m.get("labels")), "spec.metadata.labels", causes);
    for &key in crate::object::META_ORDER.iter().filter(|k| !matches!(**k, "labels" | "annotations")) {
        // (Named as Go lower-cases its field's first letter: `UID` is `uID`.)
        let go = if key == "uid" { "uID" } else { key };
        let set = match meta.and_then(|m| m.get(key)) {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(v) => v.as_i64() != Some(0),
        };
        if set {
            causes.push(crate::pod_validation::forbidden(format!("spec.metadata.{go}"), "cannot be set"));
        }
    }
}

fn pool_name(name: &str, at: &str, causes: &mut Vec<Cause>) {
    if name.is_empty() {
        return causes.push(required(at.into(), ""));
    }
    if name.len() > 253 {
        causes.push(too_long(at, 253));
    }
    for part in name.split('/') {
        faults(at, part, crate::cel_format::dns1123_subdomain(part), causes);
    }
}

/// kube's `validateQualifiedName` (attribute and capacity names).
fn qualified_name(name: &str, at: &str, causes: &mut Vec<Cause>) {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        [id] => c_identifier(id, at, causes),
        [domain, id] => {
            if domain.is_empty() {
                causes.push(invalid(at.into(), "", "the domain must not be empty"));
            } else {
                driver_name(domain, at, causes);
            }
            if id.is_empty() {
                causes.push(invalid(at.into(), "", "the name must not be empty"));
            } else {
                c_identifier(id, at, causes);
            }
        }
        // (kube judges no name of more parts.)
        _ => {}
    }
}

fn fully_qualified_name(name: &str, at: &str, causes: &mut Vec<Cause>) {
    qualified_name(name, at, causes);
    if !name.contains('/') {
        causes.push(invalid(
            at.into(),
            name,
            "a fully qualified name must be a domain and a name separated by a slash",
        ));
    }
}

fn c_identifier(id: &str, at: &str, causes: &mut Vec<Cause>) {
    if id.len() > 32 {
        causes.push(too_long(at, 32));
    }
    faults(at, id, crate::cel_format::c_identifier(id), causes);
}

/// The requests of a claim and their subrequests, which references name.
struct RequestNames<'a>(Vec<(&'a str, Option<Vec<&'a str>>)>);

impl<'a> RequestNames<'a> {
    fn of(devices: &'a Value) -> Self {
        let requests = items(devices.get("requests")).iter().map(|r| {
            let first = items(r.get("firstAvailable"));
            let subs = (!first.is_empty()).then(|| first.iter().map(|s| text(s.get("name"))).collect());
            (text(r.get("name")), subs)
        });
        RequestNames(requests.collect())
    }

    fn has(&self, reference: &str) -> bool {
        let segments: Vec<&str> = reference.split('/').collect();
        let found = |name: &str| self.0.iter().find(|(n, _)| *n == name);
        match segments.as_slice() {
            [request] => found(request).is_some(),
            [request, sub] => found(request).is_some_and(|(_, subs)| subs.as_ref().is_some_and(|s| s.contains(sub))),
            _ => false,
        }
    }
}

fn request_ref(reference: &str, at: &str, names: &RequestNames<'_>, causes: &mut Vec<Cause>) {
    let segments: Vec<&str> = reference.split('/').collect();
    if segments.len() > 2 {
        return causes.push(invalid(at.into(), reference, REQUEST_REF));
    }
    for segment in segments {
        faults(at, segment, crate::cel_format::dns1123_label(segment), causes);
    }
    if !names.has(reference) {
        causes.push(invalid(at.into(), reference, REQUEST_REF));
    }
}

/// A list of request references (constraints, configurations): a set of at most 32.
fn request_refs(list: Option<&Value>, at: &str, names: &RequestNames<'_>, causes: &mut Vec<Cause>) {
    let list = items(list);
    if over(list, 32, at, causes) {
        return;
    }
    for (i, r) in list.iter().enumerate() {
        request_ref(text(Some(r)), &format!("{at}[{i}]"), names, causes);
    }
    repeats(list.iter().map(|r| text(Some(r))), at, causes);
}

/// kube's `validateSelectorSlice`: at most 32, each a CEL selector over `device`.
fn selectors(list: Option<&Value>, at: &str, causes: &mut Vec<Cause>) {
    let list = items(list);
    if over(list, 32, at, causes) {
        return;
    }
    for (i, s) in list.iter().enumerate() {
        let at = format!("{at}[{i}].cel");
        let Some(cel) = s.get("cel").filter(|c| !c.is_null()) else {
            causes.push(required(at, ""));
            continue;
        };
        let expression = text(cel.get("expression"));
        let at = format!("{at}.expression");
        if expression.len() > 10240 {
            causes.push(too_long(&at, 10240));
        } else {
            selector_expression(expression, at, causes);
        }
    }
}

/// The type of a selector's `device`, as kube's DRA compiler declares it with its features of
/// v1.35: the driver, and attributes and capacities by domain and name (their values left open).
static DEVICE: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    let by_domain = serde_json::json!({"type": "object", "additionalProperties": {"type": "object",
        "additionalProperties": {"x-kubernetes-preserve-unknown-fields": true}}});
    serde_json::json!({"type": "object", "properties": {"driver": {"type": "string"},
        "attributes": by_domain, "capacity": by_domain}})
});

/// A device selector's expression compiled as kube's DRA compiler compiles it, over a typed
/// `device`: it must give a bool (or a value the checker cannot type).
fn selector_expression(expression: &str, at: String, causes: &mut Vec<Cause>) {
    let failed = |e: String| invalid(at.clone(), expression, &format!("compilation failed: {e}"));
    let program = match crate::validation_rules::compile(expression) {
        Ok(p) => p,
        Err(e) => return causes.push(failed(e)),
    };
    let device = crate::cel_check::Ty::of_schema(&DEVICE, false);
    match crate::cel_check::check_scoped(&program, expression, vec![("device".into(), device)]) {
        Err(e) => causes.push(failed(e)),
        Ok(crate::cel_check::Ty::Error | crate::cel_check::Ty::Dyn) => {}
        Ok(t) if t.to_string() == "bool" => {}
        Ok(t) => causes.push(invalid(at, expression, &format!("must evaluate to bool or the unknown type, not {t}"))),
    }
}

/// kube's `validateDeviceConfiguration`: an opaque configuration for a driver.
fn configuration(config: &Value, at: &str, stored: bool, causes: &mut Vec<Cause>) {
    let Some(opaque) = config.get("opaque").filter(|o| !o.is_null()) else {
        return causes.push(required(format!("{at}.opaque"), ""));
    };
    driver_name(text(opaque.get("driver")), &format!("{at}.opaque.driver"), causes);
    let limit = (!stored).then_some(10 * 1024);
    raw_object(opaque.get("parameters"), &format!("{at}.opaque.parameters"), limit, causes);
}

/// kube's `validateRawExtension`: a JSON object of at most `limit` bytes (as written again).
fn raw_object(raw: Option<&Value>, at: &str, limit: Option<usize>, causes: &mut Vec<Cause>) {
    match (raw, limit) {
        (None | Some(Value::Null), _) => causes.push(required(at.into(), "")),
        (Some(v), Some(limit)) if serde_json::to_vec(v).map_or(0, |b| b.len()) > limit => {
            causes.push(too_long(at, limit))
        }
        (Some(Value::Object(_)), _) => {}
        (Some(_), _) => causes.push(invalid(at.into(), "<value omitted>", "must be a valid JSON object")),
    }
}

fn device_class(spec: &Value, stored: bool, causes: &mut Vec<Cause>) {
    selectors(spec.get("selectors"), "spec.selectors", causes);
    let config = items(spec.get("config"));
    if !over(config, 32, "spec.config", causes) {
        for (i, c) in config.iter().enumerate() {
            configuration(c, &format!("spec.config[{i}]"), stored, causes);
        }
    }
}

/// kube's `validateDeviceAllocationMode`.
fn allocation_mode(request: &Value, at: &str, causes: &mut Vec<Cause>) {
    let count = request.get("count").and_then(Value::as_i64).unwrap_or(0);
    match text(request.get("allocationMode")) {
        "All" if count != 0 => causes.push(crate::pod_validation::number(
            format!("{at}.count"),
            count,
            "must not be specified when allocationMode is 'All'",
        )),
        "All" => {}
        "ExactCount" if count <= 0 => {
            causes.push(crate::pod_validation::number(format!("{at}.count"), count, "must be greater than zero"))
        }
        "ExactCount" => {}
        mode => causes.push(unsupported(format!("{at}.allocationMode"), mode, &["All", "ExactCount"])),
    }
}

fn device_class_name(name: &str, at: &str, causes: &mut Vec<Cause>) {
    if name.is_empty() {
        return causes.push(required(at.into(), ""));
    }
    faults(at, name, crate::cel_format::dns1123_subdomain(name), causes);
}

/// kube's `validateResourceClaimSpec` of the spec at `at`.
fn claim_spec(spec: &Value, at: &str, causes: &mut Vec<Cause>) {
    let devices = spec.get("devices").unwrap_or(&Value::Null);
    let at = format!("{at}.devices");
    let names = RequestNames::of(devices);
    let requests = items(devices.get("requests"));
    let requests_at = format!("{at}.requests");
    if !over(requests, 32, &requests_at, causes) {
        for (i, r) in requests.iter().enumerate() {
            device_request(r, &format!("{requests_at}[{i}]"), causes);
        }
        repeats(requests.iter().map(|r| text(r.get("name"))), &requests_at, causes);
    }
    let constraints = items(devices.get("constraints"));
    if !over(constraints, 32, &format!("{at}.constraints"), causes) {
        for (i, c) in constraints.iter().enumerate() {
            let at = format!("{at}.constraints[{i}]");
            request_refs(c.get("requests"), &format!("{at}.requests"), &names, causes);
            match c.get("matchAttribute").and_then(Value::as_str) {
                Some(attribute) => fully_qualified_name(attribute, &format!("{at}.matchAttribute"), causes),
                None => causes.push(required(format!("{at}.matchAttribute"), "")),
            }
        }
    }
    let config = items(devices.get("config"));
    if !over(config, 32, &format!("{at}.config"), causes) {
        for (i, c) in config.iter().enumerate() {
            let at = format!("{at}.config[{i}]");
            request_refs(c.get("requests"), &format!("{at}.requests"), &names, causes);
            configuration(c, &at, false, causes);
        }
    }
}

fn device_request(request: &Value, at: &str, causes: &mut Vec<Cause>) {
    let name = text(request.get("name"));
    faults(&format!("{at}.name"), name, crate::cel_format::dns1123_label(name), causes);
    let first = items(request.get("firstAvailable"));
    let exactly = request.get("exactly").filter(|e| !e.is_null());
    match (exactly, first.is_empty()) {
        (None, true) => causes.push(required(at.into(), "exactly one of `exactly` or `firstAvailable` is required")),
        (Some(_), false) => causes.push(invalid_value(
            at,
            "null",
            "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
        )),
        (None, false) => {
            let first_at = format!("{at}.firstAvailable");
            if over(first, 8, &first_at, causes) {
                return;
            }
            for (j, sub) in first.iter().enumerate() {
                let at = format!("{first_at}[{j}]");
                let name = text(sub.get("name"));
                faults(&format!("{at}.name"), name, crate::cel_format::dns1123_label(name), causes);
                device_class_name(text(sub.get("deviceClassName")), &format!("{at}.deviceClassName"), causes);
                selectors(sub.get("selectors"), &format!("{at}.selectors"), causes);
                allocation_mode(sub, &at, causes);
            }
            repeats(first.iter().map(|s| text(s.get("name"))), &first_at, causes);
        }
        (Some(exactly), true) => {
            let at = format!("{at}.exactly");
            device_class_name(text(exactly.get("deviceClassName")), &format!("{at}.deviceClassName"), causes);
            selectors(exactly.get("selectors"), &format!("{at}.selectors"), causes);
            allocation_mode(exactly, &at, causes);
        }
    }
}

/// A claim's spec that changed: kube's `ValidateImmutableField`, printing the spec as kube
/// prints its internal type.
fn immutable_spec(spec: &Value, old: &Value, causes: &mut Vec<Cause>) {
    if !crate::semantic::equal(Some(spec), Some(old)) {
        causes.push(invalid_value("spec", &claim_spec_json(spec), IMMUTABLE));
    }
}

/// kube's `ValidateResourceClaimStatusUpdate` of the claim `obj` over `old`.
fn claim_status(obj: &Map<String, Value>, old: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let status = member(obj, "status");
    let old_status = member(old, "status");
    let names = RequestNames::of(member(obj, "spec").get("devices").unwrap_or(&Value::Null));
    let reserved = items(status.get("reservedFor"));
    if !over(reserved, 256, "status.reservedFor", causes) {
        for (i, r) in reserved.iter().enumerate() {
            for key in ["resource", "name", "uid"] {
                if text(r.get(key)).is_empty() {
                    causes.push(required(format!("status.reservedFor[{i}].{key}"), ""));
                }
            }
        }
        repeats(reserved.iter().map(|r| text(r.get("uid"))), "status.reservedFor", causes);
    }
    let allocation = status.get("allocation").filter(|a| !a.is_null());
    let allocated: Vec<DeviceId> =
        allocation.map(|a| items(a.pointer("/devices/results")).iter().map(device_id).collect()).unwrap_or_default();
    let devices = items(status.get("devices"));
    for (i, d) in devices.iter().enumerate() {
        let at = format!("status.devices[{i}]");
        driver_name(text(d.get("driver")), &format!("{at}.driver"), causes);
        pool_name(text(d.get("pool")), &format!("{at}.pool"), causes);
        let device = text(d.get("device"));
        faults(&format!("{at}.device"), device, crate::cel_format::dns1123_label(device), causes);
        let id = device_id(d);
        if !allocated.contains(&id) {
            causes.push(invalid_value(&at, &device_id_json(&id), "must be an allocated device in the claim"));
        }
        let conditions = items(d.get("conditions"));
        if conditions.len() > 8 {
            causes.push(too_many(&format!("{at}.conditions"), conditions.len(), 8));
        }
        crate::conditions::validate(conditions, &format!("{at}.conditions"), causes);
        if d.get("data").is_some_and(|v| !v.is_null()) {
            raw_object(d.get("data"), &format!("{at}.data"), Some(10 * 1024), causes);
        }
        if let Some(network) = d.get("networkData").filter(|n| !n.is_null()) {
            if text(network.get("interfaceName")).len() > 256 {
                causes.push(too_long(&format!("{at}.networkData.interfaceName"), 256));
            }
            if text(network.get("hardwareAddress")).len() > 128 {
                causes.push(too_long(&format!("{at}.networkData.hardwareAddress"), 128));
            }
            let ips = items(network.get("ips"));
            let ips_at = format!("{at}.networkData.ips");
            if !over(ips, 16, &ips_at, causes) {
                for (k, ip) in ips.iter().enumerate() {
                    let ip = text(Some(ip));
                    faults(&format!("{ips_at}[{k}]"), ip, interface_address(ip), causes);
                }
                repeats(ips.iter().map(|ip| text(Some(ip))), &ips_at, causes);
            }
        }
    }
    // (Repeats are named by the device's identity, as kube prints it.)
    let ids: Vec<DeviceId> = devices.iter().map(device_id).collect();
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            causes.push(Cause {
                reason: "FieldValueDuplicate",
                message: format!("Duplicate value: {}", device_id_json(id)),
                field: format!("status.devices[{i}]"),
            });
        }
    }
    if !reserved.is_empty() {
        if allocation.is_none() {
            causes.push(crate::pod_validation::forbidden(
                "status.reservedFor".into(),
                "may not be specified when `allocated` is not set",
            ));
        } else if member(obj, "metadata").get("deletionTimestamp").is_some_and(|t| !t.is_null()) {
            // Entries compare as kube's structs: a missing member is an empty one.
            let entry = |r: &Value| ["apiGroup", "resource", "name", "uid"].map(|k| text(r.get(k)).to_string());
            let before: Vec<_> = items(old_status.get("reservedFor")).iter().map(entry).collect();
            if reserved.iter().any(|r| !before.contains(&entry(r))) {
                causes.push(crate::pod_validation::forbidden(
                    "status.reservedFor".into(),
                    "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
                ));
            }
        }
    }
    match (allocation, old_status.get("allocation").filter(|a| !a.is_null())) {
        (Some(new), Some(before)) if !crate::semantic::equal(Some(new), Some(before)) => {
            causes.push(invalid_value("status.allocation", &allocation_json(new), IMMUTABLE));
        }
        (Some(new), None) => allocation_result(new, &names, causes),
        _ => {}
    }
}

/// A device's identity: driver, pool, device and share ID.
pub(crate) type DeviceId = [String; 4];

/// The identity of the device `d` (an allocation result or a device status).
pub(crate) fn device_id(d: &Value) -> DeviceId {
    ["driver", "pool", "device", "shareID"].map(|k| text(d.get(k)).to_string())
}

/// A device's identity as kube's field errors print its `SharedDeviceID`.
fn device_id_json(id: &DeviceId) -> String {
    let [driver, pool, device, share] = id.clone().map(Value::from);
    go_struct(&[
        ("Driver", go_json(&driver)),
        ("Pool", go_json(&pool)),
        ("Device", go_json(&device)),
        ("ShareID", go_json(&share)),
    ])
}

/// kube's `IsValidInterfaceAddress`: an address with its prefix length, in canonical form.
fn interface_address(s: &str) -> Vec<String> {
    const FORM: &str = "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)";
    let parsed = s.split_once('/').and_then(|(ip, prefix)| {
        let ip = sloppy_ip(ip)?;
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        let prefix: u32 = (!prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_digit()))
            .then(|| prefix.parse().ok())
            .flatten()
            .filter(|p| *p <= bits)?;
        Some((ip, prefix))
    });
    let Some((ip, mut prefix)) = parsed else { return vec![FORM.into()] };
    // An IPv4 address written in IPv6 form is printed, and its prefix counted, as IPv4.
    let shown = match ip {
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => {
                prefix = prefix.saturating_sub(96);
                v4.to_string()
            }
            None => v6.to_string(),
        },
        std::net::IpAddr::V4(v4) => v4.to_string(),
    };
    let canonical = format!("{shown}/{prefix}");
    match canonical == s {
        true => Vec::new(),
        false => vec![format!("must be in canonical form ({})", crate::structural::go_quote(&canonical))],
    }
}

/// An address as Kubernetes' sloppy parser reads it: IPv4 octets may have leading zeros (read
/// as decimal).
fn sloppy_ip(s: &str) -> Option<std::net::IpAddr> {
    if s.contains(':') {
        return s.parse::<std::net::Ipv6Addr>().ok().map(std::net::IpAddr::V6);
    }
    let octets: Vec<u8> = s
        .split('.')
        .map(|o| {
            (!o.is_empty() && o.len() <= 3 && o.bytes().all(|b| b.is_ascii_digit())).then(|| o.parse().ok()).flatten()
        })
        .collect::<Option<_>>()?;
    let octets: [u8; 4] = octets.try_into().ok()?;
    Some(std::net::IpAddr::from(octets))
}

/// kube's `validateAllocationResult` of a new allocation.
fn allocation_result(allocation: &Value, names: &RequestNames<'_>, causes: &mut Vec<Cause>) {
    let at = "status.allocation.devices";
    let results = items(allocation.pointer("/devices/results"));
    if !over(results, 32, &format!("{at}.results"), causes) {
        for (i, r) in results.iter().enumerate() {
            let at = format!("{at}.results[{i}]");
            request_ref(text(r.get("request")), &format!("{at}.request"), names, causes);
            driver_name(text(r.get("driver")), &format!("{at}.driver"), causes);
            pool_name(text(r.get("pool")), &format!("{at}.pool"), causes);
            let device = text(r.get("device"));
            faults(&format!("{at}.device"), device, crate::cel_format::dns1123_label(device), causes);
        }
    }
    let config = items(allocation.pointer("/devices/config"));
    if !over(config, 64, &format!("{at}.config"), causes) {
        for (i, c) in config.iter().enumerate() {
            let at = format!("{at}.config[{i}]");
            match text(c.get("source")) {
                "" => causes.push(required(format!("{at}.source"), "")),
                "FromClaim" | "FromClass" => {}
                other => causes.push(unsupported(format!("{at}.source"), other, &["FromClaim", "FromClass"])),
            }
            request_refs(c.get("requests"), &format!("{at}.requests"), names, causes);
            configuration(c, &at, false, causes);
        }
    }
    if let Some(selector) = allocation.get("nodeSelector").filter(|s| !s.is_null()) {
        crate::pod_affinity::node_selector(selector, "status.allocation.nodeSelector", causes);
    }
}

/// kube's `validateResourceSliceSpec` of `spec` over `old` (None on create).
fn slice_spec(spec: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    let driver = text(spec.get("driver"));
    driver_name(driver, "spec.driver", causes);
    let pool = spec.get("pool").unwrap_or(&Value::Null);
    pool_name(text(pool.get("name")), "spec.pool.name", causes);
    let number = |k: &str| pool.get(k).and_then(Value::as_i64).unwrap_or(0);
    if number("resourceSliceCount") <= 0 {
        causes.push(crate::pod_validation::number(
            "spec.pool.resourceSliceCount".into(),
            number("resourceSliceCount"),
            "must be greater than zero",
        ));
    }
    if number("generation") < 0 {
        causes.push(crate::pod_validation::number(
            "spec.pool.generation".into(),
            number("generation"),
            "must be greater than or equal to zero",
        ));
    }
    if let Some(old) = old {
        let old_pool = text(old.get("pool").and_then(|p| p.get("name")));
        if text(pool.get("name")) != old_pool {
            causes.push(invalid("spec.pool.name".into(), text(pool.get("name")), IMMUTABLE));
        }
        if driver != text(old.get("driver")) {
            causes.push(invalid("spec.driver".into(), driver, IMMUTABLE));
        }
        let node = |s: &Value| s.get("nodeName").and_then(Value::as_str).map(str::to_string);
        if node(spec) != node(old) {
            let shown = node(spec).map_or_else(|| "null".to_string(), |n| crate::structural::go_quote(&n));
            causes.push(invalid_value("spec.nodeName", &shown, IMMUTABLE));
        }
    }
    let mut set = Vec::new();
    if let Some(name) = spec.get("nodeName").and_then(Value::as_str) {
        if name.is_empty() {
            causes.push(invalid("spec.nodeName".into(), "", "must be either unset or set to a non-empty string"));
        } else {
            set.push("`nodeName`");
            faults("spec.nodeName", name, crate::cel_format::dns1123_subdomain(name), causes);
        }
    }
    if let Some(selector) = spec.get("nodeSelector").filter(|s| !s.is_null()) {
        set.push("`nodeSelector`");
        crate::pod_affinity::node_selector(selector, "spec.nodeSelector", causes);
        let terms = items(selector.get("nodeSelectorTerms"));
        if terms.len() != 1 {
            causes.push(invalid_value(
                "spec.nodeSelector.nodeSelectorTerms",
                &node_selector_terms_json(selector.get("nodeSelectorTerms")),
                "must have exactly one node selector term",
            ));
        }
    }
    for (key, shown) in [("allNodes", "`allNodes`"), ("perDeviceNodeSelection", "`perDeviceNodeSelection`")] {
        match spec.get(key).and_then(Value::as_bool) {
            Some(true) => set.push(shown),
            Some(false) => {
                causes.push(invalid_value(&format!("spec.{key}"), "false", "must be either unset or set to true"))
            }
            None => {}
        }
    }
    const ONE_OF: &str = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";
    match set.len() {
        0 => causes.push(required("spec".into(), ONE_OF)),
        1 => {}
        _ => causes.push(invalid(
            "spec".into(),
            &format!("{{{}}}", set.join(", ")),
            &format!("{ONE_OF}, but multiple fields are set"),
        )),
    }
    let devices = items(spec.get("devices"));
    if over(devices, 128, "spec.devices", causes) {
        return;
    }
    for (i, d) in devices.iter().enumerate() {
        device(d, &format!("spec.devices[{i}]"), causes);
    }
    repeats(devices.iter().map(|d| text(d.get("name"))), "spec.devices", causes);
}

fn device(d: &Value, at: &str, causes: &mut Vec<Cause>) {
    let name = text(d.get("name"));
    faults(&format!("{at}.name"), name, crate::cel_format::dns1123_label(name), causes);
    let attributes = d.get("attributes").and_then(Value::as_object);
    let capacity = d.get("capacity").and_then(Value::as_object);
    let total = attributes.map_or(0, Map::len) + capacity.map_or(0, Map::len);
    if total > 32 {
        causes.push(invalid_value(
            at,
            &total.to_string(),
            "the total number of attributes and capacities must not exceed 32",
        ));
    }
    for (key, value) in attributes.into_iter().flatten() {
        let at = format!("{at}.attributes[{}]", truncated(key));
        qualified_name(key, &at, causes);
        attribute(value, &at, causes);
    }
    for key in capacity.into_iter().flatten().map(|(k, _)| k) {
        qualified_name(key, &format!("{at}.capacity[{}]", truncated(key)), causes);
    }
}

/// kube's `truncateIfTooLong` of a map key in a path (its keys are at most 96 bytes).
fn truncated(key: &str) -> String {
    const MAX: usize = 63 + 1 + 32;
    if key.len() <= MAX || !key.is_ascii() {
        return key.to_string();
    }
    let remaining = MAX - 3;
    format!("{}...{}", &key[..remaining.div_ceil(2)], &key[key.len() - remaining / 2..])
}

/// kube's `validateDeviceAttribute`: exactly one value, strings and versions of at most 64 bytes,
/// versions in semver 2.0.0.
fn attribute(value: &Value, at: &str, causes: &mut Vec<Cause>) {
    let present = |k: &str| value.get(k).filter(|v| !v.is_null());
    let mut n = 0;
    for key in ["bool", "int", "string", "version"] {
        let Some(v) = present(key) else { continue };
        n += 1;
        let s = text(Some(v));
        if key == "version" && !semver(s) {
            causes.push(invalid(format!("{at}.version"), s, "must be a string compatible with semver.org spec 2.0.0"));
        }
        if (key == "string" || key == "version") && s.len() > 64 {
            causes.push(too_long(&format!("{at}.{key}"), 64));
        }
    }
    match n {
        0 => causes.push(invalid(at.into(), "", "exactly one value must be specified")),
        1 => {}
        _ => {
            let shown = go_struct(&[
                ("IntValue", go_json(present("int").unwrap_or(&Value::Null))),
                ("BoolValue", go_json(present("bool").unwrap_or(&Value::Null))),
                ("StringValue", go_json(present("string").unwrap_or(&Value::Null))),
                ("VersionValue", go_json(present("version").unwrap_or(&Value::Null))),
            ]);
            causes.push(invalid_value(at, &shown, "exactly one value must be specified"));
        }
    }
}

/// Whether `s` is a semantic version (semver.org 2.0.0, without a leading `v`).
fn semver(s: &str) -> bool {
    let (rest, build) = match s.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (s, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    let numeric = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && (p == "0" || !p.starts_with('0'));
    let ident = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let core_ok = core.split('.').count() == 3 && core.split('.').all(numeric);
    let pre_ok = pre
        .is_none_or(|p| p.split('.').all(|id| ident(id) && (numeric(id) || !id.bytes().all(|b| b.is_ascii_digit()))));
    let build_ok = build.is_none_or(|b| b.split('.').all(ident));
    core_ok && pre_ok && build_ok
}

/// The node selector terms as kube prints its internal type.
fn node_selector_terms_json(terms: Option<&Value>) -> String {
    let Some(terms) = terms.and_then(Value::as_array) else { return "null".into() };
    let requirement = |r: &Value| {
        go_struct(&[
            ("Key", go_json(&Value::from(text(r.get("key"))))),
            ("Operator", go_json(&Value::from(text(r.get("operator"))))),
            ("Values", go_json(r.get("values").unwrap_or(&Value::Null))),
        ])
    };
    let list = |v: Option<&Value>| match v.and_then(Value::as_array) {
        Some(a) => format!("[{}]", a.iter().map(requirement).collect::<Vec<_>>().join(",")),
        None => "null".into(),
    };
    let shown: Vec<String> = terms
        .iter()
        .map(|t| {
            go_struct(&[
                ("MatchExpressions", list(t.get("matchExpressions"))),
                ("MatchFields", list(t.get("matchFields"))),
            ])
        })
        .collect();
    format!("[{}]", shown.join(","))
}

/// Go's JSON of a member (`null` when missing).
fn selectors_json(v: Option<&Value>) -> String {
    structs(v, |s| {
        let cel = s.get("cel").filter(|c| !c.is_null());
        go_struct(&[("CEL", cel.map_or("null".into(), |c| go_struct(&[("Expression", string(c, "expression"))])))])
    })
}

fn tolerations_json(v: Option<&Value>) -> String {
    structs(v, |t| {
        go_struct(&[
            ("Key", string(t, "key")),
            ("Operator", string(t, "operator")),
            ("Value", string(t, "value")),
            ("Effect", string(t, "effect")),
            ("TolerationSeconds", raw(t, "tolerationSeconds")),
        ])
    })
}

fn capacity_json(v: Option<&Value>) -> String {
    match v.filter(|c| !c.is_null()) {
        Some(c) => go_struct(&[("Requests", raw(c, "requests"))]),
        None => "null".into(),
    }
}

fn opaque_json(c: &Value) -> String {
    match c.get("opaque").filter(|o| !o.is_null()) {
        Some(o) => go_struct(&[("Driver", string(o, "driver")), ("Parameters", raw(o, "parameters"))]),
        None => "null".into(),
    }
}

/// A claim's spec as kube prints its internal `ResourceClaimSpec`.
fn claim_spec_json(spec: &Value) -> String {
    let devices = spec.get("devices").unwrap_or(&Value::Null);
    let requests = structs(devices.get("requests"), |r| {
        let exactly = r.get("exactly").filter(|e| !e.is_null()).map_or("null".into(), |e| {
            go_struct(&[
                ("DeviceClassName", string(e, "deviceClassName")),
                ("Selectors", selectors_json(e.get("selectors"))),
                ("AllocationMode", string(e, "allocationMode")),
                ("Count", int(e, "count")),
                ("AdminAccess", raw(e, "adminAccess")),
                ("Tolerations", tolerations_json(e.get("tolerations"))),
                ("Capacity", capacity_json(e.get("capacity"))),
            ])
        });
        let first = structs(r.get("firstAvailable"), |s| {
            go_struct(&[
                ("Name", string(s, "name")),
                ("DeviceClassName", string(s, "deviceClassName")),
                ("Selectors", selectors_json(s.get("selectors"))),
                ("AllocationMode", string(s, "allocationMode")),
                ("Count", int(s, "count")),
                ("Tolerations", tolerations_json(s.get("tolerations"))),
                ("Capacity", capacity_json(s.get("capacity"))),
            ])
        });
        go_struct(&[("Name", string(r, "name")), ("Exactly", exactly), ("FirstAvailable", first)])
    });
    let constraints = structs(devices.get("constraints"), |c| {
        go_struct(&[
            ("Requests", raw(c, "requests")),
            ("MatchAttribute", raw(c, "matchAttribute")),
            ("DistinctAttribute", raw(c, "distinctAttribute")),
        ])
    });
    let config =
        structs(devices.get("config"), |c| go_struct(&[("Requests", raw(c, "requests")), ("Opaque", opaque_json(c))]));
    let devices = go_struct(&[("Requests", requests), ("Constraints", constraints), ("Config", config)]);
    go_struct(&[("Devices", devices)])
}

/// A template's spec as kube prints its internal `ResourceClaimTemplateSpec`: its embedded
/// `ObjectMeta` inline with its JSON names (empty members left out), then the claim's spec.
fn template_spec_json(spec: &Value) -> String {
    let meta = spec.get("metadata");
    let mut fields: Vec<(&str, String)> = Vec::new();
    for &key in crate::object::META_ORDER {
        let v = meta.and_then(|m| m.get(key)).filter(|v| crate::semantic::normalized(Some(v)).is_some());
        let zero = matches!(v, Some(Value::String(s)) if s.is_empty()) || v.and_then(Value::as_i64) == Some(0);
        if let Some(v) = v.filter(|_| !zero) {
            fields.push((key, go_json(v)));
        }
    }
    fields.push(("Spec", claim_spec_json(spec.get("spec").unwrap_or(&Value::Null))));
    go_struct(&fields)
}

/// An allocation as kube prints its internal `AllocationResult`.
fn allocation_json(allocation: &Value) -> String {
    let devices = allocation.get("devices").unwrap_or(&Value::Null);
    let results = structs(devices.get("results"), |r| {
        go_struct(&[
            ("Request", string(r, "request")),
            ("Driver", string(r, "driver")),
            ("Pool", string(r, "pool")),
            ("Device", string(r, "device")),
            ("AdminAccess", raw(r, "adminAccess")),
            ("Tolerations", tolerations_json(r.get("tolerations"))),
            ("BindingConditions", raw(r, "bindingConditions")),
            ("BindingFailureConditions", raw(r, "bindingFailureConditions")),
            ("ShareID", raw(r, "shareID")),
            ("ConsumedCapacity", raw(r, "consumedCapacity")),
        ])
    });
    let config = structs(devices.get("config"), |c| {
        go_struct(&[("Source", string(c, "source")), ("Requests", raw(c, "requests")), ("Opaque", opaque_json(c))])
    });
    let selector = allocation.get("nodeSelector").filter(|s| !s.is_null()).map_or("null".into(), |s| {
        go_struct(&[("NodeSelectorTerms", node_selector_terms_json(s.get("nodeSelectorTerms")))])
    });
    go_struct(&[
        ("Devices", go_struct(&[("Results", results), ("Config", config)])),
        ("NodeSelector", selector),
        ("AllocationTimestamp", raw(allocation, "allocationTimestamp")),
    ])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn info(plural: &str, namespaced: bool) -> ResourceInfo {
        ResourceInfo::new(GROUP, "v1", plural, "Kind", namespaced)
    }

    fn causes(plural: &str, obj: Value, old: Option<Value>, status: bool) -> Vec<(String, String)> {
        let obj = obj.as_object().cloned().unwrap();
        let old = old.map(|o| o.as_object().cloned().unwrap());
        validate(&info(plural, true), &obj, old.as_ref(), status).into_iter().map(|c| (c.field, c.message)).collect()
    }

    #[test]
    fn a_claim_s_requests_are_judged_as_kube_judges_them() {
        let claim = json!({"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}},
            {"name": "gpu", "exactly": {"deviceClassName": "", "allocationMode": "All", "count": 2}},
            {"name": "Bad_Name"},
            {"name": "both", "exactly": {"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1},
                "firstAvailable": [{"name": "a", "deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}]},
            {"name": "any", "firstAvailable": [
                {"name": "a", "deviceClassName": "c", "allocationMode": "Some", "count": 1},
                {"name": "a", "deviceClassName": "c", "allocationMode": "ExactCount", "count": 0}]}],
            "constraints": [{"requests": ["gpu", "any/a", "any/b", "x/y/z"]}]}}});
        let got = causes("resourceclaims", claim, None, false);
        let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.devices.requests[1].exactly.deviceClassName",
                "spec.devices.requests[1].exactly.count",
                "spec.devices.requests[2].name",
                "spec.devices.requests[2]",
                "spec.devices.requests[3]",
                "spec.devices.requests[4].firstAvailable[0].allocationMode",
                "spec.devices.requests[4].firstAvailable[1].count",
                "spec.devices.requests[4].firstAvailable[1]",
                "spec.devices.requests[1]",
                "spec.devices.constraints[0].requests[2]",
                "spec.devices.constraints[0].requests[3]",
                "spec.devices.constraints[0].matchAttribute",
            ],
            "{got:#?}"
        );
        assert_eq!(got[1].1, "Invalid value: 2: must not be specified when allocationMode is 'All'");
        assert_eq!(got[3].1, "Required value: exactly one of `exactly` or `firstAvailable` is required");
        assert_eq!(
            got[4].1,
            "Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"
        );
        assert_eq!(got[5].1, "Unsupported value: \"Some\": supported values: \"All\", \"ExactCount\"");
        assert_eq!(got[8].1, "Duplicate value: \"gpu\"");
        assert_eq!(got[9].1, format!("Invalid value: \"any/b\": {REQUEST_REF}"));
    }

    #[test]
    fn a_claim_s_spec_cannot_change_and_prints_as_kube_s_internal_type() {
        let old = json!({"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}}]}}});
        let mut new = old.clone();
        new["spec"]["devices"]["requests"][0]["exactly"]["count"] = json!(2);
        let got = causes("resourceclaims", new, Some(old.clone()), false);
        assert_eq!(
            got,
            [(
                "spec".to_string(),
                "Invalid value: {\"Devices\":{\"Requests\":[{\"Name\":\"r\",\"Exactly\":{\"DeviceClassName\":\"c\",\"Selectors\":null,\"AllocationMode\":\"ExactCount\",\"Count\":2,\"AdminAccess\":null,\"Tolerations\":null,\"Capacity\":null},\"FirstAvailable\":null}],\"Constraints\":null,\"Config\":null}}: field is immutable".to_string()
            )]
        );
        assert!(causes("resourceclaims", old.clone(), Some(old), false).is_empty());
    }

    #[test]
    fn a_claim_s_status_is_judged_by_what_it_changes() {
        let spec = json!({"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}}]}});
        let old = json!({"spec": spec, "status": {}});
        let reserved_only = json!({"spec": spec, "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "1"}, {"resource": "pods", "name": "q", "uid": "1"}]}});
        assert_eq!(
            causes("resourceclaims", reserved_only, Some(old.clone()), true),
            [
                ("status.reservedFor[1]".to_string(), "Duplicate value: \"1\"".to_string()),
                (
                    "status.reservedFor".to_string(),
                    "Forbidden: may not be specified when `allocated` is not set".to_string()
                ),
            ]
        );
        let allocation = json!({"devices": {"results": [{"request": "r", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}});
        let allocated = json!({"spec": spec, "status": {"allocation": allocation, "devices": [{"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-9"}]}});
        assert_eq!(
            causes("resourceclaims", allocated, Some(old), true),
            [(
                "status.devices[0]".to_string(),
                "Invalid value: {\"Driver\":\"gpu.example.com\",\"Pool\":\"node-1\",\"Device\":\"gpu-9\",\"ShareID\":\"\"}: must be an allocated device in the claim".to_string()
            )]
        );
        let before = json!({"spec": spec, "status": {"allocation": allocation}});
        let mut changed = before.clone();
        changed["status"]["allocation"]["devices"]["results"][0]["device"] = json!("gpu-1");
        let got = causes("resourceclaims", changed, Some(before), true);
        assert_eq!(got.len(), 1);
        assert!(got[0].1.starts_with("Invalid value: {\"Devices\":{\"Results\":[{\"Request\":\"r\""), "{got:?}");
        assert!(
            got[0].1.ends_with("\"NodeSelector\":null,\"AllocationTimestamp\":null}: field is immutable"),
            "{got:?}"
        );
    }

    #[test]
    fn a_slice_names_one_node_selection_and_valid_devices() {
        let slice = json!({"spec": {"driver": "gpu.example.com", "pool": {"name": "pool", "resourceSliceCount": 0, "generation": -1},
            "nodeName": "node-1", "allNodes": true, "devices": [
                {"name": "gpu-0", "attributes": {"model": {"string": "a100"}, "example.com/v": {"version": "1.2"},
                    "bad-key": {"int": 1}, "both": {"int": 1, "bool": true}, "none": {}}},
                {"name": "gpu-0"}]}});
        let got = causes("resourceslices", slice, None, false);
        let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.pool.resourceSliceCount",
                "spec.pool.generation",
                "spec",
                "spec.devices[0].attributes[bad-key]",
                "spec.devices[0].attributes[both]",
                "spec.devices[0].attributes[example.com/v].version",
                "spec.devices[0].attributes[none]",
                "spec.devices[1]",
            ],
            "{got:#?}"
        );
        assert_eq!(
            got[2].1,
            "Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"
        );
        assert_eq!(
            got[4].1,
            "Invalid value: {\"IntValue\":1,\"BoolValue\":true,\"StringValue\":null,\"VersionValue\":null}: exactly one value must be specified"
        );
        let none = json!({"spec": {"driver": "d.example.com", "pool": {"name": "p", "resourceSliceCount": 1}}});
        assert_eq!(
            causes("resourceslices", none, None, false),
            [(
                "spec".to_string(),
                "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required".to_string()
            )]
        );
    }

    #[test]
    fn a_slice_keeps_its_driver_pool_and_node() {
        let old = json!({"spec": {"driver": "d.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n1"}});
        let new = json!({"spec": {"driver": "e.example.com", "pool": {"name": "q", "resourceSliceCount": 1}, "nodeName": "n2"}});
        let got = causes("resourceslices", new, Some(old), false);
        assert_eq!(
            got,
            [
                ("spec.pool.name".to_string(), "Invalid value: \"q\": field is immutable".to_string()),
                ("spec.driver".to_string(), "Invalid value: \"e.example.com\": field is immutable".to_string()),
                ("spec.nodeName".to_string(), "Invalid value: \"n2\": field is immutable".to_string()),
            ]
        );
    }

    #[test]
    fn a_class_s_selectors_compile_and_its_parameters_are_objects() {
        let class = json!({"spec": {"selectors": [{"cel": {"expression": "device.driver == 'x'"}}, {"cel": {"expression": "1 + 1"}}, {}, {"cel": {"expression": "device.driver =="}},
            {"cel": {"expression": "device.attributes['x.example.com'].model == 'a' && device.capacity['x.example.com'].memory.isGreaterThan(quantity('1Gi'))"}},
            {"cel": {"expression": "device.drivr == 'x'"}}],
            "config": [{"opaque": {"driver": "d.example.com", "parameters": [1]}}, {}]}});
        let got = causes("deviceclasses", class, None, false);
        let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.selectors[1].cel.expression",
                "spec.selectors[2].cel",
                "spec.selectors[3].cel.expression",
                "spec.selectors[5].cel.expression",
                "spec.config[0].opaque.parameters",
                "spec.config[1].opaque"
            ],
            "{got:#?}"
        );
        assert_eq!(got[0].1, "Invalid value: \"1 + 1\": must evaluate to bool or the unknown type, not int");
        assert!(got[2].1.starts_with("Invalid value: \"device.driver ==\": compilation failed: "), "{}", got[2].1);
        assert!(got[3].1.contains("undefined field 'drivr'"), "{}", got[3].1);
        assert_eq!(got[4].1, "Invalid value: \"<value omitted>\": must be a valid JSON object");
    }

    #[test]
    fn interface_addresses_are_canonical() {
        assert!(interface_address("10.9.8.7/24").is_empty());
        assert!(interface_address("2001:db8::1/64").is_empty());
        assert_eq!(interface_address("010.9.8.7/24"), ["must be in canonical form (\"10.9.8.7/24\")"]);
        assert_eq!(interface_address("2001:DB8::1/64"), ["must be in canonical form (\"2001:db8::1/64\")"]);
        assert_eq!(interface_address("::ffff:1.2.3.4/120"), ["must be in canonical form (\"1.2.3.4/24\")"]);
        for bad in ["10.9.8.7", "10.9.8.7/33", "x/1", "10.9.8.7/+1"] {
            assert_eq!(
                interface_address(bad),
                ["must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"],
                "{bad}"
            );
        }
    }

    #[test]
    fn versions_are_semantic() {
        for ok in ["1.2.3", "0.0.0-alpha.1+build.5", "10.20.30-rc.1"] {
            assert!(semver(ok), "{ok}");
        }
        for bad in ["1.2", "01.2.3", "1.2.3-01", "v1.2.3", "1.2.3+"] {
            assert!(!semver(bad), "{bad}");
        }
    }
}
