//! `informer serve --etcd-servers`: several server processes on one real etcd serve one state.
//! A write through one replica is in every replica's LIST (a consistent read) and WATCH with the
//! same resourceVersion; an informer whose replica dies goes on through another (a TCP proxy in
//! front, as a load balancer) from its resourceVersion, without a relist.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Serve, client};
use futures_util::StreamExt;
use informer::{
    Controller, HandlerFns, Indexer, Indexers, KubeListerWatcher, RealFifo, ReflectorHooks, ReflectorOptions,
};
use informer_apiserver::etcd_process::EtcdProcess;
use informer_apiserver::testing::TcpProxy;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn cm(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"}, "data": {"v": value}})).unwrap()
}

fn rv(o: &ConfigMap) -> String {
    o.metadata.resource_version.clone().unwrap()
}

fn replicas(etcd: &EtcdProcess, prefix: &str, n: usize) -> Vec<Serve> {
    (0..n)
        .map(|_| {
            Serve::start(&["--etcd-servers", &etcd.url(), "--etcd-prefix", prefix, "--etcd-compaction-interval", "0"])
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_serve_one_state_with_the_same_resource_versions() {
    let etcd = EtcdProcess::start().unwrap();
    let servers = replicas(&etcd, "/replicas/registry", 2);
    let a: Api<ConfigMap> = Api::namespaced(client(&servers[0].url), "default");
    let b: Api<ConfigMap> = Api::namespaced(client(&servers[1].url), "default");
    let start = b.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    let mut watch = b.watch(&WatchParams::default().timeout(60), &start).await.unwrap().boxed();
    let mut written = Vec::new();
    for i in 0..50 {
        let o = a.create(&PostParams::default(), &cm(&format!("c{i:02}"), "1")).await.unwrap();
        // A consistent read on the other replica includes the write, at the same resourceVersion.
        let got = b.get(&format!("c{i:02}")).await.unwrap();
        assert_eq!(rv(&got), rv(&o));
        let list = b.list(&ListParams::default()).await.unwrap();
        assert!(list.items.iter().any(|x| x.metadata.name == o.metadata.name && rv(x) == rv(&o)));
        written.push(rv(&o));
    }
    // Writes through B reach A as well.
    // A ConfigMap's DELETE answers a Success Status naming it, as kube-apiserver's does.
    let done = b.delete("c00", &DeleteParams::default()).await.unwrap().right().expect("a Status");
    let uid = done.details.as_ref().map(|d| d.uid.clone());
    assert!(a.get_opt("c00").await.unwrap().is_none());
    for (i, want) in written.iter().enumerate() {
        match tokio::time::timeout(Duration::from_secs(10), watch.next()).await.unwrap() {
            Some(Ok(WatchEvent::Added(o))) => {
                assert_eq!((o.metadata.name.as_deref(), &rv(&o)), (Some(format!("c{i:02}").as_str()), want));
            }
            other => panic!("event {i}: {other:?}"),
        }
    }
    match tokio::time::timeout(Duration::from_secs(10), watch.next()).await.unwrap() {
        Some(Ok(WatchEvent::Deleted(o))) => {
            assert_eq!(o.metadata.uid, uid, "the deleted object");
            assert!(rv(&o).parse::<u64>().unwrap() > written.last().unwrap().parse::<u64>().unwrap());
        }
        other => panic!("the deletion: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_goes_on_through_another_replica_without_a_relist() {
    let etcd = EtcdProcess::start().unwrap();
    let mut servers = replicas(&etcd, "/failover/registry", 2);
    let addr = |s: &Serve| s.url.trim_start_matches("http://").parse::<std::net::SocketAddr>().unwrap();
    let proxy = TcpProxy::start(addr(&servers[0])).await.unwrap();
    let b: Api<ConfigMap> = Api::namespaced(client(&servers[1].url), "default");
    for i in 0..20 {
        b.create(&PostParams::default(), &cm(&format!("c{i:02}"), "0")).await.unwrap();
    }
    // The informer, through the proxy (to replica A for now).
    let lists = Arc::new(AtomicUsize::new(0));
    let hooks = ReflectorHooks {
        before_list: Some(Arc::new({
            let lists = lists.clone();
            move |_: &str| {
                lists.fetch_add(1, Ordering::SeqCst);
            }
        })),
        ..Default::default()
    };
    let store = Arc::new(Indexer::<ConfigMap>::new(Indexers::new()));
    let lw = Arc::new(KubeListerWatcher::<ConfigMap>::new(client(&proxy.url()), Some("default")));
    let ctrl = Arc::new(Controller::new(
        lw,
        Arc::new(RealFifo::<ConfigMap>::new(Default::default())),
        store.clone(),
        Arc::new(HandlerFns::<ConfigMap>::new()),
        ReflectorOptions { name: "failover".into(), ..Default::default() },
        hooks,
    ));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (c, k) = (ctrl.clone(), cancel.clone());
        async move { c.run(k).await }
    });
    tokio::time::timeout(Duration::from_secs(20), ctrl.synced().wait()).await.expect("synced");
    let converge = |what: &'static str| {
        let (b, store) = (b.clone(), store.clone());
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            loop {
                let want: BTreeMap<String, String> = b
                    .list(&ListParams::default())
                    .await
                    .unwrap()
                    .items
                    .iter()
                    .map(|o| (format!("default/{}", o.metadata.name.clone().unwrap()), rv(o)))
                    .collect();
                let got: BTreeMap<String, String> = store
                    .list()
                    .into_iter()
                    .map(|o| (o.key().to_string(), o.resource_version().unwrap_or("").to_string()))
                    .collect();
                if want == got {
                    return;
                }
                assert!(tokio::time::Instant::now() < deadline, "{what}: cache {got:?} != server {want:?}");
                // Polls the other process's state: nothing in this process signals its changes.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    for i in 0..20 {
        b.replace(&format!("c{i:02}"), &PostParams::default(), &cm(&format!("c{i:02}"), "1")).await.unwrap();
    }
    converge("through replica A").await;
    // Replica A dies with the informer's watch open through it; the load balancer sends new
    // connections to B.
    proxy.set_target(addr(&servers[1]));
    servers[0].kill();
    for i in 0..20 {
        if i % 4 == 0 {
            b.delete(&format!("c{i:02}"), &DeleteParams::default()).await.unwrap();
        } else {
            b.replace(&format!("c{i:02}"), &PostParams::default(), &cm(&format!("c{i:02}"), "2")).await.unwrap();
        }
    }
    b.create(&PostParams::default(), &cm("after", "x")).await.unwrap();
    converge("through replica B").await;
    assert_eq!(lists.load(Ordering::SeqCst), 1, "the informer resumed its watch on B without a relist");
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_sharing_a_signing_key_accept_each_others_tokens() {
    use informer_apiserver::service_account_token::TokenSigner;
    use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenRequest};
    use k8s_openapi::api::core::v1::ServiceAccount;
    let etcd = EtcdProcess::start().unwrap();
    let dir = informer_apiserver::testing::temp_data_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("sa.der");
    std::fs::write(&key, TokenSigner::generate_pkcs8()).unwrap();
    let key = key.to_str().unwrap();
    let args = |_| {
        Serve::start(&[
            "--etcd-servers",
            &etcd.url(),
            "--etcd-prefix",
            "/tokens/registry",
            "--etcd-compaction-interval",
            "0",
            "--service-account-key-file",
            key,
        ])
    };
    let servers: Vec<Serve> = (0..2).map(args).collect();
    let a: Api<ServiceAccount> = Api::namespaced(client(&servers[0].url), "default");
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "builder"}})).unwrap();
    a.create(&PostParams::default(), &sa).await.unwrap();
    let issued = a.create_token_request("builder", &PostParams::default(), &TokenRequest::default()).await.unwrap();
    let token = issued.status.unwrap().token;
    // Through the other replica, the token acts as the service account.
    let mut cfg = kube::Config::new(servers[1].url.parse().unwrap());
    cfg.auth_info.token = Some(token.into());
    let b = kube::Client::try_from(cfg).unwrap();
    let reviews: Api<SelfSubjectReview> = Api::all(b);
    let me = reviews.create(&PostParams::default(), &SelfSubjectReview::default()).await.unwrap();
    let user = me.status.unwrap().user_info.unwrap();
    assert_eq!(user.username.as_deref(), Some("system:serviceaccount:default:builder"));
    let _ = std::fs::remove_dir_all(&dir);
}
