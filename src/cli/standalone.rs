//! clap definitions of `dcn standalone init`, with its `--phase` values.

use crate::centre::standalone::PhaseName;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum StandaloneCommand {
    /// Install and configure the control plane on this host
    Init(InitArgs),
}

/// `--phase`: a phase of `init`, by the names and help of
/// [`PhaseName::ALL`] (the library knows no clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitPhase(pub PhaseName);

impl clap::ValueEnum for InitPhase {
    fn value_variants<'a>() -> &'a [Self] {
        static VARIANTS: std::sync::OnceLock<Vec<InitPhase>> = std::sync::OnceLock::new();
        VARIANTS.get_or_init(|| PhaseName::ALL.iter().map(|(p, ..)| InitPhase(*p)).collect())
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        (PhaseName::ALL.iter())
            .find(|(p, ..)| *p == self.0)
            .map(|(_, name, about)| clap::builder::PossibleValue::new(*name).help(*about))
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
