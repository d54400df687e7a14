use super::*;
use crate::types;
use serde_yaml::Value;

fn err_of(text: &str) -> ConfigError {
    parse_standalone(crate::recipes::for_tests(), text, "site.yaml").unwrap_err()
}

const HEAD: &str = "apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\n";

#[test]
fn defaults_text_is_the_default_config() {
    let recipes = crate::recipes::for_tests();
    let parsed = parse_standalone(recipes, STANDALONE_DEFAULTS, "defaults").unwrap();
    let every_service = StandaloneConfig {
        services: Services::all_defaults(recipes),
        ..StandaloneConfig::default()
    };
    assert_eq!(parsed, every_service);
}

/// Every field of the config appears in the documented defaults, so a new
/// field cannot be added without documenting it.
#[test]
fn defaults_text_shows_every_field() {
    fn keys(v: &Value, prefix: &str, out: &mut Vec<String>) {
        if let Value::Mapping(m) = v {
            for (k, v) in m {
                let k = format!("{prefix}{}", k.as_str().unwrap());
                out.push(k.clone());
                keys(v, &format!("{k}."), out);
            }
        }
    }
    let mut want = Vec::new();
    keys(
        &serde_yaml::to_value(StandaloneConfig {
            services: Services::all_defaults(crate::recipes::for_tests()),
            ..StandaloneConfig::default()
        })
        .unwrap(),
        "",
        &mut want,
    );
    let mut have = Vec::new();
    keys(
        &serde_yaml::from_str(STANDALONE_DEFAULTS).unwrap(),
        "",
        &mut have,
    );
    want.sort();
    have.sort();
    assert_eq!(want, have);
}

#[test]
fn minimal_file_gets_defaults() {
    let c = parse_standalone(crate::recipes::for_tests(), HEAD, "x").unwrap();
    assert_eq!(c, StandaloneConfig::default());
}

#[test]
fn every_field_round_trips() {
    let text = format!(
        "{HEAD}controlPlane:\n  hostname: cp.lab.test\n  address: 10.240.0.10\n  extraNames: [cloud.example.test]\n  region: Lab\n  joinPort: 7443\nroles: [controller]\npackages:\n  source: local:/srv/repo\nnetwork:\n  encapsulation: vxlan\n  providerNetworks:\n  - name: datacentre\n    bridge: br-dc\n    interface: eth1\n  dnsServers: [10.240.0.1]\nservices:\n  nova:\n    workers: 3\n    customServiceConfig: |\n      [DEFAULT]\n      debug = true\n  novaCompute:\n    customServiceConfig: \"[libvirt]\\ncpu_mode = host-model\\n\"\nbundle:\n  ttl: 2h\n  maxUses: 5\n"
    );
    let c = parse_standalone(crate::recipes::for_tests(), &text, "x").unwrap();
    assert_eq!(
        c.control_plane.address,
        Some("10.240.0.10".parse().unwrap())
    );
    assert_eq!(c.control_plane.join_port, types::Port(7443));
    assert_eq!(c.roles, vec![Role::Controller]);
    assert_eq!(c.services.get("nova").workers, types::Workers::Count(3));
    assert_eq!(c.bundle.max_uses, 5);
    let again: StandaloneConfig = parse_standalone(
        crate::recipes::for_tests(),
        &serde_yaml::to_string(&c).unwrap(),
        "y",
    )
    .unwrap();
    assert_eq!(again, c);
    assert_ne!(c, StandaloneConfig::default());
}

#[test]
fn unknown_field_names_path_and_line() {
    let e = err_of(&format!("{HEAD}controlPlane:\n  adress: 10.0.0.1\n"));
    assert_eq!(e.line, Some(4), "{e}");
    assert!(e.message.contains("unknown field `adress`"), "{e}");
    assert!(e.to_string().starts_with("site.yaml:4:"), "{e}");
    assert!(e.path.starts_with("controlPlane"), "{e}");
}

#[test]
fn bad_values_name_path_and_line() {
    let cases: &[(&str, usize, &str, &str)] = &[
        (
            "controlPlane:\n  address: 10.0.0.300\n",
            4,
            "controlPlane.address",
            "invalid IP address",
        ),
        (
            "controlPlane:\n  hostname: Bad_Host\n",
            4,
            "controlPlane.hostname",
            "invalid hostname",
        ),
        (
            "controlPlane:\n  joinPort: 70000\n",
            4,
            "controlPlane.joinPort",
            "invalid port",
        ),
        (
            "controlPlane:\n  joinPort: https\n",
            4,
            "controlPlane.joinPort",
            "invalid type",
        ),
        (
            "network:\n  providerNetworks:\n  - name: phys net\n",
            5,
            "network.providerNetworks[0].name",
            "invalid name",
        ),
        (
            "network:\n  encapsulation: gre\n",
            4,
            "network.encapsulation",
            "unknown variant",
        ),
        (
            "services:\n  nova:\n    workers: 0\n",
            5,
            "services.nova.workers",
            "invalid worker count",
        ),
        (
            "services:\n  nova:\n    customServiceConfig: \"debug = true\"\n",
            5,
            "services.nova.customServiceConfig",
            "before any [section]",
        ),
        (
            "services:\n  cinder: {}\n",
            4,
            "services",
            "unknown service \"cinder\"; the services are glance, keystone, neutron, nova, novaCompute",
        ),
        (
            "bundle:\n  ttl: forever\n",
            4,
            "bundle.ttl",
            "invalid duration",
        ),
        (
            "services:\n  nova:\n    customServiceConfig: \"[DEFAULT]\\ndebug = true\\r[database]\\rconnection = x\\n\"\n",
            5,
            "services.nova.customServiceConfig",
            "line 2: a carriage return (\\r) not followed by a line feed",
        ),
        (
            "bundle:\n  ttl: 8000y\n",
            4,
            "bundle.ttl",
            "outside the allowed range for a bundle's lifetime, 1s to 365d",
        ),
        (
            "bundle:\n  maxUses: 0\n",
            4,
            "bundle.maxUses",
            "must be at least 1",
        ),
        (
            "packages:\n  source: \"local:/srv/repo ./\\ndeb [trusted=yes] http://evil.example/ ./\"\n",
            4,
            "packages.source",
            "the repository path may hold only letters, digits",
        ),
        (
            "packages:\n  source: \"local:/srv/my repo\"\n",
            4,
            "packages.source",
            "not ' ', because it is written into an apt sources line",
        ),
        (
            "packages:\n  source: http://x\n",
            4,
            "packages.source",
            "invalid package source",
        ),
        (
            "roles: [controller, storage]\n",
            3,
            "roles[1]",
            "unknown variant",
        ),
    ];
    for (body, line, path, msg) in cases {
        let e = err_of(&format!("{HEAD}{body}"));
        assert_eq!(e.line, Some(*line), "{body}: {e}");
        assert!(e.path.starts_with(path), "{body}: path {:?} in {e}", e.path);
        assert!(e.message.contains(msg), "{body}: {e}");
    }
}

#[test]
fn header_errors() {
    let e = err_of("kind: StandaloneConfig\n");
    assert_eq!(e.path, "apiVersion");
    assert!(e.message.contains("dcn/v1alpha1"));
    let e = err_of("apiVersion: dcn/v2\nkind: StandaloneConfig\n");
    assert!(e.message.contains("unsupported apiVersion"), "{e}");
    let e = err_of("apiVersion: dcn/v1alpha1\nkind: NodeConfig\n");
    assert!(e.message.contains("expects kind StandaloneConfig"), "{e}");
    let e = err_of("apiVersion: dcn/v1alpha1\n");
    assert_eq!(e.path, "kind");
}

#[test]
fn yaml_syntax_errors_have_a_line() {
    let e = err_of(&format!("{HEAD}controlPlane:\n  region: [unclosed\n"));
    assert!(e.line.is_some(), "{e}");
}

#[test]
fn messages_do_not_repeat_the_path() {
    let e = err_of(&format!("{HEAD}controlPlane:\n  region: [a]\n"));
    assert_eq!(
        e.to_string().matches("controlPlane.region").count(),
        1,
        "{e}"
    );
    let e = err_of(&format!(
        "{HEAD}network:\n  providerNetworks:\n  - name: a b\n"
    ));
    assert_eq!(e.to_string().matches("providerNetworks").count(), 1, "{e}");
}

#[test]
fn standalone_and_node_configs_are_bounded_before_serde_yaml_reads_them() {
    let started = std::time::Instant::now();
    for (text, kind) in [
        (
            format!("{HEAD}zones: {}\n", "[".repeat(200 * 1024)),
            "standalone",
        ),
        (
            format!(
                "apiVersion: dcn/v1alpha1\nkind: NodeConfig\nx: {}\n",
                "{a: ".repeat(50 * 1024)
            ),
            "node",
        ),
    ] {
        let e = match kind {
            "standalone" => err_of(&text),
            _ => parse_node(&text, "site.yaml").unwrap_err(),
        };
        assert_eq!(e.line, Some(3), "{e}");
        assert!(
            e.to_string().starts_with("site.yaml:3:")
                && e.message.contains("nested more than 32 levels deep"),
            "{e}"
        );
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    // A key given twice is refused rather than the last one winning.
    let e = err_of(&format!(
        "{HEAD}services:\n  nova:\n    workers: 2\n    workers: 4\n"
    ));
    assert_eq!(e.line, Some(6), "{e}");
    assert!(
        e.message.contains("the key \"workers\" appears twice"),
        "{e}"
    );
}

#[test]
fn validate_reads_each_kind_by_its_kind() {
    let inventory = include_str!("../../images/edge/site.example.yaml");
    let node = include_str!("../../images/edge/node.example.yaml");
    for (text, said) in [
        (STANDALONE_DEFAULTS, "f.yaml: valid StandaloneConfig"),
        (node, "f.yaml: valid NodeConfig for edge1-node1"),
        (
            inventory,
            "f.yaml: valid SiteInventory for site edge1, 2 nodes",
        ),
    ] {
        assert_eq!(
            validate_text(crate::recipes::for_tests(), text, "f.yaml").unwrap(),
            said
        );
    }
    let refused: &[(&str, &str, &str)] = &[
        (
            "apiVersion: dcn/v1alpha1\n",
            "kind",
            "missing; add `kind:` with one of StandaloneConfig, NodeConfig, SiteInventory",
        ),
        (
            "apiVersion: dcn/v1alpha1\nkind: Pod\n",
            "kind",
            "unknown kind: `dcn config validate` reads StandaloneConfig",
        ),
        ("- a\n- b\n", "kind", "not a dcn config"),
        ("", "kind", "not a dcn config"),
        (
            "apiVersion: dcn/v2\nkind: SiteInventory\n",
            "apiVersion",
            "unsupported apiVersion",
        ),
        (
            "apiVersion: dcn/v1alpha1\nkind: SiteInventory\nsite: [a\n",
            "site",
            "did not find expected",
        ),
    ];
    for (text, path, msg) in refused {
        let e = validate_text(crate::recipes::for_tests(), text, "f.yaml").unwrap_err();
        assert_eq!(e.path, *path, "{text}: {e}");
        assert_eq!(e.line.is_some(), *path == "site", "{text}: {e}");
        assert!(e.message.contains(msg), "{text}: {e}");
    }
}
