//! Where the control plane's services get their certificates: the leaves
//! and CAs the secrets phase issued under /var/lib/dcn/pki.

use crate::deploy::CertSource;
use crate::host::Files;
use crate::paths;
use crate::secrets::Secret;
use anyhow::{Context as _, Result};

/// Certificates of the control plane: leaves and CA from /var/lib/dcn/pki.
pub struct PkiCerts;

impl CertSource for PkiCerts {
    fn leaf(&self, files: &Files, name: &str) -> Result<(String, Secret)> {
        if files.is_dry_run() && !files.exists(paths::leaf_cert(name))? {
            return Ok(("(issued by the secrets phase)".into(), Secret::new("")));
        }
        let cert = files
            .read_string(paths::leaf_cert(name))?
            .with_context(|| {
                format!(
                    "{} is missing; run `dcn standalone init --phase secrets`",
                    paths::leaf_cert(name)
                )
            })?;
        let key = files.read_secret(paths::leaf_key(name))?.with_context(|| {
            format!(
                "{} is missing; run `dcn standalone init --phase secrets`",
                paths::leaf_key(name)
            )
        })?;
        Ok((cert, Secret::new(key)))
    }

    /// Every CA the control plane's clients trust now (two while a CA
    /// rotation runs).
    fn ca(&self, files: &Files) -> Result<String> {
        if files.is_dry_run() && !files.exists(paths::CA_CERT)? {
            return Ok("(created by the secrets phase)".into());
        }
        crate::certs::authority::Authorities::new(files).trusted_pem()
    }
}
