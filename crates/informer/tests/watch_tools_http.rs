//! client-go's `tools/watch` and `util/retry` against the embedded API server over HTTP with a
//! `kube::Client`: a RetryWatcher that follows changes across watches the server ends, `until`
//! ended by the 410 of a resourceVersion compacted away, `until_with_sync` waiting for an object's
//! state, and `retry_on_conflict` redoing a read-modify-write that raced another writer.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::client;
use futures_util::StreamExt;
use informer::listwatch::WatchEvent;
use informer::retry::{DEFAULT_RETRY, retry_on_conflict};
use informer::watch_tools::{Condition, Precondition, RetryWatcher, UntilError, until, until_with_sync};
use informer::{CancellationToken, KubeListerWatcher, Object};
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};

fn configmap(mode: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta { name: Some("settings".into()), ..Default::default() },
        data: Some(BTreeMap::from([("mode".to_string(), mode.to_string())])),
        ..Default::default()
    }
}

fn mode(o: &Object<ConfigMap>) -> String {
    o.decode().unwrap().data.and_then(|d| d.get("mode").cloned()).unwrap_or_default()
}

async fn set_mode(api: &Api<ConfigMap>, value: &str) -> String {
    let mut cm = api.get("settings").await.unwrap();
    cm.data = configmap(value).data;
    api.replace("settings", &PostParams::default(), &cm).await.unwrap().metadata.resource_version.unwrap()
}

#[tokio::test]
async fn a_retry_watcher_follows_changes_across_watches_the_server_ends() {
    let server = ApiServer::builder().start().await.unwrap();
    let c = client(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let created = api.create(&PostParams::default(), &configmap("0")).await.unwrap();
    let lw = KubeListerWatcher::<ConfigMap>::new(c.clone(), Some("default"));
    let mut watcher =
        RetryWatcher::with_min_restart_delay(lw, created.metadata.resource_version.as_deref().unwrap(), Duration::ZERO)
            .unwrap();

    let mut seen = Vec::new();
    for value in ["1", "2", "3"] {
        let rv = set_mode(&api, value).await;
        let Some(WatchEvent::Modified(o)) = watcher.next().await else { panic!("no change") };
        seen.push((mode(&o), o.resource_version().unwrap() == rv));
        // Every watch request ends here; the next change comes through the next one.
        server.drop_watches();
    }
    api.delete("settings", &DeleteParams::default()).await.unwrap();
    let Some(WatchEvent::Deleted(o)) = watcher.next().await else { panic!("no deletion") };
    assert_eq!(mode(&o), "3");
    assert_eq!(seen, [("1".into(), true), ("2".into(), true), ("3".into(), true)]);
    assert!(server.controls().request_counts().watch >= 4, "{:?}", server.controls().request_counts());
}

#[tokio::test]
async fn until_from_a_compacted_resource_version_ends_with_the_410() {
    let server = ApiServer::builder().start().await.unwrap();
    let c = client(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let created = api.create(&PostParams::default(), &configmap("0")).await.unwrap();
    set_mode(&api, "1").await;
    // A server whose watch cache is built from the compacted storage no longer has the version
    // (the server that compacted would still replay it from its cache, as kube-apiserver does).
    server.compact().await.unwrap();
    server.restart().await.unwrap();
    assert!(server.wait_ready(Duration::from_secs(10)).await);

    let mut seen = 0;
    let record: Condition<ConfigMap> = Box::new(|e| match e {
        WatchEvent::Error(_) => {
            seen += 1;
            Ok(false)
        }
        other => Err(format!("replayed {other:?}").into()),
    });
    let lw = KubeListerWatcher::<ConfigMap>::new(c.clone(), Some("default"));
    let rv = created.metadata.resource_version.unwrap();
    let err = until(&CancellationToken::new(), &rv, lw, vec![record]).await.unwrap_err();
    let Some(WatchEvent::Error(status)) = err.last_event() else { panic!("{err:?}") };
    assert!(matches!(err, UntilError::WatchClosed { .. }), "{err:?}");
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert_eq!(seen, 1);
}

#[tokio::test]
async fn until_with_sync_waits_for_an_object_to_reach_a_state() {
    let server = ApiServer::builder().start().await.unwrap();
    let c = client(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    api.create(&PostParams::default(), &configmap("slow")).await.unwrap();
    let lw =
        || KubeListerWatcher::<ConfigMap>::new(c.clone(), Some("default")).field_selector("metadata.name=settings");
    let is_fast = |e: &WatchEvent<ConfigMap>| match e {
        WatchEvent::Added(o) | WatchEvent::Modified(o) => mode(o) == "fast",
        _ => false,
    };

    // Already so: the precondition ends the wait on the synced cache.
    let slow: Precondition<ConfigMap> = Box::new(|cache| Ok(cache.list().iter().any(|o| mode(o) == "slow")));
    let out = until_with_sync(&CancellationToken::new(), lw(), Some(slow), vec![]).await.unwrap();
    assert!(out.is_none());

    // Not yet: the changes another client makes once the object is listed end it.
    let fast: Precondition<ConfigMap> = Box::new(|cache| Ok(cache.list().iter().any(|o| mode(o) == "fast")));
    let mut seen = Vec::new();
    let mut writer = None;
    let condition: Condition<ConfigMap> = Box::new(|e| {
        let (WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) = e else { panic!("{e:?}") };
        seen.push(mode(o));
        if writer.is_none() {
            let api = api.clone();
            writer = Some(tokio::spawn(async move {
                set_mode(&api, "medium").await;
                set_mode(&api, "fast").await;
            }));
        }
        Ok(is_fast(e))
    });
    let cancel = CancellationToken::new();
    let out = until_with_sync(&cancel, lw(), Some(fast), vec![condition]).await;
    let Some(WatchEvent::Modified(o)) = out.unwrap() else { panic!("no change") };
    assert_eq!(mode(&o), "fast");
    assert_eq!(seen, ["slow", "medium", "fast"]);
    writer.unwrap().await.unwrap();
}

#[tokio::test]
async fn retry_on_conflict_redoes_a_write_that_raced_another_writer() {
    let server = ApiServer::builder().start().await.unwrap();
    let c = client(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    api.create(&PostParams::default(), &configmap("slow")).await.unwrap();

    let mut runs = 0;
    let written = retry_on_conflict(DEFAULT_RETRY, || {
        runs += 1;
        let first = runs == 1;
        let api = api.clone();
        async move {
            let mut cm = api.get("settings").await?;
            if first {
                // Another writer changes the object between this read and this write.
                let mut other = cm.clone();
                other.metadata.labels = Some(BTreeMap::from([("owner".to_string(), "other".to_string())]));
                api.replace("settings", &PostParams::default(), &other).await?;
            }
            cm.data = configmap("fast").data;
            api.replace("settings", &PostParams::default(), &cm).await
        }
    })
    .await
    .unwrap();
    assert_eq!(runs, 2);
    assert_eq!(written.data, configmap("fast").data);
    assert_eq!(written.metadata.labels.unwrap()["owner"], "other", "the second run read the other writer's change");

    // Any other error is returned at once.
    let mut runs = 0;
    let err = retry_on_conflict(DEFAULT_RETRY, || {
        runs += 1;
        let api = api.clone();
        async move { api.get("missing").await }
    })
    .await
    .unwrap_err();
    assert!(matches!(&err, kube::Error::Api(s) if s.code == 404), "{err:?}");
    assert_eq!(runs, 1);

    // An AlreadyExists is a 409 too, and no conflict.
    let mut runs = 0;
    let err = retry_on_conflict(DEFAULT_RETRY, || {
        runs += 1;
        let api = api.clone();
        async move { api.create(&PostParams::default(), &configmap("again")).await }
    })
    .await
    .unwrap_err();
    assert!(matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists"), "{err:?}");
    assert_eq!(runs, 1);
}
