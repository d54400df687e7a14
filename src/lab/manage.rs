//! Managing a lab that is up: `dcn lab down|status|exec|restart|link`.

use super::boot::container_spec;
use super::container;
use super::nsenter::ContainerRunner;
use super::state::{LabState, VmState};
use super::{absolute, net, require_root, rootfs};
use crate::host::Files;
use crate::host::command::{Cmd, Runner, SystemRunner, run_inherited};
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::path::Path;
use std::time::{Duration, Instant};

/// How a restarted host came back.
#[derive(Debug, Clone, PartialEq)]
pub struct Restarted {
    /// Seconds until it was up (running; or only reachable, below).
    pub seconds: f64,
    /// Its link to the router was cut: it is up to the point where it can
    /// be entered, while units that need the control plane wait for the
    /// link (nova-compute, say).
    pub link_down: bool,
}

/// Power a lab host off and boot it again (its disk is kept), whatever the
/// state of its link; with `cut`, its power is cut instead of its systemd
/// powering off (nothing it runs is told). The new container is recorded
/// as soon as it runs, before anything that needs the network.
pub fn restart(dir: &Path, host: &str, cut: bool) -> Result<Restarted> {
    require_root()?;
    let (files, dir) = (Files::new("/", false), &absolute(dir)?);
    let mut state =
        LabState::load(&files, dir)?.with_context(|| format!("no lab in {}", dir.display()))?;
    let h = state.host(host)?.clone();
    let how = if cut {
        container::Stop::Cut
    } else {
        container::Stop::PowerOff(Duration::from_secs(90))
    };
    power_off(&files, dir, &mut state, &h, how)?;
    let spec = container_spec(dir, &state, &h)?;
    let t = Instant::now();
    let init = super::boot::boot_recorded(&files, dir, &mut state, host, &spec)?;
    let link_down = !link_is_up(&h.router_link);
    let ready = if link_down {
        container::Readiness::Reachable
    } else {
        container::Readiness::Running
    };
    container::wait_ready(&files, &spec, init, ready, Duration::from_secs(180))?;
    Ok(Restarted {
        seconds: t.elapsed().as_secs_f64(),
        link_down,
    })
}

/// How a replaced host came up.
#[derive(Debug, Clone, PartialEq)]
pub struct Replaced {
    /// Seconds from the blank host's power-on until systemd runs.
    pub seconds: f64,
}

/// Replace a lab host by a blank one: the same name, address, network and
/// read-only layers, a new empty writable layer (its disk), booted. The
/// drill of a control plane whose disk died, for `dcn restore`.
pub fn replace(dir: &Path, host: &str) -> Result<Replaced> {
    require_root()?;
    let runner = SystemRunner::new(false);
    let (files, dir) = (Files::new("/", false), &absolute(dir)?);
    let mut state =
        LabState::load(&files, dir)?.with_context(|| format!("no lab in {}", dir.display()))?;
    let h = state.host(host)?.clone();
    if h.lowers.is_empty() {
        bail!(
            "the lab recorded no layers for {host} (it was made by an older dcn); run `dcn lab down` and `dcn lab up` again"
        );
    }
    power_off(
        &files,
        dir,
        &mut state,
        &h,
        container::Stop::PowerOff(Duration::from_secs(90)),
    )?;
    rootfs::unmount(&runner, &h.rootfs)?;
    let host_dir = h
        .rootfs
        .parent()
        .context("a host's root filesystem has a parent directory")?;
    for layer in ["upper", "work"] {
        files.remove_all(host_dir.join(layer))?;
    }
    let lowers: Vec<&Path> = h.lowers.iter().map(|p| p.as_path()).collect();
    let mounted = rootfs::mount_layers(&runner, &files, &lowers, host_dir)?;
    let hosts = super::boot::hosts_file(&state);
    super::boot::seed(&files, &mounted, &h.name, &hosts)?;
    let spec = container_spec(dir, &state, &h)?;
    let t = Instant::now();
    let init = super::boot::boot_recorded(&files, dir, &mut state, host, &spec)?;
    container::wait_ready(
        &files,
        &spec,
        init,
        container::Readiness::Running,
        Duration::from_secs(180),
    )?;
    Ok(Replaced {
        seconds: t.elapsed().as_secs_f64(),
    })
}

/// Power a host off: its recorded container, and any the lab did not
/// record (a failed restart of an older dcn) that holds its root
/// filesystem busy.
fn power_off(
    files: &Files,
    dir: &Path,
    state: &mut LabState,
    h: &super::state::HostState,
    how: container::Stop,
) -> Result<()> {
    if let Some(nspawn) = h.nspawn_pid {
        container::stop(&h.name, nspawn, h.init_pid, how)?;
    }
    // A container of this host the lab did not record (a failed restart of
    // an older dcn) holds its root filesystem busy: stop it too.
    for found in super::sweep::containers(files, dir)? {
        if found.machine == h.name && Some(found.nspawn) != h.nspawn_pid {
            tracing::warn!(
                "stopping a container of {} the lab had not recorded (nspawn PID {})",
                h.name,
                found.nspawn
            );
            container::stop(
                &h.name,
                found.nspawn,
                found.init,
                container::Stop::PowerOff(Duration::from_secs(60)),
            )?;
        }
    }
    {
        let hm = state.host_mut(&h.name).expect("exists");
        hm.nspawn_pid = None;
        hm.init_pid = None;
    }
    state.save(files, dir)
}

/// Remove everything the lab in `dir` created: containers (stopping a BMC
/// container is a power cut for its VMs, whose disks live in its writable
/// layer), mounts, namespaces (and their veths), the containers' writable
/// layers, and the bare-metal site's inventory. What it recorded goes
/// first; then what is there by what it is (containers whose root is under
/// `DIR/hosts/`, mounts under `DIR`, the lab's namespaces), each named in a
/// warning as something the lab had not recorded. The download cache and
/// `DIR/report.json` and `DIR/logs` (serial logs included) stay. Returns
/// what it found that it had not recorded.
pub fn down(dir: &Path) -> Result<Vec<String>> {
    require_root()?;
    let runner = SystemRunner::new(false);
    let (files, dir) = (Files::new("/", false), &absolute(dir)?);
    let Some(state) = LabState::load(&files, dir)? else {
        tracing::info!("no lab in {}", dir.display());
        return Ok(Vec::new());
    };
    let mut problems = Vec::new();
    let mut unexpected = Vec::new();
    for h in state.hosts.iter().rev() {
        if let Some(nspawn) = h.nspawn_pid
            && let Err(e) = container::stop(
                &h.name,
                nspawn,
                h.init_pid,
                container::Stop::PowerOff(Duration::from_secs(60)),
            )
        {
            problems.push(format!("{e:#}"));
        }
    }
    for found in super::sweep::containers(&files, dir)? {
        let what = format!(
            "container {} (nspawn PID {}), not recorded by the lab",
            found.machine, found.nspawn
        );
        tracing::warn!("stopping {what}");
        unexpected.push(what);
        if let Err(e) = container::stop(
            &found.machine,
            found.nspawn,
            found.init,
            container::Stop::PowerOff(Duration::from_secs(60)),
        ) {
            problems.push(format!("{e:#}"));
        }
    }
    for m in state.mounts.iter().rev() {
        if let Err(e) = rootfs::unmount(&runner, m) {
            problems.push(format!("{e:#}"));
        }
    }
    for m in super::sweep::mounts(&files, dir)? {
        let what = format!("mount {}, not recorded by the lab", m.display());
        tracing::warn!("unmounting {what}");
        unexpected.push(what);
        if let Err(e) = rootfs::unmount(&runner, &m) {
            problems.push(format!("{e:#}"));
        }
    }
    for ns in state.namespaces.iter().rev() {
        if let Err(e) = net::delete_netns(&runner, ns) {
            problems.push(format!("{e:#}"));
        }
    }
    for ns in net::lab_namespaces(&files) {
        let what = format!("network namespace {ns}, not recorded by the lab");
        tracing::warn!("deleting {what}");
        unexpected.push(what);
        if let Err(e) = net::delete_netns(&runner, &ns) {
            problems.push(format!("{e:#}"));
        }
    }
    if !problems.is_empty() {
        bail!(
            "could not remove everything; run `dcn lab down` again after fixing:\n{}",
            problems.join("\n")
        );
    }
    files.remove_all(dir.join("hosts"))?;
    // The lab's layer over the cached repository (what was published).
    files.remove_all(dir.join("repo"))?;
    super::bare_metal::remove_host_files(&files, dir)?;
    files.remove(LabState::path(dir))?;
    Ok(unexpected)
}

/// Each host (name, role, address, running or not, its link) and each
/// bare-metal VM (its power, read through its BMC container).
pub fn status(dir: &Path) -> Result<LabStatus> {
    let (files, dir) = (Files::new("/", false), &absolute(dir)?);
    let state = LabState::load(&files, dir)?
        .with_context(|| format!("no lab in {}; start one with `dcn lab up`", dir.display()))?;
    let hosts = state
        .hosts
        .iter()
        .map(|h| HostStatus {
            name: h.name.clone(),
            role: h.role.clone(),
            site: h.site.clone(),
            address: h.address.clone(),
            running: h.nspawn_pid.is_some_and(container::alive),
            link_up: link_is_up(&h.router_link),
        })
        .collect();
    let vms = state
        .vms
        .iter()
        .map(|vm| {
            let bmc = state.host(&vm.bmc_host).ok().and_then(|h| h.init_pid);
            VmStatus {
                power: super::bare_metal::vm_power(bmc, &vm.name),
                vm: vm.clone(),
            }
        })
        .collect();
    Ok(LabStatus { hosts, vms })
}

/// What `dcn lab status` shows.
#[derive(Debug, Serialize)]
pub struct LabStatus {
    pub hosts: Vec<HostStatus>,
    pub vms: Vec<VmStatus>,
}

/// A lab host's state.
#[derive(Debug, Serialize)]
pub struct HostStatus {
    pub name: String,
    pub role: String,
    pub site: Option<String>,
    pub address: String,
    pub running: bool,
    pub link_up: bool,
}

/// A bare-metal VM and its power (`running`, `shut off`, … or `unknown`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VmStatus {
    #[serde(flatten)]
    pub vm: VmState,
    pub power: String,
}

fn link_is_up(link: &str) -> bool {
    let out = SystemRunner::new(false).run(
        &Cmd::new("reading a lab link's state", "ip")
            .args(["-n", &net::router_ns(), "-o", "link", "show", link])
            .read_only()
            .unchecked(),
    );
    out.map(|o| o.success() && !o.stdout.contains("state DOWN") && o.stdout.contains(",UP"))
        .unwrap_or(false)
}

/// Run `argv` inside a lab host, with the terminal attached. Returns its
/// exit code.
pub fn exec(dir: &Path, host: &str, argv: &[String]) -> Result<i32> {
    require_root()?;
    let (files, dir) = (Files::new("/", false), &absolute(dir)?);
    let state =
        LabState::load(&files, dir)?.with_context(|| format!("no lab in {}", dir.display()))?;
    let h = state.host(host)?;
    let init = h
        .init_pid
        .filter(|p| container::alive(*p))
        .with_context(|| format!("{host} is not running"))?;
    let (program, args) = argv.split_first().context("no command given")?;
    // The control plane's clouds.yaml names its cloud `dcn`.
    let cmd = Cmd::new(format!("running a command in {host}"), program.clone())
        .args(args.iter().cloned())
        .env("OS_CLOUD", "dcn")
        .unchecked()
        .timeout(Duration::from_secs(24 * 3600));
    run_inherited(&ContainerRunner::new(init).wrap(&cmd), true)
}

/// Limit what a host's link carries toward it (`Rate::Off`: no limit):
/// the bandwidth of a WAN link, so what crosses it takes the time it
/// would.
pub fn link_rate(dir: &Path, host: &str, rate: &net::Rate) -> Result<()> {
    require_root()?;
    let (files, dir) = (Files::new("/", false), &absolute(dir)?);
    let state =
        LabState::load(&files, dir)?.with_context(|| format!("no lab in {}", dir.display()))?;
    let h = state.host(host)?;
    net::set_rate(&SystemRunner::new(false), &h.router_link, rate)
}

/// Cut (`up == false`) or restore a host's link to the router.
pub fn link(dir: &Path, host: &str, up: bool) -> Result<()> {
    require_root()?;
    let (files, dir) = (Files::new("/", false), &absolute(dir)?);
    let state =
        LabState::load(&files, dir)?.with_context(|| format!("no lab in {}", dir.display()))?;
    let h = state.host(host)?;
    net::set_link(&SystemRunner::new(false), &h.router_link, up)
}
