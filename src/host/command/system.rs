//! [`SystemRunner`]: runs a [`Cmd`] on this machine in its own process
//! group, feeds its stdin, collects stdout and stderr, and kills the group
//! when the timeout passes.

use super::{Cmd, CmdOutput, Runner, STDERR_TAIL_LINES, check_output, tail_lines};
use anyhow::{Context, Result, bail};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs commands on this machine.
pub struct SystemRunner {
    dry_run: bool,
}

impl SystemRunner {
    pub fn new(dry_run: bool) -> SystemRunner {
        SystemRunner { dry_run }
    }
}

impl Runner for SystemRunner {
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput> {
        if self.dry_run && !cmd.read_only {
            tracing::info!("would run: {}  ({})", cmd.command_line(), cmd.description);
            return Ok(CmdOutput::ok(""));
        }
        tracing::debug!(description = %cmd.description, "running: {}", cmd.command_line());
        let started = Instant::now();
        let out = spawn_and_wait(cmd)?;
        tracing::debug!(
            "finished in {:.1}s with {:?}: {}",
            started.elapsed().as_secs_f64(),
            out.code,
            cmd.program
        );
        check_output(cmd, out)
    }

    fn stream_lines(
        &self,
        cmd: &Cmd,
        on_line: &mut dyn FnMut(&str) -> Result<()>,
    ) -> Result<CmdOutput> {
        if self.dry_run && !cmd.read_only {
            tracing::info!("would run: {}  ({})", cmd.command_line(), cmd.description);
            return Ok(CmdOutput::ok(""));
        }
        tracing::debug!(description = %cmd.description, "streaming: {}", cmd.command_line());
        let out = super::stream::stream_lines(command(cmd)?, cmd, on_line)?;
        check_output(cmd, out)
    }
}

fn spawn_and_wait(cmd: &Cmd) -> Result<CmdOutput> {
    let mut child = command(cmd)?
        .spawn()
        .with_context(|| format!("{}: cannot start `{}`", cmd.description, cmd.program))?;
    let stdin_thread = match (child.stdin.take(), &cmd.stdin) {
        (Some(mut pipe), Some(input)) => {
            let bytes = input.expose().as_bytes().to_vec();
            // A broken pipe (the program exits without reading) is not our
            // error; the exit status tells.
            Some(std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            }))
        }
        _ => None,
    };
    let stdout = read_in_thread(child.stdout.take());
    let stderr = read_in_thread(child.stderr.take());

    let Some(status) = wait_or_kill(&mut child, cmd.timeout)? else {
        let err_tail = tail_lines(&join_reader(stderr), STDERR_TAIL_LINES);
        bail!(
            "{}: `{}` did not finish within {}s and was killed{}",
            cmd.description,
            cmd.command_line(),
            cmd.timeout.as_secs(),
            if err_tail.is_empty() {
                String::new()
            } else {
                format!("; its last output:\n{err_tail}")
            }
        );
    };
    if let Some(t) = stdin_thread {
        let _ = t.join();
    }
    use std::os::unix::process::ExitStatusExt;
    let _ = status.signal();
    Ok(CmdOutput {
        code: status.code(),
        stdout: join_reader(stdout),
        stderr: join_reader(stderr),
    })
}

/// The process `cmd` describes, its stdin, stdout and stderr set up.
pub(super) fn command(cmd: &Cmd) -> Result<Command> {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(&cmd.program);
    let stdin = match (&cmd.stdin_file, &cmd.stdin) {
        (Some(path), _) => Stdio::from(
            std::fs::File::open(path)
                .with_context(|| format!("{}: opening {}", cmd.description, path.display()))?,
        ),
        (None, Some(_)) => Stdio::piped(),
        (None, None) => Stdio::null(),
    };
    let stdout = match &cmd.stdout_file {
        Some(path) => {
            use std::os::unix::fs::OpenOptionsExt;
            Stdio::from(
                std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode(0o600)
                    .open(path)
                    .with_context(|| format!("{}: creating {}", cmd.description, path.display()))?,
            )
        }
        None => Stdio::piped(),
    };
    c.args(&cmd.args)
        .env("LC_ALL", "C.UTF-8")
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        // Its own process group, so a timeout kills the children too.
        .process_group(0);
    for (k, v) in &cmd.env {
        c.env(k, v);
    }
    for (k, v) in &cmd.secret_env {
        c.env(k, v.expose());
    }
    if let Some(dir) = &cmd.cwd {
        c.current_dir(dir);
    }
    Ok(c)
}

/// Wait for `child` to exit; `None` when `timeout` passed first, its
/// process group killed.
fn wait_or_kill(
    child: &mut std::process::Child,
    timeout: Duration,
) -> Result<Option<std::process::ExitStatus>> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(5);
    loop {
        if let Some(status) = child.try_wait().context("waiting for a command")? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

pub(super) type Reader = Option<std::thread::JoinHandle<Vec<u8>>>;

pub(super) fn read_in_thread<R: Read + Send + 'static>(pipe: Option<R>) -> Reader {
    pipe.map(|mut p| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = p.read_to_end(&mut buf);
            buf
        })
    })
}

pub(super) fn join_reader(r: Reader) -> String {
    r.and_then(|t| t.join().ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::Secret;

    #[test]
    fn runs_and_captures_output() {
        let r = SystemRunner::new(false);
        let out = r
            .run(&Cmd::new("echo", "sh").args(["-c", "echo out; echo err >&2"]))
            .unwrap();
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
    }

    #[test]
    fn failure_names_description_command_and_stderr_tail() {
        let r = SystemRunner::new(false);
        let err = r
            .run(&Cmd::new("checking the widget", "sh").args(["-c", "echo boom >&2; exit 3"]))
            .unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("checking the widget"), "{msg}");
        assert!(msg.contains("exit status 3"), "{msg}");
        assert!(msg.contains("boom"), "{msg}");
        assert!(msg.contains("sh -c"), "{msg}");
    }

    #[test]
    fn stdin_reaches_the_program_and_is_not_in_the_error() {
        let r = SystemRunner::new(false);
        let out = r
            .run(&Cmd::new("cat", "cat").stdin(Secret::new("s3cret-value")))
            .unwrap();
        assert_eq!(out.stdout, "s3cret-value");
        let err = r
            .run(
                &Cmd::new("fail", "sh")
                    .args(["-c", "cat >/dev/null; exit 1"])
                    .stdin(Secret::new("s3cret-value")),
            )
            .unwrap_err();
        assert!(!format!("{err:#} {err:?}").contains("s3cret-value"));
    }

    #[test]
    fn stdin_and_stdout_stream_from_and_to_files() {
        let dir = tempfile::tempdir().unwrap();
        let (input, output) = (dir.path().join("in"), dir.path().join("out"));
        std::fs::write(&input, "a dump\n").unwrap();
        let r = SystemRunner::new(false);
        let out = r
            .run(
                &Cmd::new("copy", "sh")
                    .args(["-c", "cat; echo more"])
                    .stdin_file(&input)
                    .stdout_file(&output),
            )
            .unwrap();
        assert_eq!(out.stdout, "");
        assert_eq!(std::fs::read_to_string(&output).unwrap(), "a dump\nmore\n");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&output).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let err = r
            .run(&Cmd::new("loading", "cat").stdin_file(dir.path().join("none")))
            .unwrap_err();
        assert!(format!("{err:#}").contains("loading: opening"), "{err:#}");
    }

    #[test]
    fn timeout_kills_the_whole_process_group() {
        let r = SystemRunner::new(false);
        let started = Instant::now();
        let err = r
            .run(
                &Cmd::new("sleeping", "sh")
                    .args(["-c", "sleep 30 & sleep 30"])
                    .timeout(Duration::from_millis(300)),
            )
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(
            format!("{err:#}").contains("did not finish within"),
            "{err:#}"
        );
    }

    #[test]
    fn dry_run_skips_mutating_commands_only() {
        let r = SystemRunner::new(true);
        let out = r.run(&Cmd::new("x", "sh").args(["-c", "exit 7"])).unwrap();
        assert!(out.success());
        let out = r.run(&Cmd::new("x", "echo").arg("hi").read_only()).unwrap();
        assert_eq!(out.stdout, "hi\n");
    }

    #[test]
    fn unchecked_commands_return_their_code() {
        let r = SystemRunner::new(false);
        let out = r
            .run(&Cmd::new("x", "sh").args(["-c", "exit 4"]).unchecked())
            .unwrap();
        assert_eq!(out.code, Some(4));
    }

    #[test]
    fn missing_program_is_a_clear_error() {
        let r = SystemRunner::new(false);
        let err = r
            .run(&Cmd::new("frobbing", "/nonexistent/frob"))
            .unwrap_err();
        assert!(format!("{err:#}").contains("frobbing: cannot start `/nonexistent/frob`"));
    }
}
