//! The node's static network in the live system, so the installer can
//! report its progress to the control plane: each of the node config's
//! interfaces, found by name or MAC among the kernel's links, gets its
//! addresses, its default gateway and its routes (with `ip`; `replace`, so
//! running again changes nothing). The installed system gets the same
//! settings as systemd-networkd files ([`super::target`]).

use crate::config::node::Interface;
use crate::host::{Cmd, Files, Runner};
use anyhow::{Result, bail};
use std::path::Path;

/// The kernel's network links (`/sys/class/net` of `files`) as (name,
/// MAC), loopback left out.
pub fn links(files: &Files, sys_class_net: &Path) -> Vec<(String, String)> {
    let names = files.list(sys_class_net).unwrap_or_default();
    let mut links: Vec<(String, String)> = (names.into_iter())
        .filter(|name| name != "lo")
        .map(|name| {
            let address = sys_class_net.join(&name).join("address");
            let mac = files
                .read_string(address)
                .ok()
                .flatten()
                .unwrap_or_default();
            (name, mac.trim().to_ascii_lowercase())
        })
        .collect();
    links.sort();
    links
}

/// The link an interface of the node config means.
fn find<'a>(iface: &Interface, links: &'a [(String, String)]) -> Result<&'a str> {
    let found = links.iter().find(|(name, mac)| {
        iface.name.as_ref().is_some_and(|n| n.as_str() == name)
            || iface.mac.as_ref().is_some_and(|m| m.as_str() == mac)
    });
    match found {
        Some((name, _)) => Ok(name),
        None => bail!(
            "no network link is {} (links here: {})",
            match (&iface.name, &iface.mac) {
                (Some(n), _) => format!("named {n}"),
                (None, Some(m)) => format!("at MAC {m}"),
                (None, None) => "named in the node config".to_string(),
            },
            if links.is_empty() {
                "none".to_string()
            } else {
                links
                    .iter()
                    .map(|(n, m)| format!("{n} {m}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
    }
}

/// Bring up every interface of the node config among `links`; one line
/// per interface saying what it got. Stops at the first failure.
pub fn bring_up(
    runner: &dyn Runner,
    interfaces: &[Interface],
    links: &[(String, String)],
) -> Result<Vec<String>> {
    let mut said = Vec::new();
    for iface in interfaces {
        let dev = find(iface, links)?;
        let ip = |what: &str, family: Option<bool>, args: Vec<String>| {
            let mut cmd = Cmd::new(format!("{what} on {dev} in the live system"), "ip");
            if family == Some(true) {
                cmd = cmd.arg("-6");
            }
            runner.run(&cmd.args(args).args(["dev", dev]))
        };
        ip(
            "bringing the link up",
            None,
            vec!["link".into(), "set".into(), "up".into()],
        )?;
        let mut got: Vec<String> = Vec::new();
        for a in &iface.addresses {
            ip(
                "adding an address",
                None,
                vec!["address".into(), "replace".into(), a.to_string()],
            )?;
            got.push(a.to_string());
        }
        if let Some(gw) = iface.gateway {
            ip(
                "setting the default route",
                Some(gw.is_ipv6()),
                vec![
                    "route".into(),
                    "replace".into(),
                    "default".into(),
                    "via".into(),
                    gw.to_string(),
                ],
            )?;
            got.push(format!("default via {gw}"));
        }
        for r in &iface.routes {
            let to = String::from(r.to);
            ip(
                "adding a route",
                Some(r.via.is_ipv6()),
                vec![
                    "route".into(),
                    "replace".into(),
                    to.clone(),
                    "via".into(),
                    r.via.to_string(),
                ],
            )?;
            got.push(format!("{to} via {}", r.via));
        }
        said.push(format!("{dev}: {}", got.join(", ")));
    }
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{CmdOutput, RecordingRunner};

    fn node(interfaces: &str) -> crate::config::NodeConfig {
        crate::config::parse_node(
            &format!(
                "apiVersion: dcn/v1alpha1\nkind: NodeConfig\nhostname: e\ninterfaces:\n{interfaces}"
            ),
            "n",
        )
        .unwrap()
    }

    fn links() -> Vec<(String, String)> {
        vec![
            ("ens3".into(), "52:54:00:aa:00:01".into()),
            ("ens4".into(), "52:54:00:aa:00:02".into()),
        ]
    }

    #[test]
    fn interfaces_found_by_mac_or_name_get_addresses_gateway_and_routes() {
        let node = node(
            "- mac: 52:54:00:AA:00:02\n  addresses: [10.240.1.20/24, 2001:db8::20/64]\n  gateway: 10.240.1.1\n  routes:\n  - to: 10.9.0.0/16\n    via: 10.240.1.254\n  - to: 2001:db8:9::/48\n    via: 2001:db8::1\n- name: ens3\n  addresses: [192.168.5.5/24]\n",
        );
        let runner = RecordingRunner::new();
        let said = bring_up(&runner, &node.interfaces, &links()).unwrap();
        assert_eq!(
            runner.command_lines(),
            [
                "ip link set up dev ens4",
                "ip address replace 10.240.1.20/24 dev ens4",
                "ip address replace 2001:db8::20/64 dev ens4",
                "ip route replace default via 10.240.1.1 dev ens4",
                "ip route replace 10.9.0.0/16 via 10.240.1.254 dev ens4",
                "ip -6 route replace 2001:db8:9::/48 via 2001:db8::1 dev ens4",
                "ip link set up dev ens3",
                "ip address replace 192.168.5.5/24 dev ens3",
            ]
        );
        assert_eq!(
            said,
            [
                "ens4: 10.240.1.20/24, 2001:db8::20/64, default via 10.240.1.1, 10.9.0.0/16 via 10.240.1.254, 2001:db8:9::/48 via 2001:db8::1",
                "ens3: 192.168.5.5/24",
            ]
        );
    }

    #[test]
    fn a_missing_link_or_a_failing_command_is_an_error_naming_it() {
        let node1 = node("- mac: 52:54:00:aa:00:09\n  addresses: [10.0.0.5/24]\n");
        let runner = RecordingRunner::new();
        let e = bring_up(&runner, &node1.interfaces, &links()).unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("at MAC 52:54:00:aa:00:09") && e.contains("ens3 52:54:00:aa:00:01"),
            "{e}"
        );
        assert!(runner.calls().is_empty(), "nothing ran");
        let node2 = node("- name: ens3\n  addresses: [10.0.0.5/24]\n");
        let runner = RecordingRunner::answering(|c| {
            if c.args.iter().any(|a| a == "address") {
                CmdOutput::failed(2, "RTNETLINK answers: Permission denied")
            } else {
                CmdOutput::ok("")
            }
        });
        let e = format!(
            "{:#}",
            bring_up(&runner, &node2.interfaces, &links()).unwrap_err()
        );
        assert!(
            e.contains("adding an address on ens3") && e.contains("Permission denied"),
            "{e}"
        );
    }

    #[test]
    fn links_are_read_from_sysfs_without_loopback() {
        let dir = tempfile::tempdir().unwrap();
        for (name, mac) in [("lo", "00:00:00:00:00:00"), ("eth0", "52:54:00:AB:CD:EF")] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
            std::fs::write(dir.path().join(name).join("address"), format!("{mac}\n")).unwrap();
        }
        let files = Files::new(dir.path(), false);
        assert_eq!(
            super::links(&files, Path::new("/")),
            [("eth0".to_string(), "52:54:00:ab:cd:ef".to_string())]
        );
        assert!(super::links(&files, Path::new("/none")).is_empty());
    }
}
