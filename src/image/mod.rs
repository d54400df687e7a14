//! The edge boot image: one generic ISO per release, customised per node in
//! milliseconds.
//!
//! - [`build`]: `dcn image build`, the ISO from a recipe (`images/edge/`):
//!   a Debian live system with the edge packages, dcn and the installer;
//! - [`iso9660`] and [`payload`]: the ISO's zero-filled payload area
//!   (`dcn/payload.bin`) and the framed bundle + `NodeConfig` written in it;
//! - [`embed`]: `dcn image embed` and `dcn image show`;
//! - [`mounts`]: what is mounted while an image is built or installed.
//!
//! The installer that runs on the edge from this image (`dcn install`) is
//! the edge's: `crate::edge::install`.
//!
//! `docs/image.md` is the operator's guide and the format's description.

pub mod build;
pub mod embed;
pub mod iso9660;
pub mod mounts;
mod output;
pub mod payload;
pub mod recipe;

/// The payload area's path on the ISO.
pub const PAYLOAD_PATH: &str = "dcn/payload.bin";
