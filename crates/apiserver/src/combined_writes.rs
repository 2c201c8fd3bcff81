//! Write combining for HTTP/2 connections.
//!
//! The HTTP/2 codec writes each frame to its socket and flushes it before it takes the next one,
//! so a connection carrying a hundred watches sends a hundred system calls for one update, one
//! per stream's DATA frame. [`CombinedWrites`] sits between the codec and the socket: on a
//! connection that opened with the HTTP/2 preface, writes go into a buffer, and a flush that
//! follows a write is deferred (the task is woken so it will flush again) until the codec flushes
//! with nothing written since, which it does once it has no frame left, or until the buffer holds
//! [`COMBINE_LIMIT`] bytes. One socket write then carries every frame the codec had ready.
//! HTTP/1.1 connections pass through untouched: hyper already queues their response chunks into
//! one vectored write per flush.
//!
//! Invariants: bytes reach the socket in the order they were written; a flush that returns
//! ready leaves nothing in the buffer unless the task has been woken to flush again; the buffer
//! never holds more than [`COMBINE_LIMIT`] bytes and is released once written, so an idle
//! connection holds none; shutting down writes the buffer first.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most bytes a connection combines into one socket write.
pub(crate) const COMBINE_LIMIT: usize = 64 * 1024;

/// The client preface that opens every HTTP/2 connection (RFC 9113, section 3.4).
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Nothing read yet.
    Undecided,
    /// An HTTP/2 connection: writes are combined.
    Combine,
    /// Writes go straight to the socket.
    PassThrough,
}

/// A connection's socket whose HTTP/2 writes are combined (see the module documentation).
pub(crate) struct CombinedWrites<I> {
    inner: I,
    mode: Mode,
    /// Bytes written and not yet sent; `buf[sent..]` is still to be sent.
    buf: Vec<u8>,
    sent: usize,
    /// Whether anything was written since the last flush.
    written_since_flush: bool,
}

impl<I> CombinedWrites<I> {
    /// Wraps a connection's socket.
    pub(crate) fn new(inner: I) -> Self {
        CombinedWrites { inner, mode: Mode::Undecided, buf: Vec::new(), sent: 0, written_since_flush: false }
    }

    fn pending(&self) -> usize {
        self.buf.len() - self.sent
    }
}

impl<I: AsyncWrite + Unpin> CombinedWrites<I> {
    /// Sends the whole buffer, then releases it.
    fn poll_send_buffer(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.buf.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.buf[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.buf = Vec::new();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }

    /// Takes `bufs` into the buffer, sending what it holds first when they would not fit; a write
    /// of at least [`COMBINE_LIMIT`] bytes goes to the socket directly.
    fn poll_combine(&mut self, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if self.pending() + total > COMBINE_LIMIT {
            ready!(self.poll_send_buffer(cx))?;
        }
        if total >= COMBINE_LIMIT {
            return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(COMBINE_LIMIT);
        }
        for b in bufs {
            self.buf.extend_from_slice(b);
        }
        self.written_since_flush |= total > 0;
        Poll::Ready(Ok(total))
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for CombinedWrites<I> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        if self.mode == Mode::Undecided {
            let read = &buf.filled()[before..];
            if !read.is_empty() {
                let n = read.len().min(HTTP2_PREFACE.len());
                self.mode = if read[..n] == HTTP2_PREFACE[..n] { Mode::Combine } else { Mode::PassThrough };
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for CombinedWrites<I> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.mode != Mode::Combine {
            return Pin::new(&mut self.inner).poll_write(cx, buf);
        }
        self.poll_combine(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.mode != Mode::Combine {
            return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        }
        self.poll_combine(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.pending() > 0 {
            if std::mem::take(&mut self.written_since_flush) {
                // More frames may follow in this poll; the codec flushes again once it has none,
                // and the wake makes sure it is polled to do so.
                cx.waker().wake_by_ref();
                return Poll::Ready(Ok(()));
            }
            ready!(self.poll_send_buffer(cx))?;
        }
        self.written_since_flush = false;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_send_buffer(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    /// A socket that records each write call, accepts at most `per_write` bytes a call, and
    /// answers `Pending` (waking at once) every other call when `choppy`.
    #[derive(Default)]
    struct Recorder {
        writes: Vec<Vec<u8>>,
        flushes: usize,
        per_write: Option<usize>,
        choppy: bool,
        calls: usize,
        input: Vec<u8>,
    }

    impl AsyncRead for Recorder {
        fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            let n = self.input.len().min(buf.remaining());
            buf.put_slice(&self.input[..n]);
            self.input.drain(..n);
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Recorder {
        fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            self.calls += 1;
            if self.choppy && self.calls % 2 == 1 {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let n = buf.len().min(self.per_write.unwrap_or(usize::MAX));
            self.writes.push(buf[..n].to_vec());
            Poll::Ready(Ok(n))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let all: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            self.as_mut().poll_write(cx, &all)
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.flushes += 1;
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Polls `f` until it is ready (the recorder wakes at once whenever it answers `Pending`).
    fn ready<T>(cx: &mut Context<'_>, mut f: impl FnMut(&mut Context<'_>) -> Poll<T>) -> T {
        for _ in 0..1000 {
            if let Poll::Ready(v) = f(cx) {
                return v;
            }
        }
        panic!("never ready");
    }

    fn opened_with(input: &[u8], socket: Recorder) -> (CombinedWrites<Recorder>, Arc<CountingWaker>) {
        let mut io = CombinedWrites::new(Recorder { input: input.to_vec(), ..socket });
        let wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut space = [0u8; 64];
        let mut rb = ReadBuf::new(&mut space);
        ready(&mut cx, |cx| Pin::new(&mut io).poll_read(cx, &mut rb)).unwrap();
        (io, wakes)
    }

    /// Writes `frame` as the codec does: a vectored write of head and payload, then a flush.
    fn write_frame(io: &mut CombinedWrites<Recorder>, cx: &mut Context<'_>, head: &[u8], payload: &[u8]) {
        let n =
            ready(cx, |cx| Pin::new(&mut *io).poll_write_vectored(cx, &[IoSlice::new(head), IoSlice::new(payload)]))
                .unwrap();
        assert_eq!(n, head.len() + payload.len());
        ready(cx, |cx| Pin::new(&mut *io).poll_flush(cx)).unwrap();
    }

    #[test]
    fn frames_of_one_poll_go_out_in_one_write_when_the_codec_flushes_with_nothing_new() {
        let (mut io, wakes) = opened_with(HTTP2_PREFACE, Recorder::default());
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut expected = Vec::new();
        for i in 0..100u8 {
            let payload = vec![i; 4400];
            write_frame(&mut io, &mut cx, &[0, 0, i], &payload);
            expected.extend_from_slice(&[0, 0, i]);
            expected.extend_from_slice(&payload);
        }
        // A frame that would not fit sends what is buffered first: 14 frames of 4,403 bytes fit
        // in 64 KiB, so 98 frames went out in 7 writes and 2 wait for the codec's last flush.
        assert_eq!(io.get_ref().writes.len(), 7);
        assert!(io.get_ref().writes.iter().all(|w| w.len() <= COMBINE_LIMIT));
        ready(&mut cx, |cx| Pin::new(&mut io).poll_flush(cx)).unwrap();
        assert_eq!(io.get_ref().writes.concat(), expected);
        assert!(wakes.0.load(Ordering::Relaxed) > 0, "a deferred flush wakes the task");
        assert_eq!(io.buf.capacity(), 0, "the buffer is released once sent");
    }

    #[test]
    fn a_flush_with_nothing_written_since_sends_the_buffer() {
        let (mut io, wakes) = opened_with(HTTP2_PREFACE, Recorder::default());
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        write_frame(&mut io, &mut cx, b"h1", b"one");
        write_frame(&mut io, &mut cx, b"h2", b"two");
        assert!(io.get_ref().writes.is_empty());
        assert_eq!(wakes.0.load(Ordering::Relaxed), 2);
        ready(&mut cx, |cx| Pin::new(&mut io).poll_flush(cx)).unwrap();
        assert_eq!(io.get_ref().writes, vec![b"h1oneh2two".to_vec()]);
        assert_eq!(io.get_ref().flushes, 1);
    }

    #[test]
    fn partial_and_pending_socket_writes_keep_every_byte_in_order() {
        let socket = Recorder { per_write: Some(1000), choppy: true, ..Recorder::default() };
        let (mut io, wakes) = opened_with(HTTP2_PREFACE, socket);
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut expected = Vec::new();
        for i in 0..40u32 {
            let payload: Vec<u8> = (0..5000u32).map(|j| (i * 7 + j) as u8).collect();
            write_frame(&mut io, &mut cx, &i.to_be_bytes(), &payload);
            expected.extend_from_slice(&i.to_be_bytes());
            expected.extend_from_slice(&payload);
        }
        let big = vec![9u8; COMBINE_LIMIT + 10];
        let mut off = 0;
        while off < big.len() {
            off += ready(&mut cx, |cx| Pin::new(&mut io).poll_write(cx, &big[off..])).unwrap();
        }
        expected.extend_from_slice(&big);
        ready(&mut cx, |cx| Pin::new(&mut io).poll_shutdown(cx)).unwrap();
        assert_eq!(io.get_ref().writes.concat(), expected);
    }

    #[test]
    fn http1_connections_write_straight_through() {
        let (mut io, wakes) = opened_with(b"GET /api HTTP/1.1\r\n", Recorder::default());
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        write_frame(&mut io, &mut cx, b"HTTP/1.1 200 OK\r\n", b"body");
        write_frame(&mut io, &mut cx, b"", b"more");
        assert_eq!(io.get_ref().writes, vec![b"HTTP/1.1 200 OK\r\nbody".to_vec(), b"more".to_vec()]);
        assert_eq!(io.get_ref().flushes, 2);
        assert_eq!(wakes.0.load(Ordering::Relaxed), 0);
    }

    impl<I> CombinedWrites<I> {
        fn get_ref(&self) -> &I {
            &self.inner
        }
    }
}
