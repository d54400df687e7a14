//! `dcn site cache-image SITE IMAGE...`: images put on every compute node
//! of a site before its first servers need them. Each image is resolved
//! with the kernel and ramdisk images it boots with. Nova is asked to
//! cache the disk images on the site's aggregate (its image cache API);
//! the kernels and ramdisks, which that request refuses, are kept here and
//! listed for the site, and its nodes put them in nova's cache themselves
//! (`crate::centre::sites::image_files`). Then each node's image cache, as
//! the node reports it with its checks (every 30 s), is followed until
//! every node has every image, or the time is up.

use crate::centre::sites::{Registry, image_files, upgrade_state};
use crate::host::{FileSpec, Host};
use crate::openstack::images::{ImageRef, SiteImages};
use crate::openstack::local_node::cache_name;
use crate::terminal_text::{Column, Table};
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How it went: the images and, per node, how many of them it has.
pub struct Cached {
    pub images: Vec<ImageRef>,
    pub nodes: BTreeMap<String, usize>,
}

impl Cached {
    pub fn complete(&self) -> bool {
        self.nodes.values().all(|n| *n == self.images.len())
    }

    pub fn table(&self) -> String {
        let mut t = Table::new(&[
            Column::new("NODE", 64).at_least(12),
            Column::new("CACHED", 16).at_least(8),
        ])
        .gap(1);
        for (node, n) in &self.nodes {
            t.row([node.as_str(), &format!("{n} of {}", self.images.len())]);
        }
        t.render()
    }
}

/// The images `names` and the kernel and ramdisk images they boot with,
/// each once.
fn resolve(images: &dyn SiteImages, names: &[String]) -> Result<Vec<ImageRef>> {
    let mut out: Vec<ImageRef> = Vec::new();
    for name in names {
        let image = images.find_image(name)?;
        let parts: Vec<String> = [image.kernel_id.clone(), image.ramdisk_id.clone()]
            .into_iter()
            .flatten()
            .collect();
        for img in std::iter::once(Ok(image)).chain(parts.iter().map(|id| images.find_image(id))) {
            let img = img?;
            if !out.iter().any(|o| o.id == img.id) {
                out.push(img);
            }
        }
    }
    Ok(out)
}

/// A kernel or ramdisk kept on the control plane for the site's nodes to
/// fetch: downloaded from glance once (checked against its SHA-512), and
/// described by its SHA-256, which the nodes check.
fn keep(host: &Host, images: &dyn SiteImages, image: &ImageRef) -> Result<crate::wire::ImageFile> {
    let files = &host.files;
    image_files::prepare(files)?;
    let path = image_files::path(&image.id);
    if files.size(&path)? != image.size {
        let part = format!("{path}.part");
        files.remove(&part)?;
        images.download(image, &mut |piece| {
            files.append(&part, piece, &FileSpec::secret())
        })?;
        files.rename(&part, &path)?;
    }
    Ok(crate::wire::ImageFile {
        id: image.id.clone(),
        sha256: files
            .sha256(&path)?
            .context("the image file just kept is gone")?,
        size: files.size(&path)?.unwrap_or(0),
    })
}

/// How many of `images` each node of `nodes` reports in its cache.
fn counts(host: &Host, nodes: &[String], images: &[ImageRef]) -> Result<BTreeMap<String, usize>> {
    let names: Vec<String> = images.iter().map(|i| cache_name(&i.id)).collect();
    let mut out = BTreeMap::new();
    for node in nodes {
        let cache = upgrade_state::load(&host.files, node)?
            .map(|s| s.check.image_cache)
            .unwrap_or_default();
        out.insert(
            node.clone(),
            names.iter().filter(|n| cache.contains(n)).count(),
        );
    }
    Ok(out)
}

/// Cache `names` on every node of `site` and follow them for `timeout`;
/// `say` hears each node's progress.
pub fn cache(
    host: &Host,
    site: &str,
    names: &[String],
    timeout: Duration,
    say: &mut dyn FnMut(&str),
) -> Result<Cached> {
    let registry = Registry::new(&host.files);
    let record = registry.active_site(site)?;
    let aggregate = record.aggregate_id.with_context(|| {
        format!(
            "site {site} has no host aggregate yet: it gets one with its first `dcn bundle export`"
        )
    })?;
    let mut nodes: Vec<String> = (registry.nodes()?.into_iter())
        .filter(|n| n.site == site && !n.secret_hash.is_empty())
        .map(|n| n.hostname)
        .collect();
    nodes.sort();
    if nodes.is_empty() {
        bail!("site {site} has no joined node to cache images on");
    }
    let cloud = crate::openstack::site_images(host)?;
    let images = resolve(&cloud, names)?;
    say(&format!(
        "caching {} on the {} node(s) of {site}",
        images
            .iter()
            .map(|i| format!("{} ({})", i.name, i.id))
            .collect::<Vec<_>>()
            .join(", "),
        nodes.len()
    ));
    let (boot, disks): (Vec<&ImageRef>, Vec<&ImageRef>) =
        images.iter().partition(|i| i.is_boot_file());
    for image in boot {
        let file = keep(host, &cloud, image)?;
        image_files::add(&host.files, site, file)?;
    }
    let disk_ids: Vec<String> = disks.iter().map(|i| i.id.clone()).collect();
    cloud.cache_on_aggregate(aggregate, &disk_ids)?;
    let deadline = Instant::now() + timeout;
    let mut shown: BTreeMap<String, usize> = BTreeMap::new();
    loop {
        let now = counts(host, &nodes, &images)?;
        for (node, n) in &now {
            if shown.get(node) != Some(n) {
                say(&format!("{node}: {n} of {} image(s) cached", images.len()));
            }
        }
        shown = now;
        let done = Cached {
            images: images.clone(),
            nodes: shown.clone(),
        };
        if done.complete() {
            return Ok(done);
        }
        if Instant::now() > deadline {
            say(&format!(
                "not every node reported every image within {}s: a node reports its cache every 30 s from dcn {} on (see its nova-compute log for the download)",
                timeout.as_secs(),
                crate::release::FIRST_UPGRADABLE_NODE
            ));
            return Ok(done);
        }
        std::thread::sleep(Duration::from_secs(3));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Glance(Vec<ImageRef>);

    impl SiteImages for Glance {
        fn find_image(&self, name_or_id: &str) -> Result<ImageRef> {
            (self.0.iter())
                .find(|i| i.id == name_or_id || i.name == name_or_id)
                .cloned()
                .context("no such image")
        }
        fn cache_on_aggregate(&self, _: u64, _: &[String]) -> Result<()> {
            Ok(())
        }
        fn download(&self, _: &ImageRef, _: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
            Ok(())
        }
    }

    fn img(id: &str, name: &str, kernel: Option<&str>, ramdisk: Option<&str>) -> ImageRef {
        ImageRef {
            id: id.into(),
            name: name.into(),
            size: None,
            disk_format: "raw".into(),
            sha512: None,
            kernel_id: kernel.map(str::to_string),
            ramdisk_id: ramdisk.map(str::to_string),
        }
    }

    #[test]
    fn an_image_comes_with_its_kernel_and_ramdisk_each_once() {
        let glance = Glance(vec![
            img("1", "guest", Some("k"), Some("r")),
            img("2", "guest-b", Some("k"), Some("r")),
            img("k", "guest-kernel", None, None),
            img("r", "guest-ramdisk", None, None),
        ]);
        let ids: Vec<String> = resolve(&glance, &["guest".into(), "guest-b".into()])
            .unwrap()
            .into_iter()
            .map(|i| i.id)
            .collect();
        assert_eq!(ids, ["1", "k", "r", "2"]);
        assert!(resolve(&glance, &["nope".into()]).is_err());
    }
}
