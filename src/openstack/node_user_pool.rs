//! Keystone users made ahead of the joins that will need them.
//!
//! Keystone hashes a new user's password with bcrypt (about 0.3 s of a
//! core here, seconds when many joins arrive at once), and every join
//! makes a user: fifty joins at once waited on keystone for most of their
//! time. The join service therefore keeps a few users ready, as many as
//! the open join tokens may still bring hosts (at most [`MAX_READY`]):
//! each has its password and the `service` role already, under a name no
//! node has (`dcn-ready-<random>`). A join takes one and renames it to
//! its node's name, which hashes nothing; a join that finds none ready
//! makes its user as before.
//!
//! The ready users' passwords are kept on the control plane (0600, with
//! its other secrets) until a join takes them. An entry leaves the file
//! before its user is renamed, so a crash in between leaves a user nobody
//! holds the password of: [`NodeUserPool::tidy`] deletes such users when
//! the join service starts.

use super::Cloud;
use super::identity::{self, NodeUserScope};
use crate::host::{FileSpec, Files};
use crate::secrets::{Secret, generate_password, random_string};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// Where the ready users are kept.
pub const POOL_FILE: &str = "/var/lib/dcn/secrets/ready-node-users.json";

/// The most users kept ready: a bound on what a burst of tokens makes
/// keystone hash in the background.
pub const MAX_READY: usize = 100;

/// Every ready user's name starts so; no node's name does (theirs start
/// `dcn-node-`).
const PREFIX: &str = "dcn-ready-";

/// One ready user.
#[derive(Clone, Serialize, Deserialize)]
pub struct ReadyUser {
    pub id: String,
    pub name: String,
    pub password: Secret,
}

/// The ready users of this control plane, in [`POOL_FILE`] of `files`.
pub struct NodeUserPool<'a> {
    files: &'a Files,
    /// Taking and adding rewrite the file: one at a time.
    lock: &'a Mutex<()>,
}

impl<'a> NodeUserPool<'a> {
    /// The pool in `files`; `lock` is the one every user of the pool in
    /// this process shares.
    pub fn new(files: &'a Files, lock: &'a Mutex<()>) -> NodeUserPool<'a> {
        NodeUserPool { files, lock }
    }

    fn load(&self) -> Result<Vec<ReadyUser>> {
        match self.files.read_secret(POOL_FILE)? {
            Some(text) => serde_json::from_str(&text).with_context(|| {
                format!(
                    "{POOL_FILE} is damaged; delete it (the join service makes new ready users)"
                )
            }),
            None => Ok(Vec::new()),
        }
    }

    fn save(&self, users: &[ReadyUser]) -> Result<()> {
        let text = serde_json::to_string(users).context("writing the ready users")?;
        self.files
            .write(POOL_FILE, text.as_bytes(), &FileSpec::secret())?;
        Ok(())
    }

    /// How many users are ready.
    pub fn ready(&self) -> Result<usize> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        Ok(self.load()?.len())
    }

    /// Take a ready user out of the pool (out of its file first), if any.
    pub fn take(&self) -> Result<Option<ReadyUser>> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut users = self.load()?;
        let Some(user) = users.pop() else {
            return Ok(None);
        };
        self.save(&users)?;
        Ok(Some(user))
    }

    /// Make one more ready user, if fewer than `wanted` (at most
    /// [`MAX_READY`]) are ready. Returns whether it made one. The user is
    /// in the file only once keystone has it with its role.
    pub fn add_one(&self, cloud: &Cloud, scope: &NodeUserScope, wanted: usize) -> Result<bool> {
        if self.ready()? >= wanted.min(MAX_READY) {
            return Ok(false);
        }
        let name = format!("{PREFIX}{}", random_string(16, b"0123456789abcdef"));
        let password = generate_password();
        let id = identity::create_node_user(cloud, scope, &name, &password)?;
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut users = self.load()?;
        users.push(ReadyUser { id, name, password });
        self.save(&users)?;
        Ok(true)
    }

    /// Delete the ready users keystone has but the file does not (a crash
    /// between taking one and renaming it), and forget the file's users
    /// keystone no longer has (a restored database, say).
    pub fn tidy(&self, cloud: &Cloud) -> Result<()> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut users = self.load()?;
        let in_keystone = identity::users_named_from(cloud, PREFIX)?;
        for (id, name) in &in_keystone {
            if !users.iter().any(|u| &u.id == id) {
                tracing::info!("deleting {name}, a ready node user nobody holds the password of");
                identity::remove_user(cloud, name)?;
            }
        }
        let before = users.len();
        users.retain(|u| in_keystone.iter().any(|(id, _)| id == &u.id));
        if users.len() != before {
            self.save(&users)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(id: &str) -> ReadyUser {
        ReadyUser {
            id: id.into(),
            name: format!("{PREFIX}{id}"),
            password: generate_password(),
        }
    }

    #[test]
    fn a_taken_user_leaves_the_file_before_it_is_used() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        let lock = Mutex::new(());
        let pool = NodeUserPool::new(&files, &lock);
        assert!(pool.take().unwrap().is_none());
        pool.save(&[user("a"), user("b")]).unwrap();
        let taken = pool.take().unwrap().unwrap();
        assert_eq!(pool.ready().unwrap(), 1);
        let again = NodeUserPool::new(&files, &lock);
        assert!(
            again.load().unwrap().iter().all(|u| u.id != taken.id),
            "a second service never gets it"
        );
        assert_eq!(files.mode(POOL_FILE).unwrap(), Some(0o600));
        let text = std::fs::read_to_string(dir.path().join(POOL_FILE.trim_start_matches('/')));
        assert!(!text.unwrap().contains(taken.password.expose()));
    }

    #[test]
    fn a_damaged_file_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        files.write(POOL_FILE, b"{", &FileSpec::secret()).unwrap();
        let lock = Mutex::new(());
        let e = NodeUserPool::new(&files, &lock)
            .take()
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("delete it"), "{e}");
    }
}
