//! Waiting until a watch shows what a caller waits for (client-go's `tools/watch` `Until`,
//! `UntilWithoutRetry` and `UntilWithSync`): "until the pod is running", "until the custom
//! resource reports Ready", "until the object is gone".
//!
//! Conditions are checked in order, each on the events that come after the one the previous
//! condition was satisfied by (that event included). The wait ends with the event that satisfied
//! the last condition, or an error that carries the last event seen.
//!
//! Invariants, as client-go's:
//! - [`until_without_retry`] reads one stream (a watch's, through [`watch_events`]): its end
//!   before the last condition holds is [`UntilError::WatchClosed`]; the stream is dropped (the
//!   watch stopped) when the wait ends;
//! - [`until`] reads a [`RetryWatcher`], so watch requests the server ends do not end the wait;
//! - [`until_with_sync`] reads an informer's notifications (ADDED for every object of its list
//!   and for new ones, MODIFIED, DELETED with the last known state; a deletion seen only by a
//!   relist whose last state is unknown to the informer is passed over), so it survives a 410
//!   too; the precondition, when given, sees the synced cache first and can end the wait before
//!   any event; the informer is stopped, and has stopped, when the wait ends;
//! - cancellation ends every wait with [`UntilError::Interrupted`].

use std::time::Duration;

use futures_core::Stream;
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::retry_watcher::{RetryWatcher, UnsupportedResourceVersion};
use crate::listwatch::{Error, ListerWatcher, Status, WatchEvent, WatchStream};
use crate::object::DeletedObject;
use crate::shared_informer::{InformerError, Notification, SharedIndexInformer};
use crate::store::Indexer;

/// An error a condition returns.
pub type ConditionError = Box<dyn std::error::Error + Send + Sync>;

/// Whether an event satisfies what is waited for (client-go's `ConditionFunc`); an error ends
/// the wait.
pub type Condition<'a, K> = Box<dyn FnMut(&WatchEvent<K>) -> Result<bool, ConditionError> + Send + 'a>;

/// Whether the synced cache already satisfies what is waited for (client-go's
/// `PreconditionFunc`); an error ends the wait.
pub type Precondition<'a, K> = Box<dyn FnOnce(&Indexer<K>) -> Result<bool, ConditionError> + Send + 'a>;

/// Why a wait ended before its conditions held.
#[derive(thiserror::Error)]
pub enum UntilError<K> {
    /// The watch ended first (client-go's `ErrWatchClosed`).
    #[error("watch closed before UntilWithoutRetry timeout")]
    WatchClosed {
        /// The last event seen.
        last_event: Option<WatchEvent<K>>,
    },
    /// The wait was cancelled.
    #[error("interrupted")]
    Interrupted {
        /// The last event seen.
        last_event: Option<WatchEvent<K>>,
    },
    /// A condition or the precondition failed.
    #[error("{error}")]
    Condition {
        /// The event the condition failed on (`None` for the precondition).
        last_event: Option<WatchEvent<K>>,
        /// The condition's error.
        error: ConditionError,
    },
    /// The informer's cache did not sync before the wait was cancelled.
    #[error("UntilWithSync: unable to sync caches: cancelled")]
    NotSynced,
    /// The initial resourceVersion cannot start a watch that retries.
    #[error(transparent)]
    UnsupportedResourceVersion(#[from] UnsupportedResourceVersion),
    /// The informer refused the subscription.
    #[error(transparent)]
    Informer(#[from] InformerError),
}

impl<K> std::fmt::Debug for UntilError<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UntilError::WatchClosed { last_event } => {
                f.debug_struct("WatchClosed").field("last_event", last_event).finish()
            }
            UntilError::Interrupted { last_event } => {
                f.debug_struct("Interrupted").field("last_event", last_event).finish()
            }
            UntilError::Condition { last_event, error } => {
                f.debug_struct("Condition").field("last_event", last_event).field("error", error).finish()
            }
            UntilError::NotSynced => f.write_str("NotSynced"),
            UntilError::UnsupportedResourceVersion(e) => f.debug_tuple("UnsupportedResourceVersion").field(e).finish(),
            UntilError::Informer(e) => f.debug_tuple("Informer").field(e).finish(),
        }
    }
}

impl<K> UntilError<K> {
    /// The last event seen before the wait ended, if any.
    pub fn last_event(&self) -> Option<&WatchEvent<K>> {
        match self {
            UntilError::WatchClosed { last_event }
            | UntilError::Interrupted { last_event }
            | UntilError::Condition { last_event, .. } => last_event.as_ref(),
            _ => None,
        }
    }
}

/// Reads `events` until every condition held in turn; returns the event that satisfied the last
/// one (`None` when there are no conditions). The stream is dropped when the wait ends.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use informer::listwatch::WatchEvent;
/// use informer::watch_tools::{Condition, until_without_retry};
/// use informer::{CancellationToken, Object};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let cm = |rv: &str| {
///     let json = format!(r#"{{"metadata":{{"name":"a","namespace":"ns","resourceVersion":"{rv}"}}}}"#);
///     Object::<ConfigMap>::from_json(json.into_bytes()).unwrap()
/// };
/// let events = futures_util::stream::iter([WatchEvent::Added(cm("1")), WatchEvent::Deleted(cm("2"))]);
/// let gone: Condition<ConfigMap> = Box::new(|e| Ok(matches!(e, WatchEvent::Deleted(_))));
/// let last = until_without_retry(&CancellationToken::new(), events, vec![gone]).await.unwrap();
/// assert_eq!(last.unwrap().resource_version(), Some("2"));
/// # });
/// ```
pub async fn until_without_retry<K, S>(
    cancel: &CancellationToken,
    events: S,
    conditions: Vec<Condition<'_, K>>,
) -> Result<Option<WatchEvent<K>>, UntilError<K>>
where
    S: Stream<Item = WatchEvent<K>>,
{
    let mut events = std::pin::pin!(events);
    let mut last_event: Option<WatchEvent<K>> = None;
    for mut condition in conditions {
        if let Some(event) = &last_event {
            match condition(event) {
                Ok(true) => continue,
                Ok(false) => {}
                Err(error) => return Err(UntilError::Condition { last_event, error }),
            }
        }
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(UntilError::Interrupted { last_event }),
                next = events.next() => next,
            };
            let Some(event) = next else {
                return Err(UntilError::WatchClosed { last_event });
            };
            let verdict = condition(&event);
            last_event = Some(event);
            match verdict {
                Ok(true) => break,
                Ok(false) => {}
                Err(error) => return Err(UntilError::Condition { last_event, error }),
            }
        }
    }
    Ok(last_event)
}

/// The events of one watch, for [`until_without_retry`], as client-go's watch decoder gives
/// them: a lost connection ends them; any other error is an ERROR event (the server's Status,
/// or a 500 `unable to decode an event from the watch stream: …`) that ends them.
pub fn watch_events<K: Send + 'static>(watch: WatchStream<K>) -> impl Stream<Item = WatchEvent<K>> + Send {
    futures_util::stream::unfold(Some(watch), |watch| async move {
        let mut watch = watch?;
        match watch.next().await? {
            Ok(event) => Some((event, Some(watch))),
            Err(e) if e.is_connection_failure() => None,
            Err(Error::Api { status, .. }) => Some((WatchEvent::Error(*status), None)),
            Err(e) => {
                let message = format!("unable to decode an event from the watch stream: {e}");
                Some((WatchEvent::Error(Status::failure(500, "InternalError", message)), None))
            }
        }
    })
}

/// Watches through `lw` from `initial_resource_version` with a [`RetryWatcher`] until every
/// condition held in turn (client-go's `Until`). A 410 reaches the conditions as an ERROR event
/// and then ends the wait ([`UntilError::WatchClosed`]) unless a condition ends it first.
pub async fn until<K, L>(
    cancel: &CancellationToken,
    initial_resource_version: &str,
    lw: L,
    conditions: Vec<Condition<'_, K>>,
) -> Result<Option<WatchEvent<K>>, UntilError<K>>
where
    K: Send + Sync + 'static,
    L: ListerWatcher<K>,
{
    let watcher = RetryWatcher::new(lw, initial_resource_version)?;
    until_without_retry(cancel, watcher, conditions).await
}

/// Runs an informer over `lw` and waits until `precondition` holds on its synced cache, or else
/// until every condition held in turn on its notifications (client-go's `UntilWithSync`).
///
/// The informer lists first, so a condition sees ADDED for every existing object, then the
/// changes; relists after a 410 are the informer's, so the wait goes on through them. The
/// informer stops when the wait ends.
///
/// ```no_run
/// # async fn example(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use informer::listwatch::WatchEvent;
/// use informer::watch_tools::until_with_sync;
/// use informer::{CancellationToken, KubeListerWatcher};
/// use k8s_openapi::api::core::v1::Pod;
///
/// let lw = KubeListerWatcher::<Pod>::new(client, Some("default")).field_selector("metadata.name=web-0");
/// let running = |e: &WatchEvent<Pod>| -> Result<bool, _> {
///     Ok(match e {
///         WatchEvent::Added(p) | WatchEvent::Modified(p) => {
///             p.decode()?.status.and_then(|s| s.phase).as_deref() == Some("Running")
///         }
///         _ => false,
///     })
/// };
/// let cancel = CancellationToken::new();
/// until_with_sync(&cancel, lw, None, vec![Box::new(running)]).await?;
/// # Ok(()) }
/// ```
pub async fn until_with_sync<K, L>(
    cancel: &CancellationToken,
    lw: L,
    precondition: Option<Precondition<'_, K>>,
    conditions: Vec<Condition<'_, K>>,
) -> Result<Option<WatchEvent<K>>, UntilError<K>>
where
    K: Send + Sync + 'static,
    L: ListerWatcher<K>,
{
    let informer = SharedIndexInformer::<K>::new(lw, Duration::ZERO);
    let notifications = informer.subscribe()?;
    let stop = cancel.child_token();
    let wait = async {
        if let Some(precondition) = precondition {
            let synced = informer.synced();
            tokio::select! {
                biased;
                _ = synced.wait() => {}
                _ = cancel.cancelled() => return Err(UntilError::NotSynced),
            }
            match precondition(informer.indexer()) {
                Ok(true) => return Ok(None),
                Ok(false) => {}
                Err(error) => return Err(UntilError::Condition { last_event: None, error }),
            }
        }
        let events = notifications.filter_map(|n| std::future::ready(watch_event(n)));
        until_without_retry(cancel, events, conditions).await
    };
    let wait = async {
        let outcome = wait.await;
        stop.cancel();
        outcome
    };
    let (outcome, ()) = tokio::join!(wait, informer.run(stop.clone()));
    outcome
}

/// The watch event an informer's notification stands for (client-go's informer watcher: a
/// tombstone's last known state is the deleted object).
fn watch_event<K>(notification: Notification<K>) -> Option<WatchEvent<K>> {
    match notification {
        Notification::Add { obj, .. } => Some(WatchEvent::Added(obj)),
        Notification::Update { new, .. } => Some(WatchEvent::Modified(new)),
        Notification::Delete(DeletedObject::Object(obj)) => Some(WatchEvent::Deleted(obj)),
        Notification::Delete(DeletedObject::FinalStateUnknown(t)) => t.last_known.map(WatchEvent::Deleted),
    }
}
