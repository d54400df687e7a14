//! The manifest of a backup: what each member is, where each file goes
//! back, and the rules a manifest read from an archive must keep (plain
//! member names; files only where a backup may put them; not of a newer
//! dcn).

use super::super::error::BackupError;
use super::{FORMAT_VERSION, MAX_NAME};
use crate::recipes::Recipes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A member's size and digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberInfo {
    pub size: u64,
    /// Hex SHA-256.
    pub sha256: String,
}

/// A file of the control plane, and where it goes back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileEntry {
    /// Absolute path on the control plane.
    pub path: String,
    pub member: String,
    pub mode: u32,
    pub owner: String,
    pub group: String,
    /// The backup part it belongs to (`dcn-state`, `keystone-keys`, …).
    pub part: String,
}

/// A directory to make again, with its mode and owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirEntry {
    pub path: String,
    pub mode: u32,
    pub owner: String,
    pub group: String,
    pub part: String,
}

/// A dump, and the service whose recipe loads it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DumpEntry {
    pub part: String,
    pub service: String,
    pub member: String,
}

/// What a backup holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    pub format_version: u32,
    /// The dcn that wrote it.
    pub dcn_version: String,
    /// RFC 3339.
    pub created_at: String,
    pub hostname: String,
    pub address: String,
    /// The pin of the CA that signed the manifest (the one in service).
    pub ca_pin: String,
    pub with_images: bool,
    pub members: BTreeMap<String, MemberInfo>,
    pub dumps: Vec<DumpEntry>,
    pub files: Vec<FileEntry>,
    pub dirs: Vec<DirEntry>,
}

impl Manifest {
    /// The size of all members.
    pub fn total_size(&self) -> u64 {
        self.members.values().map(|m| m.size).sum()
    }
}

/// A member name: relative, at most [`MAX_NAME`] bytes, of plain
/// components (no `.`, `..` or empty ones).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(format!("its name is empty or longer than {MAX_NAME} bytes"));
    }
    if name.starts_with('/') {
        return Err("its path is absolute".into());
    }
    if name
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err("its path has an empty, `.` or `..` component".into());
    }
    if name.chars().any(|c| c.is_control()) {
        return Err("its path has control characters".into());
    }
    Ok(())
}

/// The format version first, so a newer backup is refused as newer (with
/// what to run) rather than with a field this dcn does not know.
pub(super) fn parse_manifest(recipes: &Recipes, bytes: &[u8]) -> Result<Manifest, BackupError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Head {
        format_version: Option<u64>,
        dcn_version: Option<String>,
    }
    let head: Head = serde_json::from_slice(bytes)
        .map_err(|e| BackupError::Manifest(format!("it is not JSON: {e}")))?;
    if let Some(v) = head.format_version
        && v > u64::from(FORMAT_VERSION)
    {
        return Err(BackupError::Newer(format!("backup format {v}")));
    }
    if let Some(v) = &head.dcn_version
        && crate::release::newer_than_this(v)
    {
        return Err(BackupError::Newer(format!(
            "dcn {}",
            crate::terminal_text::sanitize(v)
        )));
    }
    let manifest: Manifest =
        serde_json::from_slice(bytes).map_err(|e| BackupError::Manifest(e.to_string()))?;
    if manifest.format_version != FORMAT_VERSION {
        return Err(BackupError::Manifest(format!(
            "format {} is not one this dcn reads",
            manifest.format_version
        )));
    }
    for f in &manifest.files {
        check_path(recipes, &f.path)?;
    }
    for d in &manifest.dirs {
        check_path(recipes, &d.path)?;
    }
    Ok(manifest)
}

/// A path a backup may put a file at: absolute, plain, under the places a
/// backup holds.
fn check_path(recipes: &Recipes, path: &str) -> Result<(), BackupError> {
    let plain = path.starts_with('/') && check_name(&path[1..]).is_ok();
    let roots = crate::centre::backup::restorable_roots(recipes);
    if !plain
        || !roots
            .iter()
            .any(|r| path == r || path.starts_with(&format!("{r}/")))
    {
        return Err(BackupError::Manifest(format!(
            "it would write {}, outside what a dcn backup holds",
            crate::terminal_text::sanitize(path)
        )));
    }
    Ok(())
}
