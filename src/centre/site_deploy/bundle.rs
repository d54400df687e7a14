//! The join bundle a site deploy embeds: the one an earlier deploy of the
//! site exported, while its token is still good for the nodes booting now
//! and long enough for them to install and join, or a fresh export with
//! one use per booting node. Kept in `/var/lib/dcn/deploy/<site>/` (0600),
//! with what the decision needs beside it.

use crate::centre::sites::Registry;
use crate::centre::sites::export::{ExportOptions, export};
use crate::host::{FileSpec, Files, Host};
use crate::timefmt::{parse_rfc3339, rfc3339};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// Where a site's deploy keeps its state.
pub fn site_dir(site: &str) -> String {
    format!("/var/lib/dcn/deploy/{site}")
}

/// A bundle ready to embed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SiteBundle {
    /// On the host (`Files::host_path` of the bundle file).
    pub path: PathBuf,
    /// The CA pin (`sha256:HEX`) each node's config carries.
    pub pin: String,
    pub token_id: String,
    pub not_after: String,
    /// True when this deploy exported it.
    #[serde(skip)]
    pub fresh: bool,
}

/// Why an earlier bundle is not reused (for the progress line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stale {
    None,
    Gone,
    Expires(String),
    UsedUp { left: u32, needed: u32 },
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stale::None => f.write_str("no earlier bundle"),
            Stale::Gone => f.write_str("the earlier bundle's token is gone"),
            Stale::Expires(at) => write!(f, "the earlier bundle expires too soon ({at})"),
            Stale::UsedUp { left, needed } => write!(
                f,
                "the earlier bundle has {left} join use(s) left, {needed} needed"
            ),
        }
    }
}

/// The earlier bundle if it still serves `needed` new nodes for at least
/// `min_left`, judged from the token's record (the registry is the truth:
/// uses are counted there when nodes join).
pub fn reusable(
    files: &Files,
    site: &str,
    needed: u32,
    min_left: Duration,
    now: SystemTime,
) -> Result<(Option<SiteBundle>, Stale)> {
    let state = format!("{}/bundle.json", site_dir(site));
    let Some(text) = files.read_string(&state)? else {
        return Ok((None, Stale::None));
    };
    let saved: SiteBundle =
        serde_json::from_str(&text).with_context(|| format!("{state} is damaged"))?;
    let registry = Registry::new(files);
    let Some(token) = registry.token(&saved.token_id)? else {
        return Ok((None, Stale::Gone));
    };
    if !files.host_path(bundle_file(site))?.is_file() {
        return Ok((None, Stale::Gone));
    }
    let not_after = parse_rfc3339(&token.not_after)?;
    if not_after < now + min_left {
        return Ok((None, Stale::Expires(token.not_after)));
    }
    let left = token.max_uses.saturating_sub(token.uses);
    if left < needed {
        return Ok((None, Stale::UsedUp { left, needed }));
    }
    Ok((Some(saved), Stale::None))
}

fn bundle_file(site: &str) -> String {
    format!("{}/bundle.tar.gz", site_dir(site))
}

/// The bundle for `needed` nodes: the earlier one if [`reusable`], else a
/// new export (creating the site if it is new).
pub fn ensure(
    recipes: &crate::recipes::Recipes,
    host: &Host,
    site: &crate::types::SiteName,
    needed: u32,
    ttl: Duration,
    min_left: Duration,
) -> Result<(SiteBundle, Stale)> {
    let files = &host.files;
    let (saved, why) = reusable(files, site.as_str(), needed, min_left, SystemTime::now())?;
    if let Some(b) = saved {
        return Ok((b, why));
    }
    files.ensure_dir(site_dir(site.as_str()), &FileSpec::private_dir())?;
    let path = files.host_path(bundle_file(site.as_str()))?;
    let exported = export(
        recipes,
        host,
        &ExportOptions {
            site: site.clone(),
            ttl: Some(ttl),
            max_uses: Some(needed.max(1)),
            output: path.clone(),
        },
    )
    .with_context(|| format!("exporting a join bundle for site {site}"))?;
    let bundle = SiteBundle {
        path,
        pin: exported.pin.to_string(),
        token_id: exported.token_id,
        not_after: rfc3339(exported.not_after),
        fresh: true,
    };
    let text = serde_json::to_string_pretty(&bundle).expect("serialisable") + "\n";
    files.write(
        format!("{}/bundle.json", site_dir(site.as_str())),
        text.as_bytes(),
        &FileSpec::secret(),
    )?;
    Ok((bundle, why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::centre::sites::TokenRecord;

    fn setup(uses: u32, max_uses: u32, ttl: Duration) -> (tempfile::TempDir, Files, SystemTime) {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        let now = SystemTime::now();
        let reg = Registry::new(&files);
        let _lock = reg.lock().unwrap();
        reg.save_token(&TokenRecord {
            id: "tok1".into(),
            hash: "sha256:00".into(),
            site: "edge1".into(),
            created_at: rfc3339(now),
            not_after: rfc3339(now + ttl),
            max_uses,
            uses,
        })
        .unwrap();
        files
            .ensure_dir(site_dir("edge1"), &FileSpec::private_dir())
            .unwrap();
        files
            .write(bundle_file("edge1"), b"bundle", &FileSpec::secret())
            .unwrap();
        let saved = SiteBundle {
            path: files.host_path(bundle_file("edge1")).unwrap(),
            pin: "sha256:1111111111111111111111111111111111111111111111111111111111111111".into(),
            token_id: "tok1".into(),
            not_after: rfc3339(now + ttl),
            fresh: false,
        };
        files
            .write(
                "/var/lib/dcn/deploy/edge1/bundle.json",
                serde_json::to_string(&saved).unwrap().as_bytes(),
                &FileSpec::secret(),
            )
            .unwrap();
        (dir, files, now)
    }

    #[test]
    fn an_earlier_bundle_is_reused_only_while_it_serves_the_nodes_booting_now() {
        let hour = Duration::from_secs(3600);
        let (_d, files, now) = setup(1, 3, 24 * hour);
        let (b, why) = reusable(&files, "edge1", 2, hour, now).unwrap();
        assert!(b.is_some() && why == Stale::None);
        // Not enough uses left.
        let (b, why) = reusable(&files, "edge1", 3, hour, now).unwrap();
        assert!(b.is_none());
        assert_eq!(why, Stale::UsedUp { left: 2, needed: 3 });
        // Expires before the nodes could install and join.
        let (b, why) = reusable(&files, "edge1", 1, 25 * hour, now).unwrap();
        assert!(b.is_none() && matches!(why, Stale::Expires(_)));
        // Another site has nothing to reuse.
        let (b, why) = reusable(&files, "edge2", 1, hour, now).unwrap();
        assert!(b.is_none() && why == Stale::None);
    }

    #[test]
    fn a_bundle_whose_token_or_file_is_gone_is_not_reused() {
        let hour = Duration::from_secs(3600);
        let (_d, files, now) = setup(0, 3, 24 * hour);
        files.remove(bundle_file("edge1")).unwrap();
        assert_eq!(
            reusable(&files, "edge1", 1, hour, now).unwrap().1,
            Stale::Gone
        );
        let (_d, files, now) = setup(0, 3, 24 * hour);
        Registry::new(&files).remove_token("tok1").unwrap();
        assert_eq!(
            reusable(&files, "edge1", 1, hour, now).unwrap().1,
            Stale::Gone
        );
    }
}
