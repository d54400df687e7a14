//! The life of the certificates dcn issues: when one is due ([`policy`]),
//! the control plane's CAs and their rotation ([`authority`]), its own TLS
//! certificates ([`leaves`]) and their renewal ([`renew`]), moving to a new
//! CA ([`rotation`]), putting renewed
//! certificates where services read them ([`install`]), and the inventory
//! `dcn cert list` shows ([`inventory`]). A node renews its own through the
//! join service (`crate::join::node_cert`).

pub mod authority;
pub mod install;
pub mod inventory;
pub mod leaves;
pub mod policy;
pub mod renew;
pub mod rotation;
