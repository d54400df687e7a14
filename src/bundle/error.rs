//! Why a bundle is refused. One variant per class of refusal, so a caller
//! can branch (the CLI treats an expired bundle or a pin mismatch
//! differently from a damaged file), and each message says what is wrong,
//! why it matters and what the operator can do.

use crate::config::ConfigError;
use crate::host::read::ReadError;
use crate::pki::Pin;
use std::io;

/// The way out for nearly every refusal.
const FRESH: &str = "run `dcn bundle export --site <site>` on the control plane for a fresh bundle";

/// Why a structurally odd archive is not a dcn bundle.
const NOT_DCN: &str = "`dcn bundle export` never writes that, so the file was made by something else or tampered with";

/// A bundle that dcn refuses to use. Nothing on the host has changed when
/// one of these is returned.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error(
        "cannot read the bundle: {error}; check the path, and that this user may read the file (bundles are written with mode 0600)"
    )]
    Open { error: ReadError },

    #[error("reading the bundle failed: {error}")]
    Read { error: io::Error },

    #[error(
        "the input is larger than {limit} bytes, far more than a join bundle (a few kilobytes); check that this is the bundle written by `dcn bundle export`"
    )]
    TooLarge { limit: u64 },

    #[error(
        "the bundle decompresses to more than {limit} bytes, far more than a join bundle (a few kilobytes), and was refused unread (a decompression bomb?); {NOT_DCN}; {FRESH}"
    )]
    DecompressedTooLarge { limit: u64 },

    #[error(
        "the bundle is truncated ({detail}): the download or copy was cut short; copy it again, or {FRESH}"
    )]
    Truncated { detail: String },

    #[error("the bundle is damaged or not a join bundle ({detail}); copy it again, or {FRESH}")]
    Corrupt { detail: String },

    #[error(
        "the bundle holds an absolute path {member:?}; a join bundle holds only plain file names; {NOT_DCN}; {FRESH}"
    )]
    AbsolutePath { member: String },

    #[error(
        "the bundle holds a path with a `..` component, {member:?}, which points outside the bundle; {NOT_DCN}; {FRESH}"
    )]
    ParentDirectory { member: String },

    #[error(
        "the bundle member {member:?} is {kind}, not a regular file; a join bundle holds only regular files; {NOT_DCN}; {FRESH}"
    )]
    NotRegularFile { member: String, kind: String },

    #[error(
        "the bundle holds {member} twice, so which copy counts would be ambiguous; {NOT_DCN}; {FRESH}"
    )]
    DuplicateMember { member: String },

    #[error(
        "the bundle holds an unknown member {member:?}; a bundle holds only manifest.yaml, ca.crt, token and manifest.sig; it was made by something other than this version of dcn or tampered with; {FRESH}"
    )]
    UnknownMember { member: String },

    #[error(
        "the bundle member {member} is {size} bytes, more than the limit of {limit}; {NOT_DCN}; {FRESH}"
    )]
    MemberTooLarge {
        member: String,
        size: u64,
        limit: u64,
    },

    #[error("the bundle has no {}; it is incomplete or not a join bundle; {FRESH}", members.join(", no "))]
    MissingMembers { members: Vec<String> },

    #[error(
        "the bundle's manifest is invalid: {0}; the bundle is damaged or was made by an incompatible dcn; {FRESH}"
    )]
    Manifest(ConfigError),

    #[error(
        "the bundle has formatVersion {found}, but this dcn ({}) reads only formatVersion {}: upgrade dcn on this host, or export the bundle with a dcn that writes format {}",
        env!("CARGO_PKG_VERSION"),
        super::FORMAT_VERSION,
        super::FORMAT_VERSION
    )]
    UnsupportedVersion { found: String },

    #[error(
        "the bundle has formatVersion {found}, written by an older dcn, and this dcn ({}) reads only formatVersion {}: \
         export a new bundle with `dcn bundle export --site SITE` on a control plane upgraded to this dcn",
        env!("CARGO_PKG_VERSION"),
        super::FORMAT_VERSION
    )]
    OlderVersion { found: u64 },

    #[error("the bundle member {member} is invalid: {problem}; {FRESH}")]
    BadMember { member: String, problem: String },

    #[error(
        "the bundle's ca.crt ({subject}) is not a CA certificate ({reason}), so it cannot be the dcn CA; {NOT_DCN}; {FRESH}"
    )]
    NotCa { subject: String, reason: String },

    #[error(
        "the bundle's CA certificate ({subject}) expired at {not_after} (this host's clock reads {now}; if that is wrong, set the clock): a CA past its validity cannot vouch for the control plane; if the clock is right, the control plane's CA must be replaced before it can admit hosts"
    )]
    CaExpired {
        subject: String,
        not_after: String,
        now: String,
    },

    #[error(
        "the bundle's CA certificate ({subject}) is not valid before {not_before}, but this host's clock reads {now}: set this host's clock (or the control plane's, if its clock is ahead), then try again"
    )]
    CaNotYetValid {
        subject: String,
        not_before: String,
        now: String,
    },

    #[error(
        "the bundle's CA has pin {found}, but --ca-pin is {expected}: this bundle did not come from the control plane you trust; check where it came from, and compare --ca-pin with the pin `dcn bundle export` printed"
    )]
    PinMismatch { expected: Pin, found: Pin },

    #[error(
        "manifest.sig does not verify against the bundle's ca.crt: the bundle was modified or corrupted after export, or was not made by this CA; {FRESH}"
    )]
    BadSignature,

    #[error(
        "the bundle member {member} has digest {found}, but the signed manifest lists {expected}: it was modified after export; {FRESH}"
    )]
    DigestMismatch {
        member: String,
        expected: String,
        found: String,
    },

    #[error(
        "the bundle for site {site} expired at {not_after}, {ago} ago (this host's clock reads {now}; if that is wrong, set the clock): run `dcn bundle export --site {site}` on the control plane for a fresh bundle"
    )]
    Expired {
        site: String,
        not_after: String,
        ago: String,
        now: String,
    },
}

impl BundleError {
    pub(super) fn bad_member(member: &str, problem: impl Into<String>) -> BundleError {
        BundleError::BadMember {
            member: member.to_string(),
            problem: problem.into(),
        }
    }
}
