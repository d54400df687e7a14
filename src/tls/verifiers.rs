//! The rustls certificate verifiers behind [`ServerTrust`]: rustls' own
//! chain and name checks, or one pinned key (or none), each recording what
//! the server presented; [`client_config_for`] picks one.

use super::presented::{PinMismatch, Presented};
use super::server_trust::{ServerTrust, system_roots};
use super::{certs_from_pem, provider};
use crate::pki::Pin;
use anyhow::{Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;

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
