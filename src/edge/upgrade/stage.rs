//! Staging a release while the node keeps working: its dcn binary, its
//! package index, and the packages this node needs of it (apt's own
//! answer for an upgrade of what is installed plus what the new recipes
//! add), into `/var/lib/dcn/node/release/`, a flat repository that the
//! apply then installs from with no network.

use super::fetch::{Source, Wanted, fetch};
use crate::host::apt::index::{MAX_INDEX, PackageIndex};
use crate::host::apt::{Apt, PackageChange};
use crate::host::read::ReadSpec;
use crate::host::{FileSpec, Host};
use crate::recipes::Recipes;
use crate::types::PackageSource;
use crate::wire::{EdgeRelease, RELEASE_INDEX};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

pub const DIR: &str = "/var/lib/dcn/node/release";
/// The staged repository (`Packages` and the `.deb` files).
pub const REPO: &str = "/var/lib/dcn/node/release/repo";
/// The staged dcn binary.
pub const BINARY: &str = "/var/lib/dcn/node/release/dcn";
const STAGED: &str = "/var/lib/dcn/node/release/staged.json";

/// A release staged, with what it changes here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Staged {
    pub release: String,
    /// `name old → new` lines.
    pub changes: Vec<String>,
}

/// The release's binary, fetched and checked; its path.
pub fn binary(host: &Host, source: &dyn Source, release: &EdgeRelease) -> Result<&'static str> {
    let files = &host.files;
    files.ensure_dir(DIR, &FileSpec::private_dir())?;
    let wanted = Wanted {
        name: &release.dcn.name,
        size: release.dcn.size,
        sha256: &release.dcn.sha256,
    };
    fetch(
        files,
        source,
        &wanted,
        BINARY,
        &FileSpec::public().mode(0o755),
    )
    .with_context(|| format!("fetching dcn {}", release.dcn_version))?;
    Ok(BINARY)
}

/// The release staged before, if it is `release`.
pub fn staged(host: &Host, release: &EdgeRelease) -> Result<Option<Staged>> {
    let Some(text) = host.files.read_string(STAGED)? else {
        return Ok(None);
    };
    let s: Staged = serde_json::from_str(&text).with_context(|| format!("{STAGED} is damaged"))?;
    Ok((s.release == release.id).then_some(s))
}

/// Stage `release`'s packages for this node; `progress` hears how far it
/// got (`N of M packages`). What it changes here. With `recheck`, apt is
/// asked again even when the release was staged (right before applying:
/// the node may have changed since), and what it wants besides is
/// fetched.
pub fn packages(
    recipes: &Recipes,
    host: &Host,
    source: &dyn Source,
    release: &EdgeRelease,
    recheck: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<Staged> {
    if !recheck && let Some(s) = staged(host, release)? {
        return Ok(s);
    }
    let files = &host.files;
    files.create_dir_all(REPO)?;
    let index_path = format!("{REPO}/{RELEASE_INDEX}");
    let wanted = Wanted {
        name: &release.index.name,
        size: release.index.size,
        sha256: &release.index.sha256,
    };
    fetch(files, source, &wanted, &index_path, &FileSpec::public())
        .context("fetching the release's package index")?;
    let text = files
        .read_string_with(&index_path, &ReadSpec::up_to(MAX_INDEX))?
        .context("the package index vanished")?;
    let index = PackageIndex::parse(&text).context("reading the release's package index")?;
    // What an earlier release left and this one does not name.
    for name in files.list(REPO)? {
        let file = name.strip_suffix(".part").unwrap_or(&name);
        if name != RELEASE_INDEX && !index.by_file.contains_key(file) {
            files.remove(format!("{REPO}/{name}"))?;
        }
    }
    let changes = planned(recipes, host)?;
    let mut needed = Vec::new();
    for c in &changes {
        let Some(to) = &c.to else { continue };
        let entry = index.find(&c.package, to).with_context(|| {
            format!(
                "apt chose {} {to}, which the release's index does not name",
                c.package
            )
        })?;
        needed.push(entry.clone());
    }
    for (i, e) in needed.iter().enumerate() {
        progress(&format!("{} of {} packages", i + 1, needed.len()));
        let wanted = Wanted {
            name: &e.filename,
            size: e.size,
            sha256: &e.sha256,
        };
        fetch(
            files,
            source,
            &wanted,
            &format!("{REPO}/{}", e.filename),
            &FileSpec::public(),
        )?;
    }
    let staged = Staged {
        release: release.id.clone(),
        changes: changes.iter().map(PackageChange::line).collect(),
    };
    let text = serde_json::to_string_pretty(&staged).expect("serialisable") + "\n";
    files.write(STAGED, text.as_bytes(), &FileSpec::public())?;
    Ok(staged)
}

/// apt's answer against the staged index: every installed package at
/// the release's version, and what the edge role's recipes need that is
/// not installed.
fn planned(recipes: &Recipes, host: &Host) -> Result<Vec<PackageChange>> {
    let apt = Apt::new(host.runner.as_ref(), &host.files, source());
    apt.update()?;
    let wanted = recipes.packages_for_roles(&[crate::recipes::catalogue::EDGE_ROLE])?;
    let missing = apt.missing(&wanted)?;
    apt.planned_changes(&missing)
}

/// The staged repository as the node's package source.
pub fn source() -> PackageSource {
    PackageSource::Local(REPO.into())
}
