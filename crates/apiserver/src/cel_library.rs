//! The functions kube-apiserver adds to CEL for validation rules, beyond CEL's standard
//! library and its strings and lists extensions: the Kubernetes list library (`isSorted`,
//! `sum`, `min`, `max`, `indexOf`, `lastIndexOf`), the regex library (`find`, `findAll`) and
//! the sets extension (`sets.contains`, `sets.equivalent`, `sets.intersects`).
//!
//! Invariants: each function takes and gives CEL values as kube's do (a list's `sum` keeps the
//! elements' type, `min`/`max` of an empty list is an error, `indexOf` of a missing element is
//! -1); a regular expression that does not compile is an evaluation error, never a panic.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

/// Adds the functions to `env`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload("indexOf", "list_index_of", LIST_TYPE, vec![DYN_TYPE], index_of)?;
    env.add_member_overload("lastIndexOf", "list_last_index_of", LIST_TYPE, vec![DYN_TYPE], last_index_of)?;
    env.add_member_overload("find", "string_find", STRING_TYPE, vec![STRING_TYPE], find)?;
    env.add_member_overload("findAll", "string_find_all", STRING_TYPE, vec![STRING_TYPE], find_all)?;
    env.add_member_overload("findAll", "string_find_all_n", STRING_TYPE, vec![STRING_TYPE, INT_TYPE], find_all_n)?;
    env.add_overload("sets.contains", "list_sets_contains_list", vec![LIST_TYPE, LIST_TYPE], sets_contains)?;
    env.add_overload("sets.equivalent", "list_sets_equivalent_list", vec![LIST_TYPE, LIST_TYPE], sets_equivalent)?;
    env.add_overload("sets.intersects", "list_sets_intersects_list", vec![LIST_TYPE, LIST_TYPE], sets_intersects)?;
    Ok(())
}

/// The arguments as values.
fn values(args: &[CowVal<'_, '_>]) -> Result<Vec<Cel>, ExecutionError> {
    args.iter().map(|a| Cel::try_from(a.as_ref())).collect()
}

/// A function's result, as the interpreter takes it.
pub(crate) fn give<'b, 'v>(v: Cel) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let boxed: Box<dyn Val> = v.try_into()?;
    Ok(CowVal::Owned(boxed))
}

/// The argument at `i` (the receiver first) as a value.
pub(crate) fn arg(args: &[CowVal<'_, '_>], i: usize) -> Result<Cel, ExecutionError> {
    let a = args.get(i).ok_or(ExecutionError::MissingArgumentOrTarget)?;
    Cel::try_from(a.as_ref())
}

/// The argument at `i` as a string, for `function`'s error otherwise.
pub(crate) fn string_arg(args: &[CowVal<'_, '_>], i: usize, function: &str) -> Result<String, ExecutionError> {
    match arg(args, i)? {
        Cel::String(s) => Ok(s.to_string()),
        _ => Err(ExecutionError::function_error(function, "expected a string")),
    }
}

fn list(v: &Cel, function: &str) -> Result<Arc<Vec<Cel>>, ExecutionError> {
    match v {
        Cel::List(l) => Ok(l.clone()),
        _ => Err(ExecutionError::function_error(function, "expected a list")),
    }
}

fn compare(a: &Cel, b: &Cel, function: &str) -> Result<Ordering, ExecutionError> {
    a.partial_cmp(b).ok_or_else(|| ExecutionError::function_error(function, "list elements must be comparable"))
}

fn receiver(args: &[CowVal<'_, '_>], function: &str) -> Result<(Arc<Vec<Cel>>, Vec<Cel>), ExecutionError> {
    let mut vs = values(args)?;
    if vs.is_empty() {
        return Err(ExecutionError::MissingArgumentOrTarget);
    }
    let l = list(&vs.remove(0), function)?;
    Ok((l, vs))
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (l, _) = receiver(&args, "isSorted")?;
    for w in l.windows(2) {
        if compare(&w[0], &w[1], "isSorted")? == Ordering::Greater {
            return give(Cel::Bool(false));
        }
    }
    give(Cel::Bool(true))
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (l, _) = receiver(&args, "sum")?;
    let total = match l.first() {
        None | Some(Cel::Int(_)) => {
            let mut t: i64 = 0;
            for v in l.iter() {
                let Cel::Int(i) = v else { return Err(ExecutionError::function_error("sum", "mixed element types")) };
                t = t.checked_add(*i).ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?;
            }
            Cel::Int(t)
        }
        Some(Cel::UInt(_)) => {
            let mut t: u64 = 0;
            for v in l.iter() {
                let Cel::UInt(u) = v else { return Err(ExecutionError::function_error("sum", "mixed element types")) };
                t = t.checked_add(*u).ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?;
            }
            Cel::UInt(t)
        }
        Some(Cel::Float(_)) => {
            let mut t = 0.0;
            for v in l.iter() {
                let Cel::Float(f) = v else { return Err(ExecutionError::function_error("sum", "mixed element types")) };
                t += f;
            }
            Cel::Float(t)
        }
        Some(Cel::Duration(_)) => {
            let mut t = chrono::Duration::zero();
            for v in l.iter() {
                let Cel::Duration(d) = v else {
                    return Err(ExecutionError::function_error("sum", "mixed element types"));
                };
                t = t.checked_add(d).ok_or_else(|| ExecutionError::function_error("sum", "duration overflow"))?;
            }
            Cel::Duration(t)
        }
        Some(_) => return Err(ExecutionError::function_error("sum", "elements must be numbers or durations")),
    };
    give(total)
}

fn extreme(args: &[CowVal<'_, '_>], function: &str, wanted: Ordering) -> Result<Cel, ExecutionError> {
    let (l, _) = receiver(args, function)?;
    let mut best = l.first().ok_or_else(|| ExecutionError::function_error(function, "list is empty"))?;
    for v in l.iter().skip(1) {
        if compare(v, best, function)? == wanted {
            best = v;
        }
    }
    Ok(best.clone())
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(extreme(&args, "min", Ordering::Less)?)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(extreme(&args, "max", Ordering::Greater)?)
}

fn position(args: &[CowVal<'_, '_>], function: &str, last: bool) -> Result<Cel, ExecutionError> {
    let (l, rest) = receiver(args, function)?;
    let x = rest.first().ok_or(ExecutionError::MissingArgumentOrTarget)?;
    let found = if last { l.iter().rposition(|v| v == x) } else { l.iter().position(|v| v == x) };
    Ok(Cel::Int(found.map_or(-1, |i| i as i64)))
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(position(&args, "indexOf", false)?)
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(position(&args, "lastIndexOf", true)?)
}

/// The string and the compiled pattern of a regex function's arguments.
fn pattern(args: &[CowVal<'_, '_>], function: &str) -> Result<(String, regex::Regex, Vec<Cel>), ExecutionError> {
    let mut vs = values(args)?.into_iter();
    let (Some(Cel::String(s)), Some(Cel::String(p))) = (vs.next(), vs.next()) else {
        return Err(ExecutionError::function_error(function, "expected a string and a pattern"));
    };
    let re = regex::Regex::new(&p).map_err(|e| ExecutionError::function_error(function, e))?;
    Ok((s.to_string(), re, vs.collect()))
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (s, re, _) = pattern(&args, "find")?;
    give(Cel::String(Arc::new(re.find(&s).map_or_else(String::new, |m| m.as_str().to_string()))))
}

fn matches_up_to(s: &str, re: &regex::Regex, limit: Option<i64>) -> Cel {
    let take = match limit {
        Some(n) if n >= 0 => n as usize,
        _ => usize::MAX,
    };
    Cel::List(Arc::new(re.find_iter(s).take(take).map(|m| Cel::String(Arc::new(m.as_str().to_string()))).collect()))
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (s, re, _) = pattern(&args, "findAll")?;
    give(matches_up_to(&s, &re, None))
}

fn find_all_n<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (s, re, rest) = pattern(&args, "findAll")?;
    let limit = match rest.first() {
        Some(Cel::Int(n)) => *n,
        _ => return Err(ExecutionError::function_error("findAll", "expected an int limit")),
    };
    give(matches_up_to(&s, &re, Some(limit)))
}

/// A list's elements, shared.
type Elements = Arc<Vec<Cel>>;

fn two_lists(args: &[CowVal<'_, '_>], function: &str) -> Result<(Elements, Elements), ExecutionError> {
    let vs = values(args)?;
    match (vs.first(), vs.get(1)) {
        (Some(a), Some(b)) => Ok((list(a, function)?, list(b, function)?)),
        _ => Err(ExecutionError::MissingArgumentOrTarget),
    }
}

fn sets_contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two_lists(&args, "sets.contains")?;
    give(Cel::Bool(b.iter().all(|x| a.contains(x))))
}

fn sets_equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two_lists(&args, "sets.equivalent")?;
    give(Cel::Bool(b.iter().all(|x| a.contains(x)) && a.iter().all(|x| b.contains(x))))
}

fn sets_intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two_lists(&args, "sets.intersects")?;
    give(Cel::Bool(b.iter().any(|x| a.contains(x))))
}

/// Evaluates `expr` in CEL's standard library with the strings extension and what `register`
/// adds: the libraries' tests.
#[cfg(test)]
pub(crate) fn eval_with(
    register: fn(&mut Env) -> Result<(), DeclarationError>,
    expr: &str,
) -> Result<Cel, ExecutionError> {
    let mut env = Env::stdlib();
    cel::extensions::strings(&mut env).unwrap();
    register(&mut env).unwrap();
    let env = Arc::new(env);
    let program = env.compile(expr).unwrap();
    program.execute(&cel::Context::with_env(env))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(expr: &str) -> Result<Cel, ExecutionError> {
        eval_with(register, expr)
    }

    fn is_true(expr: &str) {
        assert_eq!(eval(expr), Ok(Cel::Bool(true)), "{expr}");
    }

    #[test]
    fn the_list_library() {
        is_true("[1, 2, 2, 5].isSorted() && ![2, 1].isSorted() && ['a', 'b'].isSorted()");
        is_true("[1, 2, 3].sum() == 6 && [1.5, 2.0].sum() == 3.5 && [].sum() == 0");
        is_true("[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && ['b', 'a'].min() == 'a'");
        is_true("[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2 && [1].indexOf(9) == -1");
        is_true("'abc'.indexOf('c') == 2");
        assert!(eval("[].min()").is_err());
    }

    #[test]
    fn the_regex_library() {
        is_true("'abc 123 def 456'.find('[0-9]+') == '123'");
        is_true("'abc'.find('[0-9]+') == ''");
        is_true("'a1 b2 c3'.findAll('[a-z][0-9]') == ['a1', 'b2', 'c3']");
        is_true("'a1 b2 c3'.findAll('[a-z][0-9]', 2) == ['a1', 'b2']");
        assert!(eval("'a'.find('(')").is_err());
    }

    #[test]
    fn the_sets_extension() {
        is_true("sets.contains([1, 2, 3], [2, 3]) && !sets.contains([1], [2])");
        is_true("sets.equivalent([1, 2, 2], [2, 1]) && !sets.equivalent([1], [1, 2])");
        is_true("sets.intersects([1, 2], [2, 5]) && !sets.intersects([1], [3])");
    }
}
