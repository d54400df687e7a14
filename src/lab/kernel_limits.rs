//! The machine's kernel limits that grow with the lab's containers.
//!
//! Each container's systemd holds about seven inotify instances, and the
//! kernel's default of 128 per user stops the 23rd container while it
//! boots (`dcn lab up --spare 34` for a thousand simulated hosts did, with
//! nothing in its console but nspawn's cleanup). The limit is raised
//! before the containers boot, never lowered.

use crate::host::Files;
use crate::host::command::{Cmd, Runner};
use anyhow::Result;

const INOTIFY_INSTANCES: &str = "/proc/sys/fs/inotify/max_user_instances";

/// inotify instances to allow per container, with room to spare.
const INSTANCES_PER_CONTAINER: u64 = 16;

/// What the machine's own processes keep for themselves.
const INSTANCES_FOR_THE_MACHINE: u64 = 128;

/// Raise the inotify instances a user may hold to what `containers`
/// containers need. Returns the new limit when it was raised.
pub fn raise_for(files: &Files, runner: &dyn Runner, containers: usize) -> Result<Option<u64>> {
    let need = INSTANCES_FOR_THE_MACHINE + INSTANCES_PER_CONTAINER * containers as u64;
    let now = files
        .read_string(INOTIFY_INSTANCES)?
        .and_then(|t| t.trim().parse::<u64>().ok());
    if now.is_some_and(|n| n >= need) {
        return Ok(None);
    }
    runner.run(
        &Cmd::new(
            format!("allowing {need} inotify instances for the lab's {containers} containers"),
            "sysctl",
        )
        .args(["-q", "-w", &format!("fs.inotify.max_user_instances={need}")]),
    )?;
    tracing::info!(
        "raised fs.inotify.max_user_instances from {} to {need} for {containers} containers",
        now.map_or("unknown".into(), |n| n.to_string())
    );
    Ok(Some(need))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::FileSpec;
    use crate::host::RecordingRunner;

    fn machine(limit: &str) -> (tempfile::TempDir, Files) {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        files
            .write(INOTIFY_INSTANCES, limit.as_bytes(), &FileSpec::public())
            .unwrap();
        (root, files)
    }

    #[test]
    fn the_default_limit_is_raised_for_many_containers() {
        let (_root, files) = machine("128\n");
        let runner = RecordingRunner::default();
        assert_eq!(raise_for(&files, &runner, 35).unwrap(), Some(688));
        assert_eq!(
            runner.command_lines(),
            ["sysctl -q -w fs.inotify.max_user_instances=688"]
        );
    }

    #[test]
    fn a_limit_high_enough_is_left_alone() {
        let (_root, files) = machine("8192\n");
        let runner = RecordingRunner::default();
        assert_eq!(raise_for(&files, &runner, 35).unwrap(), None);
        assert!(runner.command_lines().is_empty());
    }
}
