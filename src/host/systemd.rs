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

    pub fn restart(&self, unit: &str) -> Result<()> {
        self.with_journal_on_error(unit, || {
            self.systemctl(&format!("restarting {unit}"), &["restart", unit])
        })
    }

    pub fn stop(&self, unit: &str) -> Result<()> {
        self.systemctl(&format!("stopping {unit}"), &["stop", unit])
    }

    /// `systemctl is-active` (read-only).
    pub fn is_active(&self, unit: &str) -> Result<bool> {
        let out = self.runner.run(
            &self
                .cmd(
                    format!("asking whether {unit} is active"),
                    &["is-active", "--quiet", unit],
                    DEFAULT_TIMEOUT,
                )
                .read_only()
                .unchecked(),
        )?;
        Ok(out.success())
    }

    /// Whether systemd has not read the current files of any of `units`
    /// (`NeedDaemonReload`; read-only). No units: no.
    pub fn needs_daemon_reload(&self, units: &[&str]) -> Result<bool> {
        if units.is_empty() {
            return Ok(false);
        }
        let mut args = vec!["show", "--property=NeedDaemonReload"];
        args.extend_from_slice(units);
        let out = self.runner.run(
            &self
                .cmd(
                    "asking whether systemd read the unit files".to_string(),
                    &args,
                    DEFAULT_TIMEOUT,
                )
                .read_only(),
        )?;
        Ok(out
            .stdout
            .lines()
            .any(|l| l.trim() == "NeedDaemonReload=yes"))
    }

    /// `systemctl is-enabled` (read-only).
    pub fn is_enabled(&self, unit: &str) -> Result<bool> {
        let out = self.runner.run(
            &self
                .cmd(
                    format!("asking whether {unit} is enabled"),
                    &["is-enabled", "--quiet", unit],
                    DEFAULT_TIMEOUT,
                )
                .read_only()
                .unchecked(),
        )?;
        Ok(out.success())
    }

    /// Whether `unit` starts at boot: enabled, or static (no `[Install]`
    /// section, so `systemctl enable` does nothing) and wanted or required
    /// by a unit that is enabled. Returns the answer and, when it is no,
    /// why.
    pub fn starts_at_boot(&self, unit: &str) -> Result<(bool, String)> {
        let state = self.enablement(unit)?;
        match state.as_str() {
            "enabled" | "alias" | "generated" => return Ok((true, state)),
            "static" => {}
            other => return Ok((false, format!("{unit} is {other}"))),
        }
        let out = self.runner.run(
            &self
                .cmd(
                    format!("asking which units start {unit}"),
                    &["show", "--property=WantedBy,RequiredBy", "--value", unit],
                    DEFAULT_TIMEOUT,
                )
                .read_only(),
        )?;
        let by: Vec<&str> = out.stdout.split_whitespace().collect();
        for u in &by {
            if self.enablement(u)? == "enabled" {
                return Ok((true, format!("{unit} is started by {u}")));
            }
        }
        Ok((
            false,
            if by.is_empty() {
                format!("{unit} is static and no unit wants it")
            } else {
                format!(
                    "{unit} is static and none of the units that start it ({}) is enabled",
                    by.join(", ")
                )
            },
        ))
    }

    /// `systemctl is-enabled` as a word: enabled, static, disabled, masked…
    fn enablement(&self, unit: &str) -> Result<String> {
        let out = self.runner.run(
            &self
                .cmd(
                    format!("asking whether {unit} is enabled"),
                    &["is-enabled", unit],
                    DEFAULT_TIMEOUT,
                )
                .read_only()
                .unchecked(),
        )?;
        Ok(out.stdout.trim().to_string())
    }

    /// The unit's state as `systemctl show` reports it: (ActiveState, SubState).
    pub fn state(&self, unit: &str) -> Result<(String, String)> {
        let out = self.runner.run(
            &self
                .cmd(
                    format!("reading the state of {unit}"),
                    &["show", "--property=ActiveState,SubState", unit],
                    DEFAULT_TIMEOUT,
                )
                .read_only(),
        )?;
        let mut active = String::new();
        let mut sub = String::new();
        for line in out.stdout.lines() {
            if let Some(v) = line.strip_prefix("ActiveState=") {
                active = v.to_string();
            } else if let Some(v) = line.strip_prefix("SubState=") {
                sub = v.to_string();
            }
        }
        Ok((active, sub))
    }

    /// The last lines of the unit's journal.
    pub fn journal_tail(&self, unit: &str, lines: usize) -> String {
        self.runner
            .run(
                &Cmd::new(format!("reading the journal of {unit}"), "journalctl")
                    .args([
                        "--no-pager",
                        "--output=short",
                        "-n",
                        &lines.to_string(),
                        "-u",
                        unit,
                    ])
                    .read_only()
                    .unchecked()
                    .timeout(Duration::from_secs(30)),
            )
            .map(|o| o.stdout)
            .unwrap_or_default()
    }

    /// Wait until `unit` is active, up to `timeout`. On failure the error
    /// names the unit, its state and the tail of its journal.
    pub fn wait_active(&self, unit: &str, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.is_active(unit)? {
                return Ok(());
            }
            let (active, sub) = self.state(unit)?;
            if active == "failed" || Instant::now() >= deadline {
                bail!(
                    "{unit} is {active} ({sub}) after {}s; the end of its journal:\n{}\nSee `journalctl -u {unit}`.",
                    timeout.as_secs(),
                    self.journal_tail(unit, JOURNAL_TAIL)
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// `systemctl is-system-running` output (running, degraded, starting…).
    pub fn system_state(&self) -> Result<String> {
        let out = self.runner.run(
            &self
                .cmd(
                    "asking systemd for the system state",
                    &["is-system-running"],
                    DEFAULT_TIMEOUT,
                )
                .read_only()
                .unchecked(),
        )?;
        Ok(out.stdout.trim().to_string())
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

#[cfg(test)]
mod tests;
