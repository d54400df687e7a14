//! clap definitions of `dcn site …` and `dcn node …`, run on the control
//! plane to manage edge sites and their hosts.

use super::OutputFormat;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum SiteCommand {
    /// List the edge sites, their nodes and outstanding tokens
    List {
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show each host of a site: its phase from BMC to zone (PHASE), since when, its last report, the site config revision it runs (CONFIG) and its last error
    ///
    /// Hosts being deployed report each phase to the join service; a host that is not placed or failed and
    /// reported nothing for 10 minutes shows as `silent (last: PHASE)`. CONFIG is the revision of
    /// `dcn site config` a joined node applied: `1 of 2` while it is behind, `(failed)` when the last one
    /// did not apply. Failed hosts' reasons and last log lines follow the table.
    Status {
        /// The site
        site: crate::types::SiteName,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show or change a site's service config (kind SiteConfig): site defaults and node overrides
    ///
    /// Without --file, prints the current revision. With --file, shows each
    /// joined node's drop-in diffs, then saves the file as the next revision
    /// (with --dry-run: only shows). Nodes fetch and apply it within about
    /// 30 s, restarting only the services whose drop-in changed; a node cut
    /// off catches up when it is back. Resolved per key as node > site >
    /// control plane (`dcn node show HOST`).
    Config {
        /// The site
        site: crate::types::SiteName,
        /// The new config (kind SiteConfig, for this site)
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Show the per-node diffs; change nothing
        #[arg(long, requires = "file")]
        dry_run: bool,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Revoke a site: its nodes' credentials and its tokens die, its hosts lose access
    Revoke {
        /// The site
        site: crate::types::SiteName,
    },
    /// Deploy an edge site from its inventory: each node's BMC boots its own ISO, which installs and joins
    ///
    /// On the control plane. Exports a join bundle (or reuses the last
    /// deploy's while it is good), embeds it with each node's config into a
    /// copy of the inventory's ISO, serves the copies, boots each node from
    /// them through its BMC, ejects the media once the node reports its disk
    /// written, and follows it until it is placed in the site's zone.
    /// Progress goes to stderr, a table to stdout. Running it again resumes:
    /// placed nodes are left alone, failed ones retried from where they
    /// failed.
    Deploy(SiteDeployArgs),
    /// Upgrade edge sites to what the control plane runs: its dcn and its packages, node by node
    ///
    /// On the control plane, after `dcn upgrade` brought it to a new dcn or new packages. Builds the
    /// edge release (the control plane's dcn binary, and the packages an edge is made of at the
    /// versions the control plane runs, from its package source) and serves it through the join
    /// service. Every node of the sites stages it while it keeps working; then the canary applies it
    /// alone, then batches of --batch nodes, each after the last is seen on the release (its
    /// nova-compute up and reporting, its chassis answering, its site config current). A node that
    /// fails stops new turns once --max-failures have failed; its reason and last log lines show
    /// here and in `dcn site status`. Running the same command again resumes: upgraded nodes are
    /// left alone, failed ones get their turn again. Running guests keep running; guests left on a
    /// replaced qemu are named, not restarted. With --plan: the release, what changed in it, each
    /// node's dcn and its turn; nothing is ordered.
    Upgrade(SiteUpgradeArgs),
    /// Pre-cache images on every compute node of a site, so its first servers do not pull them over the WAN
    ///
    /// Asks nova to cache each image (and the kernel and ramdisk images it boots with) on the hosts
    /// of the site's aggregate (nova's aggregate image cache), then follows each node's image cache
    /// as it reports it, until every node has every image or --timeout passes.
    CacheImage(SiteCacheImageArgs),
}

#[derive(Debug, Args)]
pub struct SiteUpgradeArgs {
    /// The sites, upgraded in this order
    #[arg(required = true)]
    pub sites: Vec<crate::types::SiteName>,
    /// Show the release and the order; order nothing
    #[arg(long)]
    pub plan: bool,
    /// The node that goes first, alone (one of the sites' nodes)
    #[arg(long, value_name = "HOST")]
    pub canary: Option<String>,
    /// Nodes that apply at once after the canary
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub batch: u16,
    /// Stop giving nodes their turn once this many have failed
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub max_failures: u16,
    /// How long a node may take from its turn until it has applied the release
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = humantime::parse_duration)]
    pub node_timeout: std::time::Duration,
    /// How long the control plane waits, after a node applied, to see it up on the release
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = humantime::parse_duration)]
    pub verify_timeout: std::time::Duration,
    #[arg(long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

#[derive(Debug, Args)]
pub struct SiteCacheImageArgs {
    /// The site
    pub site: crate::types::SiteName,
    /// The images (names or ids)
    #[arg(required = true)]
    pub images: Vec<String>,
    /// How long to follow the nodes' caches
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = humantime::parse_duration)]
    pub timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct SiteDeployArgs {
    /// The site inventory (kind SiteInventory; `dcn config validate` checks it)
    pub inventory: PathBuf,
    /// Only these nodes (comma-separated host names)
    #[arg(long, value_delimiter = ',', value_name = "HOST,...")]
    pub nodes: Vec<String>,
    /// Nodes driven at once
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub parallel: u16,
    /// How long a node may take from the first request to its BMC until its disk is written (slow BMC answers included)
    #[arg(long, value_name = "DURATION", default_value = "60m", value_parser = humantime::parse_duration)]
    pub install_timeout: std::time::Duration,
    /// How long a node may take from its disk written until it is placed (slow BMC answers included)
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = humantime::parse_duration)]
    pub join_timeout: std::time::Duration,
    #[arg(long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

#[derive(Debug, Subcommand)]
pub enum NodeCommand {
    /// List the edge hosts with their health: nova-compute (COMPUTE), the OVN chassis (NETWORK) and their progress (PHASE)
    ///
    /// Hosts that reported progress but never joined are listed too (STATE `-`). PHASE is the last phase a
    /// host reported (or the control plane recorded), or `silent (last: PHASE)` when it is not placed or
    /// failed and reported nothing for 10 minutes.
    List {
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show an edge host's resolved service config, where each value came from, and the revision it runs
    Show {
        /// The host name
        hostname: String,
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// On a joined edge: fetch this node's site config from the control plane and apply it
    ///
    /// Run every 30 s by the dcn-config-sync timer that `dcn join` installs.
    /// Writes the drop-ins that differ, restarts the services whose drop-in
    /// changed, and reports the revision to the control plane.
    SyncConfig,
    /// On a joined edge: do what the control plane's upgrade orders this node (stage, or apply, a release)
    ///
    /// Started by the config sync (as dcn-node-upgrade.service) when `dcn site upgrade` on the control
    /// plane includes this node. Asks for its order; fetches the release's dcn and hands over to it;
    /// stages the packages this node needs (while it keeps working); on its turn installs them, renders
    /// the services' files again and restarts only what changed, then waits for its chassis and its
    /// guests' ports. Reports each phase to the control plane (`dcn site status`). A node on a dcn
    /// before 0.2.0 is brought over once by hand: copy the control plane's dcn to /usr/local/bin/dcn
    /// and run `dcn join` with the site's bundle (an expired one will do).
    Upgrade,
    /// On an edge that missed a CA rotation: trust the control plane's CAs again
    ///
    /// Fetches the CAs the join service offers, keeps them only if one has the pin
    /// `dcn ca status` prints on the control plane, checks that the service holds a
    /// certificate of that CA, installs them where this node's services read them, and
    /// checks the node's certificate.
    TrustCa {
        /// The pin of the control plane's CA (`dcn ca status`)
        #[arg(long, value_name = "sha256:HEX")]
        ca_pin: String,
    },
    /// Remove an edge host: its credentials die, then its compute service, resource provider, aggregate membership and progress record go
    ///
    /// A host that only reported progress and never joined loses its progress record.
    Remove {
        /// The host name
        hostname: String,
    },
}
