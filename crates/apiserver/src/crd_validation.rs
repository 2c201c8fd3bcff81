//! Validation of CustomResourceDefinitions, with kube-apiserver's 422 causes for the mistakes
//! people make: a name that is not `<plural>.<group>`, a group without a dot (or a protected
//! `*.k8s.io` group without its approval annotation), bad or missing names, a scope other than
//! `Namespaced`/`Cluster`, not exactly one storage version, duplicate or badly named versions,
//! missing or non-structural schemas, scale paths outside `.spec`/`.status`, bad printer
//! columns, selectable fields that name no scalar field of their schema, an unknown conversion strategy or a webhook conversion without a client
//! configuration or a ConversionReview version the server speaks, and a storage version missing from
//! `status.storedVersions`.
//!
//! Invariant: validation never changes the object; every cause found is reported, in kube's
//! order (metadata, then the spec field by field, then the status).

use serde_json::{Map, Value};

use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::structural::{Cause, go_quote};
use crate::validation_rules::Budget;

fn required(field: String, detail: &str) -> Cause {
    let message = if detail.is_empty() { "Required value".to_string() } else { format!("Required value: {detail}") };
    Cause { reason: "FieldValueRequired", message, field }
}

fn invalid(field: String, value: &str, detail: &str) -> Cause {
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {}: {detail}", go_quote(value)), field }
}

fn invalid_shown(field: String, shown: &str, detail: &str) -> Cause {
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {shown}: {detail}"), field }
}

fn unsupported(field: String, value: &str, supported: &[&str]) -> Cause {
    let s: Vec<String> = supported.iter().map(|v| go_quote(v)).collect();
    Cause {
        reason: "FieldValueNotSupported",
        message: format!("Unsupported value: {}: supported values: {}", go_quote(value), s.join(", ")),
        field,
    }
}

fn forbidden(field: String, detail: &str) -> Cause {
    Cause { reason: "FieldValueForbidden", message: format!("Forbidden: {detail}"), field }
}

/// `spec.conversion`: a known strategy; for `Webhook` a client configuration and ConversionReview
/// versions the server speaks, neither otherwise. kube reports them at the paths of its
/// internal type (`spec.conversion.webhookClientConfig`, `spec.conversion.conversionReviewVersions`).
fn validate_conversion(conversion: &Value, causes: &mut Vec<Cause>) {
    let strategy = s(Some(conversion), "strategy");
    match strategy {
        "" => causes.push(required("spec.conversion.strategy".into(), "")),
        "None" | "Webhook" => {}
        other => causes.push(unsupported("spec.conversion.strategy".into(), other, &["None", "Webhook"])),
    }
    let webhook = conversion.get("webhook").filter(|w| !w.is_null());
    let client_config = webhook.and_then(|w| w.get("clientConfig")).filter(|c| !c.is_null());
    let versions = webhook.map(|w| crate::admission_policy::strings(w, "conversionReviewVersions")).unwrap_or_default();
    const AT_CONFIG: &str = "spec.conversion.webhookClientConfig";
    const AT_VERSIONS: &str = "spec.conversion.conversionReviewVersions";
    if strategy != "Webhook" {
        let forbidden = |field: &str| Cause {
            reason: "FieldValueForbidden",
            message: "Forbidden: should not be set when strategy is not set to Webhook".into(),
            field: field.into(),
        };
        if client_config.is_some() {
            causes.push(forbidden(AT_CONFIG));
        }
        if !versions.is_empty() {
            causes.push(forbidden(AT_VERSIONS));
        }
        return;
    }
    match client_config {
        None => causes.push(required(AT_CONFIG.into(), "required when strategy is set to Webhook")),
        Some(cc) => crate::webhook_configuration::check_client_config(cc, AT_CONFIG, causes),
    }
    if versions.is_empty() {
        causes.push(required(AT_VERSIONS.into(), ""));
        return;
    }
    crate::webhook_configuration::check_versions(&versions, AT_VERSIONS, causes);
}

fn s<'a>(v: Option<&'a Value>, k: &str) -> &'a str {
    v.and_then(|v| v.get(k)).and_then(Value::as_str).unwrap_or("")
}

/// A lowercase RFC 1123 label.
fn dns1123_label(v: &str) -> bool {
    let b = v.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// An RFC 1035 label (a version name).
fn dns1035_label(v: &str) -> bool {
    dns1123_label(v) && v.as_bytes()[0].is_ascii_lowercase()
}

pub(crate) const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const VERSION_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// The schema a definition gives `version`.
/// Whether the definition `old` replaces (if any) breaks `rule` in the schema of any version.
fn old_breaks(old: Option<&Value>, rule: fn(&Value, &str, &mut Vec<Cause>)) -> bool {
    old.is_some_and(|o| {
        let schemas = o.pointer("/spec/versions").and_then(Value::as_array).into_iter().flatten();
        schemas.filter_map(|v| v.pointer("/schema/openAPIV3Schema")).any(|schema| {
            let mut faults = Vec::new();
            rule(schema, "", &mut faults);
            !faults.is_empty()
        })
    })
}

fn version_schema<'a>(crd: &'a Value, version: &str) -> Option<&'a Value> {
    let versions = crd.get("spec")?.get("versions")?.as_array()?;
    let v = versions.iter().find(|v| v.get("name").and_then(Value::as_str) == Some(version))?;
    v.get("schema")?.get("openAPIV3Schema")
}

/// The CustomResourceDefinition resource, for the 422's kind.
fn crd_info() -> ResourceInfo {
    ResourceInfo::new(crate::crd::GROUP, "v1", "customresourcedefinitions", "CustomResourceDefinition", false)
}

/// Validates a CustomResourceDefinition about to be stored, but for a write of its `status`.
#[cfg(test)]
pub(crate) fn validate(obj: &Map<String, Value>, old: Option<&Value>) -> Result<(), ApiError> {
    validate_write(obj, old, false)
}

/// Validates a CustomResourceDefinition about to be stored; `old` is the definition an update
/// replaces, `status` whether the write is of its `status` subresource (whose stored versions
/// kube's status strategy does not judge).
pub(crate) fn validate_write(obj: &Map<String, Value>, old: Option<&Value>, status: bool) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    let name = s(obj.get("metadata"), "name");
    let spec = obj.get("spec");
    let group = s(spec, "group");
    let names = spec.and_then(|s| s.get("names"));
    let plural = s(names, "plural");
    if !name.is_empty() && name != format!("{plural}.{group}") {
        causes.push(invalid("metadata.name".into(), name, "must be spec.names.plural+\".\"+spec.group"));
    }
    if group.is_empty() {
        causes.push(required("spec.group".into(), ""));
    } else if !group.contains('.') || !crate::object::valid_name(group) {
        causes.push(invalid("spec.group".into(), group, "should be a domain with at least one dot"));
    } else if ["k8s.io", "kubernetes.io"].iter().any(|p| group == *p || group.ends_with(&format!(".{p}")))
        && obj
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get("api-approved.kubernetes.io"))
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        causes.push(required(
            "metadata.annotations[api-approved.kubernetes.io]".into(),
            "protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111",
        ));
    }
    match s(spec, "scope") {
        "" => causes.push(required("spec.scope".into(), "")),
        "Namespaced" | "Cluster" => {}
        other => causes.push(unsupported("spec.scope".into(), other, &["Cluster", "Namespaced"])),
    }
    validate_names(names, "spec.names", &mut causes);
    validate_versions(spec, old, &mut causes);
    if let Some(conversion) = spec.and_then(|s| s.get("conversion")).filter(|c| !c.is_null()) {
        validate_conversion(conversion, &mut causes);
    }
    let versions: Vec<&str> = spec
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| s(Some(v), "name"))
        .collect();
    // kube's `ValidateCustomResourceDefinitionStoredVersions` of the status the strategy gave the
    // definition: at least one, each storage version among them, and none gone from the versions.
    let stored = obj.get("status").and_then(|s| s.get("storedVersions")).and_then(Value::as_array).filter(|_| !status);
    let stored_names: Vec<&str> = stored.into_iter().flatten().filter_map(Value::as_str).collect();
    let shown = match stored {
        Some(list) if !list.is_empty() => crate::structural::go_value(&Value::Array(list.clone())),
        _ => "null".to_string(),
    };
    if stored.is_some() && stored_names.is_empty() {
        causes.push(invalid_shown("status.storedVersions".into(), &shown, "must have at least one stored version"));
    }
    if !stored_names.is_empty() {
        // Each version takes its name from those stored, so a name used twice is found once.
        let mut remaining = stored_names.clone();
        for v in spec.and_then(|s| s.get("versions")).and_then(Value::as_array).into_iter().flatten() {
            let name = s(Some(v), "name");
            let found = remaining.iter().position(|n| *n == name);
            if v.get("storage").and_then(Value::as_bool) == Some(true) && found.is_none() {
                let detail = format!("must have the storage version {name}");
                causes.push(invalid_shown("status.storedVersions".into(), &shown, &detail));
            }
            if let Some(at) = found {
                remaining.remove(at);
            }
        }
    }
    for (i, v) in stored.into_iter().flatten().enumerate() {
        let v = v.as_str().unwrap_or("");
        if !versions.contains(&v) {
            let why = format!(
                "missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
            );
            causes.push(invalid(format!("status.storedVersions[{i}]"), v, &why));
        }
    }
    if causes.is_empty() { Ok(()) } else { Err(crate::custom_resource::invalid(&crd_info(), name, &causes)) }
}

fn validate_names(names: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    for f in ["plural", "singular"] {
        let v = s(names, f);
        if v.is_empty() && f == "plural" {
            causes.push(required(format!("{path}.{f}"), ""));
        } else if !v.is_empty() && !dns1123_label(v) {
            causes.push(invalid(format!("{path}.{f}"), v, LABEL_MSG));
        }
    }
    for (i, short) in
        names.and_then(|n| n.get("shortNames")).and_then(Value::as_array).into_iter().flatten().enumerate()
    {
        let v = short.as_str().unwrap_or("");
        if !dns1123_label(v) {
            causes.push(invalid(format!("{path}.shortNames[{i}]"), v, LABEL_MSG));
        }
    }
    let kind = s(names, "kind");
    if kind.is_empty() {
        causes.push(required(format!("{path}.kind"), ""));
    }
    let list_kind = s(names, "listKind");
    if !kind.is_empty() && kind == list_kind {
        causes.push(invalid(format!("{path}.listKind"), list_kind, "kind and listKind may not be the same"));
    }
}

fn validate_versions(spec: Option<&Value>, old: Option<&Value>, causes: &mut Vec<Cause>) {
    let versions: Vec<&Value> =
        spec.and_then(|s| s.get("versions")).and_then(Value::as_array).into_iter().flatten().collect();
    if versions.is_empty() {
        causes.push(required("spec.versions".into(), "must have at least one version"));
    }
    // (kube names the whole list of versions in the causes about all of them; here, their names.)
    let all_versions = || {
        crate::structural::go_value(&Value::Array(
            versions.iter().map(|v| Value::String(s(Some(v), "name").into())).collect(),
        ))
    };
    // As kube-apiserver converts a definition before validating it, a schema, subresources or
    // printer columns that every version has alike are checked once, as the definition's own
    // (`spec.validation`, `spec.subresources`, `spec.additionalPrinterColumns`).
    let alike = |get: &dyn Fn(&Value) -> Option<&Value>| {
        let first = versions.first().and_then(|v| get(v)).filter(|x| !x.is_null());
        first.is_some() && versions.iter().all(|v| get(v) == first)
    };
    let shared_schema = alike(&|v| v.get("schema").and_then(|s| s.get("openAPIV3Schema")));
    let shared_subresources = alike(&|v| v.get("subresources"));
    let shared_columns =
        alike(&|v| v.get("additionalPrinterColumns").filter(|c| c.as_array().is_some_and(|c| !c.is_empty())));
    let old_faults = old_breaks(old, list_items);
    let old_keywords = old_breaks(old, keywords_within);
    // Every version needs a schema: kube says so before judging the versions one by one.
    for (i, v) in versions.iter().enumerate() {
        if v.get("schema").and_then(|s| s.get("openAPIV3Schema")).is_none_or(Value::is_null) {
            causes.push(required(format!("spec.versions[{i}].schema.openAPIV3Schema"), ""));
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        let p = format!("spec.versions[{i}]");
        let name = s(Some(v), "name");
        if !dns1035_label(name) {
            causes.push(invalid(format!("{p}.name"), name, VERSION_MSG));
        }
        unique &= !seen.contains(&name);
        seen.push(name);
        match v.get("schema").and_then(|s| s.get("openAPIV3Schema")) {
            None | Some(Value::Null) => {}
            Some(schema) => {
                let sp = if shared_schema {
                    "spec.validation.openAPIV3Schema".into()
                } else {
                    format!("{p}.schema.openAPIV3Schema")
                };
                if !shared_schema || i == 0 {
                    let before = causes.len();
                    // The keywords kube does not take are held to unless the definition this one
                    // replaces has such keywords already, in any version (kube's type check
                    // ratchets so; a definition stored with them can still be updated).
                    if !old_keywords {
                        keywords_within(schema, &sp, causes);
                    }
                    structural_schema(schema, &sp, true, causes);
                    // Set and map lists' items are held to kube's rules unless the definition
                    // this one replaces breaks them already, in any version.
                    if !old_faults {
                        list_items(schema, &sp, causes);
                    }
                    let structural = causes.len() == before;
                    // kube holds each rule to its budget unless an update leaves the schema
                    // as it was; the schema's total, always.
                    let unchanged = old.is_some_and(|o| version_schema(o, name) == Some(schema));
                    let budget = match (structural, unchanged) {
                        (false, _) => Budget::Unchecked,
                        (true, true) => Budget::Total,
                        (true, false) => Budget::Full,
                    };
                    crate::validation_rules::check_rules(schema, &sp, budget, causes);
                    // Defaults are judged only by a structural schema, as kube judges them.
                    if structural {
                        crate::default_check::check_defaults(schema, &sp, causes);
                    }
                }
            }
        }
        let sub = if shared_subresources { "spec.subresources".into() } else { format!("{p}.subresources") };
        let scale = v.get("subresources").and_then(|s| s.get("scale")).filter(|s| s.is_object());
        if let Some(scale) = scale.filter(|_| !shared_subresources || i == 0) {
            for (f, under) in [("specReplicasPath", ".spec"), ("statusReplicasPath", ".status")] {
                let path = s(Some(scale), f);
                let field = format!("{sub}.scale.{f}");
                if path.is_empty() {
                    causes.push(required(field, ""));
                } else if !path.starts_with(&format!("{under}.")) {
                    causes.push(invalid(field, path, &format!("should be a json path under {under}")));
                }
            }
            let sel = s(Some(scale), "labelSelectorPath");
            if !(sel.is_empty() || sel.starts_with(".spec.") || sel.starts_with(".status.")) {
                causes.push(invalid(
                    format!("{sub}.scale.labelSelectorPath"),
                    sel,
                    "should be a json path under either .spec or .status",
                ));
            }
        }
        let columns = v.get("additionalPrinterColumns").and_then(Value::as_array).filter(|_| !shared_columns || i == 0);
        for (j, c) in columns.into_iter().flatten().enumerate() {
            let cp = if shared_columns {
                format!("spec.additionalPrinterColumns[{j}]")
            } else {
                format!("{p}.additionalPrinterColumns[{j}]")
            };
            if s(Some(c), "name").is_empty() {
                causes.push(required(format!("{cp}.name"), ""));
            }
            match s(Some(c), "type") {
                "" => causes.push(required(format!("{cp}.type"), "")),
                "integer" | "number" | "string" | "boolean" | "date" => {}
                other => causes.push(unsupported(
                    format!("{cp}.type"),
                    other,
                    &["integer", "number", "string", "boolean", "date"],
                )),
            }
            if s(Some(c), "jsonPath").is_empty() {
                causes.push(required(format!("{cp}.jsonPath"), ""));
            }
        }
    }
    crate::selectable_fields::validate(&versions, old, causes);
    if !unique {
        causes.push(invalid_shown("spec.versions".into(), &all_versions(), "must contain unique version names"));
    }
    let storage = versions.iter().filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true)).count();
    if storage != 1 {
        let detail = "must have exactly one version marked as storage version";
        causes.push(invalid_shown("spec.versions".into(), &all_versions(), detail));
    }
}

/// The structural-schema rules kube checks that hand-written schemas break most: a type on every
/// specified field (unless `x-kubernetes-int-or-string` or `x-kubernetes-preserve-unknown-fields`),
/// `object` at the root, `items` for arrays, `x-kubernetes-preserve-unknown-fields` true or
/// absent, nothing but `name`/`generateName` restricted of the root's `metadata`.
fn structural_schema(node: &Value, path: &str, root: bool, causes: &mut Vec<Cause>) {
    let t = node.get("type").and_then(Value::as_str).unwrap_or("");
    let int_or_string = node.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true);
    let preserve = node.get("x-kubernetes-preserve-unknown-fields");
    if preserve == Some(&Value::Bool(false)) {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            message: "Invalid value: false: must be true or undefined".into(),
            field: format!("{path}.x-kubernetes-preserve-unknown-fields"),
        });
    }
    if root {
        if t != "object" {
            if t.is_empty() {
                causes.push(required(format!("{path}.type"), "must not be empty at the root"));
            } else {
                causes.push(unsupported(format!("{path}.type"), t, &["object"]));
            }
        }
    } else if t.is_empty() && !int_or_string && preserve != Some(&Value::Bool(true)) {
        causes.push(required(format!("{path}.type"), "must not be empty for specified object fields"));
    }
    if t == "array" && !node.get("items").is_some_and(Value::is_object) {
        causes.push(required(format!("{path}.items"), "must be specified"));
    }
    let has_props = node.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
    if has_props && node.get("additionalProperties").is_some_and(|a| *a != Value::Bool(true) && !a.is_null()) {
        causes.push(forbidden(
            format!("{path}.additionalProperties"),
            "additionalProperties and properties are mutual exclusive",
        ));
    }
    list_type(node, t, path, causes);
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (k, child) in props {
            let cp = format!("{path}.properties[{k}]");
            if root && k == "metadata" {
                let only_names = child
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_none_or(|p| p.keys().all(|k| k == "name" || k == "generateName"));
                let other_keys = child.as_object().is_some_and(|m| m.keys().any(|k| k != "type" && k != "properties"));
                if !only_names || other_keys {
                    causes.push(forbidden(
                        cp,
                        "must not specify anything other than name and generateName, but metadata is implicitly specified",
                    ));
                    continue;
                }
            }
            structural_schema(child, &cp, false, causes);
        }
    }
    if let Some(items) = node.get("items").filter(|i| i.is_object()) {
        structural_schema(items, &format!("{path}.items"), false, causes);
    }
    if let Some(add) = node.get("additionalProperties").filter(|a| a.is_object()) {
        structural_schema(add, &format!("{path}.additionalProperties"), false, causes);
    }
}

/// The schemas of a node's value validations (`allOf`, `anyOf`, `oneOf`, `not`), which kube
/// checks for the keywords it does not take, but not for the structural rules.
fn value_validations(node: &Value, path: &str, causes: &mut Vec<Cause>) {
    for k in ["allOf", "anyOf", "oneOf"] {
        for (i, child) in node.get(k).and_then(Value::as_array).into_iter().flatten().enumerate() {
            keywords_within(child, &format!("{path}.{k}[{i}]"), causes);
        }
    }
    if let Some(not) = node.get("not").filter(|n| n.is_object()) {
        keywords_within(not, &format!("{path}.not"), causes);
    }
}

/// [`unsupported_keywords`] of a schema and of every schema below it.
fn keywords_within(node: &Value, path: &str, causes: &mut Vec<Cause>) {
    unsupported_keywords(node, path, causes);
    for (k, child) in node.get("properties").and_then(Value::as_object).into_iter().flatten() {
        keywords_within(child, &format!("{path}.properties[{k}]"), causes);
    }
    for k in ["items", "additionalProperties"] {
        if let Some(child) = node.get(k).filter(|c| c.is_object()) {
            keywords_within(child, &format!("{path}.{k}"), causes);
        }
    }
    value_validations(node, path, causes);
}

/// The JSON-Schema keywords kube's schema validator does not take, in its order: a type other
/// than OpenAPI v3's six, `id`, `additionalItems`, `patternProperties`, `definitions`,
/// `dependencies`, `$ref`, type `null`, `items` as a list of schemas, then `uniqueItems: true`.
fn unsupported_keywords(node: &Value, path: &str, causes: &mut Vec<Cause>) {
    const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
    let t = node.get("type").and_then(Value::as_str).unwrap_or("");
    if !t.is_empty() && !TYPES.contains(&t) {
        causes.push(unsupported(format!("{path}.type"), t, &TYPES));
    }
    let set = |k: &str| node.get(k).is_some_and(|v| !v.is_null());
    let non_empty = |k: &str| node.get(k).and_then(Value::as_object).is_some_and(|m| !m.is_empty());
    if node.get("id").and_then(Value::as_str).is_some_and(|id| !id.is_empty()) {
        causes.push(forbidden(format!("{path}.id"), "id is not supported"));
    }
    if set("additionalItems") {
        causes.push(forbidden(format!("{path}.additionalItems"), "additionalItems is not supported"));
    }
    if non_empty("patternProperties") {
        causes.push(forbidden(format!("{path}.patternProperties"), "patternProperties is not supported"));
    }
    if non_empty("definitions") {
        causes.push(forbidden(format!("{path}.definitions"), "definitions is not supported"));
    }
    if set("dependencies") {
        causes.push(forbidden(format!("{path}.dependencies"), "dependencies is not supported"));
    }
    if set("$ref") {
        causes.push(forbidden(format!("{path}.$ref"), "$ref is not supported"));
    }
    if t == "null" {
        causes.push(forbidden(format!("{path}.type"), "type cannot be set to null, use nullable as an alternative"));
    }
    if node.get("items").and_then(Value::as_array).is_some_and(|a| !a.is_empty()) {
        causes.push(forbidden(format!("{path}.items"), "items must be a schema object and not an array"));
    }
    if node.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
        causes.push(forbidden(
            format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
}

/// kube's rules for `x-kubernetes-list-type` and `x-kubernetes-list-map-keys` on a node of type
/// `t`: a list type only on arrays, one of `atomic`, `set`, `map`; keys only for a map list, which
/// needs them, of object items, each key a scalar property of the items, named once.
fn list_type(node: &Value, t: &str, path: &str, causes: &mut Vec<Cause>) {
    let list_type = node.get("x-kubernetes-list-type").and_then(Value::as_str);
    let keys: Vec<&str> = node
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if list_type.is_some() && t != "array" {
        let detail = "must be array if x-kubernetes-list-type is specified";
        causes.push(if t.is_empty() {
            required(format!("{path}.type"), detail)
        } else {
            invalid(format!("{path}.type"), t, detail)
        });
    }
    if let Some(lt) = list_type.filter(|lt| !matches!(*lt, "atomic" | "set" | "map")) {
        causes.push(unsupported(format!("{path}.x-kubernetes-list-type"), lt, &["atomic", "set", "map"]));
    }
    if !keys.is_empty() {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => causes.push(required(format!("{path}.x-kubernetes-list-type"), detail)),
            Some("map") => {}
            Some(other) => causes.push(invalid(format!("{path}.x-kubernetes-list-type"), other, detail)),
        }
    }
    if list_type != Some("map") {
        return;
    }
    if keys.is_empty() {
        causes.push(required(
            format!("{path}.x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    let Some(items) = node.get("items").filter(|i| i.is_object()) else {
        causes.push(required(format!("{path}.items"), "must have a schema if x-kubernetes-list-type is map"));
        return;
    };
    let items_type = items.get("type").and_then(Value::as_str).unwrap_or("");
    if items_type != "object" {
        causes.push(invalid(
            format!("{path}.items.type"),
            items_type,
            "must be object if parent array's x-kubernetes-list-type is map",
        ));
        return;
    }
    let shown = crate::structural::go_json(&Value::from(keys.clone()));
    let keys_invalid = |detail: &str| Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {shown}: {detail}"),
        field: format!("{path}.x-kubernetes-list-map-keys"),
    };
    for (i, k) in keys.iter().enumerate() {
        match items.get("properties").and_then(|p| p.get(*k)) {
            Some(prop) => {
                if matches!(prop.get("type").and_then(Value::as_str), Some("array" | "object")) {
                    // kube shows the items' type here.
                    causes.push(invalid(
                        format!("{path}.items.properties[{k}].type"),
                        items_type,
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    ));
                }
            }
            None => causes.push(keys_invalid("entries must all be names of item properties")),
        }
        if keys[..i].contains(k) {
            causes.push(keys_invalid("must not contain duplicate entries"));
        }
    }
}

/// kube's rules for the items of a set or map list, which it holds a definition to once the
/// definition keeps them (a new one, or an update of one that did): items that are not
/// nullable, lists and maps in a set atomic; map keys that are required or defaulted, and not
/// nullable.
fn list_items(node: &Value, path: &str, causes: &mut Vec<Cause>) {
    let list_type = node.get("x-kubernetes-list-type").and_then(Value::as_str);
    if let (Some(lt @ ("set" | "map")), Some(items)) = (list_type, node.get("items").filter(|i| i.is_object())) {
        let flag = |v: &Value, k: &str| v.get(k).and_then(Value::as_bool) == Some(true);
        if flag(items, "nullable") {
            causes.push(forbidden(
                format!("{path}.items.nullable"),
                &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
            ));
        }
        // A set's items are compared whole: lists and maps in it are atomic.
        if lt == "set" {
            let kind = items.get("type").and_then(Value::as_str);
            let shown = |v: Option<&Value>| v.and_then(Value::as_str).map_or("null".to_string(), go_quote);
            let message = "must be atomic as item of a list with x-kubernetes-list-type=set";
            let list_type = items.get("x-kubernetes-list-type");
            if kind == Some("array") && list_type.is_some_and(|t| t.as_str() != Some("atomic")) {
                causes.push(invalid_shown(format!("{path}.items.x-kubernetes-list-type"), &shown(list_type), message));
            }
            if kind == Some("object") && items.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic") {
                // kube shows the items' list type here.
                causes.push(invalid_shown(format!("{path}.items.x-kubernetes-map-type"), &shown(list_type), message));
            }
        }
        if lt == "map" {
            let needed: Vec<&str> = items
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let keys = node.get("x-kubernetes-list-map-keys").and_then(Value::as_array).into_iter().flatten();
            for k in keys.filter_map(Value::as_str) {
                let Some(prop) = items.get("properties").and_then(|p| p.get(k)) else { continue };
                if !needed.contains(&k) && prop.get("default").is_none() {
                    causes.push(required(
                        format!("{path}.items.properties[{k}].default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if flag(prop, "nullable") {
                    causes.push(forbidden(
                        format!("{path}.items.properties[{k}].nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
    let children = node.get("properties").and_then(Value::as_object).into_iter().flatten();
    for (k, child) in children {
        list_items(child, &format!("{path}.properties[{k}]"), causes);
    }
    if let Some(items) = node.get("items").filter(|i| i.is_object()) {
        list_items(items, &format!("{path}.items"), causes);
    }
    if let Some(add) = node.get("additionalProperties").filter(|a| a.is_object()) {
        list_items(add, &format!("{path}.additionalProperties"), causes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validate(c: &Map<String, Value>) -> Result<(), ApiError> {
        super::validate(c, None)
    }

    fn crd() -> Map<String, Value> {
        let v = json!({"metadata": {"name": "gadgets.demo.example.org"},
            "spec": {"group": "demo.example.org", "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Gadget"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}}]}});
        v.as_object().unwrap().clone()
    }

    fn fields(e: ApiError) -> Vec<String> {
        let d = e.details.unwrap();
        d["causes"].as_array().unwrap().iter().map(|c| c["field"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn an_update_that_keeps_a_schema_is_not_held_to_each_rule_s_budget() {
        // Each of a hundred unbounded strings matched: 6.3 times a rule's budget, under the
        // schema's total.
        let mut c = crd();
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = json!({
            "type": "object", "properties": {"names": {"type": "array", "maxItems": 100, "items": {
                "type": "string", "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}}}});
        let at =
            "spec.validation.openAPIV3Schema.properties[spec].properties[names].items.x-kubernetes-validations[0].rule";
        assert_eq!(fields(validate(&c).unwrap_err()), [at]);
        let old = Value::Object(c.clone());
        c["spec"]["names"]["shortNames"] = json!(["gd"]);
        assert!(super::validate(&c, Some(&old)).is_ok());
        // A changed schema is judged again.
        let mut before = c.clone();
        before["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["names"]["maxItems"] =
            json!(10);
        assert_eq!(fields(super::validate(&c, Some(&Value::Object(before))).unwrap_err()), [at]);
    }

    #[test]
    fn common_mistakes_are_refused() {
        assert!(validate(&crd()).is_ok());
        let mut c = crd();
        c["metadata"]["name"] = json!("other.demo.example.org");
        c["spec"]["versions"][0]["storage"] = json!(false);
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = json!({"properties": {}});
        let e = validate(&c).unwrap_err();
        assert_eq!(e.code, 422);
        // The storage version is judged once every version has been.
        assert_eq!(
            fields(e),
            ["metadata.name", "spec.validation.openAPIV3Schema.properties[spec].type", "spec.versions"]
        );
        let mut c = crd();
        c["spec"]["group"] = json!("apps");
        c["spec"]["scope"] = json!("Global");
        assert_eq!(fields(validate(&c).unwrap_err()), ["metadata.name", "spec.group", "spec.scope"]);
    }

    #[test]
    fn json_schema_keywords_kube_does_not_take_are_forbidden() {
        let mut c = crd();
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = json!({"type": "object",
            "patternProperties": {"^a": {"type": "string"}}, "dependencies": {"a": ["b"]},
            "properties": {"n": {"type": "null"}, "r": {"$ref": "#/definitions/x", "type": "string"},
                "t": {"type": "array", "items": [{"type": "string"}]}, "d": {"type": "date"}}});
        let at = "spec.validation.openAPIV3Schema.properties[spec]";
        let messages = messages_of(&c, None);
        for want in [
            format!("{at}.patternProperties: Forbidden: patternProperties is not supported"),
            format!("{at}.dependencies: Forbidden: dependencies is not supported"),
            format!(
                "{at}.properties[n].type: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""
            ),
            format!("{at}.properties[n].type: Forbidden: type cannot be set to null, use nullable as an alternative"),
            format!("{at}.properties[r].$ref: Forbidden: $ref is not supported"),
            format!("{at}.properties[t].items: Forbidden: items must be a schema object and not an array"),
            format!(
                "{at}.properties[d].type: Unsupported value: \"date\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""
            ),
        ] {
            assert!(messages.contains(&want), "{want} not in {messages:#?}");
        }
        // A definition stored with them may still be updated (its finalizers removed).
        let mut stored = crd();
        stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = json!({"type": "object",
            "patternProperties": {"^a": {"type": "string"}}, "properties": {"d": {"type": "date"}}});
        assert_eq!(messages_of(&stored, None).len(), 2);
        assert!(super::validate(&stored, Some(&Value::Object(stored.clone()))).is_ok());
        let mut unique = crd();
        unique["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] =
            json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}});
        assert_eq!(
            messages_of(&unique, None),
            [format!(
                "{at}.uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
            )]
        );
    }

    fn messages_of(c: &Map<String, Value>, old: Option<&Value>) -> Vec<String> {
        match super::validate(c, old) {
            Ok(()) => Vec::new(),
            Err(e) => e.details.unwrap()["causes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| format!("{}: {}", c["field"].as_str().unwrap(), c["message"].as_str().unwrap()))
                .collect(),
        }
    }

    #[test]
    fn lists_and_maps_are_declared_as_kube_requires() {
        let with_spec = |spec: Value| {
            let mut c = crd();
            c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = spec;
            c
        };
        let at = "spec.validation.openAPIV3Schema.properties[spec].properties[l]";
        let list = |l: Value| with_spec(json!({"type": "object", "properties": {"l": l}}));
        let good = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}});
        assert!(validate(&list(good.clone())).is_ok());
        let mut keyless = good.clone();
        keyless["x-kubernetes-list-map-keys"] = json!(["name", "port", "name"]);
        keyless["items"]["properties"]["port"] = json!({"type": "object"});
        keyless["items"]["required"] = json!(["name", "port"]);
        assert_eq!(
            messages_of(&list(keyless), None),
            [
                format!(
                    "{at}.items.properties[port].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"
                ),
                format!(
                    "{at}.x-kubernetes-list-map-keys: Invalid value: [\"name\",\"port\",\"name\"]: must not contain duplicate entries"
                ),
            ]
        );
        let mut optional_key = good.clone();
        optional_key["items"]["required"] = json!([]);
        optional_key["items"]["nullable"] = json!(true);
        let c = list(optional_key);
        assert_eq!(
            messages_of(&c, None),
            [
                format!("{at}.items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is map"),
                format!(
                    "{at}.items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
                ),
            ]
        );
        // A definition that breaks these already may keep breaking them.
        assert!(messages_of(&c, Some(&Value::Object(c.clone()))).is_empty());
        assert_eq!(
            messages_of(
                &list(json!({"type": "string", "x-kubernetes-list-type": "bag", "x-kubernetes-list-map-keys": ["a"]})),
                None
            ),
            [
                format!("{at}.type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified"),
                format!(
                    "{at}.x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\""
                ),
                format!(
                    "{at}.x-kubernetes-list-type: Invalid value: \"bag\": must be map if x-kubernetes-list-map-keys is non-empty"
                ),
            ]
        );
        let set_of = |items: Value| list(json!({"type": "array", "x-kubernetes-list-type": "set", "items": items}));
        assert_eq!(
            messages_of(&set_of(json!({"type": "object", "properties": {"a": {"type": "string"}}})), None),
            [format!(
                "{at}.items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"
            )]
        );
        assert!(messages_of(&set_of(json!({"type": "object", "x-kubernetes-map-type": "atomic"})), None).is_empty());
        assert_eq!(
            messages_of(
                &set_of(json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}})),
                None
            ),
            [format!(
                "{at}.items.x-kubernetes-list-type: Invalid value: \"set\": must be atomic as item of a list with x-kubernetes-list-type=set"
            )]
        );
        let both = with_spec(json!({"type": "object", "properties": {"a": {"type": "string"}},
            "additionalProperties": {"type": "string"}}));
        assert_eq!(
            messages_of(&both, None),
            [
                "spec.validation.openAPIV3Schema.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
            ]
        );
    }

    #[test]
    fn a_webhook_conversion_needs_a_client_and_a_review_version_the_server_speaks() {
        let messages = |conversion: Value| -> Vec<String> {
            let mut c = crd();
            c["spec"]["conversion"] = conversion;
            messages_of(&c, None)
        };
        let client = json!({"url": "https://127.0.0.1:9443/convert"});
        let good = json!({"strategy": "Webhook", "webhook": {"clientConfig": client, "conversionReviewVersions": ["v2", "v1"]}});
        assert_eq!(messages(good), Vec::<String>::new());
        assert_eq!(
            messages(json!({"strategy": "Webhook"})),
            [
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value"
            ]
        );
        assert_eq!(
            messages(json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://x/convert"},
                                                              "conversionReviewVersions": ["v2", "v2", "V3"]}})),
            [
                "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme".to_string()
                    + crate::webhook_configuration::FORM,
                "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version".into(),
                "spec.conversion.conversionReviewVersions[2]: Invalid value: \"V3\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".into(),
                "spec.conversion.conversionReviewVersions: Invalid value: [\"v2\",\"v2\",\"V3\"]: must include at least one of v1, v1beta1".into(),
            ]
        );
        assert_eq!(
            messages(
                json!({"strategy": "None", "webhook": {"clientConfig": client, "conversionReviewVersions": ["v1"]}})
            ),
            [
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"
            ]
        );
    }

    #[test]
    fn what_every_version_shares_is_checked_once_as_the_definition_s_own() {
        let bad_schema = json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"properties": {}}}}});
        let scale = json!({"scale": {"specReplicasPath": "spec.replicas", "statusReplicasPath": ".status.replicas"}});
        let column = json!([{"name": "Age", "type": "duration", "jsonPath": ".metadata.creationTimestamp"}]);
        let version = |name: &str, storage: bool| {
            json!({"name": name, "served": true, "storage": storage, "schema": bad_schema,
                   "subresources": scale, "additionalPrinterColumns": column})
        };
        let mut c = crd();
        c["spec"]["versions"] = json!([version("v1", true), version("v2", false)]);
        assert_eq!(
            fields(validate(&c).unwrap_err()),
            [
                "spec.validation.openAPIV3Schema.properties[spec].type",
                "spec.subresources.scale.specReplicasPath",
                "spec.additionalPrinterColumns[0].type",
            ]
        );
        // Versions that differ are checked one by one.
        c["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["extra"] = json!({"type": "string"});
        c["spec"]["versions"][1]["subresources"] = json!({"status": {}});
        c["spec"]["versions"][1]["additionalPrinterColumns"] = json!([]);
        assert_eq!(
            fields(validate(&c).unwrap_err()),
            [
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].type",
                "spec.versions[0].subresources.scale.specReplicasPath",
                "spec.versions[0].additionalPrinterColumns[0].type",
                "spec.versions[1].schema.openAPIV3Schema.properties[spec].type",
            ]
        );
    }
}
