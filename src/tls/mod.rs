//! rustls configurations, all with the ring provider: a client that trusts
//! given CA certificates (the dcn CA, an operator's `--bmc-ca`) and reqwest
//! clients built on it. No system trust store is read unless asked for.
//!
//! For servers dcn does not run (a BMC), [`client_config_for`] verifies
//! against the system's CAs, an operator's CA, or a pinned public key
//! ([`ServerTrust`]), and records what the server presented so that a refusal
//! can name the key it saw.

mod presented;
pub mod reloading;
mod server_trust;
mod verifiers;

pub use presented::{PinMismatch, Presented, PresentedCert};
pub use server_trust::{SYSTEM_CA_BUNDLE, ServerTrust, fetch_server_certificate, system_roots};
pub use verifiers::client_config_for;

use anyhow::{Context, Result};
use rustls::pki_types::CertificateDer;
use std::sync::Arc;
use std::time::Duration;

/// The crypto provider every TLS config uses.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Certificates (DER) from PEM text.
pub fn certs_from_pem(pem: &str) -> Result<Vec<CertificateDer<'static>>> {
    let mut out = Vec::new();
    let mut rest = pem.as_bytes();
    while let Ok((r, p)) = x509_parser::pem::parse_x509_pem(rest) {
        if p.label == "CERTIFICATE" {
            out.push(CertificateDer::from(p.contents));
        }
        rest = r;
        if rest.iter().all(|b| b.is_ascii_whitespace()) {
            break;
        }
    }
    anyhow::ensure!(!out.is_empty(), "no PEM certificate found");
    Ok(out)
}

/// A TLS server configuration presenting `cert_pem` (the leaf first, then
/// any intermediates) with its PKCS#8 `key_pem`; `what` names the server in
/// errors.
pub fn server_config(cert_pem: &str, key_pem: &str, what: &str) -> Result<rustls::ServerConfig> {
    let key = rcgen::KeyPair::from_pem(key_pem).with_context(|| format!("reading {what}'s key"))?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_no_client_auth()
        .with_single_cert(certs_from_pem(cert_pem)?, key)
        .with_context(|| format!("building {what}'s TLS configuration"))
}

/// A TLS client config that trusts exactly the CA certificates in `ca_pem`.
pub fn client_config_with_ca(ca_pem: &str) -> Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in certs_from_pem(ca_pem).context("reading the CA certificate")? {
        roots
            .add(c)
            .context("adding the CA certificate to the trust store")?;
    }
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// A blocking HTTP client with timeouts; TLS (when used) trusts `ca_pem`
/// only.
pub fn http_client(ca_pem: Option<&str>, timeout: Duration) -> Result<reqwest::blocking::Client> {
    http_client_from(ca_pem, timeout, None)
}

/// [`http_client`] whose connections leave from `local` (an address of
/// this host), when given: the scale harness's simulated hosts share a
/// carrier, each with its own address.
pub fn http_client_from(
    ca_pem: Option<&str>,
    timeout: Duration,
    local: Option<std::net::IpAddr>,
) -> Result<reqwest::blocking::Client> {
    let tls = match ca_pem {
        Some(pem) => client_config_with_ca(pem)?,
        None => rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth(),
    };
    blocking_client(tls, timeout, local)
}

/// A blocking HTTP client that checks no server certificate: only for
/// fetching what is then checked by other means (CA certificates against a
/// pin the operator gives).
pub fn unverified_http_client(timeout: Duration) -> Result<reqwest::blocking::Client> {
    blocking_client(
        client_config_for(&ServerTrust::Insecure, &Presented::default())?,
        timeout,
        None,
    )
}

fn blocking_client(
    tls: rustls::ClientConfig,
    timeout: Duration,
    local: Option<std::net::IpAddr>,
) -> Result<reqwest::blocking::Client> {
    reqwest::blocking::Client::builder()
        .use_preconfigured_tls(tls)
        .local_address(local)
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("dcn/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("building an HTTP client")
}
