//! What the Go types of the built-in resources always carry: the fields kube-apiserver's
//! objects have even when a request leaves them out, and the defaults of list keys.
//!
//! kube-apiserver computes `managedFields` on its Go structs, where a struct held by value
//! (`spec`, `status`, `metadata`, a pod template, a Deployment's `strategy`, a container's
//! `resources`…) and every field serialized without `omitempty` are always present, as `{}`,
//! `null` or a zero scalar. A field present on both sides of a comparison is never *added*:
//! the `"."` of its node in `FieldsV1` depends on this. The OpenAPI definitions name the
//! fields without `omitempty` (`required`) but not which structs are held by value: those are
//! the rules and the list below.
//!
//! Invariants: only built-in definitions have zero values (custom resources are unstructured
//! in kube-apiserver too); a value-held struct's zero is `{}`, a required field's is Go's zero
//! of its type as JSON (`""`, `0`, `false`, `null` for lists, maps and pointers).
//! The zero values of the built-in definitions' fields are worked out once, on first use.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Value, json};

use crate::schema;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Struct-typed fields held by value (besides `metadata`, `spec` and `status`, see
/// [`zero_value`]): definition, field.
const VALUE_STRUCTS: &[(&str, &str)] = &[
    ("io.k8s.api.apps.v1.DeploymentSpec", "strategy"),
    ("io.k8s.api.apps.v1.DeploymentSpec", "template"),
    ("io.k8s.api.apps.v1.ReplicaSetSpec", "template"),
    ("io.k8s.api.apps.v1.StatefulSetSpec", "template"),
    ("io.k8s.api.apps.v1.StatefulSetSpec", "updateStrategy"),
    ("io.k8s.api.apps.v1.DaemonSetSpec", "template"),
    ("io.k8s.api.apps.v1.DaemonSetSpec", "updateStrategy"),
    ("io.k8s.api.batch.v1.JobSpec", "template"),
    ("io.k8s.api.batch.v1.CronJobSpec", "jobTemplate"),
    ("io.k8s.api.core.v1.Container", "resources"),
    ("io.k8s.api.core.v1.EphemeralContainer", "resources"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "resources"),
    ("io.k8s.api.core.v1.ServiceStatus", "loadBalancer"),
    ("io.k8s.api.core.v1.NodeStatus", "daemonEndpoints"),
    ("io.k8s.api.core.v1.NodeStatus", "nodeInfo"),
    ("io.k8s.api.core.v1.NodeDaemonEndpoints", "kubeletEndpoint"),
    ("io.k8s.api.core.v1.ContainerStatus", "state"),
    ("io.k8s.api.core.v1.ContainerStatus", "lastState"),
    ("io.k8s.api.core.v1.Event", "involvedObject"),
    ("io.k8s.api.core.v1.Event", "source"),
    ("io.k8s.api.events.v1.Event", "regarding"),
    ("io.k8s.api.events.v1.Event", "deprecatedSource"),
    ("io.k8s.api.discovery.v1.Endpoint", "conditions"),
    ("io.k8s.api.core.v1.WeightedPodAffinityTerm", "podAffinityTerm"),
    ("io.k8s.api.core.v1.PreferredSchedulingTerm", "preference"),
    ("io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector"),
    ("io.k8s.api.resource.v1.ResourceClaimSpec", "devices"),
    (CRD_STATUS, "acceptedNames"),
];

/// Optional fields serialized without `omitempty`, so present in every object Go writes: as
/// their type's zero (`""`, `0`, `false`), `null` for lists, or `{}` for a struct held by value
/// (those are in [`VALUE_STRUCTS`] too). The OpenAPI definitions do not list them as required.
const ALWAYS_WRITTEN: &[(&str, &str)] = &[
    ("io.k8s.api.apps.v1.StatefulSetOrdinals", "start"),
    ("io.k8s.api.apps.v1.StatefulSetSpec", "serviceName"),
    ("io.k8s.api.apps.v1.StatefulSetStatus", "availableReplicas"),
    ("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "currentMetrics"),
    ("io.k8s.api.batch.v1.PodFailurePolicyOnPodConditionsPattern", "status"),
    ("io.k8s.api.core.v1.ProjectedVolumeSource", "sources"),
    ("io.k8s.api.core.v1.NodeRuntimeHandler", "name"),
    ("io.k8s.api.core.v1.ContainerImage", "names"),
    ("io.k8s.api.core.v1.Event", "reportingComponent"),
    ("io.k8s.api.core.v1.Event", "reportingInstance"),
    ("io.k8s.api.discovery.v1.EndpointSlice", "ports"),
    ("io.k8s.api.flowcontrol.v1.FlowSchemaSpec", "matchingPrecedence"),
    ("io.k8s.api.flowcontrol.v1.ResourcePolicyRule", "namespaces"),
    ("io.k8s.api.flowcontrol.v1.QueuingConfiguration", "queues"),
    ("io.k8s.api.flowcontrol.v1.QueuingConfiguration", "handSize"),
    ("io.k8s.api.flowcontrol.v1.QueuingConfiguration", "queueLengthLimit"),
    ("io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector"),
    ("io.k8s.api.rbac.v1.Role", "rules"),
    ("io.k8s.api.rbac.v1.ClusterRole", "rules"),
    ("io.k8s.api.resource.v1.ResourceClaimSpec", "devices"),
    ("io.k8s.api.resource.v1.DeviceClaim", "requests"),
    ("io.k8s.api.resource.v1.AllocatedDeviceStatus", "conditions"),
    ("io.k8s.api.storage.v1.CSINodeDriver", "topologyKeys"),
    (CRD_STATUS, "conditions"),
    (CRD_STATUS, "acceptedNames"),
    (CRD_STATUS, "storedVersions"),
    ("io.k8s.api.core.v1.ResourceFieldSelector", "divisor"),
];

/// Optional pointer fields serialized without `omitempty`: `null` until set.
const ALWAYS_NULL: &[(&str, &str)] = &[
    ("io.k8s.api.authentication.v1.TokenRequestSpec", "expirationSeconds"),
    ("io.k8s.api.authentication.v1.TokenRequestSpec", "boundObjectRef"),
    ("io.k8s.api.core.v1.TypedObjectReference", "apiGroup"),
    ("io.k8s.api.core.v1.TypedLocalObjectReference", "apiGroup"),
    ("io.k8s.api.core.v1.AzureFilePersistentVolumeSource", "secretNamespace"),
    ("io.k8s.api.core.v1.GRPCAction", "service"),
    ("io.k8s.api.flowcontrol.v1.LimitedPriorityLevelConfiguration", "nominalConcurrencyShares"),
    ("io.k8s.api.networking.v1.IngressClassParametersReference", "scope"),
    ("io.k8s.api.resource.v1.CapacityRequestPolicy", "default"),
];

/// Times held by value (`metav1.Time`, `metav1.MicroTime`, not pointers): Go writes an unset one
/// as `null`, `omitempty` or not.
const VALUE_TIMES: &[(&str, &str)] = &[
    ("io.k8s.api.apps.v1.StatefulSetCondition", "lastTransitionTime"),
    ("io.k8s.api.apps.v1.DeploymentCondition", "lastUpdateTime"),
    ("io.k8s.api.apps.v1.DeploymentCondition", "lastTransitionTime"),
    ("io.k8s.api.apps.v1.DaemonSetCondition", "lastTransitionTime"),
    ("io.k8s.api.apps.v1.ReplicaSetCondition", "lastTransitionTime"),
    ("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerCondition", "lastTransitionTime"),
    ("io.k8s.api.batch.v1.JobCondition", "lastProbeTime"),
    ("io.k8s.api.batch.v1.JobCondition", "lastTransitionTime"),
    ("io.k8s.api.certificates.v1.CertificateSigningRequestCondition", "lastUpdateTime"),
    ("io.k8s.api.certificates.v1.CertificateSigningRequestCondition", "lastTransitionTime"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimCondition", "lastProbeTime"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimCondition", "lastTransitionTime"),
    ("io.k8s.api.core.v1.ContainerStateRunning", "startedAt"),
    ("io.k8s.api.core.v1.ContainerStateTerminated", "startedAt"),
    ("io.k8s.api.core.v1.ContainerStateTerminated", "finishedAt"),
    ("io.k8s.api.core.v1.PodCondition", "lastProbeTime"),
    ("io.k8s.api.core.v1.PodCondition", "lastTransitionTime"),
    ("io.k8s.api.core.v1.ReplicationControllerCondition", "lastTransitionTime"),
    ("io.k8s.api.core.v1.NodeCondition", "lastHeartbeatTime"),
    ("io.k8s.api.core.v1.NodeCondition", "lastTransitionTime"),
    ("io.k8s.api.core.v1.NamespaceCondition", "lastTransitionTime"),
    ("io.k8s.api.core.v1.Event", "firstTimestamp"),
    ("io.k8s.api.core.v1.Event", "lastTimestamp"),
    ("io.k8s.api.core.v1.Event", "eventTime"),
    ("io.k8s.api.core.v1.EventSeries", "lastObservedTime"),
    ("io.k8s.api.events.v1.Event", "deprecatedFirstTimestamp"),
    ("io.k8s.api.events.v1.Event", "deprecatedLastTimestamp"),
    ("io.k8s.api.flowcontrol.v1.FlowSchemaCondition", "lastTransitionTime"),
    ("io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationCondition", "lastTransitionTime"),
    ("io.k8s.api.storage.v1.VolumeError", "time"),
    (CRD_CONDITION, "lastTransitionTime"),
];

/// Numbers and booleans held by value with `omitempty` (not pointers): a `0` or `false` in a
/// request decodes to Go's zero, which is not written back. (A pointer's `0` is a value.)
const VALUE_SCALARS: &[(&str, &str)] = &[
    (OBJECT_META, "generation"),
    ("io.k8s.api.apps.v1.StatefulSetSpec", "minReadySeconds"),
    ("io.k8s.api.apps.v1.StatefulSetStatus", "observedGeneration"),
    ("io.k8s.api.apps.v1.StatefulSetStatus", "readyReplicas"),
    ("io.k8s.api.apps.v1.StatefulSetStatus", "currentReplicas"),
    ("io.k8s.api.apps.v1.StatefulSetStatus", "updatedReplicas"),
    ("io.k8s.api.apps.v1.DeploymentSpec", "minReadySeconds"),
    ("io.k8s.api.apps.v1.DeploymentSpec", "paused"),
    ("io.k8s.api.apps.v1.DeploymentStatus", "observedGeneration"),
    ("io.k8s.api.apps.v1.DeploymentStatus", "replicas"),
    ("io.k8s.api.apps.v1.DeploymentStatus", "updatedReplicas"),
    ("io.k8s.api.apps.v1.DeploymentStatus", "readyReplicas"),
    ("io.k8s.api.apps.v1.DeploymentStatus", "availableReplicas"),
    ("io.k8s.api.apps.v1.DeploymentStatus", "unavailableReplicas"),
    ("io.k8s.api.apps.v1.DaemonSetSpec", "minReadySeconds"),
    ("io.k8s.api.apps.v1.DaemonSetStatus", "observedGeneration"),
    ("io.k8s.api.apps.v1.DaemonSetStatus", "updatedNumberScheduled"),
    ("io.k8s.api.apps.v1.DaemonSetStatus", "numberAvailable"),
    ("io.k8s.api.apps.v1.DaemonSetStatus", "numberUnavailable"),
    ("io.k8s.api.apps.v1.ReplicaSetSpec", "minReadySeconds"),
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "fullyLabeledReplicas"),
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "readyReplicas"),
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "availableReplicas"),
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "observedGeneration"),
    ("io.k8s.api.autoscaling.v1.ScaleSpec", "replicas"),
    ("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "currentReplicas"),
    ("io.k8s.api.batch.v1.JobStatus", "active"),
    ("io.k8s.api.batch.v1.JobStatus", "succeeded"),
    ("io.k8s.api.batch.v1.JobStatus", "failed"),
    ("io.k8s.api.core.v1.ContainerPort", "hostPort"),
    ("io.k8s.api.core.v1.VolumeMount", "readOnly"),
    ("io.k8s.api.core.v1.Probe", "initialDelaySeconds"),
    ("io.k8s.api.core.v1.Probe", "timeoutSeconds"),
    ("io.k8s.api.core.v1.Probe", "periodSeconds"),
    ("io.k8s.api.core.v1.Probe", "successThreshold"),
    ("io.k8s.api.core.v1.Probe", "failureThreshold"),
    ("io.k8s.api.core.v1.Container", "stdin"),
    ("io.k8s.api.core.v1.Container", "stdinOnce"),
    ("io.k8s.api.core.v1.Container", "tty"),
    ("io.k8s.api.core.v1.EphemeralContainer", "stdin"),
    ("io.k8s.api.core.v1.EphemeralContainer", "stdinOnce"),
    ("io.k8s.api.core.v1.EphemeralContainer", "tty"),
    ("io.k8s.api.core.v1.ContainerStateTerminated", "signal"),
    ("io.k8s.api.core.v1.PodCondition", "observedGeneration"),
    ("io.k8s.api.core.v1.VolumeMountStatus", "readOnly"),
    ("io.k8s.api.core.v1.PodSpec", "hostNetwork"),
    ("io.k8s.api.core.v1.PodSpec", "hostPID"),
    ("io.k8s.api.core.v1.PodSpec", "hostIPC"),
    ("io.k8s.api.core.v1.PodStatus", "observedGeneration"),
    ("io.k8s.api.core.v1.ReplicationControllerSpec", "minReadySeconds"),
    ("io.k8s.api.core.v1.ReplicationControllerStatus", "fullyLabeledReplicas"),
    ("io.k8s.api.core.v1.ReplicationControllerStatus", "readyReplicas"),
    ("io.k8s.api.core.v1.ReplicationControllerStatus", "availableReplicas"),
    ("io.k8s.api.core.v1.ReplicationControllerStatus", "observedGeneration"),
    ("io.k8s.api.core.v1.ServiceSpec", "healthCheckNodePort"),
    ("io.k8s.api.core.v1.ServiceSpec", "publishNotReadyAddresses"),
    ("io.k8s.api.core.v1.ServicePort", "nodePort"),
    ("io.k8s.api.core.v1.NodeSpec", "unschedulable"),
    ("io.k8s.api.core.v1.ContainerImage", "sizeBytes"),
    ("io.k8s.api.core.v1.Event", "count"),
    ("io.k8s.api.core.v1.EventSeries", "count"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.GCEPersistentDiskVolumeSource", "partition"),
    ("io.k8s.api.core.v1.GCEPersistentDiskVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.AWSElasticBlockStoreVolumeSource", "partition"),
    ("io.k8s.api.core.v1.AWSElasticBlockStoreVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.NFSVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.ISCSIVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.FCVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.CSIPersistentVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.AzureFileVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.AzureFilePersistentVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.CephFSVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.CephFSPersistentVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.CinderVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.CinderPersistentVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.FlexVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.FlexPersistentVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.GlusterfsVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.GlusterfsPersistentVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.ISCSIVolumeSource", "chapAuthDiscovery"),
    ("io.k8s.api.core.v1.ISCSIVolumeSource", "chapAuthSession"),
    ("io.k8s.api.core.v1.ISCSIPersistentVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.ISCSIPersistentVolumeSource", "chapAuthDiscovery"),
    ("io.k8s.api.core.v1.ISCSIPersistentVolumeSource", "chapAuthSession"),
    ("io.k8s.api.core.v1.PortworxVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.QuobyteVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.RBDVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.RBDPersistentVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.ScaleIOVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.ScaleIOVolumeSource", "sslEnabled"),
    ("io.k8s.api.core.v1.ScaleIOPersistentVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.ScaleIOPersistentVolumeSource", "sslEnabled"),
    ("io.k8s.api.core.v1.StorageOSVolumeSource", "readOnly"),
    ("io.k8s.api.core.v1.StorageOSPersistentVolumeSource", "readOnly"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Condition", "observedGeneration"),
    ("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyStatus", "observedGeneration"),
    ("io.k8s.api.events.v1.Event", "deprecatedCount"),
    ("io.k8s.api.networking.v1.ServiceBackendPort", "number"),
    ("io.k8s.api.policy.v1.PodDisruptionBudgetStatus", "observedGeneration"),
    ("io.k8s.api.scheduling.v1.PriorityClass", "globalDefault"),
    (CRD_SPEC, "preserveUnknownFields"),
    (CRD_VERSION, "deprecated"),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceColumnDefinition", "priority"),
    (CRD_CONDITION, "observedGeneration"),
    (CRD_STATUS, "observedGeneration"),
    (JSON_SCHEMA_PROPS, "exclusiveMaximum"),
    (JSON_SCHEMA_PROPS, "exclusiveMinimum"),
    (JSON_SCHEMA_PROPS, "uniqueItems"),
    (JSON_SCHEMA_PROPS, "nullable"),
    (JSON_SCHEMA_PROPS, "x-kubernetes-embedded-resource"),
    (JSON_SCHEMA_PROPS, "x-kubernetes-int-or-string"),
];

const CRD_SPEC: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec";
const CRD_VERSION: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion";
const CRD_STATUS: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus";
const JSON_SCHEMA_PROPS: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
const CRD_CONDITION: &str =
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionCondition";

/// Fields the OpenAPI definitions list as required that Go nevertheless leaves out when empty
/// (`omitempty`): Go writes no zero for them.
const OMITTED_WHEN_EMPTY: &[(&str, &str)] = &[
    ("io.k8s.api.core.v1.PodCertificateProjection", "signerName"),
    ("io.k8s.api.core.v1.PodCertificateProjection", "keyType"),
    ("io.k8s.api.core.v1.ContainerRestartRule", "action"),
    ("io.k8s.api.core.v1.ContainerRestartRuleOnExitCodes", "operator"),
    ("io.k8s.api.networking.v1.ParentReference", "resource"),
    ("io.k8s.api.networking.v1.ParentReference", "name"),
];

/// Strings Go holds by pointer: a set `""` is a value (a claim's `storageClassName: ""` asks for
/// no class), unlike the `""` Kubernetes' protobuf encoder writes for every unset string.
const POINTER_STRINGS: &[(&str, &str)] = &[
    ("io.k8s.api.core.v1.PersistentVolumeSpec", "volumeMode"),
    ("io.k8s.api.core.v1.PersistentVolumeSpec", "volumeAttributesClassName"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "storageClassName"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "volumeMode"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "volumeAttributesClassName"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "currentVolumeAttributesClassName"),
    ("io.k8s.api.core.v1.TypedObjectReference", "apiGroup"),
    ("io.k8s.api.core.v1.TypedObjectReference", "namespace"),
    ("io.k8s.api.core.v1.TypedLocalObjectReference", "apiGroup"),
    ("io.k8s.api.core.v1.HostPathVolumeSource", "type"),
    ("io.k8s.api.core.v1.GlusterfsPersistentVolumeSource", "endpointsNamespace"),
    ("io.k8s.api.core.v1.ISCSIVolumeSource", "initiatorName"),
    ("io.k8s.api.core.v1.ISCSIPersistentVolumeSource", "initiatorName"),
    ("io.k8s.api.core.v1.AzureFilePersistentVolumeSource", "secretNamespace"),
    ("io.k8s.api.core.v1.AzureDiskVolumeSource", "cachingMode"),
    ("io.k8s.api.core.v1.AzureDiskVolumeSource", "fsType"),
    ("io.k8s.api.core.v1.AzureDiskVolumeSource", "kind"),
    ("io.k8s.api.core.v1.ClusterTrustBundleProjection", "name"),
    ("io.k8s.api.core.v1.ClusterTrustBundleProjection", "signerName"),
    ("io.k8s.api.core.v1.LocalVolumeSource", "fsType"),
    ("io.k8s.api.core.v1.CSIVolumeSource", "fsType"),
    ("io.k8s.api.core.v1.VolumeMount", "recursiveReadOnly"),
    ("io.k8s.api.core.v1.VolumeMount", "mountPropagation"),
    ("io.k8s.api.core.v1.GRPCAction", "service"),
    ("io.k8s.api.core.v1.Container", "restartPolicy"),
    ("io.k8s.api.core.v1.EphemeralContainer", "restartPolicy"),
    ("io.k8s.api.core.v1.Lifecycle", "stopSignal"),
    ("io.k8s.api.core.v1.ContainerStatus", "stopSignal"),
    ("io.k8s.api.core.v1.VolumeMountStatus", "recursiveReadOnly"),
    ("io.k8s.api.core.v1.PodSpec", "runtimeClassName"),
    ("io.k8s.api.core.v1.PodSpec", "preemptionPolicy"),
    ("io.k8s.api.core.v1.PodSpec", "hostnameOverride"),
    ("io.k8s.api.core.v1.PodResourceClaim", "resourceClaimName"),
    ("io.k8s.api.core.v1.PodResourceClaim", "resourceClaimTemplateName"),
    ("io.k8s.api.core.v1.PodResourceClaimStatus", "resourceClaimName"),
    ("io.k8s.api.core.v1.TopologySpreadConstraint", "nodeAffinityPolicy"),
    ("io.k8s.api.core.v1.TopologySpreadConstraint", "nodeTaintsPolicy"),
    ("io.k8s.api.core.v1.PodSecurityContext", "supplementalGroupsPolicy"),
    ("io.k8s.api.core.v1.SeccompProfile", "localhostProfile"),
    ("io.k8s.api.core.v1.AppArmorProfile", "localhostProfile"),
    ("io.k8s.api.core.v1.PodDNSConfigOption", "value"),
    ("io.k8s.api.core.v1.ServiceSpec", "ipFamilyPolicy"),
    ("io.k8s.api.core.v1.ServiceSpec", "loadBalancerClass"),
    ("io.k8s.api.core.v1.ServiceSpec", "internalTrafficPolicy"),
    ("io.k8s.api.core.v1.ServiceSpec", "trafficDistribution"),
    ("io.k8s.api.core.v1.ServicePort", "appProtocol"),
    ("io.k8s.api.core.v1.EndpointAddress", "nodeName"),
    ("io.k8s.api.core.v1.EndpointPort", "appProtocol"),
    ("io.k8s.api.core.v1.SecurityContext", "procMount"),
    ("io.k8s.api.core.v1.WindowsSecurityContextOptions", "gmsaCredentialSpecName"),
    ("io.k8s.api.core.v1.WindowsSecurityContextOptions", "gmsaCredentialSpec"),
    ("io.k8s.api.core.v1.WindowsSecurityContextOptions", "runAsUserName"),
    ("io.k8s.api.core.v1.PortStatus", "error"),
    ("io.k8s.api.batch.v1.PodFailurePolicyOnExitCodesRequirement", "containerName"),
    ("io.k8s.api.batch.v1.SuccessPolicyRule", "succeededIndexes"),
    ("io.k8s.api.batch.v1.JobSpec", "completionMode"),
    ("io.k8s.api.batch.v1.JobSpec", "podReplacementPolicy"),
    ("io.k8s.api.batch.v1.JobSpec", "managedBy"),
    ("io.k8s.api.batch.v1.JobStatus", "failedIndexes"),
    ("io.k8s.api.batch.v1.CronJobSpec", "timeZone"),
    ("io.k8s.api.networking.v1.IngressSpec", "ingressClassName"),
    ("io.k8s.api.networking.v1.IngressPortStatus", "error"),
    ("io.k8s.api.networking.v1.HTTPIngressPath", "pathType"),
    ("io.k8s.api.networking.v1.IngressClassParametersReference", "apiGroup"),
    ("io.k8s.api.networking.v1.IngressClassParametersReference", "scope"),
    ("io.k8s.api.networking.v1.IngressClassParametersReference", "namespace"),
    ("io.k8s.api.storage.v1.StorageClass", "volumeBindingMode"),
    ("io.k8s.api.storage.v1.VolumeAttachmentSource", "persistentVolumeName"),
    ("io.k8s.api.discovery.v1.Endpoint", "hostname"),
    ("io.k8s.api.discovery.v1.Endpoint", "nodeName"),
    ("io.k8s.api.discovery.v1.Endpoint", "zone"),
    ("io.k8s.api.discovery.v1.EndpointPort", "name"),
    ("io.k8s.api.discovery.v1.EndpointPort", "appProtocol"),
    ("io.k8s.api.core.v1.PodSecurityContext", "fsGroupChangePolicy"),
    ("io.k8s.api.core.v1.PodSecurityContext", "seLinuxChangePolicy"),
    ("io.k8s.api.core.v1.LoadBalancerIngress", "ipMode"),
    ("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"),
    ("io.k8s.api.coordination.v1.LeaseSpec", "preferredHolder"),
    ("io.k8s.api.coordination.v1.LeaseSpec", "strategy"),
    ("io.k8s.api.policy.v1.PodDisruptionBudgetSpec", "unhealthyPodEvictionPolicy"),
    ("io.k8s.api.autoscaling.v2.HPAScalingRules", "selectPolicy"),
    ("io.k8s.api.admissionregistration.v1.RuleWithOperations", "scope"),
    ("io.k8s.api.admissionregistration.v1.NamedRuleWithOperations", "scope"),
    ("io.k8s.api.discovery.v1.EndpointPort", "protocol"),
    ("io.k8s.api.networking.v1.NetworkPolicyPort", "protocol"),
    ("io.k8s.api.scheduling.v1.PriorityClass", "preemptionPolicy"),
    ("io.k8s.api.storage.v1.CSIDriverSpec", "fsGroupPolicy"),
    ("io.k8s.api.storage.v1.StorageClass", "reclaimPolicy"),
    (JSON_SCHEMA_PROPS, "$ref"),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ServiceReference", "path"),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.WebhookClientConfig", "url"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", "propagationPolicy"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions", "uid"),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions", "resourceVersion"),
    ("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "failurePolicy"),
    ("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "matchPolicy"),
    ("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "sideEffects"),
    ("io.k8s.api.admissionregistration.v1.MutatingWebhook", "failurePolicy"),
    ("io.k8s.api.admissionregistration.v1.MutatingWebhook", "matchPolicy"),
    ("io.k8s.api.admissionregistration.v1.MutatingWebhook", "sideEffects"),
    ("io.k8s.api.admissionregistration.v1.MutatingWebhook", "reinvocationPolicy"),
    ("io.k8s.api.admissionregistration.v1.WebhookClientConfig", "url"),
    ("io.k8s.api.admissionregistration.v1.ServiceReference", "path"),
    ("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec", "failurePolicy"),
    ("io.k8s.api.admissionregistration.v1.MatchResources", "matchPolicy"),
    ("io.k8s.api.admissionregistration.v1.ParamRef", "parameterNotFoundAction"),
    ("io.k8s.api.admissionregistration.v1.Validation", "reason"),
    (CRD_VERSION, "deprecationWarning"),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceSubresourceScale", "labelSelectorPath"),
    (JSON_SCHEMA_PROPS, "x-kubernetes-list-type"),
    (JSON_SCHEMA_PROPS, "x-kubernetes-map-type"),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ValidationRule", "reason"),
];

/// Whether field `field` of the built-in definition `definition` is a string Go holds by
/// pointer ([`POINTER_STRINGS`]).
pub(crate) fn is_pointer_string(definition: &str, field: &str) -> bool {
    POINTER_STRINGS.contains(&(definition, field))
}

/// Whether field `field` of the built-in definition `definition` is a string Go holds by value
/// and leaves out when empty: a string (or a string-kind type, or bytes) that is not required,
/// not always written and not held by pointer ([`POINTER_STRINGS`], which names every string Go
/// holds by pointer in the served groups). A JSON `""` there is no value, as for Go.
pub(crate) fn is_value_string(definition: &str, field: &str, required: bool) -> bool {
    let pair = (definition, field);
    let required = required && !OMITTED_WHEN_EMPTY.contains(&pair);
    if required || ALWAYS_WRITTEN.contains(&pair) || ALWAYS_NULL.contains(&pair) || POINTER_STRINGS.contains(&pair) {
        return false;
    }
    let prop = schema::builtin().definition(definition).and_then(|(_, d)| d.get("properties")?.get(field));
    prop.is_some_and(|p| ref_name(p).is_none() && p.get("type").and_then(Value::as_str) == Some("string"))
}

/// Whether field `field` of the built-in definition `definition` is a number or boolean Go
/// holds by value and leaves out when zero ([`VALUE_SCALARS`]).
pub(crate) fn is_value_scalar(definition: &str, field: &str) -> bool {
    VALUE_SCALARS.contains(&(definition, field))
}

/// Defaults of list-map key fields: definition of the elements, key field, value.
const KEY_DEFAULTS: &[(&str, &str, &str)] = &[
    ("io.k8s.api.core.v1.ContainerPort", "protocol", "TCP"),
    ("io.k8s.api.core.v1.ServicePort", "protocol", "TCP"),
    ("io.k8s.api.core.v1.LocalObjectReference", "name", ""),
];

static EMPTY_OBJECT: LazyLock<Value> = LazyLock::new(|| json!({}));
static NULL: Value = Value::Null;
static EMPTY_STRING: LazyLock<Value> = LazyLock::new(|| json!(""));
static ZERO: LazyLock<Value> = LazyLock::new(|| json!(0));
static FALSE: Value = Value::Bool(false);
static ZERO_QUANTITY: LazyLock<Value> = LazyLock::new(|| json!("0"));

fn ref_name(prop: &Value) -> Option<&str> {
    let r = prop.get("$ref").or_else(|| prop.get("allOf")?.as_array()?.first()?.get("$ref"))?;
    r.as_str()?.strip_prefix("#/components/schemas/")
}

/// The value the Go struct `definition` holds in `field` when it is not set, if Go always
/// serializes that field; `required` says whether the definition lists the field as required
/// (it has no `omitempty`).
pub(crate) fn zero_value(definition: &str, field: &str, required: bool) -> Option<&'static Value> {
    let required = required && !OMITTED_WHEN_EMPTY.contains(&(definition, field));
    let b = schema::builtin();
    let props = b.definition(definition)?.1.get("properties")?.as_object()?;
    let prop = props.get(field)?;
    let target = ref_name(prop);
    let by_value = match field {
        "metadata" => target == Some(OBJECT_META),
        // The spec and status of an object or of an object template.
        "spec" | "status" => target.is_some() && props.get("metadata").and_then(ref_name) == Some(OBJECT_META),
        _ => VALUE_STRUCTS.contains(&(definition, field)),
    };
    if by_value {
        return Some(&EMPTY_OBJECT);
    }
    if VALUE_TIMES.contains(&(definition, field)) || ALWAYS_NULL.contains(&(definition, field)) {
        return Some(&NULL);
    }
    if !required && !ALWAYS_WRITTEN.contains(&(definition, field)) {
        return None;
    }
    let resolved = match target {
        Some(t) => b.definition(t)?.1,
        None => prop,
    };
    Some(match (target, resolved.get("type").and_then(Value::as_str)) {
        (Some("io.k8s.apimachinery.pkg.util.intstr.IntOrString"), _) => &ZERO,
        (Some("io.k8s.apimachinery.pkg.api.resource.Quantity"), _) => &ZERO_QUANTITY,
        (None, Some("string")) => &EMPTY_STRING,
        (None, Some("integer" | "number")) => &ZERO,
        (None, Some("boolean")) => &FALSE,
        _ => &NULL,
    })
}

/// [`zero_value`] of field `field` of a built-in definition, `definition` being its name as
/// the built-in schemas hold it (looked up by address in a table of every field of every
/// definition; computed for any other name); `required` tells whether the definition lists
/// the field as required.
pub(crate) fn builtin_zero_value(
    definition: &str,
    field: &str,
    required: impl FnOnce() -> bool,
) -> Option<&'static Value> {
    type Zeros = HashMap<(usize, usize, &'static str), Option<&'static Value>, foldhash::fast::RandomState>;
    static ZEROS: LazyLock<Zeros> = LazyLock::new(|| {
        let mut zeros = Zeros::default();
        for (name, def) in schema::builtin().definitions() {
            let Some(props) = def.get("properties").and_then(Value::as_object) else { continue };
            let required = def.get("required").and_then(Value::as_array);
            for field in props.keys() {
                let r = required.is_some_and(|r| r.iter().any(|x| x.as_str() == Some(field)));
                zeros.insert((name.as_ptr() as usize, name.len(), field.as_str()), zero_value(name, field, r));
            }
        }
        zeros
    });
    let zeros: &HashMap<(usize, usize, &str), _, _> = &ZEROS;
    match zeros.get(&(definition.as_ptr() as usize, definition.len(), field)) {
        Some(z) => *z,
        None => zero_value(definition, field, required()),
    }
}

/// The default of key field `key` of list elements of type `definition`, if it has one.
pub(crate) fn key_default(definition: &str, key: &str) -> Option<&'static Value> {
    static VALUES: LazyLock<Vec<Value>> = LazyLock::new(|| KEY_DEFAULTS.iter().map(|(_, _, v)| json!(v)).collect());
    let i = KEY_DEFAULTS.iter().position(|(d, k, _)| *d == definition && *k == key)?;
    Some(&VALUES[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_names_a_field_of_a_built_in_definition() {
        let tables = [
            VALUE_STRUCTS,
            ALWAYS_WRITTEN,
            ALWAYS_NULL,
            VALUE_TIMES,
            VALUE_SCALARS,
            POINTER_STRINGS,
            OMITTED_WHEN_EMPTY,
        ];
        for (definition, field) in tables.iter().flat_map(|t| t.iter()) {
            let def = schema::builtin().definition(definition).map(|(_, d)| d);
            let props = def.and_then(|d| d.get("properties"));
            assert!(props.is_some_and(|p| p.get(*field).is_some()), "{definition}.{field}");
        }
    }

    #[test]
    fn go_structs_held_by_value_and_fields_without_omitempty() {
        let z = |d: &str, f: &str, r: bool| zero_value(d, f, r).cloned();
        assert_eq!(z("io.k8s.api.apps.v1.Deployment", "spec", false), Some(json!({})));
        assert_eq!(z("io.k8s.api.apps.v1.Deployment", "metadata", false), Some(json!({})));
        assert_eq!(z("io.k8s.api.core.v1.PodTemplateSpec", "spec", false), Some(json!({})));
        assert_eq!(z("io.k8s.api.apps.v1.DeploymentSpec", "strategy", false), Some(json!({})));
        assert_eq!(z("io.k8s.api.apps.v1.DeploymentSpec", "selector", true), Some(Value::Null));
        assert_eq!(z("io.k8s.api.core.v1.PodSpec", "containers", true), Some(Value::Null));
        assert_eq!(z("io.k8s.api.core.v1.Container", "name", true), Some(json!("")));
        assert_eq!(z("io.k8s.api.core.v1.PodSpec", "securityContext", false), None);
        assert_eq!(z("io.k8s.api.core.v1.ConfigMap", "data", false), None);
        // The table of the built-in definitions agrees, found by the definitions' own names.
        for (name, def) in schema::builtin().definitions() {
            let required = def.get("required").and_then(Value::as_array);
            for field in def.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.keys()) {
                let r = required.is_some_and(|r| r.iter().any(|x| x.as_str() == Some(field)));
                assert_eq!(builtin_zero_value(name, field, || r), zero_value(name, field, r), "{name}.{field}");
            }
        }
        assert_eq!(z("io.k8s.api.core.v1.Event", "firstTimestamp", false), Some(Value::Null));
        assert_eq!(z("io.k8s.api.core.v1.Event", "reportingComponent", false), Some(json!("")));
        assert_eq!(z("io.k8s.api.rbac.v1.ClusterRole", "rules", false), Some(Value::Null));
        assert_eq!(z("io.k8s.api.core.v1.GRPCAction", "service", false), Some(Value::Null));
        assert_eq!(z(CRD_STATUS, "acceptedNames", false), Some(json!({})));
        assert!(is_value_scalar("io.k8s.api.apps.v1.DeploymentSpec", "paused"));
        assert!(!is_value_scalar("io.k8s.api.apps.v1.DeploymentSpec", "replicas"));
        assert!(is_pointer_string("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "storageClassName"));
        assert_eq!(key_default("io.k8s.api.core.v1.ContainerPort", "protocol"), Some(&json!("TCP")));
        assert_eq!(key_default("io.k8s.api.core.v1.ContainerPort", "containerPort"), None);
    }
}
