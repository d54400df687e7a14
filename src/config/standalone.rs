//! `StandaloneConfig`: the operator's settings for the control plane (and,
//! through the join bundle, for its edge sites).

use super::ConfigError;
use crate::recipes::Recipes;
use crate::types::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// The control plane's settings. Every field has a default; see
/// `dcn config defaults` for the documented file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StandaloneConfig {
    pub api_version: super::ApiVersion,
    pub kind: StandaloneKind,
    #[serde(default)]
    pub control_plane: ControlPlane,
    #[serde(default = "default_roles")]
    pub roles: Vec<Role>,
    #[serde(default)]
    pub packages: Packages,
    #[serde(default)]
    pub network: Network,
    #[serde(default)]
    pub services: Services,
    #[serde(default)]
    pub bundle: BundleDefaults,
    #[serde(default)]
    pub zones: Zones,
    #[serde(default)]
    pub certificates: super::certificates::Certificates,
    #[serde(default)]
    pub backup: super::backup::BackupSchedule,
}

/// The `kind` of a [`StandaloneConfig`] file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum StandaloneKind {
    #[default]
    StandaloneConfig,
}

impl Default for StandaloneConfig {
    fn default() -> Self {
        StandaloneConfig {
            api_version: super::ApiVersion::V1Alpha1,
            kind: StandaloneKind::StandaloneConfig,
            control_plane: ControlPlane::default(),
            roles: default_roles(),
            packages: Packages::default(),
            network: Network::default(),
            services: Services::default(),
            bundle: BundleDefaults::default(),
            zones: Zones::default(),
            certificates: Default::default(),
            backup: Default::default(),
        }
    }
}

fn default_roles() -> Vec<Role> {
    vec![Role::Controller, Role::Compute]
}

/// What the standalone host runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The control plane: databases, messaging, APIs, schedulers, OVN central.
    Controller,
    /// nova-compute on the standalone host itself (the single-node cloud).
    Compute,
}

/// How edges and clients reach the control plane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ControlPlane {
    /// Host name of the control plane; empty means this host's name.
    pub hostname: Option<Hostname>,
    /// Address the services listen on and edges connect to; empty means the
    /// address of the interface that holds the default route.
    pub address: Option<IpAddr>,
    /// Extra names for the endpoints' certificates (a DNS alias, a NAT
    /// address's name).
    pub extra_names: Vec<Hostname>,
    /// Keystone region of every endpoint.
    pub region: RegionName,
    /// HTTPS port of the join service (`dcn serve`).
    pub join_port: Port,
}

impl Default for ControlPlane {
    fn default() -> Self {
        ControlPlane {
            hostname: None,
            address: None,
            extra_names: Vec::new(),
            region: "RegionOne".parse().expect("valid"),
            join_port: Port(9443),
        }
    }
}

/// Where packages come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Packages {
    pub source: PackageSource,
}

impl Default for Packages {
    fn default() -> Self {
        Packages {
            source: PackageSource::Mirror,
        }
    }
}

/// Networking (Neutron ML2/OVN).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Network {
    /// Overlay encapsulation between hosts: geneve or vxlan.
    pub encapsulation: Encapsulation,
    /// Provider (physical) networks that instances may attach to.
    pub provider_networks: Vec<ProviderNetwork>,
    /// DNS servers handed to instances' subnets by default.
    pub dns_servers: Vec<IpAddr>,
}

impl Default for Network {
    fn default() -> Self {
        Network {
            encapsulation: Encapsulation::Geneve,
            provider_networks: vec![ProviderNetwork::default()],
            dns_servers: Vec::new(),
        }
    }
}

/// Overlay encapsulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encapsulation {
    Geneve,
    Vxlan,
}

/// A physical network mapped to an OVS bridge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ProviderNetwork {
    /// Neutron's name for it (`--provider-physical-network`).
    pub name: Identifier,
    /// The OVS bridge that carries it.
    pub bridge: Identifier,
    /// A host interface to plug into the bridge; none leaves the bridge
    /// unplugged (enough for a lab).
    pub interface: Option<Identifier>,
}

impl Default for ProviderNetwork {
    fn default() -> Self {
        ProviderNetwork {
            name: "physnet1".parse().expect("valid"),
            bridge: "br-ex".parse().expect("valid"),
            interface: None,
        }
    }
}

/// Per-service settings, by the service's config key in the recipes
/// (`nova`, `novaCompute`, …; see [`crate::recipes::catalogue`]). Services
/// not named take the defaults. Which keys exist is the catalogue's to say:
/// [`Services::check`] refuses the others, with the valid ones. Services
/// that run on edges get their settings through the join bundle too.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Services(BTreeMap<String, ServiceConfig>);

impl Services {
    /// Every configurable service of `recipes`, each with the defaults:
    /// what `dcn config defaults` shows (its test compares the two).
    #[cfg(test)]
    pub fn all_defaults(recipes: &Recipes) -> Services {
        Services(
            (recipes.config_keys().into_keys())
                .map(|k| (k.to_string(), ServiceConfig::default()))
                .collect(),
        )
    }

    /// Every key is a configurable service of `recipes`; an error names
    /// the first that is not, at its line in `text` (the file parsed).
    pub fn check(&self, recipes: &Recipes, text: &str, file: &str) -> Result<(), ConfigError> {
        for key in self.0.keys() {
            (recipes.config_key(key, false))
                .map_err(|m| ConfigError::located(text, file, &["services", key], m))?;
        }
        Ok(())
    }

    /// The settings of the service under `key` (defaults when not given).
    pub fn get(&self, key: &str) -> ServiceConfig {
        self.0.get(key).cloned().unwrap_or_default()
    }

    /// `customServiceConfig` by config key, for the services that have one.
    pub fn custom_configs(&self) -> BTreeMap<String, IniText> {
        self.0
            .iter()
            .filter(|(_, c)| !c.custom_service_config.is_empty())
            .map(|(k, c)| (k.clone(), c.custom_service_config.clone()))
            .collect()
    }
}

/// One service's settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ServiceConfig {
    /// API/worker processes: `auto` sizes them to the host's CPUs.
    pub workers: Workers,
    /// oslo.config INI text written as-is to the service's drop-in
    /// directory; it wins over the values dcn generates.
    pub custom_service_config: IniText,
}

/// Defaults for `dcn bundle export`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct BundleDefaults {
    /// How long a bundle (and its join token) stays valid.
    #[serde(deserialize_with = "bundle_ttl")]
    pub ttl: HumanDuration,
    /// How many hosts may join with one bundle.
    #[serde(deserialize_with = "at_least_one")]
    pub max_uses: u32,
}

/// A TTL within the range `dcn bundle export` accepts, refused while the
/// file is read so the error has the field's line.
pub(super) fn bundle_ttl<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<HumanDuration, D::Error> {
    let ttl = HumanDuration::deserialize(d)?;
    crate::types::bundle_ttl::check_ttl(ttl.0).map_err(serde::de::Error::custom)?;
    Ok(ttl)
}

fn at_least_one<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    match u32::deserialize(d)? {
        0 => Err(serde::de::Error::custom(
            "must be at least 1: a bundle nobody may join with is useless",
        )),
        n => Ok(n),
    }
}

impl Default for BundleDefaults {
    fn default() -> Self {
        BundleDefaults {
            ttl: HumanDuration(std::time::Duration::from_secs(24 * 3600)),
            max_uses: 1,
        }
    }
}

/// Availability zones. Every edge site is a zone of its own, in Nova (its
/// host aggregate) and in Neutron (its OVN chassis), named after the site.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Zones {
    /// The zone of the control plane's own compute (with the compute role)
    /// and of networks and routers created without a zone hint.
    pub central: SiteName,
    /// Where a server goes when its request names no zone. null: any host,
    /// edge sites included.
    pub default_schedule: Option<SiteName>,
    /// Config drive for every instance on edge hosts, so guests get their
    /// metadata without a round trip across the WAN (the metadata service
    /// is still served at the edge).
    pub edge_config_drive: bool,
}

impl Default for Zones {
    fn default() -> Self {
        let central = SiteName::try_from("central".to_string()).expect("a valid zone name");
        Zones {
            default_schedule: Some(central.clone()),
            central,
            edge_config_drive: true,
        }
    }
}
