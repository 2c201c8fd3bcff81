//! core/v1 events recorded over HTTP against the embedded API server with a `kube::Client`
//! sink, as client-go's `tools/record` writes them: the Event the first occurrence creates (and
//! the same through events.k8s.io/v1), the count a repeat patches in, an Event deleted meanwhile
//! created again with its count, the aggregate that ten different messages make, and what
//! shutdown has written when it returns; and a leader's terms recorded on its Lease as
//! client-go's lock records them.

mod common;

use std::collections::BTreeMap;

use common::client;
use futures_util::{StreamExt, TryStreamExt};
use informer::events::EventType;
use informer::leader_election::{LeaderElectionConfig, LeaseLock};
use informer::record::EventBroadcaster;
use informer_apiserver::ApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Event, EventSource};
use kube::Resource;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};

type Watch = futures_util::stream::BoxStream<'static, kube::Result<WatchEvent<Event>>>;

/// The watch's next change (bookmarks skipped).
async fn next(watch: &mut Watch) -> WatchEvent<Event> {
    loop {
        match watch.try_next().await.unwrap() {
            Some(WatchEvent::Bookmark(_)) => continue,
            Some(other) => return other,
            None => panic!("the watch ended"),
        }
    }
}

fn source() -> EventSource {
    EventSource { component: Some("example-controller".into()), host: Some("node-1".into()) }
}

#[tokio::test]
async fn repeats_are_counted_on_one_event_and_floods_aggregated() {
    let server = ApiServer::builder().start().await.unwrap();
    let c = client(&server).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let cm = ConfigMap {
        metadata: kube::api::ObjectMeta { name: Some("settings".into()), ..Default::default() },
        ..Default::default()
    };
    let cm = configmaps.create(&PostParams::default(), &cm).await.unwrap();
    let events: Api<Event> = Api::namespaced(c.clone(), "default");
    let mut watch: Watch = events.watch(&WatchParams::default(), "0").await.unwrap().boxed();

    let broadcaster = EventBroadcaster::new(c.clone());
    let recorder = broadcaster.new_recorder(source());
    let reference = cm.object_ref(&());
    let annotations = BTreeMap::from([("example.com/attempt".to_string(), "1".to_string())]);
    recorder.annotated_event(&reference, annotations.clone(), EventType::Warning, "Invalid", "key \"mode\" is missing");
    let WatchEvent::Added(first) = next(&mut watch).await else { panic!("no event created") };
    let name = first.metadata.name.clone().unwrap();
    assert!(name.starts_with("settings."), "{name}");
    assert_eq!(first.metadata.annotations.as_ref(), Some(&annotations));
    assert_eq!(first.involved_object, reference);
    assert_eq!(
        (first.count, first.type_.as_deref(), first.reason.as_deref()),
        (Some(1), Some("Warning"), Some("Invalid"))
    );
    assert_eq!(first.message.as_deref(), Some("key \"mode\" is missing"));
    assert_eq!(first.source, Some(source()));
    assert_eq!(first.reporting_component.as_deref(), Some("example-controller"));
    assert_eq!(first.reporting_instance.as_deref(), Some("node-1"));
    assert_eq!(first.first_timestamp, first.last_timestamp);
    // The same Event through events.k8s.io/v1.
    let new_api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(c.clone(), "default");
    let seen = new_api.get(&name).await.unwrap();
    assert_eq!((seen.deprecated_count, seen.reason.as_deref()), (Some(1), Some("Invalid")));

    // A repeat patches the count on the same Event.
    recorder.event(&reference, EventType::Warning, "Invalid", "key \"mode\" is missing");
    let WatchEvent::Modified(second) = next(&mut watch).await else { panic!("no count") };
    assert_eq!((second.metadata.name.as_deref(), second.count), (Some(name.as_str()), Some(2)));
    assert_eq!(second.first_timestamp, first.first_timestamp);

    // Deleted meanwhile, it is created again with its count.
    events.delete(&name, &DeleteParams::default()).await.unwrap();
    let WatchEvent::Deleted(_) = next(&mut watch).await else { panic!("not deleted") };
    recorder.event(&reference, EventType::Warning, "Invalid", "key \"mode\" is missing");
    let WatchEvent::Added(again) = next(&mut watch).await else { panic!("not created again") };
    assert_eq!((again.metadata.name.as_deref(), again.count), (Some(name.as_str()), Some(3)));

    // Ten different messages for one reason: the tenth is an aggregate, the next counts on it.
    for i in 0..11 {
        recorder.event(&reference, EventType::Normal, "Retry", format!("attempt {i}"));
    }
    let mut messages = Vec::new();
    let mut aggregate = None;
    while aggregate.as_ref().is_none_or(|e: &Event| e.count != Some(2)) {
        match next(&mut watch).await {
            WatchEvent::Added(e) => messages.push(e.message.clone().unwrap()),
            WatchEvent::Modified(e) => aggregate = Some(e),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(messages.len(), 10, "{messages:?}");
    assert_eq!(messages[..9], (0..9).map(|i| format!("attempt {i}")).collect::<Vec<_>>()[..]);
    assert_eq!(messages[9], "(combined from similar events): attempt 9");
    assert_eq!(aggregate.unwrap().message.as_deref(), Some("(combined from similar events): attempt 10"));

    // By the time shutdown returns, everything recorded is written.
    recorder.event(&reference, EventType::Normal, "Done", "finished");
    broadcaster.shutdown().await;
    let reasons: Vec<String> =
        events.list(&ListParams::default()).await.unwrap().items.into_iter().filter_map(|e| e.reason).collect();
    assert!(reasons.contains(&"Done".to_string()), "{reasons:?}");
}

#[tokio::test]
async fn a_leaders_terms_are_recorded_on_its_lease_as_client_go_records_them() {
    let server = ApiServer::builder().start().await.unwrap();
    let c = client(&server).await;
    let broadcaster = EventBroadcaster::new(c.clone());
    let source = EventSource { component: Some("example-operator".into()), host: Some("node-1".into()) };
    let config = LeaderElectionConfig::new(LeaseLock::new(c.clone(), "default", "lock"), "e1")
        .release_on_cancel(true)
        .event_recorder(broadcaster.new_recorder(source));
    common::lead_one_term(config).await;
    broadcaster.shutdown().await;

    let events: Api<Event> = Api::namespaced(c, "default");
    let mut recorded: Vec<Event> = events.list(&ListParams::default()).await.unwrap().items;
    recorded.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let messages: Vec<_> = recorded.iter().map(|e| e.message.as_deref().unwrap_or_default()).collect();
    assert_eq!(messages, ["e1 became leader", "e1 stopped leading"]);
    for e in &recorded {
        assert_eq!(
            (e.type_.as_deref(), e.reason.as_deref(), e.count),
            (Some("Normal"), Some("LeaderElection"), Some(1))
        );
        let lease = &e.involved_object;
        assert_eq!((lease.kind.as_deref(), lease.name.as_deref()), (Some("Lease"), Some("lock")));
        assert!(lease.uid.is_some() && e.metadata.name.as_deref().unwrap().starts_with("lock."));
        assert_eq!(e.source.as_ref().and_then(|s| s.component.as_deref()), Some("example-operator"));
    }
}
