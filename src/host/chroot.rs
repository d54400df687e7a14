//! Commands run inside a root filesystem under construction (the edge
//! image's tree): the same adapters ([`super::apt::Apt`], ...) work there,
//! each command wrapped in `chroot ROOT` by this runner.

use super::command::{Cmd, CmdOutput, Runner};
use anyhow::Result;
use std::path::PathBuf;

/// The PATH inside the tree (the build host's may name directories the
/// tree does not have).
const PATH: &str = "/usr/sbin:/usr/bin:/sbin:/bin";

/// Runs every command in `chroot root` through `inner`.
pub struct ChrootRunner<'a> {
    inner: &'a dyn Runner,
    root: PathBuf,
}

impl<'a> ChrootRunner<'a> {
    pub fn new(inner: &'a dyn Runner, root: impl Into<PathBuf>) -> Self {
        ChrootRunner {
            inner,
            root: root.into(),
        }
    }

    /// The `chroot` command that runs `cmd` in the tree.
    pub fn wrap(&self, cmd: &Cmd) -> Cmd {
        let mut args = vec![self.root.display().to_string(), cmd.program.clone()];
        args.extend(cmd.args.iter().cloned());
        let mut env = cmd.env.clone();
        env.retain(|(k, _)| k != "PATH");
        env.push(("PATH".into(), PATH.into()));
        Cmd {
            program: "chroot".into(),
            args,
            env,
            // A working directory names a path in the tree.
            cwd: None,
            ..cmd.clone()
        }
    }
}

impl Runner for ChrootRunner<'_> {
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput> {
        self.inner.run(&self.wrap(cmd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::RecordingRunner;

    #[test]
    fn commands_run_in_the_tree_with_its_path_and_their_options() {
        let r = RecordingRunner::new();
        let chroot = ChrootRunner::new(&r, "/build/root");
        chroot
            .run(
                &Cmd::new("installing", "apt-get")
                    .args(["-y", "install", "nova-compute"])
                    .env("DEBIAN_FRONTEND", "noninteractive")
                    .timeout(std::time::Duration::from_secs(7)),
            )
            .unwrap();
        let call = &r.calls()[0];
        assert_eq!(
            call.command_line(),
            "chroot /build/root apt-get -y install nova-compute"
        );
        assert!(call.env.contains(&("PATH".into(), PATH.into())));
        assert!(
            call.env
                .contains(&("DEBIAN_FRONTEND".into(), "noninteractive".into()))
        );
        assert_eq!(call.timeout, std::time::Duration::from_secs(7));
        assert_eq!(call.description, "installing");
    }
}
