//! The running kernel's processes and mounts (`/proc`), as the lab looks
//! at them to find, watch and stop its containers. `/proc` is always this
//! machine's, never a tree under another root, so it is read through a
//! [`Files`] rooted at `/` made here rather than one passed in. A process
//! can end between two reads: whatever is gone reads as `None`.

use crate::host::Files;
use anyhow::{Context, Result};
use std::path::PathBuf;

fn proc() -> Files {
    Files::new("/", false)
}

/// The PIDs of the processes that exist now.
pub fn pids() -> Result<Vec<u32>> {
    Ok(proc()
        .list("/proc")?
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect())
}

/// The file `name` of process `pid` (`cmdline`, `stat`, …).
pub fn read(pid: u32, name: &str) -> Option<Vec<u8>> {
    proc().read(format!("/proc/{pid}/{name}")).ok().flatten()
}

/// [`read`] as text.
pub fn read_string(pid: u32, name: &str) -> Option<String> {
    proc()
        .read_string(format!("/proc/{pid}/{name}"))
        .ok()
        .flatten()
}

/// Where the link `name` of process `pid` points (`ns/pid`, …).
pub fn link(pid: u32, name: &str) -> Option<PathBuf> {
    proc()
        .read_link(format!("/proc/{pid}/{name}"))
        .ok()
        .flatten()
}

/// This process's mount table (`/proc/self/mountinfo`).
pub fn mountinfo() -> Result<String> {
    proc()
        .read_string("/proc/self/mountinfo")?
        .context("/proc/self/mountinfo is missing: is /proc mounted?")
}
