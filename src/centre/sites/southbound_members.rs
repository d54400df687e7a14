//! Which nodes the OVN southbound admits: the registry's nodes of sites
//! that are not revoked, written as the southbound's list of trusted CAs
//! ([`crate::openstack::southbound::admission`]) whenever a node joins,
//! renews, is removed or its site is revoked.

use super::registry::Registry;
use crate::host::Files;
use crate::openstack::southbound::admission::{Member, write_client_cas};
use anyhow::Result;

/// Write the southbound's trusted CAs from the registry; how many nodes it
/// admits.
pub fn admit(files: &Files) -> Result<usize> {
    let registry = Registry::new(files);
    let active: Vec<String> = registry
        .sites()?
        .into_iter()
        .filter(|s| s.revoked_at.is_none())
        .map(|s| s.name)
        .collect();
    let nodes: Vec<_> = registry
        .nodes()?
        .into_iter()
        .filter(|n| active.contains(&n.site))
        .collect();
    let members: Vec<Member> = nodes
        .iter()
        .filter_map(|n| {
            Some(Member {
                current_ca: n.southbound_ca.as_deref()?,
                previous_cas: &n.previous_southbound_cas,
            })
        })
        .collect();
    write_client_cas(files, &members)?;
    Ok(members.len())
}
