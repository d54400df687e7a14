//! Images as a site's compute nodes boot them: found in glance by name or
//! id with the kernel and ramdisk images they boot with, and cached ahead
//! on every host of an aggregate through nova's aggregate image cache
//! (compute API 2.81), so a site's first servers do not pull them across
//! its WAN link.

use super::compute::Nova;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// An image and what booting it needs besides.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageRef {
    pub id: String,
    pub name: String,
    pub size: Option<u64>,
    /// glance's `disk_format` (`raw`, `qcow2`, `aki`, `ari`, …).
    pub disk_format: String,
    /// glance's SHA-512 of the data (`os_hash_value`), when it has one.
    pub sha512: Option<String>,
    /// The kernel and ramdisk images of a direct kernel boot.
    pub kernel_id: Option<String>,
    pub ramdisk_id: Option<String>,
}

impl ImageRef {
    /// A kernel or a ramdisk (`aki`, `ari`): what nova's boot path
    /// fetches as it is, and its cache request refuses.
    pub fn is_boot_file(&self) -> bool {
        matches!(self.disk_format.as_str(), "aki" | "ari")
    }
}

/// Glance and nova's image cache.
pub trait SiteImages {
    /// The image named `name_or_id` (its id, or its only image of that
    /// name).
    fn find_image(&self, name_or_id: &str) -> Result<ImageRef>;
    /// Ask nova to cache `ids` on every host of `aggregate`.
    fn cache_on_aggregate(&self, aggregate: u64, ids: &[String]) -> Result<()>;
    /// The image's data, handed to `sink` in pieces, checked against
    /// glance's size and SHA-512.
    fn download(&self, image: &ImageRef, sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()>;
}

fn image_of(v: &Value) -> Result<ImageRef> {
    let s = |k: &str| v[k].as_str().map(str::to_string);
    Ok(ImageRef {
        id: s("id").context("glance listed an image without an id")?,
        name: s("name").unwrap_or_default(),
        size: v["size"].as_u64(),
        disk_format: s("disk_format").unwrap_or_default(),
        sha512: match v["os_hash_algo"].as_str() {
            Some("sha512") => s("os_hash_value"),
            _ => None,
        },
        kernel_id: s("kernel_id"),
        ramdisk_id: s("ramdisk_id"),
    })
}

impl SiteImages for Nova {
    fn find_image(&self, name_or_id: &str) -> Result<ImageRef> {
        if looks_like_an_id(name_or_id)
            && let Ok(v) = self
                .cloud()
                .get("image", &format!("/v2/images/{name_or_id}"))
        {
            return image_of(&v);
        }
        let v = self
            .cloud()
            .get("image", &format!("/v2/images?name={}", encode(name_or_id)))
            .with_context(|| format!("asking glance for the image {name_or_id:?}"))?;
        let found: Vec<&Value> = v["images"].as_array().into_iter().flatten().collect();
        match found.as_slice() {
            [one] => image_of(one),
            [] => {
                bail!("glance has no image {name_or_id:?}; `openstack image list` shows the images")
            }
            many => bail!(
                "glance has {} images named {name_or_id:?}; name one by its id",
                many.len()
            ),
        }
    }

    fn cache_on_aggregate(&self, aggregate: u64, ids: &[String]) -> Result<()> {
        // One image per request: nova (26, Zed) refuses a list whose order
        // differs from a Python set's of it as "Duplicate images in
        // request", and a set's order changes from process to process.
        for id in ids {
            self.cloud()
                .post_at(
                    "compute",
                    &format!("/os-aggregates/{aggregate}/images"),
                    &json!({ "cache": [{"id": id}] }),
                    "compute 2.81",
                )
                .with_context(|| format!("asking nova to cache image {id} on the site's hosts"))?;
        }
        Ok(())
    }

    fn download(&self, image: &ImageRef, sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        use sha2::{Digest, Sha512};
        let size = image
            .size
            .with_context(|| format!("glance has no data for image {}", image.id))?;
        let mut hash = Sha512::new();
        let got = self.cloud().download(
            "image",
            &format!("/v2/images/{}/file", image.id),
            size,
            &mut |piece| {
                hash.update(piece);
                sink(piece)
            },
        )?;
        if got != size {
            bail!(
                "glance sent {got} bytes of image {}, not its {size}",
                image.id
            );
        }
        if let Some(want) = &image.sha512
            && hex::encode(hash.finalize()) != *want
        {
            bail!("image {}'s data does not hash as glance says", image.id);
        }
        Ok(())
    }
}

/// A UUID's shape: 36 characters of hex digits and dashes.
fn looks_like_an_id(s: &str) -> bool {
    s.len() == 36 && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// `s` as a URL query value: everything but unreserved characters as
/// `%XX`.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sent_as_query_values_and_ids_known_by_their_shape() {
        assert_eq!(encode("dcn-guest"), "dcn-guest");
        assert_eq!(encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
        assert!(looks_like_an_id("155d900f-4e14-4e4c-a73d-069cbf4541e6"));
        assert!(!looks_like_an_id("dcn-guest"));
        let i = image_of(&json!({"id": "x", "name": "g", "size": 5, "kernel_id": "k",
            "disk_format": "raw", "os_hash_algo": "sha512", "os_hash_value": "ab"}))
        .unwrap();
        assert_eq!(
            (
                i.kernel_id.as_deref(),
                i.ramdisk_id.as_deref(),
                i.size,
                i.sha512.as_deref()
            ),
            (Some("k"), None, Some(5), Some("ab"))
        );
        assert!(!i.is_boot_file());
        let k = image_of(&json!({"id": "k", "disk_format": "aki", "os_hash_algo": "md5"})).unwrap();
        assert!(k.is_boot_file() && k.sha512.is_none());
    }
}
