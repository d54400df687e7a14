//! [`Cmd`], the description of one command to run (program, arguments,
//! stdin, environment, timeout), built up by its methods, and
//! [`CmdOutput`], what a finished command printed.

use crate::secrets::Secret;
use std::path::PathBuf;
use std::time::Duration;

/// Default time limit for a command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

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
    /// Read stdin from this file (a database dump to load): streamed, never
    /// held in memory.
    pub stdin_file: Option<PathBuf>,
    /// Write stdout to this file (a database dump), streamed: what
    /// [`CmdOutput::stdout`] then holds is empty.
    pub stdout_file: Option<PathBuf>,
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
            stdin_file: None,
            stdout_file: None,
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

    /// Stream this file to the command's stdin.
    pub fn stdin_file(mut self, path: impl Into<PathBuf>) -> Cmd {
        self.stdin_file = Some(path.into());
        self
    }

    /// Stream the command's stdout into this file (created or truncated,
    /// mode 0600).
    pub fn stdout_file(mut self, path: impl Into<PathBuf>) -> Cmd {
        self.stdout_file = Some(path.into());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("abc"), "abc");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
