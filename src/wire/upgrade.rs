//! The upgrade part of the join protocol: a node asks for its orders and
//! says how its upgrade goes (`POST /v1/nodes/{hostname}/upgrade`), and
//! fetches the files of the edge release it is told to run
//! (`GET /v1/nodes/{hostname}/release/{id}/{file}`, in ranges).
//!
//! Compatibility is the point of this part: the node that asks runs the
//! old dcn, the release it fetches is the new one. So the old dcn's part
//! stays small and stable — ask, fetch the new binary, check its digest,
//! hand over to it — and everything else (staging the packages, applying)
//! is done by the new binary. Replies carry no `deny_unknown_fields`, so a
//! newer centre may add to them; the check a node sends is read leniently
//! for the same reason the other way round.

use serde::{Deserialize, Serialize};

/// The suffix of a node's upgrade resource under [`super::NODES_PATH`].
pub const UPGRADE_SUFFIX: &str = "/upgrade";
/// What separates a node's name from a release file's id and name:
/// `/v1/nodes/{hostname}/release/{id}/{file}`.
pub const RELEASE_SEGMENT: &str = "/release/";
/// Largest upgrade check body accepted.
pub const UPGRADE_MAX_BODY: usize = 32 * 1024;
/// The most bytes one release file request returns: a node fetches larger
/// files in ranges, so each request is short whatever the link's speed,
/// and a cut download goes on where it stopped.
pub const RELEASE_CHUNK: u64 = 4 * 1024 * 1024;
/// The most lines of package changes, restarts or guests a report keeps.
pub const MAX_REPORT_LINES: usize = 64;
/// The most cached image names a node reports.
pub const MAX_CACHED_IMAGES: usize = 256;
/// The name of the dcn binary among a release's files.
pub const RELEASE_BINARY: &str = "dcn";
/// The name of the package index among a release's files.
pub const RELEASE_INDEX: &str = "Packages";

/// One file of an edge release: its name and what it must hash to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseFile {
    pub name: String,
    /// Lowercase hex SHA-256 of the file.
    pub sha256: String,
    pub size: u64,
}

/// What the control plane serves its edges for one release: its dcn
/// binary and the index of the edge role's packages at the versions the
/// control plane runs (the packages themselves are named by the index).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EdgeRelease {
    /// `<dcn version>-<16 hex digits of its content's digest>`.
    pub id: String,
    pub dcn_version: String,
    pub dcn: ReleaseFile,
    pub index: ReleaseFile,
}

/// What the centre wants of a node now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpgradeAction {
    /// Nothing: no upgrade includes this node.
    None,
    /// Download the release while the node keeps working.
    Stage,
    /// Its turn: apply the release.
    Apply,
}

/// An image a node puts in nova's image cache itself, fetched from the
/// join service (`GET /v1/nodes/{hostname}/image/{id}`): the kernels and
/// ramdisks of images booted with them, which nova's own cache request
/// refuses (it inspects them as disk images), while its boot path takes
/// them as they are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageFile {
    /// The image's id in glance.
    pub id: String,
    /// Lowercase hex SHA-256 of its data.
    pub sha256: String,
    pub size: u64,
}

/// What separates a node's name from an image id:
/// `/v1/nodes/{hostname}/image/{id}`.
pub const IMAGE_SEGMENT: &str = "/image/";

/// Whether `id` may be an image id in a path: a UUID's characters.
pub fn is_image_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// The reply to an [`UpgradeCheck`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeOrder {
    pub action: UpgradeAction,
    /// The release to stage or apply (none with [`UpgradeAction::None`]).
    #[serde(default)]
    pub release: Option<EdgeRelease>,
    /// The apply attempt: a node whose attempt failed tries again only
    /// when the centre gives it a higher one (a re-run of `dcn site
    /// upgrade` after the cause was fixed).
    #[serde(default)]
    pub attempt: u32,
    /// Images the node's site caches that the node puts in nova's image
    /// cache itself (see [`ImageFile`]); whatever the action.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_files: Vec<ImageFile>,
}

impl UpgradeOrder {
    pub fn none() -> UpgradeOrder {
        UpgradeOrder {
            action: UpgradeAction::None,
            release: None,
            attempt: 0,
            image_files: Vec::new(),
        }
    }
}

/// Where a node's upgrade to a release is, as the node reports it. The
/// centre adds `upgraded` once it sees the node's compute service and
/// chassis up on the new release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpgradePhase {
    /// Downloading the release (the detail says what).
    Staging,
    /// Everything the node needs is on its disk; it keeps working.
    Staged,
    /// Applying: binary, packages, files, restarts (the detail: the step).
    Applying,
    /// Applied and checked on the node: its units are up, its chassis
    /// is connected, its guests' ports are wired.
    Applied,
    /// Staging or applying failed: the detail is the reason.
    Failed,
}

impl UpgradePhase {
    pub fn as_str(self) -> &'static str {
        match self {
            UpgradePhase::Staging => "staging",
            UpgradePhase::Staged => "staged",
            UpgradePhase::Applying => "applying",
            UpgradePhase::Applied => "applied",
            UpgradePhase::Failed => "failed",
        }
    }
}

impl std::fmt::Display for UpgradePhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A node's upgrade to one release, as far as it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeProgress {
    /// The release's id.
    pub release: String,
    pub phase: UpgradePhase,
    /// The apply attempt this is (0 while only staging).
    #[serde(default)]
    pub attempt: u32,
    /// The step, or the reason it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The last lines of output, with `failed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
    /// Packages that change, `name old → new` (`(new)`, `(removed)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<String>,
    /// Units the apply restarted or started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restarted: Vec<String>,
    /// Guests whose qemu binary the apply replaced: they take the new one
    /// at their next restart, which the operator decides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guests_on_old_qemu: Vec<String>,
}

/// `POST /v1/nodes/{hostname}/upgrade`: who the node is now and how its
/// upgrade goes; the reply is its [`UpgradeOrder`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeCheck {
    /// The dcn the node runs.
    pub dcn_version: String,
    /// The id of the edge release the node last applied, if any.
    #[serde(default)]
    pub runs: Option<String>,
    #[serde(default)]
    pub progress: Option<UpgradeProgress>,
    /// The names of the base images nova keeps in the node's image cache
    /// (each the SHA-1 of its image id, in hex).
    #[serde(default)]
    pub image_cache: Vec<String>,
}

impl UpgradeCheck {
    /// The check cut to what the centre keeps: each text at most
    /// [`super::MAX_DETAIL`] or [`super::MAX_LOG_LINE`] characters, the
    /// last [`super::MAX_LOG_LINES`] log lines, at most
    /// [`MAX_REPORT_LINES`] of each list and [`MAX_CACHED_IMAGES`] image
    /// names.
    pub fn bounded(mut self) -> UpgradeCheck {
        let cut = |t: &str, max: usize| crate::terminal_text::head(t, max).to_string();
        let lines = |v: &[String], max: usize| -> Vec<String> {
            v.iter()
                .take(max)
                .map(|l| cut(l, super::MAX_LOG_LINE))
                .collect()
        };
        self.dcn_version = cut(&self.dcn_version, 64);
        self.runs = self.runs.map(|r| cut(&r, 128));
        if let Some(p) = self.progress.as_mut() {
            p.release = cut(&p.release, 128);
            p.detail = p.detail.as_ref().map(|d| cut(d, super::MAX_DETAIL));
            let skip = p.log.len().saturating_sub(super::MAX_LOG_LINES);
            p.log = lines(&p.log[skip..], super::MAX_LOG_LINES);
            p.changes = lines(&p.changes, MAX_REPORT_LINES);
            p.restarted = lines(&p.restarted, MAX_REPORT_LINES);
            p.guests_on_old_qemu = lines(&p.guests_on_old_qemu, MAX_REPORT_LINES);
        }
        self.image_cache = (self.image_cache.iter())
            .filter(|n| is_cache_name(n))
            .take(MAX_CACHED_IMAGES)
            .cloned()
            .collect();
        self
    }
}

/// Whether `name` is how nova names a cached base image: 40 hex digits.
pub fn is_cache_name(name: &str) -> bool {
    name.len() == 40 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether `name` may be a release file's name in a path: the binary, the
/// index, or a package file (`name_version_arch.deb` as Debian writes
/// them: letters, digits and `.+~_-`, with `%3a` for an epoch's colon).
/// Nothing that could leave the release's folder.
pub fn is_release_file_name(name: &str) -> bool {
    if name == RELEASE_BINARY || name == RELEASE_INDEX {
        return true;
    }
    name.len() <= 200
        && name.ends_with(".deb")
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+~-%".contains(&b))
}

/// Whether `id` may be a release id in a path: a version and a digest,
/// letters, digits, `.`, `-` and `+`.
pub fn is_release_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-+".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_is_cut_to_what_the_centre_keeps() {
        let check = UpgradeCheck {
            dcn_version: "9".repeat(500),
            runs: Some("r".repeat(500)),
            progress: Some(UpgradeProgress {
                release: "x".into(),
                phase: UpgradePhase::Failed,
                attempt: 1,
                detail: Some("d".repeat(5000)),
                log: (0..100).map(|i| format!("line {i}")).collect(),
                changes: (0..1000).map(|i| format!("p{i} 1 → 2")).collect(),
                restarted: vec!["u".repeat(1000)],
                guests_on_old_qemu: vec![],
            }),
            image_cache: (0..1000)
                .map(|i| format!("{i:040x}"))
                .chain(["../etc/passwd".to_string()])
                .collect(),
        }
        .bounded();
        assert_eq!(check.dcn_version.len(), 64);
        let p = check.progress.unwrap();
        assert_eq!(p.detail.unwrap().len(), crate::wire::MAX_DETAIL);
        assert_eq!(p.log.len(), crate::wire::MAX_LOG_LINES);
        assert_eq!(p.log.last().unwrap(), "line 99", "the last lines are kept");
        assert_eq!(p.changes.len(), MAX_REPORT_LINES);
        assert_eq!(p.restarted[0].len(), crate::wire::MAX_LOG_LINE);
        assert_eq!(check.image_cache.len(), MAX_CACHED_IMAGES);
        assert!(check.image_cache.iter().all(|n| is_cache_name(n)));
    }

    #[test]
    fn release_paths_name_nothing_outside_the_release() {
        for ok in [
            "dcn",
            "Packages",
            "libssl3_3.0.17-1~deb12u2_amd64.deb",
            "ovn-host_23.03.1-1+dcn1_amd64.deb",
            "python3-nova_2%3a26.2.2-1~deb12u3_all.deb",
        ] {
            assert!(is_release_file_name(ok), "{ok}");
        }
        for bad in [
            "",
            "..",
            "../dcn",
            "a/b.deb",
            ".deb",
            "x.deb\n",
            "x.tar",
            "Packages.gz",
            "dcn ",
        ] {
            assert!(!is_release_file_name(bad), "{bad:?}");
        }
        assert!(is_release_id("0.2.1-0123456789abcdef"));
        for bad in ["", "..", ".x", "a/b", "a b", &"1".repeat(101)] {
            assert!(!is_release_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn replies_from_a_newer_centre_are_read_with_fields_this_dcn_does_not_know() {
        let order: UpgradeOrder = serde_json::from_str(
            r#"{"action":"stage","release":null,"attempt":0,"somethingNew":true}"#,
        )
        .unwrap();
        assert_eq!(order.action, UpgradeAction::Stage);
    }
}
