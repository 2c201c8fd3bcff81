//! kube-apiserver's semver library for validation rules: `semver('1.2.3')` (or
//! `semver('v1.2', true)`, normalized), `isSemver(s)` / `isSemver(s, true)`, and a version's
//! `major()`, `minor()`, `patch()`, `isGreaterThan(v)`, `isLessThan(v)` and `compareTo(v)`.
//!
//! Invariants: versions read and order as the Go semver package kube uses reads and orders
//! them (a pre-release is below its release, numeric identifiers below alphanumeric ones, build
//! metadata ignored, so versions equal in order are `==`); what does not read is an evaluation
//! error in that package's words.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{BOOL_TYPE, STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

use crate::cel_library::{arg, give};

const NAME: &str = "kubernetes.Semver";

/// A pre-release identifier.
#[derive(Debug, Clone)]
enum Identifier {
    Number(u64),
    Text(String),
}

/// A semantic version (its build metadata plays no part and is not kept).
#[derive(Debug)]
struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Identifier>,
}

impl Semver {
    fn compare(&self, other: &Semver) -> Ordering {
        let core = (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let o = match (a, b) {
                (Identifier::Number(x), Identifier::Number(y)) => x.cmp(y),
                (Identifier::Number(_), Identifier::Text(_)) => Ordering::Less,
                (Identifier::Text(_), Identifier::Number(_)) => Ordering::Greater,
                (Identifier::Text(x), Identifier::Text(y)) => x.cmp(y),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        NAME
    }
}

/// Adds the library to `env`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let v = || Type::new_opaque_type(NAME);
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], to_semver)?;
    env.add_overload("semver", "string_bool_to_semver", vec![STRING_TYPE, BOOL_TYPE], to_semver)?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver)?;
    env.add_overload("isSemver", "is_semver_string_bool", vec![STRING_TYPE, BOOL_TYPE], is_semver)?;
    env.add_member_overload("major", "semver_major", v(), vec![], major)?;
    env.add_member_overload("minor", "semver_minor", v(), vec![], minor)?;
    env.add_member_overload("patch", "semver_patch", v(), vec![], patch)?;
    env.add_member_overload("isGreaterThan", "semver_is_greater_than", v(), vec![v()], is_greater_than)?;
    env.add_member_overload("isLessThan", "semver_is_less_than", v(), vec![v()], is_less_than)?;
    env.add_member_overload("compareTo", "semver_compare_to", v(), vec![v()], compare_to)?;
    Ok(())
}

fn number(s: &str, what: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("Invalid character(s) found in {what} number {s:?}"));
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(format!("{} number must not contain leading zeroes {s:?}", capitalized(what)));
    }
    s.parse().map_err(|e| format!("{e}"))
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
}

fn identifier_chars(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Reads a version strictly, as Go's `semver.Parse` does.
fn parse(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".into());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    if parts.len() != 3 {
        return Err("No Major.Minor.Patch elements found".into());
    }
    let major = number(parts[0], "major")?;
    let minor = number(parts[1], "minor")?;
    let (rest, build) = parts[2].split_once('+').map_or((parts[2], None), |(r, b)| (r, Some(b)));
    let (patch, prerelease) = rest.split_once('-').map_or((rest, None), |(p, r)| (p, Some(r)));
    let patch = number(patch, "patch")?;
    let mut pre = Vec::new();
    for id in prerelease.into_iter().flat_map(|p| p.split('.')) {
        if id.is_empty() {
            return Err("Prerelease is empty".into());
        }
        if id.bytes().all(|b| b.is_ascii_digit()) {
            if id.len() > 1 && id.starts_with('0') {
                return Err(format!("Numeric PreRelease version must not contain leading zeroes {id:?}"));
            }
            pre.push(Identifier::Number(id.parse().map_err(|e| format!("{e}"))?));
        } else if identifier_chars(id) {
            pre.push(Identifier::Text(id.to_string()));
        } else {
            return Err(format!("Invalid character(s) found in prerelease {id:?}"));
        }
    }
    for id in build.into_iter().flat_map(|b| b.split('.')) {
        if id.is_empty() {
            return Err("Build meta data is empty".into());
        }
        if !identifier_chars(id) {
            return Err(format!("Invalid character(s) found in build meta data {id:?}"));
        }
    }
    Ok(Semver { major, minor, patch, pre })
}

/// kube's normalizing read: a leading `v` dropped, leading zeroes removed, a missing minor or
/// patch taken as 0.
fn parse_normalized(s: &str) -> Result<Semver, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s
        .splitn(3, '.')
        .map(|p| {
            if p.len() > 1 {
                let trimmed = p.trim_start_matches('0');
                if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                    format!("0{trimmed}")
                } else {
                    trimmed.to_string()
                }
            } else {
                p.to_string()
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".into());
        }
        parts.resize(3, "0".into());
    }
    parse(&parts.join("."))
}

/// The string and the normalize flag of `semver` and `isSemver`, read.
fn read(args: &[CowVal<'_, '_>], function: &str) -> Result<Result<Semver, String>, ExecutionError> {
    let Cel::String(s) = arg(args, 0)? else {
        return Err(ExecutionError::function_error(function, "expected a string"));
    };
    let normalize = args.len() > 1 && matches!(arg(args, 1)?, Cel::Bool(true));
    Ok(if normalize { parse_normalized(&s) } else { parse(&s) })
}

/// `v` as a version, for `function`'s error otherwise.
fn semver<'a>(v: &'a Cel, function: &str) -> Result<&'a Semver, ExecutionError> {
    match v {
        Cel::Opaque(o) => o.downcast_ref::<Semver>(),
        _ => None,
    }
    .ok_or_else(|| ExecutionError::function_error(function, "expected a semver"))
}

fn to_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    match read(&args, "semver")? {
        Ok(v) => give(Cel::Opaque(Arc::new(v))),
        Err(e) => Err(ExecutionError::function_error("semver", e)),
    }
}

fn is_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(read(&args, "isSemver")?.is_ok()))
}

fn major<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Int(semver(&arg(&args, 0)?, "major")?.major as i64))
}

fn minor<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Int(semver(&arg(&args, 0)?, "minor")?.minor as i64))
}

fn patch<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Int(semver(&arg(&args, 0)?, "patch")?.patch as i64))
}

/// The order of the receiver against the argument.
fn order(args: &[CowVal<'_, '_>], function: &str) -> Result<Ordering, ExecutionError> {
    let (a, b) = (arg(args, 0)?, arg(args, 1)?);
    Ok(semver(&a, function)?.compare(semver(&b, function)?))
}

fn is_greater_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(order(&args, "isGreaterThan")? == Ordering::Greater))
}

fn is_less_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(order(&args, "isLessThan")? == Ordering::Less))
}

fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Int(order(&args, "compareTo")? as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(expr: &str) -> Result<Cel, ExecutionError> {
        crate::cel_library::eval_with(register, expr)
    }

    fn is_true(expr: &str) {
        assert_eq!(eval(expr), Ok(Cel::Bool(true)), "{expr}");
    }

    #[test]
    fn versions_read_and_order_as_semver_says() {
        is_true("semver('1.2.3').compareTo(semver('1.2.3')) == 0 && semver('1.2.3').compareTo(semver('2.0.0')) == -1");
        is_true("semver('1.2.3').isGreaterThan(semver('0.1.2')) && semver('1.0.0-alpha').isLessThan(semver('1.0.0'))");
        is_true("semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))");
        is_true(
            "semver('1.0.0-2').isLessThan(semver('1.0.0-10')) && semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))",
        );
        is_true(
            "semver('1.2.3+build.5') == semver('1.2.3') && semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
        );
        is_true("isSemver('1.2.3-rc.1+meta') && !isSemver('v1.2.3') && !isSemver('1.2') && !isSemver('01.2.3')");
        is_true("isSemver('v1.2', true) && semver('v01.2', true) == semver('1.2.0') && !isSemver('1.2-rc', true)");
    }

    #[test]
    fn what_does_not_read_is_an_error_in_semver_s_words() {
        for (s, e) in [
            ("", "Version string empty"),
            ("1.2", "No Major.Minor.Patch elements found"),
            ("a.2.3", "Invalid character(s) found in major number \"a\""),
            ("01.2.3", "Major number must not contain leading zeroes \"01\""),
            ("1.2.3-", "Prerelease is empty"),
            ("1.2.3-a_b", "Invalid character(s) found in prerelease \"a_b\""),
            ("1.2.3+", "Build meta data is empty"),
        ] {
            assert_eq!(parse(s).err().as_deref(), Some(e), "{s}");
        }
    }
}
