//! The image recipe (`images/edge/recipe.yaml`, kind `ImageRecipe`): what
//! goes into the edge ISO, as data. The directory beside the file holds the
//! rest: `rootfs/` (files copied verbatim into the image), `dpkg/` (dpkg
//! settings in force while packages install) and `grub.cfg` (the ISO's menu).

use crate::host::Files;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The recipe file's name inside a recipe directory.
pub const RECIPE_FILE: &str = "recipe.yaml";

/// An image recipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImageRecipe {
    pub api_version: crate::config::ApiVersion,
    pub kind: RecipeKind,
    /// Names the build's cache entries and the output's metadata.
    pub name: String,
    /// The Debian suite given to debootstrap.
    pub suite: String,
    /// The ISO 9660 volume id; GRUB finds the medium by it.
    pub volume_id: String,
    /// Packages debootstrap adds to its minimal set.
    #[serde(default)]
    pub base: Vec<String>,
    /// dcn roles whose packages (and debconf answers) are preinstalled.
    #[serde(default)]
    pub roles: Vec<String>,
    /// Further packages.
    #[serde(default)]
    pub packages: Vec<String>,
    /// Units disabled after installing (`dcn join` enables what it needs).
    #[serde(default)]
    pub disable_units: Vec<String>,
    /// Paths (shell globs) removed after installing.
    #[serde(default)]
    pub remove_paths: Vec<String>,
    /// The time of every file in the image, unless SOURCE_DATE_EPOCH is set.
    pub source_date_epoch: u64,
    /// Size of the zero-filled payload area on the ISO.
    pub payload_area_bytes: u64,
    /// Kernel command line of the live installer and the installed system.
    #[serde(default)]
    pub kernel_args: String,
}

/// The `kind` of an image recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecipeKind {
    ImageRecipe,
}

/// A recipe and the directory it came from.
#[derive(Debug, Clone)]
pub struct RecipeDir {
    pub dir: PathBuf,
    pub recipe: ImageRecipe,
}

impl RecipeDir {
    /// Read and check `dir/recipe.yaml`.
    pub fn load(dir: &Path) -> Result<RecipeDir> {
        let file = dir.join(RECIPE_FILE);
        let text = crate::yaml::read_file(&file).with_context(|| {
            format!(
                "cannot read the image recipe {}; pass --recipe DIR with the directory that holds recipe.yaml (images/edge in dcn's source tree)",
                file.display()
            )
        })?;
        let recipe: ImageRecipe = crate::config::parse(&text, &file.display().to_string())?;
        recipe
            .check()
            .with_context(|| format!("{}", file.display()))?;
        Ok(RecipeDir {
            dir: dir.to_path_buf(),
            recipe,
        })
    }

    /// The recipe directory as a tree of its own: [`Self::ROOTFS`],
    /// [`Self::DPKG`] and [`Self::GRUB_CFG`] are read through it.
    pub fn files(&self) -> Files {
        Files::new(&self.dir, false)
    }

    /// Files copied verbatim into the image.
    pub const ROOTFS: &str = "/rootfs";
    /// dpkg settings in force while packages install.
    pub const DPKG: &str = "/dpkg";
    /// The ISO's GRUB menu.
    pub const GRUB_CFG: &str = "/grub.cfg";
}

/// The edge image's recipe as this dcn was built with it: what the
/// control plane's edge release serves updates of.
const EMBEDDED: &str = include_str!("../../images/edge/recipe.yaml");

impl ImageRecipe {
    /// The recipe built into this dcn (`images/edge/recipe.yaml`).
    pub fn embedded() -> Result<ImageRecipe> {
        let recipe: ImageRecipe = crate::config::parse(EMBEDDED, "images/edge/recipe.yaml")?;
        recipe.check()?;
        Ok(recipe)
    }

    fn check(&self) -> Result<()> {
        let vid_ok = (1..=32).contains(&self.volume_id.len())
            && self
                .volume_id
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        if !vid_ok {
            bail!(
                "volumeId {:?}: use 1-32 characters A-Z, 0-9 and _",
                self.volume_id
            );
        }
        let name_ok = !self.name.is_empty()
            && self
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !name_ok {
            bail!("name {:?}: use letters, digits, '-' and '_'", self.name);
        }
        let min = super::payload::HEADER_LEN as u64 + 4096;
        let max = super::payload::MAX_AREA;
        if !(min..=max).contains(&self.payload_area_bytes)
            || !self.payload_area_bytes.is_multiple_of(2048)
        {
            bail!(
                "payloadAreaBytes {}: use a multiple of 2048 from {min} to {max}",
                self.payload_area_bytes
            );
        }
        for p in &self.remove_paths {
            if !p.starts_with('/') || p.contains("..") {
                bail!("removePaths: {p:?} must be an absolute path without `..`");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edge_recipe_loads() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("images/edge");
        let r = RecipeDir::load(&dir).unwrap();
        assert_eq!(r.recipe.roles, vec!["edge"]);
        let firstboot = format!(
            "{}/usr/share/dcn/dcn-firstboot.service.in",
            RecipeDir::ROOTFS
        );
        assert!(r.files().exists(firstboot).unwrap());
        assert!(r.recipe.payload_area_bytes >= 2 * 1024 * 1024);
    }

    #[test]
    fn bad_recipes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let good = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("images/edge/recipe.yaml"),
        )
        .unwrap();
        for (from, to, msg) in [
            ("volumeId: DCN_EDGE", "volumeId: dcn-edge", "volumeId"),
            (
                "payloadAreaBytes: 2097152",
                "payloadAreaBytes: 100",
                "payloadAreaBytes",
            ),
            // More than dcn reads back (issue 12, failure 10).
            (
                "payloadAreaBytes: 2097152",
                "payloadAreaBytes: 1073741824",
                "from 4152 to 67108864",
            ),
            (
                "suite: bookworm",
                "suite: bookworm\nextra: 1",
                "unknown field",
            ),
        ] {
            std::fs::write(dir.path().join(RECIPE_FILE), good.replace(from, to)).unwrap();
            let e = format!("{:#}", RecipeDir::load(dir.path()).unwrap_err());
            assert!(e.contains(msg), "{e}");
        }
    }
}
