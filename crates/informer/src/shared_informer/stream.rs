//! [`NotificationStream`]: a handler registration consumed as an async `Stream` instead of
//! through callbacks.
//!
//! Invariants: the stream pulls straight from its listener's buffer (no task in between), so its
//! backlog, backlog policy and sync tracking are those of any handler; an initial add counts as
//! delivered when the stream yields it. The stream ends when the subscription is removed or the
//! informer stops; dropping it removes the subscription.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_util::stream::BoxStream;

use super::HandlerRegistration;
use super::listener::Consumer;
use super::notification::Notification;
use super::processor::Processor;

/// A stream of an informer's notifications (see [`SharedIndexInformer::subscribe`] and
/// [`SharedInformerFactory::subscribe`](crate::SharedInformerFactory::subscribe)).
///
/// The counterpart of kube-runtime's `watcher` stream, on top of a shared informer: where a
/// `watcher` yields `Apply`/`Delete` and `Init`..`InitDone` around each relist, and leaves the
/// cache to a `reflector`, a subscription yields [`Notification`]s from the informer's cache,
/// which is already up to date when they arrive: `Add` (initial list items flagged
/// `is_in_initial_list`), `Update` with the old and the new state, `Delete` with the last state
/// or a tombstone. Relists, watch errors and backoff are handled inside; the stream ends only
/// when the subscription is removed or the informer stops. Any number of streams and handlers
/// share one informer, each with its own buffer and [`BacklogPolicy`](crate::BacklogPolicy).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use futures_util::StreamExt;
/// use informer::{Notification, SharedIndexInformer, fake::FakeSource};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// let source = FakeSource::new();
/// source.add(serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}}));
/// let informer = SharedIndexInformer::<ConfigMap>::new(source, std::time::Duration::ZERO);
/// let mut events = informer.subscribe().unwrap();
/// let cancel = tokio_util::sync::CancellationToken::new();
/// let run = tokio::spawn({ let (i, c) = (informer.clone(), cancel.clone()); async move { i.run(c).await } });
/// match events.next().await.unwrap() {
///     Notification::Add { obj, is_in_initial_list } => assert!(is_in_initial_list && obj.name() == "a"),
///     other => panic!("{other:?}"),
/// }
/// cancel.cancel();
/// run.await.unwrap();
/// assert!(events.next().await.is_none());
/// # });
/// ```
///
/// [`SharedIndexInformer::subscribe`]: super::SharedIndexInformer::subscribe
pub struct NotificationStream<K> {
    inner: BoxStream<'static, Notification<K>>,
    registration: HandlerRegistration<K>,
    processor: Arc<Processor<K>>,
}

impl<K: Send + Sync + 'static> NotificationStream<K> {
    pub(crate) fn new(registration: HandlerRegistration<K>, processor: Arc<Processor<K>>) -> Self {
        let l = registration.listener.clone();
        let consumer = Consumer::for_listener(&l);
        let inner = futures_util::stream::unfold((l, consumer), |(l, mut c)| async move {
            match c.next(&l).await {
                Some(item) => {
                    l.delivered_without_call(&item);
                    Some((item.n, (l, c)))
                }
                None => {
                    l.finished.set();
                    None
                }
            }
        });
        NotificationStream { inner: Box::pin(inner), registration, processor }
    }

    /// The subscription's registration (sync state, backlog).
    pub fn registration(&self) -> &HandlerRegistration<K> {
        &self.registration
    }
}

impl<K> Stream for NotificationStream<K> {
    type Item = Notification<K>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl<K> Drop for NotificationStream<K> {
    fn drop(&mut self) {
        let l = &self.registration.listener;
        l.close();
        l.finished.set();
        self.processor.remove_closed(l.id);
    }
}
