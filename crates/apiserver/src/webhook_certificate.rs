//! Certificates for an admission webhook run in a test, as envtest generates them: a
//! certificate authority of its own and a serving certificate it signed for the hosts the
//! webhook listens on. The webhook serves [`WebhookCertificate::server_config`] (or the PEM
//! texts); its configuration trusts [`WebhookCertificate::ca_bundle`].
//!
//! Invariants: every call makes a new authority and new keys (ECDSA P-256); the serving
//! certificate is valid for exactly the hosts given (IP addresses as IP names, others as DNS
//! names) and is not itself an authority, so any verifier accepts the chain.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tokio_rustls::rustls;

/// A serving certificate and the authority that signed it.
#[derive(Clone)]
pub struct WebhookCertificate {
    /// The serving certificate (PEM).
    pub cert_pem: String,
    /// The serving certificate's private key (PEM, PKCS#8).
    pub key_pem: String,
    /// The authority's certificate (PEM): what clients trust.
    pub ca_pem: String,
}

impl std::fmt::Debug for WebhookCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The private key stays out of logs.
        f.debug_struct("WebhookCertificate").field("cert_pem", &self.cert_pem).finish_non_exhaustive()
    }
}

impl WebhookCertificate {
    /// A new authority and a certificate it signed for `hosts` (`127.0.0.1`, `localhost`, …).
    ///
    /// ```
    /// let cert = informer_apiserver::testing::WebhookCertificate::for_hosts(&["127.0.0.1"]).unwrap();
    /// let client_config = cert.client_config("https://127.0.0.1:9443/validate");
    /// assert_eq!(client_config["caBundle"], cert.ca_bundle());
    /// ```
    pub fn for_hosts(hosts: &[&str]) -> Result<WebhookCertificate, String> {
        let fail = |e: rcgen::Error| e.to_string();
        let ca_key = KeyPair::generate().map_err(fail)?;
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        ca.distinguished_name.push(DnType::CommonName, "informer webhook authority");
        let ca_pem = ca.self_signed(&ca_key).map_err(fail)?.pem();
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().map_err(fail)?;
        let names: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        let mut leaf = CertificateParams::new(names).map_err(fail)?;
        leaf.distinguished_name.push(DnType::CommonName, hosts.first().copied().unwrap_or("webhook"));
        leaf.is_ca = IsCa::ExplicitNoCa;
        let cert_pem = leaf.signed_by(&key, &issuer).map_err(fail)?.pem();
        Ok(WebhookCertificate { cert_pem, key_pem: key.serialize_pem(), ca_pem })
    }

    /// The authority's certificate, base64-encoded: a webhook configuration's
    /// `clientConfig.caBundle`.
    pub fn ca_bundle(&self) -> String {
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, self.ca_pem.as_bytes())
    }

    /// A webhook's `clientConfig` calling `url` and trusting this authority.
    pub fn client_config(&self, url: &str) -> Value {
        json!({"url": url, "caBundle": self.ca_bundle()})
    }

    /// A rustls server configuration serving this certificate (HTTP/1.1, HTTP/2 or both: no
    /// protocol is negotiated).
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, String> {
        let certs =
            vec![CertificateDer::from_pem_slice(self.cert_pem.as_bytes()).map_err(|e| format!("certificate: {e}"))?];
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes()).map_err(|e| format!("key: {e}"))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(config))
    }
}
