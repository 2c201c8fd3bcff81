//! The OpenAPI documents kube-apiserver publishes, built from the registry and the built-in
//! types' schemas: `/openapi/v3` (an index of group-version documents with content hashes),
//! `/openapi/v3/{api/v1 | apis/<group>/<version>}`, and `/openapi/v2`.
//!
//! Clients read them to decide what to do: kubectl checks that each kind's PATCH operation
//! takes `fieldValidation` (then validates on the server), computes client-side apply patches
//! from the kinds' schemas (`x-kubernetes-patch-merge-key`…), and `kubectl explain` walks them.
//! Custom resources' PATCH operations do not list strategic merge patch, so kubectl sends them
//! JSON merge patches, as with kube-apiserver.
//!
//! Invariants: a document's hash is the SHA-512 of its bytes, so a hashed URL names one
//! content forever (served `public, immutable`; a stale hash is redirected to the current
//! one); documents are built once per registry, on first request; every document is
//! self-contained (every schema it references is in its `components`).

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, header};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

use crate::body::{self, Body};
use crate::registry::{Registry, ResourceInfo};
use crate::schema;
use crate::status::ApiError;

/// The media type of kube's protobuf OpenAPI v2 document, as answered.
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// A gnostic `openapi_v2.Document` with only `swagger: "2.0"` and `info` (title Kubernetes,
/// version v1.35.0), protobuf-encoded: clients that insist on v2 in protobuf get a valid
/// document; the schemas are in `/openapi/v3` (and in `/openapi/v2` as JSON).
const V2_PROTOBUF_DOC: &[u8] = b"\x0a\x032.0\x12\x15\x0a\x0aKubernetes\x12\x07v1.35.0";

/// The documents of one registry.
pub(crate) struct OpenApi {
    /// `/openapi/v3`: `{"paths": {"apis/apps/v1": {"serverRelativeURL": …}}}`.
    index: Bytes,
    /// Group-version path (`api/v1`, `apis/apps/v1`) → document.
    docs: BTreeMap<String, Document>,
    /// `/openapi/v2` as JSON: every definition (the operations are in the v3 documents).
    v2: Document,
}

struct Document {
    json: Bytes,
    hash: String,
}

impl Document {
    fn new(v: &Value) -> Self {
        let json = Bytes::from(serde_json::to_vec(v).expect("serializes"));
        let hash = Sha512::digest(&json).iter().map(|b| format!("{b:02X}")).collect();
        Document { json, hash }
    }
}

impl OpenApi {
    /// Builds every document of `reg`.
    pub(crate) fn build(reg: &Registry) -> OpenApi {
        let mut by_gv: BTreeMap<String, Vec<&ResourceInfo>> = BTreeMap::new();
        for r in reg.all() {
            by_gv.entry(gv_path(&r.group, &r.version)).or_default().push(r);
        }
        let mut docs = BTreeMap::new();
        let mut all_schemas = Map::new();
        for (gv, resources) in &by_gv {
            let (paths, schemas) = group_version(resources);
            let doc = json!({
                "openapi": "3.0.0",
                "info": {"title": "Kubernetes", "version": "v1.35.0"},
                "paths": paths,
                "components": {"schemas": schemas, "securitySchemes": security_schemes()},
            });
            all_schemas.extend(schemas);
            docs.insert(gv.clone(), Document::new(&doc));
        }
        let index: Map<String, Value> = docs
            .iter()
            .map(|(gv, d)| (gv.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash={}", d.hash)})))
            .collect();
        let v2 = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.35.0"},
            "paths": {},
            "definitions": to_v2(Value::Object(all_schemas)),
        });
        OpenApi {
            index: Bytes::from(serde_json::to_vec(&json!({"paths": index})).expect("serializes")),
            docs,
            v2: Document::new(&v2),
        }
    }

    /// `GET /openapi/v3`.
    pub(crate) fn index(&self) -> Response<Body> {
        body::respond(200, "text/plain; charset=utf-8", Body::Full(Some(self.index.clone())))
    }

    /// `GET /openapi/v3/<gv>[?hash=…]`.
    pub(crate) fn group_version(
        &self,
        gv: &str,
        hash: Option<&str>,
        headers: &HeaderMap,
    ) -> Result<Response<Body>, ApiError> {
        let doc = self.docs.get(gv).ok_or_else(ApiError::no_route)?;
        if !accepts(headers, &["application/json", "application/*", "*/*"]) {
            return Ok(not_acceptable());
        }
        if let Some(h) = hash
            && h != doc.hash
        {
            let mut r = body::respond(301, "text/html; charset=utf-8", Body::Full(None));
            let to = format!("/openapi/v3/{gv}?hash={}", doc.hash);
            if let Ok(v) = HeaderValue::from_str(&to) {
                r.headers_mut().insert(header::LOCATION, v);
            }
            return Ok(r);
        }
        Ok(serve_document(doc, hash.is_some(), headers))
    }

    /// `GET /openapi/v2`: JSON when asked for, else kube's protobuf media type.
    pub(crate) fn v2(&self, headers: &HeaderMap) -> Response<Body> {
        let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
        if accept.contains("protobuf") {
            let mut r = body::respond(200, V2_PROTOBUF, Body::Full(Some(Bytes::from_static(V2_PROTOBUF_DOC))));
            r.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
            return r;
        }
        if !accepts(headers, &["application/json", "application/*", "*/*"]) {
            return not_acceptable();
        }
        serve_document(&self.v2, false, headers)
    }
}

fn serve_document(doc: &Document, immutable: bool, headers: &HeaderMap) -> Response<Body> {
    let etag = format!("\"{}\"", doc.hash);
    let not_modified = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(etag.as_str());
    let mut r = if not_modified {
        body::respond(304, "application/json", Body::Full(None))
    } else {
        body::respond(200, "application/json", Body::Full(Some(doc.json.clone())))
    };
    let h = r.headers_mut();
    if not_modified {
        h.remove(header::CONTENT_TYPE);
    }
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    if immutable {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, immutable"));
        let expires = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24 * 365);
        let text = jiff::fmt::rfc2822::DateTimePrinter::new().timestamp_to_rfc9110_string(&expires);
        if let Ok(t) = text
            && let Ok(v) = HeaderValue::from_str(&t)
        {
            h.insert(header::EXPIRES, v);
        }
    }
    r
}

fn not_acceptable() -> Response<Body> {
    body::error(&ApiError::new(406, "NotAcceptable", "only the following media types are accepted: application/json"))
}

/// Whether the request's `Accept` takes one of `types` (no header: anything).
fn accepts(headers: &HeaderMap, types: &[&str]) -> bool {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else { return true };
    accept.split(',').map(|t| t.split(';').next().unwrap_or("").trim()).any(|t| t.is_empty() || types.contains(&t))
}

/// `api/v1` or `apis/<group>/<version>`.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

/// The paths and schemas of one group-version document.
fn group_version(resources: &[&ResourceInfo]) -> (Map<String, Value>, Map<String, Value>) {
    let schemas = schema::builtin();
    let mut paths = Map::new();
    let mut roots: BTreeSet<String> = [
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let mut custom = Map::new();
    for r in resources {
        let (kind_schema, list_schema, builtin) = match schemas.name_of(&r.group, &r.version, &r.kind) {
            Some(name) => {
                let list = schemas.name_of(&r.group, &r.version, &format!("{}List", r.kind)).map(String::from);
                roots.insert(name.to_string());
                roots.extend(list.clone());
                (name.to_string(), list, true)
            }
            None => {
                let (kind, list) = custom_schemas(r);
                let name = custom_name(r, &r.kind);
                let list_name = custom_name(r, &format!("{}List", r.kind));
                custom.insert(name.clone(), kind);
                custom.insert(list_name.clone(), list);
                roots.insert("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta".into());
                roots.insert("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta".into());
                (name, Some(list_name), false)
            }
        };
        if r.scale_subresource.is_some() {
            roots.insert("io.k8s.api.autoscaling.v1.Scale".into());
        }
        resource_paths(&mut paths, r, builtin, &kind_schema, list_schema.as_deref());
    }
    let mut components = closure(schemas.definitions(), roots);
    components.extend(custom);
    (paths, components)
}

/// The named definitions and every definition they reference, transitively.
fn closure(defs: &Map<String, Value>, roots: BTreeSet<String>) -> Map<String, Value> {
    let mut out = Map::new();
    let mut todo: Vec<String> = roots.into_iter().collect();
    while let Some(name) = todo.pop() {
        if out.contains_key(&name) {
            continue;
        }
        let Some(def) = defs.get(&name) else { continue };
        refs(def, &mut todo);
        out.insert(name, def.clone());
    }
    out
}

fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/components/schemas/"))
            {
                out.push(r.to_string());
            }
            m.values().for_each(|c| refs(c, out));
        }
        Value::Array(l) => l.iter().for_each(|c| refs(c, out)),
        _ => {}
    }
}

/// kube's model name of a custom resource's kind: the group reversed, the version, the kind
/// (`org.example.demo.v1.Gadget`).
fn custom_name(r: &ResourceInfo, kind: &str) -> String {
    let group: Vec<&str> = r.group.split('.').rev().collect();
    format!("{}.{}.{kind}", group.join("."), r.version)
}

/// `TypeMeta`'s descriptions of `apiVersion` and `kind`.
const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
/// `PartialObjectMetadata`'s and `PartialObjectMetadataList`'s descriptions of `metadata`.
const METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_METADATA_DESCRIPTION: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// A `$ref` to a meta/v1 schema with a description, as kube's v3 documents write one.
fn meta_ref(schema: &str, description: &str) -> Value {
    json!({"allOf": [{"$ref": format!("#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.{schema}")}], "description": description})
}

/// The schemas of a custom resource, as kube's apiextensions OpenAPI builder makes them: its
/// CustomResourceDefinition's schema for the version with `TypeMeta`'s `apiVersion` and `kind`,
/// the `metadata` of `PartialObjectMetadata`, and the same three (both required) in every
/// embedded resource; the list kind with kube's descriptions; both with the version's selectable
/// fields (any object with kube's metadata for a resource registered without a schema).
fn custom_schemas(r: &ResourceInfo) -> (Value, Value) {
    let gvk = |kind: &str| json!([{"group": r.group, "version": r.version, "kind": kind}]);
    let type_meta = |s: &mut Value| {
        s["properties"]["apiVersion"] = json!({"type": "string", "description": API_VERSION_DESCRIPTION});
        s["properties"]["kind"] = json!({"type": "string", "description": KIND_DESCRIPTION});
    };
    let selectable: Vec<Value> = r.selectable_fields.iter().map(|f| json!({"fieldPath": f})).collect();
    let with_extensions = |s: &mut Value, kind: &str| {
        s["x-kubernetes-group-version-kind"] = gvk(kind);
        if !selectable.is_empty() {
            s["x-kubernetes-selectable-fields"] = Value::Array(selectable.clone());
        }
    };
    let defined = r.custom.as_ref().and_then(|c| c.schema.as_deref()).filter(|s| s.is_object()).map(|s| {
        let mut s = s.clone();
        s["properties"]["metadata"] = meta_ref("ObjectMeta", METADATA_DESCRIPTION);
        type_meta(&mut s);
        embedded_properties(&mut s);
        with_extensions(&mut s, &r.kind);
        s
    });
    let list_kind = r.custom.as_ref().map_or_else(|| format!("{}List", r.kind), |c| c.list_kind.clone());
    let kind = defined.unwrap_or_else(|| {
        json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string", "description": API_VERSION_DESCRIPTION},
                "kind": {"type": "string", "description": KIND_DESCRIPTION},
                "metadata": meta_ref("ObjectMeta", METADATA_DESCRIPTION),
            },
            "x-kubernetes-preserve-unknown-fields": true,
            "x-kubernetes-group-version-kind": gvk(&r.kind),
        })
    });
    let mut list = json!({
        "type": "object",
        "description": format!("{list_kind} is a list of {}", r.kind),
        "required": ["items"],
        "properties": {
            "items": {
                "type": "array",
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", r.plural),
                "items": {"$ref": format!("#/components/schemas/{}", custom_name(r, &r.kind))},
            },
            "metadata": meta_ref("ListMeta", LIST_METADATA_DESCRIPTION),
        },
    });
    type_meta(&mut list);
    with_extensions(&mut list, &list_kind);
    (kind, list)
}

/// kube's `addEmbeddedProperties`: below `schema`, every `x-kubernetes-embedded-resource` node
/// gets `apiVersion`, `kind` (with kube's lower-case descriptions, both required) and `metadata`.
fn embedded_properties(schema: &mut Value) {
    let Some(node) = schema.as_object_mut() else { return };
    if let Some(Value::Object(props)) = node.get_mut("properties") {
        props.values_mut().for_each(embedded_properties);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = node.get_mut(key) {
            embedded_properties(child);
        }
    }
    if node.get("x-kubernetes-embedded-resource") != Some(&Value::Bool(true)) {
        return;
    }
    let props = node.entry("properties").or_insert_with(|| json!({}));
    props["apiVersion"] = json!({"type": "string", "description": "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"});
    props["kind"] = json!({"type": "string", "description": "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"});
    props["metadata"] = meta_ref("ObjectMeta", METADATA_DESCRIPTION);
    let required = node.entry("required").or_insert_with(|| json!([]));
    if let Some(list) = required.as_array_mut() {
        for field in ["kind", "apiVersion"] {
            if !list.iter().any(|f| f == field) {
                list.push(json!(field));
            }
        }
    }
}

fn query_param(name: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
}

fn path_param(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}})
}

/// The operationId's group part: `Core`, `Apps`, `Coordination`, `DemoExampleOrg`.
fn group_id(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    group.trim_end_matches(".k8s.io").split('.').map(capitalize).collect()
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// The operations of one resource (collection, object, status, scale, watch).
/// `builtin`: the kind has a built-in schema (then it takes strategic merge patches).
fn resource_paths(
    paths: &mut Map<String, Value>,
    r: &ResourceInfo,
    builtin: bool,
    kind_schema: &str,
    list_schema: Option<&str>,
) {
    let prefix = format!("/{}", gv_path(&r.group, &r.version));
    let scope = if r.namespaced { "Namespaced" } else { "" };
    let id = |verb: &str, suffix: &str| {
        format!("{verb}{}{}{scope}{}{suffix}", group_id(&r.group), capitalize(&r.version), r.kind)
    };
    let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
    let schema_ref = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    let content = |name: &str| json!({"application/json": {"schema": schema_ref(name)}});
    let writes = || vec![query_param("dryRun"), query_param("fieldManager"), query_param("fieldValidation")];
    let lists = || {
        [
            "allowWatchBookmarks",
            "continue",
            "fieldSelector",
            "labelSelector",
            "limit",
            "resourceVersion",
            "resourceVersionMatch",
            "sendInitialEvents",
            "timeoutSeconds",
            "watch",
        ]
        .iter()
        .map(|p| query_param(p))
        .collect::<Vec<_>>()
    };
    let op = |action: &str, op_id: String, gvk: &Value, params: Vec<Value>, body: Option<Value>, ok: Value| {
        let mut o = json!({
            "operationId": op_id,
            "parameters": params,
            "responses": {"200": {"description": "OK", "content": ok}, "401": {"description": "Unauthorized"}},
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        });
        if let Some(b) = body {
            o["requestBody"] = json!({"content": b, "required": true});
        }
        o
    };
    let patch_types: &[&str] = if builtin {
        &[
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
        ]
    } else {
        &["application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"]
    };
    let patch_body = || {
        let m: Map<String, Value> = patch_types
            .iter()
            .map(|t| (t.to_string(), json!({"schema": schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")})))
            .collect();
        Value::Object(m)
    };
    let object_ops = |suffix: &str, gvk: &Value, schema: &str, path_params: Vec<Value>| {
        let mut patch_params = writes();
        patch_params.push(query_param("force"));
        json!({
            "get": op("get", id("read", suffix), gvk, vec![], None, content(schema)),
            "put": op("put", id("replace", suffix), gvk, writes(), Some(content(schema)), content(schema)),
            "patch": op("patch", id("patch", suffix), gvk, patch_params, Some(patch_body()), content(schema)),
            "parameters": path_params,
        })
    };
    if r.review {
        // A review is only created: one POST on its collection.
        let (base, params) = if r.namespaced {
            (format!("{prefix}/namespaces/{{namespace}}/{}", r.plural), vec![path_param("namespace")])
        } else {
            (format!("{prefix}/{}", r.plural), vec![])
        };
        let mut collection = json!({
            "post": op("post", id("create", ""), &gvk, writes(), Some(content(kind_schema)), content(kind_schema)),
        });
        if !params.is_empty() {
            collection["parameters"] = Value::Array(params);
        }
        paths.insert(base, collection);
        return;
    }
    let list_ok = content(list_schema.unwrap_or(kind_schema));
    if crate::component_status::is_component_statuses(r) {
        // Read only: a list and a read, probed on each.
        let base = format!("{prefix}/{}", r.plural);
        paths.insert(base.clone(), json!({"get": op("list", id("list", ""), &gvk, lists(), None, list_ok)}));
        let read = op("get", id("read", ""), &gvk, vec![], None, content(kind_schema));
        paths.insert(format!("{base}/{{name}}"), json!({"get": read, "parameters": [path_param("name")]}));
        return;
    }
    let mut collection_params = vec![];
    let base = if r.namespaced {
        collection_params.push(path_param("namespace"));
        // The cluster-wide list.
        let all = format!("{prefix}/{}", r.plural);
        paths.insert(
            all,
            json!({"get": op("list", format!("list{}{}{}ForAllNamespaces", group_id(&r.group), capitalize(&r.version), r.kind), &gvk, lists(), None, list_ok.clone())}),
        );
        format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
    } else {
        format!("{prefix}/{}", r.plural)
    };
    let mut collection = json!({
        "get": op("list", id("list", ""), &gvk, lists(), None, list_ok),
        "post": op("post", id("create", ""), &gvk, writes(), Some(content(kind_schema)), content(kind_schema)),
        "delete": op("deletecollection", id("deleteCollection", ""), &gvk, lists(), None, content("io.k8s.apimachinery.pkg.apis.meta.v1.Status")),
    });
    if !collection_params.is_empty() {
        collection["parameters"] = Value::Array(collection_params.clone());
    }
    paths.insert(base.clone(), collection);
    let mut item_params = collection_params.clone();
    item_params.push(path_param("name"));
    let mut item = object_ops("", &gvk, kind_schema, item_params.clone());
    item["delete"] = op(
        "delete",
        id("delete", ""),
        &gvk,
        vec![query_param("dryRun"), query_param("gracePeriodSeconds"), query_param("propagationPolicy")],
        None,
        content("io.k8s.apimachinery.pkg.apis.meta.v1.Status"),
    );
    paths.insert(format!("{base}/{{name}}"), item);
    if r.status_subresource {
        paths.insert(format!("{base}/{{name}}/status"), object_ops("Status", &gvk, kind_schema, item_params.clone()));
    }
    if r.is_core("pods") {
        // Served as the pod itself.
        for (sub, suffix) in [
            (crate::pod_ephemeral_containers::SUBRESOURCE, "Ephemeralcontainers"),
            (crate::pod_resize::SUBRESOURCE, "Resize"),
        ] {
            paths.insert(format!("{base}/{{name}}/{sub}"), object_ops(suffix, &gvk, kind_schema, item_params.clone()));
        }
    }
    if r.scale_subresource.is_some() {
        let scale_gvk = json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
        paths.insert(
            format!("{base}/{{name}}/scale"),
            object_ops("Scale", &scale_gvk, "io.k8s.api.autoscaling.v1.Scale", item_params),
        );
    }
}

fn security_schemes() -> Value {
    json!({"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}})
}

/// A v3 document part in v2 form: references to `#/definitions/`.
fn to_v2(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => {
                        (k, Value::String(r.replace("#/components/schemas/", "#/definitions/")))
                    }
                    (_, v) => (k, to_v2(v)),
                })
                .collect(),
        ),
        Value::Array(l) => Value::Array(l.into_iter().map(to_v2).collect()),
        other => other,
    }
}
