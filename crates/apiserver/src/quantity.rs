//! Resource quantities (`100m`, `1.5Gi`, `2e3`) as kube's `resource.ParseQuantity` reads them.
//!
//! Invariants: a quantity is held exactly in billionths of a unit (kube's finest suffix, `n`);
//! a finer value rounds up, as kube rounds a quantity to that scale; a string that is not a
//! quantity, or one too large to hold, is `None`.

/// A unit in billionths.
pub(crate) const NANO: i128 = 1_000_000_000;

/// A quantity string in billionths, as kube's `resource.ParseQuantity` reads it; `None` when it
/// is not one.
pub(crate) fn parse(s: &str) -> Option<i128> {
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (number, suffix) = s.split_at(end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
    let (exp10, binary): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        e if e.starts_with(['e', 'E']) => (e[1..].parse().ok()?, 0),
        _ => return None,
    };
    let scale = 9 + exp10 - fraction.len() as i32;
    let v = digits.checked_mul(1i128.checked_shl(binary)?)?;
    let v = if scale >= 0 {
        v.checked_mul(10i128.checked_pow(scale as u32)?)?
    } else {
        // Finer than a billionth rounds up, as kube rounds a quantity to its finest scale.
        let d = 10i128.checked_pow((-scale) as u32)?;
        v / d + i128::from(v % d != 0)
    };
    Some(if negative { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_as_kube_parses_them() {
        assert_eq!(parse("1"), parse("1000m"));
        assert_eq!(parse("1Ki"), Some(1024 * NANO));
        assert_eq!(parse("-1.5"), Some(-3 * NANO / 2));
        assert_eq!(parse("2e3"), Some(2000 * NANO));
        assert_eq!(parse("0.1n"), Some(1));
        for bad in ["", ".", "1.2.3", "1GB", "ten", " 1"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
