//! The WebSocket side of kube-apiserver's stream translator, as far as this server, which never
//! reaches a kubelet, plays it: an `exec` or `attach` opened as a WebSocket offering the
//! `v5.channel.k8s.io` protocol (kubectl's default, client-go's WebSocket executor) is accepted
//! (101) before the kubelet is dialled, as kube's translator accepts it; the connection then
//! carries kube's opening empty message on the lowest channel the client reads, the Status the
//! connection ended with on the error channel, and a close.
//!
//! Invariants: only an HTTP/1.1 GET with `Upgrade: websocket`, a `Connection` asking for an
//! upgrade, a `Sec-WebSocket-Key` and `v5.channel.k8s.io` among its protocols is translated
//! ([`wants_translation`]); the frames are the channel protocol's binary messages (the channel
//! number, then the data), unmasked as a server's are; nothing is read from the client but the
//! bytes the upgrade hands over, which are dropped.

use base64::Engine;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use hyper::upgrade::OnUpgrade;
use tokio::io::AsyncWriteExt;

use crate::body::Body;
use crate::status::ApiError;

/// The protocol with the stream-close signal, which kube's translator answers.
const V5: &str = "v5.channel.k8s.io";
/// RFC 6455's key suffix.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// The channels of the protocol.
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;

/// Whether kube would translate this request (`wsstream.IsWebSocketRequestWithStreamCloseProtocol`).
pub(crate) fn wants_translation(headers: &HeaderMap) -> bool {
    let has = |name: header::HeaderName, want: &str| {
        headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).any(|v| v.to_ascii_lowercase().contains(want))
    };
    let websocket = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"));
    websocket
        && has(header::CONNECTION, "upgrade")
        && headers.contains_key(header::SEC_WEBSOCKET_KEY)
        && protocols(headers).any(|p| p == V5)
}

/// The protocols the client offers, in its order.
fn protocols(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
}

/// What the translated connection carries: which output the client reads (for the opening
/// message) and the Status it ends with.
pub(crate) struct Ending {
    pub stdout: bool,
    pub stderr: bool,
    pub status: ApiError,
}

/// Accepts the WebSocket (101) and, once the connection is handed over, writes `ending` on it.
pub(crate) fn accept(headers: &HeaderMap, upgrade: OnUpgrade, ending: Ending) -> Response<Body> {
    let key = headers.get(header::SEC_WEBSOCKET_KEY).map(HeaderValue::as_bytes).unwrap_or_default();
    let mut answer = Response::new(Body::Full(None));
    *answer.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = answer.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept_key(key)) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    h.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(V5));
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let mut io = hyper_util::rt::TokioIo::new(upgraded);
        let _ = io.write_all(&messages(&ending)).await;
        let _ = io.shutdown().await;
    });
    answer
}

/// RFC 6455's `Sec-WebSocket-Accept` of `key`.
fn accept_key(key: &[u8]) -> String {
    let mut input = key.to_vec();
    input.extend_from_slice(ACCEPT_GUID.as_bytes());
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// The frames the connection carries: the empty opening message on the lowest channel the
/// client reads, the Status on the error channel, a normal close.
fn messages(ending: &Ending) -> Vec<u8> {
    let opening = if ending.stdout {
        STDOUT
    } else if ending.stderr {
        STDERR
    } else {
        ERROR
    };
    let mut out = Vec::new();
    frame(&mut out, 0x2, &[opening]);
    let mut status = vec![ERROR];
    status.extend_from_slice(&ending.status.to_untyped_bytes());
    frame(&mut out, 0x2, &status);
    frame(&mut out, 0x8, &1000u16.to_be_bytes());
    out
}

/// Appends one unmasked, final frame of `opcode` carrying `payload`.
fn frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
    out.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= usize::from(u16::MAX) => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_key_is_rfc_6455_s() {
        // RFC 6455, section 1.3.
        assert_eq!(accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn only_a_v5_websocket_is_translated() {
        let mut h = HeaderMap::new();
        h.insert(header::UPGRADE, "websocket".parse().unwrap());
        h.insert(header::CONNECTION, "Upgrade".parse().unwrap());
        h.insert(header::SEC_WEBSOCKET_KEY, "dGhlIHNhbXBsZSBub25jZQ==".parse().unwrap());
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, "v4.channel.k8s.io".parse().unwrap());
        assert!(!wants_translation(&h));
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, "v4.channel.k8s.io, v5.channel.k8s.io".parse().unwrap());
        assert!(wants_translation(&h));
        h.insert(header::UPGRADE, "SPDY/3.1".parse().unwrap());
        assert!(!wants_translation(&h));
    }

    #[test]
    fn frames_carry_the_channel_then_the_data() {
        let ending = Ending { stdout: false, stderr: true, status: ApiError::new(500, "", "x") };
        let out = messages(&ending);
        assert_eq!(out[..3], [0x82, 1, STDERR]);
        let status = ending.status.to_untyped_bytes();
        assert!(status.starts_with(b"{\"metadata\":{},\"status\":\"Failure\""), "{}", String::from_utf8_lossy(&status));
        assert_eq!(out[3..5], [0x82, (status.len() + 1) as u8]);
        assert_eq!(out[5], ERROR);
        assert_eq!(&out[6..6 + status.len()], &status[..]);
        assert_eq!(out[6 + status.len()..], [0x88, 2, 0x03, 0xE8]);
        let mut long = Vec::new();
        frame(&mut long, 0x2, &[0; 300]);
        assert_eq!(long[..4], [0x82, 126, 0x01, 0x2C]);
    }
}
