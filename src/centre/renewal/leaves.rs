//! The control plane's own certificates (its TLS endpoints), kept in
//! `/var/lib/dcn/pki/<name>.crt` and `.key`: which there are, when one must
//! be issued again, and issuing it. `standalone init` issues them the first
//! time; `dcn cert renew` (its timer) renews them.

use crate::centre::control_plane::identity::Identity;
use crate::host::{FileSpec, Files};
use crate::paths;
use crate::pki::{CertInfo, CertificateAuthority, LeafRequest, Usage};
use anyhow::{Context, Result};
use std::time::{Duration, SystemTime};

/// The control plane's TLS endpoints, each with its own certificate.
pub const LEAVES: &[(&str, Usage, &str)] = &[
    ("api", Usage::Server, "OpenStack API endpoints"),
    ("rabbitmq", Usage::Server, "RabbitMQ TLS listener for edges"),
    (
        "ovn-sb",
        Usage::ServerAndClient,
        "OVN southbound database for edges",
    ),
    ("join", Usage::Server, "dcn join service"),
];

/// What each leaf is issued for, by name.
pub fn requests(identity: &Identity) -> Vec<(&'static str, &'static str, LeafRequest)> {
    LEAVES
        .iter()
        .map(|(name, usage, purpose)| {
            (
                *name,
                *purpose,
                LeafRequest {
                    common_name: format!("{} {}", identity.hostname, name),
                    dns_names: identity.dns_names.clone(),
                    ip_addresses: vec![identity.address],
                    usage: *usage,
                },
            )
        })
        .collect()
}

/// Why a certificate is issued (again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Missing,
    /// Its key and certificate do not belong together (a power cut
    /// between their writes).
    KeyMismatch,
    /// Another CA issued it (a CA rotation is finishing).
    OtherCa,
    Due,
    Expired,
    Forced,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(match self {
            Reason::Missing => "missing",
            Reason::KeyMismatch => "its key does not match it",
            Reason::OtherCa => "issued by the CA being retired",
            Reason::Due => "in its renewal window",
            Reason::Expired => "expired",
            Reason::Forced => "asked for",
        })
    }
}

/// Whether the leaf `name` must be issued by `signer` now, and why.
pub fn reason(
    files: &Files,
    name: &str,
    signer: &CertificateAuthority,
    renew_when_left: u8,
    now: SystemTime,
) -> Result<Option<Reason>> {
    let cert_path = paths::leaf_cert(name);
    let (Some(cert), Some(key)) = (
        files.read_string(&cert_path)?,
        files.read_secret(paths::leaf_key(name))?,
    ) else {
        return Ok(Some(Reason::Missing));
    };
    let info = CertInfo::from_pem(&cert).with_context(|| format!("reading {cert_path}"))?;
    let matches = rcgen::KeyPair::from_pem(&key)
        .is_ok_and(|k| k.public_key_raw() == info.spki_public_key.as_slice());
    if !matches {
        return Ok(Some(Reason::KeyMismatch));
    }
    if crate::pki::verify_issued_by(signer.cert_pem(), &cert).is_err() {
        return Ok(Some(Reason::OtherCa));
    }
    Ok(
        match crate::certs::policy::standing(&info, renew_when_left, now) {
            crate::certs::policy::Standing::Good { .. } => None,
            crate::certs::policy::Standing::Due => Some(Reason::Due),
            crate::certs::policy::Standing::Expired => Some(Reason::Expired),
        },
    )
}

/// Issue the leaf `name` with a fresh key, valid for `lifetime`: the key
/// is written first, so a cut between the two writes leaves a pair that
/// [`reason`] finds mismatched and issues again.
pub fn issue(
    files: &Files,
    name: &str,
    request: &LeafRequest,
    signer: &CertificateAuthority,
    lifetime: Duration,
) -> Result<CertInfo> {
    let issued = signer.issue_for(request, crate::pki::lifetime::validity(lifetime))?;
    files.write(
        paths::leaf_key(name),
        issued.key_pem.expose().as_bytes(),
        &FileSpec::secret(),
    )?;
    files.write(
        paths::leaf_cert(name),
        issued.cert_pem.as_bytes(),
        &FileSpec::secret(),
    )?;
    CertInfo::from_pem(&issued.cert_pem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> Identity {
        Identity {
            hostname: "cp.lab".into(),
            address: "10.0.0.1".parse().unwrap(),
            dns_names: vec!["cp.lab".into(), "cp".into()],
        }
    }

    #[test]
    fn a_leaf_is_issued_when_missing_mismatched_of_another_ca_or_due() {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        let ca = CertificateAuthority::generate("leaves test CA").unwrap();
        let (name, _, req) = requests(&id()).remove(0);
        let now = SystemTime::now();
        assert_eq!(
            reason(&files, name, &ca, 33, now).unwrap(),
            Some(Reason::Missing)
        );
        let info = issue(&files, name, &req, &ca, Duration::from_secs(600)).unwrap();
        assert_eq!(info.dns_names, ["cp.lab", "cp"]);
        assert_eq!(reason(&files, name, &ca, 33, now).unwrap(), None);
        // Half its life later, with renewal at a third left: not yet; at
        // 90 % left: due; after its end: expired.
        let later = now + Duration::from_secs(300);
        assert_eq!(reason(&files, name, &ca, 33, later).unwrap(), None);
        assert_eq!(
            reason(&files, name, &ca, 90, later).unwrap(),
            Some(Reason::Due)
        );
        let after = now + Duration::from_secs(601);
        assert_eq!(
            reason(&files, name, &ca, 33, after).unwrap(),
            Some(Reason::Expired)
        );

        // The CA that signs from now on did not issue it.
        let next = CertificateAuthority::generate("next CA").unwrap();
        assert_eq!(
            reason(&files, name, &next, 33, now).unwrap(),
            Some(Reason::OtherCa)
        );

        // A cut between the key's write and the certificate's.
        let other = ca.issue(&req).unwrap();
        files
            .write(
                paths::leaf_key(name),
                other.key_pem.expose().as_bytes(),
                &FileSpec::secret(),
            )
            .unwrap();
        assert_eq!(
            reason(&files, name, &ca, 33, now).unwrap(),
            Some(Reason::KeyMismatch)
        );
    }
}
