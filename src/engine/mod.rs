//! The step engine. A deployment is a list of phases, each a list of named
//! [`Step`]s. A step says whether it is already done and applies itself.
//! A [`Journal`] records each finished step, so an interrupted run resumes
//! and the summary can say how long each phase took. In dry-run mode steps
//! apply against a dry-run host: files are diffed, not written, and only
//! read-only commands run.

mod journal;

pub use journal::Journal;

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

    /// Whether applying would change nothing. The default trusts the
    /// journal: the step finished before with the same fingerprint.
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        Ok(ctx.journal.is_done(&self.name(), &self.fingerprint()))
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
    let fingerprint = step.fingerprint();
    journal.record_step(&name, &fingerprint, started.elapsed());
    journal.save(&host.files)?;
    Ok(Outcome::Applied)
}

#[cfg(test)]
mod tests;
