//! client-go's `workqueue.ParallelizeUntil`: `pieces` pieces of work, numbered from 0, done by at
//! most `workers` at once, in chunks of `chunk_size` consecutive pieces, until all are done or the
//! token is cancelled.
//!
//! Invariants: each piece is done at most once, and every piece is done unless the token is
//! cancelled or there are no workers (as client-go, zero workers do nothing); once cancelled, no
//! piece starts (pieces under way finish). Workers take chunks in order. The workers are futures
//! polled together by the caller's task (the work is usually calls to the API server): for
//! CPU-bound pieces, spawn blocking work inside them. A piece that panics unwinds the caller,
//! dropping the pieces under way (client-go's workers crash the process the same way).

use std::future::Future;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

/// Does `work(piece)` for every piece in `0..pieces`, by at most `workers` at once in chunks of
/// `chunk_size` (at least one) consecutive pieces, until all are done or `cancel` fires. With no
/// workers nothing is done, as with client-go.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use informer::workqueue::parallelize_until;
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let done = AtomicUsize::new(0);
/// parallelize_until(&CancellationToken::new(), 4, 10, 1, |_piece| async {
///     done.fetch_add(1, Ordering::Relaxed);
/// })
/// .await;
/// assert_eq!(done.load(Ordering::Relaxed), 10);
/// # }
/// ```
pub async fn parallelize_until<F, Fut>(
    cancel: &CancellationToken,
    workers: usize,
    pieces: usize,
    chunk_size: usize,
    work: F,
) where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = ()>,
{
    if workers == 0 {
        return;
    }
    let chunk_size = chunk_size.max(1);
    let chunks = pieces.div_ceil(chunk_size);
    let work = &work;
    futures_util::stream::iter(0..chunks)
        .for_each_concurrent(workers, |chunk| async move {
            let start = chunk * chunk_size;
            for piece in start..(start + chunk_size).min(pieces) {
                if cancel.is_cancelled() {
                    return;
                }
                work(piece).await;
            }
        })
        .await;
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use parking_lot::Mutex;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn every_piece_once_by_at_most_the_workers() {
        let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let done = Mutex::new(Vec::new());
        parallelize_until(&CancellationToken::new(), 3, 10, 2, |piece| {
            let (running, most, done) = (&running, &most, &done);
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                done.lock().push(piece);
                running.fetch_sub(1, Ordering::SeqCst);
            }
        })
        .await;
        let mut done = done.into_inner();
        done.sort();
        assert_eq!(done, (0..10).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn no_piece_starts_once_cancelled() {
        let cancel = CancellationToken::new();
        let done = AtomicUsize::new(0);
        parallelize_until(&cancel, 1, 100, 1, |piece| {
            let (cancel, done) = (&cancel, &done);
            async move {
                done.fetch_add(1, Ordering::SeqCst);
                if piece == 4 {
                    cancel.cancel();
                }
            }
        })
        .await;
        assert_eq!(done.load(Ordering::SeqCst), 5);
        parallelize_until(&CancellationToken::new(), 2, 0, 1, |_| async { unreachable!() }).await;
        parallelize_until(&CancellationToken::new(), 0, 5, 1, |_| async { unreachable!("no workers") }).await;
    }
}
