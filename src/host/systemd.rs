//! The one place that talks to systemd: enabling, disabling, masking,
//! starting, stopping and reloading units, asking their state, quoting
//! their journal when one fails, and rebooting or powering off. It acts on
//! the system behind a runner (the host, a chroot, a lab container), or,
//! made with [`Systemd::for_tree`], on the unit files of a system tree that
//! is not running (an image being built, the disk being installed).

use super::command::{Cmd, DEFAULT_TIMEOUT, Runner};
use anyhow::{Result, bail};
use std::path::Path;
use std::time::{Duration, Instant};

/// systemd on the host behind a runner, or in a tree.
pub struct Systemd<'a> {
    runner: &'a dyn Runner,
    /// `--root=` on every call: a tree whose unit files are edited offline.
    root: Option<String>,
    /// Replaces each call's own time limit (see [`Systemd::timeout`]).
    timeout: Option<Duration>,
}

/// Lines of a unit's journal quoted when it fails.
const JOURNAL_TAIL: usize = 25;

/// The bound on one systemctl call. A start waits for the unit's own
/// `TimeoutStartSec` (a recipe may raise it to 15 minutes for a service
/// that is slow to be ready), so this is longer.
const SYSTEMCTL_TIMEOUT: Duration = Duration::from_secs(20 * 60);

impl<'a> Systemd<'a> {
    pub fn new(runner: &'a dyn Runner) -> Self {
        Systemd {
            runner,
            root: None,
            timeout: None,
        }
    }

    /// The unit files of the system tree at `root`, which is not running:
    /// every call gets `--root=ROOT`. Only enable, disable and mask make
    /// sense there.
    pub fn for_tree(runner: &'a dyn Runner, root: impl AsRef<Path>) -> Self {
        Systemd {
            root: Some(root.as_ref().display().to_string()),
            ..Systemd::new(runner)
        }
    }

    /// Bound every systemctl call by `t` instead of its usual limit (a
    /// container that is booting or going away answers quickly or not at all).
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = Some(t);
        self
    }

    /// A systemctl command: `--root=` first on a tree, then `args`, bounded
    /// by [`Systemd::timeout`] if set, else `bound`.
    fn cmd(&self, what: impl Into<String>, args: &[&str], bound: Duration) -> Cmd {
        let mut cmd = Cmd::new(what, "systemctl");
        if let Some(root) = &self.root {
            cmd = cmd.arg(format!("--root={root}"));
        }
        cmd.args(args.iter().copied())
            .timeout(self.timeout.unwrap_or(bound))
    }

    fn systemctl(&self, what: &str, args: &[&str]) -> Result<()> {
        self.runner.run(&self.cmd(what, args, SYSTEMCTL_TIMEOUT))?;
        Ok(())
    }

    /// `systemctl VERB [--now] --quiet [--no-reload] UNITS`, checked or not,
    /// described as "DOING UNITS" (plus "in ROOT" on a tree). On a running
    /// system `--no-reload`: the symlinks take effect at boot, and dcn
    /// starts units and reloads systemd itself; a reload while a daemon is
    /// starting can make systemd lose track of it (ovn-ovsdb-server's
    /// PIDFile= names a path never written). On a tree nothing runs, so
    /// nothing is reloaded.
    fn unit_files(
        &self,
        doing: &str,
        verb: &str,
        now: bool,
        units: &[&str],
        checked: bool,
    ) -> Result<()> {
        if units.is_empty() {
            return Ok(());
        }
        let mut args = vec![verb];
        if now {
            args.push("--now");
        }
        args.push("--quiet");
        if self.root.is_none() {
            args.push("--no-reload");
        }
        args.extend_from_slice(units);
        let mut what = format!("{doing} {}", units.join(", "));
        if let Some(root) = &self.root {
            what.push_str(&format!(" in {root}"));
        }
        let cmd = self.cmd(what, &args, SYSTEMCTL_TIMEOUT);
        self.runner
            .run(&if checked { cmd } else { cmd.unchecked() })?;
        Ok(())
    }

    pub fn daemon_reload(&self) -> Result<()> {
        self.systemctl("reloading systemd units", &["daemon-reload"])
    }

    /// Enable units to start at boot (without starting them).
    pub fn enable(&self, units: &[&str]) -> Result<()> {
        self.unit_files("enabling", "enable", false, units, true)
    }

    /// Disable units (without stopping them).
    pub fn disable(&self, units: &[&str]) -> Result<()> {
        self.unit_files("disabling", "disable", false, units, true)
    }

    /// [`Systemd::disable`] for units that may not exist: a non-zero exit
    /// is not an error.
    pub fn disable_if_present(&self, units: &[&str]) -> Result<()> {
        self.unit_files("disabling", "disable", false, units, false)
    }

    /// Disable and stop units (e.g. the packaged ones dcn replaces).
    pub fn disable_now(&self, units: &[&str]) -> Result<()> {
        self.unit_files("disabling", "disable", true, units, true)
    }

    /// [`Systemd::disable_now`] for units that may not exist (a package
    /// not installed): a non-zero exit is not an error.
    pub fn disable_now_if_present(&self, units: &[&str]) -> Result<()> {
        self.unit_files("disabling", "disable", true, units, false)
    }

    /// Mask units, so that nothing starts them.
    pub fn mask(&self, units: &[&str]) -> Result<()> {
        self.unit_files("masking", "mask", false, units, true)
    }

    /// Stop and disable a unit for good (`dcn reset`), best effort: a
    /// non-zero exit (no such unit) is not an error, and systemctl reloads
    /// systemd afterwards, since no later step of dcn's does.
    pub fn stop_for_good(&self, unit: &str) -> Result<()> {
        self.runner.run(
            &self
                .cmd(
                    format!("stopping {unit}"),
                    &["disable", "--now", "--quiet", unit],
                    SYSTEMCTL_TIMEOUT,
                )
                .unchecked(),
        )?;
        Ok(())
    }

    /// Reload a unit if it is running and can reload, else restart it if
    /// it is running (`systemctl try-reload-or-restart`).
    pub fn try_reload_or_restart(&self, unit: &str) -> Result<()> {
        self.systemctl(
            &format!("reloading {unit}"),
            &["try-reload-or-restart", unit],
        )
    }

    /// Reboot. A non-zero exit is not an error: the manager may go down
    /// before it answers.
    pub fn reboot(&self) -> Result<()> {
        self.runner.run(
            &self
                .cmd("rebooting", &["reboot"], DEFAULT_TIMEOUT)
                .unchecked(),
        )?;
        Ok(())
    }

    /// Power off. A non-zero exit is not an error: the manager may go down
    /// before it answers.
    pub fn poweroff(&self) -> Result<()> {
        self.runner.run(
            &self
                .cmd("powering off", &["poweroff"], DEFAULT_TIMEOUT)
                .unchecked(),
        )?;
        Ok(())
    }

    pub fn start(&self, unit: &str) -> Result<()> {
        self.with_journal_on_error(unit, || {
            self.systemctl(&format!("starting {unit}"), &["start", unit])
        })
    }

    /// Queue a start of `unit` and return at once (a long oneshot job
    /// that outlives the caller).
    pub fn start_no_block(&self, unit: &str) -> Result<()> {
        self.systemctl(&format!("starting {unit}"), &["start", "--no-block", unit])
    }

    pub fn restart(&self, unit: &str) -> Result<()> {
        self.with_journal_on_error(unit, || {
            self.systemctl(&format!("restarting {unit}"), &["restart", unit])
        })
    }

    pub fn stop(&self, unit: &str) -> Result<()> {
        self.systemctl(&format!("stopping {unit}"), &["stop", unit])
    }

    fn with_journal_on_error(&self, unit: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
        f().map_err(|e| {
            let tail = self.journal_tail(unit, JOURNAL_TAIL);
            e.context(format!(
                "{unit} did not start; the end of its journal:\n{tail}"
            ))
        })
    }
}

mod query;
#[cfg(test)]
mod tests;
