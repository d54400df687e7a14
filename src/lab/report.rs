//! What `dcn lab up` reports in `DIR/report.json`: each phase's time (kept
//! by [`Timer`]), the control plane's memory and each edge's join.

use super::memory;
use crate::engine::Stopwatch;
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// Phase timings, written to `DIR/report.json`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub phases: Vec<PhaseTime>,
    pub total_seconds: f64,
    /// The control-plane container's memory once init finished.
    pub control_plane_memory: Option<memory::MemoryUse>,
    /// Each edge's `dcn join`.
    pub edge_joins: Vec<EdgeJoin>,
    /// The bare-metal site's inventory (on this machine; its paths are the
    /// control plane's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bare_metal_inventory: Option<PathBuf>,
}

/// One edge's join, timed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EdgeJoin {
    pub host: String,
    pub seconds: f64,
    pub ok: bool,
}

#[derive(Debug, Serialize)]
pub struct PhaseTime {
    pub phase: String,
    pub seconds: f64,
}

pub(super) struct Timer {
    pub(super) report: Report,
    pub(super) started: Instant,
    pub(super) watch: Stopwatch,
}

impl Timer {
    pub(super) fn phase<T>(&mut self, name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let r = self
            .watch
            .time(name, f)
            .with_context(|| format!("lab phase {name}"))?;
        let (_, took) = self.watch.laps().last().expect("the phase just finished");
        self.report.phases.push(PhaseTime {
            phase: name.to_string(),
            seconds: took.as_secs_f64(),
        });
        Ok(r)
    }
}
