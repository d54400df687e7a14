//! The `squashfs` and `iso` stages: the compressed live root, its kernel
//! and initrd, GRUB for BIOS and UEFI and the payload area, written by
//! grub-mkrescue with every time set to the recipe's epoch.

use super::HOUR;
use crate::host::read::{self, ReadSpec};
use crate::host::{Cmd, FileSpec, Files, Runner};
use crate::image::recipe::RecipeDir;
use crate::image::{PAYLOAD_PATH, iso9660, output};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// Compress the image's root `root` into `staging` (both in `cache`),
/// with its kernel and initrd beside it.
pub(super) fn make_squashfs(
    runner: &dyn Runner,
    cache: &Files,
    root: &Path,
    staging: &Path,
    epoch: u64,
) -> Result<()> {
    let live = staging.join("live");
    cache.create_dir_all(&live)?;
    let boot = root.join("boot");
    let newest = |prefix: &str| -> Result<PathBuf> {
        let names = cache.list(&boot)?;
        let name = (names.iter().rev())
            .find(|n| n.starts_with(prefix))
            .with_context(|| {
                format!("the image has no /boot/{prefix}*: is linux-image-amd64 in the recipe?")
            })?;
        Ok(boot.join(name))
    };
    cache.copy(
        newest("vmlinuz-")?,
        live.join("vmlinuz"),
        &FileSpec::public(),
    )?;
    cache.copy(
        newest("initrd.img-")?,
        live.join("initrd.img"),
        &FileSpec::public(),
    )?;
    let root = cache.host_path(root)?;
    let live = cache.host_path(&live)?;
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

/// Write the ISO from `staging` (in `cache`) to `output`: the menu and
/// the payload area added, every time set to `epoch`, and put in place
/// only once its payload area is where embed will look for it.
pub(super) fn make_iso(
    runner: &dyn Runner,
    recipe: &RecipeDir,
    cache: &Files,
    staging: &Path,
    output: &Path,
    epoch: u64,
) -> Result<()> {
    let r = &recipe.recipe;
    stage_boot(recipe, cache, staging)?;
    let staging = cache.host_path(staging)?;
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
    let (out_dir, out_name) = output::beside(output)?;
    let (_, partial_name) = output::beside(&partial)?;
    let _ = out_dir.remove(&partial_name);
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
    let mut f = read::open(&out_dir.host_path(&partial_name)?, &ISO)?;
    let found = iso9660::find_file(&mut f, PAYLOAD_PATH)?
        .with_context(|| format!("the new ISO has no {}", PAYLOAD_PATH))?;
    if found.length != r.payload_area_bytes {
        bail!(
            "the payload area on the new ISO is {} bytes, not {}",
            found.length,
            r.payload_area_bytes
        );
    }
    (out_dir.rename(&partial_name, &out_name))
        .with_context(|| format!("moving the ISO to {}", output.display()))?;
    Ok(())
}

/// An ISO just written: read by seeking, whatever its size.
const ISO: ReadSpec = ReadSpec::up_to(u64::MAX);

/// The GRUB menu and the zero-filled payload area in `staging`.
fn stage_boot(recipe: &RecipeDir, cache: &Files, staging: &Path) -> Result<()> {
    let r = &recipe.recipe;
    let grub = (recipe.files().read_string(RecipeDir::GRUB_CFG)?)
        .with_context(|| format!("{} has no grub.cfg", recipe.dir.display()))?
        .replace("@VOLUME_ID@", &r.volume_id)
        .replace("@KERNEL_ARGS@", &r.kernel_args);
    let grub_cfg = staging.join("boot/grub/grub.cfg");
    cache.write(&grub_cfg, grub.as_bytes(), &FileSpec::public())?;
    let area = staging.join(PAYLOAD_PATH);
    cache.create_dir_all(area.parent().expect("has a parent"))?;
    // Sparse: made by its length, not written as zeros.
    std::fs::File::create(cache.host_path(&area)?)?.set_len(r.payload_area_bytes)?;
    Ok(())
}
