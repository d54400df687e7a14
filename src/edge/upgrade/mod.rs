//! `dcn node upgrade`, on a joined edge: take this node to the release
//! the control plane orders. The config sync asks for the orders every
//! time it runs ([`check_in`], which also reports the node's image cache)
//! and starts `dcn-node-upgrade.service` when there is work; the service
//! runs this.
//!
//! The old dcn's part is small on purpose, since it is the part that must
//! keep working across releases: ask for the order, fetch the release's
//! binary, check its digest, and hand over to it (exec). The release's
//! own dcn then stages the packages (while the node keeps working) and,
//! once the order says it is this node's turn, applies them
//! ([`apply`]). Every phase is reported to the centre with the next check.
//!
//! Each step decides from the host whether it is done (files by their
//! digests, packages by dpkg's state, units by what changed since they
//! started), so a run cut by a power loss is finished by the next one: the
//! config sync starts it again after the node boots. A failed apply is not
//! tried again until the centre gives a higher attempt (a re-run of `dcn
//! site upgrade` once the cause is fixed); a failed download is, at the
//! next check.

mod apply;
pub mod fetch;
pub mod stage;

use crate::edge::join::client::JoinClient;
use crate::host::lock::FileLock;
use crate::host::systemd::Systemd;
use crate::host::{FileSpec, Host};
use crate::recipes::Recipes;
use crate::release::THIS;
use crate::wire::{
    EdgeRelease, UpgradeAction, UpgradeCheck, UpgradeOrder, UpgradePhase, UpgradeProgress,
};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// The unit that runs `dcn node upgrade` (started by the config sync).
pub const UNIT: &str = "dcn-node-upgrade.service";
/// Held while an upgrade runs on this node.
const LOCK: &str = "/run/dcn/upgrade.lock";
/// What this node did of its upgrades.
const LOCAL: &str = "/var/lib/dcn/node/upgrade.json";
/// Set by a dcn that hands over to the release's dcn: the release it
/// handed over for (a second hand-over for it means the staged binary is
/// not the release's, and stops).
const HANDOVER_ENV: &str = "DCN_UPGRADE_HANDOVER";

/// This node's record of its upgrades.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Local {
    /// The edge release it applied last.
    #[serde(default)]
    runs: Option<String>,
    /// Its last report.
    #[serde(default)]
    progress: Option<UpgradeProgress>,
}

impl Local {
    fn load(host: &Host) -> Result<Local> {
        match host.files.read_string(LOCAL)? {
            None => Ok(Local::default()),
            Some(t) => serde_json::from_str(&t).with_context(|| format!("{LOCAL} is damaged")),
        }
    }

    fn save(&self, host: &Host) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("serialisable") + "\n";
        host.files
            .write(LOCAL, text.as_bytes(), &FileSpec::secret())?;
        Ok(())
    }

    fn check(&self, host: &Host) -> UpgradeCheck {
        UpgradeCheck {
            dcn_version: THIS.into(),
            runs: self.runs.clone(),
            progress: self.progress.clone(),
            image_cache: crate::openstack::local_node::cached_images(&host.files)
                .unwrap_or_default(),
        }
    }

    /// Whether `order` asks for work this node has not done (or given up
    /// on until a new attempt).
    fn has_work(&self, order: &UpgradeOrder) -> bool {
        let Some(release) = order.release.as_ref() else {
            return false;
        };
        let mine = self.progress.as_ref().filter(|p| p.release == release.id);
        match order.action {
            UpgradeAction::None => false,
            UpgradeAction::Stage => {
                !matches!(
                    mine.map(|p| p.phase),
                    Some(UpgradePhase::Staged | UpgradePhase::Applied)
                ) && self.runs.as_deref() != Some(&release.id)
            }
            UpgradeAction::Apply => {
                let failed_this_attempt = mine
                    .is_some_and(|p| p.phase == UpgradePhase::Failed && p.attempt == order.attempt);
                let reported_done = self.runs.as_deref() == Some(&release.id)
                    && mine.is_some_and(|p| p.phase == UpgradePhase::Applied);
                !failed_this_attempt && !reported_done
            }
        }
    }
}

/// The config sync's part: report this node to the centre and start the
/// upgrade unit when the order asks for work. A centre without upgrades
/// (older than this part of the protocol) is not an error.
pub fn check_in(host: &Host) -> Result<()> {
    let (deployment, creds, client) = crate::edge::join::node_cert::connect(host)?;
    let local = Local::load(host)?;
    let check = local.check(host);
    let secret = creds.node_secret.expose();
    let Some(order) = client.upgrade_check(&deployment.hostname, secret, &check)? else {
        return Ok(());
    };
    if local.has_work(&order) {
        let systemd = Systemd::new(host.runner.as_ref());
        if !systemd.is_active(UNIT)? {
            tracing::info!(
                "starting {UNIT}: the control plane ordered this node to {:?}",
                order.action
            );
            systemd.start_no_block(UNIT)?;
        }
    }
    Ok(())
}

/// A node's report channel: each report is kept on the node and sent
/// with a check (best effort: the next check sends it again).
struct Reporter<'a> {
    host: &'a Host,
    client: &'a JoinClient,
    hostname: &'a str,
    secret: &'a str,
    local: Local,
}

impl Reporter<'_> {
    fn report(&mut self, progress: UpgradeProgress) -> Result<()> {
        tracing::info!(
            "upgrade to {}: {}{}",
            progress.release,
            progress.phase,
            progress
                .detail
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        );
        self.local.progress = Some(progress);
        self.local.save(self.host)?;
        if let Err(e) =
            self.client
                .upgrade_check(self.hostname, self.secret, &self.local.check(self.host))
        {
            tracing::warn!(
                "the report did not reach the control plane (the next check sends it): {e:#}"
            );
        }
        Ok(())
    }

    fn phase(
        &mut self,
        release: &EdgeRelease,
        phase: UpgradePhase,
        attempt: u32,
        detail: &str,
    ) -> Result<()> {
        self.report(UpgradeProgress {
            release: release.id.clone(),
            phase,
            attempt,
            detail: Some(detail.to_string()),
            log: Vec::new(),
            changes: Vec::new(),
            restarted: Vec::new(),
            guests_on_old_qemu: Vec::new(),
        })
    }
}

/// Release files through the join service, as this node.
struct Pieces<'a> {
    client: &'a JoinClient,
    hostname: &'a str,
    secret: &'a str,
    release: &'a str,
}

impl fetch::Source for Pieces<'_> {
    fn piece(&self, name: &str, offset: u64) -> Result<(Vec<u8>, u64)> {
        self.client
            .release_piece(self.hostname, self.secret, self.release, name, offset)
    }
}

/// Do what the control plane orders this node; a sentence saying what
/// came of it.
pub fn run(recipes: &Recipes, host: &Host) -> Result<String> {
    let Some(_lock) = FileLock::try_take(&host.files, LOCK)? else {
        return Ok("another `dcn node upgrade` runs on this node".into());
    };
    let (deployment, creds, client) = crate::edge::join::node_cert::connect(host)?;
    let secret = creds.node_secret.expose();
    let hostname = deployment.hostname.as_str();
    let mut r = Reporter {
        host,
        client: &client,
        hostname,
        secret,
        local: Local::load(host)?,
    };
    let Some(order) = client.upgrade_check(hostname, secret, &r.local.check(host))? else {
        return Ok(format!(
            "the control plane's dcn has no upgrades for nodes (it is older than {}): nothing to do",
            crate::release::FIRST_UPGRADABLE_NODE
        ));
    };
    let release = match (&order.release, order.action) {
        (Some(release), UpgradeAction::Stage | UpgradeAction::Apply) => release.clone(),
        _ => return Ok("no upgrade includes this node now".into()),
    };
    if crate::release::parse(&release.dcn_version) < crate::release::parse(THIS) {
        let why = format!(
            "the control plane offers dcn {}, older than this node's dcn {THIS}: a downgrade is not supported; upgrade the control plane first (`dcn upgrade`)",
            release.dcn_version
        );
        r.phase(&release, UpgradePhase::Failed, order.attempt, &why)?;
        bail!("{why}");
    }
    if !r.local.has_work(&order) {
        return Ok(match order.action {
            UpgradeAction::Apply if r.local.runs.as_deref() == Some(&release.id) => {
                format!("this node runs release {} already", release.id)
            }
            UpgradeAction::Apply => format!(
                "attempt {} at release {} failed here; a re-run of `dcn site upgrade` on the control plane tries again",
                order.attempt, release.id
            ),
            _ => format!("release {} is staged", release.id),
        });
    }
    let source = Pieces {
        client: &client,
        hostname,
        secret,
        release: &release.id,
    };
    if own_digest()? != release.dcn.sha256 {
        return hand_over(host, &mut r, &source, &release, order.attempt);
    }
    if r.local.runs.as_deref() == Some(&release.id) {
        // Applied before a cut kept it from being reported.
        return finish_report(&mut r, &release, order.attempt);
    }
    let staged = match stage::packages(recipes, host, &source, &release, false, &mut |_| {}) {
        Ok(s) => s,
        Err(e) => return staging_failed(&mut r, &release, order.attempt, e),
    };
    if order.action == UpgradeAction::Stage {
        r.report(UpgradeProgress {
            changes: staged.changes.clone(),
            ..progress(&release, UpgradePhase::Staged, order.attempt, None)
        })?;
        return Ok(format!(
            "staged release {} ({} package change(s)); it applies when the control plane says so",
            release.id,
            staged.changes.len()
        ));
    }
    // This node's turn. The node's lock keeps the config sync out
    // while the services change.
    let _node = FileLock::wait(&host.files, crate::edge::join::config_sync::NODE_LOCK)?;
    let staged = match stage::packages(recipes, host, &source, &release, true, &mut |_| {}) {
        Ok(s) => s,
        Err(e) => return staging_failed(&mut r, &release, order.attempt, e),
    };
    let attempt = order.attempt;
    let result = {
        let mut step = |s: &str| {
            let _ = r.report(UpgradeProgress {
                changes: staged.changes.clone(),
                ..progress(&release, UpgradePhase::Applying, attempt, Some(s))
            });
        };
        apply::apply(recipes, host, &release, &mut step)
    };
    match result {
        Ok(applied) => {
            r.local.runs = Some(release.id.clone());
            r.report(UpgradeProgress {
                changes: staged.changes.clone(),
                restarted: applied.restarted.clone(),
                guests_on_old_qemu: applied.guests_on_old_qemu.clone(),
                ..progress(&release, UpgradePhase::Applied, attempt, None)
            })?;
            Ok(format!(
                "applied release {} (dcn {}): {} package change(s); restarted: {}{}",
                release.id,
                release.dcn_version,
                staged.changes.len(),
                match applied.restarted.is_empty() {
                    true => "nothing".to_string(),
                    false => applied.restarted.join(", "),
                },
                match applied.guests_on_old_qemu.is_empty() {
                    true => String::new(),
                    false => format!(
                        "; guests on the qemu it replaced (they take the new one at their next restart): {}",
                        applied.guests_on_old_qemu.join(", ")
                    ),
                }
            ))
        }
        Err(e) => {
            r.report(UpgradeProgress {
                log: crate::logging::recent_lines(),
                ..progress(
                    &release,
                    UpgradePhase::Failed,
                    attempt,
                    Some(&format!("{e:#}")),
                )
            })?;
            Err(e.context(format!("applying release {}", release.id)))
        }
    }
}

fn progress(
    release: &EdgeRelease,
    phase: UpgradePhase,
    attempt: u32,
    detail: Option<&str>,
) -> UpgradeProgress {
    UpgradeProgress {
        release: release.id.clone(),
        phase,
        attempt,
        detail: detail.map(str::to_string),
        log: Vec::new(),
        changes: Vec::new(),
        restarted: Vec::new(),
        guests_on_old_qemu: Vec::new(),
    }
}

/// A download that failed is tried again at the next check: reported as
/// still staging, with why.
fn staging_failed(
    r: &mut Reporter,
    release: &EdgeRelease,
    attempt: u32,
    e: anyhow::Error,
) -> Result<String> {
    r.report(UpgradeProgress {
        log: crate::logging::recent_lines(),
        ..progress(
            release,
            UpgradePhase::Staging,
            attempt,
            Some(&format!("tried again at the next check: {e:#}")),
        )
    })?;
    Err(e.context(format!("staging release {}", release.id)))
}

/// The apply finished, but its report may not have left.
fn finish_report(r: &mut Reporter, release: &EdgeRelease, attempt: u32) -> Result<String> {
    let done = r
        .local
        .progress
        .as_ref()
        .is_some_and(|p| p.release == release.id && p.phase == UpgradePhase::Applied);
    if !done {
        r.report(progress(release, UpgradePhase::Applied, attempt, None))?;
    }
    Ok(format!("this node runs release {} already", release.id))
}

/// The SHA-256 of the dcn binary running now.
fn own_digest() -> Result<String> {
    use sha2::{Digest, Sha256};
    let exe = std::env::current_exe().context("finding the running dcn binary")?;
    let bytes = std::fs::read(&exe).with_context(|| format!("reading {}", exe.display()))?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

/// Fetch the release's dcn and run it in this process's place, with the
/// same command: it carries on from here.
fn hand_over(
    host: &Host,
    r: &mut Reporter,
    source: &Pieces,
    release: &EdgeRelease,
    attempt: u32,
) -> Result<String> {
    if std::env::var(HANDOVER_ENV).ok().as_deref() == Some(release.id.as_str()) {
        bail!(
            "the dcn staged for release {} does not hash as the release says after the hand-over; remove {} and try again",
            release.id,
            stage::BINARY
        );
    }
    r.phase(
        release,
        UpgradePhase::Staging,
        attempt,
        &format!("dcn {}", release.dcn_version),
    )?;
    let binary = match stage::binary(host, source, release) {
        Ok(b) => host.files.host_path(b)?,
        Err(e) => return staging_failed(r, release, attempt, e),
    };
    tracing::info!(
        "handing over to dcn {} ({})",
        release.dcn_version,
        binary.display()
    );
    use std::os::unix::process::CommandExt;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let err = std::process::Command::new(&binary)
        .args(args)
        .env(HANDOVER_ENV, &release.id)
        .exec();
    Err(anyhow::Error::new(err).context(format!("running {}", binary.display())))
}

#[cfg(test)]
mod tests;
