//! A long-lived command whose stdout is read line by line as it comes (an
//! OVSDB monitor), for [`super::SystemRunner::stream_lines`]. Its lines
//! are bounded ([`MAX_LINE_BYTES`]); stderr is kept for the error, as for
//! any command.

use super::system::{join_reader, read_in_thread};
use super::{Cmd, CmdOutput};
use anyhow::{Context, Result, bail};
use std::io::{BufRead, BufReader, Read};
use std::process::Command;

/// The longest line a stream may send: an OVSDB monitor's first line holds
/// a whole table (about 1.5 kB a chassis).
pub const MAX_LINE_BYTES: u64 = 64 << 20;

/// Start `command` (the process `cmd` describes) and hand each stdout line
/// to `on_line` until it exits. An error from `on_line`, or a line over
/// the bound, stops the process group and is returned.
pub(super) fn stream_lines(
    mut command: Command,
    cmd: &Cmd,
    on_line: &mut dyn FnMut(&str) -> Result<()>,
) -> Result<CmdOutput> {
    let mut child = command
        .spawn()
        .with_context(|| format!("{}: cannot start `{}`", cmd.description, cmd.program))?;
    let stderr = read_in_thread(child.stderr.take());
    let mut stdout = BufReader::new(child.stdout.take().context("no stdout pipe")?);
    let mut line = Vec::new();
    let read = loop {
        line.clear();
        match (&mut stdout)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) => break Ok(()),
            Ok(_) if line.len() as u64 > MAX_LINE_BYTES => {
                break Err(anyhow::anyhow!(
                    "{}: `{}` sent a line of more than {MAX_LINE_BYTES} bytes",
                    cmd.description,
                    cmd.program
                ));
            }
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                if let Err(e) = on_line(text.trim_end_matches(['\n', '\r'])) {
                    break Err(e);
                }
            }
            Err(e) => break Err(e).context("reading a command's output"),
        }
    };
    if read.is_err() {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let status = child.wait().context("waiting for a command")?;
    let stderr = join_reader(stderr);
    if let Err(e) = read {
        bail!("{e:#}");
    }
    Ok(CmdOutput {
        code: status.code(),
        stdout: String::new(),
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use crate::host::{Cmd, Runner, SystemRunner};

    #[test]
    fn lines_arrive_one_by_one_while_the_command_runs() {
        let r = SystemRunner::new(false);
        let mut seen = Vec::new();
        // The second line is only written after the first was read: a
        // reader that waited for the end would hang until the timeout.
        let dir = tempfile::tempdir().unwrap();
        let flag = dir.path().join("read");
        let script = format!(
            "echo one; while [ ! -e {f} ]; do sleep 0.05; done; echo two",
            f = flag.display()
        );
        let out = r
            .stream_lines(
                &Cmd::new("streaming", "sh").args(["-c", &script]),
                &mut |l| {
                    seen.push(l.to_string());
                    std::fs::write(&flag, b"").unwrap();
                    Ok(())
                },
            )
            .unwrap();
        assert_eq!(seen, ["one", "two"]);
        assert!(out.success());
    }

    #[test]
    fn an_error_from_the_reader_stops_the_command() {
        let r = SystemRunner::new(false);
        let started = std::time::Instant::now();
        let err = r
            .stream_lines(
                &Cmd::new("streaming", "sh").args(["-c", "echo one; sleep 30; echo two"]),
                &mut |_| anyhow::bail!("enough"),
            )
            .unwrap_err();
        assert!(format!("{err:#}").contains("enough"), "{err:#}");
        assert!(started.elapsed().as_secs() < 10, "the command was stopped");
    }

    #[test]
    fn a_failed_command_names_its_stderr() {
        let r = SystemRunner::new(false);
        let err = r
            .stream_lines(
                &Cmd::new("watching the widget", "sh").args(["-c", "echo bad >&2; exit 2"]),
                &mut |_| Ok(()),
            )
            .unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("watching the widget") && msg.contains("bad"),
            "{msg}"
        );
    }
}
