//! A service's systemd units: packaged ones disabled, its own enabled,
//! started and restarted only when their configuration changed or code
//! they run was installed after they started (an upgrade), and one
//! daemon-reload when a unit file dcn writes changed.

use crate::engine::digest;
use crate::engine::{Context, Step};
use crate::host::systemd::Systemd;
use crate::recipes::{ServiceRecipe, Values};
use anyhow::{Result, bail};
use std::collections::BTreeMap;
use std::time::Duration;

/// Packaged units a service replaces or does not use: disabled and stopped.
pub struct DisableUnits {
    service: String,
    units: Vec<String>,
}

impl DisableUnits {
    pub fn new(s: &ServiceRecipe) -> Option<DisableUnits> {
        (!s.disable_units.is_empty()).then(|| DisableUnits {
            service: s.service.clone(),
            units: s.disable_units.clone(),
        })
    }
}

impl Step for DisableUnits {
    fn name(&self) -> String {
        format!("{}.disable-units", self.service)
    }

    fn describe(&self) -> String {
        format!("disable {}", self.units.join(", "))
    }

    fn fingerprint(&self) -> String {
        digest(self.units.iter().map(|u| u.as_bytes()))
    }

    /// None of them is enabled or running.
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        let systemd = Systemd::new(ctx.host.runner.as_ref());
        for u in &self.units {
            if systemd.is_enabled(u)? || systemd.is_active(u)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn apply(&self, ctx: &Context) -> Result<()> {
        let systemd = Systemd::new(ctx.host.runner.as_ref());
        for u in &self.units {
            // Absent units (a package not installed) are fine.
            systemd.disable_now_if_present(&[u])?;
        }
        Ok(())
    }
}

/// One unit of a service: enabled and started, and restarted when a file
/// that names it in `restarts` (or the service's customServiceConfig)
/// changed since it last started, or when dpkg unpacked a package it runs
/// (its service's packages and what they depend on) after it started.
pub struct Unit {
    service: String,
    unit: String,
    config_digest: String,
    /// The service's packages: the roots of the code the unit runs.
    packages: Vec<String>,
}

impl Unit {
    /// A step per unit of `s`, in start order.
    pub fn for_service(
        s: &ServiceRecipe,
        values: &Values,
        custom_config: &BTreeMap<String, String>,
    ) -> Result<Vec<Unit>> {
        let files = crate::recipes::render_files(s, values)?;
        let custom = s
            .custom_config
            .as_ref()
            .and_then(|c| custom_config.get(&c.config_key))
            .cloned()
            .unwrap_or_default();
        let custom_restarts = (s.custom_config.as_ref())
            .and_then(|c| c.restarts.clone())
            .unwrap_or_else(|| s.units.clone());
        let certs: Vec<String> = s.certificates.iter().map(|c| c.leaf.clone()).collect();
        Ok(s.units
            .iter()
            .map(|unit| {
                let custom = match custom_restarts.contains(unit) {
                    true => custom.as_bytes(),
                    false => b"",
                };
                let parts: Vec<&[u8]> = files
                    .iter()
                    .filter(|f| f.restarts.contains(unit))
                    .flat_map(|f| [f.path.as_bytes(), f.contents.as_bytes()])
                    .chain([custom])
                    .chain(certs.iter().map(|c| c.as_bytes()))
                    .collect();
                Unit {
                    service: s.service.clone(),
                    unit: unit.clone(),
                    config_digest: digest(parts),
                    packages: s.packages.clone(),
                }
            })
            .collect())
    }
}

impl Step for Unit {
    fn name(&self) -> String {
        format!(
            "{}.unit.{}",
            self.service,
            self.unit.trim_end_matches(".service")
        )
    }

    fn describe(&self) -> String {
        format!("enable and start {}", self.unit)
    }

    fn fingerprint(&self) -> String {
        self.config_digest.clone()
    }

    fn is_done(&self, ctx: &Context) -> Result<bool> {
        if !ctx.journal.is_done(&self.name(), &self.fingerprint()) {
            return Ok(false);
        }
        let systemd = Systemd::new(ctx.host.runner.as_ref());
        Ok(systemd.is_active(&self.unit)?
            && systemd.is_enabled(&self.unit)?
            && self.installed_since_start(ctx)?.is_empty())
    }

    fn apply(&self, ctx: &Context) -> Result<()> {
        let systemd = Systemd::new(ctx.host.runner.as_ref());
        // A restart is for a unit started before with another
        // configuration; on the first run, a unit already up (started as
        // another unit's dependency) read the files written moments ago.
        let config_changed = ctx.journal.has_run(&self.name())
            && !ctx.journal.is_done(&self.name(), &self.fingerprint());
        systemd.enable(&[&self.unit])?;
        // A static unit ignores `enable`: it must come with the unit that
        // starts it, or the host loses it at its next boot.
        let (at_boot, why) = systemd.starts_at_boot(&self.unit)?;
        if !at_boot {
            bail!(
                "{why}, so it would not start after a reboot: the recipe of {} must list the unit that starts it at boot (`systemctl show -p WantedBy,RequiredBy {}` names it) before it in `units`",
                self.service,
                self.unit
            );
        }
        if systemd.is_active(&self.unit)? {
            let newer = self.installed_since_start(ctx)?;
            if config_changed {
                tracing::info!("    restarting {}: its configuration changed", self.unit);
                systemd.restart(&self.unit)?;
            } else if !newer.is_empty() {
                tracing::info!(
                    "    restarting {}: {} installed after it started",
                    self.unit,
                    crate::host::apt::installed::few(&newer)
                );
                systemd.restart(&self.unit)?;
            }
        } else if starting_as_dependency(&systemd.state(&self.unit)?) {
            // Started a moment ago by the unit before it (ovn-host starts
            // ovn-controller), with the files written above: let it finish.
            // A restart now races its start, and in a container systemd
            // cannot always kill the half-started process.
            // As long as a recipe lets a start take (TimeoutStartSec).
            systemd.wait_active(&self.unit, Duration::from_secs(15 * 60))?;
        } else {
            // Not active: perhaps a start job from before dcn configured it
            // (a preinstalled unit retrying with the packaged config).
            // `restart` cancels such a job; `start` would wait on it.
            systemd.restart(&self.unit)?;
        }
        Ok(())
    }
}

impl Unit {
    fn installed_since_start(&self, ctx: &Context) -> Result<Vec<String>> {
        installed_since_start(ctx.host, &self.unit, &self.packages)
    }
}

/// The packages `unit` runs (`packages` and what they depend on) that dpkg
/// unpacked after it last began to start; none when it is not running.
pub fn installed_since_start(
    host: &crate::host::Host,
    unit: &str,
    packages: &[String],
) -> Result<Vec<String>> {
    if packages.is_empty() {
        return Ok(Vec::new());
    }
    let systemd = Systemd::new(host.runner.as_ref());
    let Some(started) = systemd.started_at(unit)? else {
        return Ok(Vec::new());
    };
    let installed = crate::host::apt::InstalledSet::read(&host.files)?;
    let closure = installed.closure(packages.iter().map(String::as_str));
    installed.unpacked_since(&host.files, &closure, started)
}

/// The unit a file under /etc/systemd/ defines (`…/x.service`) or extends
/// (`…/x.service.d/10-dcn.conf`).
fn unit_of(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/etc/systemd/system/")?;
    let first = rest.split('/').next()?;
    let unit = first.strip_suffix(".d").unwrap_or(first);
    unit.contains('.').then(|| unit.to_string())
}

/// A unit in the middle of its start (not waiting to retry after a crash).
fn starting_as_dependency((active, sub): &(String, String)) -> bool {
    active == "activating" && sub != "auto-restart"
}

/// One `systemctl daemon-reload` after the configure phase, when a unit
/// file dcn writes changed (a reload per unit raced starting daemons).
pub struct ReloadUnits {
    unit_files: String,
    /// The units those files define or extend.
    units: Vec<String>,
}

impl ReloadUnits {
    /// `files`: (path, contents) of everything the configure phase writes.
    pub fn new<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> ReloadUnits {
        let files: Vec<(&str, &str)> = files
            .into_iter()
            .filter(|(p, _)| p.starts_with("/etc/systemd/"))
            .collect();
        let parts: Vec<&[u8]> = files
            .iter()
            .flat_map(|(p, c)| [p.as_bytes(), c.as_bytes()])
            .collect();
        let mut units: Vec<String> = files.iter().filter_map(|(p, _)| unit_of(p)).collect();
        units.sort();
        units.dedup();
        ReloadUnits {
            unit_files: digest(parts),
            units,
        }
    }
}

impl Step for ReloadUnits {
    fn name(&self) -> String {
        "configure.systemd".into()
    }

    fn describe(&self) -> String {
        "make systemd read the unit files dcn wrote".into()
    }

    fn fingerprint(&self) -> String {
        self.unit_files.clone()
    }

    /// systemd has read every unit file dcn wrote as it is now.
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        let units: Vec<&str> = self.units.iter().map(String::as_str).collect();
        Ok(!Systemd::new(ctx.host.runner.as_ref()).needs_daemon_reload(&units)?)
    }

    fn apply(&self, ctx: &Context) -> Result<()> {
        Systemd::new(ctx.host.runner.as_ref()).daemon_reload()
    }
}

#[cfg(test)]
mod tests {
    use super::starting_as_dependency;

    #[test]
    fn unit_files_name_their_units() {
        use super::unit_of;
        assert_eq!(
            unit_of("/etc/systemd/system/dcn-join.service").as_deref(),
            Some("dcn-join.service")
        );
        assert_eq!(
            unit_of("/etc/systemd/system/nova-compute.service.d/10-dcn-start.conf").as_deref(),
            Some("nova-compute.service")
        );
        assert_eq!(unit_of("/etc/systemd/journald.conf.d/x.conf"), None);
    }

    #[test]
    fn a_unit_mid_start_is_awaited_but_a_crash_loop_is_restarted() {
        let st = |a: &str, s: &str| (a.to_string(), s.to_string());
        assert!(starting_as_dependency(&st("activating", "start")));
        assert!(starting_as_dependency(&st("activating", "start-post")));
        assert!(!starting_as_dependency(&st("activating", "auto-restart")));
        assert!(!starting_as_dependency(&st("inactive", "dead")));
        assert!(!starting_as_dependency(&st("failed", "failed")));
    }
}
