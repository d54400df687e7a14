//! clap definitions of `dcn bundle export|inspect|verify`.

use super::OutputFormat;
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum BundleCommand {
    /// Write a join bundle for an edge site (creating the site if new)
    Export {
        /// The edge site: its availability zone and host aggregate
        #[arg(long)]
        site: crate::types::SiteName,
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
