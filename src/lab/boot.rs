//! Booting the lab's hosts: each one's layered root filesystem, its
//! identity (host name, hosts file, site config) and its container.

use super::state::{HostState, LabState};
use super::{REPO_MOUNT, UpOptions, bare_metal, container, net, rootfs};
use crate::host::command::Runner;
use crate::host::{FileSpec, Files};
use anyhow::{Context, Result};
use std::path::Path;
use std::time::{Duration, Instant};

/// What the containers are made of: the base root filesystem, the edge
/// layer (when made) and the package repository.
pub(super) struct Layers<'a> {
    pub(super) base: &'a Path,
    pub(super) edge: Option<&'a Path>,
    pub(super) repo: &'a Path,
}

pub(super) fn boot_all(
    runner: &dyn Runner,
    files: &Files,
    opts: &UpOptions,
    layers: Layers<'_>,
    config_text: &str,
    bm: Option<(&bare_metal::Site, &bare_metal::Material)>,
    state: &mut LabState,
) -> Result<()> {
    super::kernel_limits::raise_for(files, runner, state.hosts.len())?;
    let hosts_file = hosts_file(state);
    let names: Vec<String> = state.hosts.iter().map(|h| h.name.clone()).collect();
    for name in names {
        let host_dir = opts.dir.join("hosts").join(&name);
        let role = state.host(&name)?.role.clone();
        let (base, edge_layer) = (layers.base, layers.edge);
        let lowers: Vec<&Path> = match (role.as_str(), edge_layer) {
            ("controller", _) | (_, None) => vec![base],
            ("edge", Some(_)) if !opts.edge_layer => vec![base],
            (_, Some(layer)) => vec![layer, base],
        };
        let rootfs = rootfs::mount_layers(runner, files, &lowers, &host_dir)?;
        state.mounts.push(rootfs.clone());
        let h = state.host_mut(&name).expect("planned");
        h.rootfs = rootfs.clone();
        h.lowers = lowers.iter().map(|l| l.to_path_buf()).collect();
        state.save(files, &opts.dir)?;
        seed(files, &rootfs, &name, &hosts_file)?;
        if name == "cp" {
            files.write(
                rootfs.join("etc/dcn/site.yaml"),
                config_text.as_bytes(),
                &FileSpec::public(),
            )?;
        }
        if let Some((site, m)) = bm {
            if name == "cp" {
                let cp = net::HostNet::new("cp", 0).address;
                bare_metal::seed_control_plane(&rootfs, &opts.dir, site, m, cp)?;
            } else if role == bare_metal::BMC_ROLE {
                bare_metal::seed_bmc(runner, files, &rootfs, site, m, &opts.dir)?;
            }
        }
        files.create_dir_all(opts.dir.join("logs"))?;
        state.dcn_binary = opts.dcn_binary.clone();
        state.repo = layers.repo.to_path_buf();
        state.copy_dcn = opts.copy_dcn;
        if opts.copy_dcn {
            copy_dcn(files, &opts.dcn_binary, &rootfs)?;
        }
        let spec = container_spec(&opts.dir, state, state.host(&name)?)?;
        let t = Instant::now();
        let init = boot_recorded(files, &opts.dir, state, &name, &spec)?;
        container::wait_ready(
            files,
            &spec,
            init,
            container::Readiness::Running,
            Duration::from_secs(120),
        )?;
        tracing::info!("  {name} booted in {:.1}s", t.elapsed().as_secs_f64());
    }
    Ok(())
}

/// Boot `host`'s container; its init PID. Each PID is recorded as soon as
/// it is known: a boot that fails later leaves a container `dcn lab down`
/// knows.
pub(super) fn boot_recorded(
    files: &Files,
    dir: &Path,
    state: &mut LabState,
    host: &str,
    spec: &container::ContainerSpec,
) -> Result<u32> {
    let init = container::start(files, spec, Duration::from_secs(120), |nspawn| {
        state.host_mut(host).expect("a lab host").nspawn_pid = Some(nspawn);
        state.save(files, dir)
    })?;
    state.host_mut(host).expect("a lab host").init_pid = Some(init);
    state.save(files, dir)?;
    Ok(init)
}

/// Where hosts find dcn (the control plane's own installed binary).
const DCN_IN_HOST: &str = crate::centre::standalone::controlplane::INSTALLED_BINARY;

/// Give the host in `rootfs` a copy of `binary` as its own dcn, once: a
/// host that has one keeps it (a restart does not undo an upgrade).
fn copy_dcn(files: &Files, binary: &Path, rootfs: &Path) -> Result<()> {
    let inside = rootfs.join(DCN_IN_HOST.trim_start_matches('/'));
    if inside.exists() {
        return Ok(());
    }
    let bytes = std::fs::read(binary).with_context(|| format!("reading {}", binary.display()))?;
    files.write(&inside, &bytes, &FileSpec::public().mode(0o755))?;
    Ok(())
}

/// How to boot a lab host's container.
pub(super) fn container_spec(
    dir: &Path,
    state: &LabState,
    h: &HostState,
) -> Result<container::ContainerSpec> {
    let mut binds_ro = vec![(state.repo.clone(), REPO_MOUNT.into())];
    if !state.copy_dcn {
        binds_ro.push((state.dcn_binary.clone(), DCN_IN_HOST.into()));
    }
    let (ro, binds) = bare_metal::binds(dir, state, &h.role);
    binds_ro.extend(ro);
    Ok(container::ContainerSpec {
        name: h.name.clone(),
        rootfs: h.rootfs.clone(),
        netns: h.netns.clone(),
        binds_ro,
        binds,
        log: dir.join("logs").join(format!("{}.console.log", h.name)),
    })
}

/// /etc/hosts entries for every lab host.
pub(super) fn hosts_file(state: &LabState) -> String {
    let mut s = String::from("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    for h in &state.hosts {
        s.push_str(&format!("{}\t{}\n", h.address, h.name));
    }
    s
}

/// A container's own identity: host name (before anything installs: RabbitMQ
/// derives its node name from it) and hosts file.
pub(super) fn seed(files: &Files, rootfs: &Path, name: &str, hosts: &str) -> Result<()> {
    let hostname = format!("{name}\n");
    files.write(
        rootfs.join("etc/hostname"),
        hostname.as_bytes(),
        &FileSpec::public(),
    )?;
    files.write(
        rootfs.join("etc/hosts"),
        hosts.as_bytes(),
        &FileSpec::public(),
    )?;
    Ok(())
}
