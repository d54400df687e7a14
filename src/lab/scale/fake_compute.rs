//! A simulated edge host's compute load: a real `nova-compute` with nova's
//! fake virt driver, configured as the host's real one would be (the edge
//! role's nova-compute recipe rendered with the host's own site
//! credentials from its join), so the control plane sees the heartbeats,
//! resource tracker and placement updates and scheduler syncs of a real
//! edge, over the host's own RabbitMQ and keystone accounts.
//!
//! Only the hypervisor differs: the fake driver reports a host that has
//! resources but runs nothing. Each runs in the carrier as a transient
//! unit (`dcn-sim-nova-<name>`) at a lower CPU priority, with its config
//! and state under the host's state directory.

use super::sim_node::SimNode;
use crate::edge::join::edge::kept;
use crate::host::command::{Cmd, Runner};
use crate::host::{FileSpec, Files};
use anyhow::{Context, Result};
use std::net::IpAddr;
use std::path::Path;

/// The nova-compute recipe's config files all live here…
const NOVA_DIR: &str = "/etc/nova";
/// …and nova-compute reads its drop-ins from here.
const DROP_INS: &str = "/etc/nova/nova-compute.conf.d";

/// Read by nova-compute after the recipe's drop-ins: the one change a
/// simulated host makes to a real edge's config. The fake driver's
/// resources are nova's own (1,000 vCPUs, 800 GB of RAM); the paths are
/// the host's, so several share one container.
fn fake_driver_drop_in(node_root: &Path) -> String {
    let state = node_root.join("var/lib/nova");
    format!(
        "# Written by dcn lab scale: nova's fake virt driver, this host's own state.\n\
         [DEFAULT]\n\
         compute_driver = fake.FakeDriver\n\
         state_path = {state}\n\
         [oslo_concurrency]\n\
         lock_path = {state}/tmp\n",
        state = state.display()
    )
}

/// The transient unit of a simulated host's nova-compute.
pub fn unit(name: &str) -> String {
    format!("dcn-sim-nova-{name}")
}

/// Render the host's nova-compute config under its state directory, as
/// its real one would read it (the edge role's recipe with the host's own
/// credentials from its join), with the fake driver's drop-in. The host
/// must have joined.
pub fn render(node: &SimNode) -> Result<()> {
    let (recipes, name, node_root) = (node.recipes, node.name, &node.root());
    let creds = kept(recipes, &Files::new(node_root, false))?
        .with_context(|| format!("{name} has no kept join credentials; join it first"))?;
    let facts = crate::host::facts::HostFacts::detect(Path::new("/"));
    let values = crate::edge::join::edge::compute_values(
        recipes,
        &node.bundle.manifest,
        &creds,
        name,
        IpAddr::V4(node.address),
        &facts,
    )?;
    // Written through the carrier's root: owners are the carrier's users.
    let carrier = Files::new("/", false);
    let under = |p: &str| node_root.join(p.trim_start_matches('/'));
    let service = recipes.service("nova-compute")?;
    for file in crate::recipes::render_files(service, &values)? {
        if file.path.starts_with(NOVA_DIR) {
            carrier.write(under(&file.path), file.contents.as_bytes(), &file.spec)?;
        }
    }
    carrier.write(
        under(&format!("{DROP_INS}/95-dcn-lab-fake.conf")),
        fake_driver_drop_in(node_root).as_bytes(),
        &FileSpec::public(),
    )?;
    carrier.ensure_dir(under("/var/lib/nova/tmp"), &FileSpec::private_dir())?;
    Ok(())
}

/// Start the host's real nova-compute (unless it runs), its config
/// rendered first; a replayed compute of the host is stopped.
pub fn start(runner: &dyn Runner, node: &SimNode) -> Result<()> {
    render(node)?;
    let (name, node_root) = (node.name, &node.root());
    super::compute_replay::unmark(node_root)?;
    let unit = unit(name);
    if !super::carrier::needs_start(runner, &unit)? {
        return Ok(());
    }
    let path = |p: &str| {
        node_root
            .join(p.trim_start_matches('/'))
            .display()
            .to_string()
    };
    runner.run(
        &Cmd::new(format!("starting {name}'s nova-compute"), "systemd-run")
            .args([
                format!("--unit={unit}"),
                "--collect".into(),
                "--nice=10".into(),
            ])
            .args(["--property=Restart=always", "--property=RestartSec=5"])
            .args(["nova-compute", "--config-file"])
            .arg(path(&format!("{NOVA_DIR}/nova.conf")))
            .args(["--config-dir", &path(DROP_INS)])
            .arg(format!("--log-file=/var/log/nova/{unit}.log")),
    )?;
    Ok(())
}

/// Stop the host's real nova-compute, if it runs.
pub fn stop(runner: &dyn Runner, name: &str) -> Result<()> {
    let unit = unit(name);
    if super::carrier::runs(runner, &unit)? {
        runner.run(
            &Cmd::new(format!("stopping {name}'s nova-compute"), "systemctl")
                .args(["stop", &unit])
                .timeout(std::time::Duration::from_secs(120)),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drop_in_changes_the_driver_and_keeps_state_apart() {
        let d = fake_driver_drop_in(Path::new("/var/lib/dcn-scale/s001n01"));
        assert!(d.contains("compute_driver = fake.FakeDriver"), "{d}");
        assert!(
            d.contains("state_path = /var/lib/dcn-scale/s001n01/var/lib/nova\n"),
            "{d}"
        );
        assert!(
            d.contains("lock_path = /var/lib/dcn-scale/s001n01/var/lib/nova/tmp\n"),
            "{d}"
        );
    }
}
