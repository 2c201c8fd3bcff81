//! The transitions an elector reports ([`LeaderEvent`]) and the stream a subscriber reads them
//! from ([`LeaderEvents`]).
//!
//! Invariants: every subscriber gets every event sent after it subscribed, in order (unbounded:
//! transitions are rare); a subscriber that is dropped is forgotten at the next event. On
//! acquiring, `NewLeader(Some(self))` comes before `StartedLeading`; on losing, `StoppedLeading`
//! comes first (its token is already cancelled), then the leader observed next, if any. Every
//! exit of [`run`](super::LeaderElector::run) delivers a `StoppedLeading`, even for a candidate
//! that was not leading (client-go's `OnStoppedLeading` runs whenever `Run` returns); a candidate
//! that loses a term and is then stopped while campaigning again gets one for each.

use std::pin::Pin;
use std::task::{Context, Poll};

use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// One transition of an election, as seen by one candidate.
#[derive(Debug, Clone)]
pub enum LeaderEvent {
    /// A different holder was observed: `Some(identity)`, or `None` once the lease is released.
    /// The first holder observed is reported too, client-go's `OnNewLeader`.
    NewLeader(Option<String>),
    /// This candidate leads. The token is cancelled the moment leadership ends: lost (renewals
    /// failed until the renew deadline, or another holder was observed) or given up on cancel.
    StartedLeading(CancellationToken),
    /// This candidate's term ended, or [`run`](super::LeaderElector::run) exited while it was not
    /// leading (as client-go calls `OnStoppedLeading` whenever `Run` returns, even if it never
    /// led). Either way, this candidate does not lead now.
    StoppedLeading,
}

/// The events of one elector, from the moment of [`subscribe`](super::LeaderElector::subscribe).
/// Also a [`Stream`](futures_core::Stream).
#[derive(Debug)]
pub struct LeaderEvents(mpsc::UnboundedReceiver<LeaderEvent>);

impl LeaderEvents {
    /// The next event; `None` once the elector is dropped.
    pub async fn recv(&mut self) -> Option<LeaderEvent> {
        self.0.recv().await
    }

    /// The next event if one is waiting.
    pub fn try_recv(&mut self) -> Option<LeaderEvent> {
        self.0.try_recv().ok()
    }
}

impl futures_core::Stream for LeaderEvents {
    type Item = LeaderEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LeaderEvent>> {
        self.0.poll_recv(cx)
    }
}

/// The subscribers of one elector.
#[derive(Debug, Default)]
pub(crate) struct Subscribers(Mutex<Vec<mpsc::UnboundedSender<LeaderEvent>>>);

impl Subscribers {
    pub fn subscribe(&self) -> LeaderEvents {
        let (tx, rx) = mpsc::unbounded_channel();
        self.0.lock().push(tx);
        LeaderEvents(rx)
    }

    pub fn send(&self, event: LeaderEvent) {
        self.0.lock().retain(|tx| tx.send(event.clone()).is_ok());
    }
}
