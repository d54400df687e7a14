//! Building an edge release: which packages an edge is made of, at which
//! versions (apt resolves them from the control plane's package source;
//! what the control plane has installed keeps its installed version, so
//! the centre and its edges run the same), their files in the pool, the
//! index, and the release's id.

use super::{Current, POOL, RELEASES, StoredRelease, release_dir};
use crate::host::apt::index::{PackageIndex, stanza};
use crate::host::apt::{Apt, InstalledSet, deb_control};
use crate::host::{FileSpec, Files, Host};
use crate::recipes::Recipes;
use crate::release::THIS;
use crate::wire::{EdgeRelease, RELEASE_BINARY, RELEASE_INDEX, ReleaseFile};
use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Where `apt-get download` puts new files before they join the pool.
const INCOMING: &str = "/var/lib/dcn/edge-release/pool/.incoming";

/// A release made, not yet stored.
pub(super) struct Made {
    pub release: EdgeRelease,
    pub index: String,
    pub binary: Vec<u8>,
    pub packages: usize,
    /// Packages an edge is made of that the source has no file of at the
    /// version the control plane runs (a base system's package never
    /// updated since the release): edges keep their own.
    pub not_in_source: usize,
}

/// The packages an edge is made of, at the versions this control plane
/// decides, with their files in the pool; the release they make with
/// this control plane's dcn.
pub(super) fn build(recipes: &Recipes, host: &Host) -> Result<Made> {
    let files = &host.files;
    let recorded = crate::release::Release::load(files)?.map(|r| r.dcn_version);
    if recorded.as_deref() != Some(THIS) {
        bail!(
            "the control plane runs dcn {}, and this dcn is {THIS}: its edges are upgraded to what it runs, so run `dcn upgrade` here with this dcn first",
            recorded.as_deref().unwrap_or("(not recorded)")
        );
    }
    let binary = files
        .read_with(
            crate::centre::standalone::controlplane::INSTALLED_BINARY,
            &crate::host::read::ReadSpec::up_to(256 * 1024 * 1024),
        )?
        .with_context(|| {
            format!(
                "{} is missing: run `dcn upgrade` with this dcn",
                crate::centre::standalone::controlplane::INSTALLED_BINARY
            )
        })?;
    let config = crate::deployment::saved_config(files)?;
    let apt = Apt::new(host.runner.as_ref(), files, config.packages.source.clone());
    let chosen = choose(recipes, &apt, &InstalledSet::read(files)?)?;
    let versions = chosen.versions;
    files.create_dir_all(POOL)?;
    let mut pool = pool_entries(files)?;
    let missing: Vec<(String, String)> = (versions.iter())
        .filter(|(n, v)| !pool.contains_key(&(n.to_string(), v.to_string())))
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    if !missing.is_empty() {
        tracing::info!(
            "fetching {} of {} packages into the edge release's pool",
            missing.len(),
            versions.len()
        );
        fetch(host, &apt, &missing, &mut pool)?;
    }
    let mut stanzas = Vec::new();
    let mut absent = Vec::new();
    for (name, version) in &versions {
        match pool.get(&(name.clone(), version.clone())) {
            Some(file) => stanzas.push(read_stanza(files, file)?),
            None => absent.push(format!("{name} {version}")),
        }
    }
    if !absent.is_empty() {
        bail!(
            "the control plane's package source no longer has {} of the versions it runs ({}): publish them again, or run `dcn upgrade` to move the control plane to what the source has",
            absent.len(),
            crate::host::apt::installed::few(&absent)
        );
    }
    let index = stanzas.join("\n");
    // What apt and nodes will read must hold together.
    PackageIndex::parse(&index).context("the index just built does not read back")?;
    let release = release_of(&binary, &index);
    Ok(Made {
        release,
        packages: versions.len(),
        not_in_source: chosen.not_in_source,
        index,
        binary,
    })
}

/// The packages of an edge release and their versions.
struct Chosen {
    versions: BTreeMap<String, String>,
    not_in_source: usize,
}

/// What an edge is made of — the edge role's packages, the edge image's,
/// the base system the control plane runs on (the same Debian release),
/// and everything they depend on — at the versions the control plane has
/// installed (the source may have newer ones it has not taken yet: `dcn
/// upgrade` takes them), or, for what it has not installed, the versions
/// apt would install. Only versions the source has a file of can be
/// served; the others (a base package never updated since the release)
/// are left to what the edges have, which is the same release.
fn choose(recipes: &Recipes, apt: &Apt, installed: &InstalledSet) -> Result<Chosen> {
    let image = crate::image::recipe::ImageRecipe::embedded()?;
    let mut roots: BTreeSet<String> = recipes
        .packages_for_roles(&[crate::recipes::catalogue::EDGE_ROLE])?
        .into_iter()
        .collect();
    roots.extend(image.base.iter().cloned());
    roots.extend(image.packages.iter().cloned());
    roots.extend(apt.base_system()?);
    let mut versions: BTreeMap<String, String> =
        installed.versions(&installed.closure(roots.iter().map(String::as_str)));
    let in_sources = apt.versions_in_sources(&roots.iter().cloned().collect::<Vec<_>>())?;
    let absent: Vec<String> = (roots.iter())
        .filter(|r| !installed.packages.contains_key(*r) && in_sources.contains_key(*r))
        .cloned()
        .collect();
    for (name, version) in apt.would_install(&absent)? {
        versions.entry(name).or_insert(version);
    }
    let names: Vec<String> = versions.keys().cloned().collect();
    let available = apt.versions_in_sources(&names)?;
    let before = versions.len();
    versions.retain(|name, version| available.get(name).is_some_and(|v| v.contains(version)));
    Ok(Chosen {
        not_in_source: before - versions.len(),
        versions,
    })
}

/// The pool's packages: (name, version) → file name, read from the
/// stanza kept beside each file.
fn pool_entries(files: &Files) -> Result<BTreeMap<(String, String), String>> {
    let mut out = BTreeMap::new();
    for name in files.list(POOL)? {
        let Some(deb) = name.strip_suffix(".stanza") else {
            continue;
        };
        if !files.exists(format!("{POOL}/{deb}"))? {
            continue;
        }
        let text = read_stanza(files, deb)?;
        let index = PackageIndex::parse(&text)
            .with_context(|| format!("{POOL}/{name} is damaged; remove it"))?;
        for e in index.by_file.into_values() {
            out.insert((e.package, e.version), deb.to_string());
        }
    }
    Ok(out)
}

fn read_stanza(files: &Files, deb: &str) -> Result<String> {
    files
        .read_string(format!("{POOL}/{deb}.stanza"))?
        .with_context(|| format!("{POOL}/{deb}.stanza is missing"))
}

/// Download `missing` from the source, and put each file in the pool
/// with its stanza (written first: a file is in the pool once its stanza
/// is, and a cut leaves at most a stanza without its file, which counts
/// for nothing).
fn fetch(
    host: &Host,
    apt: &Apt,
    missing: &[(String, String)],
    pool: &mut BTreeMap<(String, String), String>,
) -> Result<()> {
    let files = &host.files;
    files.remove_all(INCOMING)?;
    files.create_dir_all(INCOMING)?;
    apt.download_versions(missing, &files.host_path(INCOMING)?)?;
    for name in files.list(INCOMING)? {
        if !crate::wire::is_release_file_name(&name) || !name.ends_with(".deb") {
            continue;
        }
        let path = format!("{INCOMING}/{name}");
        let control = deb_control(host.runner.as_ref(), &files.host_path(&path)?)?;
        let size = files.size(&path)?.unwrap_or(0);
        let sha256 = files
            .sha256(&path)?
            .with_context(|| format!("{path} vanished"))?;
        let text = stanza(&control, &name, size, &sha256);
        let parsed = PackageIndex::parse(&text)
            .with_context(|| format!("the control fields of {name} do not make a stanza"))?;
        files.write(
            format!("{POOL}/{name}.stanza"),
            text.as_bytes(),
            &FileSpec::public(),
        )?;
        files.rename(&path, format!("{POOL}/{name}"))?;
        for e in parsed.by_file.into_values() {
            pool.insert((e.package, e.version), name.clone());
        }
    }
    files.remove_all(INCOMING)?;
    Ok(())
}

/// The release of `binary` and `index`: its id is this dcn's version and
/// the first 16 hex digits of a digest over both.
fn release_of(binary: &[u8], index: &str) -> EdgeRelease {
    let dcn = hex::encode(Sha256::digest(binary));
    let idx = hex::encode(Sha256::digest(index.as_bytes()));
    let both = hex::encode(Sha256::digest(format!("{dcn}\n{idx}\n").as_bytes()));
    EdgeRelease {
        id: format!("{THIS}-{}", &both[..16]),
        dcn_version: THIS.to_string(),
        dcn: ReleaseFile {
            name: RELEASE_BINARY.into(),
            sha256: dcn,
            size: binary.len() as u64,
        },
        index: ReleaseFile {
            name: RELEASE_INDEX.into(),
            sha256: idx,
            size: index.len() as u64,
        },
    }
}

/// Keep a made release in its folder (its record last: a release is
/// kept once its record is there).
pub(super) fn store(files: &Files, made: &Made) -> Result<()> {
    let dir = release_dir(&made.release.id);
    files.create_dir_all(&dir)?;
    files.write(
        format!("{dir}/{RELEASE_BINARY}"),
        &made.binary,
        &FileSpec::public().mode(0o755),
    )?;
    files.write(
        format!("{dir}/{RELEASE_INDEX}"),
        made.index.as_bytes(),
        &FileSpec::public(),
    )?;
    let stored = StoredRelease {
        release: made.release.clone(),
        built_at: crate::timefmt::rfc3339(std::time::SystemTime::now()),
        packages: made.packages,
        not_in_source: made.not_in_source,
    };
    let text = serde_json::to_string_pretty(&stored).expect("serialisable") + "\n";
    files.write(
        format!("{dir}/release.json"),
        text.as_bytes(),
        &FileSpec::public(),
    )?;
    Ok(())
}

/// Remove the releases that are neither current nor previous, and the
/// pool's files that no kept release names.
pub(super) fn prune(files: &Files, current: &Current) -> Result<()> {
    let kept = current.kept();
    let mut named = BTreeSet::new();
    for id in &kept {
        if super::find(files, id)?.is_some() {
            named.extend(super::index(files, id)?.by_file.into_keys());
        }
    }
    for entry in files.list(RELEASES)? {
        if !kept.contains(&entry.as_str()) {
            tracing::info!("removing the edge release {entry}: neither current nor previous");
            files.remove_all(release_dir(&entry))?;
        }
    }
    if kept.is_empty() {
        return Ok(());
    }
    for name in files.list(POOL)? {
        let deb = name.strip_suffix(".stanza").unwrap_or(&name);
        if deb.ends_with(".deb") && !named.contains(deb) {
            files.remove(format!("{POOL}/{name}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
pub(super) fn release_for_tests(binary: &[u8], index: &str) -> EdgeRelease {
    release_of(binary, index)
}
