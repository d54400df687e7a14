//! Per-service steps: the database and its user, setup commands (schema
//! syncs, cell mappings), and the units — enabled, started, and restarted
//! only when the service's configuration or code changed since they last
//! started.

mod database;
mod schema_sync;
mod setup;
mod units;

pub use database::Database;
pub use setup::Setup;
pub use units::{DisableUnits, ReloadUnits, Unit, installed_since_start};
