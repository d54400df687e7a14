//! The control plane's registry of edge sites, join tokens and joined
//! nodes, under `/var/lib/dcn/` (0700 directories, 0600 files). The CLI
//! (`bundle export`, `site`, `node`) and the join service (`dcn serve`) share
//! it under one lock. A token is stored only as its hash; site credentials
//! never leave the control plane except in a join reply.

pub mod admin;
pub mod export;
pub mod health;
pub mod provision;
mod registry;

pub use registry::{NodeRecord, NodeState, Registry, Site, SiteSecrets, TokenRecord};

/// Names dcn gives a site's RabbitMQ and keystone users.
pub fn site_user(site: &str) -> String {
    format!("dcn-site-{site}")
}
