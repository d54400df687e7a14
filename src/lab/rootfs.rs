//! Root filesystems of lab containers: one cached Debian 12 base made by
//! debootstrap, and per container an overlayfs whose writable layer lives in
//! the lab directory (mounting takes a fraction of a second where copying
//! the tree takes minutes).

use crate::host::{Cmd, Runner, is_mountpoint};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Packages the base adds to debootstrap's minimal set: systemd as PID 1,
/// and the tools the lab and dcn call inside.
const BASE_INCLUDE: &str =
    "systemd,systemd-sysv,dbus,iproute2,procps,iputils-ping,ca-certificates,apt-utils,debconf,gpgv";

/// The cached base rootfs, created when missing. Returns its path.
pub fn ensure_base(runner: &dyn Runner, cache: &Path) -> Result<PathBuf> {
    let base = cache.join("base-bookworm");
    if base.join("usr/lib/systemd/systemd").exists() && base.join(".dcn-complete").exists() {
        return Ok(base);
    }
    let mirror = host_mirror().context("finding a Debian mirror for debootstrap")?;
    let tmp = cache.join("base-bookworm.partial");
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).with_context(|| format!("removing {}", tmp.display()))?;
    }
    std::fs::create_dir_all(cache).with_context(|| format!("creating {}", cache.display()))?;
    runner.run(
        &Cmd::new(
            "creating the Debian 12 base root filesystem (debootstrap)",
            "debootstrap",
        )
        .args([
            "--variant=minbase",
            &format!("--include={BASE_INCLUDE}"),
            "bookworm",
        ])
        .arg(tmp.display().to_string())
        .arg(mirror)
        .timeout(Duration::from_secs(1800)),
    )?;
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

/// The first Debian 12 ("bookworm") mirror in the host's apt sources.
pub fn host_mirror() -> Result<String> {
    let mut texts = Vec::new();
    if let Ok(t) = std::fs::read_to_string("/etc/apt/sources.list") {
        texts.push(t);
    }
    if let Ok(dir) = std::fs::read_dir("/etc/apt/sources.list.d") {
        let mut paths: Vec<_> = dir.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if let Ok(t) = std::fs::read_to_string(&p) {
                texts.push(t);
            }
        }
    }
    texts
        .iter()
        .find_map(|t| find_bookworm_uri(t))
        .context("the host's apt sources list no bookworm mirror; add one to /etc/apt/sources.list")
}

/// The URI of a `bookworm` suite in one-line or deb822 sources text.
fn find_bookworm_uri(text: &str) -> Option<String> {
    // One-line format: deb [opts] URI SUITE COMPONENTS...
    for line in text.lines() {
        let mut words = line.split_whitespace().filter(|w| !w.starts_with('['));
        if words.next() == Some("deb")
            && let (Some(uri), Some("bookworm")) = (words.next(), words.next())
        {
            return Some(uri.to_string());
        }
    }
    // deb822: paragraphs with Types, URIs and Suites.
    for para in text.split("\n\n") {
        let field = |name: &str| {
            para.lines()
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
        };
        let is_deb = field("Types:").is_some_and(|t| t.split_whitespace().any(|x| x == "deb"));
        let has_suite =
            field("Suites:").is_some_and(|s| s.split_whitespace().any(|x| x == "bookworm"));
        if is_deb && has_suite {
            return field("URIs:").and_then(|u| u.split_whitespace().next().map(String::from));
        }
    }
    None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_mirror_in_both_source_formats() {
        assert_eq!(
            find_bookworm_uri(
                "# c\ndeb [arch=amd64] http://mirror.test/debian bookworm main\ndeb http://mirror.test/debian-security bookworm-security main\n"
            ),
            Some("http://mirror.test/debian".into())
        );
        let deb822 = "Types: deb\nURIs: http://mirror.test/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\nTypes: deb\nURIs: http://sec.test/debian-security\nSuites: bookworm-security\n";
        assert_eq!(
            find_bookworm_uri(deb822),
            Some("http://mirror.test/debian".into())
        );
        assert_eq!(find_bookworm_uri("deb http://x trixie main\n"), None);
    }
}
