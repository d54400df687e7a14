//! `POST /v1/progress`: a node reports the phase it is in. Who may write a
//! host name's record:
//!
//! - once the host joined (it has a node record), only its own node secret;
//! - before, a join token this control plane issued, unexpired, of an
//!   active site, and for at most its `maxUses` host names (a leaked
//!   bundle cannot fill the disk with made-up nodes). A host the control
//!   plane deployed (`dcn site deploy` recorded its BMC steps) reports to
//!   that site only; a record only another site's token wrote is dropped
//!   when the host's own site reports, so no token can squat a future
//!   host's name. Any token of a site speaks for every not-yet-joined host
//!   of that site: it could join as any of them too (docs/security.md).
//!
//! A refusal writes nothing. What is kept is bounded and made safe to print
//! by [`crate::centre::sites::progress`].

use super::handlers::{Refusal, internal, refuse, valid_token};
use crate::bundle::JoinToken;
use crate::centre::sites::progress::{ProgressRecord, ProgressStore};
use crate::centre::sites::{Lock, NodeRecord, Registry, Site, TokenRecord};
use crate::host::Host;
use crate::wire::{ErrorReply, ProgressAck, ProgressReport};
use std::time::SystemTime;

/// Record `report`, sent with `bearer`, at `now`.
pub fn record(
    host: &Host,
    bearer: Option<&str>,
    report: &ProgressReport,
    now: SystemTime,
) -> Result<ProgressAck, Refusal> {
    let hostname: crate::types::NodeName = report
        .hostname
        .parse()
        .map_err(|e| refuse(400, "bad-request", e))?;
    if report.phase.by_centre() {
        return Err(refuse(
            400,
            "bad-request",
            format!(
                "the control plane records {} itself; a node cannot report it",
                report.phase
            ),
        ));
    }
    let Some(bearer) = bearer else {
        return Err(refuse(
            401,
            "token-unknown",
            "no credential: send `Authorization: Bearer` with the join token (before the host joined) or its node secret",
        ));
    };
    let registry = Registry::new(&host.files);
    let lock = registry.lock().map_err(internal)?;
    let mut progress = writable(&registry, &lock, hostname.as_str(), bearer, now)?;
    progress.apply(report.phase, report.detail.as_deref(), &report.log, now);
    ProgressStore::new(&host.files)
        .save(&lock, &progress)
        .map_err(internal)?;
    Ok(ProgressAck {
        phase: progress.current().map(|e| e.phase).unwrap_or(report.phase),
    })
}

/// The record `bearer` may write for `hostname` (a new one if it has none),
/// or why not.
fn writable(
    registry: &Registry,
    _lock: &Lock,
    hostname: &str,
    bearer: &str,
    now: SystemTime,
) -> Result<ProgressRecord, Refusal> {
    let store = ProgressStore::new(registry.files());
    let existing = store.get(hostname).map_err(internal)?;
    if let Some(node) = registry.node(hostname).map_err(internal)? {
        return joined(registry, &node, existing, hostname, bearer);
    }
    let token: JoinToken = bearer.parse().map_err(|_| {
        refuse(
            401,
            "token-unknown",
            "the credential is neither a join token nor a node secret of this control plane",
        )
    })?;
    let (token, site) = valid_token(registry, &token, now)?;
    let mut progress = before_join(existing, hostname, &site)?;
    if progress.token_id.as_deref() != Some(token.id.as_str()) {
        check_uses(&store, &token, &site, hostname)?;
        progress.token_id = Some(token.id);
    }
    Ok(progress)
}

/// The record of a host that joined, which only its node secret writes.
fn joined(
    registry: &Registry,
    node: &NodeRecord,
    existing: Option<ProgressRecord>,
    hostname: &str,
    bearer: &str,
) -> Result<ProgressRecord, Refusal> {
    if node.secret_hash.is_empty() || node.secret_hash != crate::secrets::stored_hash(bearer) {
        return Err(refuse(
            401,
            "token-unknown",
            format!(
                "host {hostname} has joined: only its own node secret is accepted for its reports (if it was reinstalled, run `dcn node remove {hostname}` on the control plane first)"
            ),
        ));
    }
    if registry
        .site(&node.site)
        .map_err(internal)?
        .is_none_or(|s| s.revoked_at.is_some())
    {
        return Err(refuse(
            401,
            "site-revoked",
            format!("site {} was revoked", node.site),
        ));
    }
    Ok(match existing {
        Some(p) if p.site == node.site => p,
        _ => ProgressRecord::new(hostname, &node.site),
    })
}

/// The record a token of `site` writes for a host that has not joined.
fn before_join(
    existing: Option<ProgressRecord>,
    hostname: &str,
    site: &Site,
) -> Result<ProgressRecord, Refusal> {
    Ok(match existing {
        // Reports another site's token made, before any join: a token of
        // one site cannot keep another site's future host from reporting
        // (the record starts afresh for this site, as a join would).
        Some(p) if p.site != site.name && !p.history.iter().any(|e| e.phase.by_centre()) => {
            tracing::warn!(
                "host {hostname}: reports of site {} dropped, site {} reports for it now",
                p.site,
                site.name
            );
            ProgressRecord::new(hostname, &site.name)
        }
        // What the control plane itself recorded (a site deploy) says
        // where the host belongs.
        Some(p) if p.site != site.name => {
            return Err(refuse(
                409,
                "node-in-other-site",
                format!(
                    "host {hostname} reports to site {}; remove it there first (`dcn node remove {hostname}` on the control plane)",
                    p.site
                ),
            ));
        }
        Some(p) => p,
        None => ProgressRecord::new(hostname, &site.name),
    })
}

/// Refused when `token` already reports for its maximum of hosts other
/// than `hostname`.
fn check_uses(
    store: &ProgressStore,
    token: &TokenRecord,
    site: &Site,
    hostname: &str,
) -> Result<(), Refusal> {
    let others = store
        .all()
        .map_err(internal)?
        .iter()
        .filter(|p| p.token_id.as_deref() == Some(token.id.as_str()) && p.hostname != hostname)
        .count();
    if others >= token.max_uses as usize {
        return Err(refuse(
            401,
            "token-used-up",
            format!(
                "join token {} already reports for {others} host(s), its maximum; `dcn site status {}` shows them",
                token.id, site.name
            ),
        ));
    }
    Ok(())
}

/// The join service's answer to a progress report body.
pub fn answer(host: &Host, bearer: Option<&str>, body: &[u8]) -> super::JoinAnswer {
    let (status, body, note) = match serde_json::from_slice::<ProgressReport>(body) {
        Err(e) => (
            400,
            serde_json::to_value(ErrorReply {
                error: "bad-request".into(),
                message: format!("not a progress report: {e}"),
            }),
            "refused: bad-request".to_string(),
        ),
        Ok(report) => {
            let about = format!(
                "(host {}, phase {})",
                super::shown(&report.hostname),
                report.phase
            );
            match record(host, bearer, &report, SystemTime::now()) {
                Ok(ack) => (200, serde_json::to_value(ack), format!("{about} recorded")),
                Err(r) => (
                    r.status,
                    serde_json::to_value(&r.reply),
                    format!("{about} refused: {}", r.reply.error),
                ),
            }
        }
    };
    super::JoinAnswer {
        status,
        body: body.expect("serialisable"),
        note,
    }
}

#[cfg(test)]
mod tests;
