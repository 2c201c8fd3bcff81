//! Custom resources end to end over HTTP against the embedded API server: a kind derived with
//! kube's `CustomResource` macro, its generated CustomResourceDefinition installed through the
//! API, then this crate's `SharedIndexInformer` and `ControllerRunner` and kube-runtime's
//! `watcher` on it.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::client;
use futures_util::{StreamExt, TryStreamExt};
use informer::runner::{Action, ControllerRunner};
use informer::{KubeListerWatcher, Object, SharedIndexInformer};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(30);

/// A gadget: how many replicas it wants.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "demo.example.org",
    version = "v1",
    kind = "Gadget",
    namespaced,
    status = "GadgetStatus",
    shortname = "gd"
)]
#[kube(printcolumn = r#"{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}"#)]
pub struct GadgetSpec {
    /// The replicas wanted.
    replicas: i32,
    /// How it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mode: Option<String>,
}

/// What the controller saw.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GadgetStatus {
    /// The replicas ready.
    ready: i32,
}

fn gadget(name: &str, replicas: i32) -> Gadget {
    let mut g = Gadget::new(name, GadgetSpec { replicas, mode: None });
    g.metadata.namespace = Some("default".into());
    g
}

#[tokio::test]
async fn derived_kind_with_informer_runner_and_kube_runtime_watcher() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    let c = client(&server).await;
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.create(&PostParams::default(), &Gadget::crd()).await.unwrap();
    let established = await_condition(crds.clone(), "gadgets.demo.example.org", conditions::is_crd_established());
    tokio::time::timeout(LIMIT, established).await.expect("established in time").unwrap();

    let gadgets: Api<Gadget> = Api::namespaced(c.clone(), "default");
    for (n, r) in [("a", 1), ("b", 2)] {
        gadgets.create(&PostParams::default(), &gadget(n, r)).await.unwrap();
    }

    // kube-runtime's watcher (streaming list) sees the objects and, later, their status.
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel::<Gadget>();
    let watch = tokio::spawn({
        let api = gadgets.clone();
        async move {
            let mut s = watcher(api, watcher::Config::default().streaming_lists()).applied_objects().boxed();
            while let Ok(Some(g)) = s.try_next().await {
                if seen_tx.send(g).is_err() {
                    return;
                }
            }
        }
    });

    // The controller: status.ready follows spec.replicas.
    let informer =
        SharedIndexInformer::<Gadget>::new(KubeListerWatcher::new(c.clone(), Some("default")), Duration::ZERO);
    let (tx, mut rx) = mpsc::unbounded_channel::<(String, Option<i32>)>();
    let runner = ControllerRunner::builder("gadgets")
        .informer(&informer)
        .workers(2)
        .build({
            let gadgets = gadgets.clone();
            move |key, g: Option<Object<Gadget>>| {
                let (gadgets, tx) = (gadgets.clone(), tx.clone());
                async move {
                    let Some(g) = g else {
                        let _ = tx.send((key.to_string(), None));
                        return Ok(Action::Done);
                    };
                    let g = g.get().map_err(|e| e.to_string())?;
                    let want = g.spec.replicas;
                    if g.status.as_ref().map(|s| s.ready) != Some(want) {
                        let patch = Patch::Merge(serde_json::json!({"status": {"ready": want}}));
                        gadgets
                            .patch_status(&g.name_any(), &PatchParams::default(), &patch)
                            .await
                            .map_err(|e| e.to_string())?;
                    }
                    let _ = tx.send((key.to_string(), Some(want)));
                    Ok::<_, String>(Action::Done)
                }
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

    // Every gadget reaches its wanted status, as kube-runtime's watcher shows.
    let mut ready: BTreeMap<String, i32> = BTreeMap::new();
    while ready != BTreeMap::from([("a".to_string(), 1), ("b".to_string(), 2)]) {
        let g = tokio::time::timeout(LIMIT, seen_rx.recv()).await.expect("watcher event in time").unwrap();
        if let Some(s) = &g.status {
            ready.insert(g.name_any(), s.ready);
        }
    }
    assert_eq!(informer.indexer().list().len(), 2);

    // A change and a deletion reach the controller.
    gadgets
        .patch("a", &PatchParams::default(), &Patch::Merge(serde_json::json!({"spec": {"replicas": 3}})))
        .await
        .unwrap();
    gadgets.delete("b", &DeleteParams::default()).await.unwrap();
    let mut wanted = vec![("default/a".to_string(), Some(3)), ("default/b".to_string(), None)];
    while !wanted.is_empty() {
        let got = tokio::time::timeout(LIMIT, rx.recv()).await.expect("reconcile in time").unwrap();
        wanted.retain(|w| *w != got);
    }
    let a = gadgets.get("a").await.unwrap();
    assert_eq!(a.status, Some(GadgetStatus { ready: 3 }));
    assert_eq!(a.metadata.generation, Some(2), "the spec change moved the generation, the status writes did not");

    cancel.cancel();
    run.await.unwrap().unwrap();
    inf.await.unwrap();
    watch.abort();
}

/// Where a fetcher takes its data from: one of two sources, each with its own fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// A git repository.
    Git {
        /// Its URL.
        url: String,
    },
    /// A container image.
    Image {
        /// Its reference.
        name: String,
    },
}

/// A fetcher: a kind whose spec holds an enum with data, which kube's derive writes as a
/// `oneOf` of the variants' required fields.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(group = "demo.example.org", version = "v1", kind = "Fetcher", namespaced)]
pub struct FetcherSpec {
    /// What it fetches.
    source: Source,
}

#[tokio::test]
async fn a_derived_enum_with_data_takes_exactly_one_variant() {
    let server = informer_apiserver::testing::builder().start().await.unwrap();
    let c = client(&server).await;
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    let crd = Fetcher::crd();
    let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
    let source = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["source"];
    assert!(source["oneOf"].is_array(), "{source}");
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let established = await_condition(crds.clone(), "fetchers.demo.example.org", conditions::is_crd_established());
    tokio::time::timeout(LIMIT, established).await.expect("established in time").unwrap();

    let fetchers: Api<Fetcher> = Api::namespaced(c.clone(), "default");
    let git = Fetcher::new("git", FetcherSpec { source: Source::Git { url: "https://example.org/r".into() } });
    fetchers.create(&PostParams::default(), &git).await.unwrap();

    let ar = kube::api::ApiResource::erase::<Fetcher>(&());
    let raw: Api<kube::api::DynamicObject> = Api::namespaced_with(c, "default", &ar);
    let both = refused(&raw, &ar, "both", serde_json::json!({"git": {"url": "u"}, "image": {"name": "n"}})).await;
    assert_eq!(both.code, 422);
    assert_eq!(
        both.message,
        "Fetcher.demo.example.org \"both\" is invalid: <nil>: Invalid value: \"\": \"spec.source\" must validate \
         one and only one schema (oneOf). Found 2 valid alternatives"
    );
    let neither = refused(&raw, &ar, "neither", serde_json::json!({})).await;
    assert_eq!(neither.code, 422);
    assert!(
        neither.message.contains("\"spec.source\" must validate one and only one schema (oneOf). Found none valid"),
        "{}",
        neither.message
    );
    assert!(neither.message.contains("spec.source.git: Required value"), "{}", neither.message);
    assert_eq!(fetchers.list(&Default::default()).await.unwrap().items.len(), 1);
}

/// The Status of a refused create of a fetcher whose spec's source is `source`.
async fn refused(
    api: &Api<kube::api::DynamicObject>,
    ar: &kube::api::ApiResource,
    name: &str,
    source: serde_json::Value,
) -> kube::core::Status {
    let mut obj = kube::api::DynamicObject::new(name, ar);
    obj.data = serde_json::json!({"spec": {"source": source}});
    match api.create(&PostParams::default(), &obj).await {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("{name}: {other:?}"),
    }
}
