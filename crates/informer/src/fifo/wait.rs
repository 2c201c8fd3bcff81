//! A mutex-guarded state with waiters that may be async tasks or threads.
//!
//! Invariant: every state change that could let a waiter proceed calls `wake`, which wakes both
//! kinds of waiters; async waiters register before checking their condition, so no wakeup is
//! lost.

use parking_lot::{Condvar, Mutex, MutexGuard};
use tokio::sync::Notify;

pub(crate) struct Waitable<S> {
    state: Mutex<S>,
    notify: Notify,
    cv: Condvar,
}

impl<S> Waitable<S> {
    pub fn new(s: S) -> Self {
        Waitable { state: Mutex::new(s), notify: Notify::new(), cv: Condvar::new() }
    }

    pub fn lock(&self) -> MutexGuard<'_, S> {
        self.state.lock()
    }

    pub fn wake(&self) {
        self.cv.notify_all();
        self.notify.notify_waiters();
    }

    /// Waits until `ready` holds, then returns the guard.
    pub async fn wait_until(&self, mut ready: impl FnMut(&mut S) -> bool) -> MutexGuard<'_, S> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut g = self.state.lock();
                if ready(&mut g) {
                    return g;
                }
            }
            notified.await;
        }
    }

    /// Blocks the thread until `ready` holds, then returns the guard.
    pub fn wait_until_blocking(&self, mut ready: impl FnMut(&mut S) -> bool) -> MutexGuard<'_, S> {
        let mut g = self.state.lock();
        while !ready(&mut g) {
            self.cv.wait(&mut g);
        }
        g
    }
}
