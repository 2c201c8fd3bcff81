//! A watch served over a WebSocket, as kube-apiserver serves one to a client that asks for the
//! upgrade (browsers' consoles do): the watch is started, authorized and negotiated as any
//! other, and a failure before it streams is answered over HTTP; once it streams, the handshake
//! is judged as Go's WebSocket handler judges it and every event becomes one message.
//!
//! Invariants:
//! - The handshake's checks come in Go's order: the method, key and version
//!   ([`crate::websocket::read_handshake`]), then an `Origin` that parses as a request URI (403
//!   with no text otherwise), then at most one subprotocol (400 with no text otherwise), which
//!   the 101 echoes.
//! - Each event is one final, unmasked message: a text message of the event's JSON line
//!   (newline included), or a binary message of its protobuf `WatchEvent` (no length prefix).
//! - What the client sends is read and dropped, but a ping is answered with a pong of its
//!   payload, an unmasked frame with a close (1002), and its close, the end of its stream or a
//!   frame past the size limit end the watch.
//! - The watch's end (its timeout, a dropped watch, the server's stop, the client's close) is a
//!   close frame (1000), after which the connection is read until the client closes it; the
//!   close and that reading take at most [`LINGER`], and the connection is then closed. The
//!   server's stop ends a write that a client not reading holds up.
//! - The request is counted (its metrics record) until the watch ends.

use bytes::{Buf, Bytes};
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::upgrade::OnUpgrade;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use crate::body::Body;
use crate::metrics::RequestRecord;
use crate::server::ServerStop;
use crate::websocket::{self, BINARY, CLOSE, ClientFrame, LINGER, PING, PONG, TEXT};

/// A watch request that asks for a WebSocket: what its handshake is judged by, and the
/// connection it hands over.
pub(crate) struct Handshake {
    method: Method,
    headers: HeaderMap,
    upgrade: OnUpgrade,
    stop: Option<ServerStop>,
}

impl Handshake {
    /// The handshake of `req` when it is a watch asking for a WebSocket over HTTP/1.1 (the
    /// only version that switches protocols).
    pub(crate) fn of(req: &mut http::Request<Incoming>, verb: &str) -> Option<Self> {
        if verb != "watch" || req.version() != http::Version::HTTP_11 || !websocket::is_websocket(req.headers()) {
            return None;
        }
        let upgrade = hyper::upgrade::on(&mut *req);
        let stop = req.extensions().get::<ServerStop>().cloned();
        Some(Handshake { method: req.method().clone(), headers: req.headers().clone(), upgrade, stop })
    }

    /// `answer` as the client gets it: a watch's stream as a WebSocket (or the handshake's
    /// refusal); anything else as it is. Once switched, the request's `record` goes with the
    /// stream.
    pub(crate) fn serve(self, answer: Response<Body>, record: &mut Option<RequestRecord>) -> Response<Body> {
        if answer.status() != StatusCode::OK || !matches!(answer.body(), Body::Stream(_)) {
            return answer;
        }
        let key = match websocket::read_handshake(&self.method, &self.headers) {
            Ok(key) => key,
            Err(refusal) => return *refusal,
        };
        let text = |name| self.headers.get(name).map(|v: &HeaderValue| String::from_utf8_lossy(v.as_bytes()));
        if !text(header::ORIGIN).is_some_and(|o| parses_as_request_uri(&o)) {
            return websocket::refused(StatusCode::FORBIDDEN, "", false);
        }
        // Go reads the first header's list.
        let listed = text(header::SEC_WEBSOCKET_PROTOCOL).unwrap_or_default();
        let protocols: Vec<&str> = match listed.trim() {
            "" => Vec::new(),
            list => list.split(',').map(str::trim).collect(),
        };
        if protocols.len() > 1 {
            return websocket::refused(StatusCode::BAD_REQUEST, "", false);
        }
        let protocol = protocols.first().and_then(|p| HeaderValue::from_bytes(p.as_bytes()).ok());
        let binary = answer
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(crate::protobuf::MEDIA_TYPE.as_bytes()));
        let switching = websocket::switching(key, protocol);
        let body = match record.take() {
            Some(mut record) => {
                record.answered(StatusCode::SWITCHING_PROTOCOLS.as_u16());
                Body::Tracked(Box::new((answer.into_body(), record)))
            }
            None => answer.into_body(),
        };
        tokio::spawn(stream(self.upgrade, body, binary, self.stop));
        switching
    }
}

/// Whether `origin` parses as Go's `url.ParseRequestURI` parses a request's URI.
fn parses_as_request_uri(origin: &str) -> bool {
    crate::cel_url::request_uri_error(origin).is_none()
}

/// What the client's side asks of the writer.
enum Control {
    Pong(Vec<u8>),
    Close(u16),
}

/// Carries the watch's body over the upgraded connection until either side ends it, or the
/// server stops.
async fn stream(upgrade: OnUpgrade, mut body: Body, binary: bool, stop: Option<ServerStop>) {
    let Ok(upgraded) = upgrade.await else { return };
    let (mut rd, mut wr) = tokio::io::split(hyper_util::rt::TokioIo::new(upgraded));
    let (control, mut controls) = mpsc::channel(4);
    let mut reader = tokio::spawn(async move {
        loop {
            let sent = match websocket::read_frame(&mut rd).await {
                Ok(ClientFrame::Unmasked) => {
                    let _ = control.send(Control::Close(1002)).await;
                    break;
                }
                Ok(ClientFrame::Masked { opcode: PING, payload }) => control.send(Control::Pong(payload)).await,
                Ok(ClientFrame::Masked { opcode: CLOSE, .. }) | Err(_) => break,
                Ok(ClientFrame::Masked { .. }) => Ok(()),
            };
            if sent.is_err() {
                break;
            }
        }
        drop(control);
        websocket::drain(&mut rd).await;
    });
    let mut stop = stop;
    let mut messages = Messages { binary, pending: Vec::new() };
    let mut writable = true;
    loop {
        let mut out = Vec::new();
        let mut closing = false;
        tokio::select! {
            biased;
            _ = ServerStop::stopped(&mut stop) => break,
            c = controls.recv() => match c {
                Some(Control::Pong(payload)) => websocket::frame(&mut out, PONG, &payload),
                Some(Control::Close(code)) => {
                    websocket::close(&mut out, code);
                    closing = true;
                }
                None => break,
            },
            frame = body.frame() => match frame {
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        messages.frames(data, &mut out);
                    }
                }
                _ => break,
            },
        }
        // A client that stops reading holds a write up, not the server's stop.
        if !out.is_empty() {
            writable = tokio::select! {
                biased;
                _ = ServerStop::stopped(&mut stop) => false,
                ok = write(&mut wr, &out) => ok,
            };
        }
        if !writable || closing {
            break;
        }
    }
    drop(body);
    drop(controls);
    let mut out = Vec::new();
    websocket::close(&mut out, 1000);
    let closed = async {
        if writable && write(&mut wr, &out).await {
            let _ = wr.shutdown().await;
            let _ = (&mut reader).await;
        }
    };
    let _ = tokio::time::timeout(LINGER, closed).await;
    reader.abort();
}

/// Writes and flushes `bytes` (a TLS stream may hold what it was given until flushed).
async fn write<W: AsyncWriteExt + Unpin>(w: &mut W, bytes: &[u8]) -> bool {
    w.write_all(bytes).await.is_ok() && w.flush().await.is_ok()
}

/// Splits the watch's body into its events: JSON lines, or length-prefixed protobuf frames.
struct Messages {
    binary: bool,
    /// An event not yet whole.
    pending: Vec<u8>,
}

impl Messages {
    /// Appends a message frame for every event that `data` completes; only an event that `data`
    /// leaves incomplete is copied, to wait for the rest.
    fn frames(&mut self, data: Bytes, out: &mut Vec<u8>) {
        let mut joined = std::mem::take(&mut self.pending);
        let input: &[u8] = if joined.is_empty() {
            data.chunk()
        } else {
            joined.extend_from_slice(data.chunk());
            &joined
        };
        let mut done = 0;
        loop {
            let rest = &input[done..];
            let (message, used) = if self.binary {
                let Some(len) = rest.get(..4).map(|p| u32::from_be_bytes([p[0], p[1], p[2], p[3]]) as usize) else {
                    break;
                };
                let Some(message) = rest[4..].get(..len) else { break };
                (message, 4 + len)
            } else {
                let Some(nl) = memchr::memchr(b'\n', rest) else { break };
                (&rest[..=nl], nl + 1)
            };
            websocket::frame(out, if self.binary { BINARY } else { TEXT }, message);
            done += used;
        }
        self.pending = input[done..].to_vec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse_as_go_parses_a_request_uri() {
        for ok in [
            "http://localhost:8080",
            "https://a.example",
            "/console",
            "foo:bar",
            "http://u:p@[::1]:80/x",
            "*",
            "http://%c3%a9",
        ] {
            assert!(parses_as_request_uri(ok), "{ok}");
        }
        for bad in [
            "",
            "null",
            "console",
            ":x",
            "http://[::1",
            "http://a:port",
            "http://a b",
            "/%zz",
            "http://a\t",
            "http://%41",
            "http://u%zz@a",
        ] {
            assert!(!parses_as_request_uri(bad), "{bad}");
        }
    }

    #[test]
    fn events_become_one_message_each() {
        let mut text = Messages { binary: false, pending: Vec::new() };
        let mut out = Vec::new();
        text.frames(Bytes::from_static(b"{\"a\":1}\n{\"b\""), &mut out);
        assert_eq!(out, b"\x81\x08{\"a\":1}\n");
        out.clear();
        text.frames(Bytes::from_static(b":2}\n"), &mut out);
        assert_eq!(out, b"\x81\x08{\"b\":2}\n");

        let mut binary = Messages { binary: true, pending: Vec::new() };
        out.clear();
        binary.frames(Bytes::from_static(b"\0\0\0\x02ab\0\0\0"), &mut out);
        assert_eq!(out, b"\x82\x02ab");
        out.clear();
        binary.frames(Bytes::from_static(b"\x01c"), &mut out);
        assert_eq!(out, b"\x82\x01c");
    }
}
