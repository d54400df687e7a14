//! Size caps for reading a bundle. A real bundle is a few kilobytes (a
//! manifest, a certificate, a token and a signature), so the caps are far
//! above any bundle dcn writes and far below anything that could hurt the
//! host reading it.

/// The largest `.tar.gz` accepted, in bytes. Larger input is refused after
/// reading one byte more than this.
pub const MAX_COMPRESSED_SIZE: u64 = 1024 * 1024;

/// The largest decompressed tar stream accepted, in bytes (headers, data,
/// padding and end-of-archive blocks). Decompression stops one byte past
/// this, so a decompression bomb costs at most this much memory.
pub const MAX_ARCHIVE_SIZE: u64 = 1024 * 1024;

/// The largest single member accepted, in bytes.
pub const MAX_MEMBER_SIZE: u64 = 256 * 1024;
