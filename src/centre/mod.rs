//! The control plane's side: what runs on the lab server that edges join.
//! It installs the control plane ([`standalone`]), serves joins, config and
//! certificates to edges ([`serve`]), keeps the registry of sites and nodes
//! and their accounts ([`sites`]), deploys sites from their BMCs
//! ([`site_deploy`]), backs itself up and restores ([`backup`]), renews
//! its certificates ([`renewal`]), upgrades itself ([`upgrade`]) and then
//! its sites ([`site_upgrade`], from the [`edge_release`] it serves),
//! and caches images on a site's nodes ([`site_images`]);
//! [`control_plane`] says who it is and what its recipes render with.
//! Nothing here is used by `crate::edge`.

pub mod backup;
pub mod control_plane;
pub mod edge_release;
pub mod renewal;
pub mod serve;
pub mod site_deploy;
pub mod site_images;
pub mod site_upgrade;
pub mod sites;
pub mod standalone;
pub mod upgrade;
