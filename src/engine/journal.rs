//! The deployment journal (`/var/lib/dcn/journal.json`): which steps
//! finished, with what fingerprint and how long they took, and whether the
//! last run was interrupted.

use crate::host::{FileSpec, Files};
use crate::paths::JOURNAL_FILE;
use crate::timefmt;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Journal {
    /// When the current or last run started, and whether it finished.
    run_started: Option<String>,
    run_finished: bool,
    steps: BTreeMap<String, StepRecord>,
    /// Seconds each phase took in the last run that ran it.
    phases: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StepRecord {
    fingerprint: String,
    finished_at: String,
    seconds: f64,
}

impl Journal {
    pub fn load(files: &Files) -> Result<Journal> {
        match files.read_string(JOURNAL_FILE)? {
            None => Ok(Journal::default()),
            Some(text) => serde_json::from_str(&text).with_context(|| {
                format!("{JOURNAL_FILE} is damaged; move it away to start a fresh journal (finished steps are detected anyway)")
            }),
        }
    }

    pub fn save(&self, files: &Files) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("the journal serialises");
        files.write(JOURNAL_FILE, text.as_bytes(), &FileSpec::secret())?;
        Ok(())
    }

    /// When the previous run started, if it did not finish.
    pub fn interrupted_run(&self) -> Option<String> {
        match (&self.run_started, self.run_finished) {
            (Some(t), false) => Some(t.clone()),
            _ => None,
        }
    }

    pub fn start_run(&mut self) {
        if self.interrupted_run().is_none() {
            self.run_started = Some(timefmt::rfc3339(SystemTime::now()));
        }
        self.run_finished = false;
    }

    pub fn finish_run(&mut self) {
        self.run_finished = true;
    }

    /// Whether `step` finished before with `fingerprint`.
    pub fn is_done(&self, step: &str, fingerprint: &str) -> bool {
        self.steps
            .get(step)
            .is_some_and(|r| r.fingerprint == fingerprint)
    }

    /// Whether `step` finished before, with any fingerprint.
    pub fn has_run(&self, step: &str) -> bool {
        self.steps.contains_key(step)
    }

    /// When `step` last finished, if the journal knows.
    pub fn finished_at(&self, step: &str) -> Option<SystemTime> {
        let r = self.steps.get(step)?;
        timefmt::parse_rfc3339(&r.finished_at).ok()
    }

    pub fn record_step(&mut self, step: &str, fingerprint: &str, took: Duration) {
        self.steps.insert(
            step.to_string(),
            StepRecord {
                fingerprint: fingerprint.to_string(),
                finished_at: timefmt::rfc3339(SystemTime::now()),
                seconds: took.as_secs_f64(),
            },
        );
    }

    /// Forget a step, so it runs again (e.g. after `dcn reset`).
    pub fn forget(&mut self, step: &str) {
        self.steps.remove(step);
    }

    pub fn record_phase(&mut self, phase: &str, took: Duration) {
        self.phases.insert(phase.to_string(), took.as_secs_f64());
    }

    /// Seconds each phase took in the last run that ran it.
    pub fn phase_seconds(&self) -> &BTreeMap<String, f64> {
        &self.phases
    }
}
