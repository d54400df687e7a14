//! The lab's local apt repository: the .deb files every lab host needs,
//! fetched once on the host into a cache and indexed as a flat repository
//! that containers mount read-only as their only package source (the same
//! path a disconnected site takes with `packages.source: local:/path`).
//!
//! The dependency closure is resolved by the host's apt against the *base
//! rootfs's* dpkg status, so it is exactly what a container lacks.

use crate::host::apt::Download;
use crate::host::read::ReadSpec;
use crate::host::{Cmd, FileSpec, Files, Runner};
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Fetch `packages` (and their dependencies) into `cache/repo` unless the
/// cached repository already holds this exact set. Returns its path.
pub fn ensure_repo(
    runner: &dyn Runner,
    files: &Files,
    cache: &Path,
    base: &Path,
    packages: &[String],
) -> Result<PathBuf> {
    let repo = cache.join("repo");
    let key = cache_key(files, base, packages)?;
    let key_file = repo.join(".dcn-key");
    if files.exists(repo.join("Packages"))?
        && files.read_string(&key_file).ok().flatten().as_deref() == Some(key.as_str())
    {
        tracing::info!("  using the cached package repository {}", repo.display());
        return Ok(repo);
    }
    let state = cache.join("apt-state");
    let apt_cache = cache.join("apt-cache");
    for d in [&repo, &repo.join("partial"), &state, &apt_cache] {
        files.create_dir_all(d)?;
    }
    let download = Download {
        runner,
        state: &state,
        cache: &apt_cache,
        archives: &repo,
        installed_in: base,
    };
    download.refresh()?;
    download.upgrades()?;
    download.packages(packages)?;
    let _ = files.remove_all(repo.join("partial"));
    let _ = files.remove(repo.join("lock"));
    reindex(runner, files, &repo)?;
    files.write(&key_file, key.as_bytes(), &FileSpec::public())?;
    Ok(repo)
}

/// This lab's own view of the cached repository: an overlay over it under
/// `dir/repo`, so packages published to this lab (`dcn lab publish`) land
/// in the lab's layer and the cache stays as apt made it. Returns the
/// merged directory, which containers bind as their package source.
pub fn mount_lab_repo(
    runner: &dyn Runner,
    files: &Files,
    cache_repo: &Path,
    dir: &Path,
) -> Result<PathBuf> {
    super::rootfs::mount_overlay(runner, files, cache_repo, &dir.join("repo"))
}

/// Index the repository in `repo` again (after packages were added).
pub fn reindex(runner: &dyn Runner, files: &Files, repo: &Path) -> Result<()> {
    let out = runner.run(
        &Cmd::new("indexing the package repository", "apt-ftparchive")
            .args(["packages", "."])
            .cwd(repo)
            .timeout(Duration::from_secs(600)),
    )?;
    files
        .write(
            repo.join("Packages"),
            out.stdout.as_bytes(),
            &FileSpec::public(),
        )
        .context("writing the Packages index")?;
    Ok(())
}

/// The largest Packages index or dpkg status the lab reads: a few
/// megabytes for the lab's packages, far more than dcn's own state.
const MAX_INDEX: u64 = 256 * 1024 * 1024;

/// The repository's Packages index, or `None` when it has none yet.
pub fn read_index(files: &Files, repo: &Path) -> Result<Option<Vec<u8>>> {
    files.read_with(repo.join("Packages"), &ReadSpec::up_to(MAX_INDEX))
}

/// What the cached repository depends on: the package list and the base.
fn cache_key(files: &Files, base: &Path, packages: &[String]) -> Result<String> {
    let mut sorted = packages.to_vec();
    sorted.sort();
    let what = || {
        format!(
            "reading the base rootfs's dpkg status in {}",
            base.display()
        )
    };
    let status = files
        .read_with(
            base.join("var/lib/dpkg/status"),
            &ReadSpec::up_to(MAX_INDEX),
        )
        .with_context(what)?
        .with_context(what)?;
    let mut h = Sha256::new();
    h.update(sorted.join("\n"));
    h.update(b"\0");
    h.update(&status);
    Ok(hex::encode(h.finalize()))
}
