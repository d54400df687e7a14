//! A node's site config through the join service: the node fetches its
//! resolved drop-ins with its own secret, and reports the revision it runs
//! (or why the fetched one did not apply). The centre keeps that report on
//! the node's record, where `dcn site status` shows it.

use super::handlers::{Refusal, authenticated_node, internal, refuse};
use crate::centre::sites::site_config::{current, resolve};
use crate::centre::sites::{AppliedConfig, Registry};
use crate::host::Host;
use crate::terminal_text::sanitize;
use crate::timefmt::rfc3339;
use crate::wire::{ConfigApplied, MAX_DETAIL, NodeConfigReply};
use std::time::SystemTime;

/// `GET /v1/nodes/{hostname}/config`.
pub fn fetch(
    host: &Host,
    recipes: &crate::recipes::Recipes,
    hostname: &str,
    bearer: Option<&str>,
) -> Result<NodeConfigReply, Refusal> {
    let registry = Registry::new(&host.files);
    let (node, site) = authenticated_node(&registry, hostname, bearer)?;
    let site_name = site
        .name
        .parse()
        .map_err(|e: String| internal(anyhow::anyhow!(e)))?;
    let revision = current(&registry, &site_name).map_err(internal)?;
    let config = crate::deployment::saved_config(&host.files).map_err(internal)?;
    let resolved = resolve(
        recipes,
        &config.services.custom_configs(),
        &revision.config,
        &node.hostname,
    );
    Ok(NodeConfigReply {
        revision: revision.revision,
        services: resolved.into_iter().map(|(k, r)| (k, r.text)).collect(),
    })
}

/// `POST /v1/nodes/{hostname}/config`.
pub fn report(
    host: &Host,
    hostname: &str,
    bearer: Option<&str>,
    body: &[u8],
) -> Result<(), Refusal> {
    let applied: ConfigApplied = serde_json::from_slice(body)
        .map_err(|e| refuse(400, "bad-request", format!("not a config report: {e}")))?;
    let registry = Registry::new(&host.files);
    let _lock = registry.lock().map_err(internal)?;
    let (mut node, _) = authenticated_node(&registry, hostname, bearer)?;
    let error = applied
        .error
        .map(|e| sanitize(crate::terminal_text::head(&e, MAX_DETAIL)).into_owned());
    node.config = Some(Box::new(AppliedConfig {
        revision: applied.revision,
        reported_at: rfc3339(SystemTime::now()),
        error,
    }));
    registry.save_node(&node).map_err(internal)
}
