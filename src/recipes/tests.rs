use super::*;

/// A bundle manifest for site edge1 of control plane `cp`, as the export
/// builds it, with `custom` as its customServiceConfig.
pub(super) fn sample_manifest(
    recipes: &Recipes,
    custom: &crate::bundle::CustomServiceConfig,
) -> crate::bundle::Manifest {
    let deployment = crate::deployment::Deployment {
        roles: vec!["controller".into(), "compute".into()],
        services: vec![],
        hostname: "cp".into(),
        address: "10.240.0.10".into(),
        site: None,
    };
    let now = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
    crate::centre::sites::export::manifest(
        recipes,
        "edge1",
        &deployment,
        &crate::config::StandaloneConfig::default(),
        custom,
        (now, now + std::time::Duration::from_secs(3600)),
        "abc123",
    )
    .unwrap()
}

/// The embedded recipe files, as `(path, text)`, for tests that add one.
pub(super) fn embedded_files() -> Vec<(String, String)> {
    (EMBEDDED.iter())
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect()
}

fn service(yaml: &str) -> ServiceRecipe {
    crate::yaml::parse::parse(yaml, "test").unwrap()
}

fn values() -> Values {
    let mut v = Values::default();
    v.cp.insert("address".into(), "10.240.0.10".into());
    v.password.insert("nova_db".into(), "S3cretPassw0rd".into());
    v.roles = vec!["controller".into()];
    v
}

#[test]
fn embedded_recipes_load_and_roles_resolve() {
    let r = Recipes::embedded().unwrap();
    for role in ["controller", "compute", "edge"] {
        let pkgs = r.packages_for_roles(&[role]).unwrap();
        assert!(!pkgs.is_empty(), "{role} has packages");
    }
    assert!(r.role("nope").is_err());
}

/// A host with guests nova already knows (a restored control plane, a
/// re-joined edge) plugs their ports when nova-compute starts: Open vSwitch,
/// its manager and br-int must be set up by then.
#[test]
fn open_vswitch_comes_before_nova_compute_in_every_compute_role() {
    let r = Recipes::embedded().unwrap();
    for role in ["compute", "edge"] {
        let order: Vec<String> = (r.services_for_roles(&[role]).unwrap().iter())
            .map(|s| s.service.clone())
            .collect();
        let at = |name: &str| order.iter().position(|s| s == name).unwrap();
        assert!(
            at("ovn-controller") < at("nova-compute"),
            "{role}: {order:?}"
        );
    }
}

#[test]
fn ini_files_render_with_default_first_and_secrets_hidden() {
    let s = service(
        "service: nova\ndescription: x\nphase: services\nfiles:\n- path: /etc/nova/nova.conf\n  owner: nova\n  group: nova\n  mode: '0640'\n  ini:\n    api_database: {connection: 'mysql+pymysql://nova:{{ password.nova_db }}@{{ cp.address }}/nova_api'}\n    DEFAULT: {my_ip: '{{ cp.address }}'}\nunits: [nova-api.service]\n",
    );
    let files = render_files(&s, &values()).unwrap();
    assert_eq!(files.len(), 1);
    let text = &files[0].contents;
    assert!(
        text.find("[DEFAULT]").unwrap() < text.find("[api_database]").unwrap(),
        "{text}"
    );
    assert!(text.contains("my_ip = 10.240.0.10"));
    assert!(files[0].spec.secret);
    assert_eq!(files[0].spec.mode, 0o640);
    assert_eq!(files[0].restarts, vec!["nova-api.service"]);
}

#[test]
fn undefined_values_are_errors() {
    let s = service(
        "service: x\ndescription: x\nphase: services\nfiles:\n- path: /etc/x\n  template: '{{ cp.adress }}'\n",
    );
    let err = render_files(&s, &values()).unwrap_err();
    assert!(format!("{err:#}").contains("/etc/x"), "{err:#}");
}

#[test]
fn a_world_readable_file_with_a_password_is_refused() {
    let s = service(
        "service: x\ndescription: x\nphase: services\nfiles:\n- path: /etc/x\n  mode: '0644'\n  template: 'pw={{ password.nova_db }}'\n",
    );
    let err = render_files(&s, &values()).unwrap_err();
    assert!(format!("{err:#}").contains("lets anyone read it"));
}

#[test]
fn role_conditions_skip_files() {
    let s = service(
        "service: x\ndescription: x\nphase: services\nfiles:\n- path: /etc/x\n  whenRole: compute\n  template: 'a'\n",
    );
    assert!(render_files(&s, &values()).unwrap().is_empty());
}

#[test]
fn unknown_recipe_fields_are_errors() {
    let e = crate::yaml::parse::parse::<ServiceRecipe>(
        "service: x\ndescription: x\nphase: services\npackagez: []\n",
        "r.yaml",
    )
    .unwrap_err();
    assert!(e.to_string().contains("unknown field `packagez`"), "{e}");
}

#[test]
fn keystone_auth_sections_merge_with_ini_keys() {
    let s = service(
        "service: x\ndescription: x\nphase: services\nfiles:\n- path: /etc/x.conf\n  mode: '0640'\n  ini:\n    service_user: {send_service_user_token: 'true'}\n  keystoneAuth:\n    service_user: {username: nova, password: nova_db}\n    keystone_authtoken: {username: nova, password: nova_db}\n",
    );
    let mut v = values();
    v.cp.insert("region".into(), "RegionOne".into());
    v.cp.insert("memcached".into(), "127.0.0.1:11211".into());
    v.cp.insert("authUrl".into(), "http://127.0.0.1:5000".into());
    v.cp.insert("publicAuthUrl".into(), "https://10.240.0.10:5000".into());
    v.cp.insert("cafile".into(), String::new());
    let text = &render_files(&s, &v).unwrap()[0].contents;
    let ini = crate::ini::Ini::parse(text).unwrap();
    assert_eq!(
        ini.get("service_user", "send_service_user_token"),
        Some("true"),
        "{text}"
    );
    assert_eq!(ini.get("service_user", "username"), Some("nova"));
    assert_eq!(ini.get("service_user", "password"), Some("S3cretPassw0rd"));
    assert_eq!(
        ini.get("keystone_authtoken", "www_authenticate_uri"),
        Some("https://10.240.0.10:5000")
    );
    assert_eq!(ini.get("service_user", "www_authenticate_uri"), None);
    assert_eq!(
        ini.get("service_user", "auth_url"),
        Some("http://127.0.0.1:5000")
    );
    // An empty cafile (the control plane's) is left out.
    assert_eq!(ini.get("service_user", "cafile"), None);
}

/// uwsgi lets later options win: worker counts given before `--ini` would
/// be replaced by the packaged ini's (nova-api's 16 processes).
#[test]
fn uwsgi_worker_options_follow_the_ini() {
    let r = Recipes::embedded().unwrap();
    let mut seen = 0;
    for s in r.services.values() {
        for f in &s.files {
            let Some(t) = &f.template else { continue };
            for line in t.lines().filter(|l| l.contains("DAEMON_ARGS=")) {
                seen += 1;
                let ini = line
                    .find("--ini")
                    .unwrap_or_else(|| panic!("{}: {line}", f.path));
                let processes = line
                    .find("--processes")
                    .unwrap_or_else(|| panic!("{}: {line}", f.path));
                assert!(
                    processes > ini,
                    "{}: --processes must come after --ini: {line}",
                    f.path
                );
            }
        }
    }
    assert_eq!(
        seen, 4,
        "keystone, placement, nova-api and nova-api-metadata"
    );
}

/// A service the edge role gains by its recipe and one role line, and
/// nothing else: the ISO's packages and units, preflight's ports, the
/// bundle's config keys and the edge's rendered files all follow. The
/// endpoint it needs at the centre is a control-plane recipe's catalog
/// entry, which the bundle then exports to the edge.
#[test]
fn an_edge_service_added_by_recipe_alone_reaches_iso_preflight_bundle_and_files() {
    const FAKE: &str = "service: cinder-volume\ndescription: block storage at the edge (test)\nphase: compute\npackages: [cinder-volume]\nsiteCredentials:\n  cinder_service: {kind: keystoneUser, username: 'dcn-cinder-{{ host.hostname }}'}\nfiles:\n- path: /etc/cinder/cinder.conf.d/10-dcn.conf\n  mode: '0640'\n  ini:\n    DEFAULT: {host: '{{ host.hostname }}', glance_api_servers: '{{ export.image }}'}\n    keystone_authtoken: {www_authenticate_uri: '{{ export.volumev3 }}'}\n  keystoneAuth:\n    nova: {username: '{{ user.cinder_service }}', password: cinder_service}\ncustomConfig: {configKey: cinderVolume, path: /etc/cinder/cinder.conf.d/90-custom.conf}\ndisableUnits: [tgt.service]\nunits: [cinder-volume.service]\nports: [3260]\n";
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
    const CENTRE: &str = "service: cinder-api\ndescription: block storage API (test)\nphase: services\nidentity: {name: cinder, type: volumev3, url: 'https://{{ cp.address }}:8776/v3'}\n";
    files.push((
        format!("{RELEASE}/services/cinder-api.yaml"),
        CENTRE.to_string(),
    ));
    let recipes = Recipes::from_files(files).unwrap();

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
    let refused = manifest.validate().unwrap_err();
    assert_eq!(refused.path, "customServiceConfig.cinderVolume");
    let known = manifest.validate_with(&recipes).unwrap_err();
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
    let cinder = crate::recipes::site_credentials::NodeAccount::Keystone {
        username: "dcn-cinder-edge1-n1".into(),
    };
    assert!(accounts.0.lock().unwrap().contains(&cinder), "{accounts:?}");
    assert_eq!(
        given["cinder_service"].username.as_deref(),
        Some("dcn-cinder-edge1-n1")
    );
    let creds = crate::edge::join::edge::Credentials {
        site: "edge1".into(),
        node_secret: crate::secrets::Secret::new("n"),
        credentials: given.clone(),
    };
    let values = crate::edge::join::edge::values(
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

/// The node accounts the join service asks for.
#[derive(Debug, Default)]
struct RecordingAccounts(std::sync::Mutex<Vec<crate::recipes::site_credentials::NodeAccount>>);

impl crate::centre::sites::reserved::ComputeHosts for RecordingAccounts {
    fn is_compute_host(&self, _: &str) -> Result<bool> {
        Ok(false)
    }
}

impl crate::centre::sites::accounts::NodeAccounts for RecordingAccounts {
    fn ensure(
        &self,
        _: &str,
        account: &crate::recipes::site_credentials::NodeAccount,
        _: &crate::secrets::Secret,
    ) -> Result<()> {
        self.0.lock().unwrap().push(account.clone());
        Ok(())
    }

    fn delete(&self, _: &str, _: &crate::recipes::site_credentials::NodeAccount) -> Result<()> {
        unreachable!("a join deletes nothing")
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

#[test]
fn a_schema_sync_may_name_only_its_services_own_databases() {
    let recipe = |schema: &str| {
        format!(
            "service: x\ndescription: x\nphase: services\ndatabase: {{names: [x], user: x, password: x_db}}\nsetup:\n- name: db-sync\n  run: [x-manage, db_sync]\n  checkSql: 'SELECT 1'\n  schema: {schema}\n"
        )
    };
    let load = |text: String| Recipes::from_files([(format!("{RELEASE}/services/x.yaml"), text)]);
    assert!(load(recipe("[x]")).is_ok());
    let e = load(recipe("[keystone]")).unwrap_err().to_string();
    assert!(
        e.contains("names the schema of database keystone") && e.contains("(x)"),
        "{e}"
    );
}
