//! A response body that reads a byte range of a file in chunks, each read
//! on tokio's blocking pool, only as fast as hyper sends them: memory per
//! response is one chunk, and no thread waits on a slow client. The
//! request's log line is written when the body is dropped (all sent, or
//! the client gone), with what was sent and how long it took.

use super::limits::CHUNK;
use super::log::LogLine;
use hyper::body::{Body, Bytes, Frame, SizeHint};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use tokio::task::JoinHandle;

/// Bytes `offset..offset + remaining` of a file.
pub struct FileBody {
    file: Arc<File>,
    offset: u64,
    remaining: u64,
    sent: u64,
    reading: Option<JoinHandle<io::Result<Bytes>>>,
    log: LogLine,
    failed: bool,
}

impl FileBody {
    pub fn new(file: File, offset: u64, len: u64, log: LogLine) -> FileBody {
        FileBody {
            file: Arc::new(file),
            offset,
            remaining: len,
            sent: 0,
            reading: None,
            log,
            failed: false,
        }
    }
}

/// Up to `len` bytes at `offset`; fewer only at the end of the file.
fn read_chunk(file: &File, offset: u64, len: usize) -> io::Result<Bytes> {
    let mut buf = vec![0u8; len];
    let mut filled = 0;
    while filled < len {
        match file.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(Bytes::from(buf))
}

impl Body for FileBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        if self.remaining == 0 {
            return Poll::Ready(None);
        }
        let this = &mut *self;
        let reading = this.reading.get_or_insert_with(|| {
            let (file, offset) = (this.file.clone(), this.offset);
            let len = this.remaining.min(CHUNK as u64) as usize;
            tokio::task::spawn_blocking(move || read_chunk(&file, offset, len))
        });
        let result = ready!(Pin::new(reading).poll(cx));
        this.reading = None;
        let error = match result {
            Ok(Ok(chunk)) if !chunk.is_empty() => {
                let n = chunk.len() as u64;
                this.offset += n;
                this.remaining -= n;
                this.sent += n;
                return Poll::Ready(Some(Ok(Frame::data(chunk))));
            }
            // The file shrank under us: the response cannot be completed,
            // and an error makes hyper close the connection rather than
            // let the client wait for bytes that will not come.
            Ok(Ok(_)) => io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file shrank while it was sent",
            ),
            Ok(Err(e)) => e,
            Err(e) => io::Error::other(e),
        };
        this.failed = true;
        Poll::Ready(Some(Err(error)))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

impl Drop for FileBody {
    fn drop(&mut self) {
        if self.remaining == 0 {
            self.log.write("");
        } else {
            let why = if self.failed {
                "reading the file failed"
            } else {
                "the connection ended"
            };
            self.log.write(&format!(
                ": {why} after {} of {} bytes",
                self.sent,
                self.sent + self.remaining
            ));
        }
    }
}
