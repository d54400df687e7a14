use super::*;

mod edge_service;

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
        e.starts_with("recipes/debian-12/services/x.yaml:9:3: setup.0.schema: "),
        "{e}"
    );
    assert!(
        e.contains("names the schema of database keystone") && e.contains("(x)"),
        "{e}"
    );
}

#[test]
fn a_tls_frontend_must_be_on_its_services_port_and_its_own() {
    let with = |yaml: &str| {
        let mut files = embedded_files();
        files.push((
            format!("{RELEASE}/services/extra.yaml"),
            format!("service: extra\ndescription: x\nphase: services\n{yaml}"),
        ));
        format!("{:#}", Recipes::from_files(files).unwrap_err())
    };
    let e = with("ports: [8776]\ntlsFrontends: {cinder: 8777}\n");
    assert!(e.contains("not one of the service's `ports`"), "{e}");
    // Named where it is: the file, the line and column of the frontend.
    assert!(
        e.starts_with(&format!(
            "recipes/{RELEASE}/services/extra.yaml:5:16: tlsFrontends.cinder: "
        )),
        "{e}"
    );
    let e = with("ports: [8776]\ntlsFrontends: {nova: 8776}\n");
    assert!(e.contains("both declare TLS frontend \"nova\""), "{e}");
}

#[test]
fn a_broken_recipe_is_an_error_naming_its_file_and_line() {
    let mut files = embedded_files();
    files.push((
        format!("{RELEASE}/services/extra.yaml"),
        "service: extra\ndescription: x\nphase: services\nports: [8776\n".into(),
    ));
    let e = format!("{:#}", Recipes::from_files(files).unwrap_err());
    assert!(
        e.starts_with(&format!("recipes/{RELEASE}/services/extra.yaml:5:")),
        "{e}"
    );
}

#[test]
fn a_roles_compute_link_must_name_its_services_credentials_of_the_right_kind() {
    let with_link = |link: &str| {
        let files = embedded_files().into_iter().map(|(path, text)| {
            if path.ends_with("roles/edge.yaml") {
                let kept: String = text.split("computeLink:").next().unwrap().into();
                (path, format!("{kept}computeLink: {link}\n"))
            } else {
                (path, text)
            }
        });
        Recipes::from_files(files).map(|_| ())
    };
    with_link("{messaging: site_rabbit, service: compute_service}").unwrap();
    let e = with_link("{messaging: compute_service, service: compute_service}").unwrap_err();
    assert!(
        e.to_string()
            .contains("computeLink.messaging names \"compute_service\", which no service of the role declares as a rabbitmqUser"),
        "{e}"
    );
    let e = with_link("{messaging: site_rabbit, service: nova_db}").unwrap_err();
    assert!(e.to_string().contains("computeLink.service"), "{e}");
}
