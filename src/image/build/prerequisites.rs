//! What a build needs before it starts: root, the build host's tools
//! (debootstrap, mksquashfs, GRUB for BIOS and UEFI) and the dcn binary.

use super::BuildOptions;
use anyhow::{Result, bail};
use std::path::Path;

/// The Debian packages a build needs on the build host.
pub const BUILD_PREREQUISITES: &str =
    "debootstrap squashfs-tools xorriso grub-pc-bin grub-efi-amd64-bin grub-common mtools";

pub(super) fn check_prerequisites(opts: &BuildOptions) -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "dcn image build must run as root (debootstrap, chroot and mounts); run it with sudo"
        );
    }
    let missing: Vec<&str> = [
        "debootstrap",
        "mksquashfs",
        "grub-mkrescue",
        "xorriso",
        "mformat",
    ]
    .into_iter()
    .filter(|t| !in_path(t))
    .collect();
    let grub_missing: Vec<&str> = ["i386-pc", "x86_64-efi"]
        .into_iter()
        .filter(|p| {
            !Path::new("/usr/lib/grub")
                .join(p)
                .join("modinfo.sh")
                .exists()
        })
        .collect();
    if !missing.is_empty() || !grub_missing.is_empty() {
        bail!(
            "missing build tools ({}); install them with `apt-get install {BUILD_PREREQUISITES}`",
            missing
                .iter()
                .map(|s| s.to_string())
                .chain(grub_missing.iter().map(|p| format!("GRUB for {p}")))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !opts.dcn_binary.is_file() {
        bail!(
            "the dcn binary {} does not exist; pass --dcn-binary with a static build (cargo build --release)",
            opts.dcn_binary.display()
        );
    }
    // Found now, not by xorriso at the end of a build of minutes.
    if let Some(folder) = opts.output.parent()
        && !folder.as_os_str().is_empty()
        && !folder.is_dir()
    {
        bail!(
            "the output's folder {} does not exist; create it, or give -o a path in an existing folder",
            folder.display()
        );
    }
    Ok(())
}

fn in_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
        || ["/usr/sbin", "/sbin"]
            .iter()
            .any(|d| Path::new(d).join(tool).is_file())
}
