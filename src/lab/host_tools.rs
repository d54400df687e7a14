//! The host tools the lab needs (systemd-nspawn, debootstrap, apt-utils,
//! iproute2, util-linux; pip with a bare-metal site), installed when missing.

use crate::host::command::Runner;
use anyhow::{Context, Result};

/// Host tools the lab needs.
const HOST_TOOLS: &[(&str, &str)] = &[
    ("systemd-nspawn", "systemd-container"),
    ("debootstrap", "debootstrap"),
    ("apt-ftparchive", "apt-utils"),
    ("ip", "iproute2"),
    ("nsenter", "util-linux"),
];

/// Install the host tools that are missing; with a bare-metal site also
/// pip (the BMC emulator's wheels are downloaded here).
pub(super) fn install_host_tools(runner: &dyn Runner, bare_metal: bool) -> Result<()> {
    let pip: &[(&str, &str)] = if bare_metal {
        &[("pip3", "python3-pip")]
    } else {
        &[]
    };
    let missing: Vec<String> = HOST_TOOLS
        .iter()
        .chain(pip)
        .filter(|(tool, _)| !on_path(tool))
        .map(|(_, pkg)| pkg.to_string())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    tracing::info!("  installing {}", missing.join(", "));
    let files = crate::host::Files::new("/", false);
    crate::host::apt::Apt::new(runner, &files, crate::types::PackageSource::Mirror)
        .install(&missing, false)
        .context("installing the lab's host tools")?;
    Ok(())
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}
