//! One request's answer: GET and HEAD of a regular file inside the served
//! directory, whole (200) or one byte range (206, 416 when the range is
//! past the end), with an ETag that `If-Range` is compared against; 404
//! for anything else under any name, 405 for other methods. hyper has
//! parsed and bounded the request; this module only reads the file.

use super::body::FileBody;
use super::log::LogLine;
use super::range::{RangeSpec, parse_range};
use super::target::resolve;
use http_body_util::{Either, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use std::fs::File;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

/// A response body: a short text, or a file's bytes.
pub type Reply = Either<Full<Bytes>, FileBody>;

/// Answer `req` from the files under `root`.
pub async fn respond(req: Request<Incoming>, root: Arc<Path>, peer: SocketAddr) -> Response<Reply> {
    let method = req.method().clone();
    let target = req.uri().to_string();
    let log = |status: StatusCode| LogLine::new(peer, method.as_str(), &target, status.as_u16());
    if method != Method::GET && method != Method::HEAD {
        let status = StatusCode::METHOD_NOT_ALLOWED;
        log(status).write("");
        let mut r = text(status);
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let path = req.uri().path().to_string();
    // Path resolution and open touch the disk: off the async threads.
    let opened = tokio::task::spawn_blocking(move || open(&root, &path))
        .await
        .ok()
        .flatten();
    let Some(opened) = opened else {
        log(StatusCode::NOT_FOUND).write("");
        return text(StatusCode::NOT_FOUND);
    };
    let len = opened.len;
    // If-Range with another validator: the file changed, send all of it.
    let header = |name: header::HeaderName| req.headers().get(name).and_then(|v| v.to_str().ok());
    let range_applies = header(header::IF_RANGE).is_none_or(|v| v == opened.etag);
    let range = match header(header::RANGE).filter(|_| range_applies) {
        None => None,
        Some(r) => match parse_range(r, len) {
            RangeSpec::Whole => None,
            RangeSpec::Part(a, b) => Some((a, b)),
            RangeSpec::Unsatisfiable => {
                let status = StatusCode::RANGE_NOT_SATISFIABLE;
                log(status).write("");
                let mut r = text(status);
                set(&mut r, header::CONTENT_RANGE, format!("bytes */{len}"));
                return r;
            }
        },
    };
    let (status, start, count) = match range {
        Some((a, b)) => (StatusCode::PARTIAL_CONTENT, a, b - a + 1),
        None => (StatusCode::OK, 0, len),
    };
    let mut line = log(status);
    line.note = if range.is_some() {
        format!(" bytes {start}-{}/{len}", start + count - 1)
    } else {
        format!(" {len} bytes")
    };
    let body = if method == Method::HEAD {
        line.write("");
        Either::Left(Full::new(Bytes::new()))
    } else {
        Either::Right(FileBody::new(opened.file, start, count, line))
    };
    let mut r = Response::new(body);
    *r.status_mut() = status;
    set(
        &mut r,
        header::CONTENT_TYPE,
        "application/octet-stream".into(),
    );
    set(&mut r, header::CONTENT_LENGTH, count.to_string());
    set(&mut r, header::ACCEPT_RANGES, "bytes".into());
    if !opened.etag.is_empty() {
        set(&mut r, header::ETAG, opened.etag);
    }
    if range.is_some() {
        let range = format!("bytes {start}-{}/{len}", start + count - 1);
        set(&mut r, header::CONTENT_RANGE, range);
    }
    r
}

/// An opened regular file, its length and validator.
struct Opened {
    file: File,
    len: u64,
    etag: String,
}

fn open(root: &Path, path: &str) -> Option<Opened> {
    let real = resolve(root, path)?;
    // resolve() saw a regular file; if it was swapped since, O_NOFOLLOW
    // refuses a symbolic link and O_NONBLOCK keeps a FIFO from blocking
    // the open, and the type is checked again on what was opened.
    let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(&real)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let len = meta.len();
    let etag = meta
        .modified()
        .ok()
        .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| format!("\"{:x}-{:x}\"", len, d.as_secs()))
        .unwrap_or_default();
    Some(Opened { file, len, etag })
}

/// `404 Not Found` and the like, as a line of text.
pub fn text(status: StatusCode) -> Response<Reply> {
    let body = format!(
        "{} {}\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    let mut r = Response::new(Either::Left(Full::new(Bytes::from(body))));
    *r.status_mut() = status;
    set(&mut r, header::CONTENT_TYPE, "text/plain".into());
    r
}

fn set(r: &mut Response<Reply>, name: header::HeaderName, value: String) {
    if let Ok(v) = HeaderValue::from_str(&value) {
        r.headers_mut().insert(name, v);
    }
}
