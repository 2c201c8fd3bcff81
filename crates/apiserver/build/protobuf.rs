//! Build step: the protobuf messages of Kubernetes' built-in types, as a table the server's
//! protobuf decoder walks (`src/protobuf.rs`).
//!
//! The messages come from a registry package, never from a copy in this repository: crates.io's
//! `k8s-pb` 0.9.0 (the kube-rs project's types generated from Kubernetes' `generated.proto`
//! files), whose sources declare every field with its protobuf tag and wire kind. The crate
//! file is taken from `INFORMER_K8S_PB_CRATE` (a path to `k8s-pb-0.9.0.crate`), else cargo's
//! download cache, else downloaded from crates.io into `OUT_DIR`; its SHA-256 is checked
//! whichever way it came.
//!
//! The step writes `OUT_DIR/kube-protobuf.json`: message name → list of fields
//! `[tag, json name, kind, message name or null, repeated, map, inline]`. Messages are named
//! as the OpenAPI definitions name them (`io.k8s.api.core.v1.ConfigMap`), so the server finds a
//! kind's message from its schema; a field's JSON name is the definition's property whose name
//! matches the Rust field's. A message field no property matches is an embedded Go struct whose
//! fields JSON inlines into the enclosing object (`Probe`'s handler, `Volume`'s source…): it is
//! marked `inline`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value, json};

const CRATE: &str = "k8s-pb-0.9.0.crate";
const URL: &str = "https://static.crates.io/crates/k8s-pb/k8s-pb-0.9.0.crate";
const SHA256: &str = "43b6ba14400b62feaa58ebbbd32ce2d9a4601339b2820af393f68033b9cea620";

/// Writes `OUT_DIR/kube-protobuf.json` from the crate's sources and the OpenAPI definitions.
pub fn write_table(out: &Path, defs: &Map<String, Value>) {
    println!("cargo:rerun-if-env-changed=INFORMER_K8S_PB_CRATE");
    let crate_file = locate(out);
    let sources = read_sources(&crate_file);
    let mut messages: BTreeMap<String, Vec<RawField>> = BTreeMap::new();
    for (path, text) in &sources {
        let module = module_of(path);
        for (name, fields) in parse_structs(text) {
            let mut full = module.clone();
            full.push(name);
            messages.insert(full.join("."), fields.into_iter().map(|f| f.resolve(&module)).collect());
        }
    }
    let by_lower: BTreeMap<String, &String> = defs.keys().map(|k| (k.to_ascii_lowercase(), k)).collect();
    let name_of = |proto: &str| -> String {
        let candidate = format!(
            "io.k8s.{}",
            proto.replacen("apiextensions_apiserver.", "apiextensions-apiserver.", 1).replacen(
                "kube_aggregator.",
                "kube-aggregator.",
                1
            )
        );
        match by_lower.get(&candidate.to_ascii_lowercase()) {
            Some(def) => (*def).clone(),
            None => format!("pb:{proto}"),
        }
    };
    let mut table = Map::new();
    for (proto, fields) in &messages {
        let name = name_of(proto);
        let def = defs.get(&name);
        let props = def.and_then(|d| d.get("properties")).and_then(Value::as_object);
        let mut rows = Vec::new();
        for f in fields {
            let matched = props.and_then(|p| p.keys().find(|k| squash(k) == squash(&f.rust_name))).cloned();
            let inline = matched.is_none() && props.is_some() && f.kind == "message" && !f.repeated && !f.map;
            let json_name = matched.unwrap_or_else(|| lower_camel(&f.rust_name));
            let message = f.message.as_deref().map(name_of);
            rows.push(json!([f.tag, json_name, f.kind, message, f.repeated, f.map, inline]));
        }
        table.insert(name, Value::Array(rows));
    }
    let text = serde_json::to_string(&Value::Object(table)).expect("serializes");
    std::fs::write(out.join("kube-protobuf.json"), text).expect("writes OUT_DIR/kube-protobuf.json");
}

/// One field as the source declares it; `message` is the Rust path of a message type, relative
/// to the struct's module until resolved.
struct RawField {
    tag: u32,
    rust_name: String,
    kind: String,
    message: Option<String>,
    repeated: bool,
    map: bool,
}

impl RawField {
    /// Resolves the message path against the module the struct is in.
    fn resolve(mut self, module: &[String]) -> RawField {
        if let Some(path) = self.message.take() {
            let mut at: Vec<String> = module.to_vec();
            let mut parts = path.split("::").filter(|p| !p.is_empty()).peekable();
            if path.starts_with("crate::") {
                at.clear();
                parts.next();
            }
            while parts.peek() == Some(&"super") {
                parts.next();
                at.pop();
            }
            at.extend(parts.map(str::to_string));
            self.message = Some(at.join("."));
        }
        self
    }
}

/// The crate file: from the environment, cargo's cache, or crates.io, checked.
fn locate(out: &Path) -> PathBuf {
    if let Some(p) = std::env::var_os("INFORMER_K8S_PB_CRATE") {
        return PathBuf::from(p);
    }
    let cached = out.join(CRATE);
    if cached.exists() {
        return cached;
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(cache) = cargo_home.map(|h| h.join("registry").join("cache"))
        && let Ok(entries) = std::fs::read_dir(cache)
    {
        for e in entries.flatten() {
            let p = e.path().join(CRATE);
            if p.exists() {
                return p;
            }
        }
    }
    let script = "import sys, urllib.request; open(sys.argv[2], 'wb').write(urllib.request.urlopen(sys.argv[1], timeout=180).read())";
    let status = Command::new("python3")
        .args(["-c", script, URL])
        .arg(&cached)
        .status()
        .unwrap_or_else(|e| panic!("python3 downloads {URL}: {e}"));
    assert!(status.success(), "downloading {URL} failed; set INFORMER_K8S_PB_CRATE to a copy of {CRATE}");
    cached
}

/// Every `src/**/*.rs` of the crate file (a gzipped tar), after checking its SHA-256.
fn read_sources(crate_file: &Path) -> Vec<(String, String)> {
    println!("cargo:rerun-if-changed={}", crate_file.display());
    let script = r#"
import hashlib, json, sys, tarfile, io
data = open(sys.argv[1], 'rb').read()
digest = hashlib.sha256(data).hexdigest()
if digest != sys.argv[2]:
    sys.exit('sha256 mismatch: ' + digest)
out = {}
with tarfile.open(fileobj=io.BytesIO(data), mode='r:gz') as t:
    for m in t.getmembers():
        parts = m.name.split('/', 1)
        if m.isfile() and len(parts) == 2 and parts[1].startswith('src/') and parts[1].endswith('.rs'):
            out[parts[1]] = t.extractfile(m).read().decode('utf-8')
json.dump(out, sys.stdout)
"#;
    let output = Command::new("python3")
        .args(["-c", script])
        .arg(crate_file)
        .arg(SHA256)
        .output()
        .unwrap_or_else(|e| panic!("python3 reads {}: {e}", crate_file.display()));
    assert!(output.status.success(), "reading {}: {}", crate_file.display(), String::from_utf8_lossy(&output.stderr));
    let files: BTreeMap<String, String> = serde_json::from_slice(&output.stdout).expect("a JSON map of sources");
    files.into_iter().collect()
}

/// `src/api/core/v1/mod.rs` → `[api, core, v1]`.
fn module_of(path: &str) -> Vec<String> {
    let p = path.trim_start_matches("src/").trim_end_matches(".rs");
    let p = p.trim_end_matches("mod").trim_end_matches('/');
    if p.is_empty() || p == "lib" {
        return Vec::new();
    }
    p.split('/').map(str::to_string).collect()
}

/// The structs of one generated file and their `#[prost(...)]` fields, in source order.
fn parse_structs(text: &str) -> Vec<(String, Vec<RawField>)> {
    let mut out = Vec::new();
    let mut current: Option<(String, Vec<RawField>)> = None;
    let mut attr: Option<String> = None;
    let mut pending_decl = String::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = line.strip_prefix("pub struct ") {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if rest.trim_end().ends_with("{}") || rest.trim_end().ends_with(';') {
                out.push((name, Vec::new()));
            } else {
                current = Some((name, Vec::new()));
            }
            continue;
        }
        if line == "}" {
            if let Some(s) = current.take() {
                out.push(s);
            }
            continue;
        }
        let Some((_, fields)) = current.as_mut() else { continue };
        if let Some(a) = t.strip_prefix("#[prost(") {
            attr = Some(a.trim_end_matches(")]").to_string());
            pending_decl.clear();
            continue;
        }
        if attr.is_some() && (t.starts_with("pub ") || !pending_decl.is_empty()) {
            pending_decl.push_str(t);
            let open = pending_decl.matches('<').count();
            if t.ends_with(',') && open == pending_decl.matches('>').count() {
                let a = attr.take().expect("an attribute");
                fields.push(field(&a, &pending_decl));
                pending_decl.clear();
            }
        }
    }
    out
}

/// One field from its `prost` attribute and its declaration `pub name: Type,`.
fn field(attr: &str, decl: &str) -> RawField {
    let tag = attr
        .split("tag = \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("a tag in #[prost({attr})]"));
    let (name, ty) = decl.trim_start_matches("pub ").split_once(':').expect("name: Type");
    let rust_name = name.trim().trim_start_matches("r#").to_string();
    let ty = ty.trim().trim_end_matches(',');
    let repeated = attr.contains("repeated");
    if let Some(m) = attr.strip_prefix("btree_map = \"") {
        let value_kind = m.split('"').next().unwrap_or("").split(", ").nth(1).unwrap_or("string").to_string();
        let message = (value_kind == "message").then(|| last_type_arg(ty));
        return RawField { tag, rust_name, kind: value_kind, message, repeated: false, map: true };
    }
    let kind = attr.split([',', ' ']).next().unwrap_or("").to_string();
    let kind = if kind.starts_with("bytes") { "bytes".to_string() } else { kind };
    let message = (kind == "message").then(|| last_type_arg(ty));
    RawField { tag, rust_name, kind, message, repeated, map: false }
}

/// The innermost type named in `Option<T>`, `Vec<T>`, `Option<Box<T>>` or `BTreeMap<K, T>`.
fn last_type_arg(ty: &str) -> String {
    let inner = ty.rsplit('<').next().unwrap_or(ty);
    let inner = inner.trim_end_matches(|c: char| c == '>' || c == ',' || c.is_whitespace());
    inner.rsplit(',').next().unwrap_or(inner).trim().to_string()
}

/// A name with only its letters and digits, lowercased: Rust's `external_i_ps` meets JSON's
/// `externalIPs`, `x_kubernetes_list_type` meets `x-kubernetes-list-type`.
fn squash(s: &str) -> String {
    s.chars().filter(char::is_ascii_alphanumeric).flat_map(|c| c.to_lowercase()).collect()
}

fn lower_camel(s: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in s.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}
