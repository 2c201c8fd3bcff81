//! The `ListerWatcher` abstraction: "list with options" and "watch with options".
//!
//! The [`Reflector`](crate::Reflector) only talks to a [`ListerWatcher`]; the Kubernetes
//! implementation is [`KubeListerWatcher`](crate::KubeListerWatcher), the in-memory test source
//! is [`FakeSource`](crate::fake::FakeSource). Errors are classified the way client-go's reflector
//! and REST client need them: expired (410), too-large resourceVersion, retriable without a relist
//! (connection refused, 429), a failure of the connection itself ([`TransportFailure`]: refused, or
//! lost — reset, EOF, timed out, HTTP/2 connection lost), a watch opening worth retrying at the same
//! resourceVersion (a lost connection, a 5xx with Retry-After), and everything else.

use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use serde::{Deserialize, Serialize};

use crate::object::{DecodeError, Object};

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    /// Data at least as new as the given resourceVersion.
    NotOlderThan,
    /// Data at exactly the given resourceVersion.
    Exact,
}

impl ResourceVersionMatch {
    /// The query value.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceVersionMatch::NotOlderThan => "NotOlderThan",
            ResourceVersionMatch::Exact => "Exact",
        }
    }
}

/// metav1.ListOptions, for both list and watch requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `resourceVersion` (`None` = unset).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `limit` (page size); `None` or 0 = no paging.
    pub limit: Option<u32>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `timeoutSeconds` (watch).
    pub timeout_seconds: Option<u32>,
    /// `allowWatchBookmarks` (watch).
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents` (watch).
    pub send_initial_events: Option<bool>,
}

impl ListOptions {
    /// The query string (without `?`), with `watch=true` when `watch`.
    pub fn to_query(&self, watch: bool) -> String {
        let mut q: Vec<(&str, String)> = Vec::with_capacity(10);
        if watch {
            q.push(("watch", "true".to_string()));
        }
        if let Some(s) = &self.label_selector {
            q.push(("labelSelector", s.clone()));
        }
        if let Some(s) = &self.field_selector {
            q.push(("fieldSelector", s.clone()));
        }
        if let Some(rv) = &self.resource_version {
            q.push(("resourceVersion", rv.clone()));
        }
        if let Some(m) = self.resource_version_match {
            q.push(("resourceVersionMatch", m.as_str().to_string()));
        }
        if let Some(l) = self.limit.filter(|l| *l > 0) {
            q.push(("limit", l.to_string()));
        }
        if let Some(c) = &self.continue_token {
            q.push(("continue", c.clone()));
        }
        if let Some(t) = self.timeout_seconds {
            q.push(("timeoutSeconds", t.to_string()));
        }
        if self.allow_watch_bookmarks {
            q.push(("allowWatchBookmarks", "true".to_string()));
        }
        if let Some(s) = self.send_initial_events {
            q.push(("sendInitialEvents", s.to_string()));
        }
        let mut out = String::new();
        for (i, (k, v)) in q.iter().enumerate() {
            if i > 0 {
                out.push('&');
            }
            out.push_str(k);
            out.push('=');
            percent_encode(v, &mut out);
        }
        out
    }
}

fn percent_encode(s: &str, out: &mut String) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => {
                out.push('%');
                out.push(char::from(b"0123456789ABCDEF"[(b >> 4) as usize]));
                out.push(char::from(b"0123456789ABCDEF"[(b & 15) as usize]));
            }
        }
    }
}

/// One page (or all) of a LIST response: the items in server order, `metadata.resourceVersion`,
/// `metadata.continue` when more pages exist, and `metadata.remainingItemCount`.
pub use informer_object::frame::ListBody as ObjectList;

/// One watch event.
pub enum WatchEvent<K> {
    /// ADDED.
    Added(Object<K>),
    /// MODIFIED.
    Modified(Object<K>),
    /// DELETED (the object's last state).
    Deleted(Object<K>),
    /// BOOKMARK.
    Bookmark {
        /// The bookmark's resourceVersion.
        resource_version: String,
        /// Whether it carries `k8s.io/initial-events-end: "true"`.
        initial_events_end: bool,
    },
    /// ERROR with the server's Status.
    Error(Status),
}

impl<K> fmt::Debug for WatchEvent<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchEvent::Added(o) => f.debug_tuple("Added").field(o).finish(),
            WatchEvent::Modified(o) => f.debug_tuple("Modified").field(o).finish(),
            WatchEvent::Deleted(o) => f.debug_tuple("Deleted").field(o).finish(),
            WatchEvent::Bookmark { resource_version, initial_events_end } => f
                .debug_struct("Bookmark")
                .field("resource_version", resource_version)
                .field("initial_events_end", initial_events_end)
                .finish(),
            WatchEvent::Error(s) => f.debug_tuple("Error").field(s).finish(),
        }
    }
}

impl<K> WatchEvent<K> {
    /// The resourceVersion this event carries.
    pub fn resource_version(&self) -> Option<&str> {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o.resource_version(),
            WatchEvent::Bookmark { resource_version, .. } => Some(resource_version),
            WatchEvent::Error(_) => None,
        }
    }
}

/// A stream of watch events; ends when the server closes the watch.
pub type WatchStream<K> = Pin<Box<dyn Stream<Item = Result<WatchEvent<K>, Error>> + Send>>;

/// A metav1 Status (the body of API errors and of watch ERROR events).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// "Success" or "Failure".
    #[serde(default)]
    pub status: String,
    /// Human-readable description.
    #[serde(default)]
    pub message: String,
    /// Machine-readable reason (`Expired`, `Gone`, `TooManyRequests`, `Timeout`, ...).
    #[serde(default)]
    pub reason: String,
    /// HTTP status code.
    #[serde(default)]
    pub code: u16,
    /// Extra details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
}

impl Status {
    /// A `Failure` with `code`, `reason` and `message`, no details.
    pub fn failure(code: u16, reason: &str, message: impl Into<String>) -> Status {
        Status { status: "Failure".into(), message: message.into(), reason: reason.into(), code, details: None }
    }

    /// The delay the server asks for before a retry (`details.retryAfterSeconds`).
    pub fn retry_after(&self) -> Option<Duration> {
        self.details.as_ref().and_then(|d| d.retry_after_seconds).map(|s| Duration::from_secs(s.into()))
    }
}

/// metav1.StatusDetails (the parts a reflector uses).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// Causes.
    #[serde(default)]
    pub causes: Vec<StatusCause>,
    /// Suggested retry delay.
    #[serde(default)]
    pub retry_after_seconds: Option<u32>,
}

/// metav1.StatusCause.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// Machine-readable reason.
    #[serde(default)]
    pub reason: String,
    /// Description.
    #[serde(default)]
    pub message: String,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.code, if self.reason.is_empty() { "Unknown" } else { &self.reason }, self.message)
    }
}

/// What failed when a request got no usable answer ([`Error::Transport`]).
///
/// Only a failure of the connection itself says that the server may be away for a moment (down,
/// restarting, behind a load balancer that dropped the connection); everything else (a wrong
/// certificate authority, an unknown host, failing credentials, a malformed answer) stays wrong
/// until someone fixes it, and is retried after client-go's exponential backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportFailure {
    /// The connection was refused: nothing listens at the server's address (client-go
    /// `IsConnectionRefused`).
    ConnectionRefused,
    /// The connection broke or stalled: reset, closed before the answer was complete (EOF,
    /// unexpected EOF), broken pipe, timed out, HTTP/2 GOAWAY or connection lost (client-go
    /// `IsProbableEOF`, `IsConnectionReset`, `IsTimeout`, `IsHTTP2ConnectionLost`).
    ConnectionLost,
    /// Any other failure: TLS (certificate verification, handshake), DNS resolution, credentials
    /// (an auth or exec-credential plugin), a malformed HTTP answer, a protocol error.
    Other,
}

/// A list/watch failure.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The server answered with an error Status (HTTP error or watch ERROR event).
    #[error("api error: {status}")]
    Api {
        /// The status.
        status: Box<Status>,
        /// The Retry-After header, if any.
        retry_after: Option<Duration>,
    },
    /// The request failed below the API: no answer, or one that could not be read.
    #[error("transport error: {message}")]
    Transport {
        /// What happened (never contains credentials).
        message: String,
        /// What failed: the connection itself, or something else.
        failure: TransportFailure,
    },
    /// A response or event could not be decoded.
    #[error("decode error: {0}")]
    Decode(String),
    /// A single watch event exceeded the size limit.
    #[error("watch event exceeds the {limit}-byte limit")]
    EventTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// An object failed to decode.
    #[error(transparent)]
    Object(#[from] DecodeError),
    /// The watch closed within a second without any event (client-go's VeryShortWatchError).
    #[error("very short watch: {0}: unexpected watch close - watch lasted less than a second and no items received")]
    VeryShortWatch(String),
    /// The streaming list did not complete and the source does not support it.
    #[error("streaming list not supported: {0}")]
    WatchListUnsupported(String),
    /// The store (queue) rejected a write.
    #[error("store error: {0}")]
    Store(String),
}

impl Error {
    /// An API error from a status.
    pub fn api(status: Status) -> Self {
        let retry_after = status.retry_after();
        Error::Api { status: Box::new(status), retry_after }
    }

    /// The HTTP status code of an API error.
    pub fn code(&self) -> Option<u16> {
        match self {
            Error::Api { status, .. } => Some(status.code),
            _ => None,
        }
    }

    fn status(&self) -> Option<&Status> {
        match self {
            Error::Api { status, .. } => Some(status),
            _ => None,
        }
    }

    /// 410: reason `Expired` or `Gone`, or code 410 with an unknown reason (client-go
    /// `isExpiredError`).
    pub fn is_expired(&self) -> bool {
        self.status().is_some_and(|s| {
            s.reason == "Expired"
                || s.reason == "Gone"
                || (s.code == 410 && (s.reason.is_empty() || s.reason == "Unknown"))
        })
    }

    /// "Too large resource version" (cause `ResourceVersionTooLarge`, or an older server's Timeout
    /// status mentioning it).
    pub fn is_too_large_resource_version(&self) -> bool {
        self.status().is_some_and(|s| {
            let causes = s.details.as_ref().map(|d| &d.causes[..]).unwrap_or(&[]);
            causes.iter().any(|c| c.reason == "ResourceVersionTooLarge")
                || (s.reason == "Timeout"
                    && (s.message.contains("Too large resource version")
                        || causes.iter().any(|c| c.message.contains("Too large resource version"))))
        })
    }

    /// 429 Too Many Requests.
    pub fn is_too_many_requests(&self) -> bool {
        self.status().is_some_and(|s| s.code == 429 || s.reason == "TooManyRequests")
    }

    /// 500 InternalError.
    pub fn is_internal(&self) -> bool {
        self.status().is_some_and(|s| s.code == 500 || s.reason == "InternalError")
    }

    /// An unreachable server (connection refused) or 429 (client-go `isWatchErrorRetriable`):
    /// back off and retry the same request without relisting.
    pub fn is_retriable(&self) -> bool {
        self.is_connection_refused() || self.is_too_many_requests()
    }

    /// The connection was refused.
    pub fn is_connection_refused(&self) -> bool {
        matches!(self, Error::Transport { failure: TransportFailure::ConnectionRefused, .. })
    }

    /// The connection broke or stalled (see [`TransportFailure::ConnectionLost`]).
    pub fn is_connection_lost(&self) -> bool {
        matches!(self, Error::Transport { failure: TransportFailure::ConnectionLost, .. })
    }

    /// The connection itself failed: refused or lost. The server may be back in a moment, so
    /// such failures are retried after a short pause rather than the exponential backoff.
    pub fn is_connection_failure(&self) -> bool {
        self.is_connection_refused() || self.is_connection_lost()
    }

    /// A watch whose opening failed this way is opened again at the same resourceVersion, a
    /// bounded number of times (client-go's `Request.Watch` retries): a lost connection (probable
    /// EOF, reset, timed out, HTTP/2 connection lost) or a 5xx answer with Retry-After.
    pub fn is_watch_open_retriable(&self) -> bool {
        self.is_connection_lost() || (self.code().is_some_and(|c| c >= 500) && self.retry_after().is_some())
    }

    /// The server's suggested retry delay.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Api { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A source of lists and watches.
pub trait ListerWatcher<K>: Send + Sync + 'static {
    /// LIST with options (one page when `limit` is set).
    fn list(&self, opts: &ListOptions) -> impl std::future::Future<Output = Result<ObjectList<K>, Error>> + Send;
    /// WATCH with options.
    fn watch(&self, opts: &ListOptions) -> impl std::future::Future<Output = Result<WatchStream<K>, Error>> + Send;
    /// Whether streaming lists (`sendInitialEvents`) can be used with this source. Sources that
    /// cannot produce the `initial-events-end` bookmark must say no, or the reflector falls back
    /// to LIST after its initial-events idle timeout.
    fn supports_streaming_list(&self) -> bool {
        true
    }
    /// A description for logs (e.g. the resource).
    fn describe(&self) -> String {
        std::any::type_name::<K>().rsplit("::").next().unwrap_or("object").to_string()
    }
}

/// A [`ListerWatcher`] made of two closures, client-go's `cache.ListWatch{ListFunc, WatchFunc}`:
/// for sources that are not a Kubernetes resource of the client (tests, other servers, filtered
/// views).
///
/// ```
/// use informer::listwatch::{ListOptions, ListWatch, ListerWatcher, ObjectList, WatchStream};
/// use informer::Error;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let lw = ListWatch::new(
///     |opts: ListOptions| async move {
///         let resource_version = opts.resource_version.unwrap_or_else(|| "1".into());
///         Ok::<_, Error>(ObjectList::<ConfigMap> { items: vec![], resource_version, continue_token: None, remaining_item_count: None })
///     },
///     |_opts: ListOptions| async { Ok::<WatchStream<ConfigMap>, Error>(Box::pin(futures_util::stream::pending())) },
/// );
/// assert!(!lw.supports_streaming_list());
/// assert_eq!(lw.list(&ListOptions::default()).await.unwrap().resource_version, "1");
/// # }
/// ```
pub struct ListWatch<L, W> {
    list: L,
    watch: W,
    streaming_list: bool,
}

impl<L, W> ListWatch<L, W> {
    /// A source that lists with `list` and watches with `watch` (each given the request's
    /// options), listed and then watched: it is not assumed to answer streaming lists, which
    /// would leave a reflector waiting for a closing bookmark until its initial-events idle
    /// timeout at every list (the trap of client-go's hand-built `ListWatch`es with streaming
    /// lists on); see [`Self::with_streaming_list`].
    pub fn new(list: L, watch: W) -> Self {
        ListWatch { list, watch, streaming_list: false }
    }

    /// The source answers streaming lists ([`ListOptions::send_initial_events`]) with their
    /// closing bookmark, as a Kubernetes API server does: the reflector uses them.
    pub fn with_streaming_list(mut self) -> Self {
        self.streaming_list = true;
        self
    }
}

impl<K, L, LF, W, WF> ListerWatcher<K> for ListWatch<L, W>
where
    K: Send + Sync + 'static,
    L: Fn(ListOptions) -> LF + Send + Sync + 'static,
    LF: std::future::Future<Output = Result<ObjectList<K>, Error>> + Send,
    W: Fn(ListOptions) -> WF + Send + Sync + 'static,
    WF: std::future::Future<Output = Result<WatchStream<K>, Error>> + Send,
{
    fn list(&self, opts: &ListOptions) -> impl std::future::Future<Output = Result<ObjectList<K>, Error>> + Send {
        (self.list)(opts.clone())
    }
    fn watch(&self, opts: &ListOptions) -> impl std::future::Future<Output = Result<WatchStream<K>, Error>> + Send {
        (self.watch)(opts.clone())
    }
    fn supports_streaming_list(&self) -> bool {
        self.streaming_list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(code: u16, reason: &str, msg: &str) -> Error {
        Error::api(Status { code, reason: reason.into(), message: msg.into(), ..Default::default() })
    }

    #[test]
    fn classification() {
        assert!(st(410, "Expired", "too old resource version: 1 (5)").is_expired());
        assert!(st(410, "Gone", "").is_expired());
        assert!(st(410, "", "").is_expired());
        assert!(!st(500, "InternalError", "").is_expired());
        let too_large = Error::api(Status {
            code: 504,
            reason: "Timeout".into(),
            message: "Timeout: Too large resource version: 20, current: 10".into(),
            details: Some(StatusDetails {
                causes: vec![StatusCause {
                    reason: "ResourceVersionTooLarge".into(),
                    message: "Too large resource version".into(),
                }],
                retry_after_seconds: Some(1),
            }),
            ..Default::default()
        });
        assert!(too_large.is_too_large_resource_version());
        assert_eq!(too_large.retry_after(), Some(Duration::from_secs(1)));
        assert!(st(504, "Timeout", "Too large resource version: 5, current: 1").is_too_large_resource_version());
        assert!(st(429, "TooManyRequests", "").is_retriable());
        let transport = |failure| Error::Transport { message: String::new(), failure };
        let refused = transport(TransportFailure::ConnectionRefused);
        let lost = transport(TransportFailure::ConnectionLost);
        let other = transport(TransportFailure::Other);
        assert!(refused.is_retriable() && refused.is_connection_failure() && !refused.is_watch_open_retriable());
        assert!(!lost.is_retriable() && lost.is_connection_failure() && lost.is_watch_open_retriable());
        assert!(!other.is_retriable() && !other.is_connection_failure() && !other.is_watch_open_retriable());
        let unavailable = |retry_after| Error::Api {
            status: Box::new(Status { code: 503, reason: "ServiceUnavailable".into(), ..Default::default() }),
            retry_after,
        };
        assert!(unavailable(Some(Duration::from_secs(1))).is_watch_open_retriable());
        assert!(!unavailable(None).is_watch_open_retriable(), "a 5xx without Retry-After relists");
        assert!(!st(500, "InternalError", "").is_watch_open_retriable());
    }

    #[test]
    fn query_encoding() {
        let o = ListOptions {
            label_selector: Some("app in (a,b),!x".into()),
            resource_version: Some("0".into()),
            limit: Some(500),
            allow_watch_bookmarks: true,
            send_initial_events: Some(true),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            ..Default::default()
        };
        assert_eq!(
            o.to_query(true),
            "watch=true&labelSelector=app%20in%20%28a%2Cb%29%2C%21x&resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=500&allowWatchBookmarks=true&sendInitialEvents=true"
        );
    }
}
