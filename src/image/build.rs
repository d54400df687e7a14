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

use super::mounts::Mounts;
use super::recipe::RecipeDir;
use crate::config::types::PackageSource;
use crate::host::apt::{Apt, DebconfAnswer};
use crate::host::chroot::ChrootRunner;
use crate::host::debian::{self, Debootstrap};
use crate::host::{Cmd, Files, Runner};
use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where builds keep the debootstrap base, the installed package tree and
/// the downloaded .debs.
pub const DEFAULT_CACHE: &str = "/var/cache/dcn-image";

/// Where the dcn binary lives in the image.
pub const DCN_IN_IMAGE: &str = "/usr/local/bin/dcn";

/// The Debian packages a build needs on the build host.
pub const BUILD_PREREQUISITES: &str =
    "debootstrap squashfs-tools xorriso grub-pc-bin grub-efi-amd64-bin grub-common mtools";

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
pub fn build(runner: &dyn Runner, opts: &BuildOptions) -> Result<BuildReport> {
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
    let recipes = crate::recipes::Recipes::embedded()?;
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
    let disable_units = units_off_until_join(&recipes, r)?;

    let cache = &opts.cache;
    let debs = cache.join("debs");
    std::fs::create_dir_all(&debs).with_context(|| format!("creating {}", debs.display()))?;
    let work = cache.join(format!("work-{}", r.name));
    if work.exists() {
        cleanup_work(runner, &work)?;
    }
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;

    let mut stages = Vec::new();
    let mut stage = |name: &str, f: &mut dyn FnMut() -> Result<String>| -> Result<()> {
        eprintln!("==> {name}");
        let t = Instant::now();
        let note = f().with_context(|| format!("image build stage {name}"))?;
        let seconds = t.elapsed().as_secs_f64();
        eprintln!(
            "<== {name}: {seconds:.1}s{}",
            if note.is_empty() {
                String::new()
            } else {
                format!(" ({note})")
            }
        );
        stages.push(StageTime {
            stage: name.to_string(),
            seconds,
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

fn check_prerequisites(opts: &BuildOptions) -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "dcn image build must run as root (debootstrap, chroot and mounts); run it with sudo"
        );
    }
    let missing: Vec<&str> = [
        "debootstrap",
        "mksquashfs",
        "grub-mkrescue",
        "xorriso",
        "mformat",
    ]
    .into_iter()
    .filter(|t| !in_path(t))
    .collect();
    let grub_missing: Vec<&str> = ["i386-pc", "x86_64-efi"]
        .into_iter()
        .filter(|p| {
            !Path::new("/usr/lib/grub")
                .join(p)
                .join("modinfo.sh")
                .exists()
        })
        .collect();
    if !missing.is_empty() || !grub_missing.is_empty() {
        bail!(
            "missing build tools ({}); install them with `apt-get install {BUILD_PREREQUISITES}`",
            missing
                .iter()
                .map(|s| s.to_string())
                .chain(grub_missing.iter().map(|p| format!("GRUB for {p}")))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !opts.dcn_binary.is_file() {
        bail!(
            "the dcn binary {} does not exist; pass --dcn-binary with a static build (cargo build --release)",
            opts.dcn_binary.display()
        );
    }
    Ok(())
}

fn in_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
        || ["/usr/sbin", "/sbin"]
            .iter()
            .any(|d| Path::new(d).join(tool).is_file())
}

/// A short digest of `parts`.
fn key(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    hex::encode(h.finalize())
}

/// A digest of a small directory's file names and contents.
fn dir_digest(dir: &Path) -> Result<String> {
    let mut parts = Vec::new();
    if dir.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(dir)?
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for f in files {
            parts.push(
                f.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
            );
            parts.push(String::from_utf8_lossy(&std::fs::read(&f)?).into_owned());
        }
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    Ok(key(&refs))
}

fn ensure_base(
    runner: &dyn Runner,
    recipe: &RecipeDir,
    base: &Path,
    debs: &Path,
    refresh: bool,
) -> Result<String> {
    let done = base.join(".dcn-complete");
    if done.exists() && !refresh {
        return Ok("cached".into());
    }
    let partial = base.with_extension("partial");
    remove_tree(&partial)?;
    remove_tree(base)?;
    let r = &recipe.recipe;
    Debootstrap {
        suite: &r.suite,
        include: &r.base,
        target: &partial,
        cache_dir: Some(debs),
    }
    .run(runner)?;
    std::fs::write(partial.join(".dcn-complete"), "")?;
    std::fs::rename(&partial, base)?;
    Ok(String::new())
}

/// Units the image leaves disabled: the roles' own units (the list `dcn
/// join` enables from, packaging units like ovn-host included) and the
/// recipe's further ones.
fn units_off_until_join(
    recipes: &crate::recipes::Recipes,
    r: &super::recipe::ImageRecipe,
) -> Result<Vec<String>> {
    let roles: Vec<&str> = r.roles.iter().map(String::as_str).collect();
    let mut units = recipes.units_for_roles(&roles)?;
    units.extend(r.disable_units.iter().cloned());
    units.sort();
    units.dedup();
    Ok(units)
}

fn remove_tree(path: &Path) -> Result<()> {
    if path.exists() {
        std::fs::remove_dir_all(path).with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn ensure_tree(
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
        runner.run(
            &Cmd::new("disabling the edge services until `dcn join`", "systemctl")
                .arg(format!("--root={}", root.display()))
                .arg("disable")
                .args(present.iter().copied()),
        )?;
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

fn customise(
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
    let exe = std::fs::read(dcn_binary)
        .with_context(|| format!("reading the dcn binary {}", dcn_binary.display()))?;
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
    runner.run(
        &Cmd::new("enabling the installer in the live system", "systemctl")
            .arg(format!("--root={}", merged.display()))
            .args(["enable", "dcn-install.service"]),
    )?;
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

fn make_squashfs(runner: &dyn Runner, root: &Path, staging: &Path, epoch: u64) -> Result<()> {
    let live = staging.join("live");
    std::fs::create_dir_all(&live)?;
    let boot = root.join("boot");
    let newest = |prefix: &str| -> Result<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&boot)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
            .collect();
        v.sort();
        v.pop().with_context(|| {
            format!("the image has no /boot/{prefix}*: is linux-image-amd64 in the recipe?")
        })
    };
    std::fs::copy(newest("vmlinuz-")?, live.join("vmlinuz"))?;
    std::fs::copy(newest("initrd.img-")?, live.join("initrd.img"))?;
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    runner.run(
        &Cmd::new("compressing the root filesystem (mksquashfs)", "mksquashfs")
            .arg(root.display().to_string())
            .arg(live.join("filesystem.squashfs").display().to_string())
            .args([
                "-noappend",
                "-no-progress",
                "-quiet",
                "-comp",
                "zstd",
                "-Xcompression-level",
                "6",
            ])
            .args([
                "-all-time",
                &epoch.to_string(),
                "-mkfs-time",
                &epoch.to_string(),
            ])
            .args(["-processors", &cpus.to_string()])
            .timeout(HOUR),
    )?;
    Ok(())
}

fn make_iso(
    runner: &dyn Runner,
    recipe: &RecipeDir,
    staging: &Path,
    output: &Path,
    epoch: u64,
) -> Result<()> {
    let r = &recipe.recipe;
    let grub = std::fs::read_to_string(recipe.grub_cfg())
        .with_context(|| format!("reading {}", recipe.grub_cfg().display()))?
        .replace("@VOLUME_ID@", &r.volume_id)
        .replace("@KERNEL_ARGS@", &r.kernel_args);
    std::fs::create_dir_all(staging.join("boot/grub"))?;
    std::fs::write(staging.join("boot/grub/grub.cfg"), grub)?;
    let area = staging.join(super::PAYLOAD_PATH);
    std::fs::create_dir_all(area.parent().expect("has a parent"))?;
    std::fs::File::create(&area)?.set_len(r.payload_area_bytes)?;
    runner.run(
        &Cmd::new("setting file times in the ISO tree", "find")
            .arg(staging.display().to_string())
            .args([
                "-exec",
                "touch",
                "-h",
                "-d",
                &format!("@{epoch}"),
                "{}",
                "+",
            ]),
    )?;
    let partial = output.with_extension("iso.partial");
    let _ = std::fs::remove_file(&partial);
    runner.run(
        &Cmd::new(
            "writing the ISO (grub-mkrescue: BIOS and UEFI)",
            "grub-mkrescue",
        )
        .arg("-o")
        .arg(partial.display().to_string())
        .arg(staging.display().to_string())
        .args(["--", "-volid", &r.volume_id])
        .env("SOURCE_DATE_EPOCH", epoch.to_string())
        .timeout(HOUR),
    )?;
    // The area must be findable, as embed will look for it.
    let mut f = std::fs::File::open(&partial)?;
    let found = super::iso9660::find_file(&mut f, super::PAYLOAD_PATH)?
        .with_context(|| format!("the new ISO has no {}", super::PAYLOAD_PATH))?;
    if found.length != r.payload_area_bytes {
        bail!(
            "the payload area on the new ISO is {} bytes, not {}",
            found.length,
            r.payload_area_bytes
        );
    }
    std::fs::rename(&partial, output)
        .with_context(|| format!("moving the ISO to {}", output.display()))?;
    Ok(())
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

    #[test]
    fn cache_keys_change_with_their_inputs() {
        assert_ne!(key(&["a", "b"]), key(&["ab"]));
        assert_eq!(key(&["a"]), key(&["a"]));
    }
}
