//! What recipes and the join need to know about the host they run on: its
//! CPUs and virtualisation, whether it is a container, the Open vSwitch
//! datapath it can use, and the address it is reached at. Read the same way
//! on the control plane and on an edge.

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

/// Facts about the host that recipes depend on.
#[derive(Debug, Clone)]
pub struct HostFacts {
    pub cpus: usize,
    /// `kvm` or `qemu`.
    pub virt_type: String,
    /// Running in a container (cgroups are read-only for libvirt).
    pub container: bool,
    /// `system` when the kernel has the Open vSwitch module, else `netdev`.
    pub ovs_datapath: String,
}

impl HostFacts {
    /// The `host` values of recipes: this host's name, address and facts.
    pub fn host_values(&self, hostname: &str, address: &str) -> BTreeMap<String, String> {
        [
            ("hostname", hostname),
            ("address", address),
            ("virtType", self.virt_type.as_str()),
            ("container", if self.container { "true" } else { "false" }),
            ("ovsDatapath", self.ovs_datapath.as_str()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// Read the facts of the host under `root`.
    pub fn detect(root: &Path) -> HostFacts {
        let cpuinfo = std::fs::read_to_string(root.join("proc/cpuinfo")).unwrap_or_default();
        let cpus = cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count()
            .max(1);
        let hw_virt = cpuinfo
            .lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
        let kvm = hw_virt && root.join("dev/kvm").exists();
        let release = nix::sys::utsname::uname()
            .map(|u| u.release().to_string_lossy().into_owned())
            .unwrap_or_default();
        let ovs_module = root.join("sys/module/openvswitch").exists()
            || module_file_exists(&root.join("lib/modules").join(&release));
        HostFacts {
            cpus,
            virt_type: if kvm { "kvm" } else { "qemu" }.into(),
            container: root.join("run/systemd/container").exists(),
            ovs_datapath: if ovs_module { "system" } else { "netdev" }.into(),
        }
    }
}

/// Whether an `openvswitch.ko*` exists under the kernel's module tree.
fn module_file_exists(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            module_file_exists(&p)
        } else {
            e.file_name()
                .to_string_lossy()
                .starts_with("openvswitch.ko")
        }
    })
}

/// The IPv4 address of the interface that holds the default route, or the
/// only non-loopback IPv4 address.
pub fn detect_address() -> Result<IpAddr> {
    let route = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    let default_iface = default_route_interface(&route);
    let mut candidates: Vec<(String, Ipv4Addr)> = Vec::new();
    for ifa in nix::ifaddrs::getifaddrs().context("listing network interfaces")? {
        let Some(addr) = ifa.address.as_ref().and_then(|a| a.as_sockaddr_in()) else {
            continue;
        };
        let ip = addr.ip();
        if !ip.is_loopback() {
            candidates.push((ifa.interface_name.clone(), ip));
        }
    }
    if let Some(iface) = default_iface
        && let Some((_, ip)) = candidates.iter().find(|(n, _)| *n == iface)
    {
        return Ok(IpAddr::V4(*ip));
    }
    match candidates.as_slice() {
        [(_, ip)] => Ok(IpAddr::V4(*ip)),
        [] => bail!(
            "this host has no non-loopback IPv4 address; configure one, or set controlPlane.address in the config"
        ),
        many => bail!(
            "cannot tell which address the control plane should use (no default route; addresses: {}); set controlPlane.address in the config",
            many.iter()
                .map(|(n, ip)| format!("{ip} on {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The interface of the IPv4 default route in `/proc/net/route` text.
fn default_route_interface(route: &str) -> Option<String> {
    route.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 7 && f[1] == "00000000" && f[7] == "00000000").then(|| f[0].to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_default_route_interface() {
        let route = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                     eth0\t0000F00A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
                     eth1\t00000000\t0100F00A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
        assert_eq!(default_route_interface(route).as_deref(), Some("eth1"));
        assert_eq!(default_route_interface("Iface\n"), None);
    }
}
