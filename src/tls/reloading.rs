//! A TLS server certificate read again when its files change: a renewed
//! certificate is used from the next handshake on, with no restart and no
//! dropped connection. A pair that does not load (a renewal caught
//! between its two writes) leaves the last good one in use.

use anyhow::{Context, Result};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The certificate in `cert` with the key in `key`, reloaded on change.
#[derive(Debug)]
pub struct ReloadingCert {
    cert: PathBuf,
    key: PathBuf,
    what: String,
    loaded: Mutex<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    stamps: (Option<SystemTime>, Option<SystemTime>),
    key: Arc<CertifiedKey>,
}

/// When `p` last changed: Files gives no file times, and a reload is
/// decided by this alone.
fn stamp(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

impl ReloadingCert {
    /// Load the pair now (an error if it does not load).
    pub fn new(cert: PathBuf, key: PathBuf, what: &str) -> Result<ReloadingCert> {
        let stamps = (stamp(&cert), stamp(&key));
        let certified = load(&cert, &key, what)?;
        Ok(ReloadingCert {
            cert,
            key,
            what: what.to_string(),
            loaded: Mutex::new(Loaded {
                stamps,
                key: certified,
            }),
        })
    }

    /// The pair to present now: loaded again when either file changed.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let stamps = (stamp(&self.cert), stamp(&self.key));
        if stamps != loaded.stamps {
            match load(&self.cert, &self.key, &self.what) {
                Ok(k) => {
                    tracing::info!("{}: loaded its renewed certificate", self.what);
                    *loaded = Loaded { stamps, key: k };
                }
                // Tried again at the next handshake (the stamps are kept).
                Err(e) => tracing::warn!("{}: keeping its certificate: {e:#}", self.what),
            }
        }
        loaded.key.clone()
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

fn load(cert: &Path, key: &Path, what: &str) -> Result<Arc<CertifiedKey>> {
    let spec = crate::host::read::ReadSpec::up_to(crate::host::read::MAX_SECRET);
    let cert_pem = crate::host::read::read_string(cert, &spec)
        .with_context(|| format!("reading {what}'s certificate {}", cert.display()))?;
    let key_pem = crate::host::read::read_string(key, &spec)
        .with_context(|| format!("reading {what}'s key {}", key.display()))?;
    let pair =
        rcgen::KeyPair::from_pem(&key_pem).with_context(|| format!("reading {what}'s key"))?;
    let der = rustls::pki_types::PrivateKeyDer::Pkcs8(pair.serialize_der().into());
    let signing = super::provider()
        .key_provider
        .load_private_key(der)
        .with_context(|| format!("loading {what}'s key"))?;
    let certified = CertifiedKey::new(super::certs_from_pem(&cert_pem)?, signing);
    certified
        .keys_match()
        .with_context(|| format!("{what}'s key does not belong to its certificate"))?;
    Ok(Arc::new(certified))
}

/// A server configuration presenting the pair in `cert` and `key`,
/// reloaded when they change.
pub fn server_config(cert: PathBuf, key: PathBuf, what: &str) -> Result<rustls::ServerConfig> {
    let resolver = ReloadingCert::new(cert, key, what)?;
    Ok(
        rustls::ServerConfig::builder_with_provider(super::provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(resolver)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::{CertificateAuthority, LeafRequest, Usage};

    fn issue(ca: &CertificateAuthority) -> crate::pki::IssuedCert {
        ca.issue(&LeafRequest {
            common_name: "join".into(),
            dns_names: vec!["cp".into()],
            ip_addresses: vec![],
            usage: Usage::Server,
        })
        .unwrap()
    }

    #[test]
    fn a_renewed_pair_is_presented_and_a_half_written_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("join.crt"), dir.path().join("join.key"));
        let ca = CertificateAuthority::generate("reload test CA").unwrap();
        let first = issue(&ca);
        std::fs::write(&cert, &first.cert_pem).unwrap();
        std::fs::write(&key, first.key_pem.expose()).unwrap();
        let r = ReloadingCert::new(cert.clone(), key.clone(), "test").unwrap();
        let serial = |k: &CertifiedKey| {
            crate::pki::CertInfo::from_der(k.cert[0].as_ref())
                .unwrap()
                .serial
        };
        let s1 = serial(&r.current());

        // The key of the next pair is written, not yet its certificate:
        // the old pair stays.
        let second = issue(&ca);
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&key, second.key_pem.expose()).unwrap();
        assert_eq!(serial(&r.current()), s1);
        std::fs::write(&cert, &second.cert_pem).unwrap();
        let s2 = serial(&r.current());
        assert_ne!(s1, s2);
        assert_eq!(
            s2,
            crate::pki::CertInfo::from_pem(&second.cert_pem)
                .unwrap()
                .serial
        );
    }
}
