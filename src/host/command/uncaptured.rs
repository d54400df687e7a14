//! Commands whose output dcn does not capture: a daemon detached with its
//! output appended to a log ([`spawn_daemon`]), and a command sharing dcn's
//! stdin, stdout and stderr ([`run_inherited`]).

use super::Cmd;
use anyhow::{Context, Result, bail};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Start a long-running process (a container) detached from dcn: its own
/// process group, stdin from /dev/null, stdout and stderr appended to `log`.
/// Returns its PID. Used by the lab, whose containers outlive `dcn lab up`.
pub fn spawn_daemon(cmd: &Cmd, log: &std::path::Path) -> Result<u32> {
    use std::os::unix::process::CommandExt;
    tracing::debug!(description = %cmd.description, "starting: {}", cmd.command_line());
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    let mut c = Command::new(&cmd.program);
    c.args(&cmd.args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0);
    for (k, v) in &cmd.env {
        c.env(k, v);
    }
    let child = c
        .spawn()
        .with_context(|| format!("{}: cannot start `{}`", cmd.description, cmd.program))?;
    Ok(child.id())
}

/// Run a command with stdin, stdout and stderr inherited (its progress shows
/// live), within its timeout. For long operator-facing runs such as `dcn
/// standalone init` inside a lab container, and for `dcn lab exec`.
///
/// An `interactive` command stays in dcn's process group, so it may read
/// the terminal; a non-interactive one gets its own group, so a timeout
/// kills its children too.
pub fn run_inherited(cmd: &Cmd, interactive: bool) -> Result<i32> {
    use std::os::unix::process::CommandExt;
    tracing::debug!(description = %cmd.description, "running: {}", cmd.command_line());
    let mut c = Command::new(&cmd.program);
    c.args(&cmd.args);
    if !interactive {
        c.process_group(0).stdin(Stdio::null());
    }
    for (k, v) in &cmd.env {
        c.env(k, v);
    }
    let mut child = c
        .spawn()
        .with_context(|| format!("{}: cannot start `{}`", cmd.description, cmd.program))?;
    let deadline = Instant::now() + cmd.timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            let code = status.code().unwrap_or(128 + 9);
            if cmd.check && code != 0 {
                bail!(
                    "{}: `{}` failed with exit status {code} (its output is above)",
                    cmd.description,
                    cmd.command_line()
                );
            }
            return Ok(code);
        }
        if Instant::now() >= deadline {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
            bail!(
                "{}: `{}` did not finish within {}s and was killed",
                cmd.description,
                cmd.command_line(),
                cmd.timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
