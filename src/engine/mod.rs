//! The step engine. A deployment is a list of phases, each a list of named
//! [`Step`]s. A step says whether it is already done, by looking at what it
//! changes (files, units, another daemon's database), and applies itself.
//! A [`Journal`] records each finished step, so an interrupted run resumes
//! and the summary can say how long each phase took; it says where a run
//! stopped and which configuration a step last applied, but never vouches
//! for what another program stored: a power cut can lose what a daemon had
//! not written back. So before a step is recorded done, the host's disks
//! are flushed ([`crate::host::Host::flush_to_disk`]), and a resumed run
//! checks each step's effect again. In dry-run mode steps apply against a
//! dry-run host: files are diffed, not written, and only read-only commands
//! run.

mod journal;
pub mod stopwatch;

pub use journal::Journal;
pub use stopwatch::Stopwatch;

use crate::host::{Host, PlannedChange};
use anyhow::{Context as _, Result};
use std::time::{Duration, Instant};

/// What a step sees: the host and the journal of earlier runs.
pub struct Context<'a> {
    pub host: &'a Host,
    pub journal: &'a Journal,
}

/// One unit of deployment work.
pub trait Step {
    /// Stable name, `phase.thing` (journal key).
    fn name(&self) -> String;

    /// One line for the operator: what applying does.
    fn describe(&self) -> String;

    /// Whether applying would change nothing: its effect is really there
    /// (read from the files, systemd, the daemon that keeps it), not only
    /// recorded in the journal. A step may also ask the journal whether it
    /// last ran with the same fingerprint, but that alone never suffices.
    /// The default, for checks and for steps cheap enough to repeat: never.
    fn is_done(&self, _ctx: &Context) -> Result<bool> {
        Ok(false)
    }

    /// What the step depends on; when it changes, the step runs again.
    fn fingerprint(&self) -> String {
        String::new()
    }

    fn apply(&self, ctx: &Context) -> Result<()>;

    /// A check (health, verification) changes nothing: it runs on every
    /// run, is skipped in dry runs, and is reported as checked.
    fn is_check(&self) -> bool {
        false
    }

    /// The step cannot read its effect back cheaply, and is idempotent and
    /// cheap: it runs on every run (`is_done` is never asked), and is
    /// reported as ensured, not as a change. In a dry run it would change
    /// something only when it last ran as another command.
    fn reapplies(&self) -> bool {
        false
    }

    /// Whether what the step changed may still be only in the page cache
    /// when it returns (another daemon's database, systemd's links, files
    /// packages wrote), so the host's disks are flushed before the journal
    /// records it. Steps that change nothing but files written through
    /// [`crate::host::Files`], which fsyncs each file and its directory,
    /// say no.
    fn needs_flush(&self) -> bool {
        true
    }
}

/// A named group of steps, timed as one.
pub struct Phase<'a> {
    pub name: &'static str,
    pub steps: Vec<Box<dyn Step + 'a>>,
}

/// What happened to one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    AlreadyDone,
    Applied,
    Checked,
    /// Applied again, as on every run (an idempotent step).
    Ensured,
    /// Dry run: it would be applied, with these file changes.
    WouldApply(Vec<String>),
}

/// The result of running a plan.
#[derive(Debug, Default)]
pub struct RunReport {
    pub steps: Vec<(String, Outcome)>,
    pub phases: Vec<(String, Duration)>,
    /// Set when this run continued an interrupted one.
    pub resumed_from: Option<String>,
    /// File changes a dry run would make.
    pub planned: Vec<PlannedChange>,
}

impl RunReport {
    pub fn applied(&self) -> usize {
        self.steps
            .iter()
            .filter(|(_, o)| *o == Outcome::Applied)
            .count()
    }

    /// The units the run restarted or started (`.service` left off): its
    /// applied unit steps, named `<service>.unit.<unit>`.
    pub fn restarted_units(&self) -> Vec<&str> {
        self.steps
            .iter()
            .filter(|(_, o)| *o == Outcome::Applied)
            .filter_map(|(n, _)| n.split_once(".unit.").map(|(_, unit)| unit))
            .collect()
    }
}

/// Run `phases` in order on `host`, recording progress in the journal.
pub fn run(phases: &[Phase<'_>], host: &Host) -> Result<RunReport> {
    let mut journal = Journal::load(&host.files)?;
    let mut report = RunReport {
        resumed_from: journal.interrupted_run(),
        ..RunReport::default()
    };
    if let Some(when) = &report.resumed_from {
        tracing::info!("resuming the run interrupted since {when}");
    }
    if !host.dry_run {
        journal.start_run();
        journal.save(&host.files)?;
    }
    for phase in phases {
        let started = Instant::now();
        tracing::info!("phase {}", phase.name);
        for step in &phase.steps {
            let outcome = run_step(step.as_ref(), host, &mut journal)?;
            report.steps.push((step.name(), outcome));
        }
        let took = started.elapsed();
        if !host.dry_run {
            journal.record_phase(phase.name, took);
            journal.save(&host.files)?;
        }
        report.phases.push((phase.name.to_string(), took));
    }
    if !host.dry_run {
        journal.finish_run();
        journal.save(&host.files)?;
    }
    report.planned = host.files.planned();
    Ok(report)
}

fn run_step(step: &dyn Step, host: &Host, journal: &mut Journal) -> Result<Outcome> {
    let name = step.name();
    let ctx = Context { host, journal };
    if step.is_check() {
        if host.dry_run {
            return Ok(Outcome::AlreadyDone);
        }
        let started = Instant::now();
        step.apply(&ctx)
            .with_context(|| format!("check {name} failed"))?;
        tracing::debug!("  {name}: ok in {:.1}s", started.elapsed().as_secs_f64());
        return Ok(Outcome::Checked);
    }
    // In a dry run, an idempotent step would change something only when it
    // last ran as another command.
    let unchanged = journal.is_done(&name, &step.fingerprint());
    if step.reapplies() && (!host.dry_run || unchanged) {
        if host.dry_run {
            return Ok(Outcome::AlreadyDone);
        }
        let started = Instant::now();
        step.apply(&ctx)
            .with_context(|| format!("step {name} failed"))?;
        tracing::debug!(
            "  {name}: ensured in {:.1}s",
            started.elapsed().as_secs_f64()
        );
        host.flush_to_disk()
            .with_context(|| format!("flushing what step {name} changed to disk"))?;
        journal.record_step(&name, &step.fingerprint(), started.elapsed());
        journal.save(&host.files)?;
        return Ok(Outcome::Ensured);
    }
    if step
        .is_done(&ctx)
        .with_context(|| format!("checking step {name}"))?
    {
        tracing::debug!("  {name}: already done");
        return Ok(Outcome::AlreadyDone);
    }
    if host.dry_run {
        let before = host.files.planned().len();
        tracing::info!("  would apply {name}: {}", step.describe());
        step.apply(&ctx)
            .with_context(|| format!("planning step {name}"))?;
        let files = host.files.planned()[before..]
            .iter()
            .map(|p| p.path.clone())
            .collect();
        return Ok(Outcome::WouldApply(files));
    }
    tracing::info!("  {}", step.describe());
    let started = Instant::now();
    step.apply(&ctx)
        .with_context(|| format!("step {name} failed"))?;
    // What the step changed (another daemon's database, systemd's links,
    // files packages wrote) is on the disk before the journal says so.
    if step.needs_flush() {
        host.flush_to_disk()
            .with_context(|| format!("flushing what step {name} changed to disk"))?;
    }
    let fingerprint = step.fingerprint();
    journal.record_step(&name, &fingerprint, started.elapsed());
    journal.save(&host.files)?;
    Ok(Outcome::Applied)
}

/// A short digest of `parts`, for step fingerprints. Secrets may be among
/// the parts: only their digest reaches the journal.
pub fn digest<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    hex::encode(&h.finalize()[..12])
}

#[cfg(test)]
mod tests;
