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
/// records of schema syncs under way, and lock files.
pub fn state_excluded(path: &str) -> bool {
    path == crate::paths::JOURNAL_FILE
        || path.ends_with(".lock")
        || path
            .strip_prefix(crate::paths::SCHEMA_SYNCS_DIR)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
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
