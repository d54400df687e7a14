//! The `squashfs` and `iso` stages: the compressed live root, its kernel
//! and initrd, GRUB for BIOS and UEFI and the payload area, written by
//! grub-mkrescue with every time set to the recipe's epoch.

use super::HOUR;
use crate::host::{Cmd, Runner};
use crate::image::recipe::RecipeDir;
use crate::image::{PAYLOAD_PATH, iso9660};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

pub(super) fn make_squashfs(
    runner: &dyn Runner,
    root: &Path,
    staging: &Path,
    epoch: u64,
) -> Result<()> {
    let live = staging.join("live");
    std::fs::create_dir_all(&live)?;
    let boot = root.join("boot");
    let newest = |prefix: &str| -> Result<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&boot)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
            .collect();
        v.sort();
        v.pop().with_context(|| {
            format!("the image has no /boot/{prefix}*: is linux-image-amd64 in the recipe?")
        })
    };
    std::fs::copy(newest("vmlinuz-")?, live.join("vmlinuz"))?;
    std::fs::copy(newest("initrd.img-")?, live.join("initrd.img"))?;
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    runner.run(
        &Cmd::new("compressing the root filesystem (mksquashfs)", "mksquashfs")
            .arg(root.display().to_string())
            .arg(live.join("filesystem.squashfs").display().to_string())
            .args([
                "-noappend",
                "-no-progress",
                "-quiet",
                "-comp",
                "zstd",
                "-Xcompression-level",
                "6",
            ])
            .args([
                "-all-time",
                &epoch.to_string(),
                "-mkfs-time",
                &epoch.to_string(),
            ])
            .args(["-processors", &cpus.to_string()])
            .timeout(HOUR),
    )?;
    Ok(())
}

pub(super) fn make_iso(
    runner: &dyn Runner,
    recipe: &RecipeDir,
    staging: &Path,
    output: &Path,
    epoch: u64,
) -> Result<()> {
    let r = &recipe.recipe;
    let spec = crate::host::read::ReadSpec::up_to(crate::host::read::MAX_STATE);
    let grub = crate::host::read::read_string(&recipe.grub_cfg(), &spec)?
        .replace("@VOLUME_ID@", &r.volume_id)
        .replace("@KERNEL_ARGS@", &r.kernel_args);
    std::fs::create_dir_all(staging.join("boot/grub"))?;
    std::fs::write(staging.join("boot/grub/grub.cfg"), grub)?;
    let area = staging.join(PAYLOAD_PATH);
    std::fs::create_dir_all(area.parent().expect("has a parent"))?;
    std::fs::File::create(&area)?.set_len(r.payload_area_bytes)?;
    runner.run(
        &Cmd::new("setting file times in the ISO tree", "find")
            .arg(staging.display().to_string())
            .args([
                "-exec",
                "touch",
                "-h",
                "-d",
                &format!("@{epoch}"),
                "{}",
                "+",
            ]),
    )?;
    let partial = output.with_extension("iso.partial");
    let _ = std::fs::remove_file(&partial);
    runner.run(
        &Cmd::new(
            "writing the ISO (grub-mkrescue: BIOS and UEFI)",
            "grub-mkrescue",
        )
        .arg("-o")
        .arg(partial.display().to_string())
        .arg(staging.display().to_string())
        .args(["--", "-volid", &r.volume_id])
        .env("SOURCE_DATE_EPOCH", epoch.to_string())
        .timeout(HOUR),
    )?;
    // The area must be findable, as embed will look for it.
    let mut f = std::fs::File::open(&partial)?;
    let found = iso9660::find_file(&mut f, PAYLOAD_PATH)?
        .with_context(|| format!("the new ISO has no {}", PAYLOAD_PATH))?;
    if found.length != r.payload_area_bytes {
        bail!(
            "the payload area on the new ISO is {} bytes, not {}",
            found.length,
            r.payload_area_bytes
        );
    }
    std::fs::rename(&partial, output)
        .with_context(|| format!("moving the ISO to {}", output.display()))?;
    Ok(())
}
