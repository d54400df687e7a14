//! `dcn site deploy INVENTORY`: a whole edge site from its BMCs, in one
//! command on the control plane. For each node of the inventory that is
//! not placed yet: its own copy of the generic edge ISO with the site's
//! bundle and its config embedded ([`media`]), served to its BMC; boot it
//! from virtual media, wait for the installer to report the disk written,
//! eject, and follow the node until the centre has placed it in the site's
//! zone ([`node`]). Nodes run side by side (`--parallel`); one that fails
//! is recorded with its reason and does not hold up the others. A re-run
//! resumes ([`plan`]): placed nodes are left alone, failed ones retried
//! from where they failed. What the nodes report goes through the join
//! service into the centre's progress records ([`watch`]), which
//! `dcn site status` shows too.

pub mod bundle;
pub mod media;
pub mod node;
pub mod plan;
pub mod report;
pub mod watch;

use crate::config::inventory::SiteInventory;
use crate::host::Host;
use crate::recipes::Recipes;
use crate::types::SiteName;
use anyhow::{Context, Result, bail};
use node::{Limits, NodeTarget};
use plan::Start;
use report::DeployReport;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What to deploy and how.
pub struct DeployOptions {
    pub inventory: PathBuf,
    /// Only these nodes (host names); empty: all of the inventory.
    pub nodes: Vec<String>,
    /// Nodes driven at once.
    pub parallel: usize,
    pub limits: Limits,
}

/// Deploy the inventory's site. Checks everything it can before it
/// changes anything: the inventory, the nodes asked for, each BMC password.
pub fn run(recipes: &Recipes, host: &Host, opts: &DeployOptions) -> Result<DeployReport> {
    let started = Instant::now();
    let inventory = crate::config::load_inventory(&opts.inventory)?;
    crate::deployment::Deployment::load(&host.files)?
        .filter(|d| d.roles.iter().any(|r| r == "controller"))
        .context("`dcn site deploy` runs on the control plane: run `dcn standalone init` first")?;
    let site = inventory.site.clone();
    let targets = targets(&inventory, &opts.nodes)?;
    check_names(host, &site, &targets, opts)?;
    let plan = Plan::of(host, &site, &targets)?;
    let media = if plan.installing > 0 {
        Media::prepare(recipes, host, &inventory, opts, plan.booting)?
    } else {
        Media::default()
    };

    let empty = PathBuf::new();
    let ctx = node::Run {
        files: &host.files,
        site: site.as_str(),
        iso: inventory.image.path(),
        bundle: media.bundle.as_ref().map_or(&empty, |b| &b.path),
        ca_pin: media.bundle.as_ref().map_or("", |b| b.pin.as_str()),
        media_url: media.url.as_deref().unwrap_or(""),
        media_ca: media.ca.as_deref(),
        limits: opts.limits,
    };
    let runs = run_all(recipes, &ctx, &targets, &plan.starts, opts.parallel.max(1));
    Ok(DeployReport {
        site: site.to_string(),
        bundle_exported: media.bundle.as_ref().is_some_and(|b| b.fresh),
        media_url: media.url,
        nodes: runs,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Before any BMC is touched: no node may take the control plane's name or
/// another compute host's.
fn check_names(
    host: &Host,
    site: &SiteName,
    targets: &[NodeTarget],
    opts: &DeployOptions,
) -> Result<()> {
    let cloud = crate::openstack::accounts::ControlPlaneAccounts::new(host);
    for t in targets {
        if let Some(why) = crate::centre::sites::reserved::refusal(
            &host.files,
            &cloud,
            site.as_str(),
            t.hostname(),
        )? {
            bail!(
                "{}: node {}: {why}; nothing was deployed",
                opts.inventory.display(),
                t.hostname()
            );
        }
    }
    Ok(())
}

/// Where each node starts, from what earlier runs saw of it.
struct Plan {
    starts: Vec<Start>,
    /// Nodes to boot from their ISO.
    booting: u32,
    /// Nodes that may still read their ISO: booting now, or in an install
    /// an earlier run started (many BMCs stream the image while it is used).
    installing: usize,
}

impl Plan {
    fn of(host: &Host, site: &SiteName, targets: &[NodeTarget]) -> Result<Plan> {
        let mut starts = Vec::new();
        let mut installing = 0;
        for t in targets {
            let seen = watch::seen(&host.files, t.hostname())?;
            let start = plan::start(&seen);
            if start == Start::Boot || (start == Start::Follow && !seen.on_disk) {
                installing += 1;
            }
            starts.push(start);
        }
        let booting = starts.iter().filter(|s| **s == Start::Boot).count() as u32;
        tracing::info!(
            "site {site}: {} node(s): {booting} to boot, {} to resume, {} already placed",
            targets.len(),
            starts
                .iter()
                .filter(|s| matches!(s, Start::Reset | Start::Follow))
                .count(),
            starts.iter().filter(|s| **s == Start::Placed).count(),
        );
        Ok(Plan {
            starts,
            booting,
            installing,
        })
    }
}

/// What the nodes boot from: the bundle, only when a node boots its ISO;
/// the media server while any node may read its ISO.
#[derive(Default)]
struct Media {
    bundle: Option<bundle::SiteBundle>,
    url: Option<String>,
    /// The CA the BMCs check the media server with (none over plain HTTP).
    ca: Option<String>,
}

impl Media {
    fn prepare(
        recipes: &Recipes,
        host: &Host,
        inventory: &SiteInventory,
        opts: &DeployOptions,
        booting: u32,
    ) -> Result<Media> {
        let site = &inventory.site;
        if booting > 0 && !inventory.image.path().is_file() {
            bail!(
                "{}: no such ISO; build it with `dcn image build` and set `image` in {}",
                inventory.image.path().display(),
                opts.inventory.display()
            );
        }
        let bundle = if booting > 0 {
            Some(site_bundle(recipes, host, inventory, opts.limits, booting)?)
        } else {
            None
        };
        let (tls, ca) = if inventory.media.insecure_http {
            tracing::warn!(
                "serving the node ISOs over plain HTTP (media.insecureHttp): each holds a join token anyone on the path can read"
            );
            (None, None)
        } else {
            let ca = crate::certs::authority::Authorities::new(&host.files)
                .trusted_pem()
                .context("the dcn CA certificate is missing; is this the control plane?")?;
            (Some(media::control_plane_tls(&host.files)?), Some(ca))
        };
        let server = media::serve(
            &host.files,
            site.as_str(),
            inventory.media.listen,
            inventory.media.url().as_str(),
            tls,
        )?;
        tracing::info!("site {site}: node ISOs served at {}", server.base_url);
        Ok(Media {
            bundle,
            url: Some(server.base_url),
            ca,
        })
    }
}

/// A join bundle for `booting` nodes: an earlier deploy's while it lasts,
/// else a new one.
fn site_bundle(
    recipes: &Recipes,
    host: &Host,
    inventory: &SiteInventory,
    limits: Limits,
    booting: u32,
) -> Result<bundle::SiteBundle> {
    let site = &inventory.site;
    let (b, stale) = bundle::ensure(
        recipes,
        host,
        site,
        booting,
        inventory.bundle.ttl.0,
        limits.install + limits.join,
    )?;
    if b.fresh {
        tracing::info!("site {site}: exported a join bundle for {booting} node(s) ({stale})");
    } else {
        tracing::info!("site {site}: reusing the join bundle of an earlier deploy");
    }
    Ok(b)
}

/// Run every node, `parallel` at a time; results in the inventory's order.
fn run_all(
    recipes: &Recipes,
    ctx: &node::Run,
    targets: &[NodeTarget],
    starts: &[Start],
    parallel: usize,
) -> Vec<node::NodeRun> {
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Option<node::NodeRun>>> = Mutex::new(vec![None; targets.len()]);
    std::thread::scope(|scope| {
        for _ in 0..parallel.min(targets.len()) {
            scope.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().expect("not poisoned");
                        let i = *n;
                        *n += 1;
                        i
                    };
                    let Some(target) = targets.get(i) else {
                        return;
                    };
                    let run = node::run(recipes, ctx, target, starts[i]);
                    results.lock().expect("not poisoned")[i] = Some(run);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("not poisoned")
        .into_iter()
        .map(|r| r.expect("every node ran"))
        .collect()
}

/// The nodes asked for, with their BMC passwords read: an unknown name or
/// a missing password stops the deploy before anything changed.
fn targets(inventory: &SiteInventory, wanted: &[String]) -> Result<Vec<NodeTarget>> {
    let known: Vec<&str> = inventory
        .nodes
        .iter()
        .map(|n| n.hostname.as_str())
        .collect();
    for w in wanted {
        if !known.contains(&w.as_str()) {
            bail!(
                "--nodes: {w} is not in the inventory; its nodes are {}",
                known.join(", ")
            );
        }
    }
    let mut out = Vec::new();
    for n in &inventory.nodes {
        if !wanted.is_empty() && !wanted.iter().any(|w| w == n.hostname.as_str()) {
            continue;
        }
        let host = n.hostname.as_str();
        out.push(NodeTarget {
            config: inventory
                .node_config(host)
                .with_context(|| format!("internal error: no config for {host}"))?,
            bmc: n
                .bmc
                .client_options(Duration::from_secs(30))
                .with_context(|| format!("node {host}'s BMC"))?,
            system: n.bmc.system.as_ref().map(|s| s.as_str().to_string()),
        });
    }
    Ok(out)
}
