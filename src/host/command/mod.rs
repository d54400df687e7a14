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
    let tail = failure_tail(&out);
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

/// What a failed command said last: the tail of its stderr, and when
/// that says little (apt's "E: Sub-process /usr/bin/dpkg returned an
/// error code", while dpkg's own errors and the maintainer scripts' went
/// to stdout through apt's terminal), the last lines of stdout before it.
fn failure_tail(out: &CmdOutput) -> String {
    let err = tail_lines(&out.stderr, STDERR_TAIL_LINES);
    let said = err.lines().count();
    if said >= 3 {
        return err;
    }
    let before = tail_lines(&out.stdout, STDERR_TAIL_LINES - said);
    [before, err]
        .into_iter()
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The last `n` non-empty lines of `text`.
pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_says_what_the_command_said_last_on_either_stream() {
        let cmd = Cmd::new("upgrading the installed packages", "apt-get").arg("dist-upgrade");
        // apt: dpkg's errors on stdout, one line of its own on stderr.
        let apt = CmdOutput {
            code: Some(100),
            stdout: "Setting up haproxy (2.6.12-1+dcn1) ...\nhaproxy postinst: refusing\ndpkg: error processing package haproxy (--configure):\n".into(),
            stderr: "E: Sub-process /usr/bin/dpkg returned an error code (1)\n".into(),
        };
        let e = check_output(&cmd, apt).unwrap_err().to_string();
        assert!(
            e.ends_with("haproxy postinst: refusing\ndpkg: error processing package haproxy (--configure):\nE: Sub-process /usr/bin/dpkg returned an error code (1)"),
            "{e}"
        );
        assert!(e.starts_with("upgrading the installed packages: `apt-get dist-upgrade` failed with exit status 100:\n"), "{e}");
        // A command that explains itself on stderr: stderr alone.
        let talkative = CmdOutput {
            code: Some(1),
            stdout: "noise\n".into(),
            stderr: "one\ntwo\nthree\n".into(),
        };
        let e = check_output(&cmd, talkative).unwrap_err().to_string();
        assert!(
            e.ends_with(":\none\ntwo\nthree") && !e.contains("noise"),
            "{e}"
        );
    }
}
