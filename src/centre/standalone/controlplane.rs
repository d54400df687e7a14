//! dcn's own control-plane steps that are code rather than recipe data:
//! the preflight gate and installing the dcn binary (the OpenStack ones are
//! [`crate::openstack::bootstrap`]). Each is done only while its effect is
//! really there.

use crate::engine::{Context, Step};
use anyhow::{Context as _, Result, bail};

/// Preflight as a gate: errors stop init unless ignored.
pub struct Preflight {
    /// For the ports the services need.
    pub recipes: crate::recipes::Recipes,
    pub params: crate::preflight::Params,
    pub ignore: Vec<String>,
}

impl Step for Preflight {
    fn name(&self) -> String {
        "preflight.checks".into()
    }
    fn describe(&self) -> String {
        "check that this host can run the control plane".into()
    }
    fn is_check(&self) -> bool {
        true
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        let mut ignore = self.ignore.clone();
        // Once dcn has set the control plane up here, even in part (a
        // re-run, or a run resumed after a power cut, on a host whose
        // packages were installed before a reset), its services hold the
        // ports.
        let ours = crate::deployment::Deployment::load(&ctx.host.files)?
            .is_some_and(|d| d.roles.iter().any(|r| r == "controller"));
        if ours || ctx.journal.has_run("packages.install") {
            ignore.push("ports".into());
        }
        let report = crate::preflight::run(
            &self.recipes,
            crate::preflight::Role::Standalone,
            &ctx.host.files,
            &self.params,
            &ignore,
        )?;
        for line in report.to_string().lines() {
            tracing::debug!("    {line}");
        }
        if report.has_errors() {
            bail!("preflight found problems; nothing was changed:\n{report}");
        }
        Ok(())
    }
}

/// Where the dcn binary lives for the units that run it (`dcn serve`).
pub const INSTALLED_BINARY: &str = crate::paths::DCN_BINARY;

/// Install the running dcn binary as /usr/local/bin/dcn.
pub struct InstallBinary;

impl InstallBinary {
    fn contents() -> Result<Vec<u8>> {
        let exe = std::env::current_exe().context("finding the running dcn binary")?;
        // This machine's file, wherever the system being configured is
        // rooted: not one of that system's files.
        std::fs::read(&exe).with_context(|| format!("reading {}", exe.display()))
    }

    fn spec() -> crate::host::FileSpec {
        crate::host::FileSpec::public().mode(0o755)
    }
}

impl Step for InstallBinary {
    /// Only files written through `Files`, which fsyncs them.
    fn needs_flush(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "install.dcn".into()
    }
    fn describe(&self) -> String {
        format!("install this dcn as {INSTALLED_BINARY}")
    }
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        (ctx.host.files).matches(INSTALLED_BINARY, &Self::contents()?, &Self::spec())
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        if ctx
            .host
            .files
            .write(INSTALLED_BINARY, &Self::contents()?, &Self::spec())?
            .changed()
            && !ctx.host.dry_run
        {
            // A running join service keeps the old binary until restarted.
            let systemd = crate::host::systemd::Systemd::new(ctx.host.runner.as_ref());
            if systemd.is_active("dcn-join.service")? {
                systemd.restart("dcn-join.service")?;
            }
        }
        Ok(())
    }
}
