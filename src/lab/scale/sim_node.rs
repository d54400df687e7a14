//! One simulated host as its carrier starts it: what its chassis, its
//! nova-compute and its replayed compute all need to know of it.

use crate::bundle::VerifiedBundle;
use crate::recipes::Recipes;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// A simulated host on its carrier.
pub struct SimNode<'a> {
    pub recipes: &'a Recipes,
    /// Its site's join bundle.
    pub bundle: &'a VerifiedBundle,
    pub name: &'a str,
    /// Its tunnel endpoint on the carrier's subnet.
    pub address: Ipv4Addr,
    /// The carrier's state directory, which holds every host's.
    pub state: &'a Path,
}

impl SimNode<'_> {
    /// The host's own root (`STATE/NAME`): its kept join credentials and
    /// rendered configs.
    pub fn root(&self) -> PathBuf {
        self.state.join(self.name)
    }
}
