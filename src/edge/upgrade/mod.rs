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
mod images;
mod local;
mod report;
pub mod stage;

use local::Local;
use report::{Reporter, finish_report, progress, staging_failed};

use crate::edge::join::client::JoinClient;
use crate::host::Host;
use crate::host::lock::FileLock;
use crate::host::systemd::Systemd;
use crate::recipes::Recipes;
use crate::release::THIS;
use crate::wire::{EdgeRelease, UpgradeAction, UpgradePhase, UpgradeProgress};
use anyhow::{Context, Result, bail};

/// The unit that runs `dcn node upgrade` (started by the config sync).
pub const UNIT: &str = "dcn-node-upgrade.service";
/// Held while an upgrade runs on this node.
const LOCK: &str = "/run/dcn/upgrade.lock";
/// Set by a dcn that hands over to the release's dcn: the release it
/// handed over for (a second hand-over for it means the staged binary is
/// not the release's, and stops).
const HANDOVER_ENV: &str = "DCN_UPGRADE_HANDOVER";

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
    match images::cache_images(host, &client, &deployment.hostname, secret, &order) {
        // Tell the centre at once, not at the next check.
        Ok(true) => {
            client.upgrade_check(&deployment.hostname, secret, &local.check(host))?;
        }
        Ok(false) => {}
        // Tried again at the next check; the upgrade goes on meanwhile.
        Err(e) => tracing::warn!("{e:#}"),
    }
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
            let (why, log) = report::failure(&e);
            r.report(UpgradeProgress {
                log,
                ..progress(&release, UpgradePhase::Failed, attempt, Some(&why))
            })?;
            Err(e.context(format!("applying release {}", release.id)))
        }
    }
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
