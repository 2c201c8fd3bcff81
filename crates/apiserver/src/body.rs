//! HTTP response bodies and small request/response helpers.
//!
//! [`Body`] is a complete buffer, a list encoded chunk by chunk as the client
//! reads it, a stream of ready chunks fed by a watch task through a bounded
//! channel (back-pressure: a slow client slows only its own watch task), or a
//! proxied backend's body passed on as it arrives (a backend failure cuts the
//! client's connection).
//! Helpers build JSON / `Status` responses with the headers kube-apiserver
//! sends.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use hyper::body::{Frame, SizeHint};
use tokio::sync::mpsc;

use crate::list::ListBody;
use crate::status::ApiError;

/// A response body.
pub enum Body {
    /// A complete body (taken on first poll).
    Full(Option<Bytes>),
    /// A list, encoded as it is sent.
    List(Box<ListBody>),
    /// A streamed body; ends when the sender is dropped.
    Stream(mpsc::Receiver<Bytes>),
    /// A body compressed as it is sent.
    Gzip(Box<crate::gzip::Gzip>),
    /// A body whose request is counted when it is over (a watch's stream).
    Tracked(Box<(Body, crate::metrics::RequestRecord)>),
    /// A proxied backend's body, frames (and trailers) as they arrive.
    Proxied(Box<hyper::body::Incoming>),
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    /// Only a proxied backend's body fails (the backend failing mid-body): the client's
    /// connection is then cut, as Go's reverse proxy cuts it, rather than the body ended as if
    /// whole.
    type Error = hyper::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::List(l) => Poll::Ready(l.next_chunk().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx) => rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
            Body::Gzip(g) => Poll::Ready(g.next_chunk().map(|b| Ok(Frame::data(b)))),
            Body::Tracked(t) => Pin::new(&mut t.0).poll_frame(cx),
            Body::Proxied(b) => Pin::new(b.as_mut()).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Full(b) => b.is_none(),
            Body::List(l) => l.is_done(),
            Body::Stream(_) => false,
            Body::Gzip(g) => g.is_done(),
            Body::Tracked(t) => t.0.is_end_stream(),
            Body::Proxied(b) => hyper::body::Body::is_end_stream(b.as_ref()),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::List(_) | Body::Stream(_) | Body::Gzip(_) => SizeHint::default(),
            Body::Tracked(t) => t.0.size_hint(),
            Body::Proxied(b) => hyper::body::Body::size_hint(b.as_ref()),
        }
    }
}

impl From<hyper::body::Incoming> for Body {
    fn from(b: hyper::body::Incoming) -> Self {
        Body::Proxied(Box::new(b))
    }
}

/// A response with kube's standard headers.
pub fn respond(code: u16, content_type: &str, body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(content_type) {
        h.insert(header::CONTENT_TYPE, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    r
}

/// A JSON response from ready bytes.
pub fn json_bytes(code: u16, bytes: impl Into<Bytes>) -> Response<Body> {
    respond(code, "application/json", Body::Full(Some(bytes.into())))
}

/// A JSON response from a value.
pub fn json_value(code: u16, v: &serde_json::Value) -> Response<Body> {
    json_bytes(code, serde_json::to_vec(v).unwrap_or_default())
}

/// A `Status` error response (with Retry-After when set).
pub fn error(e: &ApiError) -> Response<Body> {
    let mut r = json_bytes(e.code, e.to_bytes());
    if let Some(s) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// A boolean query parameter as kube's parameter codec reads it (`Convert_Slice_string_To_bool`):
/// anything but `0` and `false` (any case) is true, an empty value too.
pub(crate) fn query_bool(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

/// Decodes a URL query string into (key, value) pairs.
pub fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

/// Percent-decodes (and maps `+` to space) a query's component.
pub fn percent_decode(s: &str) -> String {
    decode(s, true)
}

/// Percent-decodes a URL's path (`+` is itself there, as Go's `url.PathUnescape` keeps it).
pub fn percent_decode_path(s: &str) -> String {
    decode(s, false)
}

fn decode(s: &str, plus_is_space: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(x) => {
                        out.push(x);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode() {
        assert_eq!(percent_decode("a%3Db+c%2"), "a=b c%2");
        assert_eq!(percent_decode("%41"), "A");
        assert_eq!(percent_decode("%"), "%");
        assert_eq!(percent_decode_path("/a+b%20c"), "/a+b c");
        let q = parse_query("labelSelector=a%20in%20(x%2Cy)&watch=1&x");
        assert_eq!(q[0], ("labelSelector".into(), "a in (x,y)".into()));
        assert_eq!(q[2], ("x".into(), "".into()));
    }
}
