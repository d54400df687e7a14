//! The command runner: every external program dcn starts goes through
//! [`Runner::run`]. A [`Cmd`] carries a description for the operator, a
//! timeout, and optional stdin. Secrets go to stdin only, never into argv or
//! the environment, where `ps` and `/proc` would show them.

use crate::secrets::Secret;
use anyhow::{Context, Result, bail};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Default time limit for a command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// Lines of stderr quoted in an error.
const STDERR_TAIL_LINES: usize = 20;

/// A command to run.
#[derive(Debug, Clone)]
pub struct Cmd {
    pub description: String,
    pub program: String,
    pub args: Vec<String>,
    pub stdin: Option<Secret>,
    pub env: Vec<(String, String)>,
    /// Environment variables holding secrets (e.g. keystone-manage's
    /// `OS_BOOTSTRAP_PASSWORD`): readable only by the process owner and root
    /// in /proc, never logged.
    pub secret_env: Vec<(String, Secret)>,
    pub cwd: Option<PathBuf>,
    pub timeout: Duration,
    /// Safe to run during `--dry-run` (it only looks).
    pub read_only: bool,
    /// A non-zero exit is an error (default). When false the caller reads
    /// [`CmdOutput::code`] itself.
    pub check: bool,
}

impl Cmd {
    /// `description` says, for the operator, what the command is for.
    pub fn new(description: impl Into<String>, program: impl Into<String>) -> Cmd {
        Cmd {
            description: description.into(),
            program: program.into(),
            args: Vec::new(),
            stdin: None,
            env: Vec::new(),
            secret_env: Vec::new(),
            cwd: None,
            timeout: DEFAULT_TIMEOUT,
            read_only: false,
            check: true,
        }
    }

    pub fn arg(mut self, a: impl Into<String>) -> Cmd {
        self.args.push(a.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Feed `input` on stdin. Stdin is the only way secrets reach a command.
    pub fn stdin(mut self, input: Secret) -> Cmd {
        self.stdin = Some(input);
        self
    }

    /// Set an environment variable. Never put a secret here.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Cmd {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Set an environment variable to a secret, for programs that read
    /// secrets only from their environment.
    pub fn secret_env(mut self, key: impl Into<String>, value: Secret) -> Cmd {
        self.secret_env.push((key.into(), value));
        self
    }

    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Cmd {
        self.cwd = Some(dir.into());
        self
    }

    pub fn timeout(mut self, t: Duration) -> Cmd {
        self.timeout = t;
        self
    }

    /// Mark the command as one that only reads, so it runs in dry-run mode.
    pub fn read_only(mut self) -> Cmd {
        self.read_only = true;
        self
    }

    /// Do not treat a non-zero exit as an error.
    pub fn unchecked(mut self) -> Cmd {
        self.check = false;
        self
    }

    /// The command line, shell-quoted, for logs and errors.
    pub fn command_line(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|s| shell_quote(s))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What a finished command printed.
#[derive(Debug, Clone, Default)]
pub struct CmdOutput {
    /// Exit code; `None` when killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl CmdOutput {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// Output of a command that succeeded with `stdout`.
    pub fn ok(stdout: impl Into<String>) -> CmdOutput {
        CmdOutput {
            code: Some(0),
            stdout: stdout.into(),
            stderr: String::new(),
        }
    }

    /// Output of a command that failed with `code`.
    pub fn failed(code: i32, stderr: impl Into<String>) -> CmdOutput {
        CmdOutput {
            code: Some(code),
            stdout: String::new(),
            stderr: stderr.into(),
        }
    }
}

/// Runs commands. [`SystemRunner`] runs them for real; [`RecordingRunner`]
/// records them for tests.
pub trait Runner: Send + Sync {
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput>;
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
}

fn spawn_and_wait(cmd: &Cmd) -> Result<CmdOutput> {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(&cmd.program);
    c.args(&cmd.args)
        .env("LC_ALL", "C.UTF-8")
        .stdin(if cmd.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
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
    let mut child = c
        .spawn()
        .with_context(|| format!("{}: cannot start `{}`", cmd.description, cmd.program))?;
    let pid = child.id() as i32;

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

    let deadline = Instant::now() + cmd.timeout;
    let mut pause = Duration::from_millis(5);
    let status = loop {
        if let Some(status) = child.try_wait().context("waiting for a command")? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
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
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
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

type Reader = Option<std::thread::JoinHandle<Vec<u8>>>;

fn read_in_thread<R: Read + Send + 'static>(pipe: Option<R>) -> Reader {
    pipe.map(|mut p| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = p.read_to_end(&mut buf);
            buf
        })
    })
}

fn join_reader(r: Reader) -> String {
    r.and_then(|t| t.join().ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// The last `n` non-empty lines of `text`.
pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Quote `s` for display as one shell word.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A test double: records every command and answers from a closure.
pub struct RecordingRunner {
    calls: Mutex<Vec<Cmd>>,
    #[allow(clippy::type_complexity)]
    respond: Box<dyn Fn(&Cmd) -> CmdOutput + Send + Sync>,
}

impl RecordingRunner {
    /// Every command succeeds with empty output.
    pub fn new() -> RecordingRunner {
        Self::answering(|_| CmdOutput::ok(""))
    }

    /// Commands are answered by `respond`.
    pub fn answering(respond: impl Fn(&Cmd) -> CmdOutput + Send + Sync + 'static) -> Self {
        RecordingRunner {
            calls: Mutex::new(Vec::new()),
            respond: Box::new(respond),
        }
    }

    /// The commands run so far.
    pub fn calls(&self) -> Vec<Cmd> {
        self.calls.lock().unwrap().clone()
    }

    /// Their command lines.
    pub fn command_lines(&self) -> Vec<String> {
        self.calls().iter().map(Cmd::command_line).collect()
    }
}

impl Default for RecordingRunner {
    fn default() -> Self {
        Self::new()
    }
}

impl Runner for RecordingRunner {
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput> {
        self.calls.lock().unwrap().push(cmd.clone());
        check_output(cmd, (self.respond)(cmd))
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("abc"), "abc");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn recording_runner_records_and_answers() {
        let r = RecordingRunner::answering(|c| {
            if c.program == "false" {
                CmdOutput::failed(1, "nope")
            } else {
                CmdOutput::ok("yes")
            }
        });
        assert_eq!(r.run(&Cmd::new("a", "true")).unwrap().stdout, "yes");
        assert!(r.run(&Cmd::new("b", "false")).is_err());
        assert_eq!(r.command_lines(), vec!["true", "false"]);
    }
}
