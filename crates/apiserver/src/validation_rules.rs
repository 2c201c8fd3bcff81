//! Validation rules of custom resources: the CEL expressions of a CustomResourceDefinition
//! version's `x-kubernetes-validations`, evaluated on every write of a custom resource as
//! kube-apiserver's apiextensions server evaluates them.
//!
//! A rule sits on a node of the structural schema; `self` is the value at that node (with the
//! schema's types: `integer` an int, `number` a double, `date-time` strings timestamps,
//! `byte` strings bytes; at the root, of `metadata` only `name` and `generateName`). A rule
//! that names `oldSelf` is a transition rule: it runs on updates only, where the node's old
//! value correlates (object properties by name, map values by key, `x-kubernetes-list-type:
//! map` items by their keys), unless `optionalOldSelf` makes `oldSelf` an optional that is
//! empty on create. On an update, a rule that does not name `oldSelf` and fails where the
//! value (or, for a value that does not correlate, its nearest ancestor that does) is the same
//! as the old one gives a warning, not an error (kube's validation ratcheting): an object
//! stored before a rule was added can still be changed elsewhere.
//!
//! Invariants: programs are compiled once per rule text and shared; evaluation never changes
//! the object; a failure is one 422 cause in kube's words (`Invalid value: <message>` for an
//! object or a list, `Invalid value: 7: <message>` for a scalar, as v1.35 prints them;
//! `failed rule: <rule>` without a message, `messageExpression`'s string when it gives one, the
//! cause's `reason` and `fieldPath` when the rule sets them); an error while evaluating is the
//! cause `<error> evaluating rule: <rule>`. Rules are not evaluated when the schema's own checks
//! found a type, enum, required or size error, as kube refuses to evaluate them then.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use cel::objects::{Key, Map as CelMap, OptionalValue};
use cel::{Context, Env, ExecutionError, Program, Value as Cel};
use parking_lot::Mutex;
use serde_json::Value;

use crate::cel_check::{self, Ty};
use crate::structural::{Cause, go_quote, go_value, join};

/// The environment rules are compiled and run in: CEL's standard library with the optional
/// types, its strings and lists extensions, and kube's libraries (`cel_library`).
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    // Each is registered once, on a new environment: none can clash.
    let _ = cel::extensions::strings(&mut env);
    let _ = cel::extensions::lists(&mut env);
    let _ = crate::cel_library::register(&mut env);
    let _ = crate::cel_quantity::register(&mut env);
    let _ = crate::cel_network::register(&mut env);
    let _ = crate::cel_url::register(&mut env);
    let _ = crate::cel_semver::register(&mut env);
    let _ = crate::cel_format::register(&mut env);
    let _ = crate::cel_authz::register(&mut env);
    let _ = crate::cel_comprehension::register(&mut env);
    Arc::new(env)
});

/// The environment CEL expressions of the server run in (validation rules and admission
/// policies).
pub(crate) fn env() -> Arc<Env> {
    ENV.clone()
}

/// A JSON value as a CEL value of no schema (objects as maps).
pub(crate) fn json_to_cel(v: &Value) -> Cel {
    to_cel(None, v, false)
}

/// A rule's compiled program, or why it does not compile.
type Compiled = Result<Arc<Program>, String>;

/// Programs by their source text.
static PROGRAMS: LazyLock<Mutex<HashMap<String, Compiled>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The program of `source`, compiled once.
pub(crate) fn compile(source: &str) -> Compiled {
    if let Some(c) = PROGRAMS.lock().get(source) {
        return c.clone();
    }
    let compiled = ENV.compile(source).map(Arc::new).map_err(|errors| {
        let shown: Vec<String> = errors
            .errors
            .iter()
            .map(|e| {
                let (line, column) = (e.pos.0.max(1) as usize, (e.pos.1.max(1) - 1) as usize);
                crate::cel_check::display_at(source, line, column, &e.msg)
            })
            .collect();
        shown.join("\n")
    });
    PROGRAMS.lock().insert(source.to_string(), compiled.clone());
    compiled
}

/// The cause reasons a rule may name, as kube lists them.
const REASONS: [&str; 4] = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];

/// A rule as kube-apiserver v1.35 prints it in a definition's errors: its ValidationRule as
/// Go's JSON encoder writes it (Go's field names; `<`, `>` and `&` escaped).
fn go_rule(rule: &Value) -> String {
    let text = |k: &str| Value::String(rule.get(k).and_then(Value::as_str).unwrap_or("").to_string());
    let or_null = |k: &str| rule.get(k).filter(|v| v.is_string() || v.is_boolean()).cloned().unwrap_or(Value::Null);
    let fields = [
        ("Rule", text("rule")),
        ("Message", text("message")),
        ("MessageExpression", text("messageExpression")),
        ("Reason", or_null("reason")),
        ("FieldPath", text("fieldPath")),
        ("OptionalOldSelf", or_null("optionalOldSelf")),
    ];
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    format!("{{{}}}", body.join(",")).replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

/// How a definition's rules are held to kube's cost budgets when it is written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Budget {
    /// Not at all: kube estimates the rules of structural schemas only.
    Unchecked,
    /// The schema's total only: an update leaves the version's schema as it was.
    Total,
    /// Each rule and message expression, and the schema's total.
    Full,
}

/// The rules' costs as a schema is walked: its total and its most expensive rules.
struct Costs {
    budget: Budget,
    total: u64,
    /// The rules costing at least a hundredth of the total's limit, most expensive first
    /// (four at most).
    expensive: Vec<(String, u64)>,
}

impl Costs {
    fn observe(&mut self, field: &str, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < crate::cel_cost::TOTAL_LIMIT / 100 {
            return;
        }
        let at = self.expensive.iter().position(|(_, c)| *c < cost).unwrap_or(self.expensive.len());
        self.expensive.insert(at, (field.to_string(), cost));
        self.expensive.truncate(4);
    }

    /// Reports `cost` at `field` if it is over a rule's limit, and adds it to the total.
    fn judge(&mut self, field: String, what: &str, cost: u64, causes: &mut Vec<Cause>) {
        if self.budget == Budget::Full && cost > crate::cel_cost::RULE_LIMIT {
            causes
                .push(forbidden(field.clone(), &crate::cel_cost::over_budget(what, cost, crate::cel_cost::RULE_LIMIT)));
        }
        self.observe(&field, cost);
    }
}

fn forbidden(field: String, detail: &str) -> Cause {
    Cause { reason: "FieldValueForbidden", message: format!("Forbidden: {detail}"), field }
}

/// Checks the rules of a definition's schema (`path` is the schema's field path): each must
/// be given and compile, its message be one line, its reason one kube knows, its `fieldPath`
/// name a field of the schema, `oldSelf` be used only where old values correlate, and their
/// estimated costs be within kube's budgets. As kube, a node's rules are compiled only when
/// neither they nor the nodes below have such schema errors, and every schema error is
/// reported before every compilation error.
pub(crate) fn check_rules(schema: &Value, path: &str, budget: Budget, causes: &mut Vec<Cause>) {
    let mut found =
        Found { schema: Vec::new(), cel: Vec::new(), costs: Costs { budget, total: 0, expensive: Vec::new() } };
    check_node(schema, path, true, None, Some(1), false, &mut found);
    causes.append(&mut found.schema);
    causes.append(&mut found.cel);
    // Rules of unchecked schemas are not compiled: their total stays 0.
    let costs = found.costs;
    if costs.total > crate::cel_cost::TOTAL_LIMIT {
        for (field, _) in &costs.expensive {
            causes.push(forbidden(
                field.clone(),
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        let what = "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema";
        causes.push(forbidden(
            path.to_string(),
            &crate::cel_cost::over_budget(what, costs.total, crate::cel_cost::TOTAL_LIMIT),
        ));
    }
}

/// What checking a schema's rules finds: errors in the rules' own fields, errors of their
/// compilation (and costs), and the costs so far.
struct Found {
    schema: Vec<Cause>,
    cel: Vec<Cause>,
    costs: Costs,
}

/// Checks the rules at `node` and below (the nodes below first, as kube); `cardinality` is how
/// many times a value at `node` can occur in one object (`None` where a list or map above it
/// has no limit); `replaced` when kube declares the node's type itself (a resource root's
/// `kind`, `apiVersion`, `metadata` and below, see [`crate::cel_cost::replaces_meta`]).
fn check_node(
    node: &Value,
    path: &str,
    root: bool,
    uncorrelatable: Option<&str>,
    cardinality: Option<u64>,
    replaced: bool,
    found: &mut Found,
) {
    let Some(m) = node.as_object() else { return };
    let resource_root = root || node.get("x-kubernetes-embedded-resource").and_then(Value::as_bool) == Some(true);
    let replaces = resource_root && crate::cel_cost::replaces_meta(node);
    let schema_errors_before = found.schema.len();
    let below = match (cardinality, crate::cel_cost::fan_out(node)) {
        (Some(c), Some(f)) => Some(c.saturating_mul(f)),
        _ => None,
    };
    if let Some(add) = m.get("additionalProperties").filter(|a| a.is_object()) {
        let at = format!("{path}.additionalProperties");
        check_node(add, &at, false, uncorrelatable, below, replaced, found);
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, child) in props {
            let replaced = replaced || replaces && matches!(k.as_str(), "kind" | "apiVersion" | "metadata");
            let at = format!("{path}.properties[{k}]");
            check_node(child, &at, false, uncorrelatable, below, replaced, found);
        }
    }
    if let Some(items) = m.get("items").filter(|i| i.is_object()) {
        let is_map = m.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map");
        let under = format!("{path}.items");
        let uncorrelatable = match uncorrelatable {
            Some(u) => Some(u.to_string()),
            None if !is_map => Some(path.to_string()),
            None => None,
        };
        check_node(items, &under, false, uncorrelatable.as_deref(), below, replaced, found);
    }
    let Some(rules) = m.get("x-kubernetes-validations").and_then(Value::as_array) else { return };
    for (i, rule) in rules.iter().enumerate() {
        rule_fields(rule, &format!("{path}.x-kubernetes-validations[{i}]"), node, &mut found.schema);
    }
    // kube compiles the rules of structural schemas only, and of nodes with no schema errors
    // at or below them.
    if found.schema.len() > schema_errors_before || found.costs.budget == Budget::Unchecked {
        return;
    }
    let runs = cardinality.unwrap_or_else(|| crate::cel_cost::unbounded_cardinality(node));
    let at_node = Node { schema: node, root, runs, replaced };
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        compile_rule(rule, &at, &at_node, uncorrelatable, &mut found.costs, &mut found.cel);
    }
}

/// The schema node rules sit on, and how many times they can run in one object.
struct Node<'a> {
    schema: &'a Value,
    root: bool,
    runs: u64,
    /// Whether kube declares the node's type itself: its rules are typed `dyn` here and
    /// costed at nothing (the least they could cost).
    replaced: bool,
}

impl Node<'_> {
    /// The type of `self` in the node's rules.
    fn self_type(&self) -> Ty<'_> {
        if self.replaced { Ty::Dyn } else { Ty::of_schema(self.schema, self.root) }
    }

    /// The estimated cost of one run of an expression checked on the node.
    fn cost(&self, program: &Program, types: &cel_check::Types<'_>) -> u64 {
        if self.replaced { 0 } else { crate::cel_cost::estimate(program, types, self.schema, self.root) }
    }
}

/// Compiles `source` and checks it with `self_ty` as `self`: the program, its type and its
/// parts' types, or cel-go's errors.
fn compile_checked<'s>(
    source: &str,
    self_ty: Ty<'s>,
    optional_old_self: bool,
) -> Result<(Arc<Program>, Ty<'s>, cel_check::Types<'s>), String> {
    let program = compile(source)?;
    let (ty, types) = cel_check::check_typed(&program, source, self_ty, optional_old_self)?;
    Ok((program, ty, types))
}

fn required(field: String, detail: &str) -> Cause {
    Cause { reason: "FieldValueRequired", message: format!("Required value: {detail}"), field }
}

fn invalid(field: String, value: &str, detail: &str) -> Cause {
    Cause { reason: "FieldValueInvalid", message: format!("Invalid value: {value}: {detail}"), field }
}

/// kube's checks of a rule's own fields (`at` is the rule's field path, `node` the schema it
/// sits on).
fn rule_fields(rule: &Value, at: &str, node: &Value, causes: &mut Vec<Cause>) {
    let text = rule.get("rule").and_then(Value::as_str).unwrap_or("");
    let message = rule.get("message").and_then(Value::as_str).unwrap_or("");
    let line_breaks = |s: &str| s.contains(['\n', '\r']);
    if text.trim().is_empty() {
        causes.push(required(format!("{at}.rule"), "rule is not specified"));
    } else if !message.is_empty() && message.trim().is_empty() {
        causes.push(invalid(format!("{at}.message"), &go_quote(message), "must be non-empty if specified"));
    } else if line_breaks(message.trim()) {
        causes.push(invalid(format!("{at}.message"), &go_quote(message), "must not contain line breaks"));
    } else if line_breaks(text.trim()) && message.trim().is_empty() {
        causes.push(required(format!("{at}.message"), "message must be specified if rule contains line breaks"));
    }
    let expression = rule.get("messageExpression").and_then(Value::as_str).unwrap_or("");
    if !expression.is_empty() && expression.trim().is_empty() {
        causes.push(required(format!("{at}.messageExpression"), "messageExpression must be non-empty if specified"));
    }
    if let Some(reason) = rule.get("reason").and_then(Value::as_str)
        && !REASONS.contains(&reason)
    {
        let supported: Vec<String> = REASONS.iter().map(|r| go_quote(r)).collect();
        causes.push(Cause {
            reason: "FieldValueNotSupported",
            message: format!("Unsupported value: {}: supported values: {}", go_quote(reason), supported.join(", ")),
            field: format!("{at}.reason"),
        });
    }
    let field_path = rule.get("fieldPath").and_then(Value::as_str).unwrap_or("");
    let quoted = go_quote(field_path);
    if !field_path.is_empty() && field_path.trim().is_empty() {
        causes.push(invalid(format!("{at}.fieldPath"), &quoted, "must be non-empty if specified"));
    }
    if line_breaks(field_path) {
        causes.push(invalid(format!("{at}.fieldPath"), &quoted, "must not contain line breaks"));
    }
    if !field_path.is_empty() && !valid_field_path(field_path, node) {
        causes.push(invalid(format!("{at}.fieldPath"), &quoted, "must be a valid path"));
    }
}

/// kube's tokens of a JSON path (`ValidFieldPath`'s scanner): `.`, `[` and `]` alone, a
/// single-quoted string, or the text between them.
pub(crate) fn json_path_tokens(path: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        let end = if rest.starts_with('\'') {
            let b = rest.as_bytes();
            (1..b.len()).find(|&i| b[i] == b'\'' && b[i - 1] != b'\\').map_or(rest.len(), |i| i + 1)
        } else if rest.starts_with(['.', '[', ']']) {
            1
        } else {
            rest.find(['.', '[', ']']).unwrap_or(rest.len())
        };
        tokens.push(&rest[..end]);
        rest = &rest[end..];
    }
    tokens
}

/// Whether `path` (`.a.b`, `.a['b.c']`, a map's key as `.m.k` or `.m['k']`) reaches a field of
/// `node`'s schema, read as kube reads a rule's `fieldPath`.
fn valid_field_path(path: &str, node: &Value) -> bool {
    let tokens = json_path_tokens(path);
    let mut at = Some(node);
    let mut tokens = tokens.into_iter();
    while let Some(token) = tokens.next() {
        let name = match token {
            "[" => {
                let Some(quoted) = tokens.next().filter(|t| t.len() >= 2 && t.starts_with('\'') && t.ends_with('\''))
                else {
                    return false;
                };
                let Some(name) = unescape_single_quoted(&quoted[1..quoted.len() - 1]) else { return false };
                if tokens.next() != Some("]") {
                    return false;
                }
                name
            }
            "." => match tokens.next() {
                Some(name) => name.to_string(),
                None => return false,
            },
            _ => return false,
        };
        let Some(schema) = at else { return false };
        // An empty `properties` is none, as in kube's structural schema.
        at = if let Some(props) = schema.get("properties").and_then(Value::as_object).filter(|p| !p.is_empty()) {
            match props.get(&name) {
                Some(p) => Some(p),
                None => return false,
            }
        } else if let Some(additional) = schema.get("additionalProperties") {
            Some(additional).filter(|a| a.is_object())
        } else {
            return false;
        };
    }
    true
}

/// A single-quoted string's text with Go's escapes (`\'`, `\\`, `\n`…) undone; `None` for an
/// escape Go does not know.
fn unescape_single_quoted(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('a') => '\u{7}',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('v') => '\u{b}',
            Some('\'') => '\'',
            Some('\\') => '\\',
            _ => return None,
        });
    }
    Some(out)
}

/// Compiles a rule (and its message expression) against the node it sits on, as kube does when
/// the definition is written: errors in cel-go's words, its cost judged, `oldSelf` where old
/// values correlate, `optionalOldSelf` only with `oldSelf`.
fn compile_rule(
    rule: &Value,
    at: &str,
    node: &Node<'_>,
    uncorrelatable: Option<&str>,
    costs: &mut Costs,
    causes: &mut Vec<Cause>,
) {
    let self_ty = node.self_type();
    let text = rule.get("rule").and_then(Value::as_str).unwrap_or("");
    let expression = rule.get("messageExpression").and_then(Value::as_str).unwrap_or("");
    if text.trim().is_empty() {
        return;
    }
    let optional_old_self = rule.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
    let compiled = match compile_checked(text, self_ty.clone(), optional_old_self) {
        Err(e) => {
            causes.push(invalid(format!("{at}.rule"), &go_rule(rule), &format!("compilation failed: {e}")));
            None
        }
        Ok((_, t, _)) if !matches!(t, Ty::Bool | Ty::Dyn | Ty::Error) => {
            causes.push(invalid(format!("{at}.rule"), &go_rule(rule), "cel expression must evaluate to a bool"));
            None
        }
        Ok((program, _, types)) => {
            let cost = node.cost(&program, &types).saturating_mul(node.runs);
            costs.judge(format!("{at}.rule"), "estimated rule cost", cost, causes);
            Some(program)
        }
    };
    // As kube, a message expression is compiled only with its rule.
    if compiled.is_some() && !expression.trim().is_empty() {
        let invalid_expression = |detail: &str| invalid(format!("{at}.messageExpression"), &go_rule(rule), detail);
        match compile_checked(expression, self_ty, optional_old_self) {
            Err(e) => causes.push(invalid_expression(&format!("messageExpression compilation failed: {e}"))),
            Ok((_, t, _)) if !matches!(t, Ty::String | Ty::Dyn | Ty::Error) => {
                causes.push(invalid_expression("messageExpression must evaluate to a string"));
            }
            Ok((program, _, types)) => {
                let cost = node.cost(&program, &types);
                costs.judge(format!("{at}.messageExpression"), "estimated messageExpression cost", cost, causes);
            }
        }
    }
    if compiled.is_some_and(|p| p.references().has_variable("oldSelf")) {
        if let Some(u) = uncorrelatable {
            causes.push(invalid(
                format!("{at}.rule"),
                &go_quote(text),
                &format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {u}"),
            ));
        }
    } else if let Some(optional) = rule.get("optionalOldSelf").and_then(Value::as_bool) {
        causes.push(invalid(
            format!("{at}.optionalOldSelf"),
            &optional.to_string(),
            "may not be set if oldSelf is not used in rule",
        ));
    }
}

/// The schema errors that keep rules from being evaluated.
const BLOCKING: [&str; 5] =
    ["FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany", "FieldValueTypeInvalid"];

/// The cause kube adds instead of evaluating rules on an object the schema refused.
fn not_checked() -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        message: "Invalid value: null: some validation rules were not checked because the object was invalid; \
                  correct the existing errors to complete validation"
            .into(),
        field: "<nil>".into(),
    }
}

/// Evaluates the rules of `schema` on `obj` (a whole custom resource, defaulted), `old` being
/// the stored object on an update; appends the failures to `causes`, which holds the schema's.
pub fn validate(schema: &Value, obj: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    if !has_rules(schema) {
        return;
    }
    if causes.iter().any(|c| BLOCKING.contains(&c.reason)) {
        causes.push(not_checked());
        return;
    }
    let mut walk = Walk { causes, update: old.is_some(), ratchet: true };
    walk.node(schema, obj, old, None, "", true);
}

/// Evaluates the rules of `node` (a schema node below the root) and below on `v`, named
/// `path`, as kube checks a default: `oldSelf` is the value itself and nothing is ratcheted.
pub(crate) fn validate_value(node: &Value, v: &Value, path: &str, causes: &mut Vec<Cause>) {
    let mut walk = Walk { causes, update: true, ratchet: false };
    walk.node(node, v, Some(v), None, path, false);
}

/// Whether any node of `schema` has rules.
pub(crate) fn has_rules(schema: &Value) -> bool {
    let Some(m) = schema.as_object() else { return false };
    m.get("x-kubernetes-validations").and_then(Value::as_array).is_some_and(|r| !r.is_empty())
        || m.get("properties").and_then(Value::as_object).is_some_and(|p| p.values().any(has_rules))
        || m.get("items").is_some_and(has_rules)
        || m.get("additionalProperties").is_some_and(has_rules)
}

struct Walk<'a> {
    causes: &'a mut Vec<Cause>,
    /// Whether the write is an update (transition rules run only then, unless optional).
    update: bool,
    /// Whether failures on unchanged values are warnings.
    ratchet: bool,
}

/// A node's value and its correlated old value as CEL values, converted once for all the
/// node's rules, when the first rule needs them.
struct NodeValues<'a> {
    node: &'a Value,
    root: bool,
    new: std::cell::OnceCell<Cel>,
    old: std::cell::OnceCell<Option<Cel>>,
}

impl NodeValues<'_> {
    fn new_value(&self, v: &Value) -> Cel {
        self.new.get_or_init(|| to_cel(Some(self.node), v, self.root)).clone()
    }

    fn old_value(&self, old: Option<&Value>) -> Option<Cel> {
        self.old.get_or_init(|| old.map(|o| to_cel(Some(self.node), o, self.root))).clone()
    }
}

impl Walk<'_> {
    /// Evaluates the rules at `node` and below; `nearest` is the nearest node at or above this
    /// one whose value correlates with an old one, as (new, old), for ratcheting.
    fn node<'v>(
        &mut self,
        node: &Value,
        v: &'v Value,
        old: Option<&'v Value>,
        nearest: Option<(&'v Value, &'v Value)>,
        path: &str,
        root: bool,
    ) {
        let nearest = old.map(|o| (v, o)).or(nearest);
        if let Some(rules) = node.get("x-kubernetes-validations").and_then(Value::as_array)
            && (root || !v.is_null())
        {
            let values = NodeValues { node, root, new: Default::default(), old: Default::default() };
            // Failures where that node is unchanged are warnings (kube's ratcheting).
            let unchanged = std::cell::OnceCell::new();
            let unchanged = || *unchanged.get_or_init(|| nearest.is_some_and(|(n, o)| n == o));
            for rule in rules {
                self.rule(&values, rule, v, old, path, &unchanged);
            }
        }
        match v {
            Value::Object(m) => {
                let props = node.get("properties").and_then(Value::as_object);
                let additional = node.get("additionalProperties").filter(|a| a.is_object());
                for (k, child) in m {
                    if root && k == "metadata" {
                        continue;
                    }
                    let old_child = old.and_then(|o| o.get(k));
                    if let Some(s) = props.and_then(|p| p.get(k)) {
                        self.node(s, child, old_child, nearest, &join(path, k), false);
                    } else if let Some(s) = additional {
                        self.node(s, child, old_child, nearest, &format!("{path}[{k}]"), false);
                    }
                }
            }
            Value::Array(items) => {
                let Some(s) = node.get("items").filter(|s| s.is_object()) else { return };
                let keys = crate::structural::map_keys(node);
                let old_items = old.and_then(Value::as_array);
                for (i, item) in items.iter().enumerate() {
                    // Only a map-type list's items correlate with old ones (by their keys).
                    let old_item = match old_items {
                        Some(olds) if !keys.is_empty() => {
                            olds.iter().find(|o| keys.iter().all(|k| o.get(*k) == item.get(*k)))
                        }
                        _ => None,
                    };
                    self.node(s, item, old_item, nearest, &format!("{path}[{i}]"), false);
                }
            }
            _ => {}
        }
    }

    fn rule(
        &mut self,
        values: &NodeValues<'_>,
        rule: &Value,
        v: &Value,
        old: Option<&Value>,
        path: &str,
        unchanged: &dyn Fn() -> bool,
    ) {
        let node = values.node;
        let text = rule.get("rule").and_then(Value::as_str).unwrap_or("");
        let program = match compile(text) {
            Ok(p) => p,
            Err(e) => {
                self.causes.push(invalid_at(path, node, &format!("rule compile error: {e}")));
                return;
            }
        };
        let transition = program.references().has_variable("oldSelf");
        let optional_old = rule.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
        if transition && old.is_none() && !optional_old {
            return;
        }
        let mut ctx = Context::with_env(ENV.clone());
        ctx.add_variable_from_value("self", values.new_value(v));
        if transition {
            let old_value = values.old_value(old);
            if optional_old {
                let opt = match old_value {
                    Some(o) => OptionalValue::of(o),
                    None => OptionalValue::none(),
                };
                ctx.add_variable_from_value("oldSelf", Cel::Opaque(Arc::new(opt)));
            } else if let Some(o) = old_value {
                ctx.add_variable_from_value("oldSelf", o);
            }
        }
        let message = rule.get("message").and_then(Value::as_str).map(str::trim).filter(|m| !m.is_empty());
        // What kube names a rule by in its errors: its message, else its text.
        let named = message.map_or_else(|| text.trim().to_string(), str::to_string);
        match program.execute(&ctx) {
            Ok(Cel::Bool(true)) => {}
            Ok(_) => {
                let detail = rule
                    .get("messageExpression")
                    .and_then(Value::as_str)
                    .filter(|m| !m.trim().is_empty())
                    .and_then(|m| message_expression(m, &ctx))
                    .or_else(|| message.map(str::to_string))
                    .unwrap_or_else(|| format!("failed rule: {named}"));
                let mut at = path.to_string();
                if let Some(fp) = rule.get("fieldPath").and_then(Value::as_str).filter(|p| !p.is_empty()) {
                    at = join_field_path(&at, fp);
                }
                let reason = rule.get("reason").and_then(Value::as_str).unwrap_or("FieldValueInvalid");
                let cause = for_reason(reason, &at, v, &detail);
                if !transition && self.update && self.ratchet && unchanged() {
                    crate::warning::record(format!("{}: {}", cause.field, cause.message));
                } else {
                    self.causes.push(cause);
                }
            }
            Err(e) => {
                let detail = match &e {
                    ExecutionError::NoSuchOverload(_) => format!(
                        "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {named}"
                    ),
                    other => format!("{} evaluating rule: {named}", error_text(other)),
                };
                self.causes.push(invalid_at(path, node, &detail));
            }
        }
    }
}

/// The string a rule's `messageExpression` gives, if it gives a usable one (a non-empty string
/// of one line); otherwise the rule's message is used.
fn message_expression(source: &str, ctx: &Context) -> Option<String> {
    let program = compile(source).ok()?;
    match program.execute(ctx) {
        Ok(Cel::String(s)) if !s.trim().is_empty() && !s.contains(['\n', '\r']) => Some(s.trim().to_string()),
        _ => None,
    }
}

/// An evaluation error as cel-go words the common ones.
pub(crate) fn error_text(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(..) => "integer overflow".into(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {}", cel_plain(i)),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

fn cel_plain(v: &Cel) -> String {
    match v {
        Cel::Int(i) => i.to_string(),
        Cel::UInt(u) => u.to_string(),
        Cel::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

/// The node's schema type as kube shows it in place of the value.
fn schema_type(node: &Value) -> &str {
    node.get("type").and_then(Value::as_str).unwrap_or("")
}

fn shown_path(path: &str) -> String {
    if path.is_empty() { "<nil>".into() } else { path.to_string() }
}

fn invalid_at(path: &str, node: &Value, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {}: {detail}", go_quote(schema_type(node))),
        field: shown_path(path),
    }
}

/// A failed rule's cause, by the `reason` it names. As kube-apiserver v1.35 prints it, a
/// scalar's value is shown and an object's or a list's is not.
fn for_reason(reason: &str, path: &str, v: &Value, detail: &str) -> Cause {
    let field = shown_path(path);
    let shown = match v {
        Value::Object(_) | Value::Array(_) => None,
        scalar => Some(go_value(scalar)),
    };
    match reason {
        "FieldValueForbidden" => {
            Cause { reason: "FieldValueForbidden", message: format!("Forbidden: {detail}"), field }
        }
        "FieldValueRequired" => {
            Cause { reason: "FieldValueRequired", message: format!("Required value: {detail}"), field }
        }
        "FieldValueDuplicate" => Cause {
            reason: "FieldValueDuplicate",
            message: shown.map_or_else(|| "Duplicate value".into(), |s| format!("Duplicate value: {s}")),
            field,
        },
        _ => Cause {
            reason: "FieldValueInvalid",
            message: match shown {
                Some(s) => format!("Invalid value: {s}: {detail}"),
                None => format!("Invalid value: {detail}"),
            },
            field,
        },
    }
}

/// `fieldPath` (`.spec.x`, `.x['a.b']`, `.x[0]`) appended to the rule's node path as kube
/// prints paths (`spec.x`, `x[a.b]`).
fn join_field_path(base: &str, field_path: &str) -> String {
    let mut out = base.to_string();
    let mut rest = field_path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out = join(&out, &r[..end]);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else { break };
            let inner = r[..end].trim_matches(|c| c == '\'' || c == '"');
            out.push('[');
            out.push_str(inner);
            out.push(']');
            rest = &r[end + 1..];
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            out = join(&out, &rest[..end]);
            rest = &rest[end..];
        }
    }
    out
}

/// `v` as a CEL value of `node`'s type.
fn to_cel(node: Option<&Value>, v: &Value, root: bool) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            let number_typed = node.is_some_and(|s| schema_type(s) == "number");
            match n.as_i64() {
                Some(i) if !number_typed => Cel::Int(i),
                _ => match n.as_u64() {
                    Some(u) if !number_typed => Cel::UInt(u),
                    _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
                },
            }
        }
        Value::String(s) => string_to_cel(node.and_then(|n| n.get("format")).and_then(Value::as_str), s),
        Value::Array(items) => {
            let item_schema = node.and_then(|n| n.get("items")).filter(|s| s.is_object());
            Cel::List(Arc::new(items.iter().map(|i| to_cel(item_schema, i, false)).collect()))
        }
        Value::Object(m) => {
            let props = node.and_then(|n| n.get("properties")).and_then(Value::as_object);
            let additional = node.and_then(|n| n.get("additionalProperties")).filter(|a| a.is_object());
            let mut out = HashMap::with_capacity(m.len());
            for (k, child) in m {
                let value = if root && k == "metadata" {
                    let names = ["name", "generateName"];
                    let kept = child.as_object().map(|meta| {
                        meta.iter()
                            .filter(|(k, _)| names.contains(&k.as_str()))
                            .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(None, v, false)))
                            .collect::<HashMap<_, _>>()
                    });
                    Cel::Map(CelMap { map: Arc::new(kept.unwrap_or_default()) })
                } else if let Some(s) = props.and_then(|p| p.get(k)) {
                    // A property is reached by its CEL name; one CEL cannot name is left out.
                    let Some(name) = cel_check::escape(k) else { continue };
                    out.insert(Key::String(Arc::new(name)), to_cel(Some(s), child, false));
                    continue;
                } else {
                    to_cel(additional, child, false)
                };
                out.insert(Key::String(Arc::new(k.clone())), value);
            }
            Cel::Map(CelMap { map: Arc::new(out) })
        }
    }
}

/// A string of a `format` that kube's CEL types: timestamps, dates and bytes.
fn string_to_cel(format: Option<&str>, s: &str) -> Cel {
    use base64::Engine;
    match format {
        Some("date-time") => match chrono::DateTime::parse_from_rfc3339(s) {
            Ok(t) => Cel::Timestamp(t),
            Err(_) => Cel::String(Arc::new(s.to_string())),
        },
        Some("date") => match chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            Ok(d) => Cel::Timestamp(d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc().fixed_offset()),
            Err(_) => Cel::String(Arc::new(s.to_string())),
        },
        Some("byte") => match base64::engine::general_purpose::STANDARD.decode(s) {
            Ok(b) => Cel::Bytes(Arc::new(b)),
            Err(_) => Cel::String(Arc::new(s.to_string())),
        },
        _ => Cel::String(Arc::new(s.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut causes = Vec::new();
        validate(schema, obj, old, &mut causes);
        causes
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas cannot be larger than maxReplicas"},
                {"rule": "!has(self.mode) || self.mode.startsWith('m')"}
            ],
            "properties": {
                "minReplicas": {"type": "integer"},
                "maxReplicas": {"type": "integer"},
                "mode": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "mode is immutable"}
                ]}
            }
        }}})
    }

    #[test]
    fn a_false_rule_is_a_cause_in_kube_words() {
        let s = schema();
        let ok = json!({"spec": {"minReplicas": 1, "maxReplicas": 2}});
        assert_eq!(run(&s, &ok, None), vec![]);
        let bad = json!({"spec": {"minReplicas": 3, "maxReplicas": 2, "mode": "x"}});
        let causes = run(&s, &bad, None);
        assert_eq!(causes.len(), 2, "{causes:?}");
        assert_eq!(causes[0].field, "spec");
        assert_eq!(causes[0].message, "Invalid value: minReplicas cannot be larger than maxReplicas");
        assert_eq!(causes[1].message, "Invalid value: failed rule: !has(self.mode) || self.mode.startsWith('m')");
    }

    #[test]
    fn transition_rules_run_on_updates_where_the_old_value_correlates() {
        let s = schema();
        let old = json!({"spec": {"minReplicas": 1, "maxReplicas": 2, "mode": "manual"}});
        let new = json!({"spec": {"minReplicas": 1, "maxReplicas": 2, "mode": "more"}});
        assert_eq!(run(&s, &new, None), vec![]);
        let causes = run(&s, &new, Some(&old));
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(causes[0].field, "spec.mode");
        assert_eq!(causes[0].message, "Invalid value: \"more\": mode is immutable");
    }

    #[tokio::test]
    async fn failures_on_unchanged_values_are_warnings() {
        let s = schema();
        let old = json!({"spec": {"minReplicas": 3, "maxReplicas": 2}, "status": {}});
        let new = json!({"spec": {"minReplicas": 3, "maxReplicas": 2}, "status": {"x": 1}});
        let (causes, warnings) = crate::warning::collect(async { run(&s, &new, Some(&old)) }).await;
        assert_eq!(causes, vec![]);
        assert_eq!(warnings, ["spec: Invalid value: minReplicas cannot be larger than maxReplicas"]);
        let changed = json!({"spec": {"minReplicas": 4, "maxReplicas": 2}});
        let (causes, warnings) = crate::warning::collect(async { run(&s, &changed, Some(&old)) }).await;
        assert_eq!(causes.len(), 1);
        assert!(warnings.is_empty());

        // Items of a list that is not a map do not correlate: their list, unchanged, ratchets them.
        let s = json!({"type": "object", "properties": {"n": {"type": "integer"}, "tags": {"type": "array",
            "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3", "message": "short"}]}}}});
        let old = json!({"tags": ["long"], "n": 1});
        let (causes, warnings) =
            crate::warning::collect(async { run(&s, &json!({"tags": ["long"], "n": 2}), Some(&old)) }).await;
        assert_eq!((causes, warnings), (vec![], vec!["tags[0]: Invalid value: \"long\": short".to_string()]));
        let causes = run(&s, &json!({"tags": ["long", "x"], "n": 2}), Some(&old));
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(causes[0].field, "tags[0]");
    }

    #[test]
    fn evaluation_errors_name_the_rule() {
        let s = json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.spec.size > 1"}],
                       "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}});
        let causes = run(&s, &json!({"apiVersion": "a/v1", "kind": "K", "spec": {}}), None);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "<nil>");
        assert_eq!(
            causes[0].message,
            "Invalid value: \"object\": no such key: size evaluating rule: self.spec.size > 1"
        );
    }

    #[test]
    fn reason_field_path_and_message_expression() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{
                "rule": "self.replicas <= 10",
                "messageExpression": "'replicas ' + string(self.replicas) + ' is over 10'",
                "reason": "FieldValueForbidden",
                "fieldPath": ".replicas"
            }],
            "properties": {"replicas": {"type": "integer"}}}}});
        let causes = run(&s, &json!({"spec": {"replicas": 11}}), None);
        assert_eq!(
            causes,
            vec![Cause {
                reason: "FieldValueForbidden",
                message: "Forbidden: replicas 11 is over 10".into(),
                field: "spec.replicas".into()
            }]
        );
    }

    #[test]
    fn root_metadata_shows_only_the_names() {
        let s = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('a') && !has(self.metadata.labels)"}]});
        let obj = json!({"metadata": {"name": "abc", "labels": {"x": "y"}}});
        assert_eq!(run(&s, &obj, None), vec![]);
    }

    #[test]
    fn schema_errors_that_block_keep_rules_from_running() {
        let s = schema();
        let mut causes =
            vec![Cause { reason: "FieldValueTypeInvalid", message: "m".into(), field: "spec.minReplicas".into() }];
        validate(&s, &json!({"spec": {"minReplicas": "x", "maxReplicas": 2}}), None, &mut causes);
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[1], not_checked());
    }

    #[test]
    fn map_list_items_correlate_by_key() {
        let s = json!({"type": "object", "properties": {"items": {"type": "array",
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "x-kubernetes-validations": [{"rule": "self.value >= oldSelf.value", "message": "may only grow"}],
                      "properties": {"name": {"type": "string"}, "value": {"type": "integer"}}}}}});
        let old = json!({"items": [{"name": "a", "value": 2}, {"name": "b", "value": 5}]});
        let new = json!({"items": [{"name": "b", "value": 4}, {"name": "c", "value": 0}, {"name": "a", "value": 3}]});
        let causes = run(&s, &new, Some(&old));
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(causes[0].field, "items[0]");
        assert_eq!(causes[0].message, "Invalid value: may only grow");
    }

    #[test]
    fn a_definition_s_rules_must_compile_and_correlate() {
        let s = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "integer"}}, "x-kubernetes-validations": [
                {"rule": "self.a >", "message": "m"},
                {"rule": "self.a > 1", "reason": "Bogus"},
                {"rule": " "}
            ]},
            "list": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10,
                "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}},
            "other": {"type": "object", "properties": {"a": {"type": "integer"}}, "x-kubernetes-validations": [
                {"rule": "self.a >"}
            ]}
        }});
        let mut causes = Vec::new();
        check_rules(&s, "spec.validation.openAPIV3Schema", Budget::Full, &mut causes);
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        // Errors in the rules' own fields come first, and keep the rules beside them from being
        // compiled (kube's order).
        assert_eq!(
            fields,
            [
                "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].reason",
                "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[2].rule",
                "spec.validation.openAPIV3Schema.properties[list].items.x-kubernetes-validations[0].rule",
                "spec.validation.openAPIV3Schema.properties[other].x-kubernetes-validations[0].rule",
            ]
        );
        assert_eq!(
            causes[0].message,
            "Unsupported value: \"Bogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
        );
        assert_eq!(causes[1].message, "Required value: rule is not specified");
        assert_eq!(
            causes[2].message,
            "Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[list]"
        );
        assert!(
            causes[3].message.starts_with(
                "Invalid value: {\"Rule\":\"self.a \\u003e\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: "
            ),
            "{}",
            causes[3].message
        );
    }

    #[test]
    fn rules_under_kube_s_own_declarations_and_unstructural_schemas_are_left_to_kube() {
        // kube declares a resource root's `metadata.name` itself (a plain string): the schema's
        // limit and format do not apply to the rules below it.
        let pattern = "a".repeat(100);
        let s = json!({"type": "object", "x-kubernetes-validations": [{"rule": "true"}], "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 1_000_000,
                "x-kubernetes-validations": [{"rule": format!("self.matches('{pattern}')")}]}}}}});
        let mut causes = Vec::new();
        check_rules(&s, "v", Budget::Full, &mut causes);
        assert_eq!(causes, vec![]);
        // kube compiles no rule of a schema that is not structural.
        let s = json!({"type": "object", "properties": {"a": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self >"}]}}});
        check_rules(&s, "v", Budget::Unchecked, &mut causes);
        assert_eq!(causes, vec![]);
    }

    #[test]
    fn field_paths_must_name_a_field_of_the_schema() {
        let s = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "a": {"type": "integer"},
                "b.c": {"type": "string"},
                "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}}},
                "l": {"type": "array", "items": {"type": "string"}}
            }, "x-kubernetes-validations": [
                {"rule": "true", "fieldPath": ".a"},
                {"rule": "true", "fieldPath": ".['b.c']"},
                {"rule": "true", "fieldPath": "['b.c']"},
                {"rule": "true", "fieldPath": ".m.anything.x"},
                {"rule": "true", "fieldPath": ".m['any key'].x"},
                {"rule": "true", "fieldPath": ".z"},
                {"rule": "true", "fieldPath": "a"},
                {"rule": "true", "fieldPath": ".l[0]"},
                {"rule": "true", "fieldPath": ".a.b"},
                {"rule": "true", "fieldPath": ".m.k.y"},
                {"rule": "true", "fieldPath": ".a\n"}
            ]},
            "free": {"type": "object", "properties": {}, "additionalProperties": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "true", "fieldPath": ".anything"}]}
        }});
        let mut causes = Vec::new();
        check_rules(&s, "v", Budget::Full, &mut causes);
        let found: Vec<(&str, &str)> = causes.iter().map(|c| (c.field.as_str(), c.message.as_str())).collect();
        let at = |i: usize| format!("v.properties[spec].x-kubernetes-validations[{i}].fieldPath");
        let (one, five, six, seven, eight, nine, ten) = (at(1), at(5), at(6), at(7), at(8), at(9), at(10));
        assert_eq!(
            found,
            [
                // A dot before brackets makes `[` the name, as kube reads it.
                (one.as_str(), "Invalid value: \".['b.c']\": must be a valid path"),
                (five.as_str(), "Invalid value: \".z\": must be a valid path"),
                (six.as_str(), "Invalid value: \"a\": must be a valid path"),
                (seven.as_str(), "Invalid value: \".l[0]\": must be a valid path"),
                (eight.as_str(), "Invalid value: \".a.b\": must be a valid path"),
                (nine.as_str(), "Invalid value: \".m.k.y\": must be a valid path"),
                (ten.as_str(), "Invalid value: \".a\\n\": must not contain line breaks"),
                (ten.as_str(), "Invalid value: \".a\\n\": must be a valid path"),
            ]
        );
    }

    #[test]
    fn a_definition_s_rules_are_type_checked_against_the_schema() {
        let s = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "integer"}, "dash-ed": {"type": "string"}},
                "x-kubernetes-validations": [
                    {"rule": "self.b > 1"},
                    {"rule": "self.a + 1"},
                    {"rule": "self.dash__dash__ed != ''", "messageExpression": "'a is ' + self.c"},
                    {"rule": "self.a >"}
            ]}
        }});
        let mut causes = Vec::new();
        check_rules(&s, "spec.validation.openAPIV3Schema", Budget::Full, &mut causes);
        let at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
        let found: Vec<(&str, &str)> = causes.iter().map(|c| (c.field.as_str(), c.message.as_str())).collect();
        assert_eq!(
            found,
            [
                (
                    format!("{at}[0].rule").as_str(),
                    "Invalid value: {\"Rule\":\"self.b \\u003e 1\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: \
                     compilation failed: ERROR: <input>:1:5: undefined field 'b'\n | self.b > 1\n | ....^"
                ),
                (
                    format!("{at}[1].rule").as_str(),
                    "Invalid value: {\"Rule\":\"self.a + 1\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: \
                     cel expression must evaluate to a bool"
                ),
                (
                    format!("{at}[2].messageExpression").as_str(),
                    "Invalid value: {\"Rule\":\"self.dash__dash__ed != ''\",\"Message\":\"\",\"MessageExpression\":\"'a is ' + self.c\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: \
                     messageExpression compilation failed: ERROR: <input>:1:15: undefined field 'c'\n | 'a is ' + self.c\n | ..............^"
                ),
                (
                    format!("{at}[3].rule").as_str(),
                    "Invalid value: {\"Rule\":\"self.a \\u003e\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: \
                     compilation failed: ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.a >\n | ........^"
                ),
            ]
        );
    }

    #[test]
    fn message_expressions_give_strings_and_optional_old_self_needs_old_self() {
        let s = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "integer"}}, "x-kubernetes-validations": [
                {"rule": "self.a > 1", "messageExpression": "self.a"},
                {"rule": "self.a > 1", "optionalOldSelf": false},
                {"rule": "oldSelf.hasValue()", "optionalOldSelf": true},
                {"rule": "self.a >", "messageExpression": "self.b"}
            ]}
        }});
        let mut causes = Vec::new();
        check_rules(&s, "spec.validation.openAPIV3Schema", Budget::Full, &mut causes);
        let at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
        let found: Vec<(&str, &str)> = causes.iter().map(|c| (c.field.as_str(), c.message.as_str())).collect();
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0].0, format!("{at}[0].messageExpression"));
        assert!(found[0].1.ends_with(": messageExpression must evaluate to a string"), "{found:?}");
        assert_eq!(
            found[1],
            (
                format!("{at}[1].optionalOldSelf").as_str(),
                "Invalid value: false: may not be set if oldSelf is not used in rule"
            )
        );
        // A message expression is not compiled when its rule does not compile.
        assert_eq!(found[2].0, format!("{at}[3].rule"));
    }

    #[test]
    fn properties_are_reached_by_their_cel_names() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"max-size": {"type": "integer"}, "namespace": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "self.max__dash__size < 10 && self.__namespace__ != ''"}]}}});
        assert!(run(&s, &json!({"spec": {"max-size": 3, "namespace": "a"}}), None).is_empty());
        let causes = run(&s, &json!({"spec": {"max-size": 30, "namespace": "a"}}), None);
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(
            causes[0].message,
            "Invalid value: failed rule: self.max__dash__size < 10 && self.__namespace__ != ''"
        );
    }

    #[test]
    fn rules_compare_resource_quantities() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"memory": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "quantity(self.memory).isLessThan(quantity('1Gi'))",
                                          "message": "under 1Gi"}]}}});
        let mut causes = Vec::new();
        check_rules(&s, "spec.validation.openAPIV3Schema", Budget::Full, &mut causes);
        assert_eq!(causes, vec![]);
        assert!(run(&s, &json!({"spec": {"memory": "512Mi"}}), None).is_empty());
        let causes = run(&s, &json!({"spec": {"memory": "2G"}}), None);
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(causes[0].message, "Invalid value: under 1Gi");
        let causes = run(&s, &json!({"spec": {"memory": "lots"}}), None);
        assert_eq!(
            causes[0].message,
            "Invalid value: \"object\": quantities must match the regular expression \
             '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: under 1Gi"
        );
    }

    #[test]
    fn field_paths_join_as_kube_prints_them() {
        assert_eq!(join_field_path("spec", ".a.b"), "spec.a.b");
        assert_eq!(join_field_path("spec", ".m['x.y']"), "spec.m[x.y]");
        assert_eq!(join_field_path("", ".list[0]"), "list[0]");
    }
}
