//! Root filesystems of lab containers: one cached Debian 12 base made by
//! debootstrap, and per container an overlayfs whose writable layer lives in
//! the lab directory (mounting takes a fraction of a second where copying
//! the tree takes minutes).

use crate::host::debian::Debootstrap;
use crate::host::{Cmd, Runner, is_mountpoint};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Packages the base adds to debootstrap's minimal set: systemd as PID 1,
/// and the tools the lab and dcn call inside.
const BASE_INCLUDE: &[&str] = &[
    "systemd",
    "systemd-sysv",
    "dbus",
    "iproute2",
    "procps",
    "iputils-ping",
    "ca-certificates",
    "apt-utils",
    "debconf",
    "gpgv",
];

/// The cached base rootfs, created when missing. Returns its path.
pub fn ensure_base(runner: &dyn Runner, cache: &Path) -> Result<PathBuf> {
    let base = cache.join("base-bookworm");
    if base.join("usr/lib/systemd/systemd").exists() && base.join(".dcn-complete").exists() {
        return Ok(base);
    }
    let tmp = cache.join("base-bookworm.partial");
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).with_context(|| format!("removing {}", tmp.display()))?;
    }
    std::fs::create_dir_all(cache).with_context(|| format!("creating {}", cache.display()))?;
    let include: Vec<String> = BASE_INCLUDE.iter().map(|p| p.to_string()).collect();
    Debootstrap {
        suite: "bookworm",
        include: &include,
        target: &tmp,
        cache_dir: None,
    }
    .run(runner)?;
    prepare_base(&tmp)?;
    if base.exists() {
        std::fs::remove_dir_all(&base)?;
    }
    std::fs::rename(&tmp, &base)?;
    Ok(base)
}

/// Make the base a good container image: no package source of its own (the
/// lab's local repository is the only one), no documentation, and dpkg
/// without fsync (a throwaway tree; installs are much faster).
fn prepare_base(root: &Path) -> Result<()> {
    let _ = std::fs::remove_file(root.join("etc/apt/sources.list"));
    let dpkg_cfg = root.join("etc/dpkg/dpkg.cfg.d");
    std::fs::create_dir_all(&dpkg_cfg)?;
    std::fs::write(
        dpkg_cfg.join("01-dcn-lab-nodoc"),
        "path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\npath-include /usr/share/locale/locale.alias\n",
    )?;
    std::fs::write(dpkg_cfg.join("02-dcn-lab-unsafe-io"), "force-unsafe-io\n")?;
    // Each container gets a fresh machine id on first boot.
    std::fs::write(root.join("etc/machine-id"), "")?;
    std::fs::write(root.join(".dcn-complete"), "")?;
    Ok(())
}

/// Mount `lower` + a writable layer under `host_dir` at `host_dir/rootfs`.
pub fn mount_overlay(runner: &dyn Runner, lower: &Path, host_dir: &Path) -> Result<PathBuf> {
    mount_layers(runner, &[lower], host_dir)
}

/// Mount `lowers` (topmost first) + a writable layer under `host_dir` at
/// `host_dir/rootfs`.
pub fn mount_layers(runner: &dyn Runner, lowers: &[&Path], host_dir: &Path) -> Result<PathBuf> {
    let upper = host_dir.join("upper");
    let work = host_dir.join("work");
    let merged = host_dir.join("rootfs");
    for d in [&upper, &work, &merged] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    if is_mountpoint(&merged) {
        bail!(
            "{} is already mounted; run `dcn lab down` first",
            merged.display()
        );
    }
    runner.run(
        &Cmd::new("mounting a container's root filesystem", "mount")
            .args(["-t", "overlay", "overlay", "-o"])
            .arg(format!(
                "lowerdir={},upperdir={},workdir={}",
                lowers
                    .iter()
                    .map(|l| l.display().to_string())
                    .collect::<Vec<_>>()
                    .join(":"),
                upper.display(),
                work.display()
            ))
            .arg(merged.display().to_string()),
    )?;
    Ok(merged)
}

/// Unmount a container root filesystem if mounted.
pub fn unmount(runner: &dyn Runner, path: &Path) -> Result<()> {
    if is_mountpoint(path) {
        runner.run(
            &Cmd::new("unmounting a container's root filesystem", "umount")
                .arg(path.display().to_string())
                .timeout(Duration::from_secs(60)),
        )?;
    }
    Ok(())
}
