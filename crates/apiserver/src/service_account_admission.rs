//! kube-apiserver's ServiceAccount admission plugin for pods created: a pod runs as a service
//! account of its namespace (`default` unless it names one), which must exist, and gets that
//! account's API credentials mounted — a projected volume `kube-api-access-<random>` of a bound
//! token, the cluster's CA (`kube-root-ca.crt`) and the namespace, at
//! `/var/run/secrets/kubernetes.io/serviceaccount` in every container and init container — and
//! the account's image pull secrets when it has none of its own.
//!
//! Invariants, as kube's plugin: pod creates are mutated and judged (not updates, other kinds or
//! subresources but `ephemeralcontainers`, below); a mirror pod (annotated `kubernetes.io/config.mirror`) is not
//! mutated, and is refused when it names a service account, a secret (an empty name too) or a
//! token projection; the token is mounted unless the pod's `automountServiceAccountToken`, or
//! else the account's, is false; a container that already mounts something at the path keeps
//! it, and the volume is added only when some container mounts it and no `kube-api-access-`
//! volume is there already (so mutating the pod again after a webhook adds nothing twice); an
//! account annotated `kubernetes.io/enforce-mountable-secrets: "true"` limits the secrets the pod
//! may use (volumes, `env` and `envFrom` of containers and init containers, image pull secrets)
//! to those it lists. Refusals come as the plugin's mutation ends (before webhooks and
//! validation, naming a pod by its `generateName` when it has no name) and again in validating
//! admission; an account a webhook names instead is looked up then. The account is looked up in
//! the watch cache, then the storage (kube's informer, then a live read): ten times 100–200 ms
//! apart for `default`, which its controller may not have created yet in a new namespace
//! ([`crate::service_account_controller`]), once for any other; a lookup that fails is kube's 403
//! with the failure's words.
//!
//! A write to a pod's `ephemeralcontainers` subresource is judged too, as kube's plugin judges
//! it: the pod names an account that exists (403 otherwise), and an account that enforces
//! mountable secrets lists the secrets the ephemeral containers' `env` and `envFrom` read (kube's
//! plugin returns that refusal as a plain error, which kube answers as a 500 naming no reason).

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::store::Store;

/// Where the credentials are mounted.
pub(crate) const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the volume's name.
pub(crate) const VOLUME_PREFIX: &str = "kube-api-access-";
/// The annotation of mirror pods.
const MIRROR: &str = "kubernetes.io/config.mirror";
/// The annotation that limits a pod's secrets to its account's.
const ENFORCE_MOUNTABLE_SECRETS: &str = "kubernetes.io/enforce-mountable-secrets";
/// The lifetime of the mounted token (kube's `WarnOnlyBoundTokenExpirationSeconds`).
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;

/// Whether `pod` is a mirror pod.
pub(crate) fn is_mirror(pod: &Map<String, Value>) -> bool {
    pod.get("metadata").and_then(|m| m.get("annotations")).and_then(|a| a.get(MIRROR)).is_some()
}

/// The account a pod names: `serviceAccountName`, or the deprecated `serviceAccount` that kube's
/// v1 conversion reads when the other is empty.
pub(crate) fn named_account(pod: &Map<String, Value>) -> Option<&str> {
    let spec = pod.get("spec")?;
    let text = |key: &str| spec.get(key).and_then(Value::as_str).filter(|n| !n.is_empty());
    text("serviceAccountName").or_else(|| text("serviceAccount"))
}

/// The account a pod created runs as (`default` when it names none).
pub(crate) fn account_name(pod: &Map<String, Value>) -> String {
    named_account(pod).unwrap_or(crate::service_account_controller::DEFAULT).to_string()
}

/// kube's refusal when the account cannot be found (`looked_up` the lookup's failure, if not
/// that the account is missing).
pub(crate) fn not_found(pod_name: &str, ns: &str, account: &str, looked_up: Option<&ApiError>) -> ApiError {
    let cause = match looked_up {
        Some(e) => e.message.clone(),
        None => format!("serviceaccount \"{account}\" not found"),
    };
    ApiError::forbidden("", "pods", pod_name, &format!("error looking up service account {ns}/{account}: {cause}"))
}

/// The name kube's admission errors give a pod: its name, else its `generateName`.
pub(crate) fn shown_name(pod: &Map<String, Value>) -> &str {
    let meta = pod.get("metadata");
    let text = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str).filter(|n| !n.is_empty());
    text("name").or_else(|| text("generateName")).unwrap_or_default()
}

/// The service account `name` of `ns`, as kube's plugin finds it: from the cache, else from the
/// storage (kube's live read) — ten times 100–200 ms apart for the `default` account, which its
/// controller may be about to create.
pub(crate) async fn lookup(store: &Store, ns: &str, name: &str) -> Result<Option<Value>, ApiError> {
    let registry = store.cache().registry();
    let Some(info) = registry.find("", "v1", "serviceaccounts") else { return Ok(None) };
    if let Some(found) = store.cache().get(info, ns, name)? {
        return Ok(Some(found.value()));
    }
    let attempts = if name == crate::service_account_controller::DEFAULT { 10 } else { 1 };
    let pause = Duration::from_millis(rand::random_range(100..200));
    for attempt in 0..attempts {
        if attempt > 0 {
            tokio::time::sleep(pause).await;
        }
        match store.stored(info, ns, name).await {
            Ok(found) => return Ok(Some(found.value())),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// An account's name.
fn name_of(account: &Value) -> &str {
    account.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()
}

/// The account `account` of `ns`, or kube's 403 for the pod `pod_name`.
async fn find(store: &Store, ns: &str, account: &str, pod_name: &str) -> Result<Value, ApiError> {
    match lookup(store, ns, account).await {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(not_found(pod_name, ns, account, None)),
        Err(e) => Err(not_found(pod_name, ns, account, Some(&e))),
    }
}

/// The account a pod created runs as, or kube's 403.
pub(crate) async fn account_for(store: &Store, pod: &Map<String, Value>, ns: &str) -> Result<Value, ApiError> {
    find(store, ns, &account_name(pod), shown_name(pod)).await
}

/// The plugin run again after the webhooks, as kube reinvokes it: when a webhook named another
/// account than `account` (the one the mutation looked up), that one is looked up and applied,
/// and becomes `account`.
pub(crate) async fn after_webhooks(
    store: &Store,
    pod: &mut Map<String, Value>,
    ns: &str,
    account: &mut Option<Value>,
) -> Result<(), ApiError> {
    let Some(current) = account.as_ref() else { return Ok(()) };
    if is_mirror(pod) || name_of(current) == account_name(pod) {
        return Ok(());
    }
    let found = account_for(store, pod, ns).await?;
    admit_pod(store, pod, Some(&found))?;
    *account = Some(found);
    Ok(())
}

/// The plugin mutating a pod created with `account` (None: a mirror pod), then judging it as its
/// mutation ends: a mirror pod's references, the secrets an account that enforces them allows.
/// An account other than the one the pod names is left to the lookup after the webhooks.
pub(crate) fn admit_pod(store: &Store, pod: &mut Map<String, Value>, account: Option<&Value>) -> Result<(), ApiError> {
    let refused = |pod: &Map<String, Value>, why: &str| ApiError::forbidden("", "pods", shown_name(pod), why);
    if is_mirror(pod) {
        return mirror_refusal(pod).map_or(Ok(()), |why| Err(refused(pod, why)));
    }
    let Some(account) = account else { return Ok(()) };
    if account_name(pod) != name_of(account) {
        return Ok(());
    }
    admit(pod, account, || store.volume_name(VOLUME_PREFIX));
    match secrets_refusal(pod, account) {
        Some(why) => Err(refused(pod, &why)),
        None => Ok(()),
    }
}

/// The plugin judging a pod created in validating admission: a mirror pod's references, the
/// account named (`known` when it is the one mutation looked up, else looked up again), and the
/// secrets an account that enforces them allows.
pub(crate) async fn validate(
    store: &Store,
    info: &ResourceInfo,
    (pod, known): (&Map<String, Value>, Option<&Value>),
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    if !store.admits_service_accounts(info) {
        return Ok(());
    }
    let refused = |why: &str| ApiError::forbidden("", "pods", name, why);
    if is_mirror(pod) {
        return mirror_refusal(pod).map_or(Ok(()), |why| Err(refused(why)));
    }
    let Some(account) = named_account(pod) else {
        return Err(refused(&format!("no service account specified for pod {ns}/{name}")));
    };
    let looked_up;
    let found = match known.filter(|k| name_of(k) == account) {
        Some(known) => known,
        None => {
            looked_up = find(store, ns, account, name).await?;
            &looked_up
        }
    };
    match secrets_refusal(pod, found) {
        Some(why) => Err(refused(&why)),
        None => Ok(()),
    }
}

/// kube's judgement of a write to the `ephemeralcontainers` subresource of the pod `name`, as
/// `pod` would be stored.
pub(crate) async fn validate_ephemeral(
    store: &Store,
    info: &ResourceInfo,
    pod: &Map<String, Value>,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    if !store.admits_service_accounts(info) {
        return Ok(());
    }
    let Some(account) = named_account(pod) else {
        let why = format!("no service account specified for pod {ns}/{name}");
        return Err(ApiError::forbidden("", "pods", name, &why));
    };
    let found = find(store, ns, account, name).await?;
    if !enforces_mountable_secrets(&found) {
        return Ok(());
    }
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    match containers_refusal(spec, "ephemeralContainers", "ephemeral container", &found) {
        Some(why) => Err(ApiError::new(500, "", why)),
        None => Ok(()),
    }
}

/// Mutates a pod created (not a mirror pod) with its `account` (the one it names, or `default`):
/// the account's name, the mounted credentials (named by `volume_name` when a volume is added) and image
/// pull secrets.
pub(crate) fn admit(pod: &mut Map<String, Value>, account: &Value, volume_name: impl FnOnce() -> String) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return };
    // kube's v1 encoding writes the deprecated field alike.
    spec.insert("serviceAccountName".into(), name_of(account).into());
    spec.insert("serviceAccount".into(), name_of(account).into());
    if automount(spec, account) {
        mount(spec, volume_name);
    }
    let own = spec.get("imagePullSecrets").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
    let theirs: Vec<Value> = account
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| match s.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            Some(n) => json!({"name": n}),
            None => json!({}),
        })
        .collect();
    if !own && !theirs.is_empty() {
        spec.insert("imagePullSecrets".into(), theirs.into());
    }
}

/// The pod's preference, else the account's, else true.
fn automount(spec: &Map<String, Value>, account: &Value) -> bool {
    spec.get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| account.get("automountServiceAccountToken").and_then(Value::as_bool))
        .unwrap_or(true)
}

fn mount(spec: &mut Map<String, Value>, volume_name: impl FnOnce() -> String) {
    let existing = spec.get("volumes").and_then(Value::as_array).and_then(|vs| {
        vs.iter()
            .filter_map(|v| v.get("name").and_then(Value::as_str))
            .find(|n| n.starts_with(VOLUME_PREFIX))
            .map(str::to_string)
    });
    let name = existing.clone().unwrap_or_else(volume_name);
    let mut mounted = false;
    for list in ["initContainers", "containers"] {
        for container in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            let Some(container) = container.as_object_mut() else { continue };
            let mounts = container.entry("volumeMounts").or_insert_with(|| Value::Array(Vec::new()));
            let Some(mounts) = mounts.as_array_mut() else { continue };
            if mounts.iter().any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH)) {
                continue;
            }
            mounts.push(json!({"name": name, "readOnly": true, "mountPath": MOUNT_PATH}));
            mounted = true;
        }
    }
    if mounted && existing.is_none() {
        let volumes = spec.entry("volumes").or_insert_with(|| Value::Array(Vec::new()));
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(json!({"name": name, "projected": token_volume_source()}));
        }
    }
}

/// kube's `TokenVolumeSource`, in Go's field order.
fn token_volume_source() -> Value {
    json!({
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
        ],
        "defaultMode": 420
    })
}

/// What the plugin refuses of a mirror pod, as kube's words.
pub(crate) fn mirror_refusal(pod: &Map<String, Value>) -> Option<&'static str> {
    let spec = pod.get("spec")?;
    if named_account(pod).is_some() {
        return Some("a mirror pod may not reference service accounts");
    }
    if !secret_names(spec).is_empty() {
        return Some("a mirror pod may not reference secrets");
    }
    let projections = volumes(spec).filter_map(|v| v.pointer("/projected/sources")).filter_map(Value::as_array);
    if projections.flatten().any(|s| s.get("serviceAccountToken").is_some()) {
        return Some("a mirror pod may not use ServiceAccountToken volume projections");
    }
    None
}

fn volumes(spec: &Value) -> impl Iterator<Item = &Value> {
    spec.get("volumes").and_then(Value::as_array).into_iter().flatten()
}

fn containers<'a>(spec: &'a Value, list: &str) -> impl Iterator<Item = &'a Value> {
    spec.get(list).and_then(Value::as_array).into_iter().flatten()
}

/// Every secret a pod spec refers to, an empty name included (kube's `VisitPodSecretNames`
/// over all containers).
fn secret_names(spec: &Value) -> Vec<&str> {
    fn visit<'a>(names: &mut Vec<&'a str>, reference: Option<&'a Value>, key: &str) {
        if let Some(r) = reference.filter(|r| r.is_object()) {
            names.push(r.get(key).and_then(Value::as_str).unwrap_or_default());
        }
    }
    let mut names = Vec::new();
    for s in spec.get("imagePullSecrets").and_then(Value::as_array).into_iter().flatten() {
        visit(&mut names, Some(s), "name");
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for c in containers(spec, list) {
            for e in c.get("envFrom").and_then(Value::as_array).into_iter().flatten() {
                visit(&mut names, e.get("secretRef"), "name");
            }
            for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
                visit(&mut names, e.pointer("/valueFrom/secretKeyRef"), "name");
            }
        }
    }
    for v in volumes(spec) {
        visit(&mut names, v.get("secret"), "secretName");
        visit(&mut names, v.get("azureFile"), "secretName");
        for source in v.pointer("/projected/sources").and_then(Value::as_array).into_iter().flatten() {
            visit(&mut names, source.get("secret"), "name");
        }
        for path in [
            "/cephfs/secretRef",
            "/cinder/secretRef",
            "/flexVolume/secretRef",
            "/rbd/secretRef",
            "/scaleIO/secretRef",
            "/iscsi/secretRef",
            "/storageos/secretRef",
            "/csi/nodePublishSecretRef",
        ] {
            visit(&mut names, v.pointer(path), "name");
        }
    }
    names
}

/// What an account annotated to enforce mountable secrets refuses of a pod, as kube's words.
pub(crate) fn secrets_refusal(pod: &Map<String, Value>, account: &Value) -> Option<String> {
    if !enforces_mountable_secrets(account) {
        return None;
    }
    let spec = pod.get("spec")?;
    let account_name = name_of(account);
    let listed = |key: &str, name: &str| lists(account, key, name);
    for v in volumes(spec) {
        if let Some(secret) = v.get("secret") {
            let name = secret.get("secretName").and_then(Value::as_str).unwrap_or_default();
            if !listed("secrets", name) {
                return Some(format!(
                    "volume with secret.secretName=\"{name}\" is not allowed because service account {account_name} does not reference that secret"
                ));
            }
        }
    }
    for (list, what) in [("initContainers", "init container"), ("containers", "container")] {
        if let Some(why) = containers_refusal(spec, list, what, account) {
            return Some(why);
        }
    }
    for (i, s) in spec.get("imagePullSecrets").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
        if !listed("imagePullSecrets", name) {
            return Some(format!(
                "imagePullSecrets[{i}].name=\"{name}\" is not allowed because service account {account_name} does not reference that imagePullSecret"
            ));
        }
    }
    None
}

/// What an account that enforces mountable secrets refuses of the containers `list` of a pod
/// spec (`what` names them in kube's words): the first secret their `env` or `envFrom` reads
/// that the account does not list.
fn containers_refusal(spec: &Value, list: &str, what: &str, account: &Value) -> Option<String> {
    let account_name = name_of(account);
    for c in containers(spec, list) {
        let container = c.get("name").and_then(Value::as_str).unwrap_or_default();
        for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
            if let Some(name) = e.pointer("/valueFrom/secretKeyRef/name").and_then(Value::as_str)
                && !lists(account, "secrets", name)
            {
                let env = e.get("name").and_then(Value::as_str).unwrap_or_default();
                return Some(format!(
                    "{what} {container} with envVar {env} referencing secret.secretName=\"{name}\" is not allowed because service account {account_name} does not reference that secret"
                ));
            }
        }
        for e in c.get("envFrom").and_then(Value::as_array).into_iter().flatten() {
            if let Some(name) = e.pointer("/secretRef/name").and_then(Value::as_str)
                && !lists(account, "secrets", name)
            {
                return Some(format!(
                    "{what} {container} with envFrom referencing secret.secretName=\"{name}\" is not allowed because service account {account_name} does not reference that secret"
                ));
            }
        }
    }
    None
}

/// Whether `account` is annotated to limit its pods' secrets to those it lists.
fn enforces_mountable_secrets(account: &Value) -> bool {
    account
        .pointer(&format!("/metadata/annotations/{}", ENFORCE_MOUNTABLE_SECRETS.replace('/', "~1")))
        .and_then(Value::as_str)
        .is_some_and(|v| crate::go_strconv::parse_bool(v) == Some(true))
}

/// Whether `account` lists `name` among its `key` (`secrets`, `imagePullSecrets`).
fn lists(account: &Value, key: &str, name: &str) -> bool {
    account
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|s| s.get("name").and_then(Value::as_str) == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(spec: Value) -> Map<String, Value> {
        json!({"metadata": {"name": "web"}, "spec": spec}).as_object().unwrap().clone()
    }

    #[test]
    fn the_credentials_are_mounted_once_in_every_container_that_has_none_there() {
        let mut p = pod(json!({
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "own", "mountPath": MOUNT_PATH}]}],
        }));
        let account = json!({"metadata": {"name": "default"}, "imagePullSecrets": [{"name": "registry"}]});
        admit(&mut p, &account, || "kube-api-access-abcde".into());
        let spec = &p["spec"];
        assert_eq!((&spec["serviceAccountName"], &spec["serviceAccount"]), (&json!("default"), &json!("default")));
        let mount = json!({"name": "kube-api-access-abcde", "readOnly": true, "mountPath": MOUNT_PATH});
        assert_eq!(spec["initContainers"][0]["volumeMounts"], json!([mount]));
        assert_eq!(spec["containers"][0]["volumeMounts"], json!([mount]));
        assert_eq!(spec["containers"][1]["volumeMounts"], json!([{"name": "own", "mountPath": MOUNT_PATH}]));
        assert_eq!(spec["volumes"].as_array().unwrap().len(), 1);
        assert_eq!(spec["volumes"][0]["projected"]["defaultMode"], 420);
        assert_eq!(spec["imagePullSecrets"], json!([{"name": "registry"}]));

        // Again (after a webhook): nothing twice.
        let before = p.clone();
        admit(&mut p, &account, || unreachable!("no second volume"));
        assert_eq!(p, before);
    }

    #[test]
    fn automount_is_the_pods_choice_then_the_accounts() {
        let account = |v: Option<bool>| json!({"metadata": {"name": "builder"}, "automountServiceAccountToken": v});
        for (pods, accounts, mounted) in [
            (None, None, true),
            (None, Some(false), false),
            (Some(true), Some(false), true),
            (Some(false), None, false),
        ] {
            let mut p = pod(json!({"automountServiceAccountToken": pods, "containers": [{"name": "a"}]}));
            admit(&mut p, &account(accounts), || "kube-api-access-x".into());
            assert_eq!(p["spec"].get("volumes").is_some(), mounted, "{pods:?} {accounts:?}");
            assert_eq!(p["spec"]["serviceAccountName"], "builder");
        }
    }

    #[test]
    fn the_deprecated_field_names_the_account_when_the_other_is_empty() {
        assert_eq!(account_name(&pod(json!({"serviceAccount": "old"}))), "old");
        assert_eq!(account_name(&pod(json!({"serviceAccountName": "new", "serviceAccount": "old"}))), "new");
        assert_eq!(account_name(&pod(json!({"serviceAccountName": ""}))), "default");
    }

    #[test]
    fn mirror_pods_and_enforced_secrets_are_refused_in_kubes_words() {
        assert_eq!(
            mirror_refusal(&pod(json!({"serviceAccountName": "x"}))),
            Some("a mirror pod may not reference service accounts")
        );
        let secret_env = json!({"containers": [{"name": "a", "env": [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]});
        assert_eq!(mirror_refusal(&pod(secret_env.clone())), Some("a mirror pod may not reference secrets"));
        assert_eq!(mirror_refusal(&pod(json!({"containers": [{"name": "a"}]}))), None);
        let unnamed = json!({"imagePullSecrets": [{}], "containers": [{"name": "a"}]});
        assert_eq!(mirror_refusal(&pod(unnamed)), Some("a mirror pod may not reference secrets"));

        let enforcing = json!({"metadata": {"name": "builder", "annotations": {ENFORCE_MOUNTABLE_SECRETS: "true"}}, "secrets": [{"name": "ok"}]});
        assert_eq!(
            secrets_refusal(&pod(secret_env), &enforcing).as_deref(),
            Some(
                "container a with envVar K referencing secret.secretName=\"s\" is not allowed because service account builder does not reference that secret"
            )
        );
        let ok = json!({"volumes": [{"name": "v", "secret": {"secretName": "ok"}}], "containers": [{"name": "a"}]});
        assert_eq!(secrets_refusal(&pod(ok), &enforcing), None);
        let pull = json!({"imagePullSecrets": [{"name": "r"}], "containers": [{"name": "a"}]});
        assert_eq!(
            secrets_refusal(&pod(pull.clone()), &enforcing).as_deref(),
            Some(
                "imagePullSecrets[0].name=\"r\" is not allowed because service account builder does not reference that imagePullSecret"
            )
        );
        let lenient = json!({"metadata": {"name": "builder", "annotations": {ENFORCE_MOUNTABLE_SECRETS: "no"}}});
        assert_eq!(secrets_refusal(&pod(pull), &lenient), None);
    }
}
