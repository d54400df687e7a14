//! Joining the lab's container edge sites: a bundle per site exported on
//! the control plane, `dcn join` on every edge at once.

use super::nsenter::ContainerRunner;
use super::state::LabState;
use super::{EdgeJoin, REPO_MOUNT};
use crate::host::command::{Cmd, Runner};
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::time::{Duration, Instant};

/// Export a bundle per edge site on the control plane, hand each to its
/// edge host, and run `dcn join` on all edges at once (each logs to
/// `DIR/logs/<host>.join.log`), as an operator would with the printed pin.
pub(super) fn join_edges(dir: &Path, state: &LabState) -> Result<Vec<EdgeJoin>> {
    let cp = state.host("cp")?;
    let cp_runner = ContainerRunner::new(cp.init_pid.context("the control plane is not running")?);
    let mut jobs = Vec::new();
    for edge in state
        .hosts
        .iter()
        .filter(|h| h.role == "edge" && h.site.is_some())
    {
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
        std::fs::copy(&from, &to)
            .with_context(|| format!("copying the bundle to {}", edge.name))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600))?;
        let init = edge
            .init_pid
            .with_context(|| format!("{} is not running", edge.name))?;
        let log = dir.join("logs").join(format!("{}.join.log", edge.name));
        let name = edge.name.clone();
        jobs.push(std::thread::spawn(move || {
            let started = Instant::now();
            let out = ContainerRunner::new(init).run(
                &Cmd::new(format!("joining {name}"), "dcn")
                    .args([
                        "join",
                        &bundle,
                        "--ca-pin",
                        &pin,
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
            let _ = std::fs::write(&log, &text);
            tracing::info!(
                "  {name}: {} in {seconds:.1}s (log {})",
                if ok { "joined" } else { "FAILED" },
                log.display()
            );
            (
                EdgeJoin {
                    host: name,
                    seconds,
                    ok,
                },
                text,
            )
        }));
    }
    let mut joins = Vec::new();
    let mut failed = Vec::new();
    for j in jobs {
        let (join, text) = j
            .join()
            .map_err(|_| anyhow::anyhow!("a join thread panicked"))?;
        if !join.ok {
            failed.push(format!(
                "{}:\n{}",
                join.host,
                crate::host::command::tail_lines(&text, 15)
            ));
        }
        joins.push(join);
    }
    if !failed.is_empty() {
        bail!("some edges did not join:\n{}", failed.join("\n"));
    }
    Ok(joins)
}
