//! How a node tells the centre where its upgrade is: each report kept on
//! the node and sent with a check at once (best effort: every later check
//! sends it again), and a failure cut into its reason and its last lines.

use super::local::Local;
use crate::edge::join::client::JoinClient;
use crate::host::Host;
use crate::wire::{EdgeRelease, UpgradePhase, UpgradeProgress};
use anyhow::Result;

/// A node's report channel: each report is kept on the node and sent
/// with a check (best effort: the next check sends it again).
pub(super) struct Reporter<'a> {
    pub host: &'a Host,
    pub client: &'a JoinClient,
    pub hostname: &'a str,
    pub secret: &'a str,
    pub local: Local,
}

impl Reporter<'_> {
    pub fn report(&mut self, progress: UpgradeProgress) -> Result<()> {
        tracing::info!(
            "upgrade to {}: {}{}",
            progress.release,
            progress.phase,
            progress
                .detail
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        );
        self.local.progress = Some(progress);
        self.local.save(self.host)?;
        if let Err(e) =
            self.client
                .upgrade_check(self.hostname, self.secret, &self.local.check(self.host))
        {
            tracing::warn!(
                "the report did not reach the control plane (the next check sends it): {e:#}"
            );
        }
        Ok(())
    }

    pub fn phase(
        &mut self,
        release: &EdgeRelease,
        phase: UpgradePhase,
        attempt: u32,
        detail: &str,
    ) -> Result<()> {
        self.report(UpgradeProgress {
            release: release.id.clone(),
            phase,
            attempt,
            detail: Some(detail.to_string()),
            log: Vec::new(),
            changes: Vec::new(),
            restarted: Vec::new(),
            guests_on_old_qemu: Vec::new(),
        })
    }
}

/// A failure as the centre is told it: its first line as the reason,
/// then this run's last log lines and the rest of the error (a failed
/// command's last words: dpkg's, a maintainer script's) as its log.
pub(super) fn failure(e: &anyhow::Error) -> (String, Vec<String>) {
    let text = format!("{e:#}");
    let mut lines = text.lines();
    let why = lines.next().unwrap_or_default().to_string();
    let mut log: Vec<String> = crate::logging::recent_lines();
    let keep = log.len().saturating_sub(5);
    log.drain(..keep);
    log.extend(lines.map(str::to_string));
    (why, log)
}

pub(super) fn progress(
    release: &EdgeRelease,
    phase: UpgradePhase,
    attempt: u32,
    detail: Option<&str>,
) -> UpgradeProgress {
    UpgradeProgress {
        release: release.id.clone(),
        phase,
        attempt,
        detail: detail.map(str::to_string),
        log: Vec::new(),
        changes: Vec::new(),
        restarted: Vec::new(),
        guests_on_old_qemu: Vec::new(),
    }
}

/// A download that failed is tried again at the next check: reported as
/// still staging, with why.
pub(super) fn staging_failed(
    r: &mut Reporter,
    release: &EdgeRelease,
    attempt: u32,
    e: anyhow::Error,
) -> Result<String> {
    let (why, log) = failure(&e);
    r.report(UpgradeProgress {
        log,
        ..progress(
            release,
            UpgradePhase::Staging,
            attempt,
            Some(&format!("tried again at the next check: {why}")),
        )
    })?;
    Err(e.context(format!("staging release {}", release.id)))
}

/// The apply finished, but its report may not have left.
pub(super) fn finish_report(
    r: &mut Reporter,
    release: &EdgeRelease,
    attempt: u32,
) -> Result<String> {
    let done = r
        .local
        .progress
        .as_ref()
        .is_some_and(|p| p.release == release.id && p.phase == UpgradePhase::Applied);
    if !done {
        r.report(progress(release, UpgradePhase::Applied, attempt, None))?;
    }
    Ok(format!("this node runs release {} already", release.id))
}
