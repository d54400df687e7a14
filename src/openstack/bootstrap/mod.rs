//! The control plane's OpenStack bootstrap, as steps `dcn standalone init`
//! runs after the recipes have put the services in place: RabbitMQ's users
//! ([`rabbit`]), keystone's service users and catalog ([`catalog`]), the
//! host's compute service mapped to the cell ([`cell`]), and the check that
//! the whole works through its APIs ([`verify`]).

pub mod catalog;
pub mod cell;
pub mod rabbit;
pub mod verify;

pub use catalog::{Catalog, admin_credentials};
pub use cell::DiscoverHost;
pub use rabbit::RabbitUsers;
pub use verify::Verify;
