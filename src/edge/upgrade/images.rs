//! The image files a node's site caches (kernels and ramdisks, which
//! nova's own cache request refuses), put in nova's image cache where its
//! boot path looks before it downloads: fetched from the join service in
//! pieces and checked against their digests.

use super::fetch;
use crate::edge::join::client::JoinClient;
use crate::host::Host;
use crate::wire::UpgradeOrder;
use anyhow::{Context, Result};

/// Put the image files the site caches in nova's image cache, each where
/// nova's boot path would fetch it to, fetched from the join service and
/// checked against its digest; whether any was added. One that nova has
/// already is left as it is.
pub(super) fn cache_images(
    host: &Host,
    client: &JoinClient,
    hostname: &str,
    secret: &str,
    order: &UpgradeOrder,
) -> Result<bool> {
    use crate::openstack::local_node::{IMAGE_CACHE_DIR, cache_file, cache_specs};
    let (dir_spec, file_spec) = cache_specs();
    let mut added = false;
    for image in &order.image_files {
        let dest = cache_file(&image.id);
        if host.files.exists(&dest)? {
            continue;
        }
        host.files.ensure_dir(IMAGE_CACHE_DIR, &dir_spec)?;
        let source = ImagePieces {
            client,
            hostname,
            secret,
        };
        let wanted = fetch::Wanted {
            name: &image.id,
            size: image.size,
            sha256: &image.sha256,
        };
        tracing::info!("caching image {} for the site", image.id);
        fetch::fetch(&host.files, &source, &wanted, &dest, &file_spec)
            .with_context(|| format!("caching image {}", image.id))?;
        added = true;
    }
    Ok(added)
}

/// Image files through the join service, as this node.
struct ImagePieces<'a> {
    client: &'a JoinClient,
    hostname: &'a str,
    secret: &'a str,
}

impl fetch::Source for ImagePieces<'_> {
    fn piece(&self, name: &str, offset: u64) -> Result<(Vec<u8>, u64)> {
        self.client
            .image_piece(self.hostname, self.secret, name, offset)
    }
}
