//! The join bundle, format 3: everything an edge host needs to join the
//! control plane, as a gzip'd tar of four members: `manifest.yaml`,
//! `ca.crt`, `token` and `manifest.sig` (the CA's signature over the
//! manifest, which lists the digests of `ca.crt` and `token`).
//!
//! A bundle is a bearer secret (the token lets a host join) and, for the
//! reader, hostile input: [`read_bundle`] reads it into memory under fixed
//! caps, never extracts it, and refuses it with a [`BundleError`] that names
//! the problem and the way out. `docs/bundle-format.md` is the format's
//! specification.

mod archive;
mod error;
mod inspect;
pub mod limits;
mod manifest;
mod reader;
mod token;
mod writer;

pub use crate::types::endpoints::{HttpsUrl, Sha256Digest, TlsEndpoint};
pub use error::BundleError;
pub use inspect::{CustomConfig, Inspection};
pub use manifest::{ControlPlaneInfo, CustomServiceConfig, HostsEntry, Manifest, ManifestProblem};
pub use reader::{ReadOptions, VerifiedBundle, parse_manifest, read_bundle, read_bundle_file};
pub use token::{JoinToken, TOKEN_ID_LENGTH, TOKEN_SECRET_LENGTH, TokenError};
pub use writer::{BUNDLE_MODE, save_bundle, write_bundle};

/// The bundle format this dcn writes, and the only one it reads.
///
/// 2: `customServiceConfig` is a map by the recipes' config keys (1 had
/// a fixed field per edge service).
/// 3: `controlPlane.exports` is a map by the recipes' export names (2 had
/// fixed `endpoints`, `messaging` and `ovnSouthbound` fields).
pub const FORMAT_VERSION: u32 = 3;

/// Member names, in the order they are written.
pub const MANIFEST: &str = "manifest.yaml";
pub const CA_CERT: &str = "ca.crt";
pub const TOKEN: &str = "token";
pub const SIGNATURE: &str = "manifest.sig";
pub const MEMBERS: [&str; 4] = [MANIFEST, CA_CERT, TOKEN, SIGNATURE];

/// The members whose digests the manifest lists.
pub const DIGESTED_MEMBERS: [&str; 2] = [CA_CERT, TOKEN];

/// What goes into a bundle.
#[derive(Debug, Clone)]
pub struct BundleContents {
    /// The manifest; [`write_bundle`] fills in `tokenId` and `members`.
    pub manifest: Manifest,
    /// The dcn CA certificate (PEM); it must be the signing CA's.
    pub ca_cert_pem: String,
    pub token: JoinToken,
}

#[cfg(test)]
mod tests;
