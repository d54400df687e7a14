//! The lab's local apt repository: the .deb files every lab host needs,
//! fetched once on the host into a cache and indexed as a flat repository
//! that containers mount read-only as their only package source (the same
//! path a disconnected site takes with `packages.source: local:/path`).
//!
//! The dependency closure is resolved by the host's apt against the *base
//! rootfs's* dpkg status, so it is exactly what a container lacks.

use crate::host::apt::Download;
use crate::host::{Cmd, Runner};
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Fetch `packages` (and their dependencies) into `cache/repo` unless the
/// cached repository already holds this exact set. Returns its path.
pub fn ensure_repo(
    runner: &dyn Runner,
    cache: &Path,
    base: &Path,
    packages: &[String],
) -> Result<PathBuf> {
    let repo = cache.join("repo");
    let key = cache_key(base, packages)?;
    let key_file = repo.join(".dcn-key");
    if repo.join("Packages").exists()
        && std::fs::read_to_string(&key_file).ok().as_deref() == Some(key.as_str())
    {
        tracing::info!("  using the cached package repository {}", repo.display());
        return Ok(repo);
    }
    let state = cache.join("apt-state");
    let apt_cache = cache.join("apt-cache");
    for d in [&repo, &repo.join("partial"), &state, &apt_cache] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
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
    let _ = std::fs::remove_dir_all(repo.join("partial"));
    let _ = std::fs::remove_file(repo.join("lock"));
    let out = runner.run(
        &Cmd::new("indexing the local package repository", "apt-ftparchive")
            .args(["packages", "."])
            .cwd(&repo)
            .timeout(Duration::from_secs(600)),
    )?;
    std::fs::write(repo.join("Packages"), out.stdout).context("writing the Packages index")?;
    std::fs::write(&key_file, &key)?;
    Ok(repo)
}

/// What the cached repository depends on: the package list and the base.
fn cache_key(base: &Path, packages: &[String]) -> Result<String> {
    let mut sorted = packages.to_vec();
    sorted.sort();
    let status = std::fs::read(base.join("var/lib/dpkg/status")).with_context(|| {
        format!(
            "reading the base rootfs's dpkg status in {}",
            base.display()
        )
    })?;
    let mut h = Sha256::new();
    h.update(sorted.join("\n"));
    h.update(b"\0");
    h.update(&status);
    Ok(hex::encode(h.finalize()))
}
