//! dcn: install an all-in-one OpenStack control plane on a lab server and join
//! remote edge hosts to it as compute nodes.
//!
//! The binary (`src/main.rs`) only parses arguments and prints errors; every
//! subcommand is one library function reached through [`app::run`].
//!
//! Side effects are concentrated in [`host`]: one command runner, one file
//! writer. Everything else takes a [`host::Host`] so it can be tested against
//! a temporary root directory and a recording command runner.

pub mod app;
pub mod bmc;
pub mod bundle;
pub mod centre;
pub mod certs;
pub mod cli;
pub mod config;
pub mod deploy;
pub mod deployment;
pub mod edge;
pub mod engine;
pub mod host;
pub mod image;
pub mod ini;
pub mod lab;
pub mod logging;
pub mod openstack;
pub mod ovn;
pub mod passwords;
pub mod paths;
pub mod pki;
pub mod preflight;
pub mod recipes;
pub mod reset;
pub mod secrets;
pub mod status;
pub mod terminal_text;
pub mod timefmt;
pub mod tls;
pub mod types;
pub mod wire;
pub mod yaml;
