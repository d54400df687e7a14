//! The command runner: every external program dcn starts goes through
//! [`Runner::run`]. A [`Cmd`] carries a description for the operator, a
//! timeout, and optional stdin. Secrets go to stdin only, never into argv or
//! the environment, where `ps` and `/proc` would show them.

mod cmd;
mod recording;
mod stream;
mod system;
mod uncaptured;

pub use cmd::{Cmd, CmdOutput, DEFAULT_TIMEOUT, shell_quote};
pub use recording::RecordingRunner;
pub use system::SystemRunner;
pub use uncaptured::{run_inherited, spawn_daemon};

use anyhow::{Result, bail};

/// Lines of stderr quoted in an error.
const STDERR_TAIL_LINES: usize = 20;

/// Runs commands. [`SystemRunner`] runs them for real; [`RecordingRunner`]
/// records them for tests.
pub trait Runner: Send + Sync {
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput>;

    /// Run a long-lived command (a monitor), handing each line of its
    /// stdout to `on_line` as it comes, until the command exits; an error
    /// from `on_line` stops it and is returned. The default runs the
    /// command to its end and hands the lines over then, which is what a
    /// recording runner needs.
    fn stream_lines(
        &self,
        cmd: &Cmd,
        on_line: &mut dyn FnMut(&str) -> Result<()>,
    ) -> Result<CmdOutput> {
        let out = self.run(cmd)?;
        for line in out.stdout.lines() {
            on_line(line)?;
        }
        Ok(out)
    }
}

/// Turn a finished command into a result: an error names the description,
/// the command line, the exit status and the tail of stderr.
pub fn check_output(cmd: &Cmd, out: CmdOutput) -> Result<CmdOutput> {
    if !cmd.check || out.success() {
        return Ok(out);
    }
    let status = match out.code {
        Some(c) => format!("exit status {c}"),
        None => "killed by a signal".to_string(),
    };
    let tail = tail_lines(&out.stderr, STDERR_TAIL_LINES);
    let tail = if tail.is_empty() {
        tail_lines(&out.stdout, STDERR_TAIL_LINES)
    } else {
        tail
    };
    bail!(
        "{}: `{}` failed with {status}{}",
        cmd.description,
        cmd.command_line(),
        if tail.is_empty() {
            String::new()
        } else {
            format!(":\n{tail}")
        }
    )
}

/// The last `n` non-empty lines of `text`.
pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
