//! clap definitions of `dcn standalone init`, with its `--phase` values.

use clap::{Args, Subcommand};
use std::path::PathBuf;

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
