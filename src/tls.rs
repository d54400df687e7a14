//! rustls configurations, all with the ring provider: a client that trusts
//! given CA certificates (the dcn CA, an operator's `--bmc-ca`) and reqwest
//! clients built on it. No system trust store is read unless asked for.
//!
//! For servers dcn does not run (a BMC), [`client_config_for`] verifies
//! against the system's CAs, an operator's CA, or a pinned public key
//! ([`ServerTrust`]), and records what the server presented so that a refusal
//! can name the key it saw.

use crate::pki::Pin;
use anyhow::{Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::{Arc, Mutex};
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
    let tls = match ca_pem {
        Some(pem) => client_config_with_ca(pem)?,
        None => rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth(),
    };
    reqwest::blocking::Client::builder()
        .use_preconfigured_tls(tls)
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("dcn/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("building an HTTP client")
}

// ---------------------------------------------------------------------------
// Trust for servers dcn does not run (a BMC): the system's CAs, an operator's
// CA, a pinned public key, or nothing at all.

/// Where the system's CA bundle is (Debian's `ca-certificates`); the
/// `SSL_CERT_FILE` environment variable overrides it, as for OpenSSL.
pub const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// How a TLS server's certificate is checked.
#[derive(Debug, Clone)]
pub enum ServerTrust {
    /// Chains to a CA of the system's bundle and names the host.
    SystemRoots,
    /// Chains to one of these CA certificates (PEM) and names the host.
    Ca(String),
    /// The end-entity certificate's SubjectPublicKeyInfo hashes to this pin;
    /// names and dates are not checked (the key is the identity, as with an
    /// SSH host key: BMC certificates are self-signed and often name nothing
    /// useful).
    Pin(Pin),
    /// Anything: no protection against a machine in the middle.
    Insecure,
}

/// What the server presented in the last handshake, kept by the verifier so
/// that an error can name the key of a refused server.
#[derive(Debug, Clone, Default)]
pub struct Presented(Arc<Mutex<Option<PresentedCert>>>);

/// The server's end-entity certificate and the verdict on it.
#[derive(Debug, Clone)]
pub struct PresentedCert {
    /// DER of the end-entity certificate.
    pub der: Vec<u8>,
    /// Its public-key pin; `None` when the certificate does not parse.
    pub pin: Option<Pin>,
    /// Why it was refused; `None` when it was accepted.
    pub refused: Option<String>,
}

impl Presented {
    /// The last certificate seen, if a handshake got that far.
    pub fn last(&self) -> Option<PresentedCert> {
        self.0.lock().unwrap().clone()
    }

    fn record(&self, der: &[u8], refused: Option<String>) {
        *self.0.lock().unwrap() = Some(PresentedCert {
            der: der.to_vec(),
            pin: Pin::of_cert_der(der).ok(),
            refused,
        });
    }
}

/// The server's key is not the pinned one.
#[derive(Debug, thiserror::Error)]
#[error("the server's public key is {presented}, not the pinned {expected}")]
pub struct PinMismatch {
    pub expected: Pin,
    pub presented: Pin,
}

/// The CA certificates of the system bundle ([`SYSTEM_CA_BUNDLE`] or
/// `$SSL_CERT_FILE`). Certificates that do not parse are skipped, as
/// OpenSSL does.
pub fn system_roots() -> Result<rustls::RootCertStore> {
    let path = std::env::var_os("SSL_CERT_FILE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| SYSTEM_CA_BUNDLE.into());
    let pem = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading the system CA bundle {}: install the ca-certificates package, or name the CA to trust",
            path.display()
        )
    })?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(certs_from_pem(&pem)?);
    anyhow::ensure!(
        added > 0,
        "{} holds no usable CA certificate",
        path.display()
    );
    Ok(roots)
}

/// A TLS client config for `trust`; the verifier records what the server
/// presents into `presented`.
pub fn client_config_for(
    trust: &ServerTrust,
    presented: &Presented,
) -> Result<rustls::ClientConfig> {
    let verifier: Arc<dyn ServerCertVerifier> = match trust {
        ServerTrust::SystemRoots => Arc::new(Observing::webpki(system_roots()?, presented)?),
        ServerTrust::Ca(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in certs_from_pem(pem).context("reading the CA certificate")? {
                roots
                    .add(c)
                    .context("adding the CA certificate to the trust store")?;
            }
            Arc::new(Observing::webpki(roots, presented)?)
        }
        ServerTrust::Pin(pin) => Arc::new(PinnedKey {
            pin: Some(pin.clone()),
            presented: presented.clone(),
            provider: provider(),
        }),
        ServerTrust::Insecure => Arc::new(PinnedKey {
            pin: None,
            presented: presented.clone(),
            provider: provider(),
        }),
    };
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// Connect to `host:port`, complete a TLS handshake without trusting
/// anything, and return the server's end-entity certificate (DER). For
/// showing an operator the pin of what a server presents.
pub fn fetch_server_certificate(host: &str, port: u16, timeout: Duration) -> Result<Vec<u8>> {
    use std::net::ToSocketAddrs;
    let presented = Presented::default();
    let config = client_config_for(&ServerTrust::Insecure, &presented)?;
    let name = ServerName::try_from(host.to_string())
        .with_context(|| format!("{host:?} is not a host name or an IP address"))?;
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("resolving {host}"))?
        .collect();
    let mut last_err = None;
    let mut tcp = None;
    for addr in &addrs {
        match std::net::TcpStream::connect_timeout(addr, timeout) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last_err = Some(e),
        }
    }
    let mut tcp = match (tcp, last_err) {
        (Some(s), _) => s,
        (None, Some(e)) => {
            return Err(e).with_context(|| format!("connecting to {host} port {port}"));
        }
        (None, None) => anyhow::bail!("{host} resolves to no address"),
    };
    tcp.set_read_timeout(Some(timeout))?;
    tcp.set_write_timeout(Some(timeout))?;
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name)
        .context("starting a TLS handshake")?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp)
            .with_context(|| format!("TLS handshake with {host} port {port}"))?;
    }
    conn.send_close_notify();
    let _ = conn.complete_io(&mut tcp);
    presented
        .last()
        .map(|p| p.der)
        .with_context(|| format!("{host} port {port} presented no certificate"))
}

/// rustls' own chain and name checks, recording what it saw.
#[derive(Debug)]
struct Observing {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    presented: Presented,
}

impl Observing {
    fn webpki(roots: rustls::RootCertStore, presented: &Presented) -> Result<Observing> {
        let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            provider(),
        )
        .build()
        .context("building the certificate verifier")?;
        Ok(Observing {
            inner,
            presented: presented.clone(),
        })
    }
}

impl ServerCertVerifier for Observing {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verdict =
            self.inner
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now);
        self.presented
            .record(end_entity, verdict.as_ref().err().map(refusal_in_words));
        verdict
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Why a certificate was refused, for an operator.
fn refusal_in_words(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    let rustls::Error::InvalidCertificate(c) = e else {
        return e.to_string();
    };
    match c {
        C::UnknownIssuer => "no trusted CA issued it".into(),
        C::Expired | C::ExpiredContext { .. } => "it has expired".into(),
        C::NotValidYet | C::NotValidYetContext { .. } => "it is not valid yet".into(),
        C::NotValidForName | C::NotValidForNameContext { .. } => {
            "it is not issued for this host name or address".into()
        }
        C::BadSignature => "its signature does not verify".into(),
        C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
            "it is not meant for a TLS server".into()
        }
        // webpki's CaUsedAsEndEntity: a self-signed certificate marked as
        // a CA, as many BMCs make for themselves.
        C::Other(o) if format!("{o:?}").contains("CaUsedAsEndEntity") => {
            "it is a self-signed CA certificate, which cannot also be the server's own".into()
        }
        other => format!("{other:?}"),
    }
}

/// Accepts exactly one public key, or with no pin (`--insecure`) any,
/// recording what was presented. The handshake signature is still checked
/// against the presented key, so a server that only replays a certificate
/// fails.
#[derive(Debug)]
struct PinnedKey {
    pin: Option<Pin>,
    presented: Presented,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for PinnedKey {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Ok(presented) = Pin::of_cert_der(end_entity) else {
            self.presented
                .record(end_entity, Some("the certificate does not parse".into()));
            return Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::BadEncoding,
            ));
        };
        let Some(expected) = self.pin.clone().filter(|p| *p != presented) else {
            self.presented.record(end_entity, None);
            return Ok(ServerCertVerified::assertion());
        };
        let mismatch = PinMismatch {
            expected,
            presented,
        };
        self.presented
            .record(end_entity, Some(mismatch.to_string()));
        Err(rustls::Error::InvalidCertificate(
            rustls::CertificateError::Other(rustls::OtherError(Arc::new(mismatch))),
        ))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::{CertificateAuthority, LeafRequest, Usage};
    use std::net::{TcpListener, TcpStream};

    /// A TLS server on 127.0.0.1 that presents `cert_pem` for one
    /// handshake, with only `version`.
    fn server(
        cert_pem: &str,
        key_pem: &str,
        version: &'static rustls::SupportedProtocolVersion,
    ) -> u16 {
        let cert = CertificateDer::from(crate::pki::pem_der(cert_pem).unwrap());
        let (_, key) = x509_parser::pem::parse_x509_pem(key_pem.as_bytes()).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.contents.into());
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[version])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut tcp, _) = listener.accept().unwrap();
            let mut conn = rustls::ServerConnection::new(Arc::new(config)).unwrap();
            while conn.is_handshaking() {
                if conn.complete_io(&mut tcp).is_err() {
                    return;
                }
            }
        });
        port
    }

    fn handshake(port: u16, trust: &ServerTrust) -> (Result<(), String>, Presented) {
        let presented = Presented::default();
        let config = client_config_for(trust, &presented).unwrap();
        let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut conn =
            rustls::ClientConnection::new(Arc::new(config), "127.0.0.1".try_into().unwrap())
                .unwrap();
        let mut result = Ok(());
        while conn.is_handshaking() {
            if let Err(e) = conn.complete_io(&mut tcp) {
                result = Err(e.to_string());
                break;
            }
        }
        (result, presented)
    }

    /// Like most BMCs: a self-signed certificate that is its own CA.
    fn self_signed() -> CertificateAuthority {
        CertificateAuthority::generate("bmc.example").unwrap()
    }

    #[test]
    fn a_pinned_self_signed_key_is_accepted_over_tls12_and_tls13() {
        let bmc = self_signed();
        for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
            let port = server(bmc.cert_pem(), bmc.key_pem().expose(), version);
            let (result, presented) = handshake(port, &ServerTrust::Pin(bmc.pin()));
            assert_eq!(result, Ok(()), "{version:?}");
            let seen = presented.last().unwrap();
            assert_eq!(seen.pin, Some(bmc.pin()));
            assert!(seen.refused.is_none());
        }
    }

    #[test]
    fn another_key_is_refused_and_named() {
        let bmc = self_signed();
        let pinned = self_signed().pin();
        let port = server(
            bmc.cert_pem(),
            bmc.key_pem().expose(),
            &rustls::version::TLS12,
        );
        let (result, presented) = handshake(port, &ServerTrust::Pin(pinned.clone()));
        assert!(result.is_err());
        let seen = presented.last().unwrap();
        assert_eq!(
            seen.refused.unwrap(),
            format!(
                "the server's public key is {}, not the pinned {pinned}",
                bmc.pin()
            )
        );
    }

    #[test]
    fn ca_trust_checks_chain_and_name_and_says_why_in_words() {
        let ca = CertificateAuthority::generate("bmc CA").unwrap();
        let leaf = ca
            .issue(&LeafRequest {
                common_name: "bmc".into(),
                dns_names: vec![],
                ip_addresses: vec!["127.0.0.1".parse().unwrap()],
                usage: Usage::Server,
            })
            .unwrap();
        let port = server(
            &leaf.cert_pem,
            leaf.key_pem.expose(),
            &rustls::version::TLS13,
        );
        let (result, _) = handshake(port, &ServerTrust::Ca(ca.cert_pem().into()));
        assert_eq!(result, Ok(()));

        let other = CertificateAuthority::generate("other CA").unwrap();
        let port = server(
            &leaf.cert_pem,
            leaf.key_pem.expose(),
            &rustls::version::TLS13,
        );
        let (result, presented) = handshake(port, &ServerTrust::Ca(other.cert_pem().into()));
        assert!(result.is_err());
        assert_eq!(
            presented.last().unwrap().refused.unwrap(),
            "no trusted CA issued it"
        );

        // A self-signed BMC certificate added as a "CA" still fails: it is
        // why --bmc-pin exists.
        let bmc = self_signed();
        let port = server(
            bmc.cert_pem(),
            bmc.key_pem().expose(),
            &rustls::version::TLS13,
        );
        let (result, presented) = handshake(port, &ServerTrust::Ca(bmc.cert_pem().into()));
        assert!(result.is_err());
        assert!(
            presented
                .last()
                .unwrap()
                .refused
                .unwrap()
                .contains("self-signed CA certificate"),
        );
    }

    #[test]
    fn fetching_the_certificate_trusts_nothing_and_returns_it() {
        let bmc = self_signed();
        let port = server(
            bmc.cert_pem(),
            bmc.key_pem().expose(),
            &rustls::version::TLS12,
        );
        let der = fetch_server_certificate("127.0.0.1", port, Duration::from_secs(10)).unwrap();
        assert_eq!(der, crate::pki::pem_der(bmc.cert_pem()).unwrap());
        assert_eq!(Pin::of_cert_der(&der).unwrap(), bmc.pin());
    }
}
