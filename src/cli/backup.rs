//! clap definitions of `dcn backup [verify]` and `dcn restore`.

use super::OutputFormat;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `dcn backup`: take one, or check one (`dcn backup verify FILE`).
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BackupArgs {
    #[command(subcommand)]
    pub command: Option<BackupCommand>,
    /// Where to write the archive (0600; it holds every secret of the cloud)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Glance's image files too
    #[arg(long)]
    pub with_images: bool,
    /// As the dcn-backup timer runs it: into backup.directory of the config, keeping the newest backup.keep (nothing when backup.schedule is null)
    #[arg(long, conflicts_with_all = ["output", "with_images"])]
    pub scheduled: bool,
    #[arg(long, value_enum, default_value_t)]
    pub output_format: OutputFormat,
}

#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Read a backup through and check it: layout, every member's size and SHA-256, the manifest's signature by its CA, and (with --ca-pin) that it is of this cloud
    Verify {
        /// The backup archive
        file: PathBuf,
        /// The cloud's CA pin (`dcn ca status`)
        #[arg(long, value_name = "sha256:HEX")]
        ca_pin: Option<String>,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
}

/// `dcn restore FILE`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The backup archive (`dcn backup`)
    pub file: PathBuf,
    /// The cloud's CA pin: refuse a backup of any other cloud
    #[arg(long, value_name = "sha256:HEX")]
    pub ca_pin: Option<String>,
    /// Turn these failing preflight checks into warnings (comma-separated, or `all`)
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub ignore_preflight_errors: Vec<String>,
    #[arg(long, value_enum, default_value_t)]
    pub output: OutputFormat,
}
