//! Running commands inside a lab container: `nsenter -t <pid of its
//! systemd> -a` with a clean environment (there is no machined on the
//! host for `systemd-run -M`).

use crate::host::command::{Cmd, CmdOutput, Runner, SystemRunner, check_output};
use anyhow::{Context, Result};

/// The search path inside containers.
const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Runs commands inside a container through `nsenter`, with a clean
/// environment.
pub struct ContainerRunner {
    init_pid: u32,
    inner: SystemRunner,
}

impl ContainerRunner {
    pub fn new(init_pid: u32) -> ContainerRunner {
        ContainerRunner {
            init_pid,
            inner: SystemRunner::new(false),
        }
    }

    /// The `nsenter` command that runs `cmd` inside.
    pub fn wrap(&self, cmd: &Cmd) -> Cmd {
        let mut wrapped = Cmd {
            program: "nsenter".into(),
            args: vec![
                "-t".into(),
                self.init_pid.to_string(),
                "-a".into(),
                "--".into(),
                "/usr/bin/env".into(),
                "-i".into(),
                format!("PATH={PATH}"),
                "HOME=/root".into(),
                "LANG=C.UTF-8".into(),
            ],
            env: Vec::new(),
            // The directory is the container's: `env -C` changes to it
            // inside (nsenter's own --wd would name a host path).
            cwd: None,
            ..cmd.clone()
        };
        let chdir = |args: &mut Vec<String>| {
            if let Some(dir) = &cmd.cwd {
                args.push(format!("--chdir={}", dir.display()));
            }
        };
        // Right after `env -i`, before the variables.
        let mut rest = wrapped.args.split_off(6);
        chdir(&mut wrapped.args);
        wrapped.args.append(&mut rest);
        for (k, v) in &cmd.env {
            wrapped.args.push(format!("{k}={v}"));
        }
        // Secrets cannot go through `env` (argv); pass them to nsenter's
        // environment, which `env -i` would clear, so re-export them by name.
        if !cmd.secret_env.is_empty() {
            wrapped.secret_env = cmd.secret_env.clone();
            wrapped.args.truncate(4);
            wrapped.args.push("/usr/bin/env".to_string());
            chdir(&mut wrapped.args);
            wrapped.args.extend([
                format!("PATH={PATH}"),
                "HOME=/root".into(),
                "LANG=C.UTF-8".into(),
            ]);
            for (k, v) in &cmd.env {
                wrapped.args.push(format!("{k}={v}"));
            }
        }
        wrapped.args.push(cmd.program.clone());
        wrapped.args.extend(cmd.args.iter().cloned());
        wrapped
    }
}

impl Runner for ContainerRunner {
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput> {
        let mut wrapped = self.wrap(cmd);
        wrapped.check = false;
        let out = self
            .inner
            .run(&wrapped)
            .with_context(|| format!("inside the container (systemd PID {})", self.init_pid))?;
        // Report failures with the inner command line, not nsenter's.
        check_output(cmd, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_enters_all_namespaces_with_a_clean_environment() {
        let r = ContainerRunner::new(77);
        let w = r.wrap(&Cmd::new("x", "ip").arg("link").env("FOO", "bar"));
        let line = w.command_line();
        assert!(
            line.starts_with("nsenter -t 77 -a -- /usr/bin/env -i PATH="),
            "{line}"
        );
        assert!(line.ends_with("FOO=bar ip link"), "{line}");
        assert!(w.env.is_empty());
        // A working directory is the container's, entered inside.
        let w = r.wrap(&Cmd::new("x", "ls").cwd(std::path::Path::new("/var/lib/x")));
        let line = w.command_line();
        assert!(w.cwd.is_none(), "{line}");
        assert!(
            line.starts_with("nsenter -t 77 -a -- /usr/bin/env -i --chdir=/var/lib/x PATH="),
            "{line}"
        );
    }
}
