//! Uploading the guest to the control plane: kernel, ramdisk and root disk
//! images, the flavor and the lab network, under the names below.

use super::GuestImage;
use crate::host::{Cmd, FileSpec, Files, Runner};
use anyhow::Result;
use std::path::Path;
use std::time::Duration;

/// Names of what the lab uploads.
pub const IMAGE: &str = "dcn-guest";
pub const FLAVOR: &str = "dcn.guest";
pub const NETWORK: &str = "lab";
const SUBNET_RANGE: &str = "192.168.77.0/24";
/// Kernel command line: the serial console is what nova logs.
const COMMAND_LINE: &str = "console=ttyS0 quiet";

/// Where the guest's files are staged in the control plane.
const STAGING: &str = "/var/lib/dcn-lab-guest";

/// Upload the guest to the control plane (through `cp`, a runner inside
/// it, whose root directory is `cp_rootfs` on this host): kernel, ramdisk
/// and a small root disk that names them, a flavor, and a network.
pub fn upload(cp: &dyn Runner, files: &Files, cp_rootfs: &Path, guest: &GuestImage) -> Result<()> {
    let dir = cp_rootfs.join(STAGING.trim_start_matches('/'));
    let public = FileSpec::public();
    files.copy(&guest.kernel, dir.join("vmlinuz"), &public)?;
    files.copy(&guest.initrd, dir.join("initrd.img"), &public)?;
    // The root disk holds nothing: the guest lives in its initramfs.
    files.write(dir.join("disk.raw"), &vec![0u8; 1 << 20], &public)?;
    upload_images(cp)?;
    create_flavor_and_network(cp)?;
    let _ = files.remove_all(&dir);
    Ok(())
}

/// An `openstack` command in the control plane as its admin; its output.
fn os(cp: &dyn Runner, what: &str, args: &[&str]) -> Result<String> {
    let out = cp.run(
        &Cmd::new(what, "openstack")
            .args(args.iter().copied())
            .env("OS_CLOUD", "dcn")
            .timeout(Duration::from_secs(300)),
    )?;
    Ok(out.stdout.trim().to_string())
}

/// The kernel and the ramdisk from the staging directory, and the root
/// disk image that names them for nova's direct kernel boot.
fn upload_images(cp: &dyn Runner) -> Result<()> {
    let kernel = os(
        cp,
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
            &format!("{STAGING}/vmlinuz"),
            "-f",
            "value",
            "-c",
            "id",
            &format!("{IMAGE}-kernel"),
        ],
    )?;
    let ramdisk = os(
        cp,
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
            &format!("{STAGING}/initrd.img"),
            "-f",
            "value",
            "-c",
            "id",
            &format!("{IMAGE}-initrd"),
        ],
    )?;
    os(
        cp,
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
            &format!("{STAGING}/disk.raw"),
            "--property",
            &format!("kernel_id={kernel}"),
            "--property",
            &format!("ramdisk_id={ramdisk}"),
            "--property",
            &format!("os_command_line={COMMAND_LINE}"),
            IMAGE,
        ],
    )?;
    Ok(())
}

/// The guest's flavor, and the lab network with its subnet.
fn create_flavor_and_network(cp: &dyn Runner) -> Result<()> {
    os(
        cp,
        "creating the guest flavor",
        &[
            "flavor", "create", "--ram", "128", "--disk", "1", "--vcpus", "1", "--public", FLAVOR,
        ],
    )?;
    os(
        cp,
        "creating the lab network",
        &["network", "create", "--share", NETWORK],
    )?;
    os(
        cp,
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
    Ok(())
}
