//! Logs and progress go to stderr, results to stdout. Messages are plain
//! sentences: INFO lines print as they are, other levels get a prefix. The
//! last lines printed are kept ([`recent_lines`]), for a failure report.
//! Work done for one subject on its own thread (a node of a site deploy)
//! names it at the start of each line ([`LinePrefix`]), so lines from
//! library code such as the BMC client say whose they are.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::registry::LookupSpan;

/// How chatty the logs on stderr are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    /// Warnings and errors only.
    Quiet,
    /// Info and above.
    Normal,
    /// Debug lines from dcn too.
    Debug,
    /// Trace lines from dcn, debug lines from everything.
    Trace,
}

/// Set up logging on stderr. `DCN_LOG` (an env-filter string) overrides the
/// level chosen by `-v`/`-q`.
pub fn init(verbosity: Verbosity) {
    let level = match verbosity {
        Verbosity::Quiet => "warn",
        Verbosity::Normal => "info",
        Verbosity::Debug => "dcn=debug,info",
        Verbosity::Trace => "dcn=trace,debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("DCN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .event_format(Plain)
        .try_init();
}

thread_local! {
    static PREFIX: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// While alive, every line logged from this thread starts with
/// `subject: `.
pub struct LinePrefix {
    previous: Option<String>,
}

impl LinePrefix {
    pub fn new(subject: &str) -> LinePrefix {
        let previous = PREFIX.with(|p| p.replace(Some(format!("{subject}: "))));
        LinePrefix { previous }
    }
}

impl Drop for LinePrefix {
    fn drop(&mut self) {
        PREFIX.with(|p| *p.borrow_mut() = self.previous.take());
    }
}

/// How many of the last lines printed are kept.
const KEPT_LINES: usize = 20;

static RECENT: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

/// The last lines printed on stderr, oldest first.
pub fn recent_lines() -> Vec<String> {
    RECENT
        .lock()
        .map(|r| r.iter().cloned().collect())
        .unwrap_or_default()
}

fn remember(text: &str) {
    if let Ok(mut r) = RECENT.lock() {
        for line in text.lines() {
            if r.len() == KEPT_LINES {
                r.pop_front();
            }
            r.push_back(line.to_string());
        }
    }
}

struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let prefix = match *event.metadata().level() {
            Level::ERROR => "error: ",
            Level::WARN => "warning: ",
            Level::INFO => "",
            Level::DEBUG => "debug: ",
            Level::TRACE => "trace: ",
        };
        let mut text = String::new();
        ctx.field_format()
            .format_fields(Writer::new(&mut text), event)?;
        let subject = PREFIX.with(|p| p.borrow().clone()).unwrap_or_default();
        let line = format!("{prefix}{subject}{text}");
        remember(&line);
        writeln!(writer, "{line}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_lines_are_kept() {
        for i in 0..30 {
            remember(&format!("line {i}\nmore {i}"));
        }
        let kept = recent_lines();
        assert_eq!(kept.len(), KEPT_LINES);
        assert_eq!(kept[0], "line 20");
        assert_eq!(kept[KEPT_LINES - 1], "more 29");
    }

    #[test]
    fn a_line_prefix_lasts_as_long_as_its_guard_on_its_thread() {
        let subject = || PREFIX.with(|p| p.borrow().clone());
        {
            let _outer = LinePrefix::new("bm1-n1");
            {
                let _inner = LinePrefix::new("bm1-n2");
                assert_eq!(subject().as_deref(), Some("bm1-n2: "));
            }
            assert_eq!(subject().as_deref(), Some("bm1-n1: "));
            let other = std::thread::spawn(move || PREFIX.with(|p| p.borrow().clone()));
            assert_eq!(other.join().unwrap(), None);
        }
        assert_eq!(subject(), None);
    }
}
