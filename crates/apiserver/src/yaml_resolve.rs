//! How go-yaml v2 resolves a plain scalar (its `resolve`), as the YAML writer needs it to
//! know which strings must be quoted and the YAML reader to know which scalars are numbers.
//!
//! A plain scalar is not a string when it is null (`null`, `~`, empty), a bool (`true`, `y`,
//! `on`… in three capitalizations), a special float (`.inf`, `-.Inf`, `.nan`), a timestamp
//! (Go's `time.Parse` with `2006-1-2T15:4:5.999999999Z07:00`, the same with `t` or a space
//! and no zone, or `2006-1-2`), an integer (Go's `strconv.ParseInt` or `ParseUint` with base
//! 0 once underscores are dropped) or a float in YAML's syntax that Go parses without
//! overflow. Only scalars starting with a sign, a digit, a dot or one of `yYnNtTfFoO~` are
//! looked at: `<<` is a string.
//!
//! Invariants: pure functions of the text; nothing allocates but the underscore-free copy.

/// Whether go-yaml v2 resolves the plain scalar `s` to a string (its `resolve`): not null, a
/// bool, a special float, the merge key, a timestamp, an integer or a float.
pub(crate) fn is_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no", "No", "NO", "false",
        "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf",
        ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
    ];
    if SPECIAL.contains(&s) {
        return false;
    }
    match s.as_bytes()[0] {
        b'.' => go_parse_float(s).is_none(),
        b'0'..=b'9' | b'+' | b'-' => {
            let plain = s.replace('_', "");
            // After the floats, go-yaml tries `0b` with a signed binary number after it.
            let binary = plain.strip_prefix("0b").is_some_and(|rest| go_parses_in(rest, 2));
            !(is_timestamp(s) || go_parses_int(&plain) || float(s).is_some() || binary)
        }
        _ => true,
    }
}

/// The float go-yaml v2 resolves the plain scalar `s` to, if it is one in its syntax: after a
/// `.`, what Go's `strconv.ParseFloat` reads of `s`; after a sign or a digit, a match of its
/// float pattern once underscores are dropped; never an overflow.
pub(crate) fn float(s: &str) -> Option<f64> {
    match s.as_bytes().first()? {
        b'.' => go_parse_float(s),
        b'0'..=b'9' | b'+' | b'-' => {
            let plain = s.replace('_', "");
            is_yaml_float(&plain).then(|| plain.parse::<f64>().ok()).flatten().filter(|f| f.is_finite())
        }
        _ => None,
    }
}

/// Whether Go's `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` accepts `s` (a sign,
/// then `0x`, `0o`, `0b`, a leading `0` for octal, or decimal digits).
fn go_parses_int(s: &str) -> bool {
    let (sign, body) = match s.as_bytes().first() {
        Some(b'-' | b'+') => s.split_at(1),
        _ => ("", s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    go_parses_in(&format!("{sign}{digits}"), radix)
}

/// Whether Go's `strconv.ParseInt(s, radix, 64)` or `ParseUint(s, radix, 64)` accepts `s`:
/// digits of `radix` after an optional sign.
fn go_parses_in(s: &str, radix: u32) -> bool {
    let (negative, signed, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, true, &s[1..]),
        Some(b'+') => (false, true, &s[1..]),
        _ => (false, false, s),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return false;
    }
    let Ok(n) = u128::from_str_radix(digits, radix) else { return false };
    if negative {
        n <= i64::MAX as u128 + 1
    } else {
        // ParseUint takes no sign; ParseInt takes a sign up to i64's bound.
        n <= i64::MAX as u128 || (!signed && n <= u64::MAX as u128)
    }
}

/// go-yaml v2's float syntax for plain scalars: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    let int = digits(&mut i);
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac = digits(&mut i);
        if int == 0 && frac == 0 {
            return false;
        }
    } else if int == 0 {
        return false;
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        i += 1;
        if i < b.len() && matches!(b[i], b'-' | b'+') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` for a decimal starting with `.`: digits with single
/// underscores between them, an optional exponent; `None` when it fails or overflows.
fn go_parse_float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut seen_digit = false;
    let mut clean = String::with_capacity(s.len());
    // Underscores only between digits.
    let run = |i: &mut usize, clean: &mut String, seen: &mut bool| -> Option<()> {
        let mut last_underscore = false;
        let mut any = false;
        while *i < b.len() && (b[*i].is_ascii_digit() || b[*i] == b'_') {
            if b[*i] == b'_' {
                if !any || last_underscore {
                    return None;
                }
                last_underscore = true;
            } else {
                clean.push(b[*i] as char);
                any = true;
                *seen = true;
                last_underscore = false;
            }
            *i += 1;
        }
        (!last_underscore).then_some(())
    };
    if b.first() != Some(&b'.') {
        return None;
    }
    clean.push('.');
    i += 1;
    run(&mut i, &mut clean, &mut seen_digit)?;
    if !seen_digit {
        return None;
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        clean.push('e');
        i += 1;
        if i < b.len() && matches!(b[i], b'-' | b'+') {
            clean.push(b[i] as char);
            i += 1;
        }
        let mut exp_digit = false;
        run(&mut i, &mut clean, &mut exp_digit)?;
        if !exp_digit {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    clean.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// YAML 1.1's base-60 floats (`1:20`, `-3:25:45.5`), which go-yaml v2 quotes for older
/// readers: `[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?`.
pub(crate) fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    if i >= b.len() || !b[i].is_ascii_digit() || !s.contains(':') {
        return false;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        if i + 1 < b.len() && (b'0'..=b'5').contains(&b[i]) && b[i + 1].is_ascii_digit() {
            i += 2;
        } else if i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        } else {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// Whether go-yaml v2 reads `s` as a timestamp: Go's `time.Parse` with one of
/// `2006-1-2T15:4:5.999999999Z07:00` (also with `t`), `2006-1-2 15:4:5.999999999` or
/// `2006-1-2`, its year exactly four digits.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let year: u32 = s[..4].parse().unwrap_or(0);
    let mut p = 5;
    // Go's getnum: one digit, or two when a second follows.
    let num = |p: &mut usize| -> Option<u32> {
        let d = |k: usize| b.get(k).filter(|c| c.is_ascii_digit()).map(|c| u32::from(c - b'0'));
        let first = d(*p)?;
        match d(*p + 1) {
            Some(second) => {
                *p += 2;
                Some(first * 10 + second)
            }
            None => {
                *p += 1;
                Some(first)
            }
        }
    };
    let expect = |p: &mut usize, c: u8| -> Option<()> { (b.get(*p) == Some(&c)).then(|| *p += 1) };
    let parsed = (|| -> Option<bool> {
        let month = num(&mut p)?;
        expect(&mut p, b'-')?;
        let day = num(&mut p)?;
        let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
        let days = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        if day < 1 || day > days {
            return None;
        }
        if p == b.len() {
            return Some(true);
        }
        let separator = b[p];
        if !matches!(separator, b'T' | b't' | b' ') {
            return None;
        }
        p += 1;
        // A space in Go's layout matches a run of spaces.
        while separator == b' ' && b.get(p) == Some(&b' ') {
            p += 1;
        }
        let hour = num(&mut p)?;
        expect(&mut p, b':')?;
        let minute = num(&mut p)?;
        expect(&mut p, b':')?;
        let second = num(&mut p)?;
        if hour >= 24 || minute >= 60 || second >= 60 {
            return None;
        }
        if p + 1 < b.len() && matches!(b[p], b'.' | b',') && b[p + 1].is_ascii_digit() {
            p += 1;
            while p < b.len() && b[p].is_ascii_digit() {
                p += 1;
            }
        }
        if separator != b' ' {
            if b.get(p) == Some(&b'Z') {
                p += 1;
            } else {
                let zone = b.get(p..p + 6)?;
                let two = |k: usize| -> Option<u32> {
                    (zone[k].is_ascii_digit() && zone[k + 1].is_ascii_digit())
                        .then(|| u32::from(zone[k] - b'0') * 10 + u32::from(zone[k + 1] - b'0'))
                };
                if !matches!(zone[0], b'+' | b'-') || zone[3] != b':' || two(1)? > 24 || two(4)? > 60 {
                    return None;
                }
                p += 6;
            }
        }
        Some(p == b.len())
    })();
    parsed == Some(true)
}
