//! What a request asks, read from its method, path and query alone, as kube-apiserver's
//! `RequestInfoFactory` reads it before any route is chosen: the verb (`get`, `list`, `watch`,
//! `create`, `update`, `patch`, `delete`, `deletecollection`), API group and version, namespace,
//! resource, subresource and name of a resource request, or the path and lowercased method of a
//! non-resource request (`/version`, `/healthz`, `/api`, `/apis/apps`, `/openapi/v3`…).
//!
//! Invariants: the reading depends on nothing the server serves, so a request for a resource that
//! does not exist is authorized (and refused) like any other; a path needs an API prefix, a
//! group (under `/apis`), a version and one part more to be a resource request; `watch` in the
//! path or `?watch` (anything but `false` and `0`) makes a read a watch; a list or watch that
//! selects one name with `fieldSelector=metadata.name=<name>` is a request for that name; a
//! DELETE without a name is `deletecollection`.

/// The request's attributes, as kube's `RequestInfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RequestInfo {
    /// Whether the request is for a resource (or else for a non-resource path).
    pub resource_request: bool,
    /// The request's path.
    pub path: String,
    /// The verb the request performs.
    pub verb: String,
    /// The API group ("" for the core group).
    pub group: String,
    /// The API version.
    pub version: String,
    /// The namespace ("" when none).
    pub namespace: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource ("" when none).
    pub subresource: String,
    /// The name ("" when none).
    pub name: String,
}

/// The subresources that are connections (kube's `CONNECT` verb), long-running as watches are.
pub(crate) const CONNECT_SUBRESOURCES: [&str; 5] = ["log", "proxy", "attach", "exec", "portforward"];

impl RequestInfo {
    /// Whether the request is long-running, as kube's `BasicLongRunningRequestCheck` judges it
    /// (verbs `watch` and `proxy`, the connection subresources, the profiler's paths): no
    /// deadline, counted apart.
    pub(crate) fn is_long_running(&self) -> bool {
        ["watch", "proxy"].contains(&self.verb.as_str())
            || (self.resource_request && CONNECT_SUBRESOURCES.contains(&self.subresource.as_str()))
            || (!self.resource_request && self.path.starts_with("/debug/pprof/"))
    }
}

/// Reads a request's attributes from its method, (percent-decoded) path segments and query.
pub(crate) fn read(method: &str, path: &str, segments: &[&str], query: &[(String, String)]) -> RequestInfo {
    let mut info = RequestInfo { path: path.to_string(), verb: method.to_ascii_lowercase(), ..Default::default() };
    let mut parts: &[&str] = segments;
    let grouped = match parts.first() {
        Some(&"api") => false,
        Some(&"apis") => true,
        _ => return info,
    };
    if parts.len() < 3 || (grouped && parts.len() < 4) {
        return info;
    }
    parts = &parts[1..];
    if grouped {
        info.group = parts[0].to_string();
        parts = &parts[1..];
    }
    info.resource_request = true;
    info.version = parts[0].to_string();
    parts = &parts[1..];
    if matches!(parts[0], "watch" | "proxy") {
        if parts.len() < 2 {
            info.verb = String::new();
            return info;
        }
        info.verb = parts[0].to_string();
        parts = &parts[1..];
    } else {
        info.verb = match method {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "",
        }
        .to_string();
    }
    if parts[0] == "namespaces" && parts.len() > 1 {
        info.namespace = parts[1].to_string();
        if parts.len() > 2 && !matches!(parts[2], "status" | "finalize") {
            parts = &parts[2..];
        }
    }
    if parts.len() >= 3 && info.verb != "proxy" {
        info.subresource = parts[2].to_string();
    }
    if parts.len() >= 2 {
        info.name = parts[1].to_string();
    }
    info.resource = parts[0].to_string();
    if info.name.is_empty() && info.verb == "get" {
        let watch = query.iter().find(|(k, _)| k == "watch").is_some_and(|(_, v)| crate::body::query_bool(v));
        info.verb = if watch { "watch" } else { "list" }.to_string();
        if let Some(name) = selected_name(query) {
            info.name = name;
        }
    }
    if info.name.is_empty() && info.verb == "delete" {
        info.verb = "deletecollection".to_string();
    }
    info
}

/// The name a field selector requires exactly (the first `metadata.name=x` or
/// `metadata.name==x`, alone or among other terms), when it is a valid path segment.
fn selected_name(query: &[(String, String)]) -> Option<String> {
    let selector = query.iter().find(|(k, _)| k == "fieldSelector").map(|(_, v)| v.as_str())?;
    let found = selector.split(',').find_map(|term| {
        let term = term.trim();
        term.strip_prefix("metadata.name==").or_else(|| term.strip_prefix("metadata.name=")).map(str::to_string)
    });
    found.filter(|n| !n.is_empty() && n != "." && n != ".." && !n.contains('/') && !n.contains('%'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(method: &str, path: &str, query: &[(&str, &str)]) -> RequestInfo {
        let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let query: Vec<(String, String)> = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        read(method, path, &segs, &query)
    }

    #[test]
    fn resource_requests_are_read_as_kube_reads_them() {
        let r = of("GET", "/api/v1/namespaces/ns/pods/p", &[]);
        assert_eq!(
            (r.verb.as_str(), r.namespace.as_str(), r.resource.as_str(), r.name.as_str()),
            ("get", "ns", "pods", "p")
        );
        assert!(r.resource_request);
        let r = of("GET", "/apis/apps/v1/namespaces/ns/deployments", &[("watch", "true")]);
        assert_eq!((r.verb.as_str(), r.group.as_str(), r.resource.as_str()), ("watch", "apps", "deployments"));
        assert_eq!(of("GET", "/api/v1/pods", &[("watch", "0")]).verb, "list");
        assert_eq!(of("GET", "/api/v1/pods", &[("watch", "False")]).verb, "list");
        let two = [("fieldSelector", "metadata.name=a,metadata.name=b")];
        assert_eq!(of("GET", "/api/v1/pods", &two).name, "a");
        let r = of("GET", "/api/v1/watch/namespaces/ns/pods/p", &[]);
        assert_eq!((r.verb.as_str(), r.name.as_str()), ("watch", "p"));
        let r = of("POST", "/api/v1/namespaces/ns/pods/p/eviction", &[]);
        assert_eq!((r.verb.as_str(), r.subresource.as_str(), r.name.as_str()), ("create", "eviction", "p"));
        assert_eq!(of("DELETE", "/api/v1/namespaces/ns/configmaps", &[]).verb, "deletecollection");
        let r = of("PUT", "/api/v1/namespaces/ns/finalize", &[]);
        assert_eq!((r.resource.as_str(), r.name.as_str(), r.subresource.as_str()), ("namespaces", "ns", "finalize"));
        let r = of("GET", "/api/v1/namespaces/ns", &[]);
        assert_eq!((r.resource.as_str(), r.name.as_str(), r.namespace.as_str()), ("namespaces", "ns", "ns"));
        let r =
            of("GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases", &[("fieldSelector", "metadata.name=lock")]);
        assert_eq!((r.verb.as_str(), r.name.as_str()), ("list", "lock"));
        assert_eq!(of("GET", "/api/v1/pods", &[("fieldSelector", "metadata.name!=x")]).name, "");
    }

    #[test]
    fn short_paths_are_non_resource_requests() {
        for path in ["/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/version", "/openapi/v3/api/v1"] {
            let r = of("GET", path, &[]);
            assert!(!r.resource_request, "{path}");
            assert_eq!((r.verb.as_str(), r.path.as_str()), ("get", path));
        }
    }
}
