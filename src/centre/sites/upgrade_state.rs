//! What each node last said about its upgrade, as the join service keeps
//! it: `/var/lib/dcn/upgrade/nodes/<hostname>.json` (0600), from the
//! node's [`UpgradeCheck`] (already bounded), rewritten only when what it
//! says changed or the record is old, so a fleet that checks every 30 s
//! does not rewrite a file per node every 30 s.

use crate::host::{FileSpec, Files};
use crate::terminal_text::sanitize;
use crate::timefmt::{parse_rfc3339, rfc3339};
use crate::wire::{UpgradeCheck, UpgradeProgress};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

const DIR: &str = "/var/lib/dcn/upgrade/nodes";

/// A record unchanged for this long is written again (its `seenAt` says
/// the node is alive).
pub const REFRESH: Duration = Duration::from_secs(300);

/// A node's last word on its upgrade.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeUpgradeState {
    pub hostname: String,
    /// What it said in its last check, made safe to print: its dcn, the
    /// release it last applied, its progress and its image cache.
    #[serde(flatten)]
    pub check: UpgradeCheck,
    /// When the progress' phase began (as first seen here).
    #[serde(default)]
    pub phase_since: Option<String>,
    /// When it last checked in (to within [`REFRESH`]).
    pub seen_at: String,
}

fn path(hostname: &str) -> String {
    format!("{DIR}/{hostname}.json")
}

/// A node's record, if it ever checked in.
pub fn load(files: &Files, hostname: &str) -> Result<Option<NodeUpgradeState>> {
    match files.read_string(path(hostname))? {
        None => Ok(None),
        Some(t) => serde_json::from_str(&t)
            .map(Some)
            .with_context(|| format!("{} is damaged", path(hostname))),
    }
}

/// Forget a node (`dcn node remove`).
pub fn forget(files: &Files, hostname: &str) -> Result<()> {
    files.remove(path(hostname))?;
    Ok(())
}

/// Keep what `check` says of `hostname` at `now`; the record as kept.
pub fn record(
    files: &Files,
    hostname: &str,
    check: &UpgradeCheck,
    now: SystemTime,
) -> Result<NodeUpgradeState> {
    let old = load(files, hostname)?;
    let progress = check.progress.clone().map(clean);
    let same_phase = |o: &NodeUpgradeState| {
        o.check
            .progress
            .as_ref()
            .map(|p| (&p.release, p.phase, p.attempt))
            == progress.as_ref().map(|p| (&p.release, p.phase, p.attempt))
    };
    let phase_since = match &old {
        Some(o) if same_phase(o) => o.phase_since.clone(),
        _ => progress.as_ref().map(|_| rfc3339(now)),
    };
    let mut new = NodeUpgradeState {
        hostname: hostname.to_string(),
        check: UpgradeCheck {
            dcn_version: sanitize(&check.dcn_version).into_owned(),
            runs: check.runs.as_deref().map(|r| sanitize(r).into_owned()),
            progress,
            image_cache: check.image_cache.clone(),
        },
        phase_since,
        seen_at: rfc3339(now),
    };
    if let Some(o) = &old {
        let fresh = parse_rfc3339(&o.seen_at)
            .map(|t| now.duration_since(t).unwrap_or_default() < REFRESH)
            .unwrap_or(false);
        let unchanged = NodeUpgradeState {
            seen_at: o.seen_at.clone(),
            ..new.clone()
        } == *o;
        if unchanged && fresh {
            return Ok(o.clone());
        }
        if unchanged {
            new.phase_since = o.phase_since.clone();
        }
    }
    files.ensure_dir("/var/lib/dcn/upgrade", &FileSpec::private_dir())?;
    files.ensure_dir(DIR, &FileSpec::private_dir())?;
    let text = serde_json::to_string_pretty(&new).expect("serialisable") + "\n";
    files.write(path(hostname), text.as_bytes(), &FileSpec::secret())?;
    Ok(new)
}

/// What a node sent, made safe to print.
fn clean(mut p: UpgradeProgress) -> UpgradeProgress {
    let all = |v: &[String]| v.iter().map(|t| sanitize(t).into_owned()).collect();
    p.release = sanitize(&p.release).into_owned();
    p.detail = p.detail.as_deref().map(|d| sanitize(d).into_owned());
    p.log = all(&p.log);
    p.changes = all(&p.changes);
    p.restarted = all(&p.restarted);
    p.guests_on_old_qemu = all(&p.guests_on_old_qemu);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::UpgradePhase;

    fn check(phase: Option<UpgradePhase>) -> UpgradeCheck {
        UpgradeCheck {
            dcn_version: "0.2.0".into(),
            runs: None,
            progress: phase.map(|phase| UpgradeProgress {
                release: "0.2.1-ab".into(),
                phase,
                attempt: 1,
                detail: Some("step \u{1b}[31m".into()),
                log: vec![],
                changes: vec![],
                restarted: vec![],
                guests_on_old_qemu: vec![],
            }),
            image_cache: vec![],
        }
    }

    #[test]
    fn a_record_is_written_when_it_changes_or_grows_old_and_says_since_when() {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |s: u64| t0 + Duration::from_secs(s);
        let a = record(&files, "n1", &check(Some(UpgradePhase::Staging)), at(0)).unwrap();
        assert_eq!(a.phase_since.as_deref(), Some(rfc3339(at(0)).as_str()));
        assert!(!a.check.progress.unwrap().detail.unwrap().contains('\u{1b}'));
        // The same again, 30 s later: nothing written.
        let b = record(&files, "n1", &check(Some(UpgradePhase::Staging)), at(30)).unwrap();
        assert_eq!(b.seen_at, rfc3339(at(0)));
        // Six minutes later: written again, still staging since 0.
        let c = record(&files, "n1", &check(Some(UpgradePhase::Staging)), at(360)).unwrap();
        assert_eq!(c.seen_at, rfc3339(at(360)));
        assert_eq!(c.phase_since.as_deref(), Some(rfc3339(at(0)).as_str()));
        // A new phase: since now.
        let d = record(&files, "n1", &check(Some(UpgradePhase::Staged)), at(400)).unwrap();
        assert_eq!(d.phase_since.as_deref(), Some(rfc3339(at(400)).as_str()));
        assert_eq!(load(&files, "n1").unwrap().unwrap(), d);
        forget(&files, "n1").unwrap();
        assert!(load(&files, "n1").unwrap().is_none());
    }
}
