//! `dcn image build`: the generic edge ISO from a recipe, in stages that
//! each report their duration:
//!
//! 1. `base`: debootstrap a minimal Debian (cached per suite and package list);
//! 2. `packages`: the recipe's and the edge role's packages installed in a
//!    chroot under a `policy-rc.d` that keeps every service stopped, units
//!    disabled, logs and per-host identity removed (the installed tree is
//!    cached per package set, and the .debs always are);
//! 3. `customise`: the recipe's `rootfs/`, the dcn binary and the installer
//!    unit, on an overlay over the cached tree;
//! 4. `squashfs`: the live root filesystem (also what the installer copies
//!    to disk), every file time set to the recipe's epoch;
//! 5. `iso`: kernel, initrd, GRUB for BIOS and UEFI (grub-mkrescue), and
//!    the zero-filled payload area `dcn/payload.bin`.
//!
//! The mirror comes from the build host's apt sources at run time; its
//! sources files are copied into the chroot for the install and removed
//! again, so the image names no mirror.

mod base;
mod cache_keys;
mod customise;
mod iso;
mod package_tree;
mod prerequisites;

pub use prerequisites::BUILD_PREREQUISITES;

use super::mounts::Mounts;
use super::recipe::RecipeDir;
use crate::host::{Cmd, Runner};
use anyhow::{Context, Result};
use base::ensure_base;
use cache_keys::{dir_digest, key};
use customise::customise;
use iso::{make_iso, make_squashfs};
use package_tree::{ensure_tree, units_off_until_join};
use prerequisites::check_prerequisites;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where builds keep the debootstrap base, the installed package tree and
/// the downloaded .debs.
pub const DEFAULT_CACHE: &str = "/var/cache/dcn-image";

/// Where the dcn binary lives in the image.
pub const DCN_IN_IMAGE: &str = "/usr/local/bin/dcn";

const HOUR: Duration = Duration::from_secs(3600);

/// What to build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    pub recipe: PathBuf,
    pub output: PathBuf,
    pub cache: PathBuf,
    /// The (static) dcn binary copied into the image.
    pub dcn_binary: PathBuf,
    /// Rebuild the base and the package tree (the .debs stay cached).
    pub refresh: bool,
}

/// One finished stage.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StageTime {
    pub stage: String,
    pub seconds: f64,
    /// `cached` when the stage reused an earlier build's result.
    pub note: String,
}

/// What a build made.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BuildReport {
    pub output: PathBuf,
    pub iso_bytes: u64,
    pub squashfs_bytes: u64,
    pub payload_area_bytes: u64,
    pub packages: usize,
    pub stages: Vec<StageTime>,
    pub total_seconds: f64,
}

/// Build the ISO. Needs root (debootstrap, chroot, mounts).
pub fn build(
    recipes: &crate::recipes::Recipes,
    runner: &dyn Runner,
    opts: &BuildOptions,
) -> Result<BuildReport> {
    let started = Instant::now();
    let recipe = RecipeDir::load(&opts.recipe)?;
    let r = &recipe.recipe;
    check_prerequisites(opts)?;
    let epoch = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) => v
            .parse::<u64>()
            .context("SOURCE_DATE_EPOCH must be seconds since 1970")?,
        Err(_) => r.source_date_epoch,
    };
    let roles: Vec<&str> = r.roles.iter().map(String::as_str).collect();
    let mut packages = recipes.packages_for_roles(&roles)?;
    packages.extend(r.packages.iter().cloned());
    packages.sort();
    packages.dedup();
    let debconf: Vec<String> = recipes
        .services_for_roles(&roles)?
        .iter()
        .flat_map(|s| s.debconf.iter().cloned())
        .collect();
    let disable_units = units_off_until_join(recipes, r)?;

    let cache = &opts.cache;
    let debs = cache.join("debs");
    std::fs::create_dir_all(&debs).with_context(|| format!("creating {}", debs.display()))?;
    let work = cache.join(format!("work-{}", r.name));
    if work.exists() {
        cleanup_work(runner, &work)?;
    }
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;

    let mut stages = Vec::new();
    let mut watch = crate::engine::Stopwatch::new();
    let mut stage = |name: &str, f: &mut dyn FnMut() -> Result<String>| -> Result<()> {
        let note = watch
            .time(name, &mut *f)
            .with_context(|| format!("image build stage {name}"))?;
        if !note.is_empty() {
            tracing::info!("    {name}: {note}");
        }
        let (_, took) = watch.laps().last().expect("the stage just finished");
        stages.push(StageTime {
            stage: name.to_string(),
            seconds: took.as_secs_f64(),
            note,
        });
        Ok(())
    };

    let base_key = key(&[&r.suite, &r.base.join(",")]);
    let base = cache.join(format!("base-{}-{}", r.suite, &base_key[..12]));
    stage("base", &mut || {
        ensure_base(runner, &recipe, &base, &debs, opts.refresh)
    })?;

    let tree_key = key(&[
        &base_key,
        &packages.join(","),
        &debconf.join("\n"),
        &dir_digest(&recipe.dpkg_dir())?,
        &disable_units.join(","),
        &r.remove_paths.join(","),
    ]);
    let tree = cache.join(format!("rootfs-{}-{}", r.name, &tree_key[..12]));
    stage("packages", &mut || {
        ensure_tree(
            runner,
            &recipe,
            &base,
            &tree,
            &debs,
            &packages,
            &debconf,
            &disable_units,
            opts.refresh,
        )
    })?;

    let staging = work.join("iso");
    let squashfs = staging.join("live/filesystem.squashfs");
    {
        let mut mounts = Mounts::new(runner);
        let merged = work.join("root");
        stage("customise", &mut || {
            customise(runner, &mut mounts, &recipe, &tree, &work, &opts.dcn_binary)?;
            Ok(String::new())
        })?;
        stage("squashfs", &mut || {
            make_squashfs(runner, &merged, &staging, epoch)?;
            Ok(format!(
                "{} MiB",
                std::fs::metadata(&squashfs)?.len() / (1024 * 1024)
            ))
        })?;
        mounts.unmount_all()?;
    }
    stage("iso", &mut || {
        make_iso(runner, &recipe, &staging, &opts.output, epoch)?;
        Ok(format!(
            "{} MiB",
            std::fs::metadata(&opts.output)?.len() / (1024 * 1024)
        ))
    })?;
    let squashfs_bytes = std::fs::metadata(&squashfs)?.len();
    cleanup_work(runner, &work)?;
    Ok(BuildReport {
        output: opts.output.clone(),
        iso_bytes: std::fs::metadata(&opts.output)?.len(),
        squashfs_bytes,
        payload_area_bytes: r.payload_area_bytes,
        packages: packages.len(),
        stages,
        total_seconds: started.elapsed().as_secs_f64(),
    })
}

/// Remove a work directory (after unmounting anything left under it).
fn cleanup_work(runner: &dyn Runner, work: &Path) -> Result<()> {
    let root = work.join("root");
    if super::mounts::is_mountpoint(&root) {
        runner.run(
            &Cmd::new("unmounting a stale image root", "umount").arg(root.display().to_string()),
        )?;
    }
    remove_tree(work)
}

fn remove_tree(path: &Path) -> Result<()> {
    if path.exists() {
        std::fs::remove_dir_all(path).with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(())
}
