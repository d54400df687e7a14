//! The recipe file formats. Every string value may use minijinja templates
//! over the [`super::Values`] (`{{ cp.address }}`, `{{ workers.nova }}`,
//! `{{ password.nova_db }}`); unknown fields are errors.

mod credentials;
mod lifecycle;
mod steps;

pub use credentials::*;
pub use lifecycle::*;
pub use steps::*;

use serde::Deserialize;
use std::collections::BTreeMap;

/// `roles/<role>.yaml`: the services a role consists of, in start order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RoleRecipe {
    pub role: String,
    pub description: String,
    pub services: Vec<String>,
    /// `network.*` values a host of this role is rendered with where no
    /// config of its own gives them (an edge's: the control plane's config
    /// gives the centre's).
    #[serde(default)]
    pub network: BTreeMap<String, String>,
    /// The site credentials a host of this role reaches the control
    /// plane's compute services with, by name.
    #[serde(default)]
    pub compute_link: Option<ComputeLinkCredentials>,
}

/// `computeLink` of a role: which site credentials make the host's link.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ComputeLinkCredentials {
    /// A `rabbitmqUser` credential: the transport URL's user.
    pub messaging: String,
    /// A `keystoneUser` credential: the service user.
    pub service: String,
}

/// `services/<service>.yaml`: one service.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServiceRecipe {
    pub service: String,
    pub description: String,
    /// The init phase that sets it up: infrastructure, identity, services
    /// or compute.
    pub phase: ServicePhase,
    /// Debian packages (dependencies come with them).
    #[serde(default)]
    pub packages: Vec<String>,
    /// debconf answers, `package question type value`, set before install.
    #[serde(default)]
    pub debconf: Vec<String>,
    /// Directories to create (state, locks).
    #[serde(default)]
    pub directories: Vec<DirectoryRecipe>,
    /// Config files, written whole: the packaged ones are not a usable base.
    #[serde(default)]
    pub files: Vec<FileRecipe>,
    /// Packaged files that must go (e.g. libvirt's default NAT network).
    #[serde(default)]
    pub remove_files: Vec<String>,
    /// State that `dcn reset` deletes (databases, keys, images), files or
    /// whole directories.
    #[serde(default)]
    pub reset_paths: Vec<String>,
    /// dcn CA material installed for the service.
    #[serde(default)]
    pub certificates: Vec<CertificateRecipe>,
    /// What `dcn backup` keeps of the service, and how `dcn restore` puts
    /// it back.
    #[serde(default)]
    pub backup: Vec<BackupRecipe>,
    /// Where the operator's `customServiceConfig` goes, and which key of
    /// the config's `services` map holds it.
    #[serde(default)]
    pub custom_config: Option<CustomConfigRecipe>,
    /// A database and its user, created before setup commands run.
    #[serde(default)]
    pub database: Option<DatabaseRecipe>,
    /// A keystone service user and catalog entry. Its public URL is
    /// exported to edges under its service type (see `exports`).
    #[serde(default)]
    pub identity: Option<IdentityRecipe>,
    /// What edges reach the service at, by export name: an `https://` or
    /// `amqps://` URL or an OVN remote `ssl:<host>:<port>`, templated with
    /// the control plane's `cp.*` values only. The bundle carries them
    /// rendered; every host renders `{{ export.<name> }}` to the same text.
    #[serde(default)]
    pub exports: BTreeMap<String, String>,
    /// What each node of a site needs to run the service, by the name its
    /// templates use (`{{ password.<name> }}`, `{{ user.<name> }}`): the
    /// join service provisions them for the edge role's services and sends
    /// them in its reply (see [`super::site_credentials`]).
    #[serde(default)]
    pub site_credentials: BTreeMap<String, SiteCredentialRecipe>,
    /// Commands run once after the files are written (database schema
    /// syncs, cell mappings); again only when their inputs change.
    #[serde(default)]
    pub setup: Vec<SetupCommand>,
    /// Packaged units dcn replaces or does not use: disabled and stopped.
    #[serde(default)]
    pub disable_units: Vec<String>,
    /// Units to enable and start, in order.
    #[serde(default)]
    pub units: Vec<String>,
    /// TCP ports the service listens on.
    #[serde(default)]
    pub ports: Vec<u16>,
    /// Its APIs the control plane serves to edges and clients with TLS,
    /// by frontend name: the api-proxy listens on the control plane's
    /// address at each port and passes to the service on loopback at the
    /// same port (which must be one of its `ports`).
    #[serde(default)]
    pub tls_frontends: BTreeMap<String, u16>,
    /// Passwords the control plane generates for it (its database, its
    /// service user, shared secrets), by the name templates use
    /// (`{{ password.nova_db }}`, `password: nova_service`).
    #[serde(default)]
    pub passwords: Vec<String>,
    /// How to tell the service works, written `- http: {url: ...}`.
    #[serde(
        default,
        deserialize_with = "serde_yaml::with::singleton_map_recursive::deserialize"
    )]
    pub health: Vec<HealthCheck>,
}

/// Init phases a service can belong to, in run order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServicePhase {
    #[default]
    Infrastructure,
    Identity,
    Services,
    Compute,
}

/// A directory a service needs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DirectoryRecipe {
    pub path: String,
    #[serde(default = "root")]
    pub owner: String,
    #[serde(default = "root")]
    pub group: String,
    #[serde(default = "mode_0750")]
    pub mode: String,
}

fn mode_0750() -> String {
    "0750".into()
}

/// One config file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FileRecipe {
    pub path: String,
    #[serde(default = "root")]
    pub owner: String,
    #[serde(default = "root")]
    pub group: String,
    /// Octal, as a string: "0640".
    #[serde(default = "mode_0644")]
    pub mode: String,
    /// INI sections (`DEFAULT` is written first).
    #[serde(default)]
    pub ini: Option<BTreeMap<String, BTreeMap<String, String>>>,
    /// Or the whole text, as a template.
    #[serde(default)]
    pub template: Option<String>,
    /// Keystone credential sections added to `ini`: section name -> the
    /// user and the name of its password. Each gets auth_url, auth_type,
    /// domains, project `service`, username, password and region_name;
    /// `keystone_authtoken` also gets www_authenticate_uri and
    /// memcached_servers.
    #[serde(default)]
    pub keystone_auth: BTreeMap<String, KeystoneAuth>,
    /// Only for hosts whose roles include this one.
    #[serde(default)]
    pub when_role: Option<String>,
    /// Units restarted when this file changes (default: the service's units).
    #[serde(default)]
    pub restarts: Option<Vec<String>>,
}

/// A user of a keystone credential section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KeystoneAuth {
    pub username: String,
    /// The name of the password in the password store.
    pub password: String,
}

pub(super) fn root() -> String {
    "root".into()
}

fn mode_0644() -> String {
    "0644".into()
}

/// Where `customServiceConfig` is written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CustomConfigRecipe {
    /// The key under `services:` in the StandaloneConfig (e.g. `nova`).
    pub config_key: String,
    /// The drop-in file (a `*.conf.d/` file the service reads last).
    pub path: String,
    #[serde(default = "root")]
    pub owner: String,
    #[serde(default = "root")]
    pub group: String,
    /// Units restarted when the drop-in changes (default: the service's
    /// units).
    #[serde(default)]
    pub restarts: Option<Vec<String>>,
}

/// A database owned by one service.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DatabaseRecipe {
    /// Database names (nova needs nova, nova_api and nova_cell0).
    pub names: Vec<String>,
    pub user: String,
    /// The name of the password in the password store.
    pub password: String,
}

/// A keystone service user and catalog service with its endpoints.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IdentityRecipe {
    /// The service user (none for keystone itself).
    #[serde(default)]
    pub user: Option<String>,
    /// The name of that user's password in the password store.
    #[serde(default)]
    pub password: Option<String>,
    /// Catalog service name and type (`nova`, `compute`).
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// Public endpoint URL (TLS, through dcn-api-proxy).
    pub url: String,
    /// Internal and admin endpoint URL (the service on loopback), used by
    /// the control plane's own services; the public URL when absent.
    #[serde(default)]
    pub internal_url: Option<String>,
}
