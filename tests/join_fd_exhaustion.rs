//! The join service out of file descriptors (failure 5 of issue 12): with
//! a connection waiting that it cannot accept, it must neither spin nor
//! flood its log, and must serve again once descriptors are free. This
//! process lowers its own RLIMIT_NOFILE, so the test has a binary to
//! itself; the service runs in a thread of it, and the clients that
//! exhaust the descriptors are the test's own connections.

#[path = "support/join_server.rs"]
mod join_server;

use join_server::{ControlPlane, log};
use nix::sys::resource::{Resource, UsageWho, getrlimit, getrusage, setrlimit};
use std::net::{Ipv4Addr, TcpStream};
use std::time::Duration;

/// CPU time (user + system) of this whole process so far.
fn cpu() -> Duration {
    let u = getrusage(UsageWho::RUSAGE_SELF).unwrap();
    let d = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec() as u64) + Duration::from_micros(t.tv_usec() as u64)
    };
    d(u.user_time()) + d(u.system_time())
}

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

#[test]
fn out_of_descriptors_the_service_waits_quietly_and_recovers() {
    log::capture();
    let cp = ControlPlane::start(join_server::serve);
    let client = dcn::edge::join::client::JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    client.health().unwrap();

    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, open_fds() + 24, hard).unwrap();
    // Connect until this process has no descriptor left: the service then
    // has a connection queued that it cannot accept.
    let mut held: Vec<TcpStream> = Vec::new();
    let exhausted = loop {
        match cp.tcp_from(Ipv4Addr::LOCALHOST) {
            Ok(s) => held.push(s),
            Err(e) if e.raw_os_error() == Some(nix::libc::EMFILE) => break true,
            Err(e) => panic!("connecting: {e}"),
        }
        if held.len() > 100 {
            break false;
        }
    };
    // Let the first failure happen, then measure a while.
    std::thread::sleep(Duration::from_millis(300));
    let (cpu0, log0) = (cpu(), log::bytes());
    std::thread::sleep(Duration::from_secs(3));
    let (spent, logged) = (cpu() - cpu0, log::bytes() - log0);

    drop(held);
    setrlimit(Resource::RLIMIT_NOFILE, soft, hard).unwrap();
    assert!(exhausted, "the descriptors were not exhausted");
    let text = log::text();
    assert!(
        spent < Duration::from_millis(600),
        "{spent:?} of CPU in 3 s out of descriptors; log:\n{}",
        text.chars().take(2000).collect::<String>()
    );
    assert!(logged < 2048, "{logged} bytes of log in 3 s");
    let failures = text.lines().filter(|l| l.contains("accepting")).count();
    assert!(
        (1..=3).contains(&failures),
        "{failures} lines about accept:\n{}",
        text.chars().take(2000).collect::<String>()
    );
    assert!(
        text.contains("out of file descriptors"),
        "the log says what is wrong:\n{text}"
    );
    // Descriptors free again: served again within the longest wait.
    let mut ok = false;
    for _ in 0..30 {
        if client.health().is_ok() {
            ok = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(ok, "the service did not recover");
}
