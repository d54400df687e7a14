//! The recipe file formats. Every string value may use minijinja templates
//! over the [`super::Values`] (`{{ cp.address }}`, `{{ workers.nova }}`,
//! `{{ password.nova_db }}`); unknown fields are errors.

use serde::Deserialize;
use std::collections::BTreeMap;

/// `roles/<role>.yaml`: the services a role consists of, in start order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RoleRecipe {
    pub role: String,
    pub description: String,
    pub services: Vec<String>,
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

/// One credential a joining node gets, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum SiteCredentialRecipe {
    /// A RabbitMQ user of the node's own, `username` templated with
    /// `host.hostname`, allowed what `access` names.
    #[serde(rename_all = "camelCase")]
    RabbitmqUser {
        username: String,
        access: RabbitAccess,
    },
    /// A keystone user of the node's own in the `service` project, with
    /// the admin and service roles (as the control plane's service users).
    #[serde(rename_all = "camelCase")]
    KeystoneUser { username: String },
    /// One of the control plane's own passwords (declared under
    /// `passwords:` by a control-plane service), the same for every node:
    /// a secret both sides must share, such as nova's metadata secret.
    ControlPlaneSecret,
}

/// What a node's RabbitMQ user may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RabbitAccess {
    /// nova-compute's own queues and exchanges, and nothing of any other
    /// node or service (`centre::sites::provision::RabbitPermissions::compute_node`).
    ComputeNode,
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

/// A leaf certificate of the dcn CA (or, for hosts that join, the node's
/// own), with the CA certificate, installed where a service reads it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CertificateRecipe {
    /// The leaf: `api`, `rabbitmq`, `ovn-sb`, `join`, or `node`.
    pub leaf: String,
    pub cert: String,
    pub key: String,
    pub ca: String,
    #[serde(default = "root")]
    pub owner: String,
    #[serde(default = "root")]
    pub group: String,
    #[serde(default)]
    pub when_role: Option<String>,
    /// What the service needs to use a renewed certificate (or a new CA
    /// file): every certificate says, so renewal never guesses.
    pub on_renew: OnRenew,
}

/// One part of a control-plane backup: a dump made by a command and loaded
/// back by another, or files kept as they are (with their modes and
/// owners). Dumps are made of services of the infrastructure phase, which
/// `dcn restore` has running before it loads them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BackupRecipe {
    /// The part's name: its member in the archive and its line in reports.
    pub name: String,
    /// A command whose stdout is the dump. An argument that is exactly
    /// `{{ databases }}` stands for every database the recipes of the host
    /// declare, one argument each.
    #[serde(default)]
    pub dump: Option<Vec<String>>,
    /// The command that loads the dump from its stdin.
    #[serde(default)]
    pub restore: Option<Vec<String>>,
    /// Files and directories kept as they are.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Only with `dcn backup --with-images`.
    #[serde(default)]
    pub only_with_images: bool,
}

impl BackupRecipe {
    /// A dump with its restore, or paths.
    pub fn check(&self) -> Result<(), String> {
        match (&self.dump, &self.restore, self.paths.is_empty()) {
            (Some(d), Some(r), true) if !d.is_empty() && !r.is_empty() => Ok(()),
            (None, None, false) if self.paths.iter().all(|p| p.starts_with('/')) => Ok(()),
            (None, None, false) => Err("its paths must be absolute".into()),
            _ => Err("a backup part is either `dump` with `restore` (commands), or `paths`".into()),
        }
    }
}

/// How a service takes up a renewed certificate without dropping what it
/// serves: exactly one of these.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OnRenew {
    /// `systemctl try-reload-or-restart` of this unit (a reload that keeps
    /// open connections, such as haproxy's).
    #[serde(default)]
    pub reload: Option<String>,
    /// Run this command…
    #[serde(default)]
    pub run: Option<Vec<String>>,
    /// …which this says, in reports (`replaced in the running haproxy`).
    #[serde(default)]
    pub says: Option<String>,
    /// The service reads its certificate files again by itself when they
    /// change (for its next connections).
    #[serde(default)]
    pub rereads: bool,
}

impl OnRenew {
    /// Exactly one way is given.
    pub fn check(&self) -> Result<(), String> {
        let given = [self.reload.is_some(), self.run.is_some(), self.rereads];
        if self.run.is_some() != self.says.is_some() {
            return Err(
                "onRenew's run and says go together: the command, and what it does in a few words"
                    .into(),
            );
        }
        match given.iter().filter(|g| **g).count() {
            1 => Ok(()),
            0 => Err("onRenew must say how the service takes up a renewed certificate: reload, run or rereads: true".into()),
            _ => Err("onRenew must give one of reload, run and rereads, not several".into()),
        }
    }
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

fn root() -> String {
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

/// A setup command.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetupCommand {
    /// Journal name of the step.
    pub name: String,
    /// argv; templated. Must not contain secrets.
    pub run: Vec<String>,
    /// Run as this user (through `runuser`).
    #[serde(default)]
    pub user: Option<String>,
    /// Environment variables set to passwords: variable -> password name.
    #[serde(default)]
    pub secret_env: BTreeMap<String, String>,
    /// Attempts, one second apart (for commands that race a starting
    /// daemon's socket).
    #[serde(default = "one")]
    pub attempts: u32,
    /// Time limit in seconds.
    #[serde(default = "setup_timeout")]
    pub timeout: u64,
    /// Exit codes that count as success besides 0.
    #[serde(default)]
    pub ok_codes: Vec<i32>,
    /// Only for hosts whose roles include this one.
    #[serde(default)]
    pub when_role: Option<String>,
    /// Run after the service's units are started (default: before).
    #[serde(default)]
    pub after_start: bool,
    /// A read-only command (argv, templated; run as root) whose success
    /// means the command's effect is there: a run that finds it (and last
    /// ran the same command) skips the command. A power cut can lose what
    /// another daemon had not written back, so the journal alone never
    /// decides.
    #[serde(default)]
    pub check: Option<Vec<String>>,
    /// The same as a query to MariaDB (as root): the effect is there when
    /// it returns a row.
    #[serde(default)]
    pub check_sql: Option<String>,
    /// The command is cheap and idempotent, and runs on every run instead
    /// of being checked. Every command has exactly one of `check`,
    /// `checkSql` and `rerun`.
    #[serde(default)]
    pub rerun: bool,
    /// The service's databases whose schema this command creates or
    /// migrates. MariaDB cannot roll back a schema change, so a sync cut
    /// halfway leaves tables that its check may find and that make its next
    /// run fail: a sync that dcn saw start and not end is never done, and
    /// one that began on empty databases begins again from empty ones.
    #[serde(default)]
    pub schema: Vec<String>,
}

fn one() -> u32 {
    1
}

fn setup_timeout() -> u64 {
    600
}

/// A health check.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum HealthCheck {
    /// The port accepts TCP connections (templated host: `{{ cp.address }}`).
    Tcp { host: String, port: u16 },
    /// `GET url` answers with a status below 500.
    Http { url: String },
    /// A command exits 0.
    Command { run: Vec<String> },
    /// A unit is active.
    Unit { name: String },
}
