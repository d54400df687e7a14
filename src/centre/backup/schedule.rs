//! `dcn backup --scheduled`, run by the dcn-backup timer: a backup into
//! `backup.directory` under a name that sorts by time, then the oldest
//! scheduled backups beyond `backup.keep` deleted. With no
//! `backup.schedule` it does nothing.

use super::create::{Options, Report, backup};
use crate::host::{FileSpec, Files, Host};
use anyhow::{Context, Result};
use std::path::PathBuf;

/// The names scheduled backups get: `dcn-backup-<host>-<UTC time>.tar.gz`.
const PREFIX: &str = "dcn-backup-";
const SUFFIX: &str = ".tar.gz";

/// What a scheduled run did: `None` when backups are not scheduled.
#[derive(Debug)]
pub struct Scheduled {
    pub report: Report,
    /// Older backups deleted.
    pub pruned: Vec<PathBuf>,
}

pub fn run(recipes: &crate::recipes::Recipes, host: &Host) -> Result<Option<Scheduled>> {
    let config = crate::deployment::saved_config(&host.files)?.backup;
    if config.schedule.is_none() {
        tracing::info!("scheduled backups are off (backup.schedule in the config)");
        return Ok(None);
    }
    let dir = config.directory.to_string_lossy().into_owned();
    host.files.ensure_dir(&dir, &FileSpec::private_dir())?;
    let deployment = crate::deployment::Deployment::load(&host.files)?
        .context("this host is not a dcn control plane")?;
    let stamp = crate::timefmt::rfc3339(std::time::SystemTime::now()).replace(':', "");
    let name = format!("{PREFIX}{}-{stamp}{SUFFIX}", deployment.hostname);
    let output = host
        .files
        .host_path(format!("{}/{name}", dir.trim_end_matches('/')))?;
    let report = backup(
        recipes,
        host,
        &Options {
            output,
            with_images: config.with_images,
        },
    )?;
    let pruned = prune(&host.files, &dir, config.keep as usize)?;
    Ok(Some(Scheduled { report, pruned }))
}

/// Delete all but the `keep` newest scheduled backups in `dir` (other
/// files are left alone).
fn prune(files: &Files, dir: &str, keep: usize) -> Result<Vec<PathBuf>> {
    let ours: Vec<String> = (files.list(dir)?.into_iter())
        .filter(|n| n.starts_with(PREFIX) && n.ends_with(SUFFIX))
        .collect();
    let old = ours.len().saturating_sub(keep);
    let mut pruned = Vec::new();
    for name in ours.into_iter().take(old) {
        let path = format!("{}/{name}", dir.trim_end_matches('/'));
        files
            .remove(&path)
            .with_context(|| format!("deleting {path}"))?;
        pruned.push(files.host_path(&path)?);
    }
    Ok(pruned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_oldest_scheduled_backups_beyond_keep_go() {
        let dir = tempfile::tempdir().unwrap();
        for n in ["dcn-backup-cp-2026-01-0{}T000000Z.tar.gz"] {
            for d in 1..=5 {
                std::fs::write(dir.path().join(n.replace("{}", &d.to_string())), "x").unwrap();
            }
        }
        std::fs::write(dir.path().join("by-hand.tar.gz"), "x").unwrap();
        let pruned = prune(&Files::new(dir.path(), false), "/", 3).unwrap();
        let names: Vec<String> = pruned
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "dcn-backup-cp-2026-01-01T000000Z.tar.gz",
                "dcn-backup-cp-2026-01-02T000000Z.tar.gz"
            ]
        );
        assert!(dir.path().join("by-hand.tar.gz").exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
    }
}
