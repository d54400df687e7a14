//! dcn: install an all-in-one OpenStack control plane on a lab server and join
//! remote edge hosts to it as compute nodes.
//!
//! The binary (`src/main.rs`) only parses arguments and prints errors; every
//! subcommand is one library function reached through [`app::run`].
//!
//! Side effects are concentrated in [`host`]: one command runner, one file
//! writer. Everything else takes a [`host::Host`] so it can be tested against
//! a temporary root directory and a recording command runner.
//!
//! # The map
//!
//! Three layers; each uses only itself and the layers below it, and no
//! modules import each other in a circle (`tests/layout.rs` holds both).
//!
//! **Commands**, on top: [`cli`] (the arguments), [`app`] (one call per
//! subcommand), and what looks at a host from outside either side:
//! [`status`], [`reset`], and [`lab`], the test lab that runs both sides in
//! containers.
//!
//! **The two sides**, which never use each other:
//! - [`centre`], the control plane's side: installing it
//!   ([`centre::standalone`]), the join service edges talk to
//!   ([`centre::serve`]), the registry of sites and nodes with their
//!   accounts ([`centre::sites`]), deploying a site from its BMCs
//!   ([`centre::site_deploy`]), backup and restore ([`centre::backup`]), its
//!   own certificates' renewal ([`centre::renewal`]), and who it is
//!   ([`centre::control_plane`]).
//! - [`edge`], the edge's side: the ISO's installer ([`edge::install`]) and
//!   the join with what keeps a node in step afterwards ([`edge::join`]).
//!
//! They meet in [`wire`], the join protocol's messages.
//!
//! **What both sides share**, roughly from the top down:
//! - certificates over their life ([`certs`]), the join bundle
//!   ([`bundle`]), the boot image's format and build ([`image`]);
//! - putting recipes on a host: [`preflight`], [`deploy`] (files, units,
//!   databases, setup commands) run as steps by [`engine`], what was
//!   deployed ([`deployment`]) and by which dcn ([`release`]);
//! - the operator's config files ([`config`]) and the service catalogue
//!   ([`recipes`]);
//! - clients of what dcn drives: BMCs ([`bmc`]), and everything that
//!   speaks to OpenStack's services, RabbitMQ, MariaDB and OVN's
//!   southbound, behind the traits of one module ([`openstack`]);
//! - TLS and the CA ([`tls`], [`pki`]), the control plane's passwords
//!   ([`passwords`]), YAML read with limits and located errors ([`yaml`]),
//!   INI files ([`ini`]), input read within a bound ([`io`]);
//! - the host adapters ([`host`]), validated value types ([`types`]),
//!   secrets that never print ([`secrets`]), well-known paths ([`paths`]),
//!   time, logging, and text from outside made safe and cut short
//!   ([`terminal_text`]).

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
pub mod io;
pub mod lab;
pub mod logging;
pub mod openstack;
pub mod passwords;
pub mod paths;
pub mod pki;
pub mod preflight;
pub mod recipes;
pub mod release;
pub mod reset;
pub mod secrets;
pub mod status;
pub mod terminal_text;
pub mod timefmt;
pub mod tls;
pub mod types;
pub mod wire;
pub mod yaml;
