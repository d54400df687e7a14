//! The command line, as clap definitions and nothing else. [`crate::app`]
//! turns a parsed [`Cli`] into one library call per subcommand.

mod backup;
pub mod bmc;
mod bundle;
mod certs;
mod config;
pub mod image;
mod join;
mod lab;
pub mod man;
mod preflight;
mod sites;
mod standalone;
mod upgrade;

pub use backup::{BackupArgs, BackupCommand, RestoreArgs};
pub use bundle::BundleCommand;
pub use certs::{CaCommand, CertCommand};
pub use config::ConfigCommand;
pub use join::JoinArgs;
pub use lab::{LabCommand, LabDirArgs, LabUpArgs, LinkState};
pub use preflight::{HostRole, PreflightArgs};
pub use sites::{NodeCommand, SiteCacheImageArgs, SiteCommand, SiteDeployArgs, SiteUpgradeArgs};
pub use standalone::{InitArgs, InitPhase, StandaloneCommand};
pub use upgrade::UpgradeArgs;

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

/// How chatty the logs on stderr are (the library's type: `-v`/`-q` map
/// onto it).
pub use crate::logging::Verbosity;

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
    /// Upgrade the control plane to this dcn and to its package source's versions (run with the new dcn)
    ///
    /// `--plan` first: dcn's release before and after, each package with its installed and new
    /// version, each configuration file's diff, and per service, in order, the schema syncs that
    /// run again and the units that restart. Applying runs that in order with each service's
    /// health checks after it; a run that stopped resumes, a second finds nothing to do, and a
    /// dcn older than the one that set the host up refuses.
    Upgrade(UpgradeArgs),
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
    /// The certificates dcn issued: list them, renew them
    #[command(subcommand)]
    Cert(CertCommand),
    /// The control plane's certificate authority: its pin, and rotating it
    #[command(subcommand)]
    Ca(CaCommand),
    /// Back up the control plane while it runs (or check a backup: `dcn backup verify FILE`)
    ///
    /// One archive of everything the control plane knows: its databases (one transaction),
    /// OVN's northbound and southbound, RabbitMQ's users and permissions, dcn's own state
    /// (sites, nodes, tokens, config revisions, secrets, the CA), keystone's keys, and with
    /// --with-images glance's images. It holds every secret of the cloud: it is written
    /// 0600; keep it off the host, where only you can read it.
    Backup(BackupArgs),
    /// Put the control plane back from a backup, on a blank host of the same name and address
    ///
    /// Checks the archive first (nothing changes if it is truncated, corrupt, tampered with,
    /// of a newer dcn or of another cloud), puts dcn's state back, installs and starts the
    /// services, loads the databases; every edge then reconnects by itself.
    Restore(RestoreArgs),
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

/// Output format of commands that report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
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
