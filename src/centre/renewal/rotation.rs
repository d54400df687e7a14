//! `dcn ca rotate`: moving the control plane and every node to a new CA
//! without a moment when anything stops trusting what it talks to.
//!
//! 1. `dcn ca rotate`: a new CA is made and trusted beside the old one, on
//!    the control plane at once and by each node at its next certificate
//!    check (the join service hands out both, and records which CAs each
//!    node reports). Nothing is signed with it yet but new join bundles,
//!    which pin it and trust the old one beside it.
//! 2. `dcn ca rotate --finish`, once every node trusts the new CA (it names
//!    those that do not, and goes on only with `--force`): the control
//!    plane's certificates are issued by the new CA, its services told,
//!    then the old CA is retired: its certificate kept in `retired/`, its
//!    key deleted, and nodes stop trusting it at their next check.
//!
//! A node that missed it (cut off the whole time) no longer trusts what
//! the control plane presents: `dcn node trust-ca --ca-pin …` on the node,
//! with the pin `dcn ca status` prints, is its way back. Node certificates
//! are not issued by the dcn CA (each has a CA of its own), so nothing of
//! theirs changes.

use super::renew::{PKI_LOCK, Renewal, renew_locked};
use crate::centre::sites::Registry;
use crate::certs::authority::{Authorities, Rotation};
use crate::certs::policy::Policy;
use crate::host::Host;
use crate::host::lock::FileLock;
use crate::pki::lifetime::{system_time, validity};
use crate::pki::{CertInfo, Pin};
use crate::recipes::Recipes;
use anyhow::{Result, bail};
use serde::Serialize;

/// A CA as `dcn ca status` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaView {
    pub subject: String,
    pub pin: String,
    pub not_after: String,
}

impl CaView {
    fn of(pem: &str) -> Result<CaView> {
        let info = CertInfo::from_pem(pem)?;
        Ok(CaView {
            subject: info.subject.clone(),
            pin: Pin::of_spki_der(&info.spki_der).to_string(),
            not_after: crate::timefmt::rfc3339(system_time(info.not_after)),
        })
    }
}

/// Where the control plane's CAs stand.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaStatus {
    /// `none`, `overlap` or `finishing`.
    pub rotation: String,
    /// The CA in service: what `dcn join --ca-pin` and edges check.
    pub current: CaView,
    /// The new CA of a rotation under way.
    pub next: Option<CaView>,
    /// Nodes (of active sites) that do not report trusting the new CA yet.
    pub nodes_not_moved: Vec<String>,
    /// Nodes that do.
    pub nodes_moved: Vec<String>,
}

/// Where the CAs stand, and which nodes trust the new one.
pub fn status(host: &Host) -> Result<CaStatus> {
    let files = &host.files;
    let authorities = Authorities::new(files);
    let rotation = authorities.rotation()?;
    let current = CaView::of(authorities.current()?.cert_pem())?;
    let next = match authorities.next()? {
        Some(n) if rotation != Rotation::None => Some(CaView::of(n.cert_pem())?),
        _ => None,
    };
    let (moved, not_moved) = match &next {
        Some(n) => nodes_by_trust(host, &n.pin)?,
        None => (Vec::new(), Vec::new()),
    };
    Ok(CaStatus {
        rotation: match rotation {
            Rotation::None => "none",
            Rotation::Overlap => "overlap",
            Rotation::Finishing => "finishing",
        }
        .into(),
        current,
        next,
        nodes_not_moved: not_moved,
        nodes_moved: moved,
    })
}

/// The nodes of active sites that report trusting `pin`, and those that do
/// not.
fn nodes_by_trust(host: &Host, pin: &str) -> Result<(Vec<String>, Vec<String>)> {
    let registry = Registry::new(&host.files);
    let active: Vec<String> = (registry.sites()?.into_iter())
        .filter(|s| s.revoked_at.is_none())
        .map(|s| s.name)
        .collect();
    let (mut moved, mut not_moved) = (Vec::new(), Vec::new());
    for node in registry.nodes()? {
        if !active.contains(&node.site) {
            continue;
        }
        if node.trusted_cas.iter().any(|p| p == pin) {
            moved.push(node.hostname);
        } else {
            not_moved.push(node.hostname);
        }
    }
    Ok((moved, not_moved))
}

/// What `dcn ca rotate` did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Started {
    /// The new CA's pin.
    pub pin: String,
    /// False when a rotation was already under way (nothing new made).
    pub created: bool,
    /// Control-plane services told about the new CA file.
    pub services: Vec<String>,
}

/// Start a rotation (or carry on one cut off): a new CA, trusted beside
/// the old one on this host now.
pub fn start(recipes: &Recipes, host: &Host) -> Result<Started> {
    let (_, _, policy): (_, _, Policy) = super::renew::identity(host)?;
    let _lock = FileLock::wait(&host.files, PKI_LOCK)?;
    let authorities = Authorities::new(&host.files);
    if authorities.rotation()? == Rotation::Finishing {
        bail!("a CA rotation is finishing: run `dcn ca rotate --finish` to complete it");
    }
    let (pin, created) = authorities.start_rotation(validity(policy.ca))?;
    let run = renew_locked(recipes, host, false)?;
    Ok(Started {
        pin: pin.to_string(),
        created,
        services: told(&run),
    })
}

fn told(run: &Renewal) -> Vec<String> {
    run.installed
        .iter()
        .map(|i| format!("{} ({})", i.service, i.told))
        .collect()
}

/// What `dcn ca rotate --finish` did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finished {
    /// The CA in service now.
    pub pin: String,
    /// The retired CA's pin (none when a cut-off run had got that far).
    pub retired: Option<String>,
    /// Nodes that did not trust the new CA (only with `--force`): each
    /// needs `dcn node trust-ca --ca-pin PIN`.
    pub left_behind: Vec<String>,
    /// Control-plane certificates issued by the new CA.
    pub reissued: Vec<String>,
}

/// Finish a rotation: refused while a node does not trust the new CA,
/// unless `force`.
pub fn finish(recipes: &Recipes, host: &Host, force: bool) -> Result<Finished> {
    let _lock = FileLock::wait(&host.files, PKI_LOCK)?;
    let authorities = Authorities::new(&host.files);
    let rotation = authorities.rotation()?;
    let mut left_behind = Vec::new();
    match rotation {
        Rotation::None => bail!("no CA rotation is under way: `dcn ca rotate` starts one"),
        Rotation::Overlap => {
            let next = authorities.next()?.expect("a rotation has its new CA");
            let (_, not_moved) = nodes_by_trust(host, &next.pin().to_string())?;
            if !not_moved.is_empty() && !force {
                bail!(
                    "{} node(s) do not trust the new CA yet: {}. Each picks it up at its next certificate check (see `dcn ca status`); a node that cannot (cut off) needs `dcn node trust-ca --ca-pin {}` on it once this finishes. Wait, or finish anyway with --force",
                    not_moved.len(),
                    not_moved.join(", "),
                    next.pin()
                );
            }
            left_behind = not_moved;
        }
        Rotation::Finishing => {}
    }
    authorities.begin_finish()?;
    // Issued by the new CA while clients still trust both.
    let run = renew_locked(recipes, host, false)?;
    let reissued = run.issued.iter().map(|(n, _, _)| n.clone()).collect();
    let retired = authorities.complete_finish()?;
    // The old CA leaves every CA file of this host.
    renew_locked(recipes, host, false)?;
    Ok(Finished {
        pin: authorities.current()?.pin().to_string(),
        retired: retired.map(|p| p.to_string()),
        left_behind,
        reissued,
    })
}
