//! Resource quantities (`100m`, `1.5Gi`, `2e3`) as kube's `resource.ParseQuantity` reads them.
//!
//! Invariants: a quantity is held exactly in billionths of a unit (kube's finest suffix, `n`);
//! a finer value rounds up, as kube rounds a quantity to that scale; a string that is not a
//! quantity, or one too large to hold, is `None`. [`canonical`] writes a quantity as kube's
//! `Quantity.String()` does: in the format of the suffix it was written with, with the largest
//! suffix that keeps its number whole.

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

/// The text of a quantity in JSON: a string (Go's decoder trims the spaces around it), or a
/// number, as kubectl sends YAML's `cpu: 1`.
pub(crate) fn text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.trim().to_string()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// How a quantity is written: kube's `Format`, from the suffix it was read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `100m`, `1k`, `2`.
    DecimalSI,
    /// `1Ki`, `1.5Gi`.
    BinarySI,
    /// `2e3`.
    DecimalExponent,
}

/// The format of a quantity string.
pub(crate) fn format_of(s: &str) -> Format {
    let unsigned = s.trim_start_matches(['+', '-']);
    let suffix = unsigned.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    // `E` alone is exa; an exponent has digits after it.
    if suffix.len() > 1 && suffix.starts_with(['e', 'E']) {
        Format::DecimalExponent
    } else if suffix.ends_with('i') {
        Format::BinarySI
    } else {
        Format::DecimalSI
    }
}

/// A quantity string in kube's canonical form (`"1000m"` → `"1"`, `"0.5"` → `"500m"`,
/// `"1024Mi"` → `"1Gi"`, `"1000"` → `"1k"`); `None` when it is not a quantity.
pub(crate) fn canonical(s: &str) -> Option<String> {
    Some(render(parse(s)?, format_of(s)))
}

/// `nanos` billionths written as kube's `Quantity.String()` writes a quantity of `format`.
pub(crate) fn render(nanos: i128, format: Format) -> String {
    if nanos == 0 {
        return "0".into();
    }
    // A binary quantity under 1024, or not whole, is written as a decimal one.
    if format == Format::BinarySI && nanos.abs() >= 1024 * NANO && nanos % NANO == 0 {
        let (mut amount, mut power) = (nanos / NANO, 0);
        while amount % 1024 == 0 && power < 6 {
            amount /= 1024;
            power += 1;
        }
        return format!("{amount}{}", ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power]);
    }
    let (mut amount, mut exponent) = (nanos, -9i32);
    while amount % 10 == 0 {
        amount /= 10;
        exponent += 1;
    }
    // The exponent goes down to a multiple of three.
    while exponent.rem_euclid(3) != 0 {
        amount *= 10;
        exponent -= 1;
    }
    let decimal = match exponent {
        -9 => Some("n"),
        -6 => Some("u"),
        -3 => Some("m"),
        0 => Some(""),
        3 => Some("k"),
        6 => Some("M"),
        9 => Some("G"),
        12 => Some("T"),
        15 => Some("P"),
        18 => Some("E"),
        _ => None,
    };
    match decimal {
        Some(_) if format == Format::DecimalExponent && exponent != 0 => format!("{amount}e{exponent}"),
        Some(suffix) => format!("{amount}{suffix}"),
        None => format!("{amount}e{exponent}"),
    }
}

/// A quantity as the rules read it: its amount and the format it is shown in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quantity {
    /// The amount in billionths.
    pub(crate) nanos: i128,
    /// How it is written.
    pub(crate) format: Format,
}

impl Quantity {
    /// A quantity as JSON carries it: a string, or a number as kubectl sends YAML's `cpu: 1`.
    pub(crate) fn of(v: &serde_json::Value) -> Option<Quantity> {
        let text = text(v)?;
        Some(Quantity { nanos: parse(&text)?, format: format_of(&text) })
    }

    /// The quantity in kube's canonical form.
    pub(crate) fn shown(self) -> String {
        render(self.nanos, self.format)
    }

    /// kube's `Add`: the receiver's format, unless it is zero (a sum past what the server
    /// holds stays at its largest, above any bound).
    pub(crate) fn add(self, other: Quantity) -> Quantity {
        let format = if self.nanos == 0 { other.format } else { self.format };
        Quantity { nanos: self.nanos.saturating_add(other.nanos), format }
    }
}

/// Quantities by resource name (kube's `ResourceList`).
pub(crate) type ResourceList = std::collections::BTreeMap<String, Quantity>;

/// Adds `q` to `list`'s `k` (kube's `Add`; `q` itself where `list` has none).
pub(crate) fn add_into(list: &mut ResourceList, k: &str, q: Quantity) {
    match list.get_mut(k) {
        Some(have) => *have = have.add(q),
        None => {
            list.insert(k.to_string(), q);
        }
    }
}

/// Makes `list`'s `k` at least `q`.
pub(crate) fn raise_to(list: &mut ResourceList, k: &str, q: Quantity) {
    match list.get_mut(k) {
        Some(have) if have.nanos >= q.nanos => {}
        Some(have) => *have = q,
        None => {
            list.insert(k.to_string(), q);
        }
    }
}

/// The quantities of a JSON resource list, without the entries that are not quantities.
pub(crate) fn list_of(v: Option<&serde_json::Map<String, serde_json::Value>>) -> ResourceList {
    v.into_iter().flatten().filter_map(|(k, v)| Some((k.clone(), Quantity::of(v)?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms_are_kubes() {
        for (written, want) in [
            ("1000m", "1"),
            ("0.5", "500m"),
            ("1000", "1k"),
            ("1500m", "1500m"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("1000Ki", "1000Ki"),
            ("0.5Ki", "512"),
            ("100Mi", "100Mi"),
            ("2e3", "2e3"),
            ("1e2", "100"),
            ("-2", "-2"),
            ("0", "0"),
            ("0.1n", "1n"),
            ("1.5k", "1500"),
            ("64Mi", "64Mi"),
            ("1E", "1E"),
            ("2E3", "2e3"),
        ] {
            assert_eq!(canonical(written).as_deref(), Some(want), "{written}");
        }
    }

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
