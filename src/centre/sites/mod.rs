//! The control plane's registry of edge sites, join tokens and joined
//! nodes, under `/var/lib/dcn/` (0700 directories, 0600 files). The CLI
//! (`bundle export`, `site`, `node`) and the join service (`dcn serve`) share
//! it under one lock. A token is stored only as its hash; a node's
//! credentials are its own and leave the control plane only in its join
//! reply. Each node's progress, from its BMC to its zone, is kept beside
//! ([`progress`]), what it last said of its upgrade
//! ([`upgrade_state`]), and the upgrade under way ([`upgrade_campaign`]).

pub mod accounts;
pub mod admin;
pub mod chassis_liveness;
pub mod export;
pub mod image_files;
pub mod phases;
pub mod progress;
mod registry;
pub mod reserved;
pub mod site_config;
pub mod southbound_members;
pub mod upgrade_campaign;
pub mod upgrade_state;

pub use registry::{AppliedConfig, Lock, NodeRecord, NodeState, Registry, Site, TokenRecord};
