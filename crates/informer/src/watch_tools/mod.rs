//! Watches for one-off waits (client-go's `tools/watch`): a watch that reopens itself where the
//! last one ended ([`RetryWatcher`]) and waits on conditions over a watch or an informer
//! ([`until`], [`until_without_retry`], [`until_with_sync`]).
//!
//! Controllers keep caches with informers; these are for the code around them — a test or a
//! command that waits for a pod to run, a custom resource to report Ready, an object to be gone —
//! where a watch request ended by the server must not end the wait.

mod retry_watcher;
mod until;

pub use retry_watcher::{MIN_RESTART_DELAY, RetryWatcher, UnsupportedResourceVersion};
pub use until::{
    Condition, ConditionError, Precondition, UntilError, until, until_with_sync, until_without_retry, watch_events,
};
