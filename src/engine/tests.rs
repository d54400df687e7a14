use super::*;
use crate::host::{FileSpec, Files, Host, RecordingRunner};
use std::cell::Cell;
use std::sync::Arc;

/// Writes a file; done when the file has the contents.
struct WriteFile(&'static str, &'static str);

impl Step for WriteFile {
    fn name(&self) -> String {
        format!("test.write{}", self.0.replace('/', "-"))
    }
    fn describe(&self) -> String {
        format!("write {}", self.0)
    }
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        Ok(ctx.host.files.read(self.0)?.as_deref() == Some(self.1.as_bytes()))
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        ctx.host
            .files
            .write(self.0, self.1.as_bytes(), &FileSpec::public())?;
        Ok(())
    }
}

/// Stores a setting in another daemon (`stored`, which a power cut may
/// empty); fails while `fail` is set. Done when the setting is stored.
struct Flaky<'a> {
    fail: &'a Cell<bool>,
    runs: &'a Cell<u32>,
    stored: &'a Cell<bool>,
}

impl Step for Flaky<'_> {
    fn name(&self) -> String {
        "test.flaky".into()
    }
    fn describe(&self) -> String {
        "flaky".into()
    }
    fn is_done(&self, _: &Context) -> Result<bool> {
        Ok(self.stored.get())
    }
    fn apply(&self, _: &Context) -> Result<()> {
        self.runs.set(self.runs.get() + 1);
        if self.fail.get() {
            anyhow::bail!("interrupted");
        }
        self.stored.set(true);
        Ok(())
    }
}

/// A step that says nothing of its effect: the default never trusts the
/// journal.
struct Silent<'a>(&'a Cell<u32>);

impl Step for Silent<'_> {
    fn name(&self) -> String {
        "test.silent".into()
    }
    fn describe(&self) -> String {
        "silent".into()
    }
    fn apply(&self, _: &Context) -> Result<()> {
        self.0.set(self.0.get() + 1);
        Ok(())
    }
}

fn host(dir: &std::path::Path, dry_run: bool) -> Host {
    Host {
        files: Arc::new(Files::new(dir, dry_run)),
        runner: Arc::new(RecordingRunner::new()),
        dry_run,
    }
}

#[test]
fn second_run_skips_finished_steps() {
    let dir = tempfile::tempdir().unwrap();
    let phases = vec![Phase {
        name: "files",
        steps: vec![
            Box::new(WriteFile("/etc/a", "1")),
            Box::new(WriteFile("/etc/b", "2")),
        ],
    }];
    let r = run(&phases, &host(dir.path(), false)).unwrap();
    assert_eq!(r.applied(), 2);
    let r = run(&phases, &host(dir.path(), false)).unwrap();
    assert_eq!(r.applied(), 0);
    assert!(r.steps.iter().all(|(_, o)| *o == Outcome::AlreadyDone));
}

#[test]
fn interrupted_run_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let fail = Cell::new(true);
    let runs = Cell::new(0);
    let stored = Cell::new(false);
    let steps = || -> Vec<Phase> {
        vec![Phase {
            name: "p",
            steps: vec![
                Box::new(WriteFile("/etc/a", "1")),
                Box::new(Flaky {
                    fail: &fail,
                    runs: &runs,
                    stored: &stored,
                }),
            ],
        }]
    };
    let err = run(&steps(), &host(dir.path(), false)).unwrap_err();
    assert!(format!("{err:#}").contains("step test.flaky failed: interrupted"));
    fail.set(false);
    let r = run(&steps(), &host(dir.path(), false)).unwrap();
    assert!(r.resumed_from.is_some());
    assert_eq!(r.steps[0].1, Outcome::AlreadyDone);
    assert_eq!(r.steps[1].1, Outcome::Applied);
    // Its effect is there: not run a third time.
    let r = run(&steps(), &host(dir.path(), false)).unwrap();
    assert!(r.resumed_from.is_none());
    assert_eq!(r.steps[1].1, Outcome::AlreadyDone);
    assert_eq!(runs.get(), 2);
}

/// The power cut of issue 22: the journal says a step finished, but the
/// daemon that stored its effect lost it. The next run applies it again.
#[test]
fn a_step_whose_effect_was_lost_runs_again_whatever_the_journal_says() {
    let dir = tempfile::tempdir().unwrap();
    let (fail, runs, stored) = (Cell::new(false), Cell::new(0), Cell::new(false));
    let silent = Cell::new(0);
    let steps = || -> Vec<Phase> {
        vec![Phase {
            name: "p",
            steps: vec![
                Box::new(Flaky {
                    fail: &fail,
                    runs: &runs,
                    stored: &stored,
                }),
                Box::new(Silent(&silent)),
            ],
        }]
    };
    run(&steps(), &host(dir.path(), false)).unwrap();
    assert!(
        Journal::load(&Files::new(dir.path(), false))
            .unwrap()
            .has_run("test.flaky")
    );
    stored.set(false);
    let r = run(&steps(), &host(dir.path(), false)).unwrap();
    assert_eq!(r.steps[0].1, Outcome::Applied);
    assert_eq!(runs.get(), 2);
    assert!(stored.get());
    // A step that cannot tell is applied on every run, never skipped on
    // the journal's word.
    assert_eq!(silent.get(), 2);
}

#[test]
fn dry_run_changes_nothing_and_lists_files() {
    let dir = tempfile::tempdir().unwrap();
    let phases = vec![Phase {
        name: "files",
        steps: vec![Box::new(WriteFile("/etc/a", "1"))],
    }];
    let r = run(&phases, &host(dir.path(), true)).unwrap();
    assert_eq!(r.steps[0].1, Outcome::WouldApply(vec!["/etc/a".into()]));
    assert_eq!(r.planned.len(), 1);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing written, not even the journal"
    );
}

/// Sets its value again on every run, as `ovs-vsctl set` does: ensured,
/// not counted as a change.
struct Idempotent<'a>(&'a Cell<u32>);

impl Step for Idempotent<'_> {
    fn name(&self) -> String {
        "test.idempotent".into()
    }
    fn describe(&self) -> String {
        "idempotent".into()
    }
    fn reapplies(&self) -> bool {
        true
    }
    fn apply(&self, _: &Context) -> Result<()> {
        self.0.set(self.0.get() + 1);
        Ok(())
    }
}

#[test]
fn an_idempotent_step_runs_every_time_and_is_not_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let runs = Cell::new(0);
    let steps = || -> Vec<Phase> {
        vec![Phase {
            name: "p",
            steps: vec![Box::new(Idempotent(&runs))],
        }]
    };
    for _ in 0..2 {
        let r = run(&steps(), &host(dir.path(), false)).unwrap();
        assert_eq!(r.steps[0].1, Outcome::Ensured);
        assert_eq!(r.applied(), 0);
    }
    assert_eq!(runs.get(), 2);
    // A dry run after it ran as it is now changes nothing.
    let r = run(&steps(), &host(dir.path(), true)).unwrap();
    assert_eq!(r.steps[0].1, Outcome::AlreadyDone);
    assert_eq!(runs.get(), 2);
}
