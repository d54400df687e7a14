//! `dcn lab up`, phase by phase: what the hosts are made from (built or
//! found in the cache), the network, the containers, the bare-metal site's
//! BMC, the control plane (`dcn standalone init` inside `cp`), the edge
//! joins and the guest image; each phase's time in the report.

use super::boot::{Layers, boot_all};
use super::host_tools::install_host_tools;
use super::report::Timer;
use super::state::{HostState, LabState};
use super::{
    ContainerRunner, Report, UpOptions, bare_metal, default_config, disk, guest, host_plan, join,
    layer, memory, net, remove_orphaned_namespaces, repo, require_root, rootfs, tempest,
};
use crate::host::command::{Cmd, SystemRunner, run_inherited};
use crate::host::{FileSpec, Files};
use crate::recipes::Recipes;
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What the lab's hosts are made from.
struct Built {
    base: PathBuf,
    repo: PathBuf,
    guest: guest::GuestImage,
    wheelhouse: Option<PathBuf>,
    edge_layer: Option<PathBuf>,
}

/// Bring a lab up.
pub fn up(opts: &UpOptions, recipes: &Recipes) -> Result<Report> {
    require_root()?;
    let opts = &opts.absolute()?;
    let files = Files::new("/", false);
    let config_text = check_new_lab(&files, opts, recipes)?;
    let bm_site = bare_metal::plan(opts)?;
    let runner = SystemRunner::new(false);
    remove_orphaned_namespaces(&runner, &files)?;
    let mut timer = Timer {
        report: Report::default(),
        started: Instant::now(),
        watch: crate::engine::Stopwatch::new(),
    };
    let built = build(&mut timer, &runner, &files, opts, recipes, bm_site.as_ref())?;

    let edge_hosts = opts.edges + opts.spare;
    let need = disk::need_bytes(edge_hosts, opts.edge_layer, bm_site.as_ref());
    disk::check(&opts.dir, need)?;
    let material = bm_site
        .as_ref()
        .map(bare_metal::Material::generate)
        .transpose()?;
    let lab = Lab {
        runner: &runner,
        files: &files,
        opts,
        config_text: &config_text,
        built: &built,
        bm: bm_site.as_ref().zip(material.as_ref()),
    };
    let result = bring_up(&mut timer, &lab);
    timer.report.total_seconds = timer.started.elapsed().as_secs_f64();
    let report = serde_json::to_string_pretty(&timer.report)?;
    files.write(
        opts.dir.join("report.json"),
        report.as_bytes(),
        &FileSpec::public(),
    )?;
    result.map_err(|e| {
        e.context(format!(
            "the lab is partly up: inspect it with `dcn lab status`, remove it with `dcn lab down --dir {}`",
            opts.dir.display()
        ))
    })?;
    Ok(timer.report)
}

/// Refuse a lab that is already up in the directory, and check the
/// control plane's config. Returns the config.
fn check_new_lab(files: &Files, opts: &UpOptions, recipes: &Recipes) -> Result<String> {
    if let Some(s) = LabState::load(files, &opts.dir)?
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
    Ok(config_text)
}

/// A lab about to come up: what it is made of and where.
struct Lab<'a> {
    runner: &'a SystemRunner,
    files: &'a Files,
    opts: &'a UpOptions,
    config_text: &'a str,
    built: &'a Built,
    /// The bare-metal site and its keys and passwords.
    bm: Option<(&'a bare_metal::Site, &'a bare_metal::Material)>,
}

/// The phases after the build, each timed: the network, the containers,
/// the bare-metal site, the control plane, the edge joins and the guest.
fn bring_up(timer: &mut Timer, lab: &Lab<'_>) -> Result<()> {
    let (runner, files, opts, built) = (lab.runner, lab.files, lab.opts, lab.built);
    let mut state = LabState::default();
    timer.phase("network", || {
        let site = lab.bm.map(|(site, _)| site);
        create_network(runner, files, opts, site, built, &mut state)
    })?;
    timer.phase("containers", || {
        let repo = repo::mount_lab_repo(runner, files, &built.repo, &opts.dir)?;
        state.mounts.push(repo.clone());
        state.save(files, &opts.dir)?;
        let layers = Layers {
            base: &built.base,
            edge: built.edge_layer.as_deref(),
            repo: &repo,
        };
        boot_all(
            runner,
            files,
            opts,
            layers,
            lab.config_text,
            lab.bm,
            &mut state,
        )
    })?;
    if let Some((site, m)) = lab.bm {
        let what = format!(
            "bare-metal site {} (BMC emulator, {} VMs)",
            bare_metal::SITE,
            site.vms.len()
        );
        timer.phase(&what, || set_up_bmc(&state, site, m))?;
        timer.report.bare_metal_inventory = Some(opts.dir.join(bare_metal::HOST_INVENTORY));
    }
    timer.phase("control plane (dcn standalone init)", || {
        init_control_plane(&state)
    })?;
    timer.report.control_plane_memory = Some(control_plane_memory(&state)?);
    if opts.edges > 0 {
        let joins = timer.phase("edge sites (dcn bundle export, dcn join)", || {
            join::join_edges(files, &opts.dir, &state)
        })?;
        timer.report.edge_joins = joins;
    }
    timer.phase("guest image, flavor and network uploaded", || {
        let cp = state.host("cp")?;
        let init = cp.init_pid.context("the control plane is not running")?;
        guest::upload(&ContainerRunner::new(init), files, &cp.rootfs, &built.guest)
    })
}

/// The memory of the control plane's processes, logged.
fn control_plane_memory(state: &LabState) -> Result<memory::MemoryUse> {
    let init = state.host("cp")?.init_pid.unwrap_or_default();
    let m = memory::measure(init);
    tracing::info!(
        "control plane memory: {} processes, RSS {:.2} GB, PSS {:.2} GB",
        m.processes,
        m.rss_bytes as f64 / 1e9,
        m.pss_bytes as f64 / 1e9
    );
    Ok(m)
}

/// The host tools, then the caches: the base root filesystem, the package
/// repository, the guest image, the BMC emulator's wheelhouse (with a
/// bare-metal site) and the edge layer.
fn build(
    timer: &mut Timer,
    runner: &SystemRunner,
    files: &Files,
    opts: &UpOptions,
    recipes: &Recipes,
    bm_site: Option<&bare_metal::Site>,
) -> Result<Built> {
    let mut packages = recipes.packages_for_roles(&["controller", "compute", "edge"])?;
    // `dcn lab tempest` installs OpenStack's test suite in cp from here.
    packages.extend(tempest::PACKAGES.iter().map(|p| p.to_string()));
    timer.phase("host tools", || {
        install_host_tools(runner, bm_site.is_some())
    })?;
    let base = timer.phase("base root filesystem", || {
        rootfs::ensure_base(runner, files, &opts.cache)
    })?;
    let repo = timer.phase("package repository", || {
        repo::ensure_repo(runner, files, &opts.cache, &base, &packages)
    })?;
    let guest = timer.phase("guest image", || guest::ensure(runner, files, &opts.cache))?;
    let wheelhouse = match bm_site {
        Some(_) => Some(timer.phase("BMC emulator wheelhouse", || {
            bare_metal::ensure_wheelhouse(runner, files, &opts.cache)
        })?),
        None => None,
    };
    // The BMC container runs libvirt and qemu from the edge layer.
    let edge_layer = if (opts.edge_layer && opts.edges + opts.spare > 0) || bm_site.is_some() {
        let edge_packages = recipes.packages_for_roles(&["edge"])?;
        let units = recipes.units_for_roles(&["edge"])?;
        Some(timer.phase("edge layer (edge packages preinstalled)", || {
            layer::ensure_edge_layer(
                runner,
                files,
                &opts.cache,
                &base,
                &repo,
                &edge_packages,
                &units,
            )
        })?)
    } else {
        None
    };
    Ok(Built {
        base,
        repo,
        guest,
        wheelhouse,
        edge_layer,
    })
}

/// The router, a namespace per host (and the bare-metal site's bridge),
/// each recorded in the state as soon as it exists, so `dcn lab down`
/// finds it whatever fails next.
fn create_network(
    runner: &SystemRunner,
    files: &Files,
    opts: &UpOptions,
    bm_site: Option<&bare_metal::Site>,
    built: &Built,
    state: &mut LabState,
) -> Result<()> {
    net::create_router(runner)?;
    state.namespaces.push(net::router_ns());
    state.save(files, &opts.dir)?;
    for (i, (name, role, site)) in host_plan(opts.edges, opts.spare).into_iter().enumerate() {
        let n = net::HostNet::new(&name, i as u8);
        net::create_host(runner, &n)?;
        state.namespaces.push(n.netns.clone());
        state.hosts.push(HostState::planned(name, role, site, &n));
        state.save(files, &opts.dir)?;
    }
    if let Some(site) = bm_site {
        net::create_host(runner, &site.net)?;
        state.namespaces.push(site.net.netns.clone());
        net::bridge_uplink(runner, &site.net)?;
        state.hosts.push(HostState::planned(
            bare_metal::BMC_HOST.into(),
            bare_metal::BMC_ROLE,
            Some(bare_metal::SITE.into()),
            &site.net,
        ));
        state.vms = site.vm_states(&opts.dir);
        state.edge_iso = Some(files.canonicalize(&opts.edge_iso)?);
        state.wheelhouse = built.wheelhouse.clone();
        state.save(files, &opts.dir)?;
    }
    Ok(())
}

/// The bare-metal site's BMC emulator and its VMs, reachable from `cp`.
fn set_up_bmc(
    state: &LabState,
    site: &bare_metal::Site,
    material: &bare_metal::Material,
) -> Result<()> {
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
        material,
        Duration::from_secs(120),
    )
}

/// `dcn standalone init` in the control-plane container, its output shown.
fn init_control_plane(state: &LabState) -> Result<()> {
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
}
