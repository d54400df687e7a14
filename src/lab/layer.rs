//! The edge layer: the lab's base root filesystem with the edge compute
//! packages installed but not started (what the edge ISO carries), made
//! once with dcn's own apt code running in a non-booted nspawn, cached, and
//! stacked under every edge container's writable layer.

use crate::host::apt::Apt;
use crate::host::systemd::Systemd;
use crate::host::{Cmd, CmdOutput, FileSpec, Files, Runner, SystemRunner};
use crate::types::PackageSource;
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Runs commands in a root directory with a non-booted systemd-nspawn.
struct NspawnRunner {
    root: PathBuf,
    inner: SystemRunner,
}

impl Runner for NspawnRunner {
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput> {
        let mut wrapped = Cmd {
            program: "systemd-nspawn".into(),
            args: vec![
                "--quiet".into(),
                "--register=no".into(),
                "--keep-unit".into(),
                "--console=pipe".into(),
                format!("--directory={}", self.root.display()),
            ],
            ..cmd.clone()
        };
        for (k, v) in &cmd.env {
            wrapped.args.push(format!("--setenv={k}={v}"));
        }
        wrapped.env.clear();
        wrapped.args.push("--".into());
        wrapped.args.push(cmd.program.clone());
        wrapped.args.extend(cmd.args.iter().cloned());
        self.inner.run(&wrapped)
    }
}

/// The cached edge layer for `packages`, made when missing. Returns the
/// directory to use as an upper lower layer above `base`.
pub fn ensure_edge_layer(
    runner: &dyn Runner,
    files: &Files,
    cache: &Path,
    base: &Path,
    repo: &Path,
    packages: &[String],
    units: &[String],
) -> Result<PathBuf> {
    let layer = cache.join("edge-layer");
    let mut key = Sha256::new();
    key.update(packages.join("\n"));
    key.update(units.join("\n"));
    key.update(
        super::repo::read_index(files, repo)
            .ok()
            .flatten()
            .unwrap_or_default(),
    );
    let key = hex::encode(key.finalize());
    if files
        .read_string(layer.join(".dcn-key"))
        .ok()
        .flatten()
        .as_deref()
        == Some(key.as_str())
    {
        tracing::info!("  using the cached edge layer {}", layer.display());
        return Ok(layer.join("upper"));
    }
    files
        .remove_all(&layer)
        .with_context(|| format!("removing the stale {}", layer.display()))?;
    let merged = super::rootfs::mount_overlay(runner, files, base, &layer)?;
    // The repository, bound where apt (and dcn's check of its index) finds
    // it; removed again before the layer is kept.
    let repo_mount = merged.join(super::REPO_MOUNT.trim_start_matches('/'));
    files.create_dir_all(&repo_mount)?;
    runner.run(
        &Cmd::new("binding the package repository", "mount")
            .args(["--bind", "-o", "ro"])
            .arg(repo.display().to_string())
            .arg(repo_mount.display().to_string()),
    )?;
    let result = (|| -> Result<()> {
        let inside = Files::new(&merged, false);
        let nspawn = NspawnRunner {
            root: merged.clone(),
            inner: SystemRunner::new(false),
        };
        let apt = Apt::new(
            &nspawn,
            &inside,
            PackageSource::Local(super::REPO_MOUNT.into()),
        );
        apt.update()?;
        apt.install(packages, false)?;
        apt.clean()
            .context("cleaning apt's cache in the edge layer")?;
        // Installed, not started: units the packages enabled would start
        // unconfigured at boot (nova-compute then hangs until systemd's
        // start timeout). `dcn join` enables what it configured. Not every
        // package ships every unit, so a missing one is not an error.
        let units: Vec<&str> = units.iter().map(String::as_str).collect();
        Systemd::new(&nspawn).disable_if_present(&units)?;
        // The lab's repository is mounted in every container anyway.
        inside.remove(crate::host::apt::LOCAL_SOURCE_LIST)?;
        Ok(())
    })();
    super::rootfs::unmount(runner, &repo_mount)?;
    let _ = files.remove_dir(&repo_mount);
    super::rootfs::unmount(runner, &merged)?;
    result?;
    let _ = files.remove_all(layer.join("work"));
    let _ = files.remove_dir(&merged);
    files.write(layer.join(".dcn-key"), key.as_bytes(), &FileSpec::public())?;
    Ok(layer.join("upper"))
}
