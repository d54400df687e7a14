//! Trust for servers dcn does not run (a BMC): the system's CAs, an
//! operator's CA, a pinned public key, or nothing at all ([`ServerTrust`]);
//! and fetching the certificate a server presents.

use super::certs_from_pem;
use super::presented::Presented;
use super::verifiers::client_config_for;
use crate::pki::Pin;
use anyhow::{Context, Result};
use rustls::pki_types::ServerName;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// The CA certificates of the system bundle ([`SYSTEM_CA_BUNDLE`] or
/// `$SSL_CERT_FILE`). Certificates that do not parse are skipped, as
/// OpenSSL does.
pub fn system_roots() -> Result<rustls::RootCertStore> {
    let path = std::env::var_os("SSL_CERT_FILE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| SYSTEM_CA_BUNDLE.into());
    let spec = crate::host::read::ReadSpec::up_to(crate::host::read::MAX_PEM);
    let pem = crate::host::read::read_string(&path, &spec).context(
        "reading the system CA bundle: install the ca-certificates package, or name the CA to trust",
    )?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(certs_from_pem(&pem)?);
    anyhow::ensure!(
        added > 0,
        "{} holds no usable CA certificate",
        path.display()
    );
    Ok(roots)
}

/// Connect to `host:port`, complete a TLS handshake without trusting
/// anything, and return the server's end-entity certificate (DER). For
/// showing an operator the pin of what a server presents. `timeout` bounds
/// all of it: a server that sends its handshake a byte at a time is
/// abandoned then, not once per byte.
pub fn fetch_server_certificate(host: &str, port: u16, timeout: Duration) -> Result<Vec<u8>> {
    let deadline = Instant::now() + timeout;
    let left = || deadline.saturating_duration_since(Instant::now());
    let presented = Presented::default();
    let config = client_config_for(&ServerTrust::Insecure, &presented)?;
    let name = ServerName::try_from(host.to_string())
        .with_context(|| format!("{host:?} is not a host name or an IP address"))?;
    let mut tcp = connect(host, port, deadline)?;
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name)
        .context("starting a TLS handshake")?;
    let slow = || {
        anyhow::anyhow!(
            "{host} port {port} did not complete its TLS handshake within {}s in all; a server this slow is overloaded, faulty or not the BMC: check it, or raise --timeout if it is only slow",
            timeout.as_secs()
        )
    };
    // One read or write at a time (rustls's complete_io would keep reading
    // a trickle for ever), each given only the time left.
    while conn.is_handshaking() {
        let now_left = left();
        if now_left.is_zero() {
            return Err(slow());
        }
        tcp.set_read_timeout(Some(now_left))?;
        tcp.set_write_timeout(Some(now_left))?;
        match handshake_step(&mut conn, &mut tcp) {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(slow());
            }
            Err(e) => {
                return Err(e).with_context(|| format!("TLS handshake with {host} port {port}"));
            }
        }
    }
    conn.send_close_notify();
    tcp.set_write_timeout(Some(left().max(Duration::from_millis(100))))?;
    let _ = conn.write_tls(&mut tcp);
    presented
        .last()
        .map(|p| p.der)
        .with_context(|| format!("{host} port {port} presented no certificate"))
}

/// A TCP connection to the first of `host`'s addresses that takes one
/// before `deadline`.
fn connect(host: &str, port: u16, deadline: Instant) -> Result<std::net::TcpStream> {
    use std::net::ToSocketAddrs;
    let left = || deadline.saturating_duration_since(Instant::now());
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("resolving {host}"))?
        .collect();
    let mut last_err = None;
    for addr in &addrs {
        if left().is_zero() {
            break;
        }
        match std::net::TcpStream::connect_timeout(addr, left()) {
            Ok(s) => return Ok(s),
            Err(e) => last_err = Some(e),
        }
    }
    match last_err {
        Some(e) => Err(e).with_context(|| format!("connecting to {host} port {port}")),
        None => anyhow::bail!("{host} resolves to no address"),
    }
}

/// One write or one read of the handshake.
fn handshake_step(
    conn: &mut rustls::ClientConnection,
    tcp: &mut std::net::TcpStream,
) -> std::io::Result<()> {
    if conn.wants_write() {
        return conn.write_tls(tcp).map(|_| ());
    }
    match conn.read_tls(tcp) {
        Ok(0) => Err(std::io::ErrorKind::UnexpectedEof.into()),
        Ok(_) => conn
            .process_new_packets()
            .map(|_| ())
            .map_err(std::io::Error::other),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::{CertificateAuthority, LeafRequest, Usage};
    use crate::tls::provider;
    use rustls::pki_types::CertificateDer;
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
