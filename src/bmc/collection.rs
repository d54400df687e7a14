//! Reading a Redfish collection: its members, page after page when the BMC
//! pages it (`Members@odata.nextLink`), within bounds. dcn reads every
//! member of the collections it lists (systems, managers, virtual drives),
//! so a BMC listing a million members, or pages that lead back to
//! themselves, must stop with an error rather than keep dcn busy.

use super::client::Client;
use super::model::{Collection, Link};
use anyhow::{Context, Result, bail};

/// Members read from one collection. A chassis manager lists a few dozen
/// systems; a server's BMC lists one system and a few virtual drives.
pub const MAX_MEMBERS: usize = 1024;

/// Pages read from one collection.
pub const MAX_PAGES: usize = 32;

/// Every member of the collection at `path`.
pub fn members(client: &Client, path: &str) -> Result<Vec<Link>> {
    let mut all: Vec<Link> = Vec::new();
    let mut pages: Vec<String> = Vec::new();
    let mut next = Some(path.to_string());
    while let Some(page) = next.take() {
        if pages.contains(&page) {
            bail!(
                "the BMC's collection {path} links back to its page {page} (Members@odata.nextLink); dcn stopped reading it. This is a fault of the BMC's Redfish service: update its firmware"
            );
        }
        if pages.len() == MAX_PAGES {
            bail!(
                "the BMC's collection {path} has more than {MAX_PAGES} pages; dcn reads at most that many. Point --bmc at a BMC that manages fewer resources"
            );
        }
        let coll = client.get::<Collection>(&page).with_context(|| {
            if page == path {
                format!("reading the collection {path}")
            } else {
                format!("reading the collection {path} (page {page})")
            }
        })?;
        let coll = coll.value;
        if all.len() + coll.members.len() > MAX_MEMBERS {
            bail!(
                "the BMC's collection {path} lists more than {MAX_MEMBERS} members; dcn reads at most that many. Point --bmc at a BMC that manages fewer resources"
            );
        }
        all.extend(coll.members);
        pages.push(page);
        next = coll.next_link.filter(|l| !l.is_empty());
    }
    Ok(all)
}
