//! The carrier's side of the scale harness (`dcn lab chassis`, run inside
//! a lab container): simulated edge hosts joined through dcn's real join
//! path, each then a real `ovn-controller` with its own chassis name,
//! node certificate, tunnel address and integration bridge, all sharing
//! the container's one Open vSwitch.
//!
//! Each host's join state (its key, which never leaves it, its
//! certificate and site credentials) lives under `STATE/<name>/`, laid out
//! as on a real edge, so a second run finds it and joins no one twice.
//! The controllers run as transient systemd units (`dcn-sim-<name>`),
//! restarted when they die, at a lower CPU priority than the control
//! plane's services they load. With `--compute fake`, each also runs a
//! nova-compute ([`super::fake_compute`]); with `--compute replayed`, the
//! carrier's compute replayer sends what that nova-compute would
//! ([`super::compute_replay`]). A host already joined is switched to the
//! load asked for.

use super::plan::ComputeLoad;
use super::sim_node::SimNode;
use crate::bundle::{ReadOptions, VerifiedBundle, read_bundle_file};
use crate::edge::join::client::JoinClient;
use crate::edge::join::edge::{NODE_CERT, NODE_KEY, kept, request};
use crate::host::command::{Cmd, Runner, SystemRunner};
use crate::host::{FileSpec, Files, Host};
use crate::pki::Pin;
use crate::recipes::Recipes;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where each simulated host keeps its join state, by default.
pub const DEFAULT_STATE: &str = "/var/lib/dcn-scale";

/// The southbound server's CA, for every controller of the carrier, in
/// the state directory.
const CA_FILE: &str = "ca.pem";

/// What `dcn lab chassis` is asked to do.
pub struct ChassisOptions {
    pub bundle: PathBuf,
    pub ca_pin: Pin,
    /// (host name, its tunnel address on this carrier).
    pub hosts: Vec<(String, Ipv4Addr)>,
    pub state: PathBuf,
    /// How long each join may keep trying.
    pub timeout: Duration,
    /// Each host's compute load, if any.
    pub compute: Option<ComputeLoad>,
}

/// One simulated host's join, as the harness reports it.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChassisJoin {
    pub name: String,
    /// The join request's round trip: the control plane's admission,
    /// accounts and certificate for this host.
    pub join_seconds: f64,
    /// It had joined before (its kept credentials were used).
    pub kept: bool,
}

/// Join every host the options name (all at once) and start its
/// controller. Fails when any join fails, naming each.
pub fn join_and_start(recipes: &Recipes, opts: &ChassisOptions) -> Result<Vec<ChassisJoin>> {
    let bundle = read_bundle_file(
        recipes,
        &opts.bundle,
        &ReadOptions::new().with_pin(Some(opts.ca_pin.clone())),
    )?;
    let files = Files::new("/", false);
    files.ensure_dir(&opts.state, &FileSpec::private_dir())?;
    // The controllers' pid files (their control sockets are named by
    // their PIDs, so they never collide).
    files.ensure_dir("/run/ovn", &FileSpec::public_dir())?;
    files.write(
        opts.state.join(CA_FILE),
        bundle.trusted_pem().as_bytes(),
        &FileSpec::public(),
    )?;
    crate::edge::join::edge::write_hosts(&files, &bundle.manifest)?;
    if opts.compute.is_some() {
        // Where nova-compute's rendered config reads the control plane's CA.
        files.write(
            crate::paths::PUBLIC_CA,
            bundle.trusted_pem().as_bytes(),
            &FileSpec::public(),
        )?;
    }
    let runner = SystemRunner::new(false);
    // A spare edge has its packages but nothing started: Open vSwitch
    // first (ovn-controller's own unit stays off; each chassis has one).
    super::carrier::start_open_vswitch(&runner)?;
    let results: Vec<Result<ChassisJoin>> = std::thread::scope(|scope| {
        let jobs: Vec<_> = (opts.hosts.iter())
            .map(|(name, address)| {
                let (bundle, runner) = (&bundle, &runner);
                scope.spawn(move || {
                    let join = join_one(recipes, opts, bundle, name, *address)?;
                    let node = SimNode {
                        recipes,
                        bundle,
                        name,
                        address: *address,
                        state: &opts.state,
                    };
                    start(runner, &node)?;
                    match opts.compute {
                        Some(ComputeLoad::Fake) => super::fake_compute::start(runner, &node)?,
                        Some(ComputeLoad::Replayed) => super::compute_replay::start(runner, &node)?,
                        Some(ComputeLoad::Off) => {
                            super::fake_compute::stop(runner, name)?;
                            super::compute_replay::unmark(&node.root())?;
                        }
                        None => {}
                    }
                    Ok(join)
                })
            })
            .collect();
        jobs.into_iter()
            .map(|j| (j.join()).unwrap_or_else(|_| Err(anyhow::anyhow!("a join thread panicked"))))
            .collect()
    });
    let mut joins = Vec::new();
    let mut failed = Vec::new();
    for (r, (name, _)) in results.into_iter().zip(&opts.hosts) {
        match r {
            Ok(j) => joins.push(j),
            Err(e) => failed.push(format!("{name}: {e:#}")),
        }
    }
    if !failed.is_empty() {
        bail!(
            "{} of {} simulated hosts failed:\n{}",
            failed.len(),
            opts.hosts.len(),
            failed.join("\n")
        );
    }
    Ok(joins)
}

/// The real join request for one host, its state under `STATE/<name>`
/// (or what an earlier run kept there).
fn join_one(
    recipes: &Recipes,
    opts: &ChassisOptions,
    bundle: &VerifiedBundle,
    name: &str,
    address: Ipv4Addr,
) -> Result<ChassisJoin> {
    let node = Host::system(opts.state.join(name), false);
    // From the host's own address, as a real edge's join comes: the join
    // service limits requests per address.
    let client = JoinClient::from_address(
        bundle.manifest.control_plane.join_endpoint.as_str(),
        &bundle.trusted_pem(),
        Some(IpAddr::V4(address)),
    )?;
    let started = Instant::now();
    if kept(recipes, &node.files)?.is_some() {
        return Ok(ChassisJoin {
            name: name.into(),
            join_seconds: 0.0,
            kept: true,
        });
    }
    let deadline = Instant::now() + opts.timeout;
    request(
        recipes,
        &node,
        &client,
        bundle,
        name,
        IpAddr::V4(address),
        deadline,
    )
    .with_context(|| format!("joining {name}"))?;
    Ok(ChassisJoin {
        name: name.into(),
        join_seconds: started.elapsed().as_secs_f64(),
        kept: false,
    })
}

/// The Open vSwitch settings of one chassis on a shared switch: the keys
/// an edge sets, each suffixed with the chassis name (which
/// `ovn-controller -n NAME` reads before the plain key), its own
/// integration and provider bridges, and its site as its transport zone.
fn chassis_settings(
    network: &std::collections::BTreeMap<String, String>,
    southbound: &str,
    site: &str,
    name: &str,
    address: Ipv4Addr,
) -> Result<Vec<String>> {
    let value = |key: &str| {
        network.get(key).cloned().with_context(|| {
            format!(
                "the edge role's recipe has no network value {key}: this dcn's recipes are broken"
            )
        })
    };
    let pairs = [
        ("ovn-remote", southbound.to_string()),
        ("ovn-encap-type", value("encapsulation")?),
        ("ovn-encap-ip", address.to_string()),
        ("ovn-bridge", integration_bridge(name)),
        ("ovn-bridge-datapath-type", "netdev".into()),
        (
            "ovn-bridge-mappings",
            provider_mappings(&value("bridgeMappings")?, name),
        ),
        ("hostname", name.into()),
        ("ovn-transport-zones", site.into()),
        (
            "ovn-cms-options",
            format!("\"enable-chassis-as-gw,availability-zones={site}\""),
        ),
    ];
    Ok(pairs
        .iter()
        .map(|(k, v)| format!("external-ids:{k}-{name}={v}"))
        .collect())
}

/// `physnet:br-ex` with each bridge replaced by the chassis' own.
fn provider_mappings(mappings: &str, name: &str) -> String {
    (mappings.split(','))
        .map(|m| match m.split_once(':') {
            Some((net, _)) => format!("{net}:{}", provider_bridge(name)),
            None => m.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn integration_bridge(name: &str) -> String {
    format!("bi-{name}")
}

fn provider_bridge(name: &str) -> String {
    format!("bx-{name}")
}

/// The transient unit of a chassis' controller.
fn unit(name: &str) -> String {
    format!("dcn-sim-{name}")
}

/// Set the chassis' switch settings and bridges, then start its
/// controller (unless it runs).
fn start(runner: &dyn Runner, node: &SimNode) -> Result<()> {
    let (bundle, name, address) = (node.bundle, node.name, node.address);
    let role = node.recipes.role(crate::recipes::catalogue::EDGE_ROLE)?;
    let southbound = (bundle.manifest.control_plane.exports.get("ovnSouthbound"))
        .context("the bundle exports no ovnSouthbound; export a new bundle with this dcn")?;
    let site = bundle.manifest.site.as_str();
    let settings = chassis_settings(&role.network, southbound.as_str(), site, name, address)?;
    runner.run(
        &Cmd::new(
            format!("setting chassis {name}'s switch options"),
            "ovs-vsctl",
        )
        .args(["--timeout=30", "set", "open", "."])
        .args(settings),
    )?;
    for bridge in [integration_bridge(name), provider_bridge(name)] {
        runner.run(
            &Cmd::new(format!("adding bridge {bridge}"), "ovs-vsctl")
                .args([
                    "--timeout=30",
                    "--may-exist",
                    "add-br",
                    &bridge,
                    "--",
                    "set",
                ])
                .args(["bridge", &bridge, "datapath_type=netdev"]),
        )?;
    }
    let unit = unit(name);
    if !super::carrier::needs_start(runner, &unit)? {
        return Ok(());
    }
    let root = node.root();
    let path = |p: &str| root.join(p.trim_start_matches('/')).display().to_string();
    runner.run(
        &Cmd::new(
            format!("starting chassis {name}'s ovn-controller"),
            "systemd-run",
        )
        .args([
            format!("--unit={unit}"),
            "--collect".into(),
            "--nice=10".into(),
        ])
        .args(["--property=Restart=always", "--property=RestartSec=2"])
        .args(["ovn-controller", "-n", name])
        .args(["-p", &path(NODE_KEY), "-c", &path(NODE_CERT), "-C"])
        .arg(node.state.join(CA_FILE).display().to_string())
        .args([
            format!("--pidfile=/run/ovn/{unit}.pid"),
            format!("--log-file=/var/log/ovn/{unit}.log"),
            "-vconsole:off".into(),
            "-vfile:info".into(),
            "unix:/run/openvswitch/db.sock".into(),
        ]),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_is_the_chassis_own() {
        let recipes = Recipes::embedded().unwrap();
        let role = recipes.role(crate::recipes::catalogue::EDGE_ROLE).unwrap();
        let s = chassis_settings(
            &role.network,
            "ssl:cp:6642",
            "s001",
            "s001n01",
            Ipv4Addr::new(10, 240, 1, 20),
        )
        .unwrap();
        assert!(
            s.iter()
                .all(|kv| kv.split('=').next().unwrap().ends_with("-s001n01")),
            "{s:?}"
        );
        assert!(
            s.contains(&"external-ids:ovn-encap-ip-s001n01=10.240.1.20".to_string()),
            "{s:?}"
        );
        assert!(
            s.contains(&"external-ids:ovn-bridge-s001n01=bi-s001n01".to_string()),
            "{s:?}"
        );
        assert!(
            s.contains(&"external-ids:ovn-transport-zones-s001n01=s001".to_string()),
            "{s:?}"
        );
        assert!(
            s.iter()
                .any(|kv| kv.starts_with("external-ids:ovn-remote-s001n01=ssl:")),
            "{s:?}"
        );
    }

    #[test]
    fn provider_bridges_are_the_chassis_own() {
        assert_eq!(
            provider_mappings("physnet1:br-ex", "s001n01"),
            "physnet1:bx-s001n01"
        );
        assert_eq!(provider_mappings("a:br-a,b:br-b", "x"), "a:bx-x,b:bx-x");
        // Interface names in the kernel (the netdev datapath's taps) have
        // 15 characters at most.
        assert!(provider_bridge("s999n99").len() <= 15);
        assert!(integration_bridge("s999n99").len() <= 15);
    }
}
