//! client-go's `tools/watch` over scripted watch answers, under a paused clock: the
//! RetryWatcher's reopening (at the last event's or bookmark's resourceVersion, at most once a
//! second from the previous start, after an ERROR event's `retryAfterSeconds`), what ends it
//! (410, 401/403 at opening, an event without a resourceVersion) and what does not (other
//! errors, ended or broken watches); the conditions of `until_without_retry` in order, and how a
//! wait ends; `until_with_sync`'s precondition and events from an informer.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FusedStream;
use informer::fake::FakeSource;
use informer::listwatch::{
    Error, ListOptions, ListerWatcher, ObjectList, Status, StatusDetails, TransportFailure, WatchEvent, WatchStream,
};
use informer::watch_tools::{Condition, Precondition, RetryWatcher, UntilError, until_with_sync, until_without_retry};
use informer::{CancellationToken, Object};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;
use tokio::time::Instant;

/// One step of a scripted watch.
enum Step {
    Event(WatchEvent<ConfigMap>),
    Fail(Error),
    Sleep(Duration),
}

/// A watch request's scripted answer.
enum Answer {
    Stream(Vec<Step>),
    Refuse(Error),
}

/// Answers watch requests from a script (then a watch that never ends), and records when and
/// at which resourceVersion each was made.
#[derive(Clone)]
struct Scripted {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    calls: Arc<Mutex<Vec<(ListOptions, Duration)>>>,
    start: Instant,
}

impl Scripted {
    fn new(answers: Vec<Answer>) -> Self {
        Scripted { answers: Arc::new(Mutex::new(answers.into())), calls: Arc::default(), start: Instant::now() }
    }

    /// (resourceVersion, milliseconds since the start) of every watch request.
    fn calls(&self) -> Vec<(String, u128)> {
        let calls = self.calls.lock().unwrap();
        calls.iter().map(|(o, t)| (o.resource_version.clone().unwrap_or_default(), t.as_millis())).collect()
    }
}

impl ListerWatcher<ConfigMap> for Scripted {
    async fn list(&self, _: &ListOptions) -> Result<ObjectList<ConfigMap>, Error> {
        unreachable!("a RetryWatcher never lists")
    }

    async fn watch(&self, opts: &ListOptions) -> Result<WatchStream<ConfigMap>, Error> {
        assert!(opts.allow_watch_bookmarks, "bookmarks are asked for");
        self.calls.lock().unwrap().push((opts.clone(), self.start.elapsed()));
        let steps = match self.answers.lock().unwrap().pop_front() {
            None => return Ok(futures_util::stream::pending().boxed()),
            Some(Answer::Refuse(e)) => return Err(e),
            Some(Answer::Stream(steps)) => steps,
        };
        let stream = futures_util::stream::unfold(VecDeque::from(steps), |mut steps| async move {
            loop {
                match steps.pop_front()? {
                    Step::Sleep(d) => tokio::time::sleep(d).await,
                    Step::Event(e) => return Some((Ok(e), steps)),
                    Step::Fail(e) => return Some((Err(e), steps)),
                }
            }
        });
        Ok(stream.boxed())
    }
}

fn cm(rv: &str) -> Object<ConfigMap> {
    let json = json!({"metadata": {"name": "settings", "namespace": "ns", "resourceVersion": rv}});
    Object::from_json(serde_json::to_vec(&json).unwrap()).unwrap()
}

fn status(code: u16, reason: &str, retry_after_seconds: Option<u32>) -> Status {
    Status {
        status: "Failure".into(),
        message: format!("{reason} happened"),
        reason: reason.into(),
        code,
        details: retry_after_seconds.map(|s| StatusDetails { causes: vec![], retry_after_seconds: Some(s) }),
    }
}

fn bookmark(rv: &str) -> WatchEvent<ConfigMap> {
    WatchEvent::Bookmark { resource_version: rv.into(), initial_events_end: false }
}

/// (type, resourceVersion) of an event, or (type, code) of an ERROR.
fn describe(e: &WatchEvent<ConfigMap>) -> (String, String) {
    match e {
        WatchEvent::Added(o) => ("ADDED".into(), o.resource_version().unwrap_or_default().into()),
        WatchEvent::Modified(o) => ("MODIFIED".into(), o.resource_version().unwrap_or_default().into()),
        WatchEvent::Deleted(o) => ("DELETED".into(), o.resource_version().unwrap_or_default().into()),
        WatchEvent::Bookmark { resource_version, .. } => ("BOOKMARK".into(), resource_version.clone()),
        WatchEvent::Error(s) => ("ERROR".into(), s.code.to_string()),
    }
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn an_initial_resource_version_of_nothing_or_zero_is_refused() {
    for rv in ["", "0"] {
        let err = RetryWatcher::<ConfigMap>::new(Scripted::new(vec![]), rv).err().expect("refused");
        assert_eq!(err.to_string(), format!("initial RV {rv:?} is not supported due to issues with underlying WATCH"));
    }
}

#[tokio::test(start_paused = true)]
async fn watches_reopen_at_the_last_event_or_bookmark_at_most_once_a_second() {
    let lw = Scripted::new(vec![
        Answer::Stream(vec![Step::Event(WatchEvent::Added(cm("5"))), Step::Event(bookmark("7"))]),
        Answer::Stream(vec![
            Step::Sleep(Duration::from_millis(1500)),
            Step::Event(WatchEvent::Modified(cm("8"))),
            Step::Fail(Error::Transport { failure: TransportFailure::ConnectionLost, message: "reset".into() }),
        ]),
        Answer::Refuse(Error::Decode("garbled answer".into())),
        Answer::Stream(vec![Step::Event(WatchEvent::Deleted(cm("9")))]),
    ]);
    let mut watcher = RetryWatcher::new(lw.clone(), "3").unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(describe(&watcher.next().await.unwrap()));
    }
    assert_eq!(seen, pairs(&[("ADDED", "5"), ("MODIFIED", "8"), ("DELETED", "9")]));
    // The second watch starts a second after the first; the third as soon as the second broke
    // (more than a second after its start); the fourth a second after the third.
    let calls = lw.calls();
    assert_eq!(calls, [("3".into(), 0), ("7".into(), 1000), ("8".into(), 2500), ("8".into(), 3500)]);
}

#[tokio::test(start_paused = true)]
async fn an_error_event_reopens_after_its_retry_after_and_a_410_ends_the_stream() {
    let lw = Scripted::new(vec![
        Answer::Stream(vec![
            Step::Event(WatchEvent::Added(cm("5"))),
            Step::Event(WatchEvent::Error(status(500, "InternalError", Some(4)))),
        ]),
        Answer::Stream(vec![Step::Event(WatchEvent::Error(status(504, "Timeout", None)))]),
        Answer::Stream(vec![Step::Event(WatchEvent::Error(status(410, "Expired", None)))]),
        Answer::Stream(vec![Step::Event(WatchEvent::Added(cm("6")))]),
    ]);
    let mut watcher = RetryWatcher::new(lw.clone(), "3").unwrap();
    let mut seen = Vec::new();
    while let Some(e) = watcher.next().await {
        seen.push(describe(&e));
    }
    assert_eq!(seen, pairs(&[("ADDED", "5"), ("ERROR", "410")]));
    assert_eq!(lw.calls(), [("3".into(), 0), ("5".into(), 4000), ("5".into(), 5000)]);
}

#[tokio::test(start_paused = true)]
async fn forbidden_or_unauthenticated_at_opening_ends_the_stream_other_refusals_are_retried() {
    for code in [401, 403] {
        let lw = Scripted::new(vec![
            Answer::Refuse(Error::api(status(500, "InternalError", None))),
            Answer::Refuse(Error::Transport {
                failure: TransportFailure::ConnectionRefused,
                message: "refused".into(),
            }),
            Answer::Refuse(Error::api(status(code, "Forbidden", None))),
        ]);
        let mut watcher = RetryWatcher::new(lw.clone(), "3").unwrap();
        let mut seen = Vec::new();
        while let Some(e) = watcher.next().await {
            seen.push(describe(&e));
        }
        assert_eq!(seen, pairs(&[("ERROR", &code.to_string())]));
        assert_eq!(lw.calls(), [("3".into(), 0), ("3".into(), 1000), ("3".into(), 2000)]);
    }
}

#[tokio::test(start_paused = true)]
async fn a_410_answer_to_the_request_or_error_of_the_stream_ends_it_as_the_error_event_does() {
    let lw = Scripted::new(vec![Answer::Refuse(Error::api(status(410, "Expired", None)))]);
    let events: Vec<_> = RetryWatcher::new(lw.clone(), "3").unwrap().collect().await;
    assert_eq!(events.iter().map(describe).collect::<Vec<_>>(), pairs(&[("ERROR", "410")]));
    assert_eq!(lw.calls().len(), 1);

    let lw = Scripted::new(vec![Answer::Stream(vec![
        Step::Event(WatchEvent::Added(cm("5"))),
        Step::Fail(Error::api(status(410, "Expired", None))),
    ])]);
    let mut watcher = RetryWatcher::new(lw.clone(), "3").unwrap();
    let mut events = Vec::new();
    while let Some(e) = watcher.next().await {
        events.push(describe(&e));
    }
    assert_eq!(events, pairs(&[("ADDED", "5"), ("ERROR", "410")]));
    // An ended watcher stays ended.
    assert!(watcher.is_terminated() && watcher.next().await.is_none());
    assert_eq!(lw.calls().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_refusal_with_retry_after_is_retried_after_it() {
    let lw = Scripted::new(vec![
        Answer::Refuse(Error::api(status(429, "TooManyRequests", Some(7)))),
        Answer::Stream(vec![Step::Event(WatchEvent::Added(cm("5")))]),
    ]);
    let mut watcher = RetryWatcher::new(lw.clone(), "3").unwrap();
    assert_eq!(describe(&watcher.next().await.unwrap()), ("ADDED".into(), "5".into()));
    assert_eq!(lw.calls(), [("3".into(), 0), ("3".into(), 7000)]);
}

#[test]
fn the_waits_can_be_spawned() {
    fn send<T: Send>(_: &T) {}
    let cancel = CancellationToken::new();
    let lw = Scripted::new(vec![]);
    send(&RetryWatcher::new(lw.clone(), "3").unwrap());
    send(&informer::watch_tools::until(&cancel, "3", lw.clone(), vec![is("ADDED", "1")]));
    send(&until_with_sync(&cancel, FakeSource::new(), None, vec![is("ADDED", "1")]));
    send(&until_without_retry(&cancel, futures_util::stream::empty::<WatchEvent<ConfigMap>>(), vec![]));
}

#[tokio::test(start_paused = true)]
async fn an_event_without_a_resource_version_ends_with_an_internal_error() {
    let no_rv = Object::from_json(br#"{"metadata":{"name":"a","namespace":"ns"}}"#).unwrap();
    for event in [WatchEvent::Modified(no_rv), bookmark("")] {
        let lw = Scripted::new(vec![Answer::Stream(vec![Step::Event(WatchEvent::Added(cm("5"))), Step::Event(event)])]);
        let events: Vec<_> = RetryWatcher::new(lw.clone(), "3").unwrap().collect().await;
        assert_eq!(events.iter().map(describe).collect::<Vec<_>>(), pairs(&[("ADDED", "5"), ("ERROR", "500")]));
        let WatchEvent::Error(s) = &events[1] else { unreachable!() };
        assert_eq!(s.reason, "InternalError");
        assert!(s.message.starts_with("Internal error occurred: retryWatcher: "), "{}", s.message);
        assert_eq!(lw.calls().len(), 1);
    }
}

fn is(kind: &'static str, rv: &'static str) -> Condition<'static, ConfigMap> {
    Box::new(move |e| Ok(describe(e) == (kind.to_string(), rv.to_string())))
}

#[tokio::test]
async fn conditions_hold_in_turn_and_the_next_sees_the_event_that_satisfied_the_last() {
    let events = || {
        futures_util::stream::iter(vec![
            WatchEvent::Added(cm("1")),
            WatchEvent::Modified(cm("2")),
            WatchEvent::Modified(cm("3")),
            WatchEvent::Deleted(cm("4")),
        ])
    };
    let cancel = CancellationToken::new();
    let modified: Condition<ConfigMap> = Box::new(|e| Ok(matches!(e, WatchEvent::Modified(_))));
    let last =
        until_without_retry(&cancel, events(), vec![is("MODIFIED", "2"), modified, is("DELETED", "4")]).await.unwrap();
    assert_eq!(describe(&last.unwrap()), ("DELETED".into(), "4".into()));

    // The second condition holds on the event that satisfied the first: no further event read.
    let mut checked = Vec::new();
    let record: Condition<ConfigMap> = Box::new(|e| {
        checked.push(describe(e).1);
        Ok(true)
    });
    let last = until_without_retry(&cancel, events(), vec![is("MODIFIED", "2"), record]).await.unwrap();
    assert_eq!(describe(&last.unwrap()).1, "2");
    assert_eq!(checked, ["2"]);

    assert!(until_without_retry(&cancel, events(), vec![]).await.unwrap().is_none());
}

#[tokio::test]
async fn a_wait_ends_with_the_last_event_when_the_watch_closes_a_condition_fails_or_it_is_cancelled() {
    let events = futures_util::stream::iter(vec![WatchEvent::Added(cm("1"))]);
    let err = until_without_retry(&CancellationToken::new(), events, vec![is("DELETED", "9")]).await.unwrap_err();
    assert!(matches!(err, UntilError::WatchClosed { .. }), "{err:?}");
    assert_eq!(err.to_string(), "watch closed before UntilWithoutRetry timeout");
    assert_eq!(describe(err.last_event().unwrap()).1, "1");

    let events = futures_util::stream::iter(vec![WatchEvent::Added(cm("1")), WatchEvent::Added(cm("2"))]);
    let failing: Condition<ConfigMap> = Box::new(|e| match describe(e).1.as_str() {
        "2" => Err("the object is malformed".into()),
        _ => Ok(false),
    });
    let err = until_without_retry(&CancellationToken::new(), events, vec![failing]).await.unwrap_err();
    assert_eq!(err.to_string(), "the object is malformed");
    assert_eq!(describe(err.last_event().unwrap()).1, "2");

    let cancel = CancellationToken::new();
    let events = futures_util::stream::iter(vec![WatchEvent::Added(cm("1"))]).chain(futures_util::stream::pending());
    let waiting = until_without_retry(&cancel, events, vec![is("DELETED", "9")]);
    let (err, ()) = tokio::join!(waiting, async { cancel.cancel() });
    let err = err.unwrap_err();
    assert!(matches!(err, UntilError::Interrupted { .. }), "{err:?}");
    assert_eq!(describe(err.last_event().unwrap()).1, "1");
}

#[tokio::test]
async fn until_with_sync_checks_the_synced_cache_then_waits_on_the_informers_events() {
    let source = FakeSource::new();
    source.add(json!({"metadata": {"name": "settings", "namespace": "ns"}, "data": {"mode": "slow"}}));
    let cancel = CancellationToken::new();

    // The precondition sees the listed object and ends the wait before any event.
    let present: Precondition<ConfigMap> = Box::new(|cache| Ok(cache.get_by_key("ns/settings").is_some()));
    let out = until_with_sync(&cancel, source.clone(), Some(present), vec![is("DELETED", "x")]).await.unwrap();
    assert!(out.is_none());

    // Otherwise the conditions see ADDED for the listed object, then the changes (made here
    // once the listed object has been seen).
    let absent: Precondition<ConfigMap> = Box::new(|cache| Ok(cache.get_by_key("ns/other").is_some()));
    let mut added = None;
    let listed: Condition<ConfigMap> = Box::new(|e| {
        added = Some(describe(e));
        source.modify(json!({"metadata": {"name": "settings", "namespace": "ns"}, "data": {"mode": "fast"}}));
        source.delete(json!({"metadata": {"name": "settings", "namespace": "ns"}}));
        Ok(true)
    });
    let fast: Condition<ConfigMap> = Box::new(|e| match e {
        WatchEvent::Added(o) | WatchEvent::Modified(o) => {
            Ok(o.decode()?.data.and_then(|d| d.get("mode").cloned()).as_deref() == Some("fast"))
        }
        _ => Ok(false),
    });
    let gone: Condition<ConfigMap> = Box::new(|e| Ok(matches!(e, WatchEvent::Deleted(_))));
    let out = until_with_sync(&cancel, source.clone(), Some(absent), vec![listed, fast, gone]).await;
    assert_eq!(describe(&out.unwrap().unwrap()), ("DELETED".to_string(), "3".to_string()));
    assert_eq!(added, Some(("ADDED".to_string(), "1".to_string())));

    // Cancelled while the cache cannot sync: NotSynced.
    let cancel = CancellationToken::new();
    source.set_list_error(Some(Error::api(status(500, "InternalError", None))));
    let never: Precondition<ConfigMap> = Box::new(|_| Ok(true));
    let waiting = until_with_sync(&cancel, source.clone(), Some(never), vec![]);
    let (out, ()) = tokio::join!(waiting, async { cancel.cancel() });
    assert!(matches!(out, Err(UntilError::NotSynced)), "{out:?}");
}
