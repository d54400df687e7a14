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

use crate::host::{Cmd, Runner};
use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The Debian packages the guest is made of.
const KERNEL_META_PACKAGE: &str = "linux-image-cloud-amd64";
const BUSYBOX_PACKAGE: &str = "busybox-static";

/// The guest's own files (images/guest/).
const INIT: &str = include_str!("../../images/guest/init");
const DHCP_EVENT: &str = include_str!("../../images/guest/dhcp-event");
const PONG: &str = include_str!("../../images/guest/pong");
const MODULES: &str = include_str!("../../images/guest/modules.list");

/// Names of what the lab uploads.
pub const IMAGE: &str = "dcn-guest";
pub const FLAVOR: &str = "dcn.guest";
pub const NETWORK: &str = "lab";
const SUBNET_RANGE: &str = "192.168.77.0/24";
/// Kernel command line: the serial console is what nova logs.
const COMMAND_LINE: &str = "console=ttyS0 quiet";

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
    runner.run(
        &Cmd::new("downloading the guest's kernel and busybox", "apt-get")
            .args(["-q", "download", &kernel_package, BUSYBOX_PACKAGE])
            .cwd(&debs)
            .timeout(Duration::from_secs(600)),
    )?;
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

/// The files (relative to `modules`, the kernel's `lib/modules/<release>`)
/// to load, dependencies first, for the `wanted` module names. Modules
/// built into the kernel are left out.
pub fn module_load_order(modules: &Path, wanted: &[&str]) -> Result<Vec<String>> {
    let builtin: BTreeSet<String> = std::fs::read_to_string(modules.join("modules.builtin"))
        .unwrap_or_default()
        .lines()
        .map(module_name)
        .collect();
    let mut files = BTreeMap::new();
    index_modules(modules, modules, &mut files)?;
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    for name in wanted {
        visit(
            &module_name(name),
            modules,
            &files,
            &builtin,
            &mut seen,
            &mut order,
        )?;
    }
    Ok(order)
}

fn visit(
    name: &str,
    root: &Path,
    files: &BTreeMap<String, String>,
    builtin: &BTreeSet<String>,
    seen: &mut BTreeSet<String>,
    order: &mut Vec<String>,
) -> Result<()> {
    if !seen.insert(name.to_string()) || builtin.contains(name) {
        return Ok(());
    }
    let Some(rel) = files.get(name) else {
        bail!("the guest kernel has no module {name} (neither a file nor built in)");
    };
    let data = std::fs::read(root.join(rel)).with_context(|| format!("reading {rel}"))?;
    for dep in module_depends(&data) {
        visit(&dep, root, files, builtin, seen, order)?;
    }
    order.push(rel.clone());
    Ok(())
}

/// Module names as the kernel spells them: `-` and `_` are the same.
fn module_name(path_or_name: &str) -> String {
    let base = path_or_name.rsplit('/').next().unwrap_or(path_or_name);
    base.trim_end_matches(".ko").replace('-', "_")
}

fn index_modules(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            index_modules(root, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "ko") {
            let rel = path.strip_prefix(root)?.to_string_lossy().into_owned();
            out.insert(module_name(&rel), rel);
        }
    }
    Ok(())
}

/// The `depends=` entry of a module's `.modinfo` strings.
pub fn module_depends(ko: &[u8]) -> Vec<String> {
    const KEY: &[u8] = b"depends=";
    let Some(at) = ko.windows(KEY.len()).position(|w| w == KEY) else {
        return Vec::new();
    };
    let rest = &ko[at + KEY.len()..];
    let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end])
        .split(',')
        .filter(|d| !d.is_empty())
        .map(module_name)
        .collect()
}

/// One member of an initramfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpioEntry {
    pub name: String,
    pub mode: u32,
    pub data: Vec<u8>,
    pub rdev: (u32, u32),
}

impl CpioEntry {
    pub fn dir(name: &str) -> CpioEntry {
        CpioEntry {
            name: name.into(),
            mode: 0o040755,
            data: Vec::new(),
            rdev: (0, 0),
        }
    }
    pub fn file(name: &str, perm: u32, data: Vec<u8>) -> CpioEntry {
        CpioEntry {
            name: name.into(),
            mode: 0o100000 | perm,
            data,
            rdev: (0, 0),
        }
    }
    pub fn symlink(name: &str, target: &str) -> CpioEntry {
        CpioEntry {
            name: name.into(),
            mode: 0o120777,
            data: target.as_bytes().to_vec(),
            rdev: (0, 0),
        }
    }
    pub fn char_device(name: &str, major: u32, minor: u32) -> CpioEntry {
        CpioEntry {
            name: name.into(),
            mode: 0o020600,
            data: Vec::new(),
            rdev: (major, minor),
        }
    }
}

/// A cpio archive in the "newc" format the kernel unpacks as an initramfs.
/// Owner root, time 0: the same inputs give the same bytes.
pub fn newc_archive(entries: &[CpioEntry]) -> Vec<u8> {
    fn pad(out: &mut Vec<u8>) {
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    }
    let mut out = Vec::new();
    let trailer = CpioEntry::file("TRAILER!!!", 0, Vec::new());
    for (ino, e) in entries.iter().chain([&trailer]).enumerate() {
        let is_trailer = e.name == "TRAILER!!!";
        let fields = [
            if is_trailer { 0 } else { ino as u32 + 1 },
            if is_trailer { 0 } else { e.mode },
            0,
            0,
            if e.mode & 0o170000 == 0o040000 { 2 } else { 1 },
            0,
            e.data.len() as u32,
            0,
            0,
            e.rdev.0,
            e.rdev.1,
            e.name.len() as u32 + 1,
            0,
        ];
        out.extend_from_slice(b"070701");
        for f in fields {
            out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        out.extend_from_slice(e.name.as_bytes());
        out.push(0);
        pad(&mut out);
        out.extend_from_slice(&e.data);
        pad(&mut out);
    }
    out
}

/// Upload the guest to the control plane (through `cp`, a runner inside
/// it, whose root directory is `cp_rootfs` on this host): kernel, ramdisk
/// and a small root disk that names them, a flavor, and a network.
pub fn upload(cp: &dyn Runner, cp_rootfs: &Path, guest: &GuestImage) -> Result<()> {
    let inside = "/var/lib/dcn-lab-guest";
    let dir = cp_rootfs.join(inside.trim_start_matches('/'));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::copy(&guest.kernel, dir.join("vmlinuz"))?;
    std::fs::copy(&guest.initrd, dir.join("initrd.img"))?;
    // The root disk holds nothing: the guest lives in its initramfs.
    std::fs::write(dir.join("disk.raw"), vec![0u8; 1 << 20])?;
    let os = |what: &str, args: &[&str]| -> Result<String> {
        let out = cp.run(
            &Cmd::new(what, "openstack")
                .args(args.iter().copied())
                .env("OS_CLOUD", "dcn")
                .timeout(Duration::from_secs(300)),
        )?;
        Ok(out.stdout.trim().to_string())
    };
    let kernel = os(
        "uploading the guest kernel",
        &[
            "image",
            "create",
            "--disk-format",
            "aki",
            "--container-format",
            "aki",
            "--public",
            "--file",
            &format!("{inside}/vmlinuz"),
            "-f",
            "value",
            "-c",
            "id",
            &format!("{IMAGE}-kernel"),
        ],
    )?;
    let ramdisk = os(
        "uploading the guest ramdisk",
        &[
            "image",
            "create",
            "--disk-format",
            "ari",
            "--container-format",
            "ari",
            "--public",
            "--file",
            &format!("{inside}/initrd.img"),
            "-f",
            "value",
            "-c",
            "id",
            &format!("{IMAGE}-initrd"),
        ],
    )?;
    os(
        "uploading the guest image",
        &[
            "image",
            "create",
            "--disk-format",
            "raw",
            "--container-format",
            "bare",
            "--public",
            "--file",
            &format!("{inside}/disk.raw"),
            "--property",
            &format!("kernel_id={kernel}"),
            "--property",
            &format!("ramdisk_id={ramdisk}"),
            "--property",
            &format!("os_command_line={COMMAND_LINE}"),
            IMAGE,
        ],
    )?;
    os(
        "creating the guest flavor",
        &[
            "flavor", "create", "--ram", "128", "--disk", "1", "--vcpus", "1", "--public", FLAVOR,
        ],
    )?;
    os(
        "creating the lab network",
        &["network", "create", "--share", NETWORK],
    )?;
    os(
        "creating the lab subnet",
        &[
            "subnet",
            "create",
            "--network",
            NETWORK,
            "--subnet-range",
            SUBNET_RANGE,
            &format!("{NETWORK}-subnet"),
        ],
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// What one boot of the guest reported on its console.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GuestBoot {
    pub boot: String,
    /// Every `key=value` line of this boot, in order.
    pub events: Vec<BTreeMap<String, String>>,
}

impl GuestBoot {
    /// The first event named `event` (e.g. `dhcp`, `metadata`).
    pub fn event(&self, event: &str) -> Option<&BTreeMap<String, String>> {
        self.events
            .iter()
            .find(|e| e.get("event").map(String::as_str) == Some(event))
    }

    /// The periodic checks (`round=N icmp=.. tcp=.. dhcp=..`), in order.
    pub fn rounds(&self) -> Vec<&BTreeMap<String, String>> {
        self.events
            .iter()
            .filter(|e| e.contains_key("round"))
            .collect()
    }
}

/// The guest's reports in a console log, one [`GuestBoot`] per boot, in
/// order. Lines look like `DCNGUEST boot=1a2b3c4d event=dhcp ip=... uptime=3.2`.
pub fn parse_console(log: &str) -> Vec<GuestBoot> {
    let mut boots: Vec<GuestBoot> = Vec::new();
    for line in log.lines() {
        let Some(at) = line.find("DCNGUEST ") else {
            continue;
        };
        let fields: BTreeMap<String, String> = line[at + 9..]
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_end_matches('\r').to_string()))
            .collect();
        let Some(boot) = fields.get("boot").cloned() else {
            continue;
        };
        match boots.last_mut() {
            Some(b) if b.boot == boot => b.events.push(fields),
            _ => boots.push(GuestBoot {
                boot,
                events: vec![fields],
            }),
        }
    }
    boots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newc_headers_names_and_padding() {
        let a = newc_archive(&[
            CpioEntry::dir("bin"),
            CpioEntry::file("init", 0o755, b"#!/bin/sh\n".to_vec()),
            CpioEntry::symlink("bin/sh", "busybox"),
            CpioEntry::char_device("dev/console", 5, 1),
        ]);
        assert_eq!(a.len() % 4, 0);
        // Walk the archive back: every header, name and body where the
        // format says.
        let mut at = 0;
        let mut names = Vec::new();
        loop {
            let h = std::str::from_utf8(&a[at..at + 110]).unwrap();
            assert!(h.starts_with("070701"), "{h}");
            let field = |i: usize| u32::from_str_radix(&h[6 + 8 * i..14 + 8 * i], 16).unwrap();
            let (mode, size, rmaj, rmin, namesize) =
                (field(1), field(6), field(9), field(10), field(11));
            let name = std::str::from_utf8(&a[at + 110..at + 110 + namesize as usize - 1])
                .unwrap()
                .to_string();
            at = (at + 110 + namesize as usize).div_ceil(4) * 4;
            let body = &a[at..at + size as usize];
            at = (at + size as usize).div_ceil(4) * 4;
            match name.as_str() {
                "init" => assert_eq!((mode, body), (0o100755, &b"#!/bin/sh\n"[..])),
                "bin/sh" => assert_eq!((mode, body), (0o120777, &b"busybox"[..])),
                "dev/console" => assert_eq!((mode, rmaj, rmin), (0o020600, 5, 1)),
                _ => {}
            }
            names.push(name);
            if names.last().unwrap() == "TRAILER!!!" {
                break;
            }
        }
        assert_eq!(at, a.len());
        assert_eq!(
            names,
            ["bin", "init", "bin/sh", "dev/console", "TRAILER!!!"]
        );
    }

    fn fake_module(root: &Path, rel: &str, depends: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let mut data = b"\x7fELF....\0license=GPL\0".to_vec();
        data.extend_from_slice(format!("depends={depends}\0vermagic=6.1\0").as_bytes());
        std::fs::write(p, data).unwrap();
    }

    #[test]
    fn modules_load_dependencies_first_and_skip_builtins() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fake_module(r, "kernel/drivers/virtio/virtio.ko", "");
        fake_module(r, "kernel/drivers/virtio/virtio_ring.ko", "virtio");
        fake_module(
            r,
            "kernel/drivers/virtio/virtio_pci.ko",
            "virtio_ring,virtio",
        );
        fake_module(
            r,
            "kernel/drivers/net/virtio_net.ko",
            "net_failover,virtio_ring,virtio",
        );
        fake_module(r, "kernel/drivers/net/net_failover.ko", "failover");
        fake_module(r, "kernel/fs/nls/nls_iso8859-1.ko", "");
        std::fs::write(r.join("modules.builtin"), "kernel/net/core/failover.ko\n").unwrap();
        let order = module_load_order(r, &["virtio_pci", "virtio_net", "nls_iso8859_1"]).unwrap();
        assert_eq!(
            order,
            [
                "kernel/drivers/virtio/virtio.ko",
                "kernel/drivers/virtio/virtio_ring.ko",
                "kernel/drivers/virtio/virtio_pci.ko",
                "kernel/drivers/net/net_failover.ko",
                "kernel/drivers/net/virtio_net.ko",
                "kernel/fs/nls/nls_iso8859-1.ko",
            ]
        );
        let err = module_load_order(r, &["isofs"]).unwrap_err();
        assert!(format!("{err}").contains("no module isofs"), "{err}");
    }

    #[test]
    fn console_reports_are_grouped_by_boot() {
        let log = "\
[    1.0] random kernel line
DCNGUEST boot=aaaa1111 event=start uptime=1.20
DCNGUEST boot=aaaa1111 event=dhcp ip=192.168.77.5 lease=43200 uptime=4.00\r
login noise DCNGUEST boot=aaaa1111 round=1 icmp=ok tcp=fail dhcp=ok uptime=9.1
DCNGUEST no boot field
DCNGUEST boot=bbbb2222 event=start uptime=0.9
DCNGUEST boot=bbbb2222 round=1 icmp=ok tcp=ok dhcp=ok uptime=7.0
";
        let boots = parse_console(log);
        assert_eq!(boots.len(), 2);
        assert_eq!(boots[0].event("dhcp").unwrap()["ip"], "192.168.77.5");
        assert_eq!(boots[0].event("dhcp").unwrap()["uptime"], "4.00");
        assert_eq!(boots[0].rounds()[0]["tcp"], "fail");
        assert_eq!(boots[1].boot, "bbbb2222");
        assert_eq!(boots[1].rounds()[0]["tcp"], "ok");
        assert!(boots[1].event("metadata").is_none());
    }
}
