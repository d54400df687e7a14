//! The `base` stage: a minimal Debian debootstrapped once per suite and
//! package list into the cache.

use super::{COMPLETE, remove_tree};
use crate::host::debian::Debootstrap;
use crate::host::{FileSpec, Files, Runner};
use crate::image::recipe::RecipeDir;
use anyhow::Result;
use std::path::Path;

/// Make the base at `base` in `cache`, unless it is there and complete.
pub(super) fn ensure_base(
    runner: &dyn Runner,
    cache: &Files,
    recipe: &RecipeDir,
    base: &Path,
    debs: &Path,
    refresh: bool,
) -> Result<String> {
    if cache.exists(base.join(COMPLETE))? && !refresh {
        return Ok("cached".into());
    }
    let partial = base.with_extension("partial");
    remove_tree(cache, &partial)?;
    remove_tree(cache, base)?;
    let r = &recipe.recipe;
    Debootstrap {
        suite: &r.suite,
        include: &r.base,
        target: &cache.host_path(&partial)?,
        cache_dir: Some(&cache.host_path(debs)?),
    }
    .run(runner)?;
    cache.write(partial.join(COMPLETE), b"", &FileSpec::public())?;
    cache.rename(&partial, base)?;
    Ok(String::new())
}
