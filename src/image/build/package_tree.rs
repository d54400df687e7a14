//! The `packages` stage: the recipe's and the edge role's packages
//! installed into a copy of the base, the units `dcn join` enables left
//! disabled, and the build-only files, logs and per-host identity removed.

use super::{COMPLETE, HOUR, remove_tree};
use crate::host::apt::{Apt, DebconfAnswer};
use crate::host::chroot::ChrootRunner;
use crate::host::debian;
use crate::host::systemd::Systemd;
use crate::host::{Cmd, FileSpec, Files, Runner};
use crate::image::mounts::Mounts;
use crate::image::recipe::RecipeDir;
use crate::types::PackageSource;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Units the image leaves disabled: the roles' own units (the list `dcn
/// join` enables from, packaging units like ovn-host included) and the
/// recipe's further ones.
pub(super) fn units_off_until_join(
    recipes: &crate::recipes::Recipes,
    r: &crate::image::recipe::ImageRecipe,
) -> Result<Vec<String>> {
    let roles: Vec<&str> = r.roles.iter().map(String::as_str).collect();
    let mut units = recipes.units_for_roles(&roles)?;
    units.extend(r.disable_units.iter().cloned());
    units.sort();
    units.dedup();
    Ok(units)
}

/// The package tree's inputs, as names in the cache and lists.
pub(super) struct TreeInputs<'a> {
    pub base: &'a Path,
    pub tree: &'a Path,
    pub debs: &'a Path,
    pub packages: &'a [String],
    pub debconf: &'a [String],
    pub disable_units: &'a [String],
}

/// Make the package tree at `t.tree` in `cache` from the base, unless it
/// is there and complete.
pub(super) fn ensure_tree(
    runner: &dyn Runner,
    cache: &Files,
    recipe: &RecipeDir,
    t: TreeInputs,
    refresh: bool,
) -> Result<String> {
    if cache.exists(t.tree.join(COMPLETE))? && !refresh {
        return Ok(format!("cached, {} packages", t.packages.len()));
    }
    let partial = t.tree.with_extension("partial");
    remove_tree(cache, &partial)?;
    remove_tree(cache, t.tree)?;
    runner.run(
        &Cmd::new("copying the base root filesystem", "cp")
            .args(["-a", "--reflink=auto"])
            .arg(cache.host_path(t.base)?.display().to_string())
            .arg(cache.host_path(&partial)?.display().to_string())
            .timeout(HOUR),
    )?;
    cache.remove(partial.join(COMPLETE))?;
    let root = cache.host_path(&partial)?;
    install_packages(runner, recipe, &root, &cache.host_path(t.debs)?, &t)?;
    finish_tree(recipe, &Files::new(&root, false))?;
    cache.write(partial.join(COMPLETE), b"", &FileSpec::public())?;
    cache.rename(&partial, t.tree)?;
    Ok(format!("{} packages", t.packages.len()))
}

/// Files present only while packages install (apt's adapter keeps its own
/// policy-rc.d in place while it runs).
const UNSAFE_IO: &str = "/etc/dpkg/dpkg.cfg.d/99-dcn-build-unsafe-io";
const BUILD_SOURCES: &str = "/etc/apt/sources.list.d/dcn-build-host.sources";

/// Install the packages into the tree at `root`, with the .debs cached in
/// `debs`, and leave the units off.
fn install_packages(
    runner: &dyn Runner,
    recipe: &RecipeDir,
    root: &Path,
    debs: &Path,
    t: &TreeInputs,
) -> Result<()> {
    let files = Files::new(root, false);
    build_settings(recipe, &files)?;
    let mut mounts = Mounts::new(runner);
    mounts.chroot_api(root)?;
    mounts.mount(
        "the .deb cache",
        &["--bind", &debs.display().to_string()],
        &root.join("var/cache/apt/archives"),
    )?;
    // The same apt adapter as on hosts, run in the tree: policy-rc.d
    // while packages install, retries, no recommends.
    let chroot = ChrootRunner::new(runner, root);
    let apt = Apt::new(&chroot, &files, PackageSource::Mirror);
    let answers = (t.debconf.iter())
        .map(|l| DebconfAnswer::parse(l))
        .collect::<Result<Vec<_>>>()
        .context("the image recipe's debconf")?;
    apt.update()?;
    apt.preseed(&answers)?;
    apt.upgrade()?;
    apt.install(t.packages, false)?;
    let present: Vec<&str> = (t.disable_units.iter())
        .map(String::as_str)
        .filter(|u| unit_exists(&files, u))
        .collect();
    if !present.is_empty() {
        // Until `dcn join` configures them.
        Systemd::for_tree(runner, root).disable(&present)?;
    }
    mounts.unmount_all()?;
    Ok(())
}

/// dpkg without fsync (a tree we are about to compress), the recipe's
/// dpkg settings (no docs), and the build host's mirror.
fn build_settings(recipe: &RecipeDir, files: &Files) -> Result<()> {
    files.write(UNSAFE_IO, b"force-unsafe-io\n", &FileSpec::public())?;
    let from = recipe.files();
    if from.is_dir(RecipeDir::DPKG)? {
        for name in from.list(RecipeDir::DPKG)? {
            let path = format!("{}/{name}", RecipeDir::DPKG);
            let bytes = from
                .read(&path)?
                .with_context(|| format!("{path} vanished while it was read"))?;
            files.write(
                format!("/etc/dpkg/dpkg.cfg.d/{name}"),
                &bytes,
                &FileSpec::public(),
            )?;
        }
    }
    let sources = debian::host_sources()?;
    files.write(BUILD_SOURCES, sources.as_bytes(), &FileSpec::public())?;
    let _ = files.remove("/etc/apt/sources.list");
    Ok(())
}

/// Remove the build-only files, logs, caches and per-host identity.
fn finish_tree(recipe: &RecipeDir, files: &Files) -> Result<()> {
    for f in [UNSAFE_IO, BUILD_SOURCES] {
        let _ = files.remove(f);
    }
    for pattern in &recipe.recipe.remove_paths {
        for p in glob(files, pattern)? {
            files.remove_all(&p)?;
        }
    }
    // Empty, not missing: systemd makes a machine id on each host's boot
    // without treating it as a first boot (which would re-apply presets and
    // enable the units left disabled).
    files.write("/etc/machine-id", b"", &FileSpec::public())?;
    Ok(())
}

fn unit_exists(files: &Files, unit: &str) -> bool {
    [
        "/etc/systemd/system",
        "/usr/lib/systemd/system",
        "/lib/systemd/system",
    ]
    .iter()
    .any(|d| files.exists(format!("{d}/{unit}")).unwrap_or(false))
}

/// The paths in `files` matching `pattern` (absolute), whose last
/// component may hold `*`.
fn glob(files: &Files, pattern: &str) -> Result<Vec<PathBuf>> {
    let (dir, name) = pattern.rsplit_once('/').unwrap_or(("", pattern));
    let dir = Path::new("/").join(dir.trim_start_matches('/'));
    // A directory that cannot be listed matches nothing.
    let names = files.list(&dir).unwrap_or_default();
    Ok(names
        .iter()
        .filter(|n| wildcard(name, n))
        .map(|n| dir.join(n))
        .collect())
}

/// `*` matches any run of characters; everything else matches itself.
fn wildcard(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            let Some(tail) = name.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len()).any(|i| tail.is_char_boundary(i) && wildcard(rest, &tail[i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_leaves_off_exactly_what_join_enables_and_more() {
        let recipe =
            RecipeDir::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("images/edge")).unwrap();
        let recipes = crate::recipes::Recipes::embedded().unwrap();
        let off = units_off_until_join(&recipes, &recipe.recipe).unwrap();
        // Everything join enables and starts on an edge, packaging units
        // that start others at boot (ovn-host) included.
        for s in recipes.services_for_roles(&["edge"]).unwrap() {
            for u in &s.units {
                assert!(off.contains(u), "{u} is not disabled in the image");
            }
        }
        for u in [
            "ovn-host.service",
            "ovn-controller.service",
            "nova-compute.service",
            "haproxy.service",
        ] {
            assert!(off.contains(&u.to_string()), "{u}: {off:?}");
        }
    }

    #[test]
    fn wildcards() {
        assert!(wildcard("ssh_host_*", "ssh_host_rsa_key"));
        assert!(wildcard("*.log", "dpkg.log"));
        assert!(wildcard("*-old", "status-old"));
        assert!(!wildcard("*.log", "dpkg.log.1"));
        assert!(wildcard("machine-id", "machine-id"));
        assert!(!wildcard("machine-id", "machine-id2"));
    }

    #[test]
    fn glob_finds_files_under_the_root() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("etc/ssh")).unwrap();
        for f in ["ssh_host_rsa_key", "ssh_host_rsa_key.pub", "sshd_config"] {
            std::fs::write(d.path().join("etc/ssh").join(f), "").unwrap();
        }
        let files = Files::new(d.path(), false);
        let found = glob(&files, "/etc/ssh/ssh_host_*").unwrap();
        assert_eq!(
            found,
            [
                PathBuf::from("/etc/ssh/ssh_host_rsa_key"),
                PathBuf::from("/etc/ssh/ssh_host_rsa_key.pub")
            ]
        );
        assert!(glob(&files, "/nonexistent/*").unwrap().is_empty());
    }
}
