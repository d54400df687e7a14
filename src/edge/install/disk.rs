//! Choosing the target disk from /sys/block, by the NodeConfig's rule. dcn
//! never guesses: a rule that leaves several candidates (or none) is an
//! error that lists the disks, and a disk with partitions is refused unless
//! the node config says `wipe: true`.

use crate::config::node::{DiskConfig, DiskSelect};
use crate::host::Files;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

const GIB: u64 = 1024 * 1024 * 1024;

/// A whole disk as the kernel lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disk {
    /// Kernel name: `sda`, `vda`, `nvme0n1`.
    pub name: String,
    pub size_bytes: u64,
    pub removable: bool,
    pub read_only: bool,
    /// Names of its partitions (`sda1`, ...).
    pub partitions: Vec<String>,
    pub model: String,
}

impl Disk {
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/dev/{}", self.name))
    }

    /// The device of partition `n` (`sda1`, `nvme0n1p1`).
    pub fn partition(&self, n: u32) -> PathBuf {
        let sep = if self.name.ends_with(|c: char| c.is_ascii_digit()) {
            "p"
        } else {
            ""
        };
        PathBuf::from(format!("/dev/{}{sep}{n}", self.name))
    }

    fn describe(&self) -> String {
        let mut d = format!(
            "/dev/{} ({:.1} GiB{}{}{})",
            self.name,
            self.size_bytes as f64 / GIB as f64,
            if self.model.is_empty() {
                String::new()
            } else {
                format!(", {}", self.model)
            },
            if self.removable { ", removable" } else { "" },
            if self.partitions.is_empty() {
                String::new()
            } else {
                format!(", partitions {}", self.partitions.join(" "))
            }
        );
        if self.read_only {
            d.push_str(", read-only");
        }
        d
    }
}

/// Kinds of block device that are never install targets.
fn is_virtual(name: &str) -> bool {
    ["loop", "ram", "sr", "zram", "dm-", "md", "nbd", "fd"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// The disks under `sys_block` (`/sys/block`) of `files`.
pub fn list_disks(files: &Files, sys_block: &Path) -> Result<Vec<Disk>> {
    // An attribute the kernel does not give reads as empty.
    let read = |p: PathBuf| {
        (files.read_string(p).ok().flatten())
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    if !files.is_dir(sys_block)? {
        bail!("listing disks in {}: it is not there", sys_block.display());
    }
    let mut disks = Vec::new();
    for name in files.list(sys_block)? {
        if is_virtual(&name) {
            continue;
        }
        let dir = sys_block.join(&name);
        let sectors: u64 = read(dir.join("size")).parse().unwrap_or(0);
        let partitions: Vec<String> = (files.list(&dir).unwrap_or_default().into_iter())
            .filter(|p| files.exists(dir.join(p).join("partition")).unwrap_or(false))
            .collect();
        disks.push(Disk {
            size_bytes: sectors * 512,
            removable: read(dir.join("removable")) == "1",
            read_only: read(dir.join("ro")) == "1",
            model: read(dir.join("device/model")),
            partitions,
            name,
        });
    }
    Ok(disks)
}

/// Pick the disk `cfg` names. `boot` lists disks holding the boot medium,
/// which are never chosen. `resolve` turns a configured device path into a
/// kernel name (following /dev/disk/by-* links).
pub fn choose<'a>(
    disks: &'a [Disk],
    cfg: &DiskConfig,
    boot: &[String],
    resolve: impl Fn(&Path) -> Result<String>,
) -> Result<&'a Disk> {
    let disk = match &cfg.device {
        Some(dev) => by_device(disks, dev.as_str(), boot, resolve)?,
        None => by_rule(disks, cfg, boot)?,
    };
    if disk.read_only {
        bail!("{} is read-only", disk.describe());
    }
    if !disk.partitions.is_empty() && !cfg.wipe {
        bail!(
            "refusing to erase {}: it has partitions, and the node config does not say `wipe: true`; set disk.wipe: true to erase it, or name another disk with disk.device",
            disk.describe()
        );
    }
    Ok(disk)
}

/// The disks, described, for an error message.
fn listing(disks: &[Disk]) -> String {
    if disks.is_empty() {
        "none".to_string()
    } else {
        describe_all(disks.iter(), "; ")
    }
}

fn describe_all<'a>(disks: impl Iterator<Item = &'a Disk>, sep: &str) -> String {
    disks.map(Disk::describe).collect::<Vec<_>>().join(sep)
}

/// The disk `disk.device` names, unless it holds the boot medium.
fn by_device<'a>(
    disks: &'a [Disk],
    dev: &str,
    boot: &[String],
    resolve: impl Fn(&Path) -> Result<String>,
) -> Result<&'a Disk> {
    let name = resolve(Path::new(dev))?;
    let d = disks.iter().find(|d| d.name == name).with_context(|| {
        format!(
            "disk.device {dev} is not a disk here (disks: {})",
            listing(disks)
        )
    })?;
    if boot.contains(&d.name) {
        bail!("disk.device {dev} holds the boot medium (this ISO); name the disk to install to");
    }
    Ok(d)
}

/// The one disk the rule (`disk.select`, `disk.minSizeGiB`) leaves among
/// the non-removable, writable disks not booted from.
fn by_rule<'a>(disks: &'a [Disk], cfg: &DiskConfig, boot: &[String]) -> Result<&'a Disk> {
    let min = cfg.min_size_gib * GIB;
    let candidates: Vec<&Disk> = disks
        .iter()
        .filter(|d| !d.removable && !d.read_only && !boot.contains(&d.name) && d.size_bytes >= min)
        .collect();
    let rule = format!(
        "non-removable, writable disks of at least {} GiB",
        cfg.min_size_gib
    );
    match (cfg.select, candidates.as_slice()) {
        (_, []) => bail!(
            "no disk matches the node config's rule ({rule}); disks here: {}; set disk.device or lower disk.minSizeGiB",
            listing(disks)
        ),
        (DiskSelect::Only, [one]) => Ok(one),
        (DiskSelect::Only, many) => bail!(
            "{} disks match ({}), and dcn does not guess which to erase; set disk.device, or disk.select: smallest or largest",
            many.len(),
            describe_all(many.iter().copied(), "; ")
        ),
        (select, many) => by_size(select, many),
    }
}

/// The smallest or largest of `many`, unless another is the same size.
fn by_size<'a>(select: DiskSelect, many: &[&'a Disk]) -> Result<&'a Disk> {
    let size = |d: &&&Disk| d.size_bytes;
    let best = if select == DiskSelect::Smallest {
        many.iter().min_by_key(size)
    } else {
        many.iter().max_by_key(size)
    }
    .expect("not empty");
    let ties: Vec<&Disk> = (many.iter().copied())
        .filter(|d| d.size_bytes == best.size_bytes)
        .collect();
    if ties.len() > 1 {
        bail!(
            "disk.select: {select:?} is ambiguous: {} are the same size, and dcn does not guess which to erase; set disk.device",
            describe_all(ties.into_iter(), " and ")
        );
    }
    Ok(best)
}

/// The kernel name of a device path: `/dev/disk/by-path/...` → `sda`.
pub fn resolve_device(files: &Files, path: &Path) -> Result<String> {
    // Every link on the way followed (by-id to by-path to sda), as the
    // kernel does: Files reads one link at a time.
    let real = std::fs::canonicalize(files.host_path(path)?).with_context(|| {
        format!(
            "disk.device {} does not exist on this machine",
            path.display()
        )
    })?;
    Ok(real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default())
}

/// The disks that hold the mount at `mountpoint` (the boot medium): the
/// device itself, and for a partition its whole disk.
pub fn disks_of_mount(files: &Files, mountpoint: &Path) -> Vec<String> {
    let Ok(Some(info)) = files.read_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let want = mountpoint.to_string_lossy();
    let mut out = Vec::new();
    for line in info.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        if fields.get(4) != Some(&want.as_ref()) {
            continue;
        }
        // The source follows the " - fstype " separator.
        if let Some(pos) = fields.iter().position(|f| *f == "-")
            && let Some(src) = fields.get(pos + 2)
            && let Some(name) = src.strip_prefix("/dev/")
        {
            out.push(name.to_string());
            // A partition's link in sysfs ends in its disk's directory.
            let sys = Path::new("/sys/class/block").join(name);
            if files.exists(sys.join("partition")).unwrap_or(false)
                && let Ok(Some(real)) = files.read_link(&sys)
                && let Some(parent) = real.parent().and_then(|p| p.file_name())
            {
                out.push(parent.to_string_lossy().into_owned());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(name: &str, gib: u64, parts: &[&str]) -> Disk {
        Disk {
            name: name.into(),
            size_bytes: gib * GIB,
            removable: false,
            read_only: false,
            partitions: parts.iter().map(|s| s.to_string()).collect(),
            model: String::new(),
        }
    }

    fn cfg(yaml: &str) -> DiskConfig {
        serde_yaml::from_str(yaml).unwrap()
    }

    fn pick<'a>(disks: &'a [Disk], c: &DiskConfig) -> Result<&'a Disk> {
        choose(disks, c, &["sr0".into()], |p| {
            Ok(p.file_name().unwrap().to_string_lossy().into_owned())
        })
    }

    #[test]
    fn only_rule_needs_exactly_one_candidate() {
        let one = [disk("vda", 20, &[]), disk("vdb", 2, &[])];
        assert_eq!(pick(&one, &cfg("{}")).unwrap().name, "vda");
        let two = [disk("vda", 20, &[]), disk("vdb", 30, &[])];
        let e = pick(&two, &cfg("{}")).unwrap_err().to_string();
        assert!(
            e.contains("2 disks match") && e.contains("does not guess"),
            "{e}"
        );
        let e = pick(&[disk("vda", 4, &[])], &cfg("{}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no disk matches") && e.contains("/dev/vda (4.0 GiB)"),
            "{e}"
        );
    }

    #[test]
    fn smallest_and_largest_refuse_ties() {
        let d = [
            disk("sda", 20, &[]),
            disk("sdb", 40, &[]),
            disk("sdc", 40, &[]),
        ];
        assert_eq!(pick(&d, &cfg("select: smallest")).unwrap().name, "sda");
        let e = pick(&d, &cfg("select: largest")).unwrap_err().to_string();
        assert!(
            e.contains("ambiguous") && e.contains("/dev/sdb") && e.contains("/dev/sdc"),
            "{e}"
        );
    }

    #[test]
    fn partitions_need_wipe() {
        let d = [disk("sda", 20, &["sda1", "sda2"])];
        let e = pick(&d, &cfg("{}")).unwrap_err().to_string();
        assert!(
            e.contains("refusing to erase /dev/sda") && e.contains("wipe: true"),
            "{e}"
        );
        assert_eq!(pick(&d, &cfg("wipe: true")).unwrap().name, "sda");
    }

    #[test]
    fn removable_and_boot_disks_are_not_candidates() {
        let mut usb = disk("sdb", 32, &[]);
        usb.removable = true;
        let d = [disk("sda", 20, &[]), usb, disk("sr0", 1, &[])];
        assert_eq!(pick(&d, &cfg("select: largest")).unwrap().name, "sda");
        let e = pick(&d, &cfg("device: /dev/sr0")).unwrap_err().to_string();
        assert!(e.contains("boot medium"), "{e}");
        let e = pick(&d, &cfg("device: /dev/nvme0n1"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a disk here"), "{e}");
        assert_eq!(pick(&d, &cfg("device: /dev/sdb")).unwrap().name, "sdb");
    }

    #[test]
    fn partition_names() {
        assert_eq!(disk("sda", 1, &[]).partition(2), PathBuf::from("/dev/sda2"));
        assert_eq!(
            disk("nvme0n1", 1, &[]).partition(2),
            PathBuf::from("/dev/nvme0n1p2")
        );
    }

    #[test]
    fn lists_disks_from_sysfs() {
        let sys = tempfile::tempdir().unwrap();
        let mk = |name: &str, size: &str, removable: &str, parts: &[&str]| {
            let d = sys.path().join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("size"), size).unwrap();
            std::fs::write(d.join("removable"), removable).unwrap();
            std::fs::write(d.join("ro"), "0").unwrap();
            for p in parts {
                std::fs::create_dir_all(d.join(p)).unwrap();
                std::fs::write(d.join(p).join("partition"), "1").unwrap();
            }
        };
        mk("vda", "41943040\n", "0\n", &["vda1"]);
        mk("sr0", "100", "1", &[]);
        mk("loop0", "100", "0", &[]);
        let disks = list_disks(&Files::new(sys.path(), false), Path::new("/")).unwrap();
        assert_eq!(disks.len(), 1);
        assert_eq!(disks[0].size_bytes, 20 * GIB);
        assert_eq!(disks[0].partitions, vec!["vda1"]);
    }
}
