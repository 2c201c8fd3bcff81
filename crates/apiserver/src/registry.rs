//! The registry of served resources (group, version, plural, kind, scope, subresources).
//!
//! Invariants: a built-in or user-registered resource is identified by `(group, plural)`;
//! registering the same pair twice replaces the earlier definition. A custom resource served
//! from a CustomResourceDefinition has one entry per served version (all sharing one storage
//! path), installed and removed together ([`Registry::install_custom`],
//! [`Registry::remove_custom`]). A registry value never changes once shared: the server swaps
//! in a new one (see [`crate::cache::WatchCache::registry`]) when the CustomResourceDefinitions
//! change. A resource serves `/status` and `/scale` only when it declares them, as
//! kube-apiserver does.

use std::sync::Arc;

use serde_json::Value;

/// One served resource type.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    /// API group, "" for the core group.
    pub group: String,
    /// API version, e.g. "v1".
    pub version: String,
    /// Plural resource name used in URLs, e.g. "pods".
    pub plural: String,
    /// Singular name, e.g. "pod".
    pub singular: String,
    /// Kind, e.g. "Pod".
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// kubectl short names, e.g. ["po"].
    pub short_names: Vec<String>,
    /// Extra field-selector fields (dotted JSON paths) beyond
    /// `metadata.name` / `metadata.namespace`.
    pub selectable_fields: Vec<String>,
    /// Which field-selector labels are accepted and how they read ([`FieldLabels`]).
    pub field_labels: FieldLabels,
    /// Whether list items carry `kind`/`apiVersion` (true for custom resources,
    /// false for built-in types, as kube-apiserver does).
    pub list_items_have_kind: bool,
    /// Where the objects live in storage, below the key prefix: kube-apiserver's path for
    /// built-in types (`pods`, `services/specs`, `minions`…), `<group>/<plural>` for custom
    /// resources (see [`crate::storage::keys`]).
    pub storage_path: String,
    /// Whether the resource has a `status` subresource: then `/status` writes change only
    /// `status`, and writes to the resource itself keep the stored `status`.
    pub status_subresource: bool,
    /// The `scale` subresource (autoscaling/v1 `Scale`), if the resource has one.
    pub scale_subresource: Option<ScaleSubresource>,
    /// What a CustomResourceDefinition says of this version (None for built-in types and
    /// resources registered with [`ResourceInfo::new`]).
    pub custom: Option<Arc<CustomVersion>>,
    /// A review (authentication.k8s.io and authorization.k8s.io): a create is answered and
    /// nothing is stored; no other verb is served.
    pub review: bool,
}

/// How a resource's field selectors are read (see [`crate::field_labels`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldLabels {
    /// `metadata.name`, `metadata.namespace` when namespaced and the selectable fields, each
    /// read at its JSON path (custom resources, resources registered with [`ResourceInfo::new`]).
    #[default]
    Selectable,
    /// As kube-apiserver reads the built-in kind: its own list of labels (some read with kube's
    /// defaults, some under another name), or `metadata.name` and `metadata.namespace`.
    Kube,
}

/// One served version of a custom resource, as its CustomResourceDefinition declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomVersion {
    /// The CustomResourceDefinition's name (`<plural>.<group>`).
    pub crd_name: String,
    /// The version objects are stored in (`spec.versions[].storage`).
    pub storage_version: String,
    /// Every served version, highest priority first (the preferred one first).
    pub served_versions: Vec<String>,
    /// The version's `schema.openAPIV3Schema`, as written in the CustomResourceDefinition.
    pub schema: Option<Arc<Value>>,
    /// `additionalPrinterColumns` (empty: kubectl's Name and Age).
    pub printer_columns: Vec<PrinterColumn>,
    /// `spec.names.categories`.
    pub categories: Vec<String>,
    /// `spec.names.listKind`.
    pub list_kind: String,
    /// The CustomResourceDefinition is being deleted: no new objects are created.
    pub terminating: bool,
    /// `deprecated` / `deprecationWarning`: the warning every request gets.
    pub deprecation_warning: Option<String>,
    /// The schema as server-side apply walks it, built on first use.
    pub merge_schema: MergeSchema,
    /// Every version's `schema.openAPIV3Schema`, by version (an object read from the storage is
    /// defaulted with its own version's before any conversion).
    pub version_schemas: Arc<std::collections::BTreeMap<String, Arc<Value>>>,
    /// `spec.conversion` of strategy `Webhook`: the webhook that converts objects between
    /// versions (None: strategy `None`, only `apiVersion` changes).
    pub conversion_webhook: Option<Arc<ConversionWebhook>>,
}

/// A CustomResourceDefinition's conversion webhook (`spec.conversion.webhook`).
#[derive(Debug, Clone, PartialEq)]
pub struct ConversionWebhook {
    /// `clientConfig`: `url` or `service`, and `caBundle`.
    pub client_config: Value,
    /// `conversionReviewVersions`, in the order given (the first the server speaks is sent).
    pub review_versions: Vec<String>,
}

impl CustomVersion {
    /// The structured-merge view of the version's schema (list types, map types, keys), if it
    /// has one.
    pub(crate) fn merge_type(&self) -> Option<crate::schema::TypeRef<'_>> {
        let schema = self.schema.as_ref()?;
        let schemas = self.merge_schema.0.get_or_init(|| crate::schema::Schemas::from_root((**schema).clone()));
        Some(schemas.root_type())
    }
}

/// A [`CustomVersion`]'s schema as server-side apply walks it, built once from
/// `CustomVersion::schema` (which it always follows: equal versions compare equal whatever
/// either has built, and a clone builds its own).
#[derive(Default)]
pub struct MergeSchema(std::sync::OnceLock<crate::schema::Schemas>);

impl Clone for MergeSchema {
    fn clone(&self) -> Self {
        MergeSchema::default()
    }
}

impl PartialEq for MergeSchema {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for MergeSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MergeSchema")
    }
}

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    /// Column name.
    pub name: String,
    /// OpenAPI type (`integer`, `number`, `string`, `boolean`, `date`).
    pub type_: String,
    /// OpenAPI format.
    pub format: String,
    /// Description (defaults to the JSONPath).
    pub description: String,
    /// 0: shown by default; higher: with `-o wide`.
    pub priority: i64,
    /// The simple JSONPath of the value (`.spec.replicas`).
    pub json_path: String,
}

/// Where a resource keeps what its `scale` subresource shows, as the JSON paths of a
/// CustomResourceDefinition's `subresources.scale` (`.spec.replicas`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleSubresource {
    /// The desired replica count (`Scale.spec.replicas`), written by scale updates.
    pub spec_replicas_path: String,
    /// The observed replica count (`Scale.status.replicas`, 0 when absent).
    pub status_replicas_path: String,
    /// The label selector (`Scale.status.selector`): a string, or a `LabelSelector` object
    /// (built-in workloads' `.spec.selector`) rendered as a string. None: no selector.
    pub label_selector_path: Option<String>,
    /// The desired replica count of an object whose spec has none (kube-apiserver defaults the
    /// built-in workloads' `spec.replicas` to 1).
    pub default_replicas: i64,
}

impl ScaleSubresource {
    /// The scale of the built-in workloads (apps/v1's and ReplicationControllers):
    /// `.spec.replicas`, `.status.replicas`, `.spec.selector`.
    pub fn workload() -> Self {
        ScaleSubresource {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: Some(".spec.selector".into()),
            default_replicas: 1,
        }
    }
}

impl ResourceInfo {
    /// A custom (user-registered) resource with no extra selectable fields and no subresources.
    pub fn new(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> Self {
        ResourceInfo {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: kind.to_ascii_lowercase(),
            kind: kind.into(),
            namespaced,
            short_names: Vec::new(),
            selectable_fields: Vec::new(),
            field_labels: FieldLabels::Selectable,
            list_items_have_kind: true,
            storage_path: if group.is_empty() { plural.to_string() } else { format!("{group}/{plural}") },
            status_subresource: false,
            scale_subresource: None,
            custom: None,
            review: false,
        }
    }

    /// Declares the `status` subresource (builder style).
    pub fn with_status_subresource(mut self) -> Self {
        self.status_subresource = true;
        self
    }

    /// Declares the `scale` subresource (builder style).
    pub fn with_scale_subresource(mut self, scale: ScaleSubresource) -> Self {
        self.scale_subresource = Some(scale);
        self
    }

    /// Adds short names (builder style).
    pub fn with_short_names(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Adds extra selectable fields (builder style).
    pub fn with_selectable_fields(mut self, fields: &[&str]) -> Self {
        self.selectable_fields = fields.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Whether this is the core (v1 group) resource `plural`.
    pub fn is_core(&self, plural: &str) -> bool {
        self.group.is_empty() && self.plural == plural
    }

    /// Whether kube-apiserver serves this kind itself (one of [`Registry::with_defaults`]), as
    /// opposed to a custom resource or a resource registered with [`ResourceInfo::new`].
    pub fn is_builtin(&self) -> bool {
        self.field_labels == FieldLabels::Kube
    }

    /// `apiVersion` of objects: "v1" or "group/version".
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// Sets the storage path (builder style).
    pub fn with_storage_path(mut self, path: &str) -> Self {
        self.storage_path = path.trim_matches('/').to_string();
        self
    }

    fn builtin(group: &str, plural: &str, kind: &str, namespaced: bool, short: &[&str], fields: &[&str]) -> Self {
        Self::builtin_at(group, "v1", plural, kind, namespaced, short, fields)
    }

    pub(crate) fn builtin_at(
        group: &str,
        version: &str,
        plural: &str,
        kind: &str,
        namespaced: bool,
        short: &[&str],
        fields: &[&str],
    ) -> Self {
        let mut r = ResourceInfo::new(group, version, plural, kind, namespaced)
            .with_short_names(short)
            .with_selectable_fields(fields);
        r.list_items_have_kind = false;
        r.field_labels = FieldLabels::Kube;
        // kube-apiserver keeps built-in types under their plural, without the group.
        r.storage_path = plural.to_string();
        r
    }
}

/// The set of resources a server serves.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    resources: Vec<Arc<ResourceInfo>>,
}

impl Registry {
    /// An empty registry.
    pub fn empty() -> Self {
        Registry::default()
    }

    /// The built-in resources: core/v1 namespaces, pods, configmaps, secrets, services, nodes,
    /// events, serviceaccounts, endpoints, persistentvolumeclaims, persistentvolumes,
    /// limitranges, resourcequotas, podtemplates, replicationcontrollers, componentstatuses;
    /// apiregistration.k8s.io/v1 apiservices; apps/v1 deployments,
    /// replicasets, statefulsets, daemonsets, controllerrevisions; events.k8s.io/v1 events (the core
    /// events in another form); authentication.k8s.io/v1 selfsubjectreviews and
    /// authorization.k8s.io/v1 local, self and subject access reviews and self rules reviews
    /// (answered, never stored); autoscaling/v2 and v1
    /// horizontalpodautoscalers (one set of objects); batch/v1 jobs, cronjobs; certificates.k8s.io/v1
    /// certificatesigningrequests; networking.k8s.io/v1 ingresses,
    /// ingressclasses, networkpolicies, ipaddresses, servicecidrs; policy/v1 poddisruptionbudgets;
    /// rbac.authorization.k8s.io/v1 roles, rolebindings, clusterroles, clusterrolebindings;
    /// storage.k8s.io/v1 storageclasses, csidrivers, csinodes, csistoragecapacities,
    /// volumeattachments, volumeattributesclasses; admissionregistration.k8s.io/v1
    /// validatingadmissionpolicies, validatingadmissionpolicybindings,
    /// mutatingwebhookconfigurations and validatingwebhookconfigurations;
    /// apiextensions.k8s.io/v1 customresourcedefinitions; scheduling.k8s.io/v1 priorityclasses;
    /// coordination.k8s.io/v1 leases; node.k8s.io/v1 runtimeclasses;
    /// discovery.k8s.io/v1 endpointslices; resource.k8s.io/v1 deviceclasses, resourceclaims,
    /// resourceclaimtemplates, resourceslices; flowcontrol.apiserver.k8s.io/v1 flowschemas,
    /// prioritylevelconfigurations. Groups come in kube-apiserver's order. The resources
    /// kube gives a `status` subresource have one; deployments, replicasets, statefulsets and
    /// replicationcontrollers also have `scale`.
    pub fn with_defaults() -> Self {
        let mut r = Registry::empty();
        let b = ResourceInfo::builtin;
        let workload = |plural: &str, kind: &str, short: &[&str], fields: &[&str]| {
            b("apps", plural, kind, true, short, fields)
                .with_status_subresource()
                .with_scale_subresource(ScaleSubresource::workload())
        };
        r.register(b("", "namespaces", "Namespace", false, &["ns"], &["status.phase"]).with_status_subresource());
        r.register(
            b(
                "",
                "pods",
                "Pod",
                true,
                &["po"],
                &[
                    "spec.nodeName",
                    "spec.restartPolicy",
                    "spec.schedulerName",
                    "spec.serviceAccountName",
                    "spec.hostNetwork",
                    "status.phase",
                    "status.podIP",
                    "status.nominatedNodeName",
                ],
            )
            .with_status_subresource(),
        );
        r.register(b("", "configmaps", "ConfigMap", true, &["cm"], &[]));
        r.register(b("", "secrets", "Secret", true, &[], &["type"]));
        r.register(
            b("", "services", "Service", true, &["svc"], &["spec.clusterIP", "spec.type"])
                .with_storage_path("services/specs")
                .with_status_subresource(),
        );
        r.register(
            b("", "nodes", "Node", false, &["no"], &["spec.unschedulable"])
                .with_storage_path("minions")
                .with_status_subresource(),
        );
        r.register(b(
            "",
            "events",
            "Event",
            true,
            &["ev"],
            &[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ],
        ));
        r.register(b("", "serviceaccounts", "ServiceAccount", true, &["sa"], &[]));
        r.register(b("", "endpoints", "Endpoints", true, &["ep"], &[]).with_storage_path("services/endpoints"));
        r.register(
            b("", "persistentvolumeclaims", "PersistentVolumeClaim", true, &["pvc"], &[]).with_status_subresource(),
        );
        r.register(b("", "persistentvolumes", "PersistentVolume", false, &["pv"], &[]).with_status_subresource());
        r.register(b("", "limitranges", "LimitRange", true, &["limits"], &[]));
        r.register(b("", "resourcequotas", "ResourceQuota", true, &["quota"], &[]).with_status_subresource());
        // Probed on each read, never stored (`crate::component_status`).
        r.register(b("", crate::component_status::PLURAL, "ComponentStatus", false, &["cs"], &[]));
        r.register(b("", "podtemplates", "PodTemplate", true, &[], &[]));
        // The older way to bind a pod (`crate::binding`): created, never stored.
        let mut bindings = b("", "bindings", "Binding", true, &[], &[]);
        bindings.review = true;
        r.register(bindings);
        r.register(
            b("", "replicationcontrollers", "ReplicationController", true, &["rc"], &["status.replicas"])
                .with_storage_path("controllers")
                .with_status_subresource()
                .with_scale_subresource(ScaleSubresource::workload()),
        );
        // kube-apiserver lists its aggregator's group first.
        r.register(
            b(crate::api_service::GROUP, "apiservices", "APIService", false, &[], &[]).with_status_subresource(),
        );
        r.register(workload("deployments", "Deployment", &["deploy"], &[]));
        r.register(workload("replicasets", "ReplicaSet", &["rs"], &["status.replicas"]));
        r.register(workload("statefulsets", "StatefulSet", &["sts"], &[]));
        r.register(b("apps", "daemonsets", "DaemonSet", true, &["ds"], &[]).with_status_subresource());
        r.register(b("apps", "controllerrevisions", "ControllerRevision", true, &[], &[]));
        // Reviews, answered and never stored (`access_review`).
        let review = |group: &str, plural: &str, kind: &str, namespaced: bool| {
            let mut info = b(group, plural, kind, namespaced, &[], &[]);
            info.review = true;
            info
        };
        // The other groups, in the order kube-apiserver lists them. events.k8s.io/v1 Events are
        // core/v1 Events in another form (`events_api`), stored under the same keys.
        r.register(
            b(
                crate::events_api::GROUP,
                "events",
                "Event",
                true,
                &["ev"],
                &[
                    "regarding.kind",
                    "regarding.namespace",
                    "regarding.name",
                    "regarding.uid",
                    "regarding.apiVersion",
                    "regarding.resourceVersion",
                    "regarding.fieldPath",
                    "reportingController",
                    "reason",
                    "source",
                    "type",
                ],
            )
            .with_storage_path("events"),
        );
        r.register(review("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview", false));
        r.register(review("authentication.k8s.io", "tokenreviews", "TokenReview", false));
        for (plural, kind, namespaced) in [
            ("localsubjectaccessreviews", "LocalSubjectAccessReview", true),
            ("selfsubjectaccessreviews", "SelfSubjectAccessReview", false),
            ("selfsubjectrulesreviews", "SelfSubjectRulesReview", false),
            ("subjectaccessreviews", "SubjectAccessReview", false),
        ] {
            r.register(review("authorization.k8s.io", plural, kind, namespaced));
        }
        // autoscaling/v1 shows the v2 objects in its own form (`autoscaling_v1`).
        r.register(crate::autoscaling_v1::resource("v2"));
        r.register_version(crate::autoscaling_v1::resource("v1"));
        r.register(b("batch", "jobs", "Job", true, &[], &["status.successful"]).with_status_subresource());
        r.register(b("batch", "cronjobs", "CronJob", true, &["cj"], &[]).with_status_subresource());
        r.register(
            b(
                crate::certificate_signing::GROUP,
                "certificatesigningrequests",
                "CertificateSigningRequest",
                false,
                &["csr"],
                &["spec.signerName"],
            )
            .with_status_subresource(),
        );
        r.register(
            b("networking.k8s.io", "ingresses", "Ingress", true, &["ing"], &[])
                .with_storage_path("ingress")
                .with_status_subresource(),
        );
        r.register(b("networking.k8s.io", "ingressclasses", "IngressClass", false, &[], &[]));
        r.register(b("networking.k8s.io", "networkpolicies", "NetworkPolicy", true, &["netpol"], &[]));
        let networking = crate::service_cidr::GROUP;
        r.register(b(networking, crate::service_cidr::IP_ADDRESSES, "IPAddress", false, &[], &[]));
        r.register(
            b(networking, crate::service_cidr::SERVICE_CIDRS, "ServiceCIDR", false, &[], &[]).with_status_subresource(),
        );
        r.register(
            b("policy", "poddisruptionbudgets", "PodDisruptionBudget", true, &["pdb"], &[]).with_status_subresource(),
        );
        let rbac = "rbac.authorization.k8s.io";
        r.register(b(rbac, "roles", "Role", true, &[], &[]));
        r.register(b(rbac, "rolebindings", "RoleBinding", true, &[], &[]));
        r.register(b(rbac, "clusterroles", "ClusterRole", false, &[], &[]));
        r.register(b(rbac, "clusterrolebindings", "ClusterRoleBinding", false, &[], &[]));
        let storage = "storage.k8s.io";
        r.register(b(storage, "storageclasses", "StorageClass", false, &["sc"], &[]));
        r.register(b(storage, "csidrivers", "CSIDriver", false, &[], &[]));
        r.register(b(storage, "csinodes", "CSINode", false, &[], &[]));
        r.register(b(storage, "csistoragecapacities", "CSIStorageCapacity", true, &[], &[]));
        r.register(b(storage, "volumeattachments", "VolumeAttachment", false, &[], &[]).with_status_subresource());
        r.register(b(storage, "volumeattributesclasses", "VolumeAttributesClass", false, &["vac"], &[]));
        r.register(
            b(
                crate::admission_policy::GROUP,
                "validatingadmissionpolicies",
                "ValidatingAdmissionPolicy",
                false,
                &[],
                &[],
            )
            .with_status_subresource(),
        );
        r.register(b(
            crate::admission_policy::GROUP,
            "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding",
            false,
            &[],
            &[],
        ));
        r.register(b(
            crate::admission_policy::GROUP,
            crate::admission_webhook::MUTATING,
            "MutatingWebhookConfiguration",
            false,
            &[],
            &[],
        ));
        r.register(b(
            crate::admission_policy::GROUP,
            crate::admission_webhook::VALIDATING,
            "ValidatingWebhookConfiguration",
            false,
            &[],
            &[],
        ));
        r.register(
            b(crate::crd::GROUP, "customresourcedefinitions", "CustomResourceDefinition", false, &["crd", "crds"], &[])
                .with_storage_path("apiextensions.k8s.io/customresourcedefinitions")
                .with_status_subresource(),
        );
        r.register(b("scheduling.k8s.io", "priorityclasses", "PriorityClass", false, &["pc"], &[]));
        r.register(b("coordination.k8s.io", "leases", "Lease", true, &[], &[]));
        r.register(b("node.k8s.io", "runtimeclasses", "RuntimeClass", false, &[], &[]));
        r.register(b("discovery.k8s.io", "endpointslices", "EndpointSlice", true, &[], &[]));
        let resource = crate::dra_validation::GROUP;
        r.register(b(resource, "deviceclasses", "DeviceClass", false, &[], &[]));
        r.register(b(resource, "resourceclaims", "ResourceClaim", true, &[], &[]).with_status_subresource());
        r.register(b(resource, "resourceclaimtemplates", "ResourceClaimTemplate", true, &[], &[]));
        r.register(b(resource, "resourceslices", "ResourceSlice", false, &[], &["spec.nodeName", "spec.driver"]));
        let flowcontrol = crate::flowcontrol::GROUP;
        r.register(
            b(flowcontrol, crate::flowcontrol::FLOW_SCHEMAS, "FlowSchema", false, &[], &[]).with_status_subresource(),
        );
        r.register(
            b(flowcontrol, crate::flowcontrol::PRIORITY_LEVELS, "PriorityLevelConfiguration", false, &[], &[])
                .with_status_subresource(),
        );
        r
    }

    /// Serves the versions of one CustomResourceDefinition (`versions`, all of one group and
    /// plural), replacing what was served for that CustomResourceDefinition or that group and
    /// plural before.
    pub fn install_custom(&mut self, crd_name: &str, versions: Vec<ResourceInfo>) {
        self.remove_custom(crd_name);
        if let Some(first) = versions.first() {
            let (g, p) = (first.group.clone(), first.plural.clone());
            self.resources.retain(|r| !(r.group == g && r.plural == p));
        }
        self.resources.extend(versions.into_iter().map(Arc::new));
    }

    /// Stops serving what a CustomResourceDefinition served; whether anything was served.
    pub fn remove_custom(&mut self, crd_name: &str) -> bool {
        let before = self.resources.len();
        self.resources.retain(|r| r.custom.as_ref().is_none_or(|c| c.crd_name != crd_name));
        before != self.resources.len()
    }

    /// The served versions of the CustomResourceDefinition `crd_name`.
    pub fn custom(&self, crd_name: &str) -> Vec<Arc<ResourceInfo>> {
        self.resources.iter().filter(|r| r.custom.as_ref().is_some_and(|c| c.crd_name == crd_name)).cloned().collect()
    }

    /// Adds (or replaces) a resource.
    pub fn register(&mut self, info: ResourceInfo) {
        self.resources.retain(|r| !(r.group == info.group && r.plural == info.plural));
        self.resources.push(Arc::new(info));
    }

    /// Serves `info` as another version of a resource already registered (replacing only the
    /// same version).
    pub(crate) fn register_version(&mut self, info: ResourceInfo) {
        self.resources.retain(|r| !(r.group == info.group && r.version == info.version && r.plural == info.plural));
        self.resources.push(Arc::new(info));
    }

    /// All resources in registration order (a custom resource once per served version).
    pub fn all(&self) -> &[Arc<ResourceInfo>] {
        &self.resources
    }

    /// Every resource once: a custom resource served in several versions by its preferred
    /// version only (the versions share their objects), or by its storage version when a
    /// conversion webhook converts the preferred one.
    pub fn each_resource(&self) -> impl Iterator<Item = &Arc<ResourceInfo>> {
        self.resources.iter().enumerate().filter_map(|(i, r)| {
            if self.resources[..i].iter().any(|o| o.group == r.group && o.plural == r.plural) {
                return None;
            }
            self.resource_of(&r.group, &r.plural)
        })
    }

    /// The one version of `group`'s `plural` that [`Registry::each_resource`] gives.
    pub fn resource_of(&self, group: &str, plural: &str) -> Option<&Arc<ResourceInfo>> {
        let mut same = self.resources.iter().filter(|o| o.group == group && o.plural == plural);
        let first = same.next()?;
        if crate::conversion::webhook_of(first).is_none() {
            return Some(first);
        }
        let storage = std::iter::once(first).chain(same).find(|o| crate::conversion::is_storage_version(o));
        Some(storage.unwrap_or(first))
    }

    /// Looks a resource up by group, version and plural.
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceInfo>> {
        self.resources.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
    }

    /// Looks a resource up by `plural`, `plural.group`, kind or short name.
    pub fn lookup(&self, name: &str) -> Option<&Arc<ResourceInfo>> {
        let (plural, group) = match name.split_once('.') {
            Some((p, g)) => (p, Some(g)),
            None => (name, None),
        };
        let matches = |r: &&Arc<ResourceInfo>| {
            let g_ok = group.is_none_or(|g| g == r.group);
            g_ok && (r.plural == plural
                || r.kind.eq_ignore_ascii_case(plural)
                || r.short_names.iter().any(|s| s == plural))
        };
        // A custom resource's preferred version first.
        let preferred = |r: &&Arc<ResourceInfo>| {
            r.custom.as_ref().is_none_or(|c| c.served_versions.first().is_none_or(|v| *v == r.version))
        };
        self.resources.iter().filter(matches).find(preferred).or_else(|| self.resources.iter().find(matches))
    }

    /// Distinct (group, version) pairs of non-core groups, in order; the versions of one group
    /// are together, by kube's version priority (`v2` before `v1` before `v1beta1`).
    pub fn group_versions(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for r in &self.resources {
            if r.group.is_empty() {
                continue;
            }
            let gv = (r.group.clone(), r.version.clone());
            if !out.contains(&gv) {
                out.push(gv);
            }
        }
        let mut groups: Vec<String> = Vec::new();
        for (g, _) in &out {
            if !groups.contains(g) {
                groups.push(g.clone());
            }
        }
        let mut sorted = Vec::with_capacity(out.len());
        for g in groups {
            let mut versions: Vec<String> = out.iter().filter(|(og, _)| *og == g).map(|(_, v)| v.clone()).collect();
            versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
            sorted.extend(versions.into_iter().map(|v| (g.clone(), v)));
        }
        sorted
    }
}

/// kube's ordering of API versions: GA before beta before alpha, higher numbers first, then
/// other names (alphabetically). Larger is preferred.
pub fn version_priority(v: &str) -> (u8, u64, u64, std::cmp::Reverse<String>) {
    let parse = |rest: &str| -> Option<(u8, u64, u64)> {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            return None;
        }
        let major: u64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((3, major, 0));
        }
        for (word, class) in [("beta", 2u8), ("alpha", 1u8)] {
            if let Some(n) = tail.strip_prefix(word)
                && !n.is_empty()
                && n.chars().all(|c| c.is_ascii_digit())
            {
                return Some((class, major, n.parse().ok()?));
            }
        }
        None
    };
    match v.strip_prefix('v').and_then(parse) {
        Some((class, major, minor)) => (class, major, minor, std::cmp::Reverse(String::new())),
        None => (0, 0, 0, std::cmp::Reverse(v.to_string())),
    }
}
