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
    let why = short_commands(lines.next().unwrap_or_default().trim_end_matches(':'));
    let mut log: Vec<String> = crate::logging::recent_lines();
    let keep = log.len().saturating_sub(5);
    log.drain(..keep);
    log.extend(lines.map(str::to_string));
    (why, log)
}

/// `line` with each quoted command longer than a few words cut to its
/// program and `…`: the centre shows a reason in 200 characters, which
/// apt's options alone would fill (the command is in the node's journal).
fn short_commands(line: &str) -> String {
    let mut out = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        let quoted = i % 2 == 1 && line.split('`').count() > i + 1;
        match part.split_once(' ') {
            Some((program, _)) if quoted && part.len() > 40 => {
                out.push_str(program);
                out.push_str(" …");
            }
            _ => out.push_str(part),
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_gives_a_short_reason_and_the_command_s_last_words_as_log() {
        let e = anyhow::anyhow!(
            "upgrading the installed packages: `apt-get -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/dcn-local.list -o Dir::Etc::sourceparts=- dist-upgrade` failed with exit status 100:\nhaproxy postinst: refusing\nE: Sub-process /usr/bin/dpkg returned an error code (1)"
        )
        .context("step packages.upgrade failed");
        let (why, log) = failure(&e);
        assert_eq!(
            why,
            "step packages.upgrade failed: upgrading the installed packages: `apt-get …` failed with exit status 100"
        );
        assert_eq!(
            log[log.len() - 2..],
            [
                "haproxy postinst: refusing".to_string(),
                "E: Sub-process /usr/bin/dpkg returned an error code (1)".to_string()
            ]
        );
        assert_eq!(short_commands("ran `ls -l` and `x"), "ran `ls -l` and `x");
    }
}
