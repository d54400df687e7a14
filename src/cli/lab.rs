//! clap definitions of `dcn lab up|down|status|exec|restart|link|publish|…`.

use super::OutputFormat;
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Create the lab: containers, routed networks, packages, control plane
    Up(LabUpArgs),
    /// Remove everything the lab created (the download cache stays)
    Down(LabDirArgs),
    /// Show the lab's hosts
    Status {
        #[command(flatten)]
        dir: LabDirArgs,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Run a command inside a lab host: `dcn lab exec cp -- openstack server list`
    Exec {
        #[command(flatten)]
        dir: LabDirArgs,
        /// The host (cp, edge1, …)
        host: String,
        /// The command and its arguments
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Power a host off and boot it again (its disk is kept)
    Restart {
        #[command(flatten)]
        dir: LabDirArgs,
        /// The host (cp, edge1, …)
        host: String,
        /// Cut its power instead: every process killed at once, none told
        /// (no shutdown, no unit stopped), as when a site loses power
        #[arg(long)]
        cut: bool,
    },
    /// Replace a host by a blank one of the same name and address: power it off, throw its disk away, boot a fresh one
    ///
    /// The drill of a control plane whose disk died: `dcn restore` puts it back from a
    /// backup (`dcn lab exec cp -- dcn restore FILE`). Its network link and its place in
    /// the lab stay; what was on its disk is gone.
    Replace {
        #[command(flatten)]
        dir: LabDirArgs,
        /// The host (cp, edge1, …)
        host: String,
    },
    /// Run OpenStack's Tempest suite against the lab's cloud (installed in cp from the lab's repository)
    ///
    /// tempest.conf is written from what the cloud reports; the tests of the exclusion list (each
    /// with its reason) are skipped. The summary is printed and kept in DIR/tempest/. Exits 1
    /// when a test failed.
    Tempest {
        #[command(flatten)]
        dir: LabDirArgs,
        /// Tempest's smoke tests
        #[arg(long)]
        smoke: bool,
        /// Also the tests whose ids match this regular expression (repeatable)
        #[arg(long = "regex", value_name = "REGEX")]
        regexes: Vec<String>,
        /// Boot every server of the run in this zone (an edge site)
        #[arg(long, value_name = "ZONE")]
        zone: Option<String>,
        /// Tests run at once
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=8))]
        concurrency: u32,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Measure how the control plane's cost grows with edge hosts (docs/scale.md)
    ///
    /// The lab's spare edge containers carry simulated edge hosts, HOSTS-PER-SITE per site:
    /// each joined through the real join path, each a real ovn-controller with its own
    /// chassis and node certificate. The idle control plane is measured first, then each
    /// fleet size of --hosts in turn: every chassis up, a pause, a window of CPU, PSS and
    /// TCP connections per control-plane unit; with --storms, then the reconnect storms. The
    /// report (report.json, report.md, curve.svg) is rewritten after each step.
    Scale(LabScaleArgs),
    /// Join simulated edge hosts and start their chassis (inside a carrier; run by `dcn lab scale`)
    #[command(hide = true)]
    Chassis(LabChassisArgs),
    /// Cut or restore a host's network link, as a WAN failure would
    Link {
        #[command(flatten)]
        dir: LabDirArgs,
        /// The host (cp, edge1, …)
        host: String,
        /// down cuts the link, up restores it
        state: LinkState,
        /// With up: the link carries at most this toward the host (a WAN's bandwidth: `8mbit`,
        /// `500kbit`), or `off` for the full speed of the lab's veth
        #[arg(long, value_name = "RATE|off", value_parser = crate::lab::parse_rate)]
        rate: Option<crate::lab::Rate>,
    },
    /// Publish Debian packages in the lab's package source (its own layer over the cache), as an operator adds them to a local repository
    Publish {
        #[command(flatten)]
        dir: LabDirArgs,
        /// The .deb files
        #[arg(required = true, value_name = "DEB")]
        debs: Vec<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct LabScaleArgs {
    #[command(flatten)]
    pub dir: LabDirArgs,
    /// The fleet sizes measured, growing, e.g. 10,100,300
    #[arg(long, value_name = "N,N,…", value_parser = crate::lab::scale::parse_steps)]
    // A path, not `Vec`: clap takes the parsed list as one value.
    pub hosts: std::vec::Vec<usize>,
    /// Simulated hosts per site (each site an availability zone and aggregate)
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub per_site: u64,
    /// Simulated hosts per carrier container (each shares its Open vSwitch)
    #[arg(long, value_name = "N", default_value_t = 25, value_parser = clap::value_parser!(u64).range(1..=30))]
    pub per_carrier: u64,
    /// Each measurement window (the figures use 10m)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = humantime::parse_duration)]
    pub window: std::time::Duration,
    /// The pause after a step's chassis are all up, before its window
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = humantime::parse_duration)]
    pub settle: std::time::Duration,
    /// Where the report goes (default DIR/scale)
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// After the last step, the reconnect storms: every carrier's link cut for DURATION and
    /// restored at once, then the control plane restarted; each timed until every chassis is up
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub storms: Option<std::time::Duration>,
    /// The first K simulated hosts also run a real nova-compute with nova's fake virt driver
    /// (about 135 MB of memory each in their carrier)
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub fake_computes: usize,
    /// The next M simulated hosts get a replayed compute: their carrier's replayer sends what
    /// such a nova-compute sends, over each host's own accounts (a few MB each)
    #[arg(long, value_name = "M", default_value_t = 0)]
    pub replayed_computes: usize,
    /// At each step, after its window, measure the same hosts with the fake-driver computes'
    /// load replayed, without compute load, and with those computes again: the replayer's cost
    /// per host against the real ones'
    #[arg(long, requires = "fake_computes")]
    pub calibrate: bool,
}

#[derive(Debug, Args)]
pub struct LabChassisArgs {
    /// The site's join bundle
    #[arg(long, value_name = "FILE")]
    pub bundle: PathBuf,
    /// The CA pin `dcn bundle export` printed
    #[arg(long, value_name = "PIN")]
    pub ca_pin: crate::pki::Pin,
    /// A simulated host and its tunnel address (repeatable)
    #[arg(long = "host", value_name = "NAME=ADDRESS", value_parser = parse_sim_host)]
    pub hosts: Vec<(String, std::net::Ipv4Addr)>,
    /// Where each host keeps its join state
    #[arg(long, value_name = "DIR", default_value = crate::lab::scale::chassis::DEFAULT_STATE)]
    pub state: PathBuf,
    /// Each host's compute load: fake (a nova-compute with nova's fake virt driver),
    /// replayed (the carrier's compute replayer sends what that nova-compute sends), or off
    #[arg(long, value_name = "LOAD")]
    pub compute: Option<crate::lab::scale::ComputeLoad>,
}

fn parse_sim_host(s: &str) -> Result<(String, std::net::Ipv4Addr), String> {
    let (name, address) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: give NAME=ADDRESS"))?;
    let name: crate::types::Hostname = name.parse()?;
    let address = address
        .parse()
        .map_err(|_| format!("{address:?} is not an IPv4 address"))?;
    Ok((name.to_string(), address))
}

#[derive(Debug, Args)]
pub struct LabDirArgs {
    /// The lab's directory (state, logs, report.json)
    #[arg(long, value_name = "DIR", default_value = crate::lab::DEFAULT_DIR)]
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct LabUpArgs {
    #[command(flatten)]
    pub dir: LabDirArgs,
    /// Number of edge sites, one host each, each on its own routed subnet
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=50))]
    pub edges: u8,
    /// Extra edge hosts booted but not joined: to join by hand, or to carry the simulated hosts of `dcn lab scale`
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=40))]
    pub spare: u8,
    /// Edges install their packages during `dcn join` instead of finding them preinstalled
    #[arg(long)]
    pub no_edge_layer: bool,
    /// Copy this dcn into each host once, as the host's own file, instead of binding this build read-only: hosts keep it across restarts, and `dcn upgrade` can replace it
    #[arg(long)]
    pub copy_dcn: bool,
    /// Download cache (base root filesystem, packages), kept across labs
    #[arg(long, value_name = "DIR", default_value = crate::lab::DEFAULT_CACHE)]
    pub cache: PathBuf,
    /// StandaloneConfig for the control plane (default: the lab's own)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Short certificate lifetimes in the lab's config, to watch them renew (the control
    /// plane's and the nodes' certificates live this long, e.g. 6m; at least 3m)
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, conflicts_with = "config")]
    pub cert_lifetime: Option<std::time::Duration>,
    /// Bare-metal edge nodes: qemu VMs behind a Redfish BMC emulator, in site bm1
    ///
    /// Each node is a VM of 2 vCPUs and 3 GiB (software emulation) on the
    /// site's own routed subnet, powered off, with a blank 16 GiB disk; the
    /// container bm1-bmc runs libvirt and the sushy-tools emulator that
    /// drives them. The lab writes the site's inventory to DIR/bm1.inventory.yaml
    /// and into cp at /etc/dcn/inventory/bm1.yaml: deploy them with
    /// `dcn lab exec cp -- dcn site deploy /etc/dcn/inventory/bm1.yaml`.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=4))]
    pub bare_metal: u8,
    /// Add two nodes that must fail to deploy: bm1-nodisk (its VM has no disk) and bm1-badpw (a wrong BMC password)
    #[arg(long)]
    pub bare_metal_failures: bool,
    /// The generic edge ISO (`dcn image build`) bare-metal nodes boot; bound into cp for `site deploy`
    #[arg(long, value_name = "FILE", default_value = crate::lab::bare_metal::DEFAULT_EDGE_ISO)]
    pub edge_iso: PathBuf,
}

/// A link state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LinkState {
    Up,
    Down,
}
