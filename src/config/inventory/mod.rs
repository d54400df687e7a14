//! `SiteInventory`: the nodes of one edge site, for `dcn site deploy`. Per
//! node: its host name, its BMC (endpoint, how its certificate is trusted,
//! where its password is: a file or an environment variable, never the
//! file itself) and any `NodeConfig` field, over defaults shared by every
//! node (`nodeDefaults`; a node's own field replaces the default's whole).
//!
//! Read like every dcn config (header first, the YAML guard, unknown fields
//! refused with their path), then checked as a whole ([`checks`]): unique
//! host names, BMC systems, addresses and MACs, and each node's merged
//! [`NodeConfig`] valid, its errors named by their place in the inventory.
//! `images/edge/site.example.yaml` shows every field.

mod bmc;
mod checks;

pub use bmc::{BmcCredentials, BmcEndpoint, BmcPin, BmcSettings, BmcTls, BmcUsername};
pub use bmc::{EnvVarName, SystemId};

use super::node::SshPublicKey;
use super::node::{DiskConfig, Interface, JoinSettings, NodeConfig, NodeKind, NtpServer};
use super::{ApiVersion, ConfigError};
use crate::types::{AbsolutePath, HumanDuration, NodeName, SiteName};
use reqwest::Url;
use serde::{Deserialize, Deserializer};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

/// One edge site's nodes and how to deploy them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SiteInventory {
    pub api_version: ApiVersion,
    pub kind: InventoryKind,
    /// The site (its zone) the nodes join.
    pub site: SiteName,
    /// The generic edge ISO (`dcn image build`) each node's copy is made from.
    pub image: AbsolutePath,
    #[serde(default)]
    pub bundle: InventoryBundle,
    /// How the per-node ISOs are served to the BMCs.
    pub media: MediaSettings,
    /// `NodeConfig` fields every node gets unless it sets its own.
    #[serde(default)]
    pub node_defaults: NodeSettings,
    pub nodes: Vec<InventoryNode>,
}

/// The `kind` of a [`SiteInventory`] file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum InventoryKind {
    #[default]
    SiteInventory,
}

/// The bundle a deploy exports for the site.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct InventoryBundle {
    /// Its lifetime (1s to 365d), within which the nodes must join.
    #[serde(deserialize_with = "super::standalone::bundle_ttl")]
    pub ttl: HumanDuration,
}

impl Default for InventoryBundle {
    fn default() -> Self {
        InventoryBundle {
            ttl: HumanDuration(Duration::from_secs(24 * 3600)),
        }
    }
}

/// Where dcn serves the per-node ISOs, which hold a join token.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MediaSettings {
    /// The address and port dcn listens on.
    pub listen: SocketAddr,
    /// How the BMCs reach it; none: from `listen` and the scheme.
    #[serde(default)]
    pub url: Option<MediaUrl>,
    /// Plain HTTP instead of HTTPS with the dcn CA.
    #[serde(default)]
    pub insecure_http: bool,
}

impl MediaSettings {
    /// The base URL the BMCs fetch the ISOs under (ends with `/`).
    pub fn url(&self) -> Url {
        match &self.url {
            Some(u) => u.url(),
            None => {
                let scheme = if self.insecure_http { "http" } else { "https" };
                Url::parse(&format!("{scheme}://{}/", self.listen)).expect("a socket address")
            }
        }
    }
}

crate::types::string_newtype!(
    /// The base URL BMCs fetch the ISOs from: http(s)://HOST[:PORT][/PATH/],
    /// stored with a trailing `/`.
    MediaUrl,
    normalize = |s| {
        let bad = |why: &str| Err(format!("invalid media URL {s:?}: {why}"));
        let Ok(mut url) = Url::parse(s) else {
            return bad("write the URL the BMCs fetch from, e.g. https://10.240.0.2:8443/");
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err("a media URL carries no credentials: the ISOs are fetched without any".to_string());
        }
        if !matches!(url.scheme(), "https" | "http") || url.host_str().is_none() {
            return bad("write https://HOST[:PORT]/ (http:// with insecureHttp: true)");
        }
        if url.query().is_some() || url.fragment().is_some() {
            return bad("no ?query or #fragment: dcn adds each ISO's name to the path");
        }
        if !url.path().ends_with('/') {
            let path = format!("{}/", url.path());
            url.set_path(&path);
        }
        Ok(url.to_string())
    }
);

impl MediaUrl {
    pub fn url(&self) -> Url {
        Url::parse(self.as_str()).expect("checked when read")
    }
}

/// `NodeConfig` fields, each optional: in `nodeDefaults` and on a node.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeSettings {
    #[serde(default)]
    pub disk: Option<DiskConfig>,
    #[serde(default)]
    pub interfaces: Option<Vec<Interface>>,
    #[serde(default)]
    pub dns_servers: Option<Vec<IpAddr>>,
    #[serde(default)]
    pub ntp_servers: Option<Vec<NtpServer>>,
    /// `Some(None)`: written as null, so no key even if the defaults have one.
    #[serde(default, deserialize_with = "given")]
    pub root_ssh_key: Option<Option<SshPublicKey>>,
    #[serde(default)]
    pub join: Option<JoinSettings>,
}

impl NodeSettings {
    /// Whether the field named `key` (as in the file) is set.
    pub fn has(&self, key: &str) -> bool {
        match key {
            "disk" => self.disk.is_some(),
            "interfaces" => self.interfaces.is_some(),
            "dnsServers" => self.dns_servers.is_some(),
            "ntpServers" => self.ntp_servers.is_some(),
            "rootSshKey" => self.root_ssh_key.is_some(),
            "join" => self.join.is_some(),
            _ => false,
        }
    }
}

/// A field that is present, even as null.
fn given<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// One node: its host name, its BMC and its own `NodeConfig` fields.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "RawNode")]
pub struct InventoryNode {
    pub hostname: NodeName,
    pub bmc: BmcSettings,
    pub settings: NodeSettings,
}

/// A node as written: `hostname`, `bmc` and the `NodeConfig` fields side
/// by side (serde's `flatten` would lose unknown-field checks and paths).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawNode {
    hostname: NodeName,
    bmc: BmcSettings,
    #[serde(default)]
    disk: Option<DiskConfig>,
    #[serde(default)]
    interfaces: Option<Vec<Interface>>,
    #[serde(default)]
    dns_servers: Option<Vec<IpAddr>>,
    #[serde(default)]
    ntp_servers: Option<Vec<NtpServer>>,
    #[serde(default, deserialize_with = "given")]
    root_ssh_key: Option<Option<SshPublicKey>>,
    #[serde(default)]
    join: Option<JoinSettings>,
}

impl From<RawNode> for InventoryNode {
    fn from(r: RawNode) -> Self {
        InventoryNode {
            hostname: r.hostname,
            bmc: r.bmc,
            settings: NodeSettings {
                disk: r.disk,
                interfaces: r.interfaces,
                dns_servers: r.dns_servers,
                ntp_servers: r.ntp_servers,
                root_ssh_key: r.root_ssh_key,
                join: r.join,
            },
        }
    }
}

impl SiteInventory {
    /// The node named `hostname`.
    pub fn node(&self, hostname: &str) -> Option<&InventoryNode> {
        self.nodes.iter().find(|n| n.hostname.as_str() == hostname)
    }

    /// The `NodeConfig` of the node named `hostname`: its own fields over
    /// `nodeDefaults`, validated when the inventory was read. `join.caPin`
    /// is as written (usually unset: the deploy fills in its CA's pin).
    pub fn node_config(&self, hostname: &str) -> Option<NodeConfig> {
        self.node(hostname).map(|n| self.merged(n))
    }

    /// `node`'s own fields over the defaults, each replaced as a whole.
    fn merged(&self, node: &InventoryNode) -> NodeConfig {
        fn pick<T: Clone>(own: &Option<T>, default: &Option<T>) -> Option<T> {
            own.as_ref().or(default.as_ref()).cloned()
        }
        let (own, d) = (&node.settings, &self.node_defaults);
        // A struct literal, so a new NodeConfig field cannot be forgotten here.
        NodeConfig {
            api_version: ApiVersion::V1Alpha1,
            kind: NodeKind::NodeConfig,
            hostname: node.hostname.clone(),
            disk: pick(&own.disk, &d.disk).unwrap_or_default(),
            interfaces: pick(&own.interfaces, &d.interfaces).unwrap_or_default(),
            dns_servers: pick(&own.dns_servers, &d.dns_servers).unwrap_or_default(),
            ntp_servers: pick(&own.ntp_servers, &d.ntp_servers).unwrap_or_default(),
            root_ssh_key: pick(&own.root_ssh_key, &d.root_ssh_key).flatten(),
            join: pick(&own.join, &d.join).unwrap_or_default(),
        }
    }
}

/// Parse and check a `SiteInventory` (named `file` in errors).
pub fn parse_inventory(text: &str, file: &str) -> Result<SiteInventory, ConfigError> {
    super::check_header(text, file, "SiteInventory")?;
    let inventory: SiteInventory = super::parse(text, file).map_err(inline_password)?;
    checks::check(&inventory, file)?;
    Ok(inventory)
}

/// Read, parse and check a `SiteInventory` file.
pub fn load_inventory(path: &Path) -> anyhow::Result<SiteInventory> {
    let text = crate::yaml::read_file(path)
        .map_err(|e| anyhow::anyhow!("cannot read the inventory: {e}"))?;
    Ok(parse_inventory(&text, &path.display().to_string())?)
}

/// A `password` key is an unknown field like any other (its path already
/// ends with `password`), but its refusal says where a password goes instead (and, like every error here, never
/// repeats the value).
fn inline_password(mut e: ConfigError) -> ConfigError {
    if e.message.starts_with("unknown field `password`") {
        e.message = "a password is never written in the inventory: put it in a file only root can read (`install -m 600`) and name it with `passwordFile`, or name an environment variable holding it with `passwordEnv`".to_string();
    }
    e
}

#[cfg(test)]
mod tests;
