//! Go's handling of slash-separated paths that kube-apiserver's answers depend on: `path.Clean`
//! and `path.Join` (a proxy's backend path, a webhook's URL path) and the escaping of a decoded
//! URL path (`url.EscapedPath` of a path with no raw form).
//!
//! Invariants, as Go's: a cleaned path has no empty, `.` or resolvable `..` element, a rooted
//! one keeps its root and drops `..` above it, and the empty path cleans to `.`; a join of
//! empty elements is empty; escaping leaves letters, digits and `-_.~$&+,/:;=@` and
//! percent-encodes every other byte in upper-case hex.

/// Go's `path.Clean`.
pub(crate) fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    let body = out.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

/// Go's `path.Join` of two elements: the non-empty ones joined and cleaned ("" when both are
/// empty).
pub(crate) fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => String::new(),
        (true, false) => clean(b),
        (false, true) => clean(a),
        (false, false) => clean(&format!("{a}/{b}")),
    }
}

/// Whether Go escapes byte `b` in a URL path (`shouldEscape(b, encodePath)`).
pub(crate) fn escapes(b: u8) -> bool {
    !(b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b))
}

/// A decoded path escaped as Go's `url.EscapedPath` writes one that has no raw form.
pub(crate) fn escape(decoded: &str) -> String {
    let mut out = String::with_capacity(decoded.len());
    for b in decoded.bytes() {
        if escapes(b) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(char::from(b));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_cleaned_and_joined_as_go_does() {
        assert_eq!(clean(""), ".");
        assert_eq!(clean("/../a/./b/.."), "/a");
        assert_eq!(clean("a/../.."), "..");
        assert_eq!(clean("//x//y/"), "/x/y");
        assert_eq!(join("", ""), "");
        assert_eq!(join("", "/a//b/../c/"), "/a/c");
        assert_eq!(join("/api/v1/namespaces/n/pods/p/proxy", "/x"), "/api/v1/namespaces/n/pods/p/proxy/x");
    }

    #[test]
    fn decoded_paths_are_escaped_as_go_escapes_them() {
        assert_eq!(escape("/a b/c?d/100%/e:f@g+h"), "/a%20b/c%3Fd/100%25/e:f@g+h");
    }
}
