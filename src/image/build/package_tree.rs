//! The `packages` stage: the recipe's and the edge role's packages
//! installed into a copy of the base, the units `dcn join` enables left
//! disabled, and the build-only files, logs and per-host identity removed.

use super::{HOUR, remove_tree};
use crate::host::apt::{Apt, DebconfAnswer};
use crate::host::chroot::ChrootRunner;
use crate::host::debian;
use crate::host::systemd::Systemd;
use crate::host::{Cmd, Files, Runner};
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

#[allow(clippy::too_many_arguments)]
pub(super) fn ensure_tree(
    runner: &dyn Runner,
    recipe: &RecipeDir,
    base: &Path,
    tree: &Path,
    debs: &Path,
    packages: &[String],
    debconf: &[String],
    disable_units: &[String],
    refresh: bool,
) -> Result<String> {
    if tree.join(".dcn-complete").exists() && !refresh {
        return Ok(format!("cached, {} packages", packages.len()));
    }
    let partial = tree.with_extension("partial");
    remove_tree(&partial)?;
    remove_tree(tree)?;
    runner.run(
        &Cmd::new("copying the base root filesystem", "cp")
            .args(["-a", "--reflink=auto"])
            .arg(base.display().to_string())
            .arg(partial.display().to_string())
            .timeout(HOUR),
    )?;
    std::fs::remove_file(partial.join(".dcn-complete"))?;
    install_packages(
        runner,
        recipe,
        &partial,
        debs,
        packages,
        debconf,
        disable_units,
    )?;
    finish_tree(runner, recipe, &partial)?;
    std::fs::write(partial.join(".dcn-complete"), "")?;
    std::fs::rename(&partial, tree)?;
    Ok(format!("{} packages", packages.len()))
}

/// Files present only while packages install (apt's adapter keeps its own
/// policy-rc.d in place while it runs).
const UNSAFE_IO: &str = "etc/dpkg/dpkg.cfg.d/99-dcn-build-unsafe-io";
const BUILD_SOURCES: &str = "etc/apt/sources.list.d/dcn-build-host.sources";

fn install_packages(
    runner: &dyn Runner,
    recipe: &RecipeDir,
    root: &Path,
    debs: &Path,
    packages: &[String],
    debconf: &[String],
    disable_units: &[String],
) -> Result<()> {
    // dpkg without fsync (a tree we are about to compress); the recipe's
    // dpkg settings (no docs).
    std::fs::write(root.join(UNSAFE_IO), "force-unsafe-io\n")?;
    if recipe.dpkg_dir().is_dir() {
        for e in std::fs::read_dir(recipe.dpkg_dir())?.flatten() {
            std::fs::copy(
                e.path(),
                root.join("etc/dpkg/dpkg.cfg.d").join(e.file_name()),
            )?;
        }
    }
    std::fs::write(root.join(BUILD_SOURCES), debian::host_sources()?)?;
    let _ = std::fs::remove_file(root.join("etc/apt/sources.list"));

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
    let files = Files::new(root, false);
    let apt = Apt::new(&chroot, &files, PackageSource::Mirror);
    let answers = (debconf.iter())
        .map(|l| DebconfAnswer::parse(l))
        .collect::<Result<Vec<_>>>()
        .context("the image recipe's debconf")?;
    apt.update()?;
    apt.preseed(&answers)?;
    apt.upgrade()?;
    apt.install(packages, false)?;
    let present: Vec<&str> = disable_units
        .iter()
        .map(String::as_str)
        .filter(|u| unit_exists(root, u))
        .collect();
    if !present.is_empty() {
        // Until `dcn join` configures them.
        Systemd::for_tree(runner, root).disable(&present)?;
    }
    mounts.unmount_all()?;
    Ok(())
}

/// Remove the build-only files, logs, caches and per-host identity.
fn finish_tree(runner: &dyn Runner, recipe: &RecipeDir, root: &Path) -> Result<()> {
    let _ = runner;
    for f in [UNSAFE_IO, BUILD_SOURCES] {
        let _ = std::fs::remove_file(root.join(f));
    }
    for pattern in &recipe.recipe.remove_paths {
        for p in glob(root, pattern)? {
            let md = std::fs::symlink_metadata(&p)?;
            if md.is_dir() {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            }
            .with_context(|| format!("removing {}", p.display()))?;
        }
    }
    // Empty, not missing: systemd makes a machine id on each host's boot
    // without treating it as a first boot (which would re-apply presets and
    // enable the units left disabled).
    std::fs::write(root.join("etc/machine-id"), "")?;
    Ok(())
}

fn unit_exists(root: &Path, unit: &str) -> bool {
    [
        "etc/systemd/system",
        "usr/lib/systemd/system",
        "lib/systemd/system",
    ]
    .iter()
    .any(|d| root.join(d).join(unit).exists())
}

/// Paths under `root` matching `pattern`, whose last component may hold `*`.
fn glob(root: &Path, pattern: &str) -> Result<Vec<PathBuf>> {
    let rel = pattern.trim_start_matches('/');
    let (dir, name) = match rel.rsplit_once('/') {
        Some((d, n)) => (root.join(d), n),
        None => (root.to_path_buf(), rel),
    };
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(out);
    };
    for e in entries.flatten() {
        if wildcard(name, &e.file_name().to_string_lossy()) {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
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
        let found = glob(d.path(), "/etc/ssh/ssh_host_*").unwrap();
        assert_eq!(found.len(), 2);
        assert!(glob(d.path(), "/nonexistent/*").unwrap().is_empty());
    }
}
