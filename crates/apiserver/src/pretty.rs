//! Pretty-printed JSON answers, as kube-apiserver gives them to a request with `?pretty=true` or
//! from curl, Wget or a browser (a User-Agent starting `curl`, `Wget` or `Mozilla/5.0`): the
//! JSON indented by two spaces per level, as Go's `json.MarshalIndent` writes it.
//!
//! Invariants: only complete JSON answers are indented (watch streams and other media types
//! are sent as they are); members keep their order and values their text; empty objects and
//! lists stay `{}` and `[]`; the indented answer has no trailing newline.

use bytes::Bytes;
use http::{HeaderMap, Response, header};
use http_body_util::BodyExt;

use crate::body::Body;

/// Whether a request asks for pretty-printed answers: its `pretty` parameter when it has a
/// value (`strconv.ParseBool`), else its User-Agent.
pub(crate) fn asked(query: Option<&str>, headers: &HeaderMap) -> bool {
    if let Some(q) = query.filter(|q| q.contains("pretty")) {
        let value = crate::body::parse_query(q).into_iter().find(|(k, _)| k == "pretty").map(|(_, v)| v);
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            return crate::go_strconv::parse_bool(&v) == Some(true);
        }
    }
    let agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    ["curl", "Wget", "Mozilla/5.0"].iter().any(|p| agent.starts_with(p))
}

/// The answer with its JSON body indented, when it is a complete JSON document.
pub(crate) async fn answer(r: Response<Body>) -> Response<Body> {
    let json = r
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json") && !t.contains("stream=watch"));
    if !json || matches!(r.body(), Body::Stream(_)) {
        return r;
    }
    let (mut parts, body) = r.into_parts();
    let Ok(collected) = body.collect().await else { return Response::from_parts(parts, Body::Full(None)) };
    let indented = indent(&collected.to_bytes());
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::Full(Some(Bytes::from(indented))))
}

/// `compact` (JSON without insignificant whitespace but, perhaps, around it) indented as Go's
/// `json.Indent` with two spaces.
pub(crate) fn indent(compact: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(compact.len() + compact.len() / 4);
    let mut depth = 0usize;
    let mut need_indent = false;
    let mut in_string = false;
    let mut escaped = false;
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', 2 * depth));
    };
    for &c in compact {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            continue;
        }
        if need_indent && c != b']' && c != b'}' {
            need_indent = false;
            depth += 1;
            newline(&mut out, depth);
        }
        match c {
            b'"' => {
                in_string = true;
                out.push(c);
            }
            b'{' | b'[' => {
                need_indent = true;
                out.push(c);
            }
            b',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            b'}' | b']' => {
                if need_indent {
                    need_indent = false;
                } else {
                    depth = depth.saturating_sub(1);
                    newline(&mut out, depth);
                }
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indents_as_go_s_marshal_indent() {
        let compact = br#"{"kind":"List","items":[],"metadata":{},"a":[1,{"b":"x,\"y\":{"}],"c":null}"#;
        let want = "{\n  \"kind\": \"List\",\n  \"items\": [],\n  \"metadata\": {},\n  \"a\": [\n    1,\n    {\n      \"b\": \"x,\\\"y\\\":{\"\n    }\n  ],\n  \"c\": null\n}";
        assert_eq!(String::from_utf8(indent(compact)).unwrap(), want);
        assert_eq!(indent(b"{\"a\":1}\n"), b"{\n  \"a\": 1\n}");
    }

    #[test]
    fn asked_by_parameter_or_user_agent() {
        let mut h = HeaderMap::new();
        assert!(asked(Some("pretty=true"), &h));
        assert!(!asked(Some("pretty=0"), &h));
        assert!(!asked(Some("limit=1"), &h));
        h.insert(header::USER_AGENT, "curl/8.5.0".parse().unwrap());
        assert!(asked(None, &h));
        assert!(!asked(Some("pretty=false"), &h));
        h.insert(header::USER_AGENT, "kubectl/v1.33.0 (linux/amd64)".parse().unwrap());
        assert!(!asked(None, &h));
    }
}
