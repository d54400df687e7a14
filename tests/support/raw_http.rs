//! A raw HTTP/1.1 client for tests that play hostile clients of
//! `dcn image serve`: connections from chosen loopback addresses (all of
//! 127.0.0.0/8 reaches the server, so each address is another "client"),
//! requests written byte by byte or not at all, and responses read with a
//! deadline.

#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A connection to `server` from `from` (a 127.x.y.z address).
pub fn connect_from(from: Ipv4Addr, server: SocketAddr) -> std::io::Result<TcpStream> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let stream = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(from.into(), 0))?;
        socket.connect(server).await
    })?;
    let stream = stream.into_std()?;
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// The nth client address: 127.0.1.n.
pub fn client(n: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 1, n)
}

/// A response as far as these tests look at it.
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} and {} bytes of body", self.head, self.body.len())
    }
}

/// How a connection ended when no whole response came.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The server closed the connection (EOF or reset), after `n` bytes.
    Closed(usize),
    /// Nothing more arrived before the deadline, after `n` bytes.
    TimedOut(usize),
}

/// Read one response (a head and its Content-Length body) within `limit`.
pub fn read_reply(conn: &mut TcpStream, limit: Duration) -> Result<Reply, Ended> {
    let deadline = Instant::now() + limit;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    // Where the body starts and how long it is, once the head is in.
    let mut framing: Option<(usize, usize)> = None;
    loop {
        if framing.is_none()
            && let Some(end) = find(&buf, b"\r\n\r\n")
        {
            let head = String::from_utf8_lossy(&buf[..end]);
            let len = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            framing = Some((end + 4, len));
        }
        if let Some((start, len)) = framing
            && buf.len() >= start + len
        {
            let head = String::from_utf8_lossy(&buf[..start - 4]).into_owned();
            let status = head
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            return Ok(Reply {
                status,
                head,
                body: buf[start..start + len].to_vec(),
            });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Ended::TimedOut(buf.len()));
        }
        conn.set_read_timeout(Some(left)).unwrap();
        match conn.read(&mut chunk) {
            Ok(0) => return Err(Ended::Closed(buf.len())),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(Ended::TimedOut(buf.len()));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Err(Ended::Closed(buf.len())),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// GET `path` on a new connection from `from`, the answer within `limit`.
pub fn get_from(
    from: Ipv4Addr,
    server: SocketAddr,
    path: &str,
    limit: Duration,
) -> Result<Reply, Ended> {
    let mut conn = connect_from(from, server).map_err(|_| Ended::Closed(0))?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    conn.write_all(req.as_bytes())
        .map_err(|_| Ended::Closed(0))?;
    read_reply(&mut conn, limit)
}

/// Whether the server has closed `conn`: reads (and drops) what is
/// pending until EOF or an error, or until `limit` passes with the
/// connection still open.
pub fn closed_within(conn: &mut TcpStream, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut chunk = [0u8; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        conn.set_read_timeout(Some(left)).unwrap();
        match conn.read(&mut chunk) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return true,
        }
    }
}

/// The test's file: `len` bytes of a pattern that shows misplaced ranges.
pub fn content(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}
