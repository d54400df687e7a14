//! The installed system written onto the chosen disk: GPT partitions and
//! their file systems, the live OS copied from its squashfs, GRUB for BIOS
//! and UEFI, and where the copied OS keeps its kernel.

use super::progress::Progress;
use super::{TARGET, disk, path_str};
use crate::host::{Cmd, Files, Runner};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// GPT with BIOS boot, ESP and root partitions, and their file systems;
/// the ESP and root partitions.
pub(super) fn partition_and_format(
    runner: &dyn Runner,
    target_disk: &disk::Disk,
    progress: &mut Progress,
) -> Result<(PathBuf, PathBuf)> {
    let t = Instant::now();
    progress.step(&format!("partitioning {}", target_disk.path().display()));
    partition(runner, target_disk)?;
    let (bios, esp, root) = (
        target_disk.partition(1),
        target_disk.partition(2),
        target_disk.partition(3),
    );
    wait_for(&[&bios, &esp, &root])?;
    runner.run(
        &Cmd::new("making the EFI system partition", "mkfs.vfat")
            .args(["-F", "32", "-n", "DCN-ESP"])
            .arg(path_str(&esp)),
    )?;
    runner.run(
        &Cmd::new("making the root file system", "mkfs.ext4")
            .args(["-F", "-q", "-L", "dcn-root"])
            .arg(path_str(&root)),
    )?;
    progress.say(&format!(
        "partitioned (GPT: BIOS boot, ESP, root) in {:.1}s",
        t.elapsed().as_secs_f64()
    ));
    Ok((esp, root))
}

/// The live system's squashfs unpacked onto the mounted root.
pub(super) fn copy_os(runner: &dyn Runner, squashfs: &Path, progress: &mut Progress) -> Result<()> {
    let t = Instant::now();
    progress.step("copying the OS");
    runner.run(
        &Cmd::new("copying the OS to disk (unsquashfs)", "unsquashfs")
            .args(["-f", "-no-progress", "-d", TARGET])
            .arg(path_str(squashfs))
            .timeout(Duration::from_secs(3600)),
    )?;
    progress.say(&format!(
        "copied the OS in {:.1}s",
        t.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// GRUB for BIOS (on `dev`) and for UEFI (removable path, no NVRAM: the
/// BMC's boot order stays as the operator set it).
pub(super) fn install_grub(runner: &dyn Runner, dev: &Path, progress: &mut Progress) -> Result<()> {
    let t = Instant::now();
    progress.step("installing GRUB");
    runner.run(
        &Cmd::new("installing GRUB for BIOS", "grub-install")
            .args([
                "--target=i386-pc",
                &format!("--boot-directory={TARGET}/boot"),
            ])
            .arg(path_str(dev))
            .timeout(Duration::from_secs(600)),
    )?;
    runner.run(
        &Cmd::new("installing GRUB for UEFI", "grub-install")
            .args([
                "--target=x86_64-efi",
                &format!("--efi-directory={TARGET}/boot/efi"),
                &format!("--boot-directory={TARGET}/boot"),
                "--removable",
                "--no-nvram",
            ])
            .timeout(Duration::from_secs(600)),
    )?;
    progress.say(&format!(
        "installed GRUB (BIOS and UEFI) in {:.1}s",
        t.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// GPT: 1 MiB BIOS boot (GRUB's core for BIOS), 256 MiB ESP, the rest root.
fn partition(runner: &dyn Runner, disk: &disk::Disk) -> Result<()> {
    const SCRIPT: &str = "label: gpt\n\
        size=1MiB, type=21686148-6449-6E6F-744E-656564454649, name=bios\n\
        size=256MiB, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name=esp\n\
        type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, name=root\n";
    runner.run(
        &Cmd::new("erasing old signatures", "wipefs")
            .args(["--all", "--force"])
            .args(disk.partitions.iter().map(|p| format!("/dev/{p}")))
            .arg(path_str(&disk.path())),
    )?;
    runner.run(
        &Cmd::new("partitioning the disk", "sfdisk")
            .args(["--wipe", "always", "--wipe-partitions", "always", "-q"])
            .arg(path_str(&disk.path()))
            .stdin(crate::secrets::Secret::new(SCRIPT)),
    )?;
    let _ = runner.run(
        &Cmd::new("waiting for udev", "udevadm")
            .arg("settle")
            .unchecked()
            .timeout(Duration::from_secs(60)),
    );
    Ok(())
}

fn wait_for(parts: &[&PathBuf]) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while parts.iter().any(|p| !p.exists()) {
        if Instant::now() > deadline {
            bail!("the new partitions did not appear within 30s: {:?}", parts);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

/// `/vmlinuz` and `/initrd.img` when the kernel package keeps those links
/// (they follow kernel updates), else the newest kernel in /boot.
pub(super) fn kernel_paths(target: &Files) -> Result<(String, String)> {
    if target.exists("/vmlinuz")? && target.exists("/initrd.img")? {
        return Ok(("/vmlinuz".into(), "/initrd.img".into()));
    }
    let kernels = target.list("/boot")?;
    let k = (kernels.iter().rev())
        .find(|n| n.starts_with("vmlinuz-"))
        .context("the copied OS has no kernel in /boot")?;
    let version = k.trim_start_matches("vmlinuz-");
    Ok((format!("/boot/{k}"), format!("/boot/initrd.img-{version}")))
}
