//! The backup archive: a gzip'd tar of regular files, written 0600 and
//! streamed both ways (databases and images may be large; memory stays
//! bounded). The members come first (`dumps/<part>`, `files/<path>`), then
//! `manifest.json` (what each member is, its size and SHA-256, where each
//! file goes with its mode and owner), then `manifest.sig`, the manifest
//! signed by the control plane's CA, whose certificate is one of the files.
//! A reader hashes every member as it passes and refuses the archive at the
//! first thing wrong: a path that is not plain, a link or device, a
//! duplicate, a member the manifest does not list or lists otherwise, a
//! truncated or corrupt stream, a manifest of a newer dcn, a signature that
//! does not verify, a CA other than the one pinned.

mod manifest;
mod reader;
mod writer;

pub use manifest::{DirEntry, DumpEntry, FileEntry, Manifest, MemberInfo, check_name};
pub use reader::{Verified, read, read_stream};
pub use writer::Writer;

/// The format this dcn writes and reads.
pub const FORMAT_VERSION: u32 = 1;
pub const MANIFEST: &str = "manifest.json";
pub const SIGNATURE: &str = "manifest.sig";
/// The member that holds the CA certificate the signature is checked with.
pub const CA_MEMBER: &str = "files/var/lib/dcn/pki/ca.crt";
/// Bounds on what a reader takes.
pub const MAX_MEMBERS: usize = 100_000;
pub const MAX_MANIFEST: u64 = 64 << 20;
pub const MAX_NAME: usize = 1024;
/// The most a reader keeps in memory of a member (the CA certificate, the
/// signature).
const MAX_SMALL: u64 = 64 << 10;
