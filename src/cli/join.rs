//! clap definitions of `dcn join BUNDLE`.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The join bundle from `dcn bundle export`
    pub bundle: PathBuf,
    /// The CA pin `dcn bundle export` printed (without it the CA is trusted on first use)
    #[arg(long, value_name = "sha256:HEX")]
    pub ca_pin: Option<String>,
    /// This host's name as a compute node (default: its host name)
    #[arg(long, value_name = "NAME")]
    pub hostname: Option<String>,
    /// The address this host's services use (default: the default route's)
    #[arg(long, value_name = "IP")]
    pub my_ip: Option<std::net::IpAddr>,
    /// How long to keep trying to reach the control plane and join; then as long again to wait until it sees this host
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = humantime::parse_duration)]
    pub timeout: std::time::Duration,
    /// Where packages come from when they are not installed: `mirror` or `local:/path`
    #[arg(long, value_name = "SOURCE", default_value = "mirror")]
    pub packages: crate::types::PackageSource,
    /// Turn these failing preflight checks into warnings (comma-separated, or `all`)
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub ignore_preflight_errors: Vec<String>,
}
