//! Service account tokens as kube-apiserver issues them: JSON Web Tokens signed by the server's
//! key (ECDSA P-256, `ES256`, or RSA, `RS256`, as kube-apiserver takes), with kube's claims —
//! `iss`, `sub` (`system:serviceaccount:<namespace>:<name>`), `aud`, `exp`, `iat`, `nbf`,
//! `jti` and the private `kubernetes.io` claim naming the namespace, the service account and
//! the object the token is bound to.
//!
//! Invariants: a token of another issuer is not this server's to judge (as kube's
//! authenticator passes it on); one of this issuer verifies only if this key signed it (`kid`
//! names the key as kube's key id does: the base64url SHA-256 of its SubjectPublicKeyInfo), and
//! only between `nbf` and `exp` (a minute's leeway for clocks, as kube allows);
//! what it names (service account, bound object) is checked against the objects by the caller
//! (`token_request`), as kube's validator checks it; the key never leaves the process except
//! where the user asks for it to be kept (a data directory).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use serde_json::{Value, json};
use sha2::Digest;

/// The issuer (`iss`) of the server's tokens, kube-apiserver's usual
/// `--service-account-issuer`.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The audiences the API server itself accepts (kube's `--api-audiences`, by default the
/// issuer).
pub const API_AUDIENCES: [&str; 1] = [ISSUER];

/// The leeway, in seconds, for clocks that disagree (kube's JWT validation leeway).
const LEEWAY: i64 = 60;

/// The DER prefix of a P-256 public key's SubjectPublicKeyInfo, before its point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The key that signs and checks service account tokens.
pub struct TokenSigner {
    key: Key,
    kid: String,
    rng: SystemRandom,
}

/// A signing key: ECDSA P-256 (`ES256`) or RSA (`RS256`), as kube-apiserver takes.
enum Key {
    Ecdsa(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

impl Key {
    /// The JSON Web Signature algorithm of the key's tokens.
    fn alg(&self) -> &'static str {
        match self {
            Key::Ecdsa(_) => "ES256",
            Key::Rsa(_) => "RS256",
        }
    }

    /// The DER SubjectPublicKeyInfo of the public key (what kube's key id hashes).
    fn spki(&self) -> Vec<u8> {
        match self {
            Key::Ecdsa(k) => {
                let mut spki = P256_SPKI_PREFIX.to_vec();
                spki.extend_from_slice(k.public_key().as_ref());
                spki
            }
            Key::Rsa(k) => {
                let mut bits = vec![0u8];
                bits.extend_from_slice(k.public().as_ref());
                der(0x30, &[rsa_algorithm(), der(0x03, &bits)].concat())
            }
        }
    }
}

/// The DER encoding of the OID rsaEncryption (1.2.840.113549.1.1.1).
const RSA_ENCRYPTION_OID: &[u8] = &[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// The DER AlgorithmIdentifier of an EC P-256 key (id-ecPublicKey, prime256v1).
const P256_ALGORITHM: &[u8] = &[
    0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03,
    0x01, 0x07,
];

/// The DER AlgorithmIdentifier of an RSA key (rsaEncryption, no parameters).
fn rsa_algorithm() -> Vec<u8> {
    der(0x30, &[RSA_ENCRYPTION_OID, &[0x05, 0x00]].concat())
}

/// A DER value of `tag` holding `content`.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// A PKCS#8 PrivateKeyInfo wrapping a key of `algorithm` (a DER AlgorithmIdentifier).
fn pkcs8(algorithm: &[u8], key: &[u8]) -> Vec<u8> {
    der(0x30, &[&[0x02, 0x01, 0x00][..], algorithm, &der(0x04, key)].concat())
}

impl std::fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key itself is never printed.
        f.debug_struct("TokenSigner").field("kid", &self.kid).finish_non_exhaustive()
    }
}

impl TokenSigner {
    /// A new key (ECDSA P-256), in PKCS#8 DER form (to keep, or to pass to
    /// [`TokenSigner::from_pkcs8`]).
    ///
    /// # Panics
    /// When the system has no randomness to give (nothing could be signed safely then).
    pub fn generate_pkcs8() -> Vec<u8> {
        let rng = SystemRandom::new();
        EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map(|d| d.as_ref().to_vec())
            .expect("the system's random number generator works")
    }

    /// A signer with a new key.
    ///
    /// # Panics
    /// As [`TokenSigner::generate_pkcs8`].
    pub fn generate() -> TokenSigner {
        Self::from_pkcs8(&Self::generate_pkcs8()).expect("a freshly generated key is valid")
    }

    /// A signer with this ECDSA P-256 or RSA (2048 to 4096 bits) key (PKCS#8 DER).
    pub fn from_pkcs8(der: &[u8]) -> Result<TokenSigner, String> {
        let rng = SystemRandom::new();
        let key = match EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng) {
            Ok(k) => Key::Ecdsa(k),
            Err(ec) => match RsaKeyPair::from_pkcs8(der) {
                Ok(k) => Key::Rsa(k),
                Err(rsa) => return Err(format!("not an ECDSA P-256 ({ec}) or RSA ({rsa}) PKCS#8 key")),
            },
        };
        let kid = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(key.spki()));
        Ok(TokenSigner { key, kid, rng })
    }

    /// A signer with this key in PEM: PKCS#8 (`PRIVATE KEY`), SEC1 (`EC PRIVATE KEY`) or
    /// PKCS#1 (`RSA PRIVATE KEY`).
    pub fn from_pem(pem: &str) -> Result<TokenSigner, String> {
        Self::from_pkcs8(&pkcs8_from_pem(pem)?)
    }

    /// The JSON Web Signature algorithm of the tokens this key signs (`ES256` or `RS256`).
    pub fn algorithm(&self) -> &'static str {
        self.key.alg()
    }

    /// The public key as a JSON Web Key (`use`, `kty`, `kid`, `crv`, `alg`, `x`, `y` for ECDSA;
    /// `use`, `kty`, `kid`, `alg`, `n`, `e` for RSA), as the issuer's key set publishes it.
    pub fn public_jwk(&self) -> Value {
        match &self.key {
            Key::Ecdsa(k) => {
                // An uncompressed P-256 point: 0x04, then x and y, 32 bytes each.
                let point = k.public_key().as_ref();
                let (x, y) = point.get(1..).unwrap_or(&[]).split_at(point.len().saturating_sub(1) / 2);
                json!({"use": "sig", "kty": "EC", "kid": self.kid, "crv": "P-256", "alg": "ES256",
                       "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y)})
            }
            Key::Rsa(k) => {
                let parts = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(k.public());
                json!({"use": "sig", "kty": "RSA", "kid": self.kid, "alg": "RS256",
                       "n": URL_SAFE_NO_PAD.encode(&parts.n), "e": URL_SAFE_NO_PAD.encode(&parts.e)})
            }
        }
    }

    /// The key's id (`kid` of the tokens it signs).
    pub fn key_id(&self) -> &str {
        &self.kid
    }

    /// A token carrying `claims`.
    pub(crate) fn sign(&self, claims: &Value) -> Result<String, String> {
        let header = json!({"alg": self.key.alg(), "kid": self.kid});
        let signing_input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let failed = |_| "could not sign the token".to_string();
        let sig = match &self.key {
            Key::Ecdsa(k) => k.sign(&self.rng, signing_input.as_bytes()).map_err(failed)?.as_ref().to_vec(),
            Key::Rsa(k) => {
                let mut sig = vec![0; k.public().modulus_len()];
                k.sign(&signature::RSA_PKCS1_SHA256, &self.rng, signing_input.as_bytes(), &mut sig).map_err(failed)?;
                sig
            }
        };
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }

    /// The claims of a token of this server's issuer that this key signed, still valid at `now`
    /// (seconds since the epoch); why not otherwise. `Ok(None)`: not a token of this server's
    /// issuer at all (another authenticator's).
    pub(crate) fn verify(&self, token: &str, now: i64) -> Result<Option<Value>, String> {
        let parts: Vec<&str> = token.split('.').collect();
        let [header, claims, sig] = parts[..] else { return Ok(None) };
        let decode = |s: &str| URL_SAFE_NO_PAD.decode(s).ok();
        let (Some(h), Some(c)) = (decode(header), decode(claims)) else { return Ok(None) };
        let (Ok(h), Ok(c)) = (serde_json::from_slice::<Value>(&h), serde_json::from_slice::<Value>(&c)) else {
            return Ok(None);
        };
        // Another issuer's token is not this server's to judge.
        if c.get("iss").and_then(Value::as_str) != Some(ISSUER) {
            return Ok(None);
        }
        if h.get("alg").and_then(Value::as_str) != Some(self.key.alg())
            || h.get("kid").and_then(Value::as_str).is_some_and(|k| k != self.kid)
        {
            return Err("invalid signature, no keys found".into());
        }
        let input = format!("{header}.{claims}");
        let checks = |sig: &[u8]| match &self.key {
            Key::Ecdsa(k) => signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, k.public_key())
                .verify(input.as_bytes(), sig)
                .is_ok(),
            Key::Rsa(k) => signature::UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, k.public())
                .verify(input.as_bytes(), sig)
                .is_ok(),
        };
        let signed = decode(sig).is_some_and(|sig| checks(&sig));
        if !signed {
            return Err("invalid signature, error in cryptographic primitive".into());
        }
        // Times are numbers (fractions allowed, as JSON's NumericDate); one of another type
        // makes the token invalid rather than unlimited.
        let at = |k: &str| -> Result<Option<f64>, String> {
            match c.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v.as_f64().map(Some).ok_or_else(|| format!("invalid {k} claim")),
            }
        };
        let now = now as f64;
        if at("exp")?.is_some_and(|exp| now > exp + LEEWAY as f64) {
            return Err("service account token has expired".into());
        }
        if at("nbf")?.is_some_and(|nbf| now + (LEEWAY as f64) < nbf) {
            return Err("service account token is not valid yet".into());
        }
        if at("iat")?.is_some_and(|iat| now + (LEEWAY as f64) < iat) {
            return Err("service account token is issued in the future".into());
        }
        Ok(Some(c))
    }
}

/// The PKCS#8 DER of a PEM private key: PKCS#8 (`-----BEGIN PRIVATE KEY-----`) as it is, an EC
/// key in SEC1 (`-----BEGIN EC PRIVATE KEY-----`, as `openssl ecparam -genkey` writes it) or an
/// RSA key in PKCS#1 (`-----BEGIN RSA PRIVATE KEY-----`, as kubeadm writes `sa.key`) wrapped in
/// PKCS#8.
pub fn pkcs8_from_pem(pem: &str) -> Result<Vec<u8>, String> {
    use rustls_pki_types::PrivateKeyDer;
    use rustls_pki_types::pem::{Error, PemObject};
    match PrivateKeyDer::from_pem_slice(pem.as_bytes()) {
        Ok(PrivateKeyDer::Pkcs8(k)) => Ok(k.secret_pkcs8_der().to_vec()),
        Ok(PrivateKeyDer::Sec1(k)) => Ok(pkcs8(P256_ALGORITHM, k.secret_sec1_der())),
        Ok(PrivateKeyDer::Pkcs1(k)) => Ok(pkcs8(&rsa_algorithm(), k.secret_pkcs1_der())),
        Ok(_) | Err(Error::NoItemsFound) => {
            Err("no private key (-----BEGIN PRIVATE KEY-----, EC PRIVATE KEY or RSA PRIVATE KEY) found".into())
        }
        Err(e) => Err(format!("bad PEM: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_with_their_key_and_in_their_time() {
        let signer = TokenSigner::generate();
        let claims = json!({"iss": ISSUER, "sub": "system:serviceaccount:ns:sa", "nbf": 1000, "exp": 2000});
        let token = signer.sign(&claims).unwrap();
        assert_eq!(token.split('.').count(), 3);
        assert_eq!(signer.verify(&token, 1500).unwrap(), Some(claims.clone()));
        assert!(signer.verify(&token, 2050).is_ok(), "a minute's leeway");
        assert_eq!(signer.verify(&token, 2061).unwrap_err(), "service account token has expired");
        assert!(signer.verify(&token, 900).is_err());
        assert!(TokenSigner::generate().verify(&token, 1500).is_err(), "another key");
        let mut forged: Vec<&str> = token.split('.').collect();
        let other = URL_SAFE_NO_PAD.encode(json!({"iss": ISSUER, "sub": "system:admin"}).to_string());
        forged[1] = &other;
        assert!(signer.verify(&forged.join("."), 1500).is_err(), "changed claims");
        let none = format!("{}.{}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#), forged[1]);
        assert!(signer.verify(&none, 1500).is_err(), "no algorithm");
        assert_eq!(signer.verify("not-a-token", 1500).unwrap(), None);
        // Another issuer's token: not this server's to judge.
        let oidc = TokenSigner::generate().sign(&json!({"iss": "https://accounts.example.com", "exp": 2000})).unwrap();
        assert_eq!(signer.verify(&oidc, 1500).unwrap(), None);
        // Times of another type do not make a token unlimited.
        let odd = signer.sign(&json!({"iss": ISSUER, "exp": "never"})).unwrap();
        assert!(signer.verify(&odd, 1500).is_err());
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
        let shown = format!("{a:?}");
        assert!(shown.contains(a.key_id()) && !shown.contains("key:"), "{shown}");
        assert!(TokenSigner::from_pem("nothing").is_err());
    }
}
