//! What the join service does for each request (blocking code, run off the
//! async reactor): check the token, sign the node's CSR, record the node,
//! give it accounts of its own; report a node's state.

use super::admission::{may_join, node_record, parse_request, proof_checked};
use super::challenge::Challenges;
use super::joining::Joining;
use crate::bundle::JoinToken;
use crate::centre::sites::progress::{Phase, ProgressStore};
use crate::centre::sites::{
    NodeRecord, NodeState, Registry, Site, TokenRecord, southbound_members,
};
use crate::host::Host;
use crate::openstack::accounts::NodeAccounts;
use crate::openstack::compute::ComputeCloud;
use crate::openstack::southbound::admission;
use crate::passwords::PasswordStore;
use crate::secrets::{random_string, stored_hash};
use crate::timefmt::{parse_rfc3339, rough};
use crate::wire::{ErrorReply, JoinReply, JoinRequest, NodeStatus};
use std::time::SystemTime;

/// A refusal: HTTP status, reason and message.
pub struct Refusal {
    pub status: u16,
    pub reply: ErrorReply,
}

pub(super) fn refuse(status: u16, error: &str, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        reply: ErrorReply {
            error: error.into(),
            message: message.into(),
        },
    }
}

pub(super) fn internal(e: anyhow::Error) -> Refusal {
    tracing::error!("join service error: {e:#}");
    refuse(
        500,
        "internal",
        "the join service failed; see `journalctl -u dcn-join` on the control plane",
    )
}

/// The record of a presented join token and its site, if the token is
/// one this control plane issued, for a site that is active (and was not
/// re-admitted since), and has not expired. (Its uses are the caller's
/// business.)
pub(super) fn valid_token(
    registry: &Registry,
    token: &JoinToken,
    now: SystemTime,
) -> Result<(TokenRecord, Site), Refusal> {
    let Some(record) = registry.token(&token.id).map_err(internal)? else {
        // Unknown: never issued here (or removed by hand).
        return Err(refuse(
            401,
            "token-unknown",
            "the control plane does not know this join token: was the bundle exported from this control plane?",
        ));
    };
    if record.hash != token.hash() {
        return Err(refuse(
            401,
            "token-unknown",
            "the join token does not match the one the control plane issued",
        ));
    }
    // Tokens issued before a revocation stay dead when the site is
    // re-admitted (which re-creates it).
    let site = match registry.site(&record.site).map_err(internal)? {
        Some(s) if s.revoked_at.is_none() && record.created_at >= s.created_at => s,
        _ => {
            return Err(refuse(
                401,
                "site-revoked",
                format!("site {} was revoked on the control plane", record.site),
            ));
        }
    };
    let not_after = parse_rfc3339(&record.not_after).map_err(internal)?;
    if now > not_after {
        let ago = rough(now.duration_since(not_after).unwrap_or_default());
        return Err(refuse(
            401,
            "token-expired",
            format!(
                "the join token expired {ago} ago; run `dcn bundle export --site {}` on the control plane",
                record.site
            ),
        ));
    }
    Ok((record, site))
}

/// `POST /v2/join`, in three parts so that joins of different hosts
/// overlap: admitted under the registry's lock (the token's use reserved),
/// the host's accounts made without it (the slow calls to keystone and
/// RabbitMQ), then recorded under it again. A join that fails after its
/// admission gives its token use back.
pub fn join(
    host: &Host,
    recipes: &crate::recipes::Recipes,
    accounts: &dyn NodeAccounts,
    challenges: &Challenges,
    joining: &Joining,
    req: &JoinRequest,
) -> Result<JoinReply, Refusal> {
    let (token, hostname, address) = parse_request(req)?;
    let Some(_turn) = joining.enter(hostname.as_str()) else {
        // Retried by the node, as it retries being slowed down.
        return Err(refuse(
            429,
            "rate-limited",
            format!("a join of {hostname} is under way; this one is tried again shortly"),
        ));
    };
    let registry = Registry::new(&host.files);
    let started = std::time::Instant::now();
    let admitted = admit(host, &registry, challenges, req, &token, &hostname, address)?;
    let issued = &admitted.issued;
    let replay = admitted
        .rejoin
        .then(|| joining.replay(&registry, hostname.as_str(), &issued.key_pin));
    if let Some(reply) = replay.flatten() {
        tracing::info!("join of {hostname}: asked again, answered with the reply it missed");
        return Ok(reply);
    }
    let admitted_at = started.elapsed();
    let granted = not_reserved(host, accounts, &admitted.site, hostname.as_str()).and_then(|()| {
        let passwords = PasswordStore::load(&host.files).map_err(internal)?;
        crate::centre::sites::accounts::grant(accounts, recipes, &passwords, hostname.as_str())
            .map_err(internal)
    });
    let granted_at = started.elapsed();
    let recorded = granted.and_then(|credentials| {
        record(host, &registry, &token, &hostname, address, &admitted)
            .map(|node_secret| (credentials, node_secret))
    });
    // Where a join's time goes on this side (docs/scale.md).
    tracing::info!(
        "join of {hostname}: admitted in {:.2}s, accounts {:.2}s, recorded {:.2}s",
        admitted_at.as_secs_f64(),
        (granted_at - admitted_at).as_secs_f64(),
        (started.elapsed() - granted_at).as_secs_f64()
    );
    let (credentials, node_secret) = match recorded {
        Ok(r) => r,
        Err(refusal) => {
            if admitted.reserved_use {
                give_back_use(&registry, &token.id);
            }
            return Err(refusal);
        }
    };
    let reply = JoinReply {
        node_certificate: issued.cert_pem.clone(),
        site: admitted.site,
        node_secret,
        credentials,
    };
    joining.keep(hostname.as_str(), &issued.key_pin, &reply);
    Ok(reply)
}

/// What a join's admission decided.
struct Admitted {
    site: String,
    /// The node's certificate, from a CA made for it alone.
    issued: admission::NodeCertificate,
    /// The host had joined this site before (with this key).
    rejoin: bool,
    /// A use of the token was taken for this join.
    reserved_use: bool,
}

/// Under the registry's lock: the token is valid, the host may join with
/// this key (and proved it holds it, if it joined before), and a new host
/// takes one of the token's uses now, so joins at once cannot exceed them.
fn admit(
    host: &Host,
    registry: &Registry,
    challenges: &Challenges,
    req: &JoinRequest,
    token: &JoinToken,
    hostname: &crate::types::NodeName,
    address: std::net::IpAddr,
) -> Result<Admitted, Refusal> {
    let _lock = registry.lock().map_err(internal)?;
    let now = SystemTime::now();
    let (mut record, site) = valid_token(registry, token, now)?;
    // The node's certificate, from a CA made for it alone (the SB trusts
    // that CA while the node is a member), only for a valid token. The
    // CSR's signature proves the requester holds the key.
    let policy = node_policy(host)?;
    let issued = issue(&req.csr, hostname.as_str(), address, policy.node)?;
    let existing = registry.node(hostname.as_str()).map_err(internal)?;
    may_join(
        existing.as_ref(),
        hostname,
        &site.name,
        &issued.key_pin,
        &record,
    )?;
    proof_checked(
        req,
        challenges,
        &issued,
        existing.is_some(),
        hostname,
        &token.id,
        now,
    )?;
    let reserved_use = existing.is_none();
    if reserved_use {
        record.uses += 1;
        registry.save_token(&record).map_err(internal)?;
    }
    Ok(Admitted {
        site: site.name,
        issued,
        rejoin: existing.is_some(),
        reserved_use,
    })
}

/// Under the registry's lock again: the node's record (unless the site was
/// revoked, or the host removed or joined by another key, meanwhile), the
/// southbound's members, the node's progress. Returns the node secret.
fn record(
    host: &Host,
    registry: &Registry,
    token: &JoinToken,
    hostname: &crate::types::NodeName,
    address: std::net::IpAddr,
    admitted: &Admitted,
) -> Result<String, Refusal> {
    let issued = &admitted.issued;
    let lock = registry.lock().map_err(internal)?;
    let now = SystemTime::now();
    let (record, site) = valid_token(registry, token, now)?;
    let existing = registry.node(hostname.as_str()).map_err(internal)?;
    let same = match &existing {
        Some(n) => {
            admitted.rejoin && n.site == site.name && n.key_pin == Some(issued.key_pin.clone())
        }
        None => !admitted.rejoin,
    };
    if !same {
        return Err(refuse(
            409,
            "node-changed",
            format!("host {hostname} was removed or joined again while this join ran; join again"),
        ));
    }
    let node_secret = random_string(40, b"abcdefghijklmnopqrstuvwxyz0123456789");
    let node = node_record(
        existing.as_ref(),
        hostname,
        &site.name,
        address,
        &node_secret,
        issued,
        now,
    );
    registry.save_node(&node).map_err(internal)?;
    southbound_members::admit(&host.files).map_err(internal)?;
    // The join is done whatever happens to its progress record.
    if let Err(e) = record_joined(host, &lock, &site.name, hostname.as_str(), &record.id) {
        tracing::warn!("recording that {hostname} joined: {e:#}");
    }
    Ok(node_secret)
}

/// Give back the token use a join took and did not finish.
fn give_back_use(registry: &Registry, token_id: &str) {
    let given_back = registry.lock().and_then(|_lock| {
        if let Some(mut record) = registry.token(token_id)? {
            record.uses = record.uses.saturating_sub(1);
            registry.save_token(&record)?;
        }
        Ok(())
    });
    if let Err(e) = given_back {
        tracing::warn!("giving back a use of token {token_id}: {e:#}");
    }
}

/// A node certificate for `csr` from a CA made for it alone.
pub(super) fn issue(
    csr: &str,
    hostname: &str,
    address: std::net::IpAddr,
    validity: std::time::Duration,
) -> Result<admission::NodeCertificate, Refusal> {
    admission::issue(csr, hostname, address, validity).map_err(|e| {
        refuse(
            400,
            "bad-request",
            format!("the certificate signing request is not usable: {e:#}"),
        )
    })
}

/// Refused when `hostname` is the control plane's name, or a compute host
/// of anything else.
fn not_reserved(
    host: &Host,
    accounts: &dyn NodeAccounts,
    site: &str,
    hostname: &str,
) -> Result<(), Refusal> {
    match crate::centre::sites::reserved::refusal(&host.files, accounts, site, hostname)
        .map_err(internal)?
    {
        Some(why) => Err(refuse(403, "name-reserved", why)),
        None => Ok(()),
    }
}

/// The certificate lifetimes and renewal point of this control plane.
pub(super) fn node_policy(host: &Host) -> Result<crate::certs::policy::Policy, Refusal> {
    let config = crate::deployment::saved_config(&host.files).map_err(internal)?;
    Ok(crate::certs::policy::Policy::from(&config.certificates))
}

/// `joined` in the node's progress record, which is the site's from now on
/// (a record another site's token made is started afresh).
fn record_joined(
    host: &Host,
    lock: &crate::centre::sites::Lock,
    site: &str,
    hostname: &str,
    token_id: &str,
) -> anyhow::Result<()> {
    let store = ProgressStore::new(&host.files);
    let mut progress = match store.get(hostname)? {
        Some(p) if p.site == site => p,
        _ => crate::centre::sites::progress::ProgressRecord::new(hostname, site),
    };
    progress.token_id = Some(token_id.to_string());
    progress.apply(Phase::Joined, None, &[], SystemTime::now());
    store.save(lock, &progress)
}

/// The node `hostname` and its site, when `bearer` is its node secret and
/// the site is active.
pub(super) fn authenticated_node(
    registry: &Registry,
    hostname: &str,
    bearer: Option<&str>,
) -> Result<(NodeRecord, Site), Refusal> {
    let node = registry.node(hostname).map_err(internal)?;
    let node = match (node, bearer) {
        (Some(n), Some(b)) if n.secret_hash == stored_hash(b) => n,
        _ => {
            return Err(refuse(
                401,
                "token-unknown",
                "unknown node or wrong node secret",
            ));
        }
    };
    let site = registry.site(&node.site).map_err(internal)?;
    let Some(site) = site.filter(|s| s.revoked_at.is_none()) else {
        return Err(refuse(
            401,
            "site-revoked",
            format!("site {} was revoked", node.site),
        ));
    };
    Ok((node, site))
}

/// `GET /v1/nodes/{hostname}` with the node's bearer secret.
pub fn node_status(
    host: &Host,
    hostname: &str,
    bearer: Option<&str>,
) -> Result<NodeStatus, Refusal> {
    let registry = Registry::new(&host.files);
    let (node, site) = authenticated_node(&registry, hostname, bearer)?;
    let compute = crate::openstack::compute_cloud(host).map_err(internal)?;
    let view = (compute.host_view(hostname, site.aggregate_id)).map_err(internal)?;
    Ok(NodeStatus {
        site: site.name,
        compute_service: view.compute_service,
        // A host joins an aggregate only once it is mapped to the cell.
        cell_mapped: view.in_aggregate || node.state == NodeState::Placed,
        in_aggregate: view.in_aggregate,
        resource_provider: view.resource_provider,
    })
}
