//! The local lab (`dcn lab up|down|status|exec|link`): the control plane
//! and edge hosts as systemd-nspawn containers on one machine, each in its
//! own network namespace, routed through a router namespace, with a local
//! package repository as their only package source. It runs the real
//! `dcn standalone init` inside the control-plane container, and is both the
//! try-it-on-one-machine path and the end-to-end test rig.

pub mod bare_metal;
mod boot;
mod container;
mod disk;
pub mod guest;
mod host_tools;
mod join;
mod kernel_limits;
mod layer;
mod manage;
mod memory;
mod net;
mod nsenter;
mod procfs;
pub mod publish;
mod repo;
mod report;
pub(crate) mod rootfs;
pub mod scale;
mod state;
mod sweep;
pub mod tempest;
mod up;

pub use manage::{
    HostStatus, LabStatus, Replaced, Restarted, VmStatus, down, exec, link, link_rate, replace,
    restart, status,
};
pub use net::{Rate, parse_rate};
pub use nsenter::ContainerRunner;
pub use report::{EdgeJoin, PhaseTime, Report};
pub use state::{HostState, LabState, VmKind, VmState};
pub use up::up;

use crate::host::Files;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// Default lab directory.
pub const DEFAULT_DIR: &str = "/var/lib/dcn-lab";
/// Default download cache (base rootfs, packages), kept across labs.
pub const DEFAULT_CACHE: &str = "/var/cache/dcn-lab";
/// Where the local repository appears inside containers.
const REPO_MOUNT: &str = "/srv/dcn-repo";

/// Options of `dcn lab up`.
#[derive(Debug, Clone)]
pub struct UpOptions {
    pub dir: PathBuf,
    pub cache: PathBuf,
    pub edges: u8,
    /// Extra edge hosts booted but not joined (for joining by hand).
    pub spare: u8,
    /// Stack the cached edge layer (packages preinstalled, as on the edge
    /// ISO) under edges; without it `dcn join` installs from the repository.
    pub edge_layer: bool,
    /// The static dcn binary to run inside the containers.
    pub dcn_binary: PathBuf,
    /// Copy it into each host once, as a file the host owns (which `dcn
    /// upgrade` may replace), instead of binding this build read-only.
    pub copy_dcn: bool,
    /// Config for the control plane (defaults to the lab's).
    pub config: Option<PathBuf>,
    /// Short certificate lifetimes in the lab's config (renewal drills).
    pub cert_lifetime: Option<std::time::Duration>,
    /// Bare-metal nodes (qemu VMs behind a Redfish BMC) in site `bm1`.
    pub bare_metal: u8,
    /// Also the nodes that must fail to deploy (`bm1-nodisk`, `bm1-badpw`).
    pub bare_metal_failures: bool,
    /// The generic edge ISO for `site deploy` (with `bare_metal`).
    pub edge_iso: PathBuf,
}

impl UpOptions {
    /// The options with their paths made absolute: the lab reaches its
    /// files through [`Files`], whose paths are, and binds them into
    /// containers.
    fn absolute(&self) -> Result<UpOptions> {
        Ok(UpOptions {
            dir: absolute(&self.dir)?,
            cache: absolute(&self.cache)?,
            dcn_binary: absolute(&self.dcn_binary)?,
            edge_iso: absolute(&self.edge_iso)?,
            ..self.clone()
        })
    }
}

/// `path` as an absolute path (a lab directory given as a relative one).
fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("finding {}", path.display()))
}

/// A lab whose processes all ended (killed with its session, say) leaves
/// its network namespaces behind; they hold nothing but interfaces, so a new
/// lab removes them. A lab that still runs is refused.
fn remove_orphaned_namespaces(runner: &dyn crate::host::Runner, files: &Files) -> Result<()> {
    let names = net::lab_namespaces(files);
    if names.is_empty() {
        return Ok(());
    }
    for name in net::orphaned_namespaces(runner, names)? {
        tracing::warn!("removing network namespace {name}, left by a lab that no longer runs");
        net::delete_netns(runner, &name)?;
    }
    Ok(())
}

/// (host name, role, site) of every lab host: the control plane, one host
/// per edge site, then the spare edge hosts (no site: not joined).
fn host_plan(edges: u8, spare: u8) -> Vec<(String, &'static str, Option<String>)> {
    let mut v = vec![("cp".to_string(), "controller", None)];
    for k in 1..=edges {
        v.push((format!("edge{k}"), "edge", Some(format!("edge{k}"))));
    }
    for k in edges + 1..=edges + spare {
        v.push((format!("edge{k}"), "edge", None));
    }
    v
}

/// The control plane's config in the lab: its lab address, and the lab's
/// repository as the only package source.
fn default_config(cert_lifetime: Option<std::time::Duration>) -> String {
    let mut text = format!(
        "apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\ncontrolPlane:\n  hostname: cp\n  address: {}\npackages:\n  source: local:{REPO_MOUNT}\n",
        net::HostNet::new("cp", 0).address
    );
    if let Some(l) = cert_lifetime {
        let l = humantime::format_duration(l);
        text.push_str(&format!(
            "certificates:\n  controlPlaneLifetime: {l}\n  nodeLifetime: {l}\n"
        ));
    }
    text
}

fn require_root() -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!("the lab creates network namespaces, mounts and containers: run it as root");
    }
    Ok(())
}
