//! Node accounts made ahead of the joins to come
//! ([`crate::openstack::node_user_pool`]): as many as the open join
//! tokens may still bring hosts, made one at a time while no join is
//! under way, so that a burst of joins finds them ready and waits for no
//! password hash.

use super::joining::Joining;
use crate::centre::sites::Registry;
use crate::host::Host;
use crate::openstack::accounts::NodeAccounts;
use crate::timefmt::parse_rfc3339;
use anyhow::Result;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// How often the tokens are looked at again when nothing is to be made.
const PAUSE: Duration = Duration::from_secs(10);

/// After a failure (keystone starting, say).
const PAUSE_AFTER_FAILURE: Duration = Duration::from_secs(60);

/// Keep the accounts ready until the process ends.
pub fn run(host: &Host, accounts: &dyn NodeAccounts, joining: &Joining) {
    while let Err(e) = accounts.tidy() {
        tracing::warn!("the ready node accounts are not checked yet: {e:#}");
        std::thread::sleep(PAUSE_AFTER_FAILURE);
    }
    loop {
        let pause = match round(host, accounts, joining) {
            Ok(true) => Duration::ZERO,
            Ok(false) => PAUSE,
            Err(e) => {
                tracing::warn!("making node accounts ahead of joins: {e:#}");
                PAUSE_AFTER_FAILURE
            }
        };
        std::thread::sleep(pause);
    }
}

/// Make one account ahead if one is wanted and no join is under way
/// (joins come first: they would wait on the same keystone). Whether
/// one was made.
fn round(host: &Host, accounts: &dyn NodeAccounts, joining: &Joining) -> Result<bool> {
    if joining.any() {
        return Ok(false);
    }
    let expected = expected_joins(&Registry::new(&host.files), SystemTime::now())?;
    accounts.prepare(expected)
}

/// How many hosts the open tokens may still bring: the uses left of every
/// token that is neither expired nor of a revoked site.
pub fn expected_joins(registry: &Registry, now: SystemTime) -> Result<usize> {
    let sites: BTreeMap<String, _> = (registry.sites()?.into_iter())
        .map(|s| (s.name.clone(), s))
        .collect();
    Ok((registry.tokens()?.iter())
        .filter(|t| {
            sites
                .get(&t.site)
                .is_some_and(|s| s.revoked_at.is_none() && t.created_at >= s.created_at)
        })
        .filter(|t| parse_rfc3339(&t.not_after).is_ok_and(|end| end > now))
        .map(|t| t.max_uses.saturating_sub(t.uses) as usize)
        .sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::centre::sites::{Site, TokenRecord};
    use crate::host::Files;
    use crate::timefmt::rfc3339;

    fn token(site: &str, id: &str, max: u32, uses: u32, ends: SystemTime) -> TokenRecord {
        TokenRecord {
            id: id.into(),
            hash: String::new(),
            site: site.into(),
            created_at: rfc3339(SystemTime::UNIX_EPOCH + Duration::from_secs(100)),
            not_after: rfc3339(ends),
            max_uses: max,
            uses,
        }
    }

    #[test]
    fn only_open_tokens_count_with_the_uses_they_have_left() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        let reg = Registry::new(&files);
        let now = SystemTime::now();
        let site = |name: &str, revoked: bool| Site {
            name: name.into(),
            created_at: rfc3339(SystemTime::UNIX_EPOCH),
            aggregate_id: None,
            revoked_at: revoked.then(|| rfc3339(now)),
        };
        reg.save_site(&site("a", false)).unwrap();
        reg.save_site(&site("gone", true)).unwrap();
        let later = now + Duration::from_secs(3600);
        reg.save_token(&token("a", "t1", 10, 3, later)).unwrap();
        reg.save_token(&token("a", "t2", 5, 5, later)).unwrap();
        reg.save_token(&token("a", "old", 10, 0, now - Duration::from_secs(1)))
            .unwrap();
        reg.save_token(&token("gone", "t3", 10, 0, later)).unwrap();
        reg.save_token(&token("nowhere", "t4", 10, 0, later))
            .unwrap();
        assert_eq!(expected_joins(&reg, now).unwrap(), 7);
    }
}
