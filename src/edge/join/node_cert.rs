//! An edge node's certificate and the CAs it trusts, kept current by its
//! `dcn-config-sync` timer (`dcn node sync-config` runs [`check`] after the
//! site config). Every so often (the centre says how often), and at once
//! when its certificate is due, expired, or does not match its key, the
//! node reports the CAs it trusts to the join service; when its
//! certificate is due it sends a CSR for the key it has held since it
//! joined (the key never leaves the node). It installs what comes back:
//! the renewed certificate, and the CAs to trust (the new one beside the
//! old during a CA rotation, then the new one alone). The services that
//! use them read the files again for their next connections: nothing
//! restarts, open sessions go on.
//!
//! A node that was off past its certificate's end renews the same way when
//! it is back: its node secret does not expire. One that missed a whole CA
//! rotation cannot check the centre's certificates any more:
//! `dcn node trust-ca --ca-pin …` ([`trust_ca`]) is its way back.

use super::client::JoinClient;
use super::edge::{Credentials, NODE_CERT, NODE_KEY, NodeCerts, csr};
use crate::certs::install::{Installed, install};
use crate::certs::policy::{Standing, standing};
use crate::deployment::Deployment;
use crate::host::{FileSpec, Files, Host};
use crate::paths::PUBLIC_CA;
use crate::pki::{CertInfo, Pin};
use crate::pki::{join_pem, split_pem};
use crate::recipes::Recipes;
use crate::wire::{CA_PATH, CertificateCheck, CertificateReply, MAX_TRUSTED_CAS, TrustedCas};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

/// When this node last checked, and what the centre said of renewal.
pub const STATE: &str = "/var/lib/dcn/node/certificate.json";

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct State {
    /// Unix seconds.
    checked_at: u64,
    check_every: u64,
    renew_when_left: u8,
}

impl Default for State {
    /// Until the centre says otherwise: the defaults of its config.
    fn default() -> State {
        State {
            checked_at: 0,
            check_every: 3600,
            renew_when_left: 33,
        }
    }
}

/// What a check did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// The renewed certificate's serial and end, when there is one.
    pub renewed: Option<(String, String)>,
    /// Whether the trusted CAs changed.
    pub trust_changed: bool,
    pub installed: Vec<Installed>,
}

/// Why this node's certificate must be renewed now, if it must.
fn renewal_reason(
    host: &Host,
    renew_when_left: u8,
    now: SystemTime,
) -> Result<Option<&'static str>> {
    let files = &host.files;
    let Some(cert) = files.read_string(NODE_CERT)? else {
        return Ok(Some("missing"));
    };
    let key = files
        .read_secret(NODE_KEY)?
        .context("the node key is missing; join again")?;
    let info = CertInfo::from_pem(&cert).with_context(|| format!("reading {NODE_CERT}"))?;
    let key = rcgen::KeyPair::from_pem(&key).context("reading the node key")?;
    if key.public_key_raw() != info.spki_public_key.as_slice() {
        return Ok(Some("it does not match the node key"));
    }
    Ok(match standing(&info, renew_when_left, now) {
        Standing::Good { .. } => None,
        Standing::Due => Some("in its renewal window"),
        Standing::Expired => Some("expired"),
    })
}

/// When a check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// When it is time, or the certificate is due (the sync timer).
    Due,
    /// Now (`dcn cert renew`).
    Now,
    /// Now, renewing the certificate whether due or not
    /// (`dcn cert renew --force`).
    Renew,
}

/// Check with the centre when `when` says, renew when due, and install
/// what changed. `None`: not time yet.
pub(crate) fn check(
    recipes: &Recipes,
    host: &Host,
    client: &JoinClient,
    hostname: &str,
    creds: &Credentials,
    when: When,
) -> Result<Option<Checked>> {
    let files = &host.files;
    let now = SystemTime::now();
    let unix = crate::timefmt::unix_seconds(now).max(0) as u64;
    let state: State = match files.read_string(STATE)? {
        Some(t) => serde_json::from_str(&t).unwrap_or_default(),
        None => State::default(),
    };
    let reason = match renewal_reason(host, state.renew_when_left, now)? {
        None if when == When::Renew => Some("asked for"),
        r => r,
    };
    let time = unix >= state.checked_at.saturating_add(state.check_every);
    if reason.is_none() && !time && when == When::Due {
        return Ok(None);
    }
    let pins = trusted_pins(host)?;
    let key = node_key(files)?;
    let csr = match reason {
        Some(why) => {
            tracing::info!("renewing this node's certificate ({why})");
            Some(csr(&key, hostname)?)
        }
        None => None,
    };
    let holds = held_certificate(files)?;
    let mut reply = client.certificate(
        hostname,
        creds.node_secret.expose(),
        &CertificateCheck {
            trusted_cas: pins.clone(),
            csr: csr.clone(),
            holds: holds.clone(),
        },
    )?;
    if reply.renew_now && csr.is_none() {
        tracing::info!("renewing this node's certificate (the control plane has no record of it)");
        reply = client.certificate(
            hostname,
            creds.node_secret.expose(),
            &CertificateCheck {
                trusted_cas: pins,
                csr: Some(super::edge::csr(&key, hostname)?),
                holds,
            },
        )?;
    }
    let mut done = Checked::default();
    let cas = checked_cas(&reply.trusted_cas)?;
    if let Some(cert) = &reply.certificate {
        done.renewed = Some(install_certificate(files, cert, &key)?);
    }
    done.trust_changed = install_trust(host, &cas)?;
    if done.trust_changed {
        // The centre counts the nodes that trust a new CA: tell it now,
        // not at the next check.
        let report = CertificateCheck {
            trusted_cas: trusted_pins(host)?,
            csr: None,
            holds: None,
        };
        if let Err(e) = client.certificate(hostname, creds.node_secret.expose(), &report) {
            tracing::warn!("the CAs this node trusts now were not reported: {e:#}");
        }
    }
    done.installed = install_node_copies(recipes, host)?;
    save_state(host, &reply, unix)?;
    Ok(Some(done))
}

fn node_key(files: &Files) -> Result<rcgen::KeyPair> {
    let key_pem = files
        .read_secret(NODE_KEY)?
        .context("the node key is missing; join again")?;
    rcgen::KeyPair::from_pem(&key_pem).context("reading the node key")
}

/// The fingerprint (`sha256:HEX` of the DER) of the certificate this node
/// holds, if it holds a readable one.
fn held_certificate(files: &Files) -> Result<Option<String>> {
    use sha2::Digest;
    Ok(files
        .read_string(NODE_CERT)?
        .and_then(|pem| crate::pki::pem_der(&pem).ok())
        .map(|der| format!("sha256:{}", hex::encode(sha2::Sha256::digest(der)))))
}

/// Install a renewed certificate, refused unless it is for this node's
/// key; its serial and end.
fn install_certificate(
    files: &Files,
    cert: &str,
    key: &rcgen::KeyPair,
) -> Result<(String, String)> {
    let info =
        CertInfo::from_pem(cert).context("the join service returned an unreadable certificate")?;
    if info.spki_public_key != key.public_key_raw() {
        bail!("the join service returned a certificate for another key; this node keeps its own");
    }
    files.write(NODE_CERT, cert.as_bytes(), &FileSpec::secret())?;
    tracing::info!(
        "renewed this node's certificate: serial {}, valid until {}",
        info.serial,
        info.not_after
    );
    Ok((
        info.serial.clone(),
        crate::timefmt::rfc3339(crate::pki::lifetime::system_time(info.not_after)),
    ))
}

/// The pins of the CAs this node trusts now.
fn trusted_pins(host: &Host) -> Result<Vec<String>> {
    let trusted = host
        .files
        .read_string(PUBLIC_CA)?
        .context("the control plane's CA is missing; run `dcn join` again")?;
    split_pem(&trusted)
        .iter()
        .take(MAX_TRUSTED_CAS)
        .map(|p| Pin::of_cert_pem(p).map(|p| p.to_string()))
        .collect::<Result<Vec<String>>>()
        .with_context(|| format!("reading {PUBLIC_CA}"))
}

/// The CAs a reply names, checked: a few CA certificates that may sign.
fn checked_cas(cas: &[String]) -> Result<Vec<String>> {
    if cas.is_empty() || cas.len() > MAX_TRUSTED_CAS {
        bail!(
            "the join service named {} CAs to trust; expected 1 to {MAX_TRUSTED_CAS}",
            cas.len()
        );
    }
    for pem in cas {
        let info = CertInfo::from_pem(pem).context("a CA the join service named")?;
        if !info.is_ca || !info.key_cert_sign {
            bail!(
                "the join service named a certificate that is not a CA ({})",
                info.subject
            );
        }
    }
    Ok(cas.to_vec())
}

/// Write the trusted CAs where this host's clients read them.
fn install_trust(host: &Host, cas: &[String]) -> Result<bool> {
    let changed = host
        .files
        .write(PUBLIC_CA, join_pem(cas).as_bytes(), &FileSpec::public())?
        .changed();
    if changed {
        tracing::info!("this node trusts {} CA(s) now", cas.len());
    }
    Ok(changed)
}

/// Bring the copies the recipes name up to date (the node certificate and
/// the CA file of the services that use them).
fn install_node_copies(recipes: &Recipes, host: &Host) -> Result<Vec<Installed>> {
    let deployment = Deployment::load(&host.files)?
        .context("this host has not joined a control plane: run `dcn join` first")?;
    install(host, recipes, &deployment, &NodeCerts)
}

fn save_state(host: &Host, reply: &CertificateReply, unix: u64) -> Result<()> {
    let state = State {
        checked_at: unix,
        check_every: reply.check_every.clamp(10, 24 * 3600),
        renew_when_left: reply.renew_when_left.clamp(10, 90),
    };
    let text = serde_json::to_string_pretty(&state).expect("serialisable") + "\n";
    host.files
        .write(STATE, text.as_bytes(), &FileSpec::secret())?;
    Ok(())
}

/// `dcn node trust-ca --ca-pin PIN`: for a node that missed a CA rotation
/// (it was cut off while the centre moved to its new CA). Asks the join
/// service for the CAs it trusts without checking its certificate, keeps
/// them only if one has the pin the operator read on the control plane
/// (`dcn ca status`), proves the service holds a certificate of that CA by
/// connecting again trusting only them, then installs them and checks the
/// node's certificate.
pub fn trust_ca(recipes: &Recipes, host: &Host, pin: &Pin) -> Result<Checked> {
    let (deployment, creds, endpoint) = node_state(host)?;
    let endpoint = endpoint.trim_end_matches('/');
    let unverified = crate::tls::unverified_http_client(Duration::from_secs(30))?;
    let resp = unverified
        .get(format!("{endpoint}{CA_PATH}"))
        .send()
        .with_context(|| format!("asking {endpoint} for its CAs"))?;
    let status = resp.status();
    let body = resp.text().context("reading the join service's CAs")?;
    if !status.is_success() {
        bail!("{endpoint} answered {status} when asked for its CAs");
    }
    let offered: TrustedCas =
        serde_json::from_str(&body).context("the join service's answer is not a list of CAs")?;
    let cas = checked_cas(&offered.trusted_cas)?;
    if !cas
        .iter()
        .any(|c| Pin::of_cert_pem(c).is_ok_and(|p| p == *pin))
    {
        bail!(
            "none of the CAs {endpoint} offers has the pin {pin}; check the pin with `dcn ca status` on the control plane (is this the right control plane?)"
        );
    }
    // Only a server with a certificate of these CAs passes this.
    let client = JoinClient::new(endpoint, &join_pem(&cas))?;
    client
        .health()
        .context("the join service does not hold a certificate of the pinned CA")?;
    install_trust(host, &cas)?;
    let mut done = check(
        recipes,
        host,
        &client,
        &deployment.hostname,
        &creds,
        When::Now,
    )?
    .expect("a check now runs");
    done.trust_changed = true;
    Ok(done)
}

/// `dcn cert renew [--force]` on an edge: check now (and renew whether due
/// or not with `force`).
pub fn check_now(recipes: &Recipes, host: &Host, force: bool) -> Result<Checked> {
    let (deployment, creds, client) = connect(host)?;
    let when = if force { When::Renew } else { When::Now };
    Ok(
        check(recipes, host, &client, &deployment.hostname, &creds, when)?
            .expect("a check now runs"),
    )
}

/// This node's record, credentials and join service.
fn node_state(host: &Host) -> Result<(Deployment, Credentials, String)> {
    let files = &host.files;
    let deployment = Deployment::load(files)?
        .filter(|d| d.site.is_some())
        .context("this host has not joined a control plane: run `dcn join` first")?;
    let creds = Credentials::load(files)?
        .context("this node's credentials are missing; run `dcn join` again")?;
    let endpoint = files
        .read_string(super::config_sync::JOIN_ENDPOINT)?
        .with_context(|| {
            format!(
                "{} is missing; run `dcn join` again",
                super::config_sync::JOIN_ENDPOINT
            )
        })?;
    Ok((deployment, creds, endpoint.trim().to_string()))
}

/// This node's record, credentials and a client of its join service that
/// trusts the CAs the node trusts.
pub(crate) fn connect(host: &Host) -> Result<(Deployment, Credentials, JoinClient)> {
    let (deployment, creds, endpoint) = node_state(host)?;
    let ca = host
        .files
        .read_string(PUBLIC_CA)?
        .context("the control plane's CA is missing; run `dcn join` again")?;
    let client = JoinClient::new(&endpoint, &ca)?;
    Ok((deployment, creds, client))
}
