//! clap definitions of `dcn preflight ROLE`.

use super::OutputFormat;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

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
