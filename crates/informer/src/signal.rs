//! A one-shot "done" signal that async tasks can await, threads can block on, and anyone can
//! check without waiting (client-go's `DoneChecker` / closed channel).
//!
//! Invariant: once set, a signal stays set; every waiter registered before or after `set`
//! returns. No polling anywhere.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;

struct Inner {
    set: AtomicBool,
    notify: Notify,
    lock: Mutex<()>,
    cv: Condvar,
    name: Box<str>,
}

/// A cloneable, named, set-once signal.
///
/// ```
/// # tokio_test_block_on(async {
/// use informer::Signal;
/// let s = Signal::new("cache synced");
/// assert!(!s.is_set());
/// let w = s.clone();
/// let waiter = tokio::spawn(async move { w.wait().await });
/// s.set();
/// waiter.await.unwrap();
/// assert!(s.is_set());
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Clone)]
pub struct Signal {
    inner: Arc<Inner>,
}

impl Signal {
    /// A new, unset signal; the name appears in logs and wait results.
    pub fn new(name: impl Into<String>) -> Self {
        Signal {
            inner: Arc::new(Inner {
                set: AtomicBool::new(false),
                notify: Notify::new(),
                lock: Mutex::new(()),
                cv: Condvar::new(),
                name: name.into().into_boxed_str(),
            }),
        }
    }

    /// The signal's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Sets the signal and wakes every waiter. Idempotent.
    pub fn set(&self) {
        if !self.inner.set.swap(true, Ordering::AcqRel) {
            let _g = self.inner.lock.lock();
            self.inner.cv.notify_all();
            drop(_g);
            self.inner.notify.notify_waiters();
        }
    }

    /// Whether the signal is set.
    pub fn is_set(&self) -> bool {
        self.inner.set.load(Ordering::Acquire)
    }

    /// Waits until the signal is set.
    pub async fn wait(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }

    /// Blocks the current thread until the signal is set or the timeout passes; returns whether
    /// it is set. Do not call from an async task.
    pub fn wait_blocking(&self, timeout: Option<Duration>) -> bool {
        let mut g = self.inner.lock.lock();
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        while !self.is_set() {
            match deadline {
                None => self.inner.cv.wait(&mut g),
                Some(d) => {
                    if self.inner.cv.wait_until(&mut g, d).timed_out() {
                        return self.is_set();
                    }
                }
            }
        }
        true
    }
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal").field("name", &self.name()).field("set", &self.is_set()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_before_and_after_set_return() {
        let s = Signal::new("x");
        let a = tokio::spawn({
            let s = s.clone();
            async move { s.wait().await }
        });
        tokio::task::yield_now().await;
        s.set();
        s.set();
        a.await.unwrap();
        s.wait().await; // already set: returns at once
    }

    #[test]
    fn blocking_wait_sees_set_from_another_thread() {
        let s = Signal::new("x");
        assert!(!s.wait_blocking(Some(Duration::from_millis(1))));
        let t = std::thread::spawn({
            let s = s.clone();
            move || s.wait_blocking(None)
        });
        s.set();
        assert!(t.join().unwrap());
    }
}
