//! `dcn site …` and `dcn node …`: the control plane's view of its edge
//! sites and their hosts, printed.

use crate::cli::{NodeCommand, OutputFormat, SiteCommand};
use anyhow::Result;
use std::process::ExitCode;

pub fn site(cmd: SiteCommand) -> Result<ExitCode> {
    let host = crate::host::Host::system("/", false);
    match cmd {
        SiteCommand::List { output } => {
            let sites = crate::sites::admin::list_sites(&host)?;
            match output {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&sites)?),
                OutputFormat::Text => {
                    println!("{:<16} {:<9} {:<7} NODES", "SITE", "STATE", "TOKENS");
                    for s in sites {
                        println!(
                            "{:<16} {:<9} {:<7} {}",
                            s.site.name,
                            if s.site.revoked_at.is_some() {
                                "revoked"
                            } else {
                                "active"
                            },
                            s.tokens,
                            s.nodes.join(", ")
                        );
                    }
                }
            }
        }
        SiteCommand::Status { site, output } => {
            let status = crate::sites::phases::site_status(
                &host.files,
                site.as_str(),
                std::time::SystemTime::now(),
            )?;
            match output {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&status)?),
                OutputFormat::Text => print!("{status}"),
            }
        }
        SiteCommand::Revoke { site } => {
            crate::sites::admin::revoke_site(&host, site.as_str())?;
            println!(
                "Site {site} revoked: its RabbitMQ and keystone users and its tokens are gone; its hosts can no longer reach the control plane. `dcn bundle export --site {site}` re-admits it with new credentials."
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn node(cmd: NodeCommand) -> Result<ExitCode> {
    use crate::sites::admin::Removed;
    let host = crate::host::Host::system("/", false);
    match cmd {
        NodeCommand::List { output } => {
            let nodes = crate::sites::admin::list_nodes_with_health(&host)?;
            match output {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&nodes)?),
                OutputFormat::Text => {
                    println!(
                        "{:<20} {:<12} {:<15} {:<8} {:<9} {:<9} {:<20} PHASE",
                        "HOST", "SITE", "ADDRESS", "STATE", "COMPUTE", "NETWORK", "JOINED"
                    );
                    for n in nodes {
                        let joined = n.joined();
                        println!(
                            "{:<20} {:<12} {:<15} {:<8} {:<9} {:<9} {:<20} {}",
                            n.hostname(),
                            n.site(),
                            joined.map_or("-", |j| j.address.as_str()),
                            joined.map_or("-".to_string(), |j| format!("{:?}", j.state)
                                .to_lowercase()),
                            n.compute.as_str(),
                            n.network.as_str(),
                            joined.map_or("-", |j| j.joined_at.as_str()),
                            n.progress.shown
                        );
                    }
                }
            }
        }
        NodeCommand::Remove { hostname } => {
            match crate::sites::admin::remove_node(&host, &hostname)? {
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
