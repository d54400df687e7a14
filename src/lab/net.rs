//! The lab's network: a router namespace and one namespace per host, each
//! host on its own routed /24 (the control plane on 10.240.0.0/24, edge site
//! k on 10.240.k.0/24), so edges reach the control plane through a router as
//! in a spine-leaf DCN layout. Veth pairs are created inside the router
//! namespace and one end moved out, so the host's own network namespace is
//! never touched. Private addresses only.

use crate::host::{Cmd, Files, Runner};
use anyhow::Result;
use std::net::Ipv4Addr;

/// Name prefix of everything the lab creates in the kernel.
pub const PREFIX: &str = "dcnlab-";

/// The router namespace.
pub fn router_ns() -> String {
    format!("{PREFIX}router")
}

/// Addressing of one lab host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostNet {
    pub netns: String,
    /// The router's interface toward the host.
    pub router_link: String,
    pub address: Ipv4Addr,
    pub gateway: Ipv4Addr,
}

impl HostNet {
    /// Subnet `index` (0 = control plane, k = edge site k).
    pub fn new(host: &str, index: u8) -> HostNet {
        HostNet {
            netns: format!("{PREFIX}{host}"),
            router_link: format!("r-{host}"),
            address: Ipv4Addr::new(10, 240, index, 10),
            gateway: Ipv4Addr::new(10, 240, index, 1),
        }
    }
}

fn ip(runner: &dyn Runner, what: String, args: &[&str]) -> Result<()> {
    runner.run(&Cmd::new(what, "ip").args(args.iter().copied()))?;
    Ok(())
}

/// Whether a namespace exists.
pub fn netns_exists(name: &str) -> bool {
    std::path::Path::new("/run/netns").join(name).exists()
}

/// Create the router namespace (forwarding on).
pub fn create_router(runner: &dyn Runner) -> Result<()> {
    let ns = router_ns();
    ip(
        runner,
        format!("creating network namespace {ns}"),
        &["netns", "add", &ns],
    )?;
    ip(
        runner,
        "bringing up the router's loopback".into(),
        &["-n", &ns, "link", "set", "lo", "up"],
    )?;
    runner.run(&Cmd::new("enabling forwarding in the router", "ip").args([
        "netns",
        "exec",
        &ns,
        "sysctl",
        "-q",
        "-w",
        "net.ipv4.ip_forward=1",
    ]))?;
    Ok(())
}

/// Create the host's namespace and its routed link to the router.
pub fn create_host(runner: &dyn Runner, net: &HostNet) -> Result<()> {
    let router = router_ns();
    let ns = &net.netns;
    ip(
        runner,
        format!("creating network namespace {ns}"),
        &["netns", "add", ns],
    )?;
    ip(
        runner,
        format!("bringing up loopback in {ns}"),
        &["-n", ns, "link", "set", "lo", "up"],
    )?;
    ip(
        runner,
        format!("creating the link between the router and {ns}"),
        &[
            "-n",
            &router,
            "link",
            "add",
            &net.router_link,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
        ],
    )?;
    ip(
        runner,
        format!("moving eth0 into {ns}"),
        &["-n", &router, "link", "set", "eth0", "netns", ns],
    )?;
    let gw = format!("{}/24", net.gateway);
    let addr = format!("{}/24", net.address);
    ip(
        runner,
        "addressing the router's side".into(),
        &["-n", &router, "addr", "add", &gw, "dev", &net.router_link],
    )?;
    ip(
        runner,
        "bringing up the router's side".into(),
        &["-n", &router, "link", "set", &net.router_link, "up"],
    )?;
    ip(
        runner,
        format!("addressing eth0 in {ns}"),
        &["-n", ns, "addr", "add", &addr, "dev", "eth0"],
    )?;
    ip(
        runner,
        format!("bringing up eth0 in {ns}"),
        &["-n", ns, "link", "set", "eth0", "up"],
    )?;
    ip(
        runner,
        format!("routing {ns} through the router"),
        &[
            "-n",
            ns,
            "route",
            "add",
            "default",
            "via",
            &net.gateway.to_string(),
        ],
    )?;
    Ok(())
}

/// Give a host's uplink one more address on its subnet (a simulated
/// edge host's tunnel endpoint), unless it has it.
pub fn add_address(runner: &dyn Runner, netns: &str, address: Ipv4Addr) -> Result<()> {
    let out = runner.run(
        &Cmd::new(format!("listing the addresses in {netns}"), "ip")
            .args(["-n", netns, "-o", "addr", "show", "dev", "eth0"])
            .read_only(),
    )?;
    if out.stdout.contains(&format!(" {address}/")) {
        return Ok(());
    }
    let cidr = format!("{address}/24");
    ip(
        runner,
        format!("adding {address} in {netns}"),
        &["-n", netns, "addr", "add", &cidr, "dev", "eth0"],
    )
}

/// Turn a host's uplink into a bridge, for a namespace that carries VMs as
/// well as its own address (the bare-metal site): `br0` (no STP, no
/// forwarding delay, so a VM's first DHCP or ARP passes at once) enslaves
/// eth0 and takes over its address and the default route. Whatever plugs
/// into br0 (libvirt's taps) is then on the host's routed subnet. Run after
/// [`create_host`].
pub fn bridge_uplink(runner: &dyn Runner, net: &HostNet) -> Result<()> {
    let ns = net.netns.as_str();
    let addr = format!("{}/24", net.address);
    let gateway = net.gateway.to_string();
    let steps: [(&str, &[&str]); 8] = [
        ("creating br0", &["link", "add", "br0", "type", "bridge"]),
        (
            "turning off STP and the forwarding delay on br0",
            &[
                "link",
                "set",
                "br0",
                "type",
                "bridge",
                "stp_state",
                "0",
                "forward_delay",
                "0",
            ],
        ),
        // Flushing eth0's address also drops the default route through it.
        (
            "moving the address off eth0",
            &["addr", "flush", "dev", "eth0"],
        ),
        (
            "enslaving eth0 to br0",
            &["link", "set", "eth0", "master", "br0"],
        ),
        ("addressing br0", &["addr", "add", &addr, "dev", "br0"]),
        ("bringing up br0", &["link", "set", "br0", "up"]),
        ("bringing up eth0", &["link", "set", "eth0", "up"]),
        (
            "routing through the router from br0",
            &["route", "replace", "default", "via", &gateway],
        ),
    ];
    for (what, args) in steps {
        let mut full = vec!["-n", ns];
        full.extend_from_slice(args);
        ip(runner, format!("{what} in {ns}"), &full)?;
    }
    Ok(())
}

/// Cut or restore a host's link (the router side, as a WAN cut would).
pub fn set_link(runner: &dyn Runner, router_link: &str, up: bool) -> Result<()> {
    ip(
        runner,
        format!("setting {router_link} {}", if up { "up" } else { "down" }),
        &[
            "-n",
            &router_ns(),
            "link",
            "set",
            router_link,
            if up { "up" } else { "down" },
        ],
    )
}

/// What a link carries toward its host at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rate {
    /// The veth's full speed.
    Off,
    /// `tc`'s notation: `8mbit`, `500kbit`.
    Limit(String),
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rate::Off => f.write_str("full speed"),
            Rate::Limit(r) => write!(f, "at most {r}"),
        }
    }
}

/// `8mbit`, `500kbit`, `1gbit` (a number and a unit), or `off`.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    if s == "off" {
        return Ok(Rate::Off);
    }
    let digits = s.chars().take_while(char::is_ascii_digit).count();
    let (n, unit) = s.split_at(digits);
    match (n.parse::<u64>(), unit) {
        (Ok(n), "kbit" | "mbit" | "gbit") if n > 0 && n < 1_000_000 => Ok(Rate::Limit(s.into())),
        _ => Err(format!(
            "{s:?} is not a rate: write a number and kbit, mbit or gbit (8mbit), or off"
        )),
    }
}

/// Shape what `router_link` sends toward its host (a token bucket at
/// `rate`: the WAN's bandwidth), or take the shaping off.
pub fn set_rate(runner: &dyn Runner, router_link: &str, rate: &Rate) -> Result<()> {
    let ns = router_ns();
    // Replacing nothing is no error: clear what was there first.
    runner.run(
        &Cmd::new(format!("clearing the rate of {router_link}"), "tc")
            .args(["-n", &ns, "qdisc", "del", "dev", router_link, "root"])
            .unchecked(),
    )?;
    if let Rate::Limit(r) = rate {
        runner.run(
            &Cmd::new(format!("limiting {router_link} to {r}"), "tc").args([
                "-n",
                &ns,
                "qdisc",
                "add",
                "dev",
                router_link,
                "root",
                "tbf",
                "rate",
                r,
                "burst",
                "32kbit",
                "latency",
                "400ms",
            ]),
        )?;
    }
    Ok(())
}

/// The lab's namespaces (named in /run/netns), sorted.
pub fn lab_namespaces(files: &Files) -> Vec<String> {
    files
        .list("/run/netns")
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.starts_with(PREFIX))
        .collect()
}

/// Whether any process lives in a namespace. A namespace whose processes
/// all ended (the containers were killed with their session, say) holds
/// nothing but its interfaces and can be deleted safely.
pub fn netns_has_processes(runner: &dyn Runner, name: &str) -> Result<bool> {
    let out = runner.run(
        &Cmd::new(format!("listing the processes in {name}"), "ip")
            .args(["netns", "pids", name])
            .read_only(),
    )?;
    Ok(out.stdout.lines().any(|l| !l.trim().is_empty()))
}

/// Namespaces left by a lab that no longer runs: `Ok(names)` when no
/// process lives in any of them, an error naming the way out when one does.
pub fn orphaned_namespaces(runner: &dyn Runner, names: Vec<String>) -> Result<Vec<String>> {
    for name in &names {
        if netns_has_processes(runner, name)? {
            anyhow::bail!(
                "network namespace {name} exists and has processes: another lab is running; \
                 run `dcn lab down --dir DIR` with that lab's directory first"
            );
        }
    }
    Ok(names)
}

/// Delete a namespace (its veth ends go with it).
pub fn delete_netns(runner: &dyn Runner, name: &str) -> Result<()> {
    if netns_exists(name) {
        ip(
            runner,
            format!("deleting network namespace {name}"),
            &["netns", "delete", name],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{FileSpec, RecordingRunner};

    #[test]
    fn namespaces_without_processes_are_orphans_and_busy_ones_are_refused() {
        let names = vec![router_ns(), format!("{PREFIX}cp")];
        let empty = RecordingRunner::answering(|_| crate::host::CmdOutput::ok(""));
        assert_eq!(orphaned_namespaces(&empty, names.clone()).unwrap(), names);
        let busy = RecordingRunner::answering(|c| {
            crate::host::CmdOutput::ok(if c.command_line().ends_with("dcnlab-cp") {
                "4242\n"
            } else {
                ""
            })
        });
        let err = orphaned_namespaces(&busy, names).unwrap_err().to_string();
        assert!(
            err.contains("dcnlab-cp") && err.contains("lab down"),
            "{err}"
        );
    }

    #[test]
    fn only_the_labs_namespaces_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        for n in ["dcnlab-router", "dcnlab-cp", "other"] {
            files
                .write(format!("/run/netns/{n}"), b"", &FileSpec::public())
                .unwrap();
        }
        assert_eq!(
            lab_namespaces(&files),
            vec!["dcnlab-cp".to_string(), "dcnlab-router".to_string()]
        );
    }

    #[test]
    fn addressing_is_one_routed_subnet_per_host() {
        let cp = HostNet::new("cp", 0);
        let e2 = HostNet::new("edge2", 2);
        assert_eq!(cp.address, Ipv4Addr::new(10, 240, 0, 10));
        assert_eq!(e2.gateway, Ipv4Addr::new(10, 240, 2, 1));
        assert_eq!(e2.netns, "dcnlab-edge2");
        assert!(
            e2.router_link.len() <= 15,
            "interface names are at most 15 bytes"
        );
    }

    #[test]
    fn rates_are_a_number_and_a_unit_or_off() {
        assert_eq!(parse_rate("8mbit"), Ok(Rate::Limit("8mbit".into())));
        assert_eq!(parse_rate("off"), Ok(Rate::Off));
        for bad in [
            "", "8", "mbit", "8 mbit", "0mbit", "8mb", "-1kbit", "8mbit;x",
        ] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn links_are_made_inside_the_router_namespace() {
        let r = RecordingRunner::new();
        create_host(&r, &HostNet::new("edge1", 1)).unwrap();
        let lines = r.command_lines();
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with("ip netns add") || l.starts_with("ip -n ")),
            "{lines:?}"
        );
        assert!(lines.contains(
            &"ip -n dcnlab-router link add r-edge1 type veth peer name eth0".to_string()
        ));
        assert!(lines.contains(&"ip -n dcnlab-edge1 route add default via 10.240.1.1".to_string()));
    }

    #[test]
    fn a_bridged_uplink_carries_the_address_and_the_route() {
        let r = RecordingRunner::new();
        let net = HostNet {
            address: Ipv4Addr::new(10, 240, 3, 5),
            ..HostNet::new("bm1", 3)
        };
        bridge_uplink(&r, &net).unwrap();
        let lines = r.command_lines();
        let at = |l: &str| {
            lines
                .iter()
                .position(|x| x == l)
                .unwrap_or_else(|| panic!("{l} not in {lines:?}"))
        };
        let stp = at("ip -n dcnlab-bm1 link set br0 type bridge stp_state 0 forward_delay 0");
        let flush = at("ip -n dcnlab-bm1 addr flush dev eth0");
        let enslave = at("ip -n dcnlab-bm1 link set eth0 master br0");
        let addr = at("ip -n dcnlab-bm1 addr add 10.240.3.5/24 dev br0");
        let route = at("ip -n dcnlab-bm1 route replace default via 10.240.3.1");
        assert!(at("ip -n dcnlab-bm1 link add br0 type bridge") < stp);
        assert!(stp < enslave && flush < addr && enslave < addr && addr < route);
        assert!(lines.iter().all(|l| l.starts_with("ip -n dcnlab-bm1 ")));
    }
}
