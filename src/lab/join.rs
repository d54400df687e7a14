//! Joining the lab's container edge sites: a bundle per site exported on
//! the control plane and handed to its edge, then `dcn join` on every edge
//! at once.

use super::nsenter::ContainerRunner;
use super::state::{HostState, LabState};
use super::{EdgeJoin, REPO_MOUNT};
use crate::host::command::{Cmd, Runner};
use crate::host::{FileSpec, Files};
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::time::{Duration, Instant};

/// Export a bundle per edge site on the control plane, hand each to its
/// edge host, and run `dcn join` on all edges at once (each logs to
/// `DIR/logs/<host>.join.log`), as an operator would with the printed pin.
pub(super) fn join_edges(files: &Files, dir: &Path, state: &LabState) -> Result<Vec<EdgeJoin>> {
    let cp = state.host("cp")?;
    let cp_runner = ContainerRunner::new(cp.init_pid.context("the control plane is not running")?);
    let mut ready = Vec::new();
    for edge in state
        .hosts
        .iter()
        .filter(|h| h.role == "edge" && h.site.is_some())
    {
        ready.push(hand_bundle(files, &cp_runner, cp, edge)?);
    }
    let results = std::thread::scope(|scope| {
        let jobs: Vec<_> = ready
            .into_iter()
            .map(|r| scope.spawn(move || join_one(files, dir, r)))
            .collect();
        jobs.into_iter()
            .map(|j| {
                j.join()
                    .map_err(|_| anyhow::anyhow!("a join thread panicked"))
            })
            .collect::<Result<Vec<_>>>()
    })?;
    judge(results)
}

/// An edge host with its site's bundle in place: what it joins with.
struct Ready {
    name: String,
    init: u32,
    /// The bundle's path in the edge.
    bundle: String,
    pin: String,
}

/// Export the bundle of `edge`'s site on the control plane (`cp`, entered
/// by `cp_runner`) and copy it into the edge, readable by root only.
fn hand_bundle(
    files: &Files,
    cp_runner: &ContainerRunner,
    cp: &HostState,
    edge: &HostState,
) -> Result<Ready> {
    let site = edge.site.clone().context("an edge without a site")?;
    let bundle = format!("/root/{site}.tar.gz");
    let out = cp_runner.run(
        &Cmd::new(format!("exporting the bundle of site {site}"), "dcn")
            .args(["bundle", "export", "--site", &site, "-o", &bundle])
            .timeout(Duration::from_secs(300)),
    )?;
    let pin = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("CA pin: "))
        .context("`dcn bundle export` printed no CA pin")?
        .to_string();
    let from = cp.rootfs.join(bundle.trim_start_matches('/'));
    let to = edge.rootfs.join(bundle.trim_start_matches('/'));
    files
        .copy(&from, &to, &FileSpec::secret())
        .with_context(|| format!("copying the bundle to {}", edge.name))?;
    let init = edge
        .init_pid
        .with_context(|| format!("{} is not running", edge.name))?;
    Ok(Ready {
        name: edge.name.clone(),
        init,
        bundle,
        pin,
    })
}

/// `dcn join` in one edge; its result, and its output (kept in its log).
fn join_one(files: &Files, dir: &Path, edge: Ready) -> (EdgeJoin, String) {
    let started = Instant::now();
    let out = ContainerRunner::new(edge.init).run(
        &Cmd::new(format!("joining {}", edge.name), "dcn")
            .args([
                "join",
                &edge.bundle,
                "--ca-pin",
                &edge.pin,
                "--packages",
                &format!("local:{REPO_MOUNT}"),
                // The lab judged this shared disk itself (lab::disk).
                "--ignore-preflight-errors=disk-var",
            ])
            .timeout(Duration::from_secs(30 * 60))
            .unchecked(),
    );
    let seconds = started.elapsed().as_secs_f64();
    let (ok, text) = match out {
        Ok(o) => (o.success(), format!("{}{}", o.stdout, o.stderr)),
        Err(e) => (false, format!("{e:#}")),
    };
    let log = dir.join("logs").join(format!("{}.join.log", edge.name));
    // The log is for reading afterwards; the result stands without it.
    let _ = files.write(&log, text.as_bytes(), &FileSpec::public());
    tracing::info!(
        "  {}: {} in {seconds:.1}s (log {})",
        edge.name,
        if ok { "joined" } else { "FAILED" },
        log.display()
    );
    let join = EdgeJoin {
        host: edge.name,
        seconds,
        ok,
    };
    (join, text)
}

/// The joins, or an error with the tail of each failed edge's output.
fn judge(results: Vec<(EdgeJoin, String)>) -> Result<Vec<EdgeJoin>> {
    let failed: Vec<String> = results
        .iter()
        .filter(|(join, _)| !join.ok)
        .map(|(join, text)| {
            format!(
                "{}:\n{}",
                join.host,
                crate::host::command::tail_lines(text, 15)
            )
        })
        .collect();
    if !failed.is_empty() {
        bail!("some edges did not join:\n{}", failed.join("\n"));
    }
    Ok(results.into_iter().map(|(join, _)| join).collect())
}
