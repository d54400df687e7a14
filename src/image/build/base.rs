//! The `base` stage: a minimal Debian debootstrapped once per suite and
//! package list into the cache.

use super::remove_tree;
use crate::host::Runner;
use crate::host::debian::Debootstrap;
use crate::image::recipe::RecipeDir;
use anyhow::Result;
use std::path::Path;

pub(super) fn ensure_base(
    runner: &dyn Runner,
    recipe: &RecipeDir,
    base: &Path,
    debs: &Path,
    refresh: bool,
) -> Result<String> {
    let done = base.join(".dcn-complete");
    if done.exists() && !refresh {
        return Ok("cached".into());
    }
    let partial = base.with_extension("partial");
    remove_tree(&partial)?;
    remove_tree(base)?;
    let r = &recipe.recipe;
    Debootstrap {
        suite: &r.suite,
        include: &r.base,
        target: &partial,
        cache_dir: Some(debs),
    }
    .run(runner)?;
    std::fs::write(partial.join(".dcn-complete"), "")?;
    std::fs::rename(&partial, base)?;
    Ok(String::new())
}
