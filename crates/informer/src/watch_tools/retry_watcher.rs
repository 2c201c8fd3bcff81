//! [`RetryWatcher`]: one watch that outlives the server's watch requests (client-go's
//! `tools/watch.RetryWatcher`).
//!
//! A watch request ends when the server says so (its request timeout, a restart, a dropped
//! connection); a RetryWatcher opens the next one at the resourceVersion of the last event or
//! bookmark it saw, so its consumer sees one stream of changes with none lost or repeated. It
//! never lists: when the server no longer has that resourceVersion (a 410), the 410 is the last
//! event and the stream ends — an informer is the tool that recovers from that.
//!
//! Invariants, as client-go's:
//! - it starts from a given resourceVersion, never `""` or `"0"` (those would start with a
//!   synthetic list of the current objects);
//! - ADDED, MODIFIED and DELETED are passed on; a bookmark only moves the resourceVersion on
//!   (bookmarks are always asked for); the next watch starts after the last event handed out;
//! - an event whose object has no resourceVersion is answered with an internal error event and
//!   ends the stream (going on would skip or repeat changes);
//! - an ERROR event of code 410 is passed on and ends the stream; any other ERROR event reopens
//!   the watch, after its `retryAfterSeconds` when it gives them;
//! - a watch that cannot be opened because the client is not authenticated (401) or not allowed
//!   (403) is answered with that Status, and the stream ends; other failures to open it (after
//!   the answer's `Retry-After`, as client-go's REST client waits it), and watches that end or
//!   break, reopen it;
//! - watches are opened at most once a second, measured from the start of the previous one, so a
//!   server that ends every watch at once is not hammered.
//!
//! Differences: a 410 that comes as the answer to the watch request or as an error of the stream
//! (kube-apiserver sends its 410 as an ERROR event, which client-go handles; a server or a
//! [`ListerWatcher`] that gives it otherwise would make client-go's RetryWatcher retry forever)
//! is passed on as the ERROR event would be, and ends the stream. Other errors of the stream
//! (a connection lost, an event that cannot be decoded) reopen the watch, as client-go's decoding
//! errors do; one that stays (an event past the size limit) is logged at each reopening. Once
//! ended, the stream stays ended (it is a `FusedStream`).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::{FusedStream, Stream};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio::time::Instant;

use crate::listwatch::{Error, ListOptions, ListerWatcher, Status, WatchEvent, WatchStream};

/// The shortest time between the starts of two watch requests (client-go's).
pub const MIN_RESTART_DELAY: Duration = Duration::from_secs(1);

/// The initial resourceVersion cannot start a RetryWatcher (`""` or `"0"`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("initial RV {0:?} is not supported due to issues with underlying WATCH")]
pub struct UnsupportedResourceVersion(pub String);

/// A watch that reopens itself at the last resourceVersion it saw (see the module
/// documentation). A `Stream` of [`WatchEvent`]s that ends after a 410, a 401 or 403 answer, or
/// an event it cannot follow; dropping it stops the watch.
///
/// ```no_run
/// # async fn example(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use futures_util::StreamExt;
/// use informer::KubeListerWatcher;
/// use informer::listwatch::WatchEvent;
/// use informer::watch_tools::RetryWatcher;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let lw = KubeListerWatcher::<ConfigMap>::new(client, Some("default"));
/// let mut changes = RetryWatcher::new(lw, "12345")?;
/// while let Some(event) = changes.next().await {
///     match event {
///         WatchEvent::Added(cm) | WatchEvent::Modified(cm) => println!("{} is now {:?}", cm.key(), cm.resource_version()),
///         WatchEvent::Deleted(cm) => println!("{} deleted", cm.key()),
///         WatchEvent::Error(status) => println!("watch ended: {}", status.message),
///         WatchEvent::Bookmark { .. } => unreachable!("bookmarks are not passed on"),
///     }
/// }
/// # Ok(()) }
/// ```
pub struct RetryWatcher<K> {
    inner: BoxStream<'static, WatchEvent<K>>,
    ended: bool,
}

impl<K: Send + Sync + 'static> RetryWatcher<K> {
    /// Watches through `lw` from `initial_resource_version` (not `""` nor `"0"`).
    pub fn new<L: ListerWatcher<K>>(lw: L, initial_resource_version: &str) -> Result<Self, UnsupportedResourceVersion> {
        Self::with_min_restart_delay(lw, initial_resource_version, MIN_RESTART_DELAY)
    }

    /// As [`new`](Self::new), with another shortest time between the starts of two watches.
    pub fn with_min_restart_delay<L: ListerWatcher<K>>(
        lw: L,
        initial_resource_version: &str,
        min_restart_delay: Duration,
    ) -> Result<Self, UnsupportedResourceVersion> {
        if matches!(initial_resource_version, "" | "0") {
            return Err(UnsupportedResourceVersion(initial_resource_version.to_string()));
        }
        let state = State {
            lw,
            last_resource_version: initial_resource_version.to_string(),
            current: None,
            last_start: None,
            retry_after: Duration::ZERO,
            min_restart_delay,
            pending: None,
            done: false,
        };
        let inner = futures_util::stream::unfold(state, |mut state| async move {
            let event = state.next_event().await?;
            Some((event, state))
        })
        .boxed();
        Ok(RetryWatcher { inner, ended: false })
    }
}

impl<K> Stream for RetryWatcher<K> {
    type Item = WatchEvent<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let next = self.inner.poll_next_unpin(cx);
        if let Poll::Ready(None) = next {
            self.ended = true;
        }
        next
    }
}

impl<K> FusedStream for RetryWatcher<K> {
    fn is_terminated(&self) -> bool {
        self.ended
    }
}

struct State<K, L> {
    lw: L,
    last_resource_version: String,
    current: Option<WatchStream<K>>,
    /// When the last watch request was started.
    last_start: Option<Instant>,
    /// The delay an ERROR event asked for before the next watch.
    retry_after: Duration,
    min_restart_delay: Duration,
    /// The resourceVersion of the event last handed out, the start of the next watch from the
    /// consumer's next call on.
    pending: Option<String>,
    done: bool,
}

impl<K: Send + Sync + 'static, L: ListerWatcher<K>> State<K, L> {
    async fn next_event(&mut self) -> Option<WatchEvent<K>> {
        if let Some(rv) = self.pending.take() {
            self.last_resource_version = rv;
        }
        loop {
            if self.done {
                return None;
            }
            let Some(stream) = self.current.as_mut() else {
                if let Some(event) = self.open().await {
                    self.done = true;
                    return Some(event);
                }
                continue;
            };
            match stream.next().await {
                None => {
                    tracing::debug!(resource_version = %self.last_resource_version, "watch ended; watching again");
                    self.current = None;
                }
                Some(Err(Error::Api { status, .. })) if status.code == 410 => {
                    self.done = true;
                    return Some(WatchEvent::Error(*status));
                }
                Some(Err(e)) => {
                    match e.is_connection_failure() {
                        true => tracing::debug!(error = %e, "watch broke; watching again"),
                        false => tracing::warn!(error = %e, "watch failed; watching again"),
                    }
                    self.current = None;
                }
                Some(Ok(WatchEvent::Bookmark { resource_version, .. })) => {
                    if resource_version.is_empty() {
                        self.done = true;
                        return Some(internal_error("retryWatcher: bookmark doesn't support resourceVersion"));
                    }
                    self.last_resource_version = resource_version;
                }
                Some(Ok(WatchEvent::Error(status))) => {
                    if status.code == 410 {
                        self.done = true;
                        return Some(WatchEvent::Error(status));
                    }
                    tracing::debug!(code = status.code, message = %status.message, "watch error; watching again");
                    self.retry_after = status.retry_after().unwrap_or_default();
                    self.current = None;
                }
                Some(Ok(event)) => match event.resource_version().filter(|rv| !rv.is_empty()) {
                    Some(rv) => {
                        self.pending = Some(rv.to_string());
                        return Some(event);
                    }
                    None => {
                        self.done = true;
                        return Some(internal_error("retryWatcher: object doesn't support resourceVersion"));
                    }
                },
            }
        }
    }

    /// Opens the next watch, paced; returns the event that ends the stream when the watch cannot
    /// be opened for good.
    async fn open(&mut self) -> Option<WatchEvent<K>> {
        let retry_after = std::mem::take(&mut self.retry_after);
        if !retry_after.is_zero() {
            tokio::time::sleep(retry_after).await;
        }
        if let Some(start) = self.last_start {
            tokio::time::sleep_until(start + self.min_restart_delay).await;
        }
        self.last_start = Some(Instant::now());
        let opts = ListOptions {
            resource_version: Some(self.last_resource_version.clone()),
            allow_watch_bookmarks: true,
            ..Default::default()
        };
        match self.lw.watch(&opts).await {
            Ok(stream) => {
                self.current = Some(stream);
                None
            }
            Err(Error::Api { status, .. }) if matches!(status.code, 401 | 403) => {
                tracing::error!(
                    message = %status.message,
                    "watch failed: ensure the client has valid credentials and watch permissions on the resource"
                );
                Some(WatchEvent::Error(*status))
            }
            Err(Error::Api { status, .. }) if status.code == 410 => Some(WatchEvent::Error(*status)),
            Err(e) => {
                tracing::debug!(error = %e, "watch failed; watching again");
                self.retry_after = e.retry_after().unwrap_or_default();
                None
            }
        }
    }
}

fn internal_error<K>(message: &str) -> WatchEvent<K> {
    WatchEvent::Error(Status::failure(500, "InternalError", format!("Internal error occurred: {message}")))
}
