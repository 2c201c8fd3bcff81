//! Runs a server on 127.0.0.1:18080 until killed (manual testing).
#[tokio::main]
async fn main() {
    let s = informer_apiserver::ApiServer::builder()
        .addr("127.0.0.1:18080".parse().unwrap())
        .start()
        .await
        .unwrap();
    s.write_kubeconfig("/tmp/kc/config").unwrap();
    std::future::pending::<()>().await;
}
