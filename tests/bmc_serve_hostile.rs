//! `dcn image serve` as the operator runs it (the binary, default limits)
//! against hostile clients on loopback: a request line that never ends
//! (issue 12, failure 3: memory) and slowloris connections from one
//! address (failure 4: other clients must still be served). The server's
//! memory is read from /proc/<pid>/status while it runs.

#[path = "support/raw_http.rs"]
mod raw_http;

use raw_http::{Ended, client, closed_within, connect_from, content, get_from, read_reply};
use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const LEN: usize = 1024 * 1024;

/// A `dcn image serve` child process on 127.0.0.1, killed when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
}

impl Served {
    fn start(dir: &Path) -> Served {
        std::fs::write(dir.join("edge.iso"), content(LEN)).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_dcn"))
            .args(["image", "serve", dir.to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        // Reads the log to its end, so the server never blocks on it.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("on http://").nth(1) {
                    let addr = rest.split('/').next().unwrap().to_string();
                    let _ = tx.send(addr);
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the server did not say where it listens")
            .parse()
            .unwrap();
        Served { child, addr }
    }

    /// The server's peak resident memory so far, in KiB.
    fn peak_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Failure 3: 64 connections from 8 addresses each send 5 MiB of a
/// request line with no newline (320 MiB in all). Each is closed once its
/// head passes the limit, the server's memory stays bounded, and it goes
/// on serving.
#[test]
fn a_request_line_without_end_costs_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let server = Served::start(dir.path());
    let before = server.peak_kib();
    let addr = server.addr;
    let started = Instant::now();
    let senders: Vec<_> = (0..64u8)
        .map(|i| {
            std::thread::spawn(move || {
                let mut conn = connect_from(client(1 + i % 8), addr).unwrap();
                let _ = conn.write_all(b"GET /");
                let line = vec![b'a'; 64 * 1024];
                for _ in 0..80 {
                    if conn.write_all(&line).is_err() {
                        break;
                    }
                }
                closed_within(&mut conn, Duration::from_secs(10))
            })
        })
        .collect();
    for s in senders {
        assert!(s.join().unwrap(), "a connection was left open");
    }
    let after = server.peak_kib();
    eprintln!(
        "peak RSS {before} KiB before, {after} KiB after 320 MiB of request line, in {:.1?}",
        started.elapsed()
    );
    assert!(
        after < before + 32 * 1024,
        "the server grew from {before} KiB to {after} KiB"
    );
    let r = get_from(client(9), addr, "/edge.iso", Duration::from_secs(5)).unwrap();
    assert_eq!((r.status, r.body.len()), (200, LEN));
}

/// Failure 4: one address opens 64 connections and sends a byte of a
/// request head to each now and then. It gets its share of connections
/// (the rest are refused with a 503 that says why), and a client at
/// another address still gets its file at once.
#[test]
fn slowloris_from_one_address_does_not_lock_out_others() {
    let dir = tempfile::tempdir().unwrap();
    let server = Served::start(dir.path());
    let attacker = Ipv4Addr::new(127, 0, 2, 1);
    let conns: Vec<_> = (0..64)
        .map(|_| connect_from(attacker, server.addr).unwrap())
        .collect();
    // A refused connection is answered at once; an admitted one waits.
    std::thread::sleep(Duration::from_secs(1));
    let (mut held, mut refused) = (Vec::new(), 0);
    for mut conn in conns {
        match read_reply(&mut conn, Duration::from_millis(20)) {
            Ok(r) => {
                assert_eq!(r.status, 503, "{r:?}");
                let body = String::from_utf8_lossy(&r.body);
                assert!(body.contains("the most one client may hold"), "{body}");
                refused += 1;
            }
            Err(Ended::TimedOut(0)) => held.push(conn),
            Err(e) => panic!("{e:?}"),
        }
    }
    let holds = held.len();
    let head = b"GET /edge.iso HTTP/1.1\r\nX-Slow: ";
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dribbler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for c in &mut held {
                    let _ = c.write_all(&[head[i.min(head.len() - 1)]]);
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let r = get_from(client(1), server.addr, "/edge.iso", Duration::from_secs(3));
    let took = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    dribbler.join().unwrap();
    let r = r.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, content(LEN));
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(holds, 16, "connections one client may hold");
    assert_eq!(refused, 48);
}
