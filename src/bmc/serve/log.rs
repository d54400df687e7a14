//! One log line per request, as the operator watching a BMC boot wants
//! it: who, what, the answer, how much and how long. The request target
//! comes from the network, so it is escaped and shortened before it is
//! printed: no client can forge or flood log lines through it.

use std::net::SocketAddr;
use std::time::Instant;

/// Longest request target printed, in characters.
const MAX_TARGET: usize = 200;

/// The log line of one request, written once its response is done.
pub struct LogLine {
    request: String,
    /// What was sent, such as ` bytes 0-2047/1048576`.
    pub note: String,
    started: Instant,
}

impl LogLine {
    pub fn new(peer: SocketAddr, method: &str, target: &str, status: u16) -> LogLine {
        LogLine {
            request: format!(
                "{peer} \"{} {}\" {status}",
                printable(method),
                printable(target)
            ),
            note: String::new(),
            started: Instant::now(),
        }
    }

    /// Log the request, `outcome` saying how the response ended when it
    /// did not end well.
    pub fn write(&self, outcome: &str) {
        tracing::info!(
            "{}{}{outcome} ({:.1}s)",
            self.request,
            self.note,
            self.started.elapsed().as_secs_f64()
        );
    }
}

/// `s` with control characters, quotes and backslashes escaped, and cut
/// to [`MAX_TARGET`] characters.
fn printable(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(MAX_TARGET)
        .flat_map(|c| {
            if c.is_control() || c == '"' || c == '\\' {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if s.chars().count() > MAX_TARGET {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_cannot_forge_lines() {
        assert_eq!(printable("/edge.iso"), "/edge.iso");
        assert_eq!(
            printable("/a\r\n1.2.3.4 \"GET /x\" 200\u{1b}[2J"),
            "/a\\r\\n1.2.3.4 \\\"GET /x\\\" 200\\u{1b}[2J"
        );
        let long = printable(&"a".repeat(10_000));
        assert_eq!(long.chars().count(), MAX_TARGET + 1);
    }
}
