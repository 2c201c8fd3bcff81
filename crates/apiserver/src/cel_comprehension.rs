//! CEL's two-variable comprehensions, which kube's environment has since v1.32:
//! `l.all(i, v, p)`, `m.exists(k, v, p)`, `existsOne`, `transformList(i, v, [filter,] f)`,
//! `transformMap(k, v, [filter,] f)` and `transformMapEntry(k, v, [filter,] e)`, over a list
//! (index and element) or a map (key and value).
//!
//! They are macros, expanded when an expression is parsed into the one-variable comprehensions
//! the interpreter runs: the range becomes its list of `[first, second]` pairs
//! ([`PAIRS`]), each pair's halves are bound to the two names by one-element comprehensions,
//! and the transforms' lists of entries become a map ([`TO_MAP`], [`MERGE`]).
//!
//! Invariants: the quantifiers keep the standard macros' shapes, so they stop early and treat
//! errors as `all` and `exists` do; the two names must be distinct simple identifiers, other
//! than the accumulator's (cel-go's parse errors otherwise); a map built with a key given twice is an error
//! (`insert failed: key <k> already exists`), as in cel-go.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue, operators};
use cel::common::types::DYN_TYPE;
use cel::common::value::CowVal;
use cel::objects::{Key, Map as CelMap};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

use crate::cel_library::{arg, give};

/// The function giving a list's `[index, element]` or a map's `[key, value]` pairs.
pub(crate) const PAIRS: &str = "kubernetes.comprehension.pairs";
/// The function making a map of a list of `[key, value]` pairs.
pub(crate) const TO_MAP: &str = "kubernetes.comprehension.toMap";
/// The function merging a list of maps into one.
pub(crate) const MERGE: &str = "kubernetes.comprehension.merge";

/// The variable each pair is bound to (not a name an expression can write).
pub(crate) const PAIR: &str = "@pair";
/// The accumulator of the one-element comprehensions that bind a name.
pub(crate) const BOUND: &str = "@bound";
/// The accumulator of the standard macros.
const RESULT: &str = "@result";

/// What a two-variable macro computes.
#[derive(Clone, Copy)]
enum Kind {
    All,
    Exists,
    ExistsOne,
    TransformList,
    TransformMap,
    TransformMapEntry,
}

/// The range a two-variable comprehension runs over, when `range` is the list of its pairs
/// (`pairs(target)`).
pub(crate) fn pairs_target(range: &cel::parser::Expression) -> Option<&cel::parser::Expression> {
    match &range.expr {
        Expr::Call(call) if call.func_name == PAIRS && call.args.len() == 1 => call.args.first(),
        _ => None,
    }
}

/// Which half of the current pair (0: key or index, 1: value) a binding comprehension's range
/// `[@pair[i]]` binds, when `range` is one.
pub(crate) fn bound_half(range: &cel::parser::Expression) -> Option<usize> {
    let Expr::List(l) = &range.expr else { return None };
    let [item] = l.elements.as_slice() else { return None };
    let Expr::Call(index) = &item.expr else { return None };
    let [pair, at] = index.args.as_slice() else { return None };
    if index.func_name != operators::INDEX || !matches!(&pair.expr, Expr::Ident(n) if n == PAIR) {
        return None;
    }
    match &at.expr {
        Expr::Literal(LiteralValue::Int(i)) => usize::try_from(**i).ok().filter(|i| *i < 2),
        _ => None,
    }
}

/// Adds the macros and their functions to `env`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(PAIRS, "comprehension_pairs", vec![DYN_TYPE], pairs)?;
    env.add_overload(TO_MAP, "comprehension_to_map", vec![DYN_TYPE], to_map)?;
    env.add_overload(MERGE, "comprehension_merge", vec![DYN_TYPE], merge)?;
    let quantifiers = [("all", Kind::All), ("exists", Kind::Exists), ("existsOne", Kind::ExistsOne)];
    for (name, kind) in quantifiers.into_iter().chain([("exists_one", Kind::ExistsOne)]) {
        env.add_macro(Macro::receiver(name, 3, move |h, t, a| expand(kind, h, t, a)))?;
    }
    for (name, kind) in [
        ("transformList", Kind::TransformList),
        ("transformMap", Kind::TransformMap),
        ("transformMapEntry", Kind::TransformMapEntry),
    ] {
        for count in [3, 4] {
            env.add_macro(Macro::receiver(name, count, move |h, t, a| expand(kind, h, t, a)))?;
        }
    }
    Ok(())
}

fn call(h: &mut MacroExprHelper<'_>, function: &str, args: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::Call(CallExpr { func_name: function.to_string(), target: None, args }))
}

fn ident(h: &mut MacroExprHelper<'_>, name: &str) -> IdedExpr {
    h.next_expr(Expr::Ident(name.to_string()))
}

fn literal(h: &mut MacroExprHelper<'_>, v: LiteralValue) -> IdedExpr {
    h.next_expr(Expr::Literal(v))
}

fn comprehension(
    h: &mut MacroExprHelper<'_>,
    range: IdedExpr,
    var: &str,
    (accu, init): (&str, IdedExpr),
    (cond, step, result): (IdedExpr, IdedExpr, IdedExpr),
) -> IdedExpr {
    h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var: var.to_string(),
        iter_var2: None,
        accu_var: accu.to_string(),
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result,
    })))
}

/// `body` with `name` bound to the `index`th half of the current pair.
fn bind(h: &mut MacroExprHelper<'_>, name: &str, index: i64, body: IdedExpr) -> IdedExpr {
    let pair = ident(h, PAIR);
    let at = literal(h, LiteralValue::Int(index.into()));
    let half = call(h, operators::INDEX, vec![pair, at]);
    let range = h.next_expr(Expr::List(ListExpr::new(vec![half])));
    let init = literal(h, LiteralValue::Null);
    let cond = literal(h, LiteralValue::Boolean(true.into()));
    let result = ident(h, BOUND);
    comprehension(h, range, name, (BOUND, init), (cond, body, result))
}

/// `body` with both names bound.
fn bind_both(h: &mut MacroExprHelper<'_>, (first, second): (&str, &str), body: IdedExpr) -> IdedExpr {
    let inner = bind(h, second, 1, body);
    bind(h, first, 0, inner)
}

fn name_of(h: &MacroExprHelper<'_>, e: &IdedExpr) -> Result<String, ParseError> {
    match &e.expr {
        Expr::Ident(name) => Ok(name.clone()),
        _ => Err(h.new_error(e.id, "argument must be a simple name")),
    }
}

fn expand(
    kind: Kind,
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    let names = (name_of(h, &args[0])?, name_of(h, &args[1])?);
    if names.0 == names.1 {
        return Err(h.new_error(args[1].id, format!("duplicate variable name: {}", names.1)));
    }
    for (name, arg) in [(&names.0, &args[0]), (&names.1, &args[1])] {
        if name == "__result__" {
            return Err(h.new_error(arg.id, "iteration variable overwrites accumulator variable"));
        }
    }
    let names = (names.0.as_str(), names.1.as_str());
    let Some(range) = target.take() else { return Ok(None) };
    let range = call(h, PAIRS, vec![range]);
    let body = args.pop().expect("a body");
    let filter = (args.len() == 3).then(|| args.pop().expect("a filter"));
    let body = bind_both(h, names, body);
    let filter = filter.map(|f| bind_both(h, names, f));
    let accu = |h: &mut MacroExprHelper<'_>| ident(h, RESULT);
    Ok(Some(match kind {
        Kind::All | Kind::Exists => {
            let all = matches!(kind, Kind::All);
            let init = literal(h, LiteralValue::Boolean(all.into()));
            let acc = accu(h);
            let cond_arg = if all { acc } else { call(h, operators::LOGICAL_NOT, vec![acc]) };
            let cond = call(h, operators::NOT_STRICTLY_FALSE, vec![cond_arg]);
            let acc = accu(h);
            let op = if all { operators::LOGICAL_AND } else { operators::LOGICAL_OR };
            let step = call(h, op, vec![acc, body]);
            let result = accu(h);
            comprehension(h, range, PAIR, (RESULT, init), (cond, step, result))
        }
        Kind::ExistsOne => {
            let init = literal(h, LiteralValue::Int(0.into()));
            let cond = literal(h, LiteralValue::Boolean(true.into()));
            let (acc, one) = (accu(h), literal(h, LiteralValue::Int(1.into())));
            let plus = call(h, operators::ADD, vec![acc, one]);
            let acc = accu(h);
            let step = call(h, operators::CONDITIONAL, vec![body, plus, acc]);
            let (acc, one) = (accu(h), literal(h, LiteralValue::Int(1.into())));
            let result = call(h, operators::EQUALS, vec![acc, one]);
            comprehension(h, range, PAIR, (RESULT, init), (cond, step, result))
        }
        Kind::TransformList | Kind::TransformMap | Kind::TransformMapEntry => {
            // Each element of the list built: the value, a `[key, value]` pair, or a map.
            let element = match kind {
                Kind::TransformMap => {
                    let pair = ident(h, PAIR);
                    let zero = literal(h, LiteralValue::Int(0.into()));
                    let key = call(h, operators::INDEX, vec![pair, zero]);
                    h.next_expr(Expr::List(ListExpr::new(vec![key, body])))
                }
                _ => body,
            };
            let init = h.next_expr(Expr::List(ListExpr::new(Vec::new())));
            let cond = literal(h, LiteralValue::Boolean(true.into()));
            let acc = accu(h);
            let one = h.next_expr(Expr::List(ListExpr::new(vec![element])));
            let mut step = call(h, operators::ADD, vec![acc, one]);
            if let Some(f) = filter {
                let acc = accu(h);
                step = call(h, operators::CONDITIONAL, vec![f, step, acc]);
            }
            let result = accu(h);
            let list = comprehension(h, range, PAIR, (RESULT, init), (cond, step, result));
            match kind {
                Kind::TransformMap => call(h, TO_MAP, vec![list]),
                Kind::TransformMapEntry => call(h, MERGE, vec![list]),
                _ => list,
            }
        }
    }))
}

fn pairs<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let pair = |a: Cel, b: Cel| Cel::List(Arc::new(vec![a, b]));
    let out: Vec<Cel> = match arg(&args, 0)? {
        Cel::List(items) => items.iter().enumerate().map(|(i, v)| pair(Cel::Int(i as i64), v.clone())).collect(),
        Cel::Map(m) => m.map.iter().map(|(k, v)| pair(Cel::from(k.clone()), v.clone())).collect(),
        other => {
            return Err(ExecutionError::function_error(
                "comprehension",
                format!("expression of type '{}' cannot be range of a comprehension", other.type_of()),
            ));
        }
    };
    give(Cel::List(Arc::new(out)))
}

/// A key given twice, in cel-go's words.
fn duplicate(key: &Key) -> ExecutionError {
    let shown = match key {
        Key::String(s) => s.to_string(),
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => u.to_string(),
        Key::Bool(b) => b.to_string(),
    };
    ExecutionError::function_error("transformMap", format!("insert failed: key {shown} already exists"))
}

fn to_map<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let Cel::List(entries) = arg(&args, 0)? else {
        return Err(ExecutionError::function_error("transformMap", "a list"));
    };
    let mut out: HashMap<Key, Cel> = HashMap::with_capacity(entries.len());
    for e in entries.iter() {
        let Cel::List(kv) = e else { continue };
        let key = match &kv[0] {
            Cel::String(s) => Key::String(s.clone()),
            Cel::Int(i) => Key::Int(*i),
            Cel::UInt(u) => Key::Uint(*u),
            Cel::Bool(b) => Key::Bool(*b),
            other => return Err(ExecutionError::unsupported_key_type(other.clone())),
        };
        if out.insert(key.clone(), kv[1].clone()).is_some() {
            return Err(duplicate(&key));
        }
    }
    give(Cel::Map(CelMap { map: Arc::new(out) }))
}

fn merge<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let Cel::List(maps) = arg(&args, 0)? else {
        return Err(ExecutionError::function_error("transformMapEntry", "a list"));
    };
    let mut out: HashMap<Key, Cel> = HashMap::new();
    for m in maps.iter() {
        let Cel::Map(m) = m else {
            return Err(ExecutionError::function_error(
                "transformMapEntry",
                format!("transformMapEntry expects a map, got {}", m.type_of()),
            ));
        };
        for (k, v) in m.map.iter() {
            if out.insert(k.clone(), v.clone()).is_some() {
                return Err(duplicate(k));
            }
        }
    }
    give(Cel::Map(CelMap { map: Arc::new(out) }))
}

#[cfg(test)]
mod tests {
    use cel::Context;

    fn eval(expression: &str) -> Result<cel::Value, String> {
        let ctx = Context::with_env(crate::validation_rules::env());
        let program = crate::validation_rules::compile(expression)?;
        program.execute(&ctx).map_err(|e| crate::validation_rules::error_text(&e))
    }

    fn holds(expression: &str) -> bool {
        eval(expression) == Ok(cel::Value::Bool(true))
    }

    #[test]
    fn quantifiers_see_indexes_keys_and_values() {
        assert!(holds("[1, 2, 3].all(i, v, v == i + 1)"));
        assert!(!holds("[1, 2, 4].all(i, v, v == i + 1)"));
        assert!(holds("{'a': 1, 'b': 2}.all(k, v, k.size() == 1 && v > 0)"));
        assert!(holds("{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2)"));
        assert!(!holds("{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 3)"));
        assert!(holds("[5, 6, 7].existsOne(i, v, i == 1 && v == 6)"));
        assert!(!holds("[5, 5].existsOne(i, v, v == 5)"));
        // Errors are absorbed as `all` and `exists` absorb them.
        assert!(holds("[0, 1].exists(i, v, 1 / v == 1)"));
        assert!(!holds("[0, 1].all(i, v, v > 0 && 1 / v == 1)"));
        assert!(eval("[0, 1].all(i, v, 1 / v == 1)").is_err());
        // Names shadow as in any comprehension; the one-variable forms are unchanged.
        assert!(holds("[[1], [2]].all(i, v, v.all(i, i > 0))"));
        assert!(holds("[1, 2].all(v, v > 0) && [1, 2].exists(v, v == 2) && [1, 2].exists_one(v, v == 2)"));
    }

    #[test]
    fn transforms_build_lists_and_maps() {
        assert!(holds("[1, 2, 3].transformList(i, v, i * v) == [0, 2, 6]"));
        assert!(holds("[1, 2, 3].transformList(i, v, i > 0, v * 10) == [20, 30]"));
        assert!(holds("{'a': 1, 'b': 2}.transformMap(k, v, v + 1) == {'a': 2, 'b': 3}"));
        assert!(holds("{'a': 1, 'b': 2}.transformMap(k, v, v > 1, k + k) == {'b': 'bb'}"));
        assert!(holds("['x', 'y'].transformMap(i, v, v) == {0: 'x', 1: 'y'}"));
        assert!(holds("{'a': 'b', 'c': 'd'}.transformMapEntry(k, v, {v: k}) == {'b': 'a', 'd': 'c'}"));
        let duplicate = eval("{'a': 'x', 'c': 'x'}.transformMapEntry(k, v, {v: k})").unwrap_err();
        assert!(duplicate.contains("insert failed: key x already exists"), "{duplicate}");
    }

    #[test]
    fn the_names_must_be_simple_and_distinct() {
        for (rule, error) in [
            ("[1].all(a.b, v, true)", "argument must be a simple name"),
            ("[1].all(x, x, true)", "duplicate variable name: x"),
            ("[1].exists(__result__, v, true)", "iteration variable overwrites accumulator variable"),
        ] {
            let e = crate::validation_rules::compile(rule).unwrap_err();
            assert!(e.contains(error), "{rule}: {e}");
        }
    }
}
