//! Putting renewed certificates (and a changed set of trusted CAs) where
//! this host's services read them, as their recipes say, and telling each
//! service whose files changed in the way its recipe declares (`onRenew`):
//! a reload that keeps connections, a command, or nothing for a service
//! that reads its files again by itself. A copy that already matches is
//! left alone, so running this on every check costs a few reads.

use crate::deploy::{CertSource, certificate_files};
use crate::deployment::Deployment;
use crate::host::systemd::Systemd;
use crate::host::{Cmd, Host};
use crate::recipes::{CertificateRecipe, OnRenew, Recipes};
use anyhow::Result;

/// A certificate whose copies changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub service: String,
    pub leaf: String,
    /// What the service was told (`reload dcn-api-proxy.service`, …).
    pub told: String,
}

/// The certificates the recipes of this host's services name, for its
/// roles.
pub fn host_certificates<'r>(
    recipes: &'r Recipes,
    deployment: &Deployment,
) -> Vec<(&'r str, &'r CertificateRecipe)> {
    let mut out = Vec::new();
    for name in &deployment.services {
        let Some(service) = recipes.services.get(name) else {
            continue;
        };
        for c in &service.certificates {
            if c.when_role
                .as_ref()
                .is_none_or(|r| deployment.roles.contains(r))
            {
                out.push((service.service.as_str(), c));
            }
        }
    }
    out
}

/// Write the copies of every certificate of this host from `source` that
/// differ, then tell their services.
pub fn install(
    host: &Host,
    recipes: &Recipes,
    deployment: &Deployment,
    source: &dyn CertSource,
) -> Result<Vec<Installed>> {
    let mut changed = Vec::new();
    for (service, c) in host_certificates(recipes, deployment) {
        let mut any = false;
        for (path, contents, spec) in certificate_files(c, source, &host.files)? {
            if host.files.write(&path, &contents, &spec)?.changed() {
                tracing::info!("    wrote {path}");
                any = true;
            }
        }
        if any {
            // The key last, and touched even when it is the same (a node
            // keeps its key): Open vSwitch's SSL code loads a new pair only
            // once the key file's time changed too, after the certificate's.
            host.files.touch(&c.key)?;
            changed.push((service, c));
        }
    }
    let mut out = Vec::new();
    for (service, c) in changed {
        let told = tell(host, service, &c.on_renew);
        out.push(Installed {
            service: service.to_string(),
            leaf: c.leaf.clone(),
            told,
        });
    }
    Ok(out)
}

/// Run what `on_renew` says; a service that is not running reads its
/// files when it starts, so a failure here is a warning, not an error.
fn tell(host: &Host, service: &str, on_renew: &OnRenew) -> String {
    if let Some(unit) = &on_renew.reload {
        if let Err(e) = Systemd::new(host.runner.as_ref()).try_reload_or_restart(unit) {
            tracing::warn!("{service} did not reload its new certificate: {e:#}");
        }
        return format!("reload {unit}");
    }
    if let Some(argv) = &on_renew.run
        && let Some((program, args)) = argv.split_first()
    {
        let cmd = Cmd::new(
            format!("telling {service} about its new certificate"),
            program.as_str(),
        )
        .args(args.iter().cloned())
        .unchecked();
        match host.runner.run(&cmd) {
            Ok(o) if o.success() => {}
            Ok(o) => tracing::warn!(
                "{service} did not take up its new certificate ({}): it will when it restarts",
                o.stderr.trim()
            ),
            Err(e) => tracing::warn!("{service} did not take up its new certificate: {e:#}"),
        }
        return on_renew
            .says
            .clone()
            .unwrap_or_else(|| format!("ran {program}"));
    }
    "nothing (it reads its files again)".into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Files, RecordingRunner};
    use crate::secrets::Secret;
    use std::sync::{Arc, Mutex};

    /// Certificates whose contents the test changes between runs.
    struct Source(Mutex<(String, String)>);

    impl CertSource for Source {
        fn leaf(&self, _: &Files, name: &str) -> Result<(String, Secret)> {
            let v = self.0.lock().unwrap();
            Ok((
                format!("{name} {}", v.0),
                Secret::new(format!("key {}", v.0)),
            ))
        }
        fn ca(&self, _: &Files) -> Result<String> {
            Ok(self.0.lock().unwrap().1.clone())
        }
    }

    fn control_plane() -> Deployment {
        let recipes = Recipes::embedded().unwrap();
        Deployment {
            roles: vec!["controller".into()],
            services: recipes
                .services_for_roles(&["controller"])
                .unwrap()
                .iter()
                .map(|s| s.service.clone())
                .collect(),
            hostname: "cp".into(),
            address: "10.0.0.1".into(),
            site: None,
        }
    }

    fn host() -> (tempfile::TempDir, Host, Arc<RecordingRunner>) {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("etc")).unwrap();
        std::fs::write(
            root.path().join("etc/passwd"),
            "root:x:0:0::/root:/bin/sh\nrabbitmq:x:120:120::/:/bin/false\n",
        )
        .unwrap();
        std::fs::write(
            root.path().join("etc/group"),
            "root:x:0:\nrabbitmq:x:120:\n",
        )
        .unwrap();
        let runner = Arc::new(RecordingRunner::default());
        let host = Host::with_runner(root.path(), runner.clone(), false);
        (root, host, runner)
    }

    #[test]
    fn only_changed_certificates_are_written_and_each_service_is_told_its_way() {
        let (_root, host, runner) = host();
        let recipes = Recipes::embedded().unwrap();
        let cp = control_plane();
        let source = Source(Mutex::new(("1".into(), "ca-1".into())));
        let first = install(&host, &recipes, &cp, &source).unwrap();
        let mut leaves: Vec<&str> = first.iter().map(|i| i.leaf.as_str()).collect();
        leaves.sort();
        assert_eq!(leaves, ["api", "ovn-sb", "rabbitmq"], "{first:?}");
        let api = first.iter().find(|i| i.leaf == "api").unwrap();
        assert_eq!(api.told, "replaced in the running haproxy");
        let calls = runner.command_lines().join("\n");
        assert!(calls.contains("set ssl cert"), "{calls}");
        assert!(
            calls.contains("rabbitmqctl eval") && calls.contains("clear_pem_cache"),
            "{calls}"
        );
        let pem = host
            .files
            .read_string("/etc/haproxy/dcn/api.pem")
            .unwrap()
            .unwrap();
        assert_eq!(pem, "api 1");

        // Nothing changed: nothing written, nobody told.
        let before = runner.calls().len();
        assert!(install(&host, &recipes, &cp, &source).unwrap().is_empty());
        assert_eq!(runner.calls().len(), before);

        // A new set of trusted CAs reaches every service's CA file.
        source.0.lock().unwrap().1 = "ca-1 ca-2".into();
        let again = install(&host, &recipes, &cp, &source).unwrap();
        assert_eq!(again.len(), 3, "{again:?}");
        assert_eq!(
            host.files
                .read_string("/etc/rabbitmq/ssl/ca.pem")
                .unwrap()
                .unwrap(),
            "ca-1 ca-2"
        );
    }

    /// Open vSwitch reloads its certificate only when the key file's time
    /// changed too: a renewed certificate for the same key touches the key.
    #[test]
    fn a_renewed_certificate_for_the_same_key_touches_the_key_after_it() {
        let (_root, host, _runner) = host();
        let recipes = Recipes::embedded().unwrap();
        let cp = control_plane();
        let source = Source(Mutex::new(("1".into(), "ca".into())));
        install(&host, &recipes, &cp, &source).unwrap();
        let times = |p: &str| {
            std::fs::metadata(host.files.host_path(p).unwrap())
                .unwrap()
                .modified()
                .unwrap()
        };
        let key_before = times("/etc/ovn/dcn/ovn-sb.key");
        std::thread::sleep(std::time::Duration::from_millis(20));
        // The same key, another certificate (the test source gives the key
        // its own text only when the first field changes: keep it).
        struct SameKey;
        impl CertSource for SameKey {
            fn leaf(&self, _: &Files, name: &str) -> Result<(String, Secret)> {
                Ok((format!("{name} renewed"), Secret::new("key 1")))
            }
            fn ca(&self, _: &Files) -> Result<String> {
                Ok("ca".into())
            }
        }
        let done = install(&host, &recipes, &cp, &SameKey).unwrap();
        assert_eq!(done.len(), 3);
        let (cert, key) = (
            times("/etc/ovn/dcn/ovn-sb.pem"),
            times("/etc/ovn/dcn/ovn-sb.key"),
        );
        assert!(
            key > key_before && key >= cert,
            "the key was not touched after its certificate"
        );
        assert_eq!(
            host.files
                .read_string("/etc/ovn/dcn/ovn-sb.key")
                .unwrap()
                .unwrap(),
            "key 1"
        );
    }

    #[test]
    fn a_node_installs_its_own_certificate_only() {
        let (_root, host, _runner) = host();
        let recipes = Recipes::embedded().unwrap();
        let edge = Deployment {
            roles: vec!["edge".into()],
            services: recipes
                .services_for_roles(&["edge"])
                .unwrap()
                .iter()
                .map(|s| s.service.clone())
                .collect(),
            hostname: "n1".into(),
            address: "10.0.1.5".into(),
            site: Some("edge1".into()),
        };
        let certs: Vec<&str> = host_certificates(&recipes, &edge)
            .iter()
            .map(|(_, c)| c.leaf.as_str())
            .collect();
        assert_eq!(certs, ["node"]);
        let source = Source(Mutex::new(("1".into(), "ca".into())));
        let done = install(&host, &recipes, &edge, &source).unwrap();
        assert_eq!(done[0].told, "nothing (it reads its files again)");
        assert!(host.files.exists("/etc/ovn/dcn/node.pem").unwrap());
    }
}
