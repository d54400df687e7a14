use super::*;

const HEAD: &str = "apiVersion: dcn/v1alpha1\nkind: NodeConfig\nhostname: edge1-node1\n";

fn err_of(body: &str) -> ConfigError {
    parse_node(&format!("{HEAD}{body}"), "node.yaml").unwrap_err()
}

#[test]
fn the_example_parses_and_shows_every_field() {
    let text = include_str!("../../../images/edge/node.example.yaml");
    let n = parse_node(text, "example").unwrap();
    assert_eq!(n.disk.select, DiskSelect::Smallest);
    assert_eq!(n.interfaces.len(), 2);
    assert!(n.root_ssh_key.is_some() && n.join.ca_pin.is_some());
    // Every key of a fully populated config appears in the example.
    fn keys(v: &serde_yaml::Value, prefix: &str, out: &mut Vec<String>) {
        match v {
            serde_yaml::Value::Mapping(m) => {
                for (k, v) in m {
                    let k = format!("{prefix}{}", k.as_str().unwrap());
                    out.push(k.clone());
                    keys(v, &format!("{k}."), out);
                }
            }
            serde_yaml::Value::Sequence(s) => {
                for v in s {
                    keys(v, prefix, out);
                }
            }
            _ => {}
        }
    }
    let mut have = Vec::new();
    keys(&serde_yaml::from_str(text).unwrap(), "", &mut have);
    for want in [
        "disk.device",
        "disk.select",
        "disk.minSizeGiB",
        "disk.wipe",
        "interfaces.name",
        "interfaces.mac",
        "interfaces.addresses",
        "interfaces.gateway",
        "interfaces.routes.to",
        "interfaces.routes.via",
        "dnsServers",
        "ntpServers",
        "rootSshKey",
        "join.caPin",
        "join.myIp",
        "join.timeout",
    ] {
        assert!(
            have.iter().any(|h| h == want),
            "{want} is not in the example"
        );
    }
}

#[test]
fn minimal_file_gets_defaults() {
    let n = parse_node(HEAD, "x").unwrap();
    assert_eq!(n.disk, DiskConfig::default());
    assert_eq!(n.join.timeout.0, Duration::from_secs(600));
    assert!(n.interfaces.is_empty() && n.my_ip().is_none());
}

#[test]
fn my_ip_defaults_to_the_first_address() {
    let n = parse_node(
        &format!("{HEAD}interfaces:\n- name: eth0\n  addresses: [10.1.0.5/24, 10.1.0.6/24]\n"),
        "x",
    )
    .unwrap();
    assert_eq!(n.my_ip(), Some("10.1.0.5".parse().unwrap()));
}

#[test]
fn hostname_is_required_and_header_checked() {
    let e = parse_node("apiVersion: dcn/v1alpha1\nkind: NodeConfig\n", "n.yaml").unwrap_err();
    assert!(e.message.contains("missing field `hostname`"), "{e}");
    let e = parse_node(
        "apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\nhostname: a\n",
        "n.yaml",
    )
    .unwrap_err();
    assert!(e.message.contains("expects kind NodeConfig"), "{e}");
}

#[test]
fn bad_values_name_path_and_line() {
    let cases: &[(&str, usize, &str, &str)] = &[
        ("hostname2: x\n", 4, "", "unknown field `hostname2`"),
        ("disk:\n  device: sda\n", 5, "disk.device", "invalid device"),
        (
            "disk:\n  select: biggest\n",
            5,
            "disk.select",
            "unknown variant",
        ),
        ("disk:\n  minSizeGiB: -1\n", 5, "disk.minSizeGiB", "invalid"),
        (
            "disk:\n  wipe: yes please\n",
            5,
            "disk.wipe",
            "invalid type",
        ),
        (
            "interfaces:\n- mac: 52:54:00:zz:00:01\n",
            5,
            "interfaces[0].mac",
            "invalid MAC",
        ),
        (
            "interfaces:\n- name: this-name-is-far-too-long\n",
            5,
            "interfaces[0].name",
            "invalid interface name",
        ),
        (
            "interfaces:\n- name: eth0\n  addresses: [10.0.0.5]\n",
            6,
            "interfaces[0].addresses[0]",
            "prefix length",
        ),
        (
            "interfaces:\n- name: eth0\n  addresses: [10.0.0.0/24]\n",
            6,
            "interfaces[0].addresses[0]",
            "network's own address",
        ),
        (
            "interfaces:\n- name: eth0\n  routes:\n  - to: 10.0.0.1/24\n    via: 10.0.0.1\n",
            7,
            "interfaces[0].routes[0].to",
            "host bits",
        ),
        (
            "interfaces:\n- name: eth0\n  gateway: 10.0.0.300\n",
            6,
            "interfaces[0].gateway",
            "invalid IP address",
        ),
        (
            "dnsServers: [dns.example]\n",
            4,
            "dnsServers[0]",
            "invalid IP address",
        ),
        (
            "ntpServers: [\"ntp server\"]\n",
            4,
            "ntpServers[0]",
            "invalid NTP server",
        ),
        // serde_yaml reports a top-level scalar's error at 1:1 (0: not checked).
        (
            "rootSshKey: hunter2\n",
            0,
            "rootSshKey",
            "invalid SSH public key",
        ),
        (
            "join:\n  caPin: sha256:xyz\n",
            5,
            "join.caPin",
            "invalid CA pin",
        ),
        ("join:\n  myIp: me\n", 5, "join.myIp", "invalid IP address"),
        (
            "join:\n  timeout: soon\n",
            5,
            "join.timeout",
            "invalid duration",
        ),
    ];
    for (body, line, path, msg) in cases {
        let e = err_of(body);
        if *line > 0 {
            assert_eq!(e.line, Some(*line), "{body}: {e}");
        }
        assert!(e.path.starts_with(path), "{body}: path {:?} in {e}", e.path);
        assert!(e.message.contains(msg), "{body}: {e}");
    }
}

#[test]
fn cross_field_errors_name_the_path() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "disk:\n  device: /dev/sda\n  select: largest\n",
            "disk",
            "not both",
        ),
        (
            "interfaces:\n- addresses: [10.0.0.5/24]\n",
            "interfaces[0]",
            "add `name: eno1`",
        ),
        (
            "interfaces:\n- name: eth0\n  mac: 52:54:00:00:00:01\n",
            "interfaces[0]",
            "not both",
        ),
        (
            "interfaces:\n- name: eth0\n  addresses: [10.0.0.5/24]\n  gateway: 10.9.0.1\n",
            "interfaces[0].gateway",
            "not in the subnet",
        ),
        (
            "interfaces:\n- name: eth0\n  addresses: [10.0.0.5/24]\n  gateway: 10.0.0.1\n- name: eth1\n  addresses: [10.1.0.5/24]\n  gateway: 10.1.0.1\n",
            "interfaces[1].gateway",
            "second default gateway",
        ),
        (
            "interfaces:\n- name: eth0\n  addresses: [10.0.0.5/24]\n  routes:\n  - to: 10.8.0.0/16\n    via: 10.7.0.1\n",
            "interfaces[0].routes[0].via",
            "not in the subnet",
        ),
        (
            "join:\n  myIp: 10.0.0.9\n",
            "join.myIp",
            "not one of the static addresses",
        ),
    ];
    for (body, path, msg) in cases {
        let e = err_of(body);
        assert_eq!(e.path, *path, "{body}: {e}");
        assert!(e.message.contains(msg), "{body}: {e}");
        assert!(e.to_string().starts_with("node.yaml: "), "{e}");
    }
}

#[test]
fn values_are_normalised() {
    assert_eq!(
        "52-54-00-AB-CD-EF".parse::<MacAddress>().unwrap().as_str(),
        "52:54:00:ab:cd:ef"
    );
    assert!("/dev/../etc/passwd".parse::<DevicePath>().is_err());
    assert!(
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB admin@x"
            .parse::<SshPublicKey>()
            .is_ok()
    );
}
