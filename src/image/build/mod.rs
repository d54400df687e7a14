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
use super::recipe::{ImageRecipe, RecipeDir};
use crate::host::{Cmd, Files, Runner};
use anyhow::{Context, Result};
use base::ensure_base;
use cache_keys::{dir_digest, key};
use customise::customise;
use iso::{make_iso, make_squashfs};
use package_tree::{TreeInputs, ensure_tree, units_off_until_join};
use prerequisites::check_prerequisites;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where builds keep the debootstrap base, the installed package tree and
/// the downloaded .debs.
pub const DEFAULT_CACHE: &str = "/var/cache/dcn-image";

/// Where the dcn binary lives in the image.
pub const DCN_IN_IMAGE: &str = crate::paths::DCN_BINARY;

const HOUR: Duration = Duration::from_secs(3600);

/// Marks a cached tree as complete, so a cut build is never reused.
const COMPLETE: &str = ".dcn-complete";

/// The downloaded .debs, in the cache.
const DEBS: &str = "/debs";

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
    let epoch = source_date_epoch(r)?;
    let inputs = Inputs::of(recipes, r)?;
    // The cache is a tree of its own: the base, the package trees, the
    // .debs and this build's work directory live under it.
    let cache = Files::new(&opts.cache, false);
    let work = prepare_cache(runner, &cache, r)?;
    let mut stages = Stages::default();
    let tree = package_tree(runner, &cache, &recipe, &inputs, opts, &mut stages)?;
    let squashfs = live_root(
        runner,
        &cache,
        &recipe,
        &tree,
        &work,
        opts,
        epoch,
        &mut stages,
    )?;
    let staging = work.join("iso");
    stages.run("iso", &mut || {
        make_iso(runner, &recipe, &cache, &staging, &opts.output, epoch)?;
        Ok(format!("{} MiB", iso_size(&opts.output)? / MIB))
    })?;
    let squashfs_bytes = size_of(&cache, &squashfs)?;
    cleanup_work(runner, &cache, &work)?;
    Ok(BuildReport {
        output: opts.output.clone(),
        iso_bytes: iso_size(&opts.output)?,
        squashfs_bytes,
        payload_area_bytes: r.payload_area_bytes,
        packages: inputs.packages.len(),
        stages: stages.done,
        total_seconds: started.elapsed().as_secs_f64(),
    })
}

const MIB: u64 = 1024 * 1024;

/// SOURCE_DATE_EPOCH when set, else the recipe's.
fn source_date_epoch(r: &ImageRecipe) -> Result<u64> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) => v
            .parse::<u64>()
            .context("SOURCE_DATE_EPOCH must be seconds since 1970"),
        Err(_) => Ok(r.source_date_epoch),
    }
}

/// What goes into the package tree besides the base: the roles' and the
/// recipe's packages, the roles' debconf answers, the units left off.
struct Inputs {
    packages: Vec<String>,
    debconf: Vec<String>,
    disable_units: Vec<String>,
}

impl Inputs {
    fn of(recipes: &crate::recipes::Recipes, r: &ImageRecipe) -> Result<Inputs> {
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
        Ok(Inputs {
            packages,
            debconf,
            disable_units: units_off_until_join(recipes, r)?,
        })
    }
}

/// The .deb cache, and an empty work directory for this recipe (an
/// earlier build's, unmounted and removed). Returns the work directory.
fn prepare_cache(runner: &dyn Runner, cache: &Files, r: &ImageRecipe) -> Result<PathBuf> {
    create_dir(cache, Path::new(DEBS))?;
    let work = PathBuf::from(format!("/work-{}", r.name));
    if cache.exists(&work)? {
        cleanup_work(runner, cache, &work)?;
    }
    create_dir(cache, &work)?;
    Ok(work)
}

fn create_dir(cache: &Files, dir: &Path) -> Result<()> {
    let hp = cache.host_path(dir)?;
    cache
        .create_dir_all(dir)
        .with_context(|| format!("creating {}", hp.display()))?;
    Ok(())
}

/// The stages finished so far, with their times and notes.
#[derive(Default)]
struct Stages {
    watch: crate::engine::Stopwatch,
    done: Vec<StageTime>,
}

impl Stages {
    /// Run stage `name`; `f` returns its note (`cached`, a size).
    fn run(&mut self, name: &str, f: &mut dyn FnMut() -> Result<String>) -> Result<()> {
        let note = self
            .watch
            .time(name, &mut *f)
            .with_context(|| format!("image build stage {name}"))?;
        if !note.is_empty() {
            tracing::info!("    {name}: {note}");
        }
        let (_, took) = self.watch.laps().last().expect("the stage just finished");
        self.done.push(StageTime {
            stage: name.to_string(),
            seconds: took.as_secs_f64(),
            note,
        });
        Ok(())
    }
}

/// The `base` and `packages` stages: the cached package tree for these
/// inputs, made when there is none. Returns its path in the cache.
fn package_tree(
    runner: &dyn Runner,
    cache: &Files,
    recipe: &RecipeDir,
    inputs: &Inputs,
    opts: &BuildOptions,
    stages: &mut Stages,
) -> Result<PathBuf> {
    let r = &recipe.recipe;
    let debs = Path::new(DEBS);
    let base_key = key(&[&r.suite, &r.base.join(",")]);
    let base = PathBuf::from(format!("/base-{}-{}", r.suite, &base_key[..12]));
    stages.run("base", &mut || {
        ensure_base(runner, cache, recipe, &base, debs, opts.refresh)
    })?;
    let tree_key = key(&[
        &base_key,
        &inputs.packages.join(","),
        &inputs.debconf.join("\n"),
        &dir_digest(&recipe.files(), RecipeDir::DPKG)?,
        &inputs.disable_units.join(","),
        &r.remove_paths.join(","),
    ]);
    let tree = PathBuf::from(format!("/rootfs-{}-{}", r.name, &tree_key[..12]));
    stages.run("packages", &mut || {
        ensure_tree(
            runner,
            cache,
            recipe,
            TreeInputs {
                base: &base,
                tree: &tree,
                debs,
                packages: &inputs.packages,
                debconf: &inputs.debconf,
                disable_units: &inputs.disable_units,
            },
            opts.refresh,
        )
    })?;
    Ok(tree)
}

/// The `customise` and `squashfs` stages: the image's root on an overlay
/// over the package tree, compressed into the ISO's staging directory.
/// Returns the squashfs's path in the cache.
#[allow(clippy::too_many_arguments)]
fn live_root(
    runner: &dyn Runner,
    cache: &Files,
    recipe: &RecipeDir,
    tree: &Path,
    work: &Path,
    opts: &BuildOptions,
    epoch: u64,
    stages: &mut Stages,
) -> Result<PathBuf> {
    let staging = work.join("iso");
    let squashfs = staging.join("live/filesystem.squashfs");
    let merged = work.join("root");
    let mut mounts = Mounts::new(runner);
    stages.run("customise", &mut || {
        customise(
            runner,
            &mut mounts,
            cache,
            recipe,
            tree,
            work,
            &opts.dcn_binary,
        )?;
        Ok(String::new())
    })?;
    stages.run("squashfs", &mut || {
        make_squashfs(runner, cache, &merged, &staging, epoch)?;
        Ok(format!("{} MiB", size_of(cache, &squashfs)? / MIB))
    })?;
    mounts.unmount_all()?;
    Ok(squashfs)
}

/// The size of a file the build made in the cache.
fn size_of(cache: &Files, path: &Path) -> Result<u64> {
    let hp = cache.host_path(path)?;
    (cache.size(path)?).with_context(|| format!("{} is missing", hp.display()))
}

/// The size of the ISO written.
fn iso_size(output: &Path) -> Result<u64> {
    let (dir, name) = super::output::beside(output)?;
    dir.size(&name)?
        .with_context(|| format!("{} is missing", output.display()))
}

/// Remove a work directory (after unmounting anything left under it).
fn cleanup_work(runner: &dyn Runner, cache: &Files, work: &Path) -> Result<()> {
    let root = cache.host_path(work.join("root"))?;
    if super::mounts::is_mountpoint(&root) {
        runner.run(
            &Cmd::new("unmounting a stale image root", "umount").arg(root.display().to_string()),
        )?;
    }
    remove_tree(cache, work)
}

/// Remove a tree in the cache if it is there.
fn remove_tree(cache: &Files, path: &Path) -> Result<()> {
    let hp = cache.host_path(path)?;
    (cache.remove_all(path)).with_context(|| format!("removing {}", hp.display()))?;
    Ok(())
}
