//! dcn's own release on a host: this binary's version, the record of the
//! release that last set the host up (`/var/lib/dcn/release.json`, written
//! when `standalone init` or `dcn upgrade` finish), and the
//! rule between them: a dcn may set up a host a newer or equal dcn left,
//! never one a newer dcn set up (its recipes and state are not this one's).

use crate::engine::{Context, Step};
use crate::host::{FileSpec, Files};
use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

/// The record of the release that last finished setting up this host.
pub const RELEASE_FILE: &str = "/var/lib/dcn/release.json";

/// This binary's release.
pub const THIS: &str = env!("CARGO_PKG_VERSION");

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    pub dcn_version: String,
}

impl Release {
    /// The release that last set this host up; `None` before any did (or
    /// when a dcn older than this record's first release did).
    pub fn load(files: &Files) -> Result<Option<Release>> {
        match files.read_string(RELEASE_FILE)? {
            None => Ok(None),
            Some(t) => serde_json::from_str(&t)
                .map(Some)
                .with_context(|| format!("{RELEASE_FILE} is damaged")),
        }
    }

    fn text(&self) -> String {
        serde_json::to_string_pretty(self).expect("serialisable") + "\n"
    }
}

/// `X.Y.Z` (anything after `-` or `+` ignored) as numbers, for ordering.
pub fn parse(version: &str) -> Vec<u64> {
    version
        .split(['-', '+'])
        .next()
        .unwrap_or_default()
        .split('.')
        .take(3)
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

/// Whether `version` is newer than this dcn's.
pub fn newer_than_this(version: &str) -> bool {
    parse(version) > parse(THIS)
}

/// Refuse to work on a host a newer dcn set up, naming both releases and
/// the way out.
pub fn refuse_if_newer(files: &Files, what: &str) -> Result<()> {
    if let Some(r) = Release::load(files)?
        && newer_than_this(&r.dcn_version)
    {
        bail!(
            "this host was set up by dcn {}, and this dcn is {THIS}: an older dcn does not {what} (a downgrade is not supported); run dcn {} or newer",
            r.dcn_version,
            r.dcn_version
        );
    }
    Ok(())
}

/// The oldest dcn on a node that this control plane answers: every
/// release that speaks the join protocol's second version. Nodes send
/// their release as `User-Agent: dcn/VERSION`.
pub const OLDEST_NODE: &str = "0.1.0";

/// The first dcn whose nodes take upgrades from the centre: its config
/// sync asks for orders and hands over to the release it is given, and
/// its join kept what an upgrade renders from. A node on an older dcn is
/// brought over by hand once: copy the control plane's dcn to it as
/// /usr/local/bin/dcn and run `dcn join` with the site's bundle.
pub const FIRST_UPGRADABLE_NODE: &str = "0.2.0";

/// The refusal for a node whose `User-Agent` names a dcn older than
/// [`OLDEST_NODE`]; `None` for any other client.
pub fn refuse_old_node(user_agent: &str) -> Option<String> {
    let version = user_agent.strip_prefix("dcn/")?.split_whitespace().next()?;
    if parse(version) >= parse(OLDEST_NODE) {
        return None;
    }
    let shown = crate::terminal_text::head(version, 32);
    Some(format!(
        "this node runs dcn {shown}, and this control plane (dcn {THIS}) answers nodes from dcn {OLDEST_NODE} on: copy the control plane's /usr/local/bin/dcn to the node and run `dcn join` with its bundle again"
    ))
}

/// Whether a node on dcn `version` takes upgrades from the centre.
pub fn upgradable_node(version: &str) -> bool {
    parse(version) >= parse(FIRST_UPGRADABLE_NODE)
}

/// The step that records this release once a run finished its work.
pub struct RecordRelease;

impl Step for RecordRelease {
    /// Only files written through `Files`, which fsyncs them.
    fn needs_flush(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "record.release".into()
    }
    fn describe(&self) -> String {
        format!("record dcn {THIS} in {RELEASE_FILE}")
    }
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        ctx.host
            .files
            .matches(RELEASE_FILE, this().text().as_bytes(), &FileSpec::public())
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        ctx.host
            .files
            .write(RELEASE_FILE, this().text().as_bytes(), &FileSpec::public())?;
        Ok(())
    }
}

fn this() -> Release {
    Release {
        dcn_version: THIS.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_by_number_not_text() {
        assert!(parse("0.10.0") > parse("0.9.9"));
        assert!(parse("1.0.0+dcn1") == parse("1.0.0"));
        assert!(!newer_than_this(THIS));
        assert!(newer_than_this("999.0.0"));
        assert!(!newer_than_this("0.0.1"));
    }

    #[test]
    fn nodes_older_than_the_window_are_refused_with_the_way_out() {
        let e = refuse_old_node("dcn/0.0.9").unwrap();
        assert!(
            e.contains("runs dcn 0.0.9") && e.contains(OLDEST_NODE) && e.contains("dcn join"),
            "{e}"
        );
        assert_eq!(refuse_old_node(&format!("dcn/{OLDEST_NODE}")), None);
        assert_eq!(refuse_old_node(&format!("dcn/{THIS}")), None);
        assert_eq!(refuse_old_node("curl/8.0"), None, "not a node");
        assert!(upgradable_node(THIS), "this dcn takes upgrades");
        assert!(!upgradable_node("0.1.0"));
    }

    #[test]
    fn a_host_a_newer_dcn_set_up_is_refused_with_both_releases_named() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        refuse_if_newer(&files, "upgrade it").unwrap();
        let newer = Release {
            dcn_version: "999.1.0".into(),
        };
        files
            .write(RELEASE_FILE, newer.text().as_bytes(), &FileSpec::public())
            .unwrap();
        let err = refuse_if_newer(&files, "upgrade it")
            .unwrap_err()
            .to_string();
        assert!(err.contains("dcn 999.1.0") && err.contains(THIS), "{err}");
        assert!(err.contains("run dcn 999.1.0 or newer"), "{err}");
        let same = this();
        files
            .write(RELEASE_FILE, same.text().as_bytes(), &FileSpec::public())
            .unwrap();
        refuse_if_newer(&files, "upgrade it").unwrap();
    }
}
