//! Runs a server on 127.0.0.1:18080 until killed, for manual testing with
//! kubectl/curl. `PODS=N` preloads N pods in namespace `bench`.
#[tokio::main]
async fn main() {
    let s = informer_apiserver::ApiServer::builder()
        .addr("127.0.0.1:18080".parse().expect("addr"))
        .start()
        .await
        .expect("start");
    s.create("namespaces", serde_json::json!({"metadata": {"name": "bench"}})).await.expect("namespace bench");
    let n: usize = std::env::var("PODS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let pad = "x".repeat(4000);
    let objs = (0..n)
        .map(|i| serde_json::json!({"metadata": {"name": format!("p{i:06}"), "namespace": "bench"}, "spec": {"pad": pad}}))
        .collect();
    s.create_many("pods", objs).await.expect("preload");
    println!("{}", s.url());
    std::future::pending::<()>().await;
}
