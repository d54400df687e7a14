//! `dcn bmc fingerprint`: what a BMC's certificate says, read without
//! trusting anything or sending credentials, for the operator to compare
//! out of band before pinning it.

use super::untrusted::terminal_safe;
use anyhow::{Context, Result, bail};
use std::time::Duration;

/// What a server's certificate says, for `dcn bmc fingerprint`. The names
/// are the BMC's to choose: they are escaped for a terminal.
#[derive(Debug, serde::Serialize)]
pub struct Fingerprint {
    /// The key's pin, as `--bmc-pin` takes it.
    pub pin: String,
    /// The certificate's SHA-256, colon-separated hex.
    pub sha256_fingerprint: String,
    pub subject: String,
    /// RFC 3339.
    pub not_after: String,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<String>,
}

/// Read the certificate the server at `bmc` (a URL) presents, trusting
/// nothing and sending nothing; `timeout` is at least one second.
pub fn fingerprint(bmc: &str, timeout: Duration) -> Result<Fingerprint> {
    use sha2::{Digest, Sha256};
    let base = super::client::base_url(bmc)?;
    if base.scheme() != "https" {
        bail!("{base} is plain HTTP: it has no certificate to fingerprint");
    }
    let host = base
        .host_str()
        .context("--bmc has no host")?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = base.port_or_known_default().unwrap_or(443);
    let timeout = timeout.max(Duration::from_secs(1));
    let der = crate::tls::fetch_server_certificate(&host, port, timeout)
        .with_context(|| format!("reading the certificate of {base}"))?;
    let info = crate::pki::CertInfo::from_der(&der)
        .with_context(|| format!("{base} presented a certificate dcn cannot read"))?;
    let fp = Fingerprint {
        pin: crate::pki::Pin::of_spki_der(&info.spki_der).to_string(),
        sha256_fingerprint: Sha256::digest(&der)
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<Vec<_>>()
            .join(":"),
        // Names are the BMC's to choose (IA5 and UTF-8 strings may hold
        // escape sequences): shown escaped.
        subject: terminal_safe(&info.subject).into_owned(),
        not_after: crate::timefmt::rfc3339(info.not_after.into()),
        dns_names: info
            .dns_names
            .iter()
            .map(|n| terminal_safe(n).into_owned())
            .collect(),
        ip_addresses: info.ip_addresses.iter().map(|i| i.to_string()).collect(),
    };
    Ok(fp)
}
