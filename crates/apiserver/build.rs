//! Build step: the OpenAPI definitions of Kubernetes v1.35's built-in types.
//!
//! The server needs the schema of every built-in type it serves: the list types, merge keys
//! and patch strategies that drive strategic merge patches and server-side apply, and the
//! documents it publishes at `/openapi/v2` and `/openapi/v3`. They come from a registry
//! package, never from a copy in this repository: PyPI's `kubernetes-validate` 1.35.0, whose
//! `v1.35.0-local/_definitions.json` holds Kubernetes' own definitions with their
//! `x-kubernetes-*` extensions, in JSON-Schema form.
//!
//! Where the file comes from, in order: `INFORMER_KUBE_DEFINITIONS` (a path to that
//! `_definitions.json`, or to the package's wheel), else a wheel downloaded into `OUT_DIR` with
//! `python3 -m pip download` (pip's cache makes later builds local).
//!
//! It also writes the table of the types' protobuf messages (`build/protobuf.rs`).
//!
//! The step writes `OUT_DIR/kube-definitions.json`: one object, definition name → schema, in
//! OpenAPI v3 form (`$ref: #/components/schemas/<name>`, wrapped in `allOf` where it has
//! siblings, one `type` per schema, no `null` types, without the `enum` the JSON-Schema conversion adds to `kind` and `apiVersion`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};

#[path = "build/protobuf.rs"]
mod protobuf;

const PACKAGE: &str = "kubernetes-validate==1.35.0";
const WHEEL: &str = "kubernetes_validate-1.35.0-py3-none-any.whl";
const MEMBER: &str = "kubernetes_validate/kubernetes-json-schema/v1.35.0-local/_definitions.json";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=INFORMER_KUBE_DEFINITIONS");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let text = match std::env::var_os("INFORMER_KUBE_DEFINITIONS") {
        Some(p) => read_source(Path::new(&p)),
        None => {
            let wheel = out.join(WHEEL);
            if !wheel.exists() {
                download(&out);
            }
            read_source(&wheel)
        }
    };
    let doc: Value = serde_json::from_str(&text).expect("_definitions.json is JSON");
    let defs = doc.get("$defs").and_then(Value::as_object).expect("_definitions.json has $defs");
    let mut converted = Map::new();
    for (name, schema) in defs {
        let mut s = schema.clone();
        convert(&mut s);
        if s.get("x-kubernetes-group-version-kind").is_some()
            && let Some(props) = s.get_mut("properties").and_then(Value::as_object_mut)
        {
            for f in ["kind", "apiVersion"] {
                if let Some(p) = props.get_mut(f).and_then(Value::as_object_mut) {
                    p.remove("enum");
                }
            }
        }
        converted.insert(name.clone(), s);
    }
    protobuf::write_table(&out, &converted);
    let text = serde_json::to_string(&Value::Object(converted)).expect("serializes");
    std::fs::write(out.join("kube-definitions.json"), text).expect("writes OUT_DIR/kube-definitions.json");
}

/// The `_definitions.json` text from a JSON file or from the package's wheel.
fn read_source(path: &Path) -> String {
    println!("cargo:rerun-if-changed={}", path.display());
    if path.extension().is_some_and(|e| e == "whl") {
        let script = "import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))";
        let out = Command::new("python3")
            .args(["-c", script])
            .arg(path)
            .arg(MEMBER)
            .output()
            .unwrap_or_else(|e| panic!("python3 reads {}: {e}", path.display()));
        assert!(
            out.status.success(),
            "reading {MEMBER} from {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8 definitions")
    } else {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

fn download(out: &Path) {
    let status = Command::new("python3")
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check", "-q", "-d"])
        .arg(out)
        .arg(PACKAGE)
        .status();
    match status {
        Ok(s) if s.success() => {}
        other => panic!(
            "could not download {PACKAGE} from PyPI ({other:?}); set INFORMER_KUBE_DEFINITIONS to its wheel or to \
             the wheel's {MEMBER}"
        ),
    }
}

/// Rewrites one JSON-Schema node into OpenAPI v3 form, recursively.
fn convert(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref")
                && let Some(name) = r.strip_prefix("#/$defs/")
            {
                *r = format!("#/components/schemas/{name}");
            }
            if let Some(Value::Array(types)) = m.get("type") {
                let kept: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
                if kept.len() == 1 {
                    m.insert("type".into(), kept[0].clone());
                } else {
                    m.insert("type".into(), Value::Array(kept));
                }
            }
            for (k, child) in m.iter_mut() {
                match k.as_str() {
                    "enum" | "x-kubernetes-group-version-kind" => {}
                    // A map of named schemas: its keys are names, not keywords (JSONSchemaProps
                    // has properties named `$ref` and `allOf`).
                    "properties" | "patternProperties" | "definitions" | "$defs" => {
                        if let Value::Object(named) = child {
                            named.values_mut().for_each(convert);
                        }
                    }
                    _ => convert(child),
                }
            }
            // kube-apiserver's form of a reference with siblings (a description, patch
            // extensions): `allOf: [{$ref}]`, so that the siblings are not ignored.
            if m.len() > 1
                && let Some(r) = m.remove("$ref")
            {
                m.insert("allOf".into(), Value::Array(vec![Value::Object(Map::from_iter([("$ref".to_string(), r)]))]));
            }
        }
        Value::Array(items) => items.iter_mut().for_each(convert),
        _ => {}
    }
}
