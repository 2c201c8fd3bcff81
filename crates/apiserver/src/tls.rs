//! TLS termination with rustls (ring provider), from PEM certificate and key
//! files. ALPN offers `h2` and `http/1.1`.

use std::path::Path;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;

/// Builds a TLS acceptor from PEM files.
pub fn acceptor(cert: &Path, key: &Path) -> std::io::Result<TlsAcceptor> {
    let bad = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad(format!("reading {}: {e}", cert.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(format!("parsing {}: {e}", cert.display())))?;
    if certs.is_empty() {
        return Err(bad(format!("no certificate in {}", cert.display())));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad(format!("reading key {}: {e}", key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad(e.to_string()))?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}
