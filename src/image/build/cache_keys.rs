//! The cache keys: short digests of a stage's inputs that name the cached
//! base and package tree, so a changed input makes a new one.

use crate::host::read::ReadSpec;
use anyhow::Result;
use sha2::{Digest, Sha256};
use std::path::Path;

/// A short digest of `parts`.
pub(super) fn key(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    hex::encode(h.finalize())
}

/// A digest of a small directory's file names and contents.
pub(super) fn dir_digest(dir: &Path) -> Result<String> {
    let mut parts = Vec::new();
    if dir.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(dir)?
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for f in files {
            parts.push(
                f.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
            );
            let spec = ReadSpec::up_to(crate::host::read::MAX_STATE);
            parts.push(String::from_utf8_lossy(&crate::host::read::read(&f, &spec)?).into_owned());
        }
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    Ok(key(&refs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_keys_change_with_their_inputs() {
        assert_ne!(key(&["a", "b"]), key(&["ab"]));
        assert_eq!(key(&["a"]), key(&["a"]));
    }
}
