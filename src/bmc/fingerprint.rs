//! `dcn bmc fingerprint`: what a BMC's certificate says, read without
//! trusting anything or sending credentials, for the operator to compare
//! out of band before pinning it.

use super::untrusted::terminal_safe;
use crate::cli::OutputFormat;
use crate::cli::bmc::FingerprintArgs;
use anyhow::{Context, Result, bail};
use std::process::ExitCode;
use std::time::Duration;

/// What a server's certificate says, for `dcn bmc fingerprint`.
#[derive(Debug, serde::Serialize)]
struct Fingerprint {
    pin: String,
    sha256_fingerprint: String,
    subject: String,
    not_after: String,
    dns_names: Vec<String>,
    ip_addresses: Vec<String>,
}

pub fn run(args: &FingerprintArgs) -> Result<ExitCode> {
    use sha2::{Digest, Sha256};
    let base = super::client::base_url(&args.bmc)?;
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
    let der =
        crate::tls::fetch_server_certificate(&host, port, Duration::from_secs(args.timeout.max(1)))
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
    match args.output {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&fp)?),
        OutputFormat::Text => {
            let names: Vec<String> = fp
                .dns_names
                .iter()
                .chain(&fp.ip_addresses)
                .cloned()
                .collect();
            println!("pin:          {}", fp.pin);
            println!("fingerprint:  SHA256 {}", fp.sha256_fingerprint);
            println!("subject:      {}", fp.subject);
            println!("valid until:  {}", fp.not_after);
            println!(
                "names:        {}",
                if names.is_empty() {
                    "-".to_string()
                } else {
                    names.join(", ")
                }
            );
        }
    }
    tracing::info!(
        "Not yet trusted: compare the fingerprint with the one the BMC's own console shows (or `openssl x509 -noout -fingerprint -sha256` on its certificate), then pass --bmc-pin {}",
        fp.pin
    );
    Ok(ExitCode::SUCCESS)
}
