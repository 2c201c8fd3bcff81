//! Go's `strconv` readings of text that kube-apiserver applies to annotation values and query
//! parameters.
//!
//! Invariants: `ParseBool` takes exactly `1 t T TRUE true True` and `0 f F FALSE false False`;
//! anything else (an empty string, `yes`, ` true`) is no boolean. `ParseInt` (base 10, 64
//! bits) takes an optional sign and decimal digits, and words its errors as Go does.

/// Go's `strconv.ParseBool`: None where Go returns an error.
pub(crate) fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `strconv.ParseInt(s, 10, 64)`; the error in Go's words.
pub(crate) fn parse_int(s: &str) -> Result<i64, String> {
    let quoted = crate::structural::go_quote(s);
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.ParseInt: parsing {quoted}: invalid syntax"));
    }
    s.parse::<i64>().map_err(|_| format!("strconv.ParseInt: parsing {quoted}: value out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_read_as_go_reads_them() {
        assert_eq!(parse_int("+080"), Ok(80));
        assert_eq!(parse_int("-1"), Ok(-1));
        assert_eq!(parse_int("http"), Err("strconv.ParseInt: parsing \"http\": invalid syntax".into()));
        assert_eq!(
            parse_int("99999999999999999999"),
            Err("strconv.ParseInt: parsing \"99999999999999999999\": value out of range".into())
        );
    }

    #[test]
    fn only_gos_spellings_are_booleans() {
        assert_eq!(
            (parse_bool("T"), parse_bool("False"), parse_bool("yes"), parse_bool("")),
            (Some(true), Some(false), None, None)
        );
    }
}
