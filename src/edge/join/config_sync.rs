//! `dcn node sync-config`, run on a joined edge by its `dcn-config-sync`
//! timer: fetch this node's resolved site config from the join service
//! with the node's own secret, write each edge service's drop-in that
//! differs, restart the units whose drop-in changed (each once), and report
//! the revision it runs. A node that cannot reach the centre keeps what it
//! runs and tries again on the next tick, so one cut off during a change
//! catches up when its WAN returns. A revision with invalid INI, or a key
//! this node's catalogue does not know, is refused before anything changes.

use super::client::JoinClient;
use crate::deploy::files::{drop_in_body, drop_in_spec};
use crate::host::lock::FileLock;
use crate::host::systemd::Systemd;
use crate::host::{FileSpec, Host};
use crate::recipes::Recipes;
use crate::wire::{ConfigApplied, MAX_DETAIL, NodeConfigReply};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The join service this node joined through (written by the join).
pub const JOIN_ENDPOINT: &str = "/var/lib/dcn/node/join-endpoint";
/// What this node applied last: the revision and its drop-ins.
pub const APPLIED: &str = "/var/lib/dcn/node/config.json";
/// Held by `dcn join` and by a sync while they change the node's services,
/// so a sync cannot write a drop-in that a running join then overwrites
/// with what it read before (or the other way round).
pub const NODE_LOCK: &str = "/run/dcn/node.lock";

/// The applied state, kept across runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    pub revision: u64,
    /// Drop-in text by config key.
    pub services: BTreeMap<String, String>,
    /// Whether the centre has heard about this revision.
    pub reported: bool,
}

impl Applied {
    pub fn load(host: &Host) -> Result<Option<Applied>> {
        match host.files.read_string(APPLIED)? {
            None => Ok(None),
            Some(t) => serde_json::from_str(&t)
                .map(Some)
                .with_context(|| format!("{APPLIED} is damaged")),
        }
    }

    fn save(&self, host: &Host) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("serialisable") + "\n";
        host.files
            .write(APPLIED, text.as_bytes(), &FileSpec::secret())?;
        Ok(())
    }
}

/// What one sync did.
#[derive(Debug, Clone, PartialEq)]
pub struct Synced {
    pub revision: u64,
    /// Drop-ins written or removed.
    pub changed: Vec<String>,
    /// Units restarted.
    pub restarted: Vec<String>,
    /// The node's certificate check, when it was time for one.
    pub certificate: Option<super::node_cert::Checked>,
}

/// Fetch, apply and report; `None` when a `dcn join` is running on this
/// node (it writes the drop-ins itself, and the next tick syncs).
pub fn sync(recipes: &Recipes, host: &Host) -> Result<Option<Synced>> {
    let Some(_lock) = FileLock::try_take(&host.files, NODE_LOCK)? else {
        return Ok(None);
    };
    let (deployment, creds, client) = super::node_cert::connect(host)?;
    let secret = creds.node_secret.expose();
    let hostname = &deployment.hostname;
    let reply = client.node_config(hostname, secret)?;
    let config = apply_and_report(recipes, host, &client, hostname, secret, &reply);
    // The certificate and the trusted CAs, whatever became of the config.
    let certificate = super::node_cert::check(
        recipes,
        host,
        &client,
        hostname,
        &creds,
        super::node_cert::When::Due,
    )
    .context("checking this node's certificate");
    let mut synced = config?;
    synced.certificate = certificate?;
    Ok(Some(synced))
}

/// Apply a fetched revision and tell the centre what became of it.
fn apply_and_report(
    recipes: &Recipes,
    host: &Host,
    client: &JoinClient,
    hostname: &str,
    secret: &str,
    reply: &NodeConfigReply,
) -> Result<Synced> {
    let applied = Applied::load(host)?.unwrap_or_default();
    match apply(host, recipes, reply) {
        Ok(synced) => {
            let mut now = Applied {
                revision: reply.revision,
                services: reply.services.clone(),
                reported: applied.reported && applied.revision == reply.revision,
            };
            now.save(host)?;
            if !now.reported {
                let report = ConfigApplied {
                    revision: reply.revision,
                    error: None,
                };
                client.config_applied(hostname, secret, &report)?;
                now.reported = true;
                now.save(host)?;
            }
            Ok(synced)
        }
        Err(e) => {
            let why = crate::terminal_text::head(&format!("{e:#}"), MAX_DETAIL).to_string();
            let report = ConfigApplied {
                revision: applied.revision,
                error: Some(format!("revision {}: {why}", reply.revision)),
            };
            if let Err(r) = client.config_applied(hostname, secret, &report) {
                tracing::warn!("the failure was not reported: {r:#}");
            }
            Err(e.context(format!(
                "site config revision {} not applied",
                reply.revision
            )))
        }
    }
}

/// Write what `reply` asks for and restart what changed. Everything is
/// checked before the first file changes.
pub fn apply(host: &Host, recipes: &Recipes, reply: &NodeConfigReply) -> Result<Synced> {
    for (key, text) in &reply.services {
        recipes
            .config_key(key, true)
            .map_err(|e| anyhow::anyhow!("the control plane sent {e}"))?;
        if let Err(e) = crate::ini::Ini::parse(text) {
            bail!("the drop-in for {key} is not valid INI, {e}");
        }
    }
    let mut changed = Vec::new();
    let mut restart: Vec<String> = Vec::new();
    for key in recipes.edge_config_keys() {
        let service = recipes.config_keys()[key];
        let c = service
            .custom_config
            .as_ref()
            .expect("a config key's recipe has customConfig");
        let change = match reply.services.get(key) {
            Some(text) => {
                host.files
                    .write(&c.path, drop_in_body(text).as_bytes(), &drop_in_spec(c))?
            }
            None => host.files.remove(&c.path)?,
        };
        if change.changed() {
            changed.push(c.path.clone());
            for unit in c.restarts.as_ref().unwrap_or(&service.units) {
                if !restart.contains(unit) {
                    restart.push(unit.clone());
                }
            }
        }
    }
    let systemd = Systemd::new(host.runner.as_ref());
    for unit in &restart {
        tracing::info!("restarting {unit}: its drop-in changed");
        systemd.restart(unit)?;
    }
    Ok(Synced {
        revision: reply.revision,
        changed,
        restarted: restart,
        certificate: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::RecordingRunner;
    use std::sync::Arc;

    fn reply(revision: u64, services: &[(&str, &str)]) -> NodeConfigReply {
        NodeConfigReply {
            revision,
            services: services
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// The credentials a sync reads are node state anyone with a shell may
    /// have replaced: a FIFO (which hung the sync), a link to /dev/zero
    /// (read until the kernel killed it at 18 GB), a socket, a directory
    /// or an oversize file is refused with its path, nothing is fetched.
    #[test]
    fn a_sync_refuses_special_files_as_the_credentials() {
        use crate::host::read::testing::{Special, bounded};
        bounded(std::time::Duration::from_secs(60), || {
            for special in Special::ALL {
                let root = tempfile::tempdir().unwrap();
                let runner = Arc::new(RecordingRunner::default());
                let host = Host::with_runner(root.path(), runner.clone(), false);
                let deployment = r#"{"roles":["edge"],"services":[],"hostname":"n1","address":"10.0.0.9","site":"edge1"}"#;
                let secret = FileSpec::secret();
                (host.files)
                    .write(
                        crate::deployment::DEPLOYMENT_FILE,
                        deployment.as_bytes(),
                        &secret,
                    )
                    .unwrap();
                (host.files)
                    .write(JOIN_ENDPOINT, b"https://127.0.0.1:9/", &secret)
                    .unwrap();
                let hp = host
                    .files
                    .host_path(super::super::edge::CREDENTIALS)
                    .unwrap();
                let why = special.make(&hp, crate::host::read::MAX_SECRET);
                let e = format!(
                    "{:#}",
                    sync(crate::recipes::for_tests(), &host).unwrap_err()
                );
                assert!(e.contains(&format!("{} {why}", hp.display())), "{e}");
                assert!(runner.calls().is_empty());
            }
        });
    }

    /// A sync while a join holds the node's lock steps aside and touches
    /// nothing; a join waits for a running sync.
    #[test]
    fn sync_and_join_take_turns_on_the_node_lock() {
        let root = tempfile::tempdir().unwrap();
        let runner = Arc::new(RecordingRunner::default());
        let host = Host::with_runner(root.path(), runner.clone(), false);
        let held = FileLock::try_take(&host.files, NODE_LOCK).unwrap().unwrap();
        // Not even joined: without the lock this is an error.
        assert_eq!(sync(crate::recipes::for_tests(), &host).unwrap(), None);
        assert!(runner.calls().is_empty());
        assert!(!host.files.exists(APPLIED).unwrap());

        let started = std::time::Instant::now();
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(700));
            drop(held);
        });
        let opts = crate::edge::join::JoinOptions {
            bundle: root.path().join("no-such-bundle.tar.gz"),
            ca_pin: None,
            hostname: None,
            my_ip: None,
            timeout: std::time::Duration::from_secs(1),
            packages: crate::types::PackageSource::Mirror,
            ignore_preflight: vec![],
        };
        let err = crate::edge::join::join(crate::recipes::for_tests(), &host, &opts)
            .err()
            .expect("no bundle");
        let took = started.elapsed();
        release.join().unwrap();
        assert!(
            took >= std::time::Duration::from_millis(700),
            "the join went on while the lock was held ({took:?}): {err:#}"
        );
        assert!(format!("{err:#}").contains("no-such-bundle"), "{err:#}");
        let err = sync(crate::recipes::for_tests(), &host).unwrap_err();
        assert!(
            format!("{err:#}").contains("run `dcn join` first"),
            "{err:#}"
        );
    }

    #[test]
    fn only_changed_drop_ins_are_written_and_only_their_units_restart_once() {
        let recipes = crate::recipes::for_tests();
        let root = tempfile::tempdir().unwrap();
        // The drop-ins belong to the services' groups.
        std::fs::create_dir_all(root.path().join("etc")).unwrap();
        std::fs::write(
            root.path().join("etc/passwd"),
            "root:x:0:0::/root:/bin/sh\n",
        )
        .unwrap();
        std::fs::write(root.path().join("etc/group"), "root:x:0:\nnova:x:64060:\n").unwrap();
        let runner = Arc::new(RecordingRunner::default());
        let host = Host::with_runner(root.path(), runner.clone(), false);
        let path = "/etc/nova/nova-compute.conf.d/90-custom.conf";

        let s = apply(
            &host,
            recipes,
            &reply(1, &[("novaCompute", "[DEFAULT]\ndebug = true\n")]),
        )
        .unwrap();
        assert_eq!(s.changed, [path]);
        // nova-compute only: libvirtd does not read nova's drop-ins.
        assert_eq!(s.restarted, ["nova-compute.service"]);
        let text = host.files.read_string(path).unwrap().unwrap();
        assert!(
            text.starts_with(crate::deploy::files::DROP_IN_HEADER)
                && text.ends_with("debug = true\n"),
            "{text}"
        );

        // The same revision again changes nothing and restarts nothing.
        let before = runner.calls().len();
        let s = apply(
            &host,
            recipes,
            &reply(1, &[("novaCompute", "[DEFAULT]\ndebug = true\n")]),
        )
        .unwrap();
        assert!(s.changed.is_empty() && s.restarted.is_empty());
        assert_eq!(runner.calls().len(), before);

        // A revision without it removes the drop-in and restarts again.
        let s = apply(&host, recipes, &reply(2, &[])).unwrap();
        assert_eq!((s.changed.len(), s.restarted.len()), (1, 1));
        assert!(!host.files.exists(path).unwrap());
    }

    #[test]
    fn invalid_ini_or_an_unknown_service_changes_nothing() {
        let recipes = crate::recipes::for_tests();
        let root = tempfile::tempdir().unwrap();
        let runner = Arc::new(RecordingRunner::default());
        let host = Host::with_runner(root.path(), runner.clone(), false);
        let good = ("novaCompute", "[DEFAULT]\ndebug = true\n");
        for bad in [
            ("ovnMetadataAgent", "debug = true\n"),
            ("nova", "[DEFAULT]\n"),
        ] {
            let e = apply(&host, recipes, &reply(3, &[good, bad]))
                .unwrap_err()
                .to_string();
            assert!(e.contains(bad.0), "{e}");
            assert!(
                !host
                    .files
                    .exists("/etc/nova/nova-compute.conf.d/90-custom.conf")
                    .unwrap()
            );
            assert!(runner.calls().is_empty());
        }
    }
}
