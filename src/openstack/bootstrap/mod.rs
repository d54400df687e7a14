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

use crate::engine::Step;
use crate::recipes::{Recipes, Values};
use crate::secrets::Secret;
use anyhow::Result;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Steps that follow one service's own steps in a phase, by service.
pub type ServiceSteps = BTreeMap<String, Vec<Box<dyn Step>>>;

/// After RabbitMQ is up: its users.
pub fn after_messaging(values: &Values) -> ServiceSteps {
    let password = Secret::new(values.password["rabbitmq_controlplane"].clone());
    BTreeMap::from([(
        "rabbitmq".to_string(),
        vec![Box::new(RabbitUsers { password }) as Box<dyn Step>],
    )])
}

/// After keystone is up: the service users and the catalog of `services`.
pub fn after_identity(
    recipes: &Recipes,
    services: &[String],
    values: Arc<Values>,
) -> Result<ServiceSteps> {
    let catalog = Catalog::new(recipes, services, values)?;
    Ok(BTreeMap::from([(
        "keystone".to_string(),
        vec![Box::new(catalog) as Box<dyn Step>],
    )]))
}
