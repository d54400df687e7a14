//! What one client, and all of them together, may cost the image server.
//! The server faces whatever network the BMCs are on, so every resource a
//! connection holds (a slot, buffers, time) has a bound here. Tests shorten
//! the times through [`super::ImageServer::with_limits`].

use std::time::Duration;

/// The bounds the image server enforces.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections open at once, over all clients; more are answered 503.
    pub max_connections: usize,
    /// Connections open at once from one client address (an IPv6 client
    /// counts per /64, the block one host usually holds); more are
    /// answered 503, so one client cannot take every slot.
    pub max_per_client: usize,
    /// The whole request head must arrive within this time, counted from
    /// when the server starts waiting for it; an idle keep-alive connection
    /// is closed after it too. This is what ends a slowloris client that
    /// sends a byte now and then.
    pub head_timeout: Duration,
    /// While a response waits on a client that does not read it, each
    /// period of this length must carry at least [`Limits::min_bytes`];
    /// a client reading slower is disconnected.
    pub stall_window: Duration,
    /// See [`Limits::stall_window`].
    pub min_bytes: u64,
    /// Longest request head (request line and headers), in bytes; longer
    /// heads get 431 and the connection is closed.
    pub max_head: usize,
    /// Most header lines in a request head; more get 431.
    pub max_headers: usize,
}

impl Default for Limits {
    /// Bounds far above what a BMC needs (one to a few connections, heads
    /// of a few hundred bytes, megabytes per second) and far below what
    /// would hurt the host.
    fn default() -> Self {
        Limits {
            max_connections: 256,
            max_per_client: 16,
            head_timeout: Duration::from_secs(30),
            stall_window: Duration::from_secs(30),
            min_bytes: 64 * 1024,
            max_head: 16 * 1024,
            max_headers: 64,
        }
    }
}

/// The per-connection buffer hyper may fill (read and write side each):
/// a request head, or a few chunks of a file on their way out.
pub(super) const BUFFER: usize = 64 * 1024;
/// Bytes read from a file at once for a response.
pub(super) const CHUNK: usize = 32 * 1024;
