//! Which FlowSchema and PriorityLevelConfiguration a request is classified under, as
//! kube-apiserver's priority-and-fairness filter classifies it, for the
//! `X-Kubernetes-PF-FlowSchema-UID` and `X-Kubernetes-PF-PriorityLevel-UID` headers of its
//! answer. The server classifies but does not queue or reject: every request is served as it
//! comes.
//!
//! Invariants, as kube's filter holds them:
//! - schemas are tried by matching precedence, then name; the first whose rules match wins; a
//!   schema whose priority level is missing or not whole ([`crate::flowcontrol_status`]) is
//!   passed over; without a usable `exempt` schema kube's own comes first, without a usable
//!   `catch-all` kube's own comes last, and such a schema that is not stored has no UID (the
//!   header is empty); a mandatory level deleted keeps the UID it had until it is stored again
//!   (none if it never was); a request nothing matches falls under `catch-all`;
//! - a rule matches when one of its subjects is the requester (a user or group named `*` is
//!   anyone; a service account named `*` is any of its namespace) and, for a resource request,
//!   one of its resource rules covers the verb, group, resource (or `resource/subresource`) and
//!   namespace (a request without one needs `clusterScope`), for any other one of its
//!   non-resource rules covers the verb and path (`*` alone is any; a URL covers itself and the
//!   paths below it); a list holding `*` alone is anything;
//! - long-running requests but watches (connections to pods, proxies) are not classified;
//! - the compiled schemas are rebuilt only when FlowSchemas or PriorityLevelConfigurations
//!   changed (or the cache was rebuilt).

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::watch;

use crate::flowcontrol::{FLOW_SCHEMAS, GROUP, PRIORITY_LEVELS, text};
use crate::rbac::User;
use crate::request_info::RequestInfo;
use crate::selector::Selectors;
use crate::store::Store;

/// The header naming the FlowSchema a request was classified under.
pub(crate) const FLOW_SCHEMA_HEADER: &str = "x-kubernetes-pf-flowschema-uid";
/// The header naming the priority level a request was classified under.
pub(crate) const PRIORITY_LEVEL_HEADER: &str = "x-kubernetes-pf-prioritylevel-uid";

/// The UIDs a request was classified under (empty for kube's own mandatory objects when they are
/// not stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Classification {
    pub flow_schema_uid: String,
    pub priority_level_uid: String,
}

/// One subject of a rule.
#[derive(Debug)]
enum Subject {
    User(String),
    Group(String),
    /// A service account by the prefix of its users' names (`system:serviceaccount:<ns>:`).
    ServiceAccount {
        prefix: String,
        name: String,
    },
    /// A kind kube does not know: never matches.
    Other,
}

#[derive(Debug)]
struct ResourceRule {
    verbs: Vec<String>,
    groups: Vec<String>,
    resources: Vec<String>,
    cluster_scope: bool,
    namespaces: Vec<String>,
}

#[derive(Debug)]
struct NonResourceRule {
    verbs: Vec<String>,
    /// Each URL with the prefix of the paths below it (a trailing `*` dropped, ending in `/`).
    urls: Vec<(String, String)>,
}

#[derive(Debug)]
struct Rule {
    subjects: Vec<Subject>,
    resource: Vec<ResourceRule>,
    non_resource: Vec<NonResourceRule>,
}

#[derive(Debug)]
struct Schema {
    name: String,
    uid: String,
    level_uid: String,
    rules: Vec<Rule>,
}

/// The usable schemas in the order they are tried.
#[derive(Debug, Default)]
struct Compiled {
    schemas: Vec<Schema>,
    /// The UIDs of the mandatory levels (`exempt`, `catch-all`) last stored, kept while they
    /// are not (kube goes on using a deleted mandatory level until it is back).
    mandatory_levels: Vec<(String, String)>,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    crate::object::strings(v.get(key))
}

/// kube's `containsString`: `x` is in `list`, or `list` is the wildcard alone.
fn covers(list: &[String], x: &str, wildcard: &str) -> bool {
    (list.len() == 1 && list[0] == wildcard) || list.iter().any(|y| y == x)
}

impl Subject {
    fn of(v: &Value) -> Subject {
        let name = |k: &str| v.get(k).filter(|m| m.is_object()).map(|m| text(m, "name").to_string());
        match (text(v, "kind"), v.get("serviceAccount").filter(|a| a.is_object())) {
            ("User", _) => name("user").map_or(Subject::Other, Subject::User),
            ("Group", _) => name("group").map_or(Subject::Other, Subject::Group),
            ("ServiceAccount", Some(a)) => {
                let prefix = format!("system:serviceaccount:{}:", text(a, "namespace"));
                Subject::ServiceAccount { prefix, name: text(a, "name").into() }
            }
            _ => Subject::Other,
        }
    }

    fn matches(&self, user: &User) -> bool {
        match self {
            Subject::User(name) => name == "*" || *name == user.name,
            Subject::Group(name) => name == "*" || user.in_group(name),
            Subject::ServiceAccount { prefix, name } => match name.as_str() {
                "*" => user.name.starts_with(prefix.as_str()),
                _ => user.name.strip_prefix(prefix.as_str()) == Some(name),
            },
            Subject::Other => false,
        }
    }
}

impl ResourceRule {
    /// Whether the rule covers the request `r` for `resource` (its `resource/subresource`).
    fn matches(&self, r: &RequestInfo, resource: &str) -> bool {
        covers(&self.verbs, &r.verb, "*")
            && covers(&self.resources, resource, "*")
            && covers(&self.groups, &r.group, "*")
            && match r.namespace.is_empty() {
                true => self.cluster_scope,
                false => covers(&self.namespaces, &r.namespace, "*"),
            }
    }
}

impl NonResourceRule {
    fn matches(&self, r: &RequestInfo) -> bool {
        covers(&self.verbs, &r.verb, "*")
            && self.urls.iter().any(|(u, prefix)| u == "*" || *u == r.path || r.path.starts_with(prefix.as_str()))
    }
}

impl Rule {
    fn of(v: &Value) -> Rule {
        let list = |k: &str| v.get(k).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        Rule {
            subjects: list("subjects").iter().map(Subject::of).collect(),
            resource: list("resourceRules")
                .iter()
                .map(|r| ResourceRule {
                    verbs: strings(r, "verbs"),
                    groups: strings(r, "apiGroups"),
                    resources: strings(r, "resources"),
                    cluster_scope: r.get("clusterScope").and_then(Value::as_bool).unwrap_or(false),
                    namespaces: strings(r, "namespaces"),
                })
                .collect(),
            non_resource: list("nonResourceRules")
                .iter()
                .map(|r| NonResourceRule {
                    verbs: strings(r, "verbs"),
                    urls: strings(r, "nonResourceURLs")
                        .into_iter()
                        .map(|u| {
                            let mut prefix = u.strip_suffix('*').unwrap_or(&u).to_string();
                            if !prefix.ends_with('/') {
                                prefix.push('/');
                            }
                            (u, prefix)
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    fn matches(&self, user: &User, r: &RequestInfo, resource: &str) -> bool {
        self.subjects.iter().any(|s| s.matches(user))
            && match r.resource_request {
                true => self.resource.iter().any(|x| x.matches(r, resource)),
                false => self.non_resource.iter().any(|x| x.matches(r)),
            }
    }
}

impl Compiled {
    /// The usable schemas of `schemas` over the levels `levels`, in the order they are tried;
    /// `before` the schemas compiled last.
    fn of(schemas: &[Value], levels: &[Value], before: Option<&Compiled>) -> Compiled {
        let uid = |v: &Value| v.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").to_string();
        let name = |v: &Value| v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
        let whole: Vec<(String, String)> =
            levels.iter().filter(|l| crate::flowcontrol_status::is_whole(l)).map(|l| (name(l), uid(l))).collect();
        let level_uid = |level: &str| whole.iter().find(|(n, _)| n == level).map(|(_, u)| u.clone());
        let mandatory_levels: Vec<(String, String)> = ["exempt", "catch-all"]
            .iter()
            .filter_map(|n| {
                let kept = before.and_then(|b| b.mandatory_levels.iter().find(|(m, _)| m == n)).map(|(_, u)| u.clone());
                Some((n.to_string(), level_uid(n).or(kept)?))
            })
            .collect();
        let mut usable: Vec<(i64, String, Schema)> = Vec::new();
        for s in schemas {
            let level = s.pointer("/spec/priorityLevelConfiguration/name").and_then(Value::as_str).unwrap_or("");
            let Some(level_uid) = level_uid(level) else { continue };
            let precedence = s.pointer("/spec/matchingPrecedence").and_then(Value::as_i64).unwrap_or(0);
            let rules = s.pointer("/spec/rules").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            let schema = Schema { name: name(s), uid: uid(s), level_uid, rules: rules.iter().map(Rule::of).collect() };
            usable.push((precedence, name(s), schema));
        }
        usable.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let has = |n: &str| usable.iter().any(|(_, name, _)| name == n);
        // kube's own mandatory schemas where none usable is stored (their levels too, if not stored).
        let imagined = |n: &str| {
            let fixed = crate::flowcontrol_bootstrap::mandatory_flow_schema(n).unwrap_or_default();
            let rules = fixed.pointer("/spec/rules").and_then(Value::as_array).cloned().unwrap_or_default();
            let level_uid = mandatory_levels.iter().find(|(m, _)| m == n).map(|(_, u)| u.clone()).unwrap_or_default();
            Schema { name: n.to_string(), uid: String::new(), level_uid, rules: rules.iter().map(Rule::of).collect() }
        };
        let mut out: Vec<Schema> = Vec::new();
        if !has("exempt") {
            out.push(imagined("exempt"));
        }
        let catch_all = (!has("catch-all")).then(|| imagined("catch-all"));
        out.extend(usable.into_iter().map(|(_, _, s)| s));
        out.extend(catch_all);
        Compiled { schemas: out, mandatory_levels }
    }

    fn classify(&self, user: &User, r: &RequestInfo) -> Option<Classification> {
        let resource = match r.subresource.is_empty() {
            true => std::borrow::Cow::Borrowed(r.resource.as_str()),
            false => std::borrow::Cow::Owned(format!("{}/{}", r.resource, r.subresource)),
        };
        // Nothing matched: the catch-all schema.
        let s = self
            .schemas
            .iter()
            .find(|s| s.rules.iter().any(|rule| rule.matches(user, r, &resource)))
            .or_else(|| self.schemas.iter().find(|s| s.name == "catch-all"))?;
        Some(Classification { flow_schema_uid: s.uid.clone(), priority_level_uid: s.level_uid.clone() })
    }
}

/// What the compiled schemas were built from: the last revisions of the two kinds and the cache's
/// rebuild count.
type Versions = (u64, u64, u64);

struct State {
    schemas: watch::Receiver<u64>,
    levels: watch::Receiver<u64>,
    epoch: watch::Receiver<u64>,
    compiled: Option<(Versions, Arc<Compiled>)>,
}

/// The server's classifier: none until the two kinds are served and their schemas read.
#[derive(Default)]
pub(crate) struct Classifier {
    state: Mutex<Option<State>>,
}

impl Classifier {
    /// Classifies a request of `user` (a `userInfo` value): None when the kinds are not served,
    /// the cache is not ready, or the request is long-running and not a watch.
    pub(crate) fn classify(&self, store: &Store, user: &Value, r: &RequestInfo) -> Option<Classification> {
        if r.is_long_running() && r.verb != "watch" {
            return None;
        }
        let compiled = self.compiled(store)?;
        compiled.classify(&User::of(user), r)
    }

    fn compiled(&self, store: &Store) -> Option<Arc<Compiled>> {
        let cache = store.cache();
        cache.check_ready().ok()?;
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            let registry = store.registry();
            let schemas = registry.find(GROUP, "v1", FLOW_SCHEMAS)?;
            let levels = registry.find(GROUP, "v1", PRIORITY_LEVELS)?;
            *guard = Some(State {
                schemas: cache.subscribe(schemas).ok()?,
                levels: cache.subscribe(levels).ok()?,
                epoch: cache.reset_epoch(),
                compiled: None,
            });
        }
        let state = guard.as_mut()?;
        let now = (*state.schemas.borrow(), *state.levels.borrow(), *state.epoch.borrow());
        if let Some((at, compiled)) = &state.compiled
            && *at == now
        {
            return Some(compiled.clone());
        }
        let registry = store.registry();
        let values = |plural: &str| -> Option<Vec<Value>> {
            let info = registry.find(GROUP, "v1", plural)?;
            let (_, objects) = cache.snapshot(info, None, &Selectors::default()).ok()?;
            Some(objects.iter().map(|o| o.value()).collect())
        };
        let before = state.compiled.as_ref().map(|(_, c)| c.as_ref());
        let compiled = Arc::new(Compiled::of(&values(FLOW_SCHEMAS)?, &values(PRIORITY_LEVELS)?, before));
        state.compiled = Some((now, compiled.clone()));
        Some(compiled)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::flowcontrol_bootstrap::{
        mandatory_flow_schemas, mandatory_priority_levels, suggested_flow_schemas, suggested_priority_levels,
    };

    fn stored(mut list: Vec<Value>) -> Vec<Value> {
        for o in &mut list {
            let name = o["metadata"]["name"].as_str().unwrap().to_string();
            o["metadata"]["uid"] = json!(format!("uid-{name}"));
        }
        list
    }

    fn bootstrap() -> Compiled {
        let schemas = stored([mandatory_flow_schemas(), suggested_flow_schemas()].concat());
        let levels = stored([mandatory_priority_levels(), suggested_priority_levels()].concat());
        Compiled::of(&schemas, &levels, None)
    }

    fn user(name: &str, groups: &[&str]) -> User {
        User { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect() }
    }

    fn resource(verb: &str, group: &str, resource: &str, namespace: &str) -> RequestInfo {
        RequestInfo {
            resource_request: true,
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            ..Default::default()
        }
    }

    fn path(verb: &str, path: &str) -> RequestInfo {
        RequestInfo { verb: verb.into(), path: path.into(), ..Default::default() }
    }

    fn schema_of(c: &Compiled, u: &User, r: &RequestInfo) -> String {
        c.classify(u, r).unwrap().flow_schema_uid
    }

    #[test]
    fn requests_fall_under_kubes_schemas() {
        let c = bootstrap();
        let admin = user("admin", &["system:masters", "system:authenticated"]);
        assert_eq!(schema_of(&c, &admin, &resource("list", "", "pods", "default")), "uid-exempt");
        let alice = user("alice", &["system:authenticated"]);
        assert_eq!(schema_of(&c, &alice, &path("get", "/healthz")), "uid-probes");
        assert_eq!(
            schema_of(&c, &alice, &path("get", "/readyz/ping")),
            "uid-probes",
            "a URL covers the paths below it"
        );
        assert_eq!(schema_of(&c, &alice, &path("post", "/healthz")), "uid-global-default");
        assert_eq!(schema_of(&c, &alice, &resource("get", "", "pods", "default")), "uid-global-default");
        let node = user("system:node:n1", &["system:nodes", "system:authenticated"]);
        assert_eq!(schema_of(&c, &node, &resource("update", "", "nodes", "")), "uid-system-node-high");
        assert_eq!(schema_of(&c, &node, &resource("get", "", "pods", "default")), "uid-system-nodes");
        let controller = user("system:serviceaccount:kube-system:deployment-controller", &["system:serviceaccounts"]);
        assert_eq!(
            schema_of(&c, &controller, &resource("update", "coordination.k8s.io", "leases", "kube-system")),
            "uid-system-leader-election"
        );
        assert_eq!(
            schema_of(&c, &controller, &resource("list", "apps", "deployments", "")),
            "uid-kube-system-service-accounts"
        );
        let operator = user("system:serviceaccount:ops:operator", &["system:serviceaccounts", "system:authenticated"]);
        let classified = c.classify(&operator, &resource("watch", "apps", "deployments", "ops")).unwrap();
        assert_eq!(
            classified,
            Classification {
                flow_schema_uid: "uid-service-accounts".into(),
                priority_level_uid: "uid-workload-low".into()
            }
        );
    }

    #[test]
    fn without_usable_mandatory_schemas_kubes_own_are_used() {
        // Only a schema whose level is missing: it is passed over, and kube's catch-all (not
        // stored) takes the request, under the stored catch-all level.
        let schemas =
            stored(vec![json!({"metadata": {"name": "mine"}, "spec": {"priorityLevelConfiguration": {"name": "gone"},
            "matchingPrecedence": 10, "rules": [{"subjects": [{"kind": "Group", "group": {"name": "*"}}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}})]);
        let levels = stored(mandatory_priority_levels());
        let c = Compiled::of(&schemas, &levels, None);
        let alice = user("alice", &["system:authenticated"]);
        assert_eq!(
            c.classify(&alice, &path("get", "/version")).unwrap(),
            Classification { flow_schema_uid: String::new(), priority_level_uid: "uid-catch-all".into() }
        );
        let admin = user("admin", &["system:masters"]);
        assert_eq!(c.classify(&admin, &path("get", "/version")).unwrap().priority_level_uid, "uid-exempt");
    }

    #[test]
    fn a_wildcard_counts_only_alone() {
        assert!(covers(&["*".to_string()], "get", "*"));
        assert!(!covers(&["*".to_string(), "list".to_string()], "get", "*"));
    }
}
