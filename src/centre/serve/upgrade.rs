//! A node's upgrade through the join service: its check (what it runs,
//! how its upgrade goes, its image cache) kept and answered with its
//! order from the upgrade under way; and the files of an edge release,
//! served in ranges to nodes that present their own secret.

use super::handlers::{Refusal, authenticated_node, internal, refuse};
use crate::centre::edge_release;
use crate::centre::sites::upgrade_campaign::KeptCampaign;
use crate::centre::sites::{Registry, image_files, upgrade_state};
use crate::host::Host;
use crate::wire::{RELEASE_CHUNK, UpgradeCheck, UpgradeOrder};
use std::time::SystemTime;

/// `POST /v1/nodes/{hostname}/upgrade`, the upgrade under way read
/// through `campaign`.
pub fn check(
    host: &Host,
    campaign: &KeptCampaign,
    hostname: &str,
    bearer: Option<&str>,
    body: &[u8],
) -> Result<UpgradeOrder, Refusal> {
    let check: UpgradeCheck = serde_json::from_slice(body)
        .map_err(|e| refuse(400, "bad-request", format!("not an upgrade check: {e}")))?;
    let registry = Registry::new(&host.files);
    let (node, _) = authenticated_node(&registry, hostname, bearer)?;
    upgrade_state::record(&host.files, hostname, &check.bounded(), SystemTime::now())
        .map_err(internal)?;
    let campaign = campaign.get(&host.files).map_err(internal)?;
    let mut order = (*campaign)
        .as_ref()
        .map_or_else(UpgradeOrder::none, |c| c.order_for(hostname));
    order.image_files = image_files::for_site(&host.files, &node.site).map_err(internal)?;
    Ok(order)
}

/// A piece of a release file.
pub struct Piece {
    pub bytes: Vec<u8>,
    /// Where it starts in the file.
    pub start: u64,
    /// The file's whole size.
    pub size: u64,
}

impl Piece {
    /// Whether it is the whole file (answered 200, else 206).
    pub fn whole(&self) -> bool {
        self.start == 0 && self.bytes.len() as u64 == self.size
    }

    /// The `Content-Range` of a partial answer.
    pub fn content_range(&self) -> String {
        let end = self.start + self.bytes.len() as u64;
        match end {
            0 => format!("bytes */{}", self.size),
            _ => format!("bytes {}-{}/{}", self.start, end - 1, self.size),
        }
    }
}

/// `GET /v1/nodes/{hostname}/release/{id}/{file}` with `range` (the
/// `Range` header, if any): at most [`RELEASE_CHUNK`] bytes of the file.
pub fn release_file(
    host: &Host,
    hostname: &str,
    bearer: Option<&str>,
    id: &str,
    file: &str,
    range: Option<&str>,
) -> Result<Piece, Refusal> {
    let registry = Registry::new(&host.files);
    authenticated_node(&registry, hostname, bearer)?;
    let path = edge_release::file_path(&host.files, id, file).map_err(internal)?;
    serve_piece(host, path, range)
}

/// `GET /v1/nodes/{hostname}/image/{id}` with `range`: a piece of an image
/// file the node's site caches.
pub fn image_file(
    host: &Host,
    hostname: &str,
    bearer: Option<&str>,
    id: &str,
    range: Option<&str>,
) -> Result<Piece, Refusal> {
    let registry = Registry::new(&host.files);
    let (node, _) = authenticated_node(&registry, hostname, bearer)?;
    let listed = image_files::listed(&host.files, &node.site, id).map_err(internal)?;
    serve_piece(host, listed.map(|_| image_files::path(id)), range)
}

/// At most [`RELEASE_CHUNK`] bytes of the file at `path` (none: not
/// served) from where `range` starts.
fn serve_piece(host: &Host, path: Option<String>, range: Option<&str>) -> Result<Piece, Refusal> {
    let start = match range {
        None => 0,
        Some(r) => parse_range(r).ok_or_else(|| {
            refuse(
                416,
                "bad-request",
                "only one range of the form bytes=START- or bytes=START-END is served",
            )
        })?,
    };
    let not_found = || {
        refuse(
            404,
            "file-unknown",
            "the control plane does not serve this file (any more): ask for your orders again",
        )
    };
    let path = path.ok_or_else(not_found)?;
    let (bytes, size) = host
        .files
        .read_range(&path, start, RELEASE_CHUNK)
        .map_err(internal)?
        .ok_or_else(not_found)?;
    if start > 0 && start >= size {
        return Err(refuse(
            416,
            "bad-request",
            format!("the file has {size} bytes"),
        ));
    }
    Ok(Piece { bytes, start, size })
}

/// The first byte a `Range: bytes=START-[END]` asks for (the end is the
/// server's to choose: at most a chunk is sent whatever it says).
fn parse_range(header: &str) -> Option<u64> {
    let spec = header.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (start, end) = spec.split_once('-')?;
    let start: u64 = start.trim().parse().ok()?;
    if !end.trim().is_empty() {
        let end: u64 = end.trim().parse().ok()?;
        if end < start {
            return None;
        }
    }
    Some(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_one_start_with_an_optional_end() {
        assert_eq!(parse_range("bytes=0-"), Some(0));
        assert_eq!(parse_range("bytes=100-199"), Some(100));
        assert_eq!(parse_range(" bytes=5-5"), Some(5));
        for bad in [
            "bytes=-500",
            "bytes=1-0",
            "bytes=0-1,5-6",
            "items=0-",
            "bytes=x-",
            "bytes=18446744073709551616-",
            "",
        ] {
            assert_eq!(parse_range(bad), None, "{bad}");
        }
        let p = Piece {
            bytes: vec![0; 10],
            start: 10,
            size: 30,
        };
        assert!(!p.whole());
        assert_eq!(p.content_range(), "bytes 10-19/30");
        let whole = Piece {
            bytes: vec![1; 3],
            start: 0,
            size: 3,
        };
        assert!(whole.whole());
    }
}
