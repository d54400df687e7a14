//! What the join service does when `accept` fails. Out of file descriptors
//! (EMFILE, ENFILE) or kernel memory (ENOBUFS, ENOMEM), the connection stays
//! queued and the listener stays readable, so retrying at once spins a core
//! and writes a log line per spin (the probe measured 253 MB of log in
//! 10 s). Instead: wait, doubling from 10 ms to 1 s, until an accept
//! succeeds; and log the first failure, then one summary per
//! [`SUMMARY_EVERY`], then the recovery.

use std::io;
use std::time::{Duration, Instant};

const FIRST_DELAY: Duration = Duration::from_millis(10);
const MAX_DELAY: Duration = Duration::from_secs(1);

/// At most one log line per this while `accept` keeps failing.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(10);

/// The failures since the last successful accept.
#[derive(Debug, Default)]
pub struct AcceptFailures {
    delay: Option<Duration>,
    /// Failures since the last line logged, and since the last success.
    unlogged: u64,
    total: u64,
    last_logged: Option<Instant>,
}

/// After a failure: how long to wait, and what to log (if anything).
#[derive(Debug, PartialEq, Eq)]
pub struct Verdict {
    pub wait: Duration,
    pub log: Option<String>,
}

impl AcceptFailures {
    /// `accept` failed with `e` at `now`.
    pub fn failed(&mut self, e: &io::Error, now: Instant) -> Verdict {
        self.total += 1;
        let wait = if only_this_connection(e) {
            Duration::ZERO
        } else {
            let next = self.delay.map_or(FIRST_DELAY, |d| (d * 2).min(MAX_DELAY));
            self.delay = Some(next);
            next
        };
        let log = match self.last_logged {
            None => Some(format!("accepting a connection failed: {e}{}", advice(e))),
            Some(t) if now.duration_since(t) >= SUMMARY_EVERY => Some(format!(
                "accepting connections still fails: {} more failure(s) in {}s, the last: {e}{}",
                self.unlogged + 1,
                now.duration_since(t).as_secs(),
                advice(e)
            )),
            Some(_) => None,
        };
        if log.is_some() {
            self.last_logged = Some(now);
            self.unlogged = 0;
        } else {
            self.unlogged += 1;
        }
        Verdict { wait, log }
    }

    /// `accept` succeeded: what to log, if failures came before.
    pub fn succeeded(&mut self) -> Option<String> {
        let total = std::mem::take(&mut self.total);
        *self = AcceptFailures::default();
        (total > 1).then(|| format!("accepting connections again, after {total} failures"))
    }
}

/// Errors about one connection (it went away before it was accepted): the
/// next accept may work at once.
fn only_this_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}

fn advice(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(nix::libc::EMFILE) => {
            "; the join service is out of file descriptors (raise LimitNOFILE= of dcn-join, or look for a client holding many connections); waiting before retrying"
        }
        Some(nix::libc::ENFILE | nix::libc::ENOBUFS | nix::libc::ENOMEM) => {
            "; the system is out of file descriptors or memory; waiting before retrying"
        }
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emfile() -> io::Error {
        io::Error::from_raw_os_error(nix::libc::EMFILE)
    }

    #[test]
    fn out_of_descriptors_backs_off_and_logs_rarely() {
        let mut f = AcceptFailures::default();
        let t0 = Instant::now();
        let first = f.failed(&emfile(), t0);
        assert_eq!(first.wait, Duration::from_millis(10));
        let line = first.log.unwrap();
        assert!(line.contains("out of file descriptors"), "{line}");
        let mut waits = vec![];
        let mut logged = 0;
        // 1000 failures over 25 s: three lines, the wait capped at 1 s.
        for i in 1..1000u32 {
            let v = f.failed(&emfile(), t0 + Duration::from_millis(25 * u64::from(i)));
            waits.push(v.wait);
            logged += usize::from(v.log.is_some());
        }
        assert_eq!(waits[0], Duration::from_millis(20));
        assert_eq!(*waits.last().unwrap(), Duration::from_secs(1));
        assert_eq!(logged, 2, "one summary per 10 s");
        let back = f.succeeded().unwrap();
        assert!(back.contains("after 1000 failures"), "{back}");
        // Reset: the next failure is logged and waits briefly again.
        let again = f.failed(&emfile(), t0 + Duration::from_secs(30));
        assert_eq!(again.wait, Duration::from_millis(10));
        assert!(again.log.is_some());
        assert_eq!(f.succeeded(), None, "one failure needs no recovery line");
    }

    #[test]
    fn an_aborted_connection_is_not_waited_for_but_still_logged_rarely() {
        let mut f = AcceptFailures::default();
        let t0 = Instant::now();
        let aborted = io::Error::from(io::ErrorKind::ConnectionAborted);
        assert_eq!(f.failed(&aborted, t0).wait, Duration::ZERO);
        let v = f.failed(&aborted, t0 + Duration::from_secs(1));
        assert_eq!(
            v,
            Verdict {
                wait: Duration::ZERO,
                log: None
            }
        );
    }
}
