//! A webhook server as the tests' webhooks run: HTTPS on a loopback port, every connection
//! served by one request handler.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    serve_counted(acceptor, handler).await.0
}

/// As [`serve`], also counting the TLS connections accepted.
pub async fn serve_counted<F, Fut>(acceptor: tokio_rustls::TlsAcceptor, handler: F) -> (SocketAddr, Arc<AtomicUsize>)
where
    F: Fn(hyper::Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<hyper::Response<Full<Bytes>>, hyper::Error>> + Send + 'static,
{
    serve_with(acceptor, handler, true).await
}

/// As [`serve_counted`]; without `keep_alive` every connection is closed after one answer.
pub async fn serve_with<F, Fut>(
    acceptor: tokio_rustls::TlsAcceptor,
    handler: F,
    keep_alive: bool,
) -> (SocketAddr, Arc<AtomicUsize>)
where
    F: Fn(hyper::Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<hyper::Response<Full<Bytes>>, hyper::Error>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let (acceptor, handler, counted) = (acceptor.clone(), handler.clone(), counted.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                counted.fetch_add(1, Ordering::SeqCst);
                let service = hyper::service::service_fn(handler);
                let _ = hyper::server::conn::http1::Builder::new()
                    .keep_alive(keep_alive)
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (addr, connections)
}
