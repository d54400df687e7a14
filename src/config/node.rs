//! `NodeConfig`: one edge node's settings, embedded into its copy of the
//! edge ISO next to the join bundle (`dcn image embed --node node.yaml`).
//! The installer on the ISO reads it to pick the disk, write the network
//! configuration and start `dcn join` on first boot. `hostname` is the one
//! required field; everything else has a documented default
//! (`images/edge/node.example.yaml` shows every field).

use super::{ApiVersion, ConfigError};
use crate::types::{Cidr, Hostname, HumanDuration, NodeName};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

/// An edge node's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeConfig {
    pub api_version: ApiVersion,
    pub kind: NodeKind,
    /// The node's host name (also nova's `host` and OVN's chassis name).
    pub hostname: NodeName,
    /// Which disk the OS goes to.
    #[serde(default)]
    pub disk: DiskConfig,
    /// Static network configuration; interfaces not listed stay down.
    #[serde(default)]
    pub interfaces: Vec<Interface>,
    /// Name servers for /etc/resolv.conf; none: no DNS (the bundle's hosts
    /// entries name the control plane).
    #[serde(default)]
    pub dns_servers: Vec<IpAddr>,
    /// NTP servers for chrony; none: Debian's default pool.
    #[serde(default)]
    pub ntp_servers: Vec<NtpServer>,
    /// A public key allowed to log in as root over SSH; none: no SSH login.
    #[serde(default)]
    pub root_ssh_key: Option<SshPublicKey>,
    /// How the node joins on first boot.
    #[serde(default)]
    pub join: JoinSettings,
}

/// The `kind` of a [`NodeConfig`] file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum NodeKind {
    #[default]
    NodeConfig,
}

/// The target disk: a device path, or a rule that picks exactly one disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct DiskConfig {
    /// A device path (`/dev/sda`, `/dev/disk/by-path/...`); set it or
    /// `select`, not both.
    pub device: Option<DevicePath>,
    /// Without `device`: which of the non-removable disks of at least
    /// `minSizeGiB` to take: `only` (there must be exactly one), `smallest`
    /// or `largest` (refused when two disks tie).
    pub select: DiskSelect,
    /// Disks smaller than this are not candidates.
    #[serde(rename = "minSizeGiB")]
    pub min_size_gib: u64,
    /// Allow erasing a disk that already has partitions.
    pub wipe: bool,
}

impl Default for DiskConfig {
    fn default() -> Self {
        DiskConfig {
            device: None,
            select: DiskSelect::Only,
            min_size_gib: 8,
            wipe: false,
        }
    }
}

/// How a disk is selected among the candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiskSelect {
    #[default]
    Only,
    Smallest,
    Largest,
}

/// One network interface, matched by name or by MAC address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Interface {
    /// The kernel's name for it (`eno1`); set it or `mac`, not both.
    #[serde(default)]
    pub name: Option<InterfaceName>,
    /// Its MAC address (`52:54:00:12:34:56`).
    #[serde(default)]
    pub mac: Option<MacAddress>,
    /// Static addresses with their prefix length (`10.240.1.20/24`).
    #[serde(default)]
    pub addresses: Vec<InterfaceAddress>,
    /// The default gateway through this interface.
    #[serde(default)]
    pub gateway: Option<IpAddr>,
    /// Further static routes.
    #[serde(default)]
    pub routes: Vec<Route>,
}

/// A static route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Route {
    /// The destination network (`10.240.0.0/24`).
    pub to: Cidr,
    /// The next hop.
    pub via: IpAddr,
}

/// What `dcn join` gets on first boot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct JoinSettings {
    /// The CA pin printed by `dcn bundle export` (`sha256:HEX`); checked
    /// when embedding, when installing and by join. None: the bundle's CA is
    /// trusted on first use.
    pub ca_pin: Option<CaPin>,
    /// The address the compute services use (nova `my_ip`, the OVN tunnel
    /// endpoint); none: the first static address.
    pub my_ip: Option<IpAddr>,
    /// How long one `dcn join` attempt waits for the control plane before it
    /// gives up; systemd starts it again 30 s later, until it has joined.
    pub timeout: HumanDuration,
}

impl Default for JoinSettings {
    fn default() -> Self {
        JoinSettings {
            ca_pin: None,
            my_ip: None,
            timeout: HumanDuration(Duration::from_secs(600)),
        }
    }
}

impl NodeConfig {
    /// The address given to `dcn join --my-ip`: `join.myIp`, else the first
    /// static address.
    pub fn my_ip(&self) -> Option<IpAddr> {
        self.join.my_ip.or_else(|| {
            self.interfaces
                .iter()
                .flat_map(|i| &i.addresses)
                .map(|a| a.0.addr())
                .next()
        })
    }

    /// Checks that span fields: each interface matched one way, a disk named
    /// one way, gateways reachable on their interface, `myIp` local.
    pub fn validate(&self, file: &str) -> Result<(), ConfigError> {
        let err = |path: String, message: String| ConfigError::at(file, path, message);
        if self.disk.device.is_some() && self.disk.select != DiskSelect::Only {
            return Err(err(
                "disk".into(),
                "set either `device` or `select`, not both".into(),
            ));
        }
        let mut gateways = (0, 0);
        for (i, iface) in self.interfaces.iter().enumerate() {
            let path = format!("interfaces[{i}]");
            match (&iface.name, &iface.mac) {
                (Some(_), Some(_)) => {
                    return Err(err(path, "match by `name` or by `mac`, not both".into()));
                }
                (None, None) => {
                    return Err(err(
                        path,
                        "say which interface this is: add `name: eno1` or `mac: 52:54:00:12:34:56`"
                            .into(),
                    ));
                }
                _ => {}
            }
            if let Some(gw) = iface.gateway {
                if !iface.addresses.iter().any(|a| a.0.contains(&gw)) {
                    return Err(err(
                        format!("{path}.gateway"),
                        format!(
                            "{gw} is not in the subnet of any of this interface's addresses; add an address in its subnet, or use `routes`"
                        ),
                    ));
                }
                let n = if gw.is_ipv4() {
                    &mut gateways.0
                } else {
                    &mut gateways.1
                };
                *n += 1;
                if *n > 1 {
                    return Err(err(
                        format!("{path}.gateway"),
                        "a second default gateway of the same IP family; keep one and use `routes` for the rest".into(),
                    ));
                }
            }
            for (j, r) in iface.routes.iter().enumerate() {
                if !iface.addresses.iter().any(|a| a.0.contains(&r.via)) {
                    return Err(err(
                        format!("{path}.routes[{j}].via"),
                        format!(
                            "{} is not in the subnet of any of this interface's addresses",
                            r.via
                        ),
                    ));
                }
            }
        }
        if let Some(ip) = self.join.my_ip
            && !self
                .interfaces
                .iter()
                .flat_map(|i| &i.addresses)
                .any(|a| a.0.addr() == ip)
        {
            return Err(err(
                "join.myIp".into(),
                format!("{ip} is not one of the static addresses under `interfaces`"),
            ));
        }
        Ok(())
    }
}

/// Parse and validate a `NodeConfig` (named `file` in errors).
pub fn parse_node(text: &str, file: &str) -> Result<NodeConfig, ConfigError> {
    super::check_header(text, file, "NodeConfig")?;
    let node: NodeConfig = super::parse(text, file)?;
    node.validate(file)?;
    Ok(node)
}

/// Read, parse and validate a `NodeConfig` file.
pub fn load_node(path: &std::path::Path) -> anyhow::Result<NodeConfig> {
    let text = crate::yaml::read_file(path)
        .map_err(|e| anyhow::anyhow!("cannot read the node config: {e}"))?;
    Ok(parse_node(&text, &path.display().to_string())?)
}

crate::types::string_newtype!(
    /// A block device path under /dev.
    DevicePath,
    normalize =    |s| {
        let ok = s.starts_with("/dev/")
            && s.len() > 5
            && !s.split('/').any(|c| c == "..")
            && s.bytes().all(|b| b.is_ascii_graphic());
        if ok {
            Ok(s.to_string())
        } else {
            Err(format!("invalid device {s:?}: write a path under /dev, e.g. /dev/sda or /dev/disk/by-path/pci-0000:00:1f.2-ata-1"))
        }
    }
);

crate::types::string_newtype!(
    /// A network interface name as the kernel has it (1-15 characters).
    InterfaceName,
    normalize =    |s| {
        let ok = (1..=15).contains(&s.len())
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:@".contains(&b));
        if ok {
            Ok(s.to_string())
        } else {
            Err(format!("invalid interface name {s:?}: use 1-15 letters, digits, '-', '_', '.'"))
        }
    }
);

crate::types::string_newtype!(
    /// A MAC address, stored lowercase (`52:54:00:12:34:56`).
    MacAddress,
    normalize =    |s| {
        let parts: Vec<&str> = s.split([':', '-']).collect();
        let ok = parts.len() == 6
            && parts
                .iter()
                .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()));
        if ok {
            Ok(parts.join(":").to_ascii_lowercase())
        } else {
            Err(format!("invalid MAC address {s:?}: write six hex pairs, e.g. 52:54:00:12:34:56"))
        }
    }
);

crate::types::string_newtype!(
    /// An NTP server: a host name or an IP address.
    NtpServer,
    normalize =    |s| {
        if s.parse::<IpAddr>().is_ok() || s.parse::<Hostname>().is_ok() {
            Ok(s.to_string())
        } else {
            Err(format!("invalid NTP server {s:?}: write a host name or an IP address"))
        }
    }
);

crate::types::string_newtype!(
    /// One OpenSSH public key line (`ssh-ed25519 AAAA... comment`).
    SshPublicKey,
    normalize =    |s| {
        let s = s.trim();
        let mut words = s.split_whitespace();
        let kind = words.next().unwrap_or_default();
        let body = words.next().unwrap_or_default();
        let known = kind.starts_with("ssh-")
            || kind.starts_with("ecdsa-sha2-")
            || kind.starts_with("sk-");
        let base64 = body.len() >= 16
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b));
        if known && base64 && !s.contains('\n') {
            Ok(s.to_string())
        } else {
            Err("invalid SSH public key: paste one line of a .pub file, e.g. `ssh-ed25519 AAAAC3Nza... admin@example`".to_string())
        }
    }
);

crate::types::string_newtype!(
    /// A CA pin, `sha256:` and 64 hex digits, as `dcn bundle export` prints.
    CaPin,
    normalize =    |s| {
        s.parse::<crate::pki::Pin>()
            .map(|p| p.to_string())
            .map_err(|e| format!("invalid CA pin {s:?} ({e}): copy the sha256:... pin `dcn bundle export` printed"))
    }
);

impl CaPin {
    pub fn pin(&self) -> crate::pki::Pin {
        self.0.parse().expect("checked when read")
    }
}

/// An interface address with its prefix length: `10.240.1.20/24`. Unlike a
/// [`Cidr`] it names a host, so host bits are expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct InterfaceAddress(pub ipnet::IpNet);

impl TryFrom<String> for InterfaceAddress {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let net: ipnet::IpNet = s.parse().map_err(|_| {
            format!("invalid address {s:?}: write the address and its prefix length, e.g. 10.240.1.20/24")
        })?;
        let host_prefix = if net.addr().is_ipv4() { 32 } else { 128 };
        if net.prefix_len() < host_prefix && net.addr() == net.network() {
            return Err(format!(
                "invalid address {s:?}: that is the network's own address; give this host's address in it"
            ));
        }
        Ok(InterfaceAddress(net))
    }
}

impl From<InterfaceAddress> for String {
    fn from(a: InterfaceAddress) -> String {
        a.0.to_string()
    }
}

impl fmt::Display for InterfaceAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests;
