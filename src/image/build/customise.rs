//! The `customise` stage: the recipe's `rootfs/`, the dcn binary and the
//! installer unit, written on an overlay over the cached package tree.

use super::{COMPLETE, DCN_IN_IMAGE};
use crate::host::read::ReadSpec;
use crate::host::systemd::Systemd;
use crate::host::{FileSpec, Files, Runner};
use crate::image::mounts::Mounts;
use crate::image::recipe::RecipeDir;
use anyhow::{Context, Result};
use std::path::Path;

/// Any file that goes into the image: a debug build of dcn is a few
/// hundred megabytes.
const ANY_FILE: ReadSpec = ReadSpec::up_to(1 << 30);

/// Mount the overlay at `work/root` in `cache` over `tree`, and write the
/// image's own files on it.
pub(super) fn customise(
    runner: &dyn Runner,
    mounts: &mut Mounts,
    cache: &Files,
    recipe: &RecipeDir,
    tree: &Path,
    work: &Path,
    dcn_binary: &Path,
) -> Result<()> {
    let merged = cache.host_path(work.join("root"))?;
    for d in ["upper", "ovl"] {
        cache.create_dir_all(work.join(d))?;
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
                cache.host_path(tree)?.display(),
                cache.host_path(work.join("upper"))?.display(),
                cache.host_path(work.join("ovl"))?.display()
            ),
        ],
        &merged,
    )?;
    let files = Files::new(&merged, false);
    let rootfs = recipe.files();
    if rootfs.is_dir(RecipeDir::ROOTFS)? {
        copy_tree(
            &rootfs,
            Path::new(RecipeDir::ROOTFS),
            &files,
            Path::new("/"),
        )?;
    }
    let exe = crate::host::read::read(dcn_binary, &ANY_FILE).context("reading the dcn binary")?;
    files.write(DCN_IN_IMAGE, &exe, &FileSpec::public().mode(0o755))?;
    files.write("/etc/hostname", b"dcn-edge\n", &FileSpec::public())?;
    let _ = files.remove(Path::new("/").join(COMPLETE));
    // The installer runs when the live system boots.
    Systemd::for_tree(runner, &merged).enable(&["dcn-install.service"])?;
    Ok(())
}

/// Copy directory `from_dir` of `from` into `to_dir` of `to`, file by file
/// (mode kept, owner root).
fn copy_tree(from: &Files, from_dir: &Path, to: &Files, to_dir: &Path) -> Result<()> {
    for name in from.list(from_dir)? {
        let (src, dst) = (from_dir.join(&name), to_dir.join(&name));
        if from.is_dir(&src)? {
            to.create_dir_all(&dst)?;
            copy_tree(from, &src, to, &dst)?;
            continue;
        }
        let copy = || -> Result<()> {
            let bytes = (from.read_with(&src, &ANY_FILE)?).context("it vanished")?;
            let mode = (from.mode(&src)?).context("it vanished")?;
            to.write(&dst, &bytes, &FileSpec::public().mode(mode))?;
            Ok(())
        };
        copy().with_context(|| {
            format!(
                "copying {} to {}",
                from.host_path(&src).unwrap_or_default().display(),
                to.host_path(&dst).unwrap_or_default().display()
            )
        })?;
    }
    Ok(())
}
