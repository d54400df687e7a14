//! Mounts that undo themselves: [`Mounts`] unmounts everything it mounted,
//! newest first, when dropped, so a failed build or install never leaves
//! a chroot's /proc or a target disk mounted behind it.

use crate::host::{Cmd, Runner};
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The mounts made so far, unmounted in reverse order on drop.
pub struct Mounts<'a> {
    runner: &'a dyn Runner,
    mounted: Vec<PathBuf>,
}

impl<'a> Mounts<'a> {
    pub fn new(runner: &'a dyn Runner) -> Mounts<'a> {
        Mounts {
            runner,
            mounted: Vec::new(),
        }
    }

    /// `mount ARGS... TARGET`, creating TARGET first.
    pub fn mount(&mut self, what: &str, args: &[&str], target: &Path) -> Result<()> {
        // A mount point is any host path (under a relative --cache, a
        // relative one), not a path of a Files tree; mount says if it fails.
        std::fs::create_dir_all(target).ok();
        self.runner.run(
            &Cmd::new(format!("mounting {what} on {}", target.display()), "mount")
                .args(args.iter().copied())
                .arg(target.display().to_string())
                .timeout(Duration::from_secs(120)),
        )?;
        self.mounted.push(target.to_path_buf());
        Ok(())
    }

    /// /proc, /sys, /dev and /dev/pts of the host inside `root`, for
    /// programs run with chroot.
    pub fn chroot_api(&mut self, root: &Path) -> Result<()> {
        self.mount("proc", &["-t", "proc", "proc"], &root.join("proc"))?;
        self.mount("sysfs", &["-t", "sysfs", "sysfs"], &root.join("sys"))?;
        self.mount("/dev", &["--bind", "/dev"], &root.join("dev"))?;
        self.mount("devpts", &["-t", "devpts", "devpts"], &root.join("dev/pts"))?;
        Ok(())
    }

    /// Unmount everything now, newest first; the first failure is returned
    /// after every unmount was tried.
    pub fn unmount_all(&mut self) -> Result<()> {
        let mut first_error = None;
        while let Some(target) = self.mounted.pop() {
            let r = self.runner.run(
                &Cmd::new(format!("unmounting {}", target.display()), "umount")
                    .arg(target.display().to_string())
                    .timeout(Duration::from_secs(120)),
            );
            if let Err(e) = r {
                // Busy: detach it so nothing stays visible; report anyway.
                let _ = self.runner.run(
                    &Cmd::new("detaching a busy mount", "umount")
                        .args(["--lazy", &target.display().to_string()])
                        .unchecked(),
                );
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Mounts<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.unmount_all() {
            tracing::warn!("{e:#}");
        }
    }
}

pub use crate::host::is_mountpoint;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::RecordingRunner;

    #[test]
    fn unmounts_in_reverse_order_on_drop() {
        let r = RecordingRunner::new();
        {
            let mut m = Mounts::new(&r);
            m.chroot_api(Path::new("/tmp/dcn-test-root")).unwrap();
        }
        let lines = r.command_lines();
        assert_eq!(lines.len(), 8, "{lines:?}");
        assert_eq!(lines[4], "umount /tmp/dcn-test-root/dev/pts");
        assert_eq!(lines[7], "umount /tmp/dcn-test-root/proc");
    }
}
