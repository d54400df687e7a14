//! The slow-reader bound: a client that asks for a file and then reads it
//! a few bytes at a time would hold its connection (and the file) for as
//! long as it likes. [`Metered`] wraps the socket and records how much was
//! written and whether writing had to wait for the client; [`watchdog`]
//! ends the connection when, in one [`Limits::stall_window`], the server
//! waited on the client and yet moved less than [`Limits::min_bytes`].
//! Waiting for a request is bounded elsewhere (hyper's header timeout);
//! a slow disk never counts against the client.
//!
//! [`Limits::stall_window`]: super::Limits::stall_window
//! [`Limits::min_bytes`]: super::Limits::min_bytes

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What the watchdog reads about one connection.
#[derive(Default)]
pub struct Progress {
    written: AtomicU64,
    /// A write is waiting for the client to make room.
    blocked: AtomicBool,
    /// A write waited at some point in the current window.
    blocked_in_window: AtomicBool,
}

impl Progress {
    fn wrote(&self, n: usize) {
        self.written.fetch_add(n as u64, Ordering::Relaxed);
        self.blocked.store(false, Ordering::Relaxed);
    }

    fn waits(&self) {
        self.blocked.store(true, Ordering::Relaxed);
        self.blocked_in_window.store(true, Ordering::Relaxed);
    }
}

/// A socket whose writes are counted into a [`Progress`].
pub struct Metered<T> {
    io: T,
    progress: Arc<Progress>,
}

impl<T> Metered<T> {
    pub fn new(io: T, progress: Arc<Progress>) -> Self {
        Metered { io, progress }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Metered<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Metered<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.count(&r);
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.count(&r);
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        if r.is_pending() {
            self.progress.waits();
        }
        r
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<T> Metered<T> {
    fn count(&self, r: &Poll<io::Result<usize>>) {
        match r {
            Poll::Ready(Ok(n)) => self.progress.wrote(*n),
            Poll::Pending => self.progress.waits(),
            Poll::Ready(Err(_)) => {}
        }
    }
}

/// Completes (with the reason, for the log) when the connection must be
/// closed for reading too slowly; runs for ever otherwise.
pub async fn watchdog(progress: &Progress, window: Duration, min_bytes: u64) -> String {
    let mut last = progress.written.load(Ordering::Relaxed);
    loop {
        tokio::time::sleep(window).await;
        let now = progress.written.load(Ordering::Relaxed);
        let moved = now - last;
        last = now;
        // A write still waiting carries the wait into the next window.
        let still = progress.blocked.load(Ordering::Relaxed);
        let waited = progress.blocked_in_window.swap(still, Ordering::Relaxed);
        if waited && moved < min_bytes {
            return format!(
                "the client read {moved} bytes in {:.0?} while the server waited on it (the least allowed is {min_bytes})",
                window
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Writes into a 1 KiB pipe whose other end `read` drains (or not).
    async fn run(read: bool, window: Duration, for_at_most: Duration) -> Option<String> {
        let (server, mut client) = tokio::io::duplex(1024);
        let progress = Arc::new(Progress::default());
        let mut io = Metered::new(server, progress.clone());
        let writer = async {
            while io.write_all(&[7u8; 512]).await.is_ok() {}
            std::future::pending::<()>().await;
        };
        let reader = async {
            let mut buf = [0u8; 4096];
            while read && client.read(&mut buf).await.is_ok() {}
            std::future::pending::<()>().await;
        };
        let dog = tokio::time::timeout(for_at_most, watchdog(&progress, window, 1));
        tokio::select! {
            why = dog => why.ok(),
            _ = writer => unreachable!(),
            _ = reader => unreachable!(),
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_client_that_stops_reading_is_cut_off() {
        let why = run(false, Duration::from_millis(50), Duration::from_secs(5)).await;
        let why = why.expect("the watchdog let a stalled client be");
        assert!(why.contains("while the server waited on it"), "{why}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_client_that_reads_is_not() {
        let why = run(true, Duration::from_millis(100), Duration::from_millis(600)).await;
        assert_eq!(why, None);
    }

    /// An idle connection (nothing to write) is not the watchdog's to end:
    /// the header timeout is.
    #[tokio::test(flavor = "current_thread")]
    async fn idle_is_not_stalled() {
        let progress = Progress::default();
        let r = tokio::time::timeout(
            Duration::from_millis(300),
            watchdog(&progress, Duration::from_millis(50), 1000),
        )
        .await;
        assert!(r.is_err());
    }
}
