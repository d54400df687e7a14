//! The control plane's passwords, one YAML map in a 0600 file. Existing
//! entries are never replaced: re-running init keeps every password.

use crate::host::{Change, FileSpec, Files};
use crate::secrets::{Secret, generate_password};
use anyhow::{Context, Result};
use std::collections::BTreeMap;

/// Where the passwords live.
pub const PASSWORDS_FILE: &str = "/var/lib/dcn/secrets/passwords.yaml";

/// Named passwords.
#[derive(Default)]
pub struct PasswordStore {
    entries: BTreeMap<String, Secret>,
}

impl PasswordStore {
    /// Read the store; a missing file is an empty store.
    pub fn load(files: &Files) -> Result<PasswordStore> {
        let Some(text) = files.read_secret(PASSWORDS_FILE)? else {
            return Ok(PasswordStore::default());
        };
        let map: BTreeMap<String, String> = crate::yaml::from_str(&text)
            .with_context(|| format!("{PASSWORDS_FILE} is not a YAML map of names to passwords"))?;
        Ok(PasswordStore {
            entries: map.into_iter().map(|(k, v)| (k, Secret::new(v))).collect(),
        })
    }

    /// The password called `name`.
    pub fn get(&self, name: &str) -> Result<&Secret> {
        self.entries.get(name).with_context(|| {
            format!("no password {name:?} in {PASSWORDS_FILE}; run `dcn standalone init --phase secrets`")
        })
    }

    /// Generate every password in `names` that does not exist yet; returns
    /// the names that were added.
    pub fn ensure<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut added = Vec::new();
        for name in names {
            if !self.entries.contains_key(name) {
                self.entries.insert(name.to_string(), generate_password());
                added.push(name.to_string());
            }
        }
        added
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Write the store (0600). Unchanged contents are not rewritten.
    pub fn save(&self, files: &Files) -> Result<Change> {
        let map: BTreeMap<&str, &str> = self
            .entries
            .iter()
            .map(|(k, v)| (k.as_str(), v.expose()))
            .collect();
        let text = format!(
            "# dcn: generated passwords of this control plane. Keep this file secret.\n{}",
            serde_yaml::to_string(&map).expect("a map of strings serialises")
        );
        files.write(PASSWORDS_FILE, text.as_bytes(), &FileSpec::secret())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The passwords are dcn's own secret: a store others may read is
    /// refused with the way out, not used.
    #[test]
    fn a_store_others_may_read_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        let mut store = PasswordStore::load(&files).unwrap();
        store.ensure(["keystone"]);
        store.save(&files).unwrap();
        let kept = PasswordStore::load(&files).unwrap();
        assert_eq!(
            kept.get("keystone").unwrap(),
            store.get("keystone").unwrap()
        );
        let hp = files.host_path(PASSWORDS_FILE).unwrap();
        std::fs::set_permissions(&hp, std::fs::Permissions::from_mode(0o644)).unwrap();
        let Err(e) = PasswordStore::load(&files) else {
            panic!("a 0644 store was used");
        };
        let e = format!("{e:#}");
        assert!(e.contains(&format!("`chmod 600 {}`", hp.display())), "{e}");
    }
}
