//! Storage keys, laid out as kube-apiserver lays them out in etcd.
//!
//! `<prefix>/<resource path>/<namespace>/<name>` for namespaced resources and
//! `<prefix>/<resource path>/<name>` for cluster-scoped ones, where the prefix is
//! `--etcd-prefix` (`/registry` by default) and the resource path is kube-apiserver's for built-in
//! types (`pods`, `deployments`, `services/specs`, `minions` for nodes,
//! `apiextensions.k8s.io/customresourcedefinitions`…) and `<group>/<plural>` for custom resources
//! (see [`ResourceInfo::storage_path`](crate::registry::ResourceInfo::storage_path)).
//!
//! Invariant: [`KeyLayout::object_key`] and [`KeyLayout::parse`] are inverse for every served
//! resource; a key that parses names exactly one resource.

use crate::registry::ResourceInfo;

/// The key prefix of one server (kube-apiserver's `--etcd-prefix`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLayout {
    prefix: String,
}

impl Default for KeyLayout {
    fn default() -> Self {
        KeyLayout::new("/registry")
    }
}

impl KeyLayout {
    /// A layout under `prefix` (a trailing `/` is ignored).
    pub fn new(prefix: &str) -> Self {
        let p = prefix.trim_end_matches('/');
        let prefix = if p.starts_with('/') || p.is_empty() { p.to_string() } else { format!("/{p}") };
        KeyLayout { prefix }
    }

    /// The prefix, without a trailing `/`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Every key of this server starts with this (`<prefix>/`).
    pub fn root(&self) -> String {
        format!("{}/", self.prefix)
    }

    /// The prefix of every key of a resource (`<prefix>/<path>/`).
    pub fn resource_prefix(&self, info: &ResourceInfo) -> String {
        format!("{}/{}/", self.prefix, info.storage_path)
    }

    /// The prefix of a resource's keys in one namespace (`<prefix>/<path>/<ns>/`), or of all its
    /// keys when `ns` is None or the resource is cluster-scoped.
    pub fn list_prefix(&self, info: &ResourceInfo, ns: Option<&str>) -> String {
        match ns {
            Some(ns) if info.namespaced => format!("{}/{}/{ns}/", self.prefix, info.storage_path),
            _ => self.resource_prefix(info),
        }
    }

    /// The key of one object.
    pub fn object_key(&self, info: &ResourceInfo, ns: &str, name: &str) -> String {
        if info.namespaced {
            format!("{}/{}/{ns}/{name}", self.prefix, info.storage_path)
        } else {
            format!("{}/{}/{name}", self.prefix, info.storage_path)
        }
    }

    /// The part of `key` after the resource prefix (`<ns>/<name>` or `<name>`) if `key` belongs
    /// to `info` and has the right number of segments.
    pub fn object_part<'k>(&self, info: &ResourceInfo, key: &'k str) -> Option<&'k str> {
        let rest = key.strip_prefix(self.prefix.as_str())?.strip_prefix('/')?;
        let rest = rest.strip_prefix(info.storage_path.as_str())?.strip_prefix('/')?;
        let segments = rest.split('/').count();
        let want = if info.namespaced { 2 } else { 1 };
        (segments == want && rest.split('/').all(|s| !s.is_empty())).then_some(rest)
    }

    /// Splits a key into (namespace, name) for `info` ("" namespace for cluster-scoped).
    pub fn parse<'k>(&self, info: &ResourceInfo, key: &'k str) -> Option<(&'k str, &'k str)> {
        let rest = self.object_part(info, key)?;
        Some(match rest.split_once('/') {
            Some((ns, name)) => (ns, name),
            None => ("", rest),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn kube_apiserver_layout() {
        let r = Registry::with_defaults();
        let l = KeyLayout::default();
        let key = |res: &str, ns: &str, name: &str| l.object_key(r.lookup(res).unwrap(), ns, name);
        assert_eq!(key("pods", "default", "a"), "/registry/pods/default/a");
        assert_eq!(key("namespaces", "", "default"), "/registry/namespaces/default");
        assert_eq!(key("nodes", "", "n1"), "/registry/minions/n1");
        assert_eq!(key("services", "default", "web"), "/registry/services/specs/default/web");
        assert_eq!(key("deployments.apps", "x", "d"), "/registry/deployments/x/d");
        assert_eq!(key("leases", "kube-system", "l"), "/registry/leases/kube-system/l");
        let custom = ResourceInfo::new("demo.example.org", "v1", "gadgets", "Gadget", true);
        assert_eq!(l.object_key(&custom, "ns", "g"), "/registry/demo.example.org/gadgets/ns/g");
        let pods = r.lookup("pods").unwrap();
        assert_eq!(l.parse(pods, "/registry/pods/default/a"), Some(("default", "a")));
        assert_eq!(l.parse(pods, "/registry/pods/default"), None);
        assert_eq!(l.parse(pods, "/registry/pods/default/a/b"), None);
        assert_eq!(l.parse(pods, "/registry/podsx/default/a"), None);
        let ns = r.lookup("namespaces").unwrap();
        assert_eq!(l.parse(ns, "/registry/namespaces/default"), Some(("", "default")));
        assert_eq!(KeyLayout::new("tenant-a/registry/").root(), "/tenant-a/registry/");
        assert_eq!(l.list_prefix(pods, Some("default")), "/registry/pods/default/");
        assert_eq!(l.list_prefix(ns, Some("default")), "/registry/namespaces/");
    }
}
