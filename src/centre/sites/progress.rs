//! Each node's way from bare metal to its site's zone, as the control plane
//! learns it: `/var/lib/dcn/progress/<hostname>.json` (0600), written under
//! the registry's lock by the join service (a node's reports, `joined`,
//! `placed`) and by `dcn site deploy` (what it did to the BMC). Whatever a
//! node sends is bounded and made safe to print before it is kept
//! ([`ProgressRecord::apply`]), so a record never grows past about 24 KiB.

use super::registry::{Lock, Registry};
use crate::host::{FileSpec, Files};
use crate::timefmt::{parse_rfc3339, rfc3339};
pub use crate::wire::Phase;
use crate::wire::{MAX_DETAIL, MAX_LOG_LINE, MAX_LOG_LINES};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

const DIR: &str = "/var/lib/dcn/progress";

/// Entries kept per node (the oldest go first).
pub const MAX_HISTORY: usize = 64;
/// A node that is not done and reported nothing for this long is silent.
pub const SILENT_AFTER: Duration = Duration::from_secs(600);

/// One phase reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub phase: Phase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// RFC 3339.
    pub at: String,
}

/// The last failure a node (or the deploy) reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastError {
    /// The phase it failed in (none when it failed before reporting any).
    pub phase: Option<Phase>,
    pub reason: String,
    /// Its last lines of output.
    pub log: Vec<String>,
    pub at: String,
}

/// What the control plane knows of one node's progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressRecord {
    pub hostname: String,
    pub site: String,
    /// The join token the node last reported with (its id): a token may
    /// stand for at most its `maxUses` host names.
    pub token_id: Option<String>,
    pub history: Vec<Entry>,
    pub last_error: Option<LastError>,
    /// When anything was last reported (a repeated phase counts).
    pub updated_at: String,
}

impl ProgressRecord {
    pub fn new(hostname: &str, site: &str) -> ProgressRecord {
        ProgressRecord {
            hostname: hostname.to_string(),
            site: site.to_string(),
            token_id: None,
            history: Vec::new(),
            last_error: None,
            updated_at: crate::timefmt::EARLIEST.to_string(),
        }
    }

    /// The phase the node is in.
    pub fn current(&self) -> Option<&Entry> {
        self.history.last()
    }

    /// Record `phase` at `now`. The detail and each log line are made safe
    /// to print ([`crate::terminal_text::sanitize`]) and cut short; only
    /// the last log lines are kept, and the last [`MAX_HISTORY`] entries.
    /// The same phase and detail again (a heartbeat) only renews
    /// `updatedAt`, as does a step of the join that got the node placed.
    /// `failed` keeps its reason and log as the last error; `placed`
    /// clears it.
    pub fn apply(&mut self, phase: Phase, detail: Option<&str>, log: &[String], now: SystemTime) {
        let at = rfc3339(now);
        let detail = detail.map(|d| clean(d, MAX_DETAIL));
        self.updated_at = at.clone();
        // The join goes on with its last steps, and repeats them as
        // heartbeats, after the placer put the node in its zone: they do
        // not take it out again. A new join starts with `join-started`,
        // and a failure is always recorded.
        let in_zone = self
            .current()
            .is_some_and(|e| matches!(e.phase, Phase::InZone | Phase::Placed));
        if in_zone && matches!(phase, Phase::JoinStep | Phase::Joined) {
            return;
        }
        let same = self
            .current()
            .is_some_and(|e| e.phase == phase && e.detail == detail);
        if phase == Phase::Failed {
            self.last_error = Some(LastError {
                phase: self
                    .history
                    .iter()
                    .rev()
                    .map(|e| e.phase)
                    .find(|p| *p != Phase::Failed),
                reason: detail.clone().unwrap_or_else(|| "(no reason given)".into()),
                log: log[log.len().saturating_sub(MAX_LOG_LINES)..]
                    .iter()
                    .map(|l| clean(l, MAX_LOG_LINE))
                    .collect(),
                at: at.clone(),
            });
        } else if phase == Phase::Placed {
            self.last_error = None;
        }
        if same {
            return;
        }
        self.history.push(Entry { phase, detail, at });
        if self.history.len() > MAX_HISTORY {
            let extra = self.history.len() - MAX_HISTORY;
            self.history.drain(..extra);
        }
    }

    /// Still expected to report, and nothing reported for
    /// [`SILENT_AFTER`].
    pub fn is_silent(&self, now: SystemTime) -> bool {
        let Some(current) = self.current() else {
            return false;
        };
        !current.phase.node_is_done()
            && parse_rfc3339(&self.updated_at)
                .map(|t| now.duration_since(t).unwrap_or_default() > SILENT_AFTER)
                .unwrap_or(true)
    }

    /// The phase as the operator sees it: `silent (last: <phase>)` for a
    /// silent node.
    pub fn shown_phase(&self, now: SystemTime) -> String {
        match self.current() {
            None => "-".into(),
            Some(e) if self.is_silent(now) => format!("silent (last: {})", e.phase),
            Some(e) => e.phase.to_string(),
        }
    }
}

/// `text` safe to print, at most `max` characters.
fn clean(text: &str, max: usize) -> String {
    crate::terminal_text::cell(text, max)
}

/// The progress records on a host's files. Changes need the registry's
/// lock, held by the caller.
pub struct ProgressStore<'a> {
    files: &'a Files,
}

impl<'a> ProgressStore<'a> {
    pub fn new(files: &'a Files) -> ProgressStore<'a> {
        ProgressStore { files }
    }

    fn path(hostname: &str) -> Option<String> {
        crate::types::NodeName::is_valid(hostname).then(|| format!("{DIR}/{hostname}.json"))
    }

    /// The node's record, if it has one.
    pub fn get(&self, hostname: &str) -> Result<Option<ProgressRecord>> {
        let Some(path) = Self::path(hostname) else {
            return Ok(None);
        };
        match self.files.read_string(&path)? {
            None => Ok(None),
            Some(t) => serde_json::from_str(&t)
                .map(Some)
                .with_context(|| format!("{path} is damaged; remove it")),
        }
    }

    /// Every record, by host name. A damaged one is skipped with a warning
    /// rather than hiding all the others.
    pub fn all(&self) -> Result<Vec<ProgressRecord>> {
        let names: Vec<String> = (self.files.list(DIR)?.iter())
            .filter_map(|n| n.strip_suffix(".json").map(String::from))
            .collect();
        Ok(names
            .iter()
            .filter_map(|n| {
                self.get(n)
                    .map_err(|e| tracing::warn!("skipping a progress record: {e:#}"))
                    .ok()
                    .flatten()
            })
            .collect())
    }

    pub fn save(&self, _lock: &Lock, record: &ProgressRecord) -> Result<()> {
        let Some(path) = Self::path(&record.hostname) else {
            bail!("{:?} is not a host name", record.hostname);
        };
        self.files.ensure_dir(DIR, &FileSpec::private_dir())?;
        let text = serde_json::to_string_pretty(record).expect("serialisable") + "\n";
        self.files
            .write(&path, text.as_bytes(), &FileSpec::secret())?;
        Ok(())
    }

    pub fn remove(&self, _lock: &Lock, hostname: &str) -> Result<()> {
        if let Some(path) = Self::path(hostname) {
            self.files.remove(&path)?;
        }
        Ok(())
    }

    /// Record a phase the control plane itself saw for `hostname` of
    /// `site` (a new record if it has none).
    pub(crate) fn record_centre(
        &self,
        lock: &Lock,
        site: &str,
        hostname: &str,
        phase: Phase,
        detail: Option<&str>,
        log: &[String],
    ) -> Result<ProgressRecord> {
        let mut record = self
            .get(hostname)?
            .unwrap_or_else(|| ProgressRecord::new(hostname, site));
        if record.site != site {
            bail!(
                "host {hostname} reports its progress to site {}, not {site}; `dcn node remove {hostname}` forgets it there",
                record.site
            );
        }
        record.apply(phase, detail, log, SystemTime::now());
        self.save(lock, &record)?;
        Ok(record)
    }
}

/// Record a phase `dcn site deploy` observed or caused for `hostname` of
/// `site`: `media-inserted`, `powered-on`, `media-ejected`, or `failed`
/// with its reason (`detail`) and last log lines. Takes the registry's
/// lock; returns the record as it now is.
pub fn record_at_centre(
    files: &Files,
    site: &str,
    hostname: &str,
    phase: Phase,
    detail: Option<&str>,
    log: &[String],
) -> Result<ProgressRecord> {
    if !matches!(
        phase,
        Phase::MediaInserted | Phase::PoweredOn | Phase::MediaEjected | Phase::Failed
    ) {
        bail!(
            "internal error: {phase} is reported by the node or the join service, not the deploy"
        );
    }
    let registry = Registry::new(files);
    let lock = registry.lock()?;
    ProgressStore::new(files).record_centre(&lock, site, hostname, phase, detail, log)
}

/// A node's progress record, if it has one (no lock needed: records are
/// replaced whole).
pub fn read(files: &Files, hostname: &str) -> Result<Option<ProgressRecord>> {
    ProgressStore::new(files).get(hostname)
}

#[cfg(test)]
mod tests;
