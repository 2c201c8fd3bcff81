//! The string `format`s a custom resource's schema is validated against, as kube-apiserver v1.35
//! checks them (kube-openapi's strfmt registry, with the formats apiextensions keeps at that
//! version: `bsonobjectid`, `uri`, `email`, `hostname`, `ipv4`, `ipv6`, `cidr`, `mac`, `uuid`,
//! `uuid3`, `uuid4`, `uuid5`, `isbn`, `isbn10`, `isbn13`, `creditcard`, `ssn`, `hexcolor`,
//! `rgbcolor`, `byte`, `password`, `date`, `duration`, `datetime`, `k8s-short-name` and
//! `k8s-long-name`).
//!
//! Invariants: a format's name is read as strfmt reads it, its dashes dropped (`date-time` is
//! `datetime`); a format kube strips from the schema (any other, numbers' `int32`, `int64`,
//! `float`, `double` among them) accepts every value.

use std::sync::LazyLock;

use regex::Regex;

fn rx(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid pattern")
}

/// base64 text as govalidator reads it.
static BASE64: LazyLock<Regex> =
    LazyLock::new(|| rx(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"));
/// A UUID with optional dashes, in any case; then the versions' own.
static UUID: LazyLock<Regex> =
    LazyLock::new(|| rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Regex> =
    LazyLock::new(|| rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID4: LazyLock<Regex> =
    LazyLock::new(|| rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static UUID5: LazyLock<Regex> =
    LazyLock::new(|| rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
/// The time of a date-time (any character before the fraction, as its unescaped `.` allows).
static TIME: LazyLock<Regex> =
    LazyLock::new(|| rx(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"));
static HEX_COLOR: LazyLock<Regex> = LazyLock::new(|| rx(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGB_COLOR: LazyLock<Regex> = LazyLock::new(|| {
    let (c, s) = (r"(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])", r"[\t\n\f\r ]*");
    rx(&format!(r"^rgb\({s}{c}{s},{s}{c}{s},{s}{c}{s}\)$"))
});
static SSN: LazyLock<Regex> = LazyLock::new(|| rx(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$"));
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})$",
    )
});
/// A Scala-style duration (`3 days`, `1h 30min`), strfmt's fallback after Go's own syntax.
/// (Go's RE2 classes are ASCII: digits `[0-9]`, spaces `[\t\n\f\r ]`.)
static SCALA_DURATION: LazyLock<Regex> =
    LazyLock::new(|| rx(r"^[\t\n\f\r ]*(?:[0-9]+[\t\n\f\r ]*[A-Za-zµ]+[\t\n\f\r ]*)+$"));
static DURATION_PART: LazyLock<Regex> = LazyLock::new(|| rx(r"([0-9]+)[\t\n\f\r ]*([A-Za-zµ]+)"));
/// kube-openapi's host name: one label (a character, then at most one dash, then up to 62
/// more), or labels of up to 63 characters (dashes inside) ending in one of at least two
/// characters without two dashes in a row; letters and symbols of any script count.
static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    let c = r"[a-zA-Z0-9\p{S}\p{L}]";
    let inner = r"[a-zA-Z0-9\-\p{S}\p{L}]";
    rx(&format!(r"^({c}((-?{c}{{0,62}})?)|({c}(({inner}{{0,61}}{c})?)(\.)){{1,}}({c})(-?{c}){{1,62}})$"))
});
static DNS1123_LABEL: LazyLock<Regex> = LazyLock::new(|| rx(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
static DNS1123_SUBDOMAIN: LazyLock<Regex> =
    LazyLock::new(|| rx(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"));

/// Whether `s` has the string format `format` (formats kube does not check: true).
pub(crate) fn format_ok(format: &str, s: &str) -> bool {
    match format.replace('-', "").as_str() {
        "datetime" => is_date_time(s),
        "date" => is_date(s),
        "byte" => BASE64.is_match(s),
        "uuid" => UUID.is_match(s),
        "uuid3" => UUID3.is_match(s),
        "uuid4" => UUID4.is_match(s),
        "uuid5" => UUID5.is_match(s),
        // govalidator's: any address Go parses, with a dot (v4) or a colon (v6) in it.
        "ipv4" => s.parse::<std::net::IpAddr>().is_ok() && s.contains('.'),
        "ipv6" => s.parse::<std::net::IpAddr>().is_ok() && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "email" => is_email(s),
        "hostname" => is_hostname(s),
        "uri" => is_request_uri(s),
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "hexcolor" => HEX_COLOR.is_match(s),
        "rgbcolor" => RGB_COLOR.is_match(s),
        "ssn" => s.len() == 11 && SSN.is_match(s),
        "isbn" => is_isbn10(s) || is_isbn13(s),
        "isbn10" => is_isbn10(s),
        "isbn13" => is_isbn13(s),
        "creditcard" => is_credit_card(s),
        "duration" => is_duration(s),
        "k8sshortname" => s.len() <= 63 && DNS1123_LABEL.is_match(s),
        "k8slongname" => s.len() <= 253 && DNS1123_SUBDOMAIN.is_match(s),
        _ => true,
    }
}

/// A `date` as Go's `time.Parse("2006-01-02")` reads it.
fn is_date(s: &str) -> bool {
    s.len() == 10 && s.as_bytes()[4] == b'-' && s.parse::<jiff::civil::Date>().is_ok()
}

/// A `date-time` as kube-openapi's `IsDateTime` reads it: lowercased, split at `t`, a date, then
/// `HH:MM:SS`, an optional fraction and `z` or an offset, with hours to 23 and minutes and
/// seconds to 59.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else { return false };
    if !is_date(date) {
        return false;
    }
    TIME.captures(time).is_some_and(|c| &c[1] <= "23" && &c[2] <= "59" && &c[3] <= "59")
}

/// Go's `net.ParseCIDR`: an address, `/`, a decimal prefix no longer than the family's.
fn is_cidr(s: &str) -> bool {
    let Some((ip, len)) = s.split_once('/') else { return false };
    if len.is_empty() || !len.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let Ok(len) = len.parse::<u8>() else { return false };
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => len <= 32,
        Ok(std::net::IpAddr::V6(_)) => len <= 128,
        Err(_) => false,
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as two hex digits each separated by `:` or `-`, or
/// as groups of four hex digits separated by `.`.
fn is_mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    let octets = |sep: char| {
        let parts: Vec<&str> = s.split(sep).collect();
        matches!(parts.len(), 6 | 8 | 20) && parts.iter().all(|p| hex(p, 2))
    };
    let groups = || {
        let parts: Vec<&str> = s.split('.').collect();
        matches!(parts.len() * 2, 6 | 8 | 20) && parts.iter().all(|p| hex(p, 4))
    };
    octets(':') || octets('-') || groups()
}

/// An address as Go's `mail.ParseAddress` takes one: `local@domain`, alone or in angle brackets
/// after a display name.
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let addr = match (s.rfind('<'), s.ends_with('>')) {
        (Some(i), true) => &s[i + 1..s.len() - 1],
        _ => s,
    };
    let Some((local, domain)) = addr.rsplit_once('@') else { return false };
    let atom = |p: &str| !p.is_empty() && !p.starts_with('.') && !p.ends_with('.') && !p.contains("..");
    let text = |p: &str| p.chars().all(|c| !c.is_whitespace() && !"()<>[]:;@\\,\"".contains(c));
    atom(local) && atom(domain) && text(local) && text(domain)
}

/// A host name as kube-openapi's pattern reads it, at most 255 bytes, labels of at most 63.
fn is_hostname(s: &str) -> bool {
    HOSTNAME.is_match(s) && s.len() <= 255 && s.split('.').all(|l| l.len() <= 63)
}

/// Go's `url.ParseRequestURI`: an absolute URI (a scheme) or an absolute path, no control
/// characters, well-formed escapes, and a host without spaces.
fn is_request_uri(s: &str) -> bool {
    if s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    let escapes_ok = s.split('%').skip(1).all(|p| p.len() >= 2 && p.as_bytes()[..2].iter().all(u8::is_ascii_hexdigit));
    if !escapes_ok {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    let Some((scheme, rest)) = s.split_once(':') else { return false };
    let mut chars = scheme.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return false;
    }
    match rest.strip_prefix("//") {
        Some(authority) => {
            let host = authority.split(['/', '?']).next().unwrap_or_default();
            !host.contains(' ')
        }
        // `scheme:opaque` (the opaque part possibly empty) is an absolute URI.
        None => true,
    }
}

/// An ISBN-10 (its dashes and spaces taken out): nine digits and a check digit or `X`.
fn is_isbn10(s: &str) -> bool {
    let digits: Vec<char> = s.chars().filter(|c| *c != '-' && *c != ' ').collect();
    if digits.len() != 10 || !digits[..9].iter().all(char::is_ascii_digit) {
        return false;
    }
    let last = match digits[9] {
        'X' => 10,
        c => match c.to_digit(10) {
            Some(d) => d,
            None => return false,
        },
    };
    let sum: u32 = digits[..9].iter().enumerate().map(|(i, c)| (i as u32 + 1) * c.to_digit(10).unwrap_or(0)).sum();
    (sum + 10 * last).is_multiple_of(11)
}

/// An ISBN-13 (its dashes and spaces taken out): thirteen digits whose weighted sum checks.
fn is_isbn13(s: &str) -> bool {
    let digits: Vec<u32> = s.chars().filter(|c| *c != '-' && *c != ' ').filter_map(|c| c.to_digit(10)).collect();
    let len = s.chars().filter(|c| *c != '-' && *c != ' ').count();
    if len != 13 || digits.len() != 13 {
        return false;
    }
    let sum: u32 = digits[..12].iter().enumerate().map(|(i, d)| if i % 2 == 0 { *d } else { 3 * d }).sum();
    (10 - sum % 10) % 10 == digits[12]
}

/// A card number (anything but digits taken out) of a known issuer's shape whose Luhn sum
/// checks.
fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !CREDIT_CARD.is_match(&digits) {
        return false;
    }
    let sum: u32 = digits
        .chars()
        .rev()
        .filter_map(|c| c.to_digit(10))
        .enumerate()
        .map(|(i, d)| match i % 2 {
            1 if d * 2 > 9 => d * 2 - 9,
            1 => d * 2,
            _ => d,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// strfmt's duration: Go's `time.ParseDuration` syntax, or numbers with Scala-style units
/// (`ns`, `us`, `ms`, `s`/`sec`, `m`/`min`, `h`/`hr`/`hour`, `d`/`day`, `w`/`wk`/`week`, and
/// the longest of each as a prefix: `hours`, `days`).
fn is_duration(s: &str) -> bool {
    if crate::go_duration::parse(s).is_ok() {
        return true;
    }
    if !SCALA_DURATION.is_match(s) {
        return false;
    }
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    // Go's Atoi refuses a number past int64.
    if DURATION_PART.captures_iter(s).any(|c| c[1].parse::<i64>().is_err()) {
        return false;
    }
    DURATION_PART.captures_iter(s).any(|c| {
        let unit = c[2].to_lowercase();
        UNITS.iter().any(|variants| {
            variants.iter().enumerate().any(|(i, v)| unit == *v || (i == variants.len() - 1 && unit.starts_with(v)))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_judge_as_kube_openapi_s() {
        let cases: &[(&str, &str, bool)] = &[
            ("date-time", "2024-05-01T10:00:00Z", true),
            ("datetime", "2024-05-01 10:00", false),
            ("date", "2024-02-30", false),
            ("uri", "https://example.com/a?b=c", true),
            ("uri", "/relative/path", true),
            ("uri", "example.com", false),
            ("uri", "http://exa mple.com", false),
            ("uri", "http://example.com/%zz", false),
            ("mac", "00:1a:2B:3c:4d:5e", true),
            ("mac", "0000.5e00.5301", true),
            ("mac", "00:1a:2b", false),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
            ("email", "a@localhost", true),
            ("email", "Ann <ann@example.com>", true),
            ("email", "no-at.example.com", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/64", false),
            ("cidr", "fd00::/64", true),
            ("duration", "1h30m", true),
            ("duration", "3 days", true),
            ("duration", "soon", false),
            ("hexcolor", "#ffF", true),
            ("rgbcolor", "rgb(255, 0, 10)", true),
            ("rgbcolor", "rgb(256,0,0)", false),
            ("isbn10", "0-321-75104-3", true),
            ("isbn13", "978-0321751041", true),
            ("isbn", "978-0321751042", false),
            ("creditcard", "4111 1111 1111 1111", true),
            ("creditcard", "4111 1111 1111 1112", false),
            ("ssn", "123-45-6789", true),
            ("bsonobjectid", "507f1f77bcf86cd799439011", true),
            ("hostname", "my-host-name", false),
            ("hostname", "my-host.example.com", true),
            ("hostname", "a.b", false),
            ("hostname", "☃.com", true),
            ("ipv4", "::ffff:1.2.3.4", true),
            ("ipv4", "1.2.3", false),
            ("cidr", "10.0.0.0/+8", false),
            ("duration", "99999999999999999999s", false),
            ("duration", "٣ days", false),
            ("k8s-short-name", "my-name", true),
            ("k8s-short-name", "My-Name", false),
            ("k8s-long-name", "a.b-c.d", true),
            ("int32", "anything", true),
            ("password", "", true),
        ];
        for (format, value, ok) in cases {
            assert_eq!(format_ok(format, value), *ok, "{format} {value:?}");
        }
    }
}
