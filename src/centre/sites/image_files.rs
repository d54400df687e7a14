//! The image files a site's nodes put in nova's image cache themselves:
//! the kernels and ramdisks of images booted with them, which nova's own
//! cache request refuses (nova 26 inspects what it caches as a disk image,
//! and a kernel is not one) while its boot path takes them as they are.
//! `dcn site cache-image` keeps each file under
//! `/var/lib/dcn/image-cache/files/<image id>` and lists it for the site in
//! `/var/lib/dcn/image-cache/sites/<site>.json`; the join service hands the
//! list to the site's nodes with their orders and serves the files to
//! them in ranges.

use crate::host::{FileSpec, Files};
use crate::wire::ImageFile;
use anyhow::{Context, Result};

const DIR: &str = "/var/lib/dcn/image-cache";
const FILES: &str = "/var/lib/dcn/image-cache/files";
const SITES: &str = "/var/lib/dcn/image-cache/sites";

/// The most image files a site lists (the oldest go first).
pub const MAX_PER_SITE: usize = 32;

/// Where an image's file is kept.
pub fn path(id: &str) -> String {
    format!("{FILES}/{id}")
}

/// The image files `site`'s nodes are to cache.
pub fn for_site(files: &Files, site: &str) -> Result<Vec<ImageFile>> {
    let p = format!("{SITES}/{site}.json");
    match files.read_string(&p)? {
        None => Ok(Vec::new()),
        Some(t) => serde_json::from_str(&t).with_context(|| format!("{p} is damaged")),
    }
}

/// Whether `site` lists image `id` (so its nodes may fetch it).
pub fn listed(files: &Files, site: &str, id: &str) -> Result<Option<ImageFile>> {
    Ok(for_site(files, site)?.into_iter().find(|f| f.id == id))
}

/// Make sure the folders exist (private: the files are the cloud's
/// images).
pub fn prepare(files: &Files) -> Result<()> {
    for d in [DIR, FILES, SITES] {
        files.ensure_dir(d, &FileSpec::private_dir())?;
    }
    Ok(())
}

/// List `file` for `site` (once; the newest last).
pub fn add(files: &Files, site: &str, file: ImageFile) -> Result<()> {
    prepare(files)?;
    let mut list = for_site(files, site)?;
    list.retain(|f| f.id != file.id);
    list.push(file);
    let extra = list.len().saturating_sub(MAX_PER_SITE);
    list.drain(..extra);
    let text = serde_json::to_string_pretty(&list).expect("serialisable") + "\n";
    files.write(
        format!("{SITES}/{site}.json"),
        text.as_bytes(),
        &FileSpec::secret(),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_lists_each_file_once_and_at_most_its_share() {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        let file = |id: &str| ImageFile {
            id: id.into(),
            sha256: "0".repeat(64),
            size: 1,
        };
        add(&files, "edge1", file("a")).unwrap();
        add(&files, "edge1", file("a")).unwrap();
        assert_eq!(for_site(&files, "edge1").unwrap().len(), 1);
        assert!(listed(&files, "edge1", "a").unwrap().is_some());
        assert!(listed(&files, "edge2", "a").unwrap().is_none());
        for i in 0..40 {
            add(&files, "edge1", file(&format!("f{i}"))).unwrap();
        }
        let list = for_site(&files, "edge1").unwrap();
        assert_eq!(list.len(), MAX_PER_SITE);
        assert_eq!(list.last().unwrap().id, "f39");
    }
}
