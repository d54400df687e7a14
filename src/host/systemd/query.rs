//! What systemd says of units and of the system: active, enabled, in need
//! of a reload, their journal's end, and waiting for a unit to be active.
//! Every query is read-only.

use super::*;

impl Systemd<'_> {
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

    /// When the unit last began to start (`InactiveExitTimestamp`, to the
    /// microsecond), or `None` when it never has since systemd started:
    /// what its processes run was on the disk then (read-only).
    pub fn started_at(&self, unit: &str) -> Result<Option<std::time::SystemTime>> {
        let out = self.runner.run(
            &self
                .cmd(
                    format!("reading when {unit} started"),
                    &[
                        "show",
                        "--property=InactiveExitTimestamp",
                        "--timestamp=us+utc",
                        "--value",
                        unit,
                    ],
                    DEFAULT_TIMEOUT,
                )
                .read_only(),
        )?;
        parse_us_utc(out.stdout.trim())
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
}

/// systemd's `--timestamp=us+utc` text (`Fri 2026-12-04 22:40:01.123456
/// UTC`); empty or `n/a` is never.
fn parse_us_utc(text: &str) -> Result<Option<std::time::SystemTime>> {
    if text.is_empty() || text == "n/a" {
        return Ok(None);
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let [_, date, time, "UTC"] = words[..] else {
        anyhow::bail!(
            "{text:?} is not a systemd UTC timestamp like `Fri 2026-12-04 22:40:01.123456 UTC`"
        );
    };
    crate::timefmt::parse_rfc3339(&format!("{date}T{time}Z")).map(Some)
}

#[cfg(test)]
mod timestamp_tests {
    use super::parse_us_utc;
    use std::time::{Duration, SystemTime};

    #[test]
    fn microsecond_utc_timestamps_are_read() {
        let t = parse_us_utc("Fri 2026-12-04 22:40:01.123456 UTC")
            .unwrap()
            .unwrap();
        let want = SystemTime::UNIX_EPOCH + Duration::from_micros(1_796_424_001_123_456);
        assert_eq!(t, want);
        assert_eq!(parse_us_utc("").unwrap(), None);
        assert!(parse_us_utc("Fri 2026-12-04 22:40:01 CET").is_err());
    }
}
