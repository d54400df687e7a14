//! Backing up the control plane and putting it back on a replacement host:
//! `dcn backup` ([`create`]) writes one archive ([`archive`]) of everything
//! the control plane knows, consistent in time; `dcn backup verify` reads
//! it through; `dcn restore` ([`restore`]) puts it back on a blank host of
//! the same name and address, after which every edge re-attaches by itself
//! (same CA, same credentials, nothing to join again). What each service
//! keeps, and how it is loaded back, is in its recipe (`backup:`); dcn's
//! own state (sites, nodes, tokens, config revisions, progress, secrets,
//! the CA) is [`STATE_PART`].

pub mod archive;
pub mod create;
pub mod error;
pub mod restore;
pub mod schedule;

pub use error::BackupError;

/// The backup part that is dcn's own state directory.
pub const STATE_PART: &str = "dcn-state";

/// What of dcn's state directory a backup leaves out: the deployment
/// journal (a restore runs every step again, each checking the world), the
/// records of schema syncs under way, lock files, and the edge release
/// (hundreds of MB of packages, built again from the package source by
/// the next `dcn site upgrade`).
pub fn state_excluded(path: &str) -> bool {
    let under = |dir: &str| {
        path.strip_prefix(dir)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    path == crate::paths::JOURNAL_FILE
        || path.ends_with(".lock")
        || under(crate::paths::SCHEMA_SYNCS_DIR)
        || under(crate::centre::edge_release::DIR)
}

/// Where a restore may write: dcn's state directory and the paths the
/// recipes' backup parts name.
pub fn restorable_roots(recipes: &crate::recipes::Recipes) -> Vec<String> {
    let mut roots = vec![crate::paths::STATE_DIR.to_string()];
    for s in recipes.services.values() {
        for b in &s.backup {
            roots.extend(b.paths.iter().cloned());
        }
    }
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backup_leaves_out_what_a_restore_makes_again() {
        for out in [
            "/var/lib/dcn/journal.json",
            "/var/lib/dcn/registry.lock",
            "/var/lib/dcn/schema-syncs/nova",
            "/var/lib/dcn/edge-release",
            "/var/lib/dcn/edge-release/pool/libc6_2.36_amd64.deb",
        ] {
            assert!(state_excluded(out), "{out}");
        }
        for kept in [
            "/var/lib/dcn/pki/ca.key",
            "/var/lib/dcn/edge-releases",
            "/var/lib/dcn/upgrade/campaign.json",
        ] {
            assert!(!state_excluded(kept), "{kept}");
        }
    }
}
