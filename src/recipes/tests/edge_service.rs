//! The walk-through of docs/adding-an-edge-service.md as a test: a service
//! added by a recipe alone reaches every place an edge service must.

use super::*;

/// A service the edge role gains by its recipe and one role line, and
/// nothing else: the ISO's packages and units, preflight's ports, the
/// bundle's config keys and the edge's rendered files all follow. The
/// endpoint it needs at the centre is a control-plane recipe's catalog
/// entry, which the bundle then exports to the edge.
#[test]
fn an_edge_service_added_by_recipe_alone_reaches_iso_preflight_bundle_and_files() {
    const FAKE: &str = "service: cinder-volume\ndescription: block storage at the edge (test)\nphase: compute\npackages: [cinder-volume]\nsiteCredentials:\n  cinder_service: {kind: keystoneUser, username: 'dcn-cinder-{{ host.hostname }}'}\n  cinder_rabbit:\n    kind: rabbitmqUser\n    username: 'dcn-cinder-{{ host.hostname }}'\n    permissions:\n      configure: '^(cinder-volume|cinder-volume\\.{{ host.hostnamePattern }}(@.*)?|cinder-volume_fanout(_[0-9a-f]+)?|reply_[0-9a-f]+)$'\n      write: '^(openstack|amq\\.default|cinder-volume_fanout|reply_[0-9a-f]+)$'\n      read: '^(cinder-volume|cinder-volume\\.{{ host.hostnamePattern }}(@.*)?|cinder-volume_fanout_[0-9a-f]+|reply_[0-9a-f]+)$'\n  cinder_db: {kind: databaseUser, username: 'dcn-cinder-{{ host.hostname }}', databases: [cinder]}\nfiles:\n- path: /etc/cinder/cinder.conf.d/10-dcn.conf\n  mode: '0640'\n  ini:\n    DEFAULT: {host: '{{ host.hostname }}', glance_api_servers: '{{ export.image }}'}\n    keystone_authtoken: {www_authenticate_uri: '{{ export.volumev3 }}'}\n  keystoneAuth:\n    nova: {username: '{{ user.cinder_service }}', password: cinder_service}\ncustomConfig: {configKey: cinderVolume, path: /etc/cinder/cinder.conf.d/90-custom.conf}\ndisableUnits: [tgt.service]\nunits: [cinder-volume.service]\nports: [3260]\n";
    let mut files = embedded_files();
    for (path, text) in &mut files {
        if path.ends_with("roles/edge.yaml") {
            *text = text.replace("dcn-config-sync]", "dcn-config-sync, cinder-volume]");
        }
    }
    files.push((
        format!("{RELEASE}/services/cinder-volume.yaml"),
        FAKE.to_string(),
    ));
    const CENTRE: &str = "service: cinder-api\ndescription: block storage API (test)\nphase: services\nports: [8776]\ntlsFrontends: {cinder: 8776}\npasswords: [cinder_db]\ndatabase: {names: [cinder], user: cinder, password: cinder_db}\nidentity: {name: cinder, type: volumev3, url: 'https://{{ cp.address }}:8776/v3'}\n";
    files.push((
        format!("{RELEASE}/services/cinder-api.yaml"),
        CENTRE.to_string(),
    ));
    let recipes = Recipes::from_files(files).unwrap();
    // The control plane's api-proxy serves the centre's API with TLS.
    assert_eq!(recipes.tls_frontends().get("cinder"), Some(&8776));

    // The edge ISO installs its packages and keeps its units off.
    assert!(
        recipes
            .packages_for_roles(&["edge"])
            .unwrap()
            .contains(&"cinder-volume".into())
    );
    let units = recipes.units_for_roles(&["edge"]).unwrap();
    assert!(units.contains(&"cinder-volume.service".into()), "{units:?}");
    assert!(units.contains(&"tgt.service".into()), "{units:?}");

    // Preflight on an edge checks its port.
    use crate::preflight::{Params, Role, checks::required_ports_in};
    let ports = required_ports_in(&recipes, Role::Edge, &Params::default());
    assert!(ports.contains(&(3260, "cinder-volume".into())), "{ports:?}");

    // Its config key is an edge key: it travels in the bundle, which this
    // catalogue accepts and the embedded one (without the service) refuses.
    assert_eq!(
        recipes.edge_config_keys(),
        ["cinderVolume", "novaCompute", "ovnMetadataAgent"]
    );
    let custom = BTreeMap::from([(
        "cinderVolume".to_string(),
        crate::types::IniText::try_from("[DEFAULT]\ndebug = true\n".to_string()).unwrap(),
    )]);
    let manifest = sample_manifest(&recipes, &custom);
    assert_eq!(manifest.custom_service_config, custom);
    let refused = manifest.validate(crate::recipes::for_tests()).unwrap_err();
    assert_eq!(refused.path, "customServiceConfig.cinderVolume");
    let known = manifest.validate(&recipes).unwrap_err();
    assert_eq!(
        known.path, "members",
        "only the digests write_bundle adds are missing"
    );

    // The edge's plan renders its file and the operator's drop-in.
    let root = tempfile::tempdir().unwrap();
    let host = crate::host::Host::with_runner(
        root.path(),
        std::sync::Arc::new(crate::host::RecordingRunner::default()),
        true,
    );
    // The bundle exports the new endpoint, as the control plane renders it.
    let volume = manifest
        .control_plane
        .exports
        .get("volumev3")
        .map(|e| e.to_string());
    assert_eq!(volume.as_deref(), Some("https://10.240.0.10:8776/v3"));
    // The join service provisions its user by kind, and the edge renders
    // with what the reply carries.
    let accounts = RecordingAccounts::default();
    let mut shared = crate::passwords::PasswordStore::default();
    shared.ensure(["metadata_secret"]);
    let given =
        crate::centre::sites::accounts::grant(&accounts, &recipes, &shared, "edge1-n1").unwrap();
    // Its own keystone user, its own RabbitMQ user limited to its own
    // queues, and its own MariaDB user on the centre's cinder database.
    let made: Vec<String> = (accounts.0.lock().unwrap().iter())
        .map(|a| a.to_string())
        .collect();
    for account in [
        "keystone user dcn-cinder-edge1-n1",
        "RabbitMQ user dcn-cinder-edge1-n1",
        "MariaDB user dcn-cinder-edge1-n1",
    ] {
        assert!(made.contains(&account.to_string()), "{account} in {made:?}");
    }
    let rabbit = (accounts.0.lock().unwrap().iter())
        .find_map(|a| match a {
            crate::recipes::site_credentials::NodeAccount::Rabbitmq {
                username,
                permissions,
            } if username.starts_with("dcn-cinder") => Some(permissions.clone()),
            _ => None,
        })
        .unwrap();
    let matches = |re: &str, name: &str| regex_lite::Regex::new(re).unwrap().is_match(name);
    assert!(matches(&rabbit.read, "cinder-volume.edge1-n1@lvm"));
    assert!(!matches(&rabbit.read, "cinder-volume.edge2-n1@lvm"));
    assert!(!matches(&rabbit.read, "compute.edge1-n1"));
    let db = (accounts.0.lock().unwrap().iter())
        .find_map(|a| match a {
            crate::recipes::site_credentials::NodeAccount::Database { databases, .. } => {
                Some(databases.clone())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(db, ["cinder"]);
    assert_eq!(
        given["cinder_db"].username.as_deref(),
        Some("dcn-cinder-edge1-n1")
    );
    // Removing the node deletes each of them.
    crate::centre::sites::accounts::revoke(&accounts, &recipes, "edge1-n1").unwrap();
    let deleted: Vec<String> = (accounts.1.lock().unwrap().iter())
        .map(|a| a.to_string())
        .collect();
    assert_eq!(deleted.len(), made.len(), "{deleted:?}");
    for account in &made {
        assert!(deleted.contains(account), "{account} in {deleted:?}");
    }
    assert_eq!(
        given["cinder_service"].username.as_deref(),
        Some("dcn-cinder-edge1-n1")
    );
    let creds = crate::edge::join::edge::Credentials {
        site: "edge1".into(),
        node_secret: crate::secrets::Secret::new("n"),
        credentials: given.clone(),
    };
    let values = crate::edge::join::edge::compute_values(
        &recipes,
        &manifest,
        &creds,
        "edge1-n1",
        "10.240.1.20".parse().unwrap(),
        &crate::host::facts::HostFacts {
            cpus: 2,
            virt_type: "qemu".into(),
            container: false,
            ovs_datapath: "netdev".into(),
        },
    )
    .unwrap();
    let edge: Vec<String> = (recipes.services_for_roles(&["edge"]).unwrap().iter())
        .map(|s| s.service.clone())
        .collect();
    assert!(edge.contains(&"cinder-volume".into()));
    let plan = crate::deploy::Plan {
        recipes: recipes.clone(),
        // The other edge services need the join's values to render.
        services: vec!["cinder-volume".into()],
        values: std::sync::Arc::new(values),
        custom_config: BTreeMap::from([(
            "cinderVolume".into(),
            "[DEFAULT]\ndebug = true\n".into(),
        )]),
        source: crate::types::PackageSource::Mirror,
        certs: std::sync::Arc::new(NoCertificates),
    };
    crate::engine::run(&[plan.configure_phase().unwrap()], &host).unwrap();
    let planned: Vec<(String, String)> = (host.files.planned().into_iter())
        .map(|c| (c.path, c.diff))
        .collect();
    let rendered = |path: &str| {
        planned
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, d)| d.clone())
    };
    // It holds the user's password, so the plan shows no diff of it.
    let note = rendered("/etc/cinder/cinder.conf.d/10-dcn.conf").unwrap();
    assert!(
        !note.contains(given["cinder_service"].password.expose()),
        "{note}"
    );
    let service = recipes.service("cinder-volume").unwrap();
    let files = crate::recipes::render_files(service, &plan.values).unwrap();
    let conf = &files[0];
    assert_eq!(conf.path, "/etc/cinder/cinder.conf.d/10-dcn.conf");
    for line in [
        "host = edge1-n1",
        "glance_api_servers = https://10.240.0.10:9292",
        "www_authenticate_uri = https://10.240.0.10:8776/v3",
        "username = dcn-cinder-edge1-n1",
        &format!("password = {}", given["cinder_service"].password.expose()),
    ] {
        assert!(conf.contents.contains(line), "{line} in {}", conf.contents);
    }
    assert!(
        rendered("/etc/cinder/cinder.conf.d/90-custom.conf").is_some(),
        "{planned:?}"
    );
}

/// The node accounts the join service makes and deletes.
#[derive(Debug, Default)]
struct RecordingAccounts(
    std::sync::Mutex<Vec<crate::recipes::site_credentials::NodeAccount>>,
    std::sync::Mutex<Vec<crate::recipes::site_credentials::NodeAccount>>,
);

impl crate::openstack::compute::ComputeHosts for RecordingAccounts {
    fn is_compute_host(&self, _: &str) -> Result<bool> {
        Ok(false)
    }
}

impl crate::openstack::accounts::NodeAccounts for RecordingAccounts {
    fn make(
        &self,
        _: &str,
        account: &crate::recipes::site_credentials::NodeAccount,
    ) -> Result<crate::secrets::Secret> {
        self.0.lock().unwrap().push(account.clone());
        Ok(crate::secrets::generate_password())
    }

    fn delete(
        &self,
        _: &str,
        account: &crate::recipes::site_credentials::NodeAccount,
    ) -> Result<()> {
        self.1.lock().unwrap().push(account.clone());
        Ok(())
    }
}

/// The fake service has no certificates.
struct NoCertificates;

impl crate::deploy::CertSource for NoCertificates {
    fn leaf(&self, _: &crate::host::Files, name: &str) -> Result<(String, crate::secrets::Secret)> {
        bail!("no certificate {name} in this test")
    }
    fn ca(&self, _: &crate::host::Files) -> Result<String> {
        bail!("no CA in this test")
    }
}
