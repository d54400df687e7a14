//! `dcn install`: run by the live system of the edge ISO (the
//! `dcn-install.service` unit), it installs the edge OS to the local disk
//! and reboots into it:
//!
//! 1. read the payload from the boot medium; parse the NodeConfig; verify
//!    the bundle (pin, expiry): nothing on any disk has changed yet;
//! 2. choose the disk by the node config's rule ([`disk`]);
//! 3. partition it (GPT: BIOS boot, ESP, root) and make the file systems;
//! 4. copy the OS (the ISO's squashfs) to the root file system;
//! 5. install GRUB for BIOS and UEFI (3 to 5: [`system`]);
//! 6. write the node's settings and the first-boot unit ([`target`]);
//! 7. unmount and reboot.
//!
//! Progress goes to stdout (the journal) and to each `--console`, and, once
//! the bundle is verified, to the control plane's join service: the
//! installer brings up the node's static network in the live system
//! ([`network`]) and reports `installer-started` with each step (again
//! every heartbeat while a step lasts), then `disk-written`, or `failed`
//! with the reason and its last lines (best effort: a report that cannot
//! be sent never stops the install). When a step from 3 on fails, the
//! disk's partition table is erased again, so the node never boots a
//! half-written system, and the message says so.

pub mod disk;
pub mod firstboot;
pub mod network;
mod progress;
mod system;
pub mod target;

use crate::host::systemd::Systemd;
use crate::host::{Cmd, Files, Runner, SystemRunner};
use crate::image::embed;
use crate::image::mounts::Mounts;
use crate::recipes::Recipes;
use crate::wire::Phase;
use anyhow::{Context, Result, bail};
use progress::Progress;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where live-boot mounts the boot medium.
pub const DEFAULT_MEDIUM: &str = "/run/live/medium";
/// Where the new root file system is mounted while installing.
const TARGET: &str = "/mnt/dcn-target";
/// The OS image on the medium.
const SQUASHFS: &str = "live/filesystem.squashfs";

/// What `dcn install` installs from, and what it does when done.
#[derive(Debug, Clone)]
pub struct Options {
    /// The boot medium: the mounted live medium (a directory), an ISO file
    /// or a device; [`DEFAULT_MEDIUM`] on the edge ISO.
    pub medium: PathBuf,
    /// Consoles that show the progress too (stdout always does).
    pub console: Vec<PathBuf>,
    /// Stay up when done instead of rebooting.
    pub no_reboot: bool,
}

/// Run the installer.
pub fn run(recipes: &Recipes, args: &Options) -> Result<()> {
    let mut progress = Progress::new(&args.console);
    if !nix::unistd::geteuid().is_root() {
        bail!("dcn install must run as root; it runs by itself when the edge ISO boots");
    }
    let runner = SystemRunner::new(false);
    let mut disk_path = None;
    let result = install(recipes, &runner, args, &mut progress, &mut disk_path);
    match result {
        Ok(()) => {
            progress.say(&format!(
                "done in {:.0}s; the node reboots into the installed system (remove the virtual media, or let the BMC's boot-once override lapse)",
                progress.started.elapsed().as_secs_f64()
            ));
            progress.finish_reports(Phase::DiskWritten, "rebooting into the installed system");
            if !args.no_reboot {
                Systemd::new(&runner).reboot()?;
            }
            Ok(())
        }
        Err(e) => {
            let state = match &disk_path {
                Some(disk) => {
                    let wiped = runner
                        .run(
                            &Cmd::new("erasing the half-written partition table", "wipefs")
                                .args(["--all", "--force"])
                                .arg(path_str(disk)),
                        )
                        .is_ok();
                    if wiped {
                        format!(
                            "{} was partitioned and its partition table erased again: it holds no bootable system, and no data from before",
                            disk.display()
                        )
                    } else {
                        format!(
                            "{} was partitioned, and erasing its partition table failed too: it may hold a half-written system; do not boot from it",
                            disk.display()
                        )
                    }
                }
                None => "no disk was changed".to_string(),
            };
            progress.say(&format!(
                "FAILED: {e:#}\n{state}. Fix the problem (for the node config: `dcn image embed` a corrected one) and boot the ISO again."
            ));
            progress.finish_reports(Phase::Failed, &format!("{e:#}; {state}"));
            Err(e.context(format!("installation failed; {state}")))
        }
    }
}

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

fn install(
    recipes: &Recipes,
    runner: &dyn Runner,
    args: &Options,
    progress: &mut Progress,
    touched: &mut Option<PathBuf>,
) -> Result<()> {
    // The live system the installer runs in.
    let host = Files::new("/", false);
    let node = read_node(recipes, args, progress)?;
    progress::start_reporting(runner, &host, &node.config, &node.bundle, progress);
    let template = firstboot_template()?;
    let squashfs = squashfs_on(&args.medium)?;
    let target_disk = choose_disk(runner, &host, args, &node.config, progress)?;
    *touched = Some(target_disk.path());
    let mut mounts = Mounts::new(runner);
    let (esp, root) = write_system(runner, &mut mounts, &target_disk, &squashfs, progress)?;
    let target = Files::new(TARGET, false);
    let layout = installed_layout(runner, &host, &target, &esp, &root)?;
    write_settings(runner, &target, &node, &template, &layout, progress)?;
    mounts.unmount_all()?;
    runner.run(&Cmd::new("flushing the disk", "sync"))?;
    *touched = None;
    Ok(())
}

/// The first-boot unit's template, from the live system.
fn firstboot_template() -> Result<String> {
    let spec = crate::host::read::ReadSpec::up_to(crate::host::read::MAX_STATE);
    crate::host::read::read_string(Path::new(firstboot::TEMPLATE), &spec).with_context(|| {
        format!(
            "reading the first-boot unit template {}",
            firstboot::TEMPLATE
        )
    })
}

/// The OS image on the mounted medium.
fn squashfs_on(medium: &Path) -> Result<PathBuf> {
    if !medium.is_dir() {
        bail!(
            "installing from {} needs it mounted: pass --medium with the mounted ISO's directory",
            medium.display()
        );
    }
    Ok(medium.join(SQUASHFS))
}

/// Partition and format the disk, copy the OS to it and install GRUB; the
/// new root and its ESP stay mounted at [`TARGET`]. Returns the ESP and
/// the root partition.
fn write_system(
    runner: &dyn Runner,
    mounts: &mut Mounts,
    target_disk: &disk::Disk,
    squashfs: &Path,
    progress: &mut Progress,
) -> Result<(PathBuf, PathBuf)> {
    let (esp, root) = system::partition_and_format(runner, target_disk, progress)?;
    let target = Path::new(TARGET);
    mounts.mount("the new root file system", &[&path_str(&root)], target)?;
    system::copy_os(runner, squashfs, progress)?;
    mounts.mount(
        "the EFI system partition",
        &[&path_str(&esp)],
        &target.join("boot/efi"),
    )?;
    system::install_grub(runner, &target_disk.path(), progress)?;
    Ok((esp, root))
}

/// A file system's UUID.
fn uuid(runner: &dyn Runner, part: &Path) -> Result<String> {
    let out = runner.run(
        &Cmd::new("reading a file system's UUID", "blkid")
            .args(["-s", "UUID", "-o", "value"])
            .arg(path_str(part))
            .read_only(),
    )?;
    Ok(out.stdout.trim().to_string())
}

/// How the installed system boots: its file systems, its kernel and
/// initrd, and the live system's kernel arguments that carry over.
fn installed_layout(
    runner: &dyn Runner,
    host: &Files,
    target: &Files,
    esp: &Path,
    root: &Path,
) -> Result<target::Layout> {
    let root_uuid = uuid(runner, root)?;
    let esp_uuid = uuid(runner, esp)?;
    let (kernel, initrd) = system::kernel_paths(target)?;
    let cmdline = host.read_string("/proc/cmdline").ok().flatten();
    Ok(target::Layout {
        root_uuid,
        esp_uuid,
        kernel,
        initrd,
        kernel_args: target::installed_kernel_args(&cmdline.unwrap_or_default()),
    })
}

/// The node's settings and the first-boot unit on the installed system,
/// which starts its network and the join at boot (and not the installer).
fn write_settings(
    runner: &dyn Runner,
    target: &Files,
    node: &Embedded,
    template: &str,
    layout: &target::Layout,
    progress: &mut Progress,
) -> Result<()> {
    progress.step("writing the node's settings");
    let config = &node.config;
    target::write_node_files(
        target,
        config,
        &node.payload.node_yaml,
        &node.payload.bundle,
        &node.bundle,
        template,
        layout,
    )?;
    let installed = Systemd::for_tree(runner, TARGET);
    installed.enable(&["systemd-networkd.service", firstboot::UNIT_NAME])?;
    installed.disable_if_present(&["dcn-install.service"])?;
    progress.say(&format!(
        "wrote the node's settings: hostname {}, {} interface(s), bundle {} (0600), {}",
        config.hostname,
        config.interfaces.len(),
        firstboot::BUNDLE,
        firstboot::UNIT
    ));
    Ok(())
}

/// What the medium carries for this node.
struct Embedded {
    payload: crate::image::payload::Payload,
    config: crate::config::NodeConfig,
    /// Verified against the node's CA pin.
    bundle: crate::bundle::VerifiedBundle,
}

/// The payload on the medium: the node's config, and its join bundle
/// verified against the node's CA pin.
fn read_node(recipes: &Recipes, args: &Options, progress: &mut Progress) -> Result<Embedded> {
    progress.say(&format!(
        "reading the node payload from {}",
        args.medium.display()
    ));
    let payload = if args.medium.is_dir() {
        embed::read_payload_file(&args.medium.join(crate::image::PAYLOAD_PATH))?
    } else {
        embed::read_payload(&args.medium)?
    };
    let node = crate::config::parse_node(&payload.node_yaml, "the embedded node config")?;
    let bundle = embed::verify_bundle(recipes, &payload.bundle, &node, true).context(
        "the embedded join bundle does not verify; embed a fresh one with `dcn image embed`",
    )?;
    progress.say(&format!(
        "node {} for site {} (CA {}{}); bundle verified, expires in {}",
        node.hostname,
        bundle.manifest.site,
        bundle.ca_pin,
        if bundle.pin_checked {
            ", pinned"
        } else {
            ", not pinned"
        },
        crate::timefmt::rough(bundle.expires_in(std::time::SystemTime::now()))
    ));
    Ok(Embedded {
        payload,
        config: node,
        bundle,
    })
}

/// The disk the node's config chooses, never the one booted from.
fn choose_disk(
    runner: &dyn Runner,
    host: &Files,
    args: &Options,
    node: &crate::config::NodeConfig,
    progress: &mut Progress,
) -> Result<disk::Disk> {
    let _ = runner.run(
        &Cmd::new("waiting for udev", "udevadm")
            .arg("settle")
            .unchecked()
            .timeout(Duration::from_secs(60)),
    );
    let disks = disk::list_disks(host, Path::new("/sys/block"))?;
    let boot = disk::disks_of_mount(host, &args.medium);
    let resolve = |p: &Path| disk::resolve_device(host, p);
    let target_disk = disk::choose(&disks, &node.disk, &boot, resolve)?.clone();
    progress.say(&format!(
        "installing to {} ({:.1} GiB){}",
        target_disk.path().display(),
        target_disk.size_bytes as f64 / (1024.0 * 1024.0 * 1024.0),
        if target_disk.partitions.is_empty() {
            String::new()
        } else {
            " (wipe: true, erasing its partitions)".into()
        }
    ));
    Ok(target_disk)
}
