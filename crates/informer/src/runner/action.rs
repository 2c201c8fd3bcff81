//! What a reconcile asks the runner to do next with its key.
//!
//! Invariant: every variant is a *successful* reconcile; failures are expressed with `Err` and
//! retried with the queue's rate limiter, never with an [`Action`].

use std::time::Duration;

/// The outcome of a successful reconcile.
///
/// ```
/// use informer::runner::Action;
/// use std::time::Duration;
/// let next = Action::RequeueAfter(Duration::from_secs(30));
/// assert_ne!(next, Action::Done);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Action {
    /// The key is reconciled; its retry history is forgotten and it is processed again only
    /// when an informer reports a change.
    #[default]
    Done,
    /// The key is reconciled for now; its retry history is forgotten and it is processed again
    /// after the delay (earlier if an informer reports a change).
    RequeueAfter(Duration),
}
