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
    // With `missing_ok` false a 404 is an error, so there is always a list.
    read(client, path, false).map(Option::unwrap_or_default)
}

/// Every member of the collection at `path`, or `None` when the BMC
/// answers 404 to one of its pages: for links that may lead nowhere.
pub fn members_if_found(client: &Client, path: &str) -> Result<Option<Vec<Link>>> {
    read(client, path, true)
}

fn read(client: &Client, path: &str, missing_ok: bool) -> Result<Option<Vec<Link>>> {
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
        let coll = match client.get::<Collection>(&page) {
            Ok(c) => c.value,
            Err(e) if missing_ok && e.is_status(404) => return Ok(None),
            Err(e) => {
                return Err(e).with_context(|| {
                    if page == path {
                        format!("reading the collection {path}")
                    } else {
                        format!("reading the collection {path} (page {page})")
                    }
                });
            }
        };
        if all.len() + coll.members.len() > MAX_MEMBERS {
            bail!(
                "the BMC's collection {path} lists more than {MAX_MEMBERS} members; dcn reads at most that many. Point --bmc at a BMC that manages fewer resources"
            );
        }
        all.extend(coll.members);
        pages.push(page);
        next = coll.next_link.filter(|l| !l.is_empty());
    }
    Ok(Some(all))
}
