//! Applying a staged release, run by the release's own dcn: it installs
//! itself as the node's dcn, then renders and converges the edge role as
//! a join does — packages from the staged repository (every installed one
//! brought to the release's version, nothing started by their scripts),
//! files, units — so only the units whose files changed, or that run a
//! package dpkg unpacked after they started, restart. Running guests keep
//! running; the apply waits until the node's chassis is connected and
//! every guest's port is wired again, and says which guests still run a
//! qemu the upgrade replaced.

use super::stage;
use crate::deployment::Deployment;
use crate::edge::join::edge::{Deploy, deploy, kept, kept_manifest};
use crate::host::{FileSpec, Host};
use crate::recipes::Recipes;
use crate::wire::EdgeRelease;
use anyhow::{Context, Result, bail};
use std::time::{Duration, Instant};

/// How long the chassis and the guests' ports may take to come back.
const WIRED_WITHIN: Duration = Duration::from_secs(300);

/// What an apply did.
pub struct Applied {
    pub restarted: Vec<String>,
    pub guests_on_old_qemu: Vec<String>,
}

/// Apply `release` (staged, and this process its dcn); `step` hears each
/// step as it starts.
pub fn apply(
    recipes: &Recipes,
    host: &Host,
    release: &EdgeRelease,
    step: &mut dyn FnMut(&str),
) -> Result<Applied> {
    let files = &host.files;
    let d = Deployment::load(files)?
        .context("this host is not a joined edge node: run `dcn join` first")?;
    let manifest = kept_manifest(files)?.context(
        "this node joined with a dcn that kept no copy of its bundle's manifest (before 0.2.0): run `dcn join` with the site's bundle once with this dcn (an expired bundle will do)",
    )?;
    let creds = kept(recipes, files)?.context(
        "this node's credentials are missing, or this release needs more than the join gave: run `dcn join` with the site's bundle again",
    )?;
    step(&format!("install dcn {}", release.dcn_version));
    if files.sha256(crate::paths::DCN_BINARY)?.as_deref() != Some(release.dcn.sha256.as_str()) {
        files.copy(
            stage::BINARY,
            crate::paths::DCN_BINARY,
            &FileSpec::public().mode(0o755),
        )?;
    }
    step("packages, files and restarts");
    let address = d.address.parse().context("the node's recorded address")?;
    let report = deploy(
        recipes,
        host,
        &Deploy {
            manifest: &manifest,
            trusted_pem: None,
            creds: &creds,
            hostname: &d.hostname,
            address,
            source: &stage::source(),
            upgrade: true,
        },
    )?;
    step("wait for the chassis and the guests' ports");
    wait_wired(host)?;
    Ok(Applied {
        restarted: report
            .restarted_units()
            .into_iter()
            .map(str::to_string)
            .collect(),
        guests_on_old_qemu: crate::host::processes::guests_on_replaced_qemu(),
    })
}

/// Wait until ovn-controller is connected and no guest port is left
/// unwired.
fn wait_wired(host: &Host) -> Result<()> {
    use crate::openstack::local_node::{chassis_connected, unwired_guest_ports};
    let runner = host.runner.as_ref();
    let deadline = Instant::now() + WIRED_WITHIN;
    loop {
        let connected = chassis_connected(runner)?;
        let unwired = unwired_guest_ports(runner)?;
        if connected && unwired.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            match connected {
                false => bail!(
                    "ovn-controller is not connected to the southbound {}s after the upgrade",
                    WIRED_WITHIN.as_secs()
                ),
                true => bail!(
                    "{} guest port(s) are not wired {}s after the upgrade: {}",
                    unwired.len(),
                    WIRED_WITHIN.as_secs(),
                    unwired.join(", ")
                ),
            }
        }
        std::thread::sleep(Duration::from_secs(3));
    }
}
