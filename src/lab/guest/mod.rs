//! The lab's guest: a real operating system small enough to boot in
//! seconds under software emulation, built offline from two Debian packages
//! (no cloud image can be downloaded here). Debian's cloud kernel and an
//! initramfs of busybox-static plus the scripts in `images/guest/`, booted
//! by nova's direct kernel boot (glance `kernel_id`/`ramdisk_id`). The guest
//! takes its address by DHCP, reads the config drive and the metadata
//! service, serves TCP and checks its peer, and reports every finding on its
//! serial console (see [`parse_console`]).
//!
//! `dcn lab up` builds it once into the cache and uploads it with a flavor
//! and a network, so `openstack server create` works right after.

mod console;
mod cpio;
mod kernel_modules;
pub mod upload;

pub use console::{GuestBoot, parse_console};
pub use cpio::{CpioEntry, newc_archive};
pub use kernel_modules::{module_depends, module_load_order};
pub use upload::{FLAVOR, IMAGE, NETWORK, upload};

use crate::host::{Cmd, Runner};
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The Debian packages the guest is made of.
const KERNEL_META_PACKAGE: &str = "linux-image-cloud-amd64";
const BUSYBOX_PACKAGE: &str = "busybox-static";

/// The guest's own files (images/guest/).
const INIT: &str = include_str!("../../../images/guest/init");
const DHCP_EVENT: &str = include_str!("../../../images/guest/dhcp-event");
const PONG: &str = include_str!("../../../images/guest/pong");
const MODULES: &str = include_str!("../../../images/guest/modules.list");

/// A built guest in the cache.
#[derive(Debug, Clone)]
pub struct GuestImage {
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    /// The Debian kernel package it came from.
    pub kernel_package: String,
}

/// Build the guest into `cache/guest` unless it is there for the current
/// packages and scripts. Needs the host's apt lists (the lab's repository
/// phase refreshes them).
pub fn ensure(runner: &dyn Runner, cache: &Path) -> Result<GuestImage> {
    let dir = cache.join("guest");
    let kernel_package = apt_field(runner, KERNEL_META_PACKAGE, "Depends")?
        .split([' ', ','])
        .next()
        .filter(|p| p.starts_with("linux-image-"))
        .with_context(|| format!("{KERNEL_META_PACKAGE} names no kernel package"))?
        .to_string();
    let kernel_version = apt_field(runner, &kernel_package, "Version")?;
    let busybox_version = apt_field(runner, BUSYBOX_PACKAGE, "Version")?;
    let mut h = Sha256::new();
    for part in [
        &kernel_package,
        &kernel_version,
        &busybox_version,
        INIT,
        DHCP_EVENT,
        PONG,
        MODULES,
    ] {
        h.update(part.as_bytes());
        h.update(b"\0");
    }
    let key = hex::encode(h.finalize());
    let image = GuestImage {
        kernel: dir.join("vmlinuz"),
        initrd: dir.join("initrd.img"),
        kernel_package: kernel_package.clone(),
    };
    if std::fs::read_to_string(dir.join(".dcn-key"))
        .ok()
        .as_deref()
        == Some(key.as_str())
        && image.kernel.exists()
        && image.initrd.exists()
    {
        tracing::info!("  using the cached guest {}", dir.display());
        return Ok(image);
    }
    let debs = dir.join("debs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&debs).with_context(|| format!("creating {}", debs.display()))?;
    crate::host::apt::download_debs(runner, &[&kernel_package, BUSYBOX_PACKAGE], &debs)
        .context("downloading the guest's kernel and busybox")?;
    let tree = dir.join("tree");
    for entry in std::fs::read_dir(&debs)? {
        let deb = entry?.path();
        runner.run(
            &Cmd::new(format!("unpacking {}", deb.display()), "dpkg-deb")
                .arg("-x")
                .arg(deb.display().to_string())
                .arg(tree.display().to_string()),
        )?;
    }
    let release = kernel_package
        .strip_prefix("linux-image-")
        .context("a kernel package name")?;
    let vmlinuz = tree.join(format!("boot/vmlinuz-{release}"));
    std::fs::copy(&vmlinuz, &image.kernel)
        .with_context(|| format!("copying {}", vmlinuz.display()))?;
    let modules = tree.join("lib/modules").join(release);
    let wanted: Vec<&str> = MODULES
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let order = module_load_order(&modules, &wanted)?;
    let busybox = std::fs::read(tree.join("bin/busybox")).context("reading busybox")?;
    let mut files = vec![
        CpioEntry::dir("bin"),
        CpioEntry::dir("sbin"),
        CpioEntry::dir("dev"),
        CpioEntry::dir("etc"),
        CpioEntry::dir("proc"),
        CpioEntry::dir("sys"),
        CpioEntry::dir("run"),
        CpioEntry::dir("tmp"),
        CpioEntry::dir("lib"),
        CpioEntry::dir("lib/modules"),
        CpioEntry::char_device("dev/console", 5, 1),
        CpioEntry::file("init", 0o755, INIT.as_bytes().to_vec()),
        CpioEntry::file("bin/busybox", 0o755, busybox),
        CpioEntry::file("bin/dhcp-event", 0o755, DHCP_EVENT.as_bytes().to_vec()),
        CpioEntry::file("bin/pong", 0o755, PONG.as_bytes().to_vec()),
    ];
    for applet in APPLETS {
        files.push(CpioEntry::symlink(&format!("bin/{applet}"), "busybox"));
    }
    // The kernel asks /sbin/modprobe for modules it wants on its own.
    files.push(CpioEntry::symlink("sbin/modprobe", "../bin/busybox"));
    let mut list = String::new();
    for rel in &order {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let data = std::fs::read(modules.join(rel)).with_context(|| format!("reading {rel}"))?;
        files.push(CpioEntry::file(&format!("lib/modules/{name}"), 0o644, data));
        list.push_str(name);
        list.push('\n');
    }
    files.push(CpioEntry::file("etc/modules", 0o644, list.into_bytes()));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&newc_archive(&files))?;
    std::fs::write(&image.initrd, gz.finish()?)
        .with_context(|| format!("writing {}", image.initrd.display()))?;
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::write(dir.join(".dcn-key"), &key)?;
    tracing::info!(
        "  guest: {} + busybox, {} modules, initramfs {} KiB",
        kernel_package,
        order.len(),
        std::fs::metadata(&image.initrd)?.len() / 1024
    );
    Ok(image)
}

/// The busybox applets the guest's scripts call.
const APPLETS: &[&str] = &[
    "sh", "cat", "cut", "cp", "echo", "grep", "head", "insmod", "ip", "mkdir", "mount", "nc",
    "ping", "printf", "sed", "sleep", "test", "[", "udhcpc", "umount",
];

/// One field of a package's candidate version in the host's apt lists.
fn apt_field(runner: &dyn Runner, package: &str, field: &str) -> Result<String> {
    let out = runner.run(
        &Cmd::new(format!("looking up {package}"), "apt-cache")
            .args(["show", "--no-all-versions", package])
            .read_only(),
    )?;
    let prefix = format!("{field}: ");
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(str::to_string)
        .with_context(|| format!("apt-cache shows no {field} for {package}"))
}
