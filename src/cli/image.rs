//! clap definitions of `dcn image build|embed|show` and `dcn install`.

use super::OutputFormat;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Build the generic edge ISO from a recipe (root; debootstrap, squashfs, GRUB)
    Build(BuildArgs),
    /// Write a node's join bundle and NodeConfig into an edge ISO's payload area
    Embed(EmbedArgs),
    /// Show the payload embedded in an edge ISO, secrets redacted
    Show {
        /// The ISO (or a device holding it)
        iso: PathBuf,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Publish ISOs over HTTP (with ranges) for BMCs to fetch as virtual media
    Serve(super::bmc::ImageServeArgs),
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The recipe directory (holds recipe.yaml)
    #[arg(long, value_name = "DIR", default_value = "images/edge")]
    pub recipe: PathBuf,
    /// Where to write the ISO
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Cache of the debootstrap base, the installed packages and the .debs
    #[arg(long, value_name = "DIR", default_value = crate::image::build::DEFAULT_CACHE)]
    pub cache: PathBuf,
    /// The static dcn binary to put in the image (default: this one)
    #[arg(long, value_name = "FILE")]
    pub dcn_binary: Option<PathBuf>,
    /// Rebuild the base system and the package tree (downloaded .debs stay cached)
    #[arg(long)]
    pub refresh: bool,
    /// Also write the stage timings as JSON to this file
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct EmbedArgs {
    /// The edge ISO written by `dcn image build`
    pub iso: PathBuf,
    /// The join bundle from `dcn bundle export`
    #[arg(long, value_name = "FILE")]
    pub bundle: PathBuf,
    /// The node's settings (kind NodeConfig)
    #[arg(long, value_name = "FILE")]
    pub node: PathBuf,
    /// Write a copy of the ISO with the payload to this file
    #[arg(
        short,
        long,
        value_name = "FILE",
        required_unless_present = "in_place",
        conflicts_with = "in_place"
    )]
    pub output: Option<PathBuf>,
    /// Write the payload into ISO itself (milliseconds, whatever its size)
    #[arg(long)]
    pub in_place: bool,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The boot medium: the mounted live medium (a directory), an ISO file or a device
    #[arg(long, value_name = "PATH", default_value = crate::edge::install::DEFAULT_MEDIUM)]
    pub medium: PathBuf,
    /// Also show progress on this console (repeatable: /dev/tty1, /dev/ttyS0)
    #[arg(long, value_name = "DEVICE")]
    pub console: Vec<PathBuf>,
    /// Do not reboot when the installation is done
    #[arg(long)]
    pub no_reboot: bool,
}
