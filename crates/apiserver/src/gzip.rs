//! Compressed answers, as kube-apiserver's `APIResponseCompression` compresses them: a client
//! whose `Accept-Encoding` names `gzip` (a comma-separated token equal to `gzip`; parameters
//! such as `;q=0` are not read, so `gzip;q=0` is no such token) gets an object, list, Table or
//! Status answer longer than 128 KiB gzipped at level 1, with `Content-Encoding: gzip` and
//! `Vary: Accept-Encoding`. Shorter answers, watch streams, the index, the issuer's documents
//! and OpenAPI v3 are sent as they are. Two documents follow their own handlers' rules, as in
//! kube-apiserver: `/metrics` (client_golang's promhttp) is gzipped whatever its length when
//! `gzip` is the encoding the client weighs highest against `identity` (the earlier, `identity`,
//! on a tie; `*` matches both), with `Content-Encoding` only; `/openapi/v2` (kube-openapi's
//! gziphandler) always carries `Vary: Accept-Encoding` and is gzipped from 1,400 bytes when
//! `gzip` has a weight above 0.
//!
//! Invariants: the decision is made before the first byte is sent, on the answer's length: a
//! list is encoded up to the threshold first (as kube's deferred writer buffers a streaming
//! encoder's first writes), and compressed chunk by chunk after that, so a large list is never
//! held whole in memory twice; the decompressed bytes are exactly those of the uncompressed
//! answer.

use std::collections::VecDeque;
use std::io::Write;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use http::{HeaderMap, HeaderValue, Response, header};

use crate::body::Body;
use crate::list::ListBody;

/// Answers longer than this are compressed (kube's `defaultGzipThresholdBytes`).
pub(crate) const THRESHOLD: usize = 128 * 1024;

/// The most bytes compressed in one go.
const SLICE: usize = 64 * 1024;

/// Whether the request's (first) `Accept-Encoding` names gzip, as kube reads it.
pub(crate) fn accepted(headers: &HeaderMap) -> bool {
    let first = headers.get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok());
    first.is_some_and(|v| v.split(',').any(|token| token.trim() == "gzip"))
}

/// The codings of an `Accept-Encoding` value with their weights (`None`: a weight that does not
/// read), as `coding;q=w` lists them.
fn codings(value: &str) -> impl Iterator<Item = (&str, Option<f64>)> {
    value.split(',').map(|spec| {
        let mut parts = spec.split(';').map(str::trim);
        let coding = parts.next().unwrap_or("");
        let q = parts.filter_map(|p| p.strip_prefix("q=")).next_back().map_or(Some(1.0), |w| w.parse::<f64>().ok());
        (coding, q)
    })
}

/// Whether the metrics handler gzips its answer (promhttp's negotiation of its offers
/// `identity` and `gzip`): the offer with the highest weight among the client's codings wins,
/// the earlier on a tie; a weight of 0 for the winner is no encoding at all.
pub(crate) fn metrics_accepted(headers: &HeaderMap) -> bool {
    let values = headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok());
    // A coding whose weight does not read is skipped.
    let weighed: Vec<(&str, f64)> = values
        .flat_map(codings)
        .filter_map(|(c, q)| q.filter(|q| (0.0..=1.0).contains(q)).filter(|_| !c.is_empty()).map(|q| (c, q)))
        .collect();
    let mut best = ("identity", -1.0);
    for offer in ["identity", "gzip"] {
        for &(coding, q) in &weighed {
            if q > best.1 && (coding == "*" || coding == offer) {
                best = (offer, q);
            }
        }
    }
    best.0 == "gzip" && best.1 > 0.0
}

/// The least length the OpenAPI v2 handler compresses (gziphandler's `DefaultMinSize`).
const DOCUMENT_MIN: usize = 1400;

/// The OpenAPI v2 document's answer as its gzip handler sends it: `Vary: Accept-Encoding`
/// always, the body gzipped when it is 1,400 bytes or longer and the request's first
/// `Accept-Encoding` weighs `gzip` (in any case) above 0.
pub(crate) fn document(headers: &HeaderMap, mut r: Response<Body>) -> Response<Body> {
    let first = headers.get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok()).unwrap_or("");
    let accepted = codings(first).any(|(c, q)| c.eq_ignore_ascii_case("gzip") && q.is_some_and(|q| q > 0.0));
    // Set before the handler writes its own.
    let h = r.headers_mut();
    let own: Vec<HeaderValue> = h.get_all(header::VARY).iter().cloned().collect();
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    own.into_iter().for_each(|v| {
        h.append(header::VARY, v);
    });
    let long = matches!(r.body(), Body::Full(Some(b)) if b.len() >= DOCUMENT_MIN);
    if accepted && long { whole(r) } else { r }
}

/// `r` with its whole body gzipped, `Content-Encoding: gzip`.
pub(crate) fn whole(r: Response<Body>) -> Response<Body> {
    let (mut parts, body) = r.into_parts();
    let Body::Full(Some(b)) = body else { return Response::from_parts(parts, body) };
    let mut encoder = GzEncoder::new(Vec::with_capacity(b.len() / 4), Compression::new(1));
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(&b);
    let Ok(out) = encoder.finish() else { return Response::from_parts(parts, Body::Full(Some(b))) };
    parts.headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::Full(Some(out.into())))
}

/// The answer `r`, compressed when its body is longer than [`THRESHOLD`].
pub(crate) fn compress(r: Response<Body>) -> Response<Body> {
    let (mut parts, body) = r.into_parts();
    let body = match body {
        // Compressed a slice at a time, so a large answer does not hold a worker for long.
        Body::Full(Some(b)) if b.len() > THRESHOLD => {
            let slices = (0..b.len()).step_by(SLICE).map(|i| b.slice(i..(i + SLICE).min(b.len()))).collect();
            Body::Gzip(Box::new(Gzip::new(slices, None)))
        }
        Body::List(mut list) => {
            let mut first = VecDeque::new();
            let mut len = 0;
            while len <= THRESHOLD {
                let Some(chunk) = list.next_chunk() else { break };
                len += chunk.len();
                first.push_back(chunk);
            }
            if len <= THRESHOLD {
                let mut whole = Vec::with_capacity(len);
                first.iter().for_each(|c| whole.extend_from_slice(c));
                return Response::from_parts(parts, Body::Full(Some(whole.into())));
            }
            Body::Gzip(Box::new(Gzip::new(first, Some(list))))
        }
        other => return Response::from_parts(parts, other),
    };
    parts.headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    parts.headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, body)
}

/// A body compressed as it is sent.
pub struct Gzip {
    encoder: Option<GzEncoder<Vec<u8>>>,
    /// Chunks read ahead (to tell the length), then the rest of the list, if any.
    ahead: VecDeque<Bytes>,
    rest: Option<Box<ListBody>>,
}

impl Gzip {
    fn new(ahead: VecDeque<Bytes>, rest: Option<Box<ListBody>>) -> Self {
        Gzip { encoder: Some(GzEncoder::new(Vec::new(), Compression::new(1))), ahead, rest }
    }

    /// The next compressed chunk, `None` after the last.
    pub(crate) fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            let encoder = self.encoder.as_mut()?;
            let next = self.ahead.pop_front().or_else(|| self.rest.as_mut().and_then(|l| l.next_chunk()));
            match next {
                Some(chunk) => {
                    // Writing to a Vec cannot fail.
                    let _ = encoder.write_all(&chunk);
                    let out = std::mem::take(encoder.get_mut());
                    if !out.is_empty() {
                        return Some(out.into());
                    }
                }
                None => {
                    let encoder = self.encoder.take()?;
                    return encoder.finish().ok().map(Bytes::from);
                }
            }
        }
    }

    /// Whether every chunk was sent.
    pub(crate) fn is_done(&self) -> bool {
        self.encoder.is_none()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn headers(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn gzip_is_accepted_as_kube_reads_the_header() {
        assert!(accepted(&headers("gzip")));
        assert!(accepted(&headers("deflate, gzip")));
        let mut two = headers("br");
        two.append(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        assert!(!accepted(&two), "only the first header is read");
        assert!(!accepted(&headers("gzip;q=1.0")));
        assert!(!accepted(&headers("br")));
        assert!(!accepted(&HeaderMap::new()));
    }

    #[test]
    fn metrics_are_gzipped_when_gzip_wins_promhttps_negotiation() {
        assert!(metrics_accepted(&headers("gzip")));
        assert!(metrics_accepted(&headers("deflate, gzip, br")));
        assert!(metrics_accepted(&headers("identity;q=0.5, gzip")));
        assert!(!metrics_accepted(&headers("gzip, identity")), "a tie goes to identity");
        assert!(!metrics_accepted(&headers("*")));
        assert!(!metrics_accepted(&headers("gzip;q=0")));
        assert!(!metrics_accepted(&headers("GZIP")));
        assert!(!metrics_accepted(&HeaderMap::new()));
    }

    #[test]
    fn the_openapi_document_is_gzipped_from_1400_bytes() {
        let doc = |n: usize| crate::body::respond(200, "application/json", Body::Full(Some(vec![b'a'; n].into())));
        let r = document(&headers("GZIP;q=0.5"), doc(DOCUMENT_MIN));
        assert_eq!(r.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(r.headers()[header::VARY], "Accept-Encoding");
        let Body::Full(Some(b)) = r.into_body() else { panic!("no body") };
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&b[..]).read_to_end(&mut back).unwrap();
        assert_eq!(back, vec![b'a'; DOCUMENT_MIN]);
        let short = document(&headers("gzip"), doc(DOCUMENT_MIN - 1));
        assert!(short.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(short.headers()[header::VARY], "Accept-Encoding");
        assert!(document(&headers("gzip;q=0"), doc(5000)).headers().get(header::CONTENT_ENCODING).is_none());
    }

    #[test]
    fn long_answers_are_compressed_and_short_ones_are_not() {
        let long: Bytes = (0..THRESHOLD + 1).map(|i| b"abcdefgh"[i % 8]).collect::<Vec<u8>>().into();
        let r = compress(crate::body::respond(200, "application/json", Body::Full(Some(long.clone()))));
        assert_eq!(r.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(r.headers()[header::VARY], "Accept-Encoding");
        let Body::Gzip(mut g) = r.into_body() else { panic!("not compressed") };
        let mut sent = Vec::new();
        while let Some(c) = g.next_chunk() {
            sent.extend_from_slice(&c);
        }
        assert!(g.is_done() && sent.len() < long.len() / 10);
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(sent.as_slice()).read_to_end(&mut back).unwrap();
        assert_eq!(back, long);

        let short = Bytes::from_static(b"{}");
        let r = compress(crate::body::respond(200, "application/json", Body::Full(Some(short))));
        assert!(r.headers().get(header::CONTENT_ENCODING).is_none());
    }
}
