//! The `customise` stage: the recipe's `rootfs/`, the dcn binary and the
//! installer unit, written on an overlay over the cached package tree.

use super::DCN_IN_IMAGE;
use crate::host::Runner;
use crate::host::systemd::Systemd;
use crate::image::mounts::Mounts;
use crate::image::recipe::RecipeDir;
use anyhow::{Context, Result};
use std::path::Path;

pub(super) fn customise(
    runner: &dyn Runner,
    mounts: &mut Mounts,
    recipe: &RecipeDir,
    tree: &Path,
    work: &Path,
    dcn_binary: &Path,
) -> Result<()> {
    let merged = work.join("root");
    for d in ["upper", "ovl"] {
        std::fs::create_dir_all(work.join(d))?;
    }
    mounts.mount(
        "the image's writable layer",
        &[
            "-t",
            "overlay",
            "overlay",
            "-o",
            &format!(
                "lowerdir={},upperdir={},workdir={}",
                tree.display(),
                work.join("upper").display(),
                work.join("ovl").display()
            ),
        ],
        &merged,
    )?;
    copy_tree(&recipe.rootfs_dir(), &merged)?;
    let files = crate::host::Files::new(&merged, false);
    // A debug build is a few hundred megabytes.
    let spec = crate::host::read::ReadSpec::up_to(1 << 30);
    let exe = crate::host::read::read(dcn_binary, &spec).context("reading the dcn binary")?;
    files.write(
        DCN_IN_IMAGE,
        &exe,
        &crate::host::FileSpec::public().mode(0o755),
    )?;
    files.write(
        "/etc/hostname",
        b"dcn-edge\n",
        &crate::host::FileSpec::public(),
    )?;
    let _ = std::fs::remove_file(merged.join(".dcn-complete"));
    // The installer runs when the live system boots.
    Systemd::for_tree(runner, &merged).enable(&["dcn-install.service"])?;
    Ok(())
}

/// Copy a directory tree's files (mode kept, owner root).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    if !from.is_dir() {
        return Ok(());
    }
    for e in std::fs::read_dir(from)?.flatten() {
        let src = e.path();
        let dst = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            std::fs::create_dir_all(&dst)?;
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}
