//! The Pod Security Standards checks that kube-apiserver v1.35's PodSecurity admission makes
//! (k8s.io/pod-security-admission v0.35.0, `policy` package), read from a pod's JSON
//! `metadata` and `spec`.
//!
//! Every default check is here with each of its versioned variants: a check applies from its
//! variant's minimum version, a restricted variant may override baseline checks (which the
//! restricted level then skips), and the restricted level runs the baseline checks it does not
//! override.
//!
//! Invariants:
//! - Checks run in kube's order: the baseline checks sorted by ID, then the restricted checks
//!   sorted by ID (byte order, as Go sorts strings), so messages list failures as kube does.
//! - `privileged` runs nothing; `latest`, and any version newer than the newest variant, runs the
//!   newest variants.
//! - A field the pod leaves out (or sets to `null`) reads as Go's zero value or nil pointer, so
//!   `securityContext` absent differs from `securityContext: {}`, and `privileged: false` from no
//!   `privileged`.
//! - The pod is read as given: kube evaluates it after API defaulting, so a volume that names no
//!   source is `emptyDir` there but an `unknown` restricted volume type here unless defaulted.
//! - Reasons and details are kube's exact texts, with its pluralization, its quoting of lists
//!   (`"a", "b"`), its sorted sets and Go's `%q` of annotation values.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// A Pod Security Standards level, least strict first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    /// The level a `pod-security.kubernetes.io/<mode>` label names, if it names one.
    pub(crate) fn parse(s: &str) -> Option<Level> {
        match s {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// A policy version: `Some(minor)` for `v1.<minor>`, `None` for `latest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Version(pub(crate) Option<u32>);

impl Version {
    /// `latest` or `v1.<minor>` (no leading zeros), as kube's `api.ParseVersion` accepts. A minor
    /// beyond `u32` that Go's `int` still holds is kept as `u32::MAX`: it evaluates the same.
    pub(crate) fn parse(s: &str) -> Option<Version> {
        if s == "latest" {
            return Some(Version(None));
        }
        let digits = s.strip_prefix("v1.")?;
        let well_formed = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        if !well_formed {
            return None;
        }
        let minor = digits.parse::<i64>().ok()?;
        Some(Version(Some(u32::try_from(minor).unwrap_or(u32::MAX))))
    }

    pub(crate) fn as_string(self) -> String {
        match self.0 {
            None => "latest".to_string(),
            Some(minor) => format!("v1.{minor}"),
        }
    }

    /// The minor whose checks run: the requested one, capped at the newest variant's.
    fn evaluated_minor(self) -> u32 {
        let newest = newest_minor();
        self.0.map_or(newest, |minor| minor.min(newest))
    }
}

/// One failed check: kube's `CheckResult.ForbiddenReason` and `ForbiddenDetail`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Forbidden {
    pub reason: String,
    pub detail: String,
}

/// The failed checks of `level` at `version` for a pod's metadata and spec, in kube's order.
pub(crate) fn evaluate(level: Level, version: Version, metadata: &Value, spec: &Value) -> Vec<Forbidden> {
    let pod = Pod { metadata, spec };
    selected_checks(level, version).into_iter().filter_map(|(_, check)| check(&pod)).collect()
}

/// kube's placeholder for a failed check that gave no reason.
const UNKNOWN_REASON: &str = "unknown forbidden reason";

/// kube's `AggregateCheckResult.ForbiddenReason()`: the reasons, comma separated.
pub(crate) fn reasons(results: &[Forbidden]) -> String {
    results.iter().map(reason_of).collect::<Vec<_>>().join(", ")
}

/// kube's `AggregateCheckResult.ForbiddenDetail()`: each reason with its detail in parentheses.
pub(crate) fn details(results: &[Forbidden]) -> String {
    let described = results.iter().map(|r| {
        if r.detail.is_empty() { reason_of(r).to_string() } else { format!("{} ({})", reason_of(r), r.detail) }
    });
    described.collect::<Vec<_>>().join(", ")
}

fn reason_of(result: &Forbidden) -> &str {
    if result.reason.is_empty() { UNKNOWN_REASON } else { &result.reason }
}

// ---------------------------------------------------------------------------------------------
// The registry.

/// A check's body: `None` when the pod passes.
type CheckFn = fn(&Pod<'_>) -> Option<Forbidden>;

/// One revision of a check, in force from `v1.<since>` until the next revision.
struct Variant {
    since: u32,
    check: CheckFn,
    /// Baseline check IDs the restricted level skips while this revision is in force.
    overrides: &'static [&'static str],
}

struct Check {
    id: &'static str,
    level: Level,
    /// Revisions, oldest first.
    variants: &'static [Variant],
}

const fn since(since: u32, check: CheckFn) -> Variant {
    Variant { since, check, overrides: &[] }
}

const fn overriding(since: u32, check: CheckFn, overrides: &'static [&'static str]) -> Variant {
    Variant { since, check, overrides }
}

const CAPABILITIES_BASELINE: &str = "capabilities_baseline";
const HOST_PATH_VOLUMES: &str = "hostPathVolumes";
const PROC_MOUNT: &str = "procMount";
const SECCOMP_BASELINE: &str = "seccompProfile_baseline";

/// kube's default checks (it has no experimental ones at v0.35.0).
static CHECKS: &[Check] = &[
    Check {
        id: "allowPrivilegeEscalation",
        level: Level::Restricted,
        variants: &[since(8, allow_privilege_escalation_1_8), since(25, allow_privilege_escalation_1_25)],
    },
    Check { id: "appArmorProfile", level: Level::Baseline, variants: &[since(0, app_armor_profile_1_0)] },
    Check { id: CAPABILITIES_BASELINE, level: Level::Baseline, variants: &[since(0, capabilities_baseline_1_0)] },
    Check {
        id: "capabilities_restricted",
        level: Level::Restricted,
        variants: &[
            overriding(22, capabilities_restricted_1_22, &[CAPABILITIES_BASELINE]),
            overriding(25, capabilities_restricted_1_25, &[CAPABILITIES_BASELINE]),
        ],
    },
    Check { id: "hostNamespaces", level: Level::Baseline, variants: &[since(0, host_namespaces_1_0)] },
    Check { id: HOST_PATH_VOLUMES, level: Level::Baseline, variants: &[since(0, host_path_volumes_1_0)] },
    Check { id: "hostPorts", level: Level::Baseline, variants: &[since(0, host_ports_1_0)] },
    Check {
        id: "hostProbesAndHostLifecycle",
        level: Level::Baseline,
        variants: &[since(34, host_probes_and_host_lifecycle_1_34)],
    },
    Check { id: "privileged", level: Level::Baseline, variants: &[since(0, privileged_1_0)] },
    Check { id: PROC_MOUNT, level: Level::Baseline, variants: &[since(0, proc_mount_1_0), since(35, proc_mount_1_35)] },
    Check {
        id: "procMount_restricted",
        level: Level::Restricted,
        variants: &[overriding(35, proc_mount_1_0, &[PROC_MOUNT])],
    },
    Check {
        id: "restrictedVolumes",
        level: Level::Restricted,
        variants: &[overriding(0, restricted_volumes_1_0, &[HOST_PATH_VOLUMES])],
    },
    Check {
        id: "runAsNonRoot",
        level: Level::Restricted,
        variants: &[since(0, run_as_non_root_1_0), since(35, run_as_non_root_1_35)],
    },
    Check {
        id: "runAsUser",
        level: Level::Restricted,
        variants: &[since(23, run_as_user_1_23), since(35, run_as_user_1_35)],
    },
    Check {
        id: "seLinuxOptions",
        level: Level::Baseline,
        variants: &[since(0, se_linux_options_1_0), since(31, se_linux_options_1_31)],
    },
    Check {
        id: SECCOMP_BASELINE,
        level: Level::Baseline,
        variants: &[since(0, seccomp_baseline_1_0), since(19, seccomp_baseline_1_19)],
    },
    Check {
        id: "seccompProfile_restricted",
        level: Level::Restricted,
        variants: &[
            overriding(19, seccomp_restricted_1_19, &[SECCOMP_BASELINE]),
            overriding(25, seccomp_restricted_1_25, &[SECCOMP_BASELINE]),
        ],
    },
    Check {
        id: "sysctls",
        level: Level::Baseline,
        variants: &[since(0, sysctls_1_0), since(27, sysctls_1_27), since(29, sysctls_1_29), since(32, sysctls_1_32)],
    },
    Check { id: "windowsHostProcess", level: Level::Baseline, variants: &[since(0, windows_host_process_1_0)] },
];

/// The newest minor any check revision starts at; newer requests evaluate as this one.
fn newest_minor() -> u32 {
    CHECKS.iter().flat_map(|c| c.variants.iter().map(|v| v.since)).max().unwrap_or(0)
}

/// The revision of `check` in force at `minor`, if the check exists yet.
fn variant_at(check: &Check, minor: u32) -> Option<&Variant> {
    check.variants.iter().rev().find(|v| v.since <= minor)
}

/// The checks (ID and body) `level` runs at `version`, in kube's order.
fn selected_checks(level: Level, version: Version) -> Vec<(&'static str, CheckFn)> {
    if level == Level::Privileged {
        return Vec::new();
    }
    let minor = version.evaluated_minor();
    let mut active: Vec<(&'static Check, &'static Variant)> =
        CHECKS.iter().filter(|c| c.level <= level).filter_map(|c| variant_at(c, minor).map(|v| (c, v))).collect();
    let overridden: BTreeSet<&str> = active
        .iter()
        .filter(|(c, _)| c.level == Level::Restricted)
        .flat_map(|(_, v)| v.overrides.iter().copied())
        .collect();
    active.retain(|(c, _)| c.level != Level::Baseline || !overridden.contains(c.id));
    active.sort_by_key(|(c, _)| (c.level, c.id));
    active.into_iter().map(|(c, v)| (c.id, v.check)).collect()
}

// ---------------------------------------------------------------------------------------------
// Reading the pod as Go would decode it.

/// A pod's metadata and spec, either of which may be `null`.
struct Pod<'a> {
    metadata: &'a Value,
    spec: &'a Value,
}

impl<'a> Pod<'a> {
    /// Init containers, then containers, then ephemeral containers, as kube visits them.
    fn containers(&self) -> impl Iterator<Item = &'a Value> + use<'a> {
        let spec = self.spec;
        ["initContainers", "containers", "ephemeralContainers"].into_iter().flat_map(move |key| items(spec, key))
    }

    /// `spec.securityContext`, when set.
    fn security_context(&self) -> Option<&'a Value> {
        ptr(self.spec, "securityContext")
    }

    /// `spec.volumes`.
    fn volumes(&self) -> impl Iterator<Item = &'a Value> + use<'a> {
        items(self.spec, "volumes")
    }

    /// The annotations with string values.
    fn annotations(&self) -> impl Iterator<Item = (&'a str, &'a str)> + use<'a> {
        let map = ptr(self.metadata, "annotations").and_then(Value::as_object);
        map.into_iter().flatten().filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
    }

    fn annotation(&self, key: &str) -> Option<&'a str> {
        ptr(self.metadata, "annotations")?.get(key)?.as_str()
    }

    /// `spec.os.name` is `windows`.
    fn is_windows(&self) -> bool {
        ptr(self.spec, "os").is_some_and(|os| text(os, "name") == "windows")
    }

    /// `spec.hostUsers: false`: the pod runs in a user namespace, which relaxes some checks.
    fn in_user_namespace(&self) -> bool {
        flag(self.spec, "hostUsers") == Some(false)
    }
}

/// A pointer field: present and not `null`.
fn ptr<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|f| !f.is_null())
}

/// A string field, `""` when absent.
fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A `*bool` field.
fn flag(v: &Value, key: &str) -> Option<bool> {
    v.get(key).and_then(Value::as_bool)
}

/// A list field's items, none when absent.
fn items<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> + use<'a> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// A list of strings; Go decodes a `null` item as `""`.
fn strings<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a str> + use<'a> {
    items(v, key).map(|s| s.as_str().unwrap_or(""))
}

/// A container's `securityContext`, when set.
fn container_context(container: &Value) -> Option<&Value> {
    ptr(container, "securityContext")
}

/// A field of a container's `securityContext`, when both are set.
fn container_setting<'a>(container: &'a Value, key: &str) -> Option<&'a Value> {
    container_context(container).and_then(|sc| ptr(sc, key))
}

fn name(container: &Value) -> String {
    text(container, "name").to_string()
}

// ---------------------------------------------------------------------------------------------
// kube's message helpers.

fn pluralize<'s>(singular: &'s str, plural: &'s str, count: usize) -> &'s str {
    if count == 1 { singular } else { plural }
}

/// `"a", "b"`: each item in double quotes (not escaped), comma separated.
fn join_quote<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let quoted: Vec<String> = items.into_iter().map(|s| format!("\"{}\"", s.as_ref())).collect();
    quoted.join(", ")
}

/// `container "a"` or `containers "a", "b"`.
fn containers_phrase<S: AsRef<str>>(names: &[S]) -> String {
    format!("{} {}", pluralize("container", "containers", names.len()), join_quote(names))
}

/// Who set a forbidden value: `pod`, `containers "a", "b"`, or both joined by ` and `.
fn setters(pod: bool, containers: &[String]) -> Vec<String> {
    let mut who = Vec::new();
    if pod {
        who.push("pod".to_string());
    }
    if !containers.is_empty() {
        who.push(containers_phrase(containers));
    }
    who
}

fn forbidden(reason: &str, detail: String) -> Option<Forbidden> {
    Some(Forbidden { reason: reason.to_string(), detail })
}

/// `key="value"` with the value as Go's `%q` writes it.
fn annotation_pair(key: &str, value: &str) -> String {
    format!("{key}={}", go_quote(value))
}

/// Go's `strconv.Quote`: printable runes kept, the rest escaped as Go escapes them.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if go_printable(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space.
pub(crate) fn go_printable(c: char) -> bool {
    static GRAPHIC: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^[\p{L}\p{M}\p{N}\p{P}\p{S}]$").expect("valid pattern"));
    if c.is_ascii() {
        return c == ' ' || c.is_ascii_graphic();
    }
    GRAPHIC.is_match(c.encode_utf8(&mut [0; 4]))
}

// ---------------------------------------------------------------------------------------------
// allowPrivilegeEscalation (restricted): containers must set allowPrivilegeEscalation=false.

fn allow_privilege_escalation_1_8(pod: &Pod<'_>) -> Option<Forbidden> {
    let bad: Vec<String> = pod
        .containers()
        .filter(|c| container_context(c).and_then(|sc| flag(sc, "allowPrivilegeEscalation")) != Some(false))
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbidden(
        "allowPrivilegeEscalation != false",
        format!("{} must set securityContext.allowPrivilegeEscalation=false", containers_phrase(&bad)),
    )
}

/// From 1.25 Windows pods are exempt (their API validation forbids the field).
fn allow_privilege_escalation_1_25(pod: &Pod<'_>) -> Option<Forbidden> {
    if pod.is_windows() { None } else { allow_privilege_escalation_1_8(pod) }
}

// ---------------------------------------------------------------------------------------------
// appArmorProfile (baseline): no profile but RuntimeDefault or Localhost, in fields or the
// deprecated per-container annotations.

const APP_ARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

fn allowed_app_armor_type(profile_type: &str) -> bool {
    matches!(profile_type, "RuntimeDefault" | "Localhost")
}

fn allowed_app_armor_annotation(value: &str) -> bool {
    value.is_empty() || value == "runtime/default" || value.starts_with("localhost/")
}

/// The profile type of a security context's `appArmorProfile` when it is set and forbidden.
fn bad_app_armor_type(security_context: Option<&Value>) -> Option<&str> {
    let profile = ptr(security_context?, "appArmorProfile")?;
    let profile_type = text(profile, "type");
    (!allowed_app_armor_type(profile_type)).then_some(profile_type)
}

fn app_armor_profile_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    let mut bad_values: BTreeSet<String> = BTreeSet::new();
    let pod_type = bad_app_armor_type(pod.security_context());
    bad_values.extend(pod_type.map(str::to_string));
    let mut bad_containers = Vec::new();
    for container in pod.containers() {
        if let Some(t) = bad_app_armor_type(container_context(container)) {
            bad_containers.push(name(container));
            bad_values.insert(t.to_string());
        }
    }
    let mut who = setters(pod_type.is_some(), &bad_containers);
    let mut annotations: Vec<String> = pod
        .annotations()
        .filter(|(k, v)| k.starts_with(APP_ARMOR_ANNOTATION_PREFIX) && !allowed_app_armor_annotation(v))
        .map(|(k, v)| annotation_pair(k, v))
        .collect();
    annotations.sort();
    if !annotations.is_empty() {
        who.push(pluralize("annotation", "annotations", annotations.len()).to_string());
    }
    if who.is_empty() {
        return None;
    }
    let values: Vec<String> = bad_values.into_iter().chain(annotations).collect();
    forbidden(
        pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", values.len()),
        format!("{} must not set AppArmor profile type to {}", who.join(" and "), join_quote(&values)),
    )
}

// ---------------------------------------------------------------------------------------------
// capabilities_baseline (baseline): only the default capabilities may be added.

const DEFAULT_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn capabilities_baseline_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    let mut bad_containers = Vec::new();
    let mut non_default: BTreeSet<&str> = BTreeSet::new();
    for container in pod.containers() {
        let Some(capabilities) = container_setting(container, "capabilities") else { continue };
        let added: Vec<&str> = strings(capabilities, "add").filter(|c| !DEFAULT_CAPABILITIES.contains(c)).collect();
        if !added.is_empty() {
            bad_containers.push(name(container));
            non_default.extend(added);
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    forbidden(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&bad_containers),
            join_quote(&non_default)
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// capabilities_restricted (restricted, overrides capabilities_baseline): drop ALL, add at most
// NET_BIND_SERVICE.

fn capabilities_restricted_1_22(pod: &Pod<'_>) -> Option<Forbidden> {
    let mut missing_drop_all = Vec::new();
    let mut adding_forbidden = Vec::new();
    let mut forbidden_capabilities: BTreeSet<&str> = BTreeSet::new();
    for container in pod.containers() {
        let Some(capabilities) = container_setting(container, "capabilities") else {
            missing_drop_all.push(name(container));
            continue;
        };
        if !strings(capabilities, "drop").any(|c| c == "ALL") {
            missing_drop_all.push(name(container));
        }
        let added: Vec<&str> = strings(capabilities, "add").filter(|c| *c != "NET_BIND_SERVICE").collect();
        if !added.is_empty() {
            adding_forbidden.push(name(container));
            forbidden_capabilities.extend(added);
        }
    }
    let mut problems = Vec::new();
    if !missing_drop_all.is_empty() {
        problems.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers_phrase(&missing_drop_all)
        ));
    }
    if !adding_forbidden.is_empty() {
        problems.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding_forbidden),
            join_quote(&forbidden_capabilities)
        ));
    }
    if problems.is_empty() {
        return None;
    }
    forbidden("unrestricted capabilities", problems.join("; "))
}

/// From 1.25 Windows pods are exempt (their API validation forbids the field).
fn capabilities_restricted_1_25(pod: &Pod<'_>) -> Option<Forbidden> {
    if pod.is_windows() { None } else { capabilities_restricted_1_22(pod) }
}

// ---------------------------------------------------------------------------------------------
// hostNamespaces (baseline): no host network, PID or IPC namespace.

fn host_namespaces_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    let shared: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|key| flag(pod.spec, key) == Some(true))
        .map(|key| format!("{key}=true"))
        .collect();
    if shared.is_empty() {
        return None;
    }
    forbidden("host namespaces", shared.join(", "))
}

// ---------------------------------------------------------------------------------------------
// hostPathVolumes (baseline): no hostPath volumes.

fn host_path_volumes_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    let bad: Vec<String> = pod.volumes().filter(|v| ptr(v, "hostPath").is_some()).map(name).collect();
    if bad.is_empty() {
        return None;
    }
    forbidden("hostPath volumes", format!("{} {}", pluralize("volume", "volumes", bad.len()), join_quote(&bad)))
}

// ---------------------------------------------------------------------------------------------
// hostPorts (baseline): no container port may set a hostPort.

fn host_ports_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    let mut bad_containers = Vec::new();
    // kube keeps the ports as strings, so they sort as strings.
    let mut ports: BTreeSet<String> = BTreeSet::new();
    for container in pod.containers() {
        let used: Vec<i64> = items(container, "ports")
            .map(|p| p.get("hostPort").and_then(Value::as_i64).unwrap_or(0))
            .filter(|port| *port != 0)
            .collect();
        if !used.is_empty() {
            bad_containers.push(name(container));
            ports.extend(used.iter().map(i64::to_string));
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    forbidden(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad_containers),
            pluralize("uses", "use", bad_containers.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.into_iter().collect::<Vec<_>>().join(", ")
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// hostProbesAndHostLifecycle (baseline, 1.34+): probes and lifecycle handlers may not name a
// host.

/// The hosts an httpGet or tcpSocket action of a probe or lifecycle handler names.
fn handler_hosts(handler: Option<&Value>) -> impl Iterator<Item = &str> {
    let actions = handler.into_iter().flat_map(|h| ["httpGet", "tcpSocket"].into_iter().filter_map(|k| ptr(h, k)));
    actions.map(|action| text(action, "host")).filter(|host| !host.is_empty())
}

/// Every host a container's probes and lifecycle handlers name.
fn container_hosts(container: &Value) -> Vec<&str> {
    let probes = ["livenessProbe", "readinessProbe", "startupProbe"].map(|k| ptr(container, k));
    let lifecycle = ptr(container, "lifecycle");
    let hooks = ["postStart", "preStop"].map(|k| lifecycle.and_then(|l| ptr(l, k)));
    probes.into_iter().chain(hooks).flat_map(handler_hosts).collect()
}

fn host_probes_and_host_lifecycle_1_34(pod: &Pod<'_>) -> Option<Forbidden> {
    let mut bad_containers: BTreeSet<String> = BTreeSet::new();
    let mut hosts: BTreeSet<&str> = BTreeSet::new();
    for container in pod.containers() {
        let named = container_hosts(container);
        if !named.is_empty() {
            bad_containers.insert(name(container));
            hosts.extend(named);
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    let bad_containers: Vec<String> = bad_containers.into_iter().collect();
    forbidden(
        "probe or lifecycle host",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad_containers),
            pluralize("uses", "use", bad_containers.len()),
            pluralize("probe or lifecycle host", "probe or lifecycle hosts", hosts.len()),
            join_quote(&hosts)
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// privileged (baseline): no privileged containers.

fn privileged_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    let bad: Vec<String> = pod
        .containers()
        .filter(|c| container_context(c).and_then(|sc| flag(sc, "privileged")) == Some(true))
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbidden("privileged", format!("{} must not set securityContext.privileged=true", containers_phrase(&bad)))
}

// ---------------------------------------------------------------------------------------------
// procMount (baseline) and procMount_restricted (restricted 1.35+, overrides procMount):
// procMount unset or Default.

fn proc_mount_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    let mut bad_containers = Vec::new();
    let mut types: BTreeSet<&str> = BTreeSet::new();
    for container in pod.containers() {
        let Some(proc_mount) = container_setting(container, "procMount") else { continue };
        let proc_mount = proc_mount.as_str().unwrap_or("");
        if proc_mount != "Default" {
            bad_containers.push(name(container));
            types.insert(proc_mount);
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    forbidden(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&bad_containers),
            join_quote(&types)
        ),
    )
}

/// From 1.35 baseline allows any procMount in a user namespace.
fn proc_mount_1_35(pod: &Pod<'_>) -> Option<Forbidden> {
    if pod.in_user_namespace() { None } else { proc_mount_1_0(pod) }
}

// ---------------------------------------------------------------------------------------------
// restrictedVolumes (restricted, overrides hostPathVolumes): only the allowed volume sources.

const ALLOWED_VOLUME_SOURCES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// The restricted sources, in the order kube names the first one a volume sets.
const RESTRICTED_VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

/// The restricted type a volume uses (`unknown` for none kube knows), or `None` if it is allowed.
fn restricted_volume_type(volume: &Value) -> Option<&'static str> {
    if ALLOWED_VOLUME_SOURCES.iter().any(|source| ptr(volume, source).is_some()) {
        return None;
    }
    Some(RESTRICTED_VOLUME_SOURCES.iter().copied().find(|source| ptr(volume, source).is_some()).unwrap_or("unknown"))
}

fn restricted_volumes_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    let mut bad_volumes = Vec::new();
    let mut types: BTreeSet<&str> = BTreeSet::new();
    for volume in pod.volumes() {
        if let Some(t) = restricted_volume_type(volume) {
            bad_volumes.push(name(volume));
            types.insert(t);
        }
    }
    if bad_volumes.is_empty() {
        return None;
    }
    forbidden(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad_volumes.len()),
            join_quote(&bad_volumes),
            pluralize("uses", "use", bad_volumes.len()),
            pluralize("restricted volume type", "restricted volume types", types.len()),
            join_quote(&types)
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// runAsNonRoot (restricted): runAsNonRoot=true on the pod or on every container.

fn run_as_non_root_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    let pod_setting = pod.security_context().and_then(|sc| flag(sc, "runAsNonRoot"));
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for container in pod.containers() {
        match container_context(container).and_then(|sc| flag(sc, "runAsNonRoot")) {
            Some(false) => explicitly_bad.push(name(container)),
            Some(true) => {}
            None if pod_setting != Some(true) => implicitly_bad.push(name(container)),
            None => {}
        }
    }
    let who = setters(pod_setting == Some(false), &explicitly_bad);
    if !who.is_empty() {
        return forbidden(
            "runAsNonRoot != true",
            format!("{} must not set securityContext.runAsNonRoot=false", who.join(" and ")),
        );
    }
    if implicitly_bad.is_empty() {
        return None;
    }
    forbidden(
        "runAsNonRoot != true",
        format!("pod or {} must set securityContext.runAsNonRoot=true", containers_phrase(&implicitly_bad)),
    )
}

/// From 1.35 a pod in a user namespace passes.
fn run_as_non_root_1_35(pod: &Pod<'_>) -> Option<Forbidden> {
    if pod.in_user_namespace() { None } else { run_as_non_root_1_0(pod) }
}

// ---------------------------------------------------------------------------------------------
// runAsUser (restricted, 1.23+): runAsUser may not be 0.

fn runs_as_root(security_context: Option<&Value>) -> bool {
    security_context.and_then(|sc| ptr(sc, "runAsUser")).and_then(Value::as_f64) == Some(0.0)
}

fn run_as_user_1_23(pod: &Pod<'_>) -> Option<Forbidden> {
    let bad: Vec<String> = pod.containers().filter(|c| runs_as_root(container_context(c))).map(name).collect();
    let who = setters(runs_as_root(pod.security_context()), &bad);
    if who.is_empty() {
        return None;
    }
    forbidden("runAsUser=0", format!("{} must not set runAsUser=0", who.join(" and ")))
}

/// From 1.35 a pod in a user namespace passes.
fn run_as_user_1_35(pod: &Pod<'_>) -> Option<Forbidden> {
    if pod.in_user_namespace() { None } else { run_as_user_1_23(pod) }
}

// ---------------------------------------------------------------------------------------------
// seLinuxOptions (baseline): only container types, no user or role.

const SELINUX_TYPES_1_0: &[&str] = &["", "container_t", "container_init_t", "container_kvm_t"];
const SELINUX_TYPES_1_31: &[&str] = &["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"];

fn se_linux_options_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    se_linux_options(pod, SELINUX_TYPES_1_0)
}

fn se_linux_options_1_31(pod: &Pod<'_>) -> Option<Forbidden> {
    se_linux_options(pod, SELINUX_TYPES_1_31)
}

/// What forbidden SELinux options were set, across the pod and its containers.
#[derive(Default)]
struct SeLinuxFindings<'a> {
    types: BTreeSet<&'a str>,
    user: bool,
    role: bool,
}

impl<'a> SeLinuxFindings<'a> {
    /// Records what `options` sets that is forbidden; true if it set anything forbidden.
    fn record(&mut self, options: &'a Value, allowed_types: &[&str]) -> bool {
        let option_type = text(options, "type");
        let bad_type = !allowed_types.contains(&option_type);
        if bad_type {
            self.types.insert(option_type);
        }
        let user = !text(options, "user").is_empty();
        let role = !text(options, "role").is_empty();
        self.user |= user;
        self.role |= role;
        bad_type || user || role
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.types.is_empty() {
            parts.push(format!("{} {}", pluralize("type", "types", self.types.len()), join_quote(&self.types)));
        }
        if self.user {
            parts.push("user may not be set".to_string());
        }
        if self.role {
            parts.push("role may not be set".to_string());
        }
        parts.join("; ")
    }
}

fn se_linux_options(pod: &Pod<'_>, allowed_types: &[&str]) -> Option<Forbidden> {
    let mut findings = SeLinuxFindings::default();
    let pod_options = pod.security_context().and_then(|sc| ptr(sc, "seLinuxOptions"));
    let pod_bad = pod_options.is_some_and(|options| findings.record(options, allowed_types));
    let mut bad_containers = Vec::new();
    for container in pod.containers() {
        if let Some(options) = container_setting(container, "seLinuxOptions")
            && findings.record(options, allowed_types)
        {
            bad_containers.push(name(container));
        }
    }
    let who = setters(pod_bad, &bad_containers);
    if who.is_empty() {
        return None;
    }
    forbidden(
        "seLinuxOptions",
        format!("{} set forbidden securityContext.seLinuxOptions: {}", who.join(" and "), findings.describe()),
    )
}

// ---------------------------------------------------------------------------------------------
// seccompProfile_baseline (baseline): no seccomp profile but RuntimeDefault or Localhost; before
// 1.19 read from the alpha annotations.

const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

fn valid_seccomp_type(profile_type: &str) -> bool {
    matches!(profile_type, "Localhost" | "RuntimeDefault")
}

fn valid_seccomp_annotation(value: &str) -> bool {
    value == "runtime/default" || value == "docker/default" || value.starts_with("localhost/")
}

fn seccomp_baseline_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    let container_keys = pod.containers().map(|c| format!("{SECCOMP_CONTAINER_ANNOTATION_PREFIX}{}", text(c, "name")));
    let keys = std::iter::once(SECCOMP_POD_ANNOTATION.to_string()).chain(container_keys);
    let bad: BTreeSet<String> = keys
        .filter_map(|key| {
            pod.annotation(&key).filter(|v| !valid_seccomp_annotation(v)).map(|v| annotation_pair(&key, v))
        })
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbidden(
        "seccompProfile",
        format!(
            "forbidden {} {}",
            pluralize("annotation", "annotations", bad.len()),
            bad.into_iter().collect::<Vec<_>>().join(", ")
        ),
    )
}

/// A security context's seccomp profile type, `None` when no profile is set.
fn seccomp_type(security_context: Option<&Value>) -> Option<&str> {
    let profile = ptr(security_context?, "seccompProfile")?;
    Some(text(profile, "type"))
}

/// Who set which seccomp profile types: a forbidden one, a valid one, or none.
struct SeccompSettings<'a> {
    pod_bad: bool,
    pod_valid: bool,
    bad_containers: Vec<String>,
    unset_containers: Vec<String>,
    bad_values: BTreeSet<&'a str>,
}

fn seccomp_settings<'a>(pod: &Pod<'a>) -> SeccompSettings<'a> {
    let mut settings = SeccompSettings {
        pod_bad: false,
        pod_valid: false,
        bad_containers: Vec::new(),
        unset_containers: Vec::new(),
        bad_values: BTreeSet::new(),
    };
    match seccomp_type(pod.security_context()) {
        Some(t) if valid_seccomp_type(t) => settings.pod_valid = true,
        Some(t) => {
            settings.pod_bad = true;
            settings.bad_values.insert(t);
        }
        None => {}
    }
    for container in pod.containers() {
        match seccomp_type(container_context(container)) {
            Some(t) if valid_seccomp_type(t) => {}
            Some(t) => {
                settings.bad_containers.push(name(container));
                settings.bad_values.insert(t);
            }
            None => settings.unset_containers.push(name(container)),
        }
    }
    settings
}

/// The failure for a pod or containers that set a forbidden seccomp profile type.
fn seccomp_bad_setters(settings: &SeccompSettings<'_>) -> Option<Forbidden> {
    let who = setters(settings.pod_bad, &settings.bad_containers);
    if who.is_empty() {
        return None;
    }
    forbidden(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            who.join(" and "),
            join_quote(&settings.bad_values)
        ),
    )
}

fn seccomp_baseline_1_19(pod: &Pod<'_>) -> Option<Forbidden> {
    seccomp_bad_setters(&seccomp_settings(pod))
}

// ---------------------------------------------------------------------------------------------
// seccompProfile_restricted (restricted 1.19+, overrides seccompProfile_baseline): the pod or
// every container must set RuntimeDefault or Localhost.

fn seccomp_restricted_1_19(pod: &Pod<'_>) -> Option<Forbidden> {
    let settings = seccomp_settings(pod);
    if let Some(failure) = seccomp_bad_setters(&settings) {
        return Some(failure);
    }
    if settings.pod_valid || settings.unset_containers.is_empty() {
        return None;
    }
    forbidden(
        "seccompProfile",
        format!(
            "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
            containers_phrase(&settings.unset_containers)
        ),
    )
}

/// From 1.25 Windows pods are exempt (their API validation forbids the field).
fn seccomp_restricted_1_25(pod: &Pod<'_>) -> Option<Forbidden> {
    if pod.is_windows() { None } else { seccomp_restricted_1_19(pod) }
}

// ---------------------------------------------------------------------------------------------
// sysctls (baseline): only the safe sysctls, a set that grew in 1.27, 1.29 and 1.32.

const SAFE_SYSCTLS_1_0: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
];
const SAFE_SYSCTLS_1_27: &[&str] = &["net.ipv4.ip_local_reserved_ports"];
const SAFE_SYSCTLS_1_29: &[&str] = &[
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];
const SAFE_SYSCTLS_1_32: &[&str] = &["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"];

fn sysctls_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    sysctls(pod, &[SAFE_SYSCTLS_1_0])
}

fn sysctls_1_27(pod: &Pod<'_>) -> Option<Forbidden> {
    sysctls(pod, &[SAFE_SYSCTLS_1_0, SAFE_SYSCTLS_1_27])
}

fn sysctls_1_29(pod: &Pod<'_>) -> Option<Forbidden> {
    sysctls(pod, &[SAFE_SYSCTLS_1_0, SAFE_SYSCTLS_1_27, SAFE_SYSCTLS_1_29])
}

fn sysctls_1_32(pod: &Pod<'_>) -> Option<Forbidden> {
    sysctls(pod, &[SAFE_SYSCTLS_1_0, SAFE_SYSCTLS_1_27, SAFE_SYSCTLS_1_29, SAFE_SYSCTLS_1_32])
}

fn sysctls(pod: &Pod<'_>, safe: &[&[&str]]) -> Option<Forbidden> {
    let is_safe = |name: &str| safe.iter().any(|set| set.contains(&name));
    let sysctls = pod.security_context().into_iter().flat_map(|sc| items(sc, "sysctls"));
    let bad: Vec<&str> = sysctls.map(|s| text(s, "name")).filter(|n| !is_safe(n)).collect();
    if bad.is_empty() {
        return None;
    }
    forbidden("forbidden sysctls", bad.join(", "))
}

// ---------------------------------------------------------------------------------------------
// windowsHostProcess (baseline): no Windows host process pods or containers.

fn host_process(security_context: Option<&Value>) -> bool {
    security_context.and_then(|sc| ptr(sc, "windowsOptions")).and_then(|w| flag(w, "hostProcess")) == Some(true)
}

fn windows_host_process_1_0(pod: &Pod<'_>) -> Option<Forbidden> {
    let bad: Vec<String> = pod.containers().filter(|c| host_process(container_context(c))).map(name).collect();
    let who = setters(host_process(pod.security_context()), &bad);
    if who.is_empty() {
        return None;
    }
    forbidden(
        "hostProcess",
        format!("{} must not set securityContext.windowsOptions.hostProcess=true", who.join(" and ")),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Runs one check body on a pod with no metadata.
    fn run(check: CheckFn, spec: Value) -> Option<Forbidden> {
        check(&Pod { metadata: &Value::Null, spec: &spec })
    }

    /// Runs one check body on a pod with metadata.
    fn run_with(check: CheckFn, metadata: Value, spec: Value) -> Option<Forbidden> {
        check(&Pod { metadata: &metadata, spec: &spec })
    }

    #[track_caller]
    fn assert_fails(result: Option<Forbidden>, reason: &str, detail: &str) {
        let result = result.expect("expected the check to fail");
        assert_eq!((result.reason.as_str(), result.detail.as_str()), (reason, detail));
    }

    #[track_caller]
    fn assert_passes(result: Option<Forbidden>) {
        assert_eq!(result, None);
    }

    fn ids(level: Level, version: &str) -> Vec<&'static str> {
        selected_checks(level, Version::parse(version).unwrap()).into_iter().map(|(id, _)| id).collect()
    }

    fn eval(level: Level, version: &str, metadata: Value, spec: Value) -> Vec<Forbidden> {
        evaluate(level, Version::parse(version).unwrap(), &metadata, &spec)
    }

    fn reason_list(results: &[Forbidden]) -> Vec<&str> {
        results.iter().map(|r| r.reason.as_str()).collect()
    }

    /// A pod that passes restricted at every version.
    fn restricted_pod() -> Value {
        json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "c",
                "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}
            }]
        })
    }

    // --- Levels and versions.

    #[test]
    fn levels_parse_and_print() {
        for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
            assert_eq!(Level::parse(level.as_str()), Some(level));
        }
        assert_eq!(Level::parse("Restricted"), None);
        assert_eq!(Level::parse(""), None);
        assert!(Level::Privileged < Level::Baseline && Level::Baseline < Level::Restricted);
    }

    #[test]
    fn versions_parse_as_kube_does() {
        assert_eq!(Version::parse("latest"), Some(Version(None)));
        assert_eq!(Version::parse("v1.0"), Some(Version(Some(0))));
        assert_eq!(Version::parse("v1.35"), Some(Version(Some(35))));
        assert_eq!(Version::parse("v1.10000"), Some(Version(Some(10000))));
        assert_eq!(Version::parse("v1.99999999999"), Some(Version(Some(u32::MAX))));
        for bad in ["", "Latest", "1.20", "v1", "v1.", "v1.01", "v1.-1", "v2.0", "v1.2.3", "v1.2 ", "v1.x", "v1.+2"] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
        assert_eq!(Version::parse("v1.99999999999999999999"), None);
        assert_eq!(Version(None).as_string(), "latest");
        assert_eq!(Version(Some(24)).as_string(), "v1.24");
    }

    // --- The registry.

    #[test]
    fn privileged_runs_nothing() {
        assert!(ids(Level::Privileged, "latest").is_empty());
        assert!(ids(Level::Privileged, "v1.0").is_empty());
        let spec = json!({"hostNetwork": true, "containers": [{"name": "a", "securityContext": {"privileged": true}}]});
        assert!(eval(Level::Privileged, "latest", Value::Null, spec).is_empty());
    }

    #[test]
    fn baseline_runs_sorted_baseline_checks() {
        let latest = [
            "appArmorProfile",
            "capabilities_baseline",
            "hostNamespaces",
            "hostPathVolumes",
            "hostPorts",
            "hostProbesAndHostLifecycle",
            "privileged",
            "procMount",
            "seLinuxOptions",
            "seccompProfile_baseline",
            "sysctls",
            "windowsHostProcess",
        ];
        assert_eq!(ids(Level::Baseline, "latest"), latest);
        let without_host_probes: Vec<&str> =
            latest.iter().copied().filter(|id| *id != "hostProbesAndHostLifecycle").collect();
        assert_eq!(ids(Level::Baseline, "v1.33"), without_host_probes);
        assert_eq!(ids(Level::Baseline, "v1.0"), without_host_probes);
    }

    #[test]
    fn restricted_adds_restricted_checks_and_drops_overridden_ones() {
        assert_eq!(
            ids(Level::Restricted, "latest"),
            [
                "appArmorProfile",
                "hostNamespaces",
                "hostPorts",
                "hostProbesAndHostLifecycle",
                "privileged",
                "seLinuxOptions",
                "sysctls",
                "windowsHostProcess",
                "allowPrivilegeEscalation",
                "capabilities_restricted",
                "procMount_restricted",
                "restrictedVolumes",
                "runAsNonRoot",
                "runAsUser",
                "seccompProfile_restricted",
            ]
        );
        // Before 1.8 only restrictedVolumes (overriding hostPathVolumes) and runAsNonRoot exist.
        assert_eq!(
            ids(Level::Restricted, "v1.7"),
            [
                "appArmorProfile",
                "capabilities_baseline",
                "hostNamespaces",
                "hostPorts",
                "privileged",
                "procMount",
                "seLinuxOptions",
                "seccompProfile_baseline",
                "sysctls",
                "windowsHostProcess",
                "restrictedVolumes",
                "runAsNonRoot",
            ]
        );
        let v1_22 = ids(Level::Restricted, "v1.22");
        assert!(v1_22.contains(&"capabilities_restricted") && !v1_22.contains(&"capabilities_baseline"));
        assert!(v1_22.contains(&"seccompProfile_restricted") && !v1_22.contains(&"seccompProfile_baseline"));
        assert!(!v1_22.contains(&"runAsUser"));
        assert!(ids(Level::Restricted, "v1.23").contains(&"runAsUser"));
        let v1_34 = ids(Level::Restricted, "v1.34");
        assert!(v1_34.contains(&"procMount") && !v1_34.contains(&"procMount_restricted"));
    }

    #[test]
    fn newer_versions_evaluate_as_the_newest() {
        assert_eq!(newest_minor(), 35);
        assert_eq!(ids(Level::Restricted, "v1.10000"), ids(Level::Restricted, "latest"));
        assert_eq!(ids(Level::Baseline, "v1.36"), ids(Level::Baseline, "latest"));
        let spec =
            json!({"hostUsers": false, "containers": [{"name": "a", "securityContext": {"procMount": "Unmasked"}}]});
        assert!(eval(Level::Baseline, "v1.99", Value::Null, spec.clone()).is_empty());
        assert_eq!(reason_list(&eval(Level::Baseline, "v1.34", Value::Null, spec)), ["procMount"]);
    }

    #[test]
    fn check_revisions_are_in_increasing_order() {
        for check in CHECKS {
            assert!(!check.variants.is_empty(), "{}", check.id);
            assert!(check.variants.windows(2).all(|w| w[0].since < w[1].since), "{}", check.id);
            assert!(matches!(check.level, Level::Baseline | Level::Restricted), "{}", check.id);
            for id in check.variants.iter().flat_map(|v| v.overrides) {
                assert_eq!(check.level, Level::Restricted);
                assert!(CHECKS.iter().any(|c| c.id == *id && c.level == Level::Baseline), "{id}");
            }
        }
        let mut seen: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), CHECKS.len());
    }

    #[test]
    fn windows_pods_skip_capabilities_from_1_25() {
        let spec = json!({
            "os": {"name": "windows"},
            "securityContext": {"runAsNonRoot": true},
            "containers": [{"name": "a"}]
        });
        let v1_24 = eval(Level::Restricted, "v1.24", Value::Null, spec.clone());
        assert_eq!(reasons(&v1_24), "allowPrivilegeEscalation != false, unrestricted capabilities, seccompProfile");
        assert_eq!(
            details(&v1_24),
            "allowPrivilegeEscalation != false (container \"a\" must set securityContext.allowPrivilegeEscalation=false), \
             unrestricted capabilities (container \"a\" must set securityContext.capabilities.drop=[\"ALL\"]), \
             seccompProfile (pod or container \"a\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
        assert!(eval(Level::Restricted, "latest", Value::Null, spec.clone()).is_empty());
        assert!(eval(Level::Restricted, "v1.25", Value::Null, spec).is_empty());
    }

    #[test]
    fn seccomp_baseline_and_restricted_differ() {
        let unset = json!({"containers": [{"name": "a"}]});
        assert!(eval(Level::Baseline, "latest", Value::Null, unset.clone()).is_empty());
        let restricted = eval(Level::Restricted, "latest", Value::Null, unset);
        assert!(restricted.contains(&Forbidden {
            reason: "seccompProfile".into(),
            detail: r#"pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#
                .into(),
        }));

        let unconfined =
            json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": [{"name": "a"}]});
        let baseline = eval(Level::Baseline, "latest", Value::Null, unconfined.clone());
        assert_eq!(
            details(&baseline),
            r#"seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")"#
        );
        // Before 1.19 baseline reads the alpha annotations, not the field.
        assert!(eval(Level::Baseline, "v1.18", Value::Null, unconfined.clone()).is_empty());
        let annotated = json!({"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}});
        let old = eval(Level::Baseline, "v1.18", annotated.clone(), unconfined.clone());
        assert_eq!(
            details(&old),
            r#"seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined")"#
        );
        assert!(eval(Level::Baseline, "v1.19", annotated, json!({})).is_empty());
        // Restricted before 1.19 still runs the baseline annotation check.
        let mut pod = restricted_pod();
        pod["securityContext"]["seccompProfile"]["type"] = json!("Unconfined");
        assert!(eval(Level::Restricted, "v1.18", Value::Null, pod).is_empty());
    }

    #[test]
    fn restricted_runs_restricted_volumes_instead_of_host_path() {
        let mut spec = restricted_pod();
        spec["volumes"] = json!([{"name": "h", "hostPath": {"path": "/"}}]);
        assert_eq!(
            details(&eval(Level::Baseline, "latest", Value::Null, spec.clone())),
            r#"hostPath volumes (volume "h")"#
        );
        assert_eq!(
            details(&eval(Level::Restricted, "latest", Value::Null, spec)),
            r#"restricted volume types (volume "h" uses restricted volume type "hostPath")"#
        );
    }

    #[test]
    fn restricted_runs_baseline_capabilities_before_1_22() {
        let spec = json!({"containers": [{"name": "a", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]});
        let v1_21 = eval(Level::Restricted, "v1.21", Value::Null, spec.clone());
        assert!(reason_list(&v1_21).contains(&"non-default capabilities"));
        assert!(!reason_list(&v1_21).contains(&"unrestricted capabilities"));
        let v1_22 = eval(Level::Restricted, "v1.22", Value::Null, spec);
        assert!(!reason_list(&v1_22).contains(&"non-default capabilities"));
        assert!(reason_list(&v1_22).contains(&"unrestricted capabilities"));
    }

    #[test]
    fn user_namespaces_relax_from_1_35() {
        let spec = json!({
            "hostUsers": false,
            "containers": [{"name": "a", "securityContext": {
                "allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"]},
                "seccompProfile": {"type": "RuntimeDefault"},
                "runAsUser": 0,
                "procMount": "Unmasked"
            }}]
        });
        assert_eq!(
            details(&eval(Level::Restricted, "v1.35", Value::Null, spec.clone())),
            r#"procMount (container "a" must not set securityContext.procMount to "Unmasked")"#
        );
        assert!(eval(Level::Baseline, "v1.35", Value::Null, spec.clone()).is_empty());
        assert_eq!(
            reasons(&eval(Level::Restricted, "v1.34", Value::Null, spec)),
            "procMount, runAsNonRoot != true, runAsUser=0"
        );
    }

    #[test]
    fn failures_come_in_check_order() {
        let spec = json!({
            "hostNetwork": true,
            "hostPID": true,
            "securityContext": {"sysctls": [{"name": "kernel.msgmax"}]},
            "volumes": [{"name": "v", "nfs": {}}],
            "containers": [{
                "name": "a",
                "ports": [{"containerPort": 80, "hostPort": 8080}],
                "securityContext": {"privileged": true, "runAsUser": 0, "capabilities": {"add": ["NET_ADMIN"]}}
            }]
        });
        let baseline = eval(Level::Baseline, "latest", Value::Null, spec.clone());
        assert_eq!(
            reasons(&baseline),
            "non-default capabilities, host namespaces, hostPort, privileged, forbidden sysctls"
        );
        assert_eq!(
            details(&baseline),
            "non-default capabilities (container \"a\" must not include \"NET_ADMIN\" in securityContext.capabilities.add), \
             host namespaces (hostNetwork=true, hostPID=true), \
             hostPort (container \"a\" uses hostPort 8080), \
             privileged (container \"a\" must not set securityContext.privileged=true), \
             forbidden sysctls (kernel.msgmax)"
        );
        let restricted = eval(Level::Restricted, "latest", Value::Null, spec);
        assert_eq!(
            reason_list(&restricted),
            [
                "host namespaces",
                "hostPort",
                "privileged",
                "forbidden sysctls",
                "allowPrivilegeEscalation != false",
                "unrestricted capabilities",
                "restricted volume types",
                "runAsNonRoot != true",
                "runAsUser=0",
                "seccompProfile",
            ]
        );
    }

    #[test]
    fn a_compliant_pod_passes_every_level_and_version() {
        for version in ["v1.0", "v1.8", "v1.19", "v1.22", "v1.25", "v1.34", "v1.35", "latest"] {
            for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
                assert!(eval(level, version, Value::Null, restricted_pod()).is_empty(), "{level:?} {version}");
            }
        }
        // Neither metadata nor spec need be objects.
        assert!(eval(Level::Baseline, "latest", Value::Null, Value::Null).is_empty());
    }

    #[test]
    fn reasons_and_details_join_as_kube_does() {
        let results = vec![
            Forbidden { reason: "host ports".into(), detail: "8080, 9090".into() },
            Forbidden { reason: "privileged containers".into(), detail: String::new() },
            Forbidden { reason: String::new(), detail: "CAP_NET_RAW".into() },
        ];
        assert_eq!(reasons(&results), "host ports, privileged containers, unknown forbidden reason");
        assert_eq!(
            details(&results),
            "host ports (8080, 9090), privileged containers, unknown forbidden reason (CAP_NET_RAW)"
        );
        assert_eq!(reasons(&[]), "");
        assert_eq!(details(&[]), "");
    }

    #[test]
    fn go_quote_escapes_as_strconv_quote() {
        assert_eq!(go_quote("unconfined"), r#""unconfined""#);
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("\n\t\u{7}\u{0}\u{7f}"), r#""\n\t\a\x00\x7f""#);
        assert_eq!(go_quote("héllo 世界"), "\"héllo 世界\"");
        assert_eq!(go_quote("\u{a0}\u{200b}\u{2028}"), r#""\u00a0\u200b\u2028""#);
        assert_eq!(go_quote("\u{e0001}"), r#""\U000e0001""#);
    }

    // --- allowPrivilegeEscalation.

    #[test]
    fn allow_privilege_escalation() {
        let spec = json!({"containers": [
            {"name": "a"},
            {"name": "b", "securityContext": {"allowPrivilegeEscalation": null}},
            {"name": "c", "securityContext": {"allowPrivilegeEscalation": true}},
            {"name": "d", "securityContext": {"allowPrivilegeEscalation": false}}
        ]});
        for check in [allow_privilege_escalation_1_8 as CheckFn, allow_privilege_escalation_1_25] {
            assert_fails(
                run(check, spec.clone()),
                "allowPrivilegeEscalation != false",
                r#"containers "a", "b", "c" must set securityContext.allowPrivilegeEscalation=false"#,
            );
        }
        let windows = json!({"os": {"name": "windows"}, "containers": [{"name": "a"}]});
        assert_passes(run(allow_privilege_escalation_1_25, windows.clone()));
        assert!(run(allow_privilege_escalation_1_8, windows).is_some());
        assert_fails(
            run(allow_privilege_escalation_1_25, json!({"os": {"name": "linux"}, "containers": [{"name": "a"}]})),
            "allowPrivilegeEscalation != false",
            r#"container "a" must set securityContext.allowPrivilegeEscalation=false"#,
        );
        let ephemeral =
            json!({"ephemeralContainers": [{"name": "e", "securityContext": {"allowPrivilegeEscalation": false}}]});
        assert_passes(run(allow_privilege_escalation_1_25, ephemeral));
    }

    // --- appArmorProfile.

    #[test]
    fn app_armor_profile_allowed() {
        let prefix = APP_ARMOR_ANNOTATION_PREFIX;
        for annotations in [
            json!({format!("{prefix}test"): "runtime/default", "env": "prod"}),
            json!({format!("{prefix}test"): "localhost/sec-profile01", "env": "dev"}),
            json!({"env": "dev"}),
            json!({}),
        ] {
            assert_passes(run_with(app_armor_profile_1_0, json!({"annotations": annotations}), json!({})));
        }
        assert_passes(run(
            app_armor_profile_1_0,
            json!({"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}}),
        ));
        let container =
            json!({"containers": [{"name": "foo", "securityContext": {"appArmorProfile": {"type": "Localhost"}}}]});
        assert_passes(run(app_armor_profile_1_0, container));
    }

    #[test]
    fn app_armor_profile_forbidden() {
        assert_fails(
            run(app_armor_profile_1_0, json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}}})),
            "forbidden AppArmor profile",
            r#"pod must not set AppArmor profile type to "Unconfined""#,
        );
        assert_fails(
            run(
                app_armor_profile_1_0,
                json!({
                    "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
                    "containers": [{"name": "foo", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]
                }),
            ),
            "forbidden AppArmor profile",
            r#"container "foo" must not set AppArmor profile type to "Unconfined""#,
        );
        assert_fails(
            run(
                app_armor_profile_1_0,
                json!({
                    "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
                    "containers": [{"name": "foo"}],
                    "initContainers": [{"name": "bar", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]
                }),
            ),
            "forbidden AppArmor profile",
            r#"container "bar" must not set AppArmor profile type to "Unconfined""#,
        );
        let metadata = json!({"annotations": {
            "container.apparmor.security.beta.kubernetes.io/": "bogus",
            "container.apparmor.security.beta.kubernetes.io/a": "",
            "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
            "container.apparmor.security.beta.kubernetes.io/c": "localhost/",
            "container.apparmor.security.beta.kubernetes.io/d": "localhost/foo",
            "container.apparmor.security.beta.kubernetes.io/e": "unconfined",
            "container.apparmor.security.beta.kubernetes.io/f": "unknown"
        }});
        assert_fails(
            run_with(app_armor_profile_1_0, metadata, json!({})),
            "forbidden AppArmor profiles",
            concat!(
                r#"annotations must not set AppArmor profile type to "#,
                r#""container.apparmor.security.beta.kubernetes.io/="bogus"", "#,
                r#""container.apparmor.security.beta.kubernetes.io/e="unconfined"", "#,
                r#""container.apparmor.security.beta.kubernetes.io/f="unknown"""#
            ),
        );
    }

    #[test]
    fn app_armor_profile_pod_containers_and_annotations_together() {
        let metadata = json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/x": "unconfined"}});
        let spec = json!({
            "securityContext": {"appArmorProfile": {"type": "Unconfined"}},
            "containers": [
                {"name": "a", "securityContext": {"appArmorProfile": {}}},
                {"name": "b", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}
            ]
        });
        assert_fails(
            run_with(app_armor_profile_1_0, metadata, spec),
            "forbidden AppArmor profiles",
            concat!(
                r#"pod and containers "a", "b" and annotation must not set AppArmor profile type to "#,
                r#""", "Unconfined", "container.apparmor.security.beta.kubernetes.io/x="unconfined"""#
            ),
        );
    }

    // --- capabilities.

    #[test]
    fn capabilities_baseline() {
        let spec = json!({"containers": [
            {"name": "a", "securityContext": {"capabilities": {"add": ["FOO", "BAR"]}}},
            {"name": "b", "securityContext": {"capabilities": {"add": ["BAR", "BAZ"]}}}
        ]});
        assert_fails(
            run(capabilities_baseline_1_0, spec),
            "non-default capabilities",
            r#"containers "a", "b" must not include "BAR", "BAZ", "FOO" in securityContext.capabilities.add"#,
        );
        let defaults = json!({"containers": [
            {"name": "a", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN", "SYS_CHROOT"]}}},
            {"name": "b", "securityContext": {"capabilities": null}},
            {"name": "c"}
        ]});
        assert_passes(run(capabilities_baseline_1_0, defaults));
    }

    #[test]
    fn capabilities_restricted() {
        let spec = json!({"containers": [
            {"name": "a", "securityContext": {"capabilities": {"add": ["FOO", "BAR"]}}},
            {"name": "b", "securityContext": {"capabilities": {"add": ["BAR", "BAZ"]}}},
            {"name": "c", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"], "drop": ["ALL", "FOO"]}}}
        ]});
        for check in [capabilities_restricted_1_22 as CheckFn, capabilities_restricted_1_25] {
            assert_fails(
                run(check, spec.clone()),
                "unrestricted capabilities",
                concat!(
                    r#"containers "a", "b" must set securityContext.capabilities.drop=["ALL"]; "#,
                    r#"containers "a", "b", "c" must not include "BAR", "BAZ", "CHOWN", "FOO" in securityContext.capabilities.add"#
                ),
            );
        }
        let windows = json!({"os": {"name": "windows"}, "containers": [{"name": "a"}]});
        assert_passes(run(capabilities_restricted_1_25, windows.clone()));
        assert_fails(
            run(capabilities_restricted_1_22, windows),
            "unrestricted capabilities",
            r#"container "a" must set securityContext.capabilities.drop=["ALL"]"#,
        );
        assert_fails(
            run(capabilities_restricted_1_25, json!({"os": {"name": "linux"}, "containers": [{"name": "a"}]})),
            "unrestricted capabilities",
            r#"container "a" must set securityContext.capabilities.drop=["ALL"]"#,
        );
        let good = json!({"containers": [
            {"name": "a", "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}
        ]});
        assert_passes(run(capabilities_restricted_1_25, good));
    }

    // --- hostNamespaces, hostPathVolumes, hostPorts.

    #[test]
    fn host_namespaces() {
        assert_fails(
            run(host_namespaces_1_0, json!({"hostNetwork": true, "hostIPC": true, "hostPID": true})),
            "host namespaces",
            "hostNetwork=true, hostPID=true, hostIPC=true",
        );
        assert_fails(run(host_namespaces_1_0, json!({"hostIPC": true})), "host namespaces", "hostIPC=true");
        assert_passes(run(host_namespaces_1_0, json!({"hostNetwork": false, "hostPID": null})));
    }

    #[test]
    fn host_path_volumes() {
        let spec = json!({"volumes": [
            {"name": "a", "hostPath": {}},
            {"name": "b", "hostPath": {}},
            {"name": "c", "emptyDir": {}}
        ]});
        assert_fails(run(host_path_volumes_1_0, spec), "hostPath volumes", r#"volumes "a", "b""#);
        assert_fails(
            run(host_path_volumes_1_0, json!({"volumes": [{"name": "a", "hostPath": {"path": "/"}}]})),
            "hostPath volumes",
            r#"volume "a""#,
        );
        assert_passes(run(
            host_path_volumes_1_0,
            json!({"volumes": [{"name": "c", "emptyDir": {}, "hostPath": null}]}),
        ));
    }

    #[test]
    fn host_ports() {
        let one = json!({"containers": [
            {"name": "a", "ports": [{"hostPort": 0}]},
            {"name": "b", "ports": [{"hostPort": 0}, {"hostPort": 20}]}
        ]});
        assert_fails(run(host_ports_1_0, one), "hostPort", r#"container "b" uses hostPort 20"#);
        let many = json!({"containers": [
            {"name": "a", "ports": [{"hostPort": 0}]},
            {"name": "b", "ports": [{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 20}]},
            {"name": "c", "ports": [{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 30}]}
        ]});
        assert_fails(run(host_ports_1_0, many), "hostPort", r#"containers "b", "c" use hostPorts 10, 20, 30"#);
        // The ports sort as strings.
        let strings = json!({"initContainers": [{"name": "i", "ports": [{"hostPort": 9}, {"hostPort": 100}]}]});
        assert_fails(run(host_ports_1_0, strings), "hostPort", r#"container "i" uses hostPorts 100, 9"#);
        assert_passes(run(host_ports_1_0, json!({"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]})));
    }

    // --- hostProbesAndHostLifecycle.

    fn probe_container(name: &str, fields: Value) -> Value {
        let mut container = fields;
        container["name"] = json!(name);
        container
    }

    #[test]
    fn host_probes_and_lifecycle_allowed_without_hosts() {
        let spec = json!({"containers": [probe_container("a", json!({
            "livenessProbe": {"httpGet": {}},
            "readinessProbe": {"tcpSocket": {"host": ""}},
            "lifecycle": {"postStart": {"httpGet": {}}, "preStop": {"exec": {"command": ["true"]}}}
        }))]});
        assert_passes(run(host_probes_and_host_lifecycle_1_34, spec));
    }

    #[test]
    fn host_probes_and_lifecycle_forbidden() {
        let local = json!({"containers": [probe_container("a", json!({
            "livenessProbe": {"httpGet": {"host": "127.0.0.1"}},
            "readinessProbe": {"tcpSocket": {"host": "::1"}},
            "startupProbe": {"httpGet": {"host": "localhost"}}
        }))]});
        assert_fails(
            run(host_probes_and_host_lifecycle_1_34, local),
            "probe or lifecycle host",
            r#"container "a" uses probe or lifecycle hosts "127.0.0.1", "::1", "localhost""#,
        );
        let single = [
            ("a", json!({"livenessProbe": {"httpGet": {"host": "invalid.host"}}}), "invalid.host"),
            ("b", json!({"readinessProbe": {"tcpSocket": {"host": "invalid.host"}}}), "invalid.host"),
            ("c", json!({"startupProbe": {"httpGet": {"host": "invalid.host"}}}), "invalid.host"),
            ("d", json!({"lifecycle": {"postStart": {"tcpSocket": {"host": "invalid.host"}}}}), "invalid.host"),
            (
                "e",
                json!({"lifecycle": {"preStop": {"httpGet": {"host": "another.invalid.host"}}}}),
                "another.invalid.host",
            ),
            ("a", json!({"livenessProbe": {"httpGet": {"host": "8.8.8.8"}}}), "8.8.8.8"),
            ("a", json!({"livenessProbe": {"tcpSocket": {"host": "2001:4860:4860::8888"}}}), "2001:4860:4860::8888"),
        ];
        for (name, fields, host) in single {
            let spec = json!({"containers": [probe_container(name, fields)]});
            assert_fails(
                run(host_probes_and_host_lifecycle_1_34, spec),
                "probe or lifecycle host",
                &format!(r#"container "{name}" uses probe or lifecycle host "{host}""#),
            );
        }
        let init = json!({"initContainers": [probe_container("init", json!({"livenessProbe": {"httpGet": {"host": "invalid.init.host"}}}))]});
        assert_fails(
            run(host_probes_and_host_lifecycle_1_34, init),
            "probe or lifecycle host",
            r#"container "init" uses probe or lifecycle host "invalid.init.host""#,
        );
        let many = json!({"containers": [
            {"name": "valid"},
            probe_container("invalid2", json!({
                "lifecycle": {"preStop": {"tcpSocket": {"host": "b.com"}}},
                "startupProbe": {"httpGet": {"host": "a.com"}}
            })),
            probe_container("invalid1", json!({"livenessProbe": {"httpGet": {"host": "a.com"}}}))
        ]});
        assert_fails(
            run(host_probes_and_host_lifecycle_1_34, many),
            "probe or lifecycle host",
            r#"containers "invalid1", "invalid2" use probe or lifecycle hosts "a.com", "b.com""#,
        );
    }

    #[test]
    fn host_probes_and_lifecycle_apply_from_1_34() {
        let spec = json!({"containers": [{"name": "", "startupProbe": {"httpGet": {"host": "localhost"}}}]});
        assert!(eval(Level::Baseline, "v1.33", Value::Null, spec.clone()).is_empty());
        for version in ["v1.34", "latest"] {
            assert_eq!(
                details(&eval(Level::Baseline, version, Value::Null, spec.clone())),
                r#"probe or lifecycle host (container "" uses probe or lifecycle host "localhost")"#
            );
        }
    }

    // --- privileged.

    #[test]
    fn privileged() {
        let spec = json!({"containers": [
            {"name": "a", "securityContext": null},
            {"name": "b", "securityContext": {}},
            {"name": "c", "securityContext": {"privileged": false}},
            {"name": "d", "securityContext": {"privileged": true}},
            {"name": "e", "securityContext": {"privileged": true}}
        ]});
        assert_fails(
            run(privileged_1_0, spec),
            "privileged",
            r#"containers "d", "e" must not set securityContext.privileged=true"#,
        );
        assert_passes(run(
            privileged_1_0,
            json!({"containers": [{"name": "c", "securityContext": {"privileged": false}}]}),
        ));
    }

    // --- procMount.

    fn proc_mount_spec(host_users: bool) -> Value {
        json!({
            "hostUsers": host_users,
            "containers": [
                {"name": "a", "securityContext": null},
                {"name": "b", "securityContext": {}},
                {"name": "c", "securityContext": {"procMount": "Default"}},
                {"name": "d", "securityContext": {"procMount": "Unmasked"}},
                {"name": "e", "securityContext": {"procMount": "other"}}
            ]
        })
    }

    #[test]
    fn proc_mount() {
        let detail = r#"containers "d", "e" must not set securityContext.procMount to "Unmasked", "other""#;
        assert_fails(run(proc_mount_1_35, proc_mount_spec(true)), "procMount", detail);
        assert_passes(run(proc_mount_1_35, proc_mount_spec(false)));
        for host_users in [true, false] {
            assert_fails(run(proc_mount_1_0, proc_mount_spec(host_users)), "procMount", detail);
        }
        assert_passes(run(
            proc_mount_1_0,
            json!({"containers": [{"name": "c", "securityContext": {"procMount": "Default"}}]}),
        ));
    }

    // --- restrictedVolumes.

    #[test]
    fn restricted_volumes() {
        let mut volumes: Vec<Value> = ALLOWED_VOLUME_SOURCES
            .iter()
            .enumerate()
            .map(|(i, source)| json!({"name": format!("a{}", i + 1), *source: {}}))
            .collect();
        volumes.extend(
            RESTRICTED_VOLUME_SOURCES
                .iter()
                .enumerate()
                .map(|(i, source)| json!({"name": format!("b{}", i + 1), *source: {}})),
        );
        volumes.push(json!({"name": "c1"}));
        assert_fails(
            run(restricted_volumes_1_0, json!({"volumes": volumes})),
            "restricted volume types",
            concat!(
                r#"volumes "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10", "b11", "b12", "b13", "b14", "b15", "b16", "b17", "b18", "b19", "b20", "b21", "c1""#,
                r#" use restricted volume types "#,
                r#""awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "fc", "flexVolume", "flocker", "gcePersistentDisk", "gitRepo", "glusterfs", "#,
                r#""hostPath", "iscsi", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "unknown", "vsphereVolume""#
            ),
        );
        let allowed: Vec<Value> =
            ALLOWED_VOLUME_SOURCES.iter().map(|source| json!({"name": "v", *source: {}})).collect();
        assert_passes(run(restricted_volumes_1_0, json!({"volumes": allowed})));
        // An allowed source wins over a restricted one; the first restricted source names the type.
        let mixed = json!({"volumes": [
            {"name": "x", "secret": {}, "hostPath": {}},
            {"name": "y", "nfs": {}, "hostPath": {}, "configMap": null}
        ]});
        assert_fails(
            run(restricted_volumes_1_0, mixed),
            "restricted volume types",
            r#"volume "y" uses restricted volume type "hostPath""#,
        );
    }

    // --- runAsNonRoot.

    #[test]
    fn run_as_non_root() {
        let cases = [
            (
                json!({"containers": [{"name": "a"}]}),
                r#"pod or container "a" must set securityContext.runAsNonRoot=true"#,
            ),
            (
                json!({"securityContext": {"runAsNonRoot": false}, "containers": [{"name": "a", "securityContext": null}]}),
                "pod must not set securityContext.runAsNonRoot=false",
            ),
            (
                json!({"securityContext": {"runAsNonRoot": true}, "containers": [
                    {"name": "a", "securityContext": null},
                    {"name": "b", "securityContext": {}},
                    {"name": "c", "securityContext": {"runAsNonRoot": false}},
                    {"name": "d", "securityContext": {"runAsNonRoot": false}},
                    {"name": "e", "securityContext": {"runAsNonRoot": true}},
                    {"name": "f", "securityContext": {"runAsNonRoot": true}}
                ]}),
                r#"containers "c", "d" must not set securityContext.runAsNonRoot=false"#,
            ),
            (
                json!({"containers": [
                    {"name": "a", "securityContext": null},
                    {"name": "b", "securityContext": {}},
                    {"name": "d", "securityContext": {"runAsNonRoot": true}},
                    {"name": "e", "securityContext": {"runAsNonRoot": true}}
                ]}),
                r#"pod or containers "a", "b" must set securityContext.runAsNonRoot=true"#,
            ),
            (
                json!({"securityContext": {"runAsNonRoot": false}, "containers": [{"name": "a", "securityContext": {"runAsNonRoot": false}}]}),
                r#"pod and container "a" must not set securityContext.runAsNonRoot=false"#,
            ),
        ];
        for (spec, detail) in cases {
            for check in [run_as_non_root_1_0 as CheckFn, run_as_non_root_1_35] {
                assert_fails(run(check, spec.clone()), "runAsNonRoot != true", detail);
            }
        }
        assert_passes(run(run_as_non_root_1_35, json!({"hostUsers": false, "containers": [{"name": "a"}]})));
        assert!(run(run_as_non_root_1_0, json!({"hostUsers": false, "containers": [{"name": "a"}]})).is_some());
        assert_passes(run(
            run_as_non_root_1_0,
            json!({"securityContext": {"runAsNonRoot": true}, "containers": [{"name": "a"}]}),
        ));
    }

    // --- runAsUser.

    #[test]
    fn run_as_user() {
        for check in [run_as_user_1_23 as CheckFn, run_as_user_1_35] {
            assert_fails(
                run(
                    check,
                    json!({"securityContext": {"runAsUser": 0}, "containers": [{"name": "a", "securityContext": null}]}),
                ),
                "runAsUser=0",
                "pod must not set runAsUser=0",
            );
            let containers = json!({"securityContext": {"runAsUser": 1000}, "containers": [
                {"name": "a", "securityContext": null},
                {"name": "b", "securityContext": {}},
                {"name": "c", "securityContext": {"runAsUser": 0}},
                {"name": "d", "securityContext": {"runAsUser": 0}},
                {"name": "e", "securityContext": {"runAsUser": 1}},
                {"name": "f", "securityContext": {"runAsUser": 1}}
            ]});
            assert_fails(run(check, containers), "runAsUser=0", r#"containers "c", "d" must not set runAsUser=0"#);
            assert_passes(run(check, json!({"securityContext": {"runAsUser": 1000}, "containers": [{"name": "a"}]})));
            assert_passes(run(check, json!({"securityContext": {"runAsUser": null}, "containers": [{"name": "a"}]})));
        }
        let root_in_userns = json!({"hostUsers": false, "securityContext": {"runAsUser": 0}});
        assert_passes(run(run_as_user_1_35, root_in_userns.clone()));
        assert_fails(run(run_as_user_1_23, root_in_userns), "runAsUser=0", "pod must not set runAsUser=0");
    }

    // --- seLinuxOptions.

    #[test]
    fn se_linux_options() {
        let containers = json!([
            {"name": "a", "securityContext": {"seLinuxOptions": {"type": "container_t"}}},
            {"name": "b", "securityContext": {"seLinuxOptions": {"type": "container_init_t"}}},
            {"name": "c", "securityContext": {"seLinuxOptions": {"type": "container_kvm_t"}}},
            {"name": "d", "securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}},
            {"name": "e", "securityContext": {"seLinuxOptions": {"type": "bar"}}},
            {"name": "f", "securityContext": {"seLinuxOptions": {"user": "bar"}}},
            {"name": "g", "securityContext": {"seLinuxOptions": {"role": "baz"}}}
        ]);
        let bad_pod = json!({"type": "foo", "user": "bar", "role": "baz"});
        let cases = [
            (
                json!({"securityContext": {"seLinuxOptions": bad_pod}, "containers": containers}),
                r#"pod and containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set"#,
            ),
            (
                json!({"securityContext": {"seLinuxOptions": bad_pod}, "containers": containers.as_array().unwrap()[..4]}),
                r#"pod set forbidden securityContext.seLinuxOptions: type "foo"; user may not be set; role may not be set"#,
            ),
            (
                json!({"securityContext": {"seLinuxOptions": {}}, "containers": containers}),
                r#"containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: type "bar"; user may not be set; role may not be set"#,
            ),
            (
                json!({"securityContext": {"seLinuxOptions": {"type": "bad"}}}),
                r#"pod set forbidden securityContext.seLinuxOptions: type "bad""#,
            ),
            (
                json!({"securityContext": {"seLinuxOptions": {"user": "bad"}}}),
                "pod set forbidden securityContext.seLinuxOptions: user may not be set",
            ),
            (
                json!({"securityContext": {"seLinuxOptions": {"role": "bad"}}}),
                "pod set forbidden securityContext.seLinuxOptions: role may not be set",
            ),
        ];
        for (spec, detail) in cases {
            assert_fails(run(se_linux_options_1_31, spec), "seLinuxOptions", detail);
        }
        // container_engine_t is allowed from 1.31 only.
        let engine = json!({"containers": [{"name": "d", "securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}}]});
        assert_passes(run(se_linux_options_1_31, engine.clone()));
        assert_fails(
            run(se_linux_options_1_0, engine),
            "seLinuxOptions",
            r#"container "d" set forbidden securityContext.seLinuxOptions: type "container_engine_t""#,
        );
        assert_passes(run(
            se_linux_options_1_0,
            json!({"securityContext": {"seLinuxOptions": {"type": "container_t", "level": "s0"}}}),
        ));
    }

    // --- seccompProfile.

    #[test]
    fn seccomp_baseline_annotations() {
        let spec = json!({"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]});
        assert_fails(
            run_with(seccomp_baseline_1_0, json!({"annotations": {SECCOMP_POD_ANNOTATION: "unconfined"}}), json!({})),
            "seccompProfile",
            r#"forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined""#,
        );
        let containers = json!({"annotations": {
            "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
            "container.seccomp.security.alpha.kubernetes.io/b": "unknown"
        }});
        assert_fails(
            run_with(seccomp_baseline_1_0, containers, spec.clone()),
            "seccompProfile",
            r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", container.seccomp.security.alpha.kubernetes.io/b="unknown""#,
        );
        let both = json!({"annotations": {
            "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
            "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
            "container.seccomp.security.alpha.kubernetes.io/b": "unknown",
            "container.seccomp.security.alpha.kubernetes.io/z": "unconfined"
        }});
        assert_fails(
            run_with(seccomp_baseline_1_0, both, spec.clone()),
            "seccompProfile",
            r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", container.seccomp.security.alpha.kubernetes.io/b="unknown", seccomp.security.alpha.kubernetes.io/pod="unconfined""#,
        );
        let fine = json!({"annotations": {
            "seccomp.security.alpha.kubernetes.io/pod": "docker/default",
            "container.seccomp.security.alpha.kubernetes.io/a": "runtime/default",
            "container.seccomp.security.alpha.kubernetes.io/b": "localhost/profile.json"
        }});
        assert_passes(run_with(seccomp_baseline_1_0, fine, spec));
    }

    fn seccomp_containers() -> Value {
        json!([
            {"name": "a", "securityContext": null},
            {"name": "b", "securityContext": {}},
            {"name": "c", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
            {"name": "d", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
            {"name": "e", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}},
            {"name": "f", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}
        ])
    }

    #[test]
    fn seccomp_fields() {
        let unconfined_pod = json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": [{"name": "a", "securityContext": null}]});
        let bad_containers = json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}, "containers": seccomp_containers()});
        let bad_both =
            json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": seccomp_containers()});
        for check in [seccomp_baseline_1_19 as CheckFn, seccomp_restricted_1_19, seccomp_restricted_1_25] {
            assert_fails(
                run(check, unconfined_pod.clone()),
                "seccompProfile",
                r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#,
            );
            assert_fails(
                run(check, bad_containers.clone()),
                "seccompProfile",
                r#"containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#,
            );
            assert_fails(
                run(check, bad_both.clone()),
                "seccompProfile",
                r#"pod and containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#,
            );
        }
        assert_passes(run(seccomp_baseline_1_19, json!({"containers": [{"name": "a"}]})));
        assert_passes(run(
            seccomp_baseline_1_19,
            json!({"securityContext": {"seccompProfile": {"type": "Localhost"}}}),
        ));
    }

    #[test]
    fn seccomp_restricted_requires_a_profile() {
        let implicit = json!({"containers": [
            {"name": "a", "securityContext": null},
            {"name": "b", "securityContext": {}},
            {"name": "d", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}},
            {"name": "e", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}
        ]});
        for check in [seccomp_restricted_1_19 as CheckFn, seccomp_restricted_1_25] {
            assert_fails(
                run(check, json!({"containers": [{"name": "a"}]})),
                "seccompProfile",
                r#"pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
            );
            assert_fails(
                run(check, implicit.clone()),
                "seccompProfile",
                r#"pod or containers "a", "b" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
            );
            assert_passes(run(
                check,
                json!({"securityContext": {"seccompProfile": {"type": "Localhost"}}, "containers": [{"name": "a"}]}),
            ));
        }
        let windows = json!({"os": {"name": "windows"}, "containers": [{"name": "a"}]});
        assert_passes(run(seccomp_restricted_1_25, windows.clone()));
        assert!(run(seccomp_restricted_1_19, windows).is_some());
        assert_fails(
            run(seccomp_restricted_1_25, json!({"os": {"name": "linux"}, "containers": [{"name": "a"}]})),
            "seccompProfile",
            r#"pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
        );
        // An empty profile type is a forbidden value, shown as "".
        assert_fails(
            run(seccomp_restricted_1_25, json!({"securityContext": {"seccompProfile": {}}})),
            "seccompProfile",
            r#"pod must not set securityContext.seccompProfile.type to """#,
        );
    }

    // --- sysctls.

    fn sysctl_pod(names: &[&str]) -> Value {
        let sysctls: Vec<Value> = names.iter().map(|n| json!({"name": n, "value": "1"})).collect();
        json!({"securityContext": {"sysctls": sysctls}})
    }

    #[test]
    fn sysctls_by_version() {
        let revisions: [(CheckFn, u32); 4] =
            [(sysctls_1_0, 0), (sysctls_1_27, 27), (sysctls_1_29, 29), (sysctls_1_32, 32)];
        let added_at = [
            ("kernel.shm_rmid_forced", 0),
            ("net.ipv4.ip_unprivileged_port_start", 0),
            ("net.ipv4.ip_local_reserved_ports", 27),
            ("net.ipv4.tcp_keepalive_time", 29),
            ("net.ipv4.tcp_fin_timeout", 29),
            ("net.ipv4.tcp_keepalive_intvl", 29),
            ("net.ipv4.tcp_keepalive_probes", 29),
            ("net.ipv4.tcp_rmem", 32),
            ("net.ipv4.tcp_wmem", 32),
        ];
        for (check, since) in revisions {
            assert_fails(run(check, sysctl_pod(&["a", "b"])), "forbidden sysctls", "a, b");
            for (sysctl, added) in added_at {
                let result = run(check, sysctl_pod(&[sysctl]));
                if added <= since {
                    assert_passes(result);
                } else {
                    assert_fails(result, "forbidden sysctls", sysctl);
                }
            }
        }
        assert_fails(
            run(sysctls_1_32, sysctl_pod(&["kernel.msgmax", "net.ipv4.tcp_rmem", "kernel.msgmax"])),
            "forbidden sysctls",
            "kernel.msgmax, kernel.msgmax",
        );
    }

    // --- windowsHostProcess.

    #[test]
    fn windows_host_process() {
        let spec = json!({
            "securityContext": {"windowsOptions": {"hostProcess": true}},
            "containers": [
                {"name": "a", "securityContext": null},
                {"name": "b", "securityContext": {}},
                {"name": "c", "securityContext": {"windowsOptions": {}}},
                {"name": "d", "securityContext": {"windowsOptions": {"hostProcess": false}}},
                {"name": "e", "securityContext": {"windowsOptions": {"hostProcess": true}}},
                {"name": "f", "securityContext": {"windowsOptions": {"hostProcess": true}}}
            ]
        });
        assert_fails(
            run(windows_host_process_1_0, spec),
            "hostProcess",
            r#"pod and containers "e", "f" must not set securityContext.windowsOptions.hostProcess=true"#,
        );
        let container_only =
            json!({"containers": [{"name": "e", "securityContext": {"windowsOptions": {"hostProcess": true}}}]});
        assert_fails(
            run(windows_host_process_1_0, container_only),
            "hostProcess",
            r#"container "e" must not set securityContext.windowsOptions.hostProcess=true"#,
        );
        assert_passes(run(
            windows_host_process_1_0,
            json!({"securityContext": {"windowsOptions": {"hostProcess": false}}}),
        ));
    }
}
