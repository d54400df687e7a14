//! Root filesystems of lab containers: one cached Debian 12 base made by
//! debootstrap, and per container an overlayfs whose writable layer lives in
//! the lab directory (mounting takes a fraction of a second where copying
//! the tree takes minutes).

use crate::host::debian::Debootstrap;
use crate::host::{Cmd, FileSpec, Files, Runner, is_mountpoint};
use anyhow::{Result, bail};
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
pub fn ensure_base(runner: &dyn Runner, files: &Files, cache: &Path) -> Result<PathBuf> {
    let base = cache.join("base-bookworm");
    if files.exists(base.join("usr/lib/systemd/systemd"))?
        && files.exists(base.join(".dcn-complete"))?
    {
        return Ok(base);
    }
    let tmp = cache.join("base-bookworm.partial");
    files.remove_all(&tmp)?;
    files.create_dir_all(cache)?;
    let include: Vec<String> = BASE_INCLUDE.iter().map(|p| p.to_string()).collect();
    Debootstrap {
        suite: "bookworm",
        include: &include,
        target: &tmp,
        cache_dir: None,
    }
    .run(runner)?;
    prepare_base(&Files::new(&tmp, false))?;
    files.remove_all(&base)?;
    files.rename(&tmp, &base)?;
    Ok(base)
}

/// Make the base a good container image: no package source of its own (the
/// lab's local repository is the only one), no documentation, and dpkg
/// without fsync (a throwaway tree; installs are much faster).
fn prepare_base(tree: &Files) -> Result<()> {
    let public = FileSpec::public();
    let _ = tree.remove("/etc/apt/sources.list");
    tree.write(
        "/etc/dpkg/dpkg.cfg.d/01-dcn-lab-nodoc",
        b"path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\npath-include /usr/share/locale/locale.alias\n",
        &public,
    )?;
    tree.write(
        "/etc/dpkg/dpkg.cfg.d/02-dcn-lab-unsafe-io",
        b"force-unsafe-io\n",
        &public,
    )?;
    // Each container gets a fresh machine id on first boot.
    tree.write("/etc/machine-id", b"", &public)?;
    tree.write("/.dcn-complete", b"", &public)?;
    Ok(())
}

/// Mount `lower` + a writable layer under `host_dir` at `host_dir/rootfs`.
pub fn mount_overlay(
    runner: &dyn Runner,
    files: &Files,
    lower: &Path,
    host_dir: &Path,
) -> Result<PathBuf> {
    mount_layers(runner, files, &[lower], host_dir)
}

/// Mount `lowers` (topmost first) + a writable layer under `host_dir` at
/// `host_dir/rootfs`.
pub fn mount_layers(
    runner: &dyn Runner,
    files: &Files,
    lowers: &[&Path],
    host_dir: &Path,
) -> Result<PathBuf> {
    let upper = host_dir.join("upper");
    let work = host_dir.join("work");
    let merged = host_dir.join("rootfs");
    for d in [&upper, &work, &merged] {
        files.create_dir_all(d)?;
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
