//! A simulated edge host's compute load without a nova-compute process of
//! its own: the carrier's compute replayer (`compute_replay.py`, one
//! Python process for every replayed host of the carrier) sends what a
//! nova-compute with nova's fake virt driver sends, built by nova's own
//! code: its start, heartbeats, resource tracker audits with their
//! placement requests, scheduler instance syncs and the periodic tasks'
//! lookups, on the intervals of the host's config, over the host's own
//! RabbitMQ connections and keystone session.
//!
//! A real fake-driver nova-compute takes about 135 MB, which bounds how
//! many this machine runs; the replayer's figures count where its cost to
//! the control plane per host matches the real ones' (`dcn lab scale
//! --calibrate`, docs/scale.md).
//!
//! A host is replayed while its state directory holds the marker the
//! replayer looks for; its config is the one its real nova-compute reads
//! ([`super::fake_compute::render`]), so a host switches between the two
//! with its service, compute node and resource provider unchanged.

use super::sim_node::SimNode;
use crate::host::command::{Cmd, Runner};
use crate::host::lock::FileLock;
use crate::host::{FileSpec, Files};
use anyhow::Result;
use std::path::Path;

/// The replayer, written into the carrier by every run.
const SCRIPT: &str = include_str!("compute_replay.py");
const SCRIPT_FILE: &str = "compute_replay.py";
/// A host's directory holds this while the replayer runs its compute
/// (the name the script looks for).
const MARKER: &str = "compute-replay";
/// The lock, in the carrier's state, of starting the replayer.
const LOCK_FILE: &str = "compute_replay.lock";
/// The carrier's one replayer unit.
pub const UNIT: &str = "dcn-sim-replay";

/// Replay `name`'s compute: its config rendered, its real nova-compute
/// stopped, its marker written, and the carrier's replayer started
/// unless it runs (it picks up a newly marked host within seconds).
pub fn start(runner: &dyn Runner, node: &SimNode) -> Result<()> {
    let (state, node_root) = (node.state, node.root());
    super::fake_compute::render(node)?;
    super::fake_compute::stop(runner, node.name)?;
    let files = Files::new("/", false);
    files.write(
        state.join(SCRIPT_FILE),
        SCRIPT.as_bytes(),
        &FileSpec::public(),
    )?;
    files.write(node_root.join(MARKER), b"", &FileSpec::public())?;
    ensure_running(runner, state)
}

/// No longer replay the compute of the host at `node_root` (the
/// replayer stops it within seconds).
pub fn unmark(node_root: &Path) -> Result<()> {
    Files::new("/", false).remove(node_root.join(MARKER))?;
    Ok(())
}

/// Start the carrier's replayer unless it runs or is coming back. Every
/// `dcn lab chassis` on a carrier (one per site, several at once) may get
/// here: a lock on the carrier's state makes them ask and start one at a
/// time (two that both saw none running started it twice, and the second
/// failed on the unit the first had loaded).
fn ensure_running(runner: &dyn Runner, state: &Path) -> Result<()> {
    let lock = state.join(LOCK_FILE).display().to_string();
    let _turn = FileLock::wait(&Files::new("/", false), &lock)?;
    if !super::carrier::needs_start(runner, UNIT)? {
        return Ok(());
    }
    runner.run(&replayer_command(state))?;
    Ok(())
}

/// The replayer as a transient unit, at the simulated hosts' lower CPU
/// priority, restarted when it dies (its hosts then start again, as
/// nova-computes restarted would).
fn replayer_command(state: &Path) -> Cmd {
    Cmd::new("starting the carrier's compute replayer", "systemd-run")
        .args([
            format!("--unit={UNIT}"),
            "--collect".into(),
            "--nice=10".into(),
        ])
        .args(["--property=Restart=always", "--property=RestartSec=5"])
        .arg("python3")
        .arg(state.join(SCRIPT_FILE).display().to_string())
        .arg("--state")
        .arg(state.display().to_string())
        .arg(format!("--log-file=/var/log/nova/{UNIT}.log"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_looks_for_the_marker_this_module_writes() {
        assert!(
            SCRIPT.contains(&format!("MARKER = \"{MARKER}\"")),
            "compute_replay.py and compute_replay.rs disagree on the marker's name"
        );
    }

    /// A carrier where the replayer runs once started, and a second
    /// start of it fails as systemd-run's does.
    fn carrier() -> crate::host::RecordingRunner {
        let started = std::sync::atomic::AtomicBool::new(false);
        crate::host::RecordingRunner::answering(move |cmd| {
            let up = started.load(std::sync::atomic::Ordering::SeqCst);
            match cmd.program.as_str() {
                "systemctl" if cmd.args.iter().any(|a| a == "show") => {
                    crate::host::CmdOutput::ok(if up { "active\n" } else { "inactive\n" })
                }
                "systemd-run" if started.swap(true, std::sync::atomic::Ordering::SeqCst) => {
                    crate::host::CmdOutput::failed(
                        1,
                        "Unit dcn-sim-replay.service was already loaded",
                    )
                }
                _ => crate::host::CmdOutput::ok(""),
            }
        })
    }

    #[test]
    fn the_replayer_runs_once_per_carrier_over_its_state() {
        let state = tempfile::tempdir().unwrap();
        let runner = carrier();
        ensure_running(&runner, state.path()).unwrap();
        let lines = runner.command_lines();
        let start = lines.last().unwrap();
        assert!(
            start.contains("systemd-run --unit=dcn-sim-replay"),
            "{start}"
        );
        let script = format!(
            "python3 {}/compute_replay.py --state {}",
            state.path().display(),
            state.path().display()
        );
        assert!(start.contains(&script), "{start}");
        assert!(start.contains("--nice=10"), "{start}");
    }

    #[test]
    fn sites_joining_at_once_on_one_carrier_start_one_replayer() {
        let state = tempfile::tempdir().unwrap();
        let runner = carrier();
        std::thread::scope(|scope| {
            for _ in 0..6 {
                scope.spawn(|| ensure_running(&runner, state.path()).unwrap());
            }
        });
        let starts = (runner.command_lines().iter())
            .filter(|l| l.starts_with("systemd-run"))
            .count();
        assert_eq!(starts, 1);
    }

    #[test]
    fn a_replayer_coming_back_after_a_death_is_not_started_again() {
        let state = tempfile::tempdir().unwrap();
        let runner = crate::host::RecordingRunner::answering(|cmd| match cmd.program.as_str() {
            "systemctl" => crate::host::CmdOutput::ok("activating\n"),
            _ => {
                crate::host::CmdOutput::failed(1, "Unit dcn-sim-replay.service was already loaded")
            }
        });
        ensure_running(&runner, state.path()).unwrap();
        assert!(
            !runner
                .command_lines()
                .iter()
                .any(|l| l.starts_with("systemd-run"))
        );
    }
}
