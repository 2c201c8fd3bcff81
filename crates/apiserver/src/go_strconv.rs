//! Go's `strconv` readings of text that kube-apiserver applies to annotation values and query
//! parameters.
//!
//! Invariants: `ParseBool` takes exactly `1 t T TRUE true True` and `0 f F FALSE false False`;
//! anything else (an empty string, `yes`, ` true`) is no boolean.

/// Go's `strconv.ParseBool`: None where Go returns an error.
pub(crate) fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gos_spellings_are_booleans() {
        assert_eq!(
            (parse_bool("T"), parse_bool("False"), parse_bool("yes"), parse_bool("")),
            (Some(true), Some(false), None, None)
        );
    }
}
