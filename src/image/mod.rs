//! The edge boot image: one generic ISO per release, customised per node in
//! milliseconds.
//!
//! - [`build`]: `dcn image build`, the ISO from a recipe (`images/edge/`):
//!   a Debian live system with the edge packages, dcn and the installer;
//! - [`iso9660`] and [`payload`]: the ISO's zero-filled payload area
//!   (`dcn/payload.bin`) and the framed bundle + `NodeConfig` written in it;
//! - [`embed`]: `dcn image embed` and `dcn image show`;
//! - [`install`]: `dcn install`, run by the live system: disk, OS,
//!   bootloader, node settings, and the first-boot unit that runs
//!   `dcn join` ([`firstboot`]).
//!
//! `docs/image.md` is the operator's guide and the format's description.

pub mod build;
pub mod embed;
pub mod firstboot;
pub mod install;
pub mod iso9660;
mod mounts;
mod output;
pub mod payload;
pub mod recipe;

/// The payload area's path on the ISO.
pub const PAYLOAD_PATH: &str = "dcn/payload.bin";
