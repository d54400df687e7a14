//! clap definitions of `dcn config defaults|validate`.

use clap::Subcommand;
use std::path::PathBuf;

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
