//! The inventory read: good files, defaults merged, bounds. Refusals and
//! the BMC settings have their own files.

mod bmc;
mod refusals;

use super::*;
use crate::config::node::DiskSelect;

const EXAMPLE: &str = include_str!("../../../../images/edge/site.example.yaml");

const HEAD: &str = "apiVersion: dcn/v1alpha1\nkind: SiteInventory\nsite: edge1\nimage: /srv/dcn-edge.iso\nmedia:\n  listen: 10.240.0.2:8443\n";

/// A node with a BMC, then `extra` lines (indented as node fields).
fn node(hostname: &str, endpoint: &str, extra: &str) -> String {
    format!(
        "- hostname: {hostname}\n  bmc:\n    endpoint: {endpoint}\n    credentials:\n      username: admin\n      passwordFile: /etc/dcn/bmc/{hostname}.pw\n{extra}"
    )
}

fn two_nodes() -> String {
    format!(
        "nodes:\n{}{}",
        node("n1", "https://10.0.0.1", ""),
        node("n2", "https://10.0.0.2", "")
    )
}

fn parse(body: &str) -> Result<SiteInventory, ConfigError> {
    parse_inventory(&format!("{HEAD}{body}"), "site.yaml")
}

fn err_of(body: &str) -> ConfigError {
    parse(body).unwrap_err()
}

#[test]
fn the_example_parses_and_merges_defaults_field_by_field() {
    let inv = parse_inventory(EXAMPLE, "example").unwrap();
    assert_eq!(inv.site.as_str(), "edge1");
    assert_eq!(inv.media.url().as_str(), "https://10.240.0.2:8443/");
    let names: Vec<_> = inv.nodes.iter().map(|n| n.hostname.as_str()).collect();
    assert_eq!(names, ["edge1-n1", "edge1-n2"]);

    let n1 = inv.node_config("edge1-n1").unwrap();
    assert_eq!(n1.disk.select, DiskSelect::Only);
    assert!(n1.disk.wipe && n1.root_ssh_key.is_some());
    assert_eq!(
        n1.dns_servers,
        vec!["10.240.1.1".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(n1.interfaces[0].addresses[0].to_string(), "10.240.1.20/24");
    let b1 = &inv.node("edge1-n1").unwrap().bmc;
    assert_eq!(b1.endpoint.as_str(), "https://10.240.1.5:8000/");
    assert!(b1.tls.pin.is_some() && b1.credentials.password_file.is_some());

    // edge1-n2 has its own disk and join: none of the defaults' fields in them.
    let n2 = inv.node_config("edge1-n2").unwrap();
    assert!(n2.disk.device.is_some());
    assert_eq!(n2.disk.min_size_gib, 8);
    assert_eq!(n2.join.my_ip, Some("10.240.1.21".parse().unwrap()));
    assert_eq!(n2.join.timeout, JoinSettings::default().timeout);
    assert_eq!(n2.ntp_servers, n1.ntp_servers);
    let b2 = &inv.node("edge1-n2").unwrap().bmc;
    assert_eq!(b2.endpoint.as_str(), "https://10.240.1.6/");
    assert!(b2.tls.ca.is_some() && b2.credentials.password_env.is_some());
    assert!(inv.node_config("edge1-n3").is_none());
}

#[test]
fn the_example_shows_every_field() {
    fn keys(v: &serde_yaml::Value, prefix: &str, out: &mut Vec<String>) {
        match v {
            serde_yaml::Value::Mapping(m) => {
                for (k, v) in m {
                    let k = format!("{prefix}{}", k.as_str().unwrap());
                    out.push(k.clone());
                    keys(v, &format!("{k}."), out);
                }
            }
            serde_yaml::Value::Sequence(s) => s.iter().for_each(|v| keys(v, prefix, out)),
            _ => {}
        }
    }
    let mut have = Vec::new();
    keys(&serde_yaml::from_str(EXAMPLE).unwrap(), "", &mut have);
    let node_fields = [
        "disk.device",
        "disk.select",
        "disk.minSizeGiB",
        "disk.wipe",
        "interfaces",
        "dnsServers",
        "ntpServers",
        "rootSshKey",
        "join.caPin",
        "join.myIp",
        "join.timeout",
    ];
    let mut want: Vec<String> = [
        "site",
        "image",
        "bundle.ttl",
        "media.listen",
        "media.url",
        "media.insecureHttp",
        "nodes.hostname",
        "nodes.bmc.endpoint",
        "nodes.bmc.system",
        "nodes.bmc.tls.pin",
        "nodes.bmc.tls.ca",
        "nodes.bmc.tls.insecure",
        "nodes.bmc.credentials.username",
        "nodes.bmc.credentials.passwordFile",
        "nodes.bmc.credentials.passwordEnv",
        "nodes.interfaces.mac",
        "nodes.interfaces.name",
        "nodes.interfaces.addresses",
        "nodes.interfaces.gateway",
        "nodes.interfaces.routes.to",
        "nodes.interfaces.routes.via",
    ]
    .map(String::from)
    .to_vec();
    want.extend(node_fields.map(|f| format!("nodeDefaults.{f}")));
    for w in want {
        assert!(have.contains(&w), "{w} is not in the example");
    }
}

#[test]
fn each_merged_node_config_is_a_valid_node_config_file() {
    let inv = parse_inventory(EXAMPLE, "example").unwrap();
    for n in &inv.nodes {
        let config = inv.node_config(n.hostname.as_str()).unwrap();
        let text = serde_yaml::to_string(&config).unwrap();
        assert_eq!(
            crate::config::parse_node(&text, "node.yaml").unwrap(),
            config
        );
    }
}

#[test]
fn minimal_inventory_gets_defaults() {
    let inv = parse(&two_nodes()).unwrap();
    assert_eq!(inv.bundle.ttl.0, Duration::from_secs(24 * 3600));
    assert_eq!(inv.media.url().as_str(), "https://10.240.0.2:8443/");
    assert_eq!(inv.node_defaults, NodeSettings::default());
    let n = inv.node_config("n1").unwrap();
    assert_eq!(n.disk, DiskConfig::default());
    assert!(n.interfaces.is_empty() && n.root_ssh_key.is_none());
    assert_eq!(inv.nodes[0].bmc.tls, BmcTls::default());

    let text = format!("{HEAD}  insecureHttp: true\n{}", two_nodes());
    let inv = parse_inventory(&text, "x").unwrap();
    assert_eq!(inv.media.url().as_str(), "http://10.240.0.2:8443/");
    let text = format!(
        "{HEAD}  url: https://media.example:9443/isos\n{}",
        two_nodes()
    );
    let inv = parse_inventory(&text, "x").unwrap();
    assert_eq!(inv.media.url().as_str(), "https://media.example:9443/isos/");
}

#[test]
fn a_node_null_replaces_a_default_ssh_key() {
    let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB admin@x";
    let body = format!(
        "nodeDefaults:\n  rootSshKey: {key}\nnodes:\n{}{}",
        node("n1", "https://10.0.0.1", "  rootSshKey: null\n"),
        node("n2", "https://10.0.0.2", "")
    );
    let inv = parse(&body).unwrap();
    assert!(inv.node_config("n1").unwrap().root_ssh_key.is_none());
    assert_eq!(
        inv.node_config("n2")
            .unwrap()
            .root_ssh_key
            .unwrap()
            .as_str(),
        key
    );
}

#[test]
fn inventories_are_bounded_before_serde_yaml_reads_them() {
    let started = std::time::Instant::now();
    let e = parse(&format!("nodes: {}\n", "[".repeat(200 * 1024))).unwrap_err();
    assert!(e.message.contains("nested more than 32 levels deep"), "{e}");
    let e = parse("nodes: []\nsite: again\n").unwrap_err();
    assert!(e.message.contains("appears twice"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(2));
}
