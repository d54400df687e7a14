//! The packages step: point apt at the configured source, answer debconf,
//! install what is missing with nothing started; in an upgrade, also bring
//! every installed package to the source's version.

use crate::engine::{Context, Step};
use crate::host::apt::{Apt, DebconfAnswer};
use crate::host::systemd::Systemd;
use crate::types::PackageSource;
use anyhow::{Context as _, Result};

pub struct Packages {
    pub packages: Vec<String>,
    /// `package question type value` lines.
    pub debconf: Vec<String>,
    pub source: PackageSource,
    /// `dcn upgrade`: done only when the source has nothing newer either.
    pub upgrade: bool,
}

impl Packages {
    fn apt<'a>(&self, ctx: &'a Context) -> Apt<'a> {
        Apt::new(
            ctx.host.runner.as_ref(),
            &ctx.host.files,
            self.source.clone(),
        )
    }
}

impl Step for Packages {
    fn name(&self) -> String {
        match self.upgrade {
            false => "packages.install".into(),
            true => "packages.upgrade".into(),
        }
    }

    fn describe(&self) -> String {
        match self.upgrade {
            false => format!(
                "install {} packages and their dependencies (nothing starts)",
                self.packages.len()
            ),
            true => format!(
                "install what {} packages need and upgrade every package to its version in the source (nothing restarts yet)",
                self.packages.len()
            ),
        }
    }

    fn is_done(&self, ctx: &Context) -> Result<bool> {
        let apt = self.apt(ctx);
        let missing = apt.missing(&self.packages)?;
        if !missing.is_empty() {
            return Ok(false);
        }
        Ok(!self.upgrade || apt.planned_changes(&[])?.is_empty())
    }

    fn apply(&self, ctx: &Context) -> Result<()> {
        let apt = self.apt(ctx);
        let missing = apt.missing(&self.packages)?;
        tracing::info!(
            "    {} of {} packages to install",
            missing.len(),
            self.packages.len()
        );
        let answers = self
            .debconf
            .iter()
            .map(|line| DebconfAnswer::parse(line).context("recipe bug"))
            .collect::<Result<Vec<_>>>()?;
        apt.update()?;
        apt.preseed(&answers)?;
        apt.install(&missing, false)?;
        if self.upgrade {
            apt.upgrade()?;
        }
        // dbus' reload was refused by policy-rc.d during the install, so it
        // does not know the bus policies of what was installed (polkit's,
        // which libvirt needs).
        Systemd::new(ctx.host.runner.as_ref())
            .try_reload_or_restart("dbus.service")
            .context("reloading dbus")?;
        Ok(())
    }
}
