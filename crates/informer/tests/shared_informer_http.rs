//! Shared informers and the factory over HTTP against the embedded API server.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{Rec, Recorder, cache_view, spawn, wait_signal};
use informer::fake::FakeSource;
use informer::{
    BacklogPolicy, Error, HandlerOptions, InformerOptions, KubeListerWatcher, LabelSelector, SharedIndexInformer,
    SharedInformerFactory, Status, wait_for_cache_sync,
};
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::core::ApiResource;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(30);

async fn client(s: &ApiServer) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(&s.kubeconfig_yaml()).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
    kube::Client::try_from(cfg).unwrap()
}

fn pod(name: &str, app: &str) -> serde_json::Value {
    json!({"apiVersion":"v1","kind":"Pod",
           "metadata":{"name":name,"namespace":"default","labels":{"app":app}},
           "spec":{"containers":[{"name":"c","image":"registry.example/app:1"}]}})
}

async fn server_view(s: &ApiServer, resource: &str) -> BTreeMap<String, String> {
    s.list(resource, Some("default"))
        .await
        .unwrap()
        .into_iter()
        .map(|v| {
            let m = &v["metadata"];
            (
                format!("{}/{}", m["namespace"].as_str().unwrap(), m["name"].as_str().unwrap()),
                m["resourceVersion"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn factory_shares_informers_and_waits_for_their_sync() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    server.create("pods", pod("p1", "web")).await.unwrap();
    server.create("configmaps", json!({"metadata":{"name":"c1","namespace":"default"}})).await.unwrap();
    let factory = SharedInformerFactory::builder(client(&server).await).namespace("default").build();
    let pods = factory.informer::<Pod>();
    assert!(Arc::ptr_eq(pods.indexer(), factory.informer::<Pod>().indexer()));
    let cms = factory.informer::<ConfigMap>();
    let pods_ar = ApiResource::erase::<Pod>(&());
    let dynamic = factory.dynamic(&pods_ar);
    assert!(Arc::ptr_eq(dynamic.indexer(), factory.dynamic(&pods_ar).indexer()));
    // Metadata informers have their own key space (the embedded server does not serve
    // PartialObjectMetadata, so this one is only built, never started).
    let meta_factory = SharedInformerFactory::new(client(&server).await);
    let meta = meta_factory.metadata(&pods_ar);
    assert!(Arc::ptr_eq(meta.indexer(), meta_factory.metadata(&pods_ar).indexer()));

    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.start(&cancel); // idempotent
    let r = factory.wait_for_cache_sync(Some(LIMIT)).await;
    assert!(r.all_synced(), "{r:?}");
    assert_eq!(r.synced.len(), 3);
    assert_eq!(pods.indexer().len(), 1);
    assert_eq!(cms.indexer().len(), 1);
    assert_eq!(dynamic.lister().by_namespace("default").get("p1").unwrap().name(), "p1");
    assert_eq!(dynamic.lister().by_namespace("default").get("p1").unwrap().label("app"), Some("web"));

    // Requested after start: not started (nor awaited) until start is called again.
    let secrets = factory.informer::<Secret>();
    assert!(!secrets.is_started());
    assert_eq!(factory.wait_for_cache_sync(Some(LIMIT)).await.synced.len(), 3);
    factory.start(&cancel);
    let r = factory.wait_for_cache_sync(Some(LIMIT)).await;
    assert!(r.all_synced() && r.synced.len() == 4, "{r:?}");

    factory.shutdown().await;
    for stopped in [pods.is_stopped(), cms.is_stopped(), dynamic.is_stopped(), secrets.is_stopped()] {
        assert!(stopped);
    }
    factory.start(&cancel); // no-op after shutdown
    assert!(!cancel.is_cancelled());
}

/// client-go's `InformerFor`: an informer of the program's own making for a resource, shared
/// through the factory and started and shut down with its others.
#[tokio::test]
async fn factory_shares_an_informer_made_for_a_resource() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    for (name, app) in [("w1", "web"), ("d1", "db")] {
        server.create("pods", pod(name, app)).await.unwrap();
    }
    let factory = SharedInformerFactory::builder(client(&server).await)
        .resync_period(Duration::from_secs(600))
        .transform_for::<Pod>(|o| {
            let mut v: serde_json::Value = serde_json::from_slice(&o.raw_json()).unwrap();
            v["metadata"]["labels"]["transformed"] = json!("yes");
            informer::Object::from_json(serde_json::to_vec(&v).unwrap()).map_err(|e| e.to_string())
        })
        .build();
    let made = factory.informer_for::<Pod>(|client, resync| {
        assert_eq!(resync, Duration::from_secs(600), "given the factory's resync period");
        let mut opts = InformerOptions::default().name("web-pods").resync_period(resync);
        opts.reflector.base.label_selector = Some("app=web".into());
        SharedIndexInformer::with_options(KubeListerWatcher::<Pod>::new(client.clone(), Some("default")), opts)
    });
    let shared = factory.informer::<Pod>();
    assert!(Arc::ptr_eq(made.indexer(), shared.indexer()), "the typed accessor returns the informer made for Pod");
    let again = factory.informer_for::<Pod>(|_, _| unreachable!("already made"));
    assert!(Arc::ptr_eq(made.indexer(), again.indexer()));
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    let r = factory.wait_for_cache_sync(Some(LIMIT)).await;
    assert!(r.all_synced() && r.synced.len() == 1, "{r:?}");
    let keys: Vec<String> = made.indexer().list_keys().iter().map(ToString::to_string).collect();
    assert_eq!(keys, ["default/w1"]);
    let cached = made.indexer().get_by_key("default/w1").unwrap();
    assert_eq!(cached.label("transformed"), Some("yes"), "given the factory's transform for Pod");
    factory.shutdown().await;
    assert!(made.is_stopped());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn factory_tweaks_list_options_and_listers_select() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    for (name, app) in [("w1", "web"), ("w2", "web"), ("d1", "db"), ("x", "cache")] {
        server.create("pods", pod(name, app)).await.unwrap();
    }
    let factory = SharedInformerFactory::builder(client(&server).await)
        .namespace("default")
        .tweak_list_options(|o| o.label_selector = Some("app in (web,db)".into()))
        .resync_period_for::<Pod>(Duration::from_secs(60))
        .transform_for::<Pod>(|o| {
            let mut v: serde_json::Value = serde_json::from_slice(&o.raw_json()).unwrap();
            v["metadata"]["labels"]["transformed"] = json!("yes");
            informer::Object::from_json(serde_json::to_vec(&v).unwrap()).map_err(|e| e.to_string())
        })
        .build();
    let pods = factory.informer::<Pod>();
    assert_eq!(pods.resync_check_period(), Duration::from_secs(60));
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.wait_for_cache_sync(Some(LIMIT)).await.into_result().unwrap();
    let l = pods.lister();
    let all = l.list(&LabelSelector::everything());
    assert_eq!(all.len(), 3, "server-side selection");
    assert!(all.iter().all(|o| o.label("transformed") == Some("yes")));
    assert_eq!(l.list(&"app=web".parse().unwrap()).len(), 2);
    assert_eq!(l.list(&"app!=web".parse().unwrap()).len(), 1);
    assert_eq!(l.by_namespace("default").list(&"app".parse().unwrap()).len(), 3);
    assert_eq!(l.by_namespace("other").list(&LabelSelector::everything()).len(), 0);
    // A change moving an object out of the selection removes it from the cache.
    let r = Recorder::new();
    let reg = pods.add_event_handler(Rec(r.clone())).unwrap();
    wait_signal(&reg.synced(), LIMIT).await;
    server.patch("pods", "default", "w1", &json!({"metadata":{"labels":{"app":"gone"}}})).await.unwrap();
    r.wait_for("w1 leaves the selection", LIMIT, |r| r.view().len() == 2).await;
    assert!(l.by_namespace("default").get("w1").is_none());
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_cache_sync_names_who_did_not_sync() {
    let src = FakeSource::new();
    src.set_list_error(Some(Error::api(Status { code: 500, message: "down".into(), ..Default::default() })));
    let broken = SharedIndexInformer::<ConfigMap>::with_options(src, InformerOptions::default().name("broken"));
    let ok_src = FakeSource::new();
    let ok = SharedIndexInformer::<ConfigMap>::with_options(ok_src, InformerOptions::default().name("fine"));
    let reg = ok.add_event_handler_with_options(informer::HandlerFns::new(), HandlerOptions::new().name("h")).unwrap();
    let (c1, r1) = spawn(&broken);
    let (c2, r2) = spawn(&ok);
    let r = wait_for_cache_sync(&[broken.synced(), ok.synced(), reg.synced()], Some(Duration::from_millis(300))).await;
    assert_eq!(r.not_synced, ["SharedIndexInformer broken"]);
    assert_eq!(r.synced, ["SharedIndexInformer fine", "handler h synced"]);
    let err = r.into_result().unwrap_err();
    assert!(err.to_string().contains("broken"), "{err}");
    c1.cancel();
    c2.cancel();
    r1.await.unwrap();
    r2.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hammer_over_http_converges() {
    let server = Arc::new(informer_apiserver::testing::builder().history_capacity(200).start().await.unwrap());
    for i in 0..50 {
        server.create("pods", pod(&format!("p{i}"), "web")).await.unwrap();
    }
    let lw = KubeListerWatcher::<Pod>::new(client(&server).await, Some("default"));
    let inf = SharedIndexInformer::with_options(
        lw,
        InformerOptions::default().name("pods").resync_period(Duration::from_millis(200)),
    );
    let recs: Vec<_> = (0..3).map(|_| Arc::new(Recorder { strict_deletes: false, ..Default::default() })).collect();
    inf.add_event_handler(Rec(recs[0].clone())).unwrap();
    inf.add_event_handler_with_options(
        Rec(recs[1].clone()),
        HandlerOptions::new().backlog(BacklogPolicy::Bounded(16)).resync_period(Duration::from_secs(1)),
    )
    .unwrap();
    let (cancel, run) = spawn(&inf);
    wait_signal(&inf.synced(), LIMIT).await;
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let server = server.clone();
            tokio::spawn(async move {
                use rand::Rng;
                for i in 0..200u32 {
                    let (k, op) = {
                        let mut rng = rand::rng();
                        (rng.random_range(0..60u32), rng.random_range(0..10u32))
                    };
                    let name = format!("p{k}");
                    let exists = server.get("pods", "default", &name).await.is_ok();
                    // Races between writers are fine: a failed write is just skipped.
                    let _ = match (exists, op) {
                        (false, _) => server.create("pods", pod(&name, "web")).await.map(|_| ()),
                        (true, 0..=6) => server
                            .patch("pods", "default", &name, &json!({"metadata":{"labels":{"v":format!("{w}-{i}")}}}))
                            .await
                            .map(|_| ()),
                        (true, _) => server.delete("pods", "default", &name).await.map(|_| ()),
                    };
                    if i % 70 == 0 {
                        server.drop_watches();
                    }
                    if i % 10 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    // A handler joining mid-stream.
    let late = inf.add_event_handler(Rec(recs[2].clone())).unwrap();
    for w in writers {
        w.await.unwrap();
    }
    server.create("pods", pod("final-marker", "web")).await.unwrap();
    let want = server_view(&server, "pods").await;
    for r in &recs {
        r.wait_for("handler converges", LIMIT, |r| r.view() == want).await;
        r.assert_no_errors();
    }
    assert!(late.has_synced());
    assert_eq!(cache_view(&inf), want);
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn factory_wait_ends_when_informers_stop_unsynced() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    server.fail_next_with_500(1_000_000);
    let factory = SharedInformerFactory::new(client(&server).await);
    let pods = factory.informer::<Pod>();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    // `join!` polls the wait first (it registers the started informer), then shuts down.
    let (r, ()) =
        tokio::time::timeout(LIMIT, async { tokio::join!(factory.wait_for_cache_sync(None), factory.shutdown()) })
            .await
            .unwrap();
    assert_eq!(r.not_synced, [pods.synced().name()]);
    assert!(pods.is_stopped());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_whose_run_panics_is_stopped_and_nothing_waits_on_it() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    server.create("pods", pod("boom", "web")).await.unwrap();
    let factory = SharedInformerFactory::builder(client(&server).await).namespace("default").build();
    let pods = factory.informer::<Pod>();
    pods.set_transform(|o| if o.name() == "boom" { panic!("transform bug") } else { Ok(o) }).unwrap();
    let cms = factory.informer::<ConfigMap>();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    let r = tokio::time::timeout(LIMIT, factory.wait_for_cache_sync(None)).await.unwrap();
    assert_eq!(r.not_synced, [pods.synced().name()]);
    wait_signal(&pods.stopped(), LIMIT).await;
    assert!(pods.is_stopped());
    assert!(pods.add_event_handler(Rec(Recorder::new())).is_err(), "no handler joins a stopped informer");
    assert!(!cms.is_stopped());
    tokio::time::timeout(LIMIT, factory.shutdown()).await.unwrap();
    assert!(cms.is_stopped());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_shutdown_call_waits_for_every_informer() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    let factory = SharedInformerFactory::builder(client(&server).await).namespace("default").build();
    let (pods, cms) = (factory.informer::<Pod>(), factory.informer::<ConfigMap>());
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    assert!(factory.wait_for_cache_sync(Some(LIMIT)).await.not_synced.is_empty());
    // Whichever call returns first, the informers have stopped by then.
    tokio::time::timeout(LIMIT, async {
        tokio::select! {
            _ = factory.shutdown() => {}
            _ = factory.shutdown() => {}
        }
    })
    .await
    .unwrap();
    for s in [pods.stopped(), cms.stopped()] {
        assert!(s.is_set(), "{} after a shutdown call returned", s.name());
    }
}

/// The deployment pattern of the README: an application on a multi-threaded runtime runs its
/// informer (and the informer's client) on an `InformerThread`; registrations, handlers, listers
/// and shutdown work across the two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_on_a_thread_of_its_own_serves_a_multi_threaded_application() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    server.create("pods", pod("before", "web")).await.unwrap();
    let yaml = server.kubeconfig_yaml();
    let cancel = CancellationToken::new();
    let thread = informer::InformerThread::start("informer").unwrap();
    let informer = thread
        .spawn(async move {
            let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
            let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
            let lw = KubeListerWatcher::<Pod>::new(kube::Client::try_from(cfg).unwrap(), Some("default"));
            SharedIndexInformer::<Pod>::new(lw, Duration::ZERO)
        })
        .await
        .unwrap();
    let running = thread.spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move {
            informer.run(cancel).await;
            std::thread::current().id()
        }
    });
    // Registered from the application's runtime, called on the informer's thread.
    let r = Recorder::new();
    let reg = informer.add_event_handler(Rec(r.clone())).unwrap();
    let called_on = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let on = called_on.clone();
    informer
        .add_event_handler(
            informer::HandlerFns::<Pod>::new().on_add(move |_, _| on.lock().push(std::thread::current().id())),
        )
        .unwrap();
    wait_signal(&reg.synced(), LIMIT).await;
    assert_eq!(r.view().len(), 1);
    server.create("pods", pod("after", "db")).await.unwrap();
    r.wait_for("the new pod", LIMIT, |r| r.view().len() == 2).await;
    let lister = informer.lister();
    assert_eq!(lister.by_namespace("default").get("after").unwrap().label("app"), Some("db"));
    assert_eq!(cache_view(&informer), server_view(&server, "pods").await);
    r.assert_no_errors();
    cancel.cancel();
    let informer_thread = running.await.unwrap();
    tokio::task::spawn_blocking(move || thread.shutdown()).await.unwrap();
    assert_ne!(informer_thread, std::thread::current().id());
    let called_on = called_on.lock().clone();
    assert_eq!(called_on.len(), 2);
    assert!(called_on.iter().all(|t| *t == informer_thread), "handlers run on the informer's thread");
    assert!(informer.is_stopped());
}
