//! The cache keys: short digests of a stage's inputs that name the cached
//! base and package tree, so a changed input makes a new one.

use crate::host::Files;
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

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
pub(super) fn dir_digest(files: &Files, dir: &str) -> Result<String> {
    let mut parts = Vec::new();
    if files.is_dir(dir)? {
        for name in files.list(dir)? {
            let path = format!("{dir}/{name}");
            let bytes = (files.read(&path)?)
                .with_context(|| format!("{path} vanished while it was read"))?;
            parts.push(name);
            parts.push(String::from_utf8_lossy(&bytes).into_owned());
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
