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
use crate::host::{FileSpec, Files};
use anyhow::Result;
use std::path::Path;

/// The replayer, written into the carrier by every run.
const SCRIPT: &str = include_str!("compute_replay.py");
const SCRIPT_FILE: &str = "compute_replay.py";
/// A host's directory holds this while the replayer runs its compute
/// (the name the script looks for).
const MARKER: &str = "compute-replay";
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

/// Start the carrier's replayer unless it runs. The hosts of one
/// `dcn lab chassis` start at once: one at a time asks and starts.
fn ensure_running(runner: &dyn Runner, state: &Path) -> Result<()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if super::carrier::runs(runner, UNIT)? {
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

    #[test]
    fn the_replayer_runs_once_per_carrier_over_its_state() {
        let runner = crate::host::RecordingRunner::answering(|cmd| {
            // `systemctl is-active` says it does not run yet.
            match cmd.program == "systemctl" {
                true => crate::host::CmdOutput::failed(3, ""),
                false => crate::host::CmdOutput::ok(""),
            }
        });
        ensure_running(&runner, Path::new("/var/lib/dcn-scale")).unwrap();
        let lines = runner.command_lines();
        let start = lines.last().unwrap();
        assert!(
            start.contains("systemd-run --unit=dcn-sim-replay"),
            "{start}"
        );
        assert!(
            start.contains(
                "python3 /var/lib/dcn-scale/compute_replay.py --state /var/lib/dcn-scale"
            ),
            "{start}"
        );
        assert!(start.contains("--nice=10"), "{start}");
    }
}
