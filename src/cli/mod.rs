//! The command line, as clap definitions and nothing else. [`crate::app`]
//! turns a parsed [`Cli`] into one library call per subcommand.

pub mod bmc;
pub mod image;
pub mod man;

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Install an all-in-one OpenStack control plane and join edge hosts to it.
///
/// On the lab server, `dcn standalone init` installs and starts an
/// all-in-one OpenStack control plane from Debian's packages. To try it on
/// one machine, `dcn lab up` runs it in a container. `dcn bundle verify`
/// checks a join bundle before an edge host uses it.
#[derive(Debug, Parser)]
#[command(name = "dcn", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// More detail on stderr (-v: debug, -vv: trace, incl. every command line)
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Only warnings and errors on stderr
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
}

/// How chatty the logs on stderr are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    Quiet,
    Normal,
    Debug,
    Trace,
}

impl GlobalArgs {
    pub fn verbosity(&self) -> Verbosity {
        match (self.quiet, self.verbose) {
            (true, _) => Verbosity::Quiet,
            (false, 0) => Verbosity::Normal,
            (false, 1) => Verbosity::Debug,
            (false, _) => Verbosity::Trace,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write and check configuration files
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Check whether this host can run the control plane or an edge compute
    Preflight(PreflightArgs),
    /// Inspect and verify join bundles
    #[command(subcommand)]
    Bundle(BundleCommand),
    /// Set up this host as the control plane
    #[command(subcommand)]
    Standalone(StandaloneCommand),
    /// Join this host to a control plane as an edge compute node
    Join(JoinArgs),
    /// Run the join service for edge hosts (the dcn-join unit runs it)
    Serve,
    /// Manage edge sites on the control plane
    #[command(subcommand)]
    Site(SiteCommand),
    /// Manage joined edge hosts on the control plane
    #[command(subcommand)]
    Node(NodeCommand),
    /// Show what dcn set up on this host and whether it works
    Status {
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Remove what dcn set up on this host: guests, databases, units, config, secrets
    Reset {
        /// Also purge the packages dcn installed
        #[arg(long)]
        purge: bool,
        /// Do not ask for confirmation
        #[arg(long)]
        yes: bool,
    },
    /// A local lab: the control plane and edge hosts as containers on this machine
    #[command(subcommand)]
    Lab(LabCommand),
    /// Drive a server's BMC over Redfish: virtual media, boot override, power
    #[command(subcommand)]
    Bmc(bmc::BmcCommand),
    /// Build and customise the edge boot ISO
    #[command(subcommand)]
    Image(image::ImageCommand),
    /// Install the edge OS to disk (runs inside the edge ISO)
    Install(image::InstallArgs),
    /// Print a shell completion script
    Completions(CompletionsArgs),
    /// Write the man pages (one per subcommand) into a directory
    #[command(hide = true)]
    Man(ManArgs),
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the complete default StandaloneConfig, with comments
    Defaults,
    /// Check a config file: syntax, unknown fields, types and values
    ///
    /// Any kind dcn reads: StandaloneConfig, NodeConfig or SiteInventory (by
    /// its `kind`). Files a SiteInventory names (the image, password files,
    /// CA files) are read when the site is deployed, not here.
    Validate {
        /// The config file (YAML)
        file: PathBuf,
    },
}

/// Output format of commands that report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
}

/// The role a host is checked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HostRole {
    /// The all-in-one control plane
    Standalone,
    /// An edge compute host
    Edge,
}

#[derive(Debug, Args)]
pub struct PreflightArgs {
    /// What the host is checked for
    pub role: HostRole,
    #[arg(long, value_enum, default_value_t)]
    pub output: OutputFormat,
    /// Turn these failing checks into warnings (comma-separated names, or `all`)
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub ignore_preflight_errors: Vec<String>,
    /// The control plane's config file (for its join port)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum BundleCommand {
    /// Write a join bundle for an edge site (creating the site if new)
    Export {
        /// The edge site: its availability zone and host aggregate
        #[arg(long)]
        site: crate::config::types::SiteName,
        /// How long the bundle and its token stay valid, 1s to 365d, e.g. 2h, 7d (default: the config's bundle.ttl)
        #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
        ttl: Option<std::time::Duration>,
        /// How many hosts may join with it (default: the config's bundle.maxUses)
        #[arg(long, value_name = "N")]
        max_uses: Option<u32>,
        /// Where to write the bundle (0600)
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Show what a join bundle holds, secrets redacted
    Inspect {
        /// The bundle (.tar.gz)
        file: PathBuf,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Check a join bundle: format, integrity, signature, expiry and CA pin
    Verify {
        /// The bundle (.tar.gz)
        file: PathBuf,
        /// The CA pin printed by `dcn bundle export` (sha256:HEX)
        #[arg(long, value_name = "sha256:HEX")]
        ca_pin: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SiteCommand {
    /// List the edge sites, their nodes and outstanding tokens
    List {
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show each host of a site: its phase from BMC to zone (PHASE), since when, its last report, the site config revision it runs (CONFIG) and its last error
    ///
    /// Hosts being deployed report each phase to the join service; a host that is not placed or failed and
    /// reported nothing for 10 minutes shows as `silent (last: PHASE)`. CONFIG is the revision of
    /// `dcn site config` a joined node applied: `1 of 2` while it is behind, `(failed)` when the last one
    /// did not apply. Failed hosts' reasons and last log lines follow the table.
    Status {
        /// The site
        site: crate::config::types::SiteName,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show or change a site's service config (kind SiteConfig): site defaults and node overrides
    ///
    /// Without --file, prints the current revision. With --file, shows each
    /// joined node's drop-in diffs, then saves the file as the next revision
    /// (with --dry-run: only shows). Nodes fetch and apply it within about
    /// 30 s, restarting only the services whose drop-in changed; a node cut
    /// off catches up when it is back. Resolved per key as node > site >
    /// control plane (`dcn node show HOST`).
    Config {
        /// The site
        site: crate::config::types::SiteName,
        /// The new config (kind SiteConfig, for this site)
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Show the per-node diffs; change nothing
        #[arg(long, requires = "file")]
        dry_run: bool,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Revoke a site: its nodes' credentials and its tokens die, its hosts lose access
    Revoke {
        /// The site
        site: crate::config::types::SiteName,
    },
    /// Deploy an edge site from its inventory: each node's BMC boots its own ISO, which installs and joins
    ///
    /// On the control plane. Exports a join bundle (or reuses the last
    /// deploy's while it is good), embeds it with each node's config into a
    /// copy of the inventory's ISO, serves the copies, boots each node from
    /// them through its BMC, ejects the media once the node reports its disk
    /// written, and follows it until it is placed in the site's zone.
    /// Progress goes to stderr, a table to stdout. Running it again resumes:
    /// placed nodes are left alone, failed ones retried from where they
    /// failed.
    Deploy(SiteDeployArgs),
}

#[derive(Debug, Args)]
pub struct SiteDeployArgs {
    /// The site inventory (kind SiteInventory; `dcn config validate` checks it)
    pub inventory: PathBuf,
    /// Only these nodes (comma-separated host names)
    #[arg(long, value_delimiter = ',', value_name = "HOST,...")]
    pub nodes: Vec<String>,
    /// Nodes driven at once
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub parallel: u16,
    /// How long a node may take from power-on until its disk is written
    #[arg(long, value_name = "DURATION", default_value = "60m", value_parser = humantime::parse_duration)]
    pub install_timeout: std::time::Duration,
    /// How long a node may take from its disk written until it is placed
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = humantime::parse_duration)]
    pub join_timeout: std::time::Duration,
    #[arg(long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

#[derive(Debug, Subcommand)]
pub enum NodeCommand {
    /// List the edge hosts with their health: nova-compute (COMPUTE), the OVN chassis (NETWORK) and their progress (PHASE)
    ///
    /// Hosts that reported progress but never joined are listed too (STATE `-`). PHASE is the last phase a
    /// host reported (or the control plane recorded), or `silent (last: PHASE)` when it is not placed or
    /// failed and reported nothing for 10 minutes.
    List {
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show an edge host's resolved service config, where each value came from, and the revision it runs
    Show {
        /// The host name
        hostname: String,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// On a joined edge: fetch this node's site config from the control plane and apply it
    ///
    /// Run every 30 s by the dcn-config-sync timer that `dcn join` installs.
    /// Writes the drop-ins that differ, restarts the services whose drop-in
    /// changed, and reports the revision to the control plane.
    SyncConfig,
    /// Remove an edge host: its credentials die, then its compute service, resource provider, aggregate membership and progress record go
    ///
    /// A host that only reported progress and never joined loses its progress record.
    Remove {
        /// The host name
        hostname: String,
    },
}

#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The join bundle from `dcn bundle export`
    pub bundle: PathBuf,
    /// The CA pin `dcn bundle export` printed (without it the CA is trusted on first use)
    #[arg(long, value_name = "sha256:HEX")]
    pub ca_pin: Option<String>,
    /// This host's name as a compute node (default: its host name)
    #[arg(long, value_name = "NAME")]
    pub hostname: Option<String>,
    /// The address this host's services use (default: the default route's)
    #[arg(long, value_name = "IP")]
    pub my_ip: Option<std::net::IpAddr>,
    /// How long to keep trying to reach the control plane, and to wait until it sees this host
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = humantime::parse_duration)]
    pub timeout: std::time::Duration,
    /// Where packages come from when they are not installed: `mirror` or `local:/path`
    #[arg(long, value_name = "SOURCE", default_value = "mirror")]
    pub packages: crate::config::types::PackageSource,
    /// Turn these failing preflight checks into warnings (comma-separated, or `all`)
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub ignore_preflight_errors: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum StandaloneCommand {
    /// Install and configure the control plane on this host
    Init(InitArgs),
}

/// `--phase`: the phases of `init`, in order (the library's
/// [`crate::standalone::PhaseName`], named for the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InitPhase {
    /// Check the host
    Preflight,
    /// State directories, passwords, the CA and certificates
    Secrets,
    /// Install the packages (nothing starts)
    Packages,
    /// Write every configuration file
    Configure,
    /// MariaDB, RabbitMQ, memcached, the API proxy, OVN databases
    Infrastructure,
    /// Keystone and the catalog
    Identity,
    /// Placement, Glance, Nova, Neutron, the join service
    Services,
    /// nova-compute, OVN controller, metadata agent on this host
    Compute,
    /// Check the control plane through its APIs
    Verify,
    /// clouds.yaml and admin-openrc
    Finalize,
}

impl From<InitPhase> for crate::standalone::PhaseName {
    fn from(p: InitPhase) -> Self {
        use crate::standalone::PhaseName;
        match p {
            InitPhase::Preflight => PhaseName::Preflight,
            InitPhase::Secrets => PhaseName::Secrets,
            InitPhase::Packages => PhaseName::Packages,
            InitPhase::Configure => PhaseName::Configure,
            InitPhase::Infrastructure => PhaseName::Infrastructure,
            InitPhase::Identity => PhaseName::Identity,
            InitPhase::Services => PhaseName::Services,
            InitPhase::Compute => PhaseName::Compute,
            InitPhase::Verify => PhaseName::Verify,
            InitPhase::Finalize => PhaseName::Finalize,
        }
    }
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Config file (StandaloneConfig); defaults apply without one
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Run the phases up to and including this one (default: all)
    #[arg(long, value_enum, default_value = "finalize")]
    pub phase: InitPhase,
    /// Turn these failing preflight checks into warnings (comma-separated, or `all`)
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub ignore_preflight_errors: Vec<String>,
    /// Treat DIR as the root of the system to configure (secrets go to DIR/var/lib/dcn)
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Print the plan and the file changes without changing anything
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Create the lab: containers, routed networks, packages, control plane
    Up(LabUpArgs),
    /// Remove everything the lab created (the download cache stays)
    Down(LabDirArgs),
    /// Show the lab's hosts
    Status {
        #[command(flatten)]
        dir: LabDirArgs,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Run a command inside a lab host: `dcn lab exec cp -- openstack server list`
    Exec {
        #[command(flatten)]
        dir: LabDirArgs,
        /// The host (cp, edge1, …)
        host: String,
        /// The command and its arguments
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Power a host off and boot it again (its disk is kept)
    Restart {
        #[command(flatten)]
        dir: LabDirArgs,
        /// The host (cp, edge1, …)
        host: String,
    },
    /// Cut or restore a host's network link, as a WAN failure would
    Link {
        #[command(flatten)]
        dir: LabDirArgs,
        /// The host (cp, edge1, …)
        host: String,
        /// down cuts the link, up restores it
        state: LinkState,
    },
}

#[derive(Debug, Args)]
pub struct LabDirArgs {
    /// The lab's directory (state, logs, report.json)
    #[arg(long, value_name = "DIR", default_value = crate::lab::DEFAULT_DIR)]
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct LabUpArgs {
    #[command(flatten)]
    pub dir: LabDirArgs,
    /// Number of edge sites, one host each, each on its own routed subnet
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=50))]
    pub edges: u8,
    /// Extra edge hosts booted but not joined, to join by hand
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=20))]
    pub spare: u8,
    /// Edges install their packages during `dcn join` instead of finding them preinstalled
    #[arg(long)]
    pub no_edge_layer: bool,
    /// Download cache (base root filesystem, packages), kept across labs
    #[arg(long, value_name = "DIR", default_value = crate::lab::DEFAULT_CACHE)]
    pub cache: PathBuf,
    /// StandaloneConfig for the control plane (default: the lab's own)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Bare-metal edge nodes: qemu VMs behind a Redfish BMC emulator, in site bm1
    ///
    /// Each node is a VM of 2 vCPUs and 3 GiB (software emulation) on the
    /// site's own routed subnet, powered off, with a blank 16 GiB disk; the
    /// container bm1-bmc runs libvirt and the sushy-tools emulator that
    /// drives them. The lab writes the site's inventory to DIR/bm1.inventory.yaml
    /// and into cp at /etc/dcn/inventory/bm1.yaml: deploy them with
    /// `dcn lab exec cp -- dcn site deploy /etc/dcn/inventory/bm1.yaml`.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    pub bare_metal: u8,
    /// Add two nodes that must fail to deploy: bm1-nodisk (its VM has no disk) and bm1-badpw (a wrong BMC password)
    #[arg(long)]
    pub bare_metal_failures: bool,
    /// The generic edge ISO (`dcn image build`) bare-metal nodes boot; bound into cp for `site deploy`
    #[arg(long, value_name = "FILE", default_value = crate::lab::bare_metal::DEFAULT_EDGE_ISO)]
    pub edge_iso: PathBuf,
}

/// A link state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LinkState {
    Up,
    Down,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Directory to write the pages into
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
}

/// The clap command, for completions and man pages.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[cfg(test)]
mod tests;
