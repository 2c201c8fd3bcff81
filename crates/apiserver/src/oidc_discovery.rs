//! The service account issuer's OpenID Connect discovery documents, as kube-apiserver serves
//! them for workloads and cloud identity providers that check its tokens without calling it:
//! `/.well-known/openid-configuration` (the issuer, where its keys are, `id_token`, `public`
//! subjects, the key's algorithm) and `/openid/v1/jwks` (the public key that signs the tokens, as a JSON Web
//! Key Set).
//!
//! Invariants: the documents name the server's issuer and its one signing key, the same for
//! every replica sharing that key; `jwks_uri` is the key set's address at this server (its
//! scheme and advertised address, where kube-apiserver's is its external HTTPS address); both
//! answers may be cached for an hour (`Cache-Control: public, max-age=3600`), as kube says.

use bytes::Bytes;
use http::header;
use serde_json::{Value, json};

use crate::body::{self, Body};
use crate::service_account_token::{ISSUER, TokenSigner};

/// The key set's path.
pub(crate) const JWKS_PATH: &str = "/openid/v1/jwks";

/// The discovery document, for a server at `base` (`https://host:port`) signing with `alg`.
pub(crate) fn configuration(base: &str, alg: &str) -> Value {
    json!({
        "issuer": ISSUER,
        "jwks_uri": format!("{base}{JWKS_PATH}"),
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [alg],
    })
}

/// The key set.
pub(crate) fn key_set(signer: &TokenSigner) -> Value {
    json!({"keys": [signer.public_jwk()]})
}

/// An answer of `doc` as `content_type`, cacheable for an hour.
pub(crate) fn respond(doc: &Value, content_type: &'static str) -> http::Response<Body> {
    let bytes = serde_json::to_vec(doc).unwrap_or_default();
    let mut r = body::respond(200, content_type, Body::Full(Some(Bytes::from(bytes))));
    r.headers_mut().insert(header::CACHE_CONTROL, http::HeaderValue::from_static("public, max-age=3600"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    #[test]
    fn the_key_set_publishes_the_signing_key() {
        let signer = TokenSigner::generate();
        let set = key_set(&signer);
        let key = &set["keys"][0];
        assert_eq!(
            (key["kty"].as_str(), key["crv"].as_str(), key["alg"].as_str()),
            (Some("EC"), Some("P-256"), Some("ES256"))
        );
        assert_eq!(key["kid"], signer.key_id());
        let coord =
            |k: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(key[k].as_str().unwrap()).unwrap();
        assert_eq!((coord("x").len(), coord("y").len()), (32, 32));
        let doc = configuration("https://127.0.0.1:6443", signer.algorithm());
        assert_eq!(doc["id_token_signing_alg_values_supported"], serde_json::json!(["ES256"]));
        assert_eq!(doc["jwks_uri"], "https://127.0.0.1:6443/openid/v1/jwks");
        assert_eq!(doc["issuer"], ISSUER);
    }
}
