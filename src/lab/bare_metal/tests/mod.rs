//! The bare-metal site without root: shared imports and the generated material.

use super::*;

mod bmc;
mod control_plane;
mod site_plan;

pub(super) fn material(site: &Site) -> Material {
    Material::generate(site).unwrap()
}
