//! The server side of RFC 6455 as kube-apiserver's WebSocket server (Go's `x/net/websocket`)
//! plays it: the handshake's first checks and their raw refusals, the accept key, unmasked
//! frames, the client's frames read back, and the bearer token a browser passes as a
//! subprotocol (kube's WebSocket protocol authenticator).
//!
//! Invariants: a handshake is refused as Go refuses it (405 for a method other than GET, 400
//! without a key or without version 13), on a connection then closed, its answer marked
//! [`Refusal`] so that nothing is added to it; the server's frames are final and unmasked; of a
//! client's frame only a control frame's first 125 bytes are kept, a data frame's payload is
//! read and dropped as it comes (one past [`MAX_PAYLOAD`] is refused), and an unmasked frame
//! is reported before its payload is read.

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::body::Body;

/// RFC 6455's key suffix.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// The largest client data frame read (Go's `DefaultMaxPayloadBytes`).
const MAX_PAYLOAD: u64 = 32 << 20;
/// The most a control frame carries (RFC 6455, section 5.5).
const MAX_CONTROL_PAYLOAD: u64 = 125;
/// Go's `base64.RawURLEncoding`, which takes unpadded text and ignores trailing bits.
const RAW_URL: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);
/// The subprotocol prefix that carries a bearer token (base64url, unpadded).
const BEARER_PROTOCOL: &str = "base64url.bearer.authorization.k8s.io.";

/// How long the server reads what a client sends after the server's close.
pub(crate) const LINGER: std::time::Duration = std::time::Duration::from_secs(5);

/// Frame opcodes.
pub(crate) const TEXT: u8 = 0x1;
pub(crate) const BINARY: u8 = 0x2;
pub(crate) const CLOSE: u8 = 0x8;
pub(crate) const PING: u8 = 0x9;
pub(crate) const PONG: u8 = 0xA;

/// Whether the request asks for a WebSocket (kube's `wsstream.IsWebSocketRequest`: `Upgrade:
/// websocket`, and `upgrade` among the first `Connection` header's tokens, as its expression
/// `(^|.*,\s*)upgrade($|\s*,)` finds it).
pub(crate) fn is_websocket(headers: &HeaderMap) -> bool {
    let upgrade_token = |connection: String| {
        connection.match_indices("upgrade").any(|(i, w)| {
            let (before, after) = (&connection[..i], &connection[i + w.len()..]);
            (before.is_empty() || before.trim_end().ends_with(','))
                && (after.is_empty() || after.trim_start().starts_with(','))
        })
    };
    headers.get(header::UPGRADE).is_some_and(|u| u.as_bytes().eq_ignore_ascii_case(b"websocket"))
        && headers
            .get(header::CONNECTION)
            .map(|c| String::from_utf8_lossy(c.as_bytes()).to_lowercase())
            .is_some_and(upgrade_token)
}

/// Marks a handshake's refusal: written as Go's WebSocket server writes it, without the headers
/// other answers get.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Refusal;

/// Go's WebSocket server's refusal of a handshake: its status and text, on a connection then
/// closed (with the supported version when that was what failed).
pub(crate) fn refused(code: StatusCode, text: &'static str, version: bool) -> Response<Body> {
    let mut answer = Response::new(Body::Full(Some(bytes::Bytes::from_static(text.as_bytes()))));
    *answer.status_mut() = code;
    answer.extensions_mut().insert(Refusal);
    if version {
        answer.headers_mut().insert(header::SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
    }
    answer.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    answer
}

/// The handshake's first checks, in Go's order (`hybiServerHandshaker.ReadHandshake`): the
/// client's key, or the refusal.
pub(crate) fn read_handshake<'h>(method: &Method, headers: &'h HeaderMap) -> Result<&'h [u8], Box<Response<Body>>> {
    if *method != Method::GET {
        return Err(Box::new(refused(StatusCode::METHOD_NOT_ALLOWED, "bad method", false)));
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY).map(HeaderValue::as_bytes).filter(|k| !k.is_empty()) else {
        return Err(Box::new(refused(StatusCode::BAD_REQUEST, "mismatch challenge/response", false)));
    };
    if headers.get(header::SEC_WEBSOCKET_VERSION).map(HeaderValue::as_bytes) != Some(b"13") {
        return Err(Box::new(refused(StatusCode::BAD_REQUEST, "missing or bad WebSocket Version", true)));
    }
    Ok(key)
}

/// A 101 accepting the WebSocket of `key`, echoing `protocol` when there is one.
pub(crate) fn switching(key: &[u8], protocol: Option<HeaderValue>) -> Response<Body> {
    let mut answer = Response::new(Body::Full(None));
    *answer.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = answer.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept_key(key)) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if let Some(p) = protocol {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, p);
    }
    answer
}

/// RFC 6455's `Sec-WebSocket-Accept` of `key`.
fn accept_key(key: &[u8]) -> String {
    let mut input = key.to_vec();
    input.extend_from_slice(ACCEPT_GUID.as_bytes());
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// Appends one unmasked, final frame of `opcode` carrying `payload`.
pub(crate) fn frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
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

/// Appends a close frame with `code` and no reason.
pub(crate) fn close(out: &mut Vec<u8>, code: u16) {
    frame(out, CLOSE, &code.to_be_bytes());
}

/// Reads and drops what the client sends until it closes the connection, so that the server's
/// close is not turned into a reset by unread bytes.
pub(crate) async fn drain<R: AsyncRead + Unpin>(r: &mut R) {
    let mut sink = [0u8; 1024];
    while matches!(r.read(&mut sink).await, Ok(n) if n > 0) {}
}

/// A frame a client sent.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ClientFrame {
    /// A frame the client did not mask, as RFC 6455 requires of every client frame: its payload
    /// is not read.
    Unmasked,
    /// A masked frame: its opcode, and a control frame's payload (unmasked, its first 125
    /// bytes); a data frame's payload is dropped.
    Masked { opcode: u8, payload: Vec<u8> },
}

/// Reads one frame; an error at the end of the stream, on a read failure, or for a data frame
/// past [`MAX_PAYLOAD`].
pub(crate) async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<ClientFrame> {
    let mut head = [0u8; 2];
    r.read_exact(&mut head).await?;
    let opcode = head[0] & 0x0F;
    if head[1] & 0x80 == 0 {
        return Ok(ClientFrame::Unmasked);
    }
    let len = match head[1] & 0x7F {
        126 => u64::from(r.read_u16().await?),
        127 => r.read_u64().await?,
        n => u64::from(n),
    };
    let control = opcode & 0x8 != 0;
    if !control && len > MAX_PAYLOAD {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "websocket: frame payload size exceeds limit",
        ));
    }
    let mut mask = [0u8; 4];
    r.read_exact(&mut mask).await?;
    let kept = if control { len.min(MAX_CONTROL_PAYLOAD) } else { 0 };
    let mut payload = vec![0u8; kept as usize];
    r.read_exact(&mut payload).await?;
    for (i, b) in payload.iter_mut().enumerate() {
        *b ^= mask[i % 4];
    }
    let rest = len - kept;
    if tokio::io::copy(&mut r.take(rest), &mut tokio::io::sink()).await? != rest {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(ClientFrame::Masked { opcode, payload })
}

/// The bearer token a WebSocket request carries as a subprotocol, and the subprotocols without
/// it (which the request's header is rewritten to once the token authenticates), as kube's
/// WebSocket protocol authenticator reads them from every `Sec-WebSocket-Protocol` header.
/// `Ok(None)` when the request is no WebSocket or carries no token.
pub(crate) fn protocol_bearer(headers: &HeaderMap) -> Result<Option<(String, String)>, &'static str> {
    if !is_websocket(headers) {
        return Ok(None);
    }
    let mut token = None;
    let mut others = Vec::new();
    for value in headers.get_all(header::SEC_WEBSOCKET_PROTOCOL) {
        for p in String::from_utf8_lossy(value.as_bytes()).split(',').map(str::trim) {
            let Some(encoded) = p.strip_prefix(BEARER_PROTOCOL) else {
                others.push(p.to_string());
                continue;
            };
            if token.is_some() {
                return Err("multiple base64.bearer.authorization tokens specified");
            }
            let decoded = RAW_URL.decode(encoded).map_err(|_| "invalid base64.bearer.authorization token encoding")?;
            token = Some(String::from_utf8(decoded).map_err(|_| "invalid base64.bearer.authorization token")?);
        }
    }
    match token.filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(_) if others.is_empty() => Err("missing additional subprotocol"),
        Some(t) => Ok(Some((t, others.join(",")))),
    }
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
    fn frame_lengths_take_one_two_or_eight_bytes() {
        let mut short = Vec::new();
        frame(&mut short, TEXT, b"hi");
        assert_eq!(short, [0x81, 2, b'h', b'i']);
        let mut long = Vec::new();
        frame(&mut long, BINARY, &[0; 300]);
        assert_eq!(long[..4], [0x82, 126, 0x01, 0x2C]);
        let mut huge = Vec::new();
        frame(&mut huge, BINARY, &vec![0; 70_000]);
        assert_eq!(huge[..10], [0x82, 127, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70]);
    }

    #[tokio::test]
    async fn client_frames_are_unmasked_and_bounded() {
        let mask = [1u8, 2, 3, 4];
        let mut bytes = vec![0x89, 0x80 | 3];
        bytes.extend_from_slice(&mask);
        bytes.extend(b"abc".iter().zip(mask.iter().cycle()).map(|(b, m)| b ^ m));
        let f = read_frame(&mut &bytes[..]).await.unwrap();
        assert_eq!(f, ClientFrame::Masked { opcode: PING, payload: b"abc".to_vec() });

        // A long ping keeps its first 125 bytes; the next frame is read after all of it.
        let mut long_ping = vec![0x89, 0x80 | 126, 0, 200, 0, 0, 0, 0];
        long_ping.extend_from_slice(&[7; 200]);
        long_ping.extend_from_slice(&[0x81, 0x81, 0, 0, 0, 0, b'x']);
        let mut r = &long_ping[..];
        assert_eq!(read_frame(&mut r).await.unwrap(), ClientFrame::Masked { opcode: PING, payload: vec![7; 125] });
        assert_eq!(read_frame(&mut r).await.unwrap(), ClientFrame::Masked { opcode: TEXT, payload: Vec::new() });

        let mut too_long = vec![0x82, 0x80 | 127];
        too_long.extend_from_slice(&(MAX_PAYLOAD + 1).to_be_bytes());
        assert!(read_frame(&mut &too_long[..]).await.is_err());
        // An unmasked frame is told before its length, however long.
        assert_eq!(read_frame(&mut &[0x82, 127][..]).await.unwrap(), ClientFrame::Unmasked);
        assert!(read_frame(&mut &[0x88][..]).await.is_err(), "a cut frame");
        assert!(read_frame(&mut &[0x82, 0x85, 0, 0, 0, 0, 1][..]).await.is_err(), "a cut payload");
    }

    #[test]
    fn a_websocket_is_asked_for_as_kube_reads_the_headers() {
        let asks = |connection: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::UPGRADE, "WebSocket".parse().unwrap());
            h.insert(header::CONNECTION, connection.parse().unwrap());
            is_websocket(&h)
        };
        for yes in ["Upgrade", "keep-alive, Upgrade", "upgrade ,keep-alive", "a,upgrade"] {
            assert!(asks(yes), "{yes}");
        }
        for no in ["upgrades", "keep-alive", " upgrade", "upgrade x", "x-upgrade"] {
            assert!(!asks(no), "{no}");
        }
    }

    #[test]
    fn a_bearer_subprotocol_needs_another_and_is_taken_out() {
        let mut h = HeaderMap::new();
        h.insert(header::UPGRADE, "websocket".parse().unwrap());
        h.insert(header::CONNECTION, "Upgrade".parse().unwrap());
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("secret-token");
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, format!("{BEARER_PROTOCOL}{token}").parse().unwrap());
        assert_eq!(protocol_bearer(&h), Err("missing additional subprotocol"));
        h.append(header::SEC_WEBSOCKET_PROTOCOL, "base64.binary.k8s.io".parse().unwrap());
        assert_eq!(protocol_bearer(&h), Ok(Some(("secret-token".into(), "base64.binary.k8s.io".into()))));
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, format!("a, {BEARER_PROTOCOL}{token}, b").parse().unwrap());
        assert_eq!(protocol_bearer(&h), Ok(Some(("secret-token".into(), "a,b".into()))));
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, format!("a, {BEARER_PROTOCOL}{token}=").parse().unwrap());
        assert_eq!(protocol_bearer(&h), Err("invalid base64.bearer.authorization token encoding"));
        // Trailing bits are ignored, as Go's decoder ignores them ("YQ" and "YR" are both "a").
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, format!("x, {BEARER_PROTOCOL}YR").parse().unwrap());
        assert_eq!(protocol_bearer(&h), Ok(Some(("a".into(), "x".into()))));
        h.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            format!("a, {BEARER_PROTOCOL}{token}, {BEARER_PROTOCOL}{token}").parse().unwrap(),
        );
        assert_eq!(protocol_bearer(&h), Err("multiple base64.bearer.authorization tokens specified"));
        h.remove(header::UPGRADE);
        assert_eq!(protocol_bearer(&h), Ok(None), "only a WebSocket's protocols are read");
    }
}
