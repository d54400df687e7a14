//! Logs and progress go to stderr, results to stdout. Messages are plain
//! sentences: INFO lines print as they are, other levels get a prefix. The
//! last lines printed are kept ([`recent_lines`]), for a failure report.

use crate::cli::Verbosity;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::registry::LookupSpan;

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
        let line = format!("{prefix}{text}");
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
}
