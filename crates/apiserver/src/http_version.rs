//! Which HTTP version a new connection speaks, told before any of its bytes are consumed: over
//! TLS by the protocol ALPN agreed on, over plain TCP by peeking at the client's first bytes for
//! HTTP/2's connection preface.
//!
//! Knowing the version up front lets an HTTP/1.1 connection be served without first reading its
//! opening bytes into a buffer of their own and handing them back to the parser: handed back on
//! their own, they leave the parser's first read short and its read buffer grows to twice its
//! initial size for the connection's whole life (16 KiB rather than 8 KiB for every watcher whose
//! request arrives in one read).
//!
//! Invariant: [`HttpVersion::Http1`] and [`HttpVersion::Http2`] are answered only when the bytes
//! (or ALPN) settle it; anything else is [`HttpVersion::Unknown`], for a server that reads the
//! preface itself.

use tokio::net::TcpStream;

/// The preface every HTTP/2 connection opens with (RFC 9113, section 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The HTTP version of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HttpVersion {
    /// HTTP/1.x.
    Http1,
    /// HTTP/2.
    Http2,
    /// Not known yet: the client sent part of the preface, nothing at all, or ALPN agreed on none.
    Unknown,
}

/// The version of a plain TCP connection, from its first bytes left unread; waits until the client
/// sends some (or closes).
pub(crate) async fn peek(stream: &TcpStream) -> std::io::Result<HttpVersion> {
    let mut first = [0u8; PREFACE.len()];
    let n = stream.peek(&mut first).await?;
    Ok(of_first_bytes(&first[..n]))
}

/// The version the client's first bytes show.
fn of_first_bytes(first: &[u8]) -> HttpVersion {
    if first.is_empty() {
        HttpVersion::Unknown
    } else if !PREFACE.starts_with(first) {
        HttpVersion::Http1
    } else if first.len() == PREFACE.len() {
        HttpVersion::Http2
    } else {
        HttpVersion::Unknown
    }
}

/// The version of a TLS connection, from the protocol ALPN agreed on.
pub(crate) fn negotiated(alpn: Option<&[u8]>) -> HttpVersion {
    match alpn {
        Some(b"h2") => HttpVersion::Http2,
        Some(b"http/1.1") => HttpVersion::Http1,
        _ => HttpVersion::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_bytes_settle_the_version_only_when_they_can() {
        assert_eq!(of_first_bytes(b"GET /api HTTP/1.1\r\n"), HttpVersion::Http1);
        assert_eq!(of_first_bytes(b"P"), HttpVersion::Unknown);
        assert_eq!(of_first_bytes(b"POST /api/v1/namespaces"), HttpVersion::Http1);
        assert_eq!(of_first_bytes(b"PRI * HTTP/2.0\r\n"), HttpVersion::Unknown);
        assert_eq!(of_first_bytes(PREFACE), HttpVersion::Http2);
        assert_eq!(of_first_bytes(b""), HttpVersion::Unknown);
    }

    #[test]
    fn alpn_settles_the_version_of_a_tls_connection() {
        assert_eq!(negotiated(Some(b"h2")), HttpVersion::Http2);
        assert_eq!(negotiated(Some(b"http/1.1")), HttpVersion::Http1);
        assert_eq!(negotiated(None), HttpVersion::Unknown);
    }
}
