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
mod layer;
mod manage;
mod memory;
mod net;
mod nsenter;
mod repo;
mod report;
pub(crate) mod rootfs;
mod state;
mod sweep;
pub mod tempest;

pub use manage::{
    HostStatus, LabStatus, Replaced, Restarted, VmStatus, down, exec, link, replace, restart,
    status,
};
pub use nsenter::ContainerRunner;
pub use report::{EdgeJoin, PhaseTime, Report};
pub use state::{HostState, LabState, VmKind, VmState};

use crate::host::command::{Cmd, SystemRunner, run_inherited};
use anyhow::{Context, Result, bail};
use boot::{Layers, boot_all};
use host_tools::install_host_tools;
use report::Timer;
use std::path::PathBuf;
use std::time::{Duration, Instant};

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

/// A lab whose processes all ended (killed with its session, say) leaves
/// its network namespaces behind; they hold nothing but interfaces, so a new
/// lab removes them. A lab that still runs is refused.
fn remove_orphaned_namespaces(runner: &dyn crate::host::Runner) -> Result<()> {
    let names = net::lab_namespaces_in(std::path::Path::new("/run/netns"));
    if names.is_empty() {
        return Ok(());
    }
    for name in net::orphaned_namespaces(runner, names)? {
        tracing::warn!("removing network namespace {name}, left by a lab that no longer runs");
        net::delete_netns(runner, &name)?;
    }
    Ok(())
}

/// Bring a lab up.
pub fn up(opts: &UpOptions, recipes: &crate::recipes::Recipes) -> Result<Report> {
    require_root()?;
    if let Some(s) = LabState::load(&opts.dir)?
        && !s.namespaces.is_empty()
    {
        bail!(
            "a lab is already up in {} (see `dcn lab status`); run `dcn lab down` first",
            opts.dir.display()
        );
    }
    let config_text = match &opts.config {
        Some(p) => crate::yaml::read_file(p).with_context(|| format!("reading {}", p.display()))?,
        None => default_config(opts.cert_lifetime),
    };
    crate::config::parse_standalone(recipes, &config_text, "the lab's control-plane config")?;
    let bm_site = bare_metal::plan(opts)?;
    let runner = SystemRunner::new(false);
    remove_orphaned_namespaces(&runner)?;
    let mut timer = Timer {
        report: Report::default(),
        started: Instant::now(),
        watch: crate::engine::Stopwatch::new(),
    };
    let mut packages = recipes.packages_for_roles(&["controller", "compute", "edge"])?;
    // `dcn lab tempest` installs OpenStack's test suite in cp from here.
    packages.extend(tempest::PACKAGES.iter().map(|p| p.to_string()));

    timer.phase("host tools", || {
        install_host_tools(&runner, bm_site.is_some())
    })?;
    let base = timer.phase("base root filesystem", || {
        rootfs::ensure_base(&runner, &opts.cache)
    })?;
    let repo = timer.phase("package repository", || {
        repo::ensure_repo(&runner, &opts.cache, &base, &packages)
    })?;
    let guest = timer.phase("guest image", || guest::ensure(&runner, &opts.cache))?;
    let wheelhouse = match &bm_site {
        Some(_) => Some(timer.phase("BMC emulator wheelhouse", || {
            bare_metal::ensure_wheelhouse(&runner, &opts.cache)
        })?),
        None => None,
    };
    // The BMC container runs libvirt and qemu from the edge layer.
    let edge_layer = if (opts.edge_layer && opts.edges + opts.spare > 0) || bm_site.is_some() {
        let edge_packages = recipes.packages_for_roles(&["edge"])?;
        let units = recipes.units_for_roles(&["edge"])?;
        Some(timer.phase("edge layer (edge packages preinstalled)", || {
            layer::ensure_edge_layer(&runner, &opts.cache, &base, &repo, &edge_packages, &units)
        })?)
    } else {
        None
    };

    let edge_hosts = opts.edges + opts.spare;
    let need = disk::need_bytes(edge_hosts, opts.edge_layer, bm_site.as_ref());
    disk::check(&opts.dir, need)?;
    let material = bm_site
        .as_ref()
        .map(bare_metal::Material::generate)
        .transpose()?;
    let mut state = LabState::default();
    let result = (|| -> Result<()> {
        timer.phase("network", || {
            net::create_router(&runner)?;
            state.namespaces.push(net::router_ns());
            state.save(&opts.dir)?;
            for (i, (name, role, site)) in host_plan(opts.edges, opts.spare).into_iter().enumerate()
            {
                let n = net::HostNet::new(&name, i as u8);
                net::create_host(&runner, &n)?;
                state.namespaces.push(n.netns.clone());
                state.hosts.push(HostState::planned(name, role, site, &n));
                state.save(&opts.dir)?;
            }
            if let Some(site) = &bm_site {
                net::create_host(&runner, &site.net)?;
                state.namespaces.push(site.net.netns.clone());
                net::bridge_uplink(&runner, &site.net)?;
                state.hosts.push(HostState::planned(
                    bare_metal::BMC_HOST.into(),
                    bare_metal::BMC_ROLE,
                    Some(bare_metal::SITE.into()),
                    &site.net,
                ));
                state.vms = site.vm_states(&opts.dir);
                let iso = std::fs::canonicalize(&opts.edge_iso)
                    .with_context(|| format!("finding {}", opts.edge_iso.display()))?;
                state.edge_iso = Some(iso);
                state.wheelhouse = wheelhouse.clone();
                state.save(&opts.dir)?;
            }
            Ok(())
        })?;
        timer.phase("containers", || {
            boot_all(
                &runner,
                opts,
                Layers {
                    base: &base,
                    edge: edge_layer.as_deref(),
                    repo: &repo,
                },
                &config_text,
                bm_site.as_ref().zip(material.as_ref()),
                &mut state,
            )
        })?;
        if let (Some(site), Some(m)) = (&bm_site, &material) {
            let what = format!(
                "bare-metal site {} (BMC emulator, {} VMs)",
                bare_metal::SITE,
                site.vms.len()
            );
            timer.phase(&what, || {
                let init = |name: &str| -> Result<u32> {
                    state
                        .host(name)?
                        .init_pid
                        .with_context(|| format!("{name} is not running"))
                };
                bare_metal::set_up_bmc(
                    &ContainerRunner::new(init(bare_metal::BMC_HOST)?),
                    &state.host(bare_metal::BMC_HOST)?.rootfs,
                    &ContainerRunner::new(init("cp")?),
                    site,
                    m,
                    Duration::from_secs(120),
                )
            })?;
            timer.report.bare_metal_inventory = Some(opts.dir.join(bare_metal::HOST_INVENTORY));
        }
        timer.phase("control plane (dcn standalone init)", || {
            let cp = state.host("cp")?;
            let init = cp
                .init_pid
                .context("the control plane container is not running")?;
            let runner = ContainerRunner::new(init);
            run_inherited(
                &runner.wrap(
                    &Cmd::new(
                        "running dcn standalone init in the control-plane container",
                        "dcn",
                    )
                    .args(["standalone", "init", "--config", "/etc/dcn/site.yaml"])
                    // The lab judged this shared disk itself (lab::disk).
                    .arg("--ignore-preflight-errors=disk-var")
                    .timeout(Duration::from_secs(45 * 60)),
                ),
                false,
            )?;
            Ok(())
        })?;
        let init = state.host("cp")?.init_pid.unwrap_or_default();
        let m = memory::measure(init);
        tracing::info!(
            "control plane memory: {} processes, RSS {:.2} GB, PSS {:.2} GB",
            m.processes,
            m.rss_bytes as f64 / 1e9,
            m.pss_bytes as f64 / 1e9
        );
        timer.report.control_plane_memory = Some(m);
        if opts.edges > 0 {
            let joins = timer.phase("edge sites (dcn bundle export, dcn join)", || {
                join::join_edges(&opts.dir, &state)
            })?;
            timer.report.edge_joins = joins;
        }
        timer.phase("guest image, flavor and network uploaded", || {
            let cp = state.host("cp")?;
            let init = cp.init_pid.context("the control plane is not running")?;
            guest::upload(&ContainerRunner::new(init), &cp.rootfs, &guest)
        })?;
        Ok(())
    })();
    timer.report.total_seconds = timer.started.elapsed().as_secs_f64();
    let report_path = opts.dir.join("report.json");
    std::fs::create_dir_all(&opts.dir)?;
    std::fs::write(&report_path, serde_json::to_string_pretty(&timer.report)?)
        .with_context(|| format!("writing {}", report_path.display()))?;
    result.map_err(|e| {
        e.context(format!(
            "the lab is partly up: inspect it with `dcn lab status`, remove it with `dcn lab down --dir {}`",
            opts.dir.display()
        ))
    })?;
    Ok(timer.report)
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
