//! kube-apiserver's quantity library for validation rules: `quantity('1.5Gi')` makes a
//! resource quantity of a string, `isQuantity(s)` tells whether one parses, `sign(q)` gives its
//! sign, and a quantity answers `isInteger()`, `asInteger()`, `asApproximateFloat()`, `add(q|int)`,
//! `sub(q|int)`, `isGreaterThan(q)`, `isLessThan(q)` and `compareTo(q)`.
//!
//! Invariants: a quantity is held exactly, in billionths of a unit (kube's finest suffix, `n`),
//! so `quantity('1') == quantity('1000m')` as in kube; a string that does not parse, an
//! `asInteger()` of a fraction and an overflow are evaluation errors with kube's words, never
//! panics.

use std::sync::Arc;

use cel::common::types::{INT_TYPE, STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

use crate::cel_library::{arg, give, string_arg};

/// The name of the quantity type, as kube declares it.
const NAME: &str = "kubernetes.Quantity";

/// A resource quantity, in billionths.
#[derive(Debug, PartialEq, Eq)]
struct Quantity(i128);

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        NAME
    }
}

use crate::quantity::{NANO, parse};

/// kube's error for a string that is not a quantity.
const FORMAT: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// Adds the library to `env`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let q = || Type::new_opaque_type(NAME);
    env.add_overload("quantity", "string_to_quantity", vec![STRING_TYPE], to_quantity)?;
    env.add_overload("isQuantity", "is_quantity_string", vec![STRING_TYPE], is_quantity)?;
    env.add_overload("sign", "quantity_sign", vec![q()], sign)?;
    env.add_member_overload("isGreaterThan", "quantity_is_greater_than", q(), vec![q()], is_greater_than)?;
    env.add_member_overload("isLessThan", "quantity_is_less_than", q(), vec![q()], is_less_than)?;
    env.add_member_overload("compareTo", "quantity_compare_to", q(), vec![q()], compare_to)?;
    env.add_member_overload("asApproximateFloat", "quantity_get_float", q(), vec![], as_float)?;
    env.add_member_overload("asInteger", "quantity_get_int", q(), vec![], as_integer)?;
    env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], is_integer)?;
    env.add_member_overload("add", "quantity_add", q(), vec![q()], add)?;
    env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], add)?;
    env.add_member_overload("sub", "quantity_sub", q(), vec![q()], sub)?;
    env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], sub)?;
    Ok(())
}

fn give_quantity<'b, 'v>(nanos: Option<i128>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    match nanos {
        Some(n) => give(Cel::Opaque(Arc::new(Quantity(n)))),
        None => Err(ExecutionError::function_error("quantity", "integer overflow")),
    }
}

/// The argument at `i` in billionths: a quantity, or an int for `add` and `sub`.
fn nanos(args: &[CowVal<'_, '_>], i: usize, function: &str) -> Result<i128, ExecutionError> {
    match arg(args, i)? {
        Cel::Opaque(o) => match o.downcast_ref::<Quantity>() {
            Some(q) => Ok(q.0),
            None => Err(ExecutionError::function_error(function, "expected a quantity")),
        },
        Cel::Int(n) => Ok(i128::from(n) * NANO),
        _ => Err(ExecutionError::function_error(function, "expected a quantity")),
    }
}

fn to_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    match parse(&string_arg(&args, 0, "quantity")?) {
        Some(n) => give_quantity(Some(n)),
        None => Err(ExecutionError::function_error("quantity", FORMAT)),
    }
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(parse(&string_arg(&args, 0, "isQuantity")?).is_some()))
}

fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Int(nanos(&args, 0, "sign")?.signum() as i64))
}

fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let ordering = nanos(&args, 0, "compareTo")?.cmp(&nanos(&args, 1, "compareTo")?);
    give(Cel::Int(ordering as i64))
}

fn is_greater_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(nanos(&args, 0, "isGreaterThan")? > nanos(&args, 1, "isGreaterThan")?))
}

fn is_less_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(nanos(&args, 0, "isLessThan")? < nanos(&args, 1, "isLessThan")?))
}

fn as_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Float(nanos(&args, 0, "asApproximateFloat")? as f64 / NANO as f64))
}

/// The quantity as an int64, if it is a whole number that fits.
fn integer(n: i128) -> Option<i64> {
    if n % NANO != 0 { None } else { i64::try_from(n / NANO).ok() }
}

fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    match integer(nanos(&args, 0, "asInteger")?) {
        Some(i) => give(Cel::Int(i)),
        None => Err(ExecutionError::function_error("asInteger", "cannot convert value to integer")),
    }
}

fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(integer(nanos(&args, 0, "isInteger")?).is_some()))
}

fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give_quantity(nanos(&args, 0, "add")?.checked_add(nanos(&args, 1, "add")?))
}

fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give_quantity(nanos(&args, 0, "sub")?.checked_sub(nanos(&args, 1, "sub")?))
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
    fn quantities_compare_by_value() {
        is_true("quantity('200M').compareTo(quantity('0.2G')) == 0");
        is_true("quantity('50M').compareTo(quantity('50Mi')) == -1");
        is_true("quantity('150Mi').isGreaterThan(quantity('100Mi'))");
        is_true("quantity('50M').isLessThan(quantity('100M'))");
        is_true("quantity('1') == quantity('1000m') && quantity('1') != quantity('2')");
        is_true("quantity('1Ki') == quantity('1024')");
    }

    #[test]
    fn quantities_convert_and_add() {
        is_true("quantity('50k').asInteger() == 50000 && quantity('1.5').asApproximateFloat() == 1.5");
        is_true("quantity('50k').isInteger() && !quantity('1.5').isInteger()");
        is_true("sign(quantity('-3')) == -1 && sign(quantity('0')) == 0 && sign(quantity('2e3')) == 1");
        is_true("quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi')");
        is_true("quantity('1').add(2) == quantity('3') && sign(quantity('500m').sub(1)) == -1");
        is_true("sign(quantity('1Gi').sub(quantity('1024Mi'))) == 0");
        is_true("isQuantity('1.5Gi') && isQuantity('-2e3') && !isQuantity('1.5GB') && !isQuantity('')");
    }

    #[test]
    fn what_is_not_a_quantity_is_an_error() {
        let e = eval("quantity('ten') == quantity('10')").unwrap_err();
        assert!(e.to_string().contains(FORMAT), "{e}");
        assert!(eval("quantity('1.5').asInteger() == 1").is_err());
    }
}
