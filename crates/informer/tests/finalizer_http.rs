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

/// A runner over the default namespace's objects of kind `K` whose reconcile, under the
/// finalizer, reports each event (`apply` or `cleanup`, the object's name) — and checks that
/// every event comes with the finalizer in place; `filtered` passes the primary's updates
/// through `generation_changed`.
struct Reporting {
    /// The runner's panicked reconciles (an event without the finalizer panics in it).
    panics: Box<dyn Fn() -> u64 + Send>,
    cancel: CancellationToken,
    informer: tokio::task::JoinHandle<()>,
    runner: tokio::task::JoinHandle<Result<(), informer::runner::RunnerError>>,
    events: mpsc::UnboundedReceiver<(String, String)>,
}

impl Reporting {
    async fn start<K>(server: &informer_apiserver::ApiServer, filtered: bool) -> Reporting
    where
        K: kube::Resource + serde::de::DeserializeOwned + Clone + std::fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Default,
    {
        let kube = client(server).await;
        let informer =
            SharedIndexInformer::<K>::new(KubeListerWatcher::new(kube.clone(), Some("default")), Duration::ZERO);
        let (tx, events) = mpsc::unbounded_channel();
        let builder = ControllerRunner::builder("finalized");
        let builder = if filtered {
            builder.informer_filtered(&informer, informer::runner::generation_changed)
        } else {
            builder.informer(&informer)
        };
        let runner = builder
            .build(move |_key, obj: Option<Object<K>>| {
                let (tx, kube) = (tx.clone(), kube.clone());
                async move {
                    let Some(obj) = obj else { return Ok(Action::Done) };
                    finalizer(&kube, NAME, obj, |event| async move {
                        let (what, obj) = match &event {
                            Event::Apply(o) => ("apply", o),
                            Event::Cleanup(o) => ("cleanup", o),
                        };
                        let held = obj.get().unwrap().meta().finalizers.clone().unwrap_or_default();
                        assert!(held.iter().any(|f| f == NAME), "{what} without the finalizer: {held:?}");
                        let _ = tx.send((what.to_string(), obj.name().to_string()));
                        Ok::<_, String>(Action::Done)
                    })
                    .await
                }
            })
            .unwrap();
        let (cancel, informer) = common::spawn(&informer);
        let panics = Box::new({
            let r = runner.clone();
            move || r.stats().panic
        });
        let runner = tokio::spawn({
            let (r, c) = (runner.clone(), cancel.clone());
            async move { r.run(c).await }
        });
        Reporting { panics, cancel, informer, runner, events }
    }

    async fn next(&mut self) -> (String, String) {
        next(&mut self.events).await
    }

    async fn stop(mut self) {
        self.cancel.cancel();
        self.runner.await.unwrap().unwrap();
        self.informer.await.unwrap();
        assert!(self.events.try_recv().is_err(), "no apply or cleanup after the cleanup");
        assert_eq!((self.panics)(), 0, "every event came with the finalizer in place");
    }
}

#[tokio::test]
async fn a_deletion_waits_for_the_cleanup_under_the_finalizer() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    let mut reporting = Reporting::start::<ConfigMap>(&server, false).await;

    // Created without it: the finalizer comes first, then the apply; another's is kept.
    server.create("configmaps", configmap("a", &["other.example.com/keep"])).await.unwrap();
    assert_eq!(reporting.next().await, ("apply".to_string(), "a".to_string()));
    let stored = server.get("configmaps", "default", "a").await.unwrap();
    assert_eq!(stored["metadata"]["finalizers"], json!(["other.example.com/keep", NAME]));

    // Deleted: the cleanup runs, the finalizer goes, the other one holds the object.
    server.delete("configmaps", "default", "a").await.unwrap();
    loop {
        match reporting.next().await {
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
    reporting.stop().await;
}

/// Under an update filter that passes over metadata writes (generation changed), the finalizer's
/// addition is applied at once, and the deletion (which moves the generation) is cleaned up.
#[tokio::test]
async fn a_finalizer_works_under_a_generation_filter() {
    use k8s_openapi::api::apps::v1::Deployment;
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    let mut reporting = Reporting::start::<Deployment>(&server, true).await;
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    server.create("deployments", deployment).await.unwrap();
    assert_eq!(reporting.next().await, ("apply".to_string(), "web".to_string()));
    let stored = server.get("deployments", "default", "web").await.unwrap();
    assert_eq!(stored["metadata"]["finalizers"], json!([NAME]));
    server.delete("deployments", "default", "web").await.unwrap();
    assert_eq!(reporting.next().await, ("cleanup".to_string(), "web".to_string()));
    let api: kube::Api<Deployment> = kube::Api::namespaced(client(&server).await, "default");
    let uid = stored["metadata"]["uid"].as_str().unwrap().to_string();
    let gone = kube::runtime::wait::await_condition(api, "web", kube::runtime::wait::conditions::is_deleted(&uid));
    tokio::time::timeout(LIMIT, gone).await.expect("deleted").unwrap();
    reporting.stop().await;
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
