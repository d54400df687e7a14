//! The join service's hold on connections: capped per client address and
//! in all, and each phase of a connection (TLS handshake, request headers,
//! request body, the whole connection) under a time limit, so that idle or
//! slow clients cannot keep others out. Short limits here; the defaults
//! are `dcn::centre::serve::Limits::default()`.

#[path = "support/join_server.rs"]
mod join_server;

use dcn::centre::serve::Limits;
use join_server::ControlPlane;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::time::{Duration, Instant};

fn service(limits: Limits) -> ControlPlane {
    ControlPlane::start(move |host, listen, accounts| {
        let _ =
            dcn::centre::serve::serve_with(host, join_server::recipes(), listen, limits, accounts);
    })
}

fn ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, last)
}

/// How long until the server closes `s` (reading and discarding what it
/// sends), or `None` if it is still open after `wait`.
fn closed_within(s: &mut impl Read, wait: Duration) -> Option<Duration> {
    let start = Instant::now();
    let mut buf = [0u8; 512];
    while start.elapsed() < wait {
        match s.read(&mut buf) {
            Ok(0) => return Some(start.elapsed()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Some(start.elapsed()),
        }
    }
    None
}

fn health(tls: &mut join_server::Tls) -> String {
    tls.write_all(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    let _ = tls.read_to_string(&mut out);
    out
}

#[test]
fn connections_are_capped_per_address_and_in_all() {
    let cp = service(Limits {
        max_connections: 5,
        per_address: 3,
        ..Limits::default()
    });
    let mut held: Vec<TcpStream> = (0..3).map(|_| cp.tcp_from(ip(1)).unwrap()).collect();
    // A fourth from the same address is closed at once.
    let mut fourth = cp.tcp_from(ip(1)).unwrap();
    fourth
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    assert!(
        closed_within(&mut fourth, Duration::from_secs(2)).is_some(),
        "a fourth connection from one address stays open"
    );
    // Another address still gets in, up to five in all.
    let mut other = cp.tls_from(ip(2)).unwrap();
    assert!(health(&mut other).starts_with("HTTP/1.1 200"));
    held.push(cp.tcp_from(ip(2)).unwrap());
    held.push(cp.tcp_from(ip(2)).unwrap());
    // Now all five places are taken: a sixth waits (not accepted)…
    let mut sixth = cp.tcp_from(ip(3)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    sixth
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    assert!(closed_within(&mut sixth, Duration::from_millis(500)).is_none());
    drop(sixth);
    // …until one is given back.
    drop(held.remove(0));
    let mut later = cp.tls_from(ip(3)).unwrap();
    assert!(health(&mut later).starts_with("HTTP/1.1 200"));
}

#[test]
fn idle_and_slow_clients_are_cut_off() {
    let second = Duration::from_secs(1);
    let cp = service(Limits {
        handshake: second,
        headers: second,
        body: second,
        connection: Duration::from_secs(3),
        ..Limits::default()
    });
    let within = |what: &str, s: &mut dyn Read, limit: Duration| {
        let took = closed_within(&mut &mut *s, Duration::from_secs(8));
        assert!(
            took.is_some_and(|t| t <= limit),
            "{what}: closed after {took:?}"
        );
    };
    let slow = Duration::from_millis(2500);

    // No TLS handshake at all.
    let mut tcp = cp.tcp_from(ip(1)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    within("a silent client", &mut tcp, slow);

    // A handshake, then nothing.
    let mut tls = cp.tls_from(ip(1)).unwrap();
    tls.sock
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    within("no request after the handshake", &mut tls, slow);

    // Headers that never end, one byte every 200 ms.
    let mut tls = cp.tls_from(ip(1)).unwrap();
    tls.sock
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    tls.write_all(b"GET /v1/health HTTP/1.1\r\n").unwrap();
    let start = Instant::now();
    let mut cut = None;
    while start.elapsed() < Duration::from_secs(8) {
        if tls.write_all(b"X").and_then(|_| tls.flush()).is_err()
            || closed_within(&mut tls, Duration::from_millis(200)).is_some()
        {
            cut = Some(start.elapsed());
            break;
        }
    }
    assert!(cut.is_some_and(|t| t <= slow), "trickled headers: {cut:?}");

    // A body announced and never sent: refused in time.
    let mut tls = cp.tls_from(ip(1)).unwrap();
    tls.sock
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    tls.write_all(b"POST /v2/join HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        .unwrap();
    let start = Instant::now();
    let mut answer = Vec::new();
    let mut buf = [0u8; 512];
    while start.elapsed() < Duration::from_secs(8) && !answer.ends_with(b"}") {
        match tls.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 408") && start.elapsed() <= slow,
        "a body that never comes: {answer:?} after {:?}",
        start.elapsed()
    );

    // Requests one after another on one connection: cut at 3 s in all.
    let mut tls = cp.tls_from(ip(4)).unwrap();
    let start = Instant::now();
    let mut cut = false;
    while start.elapsed() < Duration::from_secs(8) {
        let sent = tls.write_all(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n");
        let mut buf = [0u8; 4096];
        if sent.is_err() || matches!(tls.read(&mut buf), Ok(0) | Err(_)) {
            cut = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(
        cut && start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}
