//! Service account tokens as kube-apiserver issues them: JSON Web Tokens signed by the server's
//! key (ECDSA P-256, `ES256`; kube-apiserver takes RSA or ECDSA keys), with kube's claims —
//! `iss`, `sub` (`system:serviceaccount:<namespace>:<name>`), `aud`, `exp`, `iat`, `nbf`,
//! `jti` and the private `kubernetes.io` claim naming the namespace, the service account and
//! the object the token is bound to.
//!
//! Invariants: a token verifies only if it was signed by this key (`kid` names the key, as
//! kube's key id: the base64url SHA-256 of the public key), and only between `nbf` and `exp`;
//! what it names (service account, bound object) is checked against the objects by the caller
//! (`token_request`), as kube's validator checks it; the key never leaves the process except
//! where the user asks for it to be kept (a data directory).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use sha2::Digest;

/// The issuer (`iss`) of the server's tokens, kube-apiserver's usual
/// `--service-account-issuer`.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The audiences the API server itself accepts (kube's `--api-audiences`, by default the
/// issuer).
pub const API_AUDIENCES: [&str; 1] = [ISSUER];

/// The key that signs and checks service account tokens.
pub struct TokenSigner {
    key: EcdsaKeyPair,
    kid: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key itself is never printed.
        f.debug_struct("TokenSigner").field("kid", &self.kid).finish_non_exhaustive()
    }
}

impl TokenSigner {
    /// A new key, in PKCS#8 DER form (to keep, or to pass to [`TokenSigner::from_pkcs8`]).
    pub fn generate_pkcs8() -> Vec<u8> {
        let rng = SystemRandom::new();
        EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map(|d| d.as_ref().to_vec())
            .unwrap_or_default()
    }

    /// A signer with a new key.
    pub fn generate() -> TokenSigner {
        Self::from_pkcs8(&Self::generate_pkcs8()).expect("a freshly generated key is valid")
    }

    /// A signer with this ECDSA P-256 key (PKCS#8 DER).
    pub fn from_pkcs8(der: &[u8]) -> Result<TokenSigner, String> {
        let rng = SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
            .map_err(|e| format!("not an ECDSA P-256 PKCS#8 key: {e}"))?;
        let kid = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(key.public_key().as_ref()));
        Ok(TokenSigner { key, kid, rng })
    }

    /// A signer with this key in PEM (`-----BEGIN PRIVATE KEY-----`, PKCS#8).
    pub fn from_pem(pem: &str) -> Result<TokenSigner, String> {
        Self::from_pkcs8(&pkcs8_from_pem(pem)?)
    }

    /// The key's id (`kid` of the tokens it signs).
    pub fn key_id(&self) -> &str {
        &self.kid
    }

    /// A token carrying `claims`.
    pub(crate) fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "ES256", "kid": self.kid});
        let signing_input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let sig = self.key.sign(&self.rng, signing_input.as_bytes()).map(|s| s.as_ref().to_vec()).unwrap_or_default();
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig))
    }

    /// The claims of a token this key signed, still valid at `now` (seconds since the epoch);
    /// why not otherwise. `Ok(None)`: not a token of this form at all.
    pub(crate) fn verify(&self, token: &str, now: i64) -> Result<Option<Value>, String> {
        let parts: Vec<&str> = token.split('.').collect();
        let [header, claims, sig] = parts[..] else { return Ok(None) };
        let decode = |s: &str| URL_SAFE_NO_PAD.decode(s).ok();
        let (Some(h), Some(c), Some(sig)) = (decode(header), decode(claims), decode(sig)) else { return Ok(None) };
        let (Ok(h), Ok(c)) = (serde_json::from_slice::<Value>(&h), serde_json::from_slice::<Value>(&c)) else {
            return Ok(None);
        };
        if h.get("alg").and_then(Value::as_str) != Some("ES256")
            || h.get("kid").and_then(Value::as_str) != Some(self.kid.as_str())
        {
            return Err("square/go-jose: error in cryptographic primitive".into());
        }
        let public = signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, self.key.public_key());
        if public.verify(format!("{header}.{claims}").as_bytes(), &sig).is_err() {
            return Err("square/go-jose: error in cryptographic primitive".into());
        }
        if c.get("iss").and_then(Value::as_str) != Some(ISSUER) {
            return Ok(None);
        }
        let at = |k: &str| c.get(k).and_then(Value::as_i64);
        if at("exp").is_some_and(|exp| now > exp) {
            return Err("service account token has expired".into());
        }
        if at("nbf").is_some_and(|nbf| now < nbf) {
            return Err("service account token is not valid yet".into());
        }
        Ok(Some(c))
    }
}

/// The PKCS#8 DER of a PEM private key (`-----BEGIN PRIVATE KEY-----`).
pub fn pkcs8_from_pem(pem: &str) -> Result<Vec<u8>, String> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "-----BEGIN PRIVATE KEY-----")
        .skip(1)
        .take_while(|l| *l != "-----END PRIVATE KEY-----")
        .collect();
    if body.is_empty() {
        return Err("no PKCS#8 private key (-----BEGIN PRIVATE KEY-----) found".into());
    }
    base64::engine::general_purpose::STANDARD.decode(body).map_err(|e| format!("bad PEM: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_with_their_key_and_in_their_time() {
        let signer = TokenSigner::generate();
        let claims = json!({"iss": ISSUER, "sub": "system:serviceaccount:ns:sa", "nbf": 100, "exp": 200});
        let token = signer.sign(&claims);
        assert_eq!(token.split('.').count(), 3);
        assert_eq!(signer.verify(&token, 150).unwrap(), Some(claims.clone()));
        assert_eq!(signer.verify(&token, 201).unwrap_err(), "service account token has expired");
        assert!(signer.verify(&token, 50).is_err());
        assert!(TokenSigner::generate().verify(&token, 150).is_err(), "another key");
        let mut forged: Vec<&str> = token.split('.').collect();
        let other = URL_SAFE_NO_PAD.encode(json!({"iss": ISSUER, "sub": "system:admin"}).to_string());
        forged[1] = &other;
        assert!(signer.verify(&forged.join("."), 150).is_err(), "changed claims");
        assert_eq!(signer.verify("not-a-token", 150).unwrap(), None);
    }

    #[test]
    fn keys_load_from_pkcs8_and_pem() {
        let der = TokenSigner::generate_pkcs8();
        let a = TokenSigner::from_pkcs8(&der).unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(&der)
        );
        let b = TokenSigner::from_pem(&pem).unwrap();
        assert_eq!(a.key_id(), b.key_id());
        assert!(format!("{a:?}").contains(a.key_id()));
        assert!(TokenSigner::from_pem("nothing").is_err());
    }
}
