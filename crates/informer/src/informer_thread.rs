//! A thread of its own for informers: a tokio current-thread runtime on a dedicated OS thread.
//!
//! Why: an informer's hot path (watch stream → decode → cache → handlers) is a chain of tasks
//! handing work to each other. On a multi-threaded runtime those hand-offs wake tasks on other
//! workers, and objects are allocated on whichever worker decodes them (with glibc, in that
//! worker's malloc arena); on one thread the chain runs without wake-ups between threads and the
//! cache's memory stays in one arena (W1 on two workers: a few percent to ~15% more updates per
//! second and ~3 MB less RSS; with a decoding handler on a thread of its own, peak RSS ~1.04× the
//! RSS after sync instead of ~1.4×; see docs/benchmarks.md). An application that needs a multi-threaded runtime
//! keeps that by running its informers — and the `kube::Client` they use, whose connection tasks
//! run on the runtime that created it — on an [`InformerThread`]. Listers, registrations and
//! handler streams work from any thread; handlers registered from anywhere are called on the
//! informer's thread (unless they ask for a thread of their own).
//!
//! Invariants: every task spawned through [`InformerThread::spawn`] runs on the thread;
//! [`InformerThread::shutdown`] (or dropping the handle) stops the runtime, which drops the tasks
//! that have not finished (their `JoinHandle`s then report cancellation); `shutdown` also waits
//! for the thread to end.

use std::future::Future;
use std::io;
use std::thread::JoinHandle as ThreadHandle;

use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A tokio current-thread runtime running on an OS thread of its own.
///
/// ```
/// use informer::{InformerThread, KubeListerWatcher, SharedIndexInformer};
/// use k8s_openapi::api::core::v1::Pod;
/// use std::time::Duration;
/// use tokio_util::sync::CancellationToken;
///
/// # async fn example(config: kube::Config) -> Result<(), Box<dyn std::error::Error>> {
/// let thread = InformerThread::start("pod-informer")?;
/// // The client is created on the thread, so its connections run there too.
/// let informer = thread
///     .spawn(async move {
///         let client = kube::Client::try_from(config)?;
///         let lw = KubeListerWatcher::<Pod>::new(client, Some("default"));
///         Ok::<_, kube::Error>(SharedIndexInformer::new(lw, Duration::ZERO))
///     })
///     .await??;
/// let cancel = CancellationToken::new();
/// let running = thread.spawn({
///     let (informer, cancel) = (informer.clone(), cancel.clone());
///     async move { informer.run(cancel).await }
/// });
/// // ... register handlers, read `informer.lister()` from the application's runtime ...
/// cancel.cancel();
/// running.await?;
/// thread.shutdown();
/// # Ok(())
/// # }
/// ```
pub struct InformerThread {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<ThreadHandle<()>>,
}

impl InformerThread {
    /// Starts the thread (named `name`) and its runtime, with I/O and timers enabled.
    pub fn start(name: &str) -> io::Result<Self> {
        let runtime = Builder::new_current_thread().enable_all().build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name(name.to_string()).spawn(move || {
            // Runs the spawned tasks until told to stop (or the handle is gone); dropping the
            // runtime then drops the tasks that have not finished.
            let _ = runtime.block_on(stopped);
        })?;
        Ok(InformerThread { handle, stop: Some(stop), thread: Some(thread) })
    }

    /// Runs `task` on the thread. The returned handle can be awaited from any runtime.
    pub fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(task)
    }

    /// The thread's runtime, for anything [`InformerThread::spawn`] does not cover
    /// (`spawn_blocking`, entering its context to create a client synchronously).
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Stops the runtime (tasks still running are dropped) and waits for the thread to end.
    /// Blocks the calling thread for as long as the tasks take to drop; from async code, call it
    /// in `spawn_blocking` or just drop the handle (which stops the thread without waiting).
    pub fn shutdown(mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for InformerThread {
    fn drop(&mut self) {
        // Dropping the sender ends the runtime's `block_on`; the thread finishes on its own.
        self.stop.take();
    }
}

impl std::fmt::Debug for InformerThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.thread.as_ref().and_then(|t| t.thread().name().map(str::to_string));
        f.debug_struct("InformerThread").field("name", &name).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tasks_run_on_the_thread_and_shutdown_drops_unfinished_ones() {
        let thread = InformerThread::start("test-informer").unwrap();
        let here = std::thread::current().id();
        let (id, name) = thread
            .spawn(async {
                // Timers and the runtime's context work on the thread.
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                (std::thread::current().id(), std::thread::current().name().map(str::to_string))
            })
            .await
            .unwrap();
        assert_ne!(id, here);
        assert_eq!(name.as_deref(), Some("test-informer"));
        assert_eq!(thread.spawn(async { std::thread::current().id() }).await.unwrap(), id, "one thread for all");
        let (started_tx, started) = oneshot::channel();
        let forever = thread.spawn(async move {
            let _ = started_tx.send(());
            std::future::pending::<()>().await
        });
        started.await.unwrap();
        tokio::task::spawn_blocking(move || thread.shutdown()).await.unwrap();
        assert!(forever.await.unwrap_err().is_cancelled(), "shutdown drops unfinished tasks");
    }

    #[tokio::test]
    async fn dropping_the_handle_stops_the_thread() {
        let thread = InformerThread::start("test-dropped").unwrap();
        let (started_tx, started) = oneshot::channel();
        let forever = thread.spawn(async move {
            let _ = started_tx.send(());
            std::future::pending::<()>().await
        });
        started.await.unwrap();
        drop(thread);
        assert!(forever.await.unwrap_err().is_cancelled());
    }
}
