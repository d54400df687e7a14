//! `dcn site …` and `dcn node …`: the control plane's view of its edge
//! sites and their hosts, printed.

use crate::cli::{NodeCommand, OutputFormat, SiteCommand};
use crate::recipes::Recipes;
use crate::terminal_text::{Column, Table};
use anyhow::Result;
use std::process::ExitCode;

pub fn site(cmd: SiteCommand, recipes: &Recipes) -> Result<ExitCode> {
    let host = crate::host::Host::system("/", false);
    match cmd {
        SiteCommand::List { output } => {
            print_sites(crate::centre::sites::admin::list_sites(&host)?, output)?;
        }
        SiteCommand::Status { site, output } => {
            let status =
                crate::centre::sites::admin::site_status_with_health(&host, site.as_str())?;
            match output {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&status)?),
                OutputFormat::Text => print!("{status}"),
            }
        }
        SiteCommand::Upgrade(args) => return super::site_upgrade::upgrade(args, recipes),
        SiteCommand::CacheImage(args) => return super::site_upgrade::cache_image(args),
        SiteCommand::Deploy(args) => {
            let report = crate::centre::site_deploy::run(
                recipes,
                &host,
                &crate::centre::site_deploy::DeployOptions {
                    inventory: args.inventory,
                    nodes: args.nodes,
                    parallel: args.parallel as usize,
                    limits: crate::centre::site_deploy::node::Limits {
                        install: args.install_timeout,
                        join: args.join_timeout,
                        poll: std::time::Duration::from_secs(5),
                    },
                },
            )?;
            match args.output {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
                OutputFormat::Text => print!("{}", report.table()),
            }
            if !report.success() {
                return Ok(ExitCode::FAILURE);
            }
        }
        SiteCommand::Config {
            site,
            file,
            dry_run,
            output,
        } => site_config(&host, recipes, &site, file, dry_run, output)?,
        SiteCommand::Revoke { site } => {
            crate::centre::sites::admin::revoke_site(recipes, &host, site.as_str())?;
            println!(
                "Site {site} revoked: its RabbitMQ and keystone users and its tokens are gone; its hosts can no longer reach the control plane. `dcn bundle export --site {site}` re-admits it with new credentials."
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn node(cmd: NodeCommand, recipes: &Recipes) -> Result<ExitCode> {
    use crate::centre::sites::admin::Removed;
    let host = crate::host::Host::system("/", false);
    match cmd {
        NodeCommand::List { output } => {
            let nodes = crate::centre::sites::admin::list_nodes_with_health(&host)?;
            print_nodes(nodes, output)?;
        }
        NodeCommand::Show { hostname, output } => {
            let view =
                crate::centre::sites::site_config::node_view(recipes, &host.files, &hostname)?;
            match output {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&view)?),
                OutputFormat::Text => print!("{view}"),
            }
        }
        NodeCommand::SyncConfig => {
            let synced = crate::edge::join::config_sync::sync(recipes, &host);
            // The upgrade orders, whatever became of the config (not
            // while a join runs: it holds the node).
            if !matches!(synced, Ok(None))
                && let Err(e) = crate::edge::upgrade::check_in(&host)
            {
                tracing::warn!("asking for this node's upgrade orders: {e:#}");
            }
            match synced? {
                None => println!(
                    "a dcn join is running on this host; the next sync applies the site config"
                ),
                Some(synced) => print_synced(&synced),
            }
        }
        NodeCommand::Upgrade => println!("{}", crate::edge::upgrade::run(recipes, &host)?),
        NodeCommand::TrustCa { ca_pin } => {
            let pin: crate::pki::Pin = ca_pin.parse()?;
            let done = crate::edge::join::node_cert::trust_ca(recipes, &host, &pin)?;
            println!(
                "This node trusts the control plane's CAs again{}.",
                match &done.renewed {
                    Some((serial, until)) => format!(
                        " and renewed its certificate (serial {serial}, valid until {until})"
                    ),
                    None => String::new(),
                }
            );
        }
        NodeCommand::Remove { hostname } => {
            match crate::centre::sites::admin::remove_node(recipes, &host, &hostname)? {
                Removed::Node => println!(
                    "Removed {hostname}: its compute service, resource provider and aggregate membership are gone."
                ),
                Removed::Reports => println!(
                    "Removed {hostname}'s progress record: it never joined, so nothing else was there."
                ),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `dcn node list`: each node with its planes, certificate and phase.
fn print_nodes(
    nodes: Vec<crate::centre::sites::admin::NodeView>,
    output: OutputFormat,
) -> Result<()> {
    match output {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&nodes)?),
        OutputFormat::Text => {
            let mut t = Table::new(&[
                Column::new("HOST", 64).at_least(20),
                Column::new("SITE", 64).at_least(12),
                Column::new("ADDRESS", 40).at_least(15),
                Column::new("STATE", 16).at_least(8),
                Column::new("COMPUTE", 16).at_least(9),
                Column::new("NETWORK", 16).at_least(9),
                Column::new("JOINED", 32).at_least(20),
                Column::new("CERT", 16).at_least(7),
                Column::new("PHASE", 64),
            ])
            .gap(1);
            for n in nodes {
                let joined = n.joined();
                t.row([
                    n.hostname(),
                    n.site(),
                    joined.map_or("-", |j| j.address.as_str()),
                    &joined.map_or("-".to_string(), |j| format!("{:?}", j.state).to_lowercase()),
                    n.compute.as_str(),
                    n.network.as_str(),
                    joined.map_or("-", |j| j.joined_at.as_str()),
                    n.progress
                        .certificate
                        .as_ref()
                        .map_or("-", |c| c.state.as_str()),
                    &n.progress.shown,
                ]);
            }
            print!("{}", t.render());
        }
    }
    Ok(())
}

/// What `dcn node sync-config` did.
fn print_synced(synced: &crate::edge::join::config_sync::Synced) {
    if synced.changed.is_empty() {
        println!(
            "site config revision {}: nothing to change",
            synced.revision
        );
    } else {
        println!(
            "site config revision {} applied: wrote {}; restarted {}",
            synced.revision,
            synced.changed.join(", "),
            if synced.restarted.is_empty() {
                "nothing".to_string()
            } else {
                synced.restarted.join(", ")
            }
        );
    }
    if let Some(c) = &synced.certificate {
        if let Some((serial, until)) = &c.renewed {
            println!("renewed this node's certificate: serial {serial}, valid until {until}");
        }
        if c.trust_changed {
            println!("the CAs this node trusts changed");
        }
    }
}

/// `dcn site list`: each site with its state, tokens and nodes.
fn print_sites(
    sites: Vec<crate::centre::sites::admin::SiteView>,
    output: OutputFormat,
) -> Result<()> {
    match output {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&sites)?),
        OutputFormat::Text => {
            let mut t = Table::new(&[
                Column::new("SITE", 64).at_least(16),
                Column::new("STATE", 9),
                Column::new("TOKENS", 7),
                Column::new("NODES", 4096),
            ])
            .gap(1);
            for s in sites {
                let state = if s.site.revoked_at.is_some() {
                    "revoked"
                } else {
                    "active"
                };
                t.row([
                    s.site.name.as_str(),
                    state,
                    &s.tokens.to_string(),
                    &s.nodes.join(", "),
                ]);
            }
            print!("{}", t.render());
        }
    }
    Ok(())
}

/// `dcn site config SITE [FILE]`: show the site's config, or plan and set
/// a new one.
fn site_config(
    host: &crate::host::Host,
    recipes: &Recipes,
    site: &crate::types::SiteName,
    file: Option<std::path::PathBuf>,
    dry_run: bool,
    output: OutputFormat,
) -> Result<()> {
    let Some(file) = file else {
        let registry = crate::centre::sites::Registry::new(&host.files);
        registry.active_site(site.as_str())?;
        let current = crate::centre::sites::site_config::current(&registry, site)?;
        match output {
            OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&current)?),
            OutputFormat::Text => print!(
                "# revision {}\n{}",
                current.revision,
                serde_yaml::to_string(&current.config)?
            ),
        }
        return Ok(());
    };
    let shown = file.display().to_string();
    let text = crate::yaml::read_file(&file)
        .map_err(|e| anyhow::anyhow!("cannot read the site config: {e}"))?;
    let new = crate::config::parse_site_config(recipes, &text, &shown)?;
    if new.site != *site {
        anyhow::bail!(
            "{shown} is the config of site {}, not {site}: fix its `site:` or name site {} on the command line",
            new.site,
            new.site
        );
    }
    let change = crate::centre::sites::site_config::set(recipes, &host.files, new, dry_run)?;
    match output {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&change)?),
        OutputFormat::Text => print!("{change}"),
    }
    Ok(())
}
