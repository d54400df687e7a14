//! The dcn certificate authority: CA creation, leaf certificates for the
//! control plane's TLS endpoints, CSR signing for joining nodes, detached
//! signatures (the join bundle's), and CA pins.
//!
//! Keys are ECDSA P-256. The CA pin is kubeadm's definition:
//! `sha256:` + hex of the SHA-256 of the CA certificate's DER
//! SubjectPublicKeyInfo.

pub mod lifetime;
mod pin;

pub use pin::Pin;

use crate::secrets::Secret;
use anyhow::{Context, Result, bail};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use ring::signature::{ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
use std::net::IpAddr;
use time::{Duration, OffsetDateTime};

/// How long the CA is valid: 10 years.
pub const CA_VALIDITY: Duration = Duration::days(3650);
/// How long a leaf certificate is valid when its issuer names no lifetime
/// (the lab's BMC certificates, tests): 2 years. The control plane's and
/// the nodes' follow `certificates:` in the config.
pub const LEAF_VALIDITY: Duration = Duration::days(730);
/// Certificates start up to an hour in the past so a node whose clock is
/// slightly behind the control plane's still accepts them; a tenth of the
/// lifetime for short ones (a lab drilling renewal in minutes).
const BACKDATE: Duration = Duration::hours(1);

fn backdate(validity: Duration) -> Duration {
    BACKDATE.min(validity / 10)
}

/// The CA: its certificate (public) and private key (secret).
pub struct CertificateAuthority {
    cert_pem: String,
    key_pem: Secret,
}

/// What a leaf certificate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    /// A TLS server (API endpoint, RabbitMQ, OVN SB, join service).
    Server,
    /// A TLS client (a node's OVN controller).
    Client,
    /// Both (OVN peers that connect and listen).
    ServerAndClient,
}

/// A request for a leaf certificate.
#[derive(Debug, Clone)]
pub struct LeafRequest {
    pub common_name: String,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<IpAddr>,
    pub usage: Usage,
}

/// A certificate with its private key (PEM).
pub struct IssuedCert {
    pub cert_pem: String,
    pub key_pem: Secret,
}

impl CertificateAuthority {
    /// Create a new CA named `common_name`, valid from an hour ago for
    /// [`CA_VALIDITY`].
    pub fn generate(common_name: &str) -> Result<Self> {
        Self::generate_for(common_name, CA_VALIDITY)
    }

    /// Create a new CA named `common_name`, valid for `validity`.
    pub fn generate_for(common_name: &str, validity: Duration) -> Result<Self> {
        let now = OffsetDateTime::now_utc();
        Self::generate_valid(common_name, now - backdate(validity), now + validity)
    }

    /// Create a new CA named `common_name`, valid from `not_before` to
    /// `not_after` (tests make expired and future CAs with it).
    pub fn generate_valid(
        common_name: &str,
        not_before: OffsetDateTime,
        not_after: OffsetDateTime,
    ) -> Result<Self> {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .context("generating the CA key")?;
        let mut params = CertificateParams::default();
        params.distinguished_name = name(common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before = not_before;
        params.not_after = not_after;
        params.serial_number = Some(random_serial());
        let cert = params
            .self_signed(&key)
            .context("self-signing the CA certificate")?;
        Ok(CertificateAuthority {
            cert_pem: cert.pem(),
            key_pem: Secret::new(key.serialize_pem()),
        })
    }

    /// Load a CA from its certificate and key (both PEM).
    pub fn load(cert_pem: &str, key_pem: &Secret) -> Result<Self> {
        let key = KeyPair::from_pem(key_pem.expose()).context("reading the CA private key")?;
        let info = CertInfo::from_pem(cert_pem).context("reading the CA certificate")?;
        if info.spki_public_key != key.public_key_raw() {
            bail!("the CA private key does not belong to the CA certificate");
        }
        Ok(CertificateAuthority {
            cert_pem: cert_pem.to_string(),
            key_pem: key_pem.clone(),
        })
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    pub fn key_pem(&self) -> &Secret {
        &self.key_pem
    }

    /// The CA pin (`sha256:<hex of SPKI digest>`).
    pub fn pin(&self) -> Pin {
        Pin::of_cert_pem(&self.cert_pem).expect("the CA certificate was parsed when it was loaded")
    }

    fn issuer(&self) -> Result<Issuer<'static, KeyPair>> {
        let key = KeyPair::from_pem(self.key_pem.expose()).context("reading the CA private key")?;
        Issuer::from_ca_cert_pem(&self.cert_pem, key).context("reading the CA certificate")
    }

    /// Issue a leaf certificate with a fresh key, valid for
    /// [`LEAF_VALIDITY`].
    pub fn issue(&self, req: &LeafRequest) -> Result<IssuedCert> {
        self.issue_for(req, LEAF_VALIDITY)
    }

    /// Issue a leaf certificate with a fresh key, valid for `validity`.
    pub fn issue_for(&self, req: &LeafRequest, validity: Duration) -> Result<IssuedCert> {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .with_context(|| format!("generating a key for {}", req.common_name))?;
        let params = leaf_params(req, validity)?;
        let cert = params
            .signed_by(&key, &self.issuer()?)
            .with_context(|| format!("signing the certificate for {}", req.common_name))?;
        Ok(IssuedCert {
            cert_pem: cert.pem(),
            key_pem: Secret::new(key.serialize_pem()),
        })
    }

    /// Sign a node's certificate signing request. The subject and names come
    /// from `req`, not from the CSR, so a node cannot ask for names it was
    /// not given; only the CSR's public key is used.
    pub fn sign_csr(&self, csr_pem: &str, req: &LeafRequest) -> Result<String> {
        self.sign_csr_for(csr_pem, req, LEAF_VALIDITY)
    }

    /// [`Self::sign_csr`], for a certificate valid for `validity`.
    pub fn sign_csr_for(
        &self,
        csr_pem: &str,
        req: &LeafRequest,
        validity: Duration,
    ) -> Result<String> {
        let csr = rcgen::CertificateSigningRequestParams::from_pem(csr_pem)
            .context("reading the certificate signing request")?;
        let params = leaf_params(req, validity)?;
        let cert = params
            .signed_by(&csr.public_key, &self.issuer()?)
            .with_context(|| format!("signing the certificate for {}", req.common_name))?;
        Ok(cert.pem())
    }

    /// A detached ECDSA P-256/SHA-256 signature (ASN.1 DER) over `data`.
    pub fn sign(&self, data: &[u8]) -> Result<Vec<u8>> {
        let key = KeyPair::from_pem(self.key_pem.expose()).context("reading the CA private key")?;
        let rng = ring::rand::SystemRandom::new();
        let signer =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, key.serialized_der(), &rng)
                .map_err(|e| anyhow::anyhow!("the CA key is not a P-256 key: {e}"))?;
        let sig = signer
            .sign(&rng, data)
            .map_err(|_| anyhow::anyhow!("signing failed"))?;
        Ok(sig.as_ref().to_vec())
    }
}

/// Check a detached signature made by [`CertificateAuthority::sign`] against
/// the CA certificate.
pub fn verify_signature(ca_cert_pem: &str, data: &[u8], signature: &[u8]) -> Result<()> {
    let info = CertInfo::from_pem(ca_cert_pem)?;
    ring::signature::UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &info.spki_public_key)
        .verify(data, signature)
        .map_err(|_| anyhow::anyhow!("the signature does not verify against the CA certificate"))
}

/// Check that `leaf_pem` was signed by the CA in `ca_cert_pem`.
pub fn verify_issued_by(ca_cert_pem: &str, leaf_pem: &str) -> Result<()> {
    let ca_der = pem_der(ca_cert_pem)?;
    let leaf_der = pem_der(leaf_pem)?;
    let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).context("parsing the CA")?;
    let (_, leaf) = x509_parser::parse_x509_certificate(&leaf_der).context("parsing the leaf")?;
    leaf.verify_signature(Some(ca.public_key()))
        .map_err(|e| anyhow::anyhow!("certificate was not issued by this CA: {e}"))
}

/// Facts read from a certificate.
#[derive(Debug, Clone)]
pub struct CertInfo {
    pub subject: String,
    pub issuer: String,
    /// The serial number, in hex.
    pub serial: String,
    pub not_before: OffsetDateTime,
    pub not_after: OffsetDateTime,
    /// Basic constraints say CA:TRUE.
    pub is_ca: bool,
    /// The key may sign certificates: the key usage extension lists
    /// keyCertSign, or there is none. A repeated extension counts as no.
    pub key_cert_sign: bool,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<IpAddr>,
    /// DER of the SubjectPublicKeyInfo.
    pub spki_der: Vec<u8>,
    /// The raw public key bits inside the SPKI.
    pub spki_public_key: Vec<u8>,
}

impl CertInfo {
    pub fn from_pem(pem: &str) -> Result<Self> {
        Self::from_der(&pem_der(pem)?)
    }

    pub fn from_der(der: &[u8]) -> Result<Self> {
        let (rest, cert) = x509_parser::parse_x509_certificate(der)
            .map_err(|e| anyhow::anyhow!("not an X.509 certificate: {e}"))?;
        if !rest.is_empty() {
            bail!("trailing data after the certificate");
        }
        let mut dns_names = Vec::new();
        let mut ip_addresses = Vec::new();
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            for n in &san.value.general_names {
                match n {
                    x509_parser::extensions::GeneralName::DNSName(d) => {
                        dns_names.push(d.to_string())
                    }
                    // Another length is no address: left out.
                    x509_parser::extensions::GeneralName::IPAddress(b) => {
                        if let Ok(v4) = <[u8; 4]>::try_from(*b) {
                            ip_addresses.push(IpAddr::from(v4));
                        } else if let Ok(v6) = <[u8; 16]>::try_from(*b) {
                            ip_addresses.push(IpAddr::from(v6));
                        }
                    }
                    _ => {}
                }
            }
        }
        let key_cert_sign = match cert.key_usage() {
            Ok(None) => true,
            Ok(Some(ku)) => ku.value.key_cert_sign(),
            Err(_) => false,
        };
        Ok(CertInfo {
            subject: cert.subject().to_string(),
            issuer: cert.issuer().to_string(),
            serial: hex::encode(cert.raw_serial()),
            not_before: cert.validity().not_before.to_datetime(),
            not_after: cert.validity().not_after.to_datetime(),
            is_ca: cert.is_ca(),
            key_cert_sign,
            dns_names,
            ip_addresses,
            spki_der: cert.tbs_certificate.subject_pki.raw.to_vec(),
            spki_public_key: cert
                .tbs_certificate
                .subject_pki
                .subject_public_key
                .data
                .to_vec(),
        })
    }
}

/// The DER of the first certificate in a PEM text.
pub fn pem_der(pem: &str) -> Result<Vec<u8>> {
    let (_, p) = x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .map_err(|e| anyhow::anyhow!("not a PEM certificate: {e}"))?;
    if p.label != "CERTIFICATE" {
        bail!("expected a PEM CERTIFICATE, found {}", p.label);
    }
    Ok(p.contents)
}

/// PEM certificates as one text, each ending in a newline.
pub fn join_pem(certs: &[String]) -> String {
    certs
        .iter()
        .map(|c| format!("{}\n", c.trim_end()))
        .collect()
}

/// The PEM certificates in a text, each on its own.
pub fn split_pem(text: &str) -> Vec<String> {
    const END: &str = "-----END CERTIFICATE-----";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN CERTIFICATE-----") {
        let Some(end) = rest[start..].find(END) else {
            break;
        };
        let stop = start + end + END.len();
        out.push(format!("{}\n", &rest[start..stop]));
        rest = &rest[stop..];
    }
    out
}

fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "dcn");
    dn.push(DnType::CommonName, common_name);
    dn
}

fn random_serial() -> rcgen::SerialNumber {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random number generator failed");
    bytes[0] &= 0x7f; // keep the serial positive
    rcgen::SerialNumber::from_slice(&bytes)
}

fn leaf_params(req: &LeafRequest, validity: Duration) -> Result<CertificateParams> {
    let mut params = CertificateParams::default();
    params.distinguished_name = name(&req.common_name);
    for d in &req.dns_names {
        params.subject_alt_names.push(SanType::DnsName(
            d.clone()
                .try_into()
                .with_context(|| format!("{d:?} is not a valid DNS name for a certificate"))?,
        ));
    }
    for ip in &req.ip_addresses {
        params.subject_alt_names.push(SanType::IpAddress(*ip));
    }
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = match req.usage {
        Usage::Server => vec![ExtendedKeyUsagePurpose::ServerAuth],
        Usage::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
        Usage::ServerAndClient => vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ],
    };
    params.use_authority_key_identifier_extension = true;
    let now = OffsetDateTime::now_utc();
    params.not_before = now - backdate(validity);
    params.not_after = now + validity;
    params.serial_number = Some(random_serial());
    Ok(params)
}

#[cfg(test)]
mod tests;
