//! `dcn cert renew` on the control plane, run by its `dcn-cert-renew`
//! timer: issue again each of the control plane's certificates that is
//! due (or missing, mismatched, or from a CA being retired), put the CA
//! certificates its clients trust where they read them, install every
//! changed copy where a service reads it and tell that service, and drop
//! node CAs whose certificates expired from the OVN southbound's list.
//! Each run looks at the files themselves, so a run cut off by a power
//! loss is completed by the next.

use super::leaves::{self, Reason};
use crate::centre::control_plane::identity::Identity;
use crate::certs::authority::Authorities;
use crate::certs::install::{Installed, install};
use crate::certs::policy::Policy;
use crate::deployment::{Deployment, saved_config};
use crate::host::lock::FileLock;
use crate::host::{FileSpec, Host};
use crate::paths::PUBLIC_CA;
use crate::pki::CertInfo;
use crate::recipes::Recipes;
use anyhow::{Context, Result};
use std::time::SystemTime;

/// Held while the control plane's certificates or CAs change (renewal,
/// rotation, restore), so two never interleave.
pub const PKI_LOCK: &str = "/var/lib/dcn/pki.lock";

/// What a run did.
#[derive(Debug, Default)]
pub struct Renewal {
    /// Each certificate issued, why, and what it is now.
    pub issued: Vec<(String, Reason, CertInfo)>,
    /// Whether the file of trusted CAs changed.
    pub trust_changed: bool,
    /// Services whose certificate copies changed, and what they were told.
    pub installed: Vec<Installed>,
}

/// The control plane's identity as its certificates name it: the names
/// `standalone init` used, from the saved config and this host's record.
pub fn identity(host: &Host) -> Result<(Deployment, Identity, Policy)> {
    let deployment = Deployment::load(&host.files)?
        .filter(|d| d.roles.iter().any(|r| r == "controller"))
        .context("this host is not a dcn control plane: run `dcn standalone init` first")?;
    let mut config = saved_config(&host.files)?;
    config.control_plane.hostname = Some(
        deployment
            .hostname
            .parse()
            .map_err(|e| anyhow::anyhow!("the recorded host name: {e}"))?,
    );
    config.control_plane.address = Some(
        deployment
            .address
            .parse()
            .context("the recorded address of the control plane")?,
    );
    let policy = Policy::from(&config.certificates);
    let id = Identity::resolve(&config, host.files.root())?;
    Ok((deployment, id, policy))
}

/// Renew what is due (everything with `force`), then bring every copy up
/// to date.
pub fn renew(recipes: &Recipes, host: &Host, force: bool) -> Result<Renewal> {
    let _lock = FileLock::wait(&host.files, PKI_LOCK)?;
    renew_locked(recipes, host, force)
}

/// [`renew`], for a caller that holds [`PKI_LOCK`].
pub(super) fn renew_locked(recipes: &Recipes, host: &Host, force: bool) -> Result<Renewal> {
    let (deployment, id, policy) = identity(host)?;
    let files = &host.files;
    let authorities = Authorities::new(files);
    let signer = authorities.leaf_signer()?;
    let now = SystemTime::now();
    let mut run = Renewal::default();
    for (name, _, request) in leaves::requests(&id) {
        let why = match leaves::reason(files, name, &signer, policy.renew_when_left, now)? {
            Some(why) => why,
            None if force => Reason::Forced,
            None => continue,
        };
        let info = leaves::issue(files, name, &request, &signer, policy.control_plane)
            .with_context(|| format!("issuing the {name} certificate"))?;
        tracing::info!(
            "renewed the {name} certificate ({why}): serial {}, valid until {}",
            info.serial,
            info.not_after
        );
        run.issued.push((name.to_string(), why, info));
    }
    let trusted = authorities.trusted_pem()?;
    run.trust_changed = files
        .write(PUBLIC_CA, trusted.as_bytes(), &FileSpec::public())?
        .changed();
    run.installed = install(
        host,
        recipes,
        &deployment,
        &crate::centre::control_plane::pki_certs::PkiCerts,
    )?;
    // Nodes whose previous certificates expired are not admitted by
    // those any more (the list is rewritten only when it changes).
    crate::centre::sites::southbound_members::admit(files)?;
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Files, RecordingRunner};
    use crate::pki::CertificateAuthority;
    use std::sync::Arc;

    /// A control plane's state in a temporary root: its record, its saved
    /// config (certificates of `lifetime`), users, and its CA.
    fn control_plane(lifetime: &str) -> (tempfile::TempDir, Host, Arc<RecordingRunner>) {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        let put = |p: &str, t: &str| files.write(p, t.as_bytes(), &FileSpec::secret()).unwrap();
        put(
            "/etc/passwd",
            "root:x:0:0::/root:/bin/sh\nrabbitmq:x:120:120::/:/bin/false\n",
        );
        put("/etc/group", "root:x:0:\nrabbitmq:x:120:\n");
        put(
            crate::deployment::DEPLOYMENT_FILE,
            r#"{"roles":["controller"],"services":["api-proxy","rabbitmq","ovn-central","join-service"],"hostname":"cp","address":"10.0.0.1"}"#,
        );
        put(
            crate::deployment::CONFIG_FILE,
            &format!(
                "apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\ncontrolPlane:\n  hostname: cp\n  address: 10.0.0.1\ncertificates:\n  controlPlaneLifetime: {lifetime}\n  renewWhenLeft: 33%\n"
            ),
        );
        let ca = CertificateAuthority::generate("renew test CA").unwrap();
        put(crate::paths::CA_CERT, ca.cert_pem());
        put(crate::paths::CA_KEY, ca.key_pem().expose());
        let runner = Arc::new(RecordingRunner::default());
        let host = Host::with_runner(root.path(), runner.clone(), false);
        (root, host, runner)
    }

    #[test]
    fn missing_due_and_half_written_certificates_are_issued_and_installed_once() {
        let (_root, host, runner) = control_plane("3m");
        // First run: every certificate is missing.
        let run = renew(crate::recipes::for_tests(), &host, false).unwrap();
        let names: Vec<&str> = run.issued.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(names, ["api", "rabbitmq", "ovn-sb", "join"]);
        assert!(run.issued.iter().all(|(_, why, _)| *why == Reason::Missing));
        assert!(run.trust_changed);
        assert_eq!(run.installed.len(), 3, "{:?}", run.installed);
        let api = host
            .files
            .read_string("/etc/haproxy/dcn/api.pem")
            .unwrap()
            .unwrap();
        assert_eq!(
            api,
            host.files
                .read_string(crate::paths::leaf_cert("api"))
                .unwrap()
                .unwrap()
        );

        // Nothing due: nothing issued, written or told.
        let calls = runner.calls().len();
        let run = renew(crate::recipes::for_tests(), &host, false).unwrap();
        assert!(run.issued.is_empty() && run.installed.is_empty() && !run.trust_changed);
        assert_eq!(runner.calls().len(), calls);

        // A power cut between a renewal's two writes: the next run issues
        // that one again, and its service gets the matching pair.
        let other = Authorities::new(&host.files)
            .current()
            .unwrap()
            .issue(&crate::pki::LeafRequest {
                common_name: "x".into(),
                dns_names: vec!["cp".into()],
                ip_addresses: vec![],
                usage: crate::pki::Usage::Server,
            })
            .unwrap();
        (host.files)
            .write(
                crate::paths::leaf_key("rabbitmq"),
                other.key_pem.expose().as_bytes(),
                &FileSpec::secret(),
            )
            .unwrap();
        let run = renew(crate::recipes::for_tests(), &host, false).unwrap();
        assert_eq!(run.issued.len(), 1);
        assert_eq!(
            (run.issued[0].0.as_str(), run.issued[0].1),
            ("rabbitmq", Reason::KeyMismatch)
        );
        assert_eq!(
            run.installed
                .iter()
                .map(|i| i.leaf.as_str())
                .collect::<Vec<_>>(),
            ["rabbitmq"]
        );

        // --force renews what is not due. (When one is due at a later
        // time: certs::leaves' tests.)
        let run = renew(crate::recipes::for_tests(), &host, true).unwrap();
        assert!(run.issued.iter().all(|(_, why, _)| *why == Reason::Forced));
    }
}
