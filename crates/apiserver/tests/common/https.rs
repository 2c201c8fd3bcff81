//! A webhook server as the tests' webhooks run: HTTPS on a loopback port, every connection
//! served by one request handler.

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

/// Serves `handler` over TLS (`acceptor`) on a fresh loopback port; returns the address.
pub async fn serve<F, Fut>(acceptor: tokio_rustls::TlsAcceptor, handler: F) -> SocketAddr
where
    F: Fn(hyper::Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<hyper::Response<Full<Bytes>>, hyper::Error>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let (acceptor, handler) = (acceptor.clone(), handler.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let service = hyper::service::service_fn(handler);
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
            });
        }
    });
    addr
}
