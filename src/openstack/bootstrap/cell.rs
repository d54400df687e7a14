//! The standalone host's own nova-compute mapped to nova's cell.

use crate::engine::{Context, Step};
use crate::host::Cmd;
use anyhow::{Result, bail};
use std::time::{Duration, Instant};

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
