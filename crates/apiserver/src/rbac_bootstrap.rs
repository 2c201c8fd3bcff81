//! The roles and bindings kube-apiserver v1.35 holds from its start when it authorizes with RBAC
//! (its bootstrap policy), limited to what the server needs to be usable and to aggregate: the
//! superuser role `cluster-admin` bound to `system:masters`; the user-facing `admin`, `edit` and
//! `view` roles with the `system:aggregate-to-*` roles that fill them; the discovery, basic-user,
//! public-info and service-account-issuer-discovery roles every caller is granted; the
//! `system:auth-delegator` role webhook servers are bound to, and `system:monitoring` (bound to
//! its group); the ClusterRole aggregation controller's role and binding; and kube's namespaced
//! defaults in `kube-system` and `kube-public` (the leader-locking roles of the controller
//! manager and the scheduler, the reader of `extension-apiserver-authentication`, the roles of
//! the bootstrap signer, the cloud provider and the token cleaner) with their bindings.
//!
//! Invariants, as kube's bootstrap policy holds them:
//! - every object carries the label `kubernetes.io/bootstrapping: rbac-defaults` and the
//!   annotation `rbac.authorization.kubernetes.io/autoupdate: "true"`;
//! - within a rule, `apiGroups`, `resources`, `nonResourceURLs` and `verbs` are sorted, as kube's
//!   rule builder sorts them, and rules keep kube's order, so a stored role equals kube's;
//! - `admin`, `edit` and `view` carry an `aggregationRule` and no rules of their own (the
//!   aggregation controller writes them); `edit` is labelled to aggregate into `admin` and `view`
//!   into `edit`, so `admin` holds everything `edit` holds and `edit` everything `view` holds;
//! - every ClusterRoleBinding is named after the ClusterRole it refers to, which is one of
//!   [`cluster_roles`]; every RoleBinding refers to a Role of [`namespaced_roles`] in its own
//!   namespace; group and user subjects carry the RBAC API group, service-account subjects a
//!   namespace and no API group.
//!
//! The lists follow kube's generated fixtures: bootstrap roles (and bindings) by name, then the
//! controller's, then the namespaced ones. [`install`] reconciles them with the storage at every
//! start, as kube does: the missing ones are written (a namespaced one's namespace made first
//! when missing), one that lacks part of its default gets it back (nothing it holds is removed)
//! unless annotated `rbac.authorization.kubernetes.io/autoupdate: "false"`.

use serde_json::{Map, Value, json};

use crate::rbac::{GROUP, PolicyRule};

/// The label every bootstrap object carries, with its value.
const BOOTSTRAPPING: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");

/// The annotation under which the server reconciles a bootstrap object with its default at start.
const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// The label a role carries to have its rules aggregated into `admin`.
const TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
/// The label a role carries to have its rules aggregated into `edit`.
const TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
/// The label a role carries to have its rules aggregated into `view`.
const TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// The core (legacy) API group.
const CORE: &[&str] = &[""];

/// Reading verbs.
const READ: &[&str] = &["get", "list", "watch"];
/// Writing verbs, sorted.
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
/// Reading and writing verbs, sorted.
const READ_WRITE: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// A resource rule.
fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

/// A resource rule limited to the objects `names`.
fn named_rule(groups: &[&str], resources: &[&str], names: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "resourceNames": names, "verbs": verbs})
}

/// A non-resource rule.
fn urls(urls: &[&str], verbs: &[&str]) -> Value {
    json!({"nonResourceURLs": urls, "verbs": verbs})
}

/// The metadata of a bootstrap object: its name, the bootstrapping label plus `labels` (each
/// valued `"true"`), and the autoupdate annotation.
fn metadata(name: &str, labels: &[&str]) -> Value {
    let mut all = Map::new();
    all.insert(BOOTSTRAPPING.0.into(), BOOTSTRAPPING.1.into());
    for label in labels {
        all.insert((*label).into(), "true".into());
    }
    json!({"name": name, "labels": all, "annotations": {AUTOUPDATE: "true"}})
}

/// A ClusterRole with its own rules.
fn role(name: &str, labels: &[&str], rules: Vec<Value>) -> Value {
    json!({"metadata": metadata(name, labels), "rules": rules})
}

/// A ClusterRole whose rules are those of the roles labelled `selects: "true"`; it is written
/// with no rules, for the aggregation controller to fill.
fn aggregated(name: &str, labels: &[&str], selects: &str) -> Value {
    json!({
        "metadata": metadata(name, labels),
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {selects: "true"}}]}
    })
}

/// A ClusterRoleBinding of the ClusterRole of the same name.
fn binding(name: &str, subjects: Vec<Value>) -> Value {
    json!({
        "metadata": metadata(name, &[]),
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
        "subjects": subjects
    })
}

/// A Role of `namespace` with its rules.
fn namespaced_role(namespace: &str, name: &str, rules: Vec<Value>) -> Value {
    let mut role = role(name, &[], rules);
    role["metadata"]["namespace"] = namespace.into();
    role
}

/// A RoleBinding of `namespace`, named `name`, of the Role `role` of the same namespace.
fn role_binding(namespace: &str, name: &str, role: &str, subjects: Vec<Value>) -> Value {
    let mut metadata = metadata(name, &[]);
    metadata["namespace"] = namespace.into();
    json!({
        "metadata": metadata,
        "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": role},
        "subjects": subjects
    })
}

/// Group subjects.
fn groups(names: &[&str]) -> Vec<Value> {
    names.iter().map(|name| json!({"apiGroup": GROUP, "kind": "Group", "name": name})).collect()
}

/// A user subject.
fn user(name: &str) -> Value {
    json!({"apiGroup": GROUP, "kind": "User", "name": name})
}

/// A service-account subject.
fn service_account(namespace: &str, name: &str) -> Value {
    json!({"kind": "ServiceAccount", "name": name, "namespace": namespace})
}

/// The default ClusterRoles, as the server writes them when they are missing.
pub(crate) fn cluster_roles() -> Vec<Value> {
    vec![
        aggregated("admin", &[], TO_ADMIN),
        role("cluster-admin", &[], vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])]),
        aggregated("edit", &[TO_ADMIN], TO_EDIT),
        role(
            "system:aggregate-to-admin",
            &[TO_ADMIN],
            vec![
                rule(&["authorization.k8s.io"], &["localsubjectaccessreviews"], &["create"]),
                rule(&[GROUP], &["rolebindings", "roles"], READ_WRITE),
            ],
        ),
        role("system:aggregate-to-edit", &[TO_EDIT], aggregate_to_edit()),
        role("system:aggregate-to-view", &[TO_VIEW], aggregate_to_view()),
        role(
            "system:auth-delegator",
            &[],
            vec![
                rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
                rule(&["authorization.k8s.io"], &["subjectaccessreviews"], &["create"]),
            ],
        ),
        role(
            "system:basic-user",
            &[],
            vec![
                rule(&["authorization.k8s.io"], &["selfsubjectaccessreviews", "selfsubjectrulesreviews"], &["create"]),
                rule(&["authentication.k8s.io"], &["selfsubjectreviews"], &["create"]),
            ],
        ),
        role(
            "system:discovery",
            &[],
            vec![urls(
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                &["get"],
            )],
        ),
        role(
            "system:monitoring",
            &[],
            vec![urls(
                &["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"],
                &["get"],
            )],
        ),
        role(
            "system:public-info-viewer",
            &[],
            vec![urls(&["/healthz", "/livez", "/readyz", "/version", "/version/"], &["get"])],
        ),
        role(
            "system:service-account-issuer-discovery",
            &[],
            vec![urls(
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
                &["get"],
            )],
        ),
        aggregated("view", &[TO_EDIT], TO_VIEW),
        role(
            "system:controller:clusterrole-aggregation-controller",
            &[],
            vec![rule(&[GROUP], &["clusterroles"], &["escalate", "get", "list", "patch", "update", "watch"])],
        ),
    ]
}

/// What `edit` (and through it `admin`) grants beyond `view`: reads of the resources that can
/// reveal secrets or reach into pods, impersonation of service accounts, and writes of the
/// namespaced workload, service, config and policy resources.
fn aggregate_to_edit() -> Vec<Value> {
    vec![
        rule(CORE, &["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"], READ),
        rule(CORE, &["serviceaccounts"], &["impersonate"]),
        rule(CORE, &["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], WRITE),
        rule(CORE, &["pods/eviction"], &["create"]),
        rule(
            CORE,
            &[
                "configmaps",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy",
            ],
            WRITE,
        ),
        rule(CORE, &["serviceaccounts/token"], &["create"]),
        rule(&["", "events.k8s.io"], &["events"], WRITE),
        rule(
            &["apps"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ],
            WRITE,
        ),
        rule(&["autoscaling"], &["horizontalpodautoscalers"], WRITE),
        rule(&["batch"], &["cronjobs", "jobs"], WRITE),
        rule(
            &["extensions"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "ingresses",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
            ],
            WRITE,
        ),
        rule(&["policy"], &["poddisruptionbudgets"], WRITE),
        rule(&["networking.k8s.io"], &["ingresses", "networkpolicies"], WRITE),
        rule(&["coordination.k8s.io"], &["leases"], READ_WRITE),
        rule(&["resource.k8s.io"], &["resourceclaims", "resourceclaimtemplates"], WRITE),
    ]
}

/// What `view` (and through it `edit` and `admin`) grants: reads of the namespaced resources that
/// do not reveal secrets, their `status` and `scale`, and of the namespace itself.
fn aggregate_to_view() -> Vec<Value> {
    vec![
        rule(
            CORE,
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
            ],
            READ,
        ),
        rule(
            CORE,
            &[
                "bindings",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status",
            ],
            READ,
        ),
        // Read access to namespaces at the namespace scope reads the namespace itself.
        rule(CORE, &["namespaces"], READ),
        rule(&["", "events.k8s.io"], &["events"], READ),
        rule(&["discovery.k8s.io"], &["endpointslices"], READ),
        rule(
            &["apps"],
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
            ],
            READ,
        ),
        rule(&["autoscaling"], &["horizontalpodautoscalers", "horizontalpodautoscalers/status"], READ),
        rule(&["batch"], &["cronjobs", "cronjobs/status", "jobs", "jobs/status"], READ),
        rule(
            &["extensions"],
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
            ],
            READ,
        ),
        rule(&["policy"], &["poddisruptionbudgets", "poddisruptionbudgets/status"], READ),
        rule(&["networking.k8s.io"], &["ingresses", "ingresses/status", "networkpolicies"], READ),
        rule(&["resource.k8s.io"], &["resourceclaims", "resourceclaims/status", "resourceclaimtemplates"], READ),
    ]
}

/// The default ClusterRoleBindings, as the server writes them when they are missing.
pub(crate) fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding("cluster-admin", groups(&["system:masters"])),
        binding("system:basic-user", groups(&["system:authenticated"])),
        binding("system:discovery", groups(&["system:authenticated"])),
        binding("system:monitoring", groups(&["system:monitoring"])),
        binding("system:public-info-viewer", groups(&["system:authenticated", "system:unauthenticated"])),
        binding("system:service-account-issuer-discovery", groups(&["system:serviceaccounts"])),
        binding(
            "system:controller:clusterrole-aggregation-controller",
            vec![service_account("kube-system", "clusterrole-aggregation-controller")],
        ),
    ]
}

/// The namespace kube-apiserver's control-plane components hold their defaults in.
const KUBE_SYSTEM: &str = "kube-system";
/// The namespace of the public cluster information.
const KUBE_PUBLIC: &str = "kube-public";

/// The default namespaced Roles, as the server writes them when they are missing: those of
/// `kube-public`, then those of `kube-system`, each namespace's by name.
pub(crate) fn namespaced_roles() -> Vec<Value> {
    let events = || rule(&["", "events.k8s.io"], &["events"], &["create", "patch", "update"]);
    let leader_locking = |name| {
        let verbs = &["create", "get", "list", "update", "watch"];
        namespaced_role(
            KUBE_SYSTEM,
            name,
            vec![
                rule(&["coordination.k8s.io"], &["leases"], verbs),
                rule(&["coordination.k8s.io"], &["leasecandidates"], verbs),
            ],
        )
    };
    vec![
        namespaced_role(
            KUBE_PUBLIC,
            "system:controller:bootstrap-signer",
            vec![
                rule(CORE, &["configmaps"], READ),
                named_rule(CORE, &["configmaps"], &["cluster-info"], &["update"]),
                events(),
            ],
        ),
        namespaced_role(
            KUBE_SYSTEM,
            "extension-apiserver-authentication-reader",
            vec![named_rule(CORE, &["configmaps"], &["extension-apiserver-authentication"], READ)],
        ),
        leader_locking("system::leader-locking-kube-controller-manager"),
        leader_locking("system::leader-locking-kube-scheduler"),
        namespaced_role(KUBE_SYSTEM, "system:controller:bootstrap-signer", vec![rule(CORE, &["secrets"], READ)]),
        namespaced_role(
            KUBE_SYSTEM,
            "system:controller:cloud-provider",
            vec![rule(CORE, &["configmaps"], &["create", "get", "list", "watch"])],
        ),
        namespaced_role(
            KUBE_SYSTEM,
            "system:controller:token-cleaner",
            vec![rule(CORE, &["secrets"], &["delete", "get", "list", "watch"]), events()],
        ),
    ]
}

/// The default RoleBindings, as the server writes them when they are missing, in the order of
/// [`namespaced_roles`].
pub(crate) fn namespaced_role_bindings() -> Vec<Value> {
    let controller = |namespace, name: &str| {
        let account = name.trim_start_matches("system:controller:");
        role_binding(namespace, name, name, vec![service_account(KUBE_SYSTEM, account)])
    };
    let system = |name: &str| format!("system:{name}");
    vec![
        controller(KUBE_PUBLIC, "system:controller:bootstrap-signer"),
        role_binding(
            KUBE_SYSTEM,
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            vec![user(&system("kube-controller-manager")), user(&system("kube-scheduler"))],
        ),
        role_binding(
            KUBE_SYSTEM,
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
            vec![
                user(&system("kube-controller-manager")),
                service_account(KUBE_SYSTEM, "kube-controller-manager"),
                service_account(KUBE_SYSTEM, "leader-election-controller"),
            ],
        ),
        role_binding(
            KUBE_SYSTEM,
            "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
            vec![user(&system("kube-scheduler")), service_account(KUBE_SYSTEM, "kube-scheduler")],
        ),
        controller(KUBE_SYSTEM, "system:controller:bootstrap-signer"),
        controller(KUBE_SYSTEM, "system:controller:cloud-provider"),
        controller(KUBE_SYSTEM, "system:controller:token-cleaner"),
    ]
}

/// Reconciles the default ClusterRoles, ClusterRoleBindings, Roles and RoleBindings with the
/// storage at start, as kube's `ensureRBACPolicy` does on every start (see [`reconciled`]). A write that meets a
/// concurrent one (409, or 404 for an object deleted meanwhile) is tried again on what is stored
/// then, after a short pause; an object that cannot be reconciled is logged and the others are
/// still reconciled, as kube goes on with as many as it can. Fails only when none could be.
pub(crate) async fn install(store: &crate::store::Store) -> std::io::Result<()> {
    let registry = store.registry();
    let sets = [
        ("clusterroles", cluster_roles()),
        ("clusterrolebindings", cluster_role_bindings()),
        ("roles", namespaced_roles()),
        ("rolebindings", namespaced_role_bindings()),
    ];
    let (mut done, mut first_failure) = (0, None);
    for (plural, objects) in sets {
        let Some(info) = registry.find(GROUP, "v1", plural).cloned() else { continue };
        for expected in objects {
            let field = |key: &str| expected["metadata"][key].as_str().unwrap_or("").to_string();
            let (namespace, name) = (field("namespace"), field("name"));
            let mut pause = RETRY_PAUSE;
            let mut tries = 0;
            let outcome = loop {
                match reconcile(store, &info, &namespace, &name, &expected).await {
                    Err(e) if matches!(e.code, 404 | 409) && tries < RETRIES => {
                        tries += 1;
                        tokio::time::sleep(pause).await;
                        pause *= 5;
                    }
                    outcome => break outcome,
                }
            };
            match outcome {
                Ok(()) => done += 1,
                Err(e) => {
                    tracing::warn!(resource = plural, namespace = %namespace, name = %name, error = %e, "unable to reconcile a bootstrap RBAC object");
                    first_failure.get_or_insert(format!("reconciling {plural} {namespace}/{name}: {e}"));
                }
            }
        }
    }
    match first_failure {
        Some(e) if done == 0 => Err(std::io::Error::other(e)),
        _ => Ok(()),
    }
}

/// How many times a reconciliation that met a concurrent write is tried again, and the first
/// pause (multiplied by five each time), as client-go's `retry.DefaultBackoff`.
const RETRIES: usize = 4;
const RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(10);

/// Creates `expected` when missing (in `namespace`, made first when missing, as kube's
/// `tryEnsureNamespace`), or writes what [`reconciled`] makes of the stored one.
async fn reconcile(
    store: &crate::store::Store,
    info: &crate::registry::ResourceInfo,
    namespace: &str,
    name: &str,
    expected: &Value,
) -> Result<(), crate::status::ApiError> {
    let create = async || {
        let ns = (!namespace.is_empty()).then_some(namespace);
        if let Some(n) = ns {
            crate::namespaces::ensure(store, n).await?;
        }
        store.create_many(info, ns, vec![expected.clone()], false, MANAGER).await.map(drop)
    };
    let stored = match store.get(info, namespace, name).await {
        Ok(found) => found.value(),
        Err(e) if e.code == 404 => return create().await,
        Err(e) => return Err(e),
    };
    match reconciled(&stored, expected) {
        Reconciled::Unchanged => Ok(()),
        Reconciled::Protected => {
            tracing::warn!(kind = %info.kind, name, "skipped reconcile-protected bootstrap RBAC object lacking part of its default");
            Ok(())
        }
        Reconciled::Update(v) => {
            let opts = crate::store::WriteOpts::main(false).by(MANAGER);
            let ns = (!namespace.is_empty()).then_some(namespace);
            store.update(info, ns, Some(name), v, opts).await.map(drop)
        }
        Reconciled::Recreate => {
            let rv = stored.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(str::to_string);
            let opts = crate::delete_options::DeleteOpts { precondition_rv: rv, ..Default::default() };
            match store.delete(info, namespace, name, &opts).await {
                // Deleted meanwhile: made again all the same.
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
            create().await
        }
    }
}

/// The writer of the reconciled objects.
const MANAGER: &str = "kube-apiserver";

/// What reconciliation does to a stored bootstrap object.
#[derive(Debug, PartialEq)]
enum Reconciled {
    /// It holds everything the default holds.
    Unchanged,
    /// It lacks something but is annotated `autoupdate: "false"`: left as it is.
    Protected,
    /// Written as this (on the stored resourceVersion).
    Update(Value),
    /// A binding whose roleRef is not the default's: deleted and made again.
    Recreate,
}

/// kube's `computeReconciledRole` / `computeReconciledRoleBinding` without removing anything: the
/// stored object keeps what it holds and gains the default's labels and annotations it does not
/// set, the default's rules it does not cover (broken down to one verb, group and resource
/// each, as kube adds them), the aggregation selectors it lacks (an aggregation rule the default
/// has none of is removed), and the subjects it lacks; a binding whose roleRef differs is
/// replaced whole.
fn reconciled(stored: &Value, expected: &Value) -> Reconciled {
    let protected =
        stored.pointer(&format!("/metadata/annotations/{}", AUTOUPDATE.replace('/', "~1"))) == Some(&json!("false"));
    let is_binding = expected.get("roleRef").is_some();
    if is_binding && !same_role_ref(stored.get("roleRef"), expected.get("roleRef")) {
        return if protected { Reconciled::Protected } else { Reconciled::Recreate };
    }
    let mut out = stored.clone();
    let mut changed = false;
    for key in ["labels", "annotations"] {
        for (k, v) in expected["metadata"][key].as_object().into_iter().flatten() {
            let held = out["metadata"][key].as_object().is_some_and(|m| m.contains_key(k));
            if !held {
                if !out["metadata"][key].is_object() {
                    out["metadata"][key] = json!({});
                }
                out["metadata"][key][k] = v.clone();
                changed = true;
            }
        }
    }
    if is_binding {
        let key = |s: &Value| {
            let field = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            (field("kind"), field("apiGroup"), field("name"), field("namespace"))
        };
        let held: Vec<_> = crate::object::elements(stored.get("subjects")).iter().map(key).collect();
        for subject in crate::object::elements(expected.get("subjects")) {
            if !held.contains(&key(subject)) {
                push(&mut out, "subjects", subject.clone());
                changed = true;
            }
        }
    } else {
        let missing = crate::rbac::covers(&PolicyRule::all_of(stored), &PolicyRule::all_of(expected));
        for rule in missing {
            push(&mut out, "rules", rule.to_value());
            changed = true;
        }
        match (aggregation_selectors(stored), aggregation_selectors(expected)) {
            (Some(_), None) => {
                out.as_object_mut().map(|o| o.remove("aggregationRule"));
                changed = true;
            }
            (held, Some(wanted)) => {
                let held: Vec<Option<Value>> = crate::object::elements(held.flatten())
                    .iter()
                    .map(|h| crate::semantic::normalized(Some(h)))
                    .collect();
                for selector in crate::object::elements(wanted) {
                    if !held.contains(&crate::semantic::normalized(Some(selector))) {
                        if !out["aggregationRule"].is_object() {
                            out["aggregationRule"] = json!({});
                        }
                        push(&mut out["aggregationRule"], "clusterRoleSelectors", selector.clone());
                        changed = true;
                    }
                }
            }
            (None, None) => {}
        }
    }
    match (changed, protected) {
        (false, _) => Reconciled::Unchanged,
        (true, true) => Reconciled::Protected,
        (true, false) => Reconciled::Update(out),
    }
}

/// A role's aggregation selectors: None without an aggregation rule.
fn aggregation_selectors(role: &Value) -> Option<Option<&Value>> {
    role.get("aggregationRule").filter(|a| !a.is_null()).map(|a| a.get("clusterRoleSelectors"))
}

/// Whether two roleRefs name the same role (kind, API group, name).
fn same_role_ref(a: Option<&Value>, b: Option<&Value>) -> bool {
    let key = |r: Option<&Value>| {
        ["apiGroup", "kind", "name"].map(|k| r.and_then(|r| r.get(k)).and_then(Value::as_str).unwrap_or("").to_string())
    };
    key(a) == key(b)
}

/// Appends `item` to the list `key` of `obj` (made when missing or null).
fn push(obj: &mut Value, key: &str, item: Value) {
    if !obj[key].is_array() {
        obj[key] = json!([]);
    }
    if let Some(list) = obj[key].as_array_mut() {
        list.push(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::{PolicyRule, covers};

    fn named<'a>(list: &'a [Value], name: &str) -> &'a Value {
        list.iter().find(|o| o["metadata"]["name"] == name).unwrap_or_else(|| panic!("{name} missing"))
    }

    fn strs(v: &Value) -> Vec<&str> {
        v.as_array().map(|l| l.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
    }

    #[test]
    fn every_object_is_labelled_and_annotated_and_named_once() {
        for list in [cluster_roles(), cluster_role_bindings(), namespaced_roles(), namespaced_role_bindings()] {
            let mut names: Vec<String> =
                list.iter().map(|o| format!("{}/{}", o["metadata"]["namespace"], o["metadata"]["name"])).collect();
            assert_eq!(names.len(), list.len());
            for o in &list {
                let name = &o["metadata"]["name"];
                assert_eq!(o["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults", "{name}");
                assert_eq!(
                    o["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"], "true",
                    "{name}"
                );
            }
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), list.len(), "duplicate names");
        }
    }

    #[test]
    fn rule_lists_are_sorted_and_shaped_as_kube_serializes_them() {
        for role in cluster_roles().into_iter().chain(namespaced_roles()) {
            let name = &role["metadata"]["name"];
            for r in role["rules"].as_array().into_iter().flatten() {
                for key in ["apiGroups", "resources", "resourceNames", "nonResourceURLs", "verbs"] {
                    let l = strs(&r[key]);
                    assert!(l.windows(2).all(|w| w[0] < w[1]), "{name}: {key} {l:?} not sorted");
                }
                assert!(!strs(&r["verbs"]).is_empty(), "{name}: rule without verbs");
                assert_eq!(r["resources"].is_null(), r["apiGroups"].is_null(), "{name}: {r}");
                assert_ne!(r["resources"].is_null(), r["nonResourceURLs"].is_null(), "{name}: {r}");
                assert_eq!(PolicyRule::of(r).to_value(), *r, "{name}");
            }
        }
    }

    #[test]
    fn a_stored_role_gains_what_it_lacks_and_keeps_what_it_holds() {
        let roles = cluster_roles();
        let basic = named(&roles, "system:basic-user");
        assert_eq!(reconciled(basic, basic), Reconciled::Unchanged);
        // A rule taken away comes back broken down; a rule added and a label changed stay.
        let mut stored = basic.clone();
        stored["rules"] = json!([
            rule(&["authorization.k8s.io"], &["selfsubjectaccessreviews"], &["create"]),
            rule(&[""], &["pods"], &["get"])
        ]);
        stored["metadata"]["labels"]["kubernetes.io/bootstrapping"] = json!("mine");
        stored["metadata"]["labels"]["team"] = json!("a");
        let Reconciled::Update(out) = reconciled(&stored, basic) else { panic!("not updated") };
        assert_eq!(
            out["rules"],
            json!([
                rule(&["authorization.k8s.io"], &["selfsubjectaccessreviews"], &["create"]),
                rule(&[""], &["pods"], &["get"]),
                rule(&["authorization.k8s.io"], &["selfsubjectrulesreviews"], &["create"]),
                rule(&["authentication.k8s.io"], &["selfsubjectreviews"], &["create"]),
            ])
        );
        assert_eq!(out["metadata"]["labels"], json!({"kubernetes.io/bootstrapping": "mine", "team": "a"}));
        // Protected: left as it is.
        stored["metadata"]["annotations"][AUTOUPDATE] = json!("false");
        assert_eq!(reconciled(&stored, basic), Reconciled::Protected);
        // Annotations lost are put back.
        let mut bare = basic.clone();
        bare["metadata"].as_object_mut().unwrap().remove("annotations");
        let Reconciled::Update(out) = reconciled(&bare, basic) else { panic!("not updated") };
        assert_eq!(out["metadata"]["annotations"], json!({AUTOUPDATE: "true"}));
    }

    #[test]
    fn aggregation_selectors_are_reconciled_and_rules_filled_by_aggregation_kept() {
        let roles = cluster_roles();
        let view = named(&roles, "view");
        let mut stored = view.clone();
        stored["rules"] = json!([rule(&[""], &["pods"], &["get", "list"])]);
        assert_eq!(reconciled(&stored, view), Reconciled::Unchanged, "aggregated rules are the controller's");
        stored["aggregationRule"]["clusterRoleSelectors"] = json!([{"matchLabels": {"mine": "true"}}]);
        let mut same = view.clone();
        same["aggregationRule"]["clusterRoleSelectors"][0]["matchExpressions"] = json!([]);
        assert_eq!(reconciled(&same, view), Reconciled::Unchanged, "an empty list is no list");
        let Reconciled::Update(out) = reconciled(&stored, view) else { panic!("not updated") };
        assert_eq!(
            out["aggregationRule"]["clusterRoleSelectors"],
            json!([{"matchLabels": {"mine": "true"}}, {"matchLabels": {TO_VIEW: "true"}}])
        );
        let admin = named(&roles, "cluster-admin");
        let mut stored = admin.clone();
        stored["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]});
        let Reconciled::Update(out) = reconciled(&stored, admin) else { panic!("not updated") };
        assert!(out.get("aggregationRule").is_none(), "{out}");
    }

    #[test]
    fn a_stored_binding_gains_subjects_and_is_replaced_when_its_role_differs() {
        let bindings = cluster_role_bindings();
        let public = named(&bindings, "system:public-info-viewer");
        assert_eq!(reconciled(public, public), Reconciled::Unchanged);
        let mut stored = public.clone();
        stored["subjects"] = json!([{"apiGroup": GROUP, "kind": "User", "name": "alice"},
                                    {"apiGroup": GROUP, "kind": "Group", "name": "system:unauthenticated"}]);
        let Reconciled::Update(out) = reconciled(&stored, public) else { panic!("not updated") };
        assert_eq!(
            out["subjects"],
            json!([{"apiGroup": GROUP, "kind": "User", "name": "alice"},
                   {"apiGroup": GROUP, "kind": "Group", "name": "system:unauthenticated"},
                   {"apiGroup": GROUP, "kind": "Group", "name": "system:authenticated"}])
        );
        let mut other = public.clone();
        other["roleRef"]["name"] = json!("cluster-admin");
        assert_eq!(reconciled(&other, public), Reconciled::Recreate);
        other["metadata"]["annotations"][AUTOUPDATE] = json!("false");
        assert_eq!(reconciled(&other, public), Reconciled::Protected);
    }

    #[test]
    fn namespaced_defaults_grant_what_control_plane_components_use() {
        let roles = namespaced_roles();
        let find = |ns: &str, name: &str| {
            roles
                .iter()
                .find(|r| r["metadata"]["namespace"] == ns && r["metadata"]["name"] == name)
                .unwrap_or_else(|| panic!("{ns}/{name} missing"))
        };
        let allows = |role: &Value, verb: &str, resource: &str, object: &str| {
            let wanted = PolicyRule::of(&json!({"apiGroups": [""], "resources": [resource],
                "resourceNames": [object], "verbs": [verb]}));
            covers(&PolicyRule::all_of(role), &[wanted]).is_empty()
        };
        let reader = find("kube-system", "extension-apiserver-authentication-reader");
        assert!(allows(reader, "get", "configmaps", "extension-apiserver-authentication"));
        assert!(!allows(reader, "get", "configmaps", "other"));
        assert!(!allows(reader, "update", "configmaps", "extension-apiserver-authentication"));
        let signer = find("kube-public", "system:controller:bootstrap-signer");
        assert!(allows(signer, "update", "configmaps", "cluster-info"));
        assert!(!allows(signer, "update", "configmaps", "other"));
        let lock = find("kube-system", "system::leader-locking-kube-scheduler");
        let lease = PolicyRule::of(&json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
            "verbs": ["create", "get", "list", "update", "watch"]}));
        assert!(covers(&PolicyRule::all_of(lock), std::slice::from_ref(&lease)).is_empty());
        let mut delete = lease;
        delete.verbs = vec!["delete".into()];
        assert!(!covers(&PolicyRule::all_of(lock), &[delete]).is_empty());
    }

    #[test]
    fn cluster_admin_grants_everything() {
        let roles = cluster_roles();
        let admin = named(&roles, "cluster-admin");
        assert_eq!(admin["rules"], json!([rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])]));
        let owner = PolicyRule::all_of(admin);
        for role in &roles {
            let missing = covers(&owner, &PolicyRule::all_of(role));
            assert!(missing.is_empty(), "{} not covered: {missing:?}", role["metadata"]["name"]);
        }
        let bindings = cluster_role_bindings();
        assert_eq!(named(&bindings, "cluster-admin")["subjects"], json!(groups(&["system:masters"])));
    }

    #[test]
    fn every_binding_refers_to_a_bootstrap_role() {
        let (roles, namespaced) = (cluster_roles(), namespaced_roles());
        for b in cluster_role_bindings().into_iter().chain(namespaced_role_bindings()) {
            let role_ref = &b["roleRef"];
            assert_eq!(role_ref["apiGroup"], GROUP);
            let namespace = &b["metadata"]["namespace"];
            if namespace.is_null() {
                assert_eq!(role_ref["kind"], "ClusterRole");
                assert_eq!(role_ref["name"], b["metadata"]["name"]);
                named(&roles, role_ref["name"].as_str().unwrap());
            } else {
                assert_eq!(role_ref["kind"], "Role");
                let role = namespaced
                    .iter()
                    .find(|r| r["metadata"]["name"] == role_ref["name"] && r["metadata"]["namespace"] == *namespace);
                assert!(role.is_some(), "{b}: no such Role in its namespace");
            }
            for s in b["subjects"].as_array().expect("subjects") {
                match s["kind"].as_str() {
                    Some("Group" | "User") => assert_eq!(s["apiGroup"], GROUP),
                    Some("ServiceAccount") => {
                        assert!(s.get("apiGroup").is_none());
                        assert_eq!(s["namespace"], "kube-system");
                    }
                    other => panic!("unexpected subject kind {other:?}"),
                }
            }
        }
    }

    #[test]
    fn user_facing_roles_aggregate_and_chain() {
        let roles = cluster_roles();
        for (name, selects, label) in
            [("admin", TO_ADMIN, None), ("edit", TO_EDIT, Some(TO_ADMIN)), ("view", TO_VIEW, Some(TO_EDIT))]
        {
            let role = named(&roles, name);
            assert_eq!(role["aggregationRule"]["clusterRoleSelectors"], json!([{"matchLabels": {selects: "true"}}]));
            assert!(role.get("rules").is_none(), "{name}: no rules until aggregated");
            let labels = role["metadata"]["labels"].as_object().unwrap();
            assert_eq!(labels.len(), 1 + usize::from(label.is_some()), "{name}: {labels:?}");
            if let Some(label) = label {
                assert_eq!(labels[label], "true", "{name}");
            }
        }
        for (name, label) in [
            ("system:aggregate-to-admin", TO_ADMIN),
            ("system:aggregate-to-edit", TO_EDIT),
            ("system:aggregate-to-view", TO_VIEW),
        ] {
            let role = named(&roles, name);
            assert_eq!(role["metadata"]["labels"][label], "true", "{name}");
            assert!(role.get("aggregationRule").is_none(), "{name}");
        }
        let aggregating: Vec<&Value> = roles.iter().filter(|r| r.get("aggregationRule").is_some()).collect();
        assert_eq!(aggregating.len(), 3);
    }

    #[test]
    fn aggregate_roles_hold_the_expected_grants() {
        let roles = cluster_roles();
        let holds = |name: &str, group: &str, resource: &str, verbs: &[&str]| {
            let rules = PolicyRule::all_of(named(&roles, name));
            let wanted = PolicyRule::of(&rule(&[group], &[resource], verbs));
            covers(&rules, &[wanted]).is_empty()
        };
        assert!(holds("system:aggregate-to-view", "", "pods", READ));
        assert!(holds("system:aggregate-to-view", "events.k8s.io", "events", READ));
        assert!(!holds("system:aggregate-to-view", "", "secrets", &["get"]));
        assert!(!holds("system:aggregate-to-view", "", "pods", &["create"]));
        assert!(holds("system:aggregate-to-edit", "apps", "deployments/scale", WRITE));
        assert!(holds("system:aggregate-to-edit", "networking.k8s.io", "networkpolicies", WRITE));
        assert!(holds("system:aggregate-to-edit", "coordination.k8s.io", "leases", READ_WRITE));
        assert!(holds("system:aggregate-to-edit", "", "secrets", READ));
        assert!(!holds("system:aggregate-to-edit", "", "endpoints", &["create"]));
        assert!(!holds("system:aggregate-to-edit", GROUP, "roles", &["create"]));
        assert!(holds("system:aggregate-to-admin", GROUP, "rolebindings", READ_WRITE));
        assert!(holds("system:controller:clusterrole-aggregation-controller", GROUP, "clusterroles", &["escalate"]));
    }
}
