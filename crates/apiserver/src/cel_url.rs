//! kube-apiserver's URL library for validation rules: `url(s)` and `isURL(s)` read a URL as
//! Go's `url.ParseRequestURI` does (an absolute URL, or an absolute path), and a URL answers
//! `getScheme()`, `getHost()`, `getHostname()`, `getPort()`, `getEscapedPath()` and
//! `getQuery()`.
//!
//! Invariants: what Go refuses is refused, with Go's error in kube's words
//! (`URL parse error during conversion from string: parse "x": invalid URI for request`); the
//! parts are Go's: the host keeps its port and brackets, the hostname has neither, the path is
//! given escaped, the query maps each key to its values in order; a fragment is no part of the
//! path or query.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::objects::{Key, Map as CelMap, Opaque};
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

use crate::cel_library::{give, string_arg};

const NAME: &str = "net.URL";

/// A URL's parts, as Go's `url.URL` holds them.
#[derive(Debug, PartialEq, Eq)]
struct Url {
    scheme: String,
    host: String,
    /// The path as written (escaped).
    raw_path: String,
    raw_query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        NAME
    }
}

/// Adds the library to `env`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let url = || Type::new_opaque_type(NAME);
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], to_url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_member_overload("getScheme", "url_get_scheme", url(), vec![], get_scheme)?;
    env.add_member_overload("getHost", "url_get_host", url(), vec![], get_host)?;
    env.add_member_overload("getHostname", "url_get_hostname", url(), vec![], get_hostname)?;
    env.add_member_overload("getPort", "url_get_port", url(), vec![], get_port)?;
    env.add_member_overload("getEscapedPath", "url_get_escaped_path", url(), vec![], get_escaped_path)?;
    env.add_member_overload("getQuery", "url_get_query", url(), vec![], get_query)?;
    Ok(())
}

/// Go's `url.ParseRequestURI(raw)` error, in Go's words (`parse "x": invalid URI for request`).
pub(crate) fn request_uri_error(raw: &str) -> Option<String> {
    request_uri(raw).err().map(|e| format!("parse {raw:?}: {e}"))
}

/// Reads `raw` as Go's `url.ParseRequestURI` does, then takes its parts as `url.Parse` does
/// (without the fragment).
fn parse(raw: &str) -> Result<Url, String> {
    let fail = |e: &str| format!("parse {raw:?}: {e}");
    request_uri(raw).map_err(|e| fail(&e))?;
    let without_fragment = raw.split_once('#').map_or(raw, |(u, _)| u);
    request_uri(without_fragment).map_err(|e| fail(&e))
}

/// Go's `parse(raw, viaRequest=true)`.
fn request_uri(raw: &str) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() {
        return Err("empty url".into());
    }
    if raw == "*" {
        return Ok(Url { scheme: String::new(), host: String::new(), raw_path: "*".into(), raw_query: String::new() });
    }
    let (scheme, rest) = split_scheme(raw)?;
    let (rest, raw_query) = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        (&rest[..rest.len() - 1], "")
    } else {
        rest.split_once('?').unwrap_or((rest, ""))
    };
    let mut url = Url {
        scheme: scheme.to_ascii_lowercase(),
        host: String::new(),
        raw_path: String::new(),
        raw_query: raw_query.into(),
    };
    if !rest.starts_with('/') {
        if !scheme.is_empty() {
            // An opaque URL (`mailto:x`): no host or path.
            return Ok(url);
        }
        return Err("invalid URI for request".into());
    }
    let mut path = rest;
    if !scheme.is_empty()
        && let Some(after) = rest.strip_prefix("//")
    {
        let (authority, p) = after.find('/').map_or((after, ""), |i| after.split_at(i));
        let host = match authority.rsplit_once('@') {
            Some((user, host)) => {
                check_userinfo(user)?;
                host
            }
            None => authority,
        };
        check_host(host)?;
        url.host = host.into();
        path = p;
    }
    unescape(path, false)?;
    url.raw_path = path.into();
    Ok(url)
}

/// Go's `getScheme`: the scheme and the rest, or no scheme.
fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.char_indices() {
        match c {
            c if c.is_ascii_alphabetic() => {}
            c if (c.is_ascii_digit() || matches!(c, '+' | '-' | '.')) && i > 0 => {}
            ':' if i == 0 => return Err("missing protocol scheme".into()),
            ':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Whether `port` (with its colon) is empty or `:` and digits.
fn valid_port(port: &str) -> bool {
    port.is_empty() || port.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `validUserinfo` and `unescape` of a URL's user information.
fn check_userinfo(user: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c);
    if !user.chars().all(allowed) {
        return Err("net/url: invalid userinfo".into());
    }
    unescape(user, false).map(drop)
}

/// Go's `parseHost` checks: brackets for IPv6, a numeric port, host characters, escapes only of
/// bytes past ASCII (and of `%` itself).
fn check_host(host: &str) -> Result<(), String> {
    let name = if let Some(inner) = host.strip_prefix('[') {
        let Some(end) = inner.find(']') else { return Err("missing ']' in host".into()) };
        let port = &inner[end + 1..];
        if !valid_port(port) {
            return Err(format!("invalid port {port:?} after host"));
        }
        &inner[..end]
    } else if let Some(i) = host.rfind(':') {
        if !valid_port(&host[i..]) {
            return Err(format!("invalid port {:?} after host", &host[i..]));
        }
        &host[..i]
    } else {
        host
    };
    for c in name.chars() {
        let allowed = c.is_ascii_alphanumeric() || !c.is_ascii() || "-._~!$&'()*+,;=:[]<>\"%".contains(c);
        if !allowed {
            return Err(format!("invalid character {:?} in host name", c.to_string()));
        }
    }
    unescape(name, false)?;
    let ascii_escape =
        name.match_indices('%').map(|(i, _)| &name[i..i + 3]).find(|e| e.as_bytes()[1] < b'8' && *e != "%25");
    match ascii_escape {
        Some(e) => Err(format!("invalid URL escape {e:?}")),
        None => Ok(()),
    }
}

/// Percent-decodes `s` (`+` as a space in a query), as Go's `unescape` checks it.
fn unescape(s: &str, query: bool) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) if hex.is_some_and(|h| h.bytes().all(|c| c.is_ascii_hexdigit())) => out.push(b),
                    _ => {
                        let bad: String = s[i..].chars().take(3).collect();
                        return Err(format!("invalid URL escape {bad:?}"));
                    }
                }
                i += 3;
            }
            b'+' if query => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `EscapedPath`: the path as written if it is validly escaped, else the decoded path
/// escaped again.
fn escaped_path(raw: &str) -> String {
    let valid = raw.bytes().all(|b| b == b'%' || b"!$&'()*+,;=:@[]".contains(&b) || !crate::go_path::escapes(b));
    if valid {
        return raw.into();
    }
    crate::go_path::escape(&unescape(raw, false).unwrap_or_default())
}

/// Go's `url.ParseQuery`, keeping what parses: each key's values in order.
fn query(raw: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for pair in raw.split('&').filter(|p| !p.is_empty() && !p.contains(';')) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (Ok(k), Ok(v)) = (unescape(k, true), unescape(v, true)) else { continue };
        match out.iter_mut().find(|(key, _)| *key == k) {
            Some((_, values)) => values.push(v),
            None => out.push((k, vec![v])),
        }
    }
    out
}

fn text<'b, 'v>(s: &str) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::String(Arc::new(s.to_string())))
}

/// The receiver, a URL, given to `f`.
fn with_url<'b, 'v>(
    args: &[CowVal<'b, 'v>],
    function: &str,
    f: impl FnOnce(&Url) -> Result<CowVal<'b, 'v>, ExecutionError>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let a = args.first().ok_or(ExecutionError::MissingArgumentOrTarget)?;
    match Cel::try_from(a.as_ref())? {
        Cel::Opaque(o) => match o.downcast_ref::<Url>() {
            Some(u) => f(u),
            None => Err(ExecutionError::function_error(function, "expected a URL")),
        },
        _ => Err(ExecutionError::function_error(function, "expected a URL")),
    }
}

fn to_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    match parse(&string_arg(&args, 0, "url")?) {
        Ok(u) => give(Cel::Opaque(Arc::new(u))),
        Err(e) => {
            Err(ExecutionError::function_error("url", format!("URL parse error during conversion from string: {e}")))
        }
    }
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(request_uri(&string_arg(&args, 0, "isURL")?).is_ok()))
}

fn get_scheme<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_url(&args, "getScheme", |u| text(&u.scheme))
}

fn get_host<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_url(&args, "getHost", |u| text(&u.host))
}

/// Go's `splitHostPort`: the host without its port and brackets, and the port.
fn host_port(host: &str) -> (&str, &str) {
    let (mut name, mut port) = (host, "");
    if let Some(i) = host.rfind(':')
        && valid_port(&host[i..])
    {
        (name, port) = (&host[..i], &host[i + 1..]);
    }
    if let Some(inner) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        name = inner;
    }
    (name, port)
}

fn get_hostname<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_url(&args, "getHostname", |u| text(host_port(&u.host).0))
}

fn get_port<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_url(&args, "getPort", |u| text(host_port(&u.host).1))
}

fn get_escaped_path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_url(&args, "getEscapedPath", |u| text(&escaped_path(&u.raw_path)))
}

fn get_query<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_url(&args, "getQuery", |u| {
        let map: HashMap<Key, Cel> = query(&u.raw_query)
            .into_iter()
            .map(|(k, vs)| {
                let values = vs.into_iter().map(|v| Cel::String(Arc::new(v))).collect();
                (Key::String(Arc::new(k)), Cel::List(Arc::new(values)))
            })
            .collect();
        give(Cel::Map(CelMap { map: Arc::new(map) }))
    })
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
    fn urls_read_as_go_reads_them() {
        is_true("isURL('https://example.com/path') && isURL('/absolute-path') && isURL('mailto:a@b.c') && isURL('*')");
        is_true("!isURL('example.com') && !isURL('') && !isURL('https://a b.com/') && !isURL('http://x:port/')");
        is_true("!isURL('https://example.com/%zz') && !isURL(':no-scheme')");
        is_true("url('HTTPS://example.com/').getScheme() == 'https'");
        is_true("url('https://example.com:80/').getHost() == 'example.com:80'");
        is_true("url('https://[::1]:80/').getHost() == '[::1]:80' && url('https://[::1]:80/').getHostname() == '::1'");
        is_true("url('https://127.0.0.1:80/').getHostname() == '127.0.0.1' && url('/path').getHostname() == ''");
        is_true("url('https://example.com:80/').getPort() == '80' && url('https://example.com/').getPort() == ''");
        is_true("url('https://example.com/path').getEscapedPath() == '/path'");
        is_true("url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'");
        is_true("url('https://example.com').getEscapedPath() == ''");
        is_true("url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}");
        is_true(
            "url('https://example.com/path?key with spaces=value with spaces').getQuery() == {'key with spaces': ['value with spaces']}",
        );
        is_true(
            "url('https://example.com/path?').getQuery() == {} && url('https://example.com/p?a=1#frag').getQuery() == {'a': ['1']}",
        );
        is_true("url('https://user:pw@example.com/').getHost() == 'example.com'");
    }

    #[test]
    fn what_go_refuses_is_an_error_in_kube_words() {
        match eval("url('example.com').getHost() == ''") {
            Err(ExecutionError::FunctionError { message, .. }) => assert_eq!(
                message,
                "URL parse error during conversion from string: parse \"example.com\": invalid URI for request"
            ),
            other => panic!("{other:?}"),
        }
    }
}
