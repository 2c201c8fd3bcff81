//! Go's `time.ParseDuration`, which kube-apiserver reads durations with (a request's `timeout`,
//! a CronJob's `@every`, the `duration` format of a schema, a protobuf `Duration`): the value and
//! the errors in Go's words (`time: invalid duration "abc"`, `time: missing unit in duration
//! "5"`, `time: unknown unit "x" in duration "5x"`).
//!
//! Invariants: what Go reads is read to the same nanoseconds (a sign, then numbers with a
//! fraction and a unit each: `ns`, `us`/`µs`, `ms`, `s`, `m`, `h`; a bare `0`); past 2^63 − 1
//! nanoseconds (2^63 negative) is an invalid duration.

/// Go's `time.ParseDuration`: the nanoseconds `s` spells, or Go's error.
pub(crate) fn parse(s: &str) -> Result<i64, String> {
    const LIMIT: u128 = 1 << 63;
    let invalid = || Err(format!("time: invalid duration {}", time_quote(s)));
    let negative = s.starts_with('-');
    let mut rest = s.strip_prefix(['+', '-']).unwrap_or(s).as_bytes();
    if rest == b"0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return invalid();
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        if !(rest[0] == b'.' || rest[0].is_ascii_digit()) {
            return invalid();
        }
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let mut whole: u128 = 0;
        for d in &rest[..digits] {
            whole = whole * 10 + u128::from(d - b'0');
            if whole > LIMIT {
                return invalid();
            }
        }
        rest = &rest[digits..];
        let (mut fraction, mut scale, mut post) = (0u128, 1u128, false);
        if rest.first() == Some(&b'.') {
            rest = &rest[1..];
            let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            for d in &rest[..n] {
                // Digits past what fits are read and left out, as Go does.
                if fraction < LIMIT / 10 {
                    fraction = fraction * 10 + u128::from(d - b'0');
                    scale *= 10;
                }
            }
            post = n > 0;
            rest = &rest[n..];
        }
        if digits == 0 && !post {
            return invalid();
        }
        let unit_len = rest.iter().take_while(|b| !(**b == b'.' || b.is_ascii_digit())).count();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", time_quote(s)));
        }
        let unit = String::from_utf8_lossy(&rest[..unit_len]).into_owned();
        rest = &rest[unit_len..];
        let nanos: u128 = match unit.as_str() {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(format!("time: unknown unit {} in duration {}", time_quote(&unit), time_quote(s))),
        };
        if whole > LIMIT / nanos {
            return invalid();
        }
        let mut v = whole * nanos;
        if fraction > 0 {
            // As Go adds it: through a float.
            v += (fraction as f64 * (nanos as f64 / scale as f64)) as u128;
            if v > LIMIT {
                return invalid();
            }
        }
        total += v;
        if total > LIMIT {
            return invalid();
        }
    }
    if !negative && total > LIMIT - 1 {
        return invalid();
    }
    // At most 2^63: a negative duration reaches i64::MIN.
    let total = total as i128;
    Ok((if negative { -total } else { total }) as i64)
}

/// Go's `time.quote`: bytes outside printable ASCII as `\xNN`.
fn time_quote(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        if c.is_ascii() && c >= ' ' {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_go_reads_them() {
        assert_eq!(parse("1h2m3.5s"), Ok(3_723_500_000_000));
        assert_eq!(parse("300ms"), Ok(300_000_000));
        assert_eq!(parse("-5ns"), Ok(-5));
        assert_eq!(parse("+1.5us"), Ok(1_500));
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("0s"), Ok(0));
        assert_eq!(parse("-9223372036854775808ns"), Ok(i64::MIN));
        assert_eq!(parse("9223372036854775808ns"), Err("time: invalid duration \"9223372036854775808ns\"".into()));
        assert_eq!(parse("abc"), Err("time: invalid duration \"abc\"".into()));
        assert_eq!(parse("5"), Err("time: missing unit in duration \"5\"".into()));
        assert_eq!(parse("5x"), Err("time: unknown unit \"x\" in duration \"5x\"".into()));
        assert_eq!(parse(""), Err("time: invalid duration \"\"".into()));
    }
}
