//! The edge release: what the control plane serves its edges so they run
//! what it runs — its own dcn binary, and the packages an edge is made of
//! (the edge role's, the edge image's, the base system's, and everything
//! they depend on) at the versions the control plane installed, as a flat
//! apt repository. Nodes fetch it through the join service with their own
//! secret (`crate::wire::EdgeRelease`), so a site with no other way out
//! updates from the centre.
//!
//! Under `/var/lib/dcn/edge-release/`: `pool/` holds the `.deb` files
//! (shared by releases, each with its stanza beside it), and
//! `releases/<id>/` each release's `dcn`, `Packages` index and
//! `release.json`. `current.json` names the release served now, and
//! the one before it, which stays (nodes may still be fetching it); older
//! ones and the packages only they named are removed.
//!
//! A release is built when `dcn site upgrade` needs one that does not
//! exist yet: after `dcn upgrade` brought the control plane to a new dcn
//! or new packages, its id (the dcn version and a digest of the binary
//! and the index) changes.

mod build;

use crate::host::{FileSpec, Files, Host};
use crate::recipes::Recipes;
use crate::wire::{EdgeRelease, RELEASE_BINARY, RELEASE_INDEX};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// Where the edge releases live.
pub const DIR: &str = "/var/lib/dcn/edge-release";
/// The packages of every kept release.
pub const POOL: &str = "/var/lib/dcn/edge-release/pool";
const CURRENT: &str = "/var/lib/dcn/edge-release/current.json";
const LOCK: &str = "/var/lib/dcn/edge-release/build.lock";

/// A built release, as kept in its folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredRelease {
    pub release: EdgeRelease,
    /// RFC 3339.
    pub built_at: String,
    /// How many packages its index names.
    pub packages: usize,
    /// Packages edges are made of that the source had no file of at the
    /// control plane's version (edges keep theirs).
    #[serde(default)]
    pub not_in_source: usize,
}

/// Which releases are served.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Current {
    current: Option<String>,
    previous: Option<String>,
}

/// Each release's folder.
const RELEASES: &str = "/var/lib/dcn/edge-release/releases";

fn release_dir(id: &str) -> String {
    format!("{RELEASES}/{id}")
}

fn load_current(files: &Files) -> Result<Current> {
    match files.read_string(CURRENT)? {
        None => Ok(Current::default()),
        Some(t) => serde_json::from_str(&t).with_context(|| format!("{CURRENT} is damaged")),
    }
}

/// The release `id`, when it is kept.
pub fn find(files: &Files, id: &str) -> Result<Option<StoredRelease>> {
    if !crate::wire::is_release_id(id) {
        return Ok(None);
    }
    match files.read_string(format!("{}/release.json", release_dir(id)))? {
        None => Ok(None),
        Some(t) => serde_json::from_str(&t)
            .map(Some)
            .with_context(|| format!("{}/release.json is damaged", release_dir(id))),
    }
}

/// The release served now, if one was built.
pub fn current(files: &Files) -> Result<Option<StoredRelease>> {
    match load_current(files)?.current {
        None => Ok(None),
        Some(id) => find(files, &id),
    }
}

/// The release served before the current one, if it is kept.
pub fn previous(files: &Files) -> Result<Option<StoredRelease>> {
    match load_current(files)?.previous {
        None => Ok(None),
        Some(id) => find(files, &id),
    }
}

/// Where a kept release's file is: its binary and index in its folder,
/// its packages in the pool. `None` for a release that is not kept (a
/// file name is checked by the join service's router before this).
pub fn file_path(files: &Files, id: &str, name: &str) -> Result<Option<String>> {
    if find(files, id)?.is_none() || !crate::wire::is_release_file_name(name) {
        return Ok(None);
    }
    Ok(Some(match name {
        RELEASE_BINARY | RELEASE_INDEX => format!("{}/{name}", release_dir(id)),
        deb => format!("{POOL}/{deb}"),
    }))
}

/// The index of a kept release.
pub fn index(files: &Files, id: &str) -> Result<crate::host::apt::index::PackageIndex> {
    let path = format!("{}/{RELEASE_INDEX}", release_dir(id));
    let text = files
        .read_string_with(
            &path,
            &crate::host::read::ReadSpec::up_to(crate::host::apt::index::MAX_INDEX),
        )?
        .with_context(|| format!("{path} is missing"))?;
    crate::host::apt::index::PackageIndex::parse(&text).with_context(|| format!("reading {path}"))
}

/// The release for what this control plane runs now: the one kept when
/// nothing changed, else a new one built (minutes the first time, while
/// the pool fills). `built` says which.
pub struct Prepared {
    pub release: StoredRelease,
    pub built: bool,
    /// The release served before, if any.
    pub previous: Option<StoredRelease>,
}

/// Build (or find) the edge release of this control plane.
pub fn prepare(recipes: &Recipes, host: &Host) -> Result<Prepared> {
    let files = &host.files;
    files.ensure_dir(DIR, &FileSpec::private_dir())?;
    let _lock = crate::host::lock::FileLock::wait(files, LOCK)?;
    let made = build::build(recipes, host)?;
    let mut cur = load_current(files)?;
    let built = find(files, &made.release.id)?.is_none();
    if built {
        build::store(files, &made)?;
    }
    let id = made.release.id.clone();
    if cur.current.as_deref() != Some(id.as_str()) {
        cur.previous = cur.current.take();
        cur.current = Some(id.clone());
        let text = serde_json::to_string_pretty(&cur).expect("serialisable") + "\n";
        files.write(CURRENT, text.as_bytes(), &FileSpec::secret())?;
    }
    build::prune(files, &cur)?;
    Ok(Prepared {
        release: find(files, &id)?.context("the release just built is not there")?,
        built,
        previous: match &cur.previous {
            Some(p) => find(files, p)?,
            None => None,
        },
    })
}

impl Current {
    fn kept(&self) -> Vec<&str> {
        [self.current.as_deref(), self.previous.as_deref()]
            .into_iter()
            .flatten()
            .collect()
    }
}

#[cfg(test)]
mod tests;
