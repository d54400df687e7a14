//! The one place that talks to systemd: enabling, starting and restarting
//! units, asking their state, and quoting their journal when one fails.

use super::command::{Cmd, Runner};
use anyhow::{Result, bail};
use std::time::{Duration, Instant};

/// systemd on the host behind a runner.
pub struct Systemd<'a> {
    runner: &'a dyn Runner,
}

/// Lines of a unit's journal quoted when it fails.
const JOURNAL_TAIL: usize = 25;

/// The bound on one systemctl call. A start waits for the unit's own
/// `TimeoutStartSec` (a recipe may raise it to 15 minutes for a service
/// that is slow to be ready), so this is longer.
const SYSTEMCTL_TIMEOUT: Duration = Duration::from_secs(20 * 60);

impl<'a> Systemd<'a> {
    pub fn new(runner: &'a dyn Runner) -> Self {
        Systemd { runner }
    }

    fn systemctl(&self, what: &str, args: &[&str]) -> Result<()> {
        self.runner.run(
            &Cmd::new(what, "systemctl")
                .args(args.iter().copied())
                .timeout(SYSTEMCTL_TIMEOUT),
        )?;
        Ok(())
    }

    pub fn daemon_reload(&self) -> Result<()> {
        self.systemctl("reloading systemd units", &["daemon-reload"])
    }

    /// Enable units to start at boot (without starting them).
    pub fn enable(&self, units: &[&str]) -> Result<()> {
        if units.is_empty() {
            return Ok(());
        }
        // --no-reload: the symlinks take effect at boot, and dcn starts units
        // itself; a reload while a daemon is starting can make systemd lose
        // track of it (ovn-ovsdb-server's PIDFile= names a path never written).
        let mut args = vec!["enable", "--quiet", "--no-reload"];
        args.extend_from_slice(units);
        self.systemctl(&format!("enabling {}", units.join(", ")), &args)
    }

    /// Disable and stop units (e.g. the packaged ones dcn replaces).
    pub fn disable_now(&self, units: &[&str]) -> Result<()> {
        if units.is_empty() {
            return Ok(());
        }
        let mut args = vec!["disable", "--now", "--quiet", "--no-reload"];
        args.extend_from_slice(units);
        self.systemctl(&format!("disabling {}", units.join(", ")), &args)
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
            &Cmd::new(format!("asking whether {unit} is active"), "systemctl")
                .args(["is-active", "--quiet", unit])
                .read_only()
                .unchecked(),
        )?;
        Ok(out.success())
    }

    /// `systemctl is-enabled` (read-only).
    pub fn is_enabled(&self, unit: &str) -> Result<bool> {
        let out = self.runner.run(
            &Cmd::new(format!("asking whether {unit} is enabled"), "systemctl")
                .args(["is-enabled", "--quiet", unit])
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
            &Cmd::new(format!("asking which units start {unit}"), "systemctl")
                .args(["show", "--property=WantedBy,RequiredBy", "--value", unit])
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
            &Cmd::new(format!("asking whether {unit} is enabled"), "systemctl")
                .args(["is-enabled", unit])
                .read_only()
                .unchecked(),
        )?;
        Ok(out.stdout.trim().to_string())
    }

    /// The unit's state as `systemctl show` reports it: (ActiveState, SubState).
    pub fn state(&self, unit: &str) -> Result<(String, String)> {
        let out = self.runner.run(
            &Cmd::new(format!("reading the state of {unit}"), "systemctl")
                .args(["show", "--property=ActiveState,SubState", unit])
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
            &Cmd::new("asking systemd for the system state", "systemctl")
                .arg("is-system-running")
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
mod tests {
    use super::*;
    use crate::host::{CmdOutput, RecordingRunner};

    fn units(
        states: &'static [(&'static str, &'static str)],
        wanted_by: &'static str,
    ) -> RecordingRunner {
        RecordingRunner::answering(move |c| match c.args.first().map(String::as_str) {
            Some("is-enabled") => {
                let u = c.args.last().unwrap();
                let s = states
                    .iter()
                    .find(|(n, _)| n == u)
                    .map_or("not-found", |(_, s)| s);
                CmdOutput::ok(format!("{s}\n"))
            }
            Some("show") => CmdOutput::ok(format!("{wanted_by}\n")),
            _ => CmdOutput::ok(""),
        })
    }

    #[test]
    fn a_static_unit_starts_at_boot_only_through_an_enabled_unit() {
        // Debian's ovn-controller.service is static; ovn-host.service
        // (Wants=ovn-controller.service) is what starts it at boot.
        let r = units(
            &[
                ("ovn-controller.service", "static"),
                ("ovn-host.service", "disabled"),
            ],
            "ovn-host.service",
        );
        let (ok, why) = Systemd::new(&r)
            .starts_at_boot("ovn-controller.service")
            .unwrap();
        assert!(!ok);
        assert!(
            why.contains("none of the units that start it (ovn-host.service)"),
            "{why}"
        );
        let r = units(
            &[
                ("ovn-controller.service", "static"),
                ("ovn-host.service", "enabled"),
            ],
            "ovn-host.service",
        );
        assert!(
            Systemd::new(&r)
                .starts_at_boot("ovn-controller.service")
                .unwrap()
                .0
        );
        let r = units(&[("nova-compute.service", "disabled")], "");
        let (ok, why) = Systemd::new(&r)
            .starts_at_boot("nova-compute.service")
            .unwrap();
        assert!(!ok && why.contains("disabled"), "{why}");
        let r = units(&[("lonely.service", "static")], "");
        let (ok, why) = Systemd::new(&r).starts_at_boot("lonely.service").unwrap();
        assert!(!ok && why.contains("no unit wants it"), "{why}");
    }

    #[test]
    fn failed_start_quotes_the_journal() {
        let r = RecordingRunner::answering(|c| match c.program.as_str() {
            "systemctl" => CmdOutput::failed(1, "Job for x.service failed"),
            "journalctl" => CmdOutput::ok("x[1]: database locked\n"),
            _ => CmdOutput::ok(""),
        });
        let err = Systemd::new(&r).start("x.service").unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("x.service did not start"), "{msg}");
        assert!(msg.contains("database locked"), "{msg}");
    }

    #[test]
    fn wait_active_gives_up_on_failed_units() {
        let r = RecordingRunner::answering(|c| {
            if c.args.first().map(String::as_str) == Some("is-active") {
                CmdOutput::failed(3, "")
            } else if c.args.first().map(String::as_str) == Some("show") {
                CmdOutput::ok("ActiveState=failed\nSubState=failed\n")
            } else {
                CmdOutput::ok("boom\n")
            }
        });
        let err = Systemd::new(&r)
            .wait_active("y.service", Duration::from_secs(60))
            .unwrap_err();
        assert!(format!("{err:#}").contains("y.service is failed (failed)"));
    }

    #[test]
    fn enable_lists_units_in_one_call() {
        let r = RecordingRunner::new();
        Systemd::new(&r)
            .enable(&["a.service", "b.service"])
            .unwrap();
        assert_eq!(
            r.command_lines(),
            vec!["systemctl enable --quiet --no-reload a.service b.service"]
        );
    }
}
