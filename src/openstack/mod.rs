//! Everything dcn says to OpenStack and the services under it: keystone,
//! nova, placement, RabbitMQ, MariaDB and the OVN southbound. The rest of
//! dcn reaches them through the traits here (and the recipes, which say
//! what each service needs); no other module speaks their protocols or
//! runs their command-line tools for a node.
//!
//! - [`client`]: the REST client (keystone login, catalog, JSON requests).
//! - [`identity`]: keystone users, projects, roles and endpoints.
//! - [`compute`]: nova and placement as [`compute::ComputeCloud`]: site
//!   zones, placing and removing hosts, their compute services' state.
//! - [`images`]: images as nodes boot them, and nova's aggregate image
//!   cache that puts them on a site's hosts ahead of its first servers.
//! - [`local_node`]: what a compute node sees of itself: its chassis'
//!   connection, its guests' ports, its image cache.
//! - [`compute_link`]: how a host's compute services reach the control
//!   plane (messaging URL, southbound remote, users), on the control plane
//!   and over the WAN.
//! - [`mod@southbound`]: the OVN southbound as [`southbound::Southbound`]:
//!   chassis that answer, cutting a chassis off, the options neutron reads;
//!   and who may write to it from across the WAN
//!   ([`southbound::admission`]: each node's certificate, the CAs trusted).
//! - [`compute_cloud`] and [`southbound()`] hand out the two traits' one
//!   implementation each.
//! - [`messaging`] and [`database`]: a node's RabbitMQ and MariaDB users;
//!   [`mariadb`]: the `mysql` commands (queries, scripts on stdin, the SQL
//!   of a user and its grants) the control plane's own databases are made
//!   with too.
//! - [`accounts`]: a node's users across all of them, as
//!   [`accounts::NodeAccounts`].
//! - [`bootstrap`]: the control plane's own OpenStack setup, as steps.

pub mod accounts;
mod batch;
pub mod bootstrap;
pub mod client;
pub mod compute;
pub mod compute_link;
pub mod database;
pub mod identity;
pub mod images;
pub mod local_node;
pub mod mariadb;
pub mod messaging;
pub mod southbound;

pub use client::{ApiError, Cloud, Credentials};

use crate::host::{Host, Runner};
use serde::Serialize;

/// The control plane's compute cloud (nova and placement), as its admin.
pub fn compute_cloud(host: &Host) -> anyhow::Result<impl compute::ComputeCloud + use<>> {
    compute::Nova::admin(host)
}

/// The control plane's images and nova's image cache, as its admin.
pub fn site_images(host: &Host) -> anyhow::Result<impl images::SiteImages + use<>> {
    compute::Nova::admin(host)
}

/// The control plane's OVN southbound, through its command-line client on
/// the control plane.
pub fn southbound(runner: &dyn Runner) -> impl southbound::Southbound + '_ {
    southbound::OvnSouthbound { runner }
}

/// One plane's view of a node: its compute service (the control path) or
/// its OVN chassis (the data path its guests' network depends on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PlaneState {
    /// Reports and answers.
    Up,
    /// Known, but not answering (service down, chassis silent).
    Down,
    /// Known but switched off by an operator (nova service disabled).
    Disabled,
    /// Not registered at all.
    Missing,
    /// The control plane could not be asked.
    Unknown,
}

impl PlaneState {
    pub fn as_str(self) -> &'static str {
        match self {
            PlaneState::Up => "up",
            PlaneState::Down => "down",
            PlaneState::Disabled => "disabled",
            PlaneState::Missing => "missing",
            PlaneState::Unknown => "unknown",
        }
    }
}
