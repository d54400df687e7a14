//! `dcn bmc …` (a server's BMC over Redfish) and the arguments of
//! `dcn image serve`: clap definitions only; [`crate::bmc`] does the work.

use super::OutputFormat;
use clap::{Args, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum BmcCommand {
    /// Boot a server from an ISO: insert it as virtual CD, boot once from CD, power on
    ///
    /// The BMC downloads the image itself, so --iso-url must be reachable from
    /// the BMC's network (`dcn image serve` publishes a directory over HTTP).
    Boot(BootArgs),
    /// Show the power state, the boot override and the inserted virtual media
    Status {
        #[command(flatten)]
        bmc: BmcArgs,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Eject the virtual CD and clear a boot override to it
    Eject(BmcArgs),
    /// Power the server on or off, or reset it
    Power(PowerArgs),
    /// Print the pin (sha256:HEX) of the certificate a BMC presents
    ///
    /// Nothing is trusted and no credentials are sent. Compare the
    /// certificate's fingerprint with the one the BMC's own console shows,
    /// then pass the pin to the other commands as --bmc-pin.
    Fingerprint(FingerprintArgs),
}

/// How to reach and log in to a BMC.
///
/// The password comes from --password-file or the environment variable
/// DCN_BMC_PASSWORD, never from the command line.
#[derive(Debug, Args)]
pub struct BmcArgs {
    /// The BMC's Redfish service
    #[arg(long, value_name = "https://HOST[:PORT]")]
    pub bmc: String,
    /// The system to act on (Id, Name or UUID); needed when the BMC manages several
    #[arg(long, value_name = "ID")]
    pub system: Option<String>,
    /// BMC user name
    #[arg(long, env = "DCN_BMC_USERNAME", value_name = "USER")]
    pub username: String,
    /// File holding the BMC password (default: the DCN_BMC_PASSWORD environment variable)
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    #[command(flatten)]
    pub tls: BmcTlsArgs,
    /// Seconds each request to the BMC may take in all (connecting, headers, the whole answer, retries)
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub timeout: u64,
}

/// How the BMC's certificate is checked (default: the system's CAs).
#[derive(Debug, Args)]
#[group(multiple = false)]
pub struct BmcTlsArgs {
    /// Trust the CA certificate(s) in FILE (PEM) for the BMC's certificate
    #[arg(long, value_name = "FILE")]
    pub bmc_ca: Option<PathBuf>,
    /// Trust exactly the BMC key with this pin (see `dcn bmc fingerprint`)
    #[arg(long, value_name = "sha256:HEX", value_parser = parse_pin)]
    pub bmc_pin: Option<crate::pki::Pin>,
    /// Do not check the BMC's certificate at all (the password is then exposed to anyone in the path)
    #[arg(long)]
    pub insecure: bool,
}

#[derive(Debug, Args)]
pub struct BootArgs {
    #[command(flatten)]
    pub bmc: BmcArgs,
    /// The ISO image's URL, as the BMC will fetch it
    #[arg(long, value_name = "URL")]
    pub iso_url: String,
    /// If the BMC refuses a one-time boot override, set a persistent one
    /// (the server then boots from CD until `dcn bmc eject`)
    #[arg(long)]
    pub allow_continuous: bool,
    /// Seconds the BMC may take to insert the image (some download all of it first)
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub media_timeout: u64,
    /// Seconds to wait for the server to report power on (0: do not wait)
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub power_timeout: u64,
}

#[derive(Debug, Args)]
pub struct PowerArgs {
    #[command(flatten)]
    pub bmc: BmcArgs,
    /// What to do
    pub action: PowerAction,
    /// Ask the operating system to shut down or restart instead of cutting power
    #[arg(long)]
    pub graceful: bool,
    /// Seconds to wait for the power state to change (0: do not wait)
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub power_timeout: u64,
}

/// A power action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PowerAction {
    On,
    Off,
    Reset,
}

#[derive(Debug, Args)]
pub struct FingerprintArgs {
    /// The BMC's Redfish service
    #[arg(long, value_name = "https://HOST[:PORT]")]
    pub bmc: String,
    #[arg(long, value_enum, default_value_t)]
    pub output: OutputFormat,
    /// Seconds the connection and TLS handshake may take in all
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub timeout: u64,
}

/// `dcn image serve DIR`: publish the files of a directory over HTTP,
/// read-only, for BMCs to fetch.
#[derive(Debug, Args)]
pub struct ImageServeArgs {
    /// The directory whose files are served (nothing outside it is)
    pub dir: PathBuf,
    /// Address and port to listen on
    #[arg(long, value_name = "ADDR:PORT", default_value = "0.0.0.0:8080")]
    pub listen: SocketAddr,
    /// Connections served at once, from all clients; more are answered 503
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Connections served at once from one client address (IPv6: per /64),
    /// so no client can take every slot; raise it when many BMCs reach
    /// this server through one NAT address
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_per_client: u32,
    /// Serve HTTPS with this certificate (PEM, the leaf first): an ISO with
    /// a node's payload holds a join token, which plain HTTP exposes to the
    /// network between this host and the BMC
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM, PKCS#8); readable by its owner only
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

fn parse_pin(s: &str) -> Result<crate::pki::Pin, String> {
    s.parse().map_err(|e: anyhow::Error| e.to_string())
}
