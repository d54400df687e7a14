//! Every recipe rendered with the values real hosts get: the control
//! plane's (controller and compute roles, from its config and passwords)
//! and an edge's (from a bundle manifest and its join credentials). A
//! template naming a value neither builder sets, or a config key typo,
//! fails `cargo test` in seconds instead of the 25-minute lab.

use super::Recipes;
use crate::deploy::{CertSource, Plan};
use crate::host::facts::HostFacts;
use crate::host::{Files, Host, RecordingRunner};
use crate::secrets::Secret;
use anyhow::Result;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Certificates that are only placeholders: rendering needs text, not PKI.
struct PlaceholderCerts;

impl CertSource for PlaceholderCerts {
    fn leaf(&self, _: &Files, name: &str) -> Result<(String, Secret)> {
        Ok((format!("certificate {name}\n"), Secret::new("key\n")))
    }
    fn ca(&self, _: &Files) -> Result<String> {
        Ok("ca\n".into())
    }
}

fn facts() -> HostFacts {
    HostFacts {
        cpus: 2,
        virt_type: "qemu".into(),
        container: false,
        ovs_datapath: "netdev".into(),
    }
}

/// Render `roles`' services with `values` and every custom config key of
/// those services set; the planned files by path.
/// One file of a service as rendered (not shown on failure: it may hold
/// passwords).
fn rendered(recipes: &Recipes, service: &str, values: &super::Values, path: &str) -> String {
    let files = super::render_files(recipes.service(service).unwrap(), values).unwrap();
    (files.into_iter())
        .find(|f| f.path.ends_with(path))
        .unwrap_or_else(|| panic!("{service} renders no {path}"))
        .contents
}

/// nova-compute's heartbeat and resource-tracker intervals as rendered.
fn assert_compute_intervals(
    recipes: &Recipes,
    values: &super::Values,
    report: u32,
    resources: u32,
) {
    let conf = rendered(
        recipes,
        "nova-compute",
        values,
        "nova-compute.conf.d/10-dcn.conf",
    );
    assert!(conf.contains(&format!("\nreport_interval = {report}\n")));
    assert!(conf.contains(&format!("\nupdate_resources_interval = {resources}\n")));
}

fn render(recipes: &Recipes, roles: &[&str], values: super::Values) -> BTreeMap<String, String> {
    let services: Vec<String> = (recipes.services_for_roles(roles).unwrap().iter())
        .map(|s| s.service.clone())
        .collect();
    let custom_config = (recipes.services_for_roles(roles).unwrap().iter())
        .filter_map(|s| s.custom_config.as_ref())
        .map(|c| {
            (
                c.config_key.clone(),
                "[DEFAULT]\ndebug = true\n".to_string(),
            )
        })
        .collect();
    let plan = Plan {
        recipes: recipes.clone(),
        services,
        values: Arc::new(values),
        custom_config,
        source: crate::types::PackageSource::Mirror,
        certs: Arc::new(PlaceholderCerts),
    };
    let phase = plan
        .configure_phase()
        .unwrap_or_else(|e| panic!("{roles:?}: {e:#}"));
    let root = tempfile::tempdir().unwrap();
    let host = Host::with_runner(root.path(), Arc::new(RecordingRunner::default()), true);
    crate::engine::run(&[phase], &host).unwrap_or_else(|e| panic!("{roles:?}: {e:#}"));
    host.files
        .planned()
        .into_iter()
        .map(|c| (c.path, c.diff))
        .collect()
}

fn assert_rendered(files: &BTreeMap<String, String>, what: &str) {
    assert!(!files.is_empty(), "{what}: nothing rendered");
    for (path, text) in files {
        assert!(
            !text.contains("{{") && !text.contains("{%"),
            "{what}: {path} keeps template syntax:\n{text}"
        );
    }
}

#[test]
fn every_control_plane_recipe_renders_with_the_control_plane_values() {
    let recipes = Recipes::embedded().unwrap();
    let config = crate::config::StandaloneConfig::default();
    let id = crate::centre::control_plane::identity::Identity {
        hostname: "cp".into(),
        address: "10.240.0.10".parse().unwrap(),
        dns_names: vec!["cp".into()],
    };
    let mut passwords = crate::passwords::PasswordStore::default();
    passwords.ensure(
        crate::centre::standalone::secrets::control_plane_passwords(&recipes)
            .unwrap()
            .iter()
            .map(String::as_str),
    );
    let values = crate::centre::control_plane::values::control_plane_values(
        crate::recipes::for_tests(),
        &config,
        &id,
        &facts(),
        &passwords,
    )
    .unwrap();
    // The control plane's own compute is on loopback: nova's intervals.
    assert_compute_intervals(&recipes, &values, 10, 0);
    // Three missed reports of an edge's 30 s before a compute is down.
    let nova = rendered(&recipes, "nova", &values, "nova.conf.d/10-dcn.conf");
    assert!(nova.contains("\nservice_down_time = 90\n"));
    let files = render(&recipes, &["controller", "compute"], values);
    assert_rendered(&files, "control plane");
    for path in [
        "/etc/keystone/keystone.conf",
        "/etc/nova/nova-compute.conf.d/10-dcn.conf",
        "/etc/nova/nova-compute.conf.d/90-custom.conf",
    ] {
        assert!(files.contains_key(path), "{path}: {:?}", files.keys());
    }
    // The api-proxy serves every service's TLS frontends, and nothing else.
    // (The plan holds the file as a diff from nothing: its lines start with +.)
    let proxy: String = (files["/etc/haproxy/dcn-api.cfg"].lines())
        .map(|l| l.strip_prefix('+').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    for (name, port) in [
        ("keystone", 5000),
        ("placement", 8778),
        ("glance", 9292),
        ("nova", 8774),
        ("metadata", 8775),
        ("neutron", 9696),
        ("novnc", 6080),
    ] {
        assert!(
            proxy.contains(&format!(
                "frontend {name}\n    bind 10.240.0.10:{port} ssl crt /etc/haproxy/dcn/api.pem"
            )) && proxy.contains(&format!(
                "backend {name}\n    server local 127.0.0.1:{port}"
            )),
            "{name} on {port}: {proxy}"
        );
    }
    assert_eq!(proxy.matches("frontend ").count(), 7, "{proxy}");
}

#[test]
fn every_edge_recipe_renders_with_the_values_an_edge_builds_from_its_bundle() {
    let recipes = Recipes::embedded().unwrap();
    let manifest = super::tests::sample_manifest(&recipes, &BTreeMap::new());
    let creds = crate::edge::join::edge::Credentials::sample(&recipes, "edge1", "edge1-n1");
    let values = crate::edge::join::edge::compute_values(
        crate::recipes::for_tests(),
        &manifest,
        &creds,
        "edge1-n1",
        "10.240.1.20".parse().unwrap(),
        &facts(),
    )
    .unwrap();
    assert_eq!(values.compute["zone"], "edge1");
    assert_eq!(values.compute["interface"], "public");
    // From the edge role's recipe: its network, and its compute link's
    // users among the site credentials.
    assert_eq!(values.network["bridgeMappings"], "physnet1:br-ex");
    assert_eq!(values.network["encapsulation"], "geneve");
    assert!(values.compute["transportUrl"].starts_with("rabbit://dcn-node-edge1-n1:"));
    assert_eq!(values.compute["serviceUser"], "dcn-node-edge1-n1");
    // Across a WAN a compute reports and heals its inventory less often.
    assert_compute_intervals(&recipes, &values, 30, 300);
    let files = render(&recipes, &["edge"], values);
    assert_rendered(&files, "edge");
    for key in recipes.edge_config_keys() {
        let path = &recipes.config_keys()[key]
            .custom_config
            .as_ref()
            .unwrap()
            .path;
        assert!(files.contains_key(path), "{key}'s {path} on the edge");
    }
}
