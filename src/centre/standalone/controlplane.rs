//! Control-plane steps that are code rather than recipe data: the
//! preflight gate, RabbitMQ's users, mapping the standalone host's own
//! compute service to the cell, installing the dcn binary (keystone's
//! catalog is [`super::catalog`]). Each is done only while its effect is
//! really there.

use crate::deploy::digest;
use crate::engine::{Context, Step};
use crate::host::Cmd;

use crate::secrets::Secret;
use anyhow::{Context as _, Result, bail};
use std::time::{Duration, Instant};

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
            ctx.host.files.root(),
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

/// RabbitMQ: no guest, a user for the control plane (password on stdin).
pub struct RabbitUsers {
    pub password: Secret,
}

impl Step for RabbitUsers {
    fn name(&self) -> String {
        "rabbitmq.users".into()
    }
    fn describe(&self) -> String {
        "remove RabbitMQ's guest user and create the control plane's".into()
    }
    fn fingerprint(&self) -> String {
        digest([self.password.expose().as_bytes()])
    }
    /// RabbitMQ has the control plane's user with every permission and no
    /// guest (and the user last got this password).
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        if !ctx.journal.is_done(&self.name(), &self.fingerprint()) {
            return Ok(false);
        }
        let out = ctx.host.runner.run(
            &Cmd::new("checking RabbitMQ's users", "rabbitmqctl")
                .args([
                    "list_permissions",
                    "-p",
                    "/",
                    "--quiet",
                    "--no-table-headers",
                ])
                .read_only()
                .unchecked(),
        )?;
        Ok(out.success() && rabbit_users_done(&out.stdout))
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        ctx.host.runner.run(
            &Cmd::new("removing RabbitMQ's guest user", "rabbitmqctl")
                .args(["delete_user", "guest"])
                .unchecked(),
        )?;
        crate::openstack::messaging::ensure_user(
            ctx.host,
            "openstack",
            &self.password,
            &crate::recipes::site_credentials::RabbitPermissions::all(),
        )
    }
}

/// `rabbitmqctl list_permissions` output: `openstack` may do everything
/// on `/`, and `guest` is gone.
fn rabbit_users_done(permissions: &str) -> bool {
    let rows: Vec<Vec<&str>> = permissions
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    rows.iter()
        .any(|r| r.as_slice() == ["openstack", ".*", ".*", ".*"])
        && !rows.iter().any(|r| r.first() == Some(&"guest"))
}

/// Map the standalone host's nova-compute to cell1 (the scheduler would do
/// it within discover_hosts_in_cells_interval; init does not wait for that).
pub struct DiscoverHost {
    pub hostname: String,
}

impl Step for DiscoverHost {
    fn name(&self) -> String {
        "compute.discover".into()
    }
    fn describe(&self) -> String {
        format!("map compute host {} to cell1", self.hostname)
    }
    fn fingerprint(&self) -> String {
        self.hostname.clone()
    }
    /// nova lists the host in a cell.
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        let out = ctx.host.runner.run(
            &Cmd::new("checking the compute host's cell", "runuser")
                .args(["-u", "nova", "--", "nova-manage", "cell_v2", "list_hosts"])
                .timeout(Duration::from_secs(120))
                .read_only()
                .unchecked(),
        )?;
        Ok(out.success() && out.stdout.split_whitespace().any(|w| w == self.hostname))
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        let nova_manage = |args: &[&str]| {
            Cmd::new("mapping compute hosts to cells", "runuser")
                .args(["-u", "nova", "--", "nova-manage", "cell_v2"])
                .args(args.iter().copied())
                .timeout(Duration::from_secs(120))
        };
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            ctx.host.runner.run(&nova_manage(&["discover_hosts"]))?;
            let hosts = ctx
                .host
                .runner
                .run(&nova_manage(&["list_hosts"]).read_only())?;
            if hosts.stdout.split_whitespace().any(|w| w == self.hostname) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "nova-compute on {} did not register within 300s; see `journalctl -u nova-compute` and /var/log/nova/nova-compute.log",
                    self.hostname
                );
            }
            std::thread::sleep(Duration::from_secs(5));
        }
    }
}

/// Where the dcn binary lives for the units that run it (`dcn serve`).
pub const INSTALLED_BINARY: &str = "/usr/local/bin/dcn";

/// Install the running dcn binary as /usr/local/bin/dcn.
pub struct InstallBinary;

impl InstallBinary {
    fn contents() -> Result<Vec<u8>> {
        let exe = std::env::current_exe().context("finding the running dcn binary")?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rabbitmq_is_done_with_the_control_planes_user_and_no_guest() {
        assert!(rabbit_users_done(
            "openstack\t.*\t.*\t.*\ndcn-node-e1\t^(nova)$\t^(nova)$\t^(nova)$\n"
        ));
        assert!(!rabbit_users_done(
            "guest\t.*\t.*\t.*\nopenstack\t.*\t.*\t.*\n"
        ));
        assert!(!rabbit_users_done("openstack\t\t.*\t.*\n"));
        assert!(!rabbit_users_done(""));
    }
}
