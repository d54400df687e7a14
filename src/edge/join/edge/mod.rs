//! The edge host's side of a join: who it is, what it checks, the state it
//! keeps (`/var/lib/dcn/node/`: its key, certificate and the site
//! credentials from the join reply, all 0600), and the values its compute
//! services are configured with.

mod compute;
mod credentials;

pub use compute::{Deploy, deploy};
// The scale harness writes a carrier's view of the control plane as an edge does.
pub(crate) use compute::write_hosts;
// For the recipes' render tests, which render an edge's values.
pub(crate) use compute::NodeCerts;
// The render tests and the scale harness's simulated computes render an
// edge's values.
pub(crate) use compute::values as compute_values;
#[cfg(test)]
pub(in crate::edge::join) use credentials::CREDENTIALS;
pub(crate) use credentials::{Credentials, NODE_CERT, NODE_KEY, csr};
pub use credentials::{keep_manifest, kept, kept_manifest, request};

use super::client::JoinClient;
use crate::bundle::VerifiedBundle;
use crate::deployment::Deployment;
use crate::host::Host;
use crate::secrets::Secret;
use anyhow::{Context, Result, bail};
use std::net::{IpAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The reporter of this join's progress: to the bundle's join service,
/// with the node secret of an earlier join of this host, else the bundle's
/// token. Off (with a warning) when no client can be made.
pub fn reporter(host: &Host, bundle: &VerifiedBundle, hostname: &str) -> super::Reporter {
    let credential = match Credentials::load(&host.files) {
        Ok(Some(c)) if c.site == bundle.manifest.site.as_str() => c.node_secret,
        _ => Secret::new(bundle.token.expose_full()),
    };
    match JoinClient::new(
        bundle.manifest.control_plane.join_endpoint.as_str(),
        &bundle.trusted_pem(),
    ) {
        Ok(client) => {
            super::Reporter::new(client, hostname, credential, super::reporter::HEARTBEAT)
        }
        Err(e) => {
            tracing::warn!("progress is not reported to the control plane: {e:#}");
            super::Reporter::off()
        }
    }
}

/// This host's name: the option, an earlier join's, or the host's own.
pub fn hostname(
    host: &Host,
    option: Option<&str>,
    previous: Option<&Deployment>,
) -> Result<String> {
    let name = match (option, previous) {
        (Some(h), _) => h.to_string(),
        (None, Some(d)) => d.hostname.clone(),
        (None, None) => match host.files.read_string("/etc/hostname")? {
            Some(h) if !h.trim().is_empty() => h.trim().to_string(),
            _ => nix::unistd::gethostname()?.to_string_lossy().into_owned(),
        },
    };
    name.parse::<crate::types::NodeName>()
        .map_err(|e| anyhow::anyhow!("{e}; pass --hostname"))?;
    if let Some(d) = previous
        && d.hostname != name
    {
        bail!(
            "this host joined as {}; a node cannot be renamed (nova and OVN key on the name)",
            d.hostname
        );
    }
    Ok(name)
}

/// The address this host's services use.
pub fn address(option: Option<IpAddr>, previous: Option<&Deployment>) -> Result<IpAddr> {
    if let Some(a) = option {
        return Ok(a);
    }
    if let Some(d) = previous {
        return d.address.parse().context("the address of the earlier join");
    }
    crate::host::facts::detect_address().context("pass --my-ip")
}

/// The edge preflight; errors stop the join (ports once joined are ours).
pub fn preflight(
    recipes: &crate::recipes::Recipes,
    host: &Host,
    ignore: &[String],
    rejoined: bool,
) -> Result<()> {
    let mut ignore = ignore.to_vec();
    if rejoined {
        ignore.push("ports".into());
    }
    let report = crate::preflight::run(
        recipes,
        crate::preflight::Role::Edge,
        &host.files,
        &Default::default(),
        &ignore,
    )?;
    if report.has_errors() {
        bail!("preflight found problems; nothing was changed:\n{report}");
    }
    if report.virt_type() == "qemu" {
        tracing::warn!(
            "no hardware virtualization: instances on this host run under qemu software emulation"
        );
    }
    Ok(())
}

/// Every control-plane endpoint an edge uses, as (export name,
/// host:port).
pub fn endpoints(bundle: &VerifiedBundle) -> Vec<(String, String)> {
    (bundle.manifest.control_plane.exports.iter())
        .map(|(name, e)| (name.clone(), e.host_port()))
        .collect()
}

/// Whether a TCP connection to `target` succeeds.
pub fn tcp_reachable(target: &str) -> Result<()> {
    let addr = target
        .to_socket_addrs()
        .with_context(|| format!("resolving {target}"))?
        .next()
        .with_context(|| format!("{target} resolves to nothing"))?;
    TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("connecting to {target}"))?;
    Ok(())
}
