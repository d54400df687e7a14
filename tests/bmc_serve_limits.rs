//! Each bound of `dcn image serve` ([`dcn::bmc::ImageServerLimits`]) on
//! real sockets, with the times shortened so each test takes seconds: the
//! request head's deadline (slowloris from many addresses, idle
//! keep-alive), the slow-reader bound, the caps on connections in all and
//! per client, and the limits on heads. After each, the server still
//! serves.

#[path = "support/raw_http.rs"]
mod raw_http;

use dcn::bmc::{ImageServer, ImageServerLimits};
use raw_http::{Ended, client, closed_within, connect_from, content, get_from, read_reply};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

const LEN: usize = 100_000;

/// Short times, small caps.
fn limits() -> ImageServerLimits {
    ImageServerLimits {
        max_connections: 16,
        max_per_client: 2,
        head_timeout: Duration::from_secs(1),
        stall_window: Duration::from_millis(300),
        min_bytes: 64 * 1024,
        ..ImageServerLimits::default()
    }
}

fn start(dir: &Path, limits: ImageServerLimits) -> SocketAddr {
    std::fs::write(dir.join("edge.iso"), content(LEN)).unwrap();
    let server = ImageServer::bind(dir, "127.0.0.1:0".parse().unwrap())
        .unwrap()
        .with_limits(limits);
    let addr = server.local_addr().unwrap();
    std::thread::spawn(move || server.run());
    addr
}

fn still_serves(addr: SocketAddr) {
    let r = get_from(client(200), addr, "/edge.iso", Duration::from_secs(5)).unwrap();
    assert_eq!((r.status, r.body), (200, content(LEN)));
}

/// Slowloris from as many addresses as there are slots: every slot is
/// taken by a client that sends a byte of its head every 100 ms. The head
/// deadline ends each of them, however busy they keep it, and another
/// client is served within a few seconds.
#[test]
fn slow_heads_are_cut_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path(), limits());
    let mut slow: Vec<_> = (0..16)
        .map(|i| connect_from(client(1 + i / 2), addr).unwrap())
        .collect();
    let started = Instant::now();
    let victim = std::thread::spawn(move || {
        // Refused (503) while the slots are taken; retried.
        loop {
            match get_from(client(100), addr, "/edge.iso", Duration::from_secs(5)) {
                Ok(r) if r.status == 200 => return (r, started.elapsed()),
                Ok(r) => assert_eq!(r.status, 503, "{r:?}"),
                Err(e) => panic!("{e:?}"),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let mut open = slow.len();
    while open > 0 && started.elapsed() < Duration::from_secs(4) {
        open = 0;
        for c in &mut slow {
            if c.write_all(b"X").is_ok() {
                open += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(open, 0, "slow clients still connected after 4 s");
    let (r, took) = victim.join().unwrap();
    assert_eq!(r.body, content(LEN));
    assert!(took < Duration::from_secs(3), "served after {took:?}");
}

/// A keep-alive connection left idle is closed at the head deadline.
#[test]
fn idle_connections_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path(), limits());
    let mut conn = connect_from(client(1), addr).unwrap();
    conn.write_all(b"HEAD /edge.iso HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let r = read_reply_head(&mut conn);
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    let started = Instant::now();
    assert!(closed_within(&mut conn, Duration::from_secs(3)));
    assert!(started.elapsed() >= Duration::from_millis(900));
}

/// The head of a HEAD response (which has no body to wait for).
fn read_reply_head(conn: &mut std::net::TcpStream) -> String {
    let mut buf = Vec::new();
    let mut b = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        std::io::Read::read_exact(conn, &mut b).unwrap();
        buf.push(b[0]);
    }
    String::from_utf8(buf).unwrap()
}

/// A client that asks for a large file and does not read it is
/// disconnected within a couple of stall windows; one that reads gets it.
#[test]
fn slow_readers_are_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path(), limits());
    let big = 64 * 1024 * 1024;
    let f = std::fs::File::create(dir.path().join("big.iso")).unwrap();
    f.set_len(big).unwrap();
    let mut conn = connect_from(client(1), addr).unwrap();
    conn.write_all(b"GET /big.iso HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    // Now read as fast as possible: the connection ends early.
    match read_reply(&mut conn, Duration::from_secs(10)) {
        Err(Ended::Closed(n)) => assert!((n as u64) < big / 2, "{n} bytes"),
        other => panic!("a stalled reader was not cut off: {other:?}"),
    }
    let r = get_from(client(2), addr, "/big.iso", Duration::from_secs(30)).unwrap();
    assert_eq!((r.status, r.body.len() as u64), (200, big));
    still_serves(addr);
}

/// Over the caps, a connection gets a 503 that says which cap.
#[test]
fn caps_answer_503_and_say_why() {
    let dir = tempfile::tempdir().unwrap();
    // Idle connections hold their slots for this test.
    let patient = ImageServerLimits {
        head_timeout: Duration::from_secs(30),
        ..limits()
    };
    let addr = start(dir.path(), patient);
    let _mine: Vec<_> = (0..2)
        .map(|_| connect_from(client(1), addr).unwrap())
        .collect();
    let r = get_from(client(1), addr, "/edge.iso", Duration::from_secs(2)).unwrap();
    assert_eq!(r.status, 503);
    assert!(
        r.head.to_ascii_lowercase().contains("retry-after: 5"),
        "{}",
        r.head
    );
    assert!(String::from_utf8_lossy(&r.body).contains("close one first"));
    let _all: Vec<_> = (0..14)
        .map(|i| connect_from(client(10 + i / 2), addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let r = get_from(client(50), addr, "/edge.iso", Duration::from_secs(2)).unwrap();
    assert_eq!(r.status, 503);
    assert!(String::from_utf8_lossy(&r.body).contains("try again shortly"));
}

/// Heads past the limits, requests that are not HTTP/1.1 and requests
/// with bodies: each gets an error or a closed connection at once, never
/// a wait, and the server goes on serving.
#[test]
fn oversized_and_malformed_heads() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path(), limits());
    let long_header = format!(
        "GET /edge.iso HTTP/1.1\r\nHost: x\r\nX-Long: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    let many_headers = format!(
        "GET /edge.iso HTTP/1.1\r\n{}\r\n",
        (0..100)
            .map(|i| format!("X-{i}: y\r\n"))
            .collect::<String>()
    );
    let cases: Vec<(&str, Vec<u8>, &[u16])> = vec![
        ("a header line over 16 KiB", long_header.into_bytes(), &[431]),
        ("100 header lines", many_headers.into_bytes(), &[431]),
        (
            "a TLS client hello",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(),
            &[400],
        ),
        (
            "the HTTP/2 preface",
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
            &[400, 505],
        ),
        (
            "a bare line feed in the request line",
            b"GET /edge.iso\nHTTP/1.1\r\n\r\n".to_vec(),
            &[400],
        ),
        (
            "a NUL in the request line",
            b"GET /edge\0.iso HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            &[400],
        ),
        (
            "a POST announcing 10 GB it never sends",
            b"POST /edge.iso HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\n"
                .to_vec(),
            &[405],
        ),
        // RFC 9112: chunked wins, and the connection is closed after.
        (
            "both Content-Length and chunked",
            b"GET /edge.iso HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(),
            &[200, 400],
        ),
    ];
    for (what, bytes, want) in cases {
        let mut conn = connect_from(client(1), addr).unwrap();
        let _ = conn.write_all(&bytes);
        let started = Instant::now();
        let got = read_reply(&mut conn, Duration::from_secs(3));
        eprintln!("{what}: {got:?}");
        match got {
            Ok(r) => assert!(want.contains(&r.status), "{what}: {r:?}"),
            // A reset may overtake the answer when the server closes with
            // unread input; closing is the point.
            Err(Ended::Closed(_)) => {}
            Err(e) => panic!("{what}: {e:?}"),
        }
        assert!(closed_within(&mut conn, Duration::from_secs(2)), "{what}");
        assert!(started.elapsed() < Duration::from_secs(2), "{what}");
    }
    still_serves(addr);
}
