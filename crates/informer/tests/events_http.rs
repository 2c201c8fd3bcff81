//! Events recorded over HTTP against the embedded API server with a `kube::Client` sink: what
//! the first occurrence creates (read back through events.k8s.io/v1 and core/v1, as `kubectl get
//! events` reads it), the series a repeat patches in, the count shutdown writes, the namespace of
//! an event about a cluster-scoped object, a refusal that leaves the broadcaster working, and a
//! leader's terms recorded on its Lease as client-go's lock records them.

mod common;

use common::client;
use futures_util::{StreamExt, TryStreamExt};
use informer::events::{EventBroadcaster, EventType};
use informer::leader_election::{LeaderElectionConfig, LeaseLock};
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use kube::Resource;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};

type Watch = futures_util::stream::BoxStream<'static, kube::Result<WatchEvent<Event>>>;

/// The watch's next change (bookmarks skipped).
async fn next(watch: &mut Watch) -> Option<WatchEvent<Event>> {
    loop {
        match watch.try_next().await.unwrap() {
            Some(WatchEvent::Bookmark(_)) => continue,
            other => return other,
        }
    }
}

#[tokio::test]
async fn events_are_created_folded_into_series_and_counted_to_the_end() {
    let server = ApiServer::builder().start().await.unwrap();
    let c = client(&server).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let cm = ConfigMap {
        metadata: kube::api::ObjectMeta { name: Some("settings".into()), ..Default::default() },
        ..Default::default()
    };
    let cm = configmaps.create(&PostParams::default(), &cm).await.unwrap();
    let events: Api<Event> = Api::namespaced(c.clone(), "default");
    let mut watch = events.watch(&WatchParams::default(), "0").await.unwrap().boxed();

    let broadcaster = EventBroadcaster::new(c.clone());
    let recorder = broadcaster.new_recorder("example.com/operator");
    let reference = cm.object_ref(&());
    let record = |note: &str| recorder.eventf(&reference, None, EventType::Warning, "Invalid", "Validate", note);
    record("key \"mode\" is missing");
    let Some(WatchEvent::Added(e)) = next(&mut watch).await else { panic!("no event created") };
    let name = e.metadata.name.clone().unwrap();
    assert!(name.starts_with("settings."), "{name}");
    assert_eq!(e.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(e.regarding.as_ref(), Some(&reference));
    assert_eq!(reference.uid, cm.metadata.uid);
    assert_eq!(
        (e.type_.as_deref(), e.reason.as_deref(), e.action.as_deref(), e.note.as_deref()),
        (Some("Warning"), Some("Invalid"), Some("Validate"), Some("key \"mode\" is missing"))
    );
    assert_eq!(e.reporting_controller.as_deref(), Some("example.com/operator"));
    assert_eq!(e.reporting_instance.as_deref(), Some(recorder.reporting_instance()));
    assert!(recorder.reporting_instance().starts_with("example.com/operator-"));
    assert!(e.event_time.is_some() && e.series.is_none() && e.deprecated_count.is_none());
    // The same event through core/v1, as kubectl reads it.
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(c.clone(), "default");
    let old = core.get(&name).await.unwrap();
    assert_eq!(old.involved_object.name.as_deref(), Some("settings"));
    assert_eq!(old.reporting_component.as_deref(), Some("example.com/operator"));
    assert_eq!(old.message.as_deref(), Some("key \"mode\" is missing"));

    // A repeat makes it a series at once; the next ones are counted.
    record("key \"mode\" is still missing");
    let Some(WatchEvent::Modified(e)) = next(&mut watch).await else { panic!("no series") };
    assert_eq!(e.metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(e.series.as_ref().map(|s| s.count), Some(2));
    assert_eq!(e.note.as_deref(), Some("key \"mode\" is missing"), "the first note stays");
    record("third");
    record("fourth");

    // About a cluster-scoped object: in `default`.
    let namespaces: Api<Namespace> = Api::all(c.clone());
    let ns = namespaces.get("default").await.unwrap();
    recorder.eventf(&ns.object_ref(&()), Some(&reference), EventType::Normal, "Checked", "Check", "ok");
    let Some(WatchEvent::Added(e)) = next(&mut watch).await else { panic!("no event") };
    assert_eq!(e.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(e.related.as_ref(), Some(&reference));

    // A note past the server's 1 KiB is refused (and not retried); the broadcaster goes on.
    recorder.eventf(&reference, None, EventType::Normal, "Long", "Check", "x".repeat(1025));
    recorder.eventf(&reference, None, EventType::Normal, "Short", "Check", "y");
    broadcaster.shutdown().await;

    // Shutdown wrote the count of four.
    assert_eq!(events.get(&name).await.unwrap().series.map(|s| s.count), Some(4));
    let reasons: Vec<String> =
        events.list(&ListParams::default()).await.unwrap().items.into_iter().filter_map(|e| e.reason).collect();
    assert!(reasons.contains(&"Short".to_string()) && !reasons.contains(&"Long".to_string()), "{reasons:?}");
}

#[tokio::test]
async fn a_leaders_terms_are_recorded_on_its_lease() {
    let server = ApiServer::builder().start().await.unwrap();
    let c = client(&server).await;
    let broadcaster = EventBroadcaster::new(c.clone());
    let config = LeaderElectionConfig::new(LeaseLock::new(c.clone(), "default", "lock"), "e1")
        .release_on_cancel(true)
        .event_recorder(broadcaster.new_recorder("example.com/operator"));
    common::lead_one_term(config).await;
    broadcaster.shutdown().await;

    let events: Api<Event> = Api::namespaced(c, "default");
    let mut recorded: Vec<Event> = events.list(&ListParams::default()).await.unwrap().items;
    recorded.sort_by_key(|e| e.event_time.as_ref().map(|t| t.0));
    let notes: Vec<_> = recorded.iter().map(|e| e.note.as_deref().unwrap_or_default()).collect();
    assert_eq!(notes, ["e1 became leader", "e1 stopped leading"]);
    let actions: Vec<_> = recorded.iter().map(|e| e.action.as_deref().unwrap_or_default()).collect();
    assert_eq!(actions, ["BecameLeader", "StoppedLeading"]);
    for e in &recorded {
        assert_eq!((e.type_.as_deref(), e.reason.as_deref()), (Some("Normal"), Some("LeaderElection")));
        let lease = e.regarding.as_ref().unwrap();
        assert_eq!((lease.kind.as_deref(), lease.name.as_deref()), (Some("Lease"), Some("lock")));
        assert!(lease.uid.is_some() && e.metadata.name.as_deref().unwrap().starts_with("lock."));
    }
}
