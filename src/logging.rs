//! Logs and progress go to stderr, results to stdout. Messages are plain
//! sentences: INFO lines print as they are, other levels get a prefix.

use crate::cli::Verbosity;
use std::fmt;
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
        write!(writer, "{prefix}")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
