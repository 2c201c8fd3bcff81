//! The WebSocket side of kube-apiserver's stream translator, as far as this server, which never
//! reaches a kubelet, plays it: an `exec` or `attach` opened as a WebSocket offering the
//! `v5.channel.k8s.io` protocol (kubectl's default, client-go's WebSocket executor) is accepted
//! (101) before the kubelet is dialled, as kube's translator accepts it; the connection then
//! carries kube's opening empty message on the lowest channel the client reads, the Status the
//! connection ended with on the error channel, and a close.
//!
//! Invariants: a request is translated when kube's `IsWebSocketRequestWithStreamCloseProtocol`
//! says so ([`wants_translation`]); its handshake is then judged as Go's WebSocket server judges
//! it (a GET, a key, version 13; otherwise its raw refusal and a closed connection); the frames
//! are the channel protocol's binary messages (the channel number, then the data), unmasked as
//! a server's are; what the client sends is read and dropped until it closes (or for at most
//! [`LINGER`]), so that the server's close is not turned into a reset by unread bytes.

use std::future::Future;

use http::{HeaderMap, HeaderValue, Method, Response, header};
use hyper::upgrade::OnUpgrade;
use tokio::io::AsyncWriteExt;

use crate::body::Body;
use crate::status::ApiError;
use crate::websocket::{self, LINGER};

/// The protocol with the stream-close signal, which kube's translator answers.
const V5: &str = "v5.channel.k8s.io";
/// The channels of the protocol.
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;

/// Whether kube would translate this request (`wsstream.IsWebSocketRequestWithStreamCloseProtocol`:
/// a WebSocket as [`websocket::is_websocket`] tells one, `v5.channel.k8s.io` in the first
/// `Sec-WebSocket-Protocol` header).
pub(crate) fn wants_translation(headers: &HeaderMap) -> bool {
    let first = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
    websocket::is_websocket(headers) && first(header::SEC_WEBSOCKET_PROTOCOL).trim().split(',').any(|p| p.trim() == V5)
}

/// What the translated connection carries: which output the client reads (for the opening
/// message), and the Status it ends with once the kubelet has been tried.
pub(crate) struct Ending<F> {
    pub stdout: bool,
    pub stderr: bool,
    pub status: F,
}

/// Judges the handshake and, when it holds, accepts the WebSocket (101); once the connection is
/// handed over, writes the opening message, waits for `ending`'s Status, writes it and closes.
pub(crate) fn accept<F>(method: &Method, headers: &HeaderMap, upgrade: OnUpgrade, ending: Ending<F>) -> Response<Body>
where
    F: Future<Output = ApiError> + Send + 'static,
{
    let key = match websocket::read_handshake(method, headers) {
        Ok(key) => key,
        Err(refusal) => return *refusal,
    };
    let answer = websocket::switching(key, Some(HeaderValue::from_static(V5)));
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let mut io = hyper_util::rt::TokioIo::new(upgraded);
        let mut out = Vec::new();
        websocket::frame(&mut out, websocket::BINARY, &[opening(ending.stdout, ending.stderr)]);
        if io.write_all(&out).await.is_err() {
            return;
        }
        let status = ending.status.await;
        if io.write_all(&closing(&status)).await.is_err() {
            return;
        }
        let _ = io.shutdown().await;
        let _ = tokio::time::timeout(LINGER, websocket::drain(&mut io)).await;
    });
    answer
}

/// The channel of the opening empty message: the lowest the client reads (stdout, stderr), or
/// the error channel.
fn opening(stdout: bool, stderr: bool) -> u8 {
    if stdout {
        STDOUT
    } else if stderr {
        STDERR
    } else {
        ERROR
    }
}

/// The last frames: the Status on the error channel, a normal close.
fn closing(status: &ApiError) -> Vec<u8> {
    let mut out = Vec::new();
    let mut message = vec![ERROR];
    message.extend_from_slice(&status.to_untyped_bytes());
    websocket::frame(&mut out, websocket::BINARY, &message);
    websocket::close(&mut out, 1000);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_v5_websocket_is_translated() {
        let mut h = HeaderMap::new();
        h.insert(header::UPGRADE, "websocket".parse().unwrap());
        h.insert(header::CONNECTION, "Upgrade".parse().unwrap());
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, "v4.channel.k8s.io".parse().unwrap());
        assert!(!wants_translation(&h));
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, "v4.channel.k8s.io, v5.channel.k8s.io".parse().unwrap());
        assert!(wants_translation(&h));
        // Only the first protocol header counts, as Go's `Header.Get` reads it.
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, "v4.channel.k8s.io".parse().unwrap());
        h.append(header::SEC_WEBSOCKET_PROTOCOL, "v5.channel.k8s.io".parse().unwrap());
        assert!(!wants_translation(&h));
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, "v5.channel.k8s.io".parse().unwrap());
        h.insert(header::UPGRADE, "SPDY/3.1".parse().unwrap());
        assert!(!wants_translation(&h));
    }

    #[test]
    fn frames_carry_the_channel_then_the_data() {
        assert_eq!((opening(true, true), opening(false, true), opening(false, false)), (STDOUT, STDERR, ERROR));
        let status = ApiError::new(500, "", "x");
        let out = closing(&status);
        let bytes = status.to_untyped_bytes();
        assert_eq!(bytes, br#"{"metadata":{},"status":"Failure","message":"x","code":500}"#);
        assert_eq!(out[..3], [0x82, (bytes.len() + 1) as u8, ERROR]);
        assert_eq!(&out[3..3 + bytes.len()], &bytes[..]);
        assert_eq!(out[3 + bytes.len()..], [0x88, 2, 0x03, 0xE8]);
    }
}
