//! A CronJob's schedule and time zone read as kube-apiserver reads them: the standard cron
//! grammar of five fields (minute, hour, day of month, month, day of week) or a descriptor
//! (`@hourly`, `@every 90m`, ...), optionally after `TZ=<zone> ` or `CRON_TZ=<zone> `; a time zone
//! is an IANA name from the time zone database the server carries.
//!
//! Invariants: [`schedule_fault`] answers None for every schedule kube's cron parser accepts and
//! otherwise its message (the first fault only, as the parser stops there); nothing here reads
//! the clock or the machine's own time zone files.

use crate::structural::go_quote;

/// The values one schedule field takes, with the names that stand for values.
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MINUTES: Bounds = Bounds { min: 0, max: 59, names: &[] };
const HOURS: Bounds = Bounds { min: 0, max: 23, names: &[] };
const DAYS_OF_MONTH: Bounds = Bounds { min: 1, max: 31, names: &[] };
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)],
};

/// Why kube refuses `schedule` (a non-empty one), or None when it parses.
pub(crate) fn schedule_fault(schedule: &str) -> Option<String> {
    let mut spec = schedule;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let Some(space) = spec.find(' ') else {
            // kube's parser slices up to a space that is not there and recovers from the panic.
            return Some("invalid schedule format: runtime error: slice bounds out of range [:-1]".into());
        };
        let eq = spec.find('=').unwrap_or(0);
        let zone = spec.get(eq + 1..space).unwrap_or("");
        if let Some(e) = location_fault(zone) {
            return Some(format!("provided bad location {zone}: {e}"));
        }
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        return descriptor_fault(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Some(format!("expected exactly 5 fields, found {}: [{}]", fields.len(), fields.join(" ")));
    }
    let bounds = [&MINUTES, &HOURS, &DAYS_OF_MONTH, &MONTHS, &DAYS_OF_WEEK];
    fields
        .iter()
        .zip(bounds)
        .find_map(|(field, b)| field.split(',').filter(|r| !r.is_empty()).find_map(|r| range_fault(r, b)))
}

/// A descriptor's fault: kube knows the named ones and `@every <duration>`.
fn descriptor_fault(spec: &str) -> Option<String> {
    const NAMED: [&str; 7] = ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"];
    if NAMED.contains(&spec) {
        return None;
    }
    match spec.strip_prefix("@every ") {
        Some(d) => crate::go_duration::parse(d).err().map(|e| format!("failed to parse duration {spec}: {e}")),
        None => Some(format!("unrecognized descriptor: {spec}")),
    }
}

/// One comma-separated part of a field: `*` or `?`, a value, or a range `a-b`, each with an
/// optional step `/n`.
fn range_fault(expr: &str, b: &Bounds) -> Option<String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (b.min, b.max)
    } else {
        let start = match int_or_name(low_and_high[0], b) {
            Ok(v) => v,
            Err(e) => return Some(e),
        };
        let end = match low_and_high.len() {
            1 => start,
            2 => match int_or_name(low_and_high[1], b) {
                Ok(v) => v,
                Err(e) => return Some(e),
            },
            _ => return Some(format!("too many hyphens: {expr}")),
        };
        (start, end)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = match int(range_and_step[1]) {
                Ok(v) => v,
                Err(e) => return Some(e),
            };
            // "N/step" runs from N to the field's maximum.
            if low_and_high.len() == 1 {
                end = b.max;
            }
            step
        }
        _ => return Some(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Some(format!("beginning of range ({start}) below minimum ({}): {expr}", b.min));
    }
    if end > b.max {
        return Some(format!("end of range ({end}) above maximum ({}): {expr}", b.max));
    }
    if start > end {
        return Some(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Some(format!("step of range should be a positive number: {expr}"));
    }
    None
}

fn int_or_name(expr: &str, b: &Bounds) -> Result<u64, String> {
    let lower = expr.to_lowercase();
    match b.names.iter().find(|(n, _)| *n == lower) {
        Some((_, v)) => Ok(*v),
        None => int(expr),
    }
}

/// A number as Go's `strconv.Atoi` reads it (an optional sign, decimal digits), not negative.
fn int(expr: &str) -> Result<u64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    let atoi = if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        Err("invalid syntax")
    } else {
        digits.parse::<i64>().map(|n| if expr.starts_with('-') { -n } else { n }).map_err(|_| "value out of range")
    };
    match atoi {
        Err(e) => Err(format!("failed to parse int from {expr}: strconv.Atoi: parsing {}: {e}", go_quote(expr))),
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {expr}")),
        Ok(n) => Ok(n as u64),
    }
}

/// Why Go's `time.LoadLocation` refuses `name` (with the IANA database kube-apiserver embeds),
/// or None. Names are exact: the database's own spelling, `UTC`, or empty (UTC).
pub(crate) fn location_fault(name: &str) -> Option<String> {
    static BUNDLED: std::sync::OnceLock<jiff::tz::TimeZoneDatabase> = std::sync::OnceLock::new();
    if name.is_empty() || name == "UTC" || name == "Local" {
        return None;
    }
    if name.contains("..") || name.starts_with(['/', '\\']) {
        return Some("time: invalid location name".into());
    }
    let db = BUNDLED.get_or_init(jiff::tz::TimeZoneDatabase::bundled);
    let known = db.get(name).ok().is_some_and(|tz| tz.iana_name() == Some(name));
    (!known).then(|| format!("unknown time zone {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_schedules_and_descriptors_parse() {
        for ok in [
            "*/5 * * * *",
            "0 0 * * *",
            "15 3 1-15/2 jan,JUL mon-fri",
            "0 12 ? * SUN",
            "5/15 * * * *",
            "@hourly",
            "@every 1h30m",
            "@every 0",
            "@every 1.5h",
            "@every 2562047h",
            "TZ=Europe/Rome 0 9 * * *",
            "CRON_TZ=UTC @daily",
        ] {
            assert_eq!(schedule_fault(ok), None, "{ok}");
        }
    }

    #[test]
    fn faults_are_kube_s_parser_messages() {
        let cases = [
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("0 0 * * * *", "expected exactly 5 fields, found 6: [0 0 * * * *]"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* 24 * * *", "end of range (24) above maximum (23): 24"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            ("* * * 13 *", "end of range (13) above maximum (12): 13"),
            ("* * * * 7", "end of range (7) above maximum (6): 7"),
            ("5-2 * * * *", "beginning of range (5) beyond end of range (2): 5-2"),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("*/2/3 * * * *", "too many slashes: */2/3"),
            ("*/0 * * * *", "step of range should be a positive number: */0"),
            ("x * * * *", "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"),
            ("1- * * * *", "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax"),
            ("* * * * funday", "failed to parse int from funday: strconv.Atoi: parsing \"funday\": invalid syntax"),
            ("@fortnightly", "unrecognized descriptor: @fortnightly"),
            ("@every", "unrecognized descriptor: @every"),
            ("@every 5", "failed to parse duration @every 5: time: missing unit in duration \"5\""),
            ("@every 5d", "failed to parse duration @every 5d: time: unknown unit \"d\" in duration \"5d\""),
            ("@every x", "failed to parse duration @every x: time: invalid duration \"x\""),
            ("TZ=Mars/Olympus 0 * * * *", "provided bad location Mars/Olympus: unknown time zone Mars/Olympus"),
            ("TZ=UTC", "invalid schedule format: runtime error: slice bounds out of range [:-1]"),
            ("TZ=../x 0 * * * *", "provided bad location ../x: time: invalid location name"),
            ("@every 3000000h", "failed to parse duration @every 3000000h: time: invalid duration \"3000000h\""),
            ("@every 1.2.3s", "failed to parse duration @every 1.2.3s: time: missing unit in duration \"1.2.3s\""),
            (
                "@every 5\u{b5}",
                "failed to parse duration @every 5\u{b5}: time: unknown unit \"\\xc2\\xb5\" in duration \"5\\xc2\\xb5\"",
            ),
        ];
        for (schedule, fault) in cases {
            assert_eq!(schedule_fault(schedule).as_deref(), Some(fault), "{schedule}");
        }
    }

    #[test]
    fn time_zones_are_iana_names_spelt_exactly() {
        for ok in ["Europe/Rome", "America/New_York", "UTC", "Etc/GMT+5", "US/Eastern"] {
            assert_eq!(location_fault(ok), None, "{ok}");
        }
        assert_eq!(location_fault("europe/rome").as_deref(), Some("unknown time zone europe/rome"));
        assert_eq!(location_fault("Europe/Atlantis").as_deref(), Some("unknown time zone Europe/Atlantis"));
    }
}
