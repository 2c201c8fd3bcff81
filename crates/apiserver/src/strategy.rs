//! Write strategies: which parts of an object a write may set or change, and when
//! `metadata.generation` moves, as kube-apiserver's registry strategies decide
//! (`PrepareForCreate`, and `PrepareForUpdate` of the resource and of its `status` subresource).
//!
//! Invariants: a create never sets the status of a resource that has a `status` subresource
//! (Nodes excepted, whose kubelet registers them with one, and ServiceCIDRs, whose strategy
//! keeps any status): the object starts with the status kube's strategy gives it, or none
//! (custom resources). For such a resource (ServiceCIDRs again excepted) a write to the
//! resource itself never changes `status` (the stored one is kept), and a write to `/status`
//! never changes the spec: as kube's status strategies, it takes the labels, annotations,
//! finalizers and owner references it carries, but for a Deployment's labels and a pod's owner
//! references and deletion time, which stay as stored, and for custom resources and
//! ValidatingAdmissionPolicies, whose `/status` writes change nothing but `status`
//! ([`status_metadata`]). The generation moves when `spec` changes (and, for apps/v1
//! Deployments, when the annotations change through the resource; for webhook configurations
//! and EndpointSlices, with what they hold instead of a spec); a `/status` write never moves it.
//! A volume's `/status` write that changes its phase gives it a new `lastPhaseTransitionTime`.
//! A pod's `ephemeralcontainers` and `resize` writes change nothing but their part of the spec, and move the generation when
//! they change it. Only the resources whose kube-apiserver strategy keeps a generation are given
//! one (workloads, pods, policies, webhook configurations, EndpointSlices, custom resources; not
//! ConfigMaps, Secrets, Services, Namespaces, Nodes or Leases, which keep the one their create
//! was written with and no write changes). Which kinds a PUT may replace without naming the
//! stored version, and which it creates when missing, are their strategies' too. A namespace's
//! `spec.finalizers` change only through its `finalize` subresource, which changes nothing else
//! of the spec or the status.

use serde_json::{Map, Value, json};

use crate::object::StoredObject;
use crate::registry::ResourceInfo;

/// The part of a resource a write targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Target {
    /// The resource itself (`/namespaces/ns/deployments/web`).
    #[default]
    Main,
    /// The `status` subresource (`…/web/status`).
    Status,
    /// A namespace's `finalize` subresource (`/api/v1/namespaces/x/finalize`).
    Finalize,
    /// A pod's `binding` subresource: the pod as its binding leaves it (node, annotations,
    /// `PodScheduled` condition), written whole by the server.
    Binding,
    /// A CertificateSigningRequest's `approval` subresource (its conditions only; see
    /// [`crate::certificate_signing`]).
    Approval,
    /// A pod's `ephemeralcontainers` subresource (its `spec.ephemeralContainers` only; see
    /// [`crate::pod_ephemeral_containers`]).
    EphemeralContainers,
    /// A pod's `resize` subresource (its containers' `resources` and `resizePolicy` only; see
    /// [`crate::pod_resize`]).
    Resize,
}

/// Gives an object being created the status its resource's create strategy starts it with:
/// kube-apiserver's `PrepareForCreate` throws away the status of the request for every resource
/// with a `status` subresource but Nodes, and kube reads the empty status back with its defaults
/// ([`crate::defaults::status`]: counts as zeros, phases, load balancers). A pod's phase and QoS
/// class are filled in by its create defaults afterwards. A pod's match label keys are merged
/// into its affinity and spread selectors ([`crate::pod_affinity::merge_label_keys`]), and its
/// AppArmor annotations copied into its containers' profiles
/// ([`crate::pod_annotations::app_armor_version_skew`]); a
/// claim's data sources follow kube's rules ([`crate::pvc_validation::normalize`]).
pub fn prepare_create(info: &ResourceInfo, obj: &mut Map<String, Value>, now: &str) {
    if info.is_core("pods") {
        crate::pod_affinity::merge_label_keys(obj);
        crate::pod_annotations::app_armor_version_skew(obj);
    }
    if info.is_core("persistentvolumeclaims") {
        crate::pvc_validation::normalize(obj, None);
    }
    crate::dra_strategy::drop_disabled(info, obj, None, false);
    crate::endpoints_validation::drop_topology(info, obj, None);
    drop_lease_coordination(info, obj, None);
    // A ServiceCIDR's strategy keeps the status a create gives it.
    if !info.status_subresource || crate::service_cidr::is_service_cidrs(info) {
        return;
    }
    if info.custom.is_some() {
        if obj.remove("status").is_some() {
            // As kube reads the object back: the schema's defaults fill what is now missing.
            crate::custom_resource::default(info, obj);
        }
        return;
    }
    let fresh = match (info.group.as_str(), info.plural.as_str()) {
        // Registered by their kubelet with a status, which they keep.
        ("", "nodes") => None,
        ("", "pods") => Some(pod_status(obj, now)),
        ("", "persistentvolumes") => Some(json!({"lastPhaseTransitionTime": now})),
        ("apiextensions.k8s.io", "customresourcedefinitions") => return crate::crd::fresh_status(obj),
        (crate::api_service::GROUP, "apiservices") => Some(crate::api_service::fresh_status(obj, now)),
        ("autoscaling", "horizontalpodautoscalers") if info.version == "v1" => {
            // v1 keeps part of its status in annotations: they go with it.
            crate::autoscaling_v1::drop_status_annotations(obj);
            Some(json!({"currentReplicas": 0, "desiredReplicas": 0}))
        }
        _ => Some(json!({})),
    };
    if let Some(fresh) = fresh {
        obj.insert("status".into(), fresh);
    }
    crate::defaults::status(info, obj);
}

/// A pod's fresh status before its phase and QoS class: a gated pod starts unscheduled for that
/// reason (kube's `applySchedulingGatedCondition`), since its creation.
fn pod_status(obj: &Map<String, Value>, now: &str) -> Value {
    let gates = obj.get("spec").and_then(|s| s.get("schedulingGates")).and_then(Value::as_array);
    if gates.is_none_or(Vec::is_empty) {
        return json!({});
    }
    json!({"conditions": [{"type": "PodScheduled", "status": "False", "lastProbeTime": null,
        "lastTransitionTime": now, "reason": "SchedulingGated",
        "message": "Scheduling is blocked due to non-empty scheduling gates"}]})
}

/// The object a write of `new` over `old` stores, before the server-owned metadata is filled in.
pub fn prepare_update(
    info: &ResourceInfo,
    target: Target,
    old: &StoredObject,
    new: Map<String, Value>,
) -> Map<String, Value> {
    let mut out = prepared_update(info, target, old, new);
    if crate::dra_validation::judges(info) {
        crate::dra_strategy::drop_disabled(info, &mut out, Some(&old.value()), target == Target::Status);
    }
    if crate::endpoints_validation::judges(info) {
        crate::endpoints_validation::drop_topology(info, &mut out, Some(&old.value()));
    }
    drop_lease_coordination(info, &mut out, Some(old));
    out
}

/// A Lease's `strategy` and `preferredHolder` belong to coordinated leader election, a feature
/// kube-apiserver v1.35 leaves off: its strategy drops them, but from an update of a lease that
/// has them already.
fn drop_lease_coordination(info: &ResourceInfo, obj: &mut Map<String, Value>, old: Option<&StoredObject>) {
    if info.group != "coordination.k8s.io" || info.plural != "leases" {
        return;
    }
    let old_spec = old.and_then(old_spec);
    if let Some(Value::Object(spec)) = obj.get_mut("spec") {
        for field in ["strategy", "preferredHolder"] {
            if old_spec.as_ref().and_then(|s| s.get(field)).is_none_or(Value::is_null) {
                spec.remove(field);
            }
        }
    }
}

fn prepared_update(
    info: &ResourceInfo,
    target: Target,
    old: &StoredObject,
    new: Map<String, Value>,
) -> Map<String, Value> {
    if crate::certificate_signing::is_csrs(info) {
        return crate::certificate_signing::prepare_update(target, &old.value(), new);
    }
    match target {
        Target::Status => match status_metadata(info) {
            StatusMetadata::Stored => status_only(info, old, new),
            StatusMetadata::Request { kept } => {
                // Only what the write keeps of the stored object is read.
                let mut out = new;
                set_or_remove(&mut out, "spec", old.spec_bytes().and_then(|b| serde_json::from_slice(b).ok()));
                let hpa_v1 = crate::autoscaling_v1::is_v1(info);
                let stored = (!kept.is_empty() || hpa_v1).then(|| as_map(old.value_without_status()));
                let stored_meta = stored.as_ref().and_then(|s| s.get("metadata")).and_then(Value::as_object);
                if let Some(Value::Object(meta)) = out.get_mut("metadata") {
                    for f in kept {
                        // A pod's deletion time is the stored one, which the update keeps.
                        let from = stored_meta.filter(|_| *f != "deletionTimestamp");
                        set_or_remove(meta, f, from.and_then(|m| m.get(*f)).cloned());
                    }
                }
                if info.is_core("pods") {
                    keep_pod_status_fields(old, &mut out);
                }
                if let Some(stored) = stored.as_ref().filter(|_| hpa_v1) {
                    // v1 keeps part of the spec in annotations: they stay as stored.
                    crate::autoscaling_v1::carry_spec_annotations(stored, &mut out);
                }
                if info.is_core("persistentvolumes") {
                    phase_transition_time(old.status().as_ref(), &mut out);
                }
                out
            }
        },
        Target::Approval => status_only(info, old, new),
        Target::Main if crate::namespaces::is_namespaces(info) => {
            let mut out = new;
            set_or_remove(&mut out, "status", old.status());
            let finalizers = old_spec(old).and_then(|mut s| s.remove("finalizers"));
            set_spec_finalizers(&mut out, finalizers);
            out
        }
        // A ServiceCIDR's update strategy keeps the status the update gives it.
        Target::Main if info.status_subresource && !crate::service_cidr::is_service_cidrs(info) => {
            let mut out = new;
            set_or_remove(&mut out, "status", old.status());
            if info.is_core("persistentvolumeclaims") {
                crate::pvc_validation::normalize(&mut out, Some(&as_map(old.value())));
            }
            if crate::autoscaling_v1::is_v1(info) {
                crate::autoscaling_v1::carry_status_annotations(&as_map(old.value()), &mut out);
            }
            out
        }
        Target::Main | Target::Binding => new,
        Target::EphemeralContainers => crate::pod_ephemeral_containers::prepare_update(as_map(old.value()), &new),
        Target::Resize => crate::pod_resize::prepare_update(as_map(old.value()), new),
        Target::Finalize => {
            let finalizers = new.get("spec").and_then(|s| s.get("finalizers")).cloned();
            let mut out = new;
            set_or_remove(&mut out, "status", old.status());
            let mut spec = old_spec(old).unwrap_or_default();
            match finalizers {
                Some(f) if !f.is_null() => spec.insert("finalizers".into(), f),
                _ => spec.remove("finalizers"),
            };
            out.insert("spec".into(), Value::Object(spec));
            out
        }
    }
}

/// What a `/status` write of a resource takes of the request's metadata, as its kube strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusMetadata {
    /// None: the stored object is kept whole but its `status` (custom resources, whose strategy
    /// copies the stored object, and ValidatingAdmissionPolicies, FlowSchemas and
    /// PriorityLevelConfigurations, whose strategies reset the metadata for status).
    Stored,
    /// All of it (labels, annotations, finalizers, owner references) but the `kept` members of
    /// the stored metadata; the spec is the stored one.
    Request { kept: &'static [&'static str] },
}

/// What a `/status` write of `info` takes of the request's metadata: kube's status strategies
/// reset the spec alone, but for a Deployment's labels, a pod's owner references and deletion
/// time, and the labels, annotations, finalizers and owner references of APIServices,
/// VolumeAttachments and ResourceClaims (kube's `ResetObjectMetaForStatus`).
pub(crate) fn status_metadata(info: &ResourceInfo) -> StatusMetadata {
    if info.custom.is_some()
        || info.group == crate::admission_policy::GROUP
        || crate::flowcontrol::judges(info)
        || crate::service_cidr::is_service_cidrs(info)
    {
        return StatusMetadata::Stored;
    }
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "pods") => StatusMetadata::Request { kept: &["ownerReferences", "deletionTimestamp"] },
        ("apps", "deployments") => StatusMetadata::Request { kept: &["labels"] },
        (crate::api_service::GROUP, "apiservices")
        | ("storage.k8s.io", "volumeattachments")
        | (crate::dra_validation::GROUP, "resourceclaims") => {
            StatusMetadata::Request { kept: &["labels", "annotations", "finalizers", "ownerReferences"] }
        }
        _ => StatusMetadata::Request { kept: &[] },
    }
}

/// The stored object with the `status` of `new` (a write that may change nothing else).
fn status_only(info: &ResourceInfo, old: &StoredObject, new: Map<String, Value>) -> Map<String, Value> {
    // The stored managed fields are not carried: the field manager writes them.
    let mut out = as_map(old.value_without_status());
    set_or_remove(&mut out, "status", new.get("status").cloned());
    if crate::autoscaling_v1::is_v1(info) {
        // v1 keeps part of the status in annotations: they come with it.
        crate::autoscaling_v1::carry_status_annotations(&new, &mut out);
    }
    out
}

/// What a pod's `/status` write cannot take away, as kube's pod status strategy: the QoS class
/// (set on create; old kubelets left it out), and the observed generations of the status and
/// of its conditions, where the write gives none or 0; and what it cannot add: the fields of
/// disabled features.
fn keep_pod_status_fields(old: &StoredObject, new: &mut Map<String, Value>) {
    // A write without a status writes kube's empty one, which takes what follows.
    if !new.get("status").is_some_and(Value::is_object) {
        new.insert("status".into(), Value::Object(Map::new()));
    }
    let Some(Value::Object(status)) = new.get_mut("status") else { return };
    crate::pod_status::drop_disabled(status, || old.status());
    let empty = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v.as_str() == Some("") || v.as_i64() == Some(0));
    let conditions = status.get("conditions").and_then(Value::as_array);
    let wanted = ["qosClass", "observedGeneration"].iter().any(|f| empty(status.get(*f)))
        || conditions.into_iter().flatten().any(|c| empty(c.get("observedGeneration")));
    // The stored status is read only when the write leaves something out.
    let Some(Value::Object(old_status)) = wanted.then(|| old.status()).flatten() else { return };
    for f in ["qosClass", "observedGeneration"] {
        if empty(status.get(f))
            && let Some(v) = old_status.get(f).filter(|v| !empty(Some(v)))
        {
            status.insert(f.into(), v.clone());
        }
    }
    let old_conditions = old_status.get("conditions").and_then(Value::as_array);
    for c in status.get_mut("conditions").and_then(Value::as_array_mut).into_iter().flatten() {
        let Some(c) = c.as_object_mut().filter(|c| empty(c.get("observedGeneration"))) else { continue };
        let same_type = old_conditions.into_iter().flatten().find(|o| o.get("type") == c.get("type"));
        if let Some(g) = same_type.and_then(|o| o.get("observedGeneration")).filter(|g| !empty(Some(g))) {
            c.insert("observedGeneration".into(), g.clone());
        }
    }
}

/// A volume's `status.lastPhaseTransitionTime` after a `/status` write, as kube's volume status
/// strategy sets it: the stored one while the phase stays and the write gives none; now when the
/// phase changes and the write gives none or the stored one.
fn phase_transition_time(old_status: Option<&Value>, new: &mut Map<String, Value>) {
    let Some(Value::Object(status)) = new.get_mut("status") else { return };
    let given = status.get("lastPhaseTransitionTime").filter(|t| !t.is_null()).cloned();
    let old_time = old_status.and_then(|s| s.get("lastPhaseTransitionTime")).filter(|t| !t.is_null());
    let same_phase = old_status.and_then(|s| s.get("phase")) == status.get("phase");
    let time = match (same_phase, given) {
        (true, None) => old_time.cloned(),
        (false, None) => Some(Value::String(crate::object::now_rfc3339())),
        (false, Some(t)) if Some(&t) == old_time => Some(Value::String(crate::object::now_rfc3339())),
        (_, given) => given,
    };
    set_or_remove(status, "lastPhaseTransitionTime", time);
}

/// The stored `spec` of an object, parsed.
fn old_spec(old: &StoredObject) -> Option<Map<String, Value>> {
    old.spec_bytes().and_then(|b| serde_json::from_slice(b).ok())
}

/// Sets (or removes) `spec.finalizers` of a namespace being written.
fn set_spec_finalizers(obj: &mut Map<String, Value>, finalizers: Option<Value>) {
    if !matches!(obj.get("spec"), Some(Value::Object(_))) {
        obj.insert("spec".into(), Value::Object(Map::new()));
    }
    if let Some(Value::Object(spec)) = obj.get_mut("spec") {
        set_or_remove(spec, "finalizers", finalizers);
    }
}

/// Whether objects of the resource carry `metadata.generation`, as kube-apiserver's strategies
/// decide: set to 1 on create and moved by spec changes for pods, the workload and policy types,
/// IngressClasses, admission policies and their bindings, CustomResourceDefinitions,
/// DeviceClasses, ResourceSlices, FlowSchemas and PriorityLevelConfigurations, by
/// changes of their webhooks for webhook configurations, of the template for PodTemplates, by
/// any change outside the metadata or of the labels for EndpointSlices, never for
/// PriorityClasses; custom resources always have one; the other built-in types keep the one
/// their create was written with, if any.
pub fn tracks_generation(info: &ResourceInfo) -> bool {
    const TRACKED: &[(&str, &str)] = &[
        ("", "pods"),
        ("", "replicationcontrollers"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("networking.k8s.io", "networkpolicies"),
        ("networking.k8s.io", "ingresses"),
        ("networking.k8s.io", "ingressclasses"),
        ("", "podtemplates"),
        ("scheduling.k8s.io", "priorityclasses"),
        ("policy", "poddisruptionbudgets"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
        ("discovery.k8s.io", "endpointslices"),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "resourceslices"),
        (crate::flowcontrol::GROUP, crate::flowcontrol::FLOW_SCHEMAS),
        (crate::flowcontrol::GROUP, crate::flowcontrol::PRIORITY_LEVELS),
    ];
    let built_in = crate::schema::builtin().name_of(&info.group, &info.version, &info.kind).is_some();
    !built_in || TRACKED.contains(&(info.group.as_str(), info.plural.as_str()))
}

/// Whether a change of the spec moves the generation of a kind whose create leaves it as written
/// (CSIDrivers: from the generation stored, 0 when there is none).
pub fn bumps_untracked_generation(info: &ResourceInfo) -> bool {
    info.custom.is_none() && info.group == "storage.k8s.io" && info.plural == "csidrivers"
}

/// Whether a PUT without `metadata.resourceVersion` replaces whatever version is stored, as
/// kube's strategies allow for most built-in types. Custom resources, CustomResourceDefinitions,
/// APIServices, leases, admission configurations, RuntimeClasses, PodDisruptionBudgets and the
/// CSI and storage version types need the version the write was made from, as in kube, their
/// `status` subresources too.
pub fn allows_unconditional_update(info: &ResourceInfo) -> bool {
    const VERSIONED: &[(&str, &str)] = &[
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("apiregistration.k8s.io", "apiservices"),
        ("certificates.k8s.io", "clustertrustbundles"),
        ("certificates.k8s.io", "podcertificaterequests"),
        ("coordination.k8s.io", "leases"),
        ("coordination.k8s.io", "leasecandidates"),
        ("internal.apiserver.k8s.io", "storageversions"),
        ("node.k8s.io", "runtimeclasses"),
        ("policy", "poddisruptionbudgets"),
        ("storage.k8s.io", "volumeattachments"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "csistoragecapacities"),
        ("storagemigration.k8s.io", "storageversionmigrations"),
    ];
    info.custom.is_none() && !VERSIONED.contains(&(info.group.as_str(), info.plural.as_str()))
}

/// Whether a PUT of a missing object creates it, as kube's strategies allow for Endpoints,
/// Events (both APIs), LimitRanges, Services, Leases and LeaseCandidates, RBAC's four kinds and
/// RuntimeClasses.
pub fn allows_create_on_update(info: &ResourceInfo) -> bool {
    const CREATED: &[(&str, &str)] = &[
        ("", "endpoints"),
        ("", "events"),
        ("events.k8s.io", "events"),
        ("", "limitranges"),
        ("", "services"),
        ("coordination.k8s.io", "leases"),
        ("coordination.k8s.io", "leasecandidates"),
        ("rbac.authorization.k8s.io", "roles"),
        ("rbac.authorization.k8s.io", "rolebindings"),
        ("rbac.authorization.k8s.io", "clusterroles"),
        ("rbac.authorization.k8s.io", "clusterrolebindings"),
        ("node.k8s.io", "runtimeclasses"),
    ];
    info.custom.is_none() && CREATED.contains(&(info.group.as_str(), info.plural.as_str()))
}

/// Whether storing `new` over `old` increments `metadata.generation`.
pub fn bumps_generation(info: &ResourceInfo, old: &StoredObject, new: &Map<String, Value>) -> bool {
    match (info.group.as_str(), info.plural.as_str()) {
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations" | "validatingwebhookconfigurations") => {
            let webhooks = |m: Option<&Value>| m.filter(|v| !v.is_null()).cloned();
            return webhooks(old.value().get("webhooks")) != webhooks(stored_form(info, "webhooks", new).as_ref());
        }
        ("", "podtemplates") => return !template_as_stored(old, new, info),
        // Set once, never moved (kube's strategy has no update rule).
        ("scheduling.k8s.io", "priorityclasses") => return false,
        ("discovery.k8s.io", "endpointslices") => {
            let old = as_map(old.value());
            let mut new = new.clone();
            crate::defaults::go_stored(info, &mut new);
            let labels = |m: &Map<String, Value>| m.get("metadata").and_then(|m| m.get("labels")).cloned();
            return content(&old, false) != content(&new, false) || labels(&old) != labels(&new);
        }
        _ => {}
    }
    if info.custom.is_some() {
        // A custom resource's generation moves with anything but its metadata (and its status,
        // when that is a subresource).
        let old = as_map(old.value());
        return content(&old, info.status_subresource) != content(new, info.status_subresource);
    }
    if !spec_as_stored(old, new, info) {
        return true;
    }
    annotations_bump_generation(info) && annotations(&as_map(old.value())) != annotations(new)
}

/// Whether `new` leaves the spec of `old` as it is stored: compared as the bytes the spec is
/// stored as; bytes that differ are compared again in the stored form, as kube's semantic
/// comparison takes an empty list or map for a missing one.
pub(crate) fn spec_as_stored(old: &StoredObject, new: &Map<String, Value>, info: &ResourceInfo) -> bool {
    let bytes = |spec: Option<&Value>| spec.map(|s| serde_json::to_vec(s).unwrap_or_default());
    bytes(new.get("spec")).as_deref() == old.spec_bytes()
        || bytes(stored_form(info, "spec", new).as_ref()).as_deref() == old.spec_bytes()
}

/// Whether `new` leaves the pod template of the PodTemplate `old` as it is stored.
pub(crate) fn template_as_stored(old: &StoredObject, new: &Map<String, Value>, info: &ResourceInfo) -> bool {
    old.value().get("template") == stored_form(info, "template", new).as_ref()
}

/// Member `field` of `obj` in the form it is stored in ([`crate::defaults::go_stored`]).
pub(crate) fn stored_form(info: &ResourceInfo, field: &str, obj: &Map<String, Value>) -> Option<Value> {
    let mut only: Map<String, Value> = obj.get(field).map(|v| (field.to_string(), v.clone())).into_iter().collect();
    crate::defaults::go_stored(info, &mut only);
    only.remove(field)
}

/// An object's members but its metadata, type (and `status` when `without_status`), by name.
fn content(m: &Map<String, Value>, without_status: bool) -> Vec<(&String, &Value)> {
    let mut v: Vec<(&String, &Value)> = m
        .iter()
        .filter(|(k, _)| {
            !(matches!(k.as_str(), "metadata" | "apiVersion" | "kind") || without_status && *k == "status")
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// apps/v1 Deployments count an annotation change as a new generation (kube-apiserver's
/// deployment strategy does, for the rollback annotation of old clients).
fn annotations_bump_generation(info: &ResourceInfo) -> bool {
    info.group == "apps" && info.plural == "deployments"
}

fn annotations(obj: &Map<String, Value>) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(|m| m.get("annotations")).and_then(Value::as_object).filter(|a| !a.is_empty())
}

fn as_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn set_or_remove(obj: &mut Map<String, Value>, field: &str, v: Option<Value>) {
    match v {
        Some(v) => obj.insert(field.into(), v),
        None => obj.remove(field),
    };
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::object;
    use crate::registry::Registry;

    fn stored(info: &ResourceInfo, v: Value) -> StoredObject {
        object::build(info, v.as_object().unwrap(), 5)
    }

    /// `v` in the form the server stores it in.
    fn stored_as_go(info: &ResourceInfo, v: Value) -> StoredObject {
        let mut m = v.as_object().unwrap().clone();
        crate::defaults::go_stored(info, &mut m);
        object::build(info, &m, 5)
    }

    fn info(plural: &str) -> ResourceInfo {
        Registry::with_defaults().lookup(plural).map(|i| (**i).clone()).unwrap()
    }

    #[test]
    fn main_writes_keep_the_stored_status() {
        let d = info("deployments");
        let old = stored(&d, json!({"metadata": {"name": "a"}, "spec": {"replicas": 1}, "status": {"replicas": 1}}));
        let new = json!({"metadata": {"name": "a"}, "spec": {"replicas": 2}, "status": {"replicas": 9}});
        let out = prepare_update(&d, Target::Main, &old, new.as_object().unwrap().clone());
        assert_eq!(out["status"], json!({"replicas": 1}));
        assert_eq!(out["spec"], json!({"replicas": 2}));
    }

    #[test]
    fn status_writes_take_the_metadata_kubes_status_strategies_take() {
        let write = |plural: &str, old: Value, new: Value| {
            let i = info(plural);
            prepare_update(&i, Target::Status, &stored(&i, old), new.as_object().unwrap().clone())
        };
        let old = json!({"metadata": {"name": "a", "labels": {"x": "1"}, "annotations": {"a": "1"},
            "ownerReferences": [{"uid": "u1"}]}, "spec": {"replicas": 1}});
        let new = json!({"metadata": {"name": "a", "labels": {"y": "2"}, "annotations": {"b": "2"},
            "finalizers": ["f"], "ownerReferences": [{"uid": "u2"}]}, "spec": {"replicas": 2}, "status": {"replicas": 3}});
        // A Deployment's labels stay; the rest comes with the write.
        let out = write("deployments", old.clone(), new.clone());
        assert_eq!((&out["status"], &out["spec"]), (&json!({"replicas": 3}), &json!({"replicas": 1})));
        assert_eq!(out["metadata"]["labels"], json!({"x": "1"}));
        assert_eq!(out["metadata"]["annotations"], json!({"b": "2"}));
        assert_eq!(out["metadata"]["finalizers"], json!(["f"]));
        assert_eq!(out["metadata"]["ownerReferences"], json!([{"uid": "u2"}]));
        // Most kinds take all of it.
        let out = write("replicasets", old.clone(), new.clone());
        assert_eq!((&out["metadata"]["labels"], &out["spec"]), (&json!({"y": "2"}), &json!({"replicas": 1})));
        // A pod keeps its owners and its deletion time, its QoS class and observed generations.
        let pod_old = json!({"metadata": {"name": "a", "ownerReferences": [{"uid": "u1"}]}, "spec": {"nodeName": "n"},
            "status": {"qosClass": "Burstable", "observedGeneration": 2,
                "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 2}]}});
        let pod_new = json!({"metadata": {"name": "a", "labels": {"y": "2"}, "deletionTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": [{"uid": "u2"}]}, "spec": {}, "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"}, {"type": "X", "status": "True"}]}});
        let out = write("pods", pod_old, pod_new);
        assert_eq!(out["metadata"], json!({"name": "a", "labels": {"y": "2"}, "ownerReferences": [{"uid": "u1"}]}));
        assert_eq!(out["spec"], json!({"nodeName": "n"}));
        assert_eq!(
            out["status"],
            json!({"phase": "Running", "qosClass": "Burstable", "observedGeneration": 2, "conditions": [
                {"type": "Ready", "status": "False", "observedGeneration": 2}, {"type": "X", "status": "True"}]})
        );
        // Custom resources' and admission policies' writes change the status alone.
        let out = write("validatingadmissionpolicies", old, new);
        assert_eq!(out["metadata"]["labels"], json!({"x": "1"}));
        assert_eq!(out["metadata"].get("finalizers"), None);
    }

    #[test]
    fn creates_start_with_kubes_fresh_status() {
        let created = |plural: &str| {
            let mut obj = json!({"metadata": {"name": "a"}, "status": {"replicas": 9, "phase": "Running"}});
            prepare_create(&info(plural), obj.as_object_mut().unwrap(), "2026-01-01T00:00:00Z");
            obj["status"].clone()
        };
        assert_eq!(created("deployments"), json!({}));
        assert_eq!(created("replicasets"), json!({"replicas": 0}));
        assert_eq!(
            created("poddisruptionbudgets"),
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0})
        );
        assert_eq!(
            created("persistentvolumes"),
            json!({"phase": "Pending", "lastPhaseTransitionTime": "2026-01-01T00:00:00Z"})
        );
        assert_eq!(created("horizontalpodautoscalers"), json!({"desiredReplicas": 0, "currentMetrics": null}));
        for plural in
            ["jobs", "cronjobs", "resourcequotas", "validatingadmissionpolicies", "certificatesigningrequests"]
        {
            assert_eq!(created(plural), json!({}), "{plural}");
        }
        assert_eq!(created("replicationcontrollers"), json!({"replicas": 0}));
        assert_eq!(created("ingresses"), json!({"loadBalancer": {}}));
        assert_eq!(created("pods"), json!({}), "phase and QoS class come with the pod's defaults");
        // Nodes are registered with their status; kinds without the subresource keep the body.
        assert_eq!(created("nodes"), json!({"replicas": 9, "phase": "Running"}));
        assert_eq!(created("configmaps"), json!({"replicas": 9, "phase": "Running"}));
        assert_eq!(created("servicecidrs"), json!({"replicas": 9, "phase": "Running"}), "kube's strategy keeps it");
    }

    #[test]
    fn every_status_subresource_but_nodes_and_service_cidrs_is_reset_on_create() {
        for r in Registry::with_defaults().all() {
            if !r.status_subresource || r.plural == "nodes" || r.plural == "servicecidrs" {
                continue;
            }
            let mut obj = json!({"metadata": {"name": "a"}, "status": {"sentinel": true}});
            prepare_create(r, obj.as_object_mut().unwrap(), "2026-01-01T00:00:00Z");
            assert!(obj["status"].get("sentinel").is_none(), "{}/{} keeps a created status", r.group, r.plural);
        }
    }

    #[test]
    fn custom_resources_lose_status_only_with_the_subresource() {
        let version = |subresources: Value| {
            let crd = json!({"metadata": {"name": "gadgets.example.org"}, "spec": {"group": "example.org",
                "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Gadget"},
                "versions": [{"name": "v1", "served": true, "storage": true, "subresources": subresources,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
                "status": {"acceptedNames": {"plural": "gadgets", "kind": "Gadget"},
                    "conditions": [{"type": "Established", "status": "True"}]}});
            crate::crd::served_versions(&crd).remove(0)
        };
        let mut obj = json!({"metadata": {"name": "a"}, "status": {"ready": true}});
        prepare_create(&version(json!({})), obj.as_object_mut().unwrap(), "t");
        assert_eq!(obj["status"], json!({"ready": true}));
        prepare_create(&version(json!({"status": {}})), obj.as_object_mut().unwrap(), "t");
        assert!(obj.get("status").is_none());
    }

    #[test]
    fn types_without_status_subresource_store_the_body() {
        let cm = info("configmaps");
        let old = stored(&cm, json!({"metadata": {"name": "a"}, "status": {"x": 1}}));
        let new = json!({"metadata": {"name": "a"}, "status": {"x": 2}});
        let out = prepare_update(&cm, Target::Main, &old, new.as_object().unwrap().clone());
        assert_eq!(out["status"], json!({"x": 2}));
    }

    #[test]
    fn only_kubes_generation_keeping_types_have_one() {
        let of = |g: &str, plural: &str, kind: &str| tracks_generation(&ResourceInfo::new(g, "v1", plural, kind, true));
        assert!(of("", "pods", "Pod"));
        assert!(of("apps", "deployments", "Deployment"));
        assert!(of("example.com", "widgets", "Widget"));
        assert!(!of("", "configmaps", "ConfigMap"));
        assert!(!of("", "services", "Service"));
        assert!(!of("", "namespaces", "Namespace"));
        assert!(!of("coordination.k8s.io", "leases", "Lease"));
    }

    #[test]
    fn generation_follows_spec_and_deployment_annotations() {
        let (d, rs) = (info("deployments"), info("replicasets"));
        let v = json!({"metadata": {"name": "a"}, "spec": {"replicas": 1}});
        let annotated = json!({"metadata": {"name": "a", "annotations": {"n": "1"}}, "spec": {"replicas": 1}});
        let respec = json!({"metadata": {"name": "a"}, "spec": {"replicas": 2}});
        let m = |v: &Value| v.as_object().unwrap().clone();
        assert!(!bumps_generation(&d, &stored(&d, v.clone()), &m(&v)));
        assert!(bumps_generation(&d, &stored(&d, v.clone()), &m(&respec)));
        assert!(bumps_generation(&d, &stored(&d, v.clone()), &m(&annotated)));
        assert!(!bumps_generation(&rs, &stored(&rs, v.clone()), &m(&annotated)));
    }

    #[test]
    fn webhook_configurations_and_endpoint_slices_count_their_own_content() {
        let m = |v: Value| v.as_object().unwrap().clone();
        let hooks = info("validatingwebhookconfigurations");
        assert!(tracks_generation(&hooks) && tracks_generation(&info("validatingadmissionpolicies")));
        let old = stored_as_go(&hooks, json!({"metadata": {"name": "h"}, "webhooks": [{"name": "a.example.com"}]}));
        let labelled =
            json!({"metadata": {"name": "h", "labels": {"x": "1"}}, "webhooks": [{"name": "a.example.com"}]});
        assert!(!bumps_generation(&hooks, &old, &m(labelled)));
        assert!(bumps_generation(&hooks, &old, &m(json!({"metadata": {"name": "h"}, "webhooks": []}))));

        let slices = info("endpointslices");
        let old = stored_as_go(&slices, json!({"metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": []}));
        let annotated =
            json!({"metadata": {"name": "s", "annotations": {"x": "1"}}, "addressType": "IPv4", "endpoints": []});
        assert!(!bumps_generation(&slices, &old, &m(annotated)));
        let labelled = json!({"metadata": {"name": "s", "labels": {"x": "1"}}, "addressType": "IPv4", "endpoints": []});
        assert!(bumps_generation(&slices, &old, &m(labelled)));
        let ports = json!({"metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": [], "ports": [{"port": 80}]});
        assert!(bumps_generation(&slices, &old, &m(ports)));

        let templates = info("podtemplates");
        let old =
            stored_as_go(&templates, json!({"metadata": {"name": "t"}, "template": {"spec": {"containers": []}}}));
        let changed = json!({"metadata": {"name": "t"}, "template": {"spec": {"containers": [{"name": "c"}]}}});
        assert!(tracks_generation(&templates) && bumps_generation(&templates, &old, &m(changed)));
        let classes = info("priorityclasses");
        let old = stored_as_go(&classes, json!({"metadata": {"name": "p"}, "value": 1}));
        let changed = json!({"metadata": {"name": "p"}, "value": 1, "description": "d"});
        assert!(tracks_generation(&classes) && !bumps_generation(&classes, &old, &m(changed)));
    }
}
