//! Compressed answers, as kube-apiserver's `APIResponseCompression` compresses them: a client
//! whose `Accept-Encoding` names `gzip` (a comma-separated token equal to `gzip`; parameters
//! such as `;q=0` are not read, so `gzip;q=0` is no such token) gets an object, list, Table or
//! Status answer longer than 128 KiB gzipped at level 1, with `Content-Encoding: gzip` and
//! `Vary: Accept-Encoding`. Shorter answers, watch streams and the documents served as they are
//! (OpenAPI, the issuer's, metrics) are sent as they are.
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
