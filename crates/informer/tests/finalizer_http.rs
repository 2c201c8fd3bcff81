//! A reconcile under a finalizer over HTTP against the embedded API server: the finalizer is
//! added before the first apply, a deletion waits for the cleanup and the finalizer's removal,
//! another controller's finalizer is left alone, and a finalizer list changed meanwhile is not
//! overwritten.

mod common;

use std::time::Duration;

use common::client;
use informer::runner::finalizer::{self, Event, finalizer};
use informer::runner::{Action, ControllerRunner};
use informer::{KubeListerWatcher, Object, SharedIndexInformer};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const NAME: &str = "example.com/cleanup";
const LIMIT: Duration = Duration::from_secs(30);

fn configmap(name: &str, finalizers: &[&str]) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default", "finalizers": finalizers}})
}

async fn next(rx: &mut mpsc::UnboundedReceiver<(String, String)>) -> (String, String) {
    tokio::time::timeout(LIMIT, rx.recv()).await.expect("timed out").expect("closed")
}

#[tokio::test]
async fn a_deletion_waits_for_the_cleanup_under_the_finalizer() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    let kube = client(&server).await;
    let informer =
        SharedIndexInformer::<ConfigMap>::new(KubeListerWatcher::new(kube.clone(), Some("default")), Duration::ZERO);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = ControllerRunner::builder("configmaps")
        .informer(&informer)
        .build(move |_key, cm: Option<Object<ConfigMap>>| {
            let (tx, kube) = (tx.clone(), kube.clone());
            async move {
                let Some(cm) = cm else { return Ok(Action::Done) };
                finalizer(&kube, NAME, cm, |event| async move {
                    let (what, cm) = match &event {
                        Event::Apply(cm) => ("apply", cm),
                        Event::Cleanup(cm) => ("cleanup", cm),
                    };
                    // Every event comes with the finalizer in place.
                    let held = cm.get().unwrap().metadata.finalizers.clone().unwrap_or_default();
                    assert!(held.iter().any(|f| f == NAME), "{what} without the finalizer: {held:?}");
                    let _ = tx.send((what.to_string(), cm.name().to_string()));
                    Ok::<_, String>(Action::Done)
                })
                .await
            }
        })
        .unwrap();
    let cancel = CancellationToken::new();
    let inf = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let run = tokio::spawn({
        let (r, c) = (runner.clone(), cancel.clone());
        async move { r.run(c).await }
    });

    // Created without it: the finalizer comes first, then the apply; another's is kept.
    server.create("configmaps", configmap("a", &["other.example.com/keep"])).await.unwrap();
    assert_eq!(next(&mut rx).await, ("apply".to_string(), "a".to_string()));
    let stored = server.get("configmaps", "default", "a").await.unwrap();
    assert_eq!(stored["metadata"]["finalizers"], json!(["other.example.com/keep", NAME]));

    // Deleted: the cleanup runs, the finalizer goes, the other one holds the object.
    server.delete("configmaps", "default", "a").await.unwrap();
    loop {
        match next(&mut rx).await {
            (what, name) if what == "cleanup" && name == "a" => break,
            (what, name) if what == "apply" && name == "a" => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(client(&server).await, "default");
    let only_other = |cm: Option<&ConfigMap>| {
        cm.is_some_and(|cm| cm.metadata.finalizers.as_deref() == Some(&["other.example.com/keep".to_string()][..]))
    };
    let waited = kube::runtime::wait::await_condition(api.clone(), "a", only_other);
    let stored = tokio::time::timeout(LIMIT, waited).await.expect("the finalizer removed").unwrap().unwrap();
    assert!(stored.metadata.deletion_timestamp.is_some());

    // The last finalizer gone, the object goes.
    let mut released = server.get("configmaps", "default", "a").await.unwrap();
    released["metadata"]["finalizers"] = json!([]);
    server.update("configmaps", released).await.unwrap();
    let uid = stored.metadata.uid.unwrap();
    let gone = kube::runtime::wait::await_condition(api, "a", kube::runtime::wait::conditions::is_deleted(&uid));
    tokio::time::timeout(LIMIT, gone).await.expect("deleted").unwrap();

    cancel.cancel();
    run.await.unwrap().unwrap();
    inf.await.unwrap();
    assert!(rx.try_recv().is_err(), "no apply or cleanup after the cleanup");
}

/// Under an update filter that passes over metadata writes (generation changed), the finalizer's
/// addition is applied at once, and the deletion (which moves the generation) is cleaned up.
#[tokio::test]
async fn a_finalizer_works_under_a_generation_filter() {
    use k8s_openapi::api::apps::v1::Deployment;
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    let kube = client(&server).await;
    let informer =
        SharedIndexInformer::<Deployment>::new(KubeListerWatcher::new(kube.clone(), Some("default")), Duration::ZERO);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let runner = ControllerRunner::builder("deployments")
        .informer_filtered(&informer, informer::runner::generation_changed)
        .build(move |_key, d: Option<Object<Deployment>>| {
            let (tx, kube) = (tx.clone(), kube.clone());
            async move {
                let Some(d) = d else { return Ok(Action::Done) };
                finalizer(&kube, NAME, d, |event| async move {
                    let (what, d) = match &event {
                        Event::Apply(d) => ("apply", d),
                        Event::Cleanup(d) => ("cleanup", d),
                    };
                    let _ = tx.send((what.to_string(), d.name().to_string()));
                    Ok::<_, String>(Action::Done)
                })
                .await
            }
        })
        .unwrap();
    let cancel = CancellationToken::new();
    let inf = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    let run = tokio::spawn({
        let (r, c) = (runner.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    server.create("deployments", deployment).await.unwrap();
    assert_eq!(next(&mut rx).await, ("apply".to_string(), "web".to_string()));
    let stored = server.get("deployments", "default", "web").await.unwrap();
    assert_eq!(stored["metadata"]["finalizers"], json!([NAME]));
    server.delete("deployments", "default", "web").await.unwrap();
    assert_eq!(next(&mut rx).await, ("cleanup".to_string(), "web".to_string()));
    let api: kube::Api<Deployment> = kube::Api::namespaced(client(&server).await, "default");
    let uid = stored["metadata"]["uid"].as_str().unwrap().to_string();
    let gone = kube::runtime::wait::await_condition(api, "web", kube::runtime::wait::conditions::is_deleted(&uid));
    tokio::time::timeout(LIMIT, gone).await.expect("deleted").unwrap();
    cancel.cancel();
    run.await.unwrap().unwrap();
    inf.await.unwrap();
}

#[tokio::test]
async fn a_finalizer_list_changed_meanwhile_is_not_overwritten() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    let kube = client(&server).await;
    server.create("configmaps", configmap("b", &[])).await.unwrap();
    // The object as a reconcile read it, then changed by someone else.
    let read = Object::<ConfigMap>::from_json(
        serde_json::to_vec(&server.get("configmaps", "default", "b").await.unwrap()).unwrap(),
    )
    .unwrap();
    let mut changed = server.get("configmaps", "default", "b").await.unwrap();
    changed["metadata"]["finalizers"] = json!(["other.example.com/keep"]);
    server.update("configmaps", changed).await.unwrap();

    let applied = finalizer(&kube, NAME, read, |_| async { Ok::<_, String>(Action::Done) }).await;
    match applied {
        Err(finalizer::Error::AddFinalizer(name, kube::Error::Api(e))) => {
            assert_eq!((name.as_str(), e.code), (NAME, 409));
        }
        other => panic!("{other:?}"),
    }
    let stored = server.get("configmaps", "default", "b").await.unwrap();
    assert_eq!(stored["metadata"]["finalizers"], json!(["other.example.com/keep"]));

    // Another write between the read and the removal (a label) does not keep the finalizer.
    let mut deleting = server.get("configmaps", "default", "b").await.unwrap();
    deleting["metadata"]["finalizers"] = json!(["other.example.com/keep", NAME]);
    server.update("configmaps", deleting).await.unwrap();
    server.delete("configmaps", "default", "b").await.unwrap();
    let read = Object::<ConfigMap>::from_json(
        serde_json::to_vec(&server.get("configmaps", "default", "b").await.unwrap()).unwrap(),
    )
    .unwrap();
    let mut labelled = server.get("configmaps", "default", "b").await.unwrap();
    labelled["metadata"]["labels"] = json!({"cleaning": "yes"});
    server.update("configmaps", labelled).await.unwrap();
    let done = finalizer(&kube, NAME, read, |_| async { Ok::<_, String>(Action::Done) }).await;
    assert_eq!(done.unwrap(), Action::Done);
    let stored = server.get("configmaps", "default", "b").await.unwrap();
    assert_eq!(stored["metadata"]["finalizers"], json!(["other.example.com/keep"]));
    assert_eq!(stored["metadata"]["labels"], json!({"cleaning": "yes"}));
    let mut released = stored;
    released["metadata"]["finalizers"] = json!([]);
    server.update("configmaps", released).await.unwrap();

    // A failed cleanup keeps the finalizer.
    server.create("configmaps", configmap("b", &[NAME])).await.unwrap();
    server.delete("configmaps", "default", "b").await.unwrap();
    let read = Object::<ConfigMap>::from_json(
        serde_json::to_vec(&server.get("configmaps", "default", "b").await.unwrap()).unwrap(),
    )
    .unwrap();
    let failed = finalizer(&kube, NAME, read.clone(), |_| async { Err::<Action, _>("busy".to_string()) }).await;
    assert_eq!(failed.unwrap_err().to_string(), "cleanup failed: busy");
    assert_eq!(server.get("configmaps", "default", "b").await.unwrap()["metadata"]["finalizers"], json!([NAME]));
    // One that succeeds removes it, and the object goes.
    let done = finalizer(&kube, NAME, read, |e| async move {
        assert!(matches!(e, Event::Cleanup(_)));
        Ok::<_, String>(Action::Done)
    })
    .await;
    assert_eq!(done.unwrap(), Action::Done);
    assert!(server.get("configmaps", "default", "b").await.is_err());
}
