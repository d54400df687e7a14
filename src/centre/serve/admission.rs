//! What decides whether a host may join, and what the registry keeps of
//! it: the join request read as dcn checks it, the rules for a host that
//! joined before, the proof that it holds its key, and its node record.

use super::challenge::Challenges;
use super::handlers::{Refusal, refuse};
use crate::bundle::JoinToken;
use crate::centre::sites::{NodeRecord, NodeState, TokenRecord};
use crate::openstack::southbound::admission;
use crate::secrets::stored_hash;
use crate::timefmt::rfc3339;
use crate::wire::JoinRequest;
use std::time::SystemTime;

/// The request's token, host name and address, each as dcn checks it.
pub(super) fn parse_request(
    req: &JoinRequest,
) -> Result<(JoinToken, crate::types::NodeName, std::net::IpAddr), Refusal> {
    let token: JoinToken = req.token.parse().map_err(|e| {
        refuse(
            401,
            "token-unknown",
            format!("the join token is malformed ({e}); export a fresh bundle"),
        )
    })?;
    let hostname: crate::types::NodeName = req
        .hostname
        .parse()
        .map_err(|e| refuse(400, "bad-request", e))?;
    let address: std::net::IpAddr = req.address.parse().map_err(|_| {
        refuse(
            400,
            "bad-request",
            format!("{:?} is not an IP address", req.address),
        )
    })?;
    Ok((token, hostname, address))
}

/// A known host may join again (an interrupted join running again, with
/// the key it kept) without spending a use; anyone else naming it is
/// refused, whatever the token allows.
pub(super) fn may_join(
    existing: Option<&NodeRecord>,
    hostname: &crate::types::NodeName,
    site: &str,
    key_pin: &str,
    record: &TokenRecord,
) -> Result<(), Refusal> {
    match existing {
        Some(n) if n.site != site => {
            return Err(refuse(
                409,
                "node-in-other-site",
                format!(
                    "host {hostname} is a node of site {}; remove it there first (`dcn node remove {hostname}` on the control plane)",
                    n.site
                ),
            ));
        }
        Some(n) if n.key_pin.as_deref() == Some(key_pin) => {}
        Some(_) => {
            return Err(refuse(
                409,
                "node-exists",
                format!(
                    "host {hostname} already joined site {} with another key; if it was reinstalled, run `dcn node remove {hostname}` on the control plane, then join again",
                    site
                ),
            ));
        }
        None if record.uses >= record.max_uses => {
            return Err(refuse(
                401,
                "token-used-up",
                format!(
                    "the join token was used {} time(s), its maximum; run `dcn bundle export --site {}` for another",
                    record.uses, site
                ),
            ));
        }
        None => {}
    }
    Ok(())
}

/// Whoever sends a proof must hold the CSR's key now; a host that joined
/// before must send one (its CSR alone may have been seen by anyone).
pub(super) fn proof_checked(
    req: &JoinRequest,
    challenges: &Challenges,
    issued: &admission::NodeCertificate,
    joined_before: bool,
    hostname: &crate::types::NodeName,
    token_id: &str,
    now: SystemTime,
) -> Result<(), Refusal> {
    match &req.proof {
        Some(_) if !issued.p256 => {
            return Err(refuse(
                400,
                "proof-invalid",
                "the CSR's key is not an ECDSA P-256 key, which dcn join makes",
            ));
        }
        Some(proof) => challenges
            .accept(proof, hostname.as_str(), token_id, &issued.public_key, now)
            .map_err(|e| {
                refuse(
                    401,
                    "proof-invalid",
                    format!("the proof of the node key: {e}"),
                )
            })?,
        None if joined_before => {
            return Err(refuse(
                401,
                "proof-required",
                format!(
                    "host {hostname} joined before: joining again needs a proof that this host holds its key now (a signed challenge), which this host's dcn does not send; run the control plane's dcn on the host"
                ),
            ));
        }
        None => {}
    }
    Ok(())
}

/// What the registry keeps of a node that just joined: a host that joined
/// before keeps its history (when it joined and was placed, its state, its
/// trusted CAs, its config) and its earlier certificates' sessions until
/// they expire.
pub(super) fn node_record(
    existing: Option<&NodeRecord>,
    hostname: &crate::types::NodeName,
    site: &str,
    address: std::net::IpAddr,
    node_secret: &str,
    issued: &admission::NodeCertificate,
    now: SystemTime,
) -> NodeRecord {
    NodeRecord {
        hostname: hostname.to_string(),
        site: site.to_string(),
        address: address.to_string(),
        joined_at: existing
            .map(|n| n.joined_at.clone())
            .unwrap_or_else(|| rfc3339(now)),
        secret_hash: stored_hash(node_secret),
        state: existing.map(|n| n.state).unwrap_or(NodeState::Joined),
        placed_at: existing.and_then(|n| n.placed_at.clone()),
        key_pin: Some(issued.key_pin.clone()),
        southbound_ca: Some(issued.ca_pem.clone()),
        // A join again (same key) keeps the earlier certificates'
        // sessions until they expire.
        previous_southbound_cas: existing
            .map(|n| {
                admission::unexpired(
                    n.previous_southbound_cas
                        .iter()
                        .chain(&n.southbound_ca)
                        .cloned()
                        .collect(),
                )
            })
            .unwrap_or_default(),
        certificate: Some(issued.cert_pem.clone()),
        trusted_cas: existing.map(|n| n.trusted_cas.clone()).unwrap_or_default(),
        config: existing.and_then(|n| n.config.clone()),
    }
}
