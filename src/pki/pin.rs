//! CA pins: `sha256:<64 lowercase hex>` over the DER SubjectPublicKeyInfo.

use anyhow::{Result, bail};
use sha2::{Digest, Sha256};
use std::fmt;
use std::str::FromStr;

/// A public-key pin, as kubeadm's `--discovery-token-ca-cert-hash`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Pin([u8; 32]);

impl Pin {
    /// The pin of a DER SubjectPublicKeyInfo.
    pub fn of_spki_der(spki_der: &[u8]) -> Pin {
        Pin(Sha256::digest(spki_der).into())
    }

    /// The pin of the public key in a PEM certificate.
    pub fn of_cert_pem(pem: &str) -> Result<Pin> {
        Ok(Self::of_spki_der(&super::CertInfo::from_pem(pem)?.spki_der))
    }

    /// The pin of the public key in a DER certificate.
    pub fn of_cert_der(der: &[u8]) -> Result<Pin> {
        Ok(Self::of_spki_der(&super::CertInfo::from_der(der)?.spki_der))
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", hex::encode(self.0))
    }
}

impl fmt::Debug for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Pin {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Pin> {
        let Some(hexpart) = s.strip_prefix("sha256:") else {
            bail!("a pin must look like sha256:<64 hex digits>, got {s:?}");
        };
        let bytes = hex::decode(hexpart)
            .map_err(|_| anyhow::anyhow!("the pin {s:?} has characters that are not hex digits"))?;
        let Ok(arr) = <[u8; 32]>::try_from(bytes.as_slice()) else {
            bail!(
                "the pin {s:?} has {} hex digits; a SHA-256 pin has 64",
                hexpart.len()
            );
        };
        Ok(Pin(arr))
    }
}
