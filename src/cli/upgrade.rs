//! clap definitions of `dcn upgrade`.

use clap::Args;

/// `dcn upgrade [--plan]`.
#[derive(Debug, Args)]
pub struct UpgradeArgs {
    /// Show what the upgrade would do (packages with their versions, file diffs, schema syncs and restarts in order) and change nothing
    #[arg(long)]
    pub plan: bool,
    /// Turn these failing preflight checks into warnings (comma-separated, or `all`)
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub ignore_preflight_errors: Vec<String>,
}
