//! core/v1 `componentstatuses` (`cs`), deprecated since v1.19 and still served by
//! kube-apiserver v1.35: the health of the control plane's components, probed on every read and
//! never stored.
//!
//! - `scheduler` and `controller-manager`: a GET of `https://127.0.0.1:10259/healthz` and
//!   `…:10257/healthz` (20 s), `True` with the body for a 2xx answer, `False` with Go's words
//!   for a failed request (`Get "https://127.0.0.1:10259/healthz": dial tcp 127.0.0.1:10259:
//!   connect: connection refused`) or `HTTP probe failed with statuscode: <n>`, `Unknown` for a
//!   redirect. Unlike kube's probe, which skips verification, the certificate is verified
//!   against the system's roots: a self-signed one answers `False` with Go's x509 words.
//! - `etcd-0`: a read of `<prefix>/health` from the server's storage, `True` with `ok`, or
//!   `False` with `error getting data from etcd: <err>` in `error`.
//!
//! Invariants: only `get` and `list` are served (a watch is 405, as kube's route table has
//! none; other methods and paths are refused without it); every answer to a GET carries kube's
//! deprecation warning; a list carries no resourceVersion,
//! honours label and field selectors (the items have no labels), and lists the components in
//! the order kube's usually finish (the closed ports first, etcd last); an unknown name is
//! kube's 500 `Component not found: <name>`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::registry::ResourceInfo;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::Store;

/// The resource.
pub(crate) const PLURAL: &str = "componentstatuses";
/// kube's deprecation warning for the kind.
pub(crate) const WARNING: &str = "v1 ComponentStatus is deprecated in v1.19+";
/// How long a probe may take (kube's `probeTimeOut`).
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// The components probed over HTTPS: name and port.
const HTTP_COMPONENTS: [(&str, u16); 2] = [("scheduler", 10259), ("controller-manager", 10257)];
/// The storage's component.
const STORAGE: &str = "etcd-0";
/// The most of a healthy answer's body kept as its message (kube's probe's limit).
const MAX_BODY: usize = 10 * 1024;

/// Whether `info` serves ComponentStatuses.
pub(crate) fn is_component_statuses(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.plural == PLURAL && info.custom.is_none()
}

/// The verbs the resource serves.
pub(crate) const VERBS: &[&str] = &["get", "list"];

/// A component's status: its one `Healthy` condition.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Component {
    metadata: Name,
    conditions: [Condition; 1],
}

#[derive(Debug, Clone, serde::Serialize)]
struct Name {
    name: String,
}

/// A condition as kube writes it: empty message and error left out.
#[derive(Debug, Clone, serde::Serialize)]
struct Condition {
    #[serde(rename = "type")]
    kind: &'static str,
    status: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    error: String,
}

/// An object as kube serializes it: kind and apiVersion first.
#[derive(serde::Serialize)]
struct Object<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    #[serde(flatten)]
    component: &'a Component,
}

#[derive(serde::Serialize)]
struct List<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: Empty,
    items: &'a [Component],
}

#[derive(serde::Serialize)]
struct Empty {}

fn status(name: &str, state: &'static str, message: &str, error: &str) -> Component {
    let condition = Condition { kind: "Healthy", status: state, message: message.into(), error: error.into() };
    Component { metadata: Name { name: name.into() }, conditions: [condition] }
}

impl Component {
    /// The component's name.
    pub(crate) fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The object as JSON, as kube writes it.
    pub(crate) fn json(&self) -> Vec<u8> {
        serde_json::to_vec(&Object { kind: "ComponentStatus", api_version: "v1", component: self }).unwrap_or_default()
    }

    /// The object as a JSON value (without kind and apiVersion, as a list's item).
    pub(crate) fn value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// The list of `items` as JSON, as kube writes it (no resourceVersion, items without kind).
pub(crate) fn list_json(items: &[Component]) -> Vec<u8> {
    serde_json::to_vec(&List { kind: "ComponentStatusList", api_version: "v1", metadata: Empty {}, items })
        .unwrap_or_default()
}

/// kube's HTTP probe of `https://127.0.0.1:<port>/healthz`.
async fn probe_http(name: &str, port: u16) -> Component {
    let url = format!("https://127.0.0.1:{port}/healthz");
    let agent = "kube-probe/1.35";
    let text = |body: &[u8]| String::from_utf8_lossy(&body[..body.len().min(MAX_BODY)]).into_owned();
    match crate::webhook_client::get(&url, agent, PROBE_TIMEOUT).await {
        Err(e) => status(name, "False", &e, ""),
        Ok((code, body)) if (200..300).contains(&code) => status(name, "True", &text(&body), ""),
        Ok((code, body)) if (300..400).contains(&code) => {
            status(name, "Unknown", &format!("Probe terminated redirects, Response body: {}", text(&body)), "")
        }
        Ok((code, _)) => status(name, "False", &format!("HTTP probe failed with statuscode: {code}"), ""),
    }
}

/// kube's storage probe: a read of `<prefix>/health`.
async fn probe_storage(store: &Store) -> Component {
    let key = format!("{}/health", store.cache().layout().prefix());
    match tokio::time::timeout(PROBE_TIMEOUT, store.storage().get(&key)).await {
        Ok(Ok(_)) => status(STORAGE, "True", "ok", ""),
        Ok(Err(e)) => status(STORAGE, "False", "", &format!("error getting data from etcd: {e}")),
        Err(_) => status(STORAGE, "False", "", "error getting data from etcd: context deadline exceeded"),
    }
}

/// Every component's status, probed at once.
async fn all(store: &Store) -> Vec<Component> {
    let (http, storage) = tokio::join!(
        futures_util::future::join_all(HTTP_COMPONENTS.iter().map(|(name, port)| probe_http(name, *port))),
        probe_storage(store)
    );
    http.into_iter().chain([storage]).collect()
}

/// The components `sel` selects (they have no labels; fields are their name and namespace).
pub(crate) async fn list(store: &Store, sel: &Selectors) -> Vec<Component> {
    let selected = |c: &Component| {
        let fields =
            [("metadata.name".to_string(), c.name().to_string()), ("metadata.namespace".into(), String::new())];
        sel.matches(&[], &fields)
    };
    all(store).await.into_iter().filter(selected).collect()
}

/// One component's status; kube's 500 for an unknown name.
pub(crate) async fn get(store: &Store, name: &str) -> Result<Component, ApiError> {
    if let Some((name, port)) = HTTP_COMPONENTS.iter().find(|(n, _)| *n == name) {
        return Ok(probe_http(name, *port).await);
    }
    if name == STORAGE {
        return Ok(probe_storage(store).await);
    }
    Err(ApiError::new(500, "", format!("Component not found: {name}")))
}

/// The Table kube answers for `items`: kube's printer's columns, a row per component carrying
/// what `include` asks of it.
pub(crate) fn table(info: &ResourceInfo, items: &[Component], include: crate::table::IncludeObject) -> Value {
    let rows: Vec<Value> = items
        .iter()
        .map(|c| {
            let v = c.value();
            let object = match include {
                crate::table::IncludeObject::None => Value::Null,
                crate::table::IncludeObject::Metadata => {
                    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": v["metadata"]})
                }
                crate::table::IncludeObject::Object => serde_json::from_slice(&c.json()).unwrap_or_default(),
            };
            json!({"cells": crate::printers::cells(info, &v).unwrap_or_default(), "object": object})
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
        "columnDefinitions": crate::table::columns(info), "rows": rows})
}

/// The PartialObjectMetadata of `items` (a list when `list`), as kube answers metadata-only
/// clients.
pub(crate) fn partial_metadata(items: &[Component], list: bool) -> Value {
    let partial = |c: &Component| json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": c.name()}});
    match (list, items.first()) {
        (false, Some(c)) => partial(c),
        _ => json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": {},
            "items": items.iter().map(partial).collect::<Vec<_>>()}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_and_lists_are_written_as_kube_writes_them() {
        let ok = status("etcd-0", "True", "ok", "");
        assert_eq!(
            String::from_utf8(ok.json()).unwrap(),
            r#"{"kind":"ComponentStatus","apiVersion":"v1","metadata":{"name":"etcd-0"},"conditions":[{"type":"Healthy","status":"True","message":"ok"}]}"#
        );
        let failed = status("etcd-0", "False", "", "error getting data from etcd: x");
        assert_eq!(
            String::from_utf8(list_json(&[failed])).unwrap(),
            r#"{"kind":"ComponentStatusList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"etcd-0"},"conditions":[{"type":"Healthy","status":"False","error":"error getting data from etcd: x"}]}]}"#
        );
    }
}
