//! Writing a changed copy of a file to a new path without harming anything
//! else: the copy is made in a temporary file that dcn creates itself, in
//! the output's directory (O_CREAT|O_EXCL under a random name, so it never
//! opens an existing file or follows a symbolic link planted there), and
//! is renamed onto the output only once complete. On any error the
//! temporary file, and nothing else, is removed: the input and an existing
//! output are left as they were.

use crate::host::Files;
use anyhow::{Context, Result, bail};
use std::fs::{File, Permissions};
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Write `out` as a copy of `input` (already open) that `edit` changes.
/// Refuses when `out` is `input` under another name (the same device and
/// inode, through a hard or symbolic link too).
pub fn write_copy(
    input: &mut File,
    input_path: &Path,
    out: &Path,
    edit: impl FnOnce(&mut File) -> Result<()>,
) -> Result<()> {
    let meta = input
        .metadata()
        .with_context(|| format!("reading {}", input_path.display()))?;
    // The device and inode `out` leads to, which Files does not tell.
    if let Ok(o) = std::fs::metadata(out)
        && o.dev() == meta.dev()
        && o.ino() == meta.ino()
    {
        bail!(
            "--output {} is the input ISO {}; use --in-place to write into it, or name another output",
            out.display(),
            input_path.display()
        );
    }
    let Ok((dir, name)) = beside(out) else {
        bail!("--output {} names no file", out.display());
    };
    let file_name = name.file_name().expect("beside names a file");
    let mut partial = tempfile::Builder::new()
        .prefix(&format!(".{}.", file_name.to_string_lossy()))
        .suffix(".partial")
        .tempfile_in(dir.root())
        .with_context(|| format!("creating a temporary file in {}", dir.root().display()))?;
    let tmp = partial.path().to_path_buf();
    // copy_file_range under the hood: a reflink or an in-kernel copy where
    // the filesystem can.
    input.seek(SeekFrom::Start(0))?;
    std::io::copy(input, partial.as_file_mut())
        .with_context(|| format!("copying {} to {}", input_path.display(), tmp.display()))?;
    // The input's permissions for its owner only: what is written into the
    // copy (a node's join token) is a bearer secret.
    partial
        .as_file()
        .set_permissions(Permissions::from_mode(meta.mode() & 0o700))
        .with_context(|| format!("setting the permissions of {}", tmp.display()))?;
    edit(partial.as_file_mut())?;
    partial
        .as_file()
        .sync_all()
        .with_context(|| format!("flushing {} to disk", tmp.display()))?;
    // Removed when dropped, until it is `out`: rename(2) replaces `out`
    // itself, even when it is a symbolic link.
    let partial = partial.into_temp_path();
    let tmp_name = Path::new("/").join(tmp.file_name().expect("a temporary file's name"));
    (dir.rename(&tmp_name, &name))
        .with_context(|| format!("moving {} to {}", tmp.display(), out.display()))?;
    partial.keep()?;
    Ok(())
}

/// A file an operator names (an ISO, an output), as a tree of its own: its
/// directory as the root and `/name` in it, so a relative path works too.
pub(super) fn beside(path: &Path) -> Result<(Files, PathBuf)> {
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Ok((Files::new(dir, false), Path::new("/").join(name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_failed_edit_leaves_input_and_output_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (input, out) = (dir.path().join("in.iso"), dir.path().join("out.iso"));
        std::fs::write(&input, b"input").unwrap();
        std::fs::write(&out, b"an earlier output").unwrap();
        let r = write_copy(&mut File::open(&input).unwrap(), &input, &out, |_| {
            bail!("the edit failed")
        });
        assert!(format!("{:#}", r.unwrap_err()).contains("the edit failed"));
        assert_eq!(std::fs::read(&input).unwrap(), b"input");
        assert_eq!(std::fs::read(&out).unwrap(), b"an earlier output");
        assert_eq!(names(dir.path()), ["in.iso", "out.iso"]);
    }

    #[test]
    fn the_copy_is_edited_and_replaces_the_output() {
        let dir = tempfile::tempdir().unwrap();
        let (input, out) = (dir.path().join("in.iso"), dir.path().join("out.iso"));
        std::fs::write(&input, b"input").unwrap();
        write_copy(&mut File::open(&input).unwrap(), &input, &out, |f| {
            Ok(f.write_all(b"!")?)
        })
        .unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"input!");
        assert_eq!(std::fs::read(&input).unwrap(), b"input");
        assert_eq!(names(dir.path()), ["in.iso", "out.iso"]);
    }

    #[test]
    fn the_input_under_another_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.iso");
        std::fs::write(&input, b"input").unwrap();
        std::fs::hard_link(&input, dir.path().join("hard.iso")).unwrap();
        std::os::unix::fs::symlink(&input, dir.path().join("soft.iso")).unwrap();
        for out in ["in.iso", "hard.iso", "soft.iso", "./in.iso"] {
            let out = dir.path().join(out);
            let e = write_copy(&mut File::open(&input).unwrap(), &input, &out, |_| {
                panic!("edited")
            })
            .unwrap_err();
            assert!(e.to_string().contains("is the input ISO"), "{e}");
        }
        assert_eq!(std::fs::read(&input).unwrap(), b"input");
    }
}
