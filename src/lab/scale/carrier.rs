//! The carrier container's own systemd, as the simulated hosts use it:
//! its Open vSwitch, shared by every chassis on it, and whether a
//! simulated host's transient unit (its controller, its nova-compute,
//! the replayer) already runs or is to be started.

use crate::host::command::{Cmd, Runner};
use anyhow::Result;
use std::time::Duration;

/// Start the carrier's Open vSwitch. Each site's hosts on a carrier start
/// it at once, and one of those starts failed once with 219/CGROUP (its
/// unit's cgroup not yet set up) while the next, 3 s later, succeeded: a
/// failed start is tried twice more.
pub fn start_open_vswitch(runner: &dyn Runner) -> Result<()> {
    let start = Cmd::new("starting Open vSwitch", "systemctl")
        .args(["start", "openvswitch-switch.service"])
        .timeout(Duration::from_secs(120));
    let mut attempt = 1;
    loop {
        match runner.run(&start) {
            Ok(_) => return Ok(()),
            Err(e) if attempt < 3 => {
                tracing::warn!("{e:#}; trying again in 3 s");
                std::thread::sleep(Duration::from_secs(3));
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether the transient unit `unit` runs, or is coming back: the
/// simulated hosts' units restart themselves (`Restart=always`), and one
/// between a death and its restart is `activating`, which a second
/// `systemd-run` of the name would fail on.
pub fn runs(runner: &dyn Runner, unit: &str) -> Result<bool> {
    let state = runner.run(
        &Cmd::new(format!("asking whether {unit} runs"), "systemctl")
            .args(["show", "--property=ActiveState", "--value", unit])
            .read_only(),
    )?;
    Ok(matches!(
        state.stdout.trim(),
        "active" | "activating" | "reloading"
    ))
}

/// Whether `unit` is to be started: not while it runs or comes back
/// ([`runs`]). A failed unit of the name that systemd has not collected
/// yet would refuse the new one, so it is cleared first.
pub fn needs_start(runner: &dyn Runner, unit: &str) -> Result<bool> {
    if runs(runner, unit)? {
        return Ok(false);
    }
    runner.run(
        &Cmd::new(format!("clearing a failed {unit}"), "systemctl")
            .args(["reset-failed", unit])
            .unchecked(),
    )?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_start_of_open_vswitch_is_tried_again() {
        let failed = std::sync::atomic::AtomicBool::new(false);
        let runner = crate::host::RecordingRunner::answering(move |_| {
            match failed.swap(true, std::sync::atomic::Ordering::SeqCst) {
                false => crate::host::CmdOutput::failed(1, "status=219/CGROUP"),
                true => crate::host::CmdOutput::ok(""),
            }
        });
        start_open_vswitch(&runner).unwrap();
        assert_eq!(runner.calls().len(), 2);
    }
}
