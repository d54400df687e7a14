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

use crate::host::{Cmd, FileSpec, Files, Runner};
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
pub fn ensure(runner: &dyn Runner, files: &Files, cache: &Path) -> Result<GuestImage> {
    let dir = cache.join("guest");
    let (kernel_package, key) = kernel_and_key(runner)?;
    let image = GuestImage {
        kernel: dir.join("vmlinuz"),
        initrd: dir.join("initrd.img"),
        kernel_package: kernel_package.clone(),
    };
    if is_cached(files, &dir, &key, &image)? {
        tracing::info!("  using the cached guest {}", dir.display());
        return Ok(image);
    }
    let _ = files.remove_all(&dir);
    let tree = unpack(runner, files, &dir, &kernel_package)?;
    let release = kernel_package
        .strip_prefix("linux-image-")
        .context("a kernel package name")?;
    let vmlinuz = tree.join(format!("boot/vmlinuz-{release}"));
    files
        .copy(&vmlinuz, &image.kernel, &FileSpec::public())
        .with_context(|| format!("copying {}", vmlinuz.display()))?;
    let modules = tree.join("lib/modules").join(release);
    let (initrd, loaded) = initramfs(files, &tree, &modules)?;
    files.write(&image.initrd, &initrd, &FileSpec::public())?;
    let _ = files.remove_all(&tree);
    files.write(dir.join(".dcn-key"), key.as_bytes(), &FileSpec::public())?;
    tracing::info!(
        "  guest: {} + busybox, {} modules, initramfs {} KiB",
        kernel_package,
        loaded,
        initrd.len() / 1024
    );
    Ok(image)
}

/// The kernel package the guest is made of (the one the meta package
/// names now), and the key of a build: the packages' versions and the
/// guest's own files.
fn kernel_and_key(runner: &dyn Runner) -> Result<(String, String)> {
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
    Ok((kernel_package, hex::encode(h.finalize())))
}

/// Whether `image`, in `dir`, was built for `key`.
fn is_cached(files: &Files, dir: &Path, key: &str, image: &GuestImage) -> Result<bool> {
    let built_for = files.read_string(dir.join(".dcn-key")).ok().flatten();
    Ok(built_for.as_deref() == Some(key)
        && files.exists(&image.kernel)?
        && files.exists(&image.initrd)?)
}

/// The kernel package and busybox, downloaded into `dir/debs` and unpacked
/// into `dir/tree`, which it returns.
fn unpack(runner: &dyn Runner, files: &Files, dir: &Path, kernel_package: &str) -> Result<PathBuf> {
    let debs = dir.join("debs");
    files.create_dir_all(&debs)?;
    crate::host::apt::download_debs(runner, &[kernel_package, BUSYBOX_PACKAGE], &debs)
        .context("downloading the guest's kernel and busybox")?;
    let tree = dir.join("tree");
    for name in files.list(&debs)? {
        let deb = debs.join(name);
        runner.run(
            &Cmd::new(format!("unpacking {}", deb.display()), "dpkg-deb")
                .arg("-x")
                .arg(deb.display().to_string())
                .arg(tree.display().to_string()),
        )?;
    }
    Ok(tree)
}

/// The guest's initramfs (a gzipped newc archive): busybox from `tree`,
/// the guest's scripts, and the modules of `modules.list` from `modules`
/// (the kernel's `lib/modules/<release>`). Returns it and how many
/// modules it loads.
fn initramfs(files: &Files, tree: &Path, modules: &Path) -> Result<(Vec<u8>, usize)> {
    let busybox = files
        .read(tree.join("bin/busybox"))
        .context("reading busybox")?
        .context("busybox-static has no bin/busybox")?;
    let mut entries = vec![
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
        entries.push(CpioEntry::symlink(&format!("bin/{applet}"), "busybox"));
    }
    // The kernel asks /sbin/modprobe for modules it wants on its own.
    entries.push(CpioEntry::symlink("sbin/modprobe", "../bin/busybox"));
    let with_list = module_entries(files, modules)?;
    // One of them is etc/modules, the list.
    let loaded = with_list.len() - 1;
    entries.extend(with_list);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&newc_archive(&entries))?;
    Ok((gz.finish()?, loaded))
}

/// The wanted modules, dependencies first, in `lib/modules/`, and
/// `etc/modules` listing them in the order the guest's init loads them.
fn module_entries(files: &Files, modules: &Path) -> Result<Vec<CpioEntry>> {
    let wanted: Vec<&str> = MODULES
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut entries = Vec::new();
    let mut list = String::new();
    for rel in module_load_order(files, modules, &wanted)? {
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        let data = files
            .read(modules.join(&rel))?
            .with_context(|| format!("the guest kernel has no {rel}"))?;
        entries.push(CpioEntry::file(&format!("lib/modules/{name}"), 0o644, data));
        list.push_str(name);
        list.push('\n');
    }
    entries.push(CpioEntry::file("etc/modules", 0o644, list.into_bytes()));
    Ok(entries)
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
